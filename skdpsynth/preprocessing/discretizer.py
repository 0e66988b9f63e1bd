"""Differentially private binning of numeric columns into public, categorical bins.

:class:`DPKBinsDiscretizer` turns numeric columns into pandas ``Categorical``
columns whose categories (the full list of bins, empty ones included) are
public, so a synthesizer reads each column's domain from its dtype without
touching the data again.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..params import Interval, Names, Options, PrivacyParameter, validate_params
from ..privacy import PrivacyLedger, laplace_mechanism, warn_privacy_leak
from ..privacy.metadata import mark_public
from ..privacy.randomness import child_random_states, gumbel, noise_generator, warn_reproducible_noise
from ..utils import check_memory, check_random_state
from . import _adaptive
from ._input import (
    OutputMixin,
    as_frame,
    assemble,
    check_has_columns,
    fitted_frame,
    param_scope,
    select_columns,
)

__all__ = ["DPKBinsDiscretizer"]

#: The category of the missing values of a column with a missing-value bin (that of DPCategoricalEncoder).
MISSING_LABEL = "__missing__"

# Magnitude buckets of the DP range estimate: |x| in (2^(k-1), 2^k] for k in
# _K_MIN.._K_MAX (|x| <= 2^_K_MIN goes to k = _K_MIN, |x| > 2^(_K_MAX - 1) to k = _K_MAX).
_K_MIN, _K_MAX = -64, 64
_MAGNITUDES = np.arange(_K_MIN, _K_MAX + 1)
_N_BUCKETS = 2 * _MAGNITUDES.size + 1  # negative buckets, the zero bucket, positive buckets
# Probability that at least one bucket with true count 0 passes the threshold.
_BOUNDS_FAILURE_PROBABILITY = 0.01
# Most public bucket_edges of one column: each occupied bucket becomes 32 cells, and the bounds' union bound grows
# with the number of buckets.
_MAX_BUCKET_EDGES = 100_001
# Peak memory of a fit and its transform, per bin: the DP quantiles (about 420 bytes) and the categorical labels
# (about 500), measured at 1e5 and 1e6 bins, rounded up.
_BYTES_PER_BIN = 512
# Share of an adaptive column's budget for its magnitude histogram (bounds); the cells get the rest. The bounds
# need most of it: a tail bucket must stand out of the noise, while the cells' large masses (a point mass, the
# body) stand out at a fraction of it.
_ADAPTIVE_BOUNDS_FRACTION = 0.75
# Share of the rest for the kinds histogram (decimals, missing values) where one is released: its few counts are
# large (most values of a column share their number of decimals), but a kind must pass a union bound over all 8.
_KINDS_FRACTION = 0.3
# pandas.api.types.infer_dtype kinds of an object column that hold numbers only.
_NUMERIC_KINDS = ("integer", "floating", "mixed-integer-float", "decimal", "empty")


def _is_int(value) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_number(value) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def _widen(lower: float, upper: float) -> tuple[float, float]:
    """A degenerate range [v, v] becomes [v - 0.5, v + 0.5]; others are returned as they are."""
    if lower == upper:
        return lower - 0.5, upper + 0.5
    return lower, upper


def _bounds_threshold(epsilon: float, n_buckets: int = _N_BUCKETS) -> float:
    """Noisy-count threshold t with P(some empty bucket passes) <= _BOUNDS_FAILURE_PROBABILITY.

    One empty bucket passes with P(Laplace(1/ε) > t) = exp(-ε t) / 2; a union bound
    over all ``n_buckets`` buckets gives t = ln(B / (2 β)) / ε.
    """
    return math.log(n_buckets / (2.0 * _BOUNDS_FAILURE_PROBABILITY)) / epsilon


def _bucket_edges() -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper end of every bucket, in increasing order of the values they hold."""
    mags = 2.0 ** _MAGNITUDES
    halves = 2.0 ** (_MAGNITUDES - 1)
    # Negative buckets from the most negative: [-2^k, -2^(k-1)) for k = K_MAX .. K_MIN.
    neg_lo, neg_hi = -mags[::-1], -halves[::-1]
    lows = np.concatenate([neg_lo, [0.0], halves])
    highs = np.concatenate([neg_hi, [0.0], mags])
    return lows, highs


def _bucket_index(values: np.ndarray) -> np.ndarray:
    """Bucket of each finite value (see :func:`_bucket_edges` for the order)."""
    n_mag = _MAGNITUDES.size
    idx = np.full(values.shape, n_mag, dtype=np.intp)  # the zero bucket
    nonzero = values != 0
    with np.errstate(divide="ignore"):
        k = np.ceil(np.log2(np.abs(values[nonzero])))
    k = np.clip(k, _K_MIN, _K_MAX).astype(np.intp) - _K_MIN  # 0 .. n_mag - 1
    positive = values[nonzero] > 0
    idx[nonzero] = np.where(positive, n_mag + 1 + k, n_mag - 1 - k)
    return idx


class _Buckets(NamedTuple):
    """The public buckets of a column's first histogram (its DP bounds), in increasing order of their values."""

    lows: np.ndarray
    highs: np.ndarray
    #: Each bucket's magnitude for the rule that lets a range grow over tiny magnitudes for free (see
    #: :func:`._adaptive.bounds_from_magnitudes`); inf where no bucket is tiny (public edges).
    reach: np.ndarray
    #: What the buckets are, for the ledger.
    description: str
    #: The bucket of each finite value: a function of the value and the public buckets only.
    index: Callable[[np.ndarray], np.ndarray]

    @property
    def size(self) -> int:
        return int(self.lows.size)


def _magnitude_buckets() -> _Buckets:
    """The default buckets: ``sign(x) * 2^k`` magnitudes and 0."""
    lows, highs = _bucket_edges()
    return _Buckets(lows, highs, np.maximum(np.abs(lows), np.abs(highs)), "sign(x)*2^k magnitude buckets",
                    _bucket_index)


def _edge_buckets(edges: np.ndarray) -> _Buckets:
    """Buckets between consecutive public ``edges``; a value below the first or above the last is counted in
    the end bucket, so the DP bounds never reach beyond the edges."""
    def index(values: np.ndarray) -> np.ndarray:
        return np.clip(np.searchsorted(edges, values, side="right") - 1, 0, edges.size - 2)

    return _Buckets(edges[:-1].copy(), edges[1:].copy(), np.full(edges.size - 1, np.inf),
                    f"{edges.size - 1} public buckets (bucket_edges)", index)


def _no_bounds_error(name, epsilon: float, n_buckets: int = _N_BUCKETS) -> ValueError:
    """The error when no bucket stands out of the noise (it names the budget, never the data)."""
    return ValueError(
        f"Could not estimate bounds for column {name!r} with epsilon={epsilon:.4g}: no "
        f"{'magnitude ' if n_buckets == _N_BUCKETS else ''}bucket's noisy count exceeded the threshold "
        f"{_bounds_threshold(epsilon, n_buckets):.3g}. Give public bounds for it (bounds=...) or a larger epsilon.")


def _dp_bounds(values: np.ndarray, epsilon: float, rng, ledger: PrivacyLedger, name,
               buckets: _Buckets) -> tuple[float, float]:
    """ε-DP bounds of the finite ``values`` at the ends of ``buckets`` (see DPKBinsDiscretizer's docstring)."""
    counts = np.bincount(buckets.index(values), minlength=buckets.size)
    noisy = laplace_mechanism(
        counts, epsilon=epsilon, sensitivity=1.0, random_state=rng, ledger=ledger,
        description=f"bounds of column {name!r}: noisy histogram of {buckets.description}",
    )
    passing = np.flatnonzero(noisy > _bounds_threshold(epsilon, buckets.size))
    if passing.size == 0:
        raise _no_bounds_error(name, epsilon, buckets.size)
    return _widen(float(buckets.lows[passing[0]]), float(buckets.highs[passing[-1]]))


def _quantile_sensitivity(q: float) -> float:
    """Sensitivity of the rank utility ``-|i - q n|`` under add/remove: ``max(q, 1 - q)``.

    Adding a record below a point raises its rank i by 1 and q n by q (the
    utility moves by at most 1 - q); adding one above it moves q n only (by
    q).  Removing a record is the same change backwards.
    """
    return max(q, 1.0 - q)


def _dp_quantile_log_weights(sorted_clipped: np.ndarray, lower: float, upper: float, q: float,
                             epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """The gaps' end points ``z_0 .. z_{n+1}`` and their log-weights for one ε-DP quantile (Smith 2011).

    Interval i = [z_i, z_{i+1}] (i data points below it) gets log-weight
    ``log(z_{i+1} - z_i) + ε u_i / (2 Δ)`` with ``u_i = -|i - q n|`` and Δ
    its sensitivity :func:`_quantile_sensitivity`: choosing an interval by
    these weights and then a uniform point in it is the exponential
    mechanism over [lower, upper] with density ∝ ``exp(ε u(x) / (2 Δ))``,
    which is ε-DP (McSherry & Talwar 2007): the ε charged, and nearly
    attained on small neighbouring data sets.
    """
    n = sorted_clipped.size
    points = np.concatenate([[lower], sorted_clipped, [upper]])
    utility = -np.abs(np.arange(n + 1) - q * n)
    with np.errstate(divide="ignore"):
        log_w = np.log(np.diff(points)) + (0.5 * epsilon / _quantile_sensitivity(q)) * utility  # log 0: never chosen
    return points, log_w


def _dp_quantile(sorted_clipped: np.ndarray, lower: float, upper: float, q: float, epsilon: float, rng) -> float:
    """One ε-DP quantile by the exponential mechanism over [lower, upper] (Smith 2011)."""
    points, log_w = _dp_quantile_log_weights(sorted_clipped, lower, upper, q, epsilon)
    i = int(np.argmax(log_w + gumbel(rng, log_w.shape)))  # Gumbel-max sample (OS CSPRNG bits when unseeded)
    return float(points[i] + rng.uniform() * (points[i + 1] - points[i]))


def _column_bounds(name, x: np.ndarray, public: dict, epsilon: float | None, rng,
                   ledger: PrivacyLedger, buckets: _Buckets) -> tuple[float, float]:
    """A binned column's bounds: public, DP with ``epsilon``, or (without a budget) the data's range widened."""
    if name in public:
        return public[name]
    if epsilon is not None:
        return _dp_bounds(x, epsilon, rng, ledger, name, buckets)
    if x.size == 0:
        raise ValueError(f"Column {name!r} has no values (0 rows) to read bounds from; give public "
                         "bounds (bounds=... or edges=...).")
    return _widen(float(x.min()), float(x.max()))


def _separate(edges: np.ndarray, name) -> np.ndarray:
    """Make edges strictly increasing by moving tied interior edges by the smallest float step."""
    edges = edges.copy()
    k = edges.size - 1
    for i in range(1, k):
        if edges[i] <= edges[i - 1]:
            edges[i] = np.nextafter(edges[i - 1], np.inf)
    for i in range(k - 1, 0, -1):
        if edges[i] >= edges[i + 1]:
            edges[i] = np.nextafter(edges[i + 1], -np.inf)
    if not np.all(np.diff(edges) > 0):
        raise ValueError(
            # Not the range: without a budget it is the data's own minimum and maximum.
            f"The range of column {name!r} is too narrow to hold {k} distinct bins in floating point; use fewer "
            "bins or wider bounds."
        )
    return edges


class DPKBinsDiscretizer(OutputMixin, TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Bin numeric columns into k public bins, with differentially private edges.

    Each binned column becomes a pandas ``Categorical`` whose categories are
    all of its k bins (empty ones too), so downstream synthesizers read the
    column's public domain from the dtype. Neighbouring datasets differ by
    adding or removing one record; all mechanisms here are pure ε-DP.

    Parameters
    ----------
    n_bins : int, "auto" or dict, default=10
        Number of bins k >= 1, for every binned column or as ``{column: k}``
        (then every binned column must be listed, except those with public
        ``edges``). ``"auto"`` (``strategy="adaptive"`` only): about
        ``sqrt(n̂) / 4`` bins, between 2 and 32, from the released histogram's
        total n̂, plus a bin for each value that holds a bin's worth of records
        on its own (see Notes).
    columns : None or list, default=None
        The columns to bin; ``None`` bins every column. The other columns
        pass through :meth:`transform` and :meth:`inverse_transform`
        unchanged (values, dtype and position), so that this step and a
        :class:`~skdpsynth.preprocessing.DPCategoricalEncoder` limited to the
        other columns can follow each other in a
        :class:`~skdpsynth.pipeline.SynthesisPipeline`. The dict forms of
        ``n_bins``, ``bounds`` and ``edges`` may only name these columns.
    strategy : {"uniform", "quantile", "adaptive"}, default="uniform"
        ``"uniform"``: k equal-width bins between the bounds. ``"quantile"``:
        equal-frequency bins whose k - 1 interior edges are DP quantiles.
        ``"adaptive"``: bins of about equal mass from a DP histogram whose cells
        follow the data's magnitudes; values many records share (0, 40) get
        bins of their own and come back exactly, and :meth:`inverse_transform`
        draws inside a bin by the histogram, so a column keeps its shape (see
        Notes). The default of :class:`TableDiscretizer` for columns without
        public bounds.
    bounds : None, (lower, upper) or dict, default=None
        Public bounds, for all binned columns or as ``{column: (lower, upper)}``
        (columns missing from the dict have no public bounds). They must be
        finite with ``lower < upper``. Public bounds cost no privacy budget.
    epsilon : float or None, default=None
        Total pure-ε budget of the fit. It is split evenly over the columns
        that need DP work (no public bounds, or ``strategy="quantile"`` with
        k >= 2); within a column that needs both bounds and quantiles,
        ``bounds_epsilon_fraction`` of its share goes to the bounds and the
        rest is split evenly over its k - 1 quantiles. If no column needs DP
        work, nothing is spent (the budget is simply not used). With
        ``epsilon=None``, missing bounds are the data's finite min and max and
        quantile edges are the empirical quantiles: this reads the private
        data without DP, and one :class:`~skdpsynth.privacy.PrivacyLeakWarning`
        naming those columns is issued.
    bounds_epsilon_fraction : float or None, default=None
        Share, in (0, 1), of a column's budget spent on its bounds when it
        needs both bounds and quantiles (or the adaptive histogram). ``None``:
        0.5 with quantiles, 0.75 with ``"adaptive"`` (a thin tail must stand
        out of the bounds' noise, while the cells that matter are large).
    output : {"interval", "code"}, default="interval"
        Categories of the output: ``pd.IntervalIndex.from_breaks(edges,
        closed="left")`` (ordered), or the integers 0 .. k - 1 (ordered).
    random_state : None, int, numpy.random.Generator, ...
        Source of the DP noise and of :meth:`inverse_transform`'s draws
        (unless that call is given its own ``random_state``; see there).
    edges : None or dict, default=None
        Public bin edges ``{column: [e_0, e_1, ..., e_k]}`` (finite, strictly
        increasing, at least two). They fix the column's bins completely and
        cost nothing; ``n_bins``, ``strategy`` and ``bounds`` do not apply to
        it (``n_bins`` as a dict may omit it or must say k; ``bounds`` must not
        name it). Use them for public knowledge such as "most people have no
        capital gain": ``[0, 1, 5000, 10000, 100000]`` gives an integer column
        a bin holding exactly 0.
    decimals : None, int or dict, default=None
        Public precision of the values: :meth:`inverse_transform` rounds them
        to this many decimals (``{column: d}`` or one d for all), and
        ``"adaptive"`` cells hold multiples of ``10**-d``. Integer columns are
        whole numbers without it.
    bucket_edges : None or dict, default=None
        Public buckets ``{column: [b_0, ..., b_m]}`` (finite, strictly
        increasing, at most 100,001) for the first DP histogram of a column
        without public bounds, in place of the ``sign(x) * 2^k`` magnitudes:
        its DP bounds are then edges of these buckets, and ``"adaptive"``
        cuts each occupied bucket into 32 cells. Magnitudes suit values that
        spread from near 0 (amounts, counts); values far from 0 compared with
        their spread (years, dates as days) fit one magnitude bucket, whose 32
        cells are then too coarse: give a public grid of them instead (e.g.
        decades). Values below ``b_0`` or above ``b_m`` are counted in the
        end buckets, so the bounds never reach beyond the grid.
        :class:`~skdpsynth.preprocessing.TableDiscretizer` gives date columns
        calendar years.

    Attributes
    ----------
    columns_ : list
        The binned columns, in input order (all of them for ``columns=None``).
    bin_edges_ : dict
        Binned column -> strictly increasing ndarray of k + 1 edges; the
        first and last are the column's bounds.
    n_bins_ : dict
        Column -> k.
    bounds_ : dict
        Column -> (lower, upper) used (public, DP-estimated or inferred).
    privacy_ledger_ : PrivacyLedger
        One pure-ε entry per release; empty when nothing needed DP.
    feature_names_in_ : ndarray of object
        Names of all the input columns, binned or passed through (``x0, x1,
        ...`` for array input).
    n_features_in_ : int
    dtypes_ : dict
        Binned column -> original dtype (restored by :meth:`inverse_transform`).
    lattice_steps_ : dict
        Binned column -> the spacing of its possible values (1 for integer
        columns, ``10**-decimals``) or None (continuous).
    cell_edges_, cell_weights_, bin_cells_ : dict
        ``"adaptive"`` columns only: the histogram's cell edges, the cells'
        weights (post-processed noisy counts) and, per bin, the index of its
        first cell (and the end): bin i is cells ``bin_cells_[c][i]`` to
        ``bin_cells_[c][i + 1] - 1``.

    Notes
    -----
    **DP bounds** (columns without public bounds, ``epsilon`` given). In the
    style of "approx_bounds": every finite value goes to a bucket by sign and
    magnitude, ``sign(x) * 2^k`` with ``|x|`` in ``(2^(k-1), 2^k]`` for
    k = -64 .. 64 (smaller magnitudes go to k = -64, larger to k = 64), plus
    a bucket for 0: 259 buckets. Laplace noise of scale 1/ε is added to the
    counts (L1 sensitivity 1 under add/remove, so ε-DP). A bucket passes when
    its noisy count exceeds ``t = ln(259 / (2 * 0.01)) / ε`` (about 9.47/ε):
    an empty bucket passes with probability ``exp(-ε t) / 2``, so with
    probability at least 99% no empty bucket passes. The bounds are the lower
    end of the lowest passing bucket and the upper end of the highest one
    (powers of two, or 0); if no bucket passes a ``ValueError`` asks for
    public bounds or more ε.

    **DP quantiles** (``strategy="quantile"``). For q = 1/k, ..., (k-1)/k in
    turn, the exponential mechanism over [lower, upper] (Smith 2011): with
    the data clipped to the bounds and sorted, z_0 = lower <= z_1 <= ... <=
    z_n <= z_{n+1} = upper, interval i = [z_i, z_{i+1}] is chosen with
    probability proportional to ``(z_{i+1} - z_i) * exp(ε_q * u_i / (2 Δ_q))``
    with ``u_i = -|i - q n|``, computed in log space, and the edge is a
    uniform point in it. Under add/remove the utility moves by at most
    ``Δ_q = max(q, 1 - q)`` (a new record below a point raises its rank by
    1 and q n by q), so each quantile is ε_q-DP and costs ε_q; calibrated
    to Δ_q rather than 1, the median's weights are twice as sharp for the
    same ε. The edges are then sorted (post-processing); tied edges (probability
    zero for DP edges; possible for non-private quantiles of discrete data)
    are kept and separated by the smallest float step, giving empty bins.

    **Adaptive bins** (``strategy="adaptive"``). (1) Without public bounds,
    the magnitude histogram above, with ``bounds_epsilon_fraction`` of the
    column's ε (0.75 by default), gives the bounds: the range starts at the
    bucket of largest noisy count (it must pass the threshold above) and
    grows to the farthest of the next 16 possible buckets (plus those of
    magnitude below 1/64 of the range's) whose noisy count exceeds
    ``ln(m / 0.02) / ε`` (m the buckets looked at; the next bucket also
    passes above ``ln(100) / ε``, where a tail most often goes on), or whose noisy count
    with those beyond it exceeds a Chernoff bound for a sum of Laplace noise
    (see :func:`._adaptive.bounds_from_magnitudes`): a thin tail past a gap
    is kept, and noise far from the data does not stretch the range. With
    ``missing="auto"``, the number of missing values is one more count of
    that histogram (a record is in one count); it gets a bin when its noisy
    count exceeds ``ln(10) / ε`` (a count there whatever the data, so no δ;
    a column without missing values passes it with probability 5%).
    (2) A float column without ``decimals`` (or, with public bounds, a column
    whose missing values are to be counted) releases a "kinds" histogram
    with 30% of the rest: its values counted by the fewest decimals (0 to
    6, or finer) that write them, and its missing values; the most decimals
    whose noisy count exceeds ``ln(400) / ε`` becomes its lattice (a union
    bound over the 8 kinds: a column gets more decimals than it has with
    probability below 1%). (3) Each
    bucket whose noisy count exceeds ``ln(50) / ε`` is cut into 32 equal
    cells, snapped to the column's lattice (whole numbers for integer
    columns, multiples of ``10**-decimals``), so a bucket of at most 32
    values gets a cell per value; runs of other buckets make one cell, the
    zero bucket is the cell of the single value 0, and on a lattice the upper
    bound has a cell of its own. (4) The cells' counts get Laplace noise with
    the rest of the column's ε: every record is in one cell (L1 sensitivity 1
    under add/remove), so that release is ε-DP and the column's total is the
    ε given (with public bounds, all of it goes to the kinds and the cells).
    (5) Post-processing: a cell keeps its noisy count when it exceeds
    ``ln(C / 0.02) / ε`` for C cells; what its bucket's noisy count holds
    beyond its kept cells goes to the bucket's other cells by a blend of their
    noisy counts and their sizes, weighted by the counts' signal-to-noise
    ratio. Cells holding a single value with at least half a bin's weight
    become bins of their own; the other cells are merged, in order, into runs
    of equal weight. Missing values too few to release join the bin holding
    the middle of the weight. (6) :meth:`inverse_transform` draws a cell of
    the bin by its weight, then a uniform value (or lattice point) in the
    cell: never outside the bin or the bounds. The design is that of the
    hierarchical and adaptive-grid histograms of Qardaji, Yang & Li (VLDB
    2013; ICDE 2013); the measured effect on real columns is in
    ``doc/preprocessing.md``.

    **Transform.** Bins are ``[e_i, e_{i+1})`` except the last, which is
    closed ``[e_{k-1}, e_k]``. Finite values outside the bounds are clipped
    into the end bins. NaN raises a ``ValueError`` (handle missing values
    first), and so does ±inf, in :meth:`fit` and :meth:`transform`, naming
    the column: an infinite value is never a real measurement, and clipping
    it into an end bin would hide the data error. Object columns are binned
    when they hold numbers only. The input must have exactly the columns seen
    in :meth:`fit` (matched by name for a DataFrame, in any order; by count
    for an array), otherwise a ``ValueError`` names the difference.

    **Empty input.** A table with 0 rows is accepted whenever the edges come
    from public metadata (``bounds``, ``edges``) or from DP quantiles, which
    run on any number of records: the fit does not depend on whether the data
    are empty. DP bounds run their mechanism too, and on 0 rows (as on any
    too small table) no bucket passes the threshold, so the fit raises the
    ``ValueError`` asking for public bounds. Bounds or quantiles read from
    the data without DP (``epsilon=None``) cannot be read from 0 rows: a
    ``ValueError`` says so.

    **Output container.** :meth:`transform` returns a DataFrame of
    ``Categorical`` columns (pass-through columns as they were).
    ``set_output(transform="default")`` makes it return a NumPy array of the
    values instead (the ``Interval`` bins, or an integer array of codes with
    ``output="code"``), which :meth:`inverse_transform` also accepts;
    ``set_output(transform="pandas")`` keeps the DataFrame.

    **Single distinct value.** Bounds inferred from a column with one distinct
    value v (or DP bounds where only the zero bucket passes) would be
    degenerate; they are widened to [v - 0.5, v + 0.5].

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.preprocessing.discretizer import DPKBinsDiscretizer
    >>> X = pd.DataFrame({"age": [17, 25, 38, 52, 90]})
    >>> disc = DPKBinsDiscretizer(n_bins=5, bounds=(17, 90), output="code").fit(X)
    >>> disc.bin_edges_["age"].tolist()
    [17.0, 31.6, 46.2, 60.8, 75.4, 90.0]
    >>> disc.transform(X)["age"].tolist()
    [0, 0, 1, 2, 4]
    >>> len(disc.privacy_ledger_)
    0
    >>> disc.inverse_transform(disc.transform(X), method="midpoint")["age"].tolist()
    [24, 24, 39, 54, 83]
    >>> a = disc.inverse_transform(disc.transform(X), random_state=1)["age"].tolist()
    >>> a == disc.inverse_transform(disc.transform(X), random_state=1)["age"].tolist()
    True

    ``columns=`` bins some columns and passes the others through:

    >>> people = pd.DataFrame({"age": [17, 38, 90], "city": ["Oslo", "Rome", "Lima"]})
    >>> disc = DPKBinsDiscretizer(n_bins=2, columns=["age"], bounds={"age": (17, 90)}, output="code")
    >>> out = disc.fit_transform(people)
    >>> out["age"].tolist(), out["city"].tolist(), out["city"].dtype == people["city"].dtype
    ([0, 0, 1], ['Oslo', 'Rome', 'Lima'], True)
    >>> disc.set_output(transform="default").transform(people).tolist()  # a NumPy array
    [[0, 'Oslo'], [0, 'Rome'], [1, 'Lima']]
    """

    def __init__(self, n_bins=10, *, columns=None, strategy="uniform", bounds=None, epsilon=None,
                 bounds_epsilon_fraction=None, output="interval", random_state=None, edges=None, decimals=None,
                 missing="error", bucket_edges=None):
        self.bucket_edges = bucket_edges
        self.missing = missing
        self.n_bins = n_bins
        self.columns = columns
        self.edges = edges
        self.decimals = decimals
        self.strategy = strategy
        self.bounds = bounds
        self.epsilon = epsilon
        self.bounds_epsilon_fraction = bounds_epsilon_fraction
        self.output = output
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []  # numbers in, Categorical bins out
        return tags

    # -- input handling ----------------------------------------------------
    @staticmethod
    def _numeric_values(frame: pd.DataFrame, name, allow_missing: bool = False) -> np.ndarray:
        """The column as float64, rejecting what cannot be binned: non-numbers, ±inf and (unless the column has
        a missing-value bin) NaN."""
        col = frame[name]
        dtype = col.dtype
        hint = ("DPKBinsDiscretizer bins numeric columns only: encode categorical columns with a (DP) categorical "
                "encoder (DPCategoricalEncoder), giving each step its columns with columns=[...].")
        kind = pd.api.types.infer_dtype(col, skipna=True) if dtype == object else None
        if pd.api.types.is_complex_dtype(dtype) or kind == "complex":
            raise ValueError(f"Complex data not supported: column {name!r} holds complex numbers. {hint}")
        if kind is not None and kind not in _NUMERIC_KINDS:
            reason = f"{kind} values"
            try:
                col.to_numpy(dtype=np.float64)
            except TypeError as exc:  # a non-scalar: Python's words name its type ("... not 'dict'")
                reason = str(exc)
            except ValueError:  # its words would quote a value of the private data: not in a message
                pass
            raise TypeError(f"Column {name!r} has dtype object and non-numeric values ({reason}). {hint}")
        if kind is None and (isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype)
                             or not pd.api.types.is_numeric_dtype(dtype)):
            raise TypeError(f"Column {name!r} has non-numeric dtype {dtype}. {hint}")
        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
        if not allow_missing and np.isnan(values).any():
            raise ValueError(
                f"Column {name!r} has missing values (NaN). DPKBinsDiscretizer does not handle them: "
                "impute them first, or encode the column with DPCategoricalEncoder(missing='category')."
            )
        if np.isinf(values).any():
            raise ValueError(
                f"Column {name!r} has infinite values (inf or -inf). They are not measurements and usually "
                "hide a data error (a division by zero, an overflow); DPKBinsDiscretizer does not clip them "
                "into the end bins. Fix or drop them first."
            )
        return values

    def _public_edges(self, columns, name: str = "edges") -> dict:
        """``edges`` (or ``bucket_edges``) as ``{column: float64 array}``, checked: finite, strictly increasing,
        at least two numbers, only binned columns."""
        given = getattr(self, name)
        if given is None:
            return {}
        if not isinstance(given, Mapping):
            raise TypeError(f"{name} must be None or a dict {{column: [e_0, ..., e_k]}}, got "
                            f"{type(given).__name__}.")
        unknown = set(given) - set(columns)
        if unknown:
            raise ValueError(f"{name} names columns that are not {param_scope(self.columns, 'in the data')}: "
                             f"{sorted(map(str, unknown))}.")
        out = {}
        for c, e in given.items():
            if isinstance(e, (str, bytes)) or not np.iterable(e):
                raise ValueError(f"{name} for column {c!r} must be a sequence of numbers, got {e!r}.")
            # The length first, before every edge is read (a list of a billion takes minutes to check).
            size = len(e) if hasattr(e, "__len__") else None
            if size is not None and name == "edges":
                check_memory(_BYTES_PER_BIN * float(size), f"DPKBinsDiscretizer with {size - 1:,} public bins for "
                             f"column {c!r} (edges)", "Use fewer bins: each bin becomes a category of the "
                             "synthesizer's domain, where a few to a few hundred per column is the useful range.")
            if size is not None and size > _MAX_BUCKET_EDGES and name == "bucket_edges":
                raise ValueError(f"bucket_edges for column {c!r} has {size:,} edges; at most "
                                 f"{_MAX_BUCKET_EDGES:,} are allowed (each occupied bucket becomes "
                                 f"{_adaptive.CELLS_PER_BUCKET} cells). Give coarser buckets.")
            values = list(e)
            if len(values) < 2 or not all(_is_number(v) for v in values):
                raise ValueError(f"{name} for column {c!r} must be at least two numbers, got {e!r}.")
            arr = np.asarray(values, dtype=np.float64)
            if not (np.all(np.isfinite(arr)) and np.all(np.diff(arr) > 0)):
                raise ValueError(f"{name} for column {c!r} must be finite and strictly increasing, got {e!r}.")
            out[c] = arr
        return out

    def _buckets(self, columns) -> dict:
        """Each binned column's first-level buckets: its public ``bucket_edges``, or the magnitudes."""
        given = self._public_edges(columns, "bucket_edges")
        magnitudes = _magnitude_buckets()
        return {c: _edge_buckets(given[c]) if c in given else magnitudes for c in columns}

    def _per_column(self, columns):
        public_edges = self._public_edges(columns)
        # n_bins
        if isinstance(self.n_bins, Mapping):
            unknown = set(self.n_bins) - set(columns)
            missing = [c for c in columns if c not in self.n_bins and c not in public_edges]
            if unknown or missing:
                raise ValueError(f"n_bins dict must name exactly the binned columns "
                                 f"({'all of X' if self.columns is None else 'columns='}, except those with "
                                 f"public edges); unknown: {sorted(map(str, unknown))}, missing: "
                                 f"{list(map(str, missing))}.")
            n_bins = dict(self.n_bins)
        else:
            n_bins = {c: self.n_bins for c in columns}
        for c, k in n_bins.items():
            if k == "auto" and isinstance(k, str):
                if self.strategy != "adaptive":
                    raise ValueError(f"n_bins='auto' (column {c!r}) needs strategy='adaptive', which releases "
                                     f"the record count it is chosen from; got strategy={self.strategy!r}.")
                continue
            if not _is_int(k) or k < 1:
                raise ValueError(f"n_bins for column {c!r} must be an integer >= 1 or 'auto', got {k!r}.")
            n_bins[c] = int(k)
        for c, e in public_edges.items():
            if isinstance(self.n_bins, Mapping) and c in self.n_bins and n_bins[c] != e.size - 1:
                raise ValueError(f"n_bins[{c!r}] = {n_bins[c]} contradicts its {e.size} public edges "
                                 f"({e.size - 1} bins).")
            n_bins[c] = e.size - 1
        given = self._column_values("bounds", columns)
        bounds = {}
        for c, b in given.items():
            try:
                lower, upper = b
            except (TypeError, ValueError):
                raise ValueError(f"bounds for column {c!r} must be a (lower, upper) pair, got {b!r}.") from None
            if not (_is_number(lower) and _is_number(upper) and math.isfinite(lower)
                    and math.isfinite(upper) and lower < upper):
                raise ValueError(f"bounds for column {c!r} must be finite numbers with lower < upper, "
                                 f"got {b!r}.")
            bounds[c] = (float(lower), float(upper))
        clash = [c for c in public_edges if c in given]
        if clash:
            raise ValueError(f"Columns {list(map(str, clash))} have both public edges and bounds; the edges "
                             "already fix the bounds (their first and last values). Give one of the two.")
        for c, e in public_edges.items():
            bounds[c] = (float(e[0]), float(e[-1]))
        return n_bins, bounds, public_edges

    # What each hyper-parameter may be (skdpsynth.params); the per-column entries of n_bins, bounds and edges
    # are checked against the columns when fit knows them.
    _parameter_constraints = {
        "n_bins": [Interval(Integral, 1, None), Options("auto"), Mapping],
        "bounds": [None, tuple, list, Mapping],
        "edges": [None, Mapping],
        "bucket_edges": [None, Mapping],
        "columns": [None, Names("column names")],
        "strategy": [Options("uniform", "quantile", "adaptive")],
        "decimals": [None, Interval(Integral, 0, 15), Mapping],
        "missing": [Options("error", "auto", "category"), Mapping],
        "output": [Options("interval", "code")],
        "epsilon": [None, PrivacyParameter()],
        "bounds_epsilon_fraction": [None, Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def _check_params(self):
        validate_params(self)

    # -- fit -----------------------------------------------------------------
    def fit(self, X, y=None):
        """Choose the bin edges of every binned column, spending at most ``epsilon``.

        Parameters
        ----------
        X : pandas.DataFrame or 2-D numeric array
            0 rows are accepted when the edges need no data (see Notes).
        y : ignored

        Returns
        -------
        self
        """
        self._check_params()
        frame = as_frame(X)
        check_has_columns(frame, "DPKBinsDiscretizer")
        columns = select_columns(self.columns, frame)
        missing_bins = self._missing_bins(columns, frame)  # True, False, or "release" (decided by the histogram)
        with_missing = {c: self._numeric_values(frame, c, bool(missing_bins[c])) for c in columns}
        values = {c: x[~np.isnan(x)] if missing_bins[c] else x for c, x in with_missing.items()}
        n_missing = {c: int(with_missing[c].size - values[c].size) for c in columns}
        self.missing_fill_ = {}
        n_bins, public, public_edges = self._per_column(columns)
        total_bins = sum(_adaptive.MAX_AUTO_BINS if k == "auto" else k for k in n_bins.values())
        check_memory(_BYTES_PER_BIN * float(total_bins),
                     f"DPKBinsDiscretizer with {total_bins:,} bins over {len(columns)} column(s) (n_bins"
                     + (", edges" if public_edges else "") + ")",
                     "Use fewer bins: each bin becomes a category of the synthesizer's domain, where a few to a "
                     "few hundred per column is the useful range.")
        quantile = self.strategy == "quantile"
        adaptive = self.strategy == "adaptive"
        steps = self._lattice_steps(columns, frame)
        buckets = self._buckets(columns)
        needs_bounds = [c for c in columns if c not in public]
        needs_quantiles = [c for c in columns if c not in public_edges
                           and (adaptive or (quantile and n_bins[c] >= 2))]
        dp_columns = [c for c in columns if c in needs_bounds or c in needs_quantiles]
        epsilon = None if self.epsilon is None else float(self.epsilon)
        rng = noise_generator(self.random_state)
        (inverse_state,) = child_random_states(self.random_state, 1)  # its own stream: it is released
        ledger = PrivacyLedger()
        if epsilon is not None and dp_columns:
            warn_reproducible_noise(type(self).__name__, self.random_state)

        if epsilon is None and dp_columns:
            parts = []
            if needs_bounds:
                parts.append(f"the bounds (min and max) of columns {list(map(str, needs_bounds))}")
            if needs_quantiles:
                what = "histogram" if adaptive else "quantile bin edges"
                parts.append(f"the {what} of columns {list(map(str, needs_quantiles))}")
            warn_privacy_leak(
                f"DPKBinsDiscretizer read {' and '.join(parts)} from the private data without "
                "differential privacy. Give public bounds (bounds=...) or a privacy budget (epsilon=...).",
                stacklevel=2, ledger=ledger, description=f"DPKBinsDiscretizer: {' and '.join(parts)} read from "
                "the data", columns=[str(c) for c in dp_columns],
            )
        share = epsilon / len(dp_columns) if (epsilon is not None and dp_columns) else None

        self.cell_edges_, self.cell_weights_, self.bin_cells_ = {}, {}, {}
        self.lattice_steps_ = dict(steps)  # adaptive columns may learn theirs from the kinds histogram
        if adaptive:
            bounds, edges = {}, {}
            for c in columns:
                if c in public_edges:
                    bounds[c], edges[c] = public[c], public_edges[c].copy()
                    continue
                missing_count = n_missing[c] if missing_bins[c] == "release" else None
                bounds[c], edges[c], released = self._fit_adaptive(c, values[c], n_bins[c], public.get(c), steps[c],
                                                                   missing_count, buckets[c], share=share, rng=rng,
                                                                   ledger=ledger)
                if missing_bins[c] == "release":
                    missing_bins[c] = released
                    if not released:  # too few missing values to release: they join the middle bin
                        self.missing_fill_[c] = self._middle_bin(c)
                n_bins[c] = edges[c].size - 1
        else:
            bounds, edges = self._fit_edges(columns, values, n_bins, public, public_edges, needs_quantiles, buckets,
                                            share=share, rng=rng, ledger=ledger)

        if epsilon is not None:
            ledger.check_budget(epsilon=epsilon)
            assert ledger.total_epsilon() <= epsilon * (1 + 1e-9)
        if not dp_columns:
            assert len(ledger) == 0  # nothing spent, nothing leaked
        self.columns_ = columns
        self.bin_edges_ = edges
        self.n_bins_ = n_bins
        self.bounds_ = bounds
        self.privacy_ledger_ = ledger
        self.feature_names_in_ = np.asarray(list(frame.columns), dtype=object)
        self.n_features_in_ = frame.shape[1]
        self.dtypes_ = {c: frame[c].dtype for c in columns}
        self.missing_bins_ = missing_bins
        # The stream of inverse_transform's draws, seeded from the fit's generator.
        self._inverse_rng = check_random_state(inverse_state)
        return self

    def _missing_bins(self, columns, frame: pd.DataFrame) -> dict:
        """Whether each column gets a bin for missing values, from ``missing`` and the dtypes only (public)."""
        named = self._column_values("missing", columns)
        given = {c: named.get(c, "error") for c in columns} if isinstance(self.missing, Mapping) else named
        out = {}
        for c, option in given.items():
            if option not in ("error", "auto", "category"):
                raise ValueError(f"missing for column {c!r} must be 'error', 'auto' or 'category', got {option!r}.")
            dtype = frame[c].dtype
            # NumPy integer columns cannot hold a missing value; every other numeric dtype can.
            can_be_missing = not (pd.api.types.is_integer_dtype(dtype)
                                  and not isinstance(dtype, pd.api.extensions.ExtensionDtype))
            # "auto" gives a bin to adaptive columns only: their bins are released anyway, while a column of
            # public equal-width bins is free and its domain stays what the user gave.
            out[c] = option == "category" or ("release" if option == "auto" and can_be_missing
                                              and self.strategy == "adaptive" else False)
        return out

    def _column_values(self, name: str, columns) -> dict:
        """A parameter given for all columns or as ``{column: value}``, as a dict over the columns it names."""
        value = getattr(self, name)
        if value is None:
            return {}
        if isinstance(value, Mapping):
            unknown = set(value) - set(columns)
            if unknown:
                raise ValueError(f"{name} names columns that are not {param_scope(self.columns, 'in the data')}: "
                                 f"{sorted(map(str, unknown))}.")
            return dict(value)
        return {c: value for c in columns}

    def _lattice_steps(self, columns, frame: pd.DataFrame) -> dict:
        """Each column's public lattice: ``10**-decimals`` when ``decimals`` names it, 1 for an integer dtype,
        else None (continuous)."""
        given = self._column_values("decimals", columns)
        steps = {}
        for c in columns:
            d = given.get(c)
            if d is not None and not (_is_int(d) and 0 <= d <= 15):
                raise ValueError(f"decimals for column {c!r} must be an integer in 0..15, got {d!r}.")
            integer = pd.api.types.is_integer_dtype(frame[c].dtype)
            steps[c] = 1.0 if integer and (d is None or d == 0) else (None if d is None else 10.0 ** -int(d))
        return steps

    def _fit_adaptive(self, name, x: np.ndarray, k, public_bounds, step, missing_count, buckets: _Buckets, *,
                      share, rng, ledger):
        """One column's bins by ``strategy="adaptive"`` (see the module :mod:`._adaptive`): bounds and occupied
        magnitude buckets, cells, their noisy weights, then about ``k`` bins of equal noisy mass. With
        ``missing_count`` (the missing values, for ``missing="auto"``), it is released with the cells' counts,
        and the last value returned says whether it passed ``ln(10) / ε``: the column then gets a missing bin."""
        eps_mag, eps_cells = None, share
        if share is not None and public_bounds is None:
            fraction = _ADAPTIVE_BOUNDS_FRACTION if self.bounds_epsilon_fraction is None \
                else self.bounds_epsilon_fraction
            eps_mag = share * fraction
            eps_cells = share - eps_mag
        lower, upper, occupied, bucket_counts, released = self._magnitudes(name, x, public_bounds, eps_mag, step,
                                                                           missing_count, buckets, rng, ledger)
        found_step = step
        kinds_missing = missing_count if released is None else None  # not counted with the magnitudes
        if step is None or kinds_missing is not None:  # what the column's values look like: one more release
            eps_kinds = None if eps_cells is None else eps_cells * _KINDS_FRACTION
            eps_cells = None if eps_cells is None else eps_cells - eps_kinds
            released_here, decimals = self._kinds(name, x, kinds_missing, eps_kinds, rng, ledger)
            released = released_here if released is None else released
            if step is None and decimals is not None:
                found_step = 10.0 ** -decimals
                lower, upper = _adaptive.on_lattice(lower, upper, found_step)
        step = found_step
        self.lattice_steps_[name] = step
        edges = _adaptive.cell_edges(lower, upper, buckets.lows, buckets.highs, occupied, step)
        cells = np.clip(np.searchsorted(edges, np.clip(x, lower, upper), side="right") - 1, 0, edges.size - 2)
        counts = np.bincount(cells, minlength=edges.size - 1)
        scale = 0.0
        if eps_cells is not None:
            counts = laplace_mechanism(
                counts, epsilon=eps_cells, sensitivity=1.0, random_state=rng, ledger=ledger,
                description=f"histogram of column {name!r}: noisy counts of {counts.size} cells (adaptive bins)")
            scale = 1.0 / eps_cells
        # A cell's bucket is that of a value it holds: its first lattice point, or (continuous) its middle.
        inner = edges[:-1] + 0.5 * np.diff(edges) if step is None else _adaptive.lattice_up(edges[:-1], step)
        inner_bucket = buckets.index(inner)
        cell_bucket = np.where(occupied[inner_bucket], inner_bucket, -1)
        weights = _adaptive.noisy_cell_weights(counts, scale, cell_bucket, bucket_counts,
                                               _adaptive.cell_sizes(edges, step), _adaptive.single_values(edges, step))
        if k == "auto":
            k = _adaptive.auto_n_bins(float(weights.sum()))
        first_cells = _adaptive.equal_mass_bins(edges, weights, k, step)
        self.cell_edges_[name] = edges
        self.cell_weights_[name] = _adaptive.bin_weights(weights, first_cells, edges, step)
        self.bin_cells_[name] = first_cells
        return (lower, upper), edges[first_cells], released

    @staticmethod
    def _kinds(name, x: np.ndarray, missing_count, epsilon: float | None, rng, ledger) -> tuple[bool, int | None]:
        """Whether the missing values are released, and the column's decimals, from the kinds histogram
        (:func:`._adaptive.kinds_counts`; ε-DP, or read from the data without a budget)."""
        counts = _adaptive.kinds_counts(np.append(x, np.full(missing_count or 0, np.nan)))
        threshold = 0.0
        if epsilon is not None:
            counts = laplace_mechanism(
                counts, epsilon=epsilon, sensitivity=1.0, random_state=rng, ledger=ledger,
                description=f"kinds of column {name!r}: noisy counts of its values by decimals (0 to "
                            f"{_adaptive.MAX_DECIMALS}, finer)"
                            + ("" if missing_count is None else " and of its missing values"))
            # Counts there whatever the data: their threshold needs no δ; some empty kind passes with probability
            # at most 1% (a union bound over the kinds, each a lattice the column would wrongly get).
            threshold = _adaptive.extension_threshold(epsilon, _adaptive.MAX_DECIMALS + 2)
        released = None
        if missing_count is not None:
            released = bool(counts[-1] > (_adaptive.missing_threshold(epsilon) if epsilon is not None else 0.0))
        return released, _adaptive.decimals_from_kinds(counts, threshold)

    def _middle_bin(self, name) -> int:
        """The bin holding the middle of an adaptive column's released weight (post-processing)."""
        cumulative = np.cumsum(self.cell_weights_[name])
        cell = int(np.searchsorted(cumulative, 0.5 * cumulative[-1]))
        return int(np.searchsorted(self.bin_cells_[name], cell, side="right") - 1)

    @staticmethod
    def _magnitudes(name, x: np.ndarray, public_bounds, epsilon: float | None, step, missing_count,
                    buckets: _Buckets, rng, ledger):
        """Bounds, which buckets are occupied, their counts, and whether the missing values (when
        ``missing_count`` is given) are released: noisy (ε-DP) unless the bounds are public (then nothing is
        released here, and the last is None), or read from the data without a budget."""
        lows, highs = buckets.lows, buckets.highs
        possible = _adaptive.possible_buckets(lows, highs, step)
        if public_bounds is not None:
            lower, upper = public_bounds
            # Nothing released: magnitudes far below the range's width hold at most a sliver of it, one cell.
            occupied = possible & (buckets.reach >= (upper - lower) * 2.0 ** -10)
            return lower, upper, occupied, np.zeros(lows.size), None
        counts = np.bincount(buckets.index(x), minlength=buckets.size)
        if epsilon is None:
            if x.size == 0:
                raise ValueError(f"Column {name!r} has no values (0 rows) to read bounds from; give public "
                                 "bounds (bounds=... or edges=...).")
            lower, upper = _widen(float(x.min()), float(x.max()))
            released = None if missing_count is None else missing_count > 0
            return lower, upper, counts > 0, counts.astype(np.float64), released
        if missing_count is not None:  # one more count: a record is in a bucket or missing (L1 sensitivity 1)
            counts = np.append(counts, missing_count)
        noisy = laplace_mechanism(
            counts, epsilon=epsilon, sensitivity=1.0, random_state=rng, ledger=ledger,
            description=f"bounds of column {name!r}: noisy histogram of {buckets.description}"
                        + ("" if missing_count is None else " and of its missing values"))
        released = None
        if missing_count is not None:
            released = bool(noisy[-1] > _adaptive.missing_threshold(epsilon))
            noisy = noisy[:-1]
        span = _adaptive.bounds_from_magnitudes(noisy, epsilon, _bounds_threshold(epsilon, buckets.size), possible,
                                                buckets.reach)
        if span is None:
            raise _no_bounds_error(name, epsilon, buckets.size)
        first, last = span
        lower, upper = _widen(float(lows[first]), float(highs[last]))
        occupied = possible & (noisy > _adaptive.extension_threshold(epsilon))
        return lower, upper, occupied, np.maximum(noisy, 0.0), released

    def _fit_edges(self, columns, values, n_bins, public, public_edges, needs_quantiles, buckets, *, share, rng,
                   ledger):
        """Fit's edges step: each binned column's bounds, then its edges (public, uniform, or at quantiles);
        with a budget, ``share`` of it per DP column, split between its bounds and its quantiles."""
        bounds, edges = {}, {}
        for c in columns:
            x, k = values[c], n_bins[c]
            both = c not in public and c in needs_quantiles
            fraction = 0.5 if self.bounds_epsilon_fraction is None else self.bounds_epsilon_fraction
            eps_bounds = None if share is None else (share * fraction if both else share)
            eps_quant = None if share is None else (share - eps_bounds if both else share)
            lower, upper = _column_bounds(c, x, public, eps_bounds, rng, ledger, buckets[c])
            bounds[c] = (lower, upper)
            if c in public_edges:
                edges[c] = public_edges[c].copy()
                continue
            if c in needs_quantiles:
                clipped = np.sort(np.clip(x, lower, upper))
                qs = np.arange(1, k) / k
                if share is None:
                    if clipped.size == 0:
                        raise ValueError(f"Column {c!r} has no values (0 rows) to read quantile bin edges from; "
                                         "give epsilon (DP quantiles need no minimum number of records) or "
                                         "public edges=.")
                    interior = np.quantile(clipped, qs)
                else:
                    eps_q = eps_quant / (k - 1)
                    interior = []
                    for q in qs:
                        interior.append(_dp_quantile(clipped, lower, upper, q, eps_q, rng))
                        ledger.add(f"quantile q={q:.6g} of column {c!r} (bin edge)", "exponential",
                                   epsilon=eps_q, sensitivity=_quantile_sensitivity(q), scale=eps_q, n_values=1)
                e = np.concatenate([[lower], np.sort(np.asarray(interior, dtype=float)), [upper]])
            else:
                e = np.linspace(lower, upper, k + 1)
                e[0], e[-1] = lower, upper
            edges[c] = _separate(np.clip(e, lower, upper), c)
        return bounds, edges

    # -- transform -------------------------------------------------------------
    def _has_missing_bin(self, name) -> bool:
        return getattr(self, "missing_bins_", {}).get(name, False)

    def _categories(self, name) -> pd.CategoricalDtype:
        missing = self._has_missing_bin(name)
        if self.output == "interval":
            cats = pd.IntervalIndex.from_breaks(self.bin_edges_[name], closed="left")
            if missing:  # the bins, then the missing values' category
                cats = pd.Index([*cats, MISSING_LABEL], dtype=object)
        else:
            cats = pd.Index(np.arange(self.n_bins_[name] + int(missing)))
        # Bin edges are public or DP-released: synthesizers may take the domain from this dtype.
        return mark_public(pd.CategoricalDtype(cats, ordered=True))

    def transform(self, X):
        """Map every value of the binned columns to its bin; finite out-of-range values go to the end bins.

        Parameters
        ----------
        X : pandas.DataFrame or 2-D numeric array
            Exactly the columns seen in fit (a DataFrame is matched by name and
            reordered; an unknown or missing column is a ``ValueError``).
            NaN or ±inf in a binned column is a ``ValueError`` naming it.

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            Same column names and order; each binned column a ``Categorical``
            with all k bins as categories, the other columns unchanged. A
            NumPy array after ``set_output(transform="default")``.
        """
        check_is_fitted(self, "bin_edges_")
        frame = fitted_frame(X, self.feature_names_in_, "DPKBinsDiscretizer")
        new = {}
        for c in self.columns_:
            fill = getattr(self, "missing_fill_", {}).get(c)
            x = self._numeric_values(frame, c, self._has_missing_bin(c) or fill is not None)
            edges = self.bin_edges_[c]
            codes = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, edges.size - 2)
            # The missing-value bin comes last; without one ("auto", too few to release), the middle bin.
            codes = np.where(np.isnan(x), edges.size - 1 if fill is None else fill, codes)
            new[c] = pd.Categorical.from_codes(codes, dtype=self._categories(c))
        return self._wrap_output(assemble(frame, new))

    def _codes(self, frame: pd.DataFrame, name) -> np.ndarray:
        col = frame[name]
        k = self.n_bins_[name] + int(self._has_missing_bin(name))
        expected = self._categories(name).categories
        if isinstance(col.dtype, pd.CategoricalDtype):
            if col.cat.categories.equals(expected):
                codes = col.cat.codes.to_numpy().astype(np.intp)
            else:
                where = expected.get_indexer(col.cat.categories)
                if (where < 0).any():
                    raise ValueError(f"Column {name!r} has categories that are not bins of this discretizer.")
                codes = np.where(col.cat.codes.to_numpy() < 0, -1, where[col.cat.codes.to_numpy()])
        elif pd.api.types.is_integer_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
            codes = col.to_numpy(dtype=np.float64, na_value=np.nan)
            if np.isnan(codes).any():
                codes = np.where(np.isnan(codes), -1, codes)
            codes = codes.astype(np.intp)
            if ((codes < -1) | (codes >= k)).any():
                raise ValueError(f"Column {name!r} has integer codes outside 0..{k - 1}.")
        elif col.dtype == object or isinstance(col.dtype, pd.IntervalDtype):  # the bins as plain values
            values = col.to_numpy()
            codes = expected.get_indexer(pd.Index(values, dtype=object))
            na = pd.isna(values)
            if ((codes < 0) & ~na).any():
                raise ValueError(f"Column {name!r} has values that are not bins of this discretizer.")
        else:
            raise TypeError(f"Column {name!r} must be a Categorical of bins or integer codes, got {col.dtype}.")
        if (codes < 0).any():
            raise ValueError(f"Column {name!r} has missing values; every entry must be a bin.")
        return codes

    def inverse_transform(self, Xt, *, method="uniform", random_state=None):
        """Map bins back to numbers; columns that were not binned pass through unchanged.

        Parameters
        ----------
        Xt : pandas.DataFrame or 2-D array
            Exactly the columns seen in fit; binned columns as Categorical
            columns of bins (as output by :meth:`transform`), integer codes
            0 .. k-1, or the bins as plain values.
        method : {"uniform", "midpoint"}, default="uniform"
            ``"uniform"``: a uniform draw within the bin. ``"midpoint"``: the
            bin's midpoint (nothing is drawn).
        random_state : None, int or numpy.random.Generator, default=None
            Source of the ``"uniform"`` draws. ``None``: a stream seeded at fit
            from ``random_state``, so each call gives fresh values and
            refitting with the same integer ``random_state`` reproduces the
            sequence of calls. An int makes this call reproducible on its own
            (the same int gives the same output); a Generator is drawn from
            (and advanced). The draws are public randomness: they do not touch
            the private data.

        Returns
        -------
        pandas.DataFrame
            Original column names, order and dtypes. Integer columns get an
            integer of the bin: uniform over the bin's integers, or the midpoint
            rounded and clipped into them; a bin holding no integer gives the
            integer nearest its midpoint (which lies outside the bin).
        """
        check_is_fitted(self, "bin_edges_")
        if method not in ("uniform", "midpoint"):
            raise ValueError(f"method must be 'uniform' or 'midpoint', got {method!r}.")
        rng = self._inverse_rng if random_state is None else check_random_state(random_state)
        frame = fitted_frame(Xt, self.feature_names_in_, "DPKBinsDiscretizer", "Xt", keep_object_lists=True)
        new = {}
        for c in self.columns_:
            codes = self._codes(frame, c)
            edges = self.bin_edges_[c]
            missing = codes == edges.size - 1
            codes = np.where(missing, 0, codes)
            lo, hi = edges[codes], edges[codes + 1]
            mid = lo + 0.5 * (hi - lo)
            dtype = self.dtypes_[c]
            step = getattr(self, "lattice_steps_", {}).get(c)
            if c in getattr(self, "cell_edges_", {}) and method == "uniform":
                vals = _adaptive.draw_in_bins(codes, self.bin_cells_[c], self.cell_edges_[c],
                                              self.cell_weights_[c], step, rng)
            elif pd.api.types.is_integer_dtype(dtype):
                last = codes == edges.size - 2
                int_lo = np.ceil(lo)
                int_hi = np.where(last, np.floor(hi), np.ceil(hi) - 1)  # last bin is closed
                empty = int_lo > int_hi
                if method == "uniform":
                    span = np.where(empty, 0, int_hi - int_lo)
                    vals = int_lo + np.floor(rng.uniform(size=codes.size) * (span + 1))
                    vals = np.minimum(vals, int_lo + span)
                else:
                    vals = np.clip(np.round(mid), int_lo, np.maximum(int_hi, int_lo))
                vals = np.where(empty, np.round(mid), vals)
            else:
                if method == "uniform":
                    vals = lo + rng.uniform(size=codes.size) * (hi - lo)
                    # Rounding must not carry a draw onto the (open) upper edge of a bin.
                    last = codes == edges.size - 2
                    vals = np.where(last, np.minimum(vals, hi), np.minimum(vals, np.nextafter(hi, -np.inf)))
                    vals = np.maximum(vals, lo)
                else:
                    vals = mid
            if step is not None and step < 1.0:  # decimals: the values' public precision
                vals = np.round(vals, int(round(-math.log10(step))))
            new[c] = self._restore(np.where(missing, np.nan, vals), dtype, frame.index)
        return assemble(frame, new)

    @staticmethod
    def _restore(values: np.ndarray, dtype, index) -> pd.Series:
        """Values in the column's dtype; a NumPy integer column with missing values becomes ``Int64``."""
        series = pd.Series(values, index=index)
        if np.isnan(values).any() and pd.api.types.is_integer_dtype(dtype) \
                and not isinstance(dtype, pd.api.extensions.ExtensionDtype):
            return series.astype("Int64")
        return series.astype(dtype)

    def get_feature_names_out(self, input_features=None):
        """Output column names: the input column names (binned and passed through), in input order.

        Parameters
        ----------
        input_features : array-like of str or None
            If given, must match ``feature_names_in_``.

        Returns
        -------
        ndarray of object
        """
        check_is_fitted(self, "bin_edges_")
        if input_features is not None:
            input_features = np.asarray(input_features, dtype=object)
            if list(input_features) != list(self.feature_names_in_):
                raise ValueError("input_features does not match the columns seen in fit.")
        return self.feature_names_in_.copy()
