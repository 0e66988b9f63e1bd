"""Adaptive DP histograms of one numeric column: the bins of ``DPKBinsDiscretizer(strategy="adaptive")``.

In pipeline order:

1. :func:`magnitude_counts` — the column's records counted in ``sign(x) * 2^k``
   magnitude buckets; released with Laplace noise, these give the bounds
   (:func:`bounds_from_magnitudes`) and decide where the cells go.
2. :func:`cell_edges` — each occupied bucket inside the bounds is cut into
   :data:`CELLS_PER_BUCKET` equal cells, snapped to the column's lattice
   (integers, or multiples of ``10**-decimals``); runs of unoccupied buckets
   become one cell each. The zero bucket is a cell of its own, holding
   exactly 0.
3. :func:`noisy_cell_weights` — the records counted in those cells, released
   with Laplace noise (one more histogram: every record is in one cell), and
   made non-negative.
4. :func:`equal_mass_bins` — consecutive cells merged into about ``k`` bins
   of equal noisy mass; a cell holding a single value (a point of the
   lattice, or 0) whose mass is a bin's worth stays a bin of its own, so
   values many records share come back exactly.
5. :func:`draw_in_bins` — the inverse: a cell of the bin chosen by its noisy
   weight, then a uniform value (or lattice point) in the cell.

Steps 1 and 3 read the data; everything else is post-processing of their
noisy output and of public inputs (the bounds, the lattice, ``k``). The
mechanism is the hierarchical "coarse then fine" histogram of Qardaji, Yang
& Li (VLDB 2013, Section 4) with a data-adaptive second level chosen from
the first level's noisy counts, as in the adaptive grids of Qardaji, Yang &
Li (ICDE 2013, Section IV); see ``doc/preprocessing.md``.
"""
from __future__ import annotations

import math

import numpy as np

#: Equal cells each occupied magnitude bucket is cut into.
CELLS_PER_BUCKET = 32
#: Most bins ``n_bins="auto"`` chooses (point-mass bins come on top).
MAX_AUTO_BINS = 32
#: Failure probability of one extension step of the bounds (see :func:`bounds_from_magnitudes`).
_EXTENSION_FAILURE_PROBABILITY = 0.01
#: Failure probability of keeping a lone cell of many values (see :func:`noisy_cell_weights`).
_LONE_CELL_FAILURE_PROBABILITY = 1e-4
#: Possible buckets one extension step of the bounds looks at.
_LOOKAHEAD = 16

__all__: list[str] = []  # the machinery of DPKBinsDiscretizer(strategy="adaptive"), not API of its own


def bounds_from_magnitudes(noisy: np.ndarray, epsilon: float, core_threshold: float,
                           possible: np.ndarray, magnitudes: np.ndarray) -> tuple[int, int] | None:
    """The first and last magnitude bucket of the column's range, from the buckets' noisy counts.

    The range starts at the bucket with the largest noisy count, if that
    passes ``core_threshold`` (a union bound over all buckets, see
    ``DPKBinsDiscretizer``); ``None`` otherwise. It then grows, down and up, to
    the farthest bucket of a window ahead whose noisy count exceeds
    ``ln(m / (2 β)) / ε`` with β = 0.01, m the window's buckets (so one step
    extends over unoccupied buckets only with probability β). A window holds
    the next 16 possible buckets (``possible`` False: no value can be there)
    plus, free, the buckets of magnitude below 1/64 of the range's (the ~130
    buckets of tiny magnitudes between a column's negative and positive
    values hold at most a sliver of them): a tail of a thousand records past a
    gap (the capital gains above 0), or the other sign of a balance, is kept
    where the union bound over all 259 buckets would cut it, and a range never
    jumps to an empty magnitude far from the data. Post-processing of the
    noisy counts: no extra cost.
    """
    mode = int(np.argmax(np.where(possible, noisy, -np.inf)))
    if not noisy[mode] > core_threshold:
        return None
    first = last = mode
    while True:
        tiny = max(magnitudes[first], magnitudes[last]) / 64.0
        below = _window(range(first - 1, -1, -1), possible, magnitudes, tiny)
        above = _window(range(last + 1, noisy.size), possible, magnitudes, tiny)
        new_first = _farthest_passing(below, noisy, magnitudes, tiny, epsilon)
        new_last = _farthest_passing(above, noisy, magnitudes, tiny, epsilon)
        if new_first is None and new_last is None:
            return first, last
        first = first if new_first is None else new_first
        last = last if new_last is None else new_last


def _farthest_passing(window: list, noisy: np.ndarray, magnitudes: np.ndarray, tiny: float,
                      epsilon: float) -> int | None:
    """The farthest bucket of ``window`` (in order outward) the range may grow to, or None.

    A bucket passes alone when its noisy count exceeds ``ln(m / (2 β)) / ε``,
    m the buckets of its group (regular, or tiny magnitudes); the next
    regular bucket, where a tail most often goes on, passes too when its
    count exceeds ``ln(1 / β) / ε`` (one more test, failing with probability
    β / 2). Or a bucket passes when the noisy sum of it and the k - 1
    buckets beyond it in the window exceeds ``2 (ln(m / β) + k ln(4/3)) / ε``:
    there is mass at or beyond it, a tail spread thin over several
    magnitudes. Each of the other tests fails on unoccupied buckets with
    probability at most β / m (the Laplace tail, and for a sum of k
    Laplace(1/ε) the Chernoff bound with λ = ε/2, whose moment generating
    function is (4/3)^k), so a step grows over nothing with probability at
    most 3.5 β.
    """
    if not window:
        return None
    small = magnitudes[window] < tiny
    m_regular, m_tiny = max(int((~small).sum()), 1), max(int(small.sum()), 1)
    alone = np.where(small, extension_threshold(epsilon, m_tiny), extension_threshold(epsilon, m_regular))
    regular_at = np.flatnonzero(~small)
    if regular_at.size:  # the next regular bucket: ln(1 / β) / ε, below the union bound's from m = 3 on
        first = regular_at[0]
        alone[first] = min(alone[first], extension_threshold(epsilon, 2))
    values = noisy[window]
    # Runs over the regular buckets only: a tail of a column is in magnitudes near its range's.
    regular = np.where(small, 0.0, values)
    beyond = np.cumsum(regular[::-1])[::-1]  # a bucket's count and those of the regular ones farther out
    k = np.cumsum((~small)[::-1])[::-1]
    run_threshold = 2.0 * (math.log(m_regular / _EXTENSION_FAILURE_PROBABILITY) + k * math.log(4.0 / 3.0)) / epsilon
    passing = np.flatnonzero((values > alone) | (~small & (beyond > run_threshold)))
    return None if passing.size == 0 else window[int(passing[-1])]


def _window(order, possible: np.ndarray, magnitudes: np.ndarray, tiny: float) -> list:
    """The next possible buckets in ``order``: _LOOKAHEAD of them, plus any of magnitude below ``tiny``."""
    out, counted = [], 0
    for b in order:
        if not possible[b]:
            continue
        if counted == _LOOKAHEAD:
            break
        out.append(b)
        counted += magnitudes[b] >= tiny
    return out


def extension_threshold(epsilon: float, candidates: int = 1) -> float:
    """Noisy count that ``candidates`` unoccupied buckets all stay under with probability 1 - β, β = 0.01:
    ``ln(candidates / (2 β)) / ε`` (Laplace tail and a union bound)."""
    return math.log(candidates / (2.0 * _EXTENSION_FAILURE_PROBABILITY)) / epsilon


#: Probability that a column without missing values gets a category or bin for them (its count passes
#: :func:`missing_threshold` by noise alone); their records are then none, or a few drawn from the noise.
MISSING_FALSE_POSITIVE = 0.05


def missing_threshold(epsilon: float) -> float:
    """Noisy count above which a column's missing values are released: ``ln(1 / (2 β)) / ε`` with β =
    :data:`MISSING_FALSE_POSITIVE`. The count exists whatever the data (0 or not), so no δ is needed; a missing
    share below the threshold goes unreleased (to "other", or to a numeric column's middle bin)."""
    return math.log(1.0 / (2.0 * MISSING_FALSE_POSITIVE)) / epsilon


def possible_buckets(lows: np.ndarray, highs: np.ndarray, step: float | None) -> np.ndarray:
    """Buckets that can hold a value: on a lattice of ``step``, none of magnitude below it but 0 (public)."""
    if step is None:
        return np.ones(lows.size, dtype=bool)
    return (np.maximum(np.abs(lows), np.abs(highs)) >= step) | ((lows == 0) & (highs == 0))


def _index_up(values, step: float):
    """Index of the first lattice point at or above each value (``values / step`` rounded first, so a value
    written on the lattice in decimal is on it despite binary rounding)."""
    return np.ceil(np.round(np.asarray(values) / step, 9))


def _index_down(values, step: float):
    """Index of the last lattice point at or below each value (see :func:`_index_up`)."""
    return np.floor(np.round(np.asarray(values) / step, 9))


def lattice_up(values: np.ndarray, step: float | None) -> np.ndarray:
    """``values`` moved up onto the lattice ``step * Z`` (unchanged without a lattice)."""
    if step is None:
        return values
    return _index_up(values, step) * step


def on_lattice(lower: float, upper: float, step: float) -> tuple[float, float]:
    """Bounds moved out onto the lattice ``step * Z`` (public bounds stay bounds of the same values)."""
    return float(_index_down(lower, step) * step), float(_index_up(upper, step) * step)


def cell_edges(lower: float, upper: float, lows: np.ndarray, highs: np.ndarray, occupied: np.ndarray,
               step: float | None) -> np.ndarray:
    """Strictly increasing cell edges covering [lower, upper], from public bounds and post-processed counts.

    ``lows``/``highs``/``occupied``: the magnitude buckets in increasing
    order and whether each is worth cells of its own (its noisy count is
    above the extension threshold). An occupied bucket inside the bounds is
    cut into :data:`CELLS_PER_BUCKET` equal cells (never finer than the
    lattice ``step``); consecutive unoccupied buckets make one cell. The zero
    bucket, when inside the bounds, is the cell ``[0, step)`` or ``[0,
    next float)``: a cell holding exactly the value 0.
    """
    cuts = [lower, upper]
    run_open = False
    # Only the buckets that meet [lower, upper] (the magnitude buckets span the whole float range).
    lows, highs = np.maximum(lows, lower), np.minimum(highs, upper)
    meets = ~((highs < lows) | ((highs == lows) & (lows != 0.0)))
    lows, highs, occupied = lows[meets], highs[meets], np.asarray(occupied, dtype=bool)[meets]
    # The cells of every occupied bucket at once (np.linspace with arrays: the same values as one call per bucket).
    zero = (lows == 0.0) & (highs == 0.0)
    cut = occupied & ~zero
    cells = iter(np.linspace(lows[cut], highs[cut], CELLS_PER_BUCKET + 1, axis=1).tolist())
    for lo, hi, occ in zip(lows.tolist(), highs.tolist(), occupied.tolist()):
        if lo == hi == 0.0:  # the zero bucket: the single value 0
            cuts += [0.0, step if step is not None else np.nextafter(0.0, 1.0)]
            run_open = False
            continue
        if occ:
            cuts += next(cells)
            run_open = False
        elif not run_open:  # the first of a run of unoccupied buckets opens one cell for the whole run
            cuts.append(lo)
            run_open = True
    edges = np.unique(np.clip(lattice_up(np.asarray(cuts, dtype=np.float64), step), lower, upper))
    edges[0], edges[-1] = lower, upper
    edges = np.unique(edges)
    if step is not None and abs(upper / step - round(upper / step)) < 1e-9:
        # On a lattice the last cell is closed, so [e, upper] would hold upper and the values below it: the upper
        # bound gets a cell of its own, [upper, upper + step / 2], which holds no other value of the lattice.
        edges = np.append(edges, upper + 0.5 * step)
    return edges


def noisy_cell_weights(noisy_cells: np.ndarray, scale: float, cell_bucket: np.ndarray,
                       bucket_counts: np.ndarray, sizes: np.ndarray, single: np.ndarray | None = None) -> np.ndarray:
    """The cells' weights, from both levels' noisy counts (post-processing).

    ``scale`` is the Laplace scale of the cells' noise (0: exact counts). A
    cell keeps its noisy count when it stands out of the noise of all the
    cells (``ln(C / (2 β)) / ε`` for C cells, β = 0.01: a value many records
    share, a peak). A cell of many values (``single`` False; ``None``: every
    cell holds one value) must stand out further, with β = 10⁻⁴, unless a cell
    next to it stands out too (a cluster of values spans cells): a peak is
    one value, and a lone cell of many values above the first threshold is
    more likely the noise's 1-in-100 draw than a cluster that fits in one
    cell. Kept wrongly, that draw takes its bucket's whole mass; left with
    the rest below, it counts for its signal-to-noise ratio.

    What its bucket holds beyond its kept cells (the bucket's noisy count,
    ``bucket_counts[cell_bucket]``, minus theirs, if positive) goes to the
    bucket's other cells in proportion to a blend of their clipped noisy counts and their ``sizes``, the counts weighted by
    their signal-to-noise ratio ``α = τ² / (τ² + 2 scale²)``: τ² estimates
    how much the cells' true counts differ, the variance of their noisy
    counts less the noise's ``2 scale²`` and a margin of two standard errors
    of that variance (an empirical Bayes estimate, as in James–Stein
    shrinkage), and at least μ², μ the bucket's mass per cell.
    Where the counts are below their noise the bucket's mass is spread
    evenly instead of following the noise; where they differ well beyond it
    (round values, 45 and 50 hours a week, under the threshold of a kept
    cell), they shape the draw. Cells outside any occupied bucket keep their
    count only when it stands out.
    """
    noisy_cells = np.asarray(noisy_cells, dtype=np.float64)
    n_cells = noisy_cells.size
    kept = _kept_cells(noisy_cells, scale, np.ones(n_cells, dtype=bool) if single is None else single)
    weights = np.where(kept, noisy_cells, 0.0)
    inside = cell_bucket >= 0
    n_buckets = bucket_counts.size
    bucket = np.where(inside, cell_bucket, n_buckets)
    own = np.minimum(bucket, n_buckets - 1)
    rest = inside & ~kept

    def per_bucket(values):
        return np.bincount(bucket, weights=np.where(rest, values, 0.0), minlength=n_buckets + 1)[:n_buckets]

    kept_mass = np.bincount(bucket, weights=weights, minlength=n_buckets + 1)[:n_buckets]
    leftover = np.maximum(np.asarray(bucket_counts, dtype=np.float64) - kept_mass, 0.0)
    rest_size = per_bucket(sizes)
    clipped = np.maximum(noisy_cells, 0.0)
    rest_clipped = per_bucket(clipped)
    rest_cells = per_bucket(np.ones(n_cells))
    mu = np.divide(leftover, rest_cells, out=np.zeros(n_buckets), where=rest_cells > 0)
    if scale == 0:
        alpha = 1.0
    else:
        mean_noisy = np.divide(per_bucket(noisy_cells), rest_cells, out=np.zeros(n_buckets), where=rest_cells > 0)
        spread = np.divide(per_bucket((noisy_cells - mean_noisy[own]) ** 2), np.maximum(rest_cells - 1, 1))
        # Less the noise's variance 2 scale², with a margin of two standard deviations of its estimate from n
        # Laplace draws (kurtosis 6: sd 2 scale² sqrt(5 / n)), so that noise alone rarely passes for a spread.
        noise = 2.0 * scale ** 2 * (1.0 + 2.0 * np.sqrt(5.0 / np.maximum(rest_cells - 1, 1)))
        tau2 = np.maximum(np.where(rest_cells > 1, spread - noise, 0.0), mu ** 2)
        alpha = tau2 / (tau2 + 2.0 * scale ** 2)
    alpha = np.where(rest_clipped > 0, alpha, 0.0)
    # Each cell's share of its bucket's rest; sizes / rest_size first (a continuous zero cell is 5e-324 wide).
    by_size = np.divide(sizes, rest_size[own], out=np.zeros(n_cells), where=rest & (rest_size[own] > 0))
    by_count = np.divide(clipped, rest_clipped[own], out=np.zeros(n_cells), where=rest & (rest_clipped[own] > 0))
    a = np.broadcast_to(alpha, (n_buckets,))[own]
    return weights + leftover[own] * (a * by_count + (1.0 - a) * by_size)


def _kept_cells(noisy_cells: np.ndarray, scale: float, single: np.ndarray) -> np.ndarray:
    """Cells whose noisy counts stand out (see :func:`noisy_cell_weights`): above ``ln(C / (2 β)) · scale``,
    β = 0.01, and for a cell of many values with no such neighbour, above the same with β = 10⁻⁴."""
    if scale == 0:
        return noisy_cells > 0.0
    n_cells = noisy_cells.size
    above = noisy_cells > scale * math.log(n_cells / (2.0 * _EXTENSION_FAILURE_PROBABILITY))
    beside = np.zeros(n_cells, dtype=bool)
    beside[1:] |= above[:-1]
    beside[:-1] |= above[1:]
    far_above = noisy_cells > scale * math.log(n_cells / (2.0 * _LONE_CELL_FAILURE_PROBABILITY))
    return above & (single | beside | far_above)


#: Decimals the kinds histogram tells apart: values with 0 .. MAX_DECIMALS decimals, and finer ones.
MAX_DECIMALS = 6


def kinds_counts(values: np.ndarray) -> np.ndarray:
    """Counts of the records by kind: missing, or the fewest decimals (0 .. MAX_DECIMALS, then "finer") that
    write the value; every record is of one kind, so the counts have L1 sensitivity 1 under add/remove.

    Index d (0 .. MAX_DECIMALS) counts values with d decimals, ``MAX_DECIMALS + 1`` finer values and the last
    entry missing ones.
    """
    missing = np.isnan(values)
    finite = values[~missing]
    kind = np.full(finite.size, MAX_DECIMALS + 1, dtype=np.intp)
    for d in range(MAX_DECIMALS, -1, -1):  # the fewest decimals wins
        scaled = finite * 10.0 ** d
        # Exact up to the rounding of writing the value in binary (a few units in the last place).
        exact = np.abs(scaled - np.round(scaled)) <= 1e-6 + 8.0 * np.finfo(float).eps * np.abs(scaled)
        kind[exact] = d
    counts = np.bincount(kind, minlength=MAX_DECIMALS + 2)
    return np.append(counts, int(missing.sum()))


def decimals_from_kinds(noisy: np.ndarray, threshold: float) -> int | None:
    """The column's precision from the kinds' noisy counts: the most decimals a released kind has, or None
    (continuous) when finer values are released or no kind is."""
    passing = np.flatnonzero(np.asarray(noisy[:MAX_DECIMALS + 2]) > threshold)
    if passing.size == 0 or passing[-1] == MAX_DECIMALS + 1:
        return None
    return int(passing[-1])


def cell_sizes(edges: np.ndarray, step: float | None) -> np.ndarray:
    """Each cell's size: its width, or its number of lattice points (the last cell is closed)."""
    if step is None:
        return np.diff(edges)
    first = _index_up(edges[:-1], step)
    n_points = _index_up(edges[1:], step) - first
    n_points[-1] = _index_down(edges[-1], step) - first[-1] + 1
    return np.maximum(n_points, 0.0)


def auto_n_bins(total: float) -> int:
    """Bins for ``n_bins="auto"``: about ``sqrt(n̂) / 4``, between 2 and :data:`MAX_AUTO_BINS`.

    ``total`` is a released record count (the sum of the cells' noisy
    weights). Each bin then holds about ``4 sqrt(n̂)`` records — many more
    than the noise of a synthesizer's one-way marginal for any budget worth
    fitting — and at most 1/32 of the column, which bounds the error of the
    within-bin draw (at most one bin's mass in the Kolmogorov–Smirnov
    distance; much less when the cells inside a bin are right).
    """
    return int(np.clip(math.floor(math.sqrt(max(total, 0.0)) / 4.0), 2, MAX_AUTO_BINS))


def single_values(edges: np.ndarray, step: float | None) -> np.ndarray:
    """Whether each cell holds exactly one value: one lattice point, or the zero cell."""
    if step is None:
        return edges[1:] == np.nextafter(edges[:-1], np.inf)
    return cell_sizes(edges, step) <= 1


def equal_mass_bins(edges: np.ndarray, weights: np.ndarray, k: int, step: float | None) -> np.ndarray:
    """Indices into the cells of the bins' first cells (and the end), for about ``k`` bins of equal mass.

    A cell that holds a single value and at least half a bin's mass is a bin
    of its own. Other bins end at the first cell boundary where the running
    mass reaches the next multiple of ``total / k``. Without any mass (every
    noisy count was negative), the cells are split into ``k`` runs of equal
    length.
    """
    n_cells = weights.size
    total = float(weights.sum())
    if total <= 0.0:
        return np.unique(np.linspace(0, n_cells, min(k, n_cells) + 1).round().astype(np.intp))
    share = total / k
    point = single_values(edges, step) & (weights >= 0.5 * share)
    cuts = {0, n_cells}
    for i in np.flatnonzero(point):
        cuts.update((int(i), int(i) + 1))
    running = np.cumsum(np.where(point, 0.0, weights))
    targets = share * np.arange(1, k)
    cuts.update((np.searchsorted(running, targets, side="left") + 1).tolist())
    cuts = np.asarray(sorted(c for c in cuts if 0 <= c <= n_cells), dtype=np.intp)
    return cuts


def bin_weights(weights: np.ndarray, first_cells: np.ndarray, edges: np.ndarray,
                step: float | None) -> np.ndarray:
    """The cells' weights for the draw: a bin whose cells all got no mass draws them by their size."""
    out = weights.astype(np.float64).copy()
    sizes = cell_sizes(edges, step)
    for a, b in zip(first_cells[:-1], first_cells[1:]):
        if out[a:b].sum() <= 0.0:
            out[a:b] = np.maximum(sizes[a:b], np.finfo(float).tiny)
    return out


def draw_in_bins(codes: np.ndarray, first_cells: np.ndarray, edges: np.ndarray, weights: np.ndarray,
                 step: float | None, rng) -> np.ndarray:
    """One value per code: a cell of bin ``code`` by its weight, then a uniform value (or lattice point) in it.

    ``weights`` are those of :func:`bin_weights` (every bin has some). The
    last cell is closed at the upper bound; the others are ``[lo, hi)``, so
    a draw never leaves its bin nor the bounds.
    """
    cumulative = np.concatenate([[0.0], np.cumsum(weights)])
    start, stop = cumulative[first_cells[codes]], cumulative[first_cells[codes + 1]]
    target = start + rng.uniform(size=codes.size) * (stop - start)
    cell = np.searchsorted(cumulative, target, side="right") - 1
    cell = np.clip(cell, first_cells[codes], first_cells[codes + 1] - 1)
    lo, hi = edges[cell], edges[cell + 1]
    last = cell == weights.size - 1
    u = rng.uniform(size=codes.size)
    if step is None:
        values = lo + u * (hi - lo)
        values = np.where(last, np.minimum(values, hi), np.minimum(values, np.nextafter(hi, -np.inf)))
        return np.maximum(values, lo)
    first = _index_up(lo, step)
    final = np.where(last, _index_down(hi, step), _index_up(hi, step) - 1)
    final = np.maximum(final, first)
    points = first + np.minimum(np.floor(u * (final - first + 1)), final - first)
    return points * step
