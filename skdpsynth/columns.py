"""The column codec: how a table's columns map to integer codes over a public domain, and back.

:func:`resolve_columns` reads each column's encoding from the public domain
given (``domain=``), from a categorical dtype a DP step produced, or, with a
:class:`~skdpsynth.privacy.PrivacyLeakWarning` recorded in the ledger, from
the data; :class:`Column` encodes and decodes.  The synthesizers
(:mod:`skdpsynth.synthesizers.base`) and out-of-core counting
(:mod:`skdpsynth.outofcore`) both use it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .domain import Domain
from .privacy import PrivacyLedger, warn_privacy_leak
from .privacy.metadata import is_public

__all__ = ["Column", "resolve_columns"]


@dataclass(frozen=True)
class Column:
    """How one column's values map to codes ``0 .. size - 1`` and back.

    Parameters
    ----------
    name : object
        The column's name.
    size : int
        The number of codes.
    kind : {"categorical", "values", "codes"}
        ``"categorical"``: a pandas Categorical over ``categories``;
        ``"values"``: raw labels, each the code of its position in
        ``categories``; ``"codes"``: integers that are their own codes.
    categories : pandas.Index or None
        The labels, in code order (``None`` for ``"codes"``).
    dtype : object
        The dtype decoded values get.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.columns import Column
    >>> column = Column("colour", 3, "values", pd.Index(["blue", "green", "red"]), object)
    >>> column.encode(pd.Series(["red", "blue"])).tolist()
    [2, 0]
    >>> column.decode([1, 2]).tolist()
    ['green', 'red']
    """

    name: object
    size: int
    kind: str  # "categorical": pandas Categorical; "values": raw labels; "codes": integers as they are
    categories: pd.Index | None
    dtype: object

    def encode(self, values: pd.Series) -> np.ndarray:
        """Codes of ``values``; an error names the column only (doc/privacy.md: no private value or count)."""
        if self.kind == "codes":
            return values.to_numpy()
        codes = self.categories.get_indexer(values)
        outside = codes < 0
        if outside.any():
            # Neither the offending values nor their number: both are private. The category list is not quoted
            # either: it may come from a dtype read off the data (the fit warns about that separately).
            missing = values.isna().to_numpy()[outside]
            what = ("missing values, which are not among its public categories" if missing.all() else
                    "values outside its public categories" + (" and missing values" if missing.any() else ""))
            raise ValueError(
                f"Column {self.name!r} has {what}; declare them in domain= or map them to a declared category "
                "first (e.g. an explicit 'other' or 'missing' category)."
            )
        return codes

    def decode(self, codes: np.ndarray) -> pd.Series:
        if self.kind == "categorical":
            return pd.Series(pd.Categorical.from_codes(codes, dtype=self.dtype), name=self.name)
        if self.kind == "values":
            return pd.Series(self.categories.take(codes), name=self.name).astype(self.dtype)
        return pd.Series(codes, name=self.name).astype(self.dtype)


# A numeric column read from the data with more values than this is refused as a quantity, not a category.
MAX_INFERRED_NUMERIC_VALUES = 1000


def resolve_columns(frame: pd.DataFrame, domain, ledger: PrivacyLedger, from_array: bool = False) -> list[Column]:
    """Each column's encoding: from ``domain`` where it names the column, else from a categorical dtype, else
    from the data (with a :class:`~skdpsynth.privacy.PrivacyLeakWarning`, recorded in ``ledger``).

    Parameters
    ----------
    frame : pandas.DataFrame
        The table (only its dtypes are read for columns whose domain is given).
    domain : dict, Domain or None
        ``{column: [categories]}`` or ``{column: size}`` (public metadata).
    ledger : PrivacyLedger
        Where a domain read from the data is recorded.
    from_array : bool, default=False
        ``frame`` was made from an array (the error about unknown names then says how they are named).

    Returns
    -------
    list of Column
        One per column of ``frame``, in its order.

    Raises
    ------
    ValueError
        ``domain`` names a column not in ``frame``, a size or category list is invalid, or a column without a
        public domain has no values (a table of 0 rows), holds continuous values, negative integers or more than
        ``MAX_INFERRED_NUMERIC_VALUES`` numeric values.  Messages name columns only, never a value or count.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.columns import resolve_columns
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> frame = pd.DataFrame({"age": [0, 3, 2], "sex": ["f", "m", "f"]})
    >>> [(c.name, c.size, c.kind) for c in resolve_columns(frame, {"age": 4, "sex": ["f", "m"]}, PrivacyLedger())]
    [('age', 4, 'codes'), ('sex', 2, 'values')]
    """
    given = domain.to_dict() if isinstance(domain, Domain) else dict(domain or {})
    unknown = set(given) - set(frame.columns)
    if unknown:
        hint = ""
        if from_array:
            n = frame.shape[1]
            hint = (f" X is an array, so its columns are named as scikit-learn names them: "
                    f"{', '.join(map(repr, frame.columns[:3]))}{', ...' if n > 3 else ''} (x0 to x{n - 1}); "
                    "use these names in domain=, or pass a DataFrame.")
        raise ValueError(f"domain names columns that are not in the data: {sorted(map(str, unknown))}.{hint}")
    _refuse_numeric_quantities(frame, given)
    columns, leaked, from_dtype = [], [], []
    for name in frame.columns:
        col = frame[name]
        spec = given.get(name)
        if spec is not None:
            columns.append(_column_from_domain(name, col, spec))
        elif isinstance(col.dtype, pd.CategoricalDtype):
            if len(col.dtype.categories) == 0:
                raise ValueError(f"Column {name!r} is categorical with no categories.")
            if not is_public(col.dtype):
                from_dtype.append(str(name))
            columns.append(Column(name, len(col.dtype.categories), "categorical", col.dtype.categories, col.dtype))
        else:
            leaked.append(str(name))
            columns.append(_column_from_data(name, col))
    if leaked:
        warn_privacy_leak(
            f"The domain of columns {leaked} was read from the private data (their value sets, or the largest "
            "integer code, leave fit() without differential privacy). Give them as public metadata with domain= "
            "or encode them with a DP step of skdpsynth.preprocessing.",
            stacklevel=4, ledger=ledger, description=f"domain of columns {leaked} read from the data",
            columns=leaked,
        )
    if from_dtype:
        warn_privacy_leak(
            f"The domain of columns {from_dtype} was taken from a pandas CategoricalDtype that no DP step of "
            "skdpsynth produced (X.astype('category') takes the categories from the data, which differential "
            "privacy does not cover). If the categories are public metadata, give them in domain=; otherwise "
            "encode the columns with a DP step of skdpsynth.preprocessing.",
            stacklevel=4, ledger=ledger,
            description=f"domain of columns {from_dtype} taken from a categorical dtype not produced by a DP step",
            columns=from_dtype,
        )
    return columns


def _column_from_domain(name, col: pd.Series, spec) -> Column:
    """A column whose public domain is given: a size (integer codes) or a list of categories."""
    if isinstance(spec, (bool, np.bool_, str, bytes)) or not (isinstance(spec, (int, np.integer)) or np.iterable(spec)):
        raise ValueError(f"domain[{name!r}] must be a positive integer size or a list of categories, got {spec!r}.")
    if isinstance(spec, (int, np.integer)):
        if int(spec) < 1:
            raise ValueError(f"domain[{name!r}] must be a positive size, got {spec}.")
        if isinstance(col.dtype, pd.CategoricalDtype):
            raise ValueError(f"Column {name!r} is categorical; give its categories, not a size, in domain.")
        return Column(name, int(spec), "codes", None, col.dtype)
    cats = pd.Index(list(spec))
    if cats.has_duplicates or len(cats) == 0:
        raise ValueError(f"domain[{name!r}] must be a non-empty list of distinct categories.")
    kind = "categorical" if isinstance(col.dtype, pd.CategoricalDtype) else "values"
    dtype = pd.CategoricalDtype(cats, ordered=getattr(col.dtype, "ordered", False)) if kind == "categorical" else col.dtype
    return Column(name, len(cats), kind, cats, dtype)


def _column_from_data(name, col: pd.Series) -> Column:
    """A column without a public domain: its categories, or its largest integer code, read from the data."""
    if not col.notna().any():
        # Nothing to read the categories from (0 rows): metadata read without DP needs data.
        raise ValueError(f"Column {name!r} has no values to read its categories from: give its categories or size "
                         "in domain= (public metadata).")
    if col.dtype.kind == "f":
        finite = col.dropna()
        if len(finite) and not np.all(np.mod(finite.to_numpy(), 1) == 0):
            raise ValueError(
                f"Column {name!r} holds continuous values. Discretize it first with a DP discretizer "
                "(skdpsynth.preprocessing), or give its categories in domain=."
            )
    if col.dtype.kind in "iu":
        if len(col) and col.min() < 0:
            raise ValueError(f"Column {name!r} has negative integers; give its categories in domain=.")
        return Column(name, int(col.max()) + 1, "codes", None, col.dtype)
    cats = pd.Index(pd.unique(col.dropna()))
    try:
        cats = cats.sort_values()
    except TypeError:
        pass
    return Column(name, len(cats), "values", cats, col.dtype)


def _refuse_numeric_quantities(frame: pd.DataFrame, given: dict) -> None:
    """Numeric columns without a public domain and with many values are quantities (fnlwgt), not category codes.

    Read as codes they would become a domain of ``max + 1`` cells (or one
    category per distinct value): huge, slow, and synthesized as unrelated
    categories.  Refuse them, naming the columns and the two ways out.
    """
    found, dates = [], []
    for name in frame.columns:
        col = frame[name]
        if name in given or isinstance(col.dtype, pd.CategoricalDtype) or col.dtype.kind not in "iufMm":
            continue
        if not len(col):
            continue
        if col.dtype.kind in "f" and np.isinf(col.to_numpy()).any():
            raise ValueError(f"Column {name!r} holds infinite values (inf or -inf): replace them, or give the "
                             "column its categories in domain=.")
        size = int(col.max()) + 1 if col.dtype.kind in "iu" and col.min() >= 0 else col.nunique()
        if size > MAX_INFERRED_NUMERIC_VALUES:
            # Not the size: an error message must not quote a statistic of the data.
            (dates if col.dtype.kind in "Mm" else found).append(repr(name))
    if found:
        raise ValueError(
            f"Numeric columns {', '.join(found)} would become category codes with more than "
            f"{MAX_INFERRED_NUMERIC_VALUES:,} values each. If they are quantities, discretize them first with a DP "
            "discretizer (skdpsynth.preprocessing.DPKBinsDiscretizer, or TableDiscretizer for a mixed table); if "
            "they really are category codes, give their public size or categories in domain=."
        )
    if dates:
        # The same rule as for numbers: a date read from the data is one category per distinct value.
        raise ValueError(
            f"Date or time columns {', '.join(dates)} would become categories with more than "
            f"{MAX_INFERRED_NUMERIC_VALUES:,} values each. Turn them into numbers first (a year, or days since a "
            "date) and discretize those with a DP discretizer (skdpsynth.preprocessing), or give their public "
            "categories in domain=."
        )
