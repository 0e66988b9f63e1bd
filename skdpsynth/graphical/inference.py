"""Exact inference on a junction tree: sum-product belief propagation in log space.

Potentials are log-tables, one per junction-tree clique, axes in domain order.
One upward and one downward pass compute every clique marginal.  Messages are
log-sum-exps shifted by the table's maximum (by each separator slice's own maximum for
slices that would underflow); in the downward pass a clique's
full belief is exponentiated once and each child's message is obtained by
dividing out (subtracting, in log space) the message that child sent up, so a
pass costs two exponentials per clique whatever its degree.

Also: variable elimination for marginals over attribute sets that no clique
contains.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import reduce
from operator import or_

import numpy as np

from ..domain import Domain
from . import tables
from .exp_tables import ExpTable
from .junction_tree import JunctionTree, broadcast_shape, reduce_axes

__all__ = ["belief_propagation", "assemble_potentials", "variable_elimination"]

# Floor for sums of shifted exponentials before the log: mass below 1e-300 of
# a table's maximum is treated as 1e-300 of it, which keeps every message
# finite (no -inf - -inf = nan when messages are divided out).
_TINY = 1e-300
# A separator slice summing to less than this (relative to its table's maximum) is recomputed with its own shift.
_SLICE_UNDERFLOW = 1e-250
# An ExpTable times its children's messages whose largest cell is below this is exponentiated afresh instead
# (with the slice test above, no slice whose message counts has cells below the smallest normal double).
_EXP_PEAK_FLOOR = 1e-30


def assemble_potentials(
    jt: JunctionTree, potentials: Mapping[tuple[str, ...], np.ndarray]
) -> list[np.ndarray]:
    """Sum model-clique log-potentials into junction-tree clique tables.

    Each model clique is added into one junction-tree clique that contains it
    (the smallest); cliques with no potential get zeros.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import JunctionTree
    >>> from skdpsynth.graphical.inference import assemble_potentials
    >>> dom = Domain(["a", "b", "c"], [2, 3, 4])
    >>> jt = JunctionTree.from_cliques(dom, [("a", "b"), ("b", "c")])
    >>> jt.cliques
    [('b', 'c'), ('a', 'b')]
    >>> tables = assemble_potentials(jt, {("a",): np.log([1.0, 3.0]), ("a", "b"): np.zeros((2, 3))})
    >>> [t.shape for t in tables]
    [(3, 4), (2, 3)]
    >>> np.round(tables[1], 4).tolist()
    [[0.0, 0.0, 0.0], [1.0986, 1.0986, 1.0986]]
    """
    dom = jt.domain
    assembled: list[np.ndarray | None] = [None] * len(jt.cliques)
    for clique, values in potentials.items():
        host = jt.clique_containing(clique)
        if host is None:
            raise ValueError(f"Clique {clique} is not contained in any junction-tree clique.")
        values = values.reshape(broadcast_shape(dom, jt.cliques[host], clique))
        assembled[host] = values if assembled[host] is None else tables.add(assembled[host], values)
    shapes = [dom.shape_of(c) for c in jt.cliques]
    # Broadcast views (read-only) are fine: the tables are only ever combined into new arrays.
    return [np.zeros(s) if t is None else np.broadcast_to(t, s) for t, s in zip(assembled, shapes)]


def belief_propagation(
    jt: JunctionTree, log_potentials: Sequence[np.ndarray], total: float = 1.0
) -> tuple[list[np.ndarray], float]:
    """Clique marginals of the model ``p(x) ∝ exp(Σ_C θ_C(x_C))``, scaled to sum to ``total``.

    Parameters
    ----------
    jt : JunctionTree
    log_potentials : list of ndarray
        ``θ_C`` for each clique of ``jt`` (same order), axes in domain order.
    total : float
        The marginals are ``total * p``.

    Returns
    -------
    marginals : list of ndarray
        One table per junction-tree clique, each summing to ``total``.
    log_partition : float
        ``log Σ_x exp(Σ_C θ_C(x_C))``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import JunctionTree, belief_propagation
    >>> jt = JunctionTree.from_cliques(Domain(["a", "b"], [2, 2]), [("a", "b")])
    >>> marginals, log_partition = belief_propagation(jt, [np.log([[1.0, 1.0], [1.0, 5.0]])], total=8.0)
    >>> np.round(marginals[0], 4).tolist()
    [[1.0, 1.0], [1.0, 5.0]]
    >>> round(log_partition, 4)  # log(1 + 1 + 1 + 5)
    2.0794
    """
    state = _Propagation(jt, log_potentials)
    # Upward pass: leaves first (reverse breadth-first order).
    for i in range(len(jt.cliques) - 1, 0, -1):
        state.send_up(i)
    # Downward pass: root first; each clique's belief, once exponentiated, sends its children their messages.
    marginals = []
    for i in range(len(jt.cliques)):
        if i == 0:
            probs, shift, scale, z = state.root_exponential()
            log_partition = float(np.log(z) + shift)
        else:
            probs, shift, scale, z = state.downward_exponential(i)
        state.send_down(i, probs, shift, scale)
        tables.multiply_inplace(probs, total / z)
        marginals.append(probs)
    return marginals, log_partition


class _Propagation:
    """The working tables of one belief propagation: what the upward pass leaves for the downward one.

    In-place arithmetic wherever the array is one made here (the inputs are never written to): fresh
    multi-megabyte temporaries cost page faults as much as the arithmetic.
    """

    def __init__(self, jt: JunctionTree, log_potentials: Sequence[np.ndarray]):
        n = len(jt.cliques)
        self.jt = jt
        self.plan = jt.message_plan()
        self.up = list(log_potentials)  # log-tables become θ_C + messages from the children; ExpTables stay as given
        self.pending = [[] for _ in range(n)]  # children's messages to an ExpTable, multiplied in when it is reached
        self.msg_up = [None] * n  # log-message clique i -> parent, shaped to broadcast in the parent
        self.msg_down = [None] * n  # log-message parent -> clique i, the parent's message divided out
        self.up_exp = [None] * n  # exp(belief - up_shift[i]), reused by the downward pass
        self.up_shift = [0.0] * n
        self.up_peak = [1.0] * n  # the largest cell of up_exp[i] (1 when exponentiated here, after its maximum)
        self.owned = [False] * n  # up[i] is an array made here (the inputs are never written to)
        self.exp_owned = [True] * n  # up_exp[i] may be written to (not an ExpTable's values)

    def log_belief(self, i: int) -> np.ndarray:
        """Clique i's log-belief with its children's messages (made here for an ExpTable: the rare paths)."""
        if not isinstance(self.up[i], ExpTable):
            return self.up[i]
        belief = self.up[i].log()
        for m in self.pending[i]:
            tables.add(belief, m, out=belief)
        return belief

    def exponential(self, i: int):
        """(exp(belief − shift), shift, its largest cell, whether it may be written to), or None when an
        ExpTable's product with its children's messages has its largest cell too small to be trusted."""
        table = self.up[i]
        if not isinstance(table, ExpTable):
            shift = tables.maximum(table)
            in_place = i == 0 and self.owned[0]   # the root's log-belief is not needed once exponentiated
            return tables.exp_shifted(table, shift, out=table if in_place else None), shift, 1.0, True
        pending = self.pending[i]
        if pending:
            tops = [float(m.max()) for m in pending]
            probs, peak, _, _ = tables.product(table.values, [np.exp(m - t) for m, t in zip(pending, tops)])
            made = probs, table.offset + sum(tops), peak, True
        else:
            made = table.values, table.offset, math.exp(table.high), False
        return made if made[2] >= _EXP_PEAK_FLOOR else None

    def trusted_exponential(self, i: int):
        """Clique i's exponential (as :meth:`exponential`), from its log-belief where an ExpTable's is not to be
        trusted."""
        made = self.exponential(i)
        if made is None:
            self.up[i], self.owned[i] = self.log_belief(i), True
            made = self.exponential(i)
        return made

    def send_up(self, i: int) -> None:
        """Upward step: clique i's message to its parent, which the parent absorbs."""
        own_axes, _, _, in_parent = self.plan[i]
        probs, shift, peak, self.exp_owned[i] = self.trusted_exponential(i)
        sums = reduce_axes(probs, own_axes)
        msg = np.log(np.maximum(sums, _TINY * peak))
        msg += shift
        underflow = sums < _SLICE_UNDERFLOW * peak
        if underflow.any():
            # These separator values carry no mass at the scale of the table's maximum, but the parent may
            # weigh them up again (overlapping cliques' potentials can carry large offsetting values; only
            # their sum matters): their messages are exact log-sum-exps, each slice shifted by its own
            # maximum, and the downward pass exponentiates this clique's full belief afresh.
            self.exact_slice_messages(i, msg, underflow)
            probs, shift = None, None
        self.up_exp[i], self.up_shift[i], self.up_peak[i] = probs, shift, peak
        self.msg_up[i] = msg.reshape(in_parent)
        self.absorb(self.jt.parent[i], self.msg_up[i])

    def exact_slice_messages(self, i: int, msg: np.ndarray, underflow: np.ndarray) -> None:
        """Recompute (in ``msg``) the underflowing slices' messages from clique i's log-belief, which becomes
        its upward table."""
        own_axes = self.plan[i][0]
        belief = self.log_belief(i)
        where = np.nonzero(underflow)
        kept = [ax for ax in range(belief.ndim) if ax not in own_axes]
        slices = np.moveaxis(belief, kept, range(len(kept)))[where].reshape(len(where[0]), -1)
        top = slices.max(axis=1)
        msg[where] = np.log(np.exp(slices - top[:, None]).sum(axis=1)) + top
        self.up[i] = belief

    def absorb(self, p: int, msg: np.ndarray) -> None:
        """Add a child's message into clique p's log-belief (kept aside for an ExpTable)."""
        if isinstance(self.up[p], ExpTable):
            self.pending[p].append(msg)
        elif self.owned[p]:
            tables.add(self.up[p], msg, out=self.up[p])
        else:
            self.up[p], self.owned[p] = tables.add(self.up[p], msg), True

    def root_exponential(self):
        """(exp(belief − shift), shift, its largest cell, its sum) of the root, whose belief is complete."""
        probs, shift, scale, writable = self.trusted_exponential(0)
        if not writable:
            probs = probs.copy()
        return probs, shift, scale, tables.total(probs)

    def downward_exponential(self, i: int):
        """(exp(belief − shift), shift, its largest cell, its sum) of clique i, its belief completed by the
        message from its parent."""
        # The exponential is the upward one times the (small) message's exponential, which saves
        # exponentiating the whole table a second time.
        m = self.msg_down[i]
        probs = self.up_exp[i]
        if probs is not None:
            m_max = float(m.max())
            factor = np.exp(m - m_max)
            if self.exp_owned[i]:
                peak, z = tables.multiply_and_measure(probs, factor)
            else:
                probs, peak, _, z = tables.product(probs, [factor], summed=True)
            shift, scale = self.up_shift[i] + m_max, self.up_peak[i]
        if probs is None or peak < 1e-200 * scale:
            # The two maxima sit in different cells (or slices underflowed on the way up): exponentiate
            # the full belief directly rather than lose precision.
            full = self.log_belief(i) + m
            shift = float(full.max())
            probs = np.exp(full - shift)
            z = tables.total(probs)
            scale = 1.0
        self.up_exp[i] = None
        return probs, shift, scale, z

    def send_down(self, i: int, probs: np.ndarray, shift: float, scale: float) -> None:
        """Downward step: clique i's messages to its children, from its exponentiated full belief."""
        msg_up = self.msg_up
        for c in self.jt.children[i]:
            _, in_child, parent_axes, _ = self.plan[c]
            sums = reduce_axes(probs, parent_axes)
            # Divide out what the child sent up (subtract, in log space).
            msg = np.log(np.maximum(sums, _TINY * scale)).reshape(in_child)
            msg += shift
            msg -= msg_up[c].reshape(in_child)
            self.msg_down[c] = msg


def greedy_elimination_order(domain: Domain, scopes: Iterable[Sequence[str]], keep: Iterable[str],
                             growth: bool = False) -> tuple[list[str], int]:
    """A greedy order eliminating every attribute of ``scopes`` not in ``keep``, and the work it costs.

    Each step eliminates the attribute whose combined factor (the union of the
    scopes holding it) is smallest; with ``growth``, the one whose elimination
    least increases the factors' total size (the new factor's size minus those
    it replaces), which sums an attribute out of a large factor early instead
    of leaving that factor to join everything at the end.  Ties go to the
    attribute first in domain order, so the order (and the floating-point
    result) is deterministic.  The work is the number of index combinations
    the eliminations loop over (each step's combined factor, then the product
    of what is left).

    Scopes are bit masks here: planning runs once per out-of-clique marginal,
    thousands of times an AIM round.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical.inference import greedy_elimination_order
    >>> dom = Domain(["a", "b", "c", "d"], [2, 3, 5, 7])
    >>> greedy_elimination_order(dom, [("a", "b"), ("b", "c"), ("c", "d")], ["a", "d"])
    (['b', 'c'], 114)
    """
    scopes = [set(c) for c in scopes]
    names = domain.canonical(set().union(*scopes))
    sizes = [domain[a] for a in names]
    bit = {a: 1 << k for k, a in enumerate(names)}
    masks = [sum(bit[a] for a in c) for c in scopes]
    known: dict[int, int] = {}

    def size(mask: int) -> int:
        cells = known.get(mask)
        if cells is None:
            cells, k, rest = 1, 0, mask
            while rest:
                if rest & 1:
                    cells *= sizes[k]
                rest >>= 1
                k += 1
            known[mask] = cells
        return cells

    kept = set(keep)
    remaining = [k for k, a in enumerate(names) if a not in kept]   # domain order: ties to the first
    order, work = [], 0
    while remaining:
        best = None
        for k in remaining:
            touching = [m for m in masks if m >> k & 1]
            combined = reduce(or_, touching, 0)
            cost = size(combined)
            if growth:
                cost = cost // sizes[k] - sum(size(m) for m in touching)
            if best is None or cost < best[0]:
                best = (cost, k, combined)
        _, k, combined = best
        remaining.remove(k)
        order.append(names[k])
        work += size(combined)
        masks = [m for m in masks if not m >> k & 1] + [combined & ~(1 << k)]
    return order, work + size(reduce(or_, masks, 0))


def variable_elimination(
    domain: Domain, factors: Iterable[tuple[Sequence[str], np.ndarray]], target: Iterable[str]
) -> np.ndarray:
    """Log-marginal over ``target`` of ``exp(Σ factors)`` by greedy variable elimination.

    Parameters
    ----------
    domain : Domain
    factors : iterable of (clique, log-table)
        Cliques canonical, tables with axes in domain order.
    target : iterable of str

    Returns
    -------
    ndarray
        Unnormalised log-table over ``domain.canonical(target)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import variable_elimination
    >>> dom = Domain(["a", "b", "c"], [2, 2, 2])
    >>> factors = [(("a", "b"), np.log([[1.0, 2.0], [3.0, 4.0]])), (("b", "c"), np.log([[1.0, 1.0], [1.0, 3.0]]))]
    >>> np.round(np.exp(variable_elimination(dom, factors, ["a"])), 4).tolist()
    [10.0, 22.0]
    """
    target = domain.canonical(target)
    pool = [(tuple(c), np.asarray(t, dtype=float)) for c, t in factors]
    order, _ = greedy_elimination_order(domain, [c for c, _ in pool], target)
    for v in order:
        touching = [(c, t) for c, t in pool if v in c]
        pool = [(c, t) for c, t in pool if v not in c]
        scope = domain.canonical(set().union(*(set(c) for c, _ in touching)))
        combined = sum(t.reshape(broadcast_shape(domain, scope, c)) for c, t in touching)
        axis = scope.index(v)
        shift = combined.max(axis=axis, keepdims=True)
        shift = np.where(np.isfinite(shift), shift, 0.0)
        reduced = np.log(np.exp(combined - shift).sum(axis=axis)) + np.squeeze(shift, axis=axis)
        pool.append((tuple(a for a in scope if a != v), reduced))
    result = np.zeros(domain.shape_of(target))
    for c, t in pool:
        result = result + t.reshape(broadcast_shape(domain, target, c))
    return result
