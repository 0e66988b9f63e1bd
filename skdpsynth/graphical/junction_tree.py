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

import networkx as nx
import numpy as np

from ..domain import Domain

__all__ = ["JunctionTree", "elimination_order", "model_size_mb"]

Clique = tuple[str, ...]


def _interaction_graph(domain: Domain, cliques: Iterable[Iterable[str]]) -> nx.Graph:
    graph = nx.Graph()
    graph.add_nodes_from(domain.attrs)
    for clique in cliques:
        clique = list(clique)
        graph.add_edges_from((a, b) for i, a in enumerate(clique) for b in clique[i + 1 :])
    return graph


def elimination_order(domain: Domain, cliques: Iterable[Iterable[str]]) -> list[str]:
    """Greedy min-weight elimination order of the interaction graph of ``cliques``.

    At each step the attribute whose elimination clique (itself and its current
    neighbours) has the fewest cells is eliminated; ties go to the one adding
    the fewest fill edges, then to domain order (deterministic).
    """
    graph = _interaction_graph(domain, cliques)
    adj = {v: set(graph[v]) for v in graph}
    position = {a: i for i, a in enumerate(domain.attrs)}
    order = []
    while adj:
        def cost(v):
            nbrs = adj[v]
            cells = domain.size(nbrs | {v})
            fill = sum(1 for a in nbrs for b in nbrs if a < b and b not in adj[a])
            return (cells, fill, position[v])

        v = min(adj, key=cost)
        nbrs = adj.pop(v)
        for a in nbrs:
            adj[a].discard(v)
            adj[a] |= nbrs - {a}
        order.append(v)
    return order


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

    @classmethod
    def from_cliques(cls, domain: Domain, cliques: Iterable[Iterable[str]]) -> "JunctionTree":
        """Junction tree covering every attribute of ``domain`` and every clique given."""
        cliques = [domain.canonical(c) for c in cliques]
        order = elimination_order(domain, cliques)
        graph = _interaction_graph(domain, cliques)
        adj = {v: set(graph[v]) for v in graph}
        elim_cliques: list[frozenset] = []
        for v in order:
            nbrs = adj.pop(v)
            elim_cliques.append(frozenset(nbrs | {v}))
            for a in nbrs:
                adj[a].discard(v)
                adj[a] |= nbrs - {a}
        maximal = [c for c in elim_cliques if not any(c < o for o in elim_cliques)]
        maximal = list(dict.fromkeys(maximal))  # dedupe, keep order
        # Root the tree at the largest clique: it is visited first when sampling.
        maximal.sort(key=lambda c: -domain.size(c))
        tree = nx.Graph()
        tree.add_nodes_from(range(len(maximal)))
        for i in range(len(maximal)):
            for j in range(i + 1, len(maximal)):
                # Zero-weight edges keep the tree connected across independent components.
                tree.add_edge(i, j, weight=len(maximal[i] & maximal[j]))
        tree = nx.maximum_spanning_tree(tree) if len(maximal) > 1 else tree
        bfs = [0] + [v for _, v in nx.bfs_edges(tree, 0)] if len(maximal) > 1 else [0]
        new_index = {old: new for new, old in enumerate(bfs)}
        parent_old = dict(nx.bfs_predecessors(tree, 0)) if len(maximal) > 1 else {}
        ordered = [domain.canonical(maximal[old]) for old in bfs]
        parent = [-1] + [new_index[parent_old[old]] for old in bfs[1:]]
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

    def clique_containing(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique containing ``attrs``, or ``None``."""
        attrs = set(attrs)
        best = None
        for i, c in enumerate(self.cliques):
            if attrs <= set(c) and (best is None or self.domain.size(c) < self.domain.size(self.cliques[best])):
                best = i
        return best


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


def sum_out(table: np.ndarray, clique: Sequence[str], keep: Iterable[str]) -> np.ndarray:
    """Sum a table over ``clique`` down to the attributes in ``keep`` (result in canonical order)."""
    axes = _index_axes(clique, keep)
    return table.sum(axis=axes) if axes else table
