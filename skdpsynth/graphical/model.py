"""The graphical model: a Markov random field over the public domain.

``p(x) ∝ exp(Σ_m θ_m(x_m))`` over model cliques ``m`` (the maximal measured
cliques), scaled to an estimated number of records.  Marginals come from belief
propagation on a junction tree of the cliques, or from variable elimination for
attribute sets that no junction-tree clique contains.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..domain import Domain
from .inference import assemble_potentials, belief_propagation, greedy_elimination_order, variable_elimination
from .junction_tree import JunctionTree, broadcast_shape, sum_out

# numpy's einsum takes at most 52 distinct axis labels.
_EINSUM_LABELS = 52
# A pairwise contraction looping over more cells than this uses numpy's BLAS path (its path search costs ~0.1 ms).
_BLAS_STEP = 2**16
# Memory kept for the messages of out-of-clique marginals (per calibrated model).
_MESSAGE_MEMO_BYTES = 2**27
# Largest message (cells) when the subtree contraction would be worse: messages loop over their clique and
# wanted attributes once, where a poor elimination order loops over many cliques' attributes at once.
_RELAXED_MESSAGE_CELLS = 2**24

__all__ = ["GraphicalModel"]


# The log-potential of an impossible cell.  Finite, unlike -inf, so that belief propagation never meets
# -inf - (-inf) where every cell of a slice is impossible; exp of it, after any realistic offset, is exactly 0.
_IMPOSSIBLE = -1e4


def _largest_loop(scopes: list[set], output: set, path, sizes) -> int:
    """The most index combinations one step of an einsum ``path`` (from ``np.einsum_path``, without its first
    item) loops over, for operands over ``scopes`` (sets of axis labels) summed down to ``output``."""
    scopes, largest = list(scopes), 0
    for step in path:
        picked = [scopes.pop(i) for i in sorted(step, reverse=True)]
        touched = set().union(*picked)
        largest = max(largest, int(np.prod([sizes[k] for k in touched], dtype=float)))
        scopes.append(touched & set(output).union(*scopes))
    return largest


class GraphicalModel:
    """A fitted Markov random field over a :class:`~skdpsynth.domain.Domain`.

    Parameters
    ----------
    domain : Domain
    potentials : mapping of clique -> ndarray
        Log-potential table of each model clique (canonical clique, axes in
        domain order).  Attributes in no clique are uniform and independent.
    total : float
        The (estimated) number of records; marginals sum to it.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel
    >>> dom = Domain(["a", "b"], [2, 2])
    >>> model = GraphicalModel(dom, {("a", "b"): np.log([[1.0, 1.0], [1.0, 5.0]])}, total=80)
    >>> model.project(["b"]).tolist()
    [20.0, 60.0]
    >>> model.synthetic_data(8, random_state=0).shape
    (8, 2)
    """

    def __init__(self, domain: Domain, potentials: Mapping[tuple[str, ...], np.ndarray], total: float):
        self.domain = domain
        self.potentials = {domain.canonical(c): np.asarray(v, dtype=float) for c, v in potentials.items()}
        for c, v in self.potentials.items():
            if v.shape != domain.shape_of(c):
                raise ValueError(f"Potential of {c} has shape {v.shape}, expected {domain.shape_of(c)}.")
        self.total = float(total)
        self._jt: JunctionTree | None = None
        self._marginals: list[np.ndarray] | None = None
        self._log_partition: float | None = None
        self._conditionals: dict[int, np.ndarray] = {}   # junction-tree clique -> P(C \\ S | S), from the calibration
        self._parts: dict[tuple[str, ...], np.ndarray] = {}   # one component's marginals, for products across them
        self._reduced: dict[tuple, np.ndarray] = {}   # subtree factors summed down (see _reduced_factor)
        self._messages: dict[tuple, tuple] = {}   # see _project_by_messages
        self._message_bytes = 0
        self._tops: dict[str, int] | None = None   # each attribute's top junction-tree clique
        # project() may be called from several threads at once (AIM scores candidates in parallel): the memos
        # above are filled idempotently (a race computes an entry twice, to the same value), and the lazily
        # built junction tree and calibration are made once, under this lock.
        self._lock = threading.Lock()

    @property
    def cliques(self) -> list[tuple[str, ...]]:
        """The model cliques (those carrying a potential)."""
        return list(self.potentials)

    @property
    def junction_tree(self) -> JunctionTree:
        if self._jt is None:
            with self._lock:
                if self._jt is None:
                    self._jt = JunctionTree.from_cliques(self.domain, self.cliques)
        return self._jt

    def _calibrate(self) -> None:
        if self._marginals is None:
            jt = self.junction_tree
            with self._lock:
                if self._marginals is None:
                    self._marginals, self._log_partition = belief_propagation(
                        jt, assemble_potentials(jt, self.potentials), self.total
                    )

    def set_calibration(self, jt: JunctionTree, marginals: list[np.ndarray], log_partition: float) -> None:
        """Adopt marginals already computed for these potentials on ``jt`` (saves a pass)."""
        self._jt, self._marginals, self._log_partition = jt, marginals, log_partition
        self._conditionals, self._parts, self._reduced, self._tops = {}, {}, {}, None
        self._messages, self._message_bytes = {}, 0

    def cached_calibration(self) -> tuple[JunctionTree, list[np.ndarray], float] | None:
        """``(junction tree, its clique marginals, log-partition)`` if already computed, else ``None``."""
        if self._marginals is None:
            return None
        return self._jt, self._marginals, self._log_partition

    @property
    def clique_marginals(self) -> list[np.ndarray]:
        """Marginal tables of the junction-tree cliques (same order as ``junction_tree.cliques``)."""
        self._calibrate()
        return self._marginals

    def project(self, attrs: Iterable[str]) -> np.ndarray:
        """Marginal counts over ``attrs`` (axes in domain order), summing to ``total``."""
        attrs = self.domain.canonical(attrs)
        self._calibrate()
        jt = self.junction_tree
        host = jt.clique_containing(attrs)
        if host is not None:
            return sum_out(self._marginals[host], jt.cliques[host], attrs)
        component = jt.attribute_components()
        groups: dict[int, list[str]] = {}
        for a in attrs:
            groups.setdefault(component[a], []).append(a)
        if len(groups) > 1:
            # Independent components: the product of each one's marginal, with no contraction across them.
            # Selection asks for thousands of such marginals sharing parts: each part is computed once.
            table = None
            for group in groups.values():
                group = tuple(group)
                part = self._parts.get(group)
                if part is None:
                    part = self._parts[group] = self.project(group) / self.total
                part = part.reshape(broadcast_shape(self.domain, attrs, group))
                table = part if table is None else table * part
            return table * self.total
        table = self._project_by_messages(attrs)
        if table is not None:
            return table * (self.total / table.sum())
        nodes, top = self._subtree(attrs)
        scope = self.domain.canonical(set(attrs).union(*(jt.cliques[i] for i in nodes)))
        if len(scope) <= _EINSUM_LABELS:
            table = self._contract_subtree(nodes, top, attrs)
        else:   # more attributes than einsum has subscripts: eliminate in log space
            log_table = variable_elimination(self.domain, self._subtree_factors(nodes, top), attrs)
            table = np.exp(log_table - log_table.max())
        return table * (self.total / table.sum())

    def _project_by_messages(self, attrs: tuple[str, ...], max_work: float | None = None) -> np.ndarray | None:
        """The marginal over ``attrs`` (one component, no single clique) by messages up the subtree that joins
        each attribute's top clique, memoised across calls; ``None`` if a message would be large.  With
        ``max_work`` (the cost of the alternative, in combinations looped over), messages may be very large, and
        ``None`` means the contractions would loop over more than that in all.

        The message of clique ``v`` is ``P(A \\ S_v | S_v)`` for the wanted attributes ``A`` placed at or below
        it (each at the top clique of its own subtree of cliques, so the subtree below ``v`` depends on ``A``
        alone): a marginal's branches are mostly shared with thousands of others (AIM scores every 3-way
        marginal), so most of its messages are already there and each marginal costs a contraction or two.
        """
        jt = self.junction_tree
        if self._tops is None:
            tops = {}   # filled before it is shared: another thread may read it as soon as it is assigned
            for v in range(len(jt.cliques) - 1, -1, -1):   # breadth-first: the top clique comes last
                tops.update(dict.fromkeys(jt.cliques[v], v))
            self._tops = tops
        hosted: dict[int, set] = {}   # clique -> wanted attributes placed at or below it, on the subtree
        paths, top = self._paths_to_common_ancestor([self._tops[a] for a in attrs])
        for a, path in zip(attrs, paths):
            for v in path[: path.index(top)]:
                hosted.setdefault(v, set()).add(a)
        domain = self.domain
        # Messages (kept) at most 16 times the biggest table involved, and no more than 2^21 cells (16 MB) unless
        # that table is larger; a contraction (a clique's factor with its children's messages) loops over at
        # most 4 times that.  Relaxed (max_work given): messages up to _RELAXED_MESSAGE_CELLS, and all the
        # contractions together looping over at most max_work combinations.
        largest = max(domain.size(attrs), max(domain.size(jt.cliques[v]) for v in (*hosted, top)))
        relaxed = max_work is not None
        kept_limit = _RELAXED_MESSAGE_CELLS if relaxed else min(16 * largest, max(largest, 2**21))
        nodes = set(hosted) | {top}
        work = 0
        for v in nodes:
            kept = set(attrs) if v == top else hosted[v] | set(jt.separators[v])
            below = [hosted[c] | set(jt.separators[c]) for c in jt.children[v] if c in nodes]
            if domain.size(kept) > kept_limit:
                return None
            if not relaxed:
                if domain.size(kept.union(*below)) > 4 * kept_limit:
                    return None
            elif v == top or (v, domain.canonical(hosted[v])) not in self._messages:
                # What _combine's pairwise steps loop over, in its order (a memoised message costs nothing).
                scope = set(self._factor_scope(v, top, nodes, attrs))
                below = sorted(below, key=domain.size)
                for i, joining in enumerate(below):
                    joined = scope | joining
                    work += domain.size(joined)
                    scope = joined & kept.union(*below[i + 1:])
                if work > max_work:
                    return None

        def message(v: int) -> tuple[tuple[str, ...], np.ndarray]:
            wanted = domain.canonical(hosted[v])
            key = (v, wanted)
            out = self._messages.get(key)
            if out is None:
                scope = domain.canonical(set(wanted) | set(jt.separators[v]))
                out = (scope, self._combine(v, top, nodes, wanted, scope, message))
                if self._message_bytes + out[1].nbytes > _MESSAGE_MEMO_BYTES:
                    # Bounded memory: a cleared message is recomputed when asked again.
                    self._messages, self._message_bytes = {}, 0
                self._messages[key] = out
                self._message_bytes += out[1].nbytes
            return out
        return self._combine(top, top, nodes, attrs, attrs, message)

    def _combine(self, v: int, top: int, nodes: set[int], wanted: tuple[str, ...], keep: tuple[str, ...],
                 message) -> np.ndarray:
        """Clique ``v``'s reduced factor times its children's messages on the subtree, summed down to ``keep``."""
        # Smallest messages first: what they leave out is summed out before the large ones join.
        messages = sorted((message(c) for c in self.junction_tree.children[v] if c in nodes), key=lambda f: f[1].size)
        factors = [self._reduced_factor(v, top, nodes, wanted), *messages]
        # Canonical labels: numpy's summation order follows them, so a set's (hash-seeded) order would make the
        # same marginal differ in its last bits from one process to the next.
        label = {a: k for k, a in enumerate(self.domain.canonical(set().union(*(c for c, _ in factors))))}
        # Pairwise, summing out each attribute as soon as no later factor has it (no path search per call).
        scope, table = factors[0]
        for i, (c, t) in enumerate(factors[1:], start=2):
            later = set(keep).union(*(f for f, _ in factors[i:]))
            joined = self.domain.canonical(a for a in set(scope) | set(c) if a in later)
            table = np.einsum(table, [label[a] for a in scope], t, [label[a] for a in c], [label[a] for a in joined],
                              optimize=self._blas_step(set(scope) | set(c)))
            scope = joined
        return np.einsum(table, [label[a] for a in scope], [label[a] for a in keep])

    def _contract_subtree(self, nodes: set[int], top: int, attrs: tuple[str, ...]) -> np.ndarray:
        """Marginal over ``attrs`` of ``μ_top · Π_{C ≠ top} μ_C / μ_S`` on the subtree, in probability space.

        Every factor but the top's is a conditional ``P(C \\ S | S) ≤ 1``, so the contraction (one ``einsum``,
        its order chosen by numpy) has no overflow and needs no logarithms: several times faster than
        eliminating in log space.
        """
        factors = [self._reduced_factor(i, top, nodes, attrs) for i in nodes]
        scope = self.domain.canonical(set().union(*(c for c, _ in factors)))
        label = {a: k for k, a in enumerate(scope)}
        operands = [x for c, t in factors for x in (t, [label[a] for a in c])]
        output = [label[a] for a in attrs]
        # numpy's greedy pairwise order is the fastest on most subtrees, but on some it ends in one contraction
        # of many operands that loops over thousands of times more combinations than any table has cells
        # (seconds for one marginal of a small model; doc/partition.md): then eliminate one attribute at a time, smallest
        # combined scope first.
        path = np.einsum_path(*operands, output, optimize="greedy")[0]
        sizes = [self.domain[a] for a in scope]
        limit = 16 * max(max(t.size for _, t in factors), int(np.prod([self.domain[a] for a in attrs])))
        if _largest_loop([set(op) for op in operands[1::2]], set(output), path[1:], sizes) <= limit:
            return np.einsum(*operands, output, optimize=path)
        # The messages again, allowed to be large, when they loop over less than the greedy elimination would.
        order, work = self._elimination_plan([c for c, _ in factors], attrs)
        table = self._project_by_messages(attrs, max_work=work)
        if table is not None:
            return table
        return self._eliminate(factors, attrs, label, order)

    def _elimination_plan(self, scopes: list[tuple[str, ...]], attrs: tuple[str, ...]) -> tuple[list[str], int]:
        """A greedy elimination order of factors over ``scopes`` down to ``attrs`` (the scopes alone decide it),
        and the combinations :meth:`_eliminate` loops over in that order.

        Two greedy costs (:func:`~skdpsynth.graphical.inference.greedy_elimination_order`), the order looping over
        less kept: neither is always better, and the cheaper of the two loops over several times less in total
        than the combined-size cost alone (``doc/engine.md`` has the measurements).
        """
        plans = [greedy_elimination_order(self.domain, scopes, attrs, growth) for growth in (False, True)]
        return min(plans, key=lambda plan: plan[1])

    def _eliminate(self, factors, attrs: tuple[str, ...], label: dict, order: list[str]) -> np.ndarray:
        """Sum a product of factors down to ``attrs`` by eliminating the other attributes in ``order``
        (:meth:`_elimination_plan`), in probability space."""
        domain = self.domain
        for v in order:
            touching = [(c, t) for c, t in factors if v in c]
            factors = [(c, t) for c, t in factors if v not in c]
            scope = domain.canonical(set().union(*(set(c) for c, _ in touching)) - {v})
            operands = [x for c, t in touching for x in (t, [label[a] for a in c])]
            optimize = len(touching) > 2 or self._blas_step(set(scope) | {v})
            factors.append((scope, np.einsum(*operands, [label[a] for a in scope], optimize=optimize)))
        operands = [x for c, t in factors for x in (t, [label[a] for a in c])]
        return np.einsum(*operands, [label[a] for a in attrs], optimize=len(factors) > 2)

    def _blas_step(self, looped: set) -> bool:
        """Whether a pairwise contraction looping over ``looped`` goes through numpy's BLAS-backed path: large
        steps gain from it, small ones would only pay for its path search."""
        return self.domain.size(looped) > _BLAS_STEP

    def _reduced_factor(self, i: int, top: int, nodes: set[int], attrs: tuple[str, ...]):
        """Clique ``i``'s factor on the subtree, summed down to what the contraction needs (memoised).

        The needed attributes are the wanted ones in the clique, the separators to its children in the subtree
        and the one to its parent (unless it is the top): every other attribute of the clique appears in no
        other factor, so summing it out first is exact, and turns the many cliques a marginal only passes
        through into small tables shared by many marginals (selection asks for thousands).
        """
        clique = self.junction_tree.cliques[i]
        needed = self._factor_scope(i, top, nodes, attrs)
        key = (i, i == top, needed)
        table = self._reduced.get(key)
        if table is None:
            full = self._marginals[i] if i == top else self._conditional(i)
            table = self._reduced[key] = full if needed == clique else sum_out(full, clique, needed)
        return needed, table

    def _factor_scope(self, i: int, top: int, nodes: set[int], attrs: tuple[str, ...]) -> tuple[str, ...]:
        """What clique ``i``'s factor keeps on the subtree (see :meth:`_reduced_factor`)."""
        jt = self.junction_tree
        needed = set(attrs).intersection(jt.cliques[i])
        for c in jt.children[i]:
            if c in nodes:
                needed.update(jt.separators[c])
        if i != top:
            needed.update(jt.separators[i])
        return self.domain.canonical(needed)

    def _conditional(self, i: int) -> np.ndarray:
        """``P(C_i \\ S_i | S_i)`` of junction-tree clique ``i`` given its separator to the parent (0 where
        ``P(S_i) = 0``); kept until the calibration changes (selection projects hundreds of marginals)."""
        table = self._conditionals.get(i)
        if table is None:
            jt = self.junction_tree
            clique, sep, marginal = jt.cliques[i], jt.separators[i], self._marginals[i]
            below = sum_out(marginal, clique, sep).reshape(broadcast_shape(self.domain, clique, sep))
            table = np.divide(marginal, below, out=np.zeros_like(marginal), where=below > 0)
            self._conditionals[i] = table
        return table

    def _subtree(self, attrs: tuple[str, ...]) -> tuple[set[int], int]:
        """The smallest subtree of the junction tree covering ``attrs``: its nodes and its top node.

        On that subtree ``p = Π_C μ_C / Π_S μ_S`` (up to scale), so eliminating
        its other attributes gives the marginal over ``attrs`` while touching only
        the cliques in between, not the whole model.
        """
        jt = self.junction_tree
        wanted = set(attrs)
        nodes = set()
        for a in attrs:
            holding = [i for i, c in enumerate(jt.cliques) if a in c]
            nodes.add(max(holding, key=lambda i: (len(wanted & set(jt.cliques[i])), -i)))
        # Union of the paths from every chosen clique up to their lowest common ancestor.
        paths, top = self._paths_to_common_ancestor(list(nodes))
        subtree = set()
        for path in paths:
            subtree.update(path[: path.index(top) + 1])
        return subtree, top

    def _paths_to_common_ancestor(self, starts: list[int]) -> tuple[list[list[int]], int]:
        """Each start clique's path up to the root, and the lowest clique all the paths share."""
        parent = self.junction_tree.parent
        paths = []
        for v in starts:
            path = [v]
            while parent[path[-1]] >= 0:
                path.append(parent[path[-1]])
            paths.append(path)
        common = set(paths[0]).intersection(*map(set, paths[1:]))
        return paths, next(v for v in paths[0] if v in common)

    def _subtree_factors(self, subtree: set[int], top: int) -> list[tuple[tuple[str, ...], np.ndarray]]:
        """Log clique and separator marginals of a subtree (see :meth:`_subtree`)."""
        jt = self.junction_tree
        factors = []
        for i in subtree:
            clique, table = jt.cliques[i], self._marginals[i]
            factors.append((clique, np.log(np.maximum(table, 1e-300))))
            if i != top:
                sep = jt.separators[i]
                factors.append((sep, -np.log(np.maximum(sum_out(table, clique, sep), 1e-300))))
        return factors

    def probability(self, attrs: Iterable[str]) -> np.ndarray:
        """Normalised marginal distribution over ``attrs``."""
        return self.project(attrs) / self.total

    def size_mb(self) -> float:
        """Memory of the junction-tree tables, MiB at float64."""
        return self.junction_tree.size_mb()

    def restrict(self, allowed: Mapping[str, np.ndarray]) -> "GraphicalModel":
        """The model given that each attribute in ``allowed`` takes one of its allowed values.

        Each attribute's domain shrinks to its allowed values (code ``k`` of
        the result is the ``k``-th allowed value, ``np.flatnonzero(mask)[k]``)
        and every potential is sliced to them, so the result is exactly the
        conditional distribution ``p(x | x_a ∈ A_a for every a)``, scaled to
        the same total.  Post-processing: it reads the model only.

        Parameters
        ----------
        allowed : mapping of attribute to bool array
            One mask over the attribute's codes; at least one value allowed.

        Returns
        -------
        GraphicalModel
            Over the restricted domain.

        Raises
        ------
        ValueError
            If an attribute is not in the domain, a mask has the wrong shape
            or allows nothing, or the model gives the condition probability 0.

        Examples
        --------
        >>> import numpy as np
        >>> from skdpsynth import Domain
        >>> from skdpsynth.graphical import GraphicalModel
        >>> dom = Domain(["a", "b"], [2, 2])
        >>> model = GraphicalModel(dom, {("a", "b"): np.log([[1.0, 1.0], [1.0, 5.0]])}, total=80)
        >>> given = model.restrict({"a": np.array([False, True])})
        >>> given.domain, (given.project(["b"]) / given.total).round(4).tolist()     # p(b | a = 1)
        (Domain(a=1, b=2), [0.1667, 0.8333])
        """
        masks = {}
        for attr, mask in allowed.items():
            if attr not in self.domain:
                raise ValueError(f"Cannot condition on {attr!r}: not an attribute of the model.")
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (self.domain[attr],) or not mask.any():
                raise ValueError(f"The condition on {attr!r} must allow at least one of its {self.domain[attr]} "
                                 f"values (a mask of that length), got shape {mask.shape} allowing {int(mask.sum())}.")
            masks[attr] = mask
        domain = Domain(self.domain.attrs, [int(masks[a].sum()) if a in masks else n
                                            for a, n in zip(self.domain.attrs, self.domain.shape)])
        potentials = {}
        for clique, table in self.potentials.items():
            index = tuple(masks.get(a, slice(None)) for a in clique)
            sliced = table
            for axis, keep in enumerate(index):   # one axis at a time: boolean masks do not broadcast together
                if not isinstance(keep, slice):
                    sliced = np.compress(keep, sliced, axis=axis)
            if sliced.size and not np.isfinite(sliced).any():
                raise ValueError("The model gives these conditions probability 0: no record can satisfy them.")
            potentials[clique] = sliced
        return GraphicalModel(domain, potentials, self.total)

    def constrain(self, allowed_cells: Iterable[tuple[Sequence[str], np.ndarray]]) -> "GraphicalModel":
        """The model multiplied by the indicator of each set of allowed cells: impossible cells get probability 0.

        For each ``(attrs, mask)`` the model becomes ``p'(x) ∝ p(x) · 1[mask[x_attrs]]``: the
        log-indicator (``-inf`` on a forbidden cell) joins the potential of a clique that holds ``attrs``,
        or becomes a clique of its own, and the total stays the same.  This is how public structural
        constraints (:mod:`skdpsynth.constraints`) enter a fitted model: post-processing, it reads the model
        only.

        Parameters
        ----------
        allowed_cells : iterable of (sequence of str, bool ndarray)
            The attributes and a mask of their allowed cells, axes in the order of ``attrs``.

        Returns
        -------
        GraphicalModel
            Over the same domain; every forbidden cell has probability exactly 0.

        Raises
        ------
        ValueError
            If a mask has the wrong shape, or the model gives the allowed cells probability 0.

        Examples
        --------
        >>> import numpy as np
        >>> from skdpsynth import Domain
        >>> from skdpsynth.graphical import GraphicalModel
        >>> dom = Domain(["a", "b"], [2, 2])
        >>> model = GraphicalModel(dom, {("a",): np.zeros(2), ("b",): np.zeros(2)}, total=90)
        >>> never_both = np.array([[True, True], [True, False]])      # a = 1 and b = 1 is impossible
        >>> model.constrain([(("a", "b"), never_both)]).project(["a", "b"]).tolist()
        [[30.0, 30.0], [30.0, 0.0]]
        """
        potentials = dict(self.potentials)
        for attrs, mask in allowed_cells:
            attrs = tuple(attrs)
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != tuple(self.domain[a] for a in attrs):
                raise ValueError(f"The allowed cells of {attrs} need a mask of shape "
                                 f"{tuple(self.domain[a] for a in attrs)}, got {mask.shape}.")
            clique = self.domain.canonical(attrs)
            log_mask = np.where(np.transpose(mask, [attrs.index(a) for a in clique]), 0.0, _IMPOSSIBLE)
            host = next((c for c in potentials if set(clique) <= set(c)), None)
            if host is None:
                potentials[clique] = log_mask
            else:
                potentials[host] = potentials[host] + log_mask.reshape(broadcast_shape(self.domain, host, clique))
        constrained = GraphicalModel(self.domain, potentials, self.total)
        constrained._calibrate()
        self._calibrate()
        # log Z' − log Z is the log-probability the model gives the allowed cells.
        if not constrained._log_partition - self._log_partition > _IMPOSSIBLE / 2:
            raise ValueError("The model gives the allowed cells probability 0: no record can satisfy the "
                             "constraints.")
        return constrained

    def synthetic_data(self, n_records: int | None = None, method: str = "round", random_state=None) -> np.ndarray:
        """Integer codes of ``n_records`` synthetic records (default ``round(total)``).

        See :func:`skdpsynth.graphical.sampling.sample_model` for the methods.
        """
        from .sampling import sample_model

        return sample_model(self, n_records, method=method, random_state=random_state)

    def __getstate__(self):
        # The junction tree and the calibration are caches; rebuilt on demand.
        return {"domain": self.domain, "potentials": self.potentials, "total": self.total}

    def __setstate__(self, state):
        self.__init__(state["domain"], state["potentials"], state["total"])

    def __repr__(self) -> str:
        return f"GraphicalModel({len(self.potentials)} cliques, total={self.total:.1f}, {len(self.domain)} attributes)"
