"""Categorical encoding with a public (or differentially private) category domain.

:class:`DPCategoricalEncoder` turns categorical-ish columns into pandas
``Categorical`` columns whose category list is *public*: either given by the
user, or discovered from the data by a differentially private thresholded
noisy-count histogram. The synthesizers read a column's domain from its
``CategoricalDtype``, so an encoded frame can be fitted without a
:class:`~skdpsynth.privacy.PrivacyLeakWarning`.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from numbers import Real

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..params import Dict, Interval, Names, Options, PrivacyParameter, validate_params
from ..privacy import PrivacyLedger, laplace_mechanism, warn_privacy_leak
from ..privacy.metadata import mark_public
from ..privacy.randomness import noise_generator, warn_reproducible_noise
from ._adaptive import missing_threshold
from ._input import (
    OutputMixin,
    as_frame,
    assemble,
    check_has_columns,
    fitted_frame,
    param_scope,
    select_columns,
)

__all__ = ["DPCategoricalEncoder", "dp_threshold", "release_above_threshold"]

_HANDLE_UNKNOWN = ("auto", "other", "error")
_MISSING = ("category", "error", "auto", "other")


def dp_threshold(epsilon: float, delta: float) -> float:
    """The smallest threshold τ that makes thresholded Laplace counts (ε, δ)-DP.

    ``τ = 1 + max(ln(1 / ((1 + e^-ε) δ)), 0) / ε``, valid for the exact
    discrete Laplace noise the package adds to counts by default and for
    continuous Laplace noise alike.  A value occurring once has count 1 and
    is released when ``1 + Y > τ``:

    * discrete Laplace, ``P[Y = k] ∝ e^(-ε|k|)``: ``P[Y ≥ m] = e^(-εm) / (1 + e^(-ε))``
      for the smallest integer ``m > τ - 1``, and ``m > τ - 1`` gives
      ``P ≤ e^(-ε(τ-1)) / (1 + e^(-ε)) = δ`` (at most δ, and more than e^(-ε)·δ:
      integer counts cannot hit δ exactly);
    * continuous Laplace(1/ε): ``P = e^(-ε(τ-1)) / 2 ≤ δ``, as ``1 + e^(-ε) < 2``.

    For δ ≥ 1/(1 + e^-ε) the threshold is 1.  See
    :class:`DPCategoricalEncoder` for the full argument.

    Parameters
    ----------
    epsilon : float
        ε > 0 of the column.
    delta : float
        δ in (0, 1) of the column.

    Returns
    -------
    float

    Examples
    --------
    >>> import math
    >>> from skdpsynth.preprocessing.encoder import dp_threshold
    >>> tau = dp_threshold(1.0, 1e-3)
    >>> round(tau, 6)
    7.594494
    >>> m = math.floor(tau - 1) + 1  # a singleton is released when its noise is at least m
    >>> math.exp(-m) / (1 + math.exp(-1)) <= 1e-3
    True
    """
    epsilon, delta = float(epsilon), float(delta)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    return 1.0 + max(math.log(1.0 / ((1.0 + math.exp(-epsilon)) * delta)), 0.0) / epsilon


def release_above_threshold(counts, *, epsilon: float, threshold: float,
                            random_state=None) -> np.ndarray:
    """Add Laplace(1/ε) noise to ``counts`` and return the mask ``noisy > threshold``.

    The thresholding step of :class:`DPCategoricalEncoder` (no ledger entry:
    the caller records the (ε, δ) cost). The noisy counts are discarded.

    Parameters
    ----------
    counts : array-like of int
        Exact counts of the observed values (all ≥ 1).
    epsilon : float
        ε of the column; the Laplace scale is 1/ε (L1 sensitivity 1).
    threshold : float or array-like of float
        Release a value iff its noisy count is strictly above this (one for
        all counts, or one per count).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> from skdpsynth.preprocessing.encoder import release_above_threshold
    >>> release_above_threshold([1000, 1], epsilon=1.0, threshold=20.0, random_state=0).tolist()
    [True, False]
    """
    counts = np.asarray(counts, dtype=np.float64)
    noisy = laplace_mechanism(counts, epsilon=epsilon, sensitivity=1.0,
                              random_state=random_state)
    return np.asarray(noisy > threshold, dtype=bool)


def _sorted_values(values) -> list:
    """Sort by value (a public rule); mixed types fall back to (type name, str)."""
    values = list(values)
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda v: (type(v).__name__, str(v)))


def _is_na_scalar(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # list-likes are not NA scalars
        return False


class DPCategoricalEncoder(OutputMixin, TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Encode categorical columns over a public or differentially private category list.

    Each encoded column becomes a pandas ``Categorical`` whose categories are

    1. the column's category list: given in ``categories`` (public, free), or
       discovered with (ε, δ)-DP from the data when ``epsilon`` is given, or
       (with a :class:`~skdpsynth.privacy.PrivacyLeakWarning`) read from the
       data when it is not;
    2. then ``other_category`` if the column's ``handle_unknown`` is ``"other"``;
    3. then ``missing_category`` if the column's ``missing`` is ``"category"``.

    **No extra category unless it is needed or asked for.** By default a
    column with public categories (or categories read from the data) gets
    exactly its list: a synthesizer fitted on the output then never produces
    a value outside it. Only DP-discovered columns get ``other_category`` by
    default, because thresholding leaves rare values unreleased and they
    need a category; a synthetic record may then hold ``other_category``,
    meaning "a value that was not released". Missing values get a category
    only when asked for (``missing="category"``); otherwise :meth:`fit` and
    :meth:`transform` raise a ``ValueError`` saying so. An extra label, when
    enabled, is present whether or not the data needs it, so each category
    list is a function of public inputs and DP outputs only. Downstream
    synthesizers read it from the ``CategoricalDtype`` as the column's public
    domain.

    Parameters
    ----------
    categories : dict or None, default=None
        ``{column: list of values}`` for the columns whose categories are
        public. Lists must be non-empty, without duplicates or missing values,
        and their order is kept. Encoded columns not named here are *not
        public*.
    columns : None or list, default=None
        The columns to encode; ``None`` encodes every column. The other
        columns pass through :meth:`transform` and :meth:`inverse_transform`
        unchanged (values, dtype and position), e.g. the numeric columns a
        :class:`~skdpsynth.preprocessing.DPKBinsDiscretizer` bins in the same
        :class:`~skdpsynth.pipeline.SynthesisPipeline`. The dicts
        ``categories``, ``handle_unknown`` and ``missing`` may only name these
        columns.
    epsilon : float or None, default=None
        Total ε for DP category discovery, split evenly over the encoded
        columns not named in ``categories``. ``None``: those columns'
        categories are read from the data without DP, with one
        ``PrivacyLeakWarning``.
    delta : float or None, default=None
        Total δ in (0, 1), split evenly like ``epsilon``; required when some
        column needs DP discovery (thresholding is not pure DP).
    threshold : float or None, default=None
        Release threshold τ on the noisy counts; by default the smallest DP
        value :func:`dp_threshold` ``(ε_col, δ_col)``. It may be raised (fewer rare
        values released) but not lowered below that value (``ValueError``).
    handle_unknown : {"auto", "other", "error"} or dict, default="auto"
        Values outside a column's category list: ``"other"`` maps them to
        ``other_category`` (an extra category); ``"error"`` raises a
        ``ValueError`` in :meth:`transform` (no extra category); ``"auto"`` is
        ``"other"`` for DP-discovered columns and ``"error"`` for columns with
        public categories or categories read from the data. A dict
        ``{column: option}`` sets it per column (columns not named: ``"auto"``).
    other_category : hashable, default="__other__"
        Label of the "other" category; must not be one of the real categories.
    missing : {"error", "category", "auto", "other"} or dict, default="error"
        Missing values (``None``, ``NaN``, ``pd.NA``): ``"error"`` raises a
        ``ValueError`` in :meth:`fit` and :meth:`transform`, naming the column
        and this parameter; ``"category"`` maps them to ``missing_category``
        (an extra category, always in the list). ``"auto"``, for a column whose
        categories are discovered with DP: their count is released with the
        column's other counts (same Laplace noise, no extra cost: a record is in
        one count), against the threshold ``ln(10) / ε`` — it is a count
        whatever the data, so it needs no δ; a column without missing values
        passes it with probability 5% (and then gets few or no missing
        values: its count was noise). Passing, ``missing_category`` is in the
        list. Otherwise the category is **tentative** (``missing_`` says
        ``"tentative"``): it is in the list, missing values map to it, and
        :meth:`inverse_transform` maps it to the "other" category, like the
        unreleased values; a :class:`~skdpsynth.pipeline.SynthesisPipeline`
        decides it from its synthesizer's own measurement of the column (less
        noisy than this count; ``doc/preprocessing.md``), with
        :meth:`confirm_missing`. With
        ``handle_unknown="error"`` missing values then raise. Discovered without
        DP, ``"auto"`` adds the category when the data have missing values;
        with public categories it is ``"error"``. ``"other"``: missing values
        map to the "other" category (``handle_unknown="other"`` is needed).
        The resolved option of each column is in ``missing_``. A dict ``{column: option}`` sets it per
        column (columns not named: ``"error"``).
    missing_category : hashable, default="__missing__"
        Label of the missing category; must not be a real category or equal
        ``other_category``.
    random_state : None, int or numpy.random.Generator, default=None
        Randomness of the Laplace noise.

    Attributes
    ----------
    columns_ : list
        The encoded columns, in input order (all of them for ``columns=None``).
    categories_ : dict
        ``{column: list}``: the full output category list of each encoded
        column (public/released values, then the other and missing labels
        when enabled).
    handle_unknown_, missing_ : dict
        ``{column: option}``: the option in force for each encoded column
        (``"auto"`` resolved; ``missing_`` may also say ``"tentative"``, see
        ``missing``).
    thresholds_ : dict
        ``{column: τ}`` for the DP-discovered columns (public: a function of
        the parameters only).
    privacy_ledger_ : PrivacyLedger
        One ``"approx"`` entry (mechanism ``"laplace-threshold"``) per
        DP-discovered column; empty otherwise.
    feature_names_in_ : ndarray of object
        Names of all the input columns, encoded or passed through (``x0, x1,
        ...`` for arrays).
    n_features_in_ : int
    dtypes_ : dict
        ``{column: dtype}`` of the encoded input columns, used by
        :meth:`inverse_transform`.

    Notes
    -----
    **DP category discovery** (a stability-based histogram, i.e. DP set union
    with one record per user). For a column with budget (ε_c, δ_c): count each
    observed (non-missing) value, add independent Laplace(1/ε_c) noise to each
    count, and release the values whose noisy count exceeds τ. Take
    neighbouring data sets D and D' = D + one record of value v.

    * If v occurs in D, the count vectors over the same candidate set differ
      by 1 in one coordinate (L1 sensitivity 1), so the Laplace counts are
      ε_c-DP and thresholding is post-processing.
    * If v does not occur in D, D' has one extra candidate with count 1 and
      everything else is identically distributed. With
      ``p = P[1 + Laplace(1/ε_c) > τ]`` the output distributions satisfy
      ``|P[M(D) ∈ S] - P[M(D') ∈ S]| ≤ p``, which is (0, p)-DP.

    Hence the release is (ε_c, δ_c)-DP as soon as ``p ≤ δ_c``, which
    :func:`dp_threshold` guarantees for the discrete Laplace noise added to
    counts by default (``p ≤ e^(-ε_c(τ-1)) / (1 + e^(-ε_c))``) and for continuous
    Laplace noise (``p = e^(-ε_c(τ-1)) / 2``). The columns compose by basic
    composition: ``Σ ε_c = ε`` and ``Σ δ_c = δ``.

    The released values are **sorted by value** (a public rule; mixed types
    by type name, then string form), never by noisy count, so the order
    leaks nothing beyond the released set. The noisy counts are discarded.
    Error messages at fit time never list values read from private data.

    **Empty input.** 0 rows are accepted: public categories need no data,
    and DP discovery runs its mechanism on the empty counts (it releases
    nothing, leaving the ``other_category``). Categories read from the data
    without DP cannot be read from 0 rows: the column has no categories, a
    ``ValueError``.

    **Columns.** :meth:`transform` and :meth:`inverse_transform` take exactly
    the columns seen in :meth:`fit` (by name for a DataFrame, in any order; by
    count for an array); anything else is a ``ValueError``.

    :meth:`inverse_transform` maps ``missing_category`` back to the input
    dtype's own missing value (``pd.NA`` for the nullable ``Int64``,
    ``boolean``, ``string`` and ``Float64`` dtypes, which are kept; ``NaT``
    for dates; ``NaN`` for floats, and for NumPy integers, which become
    ``float64``; ``None`` otherwise) and ``other_category`` to the
    ``other_category`` label itself. A string column holds the label; a
    numeric, boolean, date or categorical column cannot, and comes back as an
    ``object`` column (its missing values then ``pd.NA`` for a nullable
    input, ``None`` otherwise) whenever the records hold the label. It draws
    nothing, so it ignores ``random_state``.

    **Output container.** :meth:`transform` returns a DataFrame;
    ``set_output(transform="default")`` makes it return a NumPy array of the
    labels (``DataFrame.to_numpy()``), which :meth:`inverse_transform` also
    accepts, and ``set_output(transform="pandas")`` keeps the DataFrame.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.preprocessing.encoder import DPCategoricalEncoder
    >>> X = pd.DataFrame({"color": ["red", "blue", "blue", None], "size": [1, 2, 2, 3]})
    >>> enc = DPCategoricalEncoder(categories={"color": ["red", "blue"], "size": [1, 2, 3]},
    ...                            missing={"color": "category"})
    >>> Xt = enc.fit_transform(X)
    >>> list(Xt["color"])
    ['red', 'blue', 'blue', '__missing__']
    >>> enc.categories_["size"]  # public categories: exactly the list
    [1, 2, 3]
    >>> len(enc.privacy_ledger_)
    0
    >>> enc.inverse_transform(Xt)["size"].tolist()
    [1, 2, 2, 3]

    Only the columns in ``columns=`` are encoded; the others pass through:

    >>> enc = DPCategoricalEncoder({"size": [1, 2, 3]}, columns=["size"]).fit(X)
    >>> out = enc.transform(X)
    >>> out["color"].equals(X["color"]), isinstance(out["size"].dtype, pd.CategoricalDtype)
    (True, True)
    """

    def __init__(self, categories=None, *, columns=None, epsilon=None, delta=None, threshold=None,
                 handle_unknown="auto", other_category="__other__", missing="error",
                 missing_category="__missing__", random_state=None):
        self.categories = categories
        self.columns = columns
        self.epsilon = epsilon
        self.delta = delta
        self.threshold = threshold
        self.handle_unknown = handle_unknown
        self.other_category = other_category
        self.missing = missing
        self.missing_category = missing_category
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        # Missing values are accepted only when every column gives them a category.
        tags.input_tags.allow_nan = isinstance(self.missing, str) and self.missing == "category"
        tags.transformer_tags.preserves_dtype = []  # labels in, Categorical out
        return tags

    # -- validation -----------------------------------------------------------
    def _per_column_option(self, name: str, value, allowed, default, columns) -> dict:
        """``{column: option}`` from a single option or a dict (columns not named get ``default``)."""
        if isinstance(value, Mapping):
            unknown = [k for k in value if k not in set(columns)]
            if unknown:
                raise ValueError(f"{name} names columns that are not {param_scope(self.columns)}: {unknown}.")
            out = {c: value.get(c, default) for c in columns}
        else:
            out = {c: value for c in columns}
        for c, option in out.items():
            if not isinstance(option, str) or option not in allowed:
                raise ValueError(f"{name} must be one of {allowed} (or a dict {{column: option}}), got {option!r}"
                                 + (f" for column {c!r}." if isinstance(value, Mapping) else "."))
        return out

    # What each hyper-parameter may be (skdpsynth.params); per-column dicts and the category lists are checked
    # against the columns in _check_params.
    _parameter_constraints = {
        "categories": [Dict("{column: list}"), None],
        "columns": [None, Names("column names")],
        "epsilon": [None, PrivacyParameter()],
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
        "threshold": [None, Interval(Real)],
        "handle_unknown": [Options(*_HANDLE_UNKNOWN), Mapping],
        "missing": [Options(*_MISSING), Mapping],
        # Labels of their own: hashable; not a missing value and not both the same (checked when used).
        "other_category": [Hashable],
        "missing_category": [Hashable],
        "random_state": ["random_state"],
    }

    def _check_params(self, columns) -> tuple[dict, dict, dict]:
        """The declared constraints; then the public categories, and the handle_unknown / missing option of each
        column ("auto" unresolved)."""
        validate_params(self)
        handle_unknown = self._per_column_option("handle_unknown", self.handle_unknown, _HANDLE_UNKNOWN, "auto",
                                                 columns)
        missing = self._per_column_option("missing", self.missing, _MISSING, "error", columns)
        if self.epsilon is None:
            if self.delta is not None:
                raise ValueError("delta was given without epsilon; give epsilon too (or neither).")
            if self.threshold is not None:
                raise ValueError("threshold only applies to DP discovery; give epsilon and delta too.")
        given = self.categories if self.categories is not None else {}
        unknown = [k for k in given if k not in set(columns)]
        if unknown:
            raise ValueError(f"categories names columns that are not {param_scope(self.columns)}: {unknown}.")
        public = {}
        for col, values in given.items():
            if isinstance(values, (str, bytes)) or not np.iterable(values):
                raise ValueError(f"categories[{col!r}] must be a list of values, got {values!r}.")
            values = list(values.tolist() if hasattr(values, "tolist") else values)
            if len(values) == 0:
                raise ValueError(f"categories[{col!r}] is empty.")
            if any(_is_na_scalar(v) for v in values):
                raise ValueError(f"categories[{col!r}] contains a missing value; missing values are "
                                 "handled by the missing= parameter.")
            try:
                index = pd.Index(values, dtype=object)
            except TypeError:
                raise ValueError(f"categories[{col!r}] must hold hashable values.") from None
            if index.has_duplicates:
                dup = list(index[index.duplicated()].unique())
                raise ValueError(f"categories[{col!r}] has duplicate values: {dup}.")
            public[col] = values
        return public, handle_unknown, missing

    def _check_labels(self, handle_unknown: dict, missing: dict) -> None:
        extra = []
        for name, enabled in (("other_category", "other" in handle_unknown.values()),
                              ("missing_category", bool({"category", "auto"} & set(missing.values())))):
            label = getattr(self, name)
            if not enabled:
                continue
            try:
                hash(label)
            except TypeError:
                raise ValueError(f"{name} must be hashable, got {label!r}.") from None
            if _is_na_scalar(label):
                raise ValueError(f"{name} must not be a missing value, got {label!r}.")
            extra.append(label)
        if len(extra) == 2 and extra[0] == extra[1]:
            raise ValueError(f"other_category and missing_category must differ, both are {extra[0]!r}.")

    def _full_categories(self, col, values: list, *, private: bool, dp: bool) -> list:
        """Append the other/missing labels the column has, checking they do not collide."""
        index = pd.Index(values, dtype=object)
        out = list(values)
        for name, enabled in (("other_category", self.handle_unknown_[col] == "other"),
                              ("missing_category", self._has_missing_category(col))):
            if not enabled:
                continue
            label = getattr(self, name)
            if len(index) and index.get_indexer([label])[0] >= 0:
                where = "a value found in the data (DP-released or inferred)" if private else "one of its categories"
                raise ValueError(f"{name}={label!r} is {where} in column {col!r}; choose another label.")
            out.append(label)
        if not out:
            why = "no value was released" if dp else "the data has no values to read them from"
            raise ValueError(f"Column {col!r} has no categories: {why}, and its handle_unknown="
                             f"{self.handle_unknown_[col]!r} and missing={self.missing_[col]!r} add none. Give "
                             "public categories, or set handle_unknown='other' or missing='category' for it.")
        return out

    # -- fit -------------------------------------------------------------------
    def fit(self, X, y=None):
        """Determine each encoded column's category list, spending the DP budget once.

        Parameters
        ----------
        X : pandas.DataFrame or 2-D array-like
            Categorical-ish columns (strings, ints, bools, Categorical, object).
            0 rows are accepted (see Notes).
        y : ignored

        Returns
        -------
        self
        """
        frame = as_frame(X, keep_object_lists=True)
        check_has_columns(frame, "DPCategoricalEncoder")
        columns = select_columns(self.columns, frame)
        public, handle_unknown, missing = self._check_params(columns)
        to_discover = [c for c in columns if c not in public]
        dp = self.epsilon is not None and bool(to_discover)
        if dp and self.delta is None:
            raise ValueError(
                "DP category discovery (thresholded Laplace counts) is (epsilon, delta)-DP and needs "
                f"delta > 0; give delta in (0, 1) or public categories for columns {to_discover}.")
        handle_unknown, missing = self._resolve_handling(frame, columns, to_discover, dp, handle_unknown, missing)
        ledger = PrivacyLedger()
        if dp:
            released, thresholds = self._discover(frame, to_discover, missing, handle_unknown, ledger)
        else:
            released, thresholds = self._read_categories(frame, to_discover, ledger), {}

        self.handle_unknown_ = handle_unknown
        self.missing_ = missing
        self.categories_ = {
            col: self._full_categories(col, public[col], private=False, dp=False) if col in public
            else self._full_categories(col, released[col], private=True, dp=dp)
            for col in columns
        }
        self.columns_ = columns
        self.thresholds_ = thresholds
        self.privacy_ledger_ = ledger
        self.feature_names_in_ = np.asarray(list(frame.columns), dtype=object)
        self.n_features_in_ = frame.shape[1]
        self.dtypes_ = {col: frame[col].dtype for col in columns}
        return self

    def _resolve_handling(self, frame: pd.DataFrame, columns, to_discover, dp: bool, handle_unknown: dict,
                          missing: dict) -> tuple[dict, dict]:
        """``handle_unknown`` and ``missing`` per column with ``"auto"`` resolved where no DP release decides it,
        checked against each other and against the data's missing values before any budget is spent."""
        # "auto": an "other" category only where DP thresholding may leave values unreleased.
        handle_unknown = {c: ("other" if dp and c in to_discover else "error") if h == "auto" else h
                          for c, h in handle_unknown.items()}
        self._check_labels(handle_unknown, missing)
        for col in columns:
            if missing[col] == "other" and handle_unknown[col] != "other":
                raise ValueError(f"missing='other' for column {col!r} maps missing values to the other category, "
                                 "which it does not have: set handle_unknown='other' for it too.")
        for col in columns:  # "auto" without a DP release: public categories refuse missing values
            if missing[col] == "auto" and not (dp and col in to_discover):
                missing[col] = "category" if col in to_discover and frame[col].isna().any() else "error"
        for col in columns:
            if missing[col] == "error" and frame[col].isna().any():
                raise ValueError(
                    f"Column {col!r} has missing values (None/NaN), and missing values get no category unless "
                    f"asked for (missing='error', the default). Declare them with missing='category' (or "
                    f"missing={{{col!r}: 'category'}} for this column only): they then map to the category "
                    f"{self.missing_category!r}.")
        return handle_unknown, missing

    def _discover(self, frame: pd.DataFrame, to_discover, missing: dict, handle_unknown: dict,
                  ledger: PrivacyLedger) -> tuple[dict, dict]:
        """The released values of each column and its threshold: thresholded Laplace counts, ``epsilon / m``
        and ``delta / m`` per column (m columns). A ``missing="auto"`` column's missing values are one more
        count, released above :func:`._adaptive.missing_threshold`; ``missing`` is updated in place."""
        warn_reproducible_noise(type(self).__name__, self.random_state)
        rng = noise_generator(self.random_state)
        m = len(to_discover)
        eps_col, delta_col = float(self.epsilon) / m, float(self.delta) / m
        tau_dp = dp_threshold(eps_col, delta_col)
        if self.threshold is not None and float(self.threshold) < tau_dp:
            raise ValueError(
                f"threshold={self.threshold!r} is below the (epsilon, delta)-DP threshold {tau_dp:.6g} "
                f"for epsilon={eps_col:.6g}, delta={delta_col:.6g} per column; it can only be raised.")
        tau = tau_dp if self.threshold is None else float(self.threshold)
        released, thresholds = {}, {}
        for col in to_discover:
            counts = frame[col].value_counts(dropna=True, sort=False)
            counts = counts[counts > 0]  # a Categorical's unused categories are not candidates
            candidates, cut = counts.to_numpy(), tau
            if missing[col] == "auto":
                # One more count, of the missing values: a record is in it or in one value's count (L1
                # sensitivity 1 still), and it is there whatever the data, so its threshold needs no δ.
                candidates = np.append(candidates, int(frame[col].isna().sum()))
                cut = np.append(np.full(counts.size, tau), missing_threshold(eps_col))
            keep = release_above_threshold(candidates, epsilon=eps_col, threshold=cut, random_state=rng)
            if missing[col] == "auto":
                missing[col] = "category" if keep[-1] else ("tentative" if handle_unknown[col] == "other"
                                                            else "error")
                keep = keep[:-1]
            released[col] = _sorted_values(counts.index[keep].tolist())
            thresholds[col] = tau
            ledger.add(f"categories of column {col!r}", "laplace-threshold",
                       epsilon=eps_col, delta=delta_col, sensitivity=1.0,
                       scale=1.0 / eps_col, n_values=len(released[col]), threshold=tau)
            del counts
        self._check_ledger(ledger)
        return released, thresholds

    @staticmethod
    def _read_categories(frame: pd.DataFrame, to_discover, ledger: PrivacyLedger) -> dict:
        """Each column's values read from the data, without DP: a ``PrivacyLeakWarning``, recorded in
        ``ledger``."""
        released = {col: _sorted_values(pd.unique(frame[col].dropna()).tolist()) for col in to_discover}
        if to_discover:
            warn_privacy_leak(
                f"The categories of columns {[str(c) for c in to_discover]} were read from the private "
                "data without differential privacy. Give them as public categories= or set "
                "epsilon and delta for DP category discovery.", ledger=ledger,
                description=f"DPCategoricalEncoder: the categories of columns {[str(c) for c in to_discover]} "
                "read from the data", columns=[str(c) for c in to_discover])
        return released

    def _check_ledger(self, ledger: PrivacyLedger) -> None:
        entries = ledger.entries
        eps = math.fsum(e.epsilon for e in entries)
        delta = math.fsum(e.delta for e in entries)
        if eps > float(self.epsilon) * (1 + 1e-9) or delta > float(self.delta) * (1 + 1e-9):
            raise RuntimeError(f"Spent ({eps}, {delta}) exceeds the budget ({self.epsilon}, {self.delta}).")

    # -- transform -------------------------------------------------------------
    def _input_frame(self, X, what) -> pd.DataFrame:
        check_is_fitted(self, "categories_")
        return fitted_frame(X, self.feature_names_in_, "DPCategoricalEncoder", what, keep_object_lists=True)

    def _has_missing_category(self, col) -> bool:
        return self.missing_[col] in ("category", "tentative")

    def _n_real(self, col) -> int:
        return (len(self.categories_[col]) - (self.handle_unknown_[col] == "other")
                - self._has_missing_category(col))

    def tentative_missing(self) -> dict:
        """``{column: missing_category}`` of the columns whose missing category is tentative (see ``missing``).

        Examples
        --------
        >>> import pandas as pd
        >>> from skdpsynth.preprocessing.encoder import DPCategoricalEncoder
        >>> X = pd.DataFrame({"city": ["Oslo"] * 600 + [None] * 400, "size": ["S", "L"] * 500})
        >>> enc = DPCategoricalEncoder(epsilon=2.0, delta=1e-6, missing="auto", random_state=0).fit(X)
        >>> enc.missing_   # city's 400 missing values passed their threshold; size has none, its count was noise
        {'city': 'category', 'size': 'tentative'}
        >>> enc.tentative_missing()
        {'size': '__missing__'}
        """
        check_is_fitted(self, "categories_")
        return {col: self.missing_category for col, option in self.missing_.items() if option == "tentative"}

    def confirm_missing(self, columns) -> DPCategoricalEncoder:
        """Make the tentative missing category of ``columns`` a missing category (``missing_`` says
        ``"category"``): :meth:`inverse_transform` then maps it to missing values.

        Post-processing: the caller decides from DP releases (a
        :class:`~skdpsynth.pipeline.SynthesisPipeline` from its synthesizer's
        measurement of the column), never from the data.

        Parameters
        ----------
        columns : iterable
            Columns of :meth:`tentative_missing`.

        Returns
        -------
        self

        Examples
        --------
        >>> import pandas as pd
        >>> from skdpsynth.preprocessing.encoder import DPCategoricalEncoder
        >>> X = pd.DataFrame({"c": ["a"] * 500 + ["b"] * 500})
        >>> enc = DPCategoricalEncoder(epsilon=1.0, delta=1e-6, missing="auto", random_state=0).fit(X)
        >>> codes = pd.DataFrame({"c": ["a", "__missing__"]})
        >>> enc.inverse_transform(codes)["c"].tolist()   # tentative: read as the other category
        ['a', '__other__']
        >>> enc.confirm_missing(["c"]).inverse_transform(codes)["c"].isna().tolist()   # now a missing value
        [False, True]
        """
        tentative = self.tentative_missing()
        columns = list(columns)
        unknown = [c for c in columns if c not in tentative]
        if unknown:
            raise ValueError(f"Columns {unknown} have no tentative missing category (tentative: {list(tentative)}).")
        for col in columns:
            self.missing_[col] = "category"
        return self

    def transform(self, X):
        """Map each encoded column onto its category list; the other columns pass through.

        Parameters
        ----------
        X : pandas.DataFrame or 2-D array-like
            Exactly the columns seen in :meth:`fit` (a DataFrame is matched by
            name; an unknown or missing column is a ``ValueError``).

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            Same column names and index; each encoded column a ``Categorical``
            with ``categories_[column]`` as categories. A NumPy array after
            ``set_output(transform="default")``.
        """
        frame = self._input_frame(X, "X")
        new = {}
        for col in self.columns_:
            cats = self.categories_[col]
            n_real = self._n_real(col)
            values = frame[col].astype(object)
            missing = values.isna().to_numpy()
            codes = pd.Index(cats[:n_real], dtype=object).get_indexer(values)
            if missing.any():
                if self.missing_[col] == "error":
                    # Neither how many nor where: both are private.
                    raise ValueError(f"Column {col!r} has missing values (None/NaN), and "
                                     "missing values get no category unless asked for (missing='error'). Declare "
                                     f"them with missing='category' (or missing={{{col!r}: 'category'}}) when "
                                     "fitting.")
                # Their own category (the last, tentative or not), or "other" (the first label after the real
                # ones).
                codes[missing] = n_real if self.missing_[col] == "other" else len(cats) - 1
            unknown = (codes < 0) & ~missing
            if unknown.any():
                if self.handle_unknown_[col] == "error":
                    # The values are private: the message names the column only.
                    raise ValueError(f"Column {col!r} has values not among its categories. Its "
                                     "categories are exact (handle_unknown='error'); set handle_unknown='other' "
                                     f"(or handle_unknown={{{col!r}: 'other'}}) to map such values to the "
                                     f"category {self.other_category!r}.")
                codes[unknown] = n_real
            # Public or DP-released categories: synthesizers may take the domain from this dtype.
            dtype = mark_public(pd.CategoricalDtype(pd.Index(cats, dtype=object), ordered=False))
            new[col] = pd.Categorical.from_codes(codes, dtype=dtype)
        return self._wrap_output(assemble(frame, new))

    def inverse_transform(self, X, *, random_state=None):
        """Map encoded columns back to the input's values and dtypes where possible.

        Real categories come back as themselves with the column's original
        dtype; ``missing_category`` becomes that dtype's missing value
        (``pd.NA`` for the nullable ``Int64``, ``boolean``, ``string`` and
        ``Float64`` dtypes, which are kept; ``NaT`` for dates; ``NaN`` for
        floats, and for NumPy integers, which turns an int64 column into
        float64; ``None`` otherwise); ``other_category`` stays as its label,
        which keeps a string column's dtype and makes numeric, boolean, date
        and categorical columns ``object``. A categorical input column keeps
        its original categories when every value fits. Columns that were not
        encoded pass through unchanged.

        Parameters
        ----------
        X : pandas.DataFrame or 2-D array-like
            Encoded data, e.g. the output of :meth:`transform` or a synthetic
            sample of it (exactly the columns seen in :meth:`fit`).
        random_state : None, int or numpy.random.Generator, default=None
            Ignored: the mapping back is deterministic (nothing is drawn).
            Accepted so that every step of a
            :class:`~skdpsynth.pipeline.SynthesisPipeline` takes it.

        Returns
        -------
        pandas.DataFrame

        Examples
        --------
        >>> import pandas as pd
        >>> from skdpsynth.preprocessing.encoder import DPCategoricalEncoder
        >>> X = pd.DataFrame({"n": pd.array([1, None, 2], dtype="Int64")})
        >>> enc = DPCategoricalEncoder({"n": [1, 2]}, missing="category").fit(X)
        >>> back = enc.inverse_transform(enc.transform(X))
        >>> back["n"].dtype, back["n"].tolist()
        (Int64Dtype(), [1, <NA>, 2])
        """
        frame = self._input_frame(X, "X")
        new = {}
        for col in self.columns_:
            cats = self.categories_[col]
            has_o, has_m = self.handle_unknown_[col] == "other", self.missing_[col] == "category"
            n_real = self._n_real(col)
            # A tentative missing category reads as "other", where an unreleased count puts missing values.
            other_codes = (n_real, len(cats) - 1) if self.missing_[col] == "tentative" else (n_real,)
            values = frame[col].astype(object)
            na = values.isna().to_numpy()
            codes = pd.Index(cats, dtype=object).get_indexer(values)
            bad = (codes < 0) & ~na
            if bad.any():
                # Not the values: the input may be the real records (e.g. transform's output).
                raise ValueError(f"Column {col!r} has values that are not among its encoded categories "
                                 "(categories_); inverse_transform maps exactly those back.")
            other = np.isin(codes, other_codes) if has_o else np.zeros(len(codes), dtype=bool)
            missing = na | ((codes == len(cats) - 1) if has_m else False)
            result = np.empty(len(codes), dtype=object)
            real = ~other & ~missing
            result[real] = np.asarray(cats, dtype=object)[codes[real]]
            result[other] = self.other_category if has_o else None
            result[missing] = None
            new[col] = self._restore(result, self.dtypes_[col], other.any(), missing.any()).set_axis(frame.index)
        return assemble(frame, new)

    @staticmethod
    def _restore(values: np.ndarray, dtype, has_other: bool, has_missing: bool) -> pd.Series:
        """The decoded labels (missing values as None) in the input column's dtype, where it can hold them."""
        series = pd.Series(values, dtype=object)
        if isinstance(dtype, pd.CategoricalDtype):
            present = series.dropna()
            if present.isin(dtype.categories).all():
                return series.astype(dtype)
            return series
        if dtype == object:
            return series
        if pd.api.types.is_string_dtype(dtype):
            try:
                return series.astype(dtype)
            except (TypeError, ValueError):
                return series
        nullable = isinstance(dtype, pd.api.extensions.ExtensionDtype)
        if has_other:
            # The label fits no number, boolean or date: an object column. A nullable column's missing
            # values stay its own missing value (pd.NA), so that they read as the input's did.
            if nullable and has_missing:
                series[series.isna()] = dtype.na_value
            return series
        if has_missing and not nullable and dtype.kind in "iub":
            # A NumPy integer or bool column has no missing value: pandas' convention, float64 with NaN for
            # integers; booleans stay object with None (float would turn them into 1.0 / 0.0).
            return series.astype("float64") if dtype.kind in "iu" else series
        # Nullable dtypes (Int64, boolean, Float64, ...) take None as pd.NA, floats as NaN, dates as NaT.
        try:
            return series.astype(dtype)
        except (TypeError, ValueError):
            return series

    def get_feature_names_out(self, input_features=None):
        """Output feature names: the input column names, encoded and passed through, in input order.

        Parameters
        ----------
        input_features : array-like of str or None
            If given, must match ``feature_names_in_``.

        Returns
        -------
        ndarray of object
        """
        check_is_fitted(self, "categories_")
        names = [str(c) for c in self.feature_names_in_]
        if input_features is not None:
            given = [str(c) for c in input_features]
            if given != names:
                raise ValueError(f"input_features {given} do not match feature_names_in_ {names}.")
        return np.asarray(names, dtype=object)
