"""How far a model's marginals can have moved since an earlier model: cheap, exact upper bounds.

AIM scores every candidate marginal each round by how far the model is from
the data on it; after a round the model has changed, but on most candidates
by very little.  :func:`marginal_change_bounds` bounds, for many cliques at
once and without computing their marginals, how much each one's marginal can
have moved, so that a selection step only needs to recompute the scores that
could matter (:func:`~skdpsynth.privacy.lazy_exponential_mechanism`).

The bound.  Let ``p`` (the model) and ``q`` (the earlier one) both factorise
over the junction tree ``T`` of ``p`` (true whenever every potential of ``q``
lies in a clique of ``T``: the model only grew).  For a connected subtree of
``T`` with top clique ``t``, the joint over its attributes is
``p_t Π_C p(C \\ S_C | S_C)`` in both models, and the chain rule of the L1
distance (``‖p_XY − q_XY‖₁ ≤ ‖p_X − q_X‖₁ + E_{p_X} ‖p_{Y|X} − q_{Y|X}‖₁``)
gives ``‖p_r − q_r‖₁ ≤ ‖p_t − q_t‖₁ + Σ_{C ≠ t} δ_C`` with
``δ_C = Σ_s p(s) ‖p(· | s) − q(· | s)‖₁``, for any clique ``r`` the subtree
covers (marginalising never increases L1).  Attributes in different
connected components (subtrees joined by empty separators) are independent
in both models, and ``‖p_X p_Y − q_X q_Y‖₁ ≤ ‖p_X − q_X‖₁ + ‖p_Y − q_Y‖₁``:
a clique's part in each component is bounded on its own, so a change in one
component (typically the clique just measured) leaves the bounds in the
others alone.  The per-clique terms come from the two models' clique
marginals; each candidate's subtrees (those joining the top cliques of its
attributes, one per component) are summed with lowest common ancestors,
vectorised over all candidates.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .inference import assemble_potentials, belief_propagation
from .junction_tree import reduce_axes

__all__ = ["clique_index", "marginal_change_bounds"]


def clique_index(domain, cliques: Sequence[Sequence[str]]) -> np.ndarray:
    """``cliques`` as a matrix of attribute indices, one row each, padded with the row's first index.

    Pass it to :func:`marginal_change_bounds` in place of the cliques when the
    same cliques are bounded many times.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical.bounds import clique_index
    >>> dom = Domain(["a", "b", "c"], [2, 3, 4])
    >>> clique_index(dom, [("a",), ("b", "c")]).tolist()
    [[0, 0], [1, 2]]
    """
    width = max((len(c) for c in cliques), default=1)
    out = np.empty((len(cliques), width), dtype=np.intp)
    for row, clique in zip(out, cliques):
        ids = [domain.index(a) for a in clique]
        row[:] = ids + ids[:1] * (width - len(ids))
    return out


def marginal_change_bounds(model, previous, cliques) -> np.ndarray:
    """Upper bounds of ``‖p_r − q_r‖₁`` for each clique ``r``: how much its marginal moved.

    Parameters
    ----------
    model, previous : GraphicalModel
        ``p`` and ``q``, as normalised distributions (their totals play no
        part).  Every potential of ``previous`` must lie in a clique of
        ``model``'s junction tree (true when ``model``'s cliques include
        ``previous``'s, as in AIM's rounds).
    cliques : sequence of tuples, or ndarray
        The cliques, or their :func:`clique_index` matrix.

    Returns
    -------
    numpy.ndarray of shape (n_cliques,)
        Each at least the exact change and at most 2.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel
    >>> from skdpsynth.graphical.bounds import marginal_change_bounds
    >>> dom = Domain(["a", "b", "c"], [2, 2, 2])
    >>> old = GraphicalModel(dom, {("a", "b"): np.log([[1, 2], [3, 4]])}, total=10)
    >>> new = GraphicalModel(dom, {("a", "b"): np.log([[1, 2], [3, 4]]), ("b", "c"): np.log([[1, 1], [1, 3]])},
    ...                      total=10)
    >>> bound = marginal_change_bounds(new, old, [("a",), ("c",), ("a", "c")])
    >>> exact = [np.abs(new.probability(r) - old.probability(r)).sum() for r in [("a",), ("c",), ("a", "c")]]
    >>> bool(np.all(bound >= np.array(exact) - 1e-12))
    True
    """
    jt = model.junction_tree
    domain = model.domain
    n = len(jt.cliques)
    p = [m / model.total for m in model.clique_marginals]
    q, _ = belief_propagation(jt, assemble_potentials(jt, previous.potentials), 1.0)

    whole = np.array([np.abs(pc - qc).sum() for pc, qc in zip(p, q)])   # ‖p_C − q_C‖₁
    conditional = np.zeros(n)                                             # δ_C given the separator to the parent
    plan = jt.message_plan()
    for v in range(1, n):
        if not jt.separators[v]:
            conditional[v] = whole[v]
            continue
        own_axes, in_clique, _, _ = plan[v]
        p_sep = reduce_axes(p[v], own_axes).reshape(in_clique)
        q_sep = reduce_axes(q[v], own_axes).reshape(in_clique)
        # Where q(s) = 0, q(· | s) is arbitrary: take p(· | s), a zero term.
        ratio = np.divide(p_sep, q_sep, out=np.zeros_like(p_sep), where=q_sep > 0)
        terms = np.abs(p[v] - q[v] * ratio)
        conditional[v] = np.where(np.broadcast_to(q_sep > 0, terms.shape), terms, 0.0).sum()

    # Tree bookkeeping (breadth-first order: a parent comes before its children).  ``down`` restarts at every
    # component's top (an empty separator): paths never cross from one component into another.
    depth = np.zeros(n, dtype=np.intp)
    down = np.zeros(n)                       # Σ δ on the path from the component's top to v (its own excluded)
    component = np.zeros(n, dtype=np.intp)
    ancestor = np.zeros((n, n), dtype=bool)  # ancestor[v, u]: u is v or above it
    ancestor[0, 0] = True
    for v in range(1, n):
        u = jt.parent[v]
        depth[v] = depth[u] + 1
        if jt.separators[v]:
            down[v], component[v] = down[u] + conditional[v], component[u]
        else:
            component[v] = v
        ancestor[v] = ancestor[u]
        ancestor[v, v] = True
    preorder = np.empty(n, dtype=np.intp)
    stack, k = [0], 0
    while stack:
        v = stack.pop()
        preorder[v], k = k, k + 1
        stack.extend(reversed(jt.children[v]))
    common = ancestor[:, None, :] & ancestor[None, :, :]
    lca = np.argmax(np.where(common, depth[None, None, :], -1), axis=2)

    # Each attribute is placed at the top clique of its subtree of cliques (the first in breadth-first order).
    top = np.full(len(domain), -1, dtype=np.intp)
    for v in range(n - 1, -1, -1):
        top[[domain.index(a) for a in jt.cliques[v]]] = v
    index = cliques if isinstance(cliques, np.ndarray) else clique_index(domain, cliques)
    hosts = top[index]
    order_key = component[hosts] * n + preorder[hosts]
    hosts = np.take_along_axis(hosts, np.argsort(order_key, axis=1, kind="stable"), axis=1)
    # Per component, the subtree joining its hosts (sorted in depth-first order) is the union of their paths
    # from the component's top, minus what lies above their common ancestor J:
    # Σ_i D(h_i) − Σ_i D(lca(h_i, h_i+1)) − D(J), plus J's own whole-clique term.
    comp = component[hosts]
    same = comp[:, :-1] == comp[:, 1:]
    bound = down[hosts].sum(axis=1) - np.where(same, down[lca[hosts[:, :-1], hosts[:, 1:]]], 0.0).sum(axis=1)
    positions = np.broadcast_to(np.arange(hosts.shape[1]), hosts.shape)
    is_start = np.ones(hosts.shape, dtype=bool)
    is_start[:, 1:] = ~same
    is_end = np.ones(hosts.shape, dtype=bool)
    is_end[:, :-1] = ~same
    start = np.maximum.accumulate(np.where(is_start, positions, 0), axis=1)
    joint = lca[np.take_along_axis(hosts, start, axis=1), hosts]
    bound += np.where(is_end, whole[joint] - down[joint], 0.0).sum(axis=1)
    return np.minimum(bound, 2.0)
