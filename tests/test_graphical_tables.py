"""Passes over large tables in slabs (graphical/tables.py): the same numbers as whole-table numpy, whatever
the number of threads."""
from __future__ import annotations

import numpy as np
import pytest

from skdpsynth import Domain
from skdpsynth.graphical import JunctionTree, Measurement, belief_propagation, mirror_descent
from skdpsynth.graphical import tables
from skdpsynth.graphical.inference import assemble_potentials
from skdpsynth.graphical.junction_tree import _reduce_axes, reduce_axes


@pytest.fixture
def slabs_everywhere(monkeypatch):
    """Every table is cut into slabs (the threshold is for speed only)."""
    monkeypatch.setattr(tables, "PARALLEL_CELLS", 1)


@pytest.mark.parametrize("threads", ["1", "3"])
def test_slab_operations_equal_whole_table_numpy(slabs_everywhere, monkeypatch, threads):
    monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", threads)
    rng = np.random.default_rng(0)
    for shape in [(7, 3, 5), (1, 6, 4, 2), (1, 1, 9), (2,), (5, 1, 3)]:
        table = rng.normal(size=shape)
        for axes in [(0,), (len(shape) - 1,), tuple(range(len(shape))), tuple(range(1, len(shape)))]:
            axes = tuple(sorted(set(axes)))
            np.testing.assert_allclose(reduce_axes(table, axes), _reduce_axes(table, axes), rtol=1e-13, atol=1e-13)
        assert tables.maximum(table) == table.max()
        assert tables.total(table) == pytest.approx(table.sum(), rel=1e-13, abs=1e-13)
        np.testing.assert_array_equal(tables.exp_shifted(table, 0.5), np.exp(table - 0.5))
        own = table.copy()
        tables.exp_shifted(own, 0.5, out=own)
        np.testing.assert_array_equal(own, np.exp(table - 0.5))
        # Factors that broadcast: one cell on the cut axis, or the whole axis.
        for factor in [2.5, rng.normal(size=(1,) * (len(shape) - 1) + shape[-1:]), rng.normal(size=shape[:1] + (1,) * (len(shape) - 1))]:
            scaled = table.copy()
            tables.multiply_inplace(scaled, factor)
            np.testing.assert_array_equal(scaled, table * factor)
            np.testing.assert_array_equal(tables.add(table, factor + np.zeros(shape)), table + factor)
            np.testing.assert_array_equal(tables.add(np.broadcast_to(factor, shape), table), factor + table)
        direction = np.broadcast_to(rng.normal(size=shape[:1] + (1,) * (len(shape) - 1)), shape)
        np.testing.assert_array_equal(tables.step(table, 0.3, direction), table - 0.3 * direction)


def test_inference_does_not_depend_on_the_number_of_threads(slabs_everywhere, monkeypatch):
    rng = np.random.default_rng(1)
    dom = Domain([f"x{i}" for i in range(6)], [3, 4, 2, 5, 3, 4])
    cliques = [("x0", "x1", "x2"), ("x2", "x3"), ("x3", "x4", "x5"), ("x1", "x5")]
    jt = JunctionTree.from_cliques(dom, cliques)
    potentials = {c: rng.normal(0, 2, dom.shape_of(c)) for c in cliques}
    results = {}
    for threads in ("1", "2", "4"):
        monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", threads)
        results[threads] = belief_propagation(jt, assemble_potentials(jt, potentials), 100.0)
    for threads in ("2", "4"):
        for a, b in zip(results["1"][0], results[threads][0]):
            np.testing.assert_array_equal(a, b)
        assert results["1"][1] == results[threads][1]
    # The same marginals as whole-table passes, to rounding.
    monkeypatch.setattr(tables, "PARALLEL_CELLS", 2**62)
    whole, log_z = belief_propagation(jt, assemble_potentials(jt, potentials), 100.0)
    for a, b in zip(results["1"][0], whole):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert results["1"][1] == pytest.approx(log_z, rel=1e-13)


def test_mirror_descent_in_slabs_fits_the_same_model(monkeypatch):
    rng = np.random.default_rng(2)
    dom = Domain(list("abcd"), [4, 3, 5, 2])
    truth = rng.dirichlet(np.ones(dom.size(dom.attrs))).reshape(dom.shape_of(dom.attrs)) * 1000
    ms = [Measurement(c, truth.sum(axis=tuple(i for i, a in enumerate(dom.attrs) if a not in c)).ravel()
                      + rng.normal(0, 3, dom.size(c)), 3.0) for c in [("a", "b"), ("b", "c"), ("c", "d"), ("a",)]]
    whole, info_whole = mirror_descent(dom, ms, iters=100, tol=0.0)
    monkeypatch.setattr(tables, "PARALLEL_CELLS", 1)
    monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", "2")
    slabs, info_slabs = mirror_descent(dom, ms, iters=100, tol=0.0)
    assert info_slabs.loss == pytest.approx(info_whole.loss, rel=1e-9)
    np.testing.assert_allclose(slabs.project(["a", "d"]), whole.project(["a", "d"]), rtol=1e-8)


def test_a_forked_process_makes_its_own_threads(slabs_everywhere, monkeypatch):
    import multiprocessing
    import os

    monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", "2")
    table = np.arange(24.0).reshape(4, 6)
    assert tables.maximum(table) == 23.0   # the pool exists in this process now
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        # In the child the inherited pool has no threads: a pass must not wait on them forever.
        result = pool.apply_async(tables.maximum, (table,))
        assert result.get(timeout=30) == 23.0
    assert os.getpid() == tables._pool_pid
