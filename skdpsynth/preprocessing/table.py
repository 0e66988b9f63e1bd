"""One transformer for a whole mixed table: numeric columns to DP bins, the rest to DP categories.

:class:`TableDiscretizer` reads a per-column *schema* (a dict, or JSON) of
public metadata, routes numeric columns to
:class:`~skdpsynth.preprocessing.discretizer.DPKBinsDiscretizer` and the other
columns to :class:`~skdpsynth.preprocessing.encoder.DPCategoricalEncoder`,
splits one (ε, δ) budget between them, and outputs a frame of pandas
``Categorical`` columns whose category lists are public — what the
synthesizers read as their domain.  :func:`schema_to_json` and
:func:`schema_from_json` store and load schemas.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import warnings
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..params import Dict, Interval, Options, PrivacyParameter, validate_params
from ..privacy import PrivacyLedger, PrivacyLeakWarning, warn_privacy_leak
from ..privacy.metadata import mark_public
from ..privacy.randomness import ReproducibleNoiseWarning, child_random_states, warn_reproducible_noise
from ..utils import check_random_state
from ._input import OutputMixin, as_frame, check_has_columns, fitted_frame
from .discretizer import DPKBinsDiscretizer
from .encoder import DPCategoricalEncoder

__all__ = ["TableDiscretizer", "normalize_schema", "private_metadata", "schema_from_json", "schema_to_json"]

_TYPES = ("numeric", "categorical")
_STRATEGIES = ("uniform", "quantile", "adaptive")
_DEFAULT_BINS = 10  # n_bins="auto" for a column binned uniformly or at quantiles
_OUTPUTS = ("interval", "code")
_NUMERIC_KEYS = {"type", "bounds", "n_bins", "strategy", "edges", "decimals", "missing"}
_NUMERIC_MISSING = ("auto", "category", "error")
_CATEGORICAL_KEYS = {"type", "categories", "handle_unknown", "missing"}
_HANDLE_UNKNOWN = ("other", "error")
_MISSING = ("category", "error", "auto", "other")
_OTHER, _MISSING_LABEL = "__other__", "__missing__"  # DPCategoricalEncoder's default labels


# -- helpers -------------------------------------------------------------------------------------------
def _is_int(value) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_number(value) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def _plain(value):
    """numpy scalars -> Python scalars, tuples/arrays -> lists (recursively), for JSON and comparisons."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, np.ndarray, pd.Index)):
        return [_plain(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _is_na_scalar(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


_DAY_NS = 86_400 * 10 ** 9


def _dates_as_days(series: pd.Series) -> pd.Series:
    """A date column as float days since 1970-01-01 UTC (missing dates as NaN): numbers the discretizer bins."""
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        series = series.dt.tz_convert("UTC").dt.tz_localize(None)
    ns = series.to_numpy(dtype="datetime64[ns]")
    days = ns.astype(np.int64).astype(np.float64) / _DAY_NS
    days[np.isnat(ns)] = np.nan
    return pd.Series(days, index=series.index, name=series.name)


def _year_starts() -> np.ndarray:
    """January 1 of the years 1678 .. 2263 as days since 1970-01-01: the public buckets (calendar years) of a
    date column's DP bounds and adaptive cells, covering every date of ``datetime64[ns]`` (1677-09-21 ..
    2262-04-11, the earliest days counted in 1678)."""
    years = np.arange(np.datetime64("1678", "Y"), np.datetime64("2264", "Y"))
    return years.astype("datetime64[D]").astype(np.int64).astype(np.float64)


def _days_as_dates(series: pd.Series, dtype) -> pd.Series:
    """Days since 1970-01-01 UTC back to dates of ``dtype`` (NaN as NaT)."""
    values = series.to_numpy(dtype=np.float64)
    ns = np.where(np.isnan(values), 0, np.round(values * _DAY_NS)).astype(np.int64)
    dates = pd.Series(pd.to_datetime(ns, unit="ns"), index=series.index, name=series.name).mask(np.isnan(values))
    if isinstance(dtype, pd.DatetimeTZDtype):
        return dates.dt.tz_localize("UTC").dt.tz_convert(dtype.tz).astype(dtype)
    return dates.astype(dtype)


def _is_numeric_dtype(dtype) -> bool:
    """Numbers the discretizer can bin: int/float (incl. nullable), not bool, complex or Categorical."""
    return (not isinstance(dtype, pd.CategoricalDtype) and pd.api.types.is_numeric_dtype(dtype)
            and not pd.api.types.is_bool_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype))


def _normalize_spec(name, spec) -> dict:
    """One column's spec in canonical dict form (only the keys given), validated."""
    spec = _spec_as_dict(name, spec)
    kind = spec.get("type")
    if kind not in _TYPES:
        raise ValueError(f"schema[{name!r}] has unknown type {kind!r}; use one of {list(_TYPES)}.")
    allowed = _NUMERIC_KEYS if kind == "numeric" else _CATEGORICAL_KEYS
    unknown = sorted(map(str, set(spec) - allowed))
    if unknown:
        raise ValueError(f"schema[{name!r}] ({kind}) has unknown keys {unknown}; allowed: {sorted(allowed)}.")
    out = {"type": kind}
    out.update(_numeric_keys(name, spec) if kind == "numeric" else _categorical_keys(name, spec))
    return out


def _spec_as_dict(name, spec) -> Mapping:
    """A column's spec as a dict: a type name or a bare list of categories spelled out."""
    if isinstance(spec, str):  # "numeric" / "categorical": the type alone
        spec = {"type": spec}
    elif isinstance(spec, list):  # a bare list: the categories of a categorical column
        spec = {"type": "categorical", "categories": spec}
    elif isinstance(spec, tuple):
        raise ValueError(
            f"schema[{name!r}] is a bare tuple {spec!r}, which is ambiguous (numeric bounds or categories?). "
            "Write {'type': 'numeric', 'bounds': [lo, hi]} for a numeric column or a list of categories "
            "(or {'type': 'categorical', 'categories': [...]}) for a categorical one.")
    elif not isinstance(spec, Mapping):
        raise TypeError(f"schema[{name!r}] must be a dict spec, a list of categories or a type name, "
                        f"got {type(spec).__name__}.")
    return spec


def _numeric_keys(name, spec: Mapping) -> dict:
    """A numeric column's keys besides its type, validated (edges replace bounds and n_bins they agree with)."""
    out = {}
    bounds = spec.get("bounds")
    if bounds is not None:
        if isinstance(bounds, (str, bytes)) or not np.iterable(bounds) or len(bounds) != 2:
            raise ValueError(f"schema[{name!r}]['bounds'] must be [lower, upper], got {bounds!r}.")
        lower, upper = _plain(list(bounds))
        if not (_is_number(lower) and _is_number(upper) and math.isfinite(lower)
                and math.isfinite(upper) and lower < upper):
            raise ValueError(f"schema[{name!r}]['bounds'] must be finite numbers with lower < upper, "
                             f"got {bounds!r}.")
        out["bounds"] = [lower, upper]
    n_bins = spec.get("n_bins")
    if n_bins is not None:
        if n_bins != "auto" and (not _is_int(n_bins) or n_bins < 1):
            raise ValueError(f"schema[{name!r}]['n_bins'] must be an integer >= 1 or 'auto', got {n_bins!r}.")
        out["n_bins"] = n_bins if n_bins == "auto" else int(n_bins)
    decimals = spec.get("decimals")
    if decimals is not None:
        if not _is_int(decimals) or not 0 <= decimals <= 15:
            raise ValueError(f"schema[{name!r}]['decimals'] must be an integer in 0..15 (0: whole numbers), "
                             f"got {decimals!r}.")
        out["decimals"] = int(decimals)
    for key, allowed_values in (("missing", _NUMERIC_MISSING), ("strategy", _STRATEGIES)):
        value = spec.get(key)
        if value is not None:
            if value not in allowed_values:
                raise ValueError(f"schema[{name!r}][{key!r}] must be one of {list(allowed_values)}, got {value!r}.")
            out[key] = value
    edges = spec.get("edges")
    if edges is not None:
        edges = _checked_edges(name, edges, out)
        out.pop("bounds", None)
        out.pop("n_bins", None)
        out["edges"] = edges
    return out


def _checked_edges(name, edges, out: Mapping) -> list:
    """A numeric column's edges as a list, validated, and checked against the bounds and n_bins in ``out``."""
    if isinstance(edges, (str, bytes, Mapping)) or not np.iterable(edges):
        raise ValueError(f"schema[{name!r}]['edges'] must be a list of numbers, got {edges!r}.")
    edges = _plain(list(edges))
    if (len(edges) < 2 or not all(_is_number(v) and math.isfinite(v) for v in edges)
            or any(b <= a for a, b in zip(edges, edges[1:]))):
        raise ValueError(f"schema[{name!r}]['edges'] must be at least two finite, strictly increasing "
                         f"numbers, got {edges!r}.")
    if "bounds" in out and out["bounds"] != [edges[0], edges[-1]]:
        raise ValueError(f"schema[{name!r}]: 'bounds' {out['bounds']} contradicts 'edges' (which start at "
                         f"{edges[0]} and end at {edges[-1]}); give one of the two.")
    if "n_bins" in out and out["n_bins"] != len(edges) - 1:
        raise ValueError(f"schema[{name!r}]: 'n_bins' {out['n_bins']} contradicts the {len(edges)} "
                         f"'edges' ({len(edges) - 1} bins).")
    return edges


def _categorical_keys(name, spec: Mapping) -> dict:
    """A categorical column's keys besides its type, validated."""
    out = {}
    cats = spec.get("categories")
    if cats is not None:
        # An empty list is a released one (DP discovery released no value): it needs an extra category to hold
        # the records, which the key checks below ensure.
        out["categories"] = _checked_categories(name, cats, empty_ok=spec.get("handle_unknown") == "other"
                                                or spec.get("missing") == "category")
    for key, allowed_values in (("handle_unknown", _HANDLE_UNKNOWN), ("missing", _MISSING)):
        value = spec.get(key)
        if value is not None:
            if value not in allowed_values:
                raise ValueError(f"schema[{name!r}][{key!r}] must be one of {list(allowed_values)}, "
                                 f"got {value!r}.")
            out[key] = value
    return out


def _checked_categories(name, cats, empty_ok: bool = False) -> list:
    """A categorical column's categories as a list of Python scalars, validated."""
    if isinstance(cats, (str, bytes, Mapping)) or not np.iterable(cats):
        raise ValueError(f"schema[{name!r}]['categories'] must be a list of values, got {cats!r}.")
    cats = _plain(list(cats))
    if len(cats) == 0 and not empty_ok:
        raise ValueError(f"schema[{name!r}]['categories'] is empty; give at least one category, or "
                         "leave 'categories' out to discover them (DP with epsilon/delta).")
    if any(_is_na_scalar(v) for v in cats):
        raise ValueError(f"schema[{name!r}]['categories'] contains a missing value; use "
                         "'missing': 'category' to give missing values their own category.")
    try:
        index = pd.Index(cats, dtype=object)
    except TypeError:
        raise ValueError(f"schema[{name!r}]['categories'] must hold hashable values.") from None
    if index.has_duplicates:
        raise ValueError(f"schema[{name!r}]['categories'] has duplicate values "
                         f"{list(index[index.duplicated()].unique())}.")
    return cats


def normalize_schema(schema) -> dict:
    """Validate a schema and return it in canonical form ``{column: {"type": ..., ...}}``.

    Bare lists become ``{"type": "categorical", "categories": [...]}``, a
    bare type name ``{"type": name}``; bounds and categories become lists of
    Python scalars. Keys that were not given stay absent.

    Parameters
    ----------
    schema : dict or None

    Returns
    -------
    dict

    Examples
    --------
    >>> from skdpsynth.preprocessing.table import normalize_schema
    >>> normalize_schema({"city": ["Oslo", "Rome"], "age": {"type": "numeric", "bounds": (0, 99)}})
    {'city': {'type': 'categorical', 'categories': ['Oslo', 'Rome']}, 'age': {'type': 'numeric', 'bounds': [0, 99]}}
    """
    if schema is None:
        return {}
    if not isinstance(schema, Mapping):
        raise TypeError(f"schema must be a dict {{column: spec}} or None, got {type(schema).__name__}.")
    return {name: _normalize_spec(name, spec) for name, spec in schema.items()}


def schema_to_json(schema, path=None, *, indent=2) -> str:
    """Serialize a schema (canonical form, see :func:`normalize_schema`) to JSON.

    Column names must be strings (JSON object keys are). Numeric bounds are
    written as ``[lower, upper]`` lists. Only public metadata belongs in a
    schema: a fitted ``TableDiscretizer.schema_`` qualifies when its fit
    issued no :class:`~skdpsynth.privacy.PrivacyLeakWarning`.

    Parameters
    ----------
    schema : dict
    path : str or os.PathLike, optional
        Also write the JSON text to this file.
    indent : int or None, default=2

    Returns
    -------
    str
        The JSON text.

    Examples
    --------
    >>> from skdpsynth.preprocessing.table import schema_from_json, schema_to_json
    >>> text = schema_to_json({"age": {"type": "numeric", "bounds": [0.0, 99.0]}}, indent=None)
    >>> text
    '{"age": {"type": "numeric", "bounds": [0.0, 99.0]}}'
    >>> schema_from_json(text)
    {'age': {'type': 'numeric', 'bounds': [0.0, 99.0]}}
    """
    canonical = normalize_schema(schema)
    bad = [name for name in canonical if not isinstance(name, str)]
    if bad:
        raise ValueError(f"JSON schemas need string column names; got {bad!r}. Rename the columns first.")
    try:
        text = json.dumps(canonical, indent=indent, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"The schema holds values that JSON cannot represent ({exc}); use str, int, float "
                        "or bool categories.") from None
    if path is not None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return text


def _reject_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"The JSON schema has duplicate keys {dup}.")
    return dict(pairs)


def schema_from_json(path_or_str) -> dict:
    """Load a schema from a JSON file or a JSON string; returns it in canonical form.

    Parameters
    ----------
    path_or_str : str or os.PathLike
        A path, or JSON text (a string whose first non-blank character is ``{`` or ``[``).

    Returns
    -------
    dict

    Examples
    --------
    >>> from skdpsynth.preprocessing.table import schema_from_json
    >>> schema_from_json('{"color": ["red", "blue"]}')
    {'color': {'type': 'categorical', 'categories': ['red', 'blue']}}
    """
    if isinstance(path_or_str, str) and path_or_str.lstrip()[:1] in ("{", "["):
        text = path_or_str
    elif isinstance(path_or_str, (str, os.PathLike)):
        with open(path_or_str, encoding="utf-8") as fh:
            text = fh.read()
    else:
        raise TypeError(f"Expected a path or a JSON string, got {type(path_or_str).__name__}.")
    schema = json.loads(text, object_pairs_hook=_reject_duplicate_keys)
    if not isinstance(schema, dict):
        raise ValueError("A JSON schema must be an object {column: spec}.")
    return normalize_schema(schema)


# -- the transformer ---------------------------------------------------------------------------------
def _numeric_strategy(spec: Mapping, strategy: str) -> str:
    """A numeric column's strategy: its own, else the default; ``"auto"`` bins a column whose bounds are public
    uniformly (free) and any other adaptively (its bounds cost budget anyway, and the histogram shares it)."""
    chosen = spec.get("strategy", strategy)
    if chosen == "auto":
        return "uniform" if spec.get("bounds") is not None or spec.get("edges") is not None else "adaptive"
    return chosen


def _route(schema: dict, frame: pd.DataFrame, n_bins, strategy: str, dp: bool = False) -> dict:
    """Each column's effective spec, from public information only: the schema, the dtypes and whether DP is on."""
    specs = {}
    for c in frame.columns:
        spec = schema.get(c)
        if spec is None:
            spec = {"type": "numeric" if _is_numeric_dtype(frame[c].dtype) else "categorical"}
        if spec["type"] == "numeric":
            if not _is_numeric_dtype(frame[c].dtype):
                raise TypeError(f"Column {c!r} is declared numeric but has dtype {frame[c].dtype}; only "
                                "int and float columns can be binned. Declare it categorical instead.")
            edges = spec.get("edges")
            chosen = _numeric_strategy(spec, strategy)
            k = spec.get("n_bins", n_bins)
            if k == "auto" and chosen != "adaptive":
                k = _DEFAULT_BINS
            spec = {"type": "numeric",
                    "bounds": [edges[0], edges[-1]] if edges is not None else spec.get("bounds"),
                    "n_bins": len(edges) - 1 if edges is not None else k,
                    "strategy": chosen, "edges": edges, "decimals": spec.get("decimals"),
                    "missing": spec.get("missing", "auto")}
        else:
            # DPCategoricalEncoder's defaults: no extra category unless needed or asked for. Only categories
            # discovered with DP need "__other__" (thresholding leaves rare values unreleased); public ones
            # and ones read from the data are exact; missing values get a category only when declared.
            discovered = spec.get("categories") is None and dp
            spec = {"type": "categorical", "categories": spec.get("categories"),
                    "handle_unknown": spec.get("handle_unknown", "other" if discovered else "error"),
                    "missing": spec.get("missing", "auto" if discovered else "error")}
        specs[c] = spec
    return specs


def _numeric_needs_dp(spec: dict) -> bool:
    """Bin edges that would be computed from the data: no public edges, and no bounds or data quantiles."""
    if spec["edges"] is not None:
        return False
    return (spec["bounds"] is None or spec["strategy"] == "adaptive"
            or (spec["strategy"] == "quantile" and spec["n_bins"] >= 2))


def private_metadata(schema, X, *, n_bins="auto", strategy: str = "auto") -> dict:
    """The columns whose metadata :class:`TableDiscretizer` would read from ``X``, and what it would read.

    Public metadata in ``schema`` costs nothing; everything listed here is
    either released with DP (``TableDiscretizer(epsilon=..., delta=...)``)
    or, without a budget, read from the data with a privacy-leak warning.
    Only the schema and the dtypes of ``X`` are looked at.

    Parameters
    ----------
    schema : dict, JSON str or None
        As for :class:`TableDiscretizer`.
    X : pandas.DataFrame
    n_bins, strategy
        The defaults :class:`TableDiscretizer` would use for numeric columns without their own.

    Returns
    -------
    dict
        ``{column: "bounds" | "quantile bin edges" | "categories"}``.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.preprocessing.table import private_metadata
    >>> X = pd.DataFrame({"age": [30, 99], "city": ["Oslo", "Rome"], "sex": ["F", "M"]})
    >>> private_metadata({"age": "numeric", "city": "categorical", "sex": ["F", "M"]}, X)
    {'age': 'bounds', 'city': 'categories'}
    """
    specs = _route(normalize_schema(schema), as_frame(X), n_bins, strategy)
    out = {}
    for c, spec in specs.items():
        if spec["type"] == "numeric" and _numeric_needs_dp(spec):
            if spec["bounds"] is None:
                out[c] = "bounds"
            else:
                out[c] = "histogram" if spec["strategy"] == "adaptive" else "quantile bin edges"
        elif spec["type"] == "categorical" and spec["categories"] is None:
            out[c] = "categories"
    return out


class TableDiscretizer(OutputMixin, TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Discretize a whole mixed table onto public domains, under one (ε, δ) budget.

    Numeric columns are binned by a
    :class:`~skdpsynth.preprocessing.discretizer.DPKBinsDiscretizer`, all
    other columns encoded by a
    :class:`~skdpsynth.preprocessing.encoder.DPCategoricalEncoder`. The output
    has the input's columns in the input's order, each a pandas
    ``Categorical`` with its full public category list, ready for a
    synthesizer; :meth:`inverse_transform` maps (synthetic) records back to
    the original column names, order and dtypes.

    Parameters
    ----------
    schema : dict or None, default=None
        ``{column: spec}`` of public metadata, where a spec is

        * ``{"type": "numeric", "bounds": [lo, hi], "n_bins": k, "strategy": s,
          "decimals": d}`` (all optional; they default to DP/inferred bounds,
          the ``n_bins`` / ``strategy`` parameters and the dtype's precision:
          ``"decimals": 2`` returns values with at most two decimals, ``0``
          whole numbers), or
          ``{"type": "numeric", "edges": [e_0, ..., e_k]}``: public bin edges
          (free; e.g. a bin ``[0, 1)`` holding exactly 0 for a skewed integer
          column such as capital gains);
        * ``{"type": "categorical", "categories": [...], "handle_unknown": h,
          "missing": m}`` (all but ``type`` optional: without ``categories``
          they are discovered). ``handle_unknown`` (``"other"`` or
          ``"error"``) and ``missing`` (``"category"``, ``"auto"``,
          ``"other"`` or ``"error"``) are those of ``DPCategoricalEncoder``:
          ``"other"`` / ``"category"`` add the ``"__other__"`` /
          ``"__missing__"`` category. Public categories are **exact** by
          default (the output domain is the given list, and values outside it
          raise); categories discovered with DP get ``"__other__"`` (DP
          discovery leaves rare values unreleased) and ``"missing": "auto"``
          (the missing values' count is released with the others: frequent
          enough, they get ``"__missing__"``; else the category is tentative
          and reads back as ``"__other__"`` unless confirmed, see
          :meth:`confirm_missing`);
          categories read from the data without DP are exact. Elsewhere
          missing values get ``"__missing__"`` only when the spec says
          ``"missing": "category"``; otherwise :meth:`fit` and
          :meth:`transform` raise a ``ValueError`` saying so;
        * a bare list: shorthand for the categories of a categorical column.
          A list is **always** categorical, even ``[0, 100]``: numeric bounds
          need the dict form (a bare tuple is rejected as ambiguous);
        * ``"numeric"`` or ``"categorical"``: the type alone.

        Columns not in the schema are routed by dtype: int and float columns
        (not bool) are numeric, and so are date columns (``datetime64``,
        time zones included), binned as days since 1970-01-01 UTC and
        returned as dates of their dtype (their bounds in ``schema_`` are in
        those days; declare a date column categorical to keep its values as
        labels); everything else (object, string, category, bool, ...) is
        categorical — an integer column with few values (a code, a rating) is
        still *numeric* unless the schema declares it categorical. A ``Categorical`` column's dtype categories are not
        treated as public. Use :meth:`from_json` to read the schema from JSON.
    n_bins : int or "auto", default="auto"
        Bins of numeric columns whose spec has no ``n_bins``. ``"auto"``:
        chosen from the released record count for adaptive columns (see
        ``DPKBinsDiscretizer``), 10 for the others.
    strategy : {"auto", "uniform", "quantile", "adaptive"}, default="auto"
        Binning of numeric columns whose spec has no ``strategy`` (see
        ``DPKBinsDiscretizer``; ``"quantile"`` edges and the ``"adaptive"``
        histogram cost budget even with public bounds). ``"auto"``:
        ``"uniform"`` for columns whose schema gives bounds or edges (free),
        ``"adaptive"`` for the others, whose bounds cost budget anyway: their
        bins follow the data's shape, values many records share come back
        exactly, and integer columns come back as whole numbers.
    epsilon : float or None, default=None
        **Total** ε of this step, for the metadata the schema does not give:
        DP bounds / quantiles of numeric columns (pure ε-DP) and DP category
        discovery of categorical columns ((ε, δ)-DP). ``None``: that metadata
        is read from the private data without DP, with one
        :class:`~skdpsynth.privacy.PrivacyLeakWarning` naming the columns.
    delta : float or None, default=None
        **Total** δ in (0, 1); it all goes to category discovery (the numeric
        mechanisms are pure ε-DP). Required when ``epsilon`` is given and some
        categorical column has no public categories.
    numeric_epsilon_fraction : float or None, default=None
        Share in (0, 1) of ``epsilon`` for the numeric sub-step when *both*
        sub-steps need budget; the categorical sub-step gets the rest. When
        only one needs budget it gets all of ``epsilon``; when neither does,
        nothing is spent. ``None``: in proportion to the columns that need
        budget, an adaptive numeric column counting twice (it releases its
        bounds and its histogram, and its tails are what the bounds' noise
        cuts); 0.5 when no numeric column is adaptive.
    output : {"interval", "code"}, default="interval"
        Categories of binned columns: ``pd.Interval`` bins or codes 0 .. k-1.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the sub-steps' DP noise and the ``method="uniform"`` draws of
        :meth:`inverse_transform` (unless that call gets its own ``random_state``).

    Attributes
    ----------
    schema_ : dict
        The complete effective schema in canonical form, in column order:
        numeric ``{"type", "bounds", "n_bins", "strategy"}`` with the bounds
        used (public or DP-released) or ``{"type", "edges"}`` for columns with
        public edges, categorical ``{"type", "categories",
        "handle_unknown", "missing"}`` with the public or DP-released
        categories (without the ``"__other__"`` / ``"__missing__"`` labels,
        which the last two keys add back; a tentative missing category, see
        :meth:`tentative_missing`, is ``"missing": "other"``, what it reads
        back as, and a fit from this schema has no such category). When the fit issued no
        ``PrivacyLeakWarning`` it holds only public input and DP output, so
        it may be exported (:meth:`to_json`) and reused as a public schema:
        reusing DP-released metadata is free post-processing, and a later fit
        with it spends nothing (except ``"quantile"`` edges and the
        ``"adaptive"`` histogram, which the schema does not carry and which
        are released again).
    numeric_columns_, categorical_columns_ : list
        The columns of each group, in input order.
    discretizers_ : dict
        ``{strategy: DPKBinsDiscretizer}`` for the numeric columns, one per
        strategy in use.
    discretizer_ : DPKBinsDiscretizer or None
        The numeric sub-step; ``None`` when there are no numeric columns (or,
        only when the schema mixes strategies, when they are split over
        several discretizers: see ``discretizers_``).
    encoder_ : DPCategoricalEncoder or None
        The categorical sub-step (fitted with both extra labels; this class
        removes them from the output of columns whose options are
        ``"error"``); ``None`` when there are no categorical columns.
    privacy_ledger_ : PrivacyLedger
        The union of the sub-steps' ledgers (numeric first); empty when the
        schema gave everything or ``epsilon`` was ``None``.
    feature_names_in_ : ndarray of object
    n_features_in_ : int

    See Also
    --------
    skdpsynth.preprocessing.DPKBinsDiscretizer : the numeric sub-step and its mechanisms.
    skdpsynth.preprocessing.DPCategoricalEncoder : the categorical sub-step and its mechanisms.

    Notes
    -----
    **Budget.** With ``epsilon`` given, the numeric sub-step receives
    ``numeric_epsilon_fraction * epsilon`` and the categorical one
    ``epsilon - numeric_epsilon_fraction * epsilon`` (plus all of ``delta``)
    when both need budget; otherwise the one that needs it receives all of
    ``epsilon``. Within a sub-step the budget is split evenly over its columns
    that need DP work (see the sub-steps). When the schema mixes
    per-column strategies, the numeric columns are split over one
    discretizer per strategy and the numeric budget over those in proportion
    to their number of such columns, so each column gets the same share as
    with one discretizer. The fit
    checks that the composed ledger spends at most (``epsilon``, ``delta``).

    **Missing and infinite values.** Categorical columns with ``"missing":
    "category"`` map missing values to the ``"__missing__"`` category, and
    with ``"handle_unknown": "other"`` values outside their categories to
    ``"__other__"``; when enabled, the label is always in the category list
    (whether or not the data needs it), so the domain stays public. Without
    them, missing values (:meth:`fit`, :meth:`transform`) and unknown values
    (:meth:`transform`) raise a ``ValueError`` naming the column and the
    spec key to set. A numeric column gets a bin for missing values (they
    come back missing; a NumPy integer column becomes ``Int64``) when its
    spec says ``"missing": "category"``, or by default (``"auto"``) when it
    is binned adaptively and its dtype can hold missing values (float or
    nullable): decided from the dtype, so the domain stays public. Other
    numeric columns must not contain missing values, and no column may
    contain ±inf: :meth:`fit` and :meth:`transform` raise a ``ValueError``
    naming the column (no rows are dropped, and ±inf, never a real
    measurement, is not clipped). Finite out-of-range values are clipped
    into the end bins.

    **Empty input and columns.** A table with 0 rows is accepted when the
    sub-steps accept it (public metadata, DP quantiles, DP category
    discovery; see them): the fit does not depend on whether the data are
    empty. :meth:`transform` and :meth:`inverse_transform` take exactly the
    columns seen in :meth:`fit` (by name for a DataFrame, in any order);
    anything else is a ``ValueError``.

    **Output container.** :meth:`transform` returns a DataFrame;
    ``set_output(transform="default")`` makes it return a NumPy array of the
    values (codes with ``output="code"``, else ``Interval`` bins and labels),
    which :meth:`inverse_transform` also accepts.

    **Inverse transform.** Binned columns come back as numbers drawn in
    their bin (or bin midpoints), with their original dtype; categorical
    columns as their values, ``"__missing__"`` as a missing value and
    ``"__other__"`` as that label (see ``DPCategoricalEncoder``).

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.preprocessing.table import TableDiscretizer
    >>> X = pd.DataFrame({"age": [23, 35, 47, 69], "city": ["Oslo", "Rome", "Oslo", "Lima"],
    ...                   "income": [1.5, 2.0, 3.5, 7.0]})
    >>> schema = {"age": {"type": "numeric", "bounds": [20, 70], "n_bins": 5},
    ...           "city": ["Lima", "Oslo", "Rome"],
    ...           "income": {"type": "numeric", "bounds": [0, 8], "n_bins": 4}}
    >>> table = TableDiscretizer(schema, output="code", random_state=0).fit(X)
    >>> Xt = table.transform(X)
    >>> Xt["age"].tolist(), Xt["income"].tolist()
    ([0, 1, 2, 4], [0, 1, 1, 3])
    >>> list(Xt["city"].cat.categories)
    ['Lima', 'Oslo', 'Rome']
    >>> len(table.privacy_ledger_)
    0
    >>> back = table.inverse_transform(Xt, method="midpoint")
    >>> back["age"].tolist(), back["city"].tolist(), back["income"].tolist()
    ([25, 35, 45, 65], ['Oslo', 'Rome', 'Oslo', 'Lima'], [1.0, 3.0, 3.0, 7.0])
    >>> table.inverse_transform(Xt, random_state=3).equals(table.inverse_transform(Xt, random_state=3))
    True
    >>> table.schema_["income"]
    {'type': 'numeric', 'bounds': [0.0, 8.0], 'n_bins': 4, 'strategy': 'uniform'}
    """

    def __init__(self, schema=None, *, n_bins="auto", strategy="auto", epsilon=None, delta=None,
                 numeric_epsilon_fraction=None, output="interval", random_state=None):
        self.schema = schema
        self.n_bins = n_bins
        self.strategy = strategy
        self.epsilon = epsilon
        self.delta = delta
        self.numeric_epsilon_fraction = numeric_epsilon_fraction
        self.output = output
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        # Missing values are accepted where a column has a category or bin for them (by default: adaptive numeric
        # columns of a dtype that can hold them, and columns whose categories are discovered).
        tags.input_tags.allow_nan = True
        tags.transformer_tags.preserves_dtype = []  # Categorical out
        return tags

    # -- JSON ----------------------------------------------------------------------------------------
    @classmethod
    def from_json(cls, path_or_str, **kwargs) -> TableDiscretizer:
        """A ``TableDiscretizer`` whose schema is read from a JSON file or string.

        Parameters
        ----------
        path_or_str : str or os.PathLike
            See :func:`schema_from_json`.
        **kwargs
            The other parameters of :class:`TableDiscretizer`.

        Returns
        -------
        TableDiscretizer
        """
        if "schema" in kwargs:
            raise TypeError("from_json reads the schema from JSON; do not pass schema= too.")
        return cls(schema=schema_from_json(path_or_str), **kwargs)

    def to_json(self, path=None, *, indent=2) -> str:
        """The schema as JSON: the fitted ``schema_`` if fitted, else the ``schema`` parameter.

        Parameters
        ----------
        path : str or os.PathLike, optional
            Also write it to this file.
        indent : int or None, default=2

        Returns
        -------
        str
        """
        schema = self.schema_ if hasattr(self, "schema_") else self.schema
        return schema_to_json(schema, path, indent=indent)

    # -- validation ----------------------------------------------------------------------------------
    # What each hyper-parameter may be (skdpsynth.params); the schema's entries are checked against the columns.
    _parameter_constraints = {
        "schema": [Dict("{column: spec}"), None],
        "n_bins": [Interval(Integral, 1, None), Options("auto")],
        "strategy": [Options("auto", *_STRATEGIES)],
        "output": [Options(*_OUTPUTS)],
        "epsilon": [None, PrivacyParameter()],
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
        "numeric_epsilon_fraction": [None, Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def _check_params(self):
        """The declared constraints, then delta needs epsilon."""
        validate_params(self)
        if self.delta is not None and self.epsilon is None:
            raise ValueError("delta was given without epsilon; give epsilon too (or neither).")

    def _frame_for(self, X, what) -> pd.DataFrame:
        check_is_fitted(self, "schema_")
        return fitted_frame(X, self.feature_names_in_, "TableDiscretizer", "X" if what == "transform" else "Xt")

    @staticmethod
    def _check_no_nan(frame, columns, what, specs=None):
        for c in columns:
            missing = "error" if specs is None else specs[c]["missing"]
            no_bin = missing == "error" or (missing == "auto" and specs[c].get("strategy") != "adaptive")
            if no_bin and frame[c].isna().any():
                raise ValueError(
                    f"{what}: numeric column {c!r} has missing values (NaN) and no bin for them. TableDiscretizer "
                    "does not drop rows: impute them first, or give them a bin with {'type': 'numeric', "
                    "'missing': 'category'} in its schema spec (missing values then come back as missing).")
            values = frame[c].to_numpy(dtype=np.float64, na_value=np.nan)
            if np.isinf(values).any():
                raise ValueError(
                    f"{what}: numeric column {c!r} has infinite values (inf or -inf). They are not measurements "
                    "and usually hide a data error (a division by zero, an overflow); TableDiscretizer does not "
                    "clip them into the end bins. Fix or drop them first.")

    def _dates_to_days(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The frame with its binned date columns as days since 1970 (a copy when there are any)."""
        dates = [c for c in getattr(self, "date_dtypes_", {}) if c in frame.columns]
        if not dates:
            return frame
        frame = frame.copy()
        for c in dates:
            if not pd.api.types.is_datetime64_any_dtype(frame[c].dtype):
                raise TypeError(f"Column {c!r} held dates in fit; got dtype {frame[c].dtype}.")
            frame[c] = _dates_as_days(frame[c])
        return frame

    def _numeric_missing_specs(self) -> dict:
        """``{column: {"missing": ...}}`` of the fitted numeric columns: "error" where there is no missing bin."""
        out = {}
        for s, cols in self._groups.items():
            disc = self.discretizers_[s]
            # A column takes missing values when it has a bin for them or puts them in its middle bin.
            out.update({c: {"missing": "category" if disc.missing_bins_[c] or c in disc.missing_fill_ else "error"}
                        for c in cols})
        return out

    @staticmethod
    def _check_missing_categories(frame, specs, columns, what):
        for c in columns:
            if specs[c]["missing"] == "error" and frame[c].isna().any():
                raise ValueError(
                    f"{what}: categorical column {c!r} has missing values, and missing values get no category "
                    "unless the schema asks for one. Declare them in its spec ({'type': 'categorical', "
                    "'missing': 'category'}): they then map to the '__missing__' category.")

    # -- fit -----------------------------------------------------------------------------------------
    def fit(self, X, y=None):
        """Fit the numeric and categorical sub-steps, spending at most (``epsilon``, ``delta``).

        Parameters
        ----------
        X : pandas.DataFrame
            The private table (a 2-D array is named ``x0, x1, ...``).
        y : ignored

        Returns
        -------
        self
        """
        self._check_params()
        schema = normalize_schema(self.schema)
        frame = as_frame(X)
        check_has_columns(frame, "TableDiscretizer")
        columns = list(frame.columns)
        absent = [c for c in schema if c not in set(columns)]
        if absent:
            raise ValueError(f"schema names columns that are not in X: {absent}. X has columns {columns}.")
        # Date columns not declared categorical are binned as numbers: days since 1970 (see _dates_as_days).
        self.date_dtypes_ = {c: frame[c].dtype for c in columns if pd.api.types.is_datetime64_any_dtype(frame[c].dtype)
                             and (schema.get(c) or {}).get("type", "numeric") == "numeric"}
        frame = self._dates_to_days(frame)

        specs = _route(schema, frame, self.n_bins, self.strategy, dp=self.epsilon is not None)
        numeric = [c for c in columns if specs[c]["type"] == "numeric"]
        categorical = [c for c in columns if specs[c]["type"] == "categorical"]
        self._check_no_nan(frame, numeric, "fit", specs)
        self._check_missing_categories(frame, specs, categorical, "fit")
        groups = {s: [c for c in numeric if specs[c]["strategy"] == s] for s in _STRATEGIES}
        groups = {s: cols for s, cols in groups.items() if cols}
        dp_numeric = [c for c in numeric if _numeric_needs_dp(specs[c])]
        dp_categorical = [c for c in categorical if specs[c]["categories"] is None]

        budget = self._budget_split(dp_numeric, dp_categorical, specs)
        if self.epsilon is not None and (dp_numeric or dp_categorical):
            warn_reproducible_noise(type(self).__name__, self.random_state)
        discretizers, encoder, ledger = self._fit_sub_steps(frame, specs, groups, categorical, dp_numeric,
                                                            dp_categorical, *budget)
        self._check_spent(ledger)

        self.schema_ = self._effective_schema(columns, specs, discretizers, encoder)
        self.numeric_columns_ = numeric
        self.categorical_columns_ = categorical
        self.discretizers_ = discretizers
        self.discretizer_ = next(iter(discretizers.values())) if len(discretizers) == 1 else None
        self.encoder_ = encoder
        self.privacy_ledger_ = ledger
        self.feature_names_in_ = np.asarray(columns, dtype=object)
        self.n_features_in_ = len(columns)
        self._groups = {s: list(cols) for s, cols in groups.items()}
        return self

    def _numeric_fraction(self, dp_numeric: list, dp_categorical: list, specs: dict) -> float:
        """The numeric sub-step's share when both sub-steps need budget (see ``numeric_epsilon_fraction``)."""
        if self.numeric_epsilon_fraction is not None:
            return float(self.numeric_epsilon_fraction)
        adaptive = sum(specs[c]["strategy"] == "adaptive" for c in dp_numeric)
        if adaptive == 0:
            return 0.5
        weight = len(dp_numeric) + adaptive
        return weight / (weight + len(dp_categorical))

    def _budget_split(self, dp_numeric: list, dp_categorical: list, specs: dict) -> tuple:
        """``(eps_numeric, eps_categorical, delta_categorical)``: each None where nothing is released with DP."""
        eps_num = eps_cat = delta_cat = None
        if self.epsilon is None:
            return eps_num, eps_cat, delta_cat
        epsilon = float(self.epsilon)
        if dp_categorical and self.delta is None:
            raise ValueError(
                "DP category discovery is (epsilon, delta)-DP and needs delta > 0: give delta in (0, 1), "
                f"or public categories in the schema for columns {dp_categorical}.")
        if dp_numeric and dp_categorical:
            eps_num = epsilon * self._numeric_fraction(dp_numeric, dp_categorical, specs)
            eps_cat = epsilon - eps_num
        elif dp_numeric:
            eps_num = epsilon
        elif dp_categorical:
            eps_cat = epsilon
        if dp_categorical:
            delta_cat = float(self.delta)
        return eps_num, eps_cat, delta_cat

    def _fit_sub_steps(self, frame, specs, groups, categorical, dp_numeric, dp_categorical, eps_num, eps_cat,
                       delta_cat) -> tuple[dict, DPCategoricalEncoder | None, PrivacyLedger]:
        """One DPKBinsDiscretizer per numeric strategy and one DPCategoricalEncoder, their ledgers joined; the
        sub-steps' privacy-leak warnings become one warning for the table."""
        # Each sub-step gets a random state of its own (None stays None: fresh OS entropy for each, and no
        # seed that a stored sub-step's get_params() would reveal).
        sub_states = iter(child_random_states(self.random_state, len(groups) + 1))
        ledger = PrivacyLedger()
        discretizers = {}
        encoder = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for s, cols in groups.items():
                n_dp = sum(_numeric_needs_dp(specs[c]) for c in cols)
                eps_g = None
                if eps_num is not None and n_dp:
                    eps_g = eps_num if n_dp == len(dp_numeric) else eps_num * n_dp / len(dp_numeric)
                bounds = {c: tuple(specs[c]["bounds"]) for c in cols
                          if specs[c]["bounds"] is not None and specs[c]["edges"] is None}
                edges = {c: specs[c]["edges"] for c in cols if specs[c]["edges"] is not None}
                decimals = {c: specs[c]["decimals"] for c in cols if specs[c]["decimals"] is not None}
                # A date column's values (days since 1970) sit far from 0 compared with their spread: calendar
                # years, not magnitudes, as its first histogram's buckets.
                years = {c: _year_starts() for c in cols if c in self.date_dtypes_ and c not in edges}
                disc = DPKBinsDiscretizer(
                    n_bins={c: specs[c]["n_bins"] for c in cols if specs[c]["edges"] is None}, strategy=s,
                    bounds=bounds or None, epsilon=eps_g, output=self.output, random_state=next(sub_states),
                    edges=edges or None, decimals=decimals or None,
                    missing={c: specs[c]["missing"] for c in cols}, bucket_edges=years or None)
                disc.set_output(transform="pandas").fit(frame[cols])
                ledger.extend(disc.privacy_ledger_)
                discretizers[s] = disc
            if categorical:
                # One encoder with both extra labels; columns whose spec says "error" have them removed
                # from (and checked in) the output by this class, so each column gets its own options.
                public = {c: specs[c]["categories"] for c in categorical if specs[c]["categories"] is not None}
                # "error" columns get the label too and lose it in transform; "auto" and "other" are the encoder's.
                missing = {c: specs[c]["missing"] if specs[c]["missing"] in ("auto", "other") else "category"
                           for c in categorical}
                encoder = DPCategoricalEncoder(
                    categories=public or None, epsilon=eps_cat, delta=delta_cat, handle_unknown="other",
                    other_category=_OTHER, missing=missing, missing_category=_MISSING_LABEL,
                    random_state=next(sub_states))
                encoder.set_output(transform="pandas").fit(frame[categorical])
                ledger.extend(encoder.privacy_ledger_)
        leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
        for w in caught:  # anything else the sub-steps said is passed on unchanged (the seed warning was said above)
            if not issubclass(w.category, (PrivacyLeakWarning, ReproducibleNoiseWarning)):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if leaks:
            # One combined warning for the table, naming the columns (known from public information).
            inferred_num = list(dp_numeric) if self.epsilon is None else []
            inferred_cat = list(dp_categorical) if self.epsilon is None else []
            parts = []
            if inferred_num:
                parts.append(f"the bounds or bin edges of numeric columns {list(map(str, inferred_num))}")
            if inferred_cat:
                parts.append(f"the categories of categorical columns {list(map(str, inferred_cat))}")
            if not parts:  # not expected: pass the sub-steps' own messages on
                parts = [str(w.message) for w in leaks]
            warn_privacy_leak(
                f"TableDiscretizer read {' and '.join(parts)} from the private data without differential "
                "privacy. Give them in the schema (public metadata) or set epsilon (and delta) to release "
                "them with DP.", stacklevel=3)
        return discretizers, encoder, ledger

    def _check_spent(self, ledger: PrivacyLedger) -> None:
        """Never more than the budget; nothing at all without one."""
        spent_eps = math.fsum(e.epsilon or 0.0 for e in ledger)
        spent_delta = math.fsum(e.delta for e in ledger)
        if self.epsilon is None:
            if any(e.accounting != "leak" for e in ledger):  # the sub-steps recorded their leaks, if any
                raise RuntimeError("TableDiscretizer spent privacy budget although epsilon is None.")
        elif (spent_eps > float(self.epsilon) * (1 + 1e-9)
              or spent_delta > (0.0 if self.delta is None else float(self.delta)) * (1 + 1e-9)):
            raise RuntimeError(f"TableDiscretizer spent (epsilon={spent_eps}, delta={spent_delta}), more than "
                               f"its budget ({self.epsilon}, {self.delta}).")

    @staticmethod
    def _effective_schema(columns, specs, discretizers, encoder) -> dict:
        """The schema the fit used: public input and DP output (or inferred values, with the fit's warning)."""
        effective = {}
        for c in columns:
            if c in specs and specs[c]["type"] == "numeric":
                disc = discretizers[specs[c]["strategy"]]
                lower, upper = disc.bounds_[c]
                if specs[c]["edges"] is not None:
                    effective[c] = {"type": "numeric", "edges": [float(e) for e in disc.bin_edges_[c]]}
                else:
                    effective[c] = {"type": "numeric", "bounds": [float(lower), float(upper)],
                                    "n_bins": int(disc.n_bins_[c]), "strategy": specs[c]["strategy"]}
                if specs[c]["decimals"] is not None:
                    effective[c]["decimals"] = specs[c]["decimals"]
                if disc.missing_bins_[c]:
                    effective[c]["missing"] = "category"
            else:
                hu, mi = specs[c]["handle_unknown"], specs[c]["missing"]
                if mi == "auto":  # what the release decided: a missing category, or missing values as "other"
                    mi = "other" if encoder.missing_[c] == "tentative" else encoder.missing_[c]
                real = _plain(list(encoder.categories_[c][:encoder._n_real(c)]))
                if not real and hu == "error" and mi == "error":
                    raise ValueError(f"Column {c!r} has no categories: none was released, and its spec "
                                     "('handle_unknown': 'error', 'missing': 'error') adds none.")
                effective[c] = {"type": "categorical", "categories": real, "handle_unknown": hu, "missing": mi}
        return effective

    def tentative_missing(self) -> dict:
        """``{column: "__missing__"}`` of the categorical columns whose missing category is tentative: the
        DP count of their missing values fell below its threshold (see ``schema``).

        Their missing values have the category, which :meth:`inverse_transform`
        reads as ``"__other__"`` (``schema_`` says ``"missing": "other"``)
        until :meth:`confirm_missing` confirms it.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from skdpsynth.preprocessing import TableDiscretizer
        >>> X = pd.DataFrame({"age": np.arange(1000) % 80 + 18, "plan": ["basic", "pro"] * 500})
        >>> table = TableDiscretizer({"age": {"type": "numeric", "bounds": [18, 98]}}, epsilon=1.0, delta=1e-6,
        ...                          random_state=0).fit(X)
        >>> table.tentative_missing(), table.schema_["plan"]["missing"]   # read back as "__other__" until confirmed
        ({'plan': '__missing__'}, 'other')
        """
        check_is_fitted(self, "schema_")
        return {} if self.encoder_ is None else self.encoder_.tentative_missing()

    def confirm_missing(self, columns) -> TableDiscretizer:
        """Make the tentative missing category of ``columns`` a missing category: it reads back as missing
        values, and ``schema_`` says ``"missing": "category"``.

        Post-processing, decided from DP releases (a
        :class:`~skdpsynth.pipeline.SynthesisPipeline` decides from its
        synthesizer's measurement of the column).

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
        >>> from skdpsynth.preprocessing import TableDiscretizer
        >>> X = pd.DataFrame({"c": ["a"] * 500 + ["b"] * 500})
        >>> table = TableDiscretizer(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
        >>> table.confirm_missing(["c"]).schema_["c"]["missing"]
        'category'
        """
        check_is_fitted(self, "schema_")
        columns = list(columns)
        if self.encoder_ is None:
            if columns:
                raise ValueError(f"Columns {columns} have no tentative missing category (no categorical column).")
            return self
        self.encoder_.confirm_missing(columns)
        for c in columns:
            self.schema_[c]["missing"] = "category"
        return self

    # -- transform -----------------------------------------------------------------------------------
    def transform(self, X):
        """Bin the numeric columns and encode the categorical ones.

        Parameters
        ----------
        X : pandas.DataFrame
            Exactly the columns seen in :meth:`fit` (any order; an unknown or
            missing column is a ``ValueError``).

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            The columns in fit order, each a ``Categorical`` with its full
            public category list; a NumPy array after
            ``set_output(transform="default")``.
        """
        frame = self._dates_to_days(self._frame_for(X, "transform"))
        self._check_no_nan(frame, self.numeric_columns_, "transform", self._numeric_missing_specs())
        parts = {}
        for s, cols in self._groups.items():
            out = self.discretizers_[s].transform(frame[cols])
            parts.update({c: out[c].set_axis(frame.index) for c in cols})
        if self.encoder_ is not None:
            out = self.encoder_.transform(frame[self.categorical_columns_])
            for c in self.categorical_columns_:
                col = out[c].array
                spec = self.schema_[c]
                drop = []
                for key, label, option in (("handle_unknown", _OTHER, "'handle_unknown': 'other'"),
                                           ("missing", _MISSING_LABEL, "'missing': 'category'")):
                    if spec[key] != "error":
                        continue
                    if (col == label).any():
                        what = "values outside its categories" if label == _OTHER else "missing values"
                        raise ValueError(f"Column {c!r} has {what}. Its categories are exact; set "
                                         f"{option} in its schema spec to map them to {label!r}.")
                    drop.append(label)
                if drop:  # set_categories keeps the order (remove_categories may sort)
                    kept = [v for v in col.categories if not any(v is d or v == d for d in drop)]
                    col = col.set_categories(pd.Index(kept, dtype=object))
                    mark_public(col.dtype)  # the public / DP-released categories, as the encoder's were
                parts[c] = col
        # Concatenating Series keeps each column's dtype (a dict of bare arrays would let pandas
        # re-infer, e.g. object strings -> "str").
        columns = [parts[c].rename(c) if isinstance(parts[c], pd.Series) else pd.Series(parts[c], index=frame.index, name=c)
                   for c in self.feature_names_in_]
        return self._wrap_output(pd.concat(columns, axis=1))

    def inverse_transform(self, Xt, method="uniform", *, random_state=None):
        """Map binned/encoded records back to the original column names, order and dtypes.

        Parameters
        ----------
        Xt : pandas.DataFrame or 2-D array
            Output of :meth:`transform`, or synthetic records over the same columns.
        method : {"uniform", "midpoint"}, default="uniform"
            For binned columns: a uniform draw within the bin or the bin's
            midpoint. Integer columns stay integer.
        random_state : None, int or numpy.random.Generator, default=None
            Source of the ``"uniform"`` draws. ``None``: the streams seeded at
            fit (fresh values at each call; refitting with the same integer
            ``random_state`` reproduces the sequence of calls). An int makes
            this call reproducible on its own (the same int gives the same
            output); a Generator is drawn from (and advanced).

        Returns
        -------
        pandas.DataFrame
        """
        if method not in ("uniform", "midpoint"):
            raise ValueError(f"method must be 'uniform' or 'midpoint', got {method!r}.")
        frame = self._frame_for(Xt, "inverse_transform")
        rng = None if random_state is None else check_random_state(random_state)
        parts = {}
        for s, cols in self._groups.items():
            out = self.discretizers_[s].inverse_transform(frame[cols], method=method, random_state=rng)
            parts.update({c: out[c].set_axis(frame.index) for c in cols})
        for c, dtype in getattr(self, "date_dtypes_", {}).items():
            parts[c] = _days_as_dates(parts[c], dtype)
        if self.encoder_ is not None:
            # The encoder reads the values (labels), so exact columns need no extra categories back.
            out = self.encoder_.inverse_transform(frame[self.categorical_columns_])
            parts.update({c: out[c].set_axis(frame.index) for c in self.categorical_columns_})
        # Concatenating Series keeps each column's dtype (a dict of bare arrays would let pandas
        # re-infer, e.g. object strings -> "str").
        columns = [parts[c].rename(c) if isinstance(parts[c], pd.Series) else pd.Series(parts[c], index=frame.index, name=c)
                   for c in self.feature_names_in_]
        return pd.concat(columns, axis=1)

    def get_feature_names_out(self, input_features=None):
        """Output column names: the input column names, in input order.

        Parameters
        ----------
        input_features : array-like of str or None
            If given, must match ``feature_names_in_``.

        Returns
        -------
        ndarray of object
        """
        check_is_fitted(self, "schema_")
        if input_features is not None and list(input_features) != list(self.feature_names_in_):
            raise ValueError("input_features does not match the columns seen in fit.")
        return self.feature_names_in_.copy()
