"""marginal_change_bounds: never below the exact change of a marginal, and zero when nothing changed."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from skdpsynth import Domain
from skdpsynth.graphical import GraphicalModel
from skdpsynth.graphical.bounds import clique_index, marginal_change_bounds


def _random_models(rng):
    d = int(rng.integers(3, 8))
    dom = Domain([f"x{i}" for i in range(d)], list(rng.integers(2, 5, d)))
    attrs = list(dom.attrs)

    def clique(k):
        return dom.canonical(rng.choice(attrs, k, replace=False))
    old_cliques = list(dict.fromkeys(clique(int(rng.integers(1, 4))) for _ in range(int(rng.integers(1, 5)))))
    new_cliques = old_cliques + [clique(int(rng.integers(2, 4))) for _ in range(int(rng.integers(1, 3)))]
    scale = float(rng.choice([0.3, 1.0, 3.0]))
    old = {c: rng.normal(0, scale, dom.shape_of(c)) for c in old_cliques}
    new = dict.fromkeys(new_cliques)
    for c in new_cliques:   # the old potentials moved a little (or a lot), and new ones added
        new[c] = (old[c] if c in old else 0) + rng.normal(0, float(rng.choice([0.01, 0.3, 2.0])), dom.shape_of(c))
    return dom, GraphicalModel(dom, new, total=float(rng.uniform(10, 1000))), GraphicalModel(dom, old, total=100.0)


@pytest.mark.parametrize("seed", range(40))
def test_bounds_hold_for_every_small_marginal(seed):
    rng = np.random.default_rng(seed)
    dom, new, old = _random_models(rng)
    cliques = [c for k in (1, 2, 3) for c in itertools.combinations(dom.attrs, k)]
    bounds = marginal_change_bounds(new, old, cliques)
    exact = np.array([np.abs(new.probability(c) - old.probability(c)).sum() for c in cliques])
    assert np.all(bounds >= exact - 1e-12), np.max(exact - bounds)
    assert np.all(bounds <= 2.0)
    # The matrix form gives the same numbers.
    np.testing.assert_array_equal(marginal_change_bounds(new, old, clique_index(dom, cliques)), bounds)


def test_bounds_are_zero_for_the_same_model_and_local_to_the_change():
    rng = np.random.default_rng(1)
    dom = Domain([f"x{i}" for i in range(6)], [3] * 6)
    chain = [(f"x{i}", f"x{i + 1}") for i in range(5)]
    pots = {c: rng.normal(0, 1, (3, 3)) for c in chain}
    model = GraphicalModel(dom, pots, total=50.0)
    cliques = [c for k in (1, 2, 3) for c in itertools.combinations(dom.attrs, k)]
    assert np.all(marginal_change_bounds(model, model, cliques) <= 1e-12)
    # Changing the potential at one end of the chain (x4, x5) leaves the bound of x0's marginal tiny
    # against that of x5's: the bound follows the tree, it is not one global distance.
    moved = GraphicalModel(dom, {**pots, ("x4", "x5"): pots[("x4", "x5")] + rng.normal(0, 2, (3, 3))}, total=50.0)
    b = dict(zip([("x0",), ("x5",)], marginal_change_bounds(moved, model, [("x0",), ("x5",)])))
    exact_x5 = np.abs(moved.probability(["x5"]) - model.probability(["x5"])).sum()
    assert b[("x5",)] >= exact_x5 > 0.05
    assert b[("x0",)] < b[("x5",)] / 2


def test_a_change_in_one_component_leaves_the_bounds_in_the_others_alone():
    # A new clique (x0, x1) joins nothing else: marginals of the other, unchanged components have not moved, and
    # their bounds say so; the tree joins components through a root clique, and a bound that went through it
    # charged them the new clique's whole move.
    dom = Domain([f"x{i}" for i in range(5)], [2, 2, 2, 2, 3])
    pots = {("x2", "x3"): np.log([[1.0, 2.0], [3.0, 4.0]]), ("x4",): np.log([1.0, 2.0, 3.0])}
    old = GraphicalModel(dom, pots, total=100.0)
    new = GraphicalModel(dom, {**pots, ("x0", "x1"): np.array([[2.0, -1.0], [-1.0, 1.0]])}, total=100.0)
    cliques = [("x2", "x4"), ("x3", "x4"), ("x2", "x3", "x4"), ("x0", "x4"), ("x0", "x1")]
    bounds = dict(zip(cliques, marginal_change_bounds(new, old, cliques)))
    assert all(bounds[c] < 1e-12 for c in cliques[:3])
    for c in cliques[3:]:
        exact = np.abs(new.probability(c) - old.probability(c)).sum()
        assert bounds[c] >= exact - 1e-12 and exact > 0.1
