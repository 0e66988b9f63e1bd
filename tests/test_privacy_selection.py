"""Every data-dependent selection is set up as its analysis says, where it happens (issue 39).

Each exponential-mechanism call inside MST, AIM, RandDPGen (``HybridSynthesizer``), PPSyn
(``PartitionSynthesizer``) and DP quantiles is spied on (``privacy_spies.py``): its sensitivity is the one the
analysis derives (stated per call site below, with its source), its ε is the one its ledger entry records, and what
the algorithm does next is the mechanism's choice, not some other candidate.  DPView selects nothing from the data:
its views come from the public domain sizes (DPView, Section IV.C), which is checked the same way.  Last, the other
data-dependent choices (AIM's annealing, PPSyn's partitions and budgets, MST's compression, DPView's view size) are
pinned to released values: a fit on other data, with every mechanism replaying the first fit's releases
(``privacy_spies.Replay``), must make the same calls and end with the same model.

Expected sensitivities (add/remove-one neighbours, under which a marginal has L1 sensitivity 1, doc/privacy.md
"Neighbouring relation"):

* MST's edge score ``‖M_ab(D) − M̂_ab‖₁`` with ``M̂`` fitted to the noisy 1-way answers: ``M̂`` does not move with the
  record, and by the triangle inequality the score moves by at most ``‖M_ab(D) − M_ab(D')‖₁ = 1``: sensitivity 1
  (doc/synthesizers.md, MSTSynthesizer).
* AIM's quality score ``w_r(‖M_r(D) − M_r(p̂)‖₁ − √(2/π) σ n_r)``: each moves by at most ``w_r``, so the
  sensitivity is ``max_r |w_r|`` over the candidates (doc/synthesizers.md, AIMSynthesizer; the same ``Δ_t =
  max_{r ∈ C_t} w_r`` as the RandDPGen paper's Theorem 5.4).
* RandDPGen's score ``w_r(‖ŷ_r − M_r(p̂)‖₁ − …)`` reads the noisy selection answers ŷ_r; charged as the paper does,
  with ``Δ_t = max_{r ∈ W} w_r`` (Zhang et al., Section 4.3, "Exponential mechanism"; Algorithm 2 lines 8–9) and
  ``ε_t = √(8 (1 − α − β) ρ_t)``.
* PPSyn strict: the captured deviation ``G`` has sensitivity 1, so the gain ``G − r − k c`` has sensitivity 1 and
  the efficiency ``max(ηG − r, 0)/k^{2/3}`` at most η (doc/partition.md, "The two privacy modes", step 2); ε from
  ``ρ_em = (1 − contr_frac) select_frac ρ / T`` (the paper's Algorithm 1 line 4 gives selection ``0.1ρ/T`` a round).
* A DP quantile's rank utility ``−|i − qn|`` moves by at most ``max(q, 1 − q)`` (``DPKBinsDiscretizer``'s
  ``_quantile_sensitivity``; Smith 2011).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from privacy_spies import NoiseSpy, Replay
from skdpsynth import AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer, ViewSynthesizer
from skdpsynth.graphical import Measurement
from skdpsynth.graphical.estimation import independent_estimate
from skdpsynth.marginals import marginal
from skdpsynth.preprocessing import DPKBinsDiscretizer, discretizer
from skdpsynth.privacy import PrivacyLeakWarning
from skdpsynth.synthesizers.partition import partitioning, selection
from skdpsynth.synthesizers.select_measure import compile_workload
from skdpsynth.synthesizers.view import views as views_module

REL = 1e-12  # ε and ρ are recomputed by the same float formulas in another order: a few ulps apart at most


def _table(n: int, sizes: dict, seed: int) -> pd.DataFrame:
    """Columns that each depend weakly on the previous one."""
    rng = np.random.default_rng(seed)
    out, previous = {}, rng.integers(0, 2, n)
    for name, k in sizes.items():
        column = np.where(rng.random(n) < 0.3, previous % k, rng.integers(0, k, n))
        out[name], previous = column, column
    return pd.DataFrame(out)


MST_DOMAIN = {"a": 3, "b": 2, "c": 4, "d": 2, "e": 3, "f": 2}
DOMAIN = {"a": 3, "b": 3, "c": 2, "d": 4}


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return _table(613, DOMAIN, 5)


def _next_call(spy: NoiseSpy, after, name: str):
    """The first call of ``name`` made after the call ``after``."""
    position = next(i for i, c in enumerate(spy.calls) if c is after)
    return next(c for c in spy.calls[position + 1:] if c.name == name)


# -- MST ---------------------------------------------------------------------------------------------------------------
def _mst_edge_scores(mst, spy, X):
    """MST's edge scores recomputed from the noisy 1-way answers the spy saw and the true 2-way marginals."""
    domain, codes = mst.domain_, X.to_numpy()
    one_way = [c for c in spy.calls_to("gaussian_mechanism") if c.args["description"].startswith("1-way")]
    log1 = [Measurement((a,), c.result, c.args["sigma"]) for a, c in zip(domain.attrs, one_way)]
    if mst.compression_ is not None:
        log1 = [mst.compression_.measurement(m) for m in log1]
        domain, codes = mst.compression_.domain, mst.compression_.transform(codes)
    estimate = independent_estimate(domain, log1)
    total = float(estimate[domain.attrs[0]].sum())
    return {p: float(np.abs(marginal(codes, domain, p) - np.multiply.outer(estimate[p[0]], estimate[p[1]]) / total)
                     .sum()) for p in itertools.combinations(domain.attrs, 2)}


@pytest.mark.parametrize("compress", [True, False])
def test_mst_tree_edges_are_the_mechanisms_picks(compress, monkeypatch):
    """Replay MST's union-find: the k-th tree edge is the k-th call's pick among the pairs that close no cycle, each
    call scores those pairs by their L1 error (sensitivity 1) at ε = √(8 (ρ/3) / (d − 1)), as its entry records."""
    X = _table(613, MST_DOMAIN, 1)
    spy = NoiseSpy(monkeypatch)
    mst = MSTSynthesizer(0.2, domain=MST_DOMAIN, compress=compress, max_iters=30, random_state=0).fit(X)
    calls = spy.calls_to("exponential_mechanism")
    entries = [e for e in mst.privacy_ledger_ if e.mechanism == "exponential"]
    d = len(MST_DOMAIN)
    assert len(calls) == len(entries) == d - 1 == len(mst.tree_), \
        f"{len(calls)} exponential-mechanism calls, {len(entries)} charged, for a tree of {len(mst.tree_)} edges"
    errors = _mst_edge_scores(mst, spy, X)
    epsilon = math.sqrt(8.0 * (mst.rho_ / 3.0) / (d - 1))
    component = {a: a for a in MST_DOMAIN}

    def find(a):
        while component[a] != a:
            a = component[a]
        return a

    not_the_best = 0
    for k, (call, entry) in enumerate(zip(calls, entries)):
        open_pairs = [p for p in itertools.combinations(MST_DOMAIN, 2) if find(p[0]) != find(p[1])]
        scores = np.asarray(call.args["scores"])
        assert call.args["sensitivity"] == 1.0, f"edge {k}: sensitivity {call.args['sensitivity']}, the analysis says 1"
        assert not call.args["monotonic"]
        np.testing.assert_allclose(scores, [errors[p] for p in open_pairs], rtol=1e-9,
                                   err_msg=f"edge {k}: the scores are not the open pairs' L1 errors")
        assert math.isclose(call.args["epsilon"], epsilon, rel_tol=REL), f"edge {k}: epsilon"
        assert (entry.scale, entry.sensitivity) == (call.args["epsilon"], call.args["sensitivity"])
        pick = open_pairs[call.result]
        assert mst.tree_[k] == pick, f"edge {k}: the tree holds {mst.tree_[k]}, the mechanism picked {pick}"
        not_the_best += call.result != int(np.argmax(scores))
        component[find(pick[0])] = find(pick[1])
    # The setting tells the mechanism's pick from the best exact score: a tree of argmaxes would fail above.
    assert not_the_best > 0


# -- AIM ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", [{"scoring": "exact"}, {"scoring": "sampled", "scoring_samples": 500},
                                    {"scoring": "sampled", "selections_per_round": 3},
                                    {"scoring": "exact", "selections_per_round": 2}])
def test_aim_measures_the_lazy_mechanisms_pick(table, engine, monkeypatch):
    """Each selection is measured: the true marginal of the candidate the lazy mechanism picked, selected at
    sensitivity max |w_r| and at the ε its entry records, which is 0.1 / 0.9 of its measurement's cost.  Sampled
    scoring changes only the model's answers in the scores; several selections per round are each charged, and no
    round measures a candidate twice."""
    spy = NoiseSpy(monkeypatch)
    aim = AIMSynthesizer(1.0, domain=DOMAIN, rounds=12, max_iters=30, final_iters=30, random_state=0,
                         **engine).fit(table)
    assert aim.scoring_ == engine["scoring"]
    per_round = engine.get("selections_per_round", 1)
    assert aim.selections_per_round_ == per_round
    weights = compile_workload(aim.workload_, aim.domain_)
    candidates = list(weights)
    # A 216-cell domain: every candidate's model fits max_model_size, so all are eligible in every round.
    sensitivity = max(abs(w) for w in weights.values())
    calls = spy.calls_to("lazy_exponential_mechanism")
    entries = [e for e in aim.privacy_ledger_ if e.description == "select a marginal"]
    measured = [c for c in spy.calls_to("gaussian_mechanism") if not c.args["description"].startswith("1-way")]
    assert len(calls) == len(entries) == len(aim.selected_) == len(measured) > per_round, \
        f"{len(calls)} selections, {len(entries)} charged, {len(measured)} measured, for {len(aim.selected_)}"
    assert len(aim.selected_) % per_round == 0
    codes = table.to_numpy()
    for k, (call, entry, measurement) in enumerate(zip(calls, entries, measured)):
        assert call.args["sensitivity"] == sensitivity, f"selection {k}: sensitivity {call.args['sensitivity']}"
        assert len(call.args["upper_bounds"]) == len(candidates)
        assert (entry.scale, entry.sensitivity) == (call.args["epsilon"], call.args["sensitivity"])
        chosen = candidates[call.result]
        assert aim.selected_[k] == chosen, f"selection {k}: selected {aim.selected_[k]}, the mechanism picked {chosen}"
        np.testing.assert_array_equal(measurement.args["values"], marginal(codes, aim.domain_, chosen).ravel(),
                                      err_msg=f"selection {k}: the measurement is not the picked marginal's")
        # The measurements of a round come after all its selections.
        assert spy.calls.index(measurement) > spy.calls.index(calls[k - k % per_round + per_round - 1])
        # ρ split 0.1 selection (ε²/8) / 0.9 measurement (1/(2σ²)), annealed or last round alike.
        assert math.isclose(call.args["epsilon"] ** 2 / 8, 1 / (2 * measurement.args["sigma"] ** 2) / 9,
                            rel_tol=1e-9)
    for start in range(0, len(aim.selected_), per_round):
        in_round = aim.selected_[start:start + per_round]
        assert len(set(in_round)) == per_round, f"a round measured a candidate twice: {in_round}"
        for a, b in itertools.combinations(in_round, 2):
            assert len(set(a) & set(b)) < 2, f"two picks of a round share a pair of attributes: {in_round}"


def _record_model_draws(monkeypatch) -> list:
    """``(model, records)`` of every draw of scoring records from a model (select_measure's ``sample_model``)."""
    import skdpsynth.synthesizers.select_measure as select_measure

    drawn = []
    real_sample_model = select_measure.sample_model

    def recording(model, **kw):
        records = real_sample_model(model, **kw)
        drawn.append((model, records))
        return records
    monkeypatch.setattr(select_measure, "sample_model", recording)
    return drawn


def test_aim_sampled_scores_read_the_data_only_through_the_true_marginals(table, monkeypatch):
    """Sampled scoring: every selection's scores are w_r(‖y_r − Â_r‖₁ − κ_r/2 − √(2/π)σ n_r), with Â_r the marginal
    of records that ``sample_model`` drew from the model (scaled to its total), exact for 1-way and model-held
    candidates; so the only data in a score is y_r, and its sensitivity is |w_r| as for exact scores."""
    drawn = _record_model_draws(monkeypatch)
    spy = NoiseSpy(monkeypatch)
    aim = AIMSynthesizer(1.0, domain=DOMAIN, rounds=12, max_iters=30, final_iters=30, scoring="sampled",
                         scoring_samples=500, random_state=0).fit(table)
    weights = compile_workload(aim.workload_, aim.domain_)
    candidates = list(weights)
    calls = spy.calls_to("lazy_exponential_mechanism")
    measured = [c for c in spy.calls_to("gaussian_mechanism") if not c.args["description"].startswith("1-way")]
    assert len(drawn) == len(calls) == len(measured) > 1
    codes, domain = table.to_numpy(), aim.domain_
    for k, ((model, records), call, measurement) in enumerate(zip(drawn, calls, measured)):
        assert records.shape == (500, len(domain))
        sigma = measurement.args["sigma"]
        expected = []
        for r in candidates:
            y = marginal(codes, domain, r).ravel()
            if len(r) == 1 or any(set(r) <= set(c) for c in model.cliques):
                error = np.abs(y - model.project(r).ravel()).sum()
            else:
                share = marginal(records, domain, r).ravel() / 500
                inflation = np.sqrt(2 / np.pi) * model.total * np.sqrt(share * (1 - share) / 500).sum()
                error = np.abs(y - model.total * share).sum() - 0.5 * inflation
            expected.append(weights[r] * (error - np.sqrt(2 / np.pi) * sigma * y.size))
        np.testing.assert_allclose(call.args["upper_bounds"], expected, rtol=1e-9, atol=1e-9,
                                   err_msg=f"selection {k}: the scores are not those of records drawn from the model")
        assert call.args["sensitivity"] == max(abs(w) for w in weights.values())


# -- RandDPGen ---------------------------------------------------------------------------------------------------------
# Unequal weights w_r = Σ_s c_s |r ∩ s| (4.5, 6, 4.5, 3): the largest is not just any weight.
WEIGHTED_PAIRS = [(("a", "b"), 1.0), (("b", "c"), 2.0), (("c", "d"), 1.0), (("a", "d"), 0.5)]


@pytest.mark.parametrize("charge_selection", [False, True])
def test_randdpgen_measures_the_mechanisms_pick(table, charge_selection, monkeypatch):
    spy = NoiseSpy(monkeypatch)
    syn = HybridSynthesizer(1.0, domain=DOMAIN, partition={"n_slices": 2, "n_vertical": 2}, workload=WEIGHTED_PAIRS,
                            max_rounds=8, max_iters=30, final_iters=30, charge_selection=charge_selection,
                            random_state=1).fit(table)
    assert len(set(syn.weights_.values())) > 1
    alpha, beta = syn.settings_["alpha"], syn.settings_["beta"]
    n_init = len(DOMAIN) if syn.settings_["init"] == "oneway" else 0
    sensitivity = max(syn.weights_.values())
    calls = spy.calls_to("exponential_mechanism")
    charged = [e for e in syn.privacy_ledger_ if e.mechanism == "exponential"]
    assert len(calls) == syn.n_rounds_ > 1 and len(charged) == (len(calls) if charge_selection else 0), \
        f"{len(calls)} selections, {len(charged)} charged, for {syn.n_rounds_} rounds"
    descriptions = [e.description for e in syn.privacy_ledger_]
    for k, call in enumerate(calls):
        assert call.args["sensitivity"] == sensitivity, f"round {k}: sensitivity {call.args['sensitivity']}"
        rho_t = syn.round_budgets_[n_init + k]
        assert math.isclose(call.args["epsilon"], math.sqrt(8 * (1 - alpha - beta) * rho_t), rel_tol=REL)
        # A 216-cell domain: the size filter keeps every workload marginal, so the scores are over all of W*.
        assert len(call.args["scores"]) == len(syn.refined_workload_)
        chosen = syn.refined_workload_[call.result]
        assert syn.selected_[k] == chosen, f"round {k}: selected {syn.selected_[k]}, the mechanism picked {chosen}"
        assert any(d.startswith(f"round {k + 1}: measurement {' x '.join(chosen)} (DMM") for d in descriptions)
        if charge_selection:
            assert (charged[k].scale, charged[k].sensitivity) == (call.args["epsilon"], sensitivity)
        else:
            assert call.args["ledger"] is None  # post-processing (see test_privacy_reconciliation.py)


# -- PPSyn -------------------------------------------------------------------------------------------------------------
def _ppsyn(**kw):
    params = dict(domain=DOMAIN, rounds=4, max_iters=20, final_iters=30, random_state=3)
    params.update(kw)
    return PartitionSynthesizer(1.0, **params)


@pytest.mark.parametrize("strict_utility", ["gain", "efficiency"])
def test_ppsyn_measures_the_pair_the_mechanism_picked(table, strict_utility, monkeypatch):
    """Strict PPSyn: the exponential mechanism scores the (marginal, partition) options by their utility (sensitivity
    1 for the gain, η for the efficiency), and the round releases the picked option's contribution and measures the
    picked marginal through the picked partition."""
    spy = NoiseSpy(monkeypatch)
    spy.trace(selection.strict_options)
    syn = _ppsyn(strict_utility=strict_utility, eta=0.7).fit(table)
    T, rho = 4, syn.rho_
    rho_sel = syn.select_frac * rho / T
    rho_em, rho_c = (1 - syn.contr_frac) * rho_sel, syn.contr_frac * rho_sel
    calls, options = spy.calls_to("exponential_mechanism"), spy.calls_to("strict_options")
    entries = [e for e in syn.privacy_ledger_ if e.mechanism == "exponential"]
    assert len(calls) == len(options) == len(entries) == syn.n_rounds_ > 1, \
        f"{len(calls)} selections among {len(options)} option sets, {len(entries)} charged, for {syn.n_rounds_} rounds"
    for k, (call, made, entry) in enumerate(zip(calls, options, entries)):
        expected = 1.0 if strict_utility == "gain" else 0.7
        assert call.args["sensitivity"] == expected, f"round {k}: sensitivity {call.args['sensitivity']}"
        opts, candidates, j = made.result, made.args["candidates"], call.result
        np.testing.assert_array_equal(call.args["scores"], opts.utility)
        assert math.isclose(call.args["epsilon"], math.sqrt(8 * rho_em), rel_tol=REL)
        assert (entry.scale, entry.sensitivity) == (call.args["epsilon"], expected)
        record = syn.selected_[k]
        assert record["clique"] == candidates[int(opts.candidate[j])], f"round {k}: not the picked marginal"
        if not record["skipped"]:
            assert record["n_groups"] == int(opts.sizes[j]), f"round {k}: not the picked partition"
        released = _next_call(spy, call, "gaussian_mechanism")
        np.testing.assert_array_equal(released.args["values"], [opts.captured[j]])
        assert math.isclose(released.args["rho"], rho_c, rel_tol=REL)


def test_ppsyn_sampled_picks_read_the_data_only_through_the_true_marginals(table, monkeypatch):
    """Sampled scoring, three picks per round: the deviations a round's options are built on are
    ``y_w − total·share`` with the shares of records ``sample_model`` drew from the model (exact projections for
    1-way and model-held candidates), so ``G`` has sensitivity 1; each pick's mechanism sees the round's utilities
    with the options of candidates sharing two attributes with an earlier pick of the round at -inf."""
    drawn = _record_model_draws(monkeypatch)
    spy = NoiseSpy(monkeypatch)
    spy.trace(selection.strict_options)
    syn = _ppsyn(rounds=8, scoring="sampled", scoring_samples=300, selections_per_round=3).fit(table)
    codes, domain = table.to_numpy(), syn.domain_
    rounds = spy.calls_to("strict_options")
    assert len(rounds) == syn.selected_[-1]["round"] and len(drawn) == len(rounds) > 1
    for (model, records), made in zip(drawn, rounds):
        shares, deviations = made.args["sampled_shares"], made.args["deviations"]
        assert records.shape == (300, len(domain)) and made.args["n_samples"] == 300
        assert made.args["total"] == model.total
        for w in made.args["candidates"]:
            y = marginal(codes, domain, w).astype(float)
            if len(w) == 1 or any(set(w) <= set(c) for c in model.cliques):
                assert w not in shares
                np.testing.assert_allclose(deviations[w], y - model.project(w), rtol=1e-12, atol=1e-9)
            else:
                np.testing.assert_array_equal(shares[w], marginal(records, domain, w) / 300)
                np.testing.assert_allclose(deviations[w], y - model.total * shares[w], rtol=1e-12, atol=1e-9)
    # Every pick is the lazy mechanism (same distribution; it asks the costly size test only of options that
    # could win) over the options that obey the rule, with the exact utilities as bounds.
    calls = [c for c in spy.calls if c.name in ("exponential_mechanism", "lazy_exponential_mechanism")]
    assert len(calls) == len(syn.selected_)
    for k, (call, record) in enumerate(zip(calls, syn.selected_)):
        made = rounds[record["round"] - 1]
        opts, candidates = made.result, made.args["candidates"]
        earlier = [set(r["clique"]) for r in syn.selected_[:k] if r["round"] == record["round"]]
        assert call.name == "lazy_exponential_mechanism"
        scores = np.asarray(call.args["upper_bounds"])
        if not earlier:
            np.testing.assert_array_equal(scores, opts.utility)
        assert call.args["sensitivity"] == 1.0
        kept = np.isfinite(scores)
        np.testing.assert_array_equal(scores[kept], opts.utility[kept])
        for j, i in enumerate(opts.candidate):
            if any(len(set(candidates[i]) & p) >= 2 or set(candidates[i]) == p for p in earlier):
                assert scores[j] == -np.inf, f"selection {k}: {candidates[i]} shares two attributes with a pick"
        assert record["clique"] == candidates[int(opts.candidate[call.result])]
    assert max(r["round"] for r in syn.selected_) < len(syn.selected_)


def _true_marginals(X: pd.DataFrame, domain) -> list[np.ndarray]:
    codes = X.to_numpy()
    cliques = [c for k in (1, 2, 3) for c in itertools.combinations(domain.attrs, k)]
    return [marginal(codes, domain, c).astype(float) for c in cliques]


@pytest.mark.parametrize("partition_source", ["model", "initial_model"])
@pytest.mark.parametrize("measurement_form", ["aggregate", "uniform"])
def test_ppsyn_strict_partitions_only_released_values(table, partition_source, measurement_form, monkeypatch):
    """Every array a partition sequence is built from is a model marginal (post-processing), never a true one."""
    spy = NoiseSpy(monkeypatch)
    spy.trace(partitioning.partition_sequence)
    syn = _ppsyn(partition_source=partition_source, measurement_form=measurement_form).fit(table)
    built = [np.asarray(c.args["q"], dtype=float) for c in spy.calls_to("partition_sequence")]
    assert built
    truths = _true_marginals(table, syn.domain_)
    for q in built:
        for truth in truths:
            assert q.shape != truth.shape or not np.allclose(q, truth, rtol=0, atol=1e-6), \
                f"a partition of {q.shape} was built from the true marginal"


def test_ppsyn_paper_mode_partitions_true_answers_and_says_so(table, monkeypatch):
    """The spy above sees true marginals when they are used: paper mode does, and records the leak."""
    spy = NoiseSpy(monkeypatch)
    spy.trace(partitioning.partition_sequence)
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private"):
        syn = _ppsyn(privacy_mode="paper").fit(table)
    truths = _true_marginals(table, syn.domain_)
    built = [np.asarray(c.args["q"], dtype=float) for c in spy.calls_to("partition_sequence")]
    assert any(q.shape == t.shape and np.allclose(q, t, rtol=0, atol=1e-6) for q in built for t in truths)
    assert syn.privacy_ledger_.leaks


# -- DPView -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("view_size", [2, "auto"])
def test_dpview_views_come_from_public_sizes_and_are_measured_as_planned(table, view_size, monkeypatch):
    """No selection reads the data: the view plan is drawn from the public stream (DPView, Section IV.C, Algorithms
    1–3 use domain sizes only), and S3 (Section IV.D) measures exactly the planned views, each at sensitivity 1 and
    its ε_i = P_i ε; a view size chosen by ``"auto"`` reads the record count only through its Laplace release."""
    spy = NoiseSpy(monkeypatch)
    spy.trace(views_module.view_list_generation)
    spy.trace(views_module.auto_view_size)
    syn = ViewSynthesizer(1.0, domain=DOMAIN, view_size=view_size, variant="dpview+", n_search=20,
                          random_state=4).fit(table)
    assert not spy.calls_to("exponential_mechanism") and not spy.calls_to("lazy_exponential_mechanism")
    (plan,) = spy.calls_to("view_list_generation")
    assert not spy.from_noise_stream(plan.args["rng"]), "the view plan was drawn from the noise generator"
    laplace = spy.calls_to("laplace_mechanism")
    count, laplace = laplace[0], laplace[1:]   # the record count: n̂ by default, and what "auto" reads
    assert np.asarray(count.args["values"]).shape == ()  # the count, a 0-way marginal
    if view_size == "auto":
        (auto,) = spy.calls_to("auto_view_size")
        assert auto.args["n"] == max(float(count.result), 1.0), "view_size='auto' read another record count"
    codes = table.to_numpy()
    views = syn.view_plan_.views
    entries = [e for e in syn.privacy_ledger_ if e.description.endswith("Laplace counts")]
    assert len(laplace) == len(views) == len(syn.epsilons_) == len(entries)
    for view, call, epsilon, entry in zip(views, laplace, syn.epsilons_, entries):
        names = [syn.domain_.attrs[a] for a in view]
        np.testing.assert_array_equal(call.args["values"], marginal(codes, syn.domain_, names))
        assert call.args["sensitivity"] == 1.0 and call.args["epsilon"] == epsilon == entry.epsilon


# -- DP quantiles -----------------------------------------------------------------------------------------------------
def _quantile_fit() -> DPKBinsDiscretizer:
    x = pd.DataFrame({"x": np.random.default_rng(7).normal(size=401)})
    return DPKBinsDiscretizer(5, strategy="quantile", bounds=(-5.0, 5.0), epsilon=1.0, random_state=0).fit(x)


def test_dp_quantile_edges_are_charged_at_the_rank_utilitys_sensitivity(monkeypatch):
    spy = NoiseSpy(monkeypatch)
    disc = _quantile_fit()
    calls = spy.calls_to("_dp_quantile")
    entries = [e for e in disc.privacy_ledger_ if e.description.startswith("quantile")]
    assert len(calls) == len(entries) == 4
    for call, entry in zip(calls, entries):
        q = call.args["q"]
        assert entry.sensitivity == max(q, 1 - q) and entry.epsilon == call.args["epsilon"] == 1.0 / 4
    np.testing.assert_array_equal(disc.bin_edges_["x"][1:-1], sorted(c.result for c in calls))


def test_dp_quantile_weights_use_the_sensitivity_charged(monkeypatch):
    """Each gap's log-weight is log(length) + ε u / (2Δ): recovered from the weights, Δ is the charged max(q, 1 − q)."""
    spy = NoiseSpy(monkeypatch)
    spy.trace(discretizer._dp_quantile_log_weights)
    disc = _quantile_fit()
    weights = spy.calls_to("_dp_quantile_log_weights")
    entries = [e for e in disc.privacy_ledger_ if e.description.startswith("quantile")]
    assert len(weights) == len(entries) == 4
    for call, entry in zip(weights, entries):
        points, log_w = call.result
        n, q = len(points) - 2, call.args["q"]
        utility = -np.abs(np.arange(n + 1) - q * n)
        with np.errstate(divide="ignore"):
            slope = log_w - np.log(np.diff(points))
        usable = np.isfinite(slope) & (utility != 0)
        # Recovering the slope cancels log(length) out of log_w: a few ulps of |log_w| (< 100 here), under 1e-12
        # relative to the smallest slope term; 1e-9 leaves room, a wrong Δ or ε is off by a factor.
        np.testing.assert_allclose(slope[usable] / utility[usable], entry.epsilon / (2 * entry.sensitivity),
                                   rtol=1e-9, err_msg=f"q={q}: the weights use another ε/(2Δ) than the one charged")


# -- everything but the mechanisms is post-processing ------------------------------------------------------------------
def _models_equal(a, b) -> None:
    if isinstance(a, ViewSynthesizer):
        for x, y in zip(a.model_.tables, b.model_.tables, strict=True):
            np.testing.assert_array_equal(x, y)
        return
    assert a.model_.potentials.keys() == b.model_.potentials.keys()
    for clique in a.model_.potentials:
        np.testing.assert_array_equal(a.model_.potentials[clique], b.model_.potentials[clique])


REPLAYED = {
    "MST": lambda: MSTSynthesizer(1.0, domain=DOMAIN, max_iters=50, random_state=0),
    "MST-compress=False": lambda: MSTSynthesizer(1.0, domain=DOMAIN, compress=False, max_iters=50, random_state=0),
    "AIM": lambda: AIMSynthesizer(3.0, domain=DOMAIN, rounds=12, max_iters=30, final_iters=30, random_state=0),
    "AIM-round_stopping=None": lambda: AIMSynthesizer(3.0, domain=DOMAIN, rounds=12, max_iters=30, final_iters=30,
                                                      round_stopping=None, random_state=0),
    "AIM-sampled-3-per-round": lambda: AIMSynthesizer(3.0, domain=DOMAIN, rounds=12, max_iters=30, final_iters=30,
                                                      scoring="sampled", scoring_samples=400,
                                                      selections_per_round=3, random_state=0),
    "Partition-strict-model": lambda: _ppsyn(partition_source="model"),
    "Partition-strict-initial_model-uniform": lambda: _ppsyn(measurement_form="uniform"),
    "Partition-strict-sampled-3-per-round": lambda: _ppsyn(rounds=8, scoring="sampled", scoring_samples=300,
                                                           selections_per_round=3),
    "View-auto": lambda: ViewSynthesizer(1.0, domain=DOMAIN, view_size="auto", variant="dpview+", n_search=20,
                                         random_state=4),
}


@pytest.mark.parametrize("name", list(REPLAYED))
def test_the_data_is_read_only_through_the_mechanisms(table, name, monkeypatch):
    """Fit, then fit on other data with every mechanism replaying the first fit's releases: every other step is a
    function of those releases and public inputs, so the same mechanisms are called with the same ε, σ, ρ,
    sensitivity and sizes, and the model is the same.  (AIM's annealing, PPSyn's partitions and budgets, MST's
    compression, DPView's view size are each a data-dependent choice that this pins to released values.)"""
    with monkeypatch.context() as recording:
        spy = NoiseSpy(recording)
        first = REPLAYED[name]().fit(table)
    replay = Replay(monkeypatch, spy)
    other = _table(900, DOMAIN, 99)  # another size and another distribution
    second = REPLAYED[name]().fit(other)
    assert replay.unused() == {}
    _models_equal(first, second)
    assert second.n_records_ == first.n_records_


def test_the_replay_sees_a_choice_made_on_the_data(table, monkeypatch):
    """PPSyn's paper mode partitions the true answers: replayed on other data, its measurements differ."""
    with monkeypatch.context() as recording:
        spy = NoiseSpy(recording)
        with pytest.warns(PrivacyLeakWarning):
            _ppsyn(privacy_mode="paper").fit(table)
    Replay(monkeypatch, spy)
    with pytest.raises(AssertionError, match="not a function of the releases"), pytest.warns(PrivacyLeakWarning):
        _ppsyn(privacy_mode="paper").fit(_table(900, DOMAIN, 99))
