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


@pytest.mark.parametrize("parallel", [False, True])
def test_operands_with_short_runs_are_widened_to_the_same_values(monkeypatch, parallel):
    """Broadcast operands whose innermost runs are short are widened (a small copy) before the pass: the
    results are bit for bit numpy's, for operands given as arrays with one cell on axes or as broadcast views,
    in place or not, whole or in slabs."""
    if parallel:
        monkeypatch.setattr(tables, "PARALLEL_CELLS", 1)
    rng = np.random.default_rng(7)
    shape = (85, 9, 16, 7, 6, 2, 2)
    table = rng.normal(size=shape)
    widened = 0
    for operand_shape in [(85, 9, 1, 1, 1, 1, 2), (1, 1, 1, 1, 1, 2, 2), (85, 1, 16, 7, 6, 2, 2),
                          (1, 9, 16, 1, 1, 1, 1), (85, 9, 16, 7, 1, 1, 1), (1, 1, 1, 1, 1, 1, 1)]:
        small = rng.normal(size=operand_shape)
        wide = tables._widening(operand_shape, shape)
        if wide is not None:
            widened += 1
            assert np.prod(wide) <= table.size // tables._WIDEN_FRACTION
            assert tables._inner_run(wide, shape) >= tables._SHORT_RUN > tables._inner_run(operand_shape, shape)
        view = np.broadcast_to(small, shape)
        for operand in (small, view):
            np.testing.assert_array_equal(tables.add(table, operand), table + small)
            np.testing.assert_array_equal(tables.add(operand, table), small + table)
            own = table.copy()
            tables.add(own, operand, out=own)
            np.testing.assert_array_equal(own, table + small)
            scaled = table.copy()
            tables.multiply_inplace(scaled, operand)
            np.testing.assert_array_equal(scaled, table * small)
            np.testing.assert_array_equal(tables.step(table, 0.3, operand), table - 0.3 * small)
            # A table given as a broadcast view (assembled potentials are): the step is still full-sized.
            np.testing.assert_array_equal(tables.step(view, 0.3, table), small - 0.3 * table)
    assert widened == 2   # the first two: runs of 2 and 4 cells


@pytest.mark.parametrize("shape", [(85, 9, 16, 7, 6, 2, 2), (3, 70000), (300000,), (2,) * 19, (5, 1, 40000), (8, 8)])
def test_blocks_cover_every_cell_once(shape):
    seen = np.zeros(shape, dtype=np.int64)
    groups = tables._blocks(shape)
    assert 1 <= len(groups) <= tables._SLABS
    for group in groups:
        for index in group:
            part = seen[index]
            assert part.ndim == len(shape)   # every axis kept: operands broadcast the same way in a block
            assert part.size <= max(tables._BLOCK_CELLS, shape[-1])
            part += 1
    assert (seen == 1).all()


@pytest.mark.parametrize("threads", ["1", "3"])
def test_step_with_several_terms_and_multiply_and_measure_equal_numpy(monkeypatch, threads):
    """The step sums its terms block by block, in order: bit for bit ``table − size · ((t1 + t2) + t3)``.
    multiply_and_measure's table is numpy's product, its maximum exact, and its sum the same with any
    number of threads."""
    monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", threads)
    rng = np.random.default_rng(3)
    for shape in [(85, 9, 16, 7, 6, 2, 2), (6, 5, 4)]:
        table = rng.normal(size=shape)
        t1 = rng.normal(size=shape[:2] + (1,) * (len(shape) - 3) + shape[-1:])
        t2 = rng.normal(size=(1,) + shape[1:])
        t3 = np.broadcast_to(rng.normal(size=shape[:1] + (1,) * (len(shape) - 1)), shape)
        np.testing.assert_array_equal(tables.step(table, 0.3, [t1, t2, t3]), table - 0.3 * ((t1 + t2) + t3))
        np.testing.assert_array_equal(tables.step(table, 0.3, [t2]), table - 0.3 * t2)
        factor = np.exp(t1 - t1.max())
        scaled = table.copy()
        peak, total = tables.multiply_and_measure(scaled, factor)
        np.testing.assert_array_equal(scaled, table * factor)
        assert peak == scaled.max()
        assert total == pytest.approx(scaled.sum(), rel=1e-12)
        monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", "1")
        again = table.copy()
        assert tables.multiply_and_measure(again, factor) == (peak, total)
        monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", threads)


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
    from skdpsynth.utils import _pools
    assert ("tables", 2, os.getpid()) in _pools   # the parent's own pool, made before the fork


def _blas_threads() -> int:
    return max(library.get_num_threads() for library in tables._blas().lib_controllers)


def test_sums_by_blas_products_equal_einsum():
    rng = np.random.default_rng(3)
    cases = [((21, 9, 16, 7, 6, 2, 2), (2, 3, 4, 6)),      # trailing run, then a 0/1-matrix product
             ((3, 16, 7, 15, 6, 5, 2, 2), (3, 5)),          # 0/1 matrix, then a batch of products
             ((2, 15, 6, 5, 2, 99, 2), (0, 4)),              # a batch (many kept cells), then a leading run
             ((64, 70, 3), (0, 1)), ((5000, 2), (0,)), ((2, 5000), (1,)), ((40, 1, 50, 1, 3), (0, 2, 3)),
             ((17, 19, 23), (0, 1, 2)), ((9, 8, 70, 11), (1, 3))]
    for _ in range(40):    # and random ones
        shape = tuple(int(n) for n in rng.integers(1, 12, rng.integers(2, 7)))
        axes = tuple(sorted(set(int(a) for a in rng.integers(0, len(shape), rng.integers(1, len(shape) + 1)))))
        cases.append((shape, axes))
    kinds = set()
    with tables.single_threaded_blas():
        for shape, axes in cases:
            table = rng.random(shape)
            expected = np.einsum(table, list(range(len(shape))), [i for i in range(len(shape)) if i not in axes])
            summed = tables.sum_over(table, axes)
            if table.size < tables._BLAS_MIN_CELLS:
                assert summed is None
                continue
            assert summed.shape == expected.shape
            np.testing.assert_allclose(summed, expected, rtol=1e-13, atol=0)
            kinds.update(step[0] for step in tables._sum_plan(shape, axes)[0])
    assert kinds == {"right", "left", "indicator", "batch"}


def test_sums_by_blas_only_where_blas_runs_on_one_thread():
    from threadpoolctl import threadpool_limits

    table = np.random.default_rng(4).random((30, 40, 50))
    with threadpool_limits(2, user_api="blas"):
        assert not tables.blas_is_single_threaded()
        assert tables.sum_over(table, (1,)) is None       # the caller sums with einsum
        with tables.single_threaded_blas():
            assert tables.blas_is_single_threaded()
            assert tables.sum_over(table, (1,)) is not None
            assert tables.sum_over(np.asfortranarray(table), (1,)) is None    # not C-ordered


def test_blas_answer_is_remembered_only_while_a_block_is_open(monkeypatch):
    from threadpoolctl import threadpool_limits

    libraries = tables._blas().lib_controllers
    calls = []
    for library in libraries:
        asked = library.get_num_threads
        monkeypatch.setattr(library, "get_num_threads", lambda asked=asked: calls.append(1) or asked())
    with tables.single_threaded_blas():
        calls.clear()                                 # (setting the limit reads the libraries' own)
        for _ in range(5):
            assert tables.blas_is_single_threaded()
        assert len(calls) == len(libraries)          # asked once after the block set its limit
    # No block open: every call asks, so a limit set by the caller's own code is seen at once.
    with threadpool_limits(2, user_api="blas"):
        assert not tables.blas_is_single_threaded()
        with threadpool_limits(1, user_api="blas"):
            assert tables.blas_is_single_threaded()
        assert not tables.blas_is_single_threaded()


def test_single_threaded_blas_blocks_nest_and_each_thread_lifts_its_own():
    import threading

    from threadpoolctl import threadpool_limits

    with threadpool_limits(2, user_api="blas"):
        with tables.single_threaded_blas():
            with tables.single_threaded_blas():
                assert _blas_threads() == 1
            assert _blas_threads() == 1        # the inner block's end does not lift the outer one's limit
        assert _blas_threads() == 2
        # Blocks of two threads overlapping: this thread's limit is lifted when its own block ends.  (threadpoolctl
        # lets one thread at a time set OpenBLAS's process-wide limit: the other thread's block may not set one.)
        inside, release = threading.Event(), threading.Event()

        def other():
            with tables.single_threaded_blas():
                inside.set()
                release.wait(10)
        thread = threading.Thread(target=other)
        with tables.single_threaded_blas():
            thread.start()
            inside.wait(10)
            assert _blas_threads() == 1
        assert _blas_threads() == 2
        release.set()
        thread.join()
        assert _blas_threads() == 2


def test_workers_sum_like_the_thread_that_calls_them(slabs_everywhere, monkeypatch):
    """Whatever BLAS limit reaches a thread that is not the main one, the workers it calls sum as it does."""
    import threading

    from threadpoolctl import threadpool_limits

    monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", "3")
    table = np.random.default_rng(6).random((8, 300, 40))
    expected = np.einsum("abc->ac", table)
    results = {}

    def caller():
        with tables.single_threaded_blas():
            results["caller"] = tables.blas_is_single_threaded()
            results["workers"] = tables._map(lambda _: tables.blas_is_single_threaded(), list(range(6)))
            results["sums"] = reduce_axes(table, (1,))
    with threadpool_limits(2, user_api="blas"):
        thread = threading.Thread(target=caller)
        thread.start()
        thread.join()
        assert _blas_threads() == 2
    assert results["workers"] == [results["caller"]] * 6
    np.testing.assert_allclose(results["sums"], expected, rtol=1e-13)


def test_estimation_sums_do_not_depend_on_the_number_of_threads(slabs_everywhere, monkeypatch):
    rng = np.random.default_rng(5)
    # Slabs of 5 000+ cells: summed by BLAS products.
    dom = Domain([f"x{i}" for i in range(5)], [32, 30, 28, 30, 26])
    cliques = [("x0", "x1", "x2"), ("x2", "x3", "x4"), ("x0", "x4"), ("x1",)]
    ms = [Measurement(c, rng.poisson(50.0, dom.size(c)).astype(float), 5.0) for c in cliques]
    used, sum_over = [], tables.sum_over

    def counted(table, axes):
        summed = sum_over(table, axes)
        used.append(summed is not None)
        return summed
    monkeypatch.setattr(tables, "sum_over", counted)
    fits = {}
    for threads in ("1", "3"):
        monkeypatch.setenv("SKDPSYNTH_NUM_THREADS", threads)
        model, _ = mirror_descent(dom, ms, iters=30, tol=0.0)
        fits[threads] = model.project(["x0", "x1", "x2"])
    assert any(used)
    np.testing.assert_array_equal(fits["1"], fits["3"])
