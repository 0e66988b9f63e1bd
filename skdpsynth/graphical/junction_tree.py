"""Junction trees over the cliques of a graphical model.

The measured cliques induce a Markov network over the attributes.  A greedy
elimination order (each step removes the attribute whose elimination creates
the smallest table, ties broken by fill-in) gives a chordal completion whose
elimination cliques, reduced to the maximal ones, are joined by a maximum
spanning tree on separator sizes: a junction tree (running-intersection
property).  Its total table size is what inference costs, so it is also the
model size that AIM's ``max_model_size`` guards.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import prod

import numpy as np

from ..domain import Domain
from . import tables as _tables

__all__ = ["JunctionTree", "elimination_order", "model_size_mb"]

Clique = tuple[str, ...]


def _eliminate(domain: Domain, cliques: Iterable[Iterable[str]],
               attrs: Sequence[str] | None = None) -> tuple[list[str], list[frozenset]]:
    """Greedy min-weight elimination: the order and each step's elimination clique.

    Over ``attrs`` (a subset of the domain, in domain order, holding every
    clique's attributes; default the whole domain): the same result as on
    ``domain.project(attrs)``, without building it.
    """
    attrs = domain.attrs if attrs is None else list(attrs)
    index = {a: i for i, a in enumerate(attrs)}
    sizes = [domain[a] for a in attrs]
    adj: dict[int, set[int]] = {i: set() for i in range(len(attrs))}
    for clique in cliques:
        ids = [index[a] for a in clique]
        for u in ids:
            adj[u].update(ids)
    for u in adj:
        adj[u].discard(u)

    def cells_of(v: int) -> int:
        cells = sizes[v]
        for u in adj[v]:
            cells *= sizes[u]
        return cells

    def fill_of(v: int) -> int:
        nbrs = adj[v]
        return sum(len(nbrs - adj[u]) - 1 for u in nbrs)  # each missing edge counted twice

    cells = {v: cells_of(v) for v in adj}
    order, elim_cliques = [], []
    while adj:
        least = min(cells.values())
        tied = [v for v, c in cells.items() if c == least]
        # Fill-in only breaks ties, so it is computed only for them.
        v = tied[0] if len(tied) == 1 else min(tied, key=lambda u: (fill_of(u), u))
        nbrs = adj.pop(v)
        del cells[v]
        for u in nbrs:
            adj[u].discard(v)
            adj[u] |= nbrs
            adj[u].discard(u)
            cells[u] = cells_of(u)
        order.append(attrs[v])
        elim_cliques.append(frozenset(attrs[u] for u in nbrs | {v}))
    return order, elim_cliques


def junction_tree_cells(domain: Domain, cliques: Iterable[Iterable[str]], attrs: Sequence[str] | None = None) -> int:
    """Cells of :meth:`JunctionTree.from_cliques` over ``attrs`` (see ``_eliminate``), without building the tree."""
    order, elim_cliques = _eliminate(domain, cliques, attrs)
    cells = 0
    for i, (v, c) in enumerate(zip(order, elim_cliques)):
        # Only an earlier elimination clique can hold v (later ones are past it), so only those can contain c.
        if not any(v in o and c <= o for o in elim_cliques[:i]):
            cells += prod(domain[a] for a in c)
    return cells


def elimination_order(domain: Domain, cliques: Iterable[Iterable[str]]) -> list[str]:
    """Greedy min-weight elimination order of the interaction graph of ``cliques``.

    At each step the attribute whose elimination clique (itself and its current
    neighbours) has the fewest cells is eliminated; ties go to the one adding
    the fewest fill edges, then to domain order (deterministic).

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import elimination_order
    >>> dom = Domain(["a", "b", "c", "d"], [5, 4, 3, 2])
    >>> elimination_order(dom, [("a", "b"), ("b", "c"), ("c", "d")])
    ['d', 'c', 'a', 'b']
    """
    return _eliminate(domain, cliques)[0]


@dataclass
class JunctionTree:
    """A junction tree of maximal cliques, rooted, with a message schedule.

    Build it with :meth:`from_cliques`.  Cliques are canonical (domain order)
    attribute tuples.

    Attributes
    ----------
    domain : Domain
    cliques : list of tuple
        Maximal cliques of the chordal completion, in breadth-first order from
        the root (``cliques[0]``).
    parent : list of int
        ``parent[i]`` is the index of clique ``i``'s parent (``-1`` for the root).
    children : list of list of int
    separators : list of tuple
        ``separators[i]`` = ``cliques[i] ∩ cliques[parent[i]]`` (canonical; empty for the root).
    order : list of str
        The elimination order used.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import JunctionTree
    >>> dom = Domain(list("abcd"), [2, 3, 4, 5])
    >>> jt = JunctionTree.from_cliques(dom, [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")])
    >>> sorted(len(c) for c in jt.cliques)
    [3, 3]
    >>> jt.size()
    64
    """

    domain: Domain
    cliques: list[Clique]
    parent: list[int]
    children: list[list[int]]
    separators: list[Clique]
    order: list[str] = field(default_factory=list)
    _containing: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _plan: list | None = field(default=None, init=False, repr=False, compare=False)
    _components: dict | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_cliques(cls, domain: Domain, cliques: Iterable[Iterable[str]]) -> "JunctionTree":
        """Junction tree covering every attribute of ``domain`` and every clique given."""
        cliques = [domain.canonical(c) for c in cliques]
        order, elim_cliques = _eliminate(domain, cliques)
        maximal = [c for c in elim_cliques if not any(c < o for o in elim_cliques)]
        maximal = list(dict.fromkeys(maximal))  # dedupe, keep order
        # Root the tree at the largest clique: it is visited first when sampling.
        maximal.sort(key=lambda c: -domain.size(c))
        # Prim's maximum spanning tree on separator sizes (zero-weight edges keep
        # independent components in one tree, with empty separators).
        n = len(maximal)
        link = {0: -1}
        best = {j: (len(maximal[0] & maximal[j]), 0) for j in range(1, n)}
        while best:
            j = max(best, key=lambda k: (best[k][0], -k))
            link[j] = best.pop(j)[1]
            for k in best:
                w = len(maximal[j] & maximal[k])
                if w > best[k][0]:
                    best[k] = (w, j)
        kids: dict[int, list[int]] = {i: [] for i in range(n)}
        for j, p in link.items():
            if p >= 0:
                kids[p].append(j)
        bfs = [0]
        for i in bfs:
            bfs.extend(kids[i])
        new_index = {old: new for new, old in enumerate(bfs)}
        ordered = [domain.canonical(maximal[old]) for old in bfs]
        parent = [-1] + [new_index[link[old]] for old in bfs[1:]]
        children: list[list[int]] = [[] for _ in ordered]
        for i, p in enumerate(parent):
            if p >= 0:
                children[p].append(i)
        separators = [()] + [
            domain.canonical(set(ordered[i]) & set(ordered[parent[i]])) for i in range(1, len(ordered))
        ]
        return cls(domain, ordered, parent, children, separators, order)

    def size(self) -> int:
        """Total number of cells of the clique tables."""
        return sum(self.domain.size(c) for c in self.cliques)

    def size_mb(self) -> float:
        """Memory of the clique tables in MiB at float64."""
        return self.size() * 8 / 2**20

    def same_structure(self, other: "JunctionTree") -> bool:
        """Same cliques in the same order, with the same parents: tables made for one fit the other."""
        return other is self or (self.cliques == other.cliques and self.parent == other.parent
                                 and self.domain == other.domain)

    def clique_containing(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs``, or ``None`` (memoised)."""
        key = frozenset(attrs)
        if key not in self._containing:
            best = None
            for i, c in enumerate(self.cliques):
                if key <= set(c) and (best is None or self.domain.size(c) < self.domain.size(self.cliques[best])):
                    best = i
            self._containing[key] = best
        return self._containing[key]

    def attribute_components(self) -> dict[str, int]:
        """Each attribute's independent component: cliques joined by non-empty separators (memoised).

        Attributes in different components are independent under any model on
        this tree, so their joint marginal is the product of their marginals.
        """
        if self._components is None:
            label = [0] * len(self.cliques)
            for i in range(1, len(self.cliques)):  # breadth-first: a parent is labelled before its children
                label[i] = label[self.parent[i]] if self.separators[i] else i
            self._components = {a: label[i] for i, c in enumerate(self.cliques) for a in c}
        return self._components

    def message_plan(self) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """Per clique ``i`` (root excluded): how its separator with the parent sits in each of the two.

        ``(axes of clique i summed out, separator shape inside clique i, axes of
        the parent summed out, separator shape inside the parent)``; memoised.
        """
        if self._plan is None:
            dom = self.domain
            plan = [None]
            for i in range(1, len(self.cliques)):
                sep, clique, par = self.separators[i], self.cliques[i], self.cliques[self.parent[i]]
                plan.append(
                    (
                        _index_axes(clique, sep),
                        broadcast_shape(dom, clique, sep),
                        _index_axes(par, sep),
                        broadcast_shape(dom, par, sep),
                    )
                )
            self._plan = plan
        return self._plan


def model_size_mb(domain: Domain, cliques: Sequence[Iterable[str]]) -> float:
    """Size in MiB of the junction tree that ``cliques`` would induce (AIM's model-size guard).

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import model_size_mb
    >>> dom = Domain(["a", "b", "c"], [1024, 1024, 2])
    >>> round(model_size_mb(dom, [("a", "b"), ("b", "c")]), 3)
    8.016
    """
    return JunctionTree.from_cliques(domain, cliques).size_mb()


def _index_axes(clique: Sequence[str], sub: Iterable[str]) -> tuple[int, ...]:
    sub = set(sub)
    return tuple(i for i, a in enumerate(clique) if a not in sub)


def broadcast_shape(domain: Domain, clique: Sequence[str], sub: Iterable[str]) -> tuple[int, ...]:
    """Shape that lets a table over ``sub`` broadcast against a table over ``clique``."""
    sub = set(sub)
    return tuple(domain[a] if a in sub else 1 for a in clique)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SUBSCRIPTS: dict[tuple[int, tuple[int, ...]], str] = {}


def reduce_axes(table: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Sum ``table`` over ``axes`` (kept axes stay in order).

    Where BLAS runs on one thread (estimation runs in
    :func:`.tables.single_threaded_blas`), by BLAS products with vectors of ones (:func:`.tables.sum_over`);
    otherwise by ``einsum``, because numpy's multi-axis ``sum`` is several
    times slower when a kept axis is the innermost one, which is common here.
    Large tables are summed slab by slab by threads (:mod:`.tables`).
    """
    if not axes:
        return table
    if table.size >= _tables.PARALLEL_CELLS:
        summed = _tables.reduce_in_slabs(table, axes, _reduce_axes)
        if summed is not None:
            return summed
    return _reduce_axes(table, axes)


def _reduce_axes(table: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    summed = _tables.sum_over(table, axes)   # BLAS products, where they apply
    if summed is not None:
        return summed
    if table.ndim > len(_LETTERS):
        return table.sum(axis=axes)
    key = (table.ndim, axes)
    spec = _SUBSCRIPTS.get(key)
    if spec is None:
        letters = _LETTERS[: table.ndim]
        spec = f"{letters}->{''.join(l for i, l in enumerate(letters) if i not in axes)}"
        _SUBSCRIPTS[key] = spec
    return np.einsum(spec, table)


def sum_out(table: np.ndarray, clique: Sequence[str], keep: Iterable[str]) -> np.ndarray:
    """Sum a table over ``clique`` down to the attributes in ``keep`` (result in canonical order)."""
    return reduce_axes(table, _index_axes(clique, keep))
