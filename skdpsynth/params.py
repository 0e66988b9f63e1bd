"""Hyper-parameter constraints, declared once per estimator and checked at ``fit``.

An estimator declares ``_parameter_constraints``: for each hyper-parameter,
the list of what it may be (any one will do): an :class:`Interval` of
integers or reals, a set of :class:`Options`, ``None``, a type, or
``"random_state"``.  :func:`validate_params` checks an estimator's values
against the declarations of its class and of every base class (a subclass's
declaration of a name replaces its base's), and raises one ``ValueError``
naming the parameter, what it may be and the value given.

Booleans are not numbers here: ``epsilon=True`` is a mistake, not 1.
"""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Hashable, Iterable, Mapping
from numbers import Integral, Real

import numpy as np

__all__ = ["Interval", "Options", "Names", "Dict", "HasMethods", "InvalidParameterError", "validate_params",
           "declared_constraints", "PrivacyParameter", "MAX_EPSILON", "MAX_RHO"]

#: The largest ε an estimator takes.  Far past any guarantee (the noise is negligible long before), and the
#: noise calibration overflows floating point not far above it (ρ and the estimation's weights grow as ε²).
MAX_EPSILON = 1e10
#: The largest zCDP ρ taken where ρ is given directly (about ``MAX_EPSILON²``).
MAX_RHO = 1e20


class Interval:
    """Integers (``Integral``) or reals (``Real``) between ``low`` and ``high`` (``None``: unbounded).

    Parameters
    ----------
    kind : {numbers.Integral, numbers.Real}
    low, high : number or None
    closed : {"both", "left", "right", "neither"}, default="both"
        Which ends belong to the interval.  Reals must also be finite.

    Examples
    --------
    >>> from numbers import Integral, Real
    >>> from skdpsynth.params import Interval
    >>> Interval(Real, 0, None, closed="neither").accepts(0.5), Interval(Integral, 1, None).accepts(True)
    (True, False)
    >>> str(Interval(Real, 0, 1, closed="neither"))
    'a finite number in (0, 1)'
    """

    def __init__(self, kind: type, low=None, high=None, *, closed: str = "both"):
        if kind not in (Integral, Real):
            raise ValueError(f"kind must be numbers.Integral or numbers.Real, got {kind!r}.")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither', got {closed!r}.")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def accepts(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if self.kind is Real and not math.isfinite(float(value)):
            return False
        if self.low is not None and (value < self.low or (value == self.low and self.closed in ("right", "neither"))):
            return False
        if self.high is not None and (value > self.high or
                                      (value == self.high and self.closed in ("left", "neither"))):
            return False
        return True

    def __str__(self) -> str:
        what = "an integer" if self.kind is Integral else "a finite number"
        if self.low is None and self.high is None:
            return what
        if self.high is None:
            return f"{what} {'>=' if self.closed in ('both', 'left') else '>'} {self.low}"
        if self.low is None:
            return f"{what} {'<=' if self.closed in ('both', 'right') else '<'} {self.high}"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        return f"{what} in {left}{self.low}, {self.high}{right}"


class PrivacyParameter(Interval):
    """A privacy parameter (ε or ρ): a finite number > 0 and at most ``high``.

    Parameters
    ----------
    high : float, default=MAX_EPSILON

    Examples
    --------
    >>> from skdpsynth.params import PrivacyParameter
    >>> PrivacyParameter().accepts(1.0), PrivacyParameter().accepts(1e307), str(PrivacyParameter())
    (True, False, 'a finite number > 0 and <= 1e+10')
    """

    def __init__(self, high: float = MAX_EPSILON):
        super().__init__(Real, 0, high, closed="right")

    def __str__(self) -> str:
        return f"a finite number > 0 and <= {self.high:g}"

    def hint(self, name: str, value) -> str:
        too_large = isinstance(value, Real) and not isinstance(value, (bool, np.bool_)) and value > self.high
        return (f" Past {self.high:g} the noise calibration overflows floating point, and the noise is negligible "
                "long before." if too_large else "")


class Options:
    """One of the given values (compared with ``==``, never a boolean for a number).

    Examples
    --------
    >>> from skdpsynth.params import Options
    >>> Options("auto", "exact").accepts("exact"), str(Options("auto", "exact"))
    (True, "'auto' or 'exact'")
    """

    def __init__(self, *values):
        self.values = values

    def accepts(self, value) -> bool:
        return any(type(value) is type(v) and value == v for v in self.values
                   if not isinstance(v, (bool, np.bool_)) or isinstance(value, (bool, np.bool_)))

    def __str__(self) -> str:
        shown = [repr(v) for v in self.values]
        return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


class Names:
    """A list of names (any iterable but a string): e.g. ``columns=["age", "sex"]``.

    Parameters
    ----------
    what : str, default="names"
        What the names are, for the error message (``"column names"``).

    Examples
    --------
    >>> from skdpsynth.params import Names
    >>> Names().accepts(["a", "b"]), Names().accepts("a"), str(Names("column names"))
    (True, False, 'a list of column names')
    """

    def __init__(self, what: str = "names"):
        self.what = what

    def accepts(self, value) -> bool:
        return not isinstance(value, (str, bytes)) and np.iterable(value)

    def hint(self, name: str, value) -> str:
        return f" Write {name}=[{value!r}] for a single one." if isinstance(value, (str, bytes)) else ""

    def __str__(self) -> str:
        return f"a list of {self.what}"


class Dict:
    """A mapping, described by what it maps: ``Dict("{column: spec}")`` is "a dict {column: spec}".

    Examples
    --------
    >>> from skdpsynth.params import Dict
    >>> Dict("{column: spec}").accepts({"age": "numeric"}), str(Dict("{column: spec}"))
    (True, 'a dict {column: spec}')
    """

    def __init__(self, what: str):
        self.what = what

    def accepts(self, value) -> bool:
        return isinstance(value, Mapping)

    def __str__(self) -> str:
        return f"a dict {self.what}"


class HasMethods:
    """An object with the given methods: ``HasMethods("fit", "sample")`` is a synthesizer.

    Examples
    --------
    >>> from skdpsynth import MSTSynthesizer
    >>> from skdpsynth.params import HasMethods
    >>> HasMethods("fit", "sample").accepts(MSTSynthesizer()), str(HasMethods("fit", "sample"))
    (True, 'an object with fit and sample methods')
    """

    def __init__(self, *methods: str):
        self.methods = methods

    def accepts(self, value) -> bool:
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def __str__(self) -> str:
        names = list(self.methods)
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"an object with {listed} method{'s' if len(names) > 1 else ''}"


class InvalidParameterError(ValueError, TypeError):
    """A hyper-parameter that fits none of its declared alternatives (a ``ValueError`` and a ``TypeError``, as
    the wrong value or the wrong type of value).

    Examples
    --------
    >>> from skdpsynth.params import InvalidParameterError
    >>> issubclass(InvalidParameterError, ValueError) and issubclass(InvalidParameterError, TypeError)
    True
    """


def _accepts(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if constraint == "random_state":
        # What utils.check_random_state takes.
        return value is None or isinstance(value, (np.random.Generator, np.random.RandomState,
                                                   np.random.SeedSequence)) or (
            isinstance(value, (Integral, np.integer)) and not isinstance(value, (bool, np.bool_)) and value >= 0)
    if isinstance(constraint, type):
        return isinstance(value, constraint) and not (constraint is not bool and isinstance(value, bool))
    return constraint.accepts(value)


def _describe(constraint) -> str:
    if constraint is None:
        return "None"
    if constraint == "random_state":
        return "None, an integer >= 0, a numpy Generator, RandomState or SeedSequence"
    if isinstance(constraint, type):
        return {Mapping: "a mapping", bool: "True or False", Hashable: "hashable"}.get(
            constraint, f"a {constraint.__name__}")
    return str(constraint)


def declared_constraints(estimator_class: type) -> dict:
    """The constraints of ``estimator_class`` and its bases (a subclass's entry for a name replaces its base's).

    Examples
    --------
    >>> from skdpsynth import MSTSynthesizer
    >>> from skdpsynth.params import declared_constraints
    >>> [str(c) for c in declared_constraints(MSTSynthesizer)["epsilon"]]
    ['a finite number > 0 and <= 1e+10']
    """
    merged: dict = {}
    for cls in reversed(estimator_class.__mro__):
        merged.update(vars(cls).get("_parameter_constraints", {}))
    return merged


@functools.lru_cache(maxsize=None)
def _init_parameters(estimator_class: type) -> tuple[str, ...] | None:
    """The keyword parameters of ``estimator_class.__init__`` (what ``get_params`` lists), or ``None`` when its
    ``get_params`` is its own and must be asked."""
    from sklearn.base import BaseEstimator

    if getattr(estimator_class, "get_params", None) is not BaseEstimator.get_params:
        return None
    parameters = inspect.signature(estimator_class.__init__).parameters.values()
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return None
    return tuple(sorted(p.name for p in parameters if p.name != "self" and p.kind != p.VAR_KEYWORD))


def _shallow_params(estimator) -> dict:
    """``estimator.get_params(deep=False)``, reading the parameter names of its class once (``get_params`` reads
    ``__init__``'s signature at every call: a good part of the fit of a small transformer)."""
    names = _init_parameters(type(estimator))
    if names is None:
        return estimator.get_params(deep=False)
    return {name: getattr(estimator, name) for name in names}


def validate_params(estimator, params: Mapping | None = None, constraints: Mapping | None = None) -> None:
    """Check ``params`` (default: ``estimator.get_params(deep=False)``) against the declared constraints.

    Parameters without a declaration are not checked here (the estimator checks them itself).

    Raises
    ------
    InvalidParameterError
        ``"<name> must be <what it may be>, got <value>."`` for the first parameter that fits none of its
        alternatives (a ``ValueError`` and a ``TypeError``).

    Examples
    --------
    >>> from skdpsynth import MSTSynthesizer
    >>> from skdpsynth.params import validate_params
    >>> validate_params(MSTSynthesizer(epsilon=True))
    Traceback (most recent call last):
    ...
    skdpsynth.params.InvalidParameterError: epsilon must be a finite number > 0 and <= 1e+10, got True.
    """
    if params is None:
        params = _shallow_params(estimator)
    constraints = declared_constraints(type(estimator)) if constraints is None else constraints
    for name, value in params.items():
        alternatives: Iterable = constraints.get(name, ())
        if not alternatives or any(_accepts(c, value) for c in alternatives):
            continue
        described = [_describe(c) for c in alternatives]
        what = described[0] if len(described) == 1 else ", ".join(described[:-1]) + " or " + described[-1]
        hints = "".join(c.hint(name, value) for c in alternatives if hasattr(c, "hint"))
        raise InvalidParameterError(f"{name} must be {what}, got {value!r}.{hints}")
