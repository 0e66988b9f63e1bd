"""Exactness of the chunked counting engine behind ``marginal`` / ``marginals`` (issue 16).

Every table is checked against a naive reference (``np.add.at`` on an int64
flat index) over code dtypes, clique sizes 0-4, cell counts on both sides of
the uint8 / uint16 boundaries, chunk boundaries, weights, memory order, the
small-table and skewed-table (lanes) paths, and the superset reuse of
``marginals``.
"""
from __future__ import annotations

import inspect
import itertools
import tracemalloc

import numpy as np
import pytest

import skdpsynth.marginals as M
from skdpsynth import Domain
from skdpsynth.marginals import as_codes, marginal, marginals

DTYPES = [np.uint8, np.uint16, np.int32, np.intp, np.int8, np.int16, np.uint32, np.uint64]


def reference(codes, domain, clique, weights=None):
    clique = domain.canonical(clique)
    shape = domain.shape_of(clique)
    n = codes.shape[0]
    idx = np.zeros(n, np.int64)
    for a in clique:
        idx = idx * domain[a] + codes[:, domain.index(a)].astype(np.int64)
    out = np.zeros(int(np.prod(shape, dtype=np.int64)), np.float64)
    np.add.at(out, idx, 1.0 if weights is None else np.asarray(weights, np.float64))
    return out.reshape(shape)


def random_codes(rng, n, sizes, dtype=np.intp, skew=0.0, order="F"):
    cols = []
    for s in sizes:
        c = rng.integers(0, s, n)
        if skew:
            c = np.where(rng.random(n) < skew, 0, c)
        cols.append(c)
    arr = np.column_stack(cols) if cols else np.empty((n, 0), np.intp)
    return np.asarray(arr.astype(dtype), order=order)


def assert_same(got, want, weighted=False):
    assert got.dtype == np.float64
    assert got.shape == want.shape
    if weighted:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 64 rows, so that small tables cross many chunk boundaries."""
    monkeypatch.setattr(M, "_CHUNK", 64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000])
def test_all_cliques_up_to_4_every_dtype(dtype, n, small_chunks):
    rng = np.random.default_rng(hash((np.dtype(dtype).str, n)) % 2**32)
    dom = Domain(["a", "b", "c", "d", "e"], [1, 2, 3, 7, 11])
    codes = random_codes(rng, n, dom.shape, dtype)
    for k in range(5):
        for clique in itertools.combinations(dom.attrs, k):
            # also in a non-canonical order
            got = marginal(codes, dom, clique[::-1])
            assert_same(got, reference(codes, dom, clique))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32, np.intp])
@pytest.mark.parametrize("n", [0, 5, 1000, 70_001])
def test_weights(dtype, n, small_chunks):
    rng = np.random.default_rng(7 + n)
    dom = Domain(["a", "b", "c"], [2, 9, 30])
    codes = random_codes(rng, n, dom.shape, dtype)
    w = rng.random(n) * 3
    for k in range(4):
        for clique in itertools.combinations(dom.attrs, k):
            want = reference(codes, dom, clique, w)
            assert_same(marginal(codes, dom, clique, w), want, weighted=True)
            assert_same(marginals(codes, dom, [clique], w)[dom.canonical(clique)], want, weighted=True)
    # integer weights are exact
    wi = rng.integers(0, 5, n)
    assert_same(marginal(codes, dom, ["a", "c"], wi), reference(codes, dom, ["a", "c"], wi))


@pytest.mark.parametrize(
    "sizes",
    [
        (255,), (256,), (257,),  # 1-way around the uint8 boundary
        (15, 17), (16, 16), (1, 256), (256, 1), (2, 128), (257, 1), (3, 86),  # 255, 256, 256, 256, 256, 257, 258
        (255, 257), (256, 256), (1, 65536), (65536, 1), (257, 255, 1), (65537,), (2, 32769),  # 65535 .. 65538
        (64,), (65,), (16, 4), (13, 5), (4096,), (4097,), (64, 64), (64, 65),  # lanes: 4 x cells crosses 256 / 65536
    ],
)
@pytest.mark.parametrize("skew", [0.0, 0.95])
def test_cell_counts_across_dtype_boundaries(sizes, skew):
    rng = np.random.default_rng(sum(sizes) + int(skew * 100))
    dom = Domain([f"x{i}" for i in range(len(sizes))], sizes)
    n = 300_001  # > 2 chunks of 2^17, not a multiple
    dtype = np.uint8 if max(sizes) <= 256 else np.uint16 if max(sizes) <= 65536 else np.uint32
    codes = random_codes(rng, n, sizes, dtype, skew=skew)
    # force the largest code of every column to appear
    for j, s in enumerate(sizes):
        codes[j, j] = s - 1
    want = reference(codes, dom, dom.attrs)
    for arr in (codes, codes.astype(np.intp, order="F")):
        assert_same(marginal(arr, dom, dom.attrs), want)
    assert_same(marginal(codes, dom, dom.attrs, np.ones(n)), want)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.intp, np.int16])
def test_memory_order_and_skewed_data(order, dtype):
    rng = np.random.default_rng(3)
    dom = Domain(["a", "b", "c", "d"], [2, 3, 40, 100])
    n = 2**17 * 2 + 12_345
    codes = random_codes(rng, n, dom.shape, dtype, skew=0.9, order=order)
    cliques = list(itertools.combinations(dom.attrs, 2)) + [("a",), ("d",), ("b", "c", "d")]
    for c in cliques:
        assert_same(marginal(codes, dom, c), reference(codes, dom, c))
    got = marginals(codes, dom, cliques)
    for c in cliques:
        assert_same(got[dom.canonical(c)], reference(codes, dom, c))


def test_as_codes_output_unchanged_and_counted():
    df_codes = np.array([[0, 2, 1], [1, 0, 1], [1, 2, 0], [0, 2, 1]])
    dom = Domain(["a", "b", "c"], [2, 3, 2])
    codes = as_codes(df_codes, dom)
    assert codes.dtype == np.intp and codes.flags.f_contiguous
    assert_same(marginal(codes, dom, ["c", "a"]), reference(codes, dom, ["a", "c"]))


def test_marginals_reuse_and_one_pass(monkeypatch):
    calls = []
    real = M._count

    def spy(codes, sizes, cliques, weights=None, chunk=None):
        calls.append([tuple(c) for c in cliques])
        return real(codes, sizes, cliques, weights, chunk)

    monkeypatch.setattr(M, "_count", spy)
    rng = np.random.default_rng(11)
    dom = Domain(["a", "b", "c", "d"], [2, 3, 4, 50])
    wanted = [("a", "b", "c"), ("a", "b"), ("c",), ("c", "d"), ("d",), ("b", "d"), ()]
    for n, w in [(1000, None), (1000, rng.random(1000)), (10, None), (0, None)]:
        codes = random_codes(rng, n, dom.shape, np.uint8)
        calls.clear()
        got = marginals(codes, dom, wanted, w)
        assert set(got) == {dom.canonical(c) for c in wanted}
        for c in wanted:
            assert_same(got[dom.canonical(c)], reference(codes, dom, c, w), weighted=w is not None)
        assert len(calls) == 1, "all counted cliques go through a single pass"
        counted = set(calls[0])
        if n == 1000:
            # (a,b,c) has 24 < 1000 cells: (a,b) and (c,) are summed out of it; (c,d) has 200 < 1000
            # cells, so (d,) comes from it; (b,d) is not inside a counted clique.
            assert counted == {(0, 1, 2), (2, 3), (1, 3)}
        elif n == 10:
            # (a,b,c) has 24 >= 10 cells: nothing is summed out of it; only the empty clique is
            # (out of (a,b), 6 < 10 cells), and it is never counted from the data anyway.
            assert counted == {(0, 1, 2), (0, 1), (2,), (2, 3), (3,), (1, 3)}
    # a duplicated / reordered clique is counted once
    calls.clear()
    codes = random_codes(rng, 500, dom.shape, np.intp)
    got = marginals(codes, dom, [("b", "a"), ("a", "b")])
    assert list(got) == [("a", "b")] and calls == [[(0, 1)]]


def test_empty_and_zero_rows():
    dom = Domain(["a", "b"], [3, 4])
    for dtype in DTYPES:
        codes = np.empty((0, 2), dtype)
        assert_same(marginal(codes, dom, ["a", "b"]), np.zeros((3, 4)))
        assert marginal(codes, dom, []).shape == ()
        assert float(marginal(codes, dom, [])) == 0.0
    codes = np.array([[0, 1], [2, 3]], np.uint8)
    assert float(marginal(codes, dom, [])) == 2.0
    assert float(marginal(codes, dom, [], np.array([0.5, 2.0]))) == 2.5
    assert float(marginals(codes, dom, [()])[()]) == 2.0


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.intp])
def test_invalid_codes_raise(dtype, order):
    dom = Domain(["a", "b"], [3, 4])
    codes = np.array([[0, 1], [2, 3], [1, 0]], dtype, order=order)
    for bad in ((-1, 3) if codes.dtype.kind == "i" else (3, 300)):
        c = codes.copy(order="K")
        c[1, 0] = bad
        with pytest.raises(ValueError, match="outside") as info:
            marginal(c, dom, ["a", "b"])
        assert str(bad) not in str(info.value)          # a value of the (private) data is never quoted
        with pytest.raises(ValueError, match="outside"):
            marginals(c, dom, [["a"], ["a", "b"]])
    u = np.array([[0, 1], [2, 4]], np.uint8)
    with pytest.raises(ValueError, match="outside"):
        marginal(u, dom, ["b"])


def test_memory_bounded_by_chunk():
    rng = np.random.default_rng(5)
    dom = Domain([f"c{j}" for j in range(6)], [2, 7, 30, 60, 90, 100])
    n = 1 << 21
    codes = random_codes(rng, n, dom.shape, np.uint8)
    pairs = list(itertools.combinations(dom.attrs, 2))
    tracemalloc.start()
    try:
        marginal(codes, dom, ("c4", "c5"))
        single = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        marginals(codes, dom, pairs)
        batch = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # one intp index over all rows would be 16 MiB; the chunked engine stays near a few chunk buffers
    assert single < 4 * 2**20
    assert batch < 8 * 2**20


def test_public_signatures_unchanged():
    assert list(inspect.signature(marginal).parameters) == ["codes", "domain", "clique", "weights"]
    assert list(inspect.signature(marginals).parameters) == ["codes", "domain", "cliques", "weights"]
