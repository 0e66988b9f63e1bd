"""S5 — synthesis by linking partial records along the view chain (DPView paper §IV-F, §IV-G).

View combination pairs the partial records built so far (left side) with the
partial records of the next view (right side, the normalized integer table
expanded into records) so that paired records agree on the shared
attributes ``A``.  It is a maximum-cardinality bipartite matching problem, and
the graph has a special structure that makes it solvable by grouping instead
of a generic algorithm (Hopcroft–Karp, ``networkx``):

**Grouped construction, and why it is a maximum matching.**  An edge joins a
left and a right record exactly when they have the same ``A``-value ``α``.
The graph is therefore a disjoint union of complete bipartite graphs
``K(L_α, R_α)``, one per ``α``, with ``L_α`` left and ``R_α`` right records.
A matching uses each record once, so it has at most ``min(L_α, R_α)`` edges
inside ``K(L_α, R_α)``, and at most ``Σ_α min(L_α, R_α)`` in total.  Sorting
both sides by ``α`` (randomly within ``α``) and pairing the ``r``-th left with
the ``r``-th right record of every ``α`` for ``r < min(L_α, R_α)`` reaches that
bound, so it is a maximum matching; as the within-``α`` orders are uniformly
random it is a uniformly random one among the maximum matchings that use
those records.  After consistency-aware normalization ``L_α = R_α`` for every
``α``, so the matching is perfect: every record is linked and the output has
exactly as many records as the normalized tables hold.

**DPView+ (upper cross views as reference).**  When ``b_{i+1}`` is linked,
the left records carry ``x`` = their attributes of ``b_i \\ c_i`` and the
right records carry ``β`` = their attributes of ``b_{i+1} \\ c_i``; the upper
cross view ``u_i`` is exactly the pair ``(x, β)``.  The paper shows this use
only by an example (§IV-G; ``doc/deviations.md``, "Upper cross views in
linking").  The reference is used in two grouped matchings:

1. *proposal*: for every left group ``(α, x)`` a plan ``M(α, x, β)`` over the
   candidates ``β`` that the integer reference table ``U`` supports
   (``U(x, β) > 0``) and the right side still offers in ``α``
   (``R(α, β) > 0``) is fitted by iterative proportional fitting to the
   three margins ``L(α, x)``, ``R(α, β)`` and ``U(x, β)`` (starting from
   ``U(x, β)``; weighting each candidate by its remaining copies of ``β``
   times its reference count is the same start up to a factor per
   ``(α, β)``, which IPF's column step removes), then rounded per group
   to ``L(α, x)`` (largest remainder), which gives every left record one
   proposed ``β``;
2. *stage 1*: left records matched to right records with the proposed
   ``(α, β)`` — grouped construction on the key ``(α, β)``;
3. *stage 2*: the records left over on both sides are matched on ``α`` —
   grouped construction again.

Stage 1 matches ``s_α <= min(L_α, R_α)`` records in group ``α``; stage 2 then
matches ``min(L_α − s_α, R_α − s_α) = min(L_α, R_α) − s_α``, so the total is
again ``Σ_α min(L_α, R_α)``: still a maximum matching, now preferring the
pairs the upper view supports.  All steps are vectorised (sorting,
``bincount``, ``searchsorted``); Python loops run only over views and IPF
iterations.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .postprocess import _round_groups, integralize

__all__ = ["expand", "match_equal_keys", "combine", "link"]

View = tuple[int, ...]

#: Upper bound on the (α, x, β) candidates of one DPView+ proposal step; above it
#: that step falls back to plain matching (memory guard, never reached on Adult).
MAX_CANDIDATES = 20_000_000


def expand(table: np.ndarray) -> np.ndarray:
    """Integer table -> its partial records, one row per unit of count (axes = table axes).

    Examples
    --------
    >>> import numpy as np
    >>> expand(np.array([[0, 2], [1, 0]])).tolist()
    [[0, 1], [0, 1], [1, 0]]
    """
    table = np.asarray(table)
    cells = np.repeat(np.arange(table.size), table.ravel())
    return np.column_stack(np.unravel_index(cells, table.shape)) if table.ndim else np.empty((int(table), 0), int)


def _encode(columns: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Mixed-radix code of each row of ``columns`` (0 for no columns)."""
    if columns.shape[1] == 0:
        return np.zeros(columns.shape[0], dtype=np.int64)
    return np.ravel_multi_index(tuple(columns.T), tuple(shape)).astype(np.int64)


def match_equal_keys(left: np.ndarray, right: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A uniformly random maximum matching between items with equal keys (the grouped construction).

    Returns index arrays ``(i, j)``: ``left[i] == right[j]`` pairwise, and for
    every key ``k`` exactly ``min(#left == k, #right == k)`` pairs.

    Examples
    --------
    >>> import numpy as np
    >>> i, j = match_equal_keys(np.array([3, 1, 3, 2]), np.array([3, 3, 1, 5]), np.random.default_rng(0))
    >>> sorted(zip(np.array([3, 1, 3, 2])[i].tolist(), np.array([3, 3, 1, 5])[j].tolist()))
    [(1, 1), (3, 3), (3, 3)]
    """
    left, right = np.asarray(left), np.asarray(right)
    if left.size == 0 or right.size == 0:
        return np.empty(0, np.intp), np.empty(0, np.intp)
    _, codes = np.unique(np.concatenate([left, right]), return_inverse=True)
    codes = codes.astype(np.int64)
    kl, kr = codes[:left.size], codes[left.size:]
    ol = np.lexsort((rng.random(kl.size), kl))
    orr = np.lexsort((rng.random(kr.size), kr))
    sl, sr = kl[ol], kr[orr]
    rank_l = np.arange(sl.size) - np.searchsorted(sl, sl, side="left")
    rank_r = np.arange(sr.size) - np.searchsorted(sr, sr, side="left")
    base = np.int64(max(sl.size, sr.size) + 1)
    _, il, ir = np.intersect1d(sl * base + rank_l, sr * base + rank_r, assume_unique=True, return_indices=True)
    return ol[il], orr[ir]


def _propose(alpha_l, x_l, alpha_r, beta_r, reference: np.ndarray, rng, ipf_iter: int = 10):
    """DPView+ proposal: one ``β`` per left record (``-1``: no supported candidate), see the module docstring."""
    n_x, n_beta = reference.shape
    # Distinct left groups (α, x) and right groups (α, β), with counts.
    lkeys, l_inv, l_cnt = np.unique(alpha_l * n_x + x_l, return_inverse=True, return_counts=True)
    rkeys, r_cnt = np.unique(alpha_r * n_beta + beta_r, return_counts=True)
    l_alpha, l_x = lkeys // n_x, lkeys % n_x
    # Reference support, row by row: U(x, β) > 0.
    sup_x, sup_b = np.nonzero(reference)
    row_start = np.searchsorted(sup_x, np.arange(n_x + 1))
    lo, hi = row_start[l_x], row_start[l_x + 1]
    n_cand = hi - lo
    total = int(n_cand.sum())
    proposal = np.full(alpha_l.size, -1, dtype=np.int64)
    if total == 0 or total > MAX_CANDIDATES:
        return proposal
    # Ragged expansion: every left group with every β of its reference row.
    group = np.repeat(np.arange(lkeys.size), n_cand)
    offset = np.arange(total) - np.repeat(np.cumsum(n_cand) - n_cand, n_cand)
    sup = lo[group] + offset
    beta = sup_b[sup]
    # Keep the β the right side offers in the same α.
    rkey = l_alpha[group] * n_beta + beta
    pos = np.minimum(np.searchsorted(rkeys, rkey), rkeys.size - 1)
    ok = rkeys[pos] == rkey
    group, beta, sup, col = group[ok], beta[ok], sup[ok], pos[ok]
    if group.size == 0:
        return proposal
    ref = reference[sup_x[sup], beta].astype(np.float64)
    plan = ref.copy()
    row_target, col_target = l_cnt.astype(np.float64), r_cnt.astype(np.float64)
    ref_target = reference[sup_x, sup_b].astype(np.float64)
    for _ in range(ipf_iter):  # IPF: reference margin, right margin, then left margin last (exact row sums)
        for idx, target, size in ((sup, ref_target, ref_target.size), (col, col_target, col_target.size),
                                  (group, row_target, row_target.size)):
            current = np.bincount(idx, weights=plan, minlength=size)
            factor = np.divide(target, current, out=np.zeros(size), where=current > 0)
            plan *= factor[idx]
    # Round every left group's plan to its number of records.
    has = np.bincount(group, weights=plan, minlength=lkeys.size) > 0  # rows IPF left with mass
    plan[~has[group]] = 0.0
    floors = np.floor(plan)
    remainders = plan - floors
    floors = floors.astype(np.int64)
    deficits = np.where(has, l_cnt, 0) - np.bincount(group, weights=floors, minlength=lkeys.size).astype(np.int64)
    _round_groups(floors, remainders, group, deficits, rng)
    # Hand the proposals out: left records sorted by group (random within), proposals in group order.
    order = np.lexsort((rng.random(alpha_l.size), l_inv))
    covered = has[l_inv[order]]
    proposal[order[covered]] = np.repeat(beta, floors)
    return proposal


def combine(left: np.ndarray, left_attrs: Sequence[int], table: np.ndarray, view: View, sizes: Sequence[int],
            rng: np.random.Generator, reference: tuple[np.ndarray, View] | None = None
            ) -> tuple[np.ndarray, list[int], int]:
    """View combination: link ``left`` records with the partial records of ``table`` on the shared attributes.

    Parameters
    ----------
    left : ndarray of shape (n, len(left_attrs))
        Partial records built so far (codes).
    left_attrs : sequence of int
        Attribute positions of ``left``'s columns.
    table : ndarray of int
        Normalized integer table of ``view``.
    view : tuple of int
    sizes : sequence of int
        Domain size of every attribute.
    rng : numpy.random.Generator
    reference : (ndarray of int, view), optional
        DPView+: the integer upper-cross-view table used as reference.

    Returns
    -------
    records : ndarray of shape (n_matched, len(attrs))
    attrs : list of int
        ``left_attrs`` followed by the new attributes of ``view``.
    n_unmatched : int
        Left records without a partner (0 whenever the shared-attribute counts agree).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.view.linking import combine
    >>> left = np.array([[0, 0], [0, 0], [1, 1]])   # records on attributes (0, 1)
    >>> table = np.array([[1, 1], [0, 1]])          # view (1, 2): two records with attribute 1 = 0, one with 1
    >>> records, attrs, lost = combine(left, [0, 1], table, (1, 2), [2, 2, 2], np.random.default_rng(0))
    >>> sorted(map(tuple, records.tolist())), attrs, lost
    ([(0, 0, 0), (0, 0, 1), (1, 1, 1)], [0, 1, 2], 0)
    >>> records, attrs, lost = combine(left, [0, 1], np.array([[1, 0], [1, 1]]), (1, 2), [2, 2, 2],
    ...                                np.random.default_rng(0))   # one right record with attribute 1 = 0
    >>> sorted(map(tuple, records.tolist())), lost
    ([(0, 0, 0), (1, 1, 0)], 1)
    """
    left_attrs = list(left_attrs)
    common = [a for a in view if a in left_attrs]
    new = [a for a in view if a not in left_attrs]
    right = expand(table)
    shape_a = [sizes[a] for a in common]
    alpha_l = _encode(left[:, [left_attrs.index(a) for a in common]], shape_a)
    alpha_r = _encode(right[:, [view.index(a) for a in common]], shape_a)
    li_parts, ri_parts = [], []
    free_l = np.ones(left.shape[0], dtype=bool)
    free_r = np.ones(right.shape[0], dtype=bool)
    if reference is not None:
        ref_table, ref_view = reference
        xs = [a for a in ref_view if a in left_attrs]
        bs = [a for a in ref_view if a in new]
        if sorted(xs + bs) != sorted(ref_view):
            raise ValueError("The reference view must split into attributes of the left records and new attributes.")
        moved = np.transpose(ref_table, [ref_view.index(a) for a in xs + bs])
        ref2d = moved.reshape(int(np.prod([sizes[a] for a in xs])), -1)
        x_l = _encode(left[:, [left_attrs.index(a) for a in xs]], [sizes[a] for a in xs])
        beta_r = _encode(right[:, [view.index(a) for a in bs]], [sizes[a] for a in bs])
        proposal = _propose(alpha_l, x_l, alpha_r, beta_r, ref2d, rng)
        has = np.flatnonzero(proposal >= 0)
        n_beta = ref2d.shape[1]
        i, j = match_equal_keys(alpha_l[has] * n_beta + proposal[has], alpha_r * n_beta + beta_r, rng)
        li_parts.append(has[i])
        ri_parts.append(j)
        free_l[has[i]] = False
        free_r[j] = False
    rest_l, rest_r = np.flatnonzero(free_l), np.flatnonzero(free_r)
    i, j = match_equal_keys(alpha_l[rest_l], alpha_r[rest_r], rng)
    li = np.concatenate(li_parts + [rest_l[i]])
    ri = np.concatenate(ri_parts + [rest_r[j]])
    records = np.column_stack([left[li], right[ri][:, [view.index(a) for a in new]]])
    return records, left_attrs + new, int(left.shape[0] - li.size)


def link(tables: Mapping[int, np.ndarray], views: Sequence[View], chain: Sequence[int], sizes: Sequence[int],
         rng: np.random.Generator, references: Mapping[int, tuple[np.ndarray, View]] | None = None
         ) -> tuple[np.ndarray, int]:
    """Link the normalized chain views ``b_1 → c_1 → b_2 → …`` into full records (paper §IV-F).

    Parameters
    ----------
    tables : mapping view index -> int ndarray
        Normalized integer tables of the chain views.
    views : sequence of tuple of int
    chain : sequence of int
        View indices in linking order.
    sizes : sequence of int
        Domain size of every attribute.
    rng : numpy.random.Generator
    references : mapping view index -> (int ndarray, view), optional
        DPView+: for the base view ``b_{i+1}``, the integer table of ``u_i``.

    Returns
    -------
    codes : ndarray of shape (n, len(sizes))
        Records in random order, columns in attribute-position order.
    n_unmatched : int
        Records dropped for lack of a partner (0 after consistency-aware normalization).

    Examples
    --------
    >>> import numpy as np
    >>> b1 = np.array([[2, 0], [1, 1]])          # attributes (0, 1)
    >>> b2 = np.array([[1, 2], [0, 1]])          # attributes (1, 2): agrees with b1 on attribute 1
    >>> codes, lost = link({0: b1, 1: b2}, [(0, 1), (1, 2)], [0, 1], [2, 2, 2], np.random.default_rng(0))
    >>> codes.shape, lost
    ((4, 3), 0)
    """
    references = references or {}
    first = chain[0]
    records, attrs = expand(tables[first]), list(views[first])
    lost = 0
    for idx in chain[1:]:
        records, attrs, n_lost = combine(records, attrs, tables[idx], views[idx], sizes, rng, references.get(idx))
        lost += n_lost
    missing = set(range(len(sizes))) - set(attrs)
    if missing:
        raise ValueError(f"The chain does not cover the attributes {sorted(missing)}.")
    out = np.empty((records.shape[0], len(sizes)), dtype=np.intp)
    out[:, attrs] = records
    return out[rng.permutation(out.shape[0])], lost


def integer_reference(table: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """The upper view's post-processed table rounded to ``total`` reference partial records (largest remainder)."""
    return integralize(np.maximum(table, 0.0), total, rng)
