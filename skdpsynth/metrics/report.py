"""A self-contained HTML fidelity report comparing a real and a synthetic table.

The report states the privacy guarantee recorded in a
:class:`~skdpsynth.privacy.PrivacyLedger`, the marginal fidelity (average
k-way TVD), optional train-on-synthetic utility scores, per numeric or date
column the Kolmogorov–Smirnov distance, inter-quartile ranges and synthetic
range (:func:`numeric_fidelity`) and, when matplotlib is installed
(``pip install skdpsynth[report]``), per-column distribution plots, quantile
plots of the numeric columns and a heat map of the change in pairwise
associations (Cramér's V).

Like the other metrics it reads the real data in the clear: the report itself
is **not** differentially private and must not be published alongside the
synthetic data unless the real data may be. It shows the real data through
the fitted discretization (bins and categories released with DP or given as
public metadata), through aggregates (TVD, Cramér's V, the KS distance, the
share of missing values) and through quantiles that at least ten other
records bound on each side: never a value that only the few most extreme real
records hold (doc/evaluation.md, "The fidelity report").

matplotlib is optional and only imported inside the plotting functions.
"""
from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from ..privacy import PrivacyLedger

__all__ = ["write_report", "cramers_v", "numeric_fidelity"]

_INSTALL_HINT = "pip install skdpsynth[report]"
_DPI = 100
_REAL_COLOR, _SYNTH_COLOR = "#4C72B0", "#DD8452"


# --------------------------------------------------------------------------- #
# Cramér's V
# --------------------------------------------------------------------------- #
def _column_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes (``-1`` for missing) and the number of categories of one column."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(dtype=np.int64), len(column.cat.categories)
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    return codes.astype(np.int64), len(uniques)


def _pair_v(a: np.ndarray, ka: int, b: np.ndarray, kb: int) -> float:
    """Bias-uncorrected Cramér's V of two code vectors (rows with a missing code are dropped)."""
    ok = (a >= 0) & (b >= 0)
    if not ok.all():
        a, b = a[ok], b[ok]
    n = a.size
    if n == 0:
        return 0.0
    table = np.bincount(a * kb + b, minlength=ka * kb).reshape(ka, kb).astype(float)
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    table = table[rows > 0][:, cols > 0]  # unobserved categories do not count in min(r, c)
    rows, cols = rows[rows > 0], cols[cols > 0]
    k = min(table.shape)
    if k <= 1:
        return 0.0
    expected = np.outer(rows, cols) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return min(math.sqrt(chi2 / (n * (k - 1))), 1.0)


def cramers_v(codes: pd.DataFrame) -> pd.DataFrame:
    """Pairwise bias-uncorrected Cramér's V between the columns of a discrete table.

    For two columns with contingency table ``O`` (``r`` observed rows, ``c``
    observed columns, ``n`` records) and independence table
    ``E = outer(row sums, column sums) / n``,
    ``chi2 = sum((O - E)**2 / E)`` and ``V = sqrt(chi2 / (n * (min(r, c) - 1)))``;
    ``V = 0`` when ``min(r, c) == 1``. Categories never observed are left out
    of ``r`` and ``c``, and records missing either value are dropped for that
    pair. ``V`` lies in ``[0, 1]``: 0 for independence, 1 when one column
    determines the other (for a square table).

    Parameters
    ----------
    codes : pandas.DataFrame
        A discrete table: ``Categorical`` columns are used through their
        category codes, any other column is factorized.

    Returns
    -------
    pandas.DataFrame
        Symmetric ``n_columns x n_columns`` matrix indexed by the column
        names; the diagonal is 1.0 for columns with at least two observed
        categories and 0.0 otherwise.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.metrics.report import cramers_v
    >>> df = pd.DataFrame({"a": [0, 0, 1, 1], "b": ["x", "x", "y", "y"], "c": [0, 1, 0, 1]})
    >>> cramers_v(df)
         a    b    c
    a  1.0  1.0  0.0
    b  1.0  1.0  0.0
    c  0.0  0.0  1.0
    """
    if not isinstance(codes, pd.DataFrame):
        raise TypeError(f"codes must be a pandas DataFrame, got {type(codes).__name__}.")
    encoded = [_column_codes(codes.iloc[:, j]) for j in range(codes.shape[1])]
    m = len(encoded)
    out = np.zeros((m, m))
    for i, (a, ka) in enumerate(encoded):
        observed = np.bincount(a[a >= 0], minlength=ka)
        out[i, i] = 1.0 if np.count_nonzero(observed) >= 2 else 0.0
        for j in range(i + 1, m):
            out[i, j] = out[j, i] = _pair_v(a, ka, *encoded[j])
    return pd.DataFrame(out, index=codes.columns, columns=codes.columns)


# --------------------------------------------------------------------------- #
# Numeric and date columns
# --------------------------------------------------------------------------- #
_NUMERIC_COLUMNS = ["ks", "iqr_real", "iqr_synthetic", "iqr_ratio", "min_synthetic", "max_synthetic",
                    "nan_real", "nan_synthetic"]
# The quantile plots' probability levels: the percentiles 1 % to 99 %.
_LEVELS = np.arange(1, 100) / 100.0
# A real quantile is drawn (and a real quartile shown) only if at least this many other real records lie at or
# below it and at or above it, so that the report never shows a value only the few most extreme records hold: a
# one-off extreme number stays out of it, as a one-off category does (doc/evaluation.md, "The fidelity report").
_TAIL_RECORDS = 10


def _numeric_kind(dtype: Any) -> str | None:
    """``"datetime"``, ``"number"`` (integer or float, not bool) or None for a column dtype."""
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
        return None
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_complex_dtype(dtype):
        return None
    return "number"


def _numeric_columns(real: pd.DataFrame, synthetic: pd.DataFrame) -> list[tuple[Any, str]]:
    """``(name, kind)`` of the columns of ``real`` that are numbers in both tables, or dates in both."""
    out = []
    for name in real.columns:
        if name not in synthetic.columns:
            continue
        kind = _numeric_kind(real[name].dtype)
        if kind is not None and kind == _numeric_kind(synthetic[name].dtype):
            out.append((name, kind))
    return out


def _exact_integers(*columns: pd.Series) -> bool:
    """Whether every column holds integers that int64 represents exactly (uint64 may not)."""
    return all(pd.api.types.is_integer_dtype(c.dtype)
               and not (pd.api.types.is_unsigned_integer_dtype(c.dtype) and c.dtype.itemsize >= 8)
               for c in columns)


def _sorted_values(column: pd.Series, kind: str, integers: bool) -> np.ndarray:
    """The column's non-missing values, sorted: int64 nanoseconds (UTC for time-zone aware dates) for dates,
    int64 for integer columns compared with integer columns, float64 otherwise."""
    values = column.dropna()
    if kind == "datetime":
        if getattr(values.dt, "tz", None) is not None:
            values = values.dt.tz_convert("UTC").dt.tz_localize(None)
        out = values.to_numpy(dtype="datetime64[ns]").view(np.int64)
    else:
        out = values.to_numpy(dtype=np.int64 if integers else np.float64)
    return np.sort(out, kind="stable")


def _ks_distance(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sample Kolmogorov–Smirnov statistic ``max |F_x - F_y|`` of two sorted samples, correctly rounded.

    Both empirical CDFs are right-continuous steps that jump at sample points only, so the supremum is reached
    at one of them: evaluating both at every point of the pooled sample is exact (as ``scipy.stats.ks_2samp``
    does). The gap ``|a/n - b/m|`` is the integer ``|a m - b n|`` over ``n m``, divided once: the nearest float
    to the exact rational (the value of scipy's exact mode), where subtracting two rounded ratios may be off by
    an ulp.
    """
    n, m = x.size, y.size
    if n == 0 or m == 0:
        return math.nan
    pooled = np.concatenate([x, y])
    below_x = np.searchsorted(x, pooled, side="right")
    below_y = np.searchsorted(y, pooled, side="right")
    if n * m >= 2**62:  # a m - b n could overflow int64: a ratio within an ulp or two instead
        return float(np.max(np.abs(below_x / n - below_y / m)))
    gap = int(np.max(np.abs(below_x * m - below_y * n)))
    return gap / (n * m)  # Python's int / int is correctly rounded


def _iqr(x: np.ndarray) -> float:
    """Inter-quartile range with linear interpolation between order statistics (numpy's and pandas' default)."""
    if x.size == 0:
        return math.nan
    q1, q3 = np.quantile(x.astype(np.float64), [0.25, 0.75])
    return float(q3 - q1)


def _scalar(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (exact for int64 and float64); anything else as given."""
    return value.item() if isinstance(value, np.generic) else value


def _missing_share(column: pd.Series) -> float:
    return float(column.isna().mean()) if len(column) else math.nan


def numeric_fidelity(real: pd.DataFrame, synthetic: pd.DataFrame) -> pd.DataFrame:
    """Per numeric or date column: Kolmogorov–Smirnov distance, inter-quartile ranges, synthetic range, missing.

    The columns compared are those of ``real`` that are numbers (integer or
    float, nullable ones included, booleans excluded) in both tables, or
    dates (``datetime64``, time-zone aware or not) in both. Missing values
    are dropped before the comparison and counted apart. Dates are compared
    as int64 nanoseconds since the epoch (in UTC when time-zone aware).

    The Kolmogorov–Smirnov distance is the two-sample statistic
    ``sup_x |F_real(x) - F_synthetic(x)|`` of the empirical CDFs (the
    statistic of ``scipy.stats.ks_2samp``): 0 for identical distributions, 1
    for disjoint ranges. The inter-quartile range is ``Q(0.75) - Q(0.25)``
    with linear interpolation between order statistics (numpy's and pandas'
    default).

    Like the other metrics this reads the real data in the clear: it is an
    evaluation tool, not differentially private.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        The two tables in their original schema (not discretized).

    Returns
    -------
    pandas.DataFrame
        One row per compared column (in the order of ``real``, index named
        ``column``; no rows when none is numeric in both), with the columns

        - ``ks``: the Kolmogorov–Smirnov distance (NaN if a side has no value);
        - ``iqr_real``, ``iqr_synthetic``: the inter-quartile ranges (floats;
          nanoseconds for dates);
        - ``iqr_ratio``: ``iqr_synthetic / iqr_real`` (``inf`` or NaN when the
          real one is 0);
        - ``min_synthetic``, ``max_synthetic``: the smallest and largest
          synthetic values, exactly, in the column's own type (``Timestamp``
          for dates);
        - ``nan_real``, ``nan_synthetic``: the share of missing values of each
          table.

    Raises
    ------
    TypeError
        If ``real`` or ``synthetic`` is not a pandas DataFrame.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from skdpsynth.metrics import numeric_fidelity
    >>> real = pd.DataFrame({"age": [20, 30, 40, 50, 60], "name": list("abcde")})
    >>> synthetic = pd.DataFrame({"age": [20.0, 30.0, 45.0, 70.0, np.nan], "name": list("abcde")})
    >>> stats = numeric_fidelity(real, synthetic)
    >>> stats[["ks", "iqr_real", "iqr_synthetic", "iqr_ratio", "nan_synthetic"]]  # doctest: +NORMALIZE_WHITESPACE
              ks  iqr_real  iqr_synthetic  iqr_ratio  nan_synthetic
    column
    age     0.25      20.0          23.75     1.1875            0.2

    The largest gap of the two CDFs is at 60: 5/5 real values against 3/4
    synthetic ones (the missing one is dropped), hence 0.25; the synthetic
    quartiles are 27.5 and 51.25.

    >>> stats.loc["age", "max_synthetic"]
    70.0
    """
    for name, frame in (("real", real), ("synthetic", synthetic)):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}.")
    names: list[Any] = []
    values: dict[str, list] = {col: [] for col in _NUMERIC_COLUMNS}
    for name, kind in _numeric_columns(real, synthetic):
        r, s = real[name], synthetic[name]
        integers = _exact_integers(r, s)
        x, y = _sorted_values(r, kind, integers), _sorted_values(s, kind, integers)
        iqr_real, iqr_synthetic = _iqr(x), _iqr(y)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = float(np.float64(iqr_synthetic) / np.float64(iqr_real))
        present = s.dropna()
        low, high = (present.min(), present.max()) if len(present) else (math.nan, math.nan)
        row = [_ks_distance(x, y), iqr_real, iqr_synthetic, ratio, _scalar(low), _scalar(high),
               _missing_share(r), _missing_share(s)]
        for col, value in zip(_NUMERIC_COLUMNS, row):
            values[col].append(value)
        names.append(name)
    exact = {"min_synthetic", "max_synthetic"}  # each column's own type, not a common float
    return pd.DataFrame({col: np.array(v, dtype=object if col in exact else np.float64)
                         for col, v in values.items()},
                        index=pd.Index(names, name="column", dtype=object))


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #
def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: Any, digits: int = 4) -> str:
    """A number for a table cell: ``—`` for missing, ``digits`` significant digits for floats."""
    if value is None or value is pd.NA:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "—"
        return f"{float(value):.{digits}g}"
    return _esc(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, numeric_from: int = 1,
           caption: str | None = None) -> str:
    """An HTML table; header and string cells are escaped, numbers formatted with :func:`_fmt`."""
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for j, value in enumerate(row):
            css = ' class="num"' if j >= numeric_from else ""
            text = _fmt(value) if not isinstance(value, str) else _esc(value)
            cells.append(f"<td{css}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{_esc(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _edge_text(value: float, decimals: int) -> str:
    """``value`` rounded to ``decimals`` (in its display unit) and formatted by ``:g``; >= 1e5 as k / M / G."""
    value = float(value)
    if not math.isfinite(value):
        return f"{value:g}"
    for unit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= max(unit, 1e5):
            scaled = value / unit
            places = max(0, decimals + int(round(math.log10(unit))))
            return f"{round(scaled, places):g}{suffix}"
    return f"{round(value, max(decimals, 0)):g}"


def _category_labels(categories: pd.Index, width: int = 20) -> list[str]:
    """Compact tick labels of one column: ``[17, 21.6)`` for interval bins, long strings shortened.

    Interval edges are rounded to a tenth of the narrowest finite bin (so
    neighbouring edges stay distinct) and formatted by ``:g``, with k / M / G
    suffixes from 1e5 on; plain ``:g`` is the fallback if rounding merges edges.
    """
    values = list(categories)
    if not values or not all(isinstance(c, pd.Interval) for c in values):
        labels = [str(c) for c in values]
        return [t if len(t) <= width else t[: width - 1] + "…" for t in labels]
    widths = [float(c.right - c.left) for c in values]
    finite = [w for w in widths if math.isfinite(w) and w > 0]
    decimals = math.ceil(-math.log10(0.1 * min(finite))) if finite else 6  # may be < 0 for wide bins
    edges = sorted({float(e) for c in values for e in (c.left, c.right)})

    def fmt(v: float) -> str:
        return _edge_text(v, decimals)

    if len({fmt(e) for e in edges}) < len(edges):
        def fmt(v: float) -> str:  # noqa: F811  (fallback: exact :g)
            return f"{float(v):g}"
    labels = []
    for c in values:
        left = "[" if c.closed in ("left", "both") else "("
        right = "]" if c.closed in ("right", "both") else ")"
        labels.append(f"{left}{fmt(c.left)}, {fmt(c.right)}{right}")
    return labels


def _short(name: Any, width: int) -> str:
    text = str(name)
    return text if len(text) <= width else text[: width - 1] + "…"


def _plain(text: str) -> str:
    """Text for matplotlib: ``$`` escaped so that user strings never trigger mathtext."""
    return text.replace("$", r"\$")


def _aligned_codes(real_codes: pd.DataFrame, synthetic_codes: pd.DataFrame) -> pd.DataFrame:
    """``synthetic_codes`` in the column order of ``real_codes``, after checking both share categories."""
    for name, frame in (("real_codes", real_codes), ("synthetic_codes", synthetic_codes)):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}.")
    if set(real_codes.columns) != set(synthetic_codes.columns) or real_codes.columns.duplicated().any():
        raise ValueError("real_codes and synthetic_codes must have the same (unique) columns.")
    synthetic_codes = synthetic_codes[list(real_codes.columns)]
    for col in real_codes.columns:
        r, s = real_codes[col].dtype, synthetic_codes[col].dtype
        if not (isinstance(r, pd.CategoricalDtype) and isinstance(s, pd.CategoricalDtype)):
            raise ValueError(f"Column {col!r} of real_codes and synthetic_codes must be pandas Categorical.")
        if not r.categories.equals(s.categories):
            raise ValueError(f"Column {col!r} has different categories in real_codes and synthetic_codes.")
    return synthetic_codes


def _proportions(column: pd.Series) -> np.ndarray:
    codes, k = _column_codes(column)
    counts = np.bincount(codes[codes >= 0], minlength=k).astype(float)
    total = counts.sum()
    return counts / total if total else counts


def _import_figure():
    """``matplotlib.figure.Figure`` (no pyplot, no global state), or ImportError with the install hint."""
    try:
        import matplotlib  # noqa: F401  (import the package first: a blocked package must fail here)
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(f"Plots need matplotlib: {_INSTALL_HINT}") from exc
    return Figure


def _save(fig, path: Path) -> bytes:
    """Save ``fig`` as a PNG to ``path`` and return the bytes (for the data URI); release the figure."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI)
    fig.clear()  # a bare Figure is not registered with pyplot: clearing it frees its artists
    data = buffer.getvalue()
    path.write_bytes(data)
    return data


# --------------------------------------------------------------------------- #
# Plots
# --------------------------------------------------------------------------- #
def _pack(widths: Sequence[int], capacity: int) -> list[tuple[int, int]]:
    """First-fit placement of panels ``widths`` (in grid cells) into rows of ``capacity`` cells.

    Returns ``(row, first cell)`` per panel, in input order; a panel that does
    not fit the holes left so far opens a new row, later narrow panels may
    fill earlier holes.
    """
    free: list[int] = []
    out = []
    for w in widths:
        for row, left in enumerate(free):
            if left >= w:
                break
        else:
            free.append(capacity)
            row = len(free) - 1
        out.append((row, capacity - free[row]))
        free[row] -= w
    return out


def _plot_columns(Figure, real_codes: pd.DataFrame, synthetic_codes: pd.DataFrame,
                  max_categories: int, path: Path) -> bytes:
    """Grid of side-by-side bar charts, real vs synthetic category proportions, one panel per column.

    Panels are one grid cell wide (3 cells a row), two cells for more than
    16 shown categories and a full row for more than 28.
    """
    panels = []
    for name in real_codes.columns:
        p = _proportions(real_codes[name])
        q = _proportions(synthetic_codes[name])
        keep = np.arange(p.size)
        if p.size > max_categories:  # the most frequent in the real data, in category order
            keep = np.sort(np.argsort(-p, kind="stable")[:max_categories])
        cells = 1 if keep.size <= 16 else 2 if keep.size <= 28 else 3
        panels.append((name, p, q, keep, cells))
    capacity = min(3, sum(cells for *_, cells in panels))
    places = _pack([min(cells, capacity) for *_, cells in panels], capacity)
    nrows = max(row for row, _ in places) + 1
    fig = Figure(figsize=(4.7 * capacity, 3.3 * nrows + 0.4), layout="constrained")
    grid = fig.add_gridspec(nrows, capacity)
    axes = []
    for (name, p, q, keep, cells), (row, col) in zip(panels, places):
        cells = min(cells, capacity)
        ax = fig.add_subplot(grid[row, col:col + cells])
        axes.append(ax)
        labels = _category_labels(real_codes[name].cat.categories)
        title = f"{_plain(_short(name, 36))}  ·  TVD {0.5 * float(np.abs(p - q).sum()):.3f}"
        if keep.size < p.size:
            title += f"  (top {keep.size} of {p.size})"
        x = np.arange(keep.size)
        width = 0.4
        ax.bar(x - width / 2, p[keep], width, color=_REAL_COLOR, label="real")
        ax.bar(x + width / 2, q[keep], width, color=_SYNTH_COLOR, label="synthetic")
        ticks = [_plain(labels[i]) for i in keep]
        density = keep.size / cells
        size = 8 if density <= 20 else 7 if density <= 30 else 6
        ax.set_xticks(x)
        if sum(len(t) + 2 for t in ticks) <= 55 * cells:
            ax.set_xticklabels(ticks, fontsize=size)
        else:
            ax.set_xticklabels(ticks, fontsize=size, rotation=90)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlim(-0.6, keep.size - 0.4)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        if col == 0:
            ax.set_ylabel("proportion", fontsize=9)
    handles, legend_labels = axes[0].get_legend_handles_labels()
    try:
        fig.legend(handles, legend_labels, loc="outside upper center", ncols=2, fontsize=10, frameon=False)
    except (ValueError, TypeError):  # matplotlib < 3.7: no "outside" locations
        axes[0].legend(fontsize=8)
    return _save(fig, path)


def _plot_associations(Figure, v_real: pd.DataFrame, v_synth: pd.DataFrame, path: Path) -> bytes:
    """Three heat maps: Cramér's V of the real table, of the synthetic table, and their absolute difference."""
    names = [_plain(_short(c, 18)) for c in v_real.columns]
    m = len(names)
    diff = np.abs(v_real.to_numpy() - v_synth.to_numpy())
    vmax = max(0.1, float(diff.max()) if diff.size else 0.0)
    size = 8 if m <= 16 else 7 if m <= 24 else 6 if m <= 32 else 5
    fig = Figure(figsize=(16, 5.4 if m <= 24 else 6.2), layout="constrained")
    axes = fig.subplots(1, 3)
    panels = [
        (v_real.to_numpy(), "Cramér's V: real", "viridis", 1.0),
        (v_synth.to_numpy(), "Cramér's V: synthetic", "viridis", 1.0),
        (diff, "|real − synthetic|", "Reds", vmax),
    ]
    images = []
    for k, (ax, (values, title, cmap, top)) in enumerate(zip(axes, panels)):
        images.append(ax.imshow(values, cmap=cmap, vmin=0.0, vmax=top, interpolation="nearest"))
        ax.set_xticks(np.arange(m))
        ax.set_yticks(np.arange(m))
        ax.set_xticklabels(names, rotation=0 if sum(len(t) + 3 for t in names) <= 45 else 90, fontsize=size)
        # the synthetic panel sits next to the real one, in the same order: no repeated row labels
        ax.set_yticklabels(names if k != 1 else [], fontsize=size)
        ax.set_title(title, fontsize=11)
    if m <= 16:
        annot = 6.5 if m > 10 else 8 if m > 5 else 10
        for i in range(m):
            for j in range(m):
                value = diff[i, j]
                color = "white" if value > 0.6 * vmax else "black"
                axes[2].text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=annot, color=color)
    fig.colorbar(images[0], ax=list(axes[:2]), shrink=0.75, label="Cramér's V")
    fig.colorbar(images[2], ax=axes[2], shrink=0.75, label="absolute difference")
    return _save(fig, path)


def _shown_levels(n: int, levels: np.ndarray) -> np.ndarray:
    """Which ``levels`` of a sample of ``n`` values have a quantile that may be shown.

    numpy's linear quantile at level ``p`` lies between the order statistics
    ``floor(h)`` and ``ceil(h)`` (0-based, ``h = p (n - 1)``); it is shown if
    both have at least ``_TAIL_RECORDS`` other records before and after them.
    """
    h = levels * (n - 1)
    return (np.floor(h) >= _TAIL_RECORDS) & (np.ceil(h) <= n - 1 - _TAIL_RECORDS)


_Panel = tuple[Any, str, np.ndarray, np.ndarray, np.ndarray]


def _quantile_panels(real: pd.DataFrame, synthetic: pd.DataFrame) -> list[_Panel]:
    """Per numeric or date column: ``(name, kind, levels, real quantiles, synthetic quantiles)``, at the levels
    of ``_LEVELS`` that :func:`_shown_levels` allows (int64 nanoseconds rounded to datetime64 for dates)."""
    panels = []
    for name, kind in _numeric_columns(real, synthetic):
        integers = _exact_integers(real[name], synthetic[name])
        x = _sorted_values(real[name], kind, integers)
        y = _sorted_values(synthetic[name], kind, integers)
        levels = _LEVELS[_shown_levels(x.size, _LEVELS)] if y.size else _LEVELS[:0]
        qx = np.quantile(x.astype(np.float64), levels) if levels.size else np.empty(0)
        qy = np.quantile(y.astype(np.float64), levels) if levels.size else np.empty(0)
        if kind == "datetime":
            qx, qy = (np.round(q).astype(np.int64).view("datetime64[ns]") for q in (qx, qy))
        panels.append((name, kind, levels, qx, qy))
    return panels


def _plot_quantiles(Figure, panels: Sequence[_Panel], ks: pd.Series,
                    path: Path) -> bytes:
    """Two plots per column, two columns a row: the real and synthetic distribution functions through their
    quantiles (level against quantile), and the quantile-quantile plot (synthetic quantile against real one,
    with the line y = x on which they agree)."""
    pairs = min(2, len(panels))
    nrows = -(-len(panels) // pairs)
    fig = Figure(figsize=(7.2 * pairs, 3.4 * nrows + 0.4), layout="constrained")
    axes = fig.subplots(nrows, 2 * pairs, squeeze=False).reshape(-1, 2)
    for (cdf, qq), (name, kind, levels, qx, qy) in zip(axes, panels):
        cdf.set_title(f"{_plain(_short(name, 40))}  ·  KS {ks[name]:.3f}", fontsize=10, loc="left")
        if qx.size == 0:
            for ax in (cdf, qq):
                ax.text(0.5, 0.5, "too few records\nto draw quantiles", ha="center", va="center",
                        transform=ax.transAxes, fontsize=9, color="#555")
                ax.set_xticks([])
                ax.set_yticks([])
            continue
        cdf.plot(qx, levels, color=_REAL_COLOR, label="real")
        cdf.plot(qy, levels, color=_SYNTH_COLOR, label="synthetic")
        cdf.set_xlabel("value", fontsize=9)
        cdf.set_ylabel("share of records at or below", fontsize=9)
        low, high = min(qx[0], qy[0]), max(qx[-1], qy[-1])
        qq.plot([low, high], [low, high], color="#888", linewidth=1, linestyle="--", label="y = x")
        qq.plot(qx, qy, "o", markersize=3, color=_SYNTH_COLOR)
        qq.set_xlabel("real quantile", fontsize=9)
        qq.set_ylabel("synthetic quantile", fontsize=9)
        for ax in (cdf, qq):
            ax.tick_params(labelsize=8)
            if kind == "datetime":
                ax.tick_params(axis="x", labelrotation=30)
            ax.grid(alpha=0.3)
            ax.set_axisbelow(True)
    for ax in axes[len(panels):].ravel():
        ax.set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        try:
            fig.legend(handles, labels, loc="outside upper center", ncols=2, fontsize=10, frameon=False)
        except (ValueError, TypeError):  # matplotlib < 3.7: no "outside" locations
            axes[0, 0].legend(fontsize=8)
    return _save(fig, path)


# --------------------------------------------------------------------------- #
# HTML sections
# --------------------------------------------------------------------------- #
_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:1440px;margin:1.5em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding-bottom:.3em}
.meta{color:#555}.statement{font-size:1.15em}.note{color:#8a5a00}
.caution{color:#a00000;border-left:4px solid #a00000;padding-left:.6em}
img{max-width:100%;height:auto;border:1px solid #eee}
details{margin:.6em 0}summary{cursor:pointer;font-weight:600}
""".strip()


def _eps_text(eps: float) -> str:
    """ε for the statement: four decimals (as the command line always printed it), significant digits if tiny."""
    return f"{eps:.4f}" if eps == 0 or eps >= 0.01 else f"{eps:.4g}"


def _privacy_section(ledger: PrivacyLedger, delta: float | None, notes: Sequence[str] = ()) -> str:
    frame = ledger.to_frame()
    kinds = set(frame["accounting"])
    if not ledger.is_private:
        items = "".join(f"<li>{_esc(e.description)}</li>" for e in ledger.leaks)
        statement = ("<b>This release is NOT differentially private.</b> Private data was read without a DP "
                     f"mechanism:</p><ul class=\"leaks\">{items}</ul><p>The budgets below hold only for the "
                     "other releases.")
    elif len(ledger) == 0:
        statement = "The ledger records no privacy-consuming step."
    elif delta is not None:
        eps = ledger.epsilon(delta)
        statement = f"The whole release satisfies <b>({_eps_text(eps)}, {delta:g})-DP</b>."
    elif kinds <= {"pure"}:
        statement = f"The whole release satisfies <b>{_eps_text(ledger.total_epsilon())}-DP</b> (pure)."
    elif "approx" not in kinds:
        statement = (f"The whole release satisfies <b>{ledger.total_zcdp():.4g}-zCDP</b> "
                     "(give <code>delta</code> for an (ε, δ)-DP statement).")
    else:
        statement = ("The ledger holds (ε, δ) entries: give <code>delta</code> "
                     "for the overall (ε, δ)-DP statement.")
    parts = [
        "<section id=\"privacy\"><h2>Privacy</h2>",
        f"<p class=\"statement\">{statement}</p>",
        *(f"<p class=\"caution\">{_esc(note)}</p>" for note in notes),
        f"<p>zCDP total: ρ = {ledger.total_zcdp():.6g} (zCDP and pure-ε entries composed in zCDP; "
        f"(ε, δ) entries excluded). {len(ledger)} recorded release{'s' if len(ledger) != 1 else ''}.</p>",
    ]
    if len(ledger):
        grouped = frame.groupby(["party", "mechanism"], dropna=False, sort=False)
        summary = pd.DataFrame({
            "releases": grouped.size(),
            "rho": grouped["rho"].sum(min_count=1),
            "epsilon": grouped["epsilon"].sum(min_count=1),
        })
        with_delta = bool((frame["delta"] > 0).any())
        if with_delta:
            summary["delta"] = grouped["delta"].sum(min_count=1)
        rows = []
        for (party, mechanism), rec in summary.iterrows():
            row = ["—" if pd.isna(party) else str(party), str(mechanism),
                   int(rec["releases"]), rec["rho"], rec["epsilon"]]
            if with_delta:
                row.append(rec["delta"])
            rows.append(row)
        header = ["party", "mechanism", "releases", "Σ ρ", "Σ ε"] + (["Σ δ"] if with_delta else [])
        parts.append(_table(header, rows, numeric_from=2, caption="Privacy ledger: spend by party and mechanism"))
        full_rows = [[None if not isinstance(v, str) and pd.isna(v) else v for v in rec]
                     for rec in frame.itertuples(index=False)]
        parts.append(f"<details><summary>Full ledger ({len(ledger)} entries)</summary>"
                     + _table(list(frame.columns), full_rows, numeric_from=3) + "</details>")
    parts.append("</section>")
    return "\n".join(parts)


def _tvd_section(tvd: Mapping[Any, float]) -> str:
    rows = [(f"{k}-way" if isinstance(k, (int, np.integer)) else str(k), float(v)) for k, v in tvd.items()]
    return (
        "<section id=\"fidelity\"><h2>Fidelity</h2>"
        "<p>Average total variation distance between the real and synthetic k-way marginals of the "
        "discretized tables (0 = identical, 1 = disjoint; lower is better).</p>"
        + _table(["marginals", "average TVD"], rows) + "</section>"
    )


_TSTR_ROWS = [
    ("synthetic", "train on synthetic, test on real"),
    ("real", "train on real, test on real (baseline)"),
    ("majority", "majority class (baseline)"),
]


def _tstr_section(tstr: Mapping[str, Any]) -> str:
    metric = tstr.get("metric", "score")
    rows = [(label, tstr[key]) for key, label in _TSTR_ROWS if key in tstr]
    known = {"target", "metric", "n_train", "n_test"} | {key for key, _ in _TSTR_ROWS}
    rows += [(str(key), value) for key, value in tstr.items() if key not in known]
    target = tstr.get("target")
    intro = "A model trained on the synthetic data and evaluated on real data"
    if target is not None:
        intro += f", predicting <b>{_esc(target)}</b>"
    if tstr.get("n_test") is not None:
        intro += f" ({_fmt(tstr['n_test'])} held-out real records)"
    return ("<section id=\"utility\"><h2>Utility</h2><p>" + intro + ".</p>"
            + _table(["model", str(metric)], rows, caption="Train on synthetic, test on real") + "</section>")


def _img(data: bytes, alt: str, file: Path) -> str:
    uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return (f"<figure><img alt=\"{_esc(alt)}\" src=\"{uri}\">"
            f"<figcaption class=\"meta\">Also saved as {_esc(file.parent.name + '/' + file.name)}.</figcaption>"
            "</figure>")


# --------------------------------------------------------------------------- #
# The report
# --------------------------------------------------------------------------- #
def write_report(
    path: str | Path,
    *,
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    real_codes: pd.DataFrame,
    synthetic_codes: pd.DataFrame,
    ledger: PrivacyLedger,
    delta: float | None = None,
    title: str = "skdpsynth report",
    tvd: Mapping[Any, float] | None = None,
    tstr: Mapping[str, Any] | None = None,
    seconds: float | None = None,
    plots: bool | str = "auto",
    max_categories: int = 40,
    notes: Sequence[str] = (),
) -> dict:
    """Write a self-contained HTML fidelity report for a real and a synthetic table.

    Sections: a header (row counts, columns, wall time), **Privacy** (the
    guarantee stated by ``ledger``, a summary by party and mechanism and the
    full ledger), **Fidelity** (average k-way TVD), **Utility** (train on
    synthetic, test on real; only with ``tstr``), **Distributions**
    (per-column bar charts), **Numeric columns** (for the numeric and date
    columns of ``real`` and ``synthetic``: distribution functions and
    quantile-quantile plots at the levels 1%, ..., 99%, and the table of
    :func:`numeric_fidelity`) and **Associations** (Cramér's V heat maps and
    the five largest changes). Plots are PNG files in the folder
    ``<stem>_files/`` next to the HTML and are also embedded as data URIs, so
    the HTML file alone is complete.

    The report reads the real data in the clear: it is an evaluation tool and
    is not differentially private. It shows no value that only the most
    extreme real records hold: a real quantile is drawn, and a real
    inter-quartile range shown, only when at least 10 other real records lie
    at or below it and 10 at or above it (the real minimum and maximum never
    appear).

    Parameters
    ----------
    path : str or Path
        The HTML file to write (parent folders are created).
    real, synthetic : pandas.DataFrame
        The tables in their original schema: the header (row counts, column
        names and dtypes) and the Numeric columns section (the columns that
        are numbers in both, or dates in both) are read from these.
    real_codes, synthetic_codes : pandas.DataFrame
        The same tables discretized (e.g. by a fitted
        :class:`~skdpsynth.preprocessing.TableDiscretizer`): the same columns,
        each a pandas ``Categorical`` with identical categories in both
        (``pd.Interval`` bins for numeric columns). All fidelity numbers and
        plots are computed on these.
    ledger : PrivacyLedger
        The privacy ledger of the fit (e.g. ``pipeline.privacy_ledger_``).
    delta : float, optional
        δ of the stated (ε, δ)-DP guarantee, ``ledger.epsilon(delta)``. Without
        it a ledger of pure entries is stated as ``ledger.total_epsilon()``-DP
        and one with zCDP entries as ρ-zCDP.
    title : str, default "skdpsynth report"
        Title of the page (escaped).
    tvd : dict {k: float}, optional
        Average k-way TVDs; computed with :func:`~skdpsynth.metrics.marginal_tvd`
        for k = 1, 2, 3 (at most the number of columns) when omitted.
    tstr : dict, optional
        Utility scores, e.g. ``{"target": "income", "metric": "accuracy",
        "synthetic": 0.81, "real": 0.85, "majority": 0.76}``; the keys present
        are shown.
    seconds : float, optional
        Wall time of fit + sample, shown in the header.
    plots : bool or "auto", default "auto"
        Draw the plots; ``"auto"`` draws them if matplotlib is importable and
        otherwise says so in one sentence.
    max_categories : int, default 40
        Columns with more categories show only the ``max_categories`` most
        frequent in the real data (in category order).
    notes : sequence of str, optional
        Cautions shown in the Privacy section (the command line notes a fixed
        ``--seed`` here: the noise is reproducible from it).  A ledger that
        records a leak is stated as NOT differentially private, in the header
        and in the Privacy section, whatever the notes.

    Returns
    -------
    dict
        ``{"html": Path, "images": [Path, ...], "tvd": dict,
        "numeric": DataFrame, "cramers_v_real": DataFrame,
        "cramers_v_synthetic": DataFrame}``; ``"numeric"`` is
        :func:`numeric_fidelity` of ``real`` and ``synthetic``.

    Raises
    ------
    ImportError
        If ``plots=True`` and matplotlib is not installed.
    ValueError
        If the code tables do not have the same columns and categories.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import pandas as pd
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> from skdpsynth.metrics.report import write_report
    >>> real = pd.DataFrame({"sex": ["F", "M", "M", "F"], "income": ["lo", "hi", "lo", "lo"]})
    >>> synthetic = pd.DataFrame({"sex": ["F", "M", "F", "F"], "income": ["lo", "hi", "hi", "lo"]})
    >>> dtypes = {"sex": pd.CategoricalDtype(["F", "M"]), "income": pd.CategoricalDtype(["hi", "lo"])}
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.add("1-way marginals", "gaussian", rho=0.5)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_report(Path(tmp) / "report.html", real=real, synthetic=synthetic,
    ...                        real_codes=real.astype(dtypes), synthetic_codes=synthetic.astype(dtypes),
    ...                        ledger=ledger, delta=1e-6, plots=False)
    ...     text = out["html"].read_text(encoding="utf-8")
    >>> "-DP</b>" in text, out["images"]
    (True, [])
    >>> out["tvd"]
    {1: 0.25, 2: 0.25}
    """
    if plots not in (True, False, "auto"):
        raise ValueError(f"plots must be True, False or 'auto', got {plots!r}.")
    if isinstance(max_categories, bool) or int(max_categories) != max_categories or max_categories < 1:
        raise ValueError(f"max_categories must be a positive integer, got {max_categories!r}.")
    max_categories = int(max_categories)
    path = Path(path)
    synthetic_codes = _aligned_codes(real_codes, synthetic_codes)
    figure_cls, plot_note = _figure_class(plots)
    tvd = _average_tvds(tvd, real_codes, synthetic_codes)
    v_real, v_synth = cramers_v(real_codes), cramers_v(synthetic_codes)
    numeric = numeric_fidelity(real, synthetic)

    path.parent.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    blobs: dict[str, bytes] = {}
    if figure_cls is not None:
        files, blobs = _draw_plots(figure_cls, path, _drawings(figure_cls, real, synthetic, real_codes,
                                                               synthetic_codes, v_real, v_synth, numeric,
                                                               max_categories))

    parts = _header(title, real, synthetic, real_codes, ledger, seconds, plot_note)
    parts.append(_privacy_section(ledger, delta, notes))
    parts.append(_tvd_section(tvd))
    if tstr is not None:
        parts.append(_tstr_section(tstr))
    if "columns.png" in blobs:
        parts.append(
            "<section id=\"distributions\"><h2>Distributions</h2>"
            "<p>Proportion of each category (bin) per column, real vs synthetic, with the column's "
            "1-way TVD.</p>" + _img(blobs["columns.png"], "Per-column distributions, real vs synthetic",
                                    files["columns.png"]) + "</section>"
        )
    if len(numeric):
        parts.extend(_numeric_section(numeric, real, blobs, files))
    parts.extend(_associations_section(v_real, v_synth, blobs, files))
    parts.append("<footer><p class=\"meta\">Generated by skdpsynth. This report reads the real data and is "
                 "not differentially private.</p></footer></body></html>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return {
        "html": path,
        "images": list(files.values()),
        "tvd": tvd,
        "numeric": numeric,
        "cramers_v_real": v_real,
        "cramers_v_synthetic": v_synth,
    }


def _figure_class(plots: bool | str):
    """Whether to plot: matplotlib's Figure class (None for no plots) and the sentence saying why there are
    none (empty unless ``plots="auto"`` found no matplotlib)."""
    figure_cls = None
    plot_note = ""
    if plots is True:
        figure_cls = _import_figure()
    elif plots == "auto":
        try:
            figure_cls = _import_figure()
        except ImportError:
            plot_note = (f"Plots omitted: matplotlib is not installed "
                         f"(<code>{_esc(_INSTALL_HINT)}</code>).")
    return figure_cls, plot_note


def _average_tvds(tvd: Mapping[Any, float] | None, real_codes: pd.DataFrame,
                  synthetic_codes: pd.DataFrame) -> dict:
    """The Fidelity section's average k-way TVDs: those given, or k = 1, 2, 3 (at most the columns)."""
    if tvd is None:
        from .fidelity import marginal_tvd

        ways = [k for k in (1, 2, 3) if k <= real_codes.shape[1]]
        tvd = marginal_tvd(real_codes, synthetic_codes, ways=ways) if ways else {}
    return dict(tvd)


def _drawings(figure_cls, real: pd.DataFrame, synthetic: pd.DataFrame, real_codes: pd.DataFrame,
              synthetic_codes: pd.DataFrame, v_real: pd.DataFrame, v_synth: pd.DataFrame, numeric: pd.DataFrame,
              max_categories: int) -> list[tuple[str, Callable[[Path], bytes]]]:
    """The plots of the page, in page order: ``(file name, function drawing it to a path)``."""
    drawings: list[tuple[str, Callable[[Path], bytes]]] = []
    if real_codes.shape[1]:
        drawings.append(("columns.png", lambda p: _plot_columns(figure_cls, real_codes, synthetic_codes,
                                                                max_categories, p)))
    panels = _quantile_panels(real, synthetic)
    if panels:
        drawings.append(("numeric.png", lambda p: _plot_quantiles(figure_cls, panels, numeric["ks"], p)))
    if real_codes.shape[1]:
        drawings.append(("associations.png", lambda p: _plot_associations(figure_cls, v_real, v_synth, p)))
    return drawings


def _draw_plots(figure_cls, path: Path,
                drawings: Sequence[tuple[str, Callable[[Path], bytes]]]) -> tuple[dict[str, Path], dict[str, bytes]]:
    """Draw ``drawings`` into ``<stem>_files/`` next to the report: their files and their PNG bytes by name."""
    files: dict[str, Path] = {}
    blobs: dict[str, bytes] = {}
    if not drawings:
        return files, blobs
    folder = path.parent / f"{path.stem}_files"
    folder.mkdir(exist_ok=True)
    for name, draw in drawings:
        files[name] = folder / name
        blobs[name] = draw(files[name])
    return files, blobs


def _header(title: str, real: pd.DataFrame, synthetic: pd.DataFrame, real_codes: pd.DataFrame,
            ledger: PrivacyLedger, seconds: float | None, plot_note: str) -> list[str]:
    """The page's head and header: row counts, wall time, the NOT-private caution, the plot note and the
    columns' dtypes (one part a line)."""
    meta = [f"{len(real):,} real rows", f"{len(synthetic):,} synthetic rows", f"{real.shape[1]} columns"]
    if seconds is not None:
        meta.append(f"fit + sample {seconds:.1f} s")
    column_rows = []
    for col in real.columns:
        n_cat = len(real_codes[col].cat.categories) if col in real_codes.columns else None
        syn_dtype = str(synthetic[col].dtype) if col in synthetic.columns else "—"
        column_rows.append([str(col), str(real[col].dtype), syn_dtype, n_cat])
    parts = [
        "<!DOCTYPE html>",
        "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{_esc(title)}</h1><p class=\"meta\">{' · '.join(meta)}</p>",
    ]
    if not ledger.is_private:
        parts.append("<p class=\"caution\"><b>NOT differentially private:</b> private data was read without a "
                     "DP mechanism (see Privacy).</p>")
    if plot_note:
        parts.append(f"<p class=\"note\">{plot_note}</p>")
    parts.append(
        f"<details><summary>Columns ({real.shape[1]})</summary>"
        + _table(["column", "real dtype", "synthetic dtype", "categories (discretized)"],
                 column_rows, numeric_from=3)
        + "</details></header>"
    )
    return parts


def _duration_text(nanoseconds: float) -> str:
    """A duration for a table cell, to the second from one minute on (nanoseconds are noise to a reader)."""
    duration = pd.Timedelta(round(nanoseconds), unit="ns")
    return str(duration.round("s") if abs(duration) >= pd.Timedelta(minutes=1) else duration)


def _numeric_cells(stats: pd.Series, real_column: pd.Series) -> list[Any]:
    """One row of the numeric table: KS, inter-quartile ranges (the real one only when its quartiles may be
    shown, see :func:`_shown_levels`), synthetic range and missing shares; dates as dates and durations."""
    iqr_real = stats["iqr_real"]
    if not _shown_levels(int(real_column.notna().sum()), np.array([0.25, 0.75])).all():
        iqr_real = "—"
    cells = [stats["ks"], iqr_real, stats["iqr_synthetic"], stats["min_synthetic"], stats["max_synthetic"]]
    if _numeric_kind(real_column.dtype) == "datetime":
        cells[1:3] = [c if isinstance(c, str) or pd.isna(c) else _duration_text(c) for c in cells[1:3]]
        cells[3:5] = [None if pd.isna(c) else str(c) for c in cells[3:5]]
    return cells + [f"{stats['nan_real']:.1%}", f"{stats['nan_synthetic']:.1%}"]


def _numeric_section(numeric: pd.DataFrame, real: pd.DataFrame, blobs: Mapping[str, bytes],
                     files: Mapping[str, Path]) -> list[str]:
    """The Numeric columns section: the quantile-quantile plots (when drawn) and the table of
    :func:`numeric_fidelity` (one part a line)."""
    parts = ["<section id=\"numeric\"><h2>Numeric columns</h2>"
             "<p>The numeric and date columns of the original tables, before discretization, through their "
             "quantiles at the levels 1%, 2%, …, 99%. Left, the share of records at or below each value (the "
             "distribution function), real and synthetic; right, the synthetic quantile against the real one: "
             "the points lie on the dashed line y = x where the two distributions agree, above it where the "
             "synthetic values are larger. The Kolmogorov–Smirnov (KS) distance is the largest vertical gap "
             "between the two empirical distribution functions over all values (0 = identical, 1 = disjoint). "
             "Missing values are left out of it and of the quantiles, and counted apart.</p>"
             f"<p class=\"meta\">A real quantile is drawn, and the real inter-quartile range shown, only where "
             f"at least {_TAIL_RECORDS} other real records lie at or below it and {_TAIL_RECORDS} at or above "
             "it: the report shows no value that only the most extreme real records hold (the real minimum and "
             "maximum never appear). Minimum and maximum are those of the synthetic data.</p>"]
    if "numeric.png" in blobs:
        parts.append(_img(blobs["numeric.png"], "Quantile-quantile plots of the numeric columns, real vs synthetic",
                          files["numeric.png"]))
    rows = [[str(name)] + _numeric_cells(numeric.loc[name], real[name]) for name in numeric.index]
    parts.append(_table(["column", "KS distance", "IQR real", "IQR synthetic", "synthetic min", "synthetic max",
                         "missing real", "missing synthetic"], rows,
                        caption="Numeric columns: Kolmogorov–Smirnov distance, inter-quartile range (IQR), "
                                "range and missing values"))
    parts.append("</section>")
    return parts


def _associations_section(v_real: pd.DataFrame, v_synth: pd.DataFrame, blobs: Mapping[str, bytes],
                          files: Mapping[str, Path]) -> list[str]:
    """The Associations section: the heat maps (when drawn) and the five largest changes of Cramér's V
    (one part a line)."""
    parts = ["<section id=\"associations\"><h2>Associations</h2>"
             "<p>Pairwise association between columns (bias-uncorrected Cramér's V on the discretized "
             "tables; 0 = independent, 1 = fully dependent) and its absolute change.</p>"]
    if "associations.png" in blobs:
        parts.append(_img(blobs["associations.png"], "Cramér's V: real, synthetic and absolute difference",
                          files["associations.png"]))
    m = v_real.shape[0]
    if m >= 2:
        iu, ju = np.triu_indices(m, k=1)
        a, b = v_real.to_numpy()[iu, ju], v_synth.to_numpy()[iu, ju]
        order = np.argsort(-np.abs(a - b), kind="stable")[:5]
        rows = [[str(v_real.columns[iu[t]]), str(v_real.columns[ju[t]]), float(a[t]), float(b[t]),
                 float(abs(a[t] - b[t]))] for t in order]
        parts.append(_table(["col a", "col b", "real V", "synthetic V", "|difference|"], rows,
                            numeric_from=2, caption="Largest absolute differences"))
    parts.append("</section>")
    return parts
