"""Public structural constraints: combinations of values no synthetic record may have.

A constraint is public metadata, like the domain: the user states it from knowledge of what the data *mean* (a
husband is male; an education level fixes its number of years), never from the data.  It costs no privacy budget
and no release depends on the data through it:

* it is compiled against the public domain only (:func:`compile_constraints`), before the fit spends anything;
  a constraint that names an unknown column or value is refused then, with a message that quotes only what the
  user wrote;
* the records are not checked against it (a real record that breaks it is counted like any other: reporting or
  dropping it would release a fact about the data);
* the method measures and selects exactly as without it; the constraint then enters the *fitted model* as
  impossible cells (:meth:`skdpsynth.graphical.GraphicalModel.constrain`), post-processing, so the model's
  marginals put no mass on them and sampling never produces them.  For a model that is not a graphical model
  (``ViewSynthesizer``) or cells a compressed domain merges (MST's rare values), ``sample`` redraws the records
  that break a constraint, which is the model conditioned on the constraints.

Three kinds, each reduced to a boolean table of the allowed cells over its columns:

:class:`ForbiddenCombination`
    ``ForbiddenCombination({"relationship": "Husband", "sex": "Female"})``: no record has all these values
    (a list of values per column forbids every combination of them).
:class:`AllowedCombinations`
    ``AllowedCombinations(["country", "currency"], [("FR", "EUR"), ("US", "USD")])``: the columns take only
    these combinations of values together.
:class:`FunctionalDependency`
    ``FunctionalDependency("education", "education-num", {"Bachelors": 13, ...})``: the dependent column is a
    function of the determinant; a determinant value missing from the mapping leaves the dependent free.

The schema and the command line take the same constraints as JSON (:func:`constraint_from_dict`); see
``doc/constraints.md``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .columns import Column
from .utils import as_value_list

__all__ = ["Constraint", "ForbiddenCombination", "AllowedCombinations", "FunctionalDependency",
           "constraint_from_dict", "compile_constraints", "violations"]


def _codes(column: Column, values: Sequence, where: str) -> np.ndarray:
    """Codes of user-given values of ``column``; values outside its public domain are refused by name."""
    values = list(values)
    if column.kind == "codes":
        codes = np.asarray(values)
        if codes.dtype.kind not in "iu" or (codes < 0).any() or (codes >= column.size).any():
            raise ValueError(f"{where}: column {column.name!r} holds codes 0 .. {column.size - 1}, got {values!r}.")
        return codes.astype(np.intp)
    codes = column.categories.get_indexer(pd.Index(values, dtype=object))
    if (codes < 0).any():
        unknown = [v for v, c in zip(values, codes) if c < 0]
        raise ValueError(f"{where}: {unknown!r} not among the public categories of column {column.name!r}.")
    return codes.astype(np.intp)


class Constraint:
    """A set of allowed value combinations over some columns (the base class of the three kinds).

    Subclasses define :attr:`columns` and :meth:`allowed`; see :mod:`skdpsynth.constraints`.

    Examples
    --------
    >>> from skdpsynth.constraints import Constraint, ForbiddenCombination
    >>> isinstance(ForbiddenCombination({"a": 1, "b": 0}), Constraint)
    True
    """

    columns: tuple

    def allowed(self, columns: Mapping[object, Column]) -> np.ndarray:
        """Boolean table of the allowed cells, one axis per column of :attr:`columns`, over their codes."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        """The JSON form read by :func:`constraint_from_dict`."""
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.to_dict() == self.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        (kind, spec), = self.to_dict().items()
        return f"{type(self).__name__}({spec!r})"


class ForbiddenCombination(Constraint):
    """No record takes all the given values together.

    Parameters
    ----------
    values : dict
        ``{column: value}`` or ``{column: [values]}`` over at least two columns; every combination of the
        listed values is forbidden.

    Examples
    --------
    >>> from skdpsynth.columns import Column
    >>> from skdpsynth.constraints import ForbiddenCombination
    >>> husband_is_male = ForbiddenCombination({"relationship": "Husband", "sex": "Female"})
    >>> columns = {"relationship": Column("relationship", 2, "values", pd.Index(["Husband", "Wife"]), object),
    ...            "sex": Column("sex", 2, "values", pd.Index(["Female", "Male"]), object)}
    >>> husband_is_male.allowed(columns).tolist()
    [[False, True], [True, True]]
    """

    def __init__(self, values: Mapping):
        if not isinstance(values, Mapping) or len(values) < 2:
            raise ValueError(f"A forbidden combination names at least two columns, got {values!r}.")
        self.values = {name: as_value_list(v) for name, v in values.items()}
        if any(not v for v in self.values.values()):
            raise ValueError(f"A forbidden combination lists at least one value per column, got {values!r}.")
        self.columns = tuple(self.values)

    def allowed(self, columns: Mapping[object, Column]) -> np.ndarray:
        where = f"Constraint {self!r}"
        mask = np.ones(tuple(columns[c].size for c in self.columns), dtype=bool)
        mask[np.ix_(*(_codes(columns[c], v, where) for c, v in self.values.items()))] = False
        return mask

    def to_dict(self) -> dict:
        return {"forbid": {c: (v[0] if len(v) == 1 else v) for c, v in self.values.items()}}


class AllowedCombinations(Constraint):
    """The columns take only the listed combinations of values together.

    Parameters
    ----------
    columns : sequence of column names
        At least two.
    combinations : sequence of tuples
        Each a value per column, in the order of ``columns``.

    Examples
    --------
    >>> from skdpsynth.columns import Column
    >>> from skdpsynth.constraints import AllowedCombinations
    >>> pairs = AllowedCombinations(["x", "y"], [(0, 0), (1, 1), (1, 2)])
    >>> columns = {"x": Column("x", 2, "codes", None, int), "y": Column("y", 3, "codes", None, int)}
    >>> pairs.allowed(columns).astype(int).tolist()
    [[1, 0, 0], [0, 1, 1]]
    """

    def __init__(self, columns: Sequence, combinations: Iterable[Sequence]):
        self.columns = tuple(columns)
        self.combinations = [tuple(c) for c in combinations]
        if len(self.columns) < 2 or len(set(self.columns)) != len(self.columns):
            raise ValueError(f"Allowed combinations name at least two distinct columns, got {list(columns)!r}.")
        if not self.combinations or any(len(c) != len(self.columns) for c in self.combinations):
            raise ValueError(f"Allowed combinations of {list(self.columns)!r} list at least one combination, each "
                             f"with {len(self.columns)} values.")

    def allowed(self, columns: Mapping[object, Column]) -> np.ndarray:
        where = f"Constraint {self!r}"
        mask = np.zeros(tuple(columns[c].size for c in self.columns), dtype=bool)
        mask[tuple(_codes(columns[c], [combo[j] for combo in self.combinations], where)
                   for j, c in enumerate(self.columns))] = True
        return mask

    def to_dict(self) -> dict:
        return {"allow": {"columns": list(self.columns), "combinations": [list(c) for c in self.combinations]}}


class FunctionalDependency(Constraint):
    """The ``dependent`` column is a function of the ``determinant`` column.

    Parameters
    ----------
    determinant : column name
        The fine column (e.g. an education level).
    dependent : column name
        The coarse column it fixes (e.g. the years of education).
    mapping : dict
        ``{determinant value: dependent value}``.  A determinant value it does not list leaves the dependent
        free.

    Examples
    --------
    >>> from skdpsynth.columns import Column
    >>> from skdpsynth.constraints import FunctionalDependency
    >>> years = FunctionalDependency("education", "years", {"HS-grad": 9, "Bachelors": 13})
    >>> columns = {"education": Column("education", 2, "values", pd.Index(["Bachelors", "HS-grad"]), object),
    ...            "years": Column("years", 3, "values", pd.Index([9, 13, 16]), int)}
    >>> years.allowed(columns).astype(int).tolist()
    [[0, 1, 0], [1, 0, 0]]
    """

    def __init__(self, determinant, dependent, mapping: Mapping):
        if determinant == dependent:
            raise ValueError(f"A functional dependency needs two columns, got {determinant!r} twice.")
        if not isinstance(mapping, Mapping) or not mapping:
            raise ValueError(f"The functional dependency {determinant!r} -> {dependent!r} needs a mapping "
                             "{determinant value: dependent value} with at least one entry.")
        self.determinant, self.dependent, self.mapping = determinant, dependent, dict(mapping)
        self.columns = (determinant, dependent)

    def allowed(self, columns: Mapping[object, Column]) -> np.ndarray:
        where = f"Constraint {self!r}"
        fine = _codes(columns[self.determinant], list(self.mapping), where)
        coarse = _codes(columns[self.dependent], list(self.mapping.values()), where)
        mask = np.ones((columns[self.determinant].size, columns[self.dependent].size), dtype=bool)
        mask[fine] = False
        mask[fine, coarse] = True
        return mask

    def to_dict(self) -> dict:
        return {"dependency": {"determinant": self.determinant, "dependent": self.dependent,
                               "mapping": dict(self.mapping)}}


def constraint_from_dict(spec) -> Constraint:
    """A constraint from its JSON form (the schema's ``"constraints"`` list), or a :class:`Constraint` as given.

    Parameters
    ----------
    spec : dict or Constraint
        One of ``{"forbid": {column: value or [values], ...}}``,
        ``{"allow": {"columns": [...], "combinations": [[...], ...]}}`` or
        ``{"dependency": {"determinant": column, "dependent": column, "mapping": {value: value}}}``.

    Returns
    -------
    Constraint

    Examples
    --------
    >>> from skdpsynth.constraints import constraint_from_dict
    >>> constraint_from_dict({"forbid": {"relationship": "Husband", "sex": "Female"}})
    ForbiddenCombination({'relationship': 'Husband', 'sex': 'Female'})
    """
    if isinstance(spec, Constraint):
        return spec
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise ValueError(f"A constraint is a Constraint or a dict with one key, 'forbid', 'allow' or "
                         f"'dependency'; got {spec!r}.")
    (kind, body), = spec.items()
    try:
        if kind == "forbid":
            return ForbiddenCombination(body)
        if kind == "allow":
            return AllowedCombinations(body["columns"], body["combinations"])
        if kind == "dependency":
            return FunctionalDependency(body["determinant"], body["dependent"], body["mapping"])
    except (KeyError, TypeError) as err:
        raise ValueError(f"The {kind!r} constraint {body!r} is malformed ({err!r}); see doc/constraints.md.") from None
    raise ValueError(f"Unknown constraint kind {kind!r}: expected 'forbid', 'allow' or 'dependency'.")


def compile_constraints(constraints, columns: Sequence[Column],
                        attrs: Sequence | None = None) -> list[tuple[tuple, np.ndarray]]:
    """Each constraint as ``(attributes, mask of allowed cells)`` over the coded public domain.

    Parameters
    ----------
    constraints : None or iterable of Constraint or dict
    columns : sequence of Column
        The fitted columns (their public encodings).
    attrs : sequence, optional
        The domain attribute of each column (default: the column names).

    Returns
    -------
    list of (tuple, ndarray of bool)

    Raises
    ------
    ValueError
        An unknown column or value, or a constraint that allows nothing.

    Examples
    --------
    >>> from skdpsynth.columns import Column
    >>> from skdpsynth.constraints import compile_constraints
    >>> columns = [Column("a", 2, "codes", None, int), Column("b", 2, "codes", None, int)]
    >>> [(attrs, mask.tolist()) for attrs, mask in compile_constraints([{"forbid": {"a": 1, "b": 1}}], columns)]
    [(('a', 'b'), [[True, True], [True, False]])]
    """
    if constraints is None:
        return []
    if isinstance(constraints, (Constraint, Mapping)) or not isinstance(constraints, Iterable):
        raise TypeError(f"constraints must be a list of constraints, got {type(constraints).__name__}.")
    by_name = {c.name: c for c in columns}
    attr_of = dict(zip([c.name for c in columns], attrs if attrs is not None else [c.name for c in columns]))
    compiled = []
    for spec in constraints:
        constraint = constraint_from_dict(spec)
        unknown = [c for c in constraint.columns if c not in by_name]
        if unknown:
            raise ValueError(f"Constraint {constraint!r} names {unknown!r}, not fitted columns "
                             f"(columns: {list(by_name)}).")
        mask = constraint.allowed(by_name)
        if not mask.any():
            raise ValueError(f"Constraint {constraint!r} allows no combination of values.")
        compiled.append((tuple(attr_of[c] for c in constraint.columns), mask))
    return compiled


def violations(codes: np.ndarray, compiled: Sequence[tuple[tuple, np.ndarray]], attrs: Sequence) -> np.ndarray:
    """Boolean mask of the records (rows of integer ``codes``, columns in ``attrs`` order) that break a constraint.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.constraints import violations
    >>> never_both = [(("a", "b"), np.array([[True, True], [True, False]]))]
    >>> violations(np.array([[0, 1], [1, 1], [1, 0]]), never_both, ["a", "b"]).tolist()
    [False, True, False]
    """
    bad = np.zeros(len(codes), dtype=bool)
    position = {a: j for j, a in enumerate(attrs)}
    for cols, mask in compiled:
        bad |= ~mask[tuple(codes[:, position[a]] for a in cols)]
    return bad
