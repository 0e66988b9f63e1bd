"""S4 — post-processing of the noisy view tables (DPView paper §IV-E).

Everything here reads only the noisy tables and public sizes, so it is
post-processing (no budget).  Tables are dense ndarrays whose axes follow
the view's attribute positions in increasing order (the order of
:func:`skdpsynth.marginals.marginal`).  Consistency works by numpy
reductions and broadcasting; non-negativity and integralization are
vectorised over cells (no Python loop over cells or records).

* :func:`consistency` — one ascending pass of inverse-variance weighted
  consistency over the intersection closure of the views (§IV-E1);
* :func:`nonnegativity` — the paper's iterative non-negativity (§IV-E2);
* :func:`con_neg_loop` — the two alternated until the consistent tables'
  negative mass is below a tolerance (§IV-E2);
* :func:`integralize` / :func:`integralize_rows` — largest remainder
  rounding to an integer total, per group (§IV-E3);
* :func:`normalize` — consistency-aware normalization from the most
  concentrated view along the chain (§IV-E3).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .allocation import consistency_weights

__all__ = [
    "project",
    "intersection_closure",
    "consistency",
    "consistency_gap",
    "nonnegativity",
    "con_neg_loop",
    "negative_mass",
    "integralize",
    "integralize_rows",
    "concentration",
    "normalize",
]

View = tuple[int, ...]


def project(table: np.ndarray, view: View, subset) -> np.ndarray:
    """Sum ``table`` (axes = ``view``) onto the attributes ``subset`` (axes in increasing order).

    Examples
    --------
    >>> import numpy as np
    >>> project(np.arange(6.0).reshape(2, 3), (0, 4), (4,)).tolist()
    [3.0, 5.0, 7.0]
    """
    keep = set(subset)
    axes = tuple(j for j, a in enumerate(view) if a not in keep)
    return table.sum(axis=axes) if axes else table


def intersection_closure(views: Sequence[View]) -> list[View]:
    """Every attribute set shared by two or more views, closed under intersection, plus ``()``.

    Sorted by size (``()`` first, ties in a fixed order): one consistency pass
    in this order makes every pair of views agree on its whole intersection.
    The paper (§IV-E1) does not say which view groups are made consistent, or
    in which order (``doc/deviations.md``, "Order of consistency steps").

    Examples
    --------
    >>> intersection_closure([(0, 1, 2), (1, 2, 3), (2, 3, 4)])
    [(), (2,), (1, 2), (2, 3)]
    """
    sets = {frozenset(a) & frozenset(b) for a, b in itertools.combinations(views, 2)}
    frontier = set(sets)
    while frontier:
        new = {a & b for a in frontier for b in sets} - sets
        sets |= new
        frontier = new
    sets.add(frozenset())
    return sorted((tuple(sorted(s)) for s in sets), key=lambda s: (len(s), s))


@dataclass(frozen=True)
class _Step:
    """One consistency step: the views containing ``attrs``, their weights, ξ and broadcast shapes."""

    attrs: View
    members: tuple[int, ...]
    weights: np.ndarray
    xi: np.ndarray
    axes: tuple[tuple[int, ...], ...]  # per member: the axes summed out
    shapes: tuple[tuple[int, ...], ...]  # per member: the projection's shape with kept dims


def _plan(views: Sequence[View], sizes: Sequence[int], shares: np.ndarray, weights: str) -> list[_Step]:
    steps = []
    for attrs in intersection_closure(views):
        members = tuple(i for i, v in enumerate(views) if set(attrs) <= set(v))
        if len(members) < 2:
            continue
        xi = np.array([math.prod(sizes[a] for a in views[i] if a not in attrs) for i in members], dtype=np.float64)
        w = consistency_weights(shares[list(members)], xi, weights)
        axes = tuple(tuple(j for j, a in enumerate(views[i]) if a not in attrs) for i in members)
        shapes = tuple(tuple(sizes[a] if a in attrs else 1 for a in views[i]) for i in members)
        steps.append(_Step(attrs, members, w, xi, axes, shapes))
    return steps


def _apply(tables: list[np.ndarray], steps: list[_Step]) -> None:
    for step in steps:
        proj = [tables[i].sum(axis=ax, keepdims=True) for i, ax in zip(step.members, step.axes)]
        flat = [p.reshape(-1) for p in proj]  # the A-cells, in the same (increasing-attribute) order for all
        target = sum(w * p for w, p in zip(step.weights, flat))
        for i, p, xi, shape in zip(step.members, flat, step.xi, step.shapes):
            # Eq. (7): spread the gap to the consensus evenly over the ξ_i cells above each A-cell.
            tables[i] += ((target - p) / xi).reshape(shape)


def consistency(tables: Sequence[np.ndarray], views: Sequence[View], sizes: Sequence[int], shares,
                weights: str = "optimal") -> list[np.ndarray]:
    """One ascending pass of weighted consistency (paper §IV-E1); returns new tables.

    For every attribute set ``A`` of :func:`intersection_closure` (smallest
    first) shared by views ``I``: ``T_A = Σ_{i∈I} w_i π_i`` with ``π_i`` the
    projection of view ``i`` onto ``A`` and ``w_i ∝ P_i²/ξ_i``
    (:func:`~.allocation.consistency_weights`), then view ``i`` gets
    ``(T_A − π_i)/ξ_i`` added to each of its cells (Eq. (7)).  A step on
    ``A`` changes a view's projection onto another set ``A'`` by
    ``proj_{A∩A'}(T_A − π_i)/dom(A'\\A)``, which is zero once ``A∩A'`` (a
    smaller set of the closure, handled earlier) is consistent; so after the
    pass every pair of views agrees on its whole intersection, totals
    included.

    Examples
    --------
    >>> import numpy as np
    >>> views, sizes = [(0, 1), (1, 2)], [2, 2, 2]
    >>> t = consistency([np.array([[1.0, 2], [3, 4]]), np.array([[5.0, 0], [1, 1]])], views, sizes, [0.5, 0.5])
    >>> project(t[0], views[0], (1,)).tolist() == project(t[1], views[1], (1,)).tolist()
    True
    """
    out = [np.array(t, dtype=np.float64, copy=True) for t in tables]
    _apply(out, _plan(views, list(sizes), np.asarray(shares, dtype=np.float64), weights))
    return out


def consistency_gap(tables: Sequence[np.ndarray], views: Sequence[View]) -> float:
    """Largest absolute difference between two views' projections onto their intersection (totals included).

    Examples
    --------
    >>> import numpy as np
    >>> consistency_gap([np.ones((2, 2)), np.full((2, 3), 2.0)], [(0, 1), (1, 2)])
    4.0
    """
    gap = 0.0
    for (i, a), (j, b) in itertools.combinations(enumerate(views), 2):
        common = tuple(sorted(set(a) & set(b)))
        diff = project(tables[i], a, common) - project(tables[j], b, common)
        gap = max(gap, float(np.max(np.abs(diff))))
    return gap


def nonnegativity(table: np.ndarray) -> tuple[np.ndarray, int]:
    """The paper's iterative non-negativity (§IV-E2); returns the table and the number of iterations.

    Repeatedly: ``q`` = the sum of the non-positive cells, which are set to
    0, and ``q/o`` is added to each of the ``o`` positive cells.  The total is
    kept; the set of positive cells shrinks at every iteration, so it stops
    after at most ``dom(v)`` of them (in practice a handful: it is
    Michelot's algorithm, whose result is the Euclidean projection onto the
    simplex ``{y >= 0, Σy = Σx}``).  A table with total <= 0 becomes all zeros.
    Cells within ``1e-12·|Σx|`` of 0 count as zero.

    Examples
    --------
    >>> import numpy as np
    >>> y, it = nonnegativity(np.array([5.0, 3, -2, 1, 0, -1]))
    >>> y.tolist(), it
    ([4.0, 2.0, 0.0, 0.0, 0.0, 0.0], 1)
    >>> nonnegativity(np.array([4.0, 1, 0.5, -3]))[0].tolist()
    [2.5, 0.0, 0.0, 0.0]
    """
    x = np.asarray(table, dtype=np.float64)
    flat = x.ravel()
    total = float(flat.sum())
    if not total > 0:
        return np.zeros_like(x), 0
    tol = 1e-12 * total
    if flat.min() >= -tol:
        return np.maximum(x, 0.0), 0
    idx = np.flatnonzero(flat > tol)
    values = flat[idx]
    # The first iteration: every cell outside idx is set to 0, its mass spread over idx.
    values += (total - values.sum()) / values.size
    n_iter = 1
    while values.size and values.min() < -tol:
        n_iter += 1
        keep = values > tol
        q = values[~keep].sum()
        idx, values = idx[keep], values[keep]
        if values.size:
            values += q / values.size
    out = np.zeros(flat.size)
    out[idx] = np.maximum(values, 0.0)
    return out.reshape(x.shape), n_iter


def con_neg_loop(tables: Sequence[np.ndarray], views: Sequence[View], sizes: Sequence[int], shares,
                 max_iter: int = 100, tol: float = 0.0, weights: str = "optimal"
                 ) -> tuple[list[np.ndarray], int, bool]:
    """Consistency and non-negativity alternated to convergence (paper §IV-E2).

    Each iteration runs one :func:`consistency` pass and stops when the
    consistent tables' negative mass ``Σ_v Σ_c max(−T_v(c), 0)`` is at most
    ``tol``; otherwise every table goes through :func:`nonnegativity` and the
    next iteration starts.  The result is always the output of the last
    consistency pass: every pair of views agrees exactly (to float rounding)
    on its intersection.  Its negative mass is at most ``tol`` when converged;
    normalization treats the remaining negative cells as 0.

    Why a mass criterion: alternating the two projections converges only
    asymptotically, and each consistency pass spreads its corrections over
    millions of empty cells, leaving tiny negatives in most of them long after
    the tables stopped changing visibly; a per-cell criterion would keep
    iterating for them.  The negative mass bounds what the final clipping can
    move: at most ``tol`` over all views, in L1.  The paper gives no
    criterion (``doc/deviations.md``, "When the consistency loop stops").

    Returns
    -------
    tables : list of ndarray
    n_iter : int
        Consistency passes run.
    converged : bool

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.view.postprocess import con_neg_loop, consistency_gap, negative_mass
    >>> views, sizes = [(0, 1), (1, 2)], [2, 2, 2]
    >>> noisy = [np.array([[4.0, -1.0], [3.0, 2.0]]), np.array([[6.0, 1.0], [-0.5, 1.5]])]
    >>> tables, n_iter, converged = con_neg_loop(noisy, views, sizes, [0.5, 0.5])
    >>> n_iter, converged
    (24, True)
    >>> round(consistency_gap(tables, views), 12), negative_mass(tables)
    (0.0, 0.0)
    >>> [t.round(3).tolist() for t in tables]
    [[[3.733, 0.0], [2.733, 1.533]], [[5.733, 0.733], [0.1, 1.433]]]
    """
    steps = _plan(views, list(sizes), np.asarray(shares, dtype=np.float64), weights)
    out = [np.array(t, dtype=np.float64, copy=True) for t in tables]
    converged = False
    for n_iter in range(1, max_iter + 1):
        _apply(out, steps)
        if negative_mass(out) <= tol:
            converged = True
            break
        if n_iter < max_iter:
            out = [nonnegativity(t)[0] for t in out]
    return out, n_iter, converged


def negative_mass(tables: Sequence[np.ndarray]) -> float:
    """``Σ_v Σ_c max(−T_v(c), 0)``: how far the tables are from non-negative, in L1.

    Examples
    --------
    >>> import numpy as np
    >>> negative_mass([np.array([1.0, -0.5]), np.array([[-1.0, 2.0]])])
    1.5
    """
    return float(sum(-t[t < 0].sum() for t in tables))


# -- integralization -------------------------------------------------------------------------------------
def _round_groups(floors: np.ndarray, remainders: np.ndarray, groups: np.ndarray, deficits: np.ndarray,
                  rng: np.random.Generator) -> None:
    """Add 1 to the ``deficits[g]`` cells of each group ``g`` with the largest remainders (in place).

    ``groups`` is the group id of every cell; ties are broken uniformly at random
    (remainders compared to 12 decimals).
    """
    cand = np.flatnonzero(remainders > 0)
    if cand.size == 0:
        return
    g = groups[cand]
    order = np.lexsort((rng.random(cand.size), -np.round(remainders[cand], 12), g))
    g_sorted = g[order]
    rank = np.arange(g_sorted.size) - np.searchsorted(g_sorted, g_sorted, side="left")
    chosen = cand[order[rank < deficits[g_sorted]]]
    floors[chosen] += 1


def integralize_rows(values: np.ndarray, targets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Largest-remainder rounding of every row of ``values`` to the integer ``targets`` (paper §IV-E3).

    Each row is first rescaled to sum to its target, then floored; the
    deficit goes to the cells with the largest fractional parts (ties at
    random).  A row with target 0 becomes 0; a row with target > 0 but no
    mass gets its target drawn uniformly over its cells (multinomial).
    Every output row sums exactly to its target, and every cell is within 1
    of the rescaled input.  (``doc/deviations.md``: "Rescaling before
    integralization", "Propagating normalization".)

    Parameters
    ----------
    values : ndarray of shape (n_groups, n_cells), >= 0
    targets : ndarray of int of shape (n_groups,), >= 0
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, same shape as ``values``

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> integralize_rows(np.array([[0.4, 3.3, 1.3], [0.0, 0.0, 0.0]]), np.array([5, 0]), rng).tolist()
    [[1, 3, 1], [0, 0, 0]]
    """
    values = np.asarray(values, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.int64)
    n_groups, n_cells = values.shape
    out = np.zeros(values.shape, dtype=np.int64)
    sums = values.sum(axis=1)
    full = np.flatnonzero((targets > 0) & (sums > 0))
    if full.size:
        scaled = values[full] * (targets[full] / sums[full])[:, None]
        floors = np.floor(scaled)
        remainders = (scaled - floors).ravel()
        floors = floors.astype(np.int64)
        deficits = targets[full] - floors.sum(axis=1)
        flat = floors.ravel()
        _round_groups(flat, remainders, np.repeat(np.arange(full.size), n_cells), deficits, rng)
        out[full] = flat.reshape(full.size, n_cells)
    empty = np.flatnonzero((targets > 0) & ~(sums > 0))
    if empty.size:
        # No partial record carries this group: draw its target uniformly over the cells.
        rows = np.repeat(empty, targets[empty])
        cells = rng.integers(0, n_cells, size=rows.size)
        out += np.bincount(rows * n_cells + cells, minlength=n_groups * n_cells).reshape(out.shape)
    if not np.array_equal(out.sum(axis=1), np.where(targets > 0, targets, 0)):  # pragma: no cover - invariant
        raise RuntimeError("integralization lost records; please report this bug.")
    return out


def integralize(values: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Largest-remainder rounding of a whole table to the integer ``total`` (paper §IV-E3).

    Examples
    --------
    >>> import numpy as np
    >>> integralize(np.array([0.4, 3.3, 1.3]), 5, np.random.default_rng(0)).tolist()
    [1, 3, 1]
    >>> integralize(np.array([0.3, 3.3, 1.3]), 5, np.random.default_rng(0)).tolist()   # rescaled first
    [0, 4, 1]
    """
    values = np.asarray(values, dtype=np.float64)
    return integralize_rows(values.reshape(1, -1), np.array([int(total)]), rng).reshape(values.shape)


# -- consistency-aware normalization ---------------------------------------------------------------------
def concentration(table: np.ndarray, rho: float) -> float:
    """Degree of concentration ``G(v) = Σ_{c: T(c) > ρ} T(c)`` (paper §IV-E3).

    Examples
    --------
    >>> import numpy as np
    >>> concentration(np.array([10.0, 2, 7, 0]), 5.0)
    17.0
    """
    t = np.asarray(table, dtype=np.float64)
    return float(t[t > rho].sum())


def propagate(parent: np.ndarray, parent_view: View, table: np.ndarray, view: View,
              rng: np.random.Generator) -> np.ndarray:
    """Normalize ``table`` conditioned on the integer ``parent`` table (paper §IV-E3).

    With ``A`` the shared attributes, each ``A``-group ``α`` of ``table`` is
    rescaled to the parent's count ``N_parent(A = α)`` and integralized within
    the group, so the result's projection onto ``A`` equals the parent's
    exactly.  This reads the paper's garbled formula (``doc/deviations.md``,
    "Propagating normalization").
    """
    common = tuple(sorted(set(parent_view) & set(view)))
    targets = np.rint(project(parent, parent_view, common)).astype(np.int64).reshape(-1)
    a_axes = [view.index(a) for a in common]
    rest = [j for j in range(len(view)) if j not in a_axes]
    moved = np.transpose(np.maximum(table, 0.0), a_axes + rest)
    rows = integralize_rows(moved.reshape(targets.size, -1), targets, rng)
    return np.transpose(rows.reshape(moved.shape), np.argsort(a_axes + rest))


def normalize(tables: Sequence[np.ndarray], views: Sequence[View], chain: Sequence[int], total: int,
              rhos: Sequence[float], rng: np.random.Generator) -> tuple[dict[int, np.ndarray], int]:
    """Consistency-aware normalization of the chain views to integer tables summing to ``total`` (paper §IV-E3).

    Starts from the chain view with the largest :func:`concentration` (its
    noise threshold ``rhos[i]``; ties: the first in the chain), integralizes
    it to ``total``, then walks outwards along the chain in both directions,
    each view normalized by :func:`propagate` conditioned on its already
    normalized chain neighbour.  Neighbours then agree exactly on their shared
    attributes; other pairs of chain views agree too, as their intersection
    is contained in every view between them (``c_i ∩ c_{i+1} ⊆ b_{i+1}``,
    Type III ``c_{kB-2} ∩ b_kB ⊆ b_{kB-1}``).

    Returns
    -------
    tables : dict view index -> int64 ndarray
    start : int
        The view index normalization started from.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.view.postprocess import normalize, project
    >>> views = [(0, 1), (1, 2)]
    >>> tables = [np.array([[2.2, 0.1], [0.9, 1.1]]), np.array([[1.8, 1.2], [0.3, 0.8]])]
    >>> out, start = normalize(tables, views, [0, 1], 4, [0.5, 0.5], np.random.default_rng(0))
    >>> start, {i: t.tolist() for i, t in out.items()}
    (0, {0: [[2, 0], [1, 1]], 1: [[2, 1], [0, 1]]})
    >>> project(out[0], views[0], (1,)).tolist() == project(out[1], views[1], (1,)).tolist()   # they agree
    True
    """
    scores = [concentration(tables[i], rhos[i]) for i in chain]
    start_pos = int(np.argmax(scores))  # argmax returns the first maximum: the lowest chain index
    out = {chain[start_pos]: integralize(np.maximum(tables[chain[start_pos]], 0.0), total, rng)}
    for pos in range(start_pos - 1, -1, -1):
        parent, child = chain[pos + 1], chain[pos]
        out[child] = propagate(out[parent], views[parent], tables[child], views[child], rng)
    for pos in range(start_pos + 1, len(chain)):
        parent, child = chain[pos - 1], chain[pos]
        out[child] = propagate(out[parent], views[parent], tables[child], views[child], rng)
    return out, chain[start_pos]
