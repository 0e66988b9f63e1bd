"""Junction trees, belief propagation, estimation and sampling against brute force."""
import itertools
import os
import pickle
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from skdpsynth import Domain
from skdpsynth.graphical import (
    GraphicalModel,
    JunctionTree,
    Measurement,
    minimum_variance_total,
    mirror_descent,
    model_size_mb,
    randomized_round,
)
from skdpsynth.graphical.inference import assemble_potentials, belief_propagation, greedy_elimination_order
from skdpsynth.marginals import marginal

DOM = Domain(list("abcde"), [2, 3, 4, 2, 3])
STRUCTURES = {
    "tree": [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")],
    "cycle": [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("d", "e")],
    "missing_attribute": [("a", "b"), ("b", "c")],
    "triples": [("a", "b", "c"), ("c", "d", "e"), ("a", "e")],
    "full": [tuple("abcde")],
    "duplicates": [("a", "b"), ("b", "a"), ("a", "b"), ("c",)],
    "disconnected": [("a", "b"), ("c", "d")],
    "three_components": [("a", "c"), ("c", "e"), ("b",)],
}


def joint_from_potentials(dom, potentials):
    log_joint = np.zeros(dom.shape)
    for clique, table in potentials.items():
        log_joint = log_joint + table.reshape([dom[a] if a in clique else 1 for a in dom])
    return log_joint


def brute_marginal(joint, dom, attrs):
    return joint.sum(axis=tuple(i for i, a in enumerate(dom) if a not in attrs))


@pytest.fixture(params=[False, True], ids=["log-tables", "exp-tables"])
def exp_tables(request, monkeypatch):
    """Run a test as it is (this file's tables are small: log-tables) and with every table exponentiated
    between mirror-descent steps (graphical.exp_tables), which only large tables are by default."""
    if request.param:
        monkeypatch.setattr("skdpsynth.graphical.exp_tables._MIN_CELLS", 1)
    return request.param


def random_potentials(dom, cliques, rng, scale=2.0):
    return {dom.canonical(c): rng.normal(scale=scale, size=dom.shape_of(c)) for c in cliques}


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_junction_tree_is_valid(name):
    cliques = STRUCTURES[name]
    jt = JunctionTree.from_cliques(DOM, cliques)
    assert set().union(*map(set, jt.cliques)) == set(DOM.attrs)
    for c in cliques:
        assert jt.clique_containing(c) is not None
    # A tree over the cliques...
    tree = nx.Graph()
    tree.add_nodes_from(range(len(jt.cliques)))
    tree.add_edges_from((i, p) for i, p in enumerate(jt.parent) if p >= 0)
    assert nx.is_tree(tree)
    # ... with the running-intersection property: the cliques holding an attribute are connected.
    for a in DOM:
        holding = [i for i, c in enumerate(jt.cliques) if a in c]
        assert nx.is_connected(tree.subgraph(holding))
    for i, p in enumerate(jt.parent):
        if p >= 0:
            assert set(jt.separators[i]) == set(jt.cliques[i]) & set(jt.cliques[p])


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_attribute_components_are_the_connected_components_of_the_cliques(name):
    graph = nx.Graph()
    graph.add_nodes_from(DOM.attrs)
    for c in STRUCTURES[name]:
        graph.add_edges_from(itertools.combinations(c, 2))
    expected = sorted(sorted(c) for c in nx.connected_components(graph))
    component = JunctionTree.from_cliques(DOM, STRUCTURES[name]).attribute_components()
    found: dict = {}
    for a, k in component.items():
        found.setdefault(k, []).append(a)
    assert sorted(sorted(c) for c in found.values()) == expected


def test_junction_tree_cells_equal_the_built_tree_on_random_structures():
    from skdpsynth.graphical.junction_tree import junction_tree_cells

    rng = np.random.default_rng(5)
    for _ in range(200):
        d = int(rng.integers(3, 14))
        dom = Domain([f"x{i}" for i in range(d)], list(rng.integers(2, 9, d)))
        attrs = list(dom.attrs)
        cliques = [tuple(rng.choice(attrs, int(rng.integers(1, 4)), replace=False)) for _ in range(rng.integers(1, 9))]
        assert junction_tree_cells(dom, cliques) == JunctionTree.from_cliques(dom, cliques).size()
        # Over the attributes the cliques touch: the tree of the projected domain.
        used = [a for a in attrs if any(a in c for c in cliques)]
        sub = dom.project(used)
        assert junction_tree_cells(dom, cliques, used) == JunctionTree.from_cliques(sub, cliques).size()


def test_model_size_counts_junction_tree_cells():
    dom = Domain(["a", "b", "c", "d"], [10, 20, 30, 40])
    # A 4-cycle triangulates into two triangles sharing an edge.
    size = model_size_mb(dom, [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")])
    jt = JunctionTree.from_cliques(dom, [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")])
    assert len(jt.cliques) == 2 and all(len(c) == 3 for c in jt.cliques)
    assert size == pytest.approx(sum(dom.size(c) for c in jt.cliques) * 8 / 2**20)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_belief_propagation_matches_brute_force(name):
    rng = np.random.default_rng(1)
    pots = random_potentials(DOM, STRUCTURES[name], rng)
    model = GraphicalModel(DOM, pots, total=1.0)
    log_joint = joint_from_potentials(DOM, model.potentials)
    joint = np.exp(log_joint - log_joint.max())
    joint /= joint.sum()
    jt = model.junction_tree
    for clique, table in zip(jt.cliques, model.clique_marginals):
        np.testing.assert_allclose(table, brute_marginal(joint, DOM, clique), rtol=0, atol=1e-10)
    # Subsets of cliques, and sets no clique contains (variable elimination).
    for k in (1, 2, 3):
        for attrs in itertools.combinations(DOM.attrs, k):
            np.testing.assert_allclose(model.project(attrs), brute_marginal(joint, DOM, attrs), rtol=0, atol=1e-10)
    _, log_z = belief_propagation(jt, assemble_potentials(jt, model.potentials))
    m = log_joint.max()
    assert log_z == pytest.approx(m + np.log(np.exp(log_joint - m).sum()), abs=1e-10)


@pytest.mark.parametrize("offset", [0.0, 800.0, 5000.0])
def test_belief_propagation_is_exact_with_large_offsetting_potentials(offset):
    """Long mirror-descent runs move potentials along directions that leave the model unchanged (+g on one
    clique, −g on an overlapping one); past e^±700 a table's slices underflow, and the marginals must not."""
    rng = np.random.default_rng(4)
    pots = random_potentials(DOM, STRUCTURES["tree"], rng)
    exact = joint_from_potentials(DOM, pots)
    pots[("a", "b")][:, 1] -= offset           # b = 1 moved from (a, b) to (b, c)
    pots[("b", "c")][1, :] += offset
    pots[("b", "c")][:, 2] += 2 * offset       # c = 2 moved from (c, d) to (b, c)
    pots[("c", "d")][2, :] -= 2 * offset       # the sum over cliques is unchanged for every record
    np.testing.assert_allclose(joint_from_potentials(DOM, pots), exact, atol=1e-9)
    model = GraphicalModel(DOM, pots, total=1.0)
    joint = np.exp(exact - exact.max())
    joint /= joint.sum()
    for clique, table in zip(model.junction_tree.cliques, model.clique_marginals):
        np.testing.assert_allclose(table, brute_marginal(joint, DOM, clique), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_out_of_clique_marginals_by_elimination_match_brute_force(name, monkeypatch):
    """The fallback used when numpy's contraction order would loop over far too many index combinations."""
    import skdpsynth.graphical.model as model_module

    monkeypatch.setattr(model_module, "_largest_loop", lambda *args: np.inf)
    monkeypatch.setattr(GraphicalModel, "_project_by_messages", lambda self, attrs, max_work=None: None)
    rng = np.random.default_rng(3)
    model = GraphicalModel(DOM, random_potentials(DOM, STRUCTURES[name], rng), total=1.0)
    log_joint = joint_from_potentials(DOM, model.potentials)
    joint = np.exp(log_joint - log_joint.max())
    joint /= joint.sum()
    for k in (2, 3):
        for attrs in itertools.combinations(DOM.attrs, k):
            np.testing.assert_allclose(model.project(attrs), brute_marginal(joint, DOM, attrs), rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_out_of_clique_marginals_by_messages_match_brute_force(seed, monkeypatch):
    """Deeper junction trees (9 attributes, random cliques): every 2- and 3-way marginal, most of them by the
    memoised messages, the others by the subtree contraction, all equal to the brute-force joint's."""
    rng = np.random.default_rng(seed)
    dom = Domain([f"x{i}" for i in range(9)], list(rng.integers(2, 4, 9)))
    cliques = [dom.canonical(rng.choice(dom.attrs, int(rng.integers(2, 4)), replace=False)) for _ in range(7)]
    model = GraphicalModel(dom, random_potentials(dom, cliques, rng), total=1.0)
    log_joint = joint_from_potentials(dom, model.potentials)
    joint = np.exp(log_joint - log_joint.max())
    joint /= joint.sum()
    used = []
    by_messages = GraphicalModel._project_by_messages
    monkeypatch.setattr(GraphicalModel, "_project_by_messages",
                        lambda self, attrs, max_work=None: used.append(attrs) or by_messages(self, attrs, max_work))
    for k in (2, 3):
        for attrs in itertools.combinations(dom.attrs, k):
            np.testing.assert_allclose(model.project(attrs), brute_marginal(joint, dom, attrs), rtol=0, atol=1e-12)
    assert len(used) > 20 and len(model._messages) > 0
    # With the memo's memory bound at one byte every message is dropped as soon as the next one comes: same results.
    import skdpsynth.graphical.model as model_module

    monkeypatch.setattr(model_module, "_MESSAGE_MEMO_BYTES", 1)
    bounded = GraphicalModel(dom, model.potentials, total=1.0)
    for attrs in itertools.combinations(dom.attrs, 3):
        np.testing.assert_allclose(bounded.project(attrs), brute_marginal(joint, dom, attrs), rtol=0, atol=1e-12)
    assert len(bounded._messages) <= 1


_HASH_PROBE = """
import hashlib, itertools
import numpy as np
from skdpsynth import Domain
from skdpsynth.graphical import GraphicalModel
rng = np.random.default_rng(1)
dom = Domain([f"x{i}" for i in range(14)], list(rng.integers(4, 9, 14)))
cliques = [dom.canonical(rng.choice(dom.attrs, 3, replace=False)) for _ in range(12)]
model = GraphicalModel(dom, {c: rng.normal(scale=2.0, size=dom.shape_of(c)) for c in cliques}, total=1e5)
digest = hashlib.sha256()
for attrs in itertools.combinations(dom.attrs, 3):
    digest.update(np.ascontiguousarray(model.project(attrs)).tobytes())
print(digest.hexdigest())
"""


def test_out_of_clique_marginals_are_bitwise_identical_across_processes():
    """Python's string hashing is seeded per process, so any set order that reaches numpy's summation order
    makes the same marginal differ in its last bits between processes (a seeded fit would then not repeat).
    Every 3-way marginal of a 14-attribute model, in processes with different hash seeds: identical bytes.
    (Before the contraction labels were made canonical, three hash seeds gave three different digests.)"""
    digests = set()
    for hash_seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run([sys.executable, "-c", _HASH_PROBE], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        digests.add(run.stdout.strip())
    assert len(digests) == 1


def test_out_of_clique_marginals_from_many_threads_at_once():
    """AIM scores candidates in threads sharing one model: started on an uncalibrated model, with the switch
    interval shortened so the threads interleave inside the lazily built tables and memos, every 3-way marginal
    matches the one computed alone (to rounding: the memos' state may pick another contraction order)."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(1)
    dom = Domain([f"x{i}" for i in range(14)], list(rng.integers(4, 9, 14)))
    cliques = [dom.canonical(rng.choice(dom.attrs, 3, replace=False)) for _ in range(12)]
    potentials = {c: rng.normal(scale=2.0, size=dom.shape_of(c)) for c in cliques}
    triples = list(itertools.combinations(dom.attrs, 3))
    alone = GraphicalModel(dom, potentials, total=1e5)
    expected = [alone.project(attrs) for attrs in triples]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(5):
            shared = GraphicalModel(dom, potentials, total=1e5)
            with ThreadPoolExecutor(4) as pool:
                got = list(pool.map(shared.project, triples))
            for a, b in zip(got, expected):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.parametrize("seed", range(4))
def test_relaxed_messages_replace_a_poor_elimination_order(seed, monkeypatch):
    """When numpy's contraction order loops too widely, the messages are tried again with their size limit
    relaxed before the greedy elimination: same marginals as brute force, by that path (or by elimination when
    even the relaxed limit is exceeded)."""
    import skdpsynth.graphical.model as model_module

    rng = np.random.default_rng(seed)
    dom = Domain([f"x{i}" for i in range(9)], list(rng.integers(2, 4, 9)))
    cliques = [dom.canonical(rng.choice(dom.attrs, int(rng.integers(2, 4)), replace=False)) for _ in range(7)]
    log_joint = None
    calls = []
    by_messages = GraphicalModel._project_by_messages

    def only_relaxed(self, attrs, max_work=None):
        calls.append(max_work is not None)
        return by_messages(self, attrs, max_work) if max_work is not None else None

    monkeypatch.setattr(model_module, "_largest_loop", lambda *args: np.inf)
    monkeypatch.setattr(GraphicalModel, "_project_by_messages", only_relaxed)
    eliminated = []
    by_elimination = GraphicalModel._eliminate
    by_plan = GraphicalModel._elimination_plan
    monkeypatch.setattr(GraphicalModel, "_eliminate",
                        lambda self, *args: eliminated.append(1) or by_elimination(self, *args))
    for cells, elimination_work in ((model_module._RELAXED_MESSAGE_CELLS, np.inf), (1, np.inf),
                                    (model_module._RELAXED_MESSAGE_CELLS, 0)):
        monkeypatch.setattr(model_module, "_RELAXED_MESSAGE_CELLS", cells)
        monkeypatch.setattr(GraphicalModel, "_elimination_plan",
                            lambda self, *args, work=elimination_work: (by_plan(self, *args)[0], work))
        model = GraphicalModel(dom, random_potentials(dom, cliques, rng), total=1.0)
        log_joint = joint_from_potentials(dom, model.potentials)
        joint = np.exp(log_joint - log_joint.max())
        joint /= joint.sum()
        calls.clear(), eliminated.clear()
        for attrs in itertools.combinations(dom.attrs, 3):
            np.testing.assert_allclose(model.project(attrs), brute_marginal(joint, dom, attrs), rtol=0, atol=1e-12)
        relaxed_calls = sum(calls)
        if cells > 1 and elimination_work:   # every out-of-clique marginal by the relaxed messages
            assert relaxed_calls > 10 and not eliminated
        else:   # the relaxed size limit, or the elimination's smaller work, refuses all: elimination for each
            assert len(eliminated) == relaxed_calls > 10


def test_elimination_plan_counts_what_the_greedy_elimination_loops_over():
    dom = Domain(["a", "b", "c", "d"], [2, 3, 5, 7])
    model = GraphicalModel(dom, {}, total=1.0)
    # Chain a-b, b-c, c-d down to (a, d): greedy eliminates b (a·b·c = 30 < b·c·d = 105), then c (a·c·d = 70), then
    # the output (a·d = 14).
    assert model._elimination_plan([("a", "b"), ("b", "c"), ("c", "d")], ("a", "d")) == (["b", "c"], 30 + 70 + 14)
    # (The growth cost would take c first, b·c·d = 105, then b, a·b·d = 42: 161 in all, so the first order stays.)
    assert greedy_elimination_order(dom, [("a", "b"), ("b", "c"), ("c", "d")], ("a", "d"), growth=True) == (["c", "b"],
                                                                                                          161)


def test_elimination_plan_keeps_the_cheaper_of_two_greedy_orders():
    dom = Domain(list("abcde"), [2, 6, 6, 2, 5])
    model = GraphicalModel(dom, {}, total=1.0)
    scopes, attrs = [("a", "b", "c"), ("d", "e"), ("a", "b", "d")], ("c", "e")
    # Smallest combined factor: d (a·b·d·e = 120), then a (a·b·c·e = 360), then b (b·c·e = 180), output 30.
    assert greedy_elimination_order(dom, scopes, attrs, growth=False) == (["d", "a", "b"], 690)
    # Least growth: b (a·c·d = 24 replaces 72 + 24; loops over a·b·c·d = 144), then a (c·d = 12 replaces 24; 24),
    # then d (c·d·e = 60), output 30.
    assert greedy_elimination_order(dom, scopes, attrs, growth=True) == (["b", "a", "d"], 258)
    assert model._elimination_plan(scopes, attrs) == (["b", "a", "d"], 258)
    # And the elimination in that order is exact.
    rng = np.random.default_rng(0)
    factors = [(c, rng.random(dom.shape_of(c))) for c in scopes]
    joint = np.einsum(factors[0][1], [0, 1, 2], factors[1][1], [3, 4], factors[2][1], [0, 1, 3], [0, 1, 2, 3, 4])
    label = {a: k for k, a in enumerate(dom.attrs)}
    np.testing.assert_allclose(model._eliminate(factors, attrs, label, ["b", "a", "d"]), joint.sum(axis=(0, 1, 3)),
                               rtol=1e-12)


def test_largest_loop_counts_the_widest_contraction():
    from skdpsynth.graphical.model import _largest_loop

    # Operands over {0,1}, {1,2}, {2,3}, output {0,3}; axis sizes 2, 3, 5, 7.
    scopes, sizes = [{0, 1}, {1, 2}, {2, 3}], [2, 3, 5, 7]
    assert _largest_loop(scopes, {0, 3}, [(0, 1), (0, 1)], sizes) == 2 * 5 * 7   # (01,12)->02, then (23,02)
    assert _largest_loop(scopes, {0, 3}, [(0, 1, 2)], sizes) == 2 * 3 * 5 * 7      # everything in one loop


def test_belief_propagation_is_stable_with_extreme_potentials():
    rng = np.random.default_rng(2)
    pots = random_potentials(DOM, STRUCTURES["cycle"], rng, scale=300.0)
    model = GraphicalModel(DOM, pots, total=1.0)
    log_joint = joint_from_potentials(DOM, model.potentials)
    joint = np.exp(log_joint - log_joint.max())
    joint /= joint.sum()
    for clique, table in zip(model.junction_tree.cliques, model.clique_marginals):
        assert np.all(np.isfinite(table))
        np.testing.assert_allclose(table, brute_marginal(joint, DOM, clique), rtol=0, atol=1e-10)
    # Out-of-clique marginals divide by separator marginals, some of which underflow to exactly 0 here.
    assert any(np.any(t == 0) for t in model.clique_marginals)
    for attrs in itertools.combinations(DOM.attrs, 3):
        if model.junction_tree.clique_containing(DOM.canonical(attrs)) is None:
            table = model.project(attrs)
            assert np.all(np.isfinite(table))
            np.testing.assert_allclose(table, brute_marginal(joint, DOM, attrs), rtol=0, atol=1e-10)


def _offsetting_potentials(offset, rng):
    """Potentials on the tree structure moved by ±offset along directions that leave the model unchanged."""
    pots = random_potentials(DOM, STRUCTURES["tree"], rng)
    pots[("a", "b")][:, 1] -= offset
    pots[("b", "c")][1, :] += offset
    pots[("b", "c")][:, 2] += 2 * offset
    pots[("c", "d")][2, :] -= 2 * offset
    return pots


@pytest.mark.parametrize("case", [f"{name}-{scale}" for name in sorted(STRUCTURES) for scale in (2, 300)]
                         + [f"offsetting-{offset}" for offset in (0, 100, 250, 290, 800)])
def test_belief_propagation_on_exponentiated_tables_matches_log_tables(case, monkeypatch):
    """graphical.exp_tables: belief propagation given tables' exponentials (values · e^offset) computes the
    log-tables' marginals and log-partition, with the large spreads and offsetting potentials that make
    it fall back to log-beliefs (a table spread past e^600 stays a log-table: a mix of both kinds)."""
    from skdpsynth.graphical import exp_tables

    monkeypatch.setattr(exp_tables, "_MIN_CELLS", 1)
    name, value = case.rsplit("-", 1)
    rng = np.random.default_rng(5)
    if name == "offsetting":
        pots = _offsetting_potentials(float(value), rng)
    else:
        pots = random_potentials(DOM, STRUCTURES[name], rng, scale=float(value))
    model = GraphicalModel(DOM, pots, total=1.0)
    jt = model.junction_tree
    log_tables = assemble_potentials(jt, model.potentials)
    given = [exp_tables.exponentiate(t) for t in log_tables]
    marginals, log_z = belief_propagation(jt, given, total=1.0)
    want, want_log_z = belief_propagation(jt, log_tables, total=1.0)
    # Each cell is a product of a few exponentials instead of the exponential of their sum: relative rounding
    # of a few ulps times the largest exponent (|θ| up to ~3000 here), so ~1e-12 relative, 1e-300 absolute.
    assert log_z == pytest.approx(want_log_z, rel=1e-12, abs=1e-12)
    for got, table in zip(marginals, want):
        np.testing.assert_allclose(got, table, rtol=1e-11, atol=1e-300)
    for t, g in zip(log_tables, given):   # the inputs are never written to
        if isinstance(g, exp_tables.ExpTable):
            np.testing.assert_allclose(g.log(), t, rtol=1e-12, atol=1e-12)


def test_belief_propagation_on_exponentiated_tables_takes_every_fallback(monkeypatch):
    """The rare paths of belief propagation on ExpTables, each made a log-belief from an ExpTable, and each
    gives the log-tables' marginals: the root's and an inner clique's product with their children's messages
    too small (offset 100 on (a, b)/(b, c), the root's, and on (c, d)/(d, e)), separator slices underflowing
    and a downward product far from the upward maximum (offset 290, the tree's four cliques)."""
    from skdpsynth.graphical import exp_tables, inference

    monkeypatch.setattr(exp_tables, "_MIN_CELLS", 1)
    logs = []
    original = exp_tables.ExpTable.log
    monkeypatch.setattr(exp_tables.ExpTable, "log", lambda self: logs.append(1) or original(self))
    root_pair = random_potentials(DOM, STRUCTURES["tree"], np.random.default_rng(5))
    root_pair[("a", "b")][:, 1] -= 100.0
    root_pair[("b", "c")][1, :] += 100.0
    inner_pair = random_potentials(DOM, STRUCTURES["tree"], np.random.default_rng(5))
    inner_pair[("c", "d")][:, 1] -= 100.0
    inner_pair[("d", "e")][1, :] += 100.0
    for pots in (root_pair, inner_pair, _offsetting_potentials(290.0, np.random.default_rng(5))):
        model = GraphicalModel(DOM, pots, total=1.0)
        jt = model.junction_tree
        log_tables = assemble_potentials(jt, model.potentials)
        logs[:] = []
        marginals, _ = inference.belief_propagation(jt, [exp_tables.exponentiate(t) for t in log_tables])
        assert logs
        want, _ = inference.belief_propagation(jt, log_tables)
        for got, table in zip(marginals, want):
            np.testing.assert_allclose(got, table, rtol=1e-11, atol=1e-300)


def test_exponentiated_tables_step_like_log_tables_and_return_to_logs_when_they_would_underflow():
    from skdpsynth.graphical import tables
    from skdpsynth.graphical.exp_tables import ExpTable, exponentiate, step_table

    rng = np.random.default_rng(3)
    theta = rng.normal(size=(40, 30, 20))                 # 24 000 cells: exponentiated by default
    current = exponentiate(theta)
    assert isinstance(current, ExpTable) and current.high == 0.0
    for _ in range(50):
        terms = [rng.normal(size=(40, 1, 20)), rng.normal(size=(1, 30, 1)), rng.normal(size=(40, 30, 1))]
        size = rng.uniform(0.1, 1.0)
        theta = tables.step(theta, size, terms)
        current = step_table(current, size, terms)
        assert isinstance(current, ExpTable)
        # 50 steps of a few ulps each, relative to values of up to |θ| ~ 20: ~1e-13 absolute in the log.
        np.testing.assert_allclose(current.log(), theta, rtol=0, atol=1e-11)
        assert current.low == pytest.approx(np.log(current.values.min()), abs=1e-12)
        assert current.high == pytest.approx(np.log(current.values.max()), abs=1e-12)
    # A step that could take a cell 700 below the largest: a log-table again, the same numbers.
    down = np.zeros((40, 30, 1))
    down[0, 0, 0] = 700.0
    stepped = step_table(current, 1.0, [down])
    assert not isinstance(stepped, ExpTable)
    np.testing.assert_allclose(stepped, theta - down, rtol=0, atol=1e-11)
    # Broadcast views stay views when exponentiated; tables too small or spread too far stay log-tables.
    view = np.broadcast_to(rng.normal(size=(40, 1, 20)), (40, 30, 20))
    made = exponentiate(view)
    assert made.values.shape == view.shape and 0 in made.values.strides
    spread = theta.copy()
    spread[0, 0, 0] = spread.max() - 601.0
    assert exponentiate(spread) is spread and exponentiate(theta[:2]) is not None
    assert not isinstance(exponentiate(theta[:2]), ExpTable)   # 1 200 cells


# -- estimation ---------------------------------------------------------------

def dense_solver(dom, measurements, total, iters=20000):
    """Reference: accelerated projected gradient on the full joint over the scaled simplex."""
    n_cells = dom.size()
    ops = []
    for m in measurements:
        # Matrix mapping the flattened joint to the clique's flattened marginal.
        idx = np.arange(n_cells).reshape(dom.shape)
        cells = np.zeros(n_cells, dtype=int)
        sub = np.indices(dom.shape)
        pos = [dom.index(a) for a in m.clique]
        cells = np.ravel_multi_index(tuple(sub[p].ravel() for p in pos), dom.shape_of(m.clique))
        M = sp.csr_matrix((np.ones(n_cells), (cells, idx.ravel())), shape=(dom.size(m.clique), n_cells)).toarray()
        A = M if m.query is None else (m.query.toarray() if sp.issparse(m.query) else m.query) @ M
        ops.append((A, m.values, m.sigma))
    H = sum(2 * A.T @ A / s**2 for A, _, s in ops)
    lip = np.linalg.eigvalsh(H).max()

    def grad(x):
        return sum(2 * A.T @ (A @ x - y) / s**2 for A, y, s in ops)

    def project(v):  # Euclidean projection onto {x >= 0, sum x = total}
        u = np.sort(v)[::-1]
        css = np.cumsum(u) - total
        rho = np.nonzero(u - css / np.arange(1, v.size + 1) > 0)[0][-1]
        return np.maximum(v - css[rho] / (rho + 1), 0)

    x = np.full(n_cells, total / n_cells)
    z, t = x.copy(), 1.0
    for _ in range(iters):
        x_new = project(z - grad(z) / lip)
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        z = x_new + (t - 1) / t_new * (x_new - x)
        x, t = x_new, t_new
    return x.reshape(dom.shape)


def noisy_measurements(dom, data, cliques, sigma, rng):
    return [
        Measurement(c, marginal(data, dom, c).ravel() + rng.normal(0, sigma, dom.size(c)), sigma) for c in cliques
    ]


def small_problem(seed=0, n=2000):
    dom = Domain(list("abcd"), [2, 3, 4, 2])
    rng = np.random.default_rng(seed)
    # Correlated data from a random joint.
    p = rng.dirichlet(np.ones(dom.size()) * 2)
    flat = rng.choice(dom.size(), size=n, p=p)
    data = np.column_stack(np.unravel_index(flat, dom.shape))
    return dom, data, rng


@pytest.mark.parametrize(
    "cliques",
    [
        [("a",), ("b",), ("c",), ("d",), ("a", "b"), ("b", "c"), ("c", "d")],
        [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")],
        [("a", "b", "c"), ("b", "c", "d"), ("a",), ("a",)],
    ],
    ids=["tree", "cycle", "triples_with_repeats"],
)
@pytest.mark.parametrize("method", ["accelerated", "armijo"])
def test_mirror_descent_matches_dense_solver(cliques, method, exp_tables):
    dom, data, rng = small_problem()
    sigmas = rng.uniform(5, 20, size=len(cliques))
    ms = [m for c, s in zip(cliques, sigmas) for m in noisy_measurements(dom, data, [c], s, rng)]
    total = float(len(data))
    model, info = mirror_descent(dom, ms, known_total=total, iters=3000, method=method)
    joint = dense_solver(dom, ms, total)
    for m in ms:
        est = model.project(m.clique) / total
        ref = brute_marginal(joint, dom, m.clique) / total
        np.testing.assert_allclose(est, ref, rtol=0, atol=1e-4)
    assert info.loss <= info.loss_history[0]


def test_mirror_descent_with_linear_queries_matches_dense_solver(exp_tables):
    dom, data, rng = small_problem(seed=3)
    # Compressed domain of c: cells {0}, {1}, {2, 3} merged -- a partition query.
    q_c = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]], dtype=float)
    q_bc = np.kron(np.eye(3), q_c)
    ms = [
        Measurement(("a", "b"), marginal(data, dom, ("a", "b")).ravel() + rng.normal(0, 5, 6), 5.0),
        Measurement(("b", "c"), q_bc @ marginal(data, dom, ("b", "c")).ravel() + rng.normal(0, 8, 9), 8.0, q_bc),
        Measurement(("c", "d"), marginal(data, dom, ("c", "d")).ravel() + rng.normal(0, 5, 8), 5.0),
        # A sparse generic linear query: a range count over d=1 for a <= 0.
        Measurement(("a", "d"), np.array([300.0]), 10.0, sp.csr_matrix([[0.0, 1.0, 0.0, 0.0]])),
    ]
    total = float(len(data))
    model, _ = mirror_descent(dom, ms, known_total=total, iters=4000)
    joint = dense_solver(dom, ms, total)
    for m in ms:
        est = m.apply(model.project(m.clique).ravel()) / total
        ref = m.apply(brute_marginal(joint, dom, m.clique).ravel()) / total
        np.testing.assert_allclose(est, ref, rtol=0, atol=1e-4)


def test_minimum_variance_total():
    ms = [
        Measurement(("a",), [60.0, 50.0], 1.0),  # total 110, variance 2
        Measurement(("b",), [30.0, 30.0, 30.0, 10.0], 2.0),  # total 100, variance 16
        Measurement(("a",), [1.0], 1.0, np.array([[1.0, 0.0]])),  # not a total query: ignored
    ]
    expected = (110 / 2 + 100 / 16) / (1 / 2 + 1 / 16)
    assert minimum_variance_total(ms) == pytest.approx(expected)
    # A compressed measurement (last cell = merged cells scaled by 1/2) still determines the total:
    # a = (1, 2) solves Q^T a = 1, so T = 40 + 2 * 35 = 110 with variance 1 + 4.
    rescaled = Measurement(("a",), [40.0, 35.0], 1.0, sp.diags([1.0, 0.5]).tocsr())
    assert rescaled.total_estimate() == pytest.approx((110.0, 5.0))
    assert minimum_variance_total([rescaled]) == pytest.approx(110.0)
    assert minimum_variance_total(ms[2:]) is None
    dom = Domain(["a", "b"], [2, 4])
    model, _ = mirror_descent(dom, ms, iters=5)
    assert model.total == pytest.approx(expected)
    with pytest.raises(ValueError, match="known_total"):
        mirror_descent(dom, ms[2:], iters=5)



def test_what_a_query_determines_is_computed_once_and_goes_with_the_query():
    """The total's weights, the column norm and the transpose are kept per query object, off the measurement (a
    fitted model holds only what it was given), and dropped when the query is."""
    import gc

    from skdpsynth.graphical import estimation

    query = sp.diags([1.0, 0.5]).tocsr()
    first = Measurement(("a",), [40.0, 35.0], 1.0, query)
    assert first.total_estimate() == pytest.approx((110.0, 5.0))
    assert first.column_norm_sq() == 1.0
    first.adjoint(np.ones(2))
    keys = {(id(query), name) for name in ("total_weights", "column_norm_sq", "transpose")}
    assert keys <= set(estimation._DERIVED)
    assert set(vars(first)) == {"clique", "values", "sigma", "query"}   # nothing derived kept on the measurement
    # Another measurement of the same query (new values, new sigma) reuses the weights, with its own answers.
    again = Measurement(("a",), [20.0, 10.0], 2.0, query)
    calls = []
    original = Measurement._total_weights
    try:
        Measurement._total_weights = lambda self: calls.append(1) or original(self)
        assert again.total_estimate() == pytest.approx((40.0, 20.0))
    finally:
        Measurement._total_weights = original
    assert calls == []
    del first, again, query
    gc.collect()
    assert not keys & set(estimation._DERIVED)


def test_a_query_with_one_entry_per_column_is_applied_as_the_sparse_product_bit_for_bit():
    """Estimation applies a compressed domain's diagonal and a partition's grouping by bincount and a gather: the
    sparse product's very floats (signed zeros included), and the sparse product itself for any other query."""
    rng = np.random.default_rng(7)
    n = 40
    mu = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, size=n)
    mu[[2, 3, 11]] = -0.0
    groups = rng.integers(0, 7, size=n)
    queries = {
        "diagonal": sp.diags(rng.normal(size=n)).tocsr(),
        "partition": sp.csr_matrix((np.ones(n), (groups, np.arange(n))), shape=(7, n)),
        "partition, csc": sp.csc_matrix((np.ones(n), (groups, np.arange(n))), shape=(7, n)),
        "weighted, an empty column": sp.csr_matrix((rng.normal(size=n - 1), (groups[1:], np.arange(1, n))),
                                                   shape=(7, n)),
        "two entries in a column": sp.csr_matrix(np.vstack([np.ones(n), np.arange(n, dtype=float)])),
        # row 0 holds columns 3 and 1, row 1 columns 2 and 0, stored in that order
        "unsorted indices": sp.csr_matrix((np.ones(4), np.array([3, 1, 2, 0]), np.array([0, 2, 4])), shape=(2, 4)),
    }
    for name, query in queries.items():
        apply, adjoint = Measurement(("a",), np.zeros(query.shape[0]), 1.0, query).products()
        r = rng.normal(size=query.shape[0])
        r[0] = -0.0
        x = mu[:query.shape[1]]
        for ours, theirs in ((apply(x), query @ x), (adjoint(r), query.T.tocsr() @ r)):
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
            assert np.array_equal(ours, theirs) and np.array_equal(np.signbit(ours), np.signbit(theirs)), name
    fast = {name: Measurement(("a",), np.zeros(q.shape[0]), 1.0, q)._one_entry_columns() is not None
            for name, q in queries.items()}
    assert fast == {"diagonal": True, "partition": True, "partition, csc": True, "weighted, an empty column": True,
                    "two entries in a column": False, "unsorted indices": False}


def test_a_query_freed_while_the_interpreter_shuts_down_raises_nothing(monkeypatch):
    """At shutdown a module's globals are set to None before the last objects are freed: the callback that drops
    a query's entry must not look ``_DERIVED`` up then (it printed "Exception ignored" at the end of test runs)."""
    import gc

    from skdpsynth.graphical import estimation

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    query = sp.diags([1.0, 0.5]).tocsr()
    Measurement(("a",), [40.0, 35.0], 1.0, query).adjoint(np.ones(2))
    key = (id(query), "transpose")
    cache = estimation._DERIVED
    assert key in cache
    monkeypatch.setattr(estimation, "_DERIVED", None)   # as the interpreter's teardown leaves it
    del query
    gc.collect()
    assert unraisable == []
    assert key not in cache   # the entry still went with its query

def test_warm_start_continues_from_previous_potentials(exp_tables):
    dom, data, rng = small_problem(seed=4)
    first = noisy_measurements(dom, data, [("a", "b"), ("b", "c")], 5.0, rng)
    model, info = mirror_descent(dom, first, iters=2000)
    # Restarting from the fitted potentials is already at the optimum.
    again, info2 = mirror_descent(dom, first, potentials=model, iters=1)
    assert info2.loss_history[0] == pytest.approx(info.loss, rel=1e-9)
    # Adding a measurement on a new clique keeps the old potentials as the start.
    more = first + noisy_measurements(dom, data, [("c", "d")], 5.0, rng)
    warm, _ = mirror_descent(dom, more, potentials=model, iters=1)
    np.testing.assert_allclose(warm.project(["a", "b"]), model.project(["a", "b"]), rtol=0.05)


def test_warm_start_from_a_calibrated_model_on_the_same_tree_saves_a_pass(monkeypatch, exp_tables):
    import skdpsynth.graphical.estimation as estimation

    dom, data, rng = small_problem(seed=4)
    ms = noisy_measurements(dom, data, [("a", "b"), ("b", "c")], 5.0, rng)
    model, info = mirror_descent(dom, ms, iters=50, tol=0.0)
    calls = []
    monkeypatch.setattr(estimation, "belief_propagation", lambda *a: calls.append(1) or belief_propagation(*a))
    fresh = GraphicalModel(dom, model.potentials, model.total)   # same potentials, not calibrated
    cold, cold_info = mirror_descent(dom, ms, potentials=fresh, iters=20, tol=0.0, step_size=info.step_size)
    cold_calls, calls[:] = len(calls), []
    warm, warm_info = mirror_descent(dom, ms, potentials=model, iters=20, tol=0.0, step_size=info.step_size)
    assert len(calls) < cold_calls
    # The model's own calibration is that of its potentials, to rounding: the same fit.
    np.testing.assert_allclose(warm_info.loss_history, cold_info.loss_history, rtol=1e-9)
    for clique, table in cold.potentials.items():
        np.testing.assert_allclose(warm.potentials[clique], table, rtol=1e-9, atol=1e-9)
    # New measurements on the same cliques estimate another record count: the reused marginals follow it.
    more = ms + [Measurement(("a", "b"), 1.5 * ms[0].values, 5.0)]
    refit, _ = mirror_descent(dom, more, potentials=model, iters=0)
    assert refit.total != pytest.approx(model.total, rel=0.01)
    fresh = GraphicalModel(dom, refit.potentials, refit.total)
    for got, want in zip(refit.clique_marginals, fresh.clique_marginals):
        np.testing.assert_allclose(got, want, rtol=1e-9)
    # A different tree (a new clique) is calibrated afresh.
    calls[:] = []
    mirror_descent(dom, ms + noisy_measurements(dom, data, [("c", "d")], 5.0, rng), potentials=model, iters=1)
    assert len(calls) >= 2


def test_measurement_validation():
    with pytest.raises(ValueError, match="sigma"):
        Measurement(("a",), [1.0], 0.0)
    with pytest.raises(ValueError, match="rows"):
        Measurement(("a",), [1.0, 2.0], 1.0, np.ones((3, 2)))
    dom = Domain(["a", "b"], [2, 3])
    with pytest.raises(ValueError, match="cells"):
        mirror_descent(dom, [Measurement(("a",), [1.0, 2.0, 3.0], 1.0)], iters=1)


def test_non_canonical_measurement_is_reordered():
    dom = Domain(["a", "b"], [2, 3])
    table = np.arange(6, dtype=float).reshape(3, 2) * 10 + 5  # axes (b, a)
    model, _ = mirror_descent(dom, [Measurement(("b", "a"), table, 1.0)], iters=2000)
    np.testing.assert_allclose(model.project(["a", "b"]), table.T, atol=0.05)


# -- sampling -----------------------------------------------------------------

def fitted_model(seed=5):
    rng = np.random.default_rng(seed)
    return GraphicalModel(DOM, random_potentials(DOM, STRUCTURES["triples"], rng, scale=1.5), total=997.4)


@pytest.mark.parametrize("method", ["round", "sample"])
@pytest.mark.parametrize("n", [0, 1, 997, 5000])
def test_sampling_gives_exact_row_count(method, n):
    data = fitted_model().synthetic_data(n, method=method, random_state=0)
    assert data.shape == (n, len(DOM))
    assert np.all((data >= 0) & (data < np.array(DOM.shape)))


def test_default_row_count_is_rounded_total():
    assert fitted_model().synthetic_data(random_state=0).shape[0] == 997


def test_randomized_rounding_matches_model_marginals_within_rounding():
    model = fitted_model()
    n = 20011
    data = model.synthetic_data(n, method="round", random_state=1)
    jt = model.junction_tree
    for clique in jt.cliques:
        expected = model.project(clique) * n / model.total
        # Each attribute generated inside a clique adds at most one unit of rounding per cell.
        np.testing.assert_array_less(np.abs(marginal(data, DOM, clique) - expected), len(clique))
    for a in DOM:
        expected = model.project([a]) * n / model.total
        np.testing.assert_array_less(np.abs(marginal(data, DOM, [a]) - expected), len(DOM))


def test_iid_sampling_matches_model_marginals_statistically():
    model = fitted_model()
    n = 200_000
    data = model.synthetic_data(n, method="sample", random_state=2)
    for clique in model.junction_tree.cliques:
        p = model.probability(clique)
        freq = marginal(data, DOM, clique) / n
        # 5 binomial standard errors per cell (a few hundred cells: false-alarm rate ~1e-4).
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_sampling_is_reproducible_and_picklable():
    model = fitted_model()
    a = model.synthetic_data(500, random_state=7)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(a, clone.synthetic_data(500, random_state=7))
    assert not np.array_equal(a, model.synthetic_data(500, random_state=8))


def test_randomized_round_rows_sum_to_totals():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(7), size=50)
    totals = rng.integers(0, 30, size=50)
    counts = randomized_round(probs * totals[:, None], totals, rng)
    np.testing.assert_array_equal(counts.sum(axis=1), totals)
    assert np.all(np.abs(counts - probs * totals[:, None]) < 1)


def test_zero_mass_conditionals_fall_back_to_uniform():
    dom = Domain(["a", "b"], [2, 3])
    # a=1 has zero probability; sampling n rows must still work.
    pots = {("a", "b"): np.log(np.array([[1.0, 2.0, 3.0], [1e-320, 1e-320, 1e-320]]) + 0.0)}
    model = GraphicalModel(dom, pots, total=10)
    for method in ("round", "sample"):
        data = model.synthetic_data(100, method=method, random_state=0)
        assert data.shape == (100, 2) and np.all(data[:, 0] == 0)


def test_linear_operator_query_matches_matrix_query():
    """A callable query (scipy LinearOperator: matvec and rmatvec) fits exactly like the same matrix."""
    from scipy.sparse.linalg import aslinearoperator

    dom, data, rng = small_problem(seed=6)
    q = rng.integers(0, 2, size=(5, dom.size(("b", "c")))).astype(float)
    y = q @ marginal(data, dom, ("b", "c")).ravel() + rng.normal(0, 4, 5)
    base = noisy_measurements(dom, data, [("a", "b"), ("c", "d")], 5.0, rng)
    with_matrix, _ = mirror_descent(dom, base + [Measurement(("b", "c"), y, 4.0, q)], known_total=2000.0, iters=300)
    with_operator, _ = mirror_descent(
        dom, base + [Measurement(("b", "c"), y, 4.0, aslinearoperator(q))], known_total=2000.0, iters=300
    )
    np.testing.assert_allclose(with_operator.project(["b", "c"]), with_matrix.project(["b", "c"]), rtol=1e-9)


# -- exact independent estimate and the discrepancy stop (issue 16) ---------------------------------------------------
def test_independent_estimate_is_the_mirror_descent_optimum():
    import scipy.sparse as sp

    from skdpsynth.graphical.estimation import independent_estimate

    rng = np.random.default_rng(0)
    dom = Domain(["a", "b", "c"], [5, 2, 9])
    ms = [Measurement((a,), rng.dirichlet(np.full(dom[a], 0.5)) * 1000 + rng.normal(0, 30, dom[a]), 30.0)
          for a in dom.attrs]
    q = np.ones(9)
    q[-1] = 0.5
    ms.append(Measurement(("c",), rng.normal(50, 30, 9), 20.0, sp.diags(q).tocsr()))   # a diagonal query
    est = independent_estimate(dom, ms)
    model, _ = mirror_descent(dom, ms, iters=20000, tol=0)
    for a in dom.attrs:
        assert est[a].min() >= 0 and np.isclose(est[a].sum(), model.total)
        np.testing.assert_allclose(est[a], model.project([a]), atol=1e-3)
    # Not of the separable form: None (the caller falls back to mirror descent).
    assert independent_estimate(dom, ms + [Measurement(("a", "b"), np.ones(10), 1.0)]) is None
    assert independent_estimate(dom, [Measurement(("a",), np.ones(2), 1.0, np.ones((2, 5)))]) is None
    assert independent_estimate(dom, ms[:2]) is None                      # "c" not measured


def test_mirror_descent_target_loss_stops_at_the_noise_level(exp_tables):
    rng = np.random.default_rng(1)
    dom = Domain(["a", "b"], [4, 3])
    truth = rng.dirichlet(np.ones(12)).reshape(4, 3) * 5000
    ms = [Measurement(("a", "b"), (truth + rng.normal(0, 5, (4, 3))).ravel(), 5.0),
          Measurement(("a",), truth.sum(1) + rng.normal(0, 5, 4), 5.0)]
    n_answers = sum(m.n_answers for m in ms)
    model, info = mirror_descent(dom, ms, iters=5000, tol=0, target_loss=n_answers)
    assert info.converged and info.loss <= n_answers and info.iterations < 5000
    assert info.loss_history[-2] > n_answers                              # it stopped at the first such iterate
    _, full = mirror_descent(dom, ms, iters=info.iterations + 50, tol=0)
    assert full.loss < info.loss                                          # without the target it goes on
    _, none = mirror_descent(dom, ms, iters=100, tol=0, target_loss=1e12)
    assert none.iterations == 0 and none.converged                        # already there: no iteration


def test_accelerated_mirror_descent_gets_closer_to_the_optimum_in_the_same_iterations():
    # Ill-conditioned like real fits: skewed chain data, many records, larger domains, sparse cells.
    rng = np.random.default_rng(0)
    dom = Domain(list("abcde"), [12, 16, 9, 20, 7])
    n = 50000
    cols = [rng.integers(0, 12, n)]
    for k, size in enumerate(dom.shape[1:]):
        cum = rng.dirichlet(np.full(size, 0.3), size=dom.shape[k]).cumsum(1)[cols[-1]]
        cols.append((rng.random(n)[:, None] > cum).sum(1).clip(0, size - 1))
    data = np.column_stack(cols)
    cliques = [(a,) for a in dom.attrs] + [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]
    ms = noisy_measurements(dom, data, cliques, 10.0, rng)
    _, optimum = mirror_descent(dom, ms, iters=20000, tol=0, method="armijo")
    gaps = {method: mirror_descent(dom, ms, iters=400, tol=0, method=method)[1].loss - optimum.loss
            for method in ("armijo", "accelerated")}
    assert 0 <= gaps["accelerated"] < 0.3 * gaps["armijo"]      # measured: 0.15
    with pytest.raises(ValueError, match="method"):
        mirror_descent(dom, ms, iters=1, method="newton")


def test_warm_start_lifts_cells_driven_towards_minus_infinity():
    dom, data, rng = small_problem(seed=6)
    ms = noisy_measurements(dom, data, [("a", "b")], 5.0, rng)
    start = {("a", "b"): np.array([[0.0, -2.0, -1000.0], [-5.0, 1.0, 3.0]])}
    model, _ = mirror_descent(dom, ms, potentials=start, iters=0)
    theta = model.potentials[("a", "b")]
    np.testing.assert_allclose(theta, [[0.0, -2.0, 3.0 - 30.0], [-5.0, 1.0, 3.0]])


def test_warm_start_lift_leaves_offsetting_potentials_alone(exp_tables):
    """Only the sum of overlapping cliques' potentials matters: a fit re-expressed with large offsetting
    values (a gauge change, the same model) must warm-start as that model, not be lifted into another."""
    dom, data, rng = small_problem(seed=7)
    ms = noisy_measurements(dom, data, [("a", "b"), ("b", "c")], 5.0, rng)
    fitted, _ = mirror_descent(dom, ms, known_total=float(len(data)), iters=300)
    ab, bc = fitted.potentials[("a", "b")].copy(), fitted.potentials[("b", "c")].copy()
    ab[:, 1] += 200.0       # within float range: belief propagation itself handles them exactly
    bc[1, :] -= 200.0
    warm = GraphicalModel(dom, {("a", "b"): ab, ("b", "c"): bc}, total=float(len(data)))
    model, _ = mirror_descent(dom, ms, potentials=warm, known_total=float(len(data)), iters=0)
    for clique in (("a", "b"), ("b", "c"), ("a", "c")):
        np.testing.assert_allclose(warm.project(clique), fitted.project(clique), rtol=1e-9)
        np.testing.assert_allclose(model.project(clique), fitted.project(clique), rtol=1e-9)


def test_gradient_terms_are_the_adjoint_of_the_measured_marginals():
    # mirror descent moves the junction-tree tables by the loss gradient broadcast back from the measured
    # cliques; assembled along the read plan's shared partial sums, the tables' sum (the log-density's
    # change) must equal the plain sum of every measured clique's gradient broadcast over the joint.
    from skdpsynth.graphical.estimation import _Problem
    from skdpsynth.graphical.junction_tree import broadcast_shape

    rng = np.random.default_rng(7)
    dom = Domain(list("abcdefg"), [2, 3, 2, 4, 3, 2, 3])
    cliques = [("a", "b", "c"), ("b", "c", "d"), ("a", "c"), ("c", "d", "e"), ("d", "e", "f"), ("e", "g"),
               ("a",), ("d",), ("g",), ("b", "d"), ("c", "e"),
               # one large table hosting many measured cliques: partial sums shared several times over
               ("a", "b", "c", "d"), ("a", "b"), ("a", "d"), ("b", "c"), ("c", "d"), ("b",), ("a", "b", "d")]
    ms = [Measurement(c, rng.normal(10, 1, dom.size(c)), 1.0) for c in cliques]
    problem = _Problem(dom, ms, 100.0, None, ())
    grads = {c: rng.normal(size=dom.size(c)) for c in problem.measured}
    terms = problem.gradient_terms(grads)
    joint = np.zeros(dom.shape)
    expected = np.zeros(dom.shape)
    for h, table_terms in enumerate(terms):
        for t in table_terms or ():
            whole = np.broadcast_to(t, problem.table_shapes[h])   # a term broadcasts to its table
            joint = joint + whole.reshape(broadcast_shape(dom, dom.attrs, problem.jt.cliques[h]))
    for c, g in grads.items():
        expected = expected + g.reshape(broadcast_shape(dom, dom.attrs, c))
    np.testing.assert_allclose(joint, expected, rtol=1e-12, atol=1e-12)

