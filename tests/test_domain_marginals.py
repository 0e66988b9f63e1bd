"""Domain and marginal counting."""
import itertools
import pickle

import numpy as np
import pandas as pd
import pytest

from skdpsynth import Domain
from skdpsynth.marginals import (
    as_codes,
    downward_closure,
    kway_cliques,
    marginal,
    marginals,
    maximal_cliques,
    workload,
)


@pytest.fixture
def dom():
    return Domain(["a", "b", "c", "d"], [2, 3, 4, 5])


def test_domain_basics(dom):
    assert list(dom) == ["a", "b", "c", "d"] and len(dom) == 4
    assert dom["c"] == 4 and dom.index("c") == 2 and "c" in dom and "z" not in dom
    assert dom.size() == 120 and dom.size(["d", "a"]) == 10 and dom.size([]) == 1
    assert dom.canonical(["d", "a", "d"]) == ("a", "d")
    assert dom.project(["d", "b"]) == Domain(["b", "d"], [3, 5])
    assert dom.marginalize(["a", "c"]).attrs == ("b", "d")
    assert dom.shape_of(("c", "a")) == (2, 4)
    assert Domain.from_dict(dom.to_dict()) == dom
    assert pickle.loads(pickle.dumps(dom)) == dom and hash(pickle.loads(pickle.dumps(dom))) == hash(dom)
    assert dom.union(Domain(["d", "e"], [5, 7])).attrs == ("a", "b", "c", "d", "e")


def test_domain_validation(dom):
    with pytest.raises(ValueError, match="Duplicate"):
        Domain(["a", "a"], [2, 2])
    with pytest.raises(ValueError, match=">= 1"):
        Domain(["a"], [0])
    with pytest.raises(ValueError, match="2 attributes but 1"):
        Domain(["a", "b"], [2])
    with pytest.raises(KeyError, match="'z'"):
        dom["z"]
    with pytest.raises(KeyError, match="not in the domain"):
        dom.canonical(["a", "z"])
    with pytest.raises(ValueError, match="size"):
        dom.union(Domain(["a"], [3]))


def random_codes(dom, n, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.integers(0, s, n) for s in dom.shape])


def test_marginal_matches_pandas_crosstab(dom):
    codes = random_codes(dom, 500)
    df = pd.DataFrame(codes, columns=list(dom))
    for clique in [("a",), ("b", "d"), ("d", "b"), ("a", "b", "c"), tuple(dom)]:
        canon = dom.canonical(clique)
        counts = df.groupby(list(canon)).size()
        expected = np.zeros(dom.shape_of(canon))
        for key, value in counts.items():
            expected[key if isinstance(key, tuple) else (key,)] = value
        np.testing.assert_array_equal(marginal(codes, dom, clique), expected)
    assert marginal(codes, dom, []) == 500
    w = np.linspace(0, 1, 500)
    assert marginal(codes, dom, ["a"], weights=w).sum() == pytest.approx(w.sum())


def test_batched_marginals_equal_one_by_one(dom):
    codes = random_codes(dom, 3000, seed=1)
    cliques = kway_cliques(dom, 1) + kway_cliques(dom, 2) + kway_cliques(dom, 3)
    batched = marginals(codes, dom, cliques + [("b", "a")])
    assert set(batched) == set(cliques)
    for c in cliques:
        np.testing.assert_array_equal(batched[c], marginal(codes, dom, c))


def test_as_codes_accepts_frames_arrays_and_categoricals(dom):
    codes = random_codes(dom, 50)
    df = pd.DataFrame(codes, columns=list(dom))
    np.testing.assert_array_equal(as_codes(df, dom), codes)
    np.testing.assert_array_equal(as_codes(df[["d", "c", "b", "a"]].assign(extra=1), dom), codes)
    np.testing.assert_array_equal(as_codes(codes.astype(float), dom), codes)
    cat = df.copy()
    cat["b"] = pd.Categorical.from_codes(codes[:, 1], categories=["x", "y", "z"])
    np.testing.assert_array_equal(as_codes(cat, dom), codes)


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda df: df.drop(columns="c"), "lacks"),
        (lambda df: df.assign(a=df["a"] + 5), "codes in"),
        (lambda df: df.assign(a=-1), "codes in"),
        (lambda df: df.assign(b=df["b"].astype(float).where(df.index > 0)), "missing"),
        (lambda df: df.assign(b=0.5), "non-integer"),
        (lambda df: df.assign(b="x"), "categorical"),
    ],
)
def test_as_codes_rejects_bad_data(dom, bad, message):
    df = pd.DataFrame(random_codes(dom, 20), columns=list(dom))
    with pytest.raises(ValueError, match=message):
        as_codes(bad(df), dom)


def test_as_codes_rejects_wrong_array_shape(dom):
    with pytest.raises(ValueError, match="4 columns"):
        as_codes(np.zeros((3, 2), dtype=int), dom)


def test_workload_helpers(dom):
    assert len(kway_cliques(dom, 2)) == 6
    assert kway_cliques(dom, 2, max_cells=8) == [("a", "b"), ("a", "c")]
    wl = workload(dom, ways=(1, 2), weights={("b", "a"): 3.0})
    assert len(wl) == 10 and dict(wl)[("a", "b")] == 3.0 and dict(wl)[("c", "d")] == 1.0
    assert all(w == 0.5 for _, w in workload(dom, ways=3, weights=0.5))
    assert [w for _, w in workload(dom, ways=1, weights=lambda c: dom.size(c))] == [2, 3, 4, 5]
    closure = downward_closure([("a", "b", "c"), ("c", "d")])
    expected = {s for c in [("a", "b", "c"), ("c", "d")] for k in (1, 2, 3) for s in itertools.combinations(c, k)}
    assert set(closure) == expected and len(closure) == len(expected)
    assert maximal_cliques([("a",), ("a", "b"), ("b", "a"), ("c",), ("b", "c", "d")]) == [("a", "b"), ("b", "c", "d")]
