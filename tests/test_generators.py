"""Tests of skdpsynth.benchmarks.generators (issue 16: seeded wide-table generator)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from skdpsynth import Domain
from skdpsynth.benchmarks.generators import BayesianNetwork, random_bayesian_network

# Statistical checks: each cell count of an empirical conditional table must be within
# Z binomial standard deviations of its expectation, plus one count for discreteness
# (with n*p << 1 a single occurrence is already "many sigmas"), under fixed seeds.
Z = 5.0


def _same_network(a: BayesianNetwork, b: BayesianNetwork) -> bool:
    return (
        a.domain == b.domain
        and a.order == b.order
        and a.parents == b.parents
        and all(np.array_equal(a.cpts[x], b.cpts[x]) for x in a.domain)
    )


def _check_conditionals(net: BayesianNetwork, frame: pd.DataFrame) -> int:
    """Compare every empirical P(a | parent configuration) with the CPT; return the number of cells checked."""
    dom = net.domain
    checked = 0
    for a in dom:
        k = dom[a]
        pa = net.parents[a]
        child = frame[a].to_numpy().astype(np.int64)
        if pa:
            config = np.ravel_multi_index([frame[p].to_numpy().astype(np.int64) for p in pa], [dom[p] for p in pa])
        else:
            config = np.zeros(len(frame), dtype=np.int64)
        rows = net.cpts[a].reshape(-1, k)
        counts = np.zeros(rows.shape, dtype=np.int64)
        np.add.at(counts, (config, child), 1)
        n_c = counts.sum(axis=1, keepdims=True)
        expected = n_c * rows
        sd = np.sqrt(n_c * rows * (1 - rows))
        excess = np.abs(counts - expected) - (Z * sd + 1)
        assert (excess <= 0).all(), (a, np.unravel_index(np.argmax(excess), excess.shape), excess.max())
        checked += int((n_c > 0).sum()) * k
    return checked


# -- determinism ---------------------------------------------------------------------------------------------------


def test_same_seed_same_network_and_sample():
    a = random_bayesian_network(30, max_values=15, random_state=7)
    b = random_bayesian_network(30, max_values=15, random_state=7)
    assert _same_network(a, b)
    pd.testing.assert_frame_equal(a.sample(5000, random_state=3), b.sample(5000, random_state=3))
    # A Generator is accepted and advanced like any other draw of the package.
    g1, g2 = np.random.default_rng(11), np.random.default_rng(11)
    assert _same_network(random_bayesian_network(10, random_state=g1), random_bayesian_network(10, random_state=g2))


def test_different_seeds_differ():
    a = random_bayesian_network(30, max_values=15, random_state=1)
    b = random_bayesian_network(30, max_values=15, random_state=2)
    assert not _same_network(a, b)
    assert a.domain != b.domain or a.order != b.order or a.parents != b.parents
    s1, s2 = a.sample(2000, random_state=1), a.sample(2000, random_state=2)
    assert not s1.equals(s2)


def test_sample_chunks_match_sample():
    net = random_bayesian_network(12, max_values=30, random_state=0)
    whole = net.sample(10_001, random_state=5, chunk_rows=1024)
    chunks = list(net.sample_chunks(10_001, random_state=5, chunk_rows=1024))
    assert [len(c) for c in chunks] == [1024] * 9 + [785]
    assert chunks[1].index[0] == 1024
    pd.testing.assert_frame_equal(pd.concat(chunks), whole)


# -- structure -----------------------------------------------------------------------------------------------------


def test_structure_sizes_parents_and_tables():
    net = random_bayesian_network(60, min_values=3, max_values=40, max_parents=3, max_cpt_cells=5000, random_state=4)
    dom = net.domain
    assert len(dom) == 60 and dom.attrs == tuple(f"a{i:02d}" for i in range(60))
    assert all(3 <= s <= 40 for s in dom.shape)
    assert sorted(net.order) == sorted(dom.attrs)
    assert net.parents[net.order[0]] == ()
    position = {a: t for t, a in enumerate(net.order)}
    for a in dom:
        pa = net.parents[a]
        assert len(pa) <= 3
        assert all(position[p] < position[a] for p in pa)
        assert pa == dom.canonical(pa)  # parents listed in domain order
        cpt = net.cpts[a]
        assert cpt.shape == tuple(dom[p] for p in pa) + (dom[a],)
        assert cpt.size <= 5000
        assert (cpt >= 0).all()
        np.testing.assert_allclose(cpt.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
        assert not cpt.flags.writeable
    # Non-first attributes keep at least one parent unless the cap forbids every single one.
    for a in net.order[1:]:
        if not net.parents[a]:
            assert min(dom[p] for p in net.order[: position[a]]) * dom[a] > 5000
    assert {(p, c) for p, c in net.edges} == {(p, a) for a in dom for p in net.parents[a]}


def test_cap_drops_parents_and_defaults():
    # With 50-100 values and 3 parents, uncapped tables would have up to 10**8 cells.
    net = random_bayesian_network(15, min_values=50, max_values=100, max_parents=3, random_state=0)
    assert all(c.size <= 1_000_000 for c in net.cpts.values())
    assert max(len(p) for p in net.parents.values()) == 2
    independent = random_bayesian_network(8, max_parents=0, random_state=0)
    assert independent.edges == []


def test_sample_shape_dtype_and_codes():
    net = random_bayesian_network(50, min_values=2, max_values=20, random_state=0)
    frame = net.sample(200_000, random_state=1)
    assert frame.shape == (200_000, 50)
    assert list(frame.columns) == list(net.domain.attrs)
    assert (frame.dtypes == np.uint8).all()
    assert isinstance(frame.index, pd.RangeIndex)
    codes = frame.to_numpy()
    assert (codes.max(axis=0) < np.array(net.domain.shape)).all()
    # Every value of every attribute shows up in 200,000 rows unless its marginal is tiny.
    assert frame.nunique().sum() > 0.9 * sum(net.domain.shape)

    wide = random_bayesian_network(4, min_values=200, max_values=400, max_parents=1, random_state=0)
    assert max(wide.domain.shape) > 256
    f16 = wide.sample(1000, random_state=0)
    assert (f16.dtypes == np.uint16).all()
    f64 = wide.sample(1000, random_state=0, dtype="int64")
    assert (f64.dtypes == np.int64).all()
    pd.testing.assert_frame_equal(f64, f16.astype(np.int64))

    empty = net.sample(0, random_state=0)
    assert empty.shape == (0, 50) and list(empty.columns) == list(net.domain.attrs)


def test_names_and_repr():
    net = random_bayesian_network(3, names=["x", "y", "z"], random_state=0)
    assert net.domain.attrs == ("x", "y", "z")
    assert "n_attributes=3" in repr(net)


# -- statistical correctness ---------------------------------------------------------------------------------------


def test_empirical_conditionals_match_cpts():
    # 4 attributes with 2-6 values, up to 2 parents: at most 36 configurations per child,
    # so 200,000 rows give thousands of rows per configuration.
    net = random_bayesian_network(4, min_values=2, max_values=6, max_parents=2, random_state=3)
    assert len(net.edges) >= 3
    frame = net.sample(200_000, random_state=12)
    assert _check_conditionals(net, frame) > 50


def test_empirical_conditionals_large_domains_and_chunk_edges():
    # Sizes that are not powers of two (padding of the binary search) and many blocks.
    net = random_bayesian_network(3, min_values=60, max_values=100, max_parents=1, random_state=8)
    frame = net.sample(200_000, random_state=2, chunk_rows=3001)
    assert _check_conditionals(net, frame) > 1000


def test_hand_built_network_exact_zeros_and_marginals():
    dom = Domain(["b", "a"], [5, 3])
    cpt_a = np.array([0.0, 0.3, 0.7])
    cpt_b = np.array(
        [
            [0.0, 0.0, 0.5, 0.5, 0.0],  # never 0, 1 or 4 given a = 0
            [1.0, 0.0, 0.0, 0.0, 0.0],  # deterministic
            [0.1, 0.2, 0.3, 0.0, 0.4],
        ]
    )
    net = BayesianNetwork(domain=dom, order=("a", "b"), parents={"a": (), "b": ("a",)}, cpts={"a": cpt_a, "b": cpt_b})
    assert cpt_b.flags.writeable  # the caller's array is not frozen
    n = 100_000
    frame = net.sample(n, random_state=0)
    assert list(frame.columns) == ["b", "a"]
    a, b = frame["a"].to_numpy(), frame["b"].to_numpy()
    assert not (a == 0).any()
    assert (b[a == 1] == 0).all()
    assert not (b[a == 2] == 3).any()
    share = (a == 2).mean()
    assert abs(share - 0.7) <= Z * np.sqrt(0.7 * 0.3 / n)
    _check_conditionals(net, frame)


# -- argument checks -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"n_attributes": 0}, ValueError),
        ({"n_attributes": 5, "min_values": 1}, ValueError),
        ({"n_attributes": 5, "min_values": 6, "max_values": 5}, ValueError),
        ({"n_attributes": 5, "max_values": 50, "max_cpt_cells": 40}, ValueError),
        ({"n_attributes": 5, "concentration": 0.0}, ValueError),
        ({"n_attributes": 5, "skew": -1.0}, ValueError),
        ({"n_attributes": 5, "names": ["a", "b"]}, ValueError),
        ({"n_attributes": 2.5}, TypeError),
    ],
)
def test_generator_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error):
        random_bayesian_network(**kwargs)


def test_network_rejects_inconsistent_tables():
    dom = Domain(["a", "b"], [2, 3])
    good = {"a": np.array([0.5, 0.5]), "b": np.full((2, 3), 1 / 3)}
    BayesianNetwork(dom, ("a", "b"), {"a": (), "b": ("a",)}, good)
    with pytest.raises(ValueError, match="precede"):
        BayesianNetwork(dom, ("b", "a"), {"a": (), "b": ("a",)}, good)
    with pytest.raises(ValueError, match="shape"):
        BayesianNetwork(dom, ("a", "b"), {"a": (), "b": ()}, good)
    with pytest.raises(ValueError, match="sum to 1"):
        BayesianNetwork(dom, ("a", "b"), {"a": (), "b": ("a",)}, {**good, "a": np.array([0.5, 0.6])})
    with pytest.raises(ValueError, match="negative"):
        BayesianNetwork(dom, ("a", "b"), {"a": (), "b": ("a",)}, {**good, "a": np.array([1.5, -0.5])})
    with pytest.raises(ValueError, match="order"):
        BayesianNetwork(dom, ("a",), {"a": (), "b": ("a",)}, good)
    with pytest.raises(TypeError):
        BayesianNetwork({"a": 2, "b": 3}, ("a", "b"), {"a": (), "b": ("a",)}, good)


def test_sample_rejects_bad_arguments():
    net = random_bayesian_network(4, min_values=200, max_values=300, random_state=0)
    with pytest.raises(ValueError, match="cannot hold"):
        net.sample(10, dtype="int8")
    with pytest.raises(ValueError, match="integer dtype"):
        net.sample(10, dtype="float64")
    with pytest.raises(ValueError):
        net.sample(-1)
    with pytest.raises(ValueError):
        net.sample(10, chunk_rows=0)
