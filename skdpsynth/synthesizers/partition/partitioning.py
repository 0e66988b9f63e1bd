"""Partition algorithms of PPSyn (§4.2.2, Algorithms 3 and 4): pure NumPy, arrays in, arrays out.

A marginal ``q`` (any real array; cells in C order) is split into disjoint groups of cells.  Noise added to
each group *sum* and spread uniformly over the group (:func:`uniform_estimate`) costs the *reconstruction
error* ``RE(P) = Σ_I Σ_{i∈I} |q_i − q(I)/|I||`` plus an expected noise error ``|P| / √(πρ)``; asking for a total
of ``η·Contr`` gives the budget of Algorithms 3 and 4 (Eq. (8)),

    ``ρ(P) = |P|² / (π (η·Contr − RE(P))²)``, and ``+∞`` when ``Contr ≤ 0`` or ``RE(P) ≥ η·Contr``.

* Algorithm 3 (1-way marginals): sort the cells by count (stable), then greedily merge the adjacent pair of
  groups (in sorted order) with the smallest increase of RE — :func:`merge_sequence`.
* Algorithm 4 (multi-way marginals): start from the whole grid and split one axis-aligned rectangle in two at a
  time, round-robin over the axes — :func:`split_sequence`.

Both are computed once *without* a stopping rule (the paper's "Skill to improve efficiency", §4.2.2) as a
:class:`PartitionSequence`; the paper's termination rule is then :meth:`PartitionSequence.stop` for any
``(η, Contr)``.  :func:`partition` is a direct transcription of the pseudo-code of Algorithms 3 and 4 with the
rule inside the loop, kept as the reference the sequences are tested against.

Rounding: RE values computed along different routes differ in the last bits, so two comparisons use a
tolerance.  Merge errors, cut reductions and rectangle REs within ``1e-10·Σ|q|`` of the best one are *ties*
(broken by fixed rules: smallest position, smaller cut, earliest rectangle; doc/deviations.md, "Merge error"
and "Choosing the rectangle to split"), and a budget counts as an increase only when it exceeds the previous one
by more than a relative ``1e-9`` (exact ties keep going, as the paper's strict ``>`` says).

Nothing here touches data or privacy accounting: the caller decides whether ``q`` is a private marginal or a
public model marginal.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

__all__ = [
    "PartitionSequence",
    "aggregation_matrix",
    "captured_contribution",
    "group_errors",
    "group_sum_statistic",
    "merge_sequence",
    "partition",
    "partition_sequence",
    "reconstruction_error",
    "required_rho",
    "split_sequence",
    "strict_utility",
    "uniform_estimate",
]

_TIE_RTOL = 1e-10   # ties among merge errors / cut reductions / rectangle REs, relative to Σ|q|
_RHO_RTOL = 1e-9    # a budget "increases" only beyond this relative margin
_CHUNK = 1 << 22    # max elements of the (cuts × extent × rest) temporary of one vectorised cut evaluation
_SPLIT_RULES = ("max_re_interval", "global")
_STOP_RULES = ("first_increase", "global_min")


# ------------------------------------------------------------------------------------------------ basic formulas
def required_rho(n_groups: npt.ArrayLike, reconstruction_error: npt.ArrayLike, eta: npt.ArrayLike,
                 contribution: npt.ArrayLike) -> float | np.ndarray:
    """Smallest zCDP budget with ``RE + E[noise L1 error] = η·Contr`` (Eq. (8), Algorithm 3 line 9).

    ``ρ = k² / (π (η·C − RE)²)``; ``+∞`` when ``C ≤ 0`` or ``RE ≥ η·C`` and for NaN inputs (doc/deviations.md,
    "Infeasible budgets are infinite").

    Parameters
    ----------
    n_groups : int or array_like
        Number of groups ``k = |P|``.
    reconstruction_error : float or array_like
        ``RE(P)``.
    eta : float or array_like
        Error impact ``η``.
    contribution : float or array_like
        ``Contr``.  All four arguments broadcast against each other.

    Returns
    -------
    float or ndarray
        A float when every argument is a scalar, else an array of the broadcast shape.

    Examples
    --------
    >>> import numpy as np
    >>> float(required_rho(3, 4.0, 0.7, 40.0)) == 9 / (np.pi * 24.0 ** 2)
    True
    >>> required_rho([2, 3], [30.5, 4.0], 0.7, 40.0)
    array([       inf, 0.00497359])
    """
    k, re, eta_, c = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in
                                           (n_groups, reconstruction_error, eta, contribution)))
    gap = eta_ * c - re
    ok = (c > 0) & (gap > 0)        # False for NaN as well
    out = np.full(k.shape, np.inf)
    out[ok] = k[ok] ** 2 / (np.pi * gap[ok] ** 2)
    return float(out) if out.ndim == 0 else out


def group_errors(q: npt.ArrayLike, labels: npt.ArrayLike, n_groups: int) -> np.ndarray:
    """Per-group reconstruction error ``RE(I) = Σ_{i∈I} |q_i − q(I)/|I||`` (a group's term of Eq. (7)'s RE).

    Parameters
    ----------
    q : array_like
        The marginal (any shape; flattened in C order).
    labels : array_like of int
        Group id ``0..n_groups-1`` of every cell, flat, C order.
    n_groups : int
        Number of groups (empty groups get error 0).

    Returns
    -------
    ndarray of shape (n_groups,)

    Examples
    --------
    >>> group_errors([0, 1, 1, 2, 10, 11, 12, 30], [0, 0, 0, 0, 1, 1, 1, 2], 3)
    array([2., 2., 0.])
    """
    q = np.asarray(q, dtype=np.float64).ravel()
    labels = np.asarray(labels, dtype=np.int64).ravel()
    if labels.shape != q.shape:
        raise ValueError(f"labels has {labels.size} entries for {q.size} cells.")
    counts = np.bincount(labels, minlength=n_groups)
    sums = np.bincount(labels, weights=q, minlength=n_groups)
    means = np.divide(sums, counts, out=np.zeros(n_groups), where=counts > 0)
    return np.bincount(labels, weights=np.abs(q - means[labels]), minlength=n_groups)


def reconstruction_error(q: npt.ArrayLike, labels: npt.ArrayLike, n_groups: int) -> float:
    """``RE(P) = ‖q − M(P)‖₁``: the sum of :func:`group_errors`.

    Examples
    --------
    >>> reconstruction_error([0, 1, 1, 2, 10, 11, 12, 30], [0, 0, 0, 0, 1, 1, 1, 2], 3)
    4.0
    """
    return float(group_errors(q, labels, n_groups).sum())


def strict_utility(sizes: npt.ArrayLike, errors: npt.ArrayLike, eta: float,
                   contribution: npt.ArrayLike) -> float | np.ndarray:
    """Strict mode's efficiency utility ``u = max_t max(η·C − r_t, 0) / k_t^{2/3}`` over a partition sequence
    (doc/partition.md, "The two privacy modes").

    Every term is ``η / k_t^{2/3}``-Lipschitz in ``C`` with ``k_t ≥ 1``, so ``|u(C) − u(C')| ≤ η |C − C'|``:
    the sensitivity of ``u`` in a sensitivity-1 contribution is ``η``.

    Parameters
    ----------
    sizes, errors : array_like
        ``k_t`` and ``r_t`` of the sequence (e.g. ``seq.sizes``, ``seq.errors``).
    eta : float
    contribution : float or array_like
        ``C``; an array gives one utility per entry.

    Examples
    --------
    >>> seq = merge_sequence([0, 1, 1, 2, 10, 11, 12, 30])
    >>> round(strict_utility(seq.sizes, seq.errors, 0.7, 40.0), 6)
    11.537997
    """
    k = np.asarray(sizes, dtype=np.float64).ravel()
    r = np.asarray(errors, dtype=np.float64).ravel()
    if k.shape != r.shape or k.size == 0:
        raise ValueError("sizes and errors must be non-empty and of equal length.")
    c = np.asarray(contribution, dtype=np.float64)
    terms = np.maximum(eta * c[..., None] - r, 0.0) / k ** (2.0 / 3.0)
    u = terms.max(axis=-1)
    return float(u) if u.ndim == 0 else u


def aggregation_matrix(labels: npt.ArrayLike, n_groups: int) -> sp.csr_matrix:
    """The ``(n_groups × n_cells)`` 0/1 matrix ``A_P`` summing the cells of each group (doc/deviations.md,
    "Group sums as linear queries").

    Examples
    --------
    >>> aggregation_matrix([0, 0, 1], 2).toarray()
    array([[1., 1., 0.],
           [0., 0., 1.]])
    """
    labels = np.asarray(labels, dtype=np.int64).ravel()
    n = labels.size
    return sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(n_groups, n))


def uniform_estimate(labels: npt.ArrayLike, group_values: npt.ArrayLike) -> np.ndarray:
    """``Est`` of Algorithm 1, line 8 (Definition 9): every cell gets its group's value divided by the group's size.

    Examples
    --------
    >>> uniform_estimate([0, 0, 1], [4.0, 3.0])
    array([2., 2., 3.])
    """
    labels = np.asarray(labels, dtype=np.int64).ravel()
    y = np.asarray(group_values, dtype=np.float64).ravel()
    counts = np.bincount(labels, minlength=y.size)
    if counts.size > y.size:
        raise ValueError(f"labels refer to {counts.size} groups, got {y.size} group values.")
    return y[labels] / counts[labels]


# ------------------------------------------------------------------------------------------------------ helpers
def _as_marginal(q: npt.ArrayLike) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    if q.ndim < 1 or q.size == 0:
        raise ValueError(f"a marginal must be a non-empty array with at least one axis, got shape {q.shape}.")
    if not np.all(np.isfinite(q)):
        raise ValueError("the marginal contains non-finite values.")
    return q


def _tie_tol(q: np.ndarray) -> float:
    return _TIE_RTOL * float(np.abs(q).sum())


def _first_min(values: np.ndarray, tol: float) -> int:
    """First index whose value is within ``tol`` of the minimum."""
    return int(np.argmax(values <= values.min() + tol))


def _first_max(values: np.ndarray, tol: float) -> int:
    """First index whose value is within ``tol`` of the maximum."""
    return int(np.argmax(values >= values.max() - tol))


def _increases(new: npt.ArrayLike, old: npt.ArrayLike) -> np.ndarray:
    """``new > old`` beyond rounding (``inf > finite`` is an increase, ``x > inf`` never)."""
    return np.asarray(new) > np.asarray(old) * (1.0 + _RHO_RTOL)


def _argmin_rho(rho: np.ndarray) -> int:
    """First step whose budget equals the minimum up to rounding (0 when all are infinite)."""
    return int(np.argmax(rho <= rho.min() * (1.0 + _RHO_RTOL)))


def _re(x: np.ndarray) -> float:
    """RE of one group given as an array of its values."""
    return float(np.abs(x - x.mean()).sum())


def _box(lo: np.ndarray, hi: np.ndarray) -> tuple[slice, ...]:
    return tuple(slice(int(a), int(b)) for a, b in zip(lo, hi))


def _check_rule(rule: str, allowed: tuple[str, ...], name: str) -> None:
    if rule not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {rule!r}.")


class _Sum:
    """Running sum with Neumaier compensation (errors of a split sequence are updated, not re-summed)."""

    __slots__ = ("s", "c")

    def __init__(self, value: float):
        self.s, self.c = float(value), 0.0

    def add(self, x: float) -> None:
        t = self.s + x
        self.c += (self.s - t) + x if abs(self.s) >= abs(x) else (x - t) + self.s
        self.s = t

    @property
    def value(self) -> float:
        return self.s + self.c


# -------------------------------------------------------------------------------------------------- the sequence
@dataclass(frozen=True, eq=False)
class PartitionSequence:
    """The merge (1-way, Alg. 3) or split (multi-way, Alg. 4) sequence of a marginal, run WITHOUT a stopping
    rule (the paper's "Skill to improve efficiency", §4.2.2): step ``t`` has ``sizes[t] = |P_t|`` groups and
    ``errors[t] = RE(P_t)``.

    Build it with :func:`merge_sequence`, :func:`split_sequence` or :func:`partition_sequence`; the paper's
    termination for a given ``(η, Contr)`` is :meth:`stop`, the partition at a step is :meth:`labels`.

    Attributes
    ----------
    shape : tuple of int
        The marginal's shape.
    kind : {"merge", "split"}
    sizes : ndarray of int64
        ``k_t`` for ``t = 0 .. len-1`` (merge: ``n, n-1, …, 1``; split: ``1, 2, …``).
    errors : ndarray of float64
        ``RE_t``.  Nothing assumes it monotone: RE measures deviations from the group *mean* (not the median),
        so a MergeError can be negative and a best cut on the forced axis can raise RE (e.g. the first split
        of ``[[4, 4, 0], [4, 3, 9]]`` takes RE from 10 to 12.67).

    Examples
    --------
    >>> seq = merge_sequence([0, 1, 1, 2, 10, 11, 12, 30])
    >>> seq.sizes.tolist(), seq.errors[:4].tolist()
    ([8, 7, 6, 5, 4, 3, 2, 1], [0.0, 0.0, 1.0, 2.0])
    >>> t = seq.stop(0.7, 40.0)
    >>> int(seq.sizes[t]), float(seq.errors[t]), seq.labels(t).tolist()
    (3, 4.0, [0, 0, 0, 0, 1, 1, 1, 2])
    """

    shape: tuple[int, ...]
    kind: str
    sizes: np.ndarray
    errors: np.ndarray
    # merge: the stable sort order and, per step, the sorted position where the absorbed group started.
    _order: np.ndarray | None = field(default=None, repr=False)
    _cuts: np.ndarray | None = field(default=None, repr=False)
    # split: every rectangle ever created ([lo, hi) per axis, creation order), the step it appears and the step
    # it is split (len(self) when never), and per step the (rectangle, axis, cut) operation.
    _lo: np.ndarray | None = field(default=None, repr=False)
    _hi: np.ndarray | None = field(default=None, repr=False)
    _born: np.ndarray | None = field(default=None, repr=False)
    _died: np.ndarray | None = field(default=None, repr=False)
    _ops: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("sizes", "errors", "_order", "_cuts", "_lo", "_hi", "_born", "_died", "_ops"):
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    def __len__(self) -> int:
        return int(self.sizes.size)

    @property
    def operations(self) -> np.ndarray:
        """Split sequences: ``(rectangle id, axis, cut)`` of each step (rectangle ids in creation order).

        Merge sequences: the sorted position at which the absorbed group started, one per step.
        """
        return self._ops if self.kind == "split" else self._cuts

    def _step(self, t: int) -> int:
        t = int(t)
        if t < 0:
            t += len(self)
        if not 0 <= t < len(self):
            raise IndexError(f"step {t} out of range for a sequence of length {len(self)}.")
        return t

    def labels(self, t: int) -> np.ndarray:
        """Group id (``0 .. sizes[t]-1``) of every cell after ``t`` steps, flat, C order over :attr:`shape`.

        Merge sequences number the groups in ascending count order (group 0 holds the smallest counts); split
        sequences number the rectangles by their first cell in C order.
        """
        t = self._step(t)
        n = int(np.prod(self.shape))
        if self.kind == "merge":
            is_start = np.ones(n, dtype=bool)
            is_start[self._cuts[:t]] = False
            out = np.empty(n, dtype=np.int64)
            out[self._order] = np.cumsum(is_start) - 1
            return out
        live = np.flatnonzero((self._born <= t) & (self._died > t))
        first_cell = np.ravel_multi_index(tuple(self._lo[live].T), self.shape)
        grid = np.empty(self.shape, dtype=np.int64)
        for g, r in enumerate(live[np.argsort(first_cell)]):   # one slice assignment per rectangle
            grid[_box(self._lo[r], self._hi[r])] = g
        return grid.ravel()

    def rho(self, eta: float, contribution: float) -> np.ndarray:
        """:func:`required_rho` at every step."""
        return np.asarray(required_rho(self.sizes, self.errors, eta, contribution), dtype=np.float64)

    def stop(self, eta: float, contribution: float, rule: str = "first_increase") -> int:
        """The termination step ``t*`` for ``(η, Contr)`` (Algorithm 3, lines 10–12; Algorithm 4, 15–20).

        * ``"first_increase"`` (paper): merge — the first ``t`` with ``ρ_{t+1} > ρ_t``; split — the first ``t``
          with ``RE_{t+1} < η·C`` and ``ρ_{t+1} > ρ_t`` (``ρ_t = +∞`` while ``RE_t ≥ η·C``); the last step when
          there is no such ``t``.
        * ``"global_min"``: the first ``t`` minimising ``ρ_t``.

        When every ``ρ_t`` is infinite (``η·C ≤ 0``, or a capped split sequence that never gets below
        ``η·C``) the answer is 0 and ``rho(...)[0]`` is ``inf``.
        """
        _check_rule(rule, _STOP_RULES, "rule")
        rho = self.rho(eta, contribution)
        if not np.isfinite(rho).any():
            return 0
        if rule == "global_min":
            return _argmin_rho(rho)
        stops = _increases(rho[1:], rho[:-1])
        if self.kind == "split":
            stops &= np.isfinite(rho[1:])
        hits = np.flatnonzero(stops)
        return int(hits[0]) if hits.size else len(self) - 1


def captured_contribution(seq: PartitionSequence, residual: npt.ArrayLike, steps: npt.ArrayLike) -> np.ndarray:
    """``G_t = Σ_{I ∈ P_t} |Σ_{i ∈ I} d_i|``: the part of a deviation ``d`` that the group sums of ``P_t`` can see.

    With ``d = M_w(D) − M_w(p̂)`` this is the contribution a measurement of ``P_t``'s group sums can correct:
    ``G_t ≤ ‖d‖₁ = Contr``, with equality for single cells, and ``G_0 = |Σ d|`` for one group.  Each ``G_t`` has
    sensitivity 1 in the data under add/remove (one record moves one group sum by one).

    Parameters
    ----------
    seq : PartitionSequence
    residual : array_like
        ``d``, shaped like ``seq.shape`` (or flat in C order).
    steps : array_like of int
        The steps ``t`` to evaluate.

    Examples
    --------
    >>> seq = split_sequence([[4.0, 4.0, 0.0], [4.0, 3.0, 9.0]])
    >>> d = [[1.0, -1.0, 0.0], [2.0, 0.0, -2.0]]
    >>> captured_contribution(seq, d, range(len(seq))).tolist()
    [0.0, 0.0, 4.0, 4.0, 4.0, 6.0]
    """
    return group_sum_statistic(seq, residual, steps, np.abs)


def group_sum_statistic(seq: PartitionSequence, values: npt.ArrayLike, steps: npt.ArrayLike,
                        statistic=np.abs) -> np.ndarray:
    """``Σ_{I ∈ P_t} f(Σ_{i ∈ I} x_i)`` at every requested step: a function of the group sums, summed over groups.

    ``f = abs`` gives :func:`captured_contribution`.  ``values`` may carry leading axes (several arrays over the
    same cells, e.g. a deviation and the shares it was computed from); the result then has those axes first.

    Examples
    --------
    >>> import numpy as np
    >>> seq = split_sequence([[4.0, 4.0, 0.0], [4.0, 3.0, 9.0]])
    >>> share = np.array([[0.25, 0.25, 0.0], [0.25, 0.125, 0.125]])
    >>> group_sum_statistic(seq, share, [0, 1], np.square).tolist()   # Σ_I p_I²: 1 group, then 2
    [1.0, 0.5]
    """
    steps = np.asarray([seq._step(t) for t in np.atleast_1d(steps)], dtype=np.int64)
    x = np.asarray(values, dtype=np.float64)
    lead = x.shape[:x.ndim - len(seq.shape)] if x.shape[x.ndim - len(seq.shape):] == tuple(seq.shape) else ()
    x = x.reshape(lead + tuple(seq.shape))
    if seq.kind == "merge":
        flat = x.reshape(lead + (-1,))
        out = np.empty(lead + (steps.size,))
        rows = flat.reshape(-1, flat.shape[-1])
        for j, t in enumerate(steps):   # one bincount per requested step (a handful, 1-way marginals)
            labels = seq.labels(int(t))
            k = int(labels.max()) + 1
            sums = np.stack([np.bincount(labels, weights=row, minlength=k) for row in rows]).reshape(lead + (k,))
            out[..., j] = statistic(sums).sum(axis=-1)
        return out
    # Every rectangle's sum from a zero-padded summed-area table (inclusion-exclusion over its 2^ndim corners).
    ndim = len(seq.shape)
    table = np.zeros(lead + tuple(n + 1 for n in seq.shape))
    table[(Ellipsis,) + (slice(1, None),) * ndim] = x
    for axis in range(len(lead), x.ndim):
        table = np.cumsum(table, axis=axis)
    sums = np.zeros(lead + (len(seq._lo),))
    for corner in np.ndindex(*(2,) * ndim):
        index = tuple(seq._hi[:, a] if corner[a] else seq._lo[:, a] for a in range(ndim))
        sums += (-1) ** (ndim - sum(corner)) * table[(Ellipsis,) + index]
    live = (seq._born[None, :] <= steps[:, None]) & (seq._died[None, :] > steps[:, None])
    return np.moveaxis(live.astype(np.float64) @ np.moveaxis(statistic(sums), -1, 0), 0, -1)


# ------------------------------------------------------------------------------------------ Algorithm 3 sequence
def merge_sequence(q: npt.ArrayLike) -> PartitionSequence:
    """Algorithm 3 without stopping rule on a 1-D marginal.

    Cells are sorted by count (stable: ties keep the smaller cell index first); groups are runs of adjacent
    cells in that order; each step merges the adjacent pair with the smallest ``MergeError``
    ``Δ_u = RE(I_u ∪ I_{u+1}) − RE(I_u) − RE(I_{u+1})`` (ties → smallest ``u``), until one group is left
    (doc/deviations.md, "Merge error").

    Cost: ``O(n^1.5)`` NumPy work, in C (:class:`_FirstMin` finds the pair); a group's RE is summed
    directly up to :data:`_DIRECT_CELLS` cells and from prefix sums of the sorted counts beyond
    (:class:`_SortedRE`), and ``errors`` is a running sum on marginals of more cells than that (a 1,000,000-value
    column takes seconds where re-summing every step took hours).

    Parameters
    ----------
    q : array_like, 1-D
        The marginal's counts.

    Returns
    -------
    PartitionSequence
        ``kind="merge"``, ``len == n``, ``sizes[t] = n − t``, ``errors[0] = 0``.

    Examples
    --------
    >>> seq = merge_sequence([0, 1, 1, 2, 10, 11, 12, 30])
    >>> seq.errors.round(4).tolist()
    [0.0, 0.0, 1.0, 2.0, 3.3333, 4.0, 30.5, 59.0]
    >>> seq.labels(2).tolist()   # {1,2} then {4,5} merged first
    [0, 1, 1, 2, 3, 3, 4, 5]
    """
    q = _as_marginal(q)
    if q.ndim != 1:
        raise ValueError(f"merge_sequence needs a 1-D marginal, got shape {q.shape}; use split_sequence.")
    n = q.size
    order = np.argsort(q, kind="stable")
    v = q[order]
    re = _SortedRE(v)
    # Groups are indexed by the sorted position of their first cell p; end[p] is one past their last cell.
    end = np.arange(1, n + 1)
    prev = np.arange(-1, n - 1)
    gre = np.zeros(n)                       # RE of the live groups (0 at dead positions)
    union = np.full(n, np.inf)              # RE of group p united with its successor
    union[:-1] = np.diff(v)                 # two sorted cells a ≤ b: RE = b − a
    delta = _FirstMin(union - gre - np.append(gre[1:], 0.0), _tie_tol(q))  # merge error of (p, successor)
    cuts = np.empty(max(n - 1, 0), dtype=np.int64)
    errors = np.zeros(n)
    running = _Sum(0.0) if n > _DIRECT_CELLS else None
    for t in range(1, n):
        c = delta.first()
        nxt = int(end[c])                   # the absorbed group starts here
        new_end = int(end[nxt])
        merged = union[c] - gre[c] - gre[nxt]
        gre[c], gre[nxt] = union[c], 0.0
        end[c] = new_end
        delta[nxt] = union[nxt] = np.inf
        if new_end < n:
            prev[new_end] = c
            union[c] = re(c, int(end[new_end]))
            delta[c] = union[c] - gre[c] - gre[new_end]
        else:
            delta[c] = union[c] = np.inf
        p = int(prev[c])
        if p >= 0:
            union[p] = re(p, new_end)
            delta[p] = union[p] - gre[p] - gre[c]
        cuts[t - 1] = nxt
        if running is None:
            errors[t] = gre.sum()
        else:
            running.add(merged)
            errors[t] = running.value
    return PartitionSequence(shape=q.shape, kind="merge", sizes=np.arange(n, 0, -1, dtype=np.int64),
                             errors=errors, _order=order.astype(np.int64), _cuts=cuts)


#: Groups (and 1-D marginals) of at most this many cells have their RE (and the sequence its errors) summed
#: directly, bit for bit as before; larger ones use prefix and running sums, ``O(log n)`` a step.
_DIRECT_CELLS = 4096


class _SortedRE:
    """RE of a run ``v[a:b]`` of sorted counts: ``Σ |v_i − mean|``, directly for short runs, else from prefix
    sums split where the run crosses its mean (the values below it add ``mean − v_i``, those above ``v_i −
    mean``); prefix sums carry an error of a few ulps of ``Σ|v|``, far below the tie tolerance."""

    def __init__(self, v: np.ndarray):
        self.v = v
        self.prefix = np.concatenate([[0.0], np.cumsum(v)]) if v.size > _DIRECT_CELLS else None

    def __call__(self, a: int, b: int) -> float:
        if self.prefix is None or b - a <= _DIRECT_CELLS:
            return _re(self.v[a:b])
        s = self.prefix
        mean = (s[b] - s[a]) / (b - a)
        k = a + int(np.searchsorted(self.v[a:b], mean))
        return float(max(mean * (k - a) - (s[k] - s[a]) + (s[b] - s[k]) - mean * (b - k), 0.0))


class _FirstMin:
    """The merge errors of the live pairs, for :func:`merge_sequence`: the first position whose error is within
    ``tol`` of the smallest (what ``_first_min`` finds by a scan of all of them), from the minima of blocks of
    about ``sqrt(n)`` positions: the first block whose minimum is within ``tol`` of theirs holds that position,
    and a change re-reads one block. ``O(sqrt n)`` NumPy work a step instead of ``O(n)``, same choice."""

    def __init__(self, errors: np.ndarray, tol: float):
        n = errors.size
        self.tol = tol
        self.width = max(64, math.isqrt(n))
        n_blocks = -(-n // self.width)
        self.values = np.full(n_blocks * self.width, np.inf)
        self.values[:n] = errors
        self.minima = self.values.reshape(n_blocks, self.width).min(axis=1)

    def __setitem__(self, i: int, error: float) -> None:
        self.values[i] = error
        b = i // self.width
        self.minima[b] = self.values[b * self.width:(b + 1) * self.width].min()

    def first(self) -> int:
        limit = self.minima.min() + self.tol
        b = int(np.argmax(self.minima <= limit))
        block = self.values[b * self.width:(b + 1) * self.width]
        return b * self.width + int(np.argmax(block <= limit))


# ------------------------------------------------------------------------------------------ Algorithm 4 sequence
def _cut_profile(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RE of the two parts of a block for every cut along its first axis.

    ``x`` is the block viewed as ``(extent, rest)`` (the cut axis first).  Returns ``(re_low, re_high)`` of
    length ``extent − 1``: entry ``j`` cuts before slab ``j + 1``.  For every cut, the deviation of every slab
    from the mean of the part it falls in is computed at once (an ``O(extent² · rest)`` broadcast, chunked over
    cuts only for very large blocks).
    """
    e, r = x.shape
    if e == 2:
        dev = np.abs(x - x.sum(axis=1, keepdims=True) / r).sum(axis=1)
        return dev[:1], dev[1:]
    rows = x.sum(axis=1)
    s = np.arange(1, e)
    mu_low = np.cumsum(rows)[:-1] / (s * r)                     # mean of slabs < s
    mu_high = np.cumsum(rows[::-1])[::-1][1:] / ((e - s) * r)   # mean of slabs ≥ s
    below = np.arange(e)[None, :] < s[:, None]                   # (cuts, e): slab in the low part
    mu = np.where(below, mu_low[:, None], mu_high[:, None])      # mean applying to each slab
    step = max(1, _CHUNK // (e * r))
    if step >= e - 1:
        dev = np.abs(x[None, :, :] - mu[:, :, None]).sum(axis=2)
    else:
        dev = np.concatenate([np.abs(x[None, :, :] - mu[j:j + step, :, None]).sum(axis=2)
                              for j in range(0, e - 1, step)])
    re_low = np.where(below, dev, 0.0).sum(axis=1)
    return re_low, dev.sum(axis=1) - re_low


def split_sequence(q: npt.ArrayLike, *, split_rule: str = "max_re_interval",
                   max_steps: int | None = None) -> PartitionSequence:
    """Algorithm 4 without stopping rule on a d-dimensional marginal.

    Start with the whole grid as one rectangle.  At round ``t`` the axis is ``a = t mod d``:

    * ``split_rule="max_re_interval"`` (default): the highest-RE rectangle among those with extent ≥ 2 on
      ``a`` (ties → earliest created) is cut at the position maximising the RE reduction (ties → smaller cut);
    * ``split_rule="global"``: the best (rectangle, cut) over all rectangles splittable on ``a`` (ties →
      smaller cut, then earlier rectangle).

    A round where no rectangle is splittable on ``a`` adds no step (doc/deviations.md, "Choosing the rectangle
    to split").  Each accepted split adds one group; the sequence ends when every rectangle is a single cell or
    after ``max_steps`` splits.  A split replaces its rectangle by the low part then the high part, in this
    creation order.

    The reductions of all cuts of a rectangle along an axis are computed in one vectorised pass and cached
    with the rectangle's RE, so a step only evaluates rectangles never evaluated on that axis (with the default
    rule, at most one).

    Parameters
    ----------
    q : array_like
        The marginal, one axis per attribute (1-D works too).
    split_rule : {"max_re_interval", "global"}
    max_steps : int or None
        Cap on the number of splits (``len(result) ≤ max_steps + 1``); a capped sequence is a prefix of the
        uncapped one.

    Returns
    -------
    PartitionSequence
        ``kind="split"``, ``sizes[t] = t + 1``.

    Examples
    --------
    >>> import numpy as np
    >>> q = np.array([[50, 50, 0, 0], [50, 50, 0, 0], [0, 0, 5, 5], [0, 0, 5, 5]])
    >>> seq = split_sequence(q, max_steps=3)
    >>> seq.errors.tolist()
    [290.0, 220.0, 20.0, 20.0]
    >>> seq.labels(2).reshape(4, 4)
    array([[0, 0, 1, 1],
           [0, 0, 1, 1],
           [2, 2, 2, 2],
           [2, 2, 2, 2]])
    """
    _check_rule(split_rule, _SPLIT_RULES, "split_rule")
    q = _as_marginal(q)
    if max_steps is not None and (int(max_steps) != max_steps or max_steps < 0):
        raise ValueError(f"max_steps must be a non-negative integer or None, got {max_steps!r}.")
    shape, d, n_cells = q.shape, q.ndim, q.size
    limit = n_cells - 1 if max_steps is None else min(int(max_steps), n_cells - 1)
    rects = _Rectangles(q, limit, split_rule == "global")
    re = rects.re
    ops = np.empty((limit, 3), dtype=np.int64)
    errors = np.empty(limit + 1)
    errors[0] = re[0]
    total = _Sum(re[0])
    n_positive = int(re[0] > 0)
    steps, t, idle = 0, 0, 0
    while steps < limit:
        a = t % d
        t += 1
        i = rects.choose(a, steps)
        if i is None:                        # nothing to split on this axis, next axis
            idle += 1
            if idle >= d:                    # cannot happen while a rectangle has ≥ 2 cells; safety net
                break
            continue
        idle = 0
        steps += 1
        low, high = rects.split(i, a, steps)
        ops[steps - 1] = i, a, rects.cut[i, a]
        total.add(re[low] + re[high] - re[i])
        n_positive += int(re[low] > 0) + int(re[high] > 0) - int(re[i] > 0)
        errors[steps] = total.value if n_positive else 0.0
    n_rect, died = rects.n_rect, rects.died
    died[died > steps] = steps + 1
    return PartitionSequence(shape=shape, kind="split", sizes=np.arange(1, steps + 2, dtype=np.int64),
                             errors=errors[:steps + 1].copy(), _lo=rects.lo[:n_rect].copy(),
                             _hi=rects.hi[:n_rect].copy(), _born=rects.born[:n_rect].copy(),
                             _died=died[:n_rect].copy(), _ops=ops[:steps].copy())


class _Rectangles:
    """The rectangles of a split sequence, created in order (the whole grid first, then each split's low and
    high parts), with their extents, REs, lifetimes and what each competes with on each axis."""

    def __init__(self, q: np.ndarray, limit: int, global_rule: bool):
        d = q.ndim
        self.tol = _tie_tol(q)
        self.global_rule = global_rule
        # Each axis first, the others flattened: q_axis[a][lo:hi, ...] is a rectangle's (extent, rest) view source.
        self.perms = [(a,) + tuple(b for b in range(d) if b != a) for a in range(d)]
        self.q_axis = [np.ascontiguousarray(q.transpose(p)) for p in self.perms]
        cap = 2 * limit + 1
        self.lo = np.zeros((cap, d), dtype=np.int64)
        self.hi = np.zeros((cap, d), dtype=np.int64)
        self.hi[0] = q.shape
        self.re = np.zeros(cap)
        self.re[0] = _re(q)
        self.born = np.zeros(cap, dtype=np.int64)
        self.died = np.full(cap, limit + 1, dtype=np.int64)
        # key[a, i]: what rectangle i competes with on axis a (its RE, or with the global rule its best
        # reduction); -inf when i is dead or has extent 1 on a.  Per (rectangle, axis): chosen cut (absolute,
        # -1 = not evaluated) and the REs of the two parts.
        self.key = np.full((d, cap), -np.inf)
        self.cut = np.full((cap, d), -1, dtype=np.int64)
        self.parts = np.zeros((cap, d, 2))
        self.pending: list[list[int]] = [[] for _ in range(d)]     # global rule: candidates not evaluated yet
        self.n_rect = 1
        self.enter(0)

    def evaluate(self, i: int, a: int) -> float:
        """Rectangle i's best cut on axis a (recorded with its parts' REs) and the RE reduction it makes."""
        lo, hi, re = self.lo, self.hi, self.re
        if re[i] == 0.0:                  # constant block: every cut has reduction 0, take the first
            self.cut[i, a] = lo[i, a] + 1
            return 0.0
        box = (slice(lo[i, a], hi[i, a]),) + tuple(slice(lo[i, b], hi[i, b]) for b in self.perms[a][1:])
        x = self.q_axis[a][box]
        re_low, re_high = _cut_profile(x.reshape(x.shape[0], -1))
        gain = re[i] - re_low - re_high
        best = gain.max()
        j = int(np.argmax(gain >= best - self.tol))
        self.cut[i, a] = lo[i, a] + j + 1
        self.parts[i, a] = re_low[j], re_high[j]
        return float(best)

    def enter(self, i: int) -> None:
        """Make rectangle i a candidate on every axis where it has extent ≥ 2."""
        for a, ext in enumerate((self.hi[i] - self.lo[i]).tolist()):
            if ext >= 2:
                if self.global_rule:
                    self.pending[a].append(i)
                else:
                    self.key[a, i] = self.re[i]

    def choose(self, a: int, steps: int) -> int | None:
        """The rectangle the split rule cuts on axis a after ``steps`` splits, its cut evaluated; None when no
        rectangle can be cut on a."""
        key, cut, tol = self.key, self.cut, self.tol
        k = key[a, :self.n_rect]
        if self.global_rule:
            for i in self.pending[a]:
                if self.born[i] <= steps < self.died[i]:
                    key[a, i] = self.evaluate(i, a)
            self.pending[a].clear()
        best = k.max()
        if best == -np.inf:
            return None
        if self.global_rule:
            tied = np.flatnonzero(k >= best - tol)
            i = int(tied[np.lexsort((tied, cut[tied, a]))[0]]) if tied.size > 1 else int(tied[0])
        else:
            i = int(np.argmax(k >= best - tol))     # highest RE, earliest created
            if cut[i, a] < 0:
                self.evaluate(i, a)
        return i

    def split(self, i: int, a: int, step: int) -> tuple[int, int]:
        """Split ``step``: rectangle i cut on axis a at its chosen cut, replaced by its low and high parts
        (returned)."""
        lo, hi = self.lo, self.hi
        s = int(self.cut[i, a])
        low, high = self.n_rect, self.n_rect + 1
        self.n_rect += 2
        lo[low] = lo[high] = lo[i]
        hi[low] = hi[high] = hi[i]
        hi[low, a] = lo[high, a] = s
        self.re[low], self.re[high] = self.parts[i, a]
        self.born[low] = self.born[high] = step
        self.died[i] = step
        self.key[:, i] = -np.inf
        self.enter(low)
        self.enter(high)
        return low, high


def partition_sequence(q: npt.ArrayLike, *, split_rule: str = "max_re_interval",
                       max_steps: int | None = None) -> PartitionSequence:
    """:func:`merge_sequence` for a 1-D marginal, :func:`split_sequence` otherwise.

    ``split_rule`` and ``max_steps`` only apply to split sequences (a merge sequence always runs to one group).

    Examples
    --------
    >>> partition_sequence([3, 1, 2]).kind, partition_sequence([[3, 1], [2, 0]]).kind
    ('merge', 'split')
    """
    q = _as_marginal(q)
    if q.ndim == 1:
        return merge_sequence(q)
    return split_sequence(q, split_rule=split_rule, max_steps=max_steps)


# ------------------------------------------------------------------------- direct Algorithms 3 and 4 (reference)
def _alg3_direct(q: np.ndarray, eta: float, contribution: float, stop_on_increase: bool,
                 n_steps: int | None) -> tuple[np.ndarray, float, float, list[float]]:
    """Algorithm 3 as written (RE recomputed from scratch as on its line 8)."""
    n = q.size
    order = np.argsort(q, kind="stable")
    v = q[order]
    tol = _tie_tol(q)

    def sorted_labels(starts: np.ndarray) -> np.ndarray:
        return np.repeat(np.arange(starts.size), np.diff(np.append(starts, n)))

    starts = np.arange(n)                     # P: runs of the sorted order, by first position
    re_cur, rho_cur = 0.0, required_rho(n, 0.0, eta, contribution)
    history = [rho_cur]
    while starts.size > 1 and (n_steps is None or len(history) <= n_steps):
        k = starts.size
        lab = sorted_labels(starts)
        g = group_errors(v, lab, k)
        pair_even = group_errors(v, lab // 2, (k + 1) // 2)     # unions (0,1), (2,3), …
        pair_odd = group_errors(v, (lab + 1) // 2, k // 2 + 1)  # unions (1,2), (3,4), …
        u = np.arange(k - 1)
        union = np.where(u % 2 == 0, pair_even[u // 2], pair_odd[(u + 1) // 2])
        delta = union - g[:-1] - g[1:]                          # MergeError
        c = _first_min(delta, tol)                              # ties → smallest u
        new_starts = np.delete(starts, c + 1)
        re_new = reconstruction_error(v, sorted_labels(new_starts), new_starts.size)
        rho_new = required_rho(new_starts.size, re_new, eta, contribution)
        if stop_on_increase and _increases(rho_new, rho_cur):
            break
        starts, re_cur, rho_cur = new_starts, re_new, rho_new
        history.append(rho_cur)
    labels = np.empty(n, dtype=np.int64)
    labels[order] = sorted_labels(starts)
    return labels, float(rho_cur), float(re_cur), history


def _alg4_direct(q: np.ndarray, eta: float, contribution: float, split_rule: str, stop_on_increase: bool,
                 n_steps: int | None) -> tuple[np.ndarray, float, float, list[float]]:
    """Algorithm 4 as written (RE recomputed from scratch as on its line 14)."""
    shape, d = q.shape, q.ndim
    tol = _tie_tol(q)
    threshold = eta * contribution

    def rect_labels(rects: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        first = [np.ravel_multi_index(tuple(r[0]), shape) for r in rects]
        grid = np.empty(shape, dtype=np.int64)
        for g, i in enumerate(np.argsort(first)):
            grid[_box(*rects[i])] = g
        return grid.ravel()

    rects = [(np.zeros(d, dtype=np.int64), np.array(shape, dtype=np.int64))]   # creation order
    labels = rect_labels(rects)
    re_cur = reconstruction_error(q, labels, 1)
    rho_cur = required_rho(1, re_cur, eta, contribution)      # +inf when RE ≥ η·Contr (lines 4–9)
    history = [rho_cur]
    t = 0
    while not all(np.all(hi - lo == 1) for lo, hi in rects) and (n_steps is None or len(history) <= n_steps):
        a = t % d                                             # line 11
        cand = [i for i, (lo, hi) in enumerate(rects) if hi[a] - lo[a] >= 2]
        if not cand:                                          # no rectangle splittable on a
            t += 1
            continue
        if split_rule == "max_re_interval":
            res = np.array([_re(q[_box(*rects[i])]) for i in cand])
            cand = [cand[_first_max(res, tol)]]               # highest RE, earliest created
        reds, cuts, owners = [], [], []
        for i in cand:                                        # line 12: every cut of every candidate
            lo, hi = rects[i]
            x = q[_box(lo, hi)].ravel()
            coord = np.indices(hi - lo)[a].ravel()
            s = np.arange(1, hi[a] - lo[a])
            left = coord[None, :] < s[:, None]
            n_left = left.sum(axis=1)
            sum_left = np.where(left, x, 0.0).sum(axis=1)
            mu_left = sum_left / n_left
            mu_right = (x.sum() - sum_left) / (x.size - n_left)
            dev = np.where(left, np.abs(x - mu_left[:, None]), np.abs(x - mu_right[:, None])).sum(axis=1)
            reds.append(_re(x) - dev)
            cuts.append(lo[a] + s)
            owners.append(np.full(s.size, i))
        reds, cuts, owners = np.concatenate(reds), np.concatenate(cuts), np.concatenate(owners)
        tied = np.flatnonzero(reds >= reds.max() - tol)
        best = tied[np.lexsort((owners[tied], cuts[tied]))[0]]   # smaller cut, then earlier rectangle
        i, s = int(owners[best]), int(cuts[best])
        lo, hi = rects[i]
        low_hi, high_lo = hi.copy(), lo.copy()
        low_hi[a] = high_lo[a] = s
        new_rects = rects[:i] + rects[i + 1:] + [(lo, low_hi), (high_lo, hi)]   # line 13
        new_labels = rect_labels(new_rects)
        re_new = reconstruction_error(q, new_labels, len(new_rects))           # line 14
        if re_new < threshold:                                                  # line 15
            rho_new = required_rho(len(new_rects), re_new, eta, contribution)  # line 16
            if stop_on_increase and _increases(rho_new, rho_cur):              # lines 17–19
                break
        else:
            rho_new = np.inf                                                    # undefined in the paper
        rects, labels, re_cur, rho_cur = new_rects, new_labels, re_new, rho_new
        history.append(rho_cur)
        t += 1
    return labels, float(rho_cur), float(re_cur), history


def partition(q: npt.ArrayLike, eta: float, contribution: float, *, split_rule: str = "max_re_interval",
              rule: str = "first_increase") -> tuple[np.ndarray, float, float]:
    """Algorithm 3 (1-D ``q``) or Algorithm 4 (``q.ndim ≥ 2``) WITH the stopping rule.

    A direct transcription of the pseudo-code, recomputing RE from scratch at every step; it is the reference
    for :meth:`PartitionSequence.stop`.  Prefer :func:`partition_sequence` when several ``(η, Contr)`` are
    tried on one marginal, or for large multi-way marginals (this costs ``O(cells)`` per step at least).

    Parameters
    ----------
    q : array_like
        The marginal.
    eta : float
        Error impact ``η``.
    contribution : float
        ``Contr``.  When ``η·Contr ≤ 0`` no partition is feasible: the initial partition is returned with
        ``rho = inf``.
    split_rule : {"max_re_interval", "global"}
        Algorithm 4's choice of rectangle (doc/deviations.md, "Choosing the rectangle to split").
    rule : {"first_increase", "global_min"}
        The paper's termination, or the argmin of ``ρ`` over the whole sequence (doc/deviations.md,
        "First-increase termination").

    Returns
    -------
    labels : ndarray of int64
        Group id of every cell (flat, C order), numbered as :meth:`PartitionSequence.labels`.
    rho : float
        ``ρ`` of the returned partition.
    re : float
        Its reconstruction error.

    Examples
    --------
    >>> labels, rho, re = partition([0, 1, 1, 2, 10, 11, 12, 30], 0.7, 40.0)
    >>> labels.tolist(), re, round(rho, 10)
    ([0, 0, 0, 0, 1, 1, 1, 2], 4.0, 0.004973592)
    """
    _check_rule(split_rule, _SPLIT_RULES, "split_rule")
    _check_rule(rule, _STOP_RULES, "rule")
    q = _as_marginal(q)
    eta, contribution = float(eta), float(contribution)

    def run(stop_on_increase: bool, n_steps: int | None):
        if q.ndim == 1:
            return _alg3_direct(q, eta, contribution, stop_on_increase, n_steps)
        return _alg4_direct(q, eta, contribution, split_rule, stop_on_increase, n_steps)

    if not eta * contribution > 0:           # every budget is +inf: stay at P_0
        labels, rho, re, _ = run(False, 0)
        return labels, np.inf, re
    if rule == "first_increase":
        labels, rho, re, _ = run(True, None)
    else:
        *_, history = run(False, None)
        labels, rho, re, _ = run(False, _argmin_rho(np.asarray(history)))
    return labels, rho, re
