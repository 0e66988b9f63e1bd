"""Algorithm-level tests of the MST and AIM baselines (the estimator surface is tested elsewhere)."""
import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from skdpsynth import AIMSynthesizer, Domain, MSTSynthesizer
from skdpsynth.graphical import Measurement, model_size_mb
from skdpsynth.metrics import marginal_tvd
from skdpsynth.privacy import cdp_rho
from skdpsynth.synthesizers.select_measure import resolve_workload as _resolve_workload
from skdpsynth.synthesizers.mst import DomainCompression
from skdpsynth.synthesizers.select_measure import compile_workload


def chain_data(n=4000, seed=0):
    """a -> b -> c strongly dependent, d independent and skewed, e with rare values."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = np.where(rng.random(n) < 0.9, a, rng.integers(0, 4, n))
    c = np.where(rng.random(n) < 0.9, b % 2, rng.integers(0, 2, n))
    d = rng.choice(3, n, p=[0.7, 0.2, 0.1])
    e = np.where(rng.random(n) < 0.97, 0, rng.integers(1, 30, n))
    frame = pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "e": e})
    return frame, {"a": 4, "b": 4, "c": 2, "d": 3, "e": 30}


def independent_columns(X, seed=0):
    """Each column shuffled on its own: exact 1-way marginals, no dependence."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.permutation(X[c].to_numpy()) for c in X})


def test_mst_ledger_tree_and_budget():
    X, dom = chain_data()
    mst = MSTSynthesizer(epsilon=2.0, domain=dom, random_state=0).fit(X)
    ledger = mst.privacy_ledger_
    rho = cdp_rho(2.0, 1e-9)
    assert ledger.total_rho() == pytest.approx(rho, rel=1e-12)
    frame = ledger.to_frame()
    # Thirds: 1-way measurements, tree selection, 2-way measurements.
    for mechanism, count in [("discrete gaussian", 5 + 4), ("exponential", 4)]:  # counts: exact noise
        assert (frame["mechanism"] == mechanism).sum() == count
    one_way = frame[frame["description"].str.startswith("1-way")]["rho"].sum()
    selection = frame[frame["mechanism"] == "exponential"]["rho"].sum()
    assert one_way == pytest.approx(rho / 3, rel=1e-12) and selection == pytest.approx(rho / 3, rel=1e-12)
    tree = nx.Graph(mst.tree_)
    tree.add_nodes_from(dom)
    assert nx.is_tree(tree)


def test_mst_finds_the_dependencies_at_high_epsilon():
    X, dom = chain_data(n=20000)
    mst = MSTSynthesizer(epsilon=20.0, domain=dom, random_state=1).fit(X)
    edges = {frozenset(e) for e in mst.tree_}
    assert frozenset(("a", "b")) in edges and frozenset(("b", "c")) in edges
    synth = mst.sample()
    # Far closer on 2-way marginals than an independent model of the same 1-ways would be.
    indep = independent_columns(X)
    assert marginal_tvd(X, synth, ways=2, domain=dom) < 0.5 * marginal_tvd(X, indep, ways=2, domain=dom)


def test_domain_compression_round_trip_and_measurement():
    dom = Domain(["e"], [6])
    y = np.array([500.0, 2.0, 300.0, -1.0, 4.0, 0.5])
    m = Measurement(("e",), y, sigma=10.0)
    comp = DomainCompression(dom, [m])
    assert comp.supports["e"].tolist() == [True, False, True, False, False, False]
    assert comp.domain["e"] == 3
    cm = comp.measurement(m)
    # Merged cell: sum of 4 noisy cells scaled by 1/sqrt(4), with Q scaling the model's merged count alike.
    np.testing.assert_allclose(cm.values, [500.0, 300.0, (2.0 - 1.0 + 4.0 + 0.5) / 2])
    np.testing.assert_allclose(cm.query.toarray(), np.diag([1, 1, 0.5]))
    codes = np.array([[0], [1], [2], [3], [4], [5]])
    np.testing.assert_array_equal(comp.transform(codes).ravel(), [0, 2, 1, 2, 2, 2])
    back = comp.inverse_transform(np.array([[0], [1]] + [[2]] * 4000), np.random.default_rng(0)).ravel()
    assert back[0] == 0 and back[1] == 2
    # The merged cell is spread uniformly over its four original cells.
    counts = np.bincount(back[2:], minlength=6)[[1, 3, 4, 5]]
    assert counts.sum() == 4000 and np.all(np.abs(counts - 1000) < 5 * np.sqrt(4000 * 0.25 * 0.75))


def test_mst_sample_covers_original_domain_after_compression():
    X, dom = chain_data()
    mst = MSTSynthesizer(epsilon=0.5, domain=dom, random_state=2).fit(X)
    assert mst.compression_.domain["e"] < 30  # rare values of e were merged
    synth = mst.sample(5000, random_state=0)
    assert synth["e"].between(0, 29).all() and synth["e"].nunique() > mst.compression_.domain["e"]


def test_aim_ledger_sums_to_budget_and_rounds_bounded():
    X, dom = chain_data()
    aim = AIMSynthesizer(epsilon=1.0, domain=dom, rounds=10, max_iters=300, random_state=0).fit(X)
    rho = cdp_rho(1.0, 1e-9)
    ledger = aim.privacy_ledger_
    assert ledger.total_rho() == pytest.approx(rho, rel=1e-12)
    assert 1 <= len(aim.selected_) <= 10
    frame = ledger.to_frame()
    # One selection and one measurement per round, after the 1-way initialisation.
    assert (frame["mechanism"] == "exponential").sum() == len(aim.selected_)
    assert (frame["mechanism"] == "discrete gaussian").sum() == len(dom) + len(aim.selected_)
    # Selection takes 0.1 and measurement 0.9 of each round's budget (checked on the last round).
    last_sel, last_meas = frame.iloc[-2], frame.iloc[-1]
    assert last_sel["rho"] / (last_sel["rho"] + last_meas["rho"]) == pytest.approx(0.1, rel=1e-9)
    candidates = compile_workload(_resolve_workload(None, Domain.from_dict(dom), 10000), Domain.from_dict(dom))
    assert all(c in candidates for c in aim.selected_)


def test_aim_respects_the_model_size_limit():
    X, dom = chain_data()
    limit = 0.001  # MB: about 131 cells of junction tree
    aim = AIMSynthesizer(epsilon=5.0, domain=dom, rounds=12, max_model_size=limit, max_iters=200,
                         random_state=0).fit(X)
    domain = Domain.from_dict(dom)
    assert model_size_mb(domain, aim.model_.cliques) <= limit or all(len(c) == 1 for c in aim.selected_)
    for i in range(len(aim.selected_)):
        cliques = [(a,) for a in dom] + aim.selected_[: i + 1]
        # Each selection was either already covered or kept the model within the (scaled) limit.
        assert model_size_mb(domain, cliques) <= limit + 1e-12 or any(
            set(aim.selected_[i]) <= set(c) for c in [(a,) for a in dom] + aim.selected_[:i]
        )


def test_aim_beats_independent_model_on_dependent_data():
    X, dom = chain_data(n=20000)
    aim = AIMSynthesizer(epsilon=5.0, domain=dom, rounds=15, max_iters=300, random_state=3).fit(X)
    synth = aim.sample()
    indep = independent_columns(X)
    assert marginal_tvd(X, synth, ways=3, domain=dom) < 0.5 * marginal_tvd(X, indep, ways=3, domain=dom)


def test_workload_forms_and_weights():
    dom = Domain(list("abcd"), [2, 3, 4, 200])
    w = _resolve_workload(None, dom, 100)
    assert all(len(c) == 3 and dom.size(c) <= 100 for c, _ in w)
    assert _resolve_workload(2, dom, None) == [(c, 1.0) for c in [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]]
    assert _resolve_workload([("b", "a"), (("c",), 2.0)], dom, None) == [(("a", "b"), 1.0), (("c",), 2.0)]
    weights = compile_workload([(("a", "b"), 1.0), (("b", "c"), 2.0)], dom)
    # w_r = sum_s c_s |r ∩ s|
    assert weights[("b",)] == 3.0 and weights[("a", "b")] == 2.0 + 2.0 and weights[("c",)] == 2.0
    assert weights[("d",)] == 0.0  # every attribute is a candidate (measured 1-way), weight 0 outside the workload
    with pytest.raises(ValueError, match=r"No clique of the workload has at most max_cells=100 cells \(the smallest has 400\)"):
        _resolve_workload([("a", "d")], dom, 100)


def test_mst_early_stopping_at_the_discrepancy_principle():
    from skdpsynth.datasets import load_adult

    adult = load_adult(discretized=True)
    X = adult.frame.iloc[:5000, :6]
    domain = adult.domain.project(X.columns).to_dict()
    stopped = MSTSynthesizer(1.0, domain=domain, early_stopping="discrepancy", random_state=0).fit(X)
    info = stopped.estimation_
    assert info.converged and info.residual <= 1.0 and info.iterations < stopped.max_iters
    full = MSTSynthesizer(1.0, domain=domain, max_iters=info.iterations + 200, tol=0.0, random_state=0).fit(X)
    assert full.tree_ == stopped.tree_ and full.estimation_.iterations == info.iterations + 200
    with pytest.raises(ValueError, match="early_stopping must be"):
        MSTSynthesizer(1.0, domain=domain, early_stopping="patience").fit(X)


def aim_estimates(monkeypatch, X, dom, **params):
    """Fit AIM and return, for every estimate it runs, (target_loss, answers measured, warm-started, info)."""
    import skdpsynth.synthesizers.aim as aim_module

    real = aim_module.mirror_descent
    calls = []

    def spy(domain, measurements, **kwargs):
        model, info = real(domain, measurements, **kwargs)
        calls.append((kwargs.get("target_loss"), sum(m.n_answers for m in measurements),
                      kwargs.get("potentials") is not None, info))
        return model, info
    monkeypatch.setattr(aim_module, "mirror_descent", spy)
    AIMSynthesizer(epsilon=5.0, domain=dom, rounds=10, random_state=3, **params).fit(X)
    monkeypatch.setattr(aim_module, "mirror_descent", real)
    return calls


def test_aim_round_stopping_fits_each_round_to_the_noise_level(monkeypatch):
    X, dom = chain_data(n=20000)
    rounds = {}
    for rule in ("noise", None):
        calls = aim_estimates(monkeypatch, X, dom, max_iters=500, round_stopping=rule)
        # Warm-started calls are the rounds and the final estimate (the last call); with "noise", the extra
        # estimates before an annealing test (no target) are counted with their round.
        warm = [(target, info) for target, _, warm, info in calls if warm][:-1]
        rounds[rule] = [(t, i) for t, i in warm if t is not None] if rule == "noise" else warm
    assert rounds["noise"]
    for target, info in rounds["noise"]:
        assert info.iterations == 500 or info.loss <= target    # stopped at the target, or ran out of iterations
    assert all(target is None for target, _ in rounds[None])
    assert sum(i.iterations for _, i in rounds["noise"]) < sum(i.iterations for _, i in rounds[None])
    with pytest.raises(ValueError, match="round_stopping must be"):
        AIMSynthesizer(domain=dom, round_stopping="early").fit(X)


def test_aim_annealing_test_waits_for_a_noise_stopped_round_to_settle(monkeypatch):
    # A round stopped at the noise level has not finished moving toward its new measurement, so AIM's
    # annealing test (movement on the new clique <= sqrt(2/pi) sigma n) would pass too soon.  Extra
    # estimates run exactly while the test would pass, in the chunks of _ANNEAL_CHECK_ITERS, and no longer.
    import skdpsynth.synthesizers.aim as aim_module

    X, dom = chain_data(n=20000)
    real = aim_module.mirror_descent
    log = []   # per warm-started estimate: (target, iters asked, iterations run, movement / threshold)
    start = {}

    def spy(domain, measurements, **kwargs):
        model, info = real(domain, measurements, **kwargs)
        if kwargs.get("potentials") is not None:
            new = measurements[-1]
            if kwargs.get("target_loss") is not None:   # a round: its answers before it
                start["before"] = kwargs["potentials"].project(new.clique).ravel()
            moved = np.abs(model.project(new.clique).ravel() - start["before"]).sum()
            threshold = np.sqrt(2 / np.pi) * new.sigma * new.n_answers
            log.append((kwargs.get("target_loss"), kwargs["iters"], info.iterations, moved / threshold))
        return model, info
    monkeypatch.setattr(aim_module, "mirror_descent", spy)
    AIMSynthesizer(epsilon=5.0, domain=dom, rounds=20, random_state=3).fit(X)
    monkeypatch.setattr(aim_module, "mirror_descent", real)
    log = log[:-1]   # the final estimate

    extended = flipped = 0
    rounds = [i for i, entry in enumerate(log) if entry[0] is not None]
    for i in rounds:
        chunks = list(itertools.takewhile(lambda entry: entry[0] is None, log[i + 1:]))
        assert [c[1] for c in chunks] == list(aim_module._ANNEAL_CHECK_ITERS[:len(chunks)])
        previous = log[i]
        for chunk in chunks:
            # Another chunk only while the test would still pass and the estimate had not converged.
            assert previous[3] <= 1.0 and (previous[0] is not None or previous[2] == previous[1])
            previous = chunk
        if len(chunks) < len(aim_module._ANNEAL_CHECK_ITERS) and i != rounds[-1]:
            # Stopped early: the test fails now, or the estimate converged.
            assert previous[3] > 1.0 or (previous[0] is None and previous[2] < previous[1])
        extended += bool(chunks)
        flipped += bool(chunks) and chunks[-1][3] > 1.0
    # The situation arises in this fit, and waiting changes a decision: a round that would have annealed had
    # moved more than the noise once settled.
    assert extended > 0 and flipped > 0


def test_aim_final_stopping_stops_at_the_noise_level_of_all_measurements(monkeypatch):
    X, dom = chain_data(n=20000)
    final = {rule: aim_estimates(monkeypatch, X, dom, final_iters=3000, final_stopping=rule)[-1]
             for rule in ("noise", None)}
    target, n_answers, _, info = final["noise"]
    assert target == n_answers
    assert info.loss <= n_answers and info.iterations < 3000
    target, _, _, info_none = final[None]
    assert target is None and info_none.iterations > info.iterations
    with pytest.raises(ValueError, match="final_stopping must be"):
        AIMSynthesizer(domain=dom, final_stopping="early").fit(X)


def test_model_size_filter_by_components_equals_the_whole_junction_tree():
    from skdpsynth.graphical import JunctionTree
    from skdpsynth.synthesizers.select_measure import filter_by_model_size

    rng = np.random.default_rng(0)
    cache = {}
    for _ in range(100):
        d = int(rng.integers(4, 12))
        dom = Domain([f"x{i}" for i in range(d)], list(rng.integers(2, 9, d)))
        attrs = list(dom.attrs)

        def clique(k):
            return tuple(sorted(rng.choice(attrs, k, replace=False), key=dom.index))
        model = [(a,) for a in attrs] + [clique(int(rng.integers(2, 4))) for _ in range(int(rng.integers(0, 6)))]
        for r in (clique(int(rng.integers(2, 4))) for _ in range(5)):
            if any(set(r) <= set(m) for m in model):
                continue
            size = JunctionTree.from_cliques(dom, model + [r]).size_mb()
            # Kept exactly when the limit is at least the whole junction tree's size (the cache is shared).
            assert filter_by_model_size([r], dom, model, size, cache) == [r]
            assert filter_by_model_size([r], dom, model, size * (1 - 1e-9), cache) == []


def test_aim_lazy_selection_selects_what_scoring_every_candidate_selects(monkeypatch):
    """The lazy selection (bounds from earlier scores and graphical.bounds) against scoring every candidate each
    round with the plain exponential mechanism on the same random stream: the same cliques, the same model."""
    import skdpsynth.synthesizers.aim as aim_module
    from skdpsynth.benchmarks.generators import random_bayesian_network
    from skdpsynth.privacy import exponential_mechanism

    net = random_bayesian_network(16, min_values=2, max_values=6, max_parents=2, random_state=3)
    X, dom = net.sample(5000, random_state=4), net.domain.to_dict()

    def fit():
        return AIMSynthesizer(epsilon=1.0, domain=dom, random_state=0, max_iters=200, final_iters=200).fit(X)
    lazy_counts = []
    lazy = aim_module.lazy_exponential_mechanism

    def counting(upper, score, **kw):
        asked = []
        choice = lazy(upper, lambda i: asked.append(i) or score(i), **kw)
        lazy_counts.append((len(asked), len(upper)))
        return choice
    monkeypatch.setattr(aim_module, "lazy_exponential_mechanism", counting)
    fitted_lazy = fit()

    def exhaustive(upper, score, *, eligible, workers, **kw):
        scores = np.array([score(i) if eligible(i) else -np.inf for i in range(len(upper))])
        assert np.all(scores <= upper)
        return exponential_mechanism(scores, **kw)
    monkeypatch.setattr(aim_module, "lazy_exponential_mechanism", exhaustive)
    fitted_all = fit()
    assert fitted_lazy.selected_ == fitted_all.selected_ and len(fitted_lazy.selected_) > 10
    for clique, table in fitted_all.model_.potentials.items():
        np.testing.assert_array_equal(fitted_lazy.model_.potentials[clique], table)
    # After the first round (no earlier scores) many candidates are not scored (49% are, on this table).
    later = lazy_counts[1:]
    assert sum(a for a, _ in later) < 0.75 * sum(n for _, n in later)


def test_candidate_errors_bounds_hold_and_restart_for_unrelated_models():
    from skdpsynth.graphical import GraphicalModel
    from skdpsynth.synthesizers.select_measure import CandidateErrors

    rng = np.random.default_rng(0)
    dom = Domain(list("abcd"), [2, 3, 2, 3])
    answers = {c: rng.multinomial(100, np.full(dom.size(c), 1 / dom.size(c))).astype(float)
               for c in [("a",), ("a", "b"), ("c", "d"), ("a", "b", "c")]}
    cands = list(answers)
    errors = CandidateErrors(dom, answers, cands)
    first = GraphicalModel(dom, {("a", "b"): rng.normal(size=(2, 3))}, total=100.0)
    errors.track(first)
    low, high = errors.bounds()
    assert np.all(low == 0) and np.all(high >= 200)           # nothing computed yet: 0 ≤ error ≤ N + total
    exact = [errors.exact(i) for i in range(len(cands))]
    grown = GraphicalModel(dom, {("a", "b"): rng.normal(size=(2, 3)), ("c", "d"): rng.normal(size=(2, 3))},
                           total=90.0)
    errors.track(grown)
    low, high = errors.bounds()
    now = [np.abs(answers[c] - grown.project(c).ravel()).sum() for c in cands]
    assert np.all(low <= now) and np.all(now <= high) and np.all(high < 200)
    assert not np.allclose(exact, now)
    # A model whose cliques do not include the current ones: the bounds start again from N + total.
    errors.track(GraphicalModel(dom, {("b", "c"): rng.normal(size=(3, 2))}, total=100.0))
    assert np.all(errors.bounds()[1] >= 200)


def test_marginal_batch_equals_the_marginals_of_the_records():
    from skdpsynth.marginals import marginals
    from skdpsynth.synthesizers.select_measure import MarginalBatch

    rng = np.random.default_rng(0)
    dom = Domain(list("abcde"), [2, 3, 4, 2, 5])
    records = np.column_stack([rng.integers(0, k, 300) for k in dom.shape])
    # Shared prefixes, unsorted and non-canonical input orders, 1- to 4-way.
    cliques = [("a", "b", "c"), ("c", "b", "a", "e"), ("b",), ("a", "b", "e"), ("e", "d"), ("a", "c"), ("a", "b")]
    expected = marginals(records, dom, cliques)
    batch = MarginalBatch(dom, cliques)
    flat = batch.counts(records)
    assert flat.size == sum(dom.size(c) for c in cliques)
    for clique, counts in zip(cliques, batch.split(flat)):
        np.testing.assert_array_equal(counts, expected[dom.canonical(clique)].ravel(), err_msg=str(clique))
    np.testing.assert_array_equal(batch.sums(flat), [300] * len(cliques))
    tables = [expected[dom.canonical(c)] for c in cliques]
    np.testing.assert_array_equal(batch.concatenate(tables), flat)
    # In threads, block by block: blocks of whole groups, each contiguous, the same counts.
    for max_cells, workers in ((1, 1), (1, 2), (40, 3), (1 << 22, 2), (1 << 22, 1)):
        seen = []

        def collect(members, offsets, counts):
            seen.append((members, offsets))
            return members, counts

        blocks = batch.map_counts(records, collect, max_cells=max_cells, workers=workers)
        assert sorted(i for members, _ in seen for i in members) == list(range(len(cliques)))
        for members, counts in blocks:
            np.testing.assert_array_equal(counts, np.concatenate([flat[batch.offsets[i]:batch.offsets[i]
                                                                       + batch.sizes[i]] for i in members]))
    assert len(seen) == 1    # one block when every group fits (one worker)
    np.testing.assert_array_equal(batch.counts(records, workers=2), flat)
    np.testing.assert_array_equal(np.concatenate([c for *_, c in batch.iter_counts(records, max_cells=1)]), flat)


def test_sampled_errors_are_exact_where_the_model_holds_the_clique_and_close_elsewhere():
    """Sampled errors: the 1-way and model-held candidates exactly; the others within the sampling error of the
    model's answer, ‖(total/N)·M_r(S) − M_r(p)‖₁ ≤ √(2/π)·total·Σ_cells √(p_c/N) in expectation (a 6σ margin)."""
    from skdpsynth.graphical import GraphicalModel
    from skdpsynth.synthesizers.select_measure import CandidateErrors

    rng = np.random.default_rng(1)
    dom = Domain(list("abcd"), [3, 4, 2, 5])
    cands = [("a",), ("a", "b"), ("b", "c"), ("a", "b", "c"), ("a", "c", "d"), ("b", "d")]
    answers = {c: rng.multinomial(1000, rng.dirichlet(np.ones(dom.size(c)))).astype(float) for c in cands}
    model = GraphicalModel(dom, {("a", "b"): rng.normal(size=(3, 4)), ("b", "c"): rng.normal(size=(4, 2)),
                                 ("d",): rng.normal(size=5)}, total=1000.0)
    errors = CandidateErrors(dom, answers, cands)
    errors.track(model)
    exact = np.array([errors.exact(i) for i in range(len(cands))])
    n = 20_000
    sampled = errors.sampled(n, np.random.default_rng(2))
    held = [0, 1, 2]
    np.testing.assert_array_equal(sampled[held], exact[held])
    for i in (3, 4, 5):
        p = model.project(cands[i]).ravel() / model.total
        bound = np.sqrt(2 / np.pi) * model.total * np.sqrt(p / n).sum()
        assert abs(sampled[i] - exact[i]) <= 6 * bound, (cands[i], sampled[i], exact[i], bound)
    assert not np.array_equal(sampled, exact)


@pytest.mark.parametrize("params, message", [
    ({"scoring": "fast"}, "scoring must be"),
    ({"scoring_samples": 0}, "scoring_samples must be"),
    ({"scoring_samples": True}, "scoring_samples must be"),
    ({"selections_per_round": 0}, "selections_per_round must be"),
    ({"selections_per_round": "many"}, "selections_per_round must be"),
])
def test_aim_engine_parameters_are_checked(params, message):
    X, dom = chain_data(200)
    with pytest.raises(ValueError, match=message):
        AIMSynthesizer(domain=dom, **params).fit(X)


def test_aim_auto_engine_is_chosen_from_public_sizes_and_reported(capsys):
    """scoring='auto' and selections_per_round='auto' depend on the candidate count and the width only: the same
    choice on any data over the domain, said in verbose output and kept as fitted attributes."""
    X, dom = chain_data(500)
    aim = AIMSynthesizer(1.0, domain=dom, max_iters=20, final_iters=20, verbose=1, random_state=0).fit(X)
    assert (aim.scoring_, aim.selections_per_round_) == ("exact", 1)
    assert "scoring: exact (25 candidates); 1 selection(s) per round" in capsys.readouterr().err
    wide = {f"x{i}": 2 for i in range(20)}          # 20 attributes: 1,350 candidates, sampled, 2 per round
    Xw = pd.DataFrame(np.random.default_rng(0).integers(0, 2, (300, 20)), columns=list(wide))
    for data in (Xw, Xw.iloc[::-1] * 0):
        aim = AIMSynthesizer(1.0, domain=wide, rounds=40, max_iters=5, final_iters=5, random_state=0).fit(data)
        assert (aim.scoring_, aim.selections_per_round_) == ("sampled", 2)
    aim = AIMSynthesizer(1.0, domain=wide, rounds=40, max_iters=5, final_iters=5, scoring="exact",
                         selections_per_round=2, random_state=0).fit(Xw)
    assert (aim.scoring_, aim.selections_per_round_) == ("exact", 2) and len(aim.selected_) % 2 == 0


def test_aim_selections_per_round_above_the_width_is_capped_and_charged_in_full():
    X, dom = chain_data(500)
    aim = AIMSynthesizer(1.0, domain=dom, selections_per_round=50, max_iters=20, final_iters=20,
                         random_state=0).fit(X)
    assert aim.selections_per_round_ == len(dom) and len(aim.selected_) % len(dom) == 0
    assert all(len(set(aim.selected_[i:i + 5])) == 5 for i in range(0, len(aim.selected_), 5))
    assert np.isclose(aim.privacy_ledger_.total_rho(), cdp_rho(1.0, aim.delta), rtol=1e-9)


def test_value_z_scores_read_the_models_one_way_counts_over_the_measurements_sigma():
    """MST's compressed domain: a merged cell's count is shared evenly by its cells, as sampling draws them; the
    sigma is that of the column's 1-way measurement in the ledger."""
    from skdpsynth import ViewSynthesizer
    from skdpsynth.synthesizers.select_measure import one_way_sigma

    dom = Domain(["a", "b"], [4, 2])
    compression = DomainCompression(dom, [Measurement(("a",), np.array([50.0, 2.0, 40.0, 1.0]), sigma=1.0),
                                          Measurement(("b",), np.array([60.0, 33.0]), sigma=1.0)])
    assert compression.original_counts("a", np.array([50.0, 40.0, 3.0])).tolist() == [50.0, 1.5, 40.0, 1.5]
    assert compression.original_counts("b", np.array([60.0, 33.0])).tolist() == [60.0, 33.0]

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.choice(3, 5000, p=[0.6, 0.4, 0.0]), "b": rng.integers(0, 2, 5000)})
    mst = MSTSynthesizer(epsilon=1.0, delta=1e-9, domain={"a": 3, "b": 2}, random_state=0).fit(X)
    z = mst.value_z_scores("a")
    sigma = one_way_sigma(mst.privacy_ledger_, "a")
    assert list(z.index) == [0, 1, 2] and sigma > 0
    # Values 0 and 1 hold 3,000 and 2,000 records: their z-scores are those counts over sigma, up to the model's
    # noise (a few sigma); value 2 holds none.
    assert abs(z[0] * sigma - 3000) < 5 * sigma and abs(z[1] * sigma - 2000) < 5 * sigma and z[2] < 3
    view = ViewSynthesizer(epsilon=1.0, domain={"a": 3, "b": 2}, random_state=0).fit(X)
    assert view.value_z_scores("a") is None   # no Gaussian measurement of a column alone
    with pytest.raises(ValueError, match="not a fitted column"):
        mst.value_z_scores("c")
