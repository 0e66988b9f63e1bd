"""HybridSynthesizer (RandDPGen) and the distributed marginal measurement (DMM: the paper's §4.1, Algorithm 1)."""
from __future__ import annotations

import itertools
import math
import warnings
from math import comb

import numpy as np
import pandas as pd
import pytest

from skdpsynth.privacy import mark_public
from joblib import parallel_backend
from sklearn.base import clone

from skdpsynth import Domain, HybridSynthesizer, SynthesisPipeline, TrainOnSynthetic
from skdpsynth.federated import Federation, HybridPartition, ReplayFederation, combine
from skdpsynth.federated.dmm import (
    NOISE_MECHANISMS,
    exceeds_paper_bound,
    indicator_variance,
    measurement_variance,
    paper_bound_variance,
    secure_sum_variance,
    split_budget,
)
from skdpsynth.marginals import marginal, workload
from skdpsynth.metrics import marginal_tvd
from skdpsynth.privacy import PrivacyLedger, cdp_rho, cdp_rho_loose
from skdpsynth.synthesizers.hybrid import PaperBoundWarning, budget_schedule, randdpgen

ALPHA, BETA = 0.1, 0.2
# The paper's literal choices (what paper_reproduction uses, without its IDMM and conversion).
PAPER = dict(alpha=ALPHA, beta=BETA, init="uniform", charge_selection=True, variance_model="paper_bound",
             use_selection_measurements=False)


# -- toy data ------------------------------------------------------------------------------------------
def toy(n=40, seed=0):
    rng = np.random.default_rng(seed)
    dom = Domain(["a", "b", "c"], [2, 3, 2])
    codes = np.column_stack([rng.integers(0, k, n) for k in dom.shape])
    return dom, codes


def bayes_net(n=20000, seed=0):
    """8 binary/ternary attributes, a chain x0 -> x1 -> ... with strong dependence."""
    rng = np.random.default_rng(seed)
    sizes = [2, 3, 2, 3, 2, 2, 3, 2]
    cols = [rng.integers(0, sizes[0], n)]
    for k in sizes[1:]:
        prev = cols[-1]
        keep = rng.random(n) < 0.8
        cols.append(np.where(keep, prev % k, rng.integers(0, k, n)))
    frame = pd.DataFrame({f"x{j}": c for j, c in enumerate(cols)})
    return frame, {f"x{j}": k for j, k in enumerate(sizes)}


def exact_counts(dom, codes, attrs):
    return marginal(codes, dom, dom.canonical(attrs)).ravel().astype(float)


# -- ε→ρ (Lemma 3.2), OptPBA and weights (§4.3, Algorithm 2 lines 3-4), the budget schedule (Algorithm 2) ---
def test_rho_conversions():
    assert cdp_rho_loose(1.0, 1e-9) == pytest.approx(1.178116e-02, rel=1e-6)
    assert cdp_rho_loose(0.1, 1e-9) == pytest.approx(1.203472e-04, rel=1e-6)
    frame, dom = bayes_net(2000)
    tight = HybridSynthesizer(1.0, domain=dom, max_rounds=20, random_state=0).fit(frame)
    assert tight.rho_ == pytest.approx(cdp_rho(1.0, 1e-9), rel=1e-12)
    with pytest.warns(UserWarning, match="IDMM"):
        paper = HybridSynthesizer(1.0, domain=dom, max_rounds=20, paper_reproduction=True,
                                  partition={"n_slices": 2, "n_vertical": 2}, random_state=0).fit(frame)
    assert paper.rho_ == pytest.approx(1.178116e-02, rel=1e-6)
    report = paper.privacy_report_
    assert report["n_repeats"] == 4 and report["rho_true"] == pytest.approx((4 * 0.3 + 0.7) * paper.rho_)
    # IDMM with e = K·S = 4 costs (4(α + β) + 1 − α − β) ρ = 1.9 ρ: ε = 1.385 at δ = 1e-9 by Lemma 3.2 (computed;
    # doc/deviations.md, "Honest IDMM accounting")
    assert report["epsilon_nominal"] == 1.0 and report["epsilon_true"] == pytest.approx(1.385, abs=1e-3)


def _refined(domain, ways, **kw):
    rho = 1.0
    ledger = PrivacyLedger()
    frame, _ = bayes_net(500)
    codes = frame.to_numpy()
    part = HybridPartition.centralized(len(codes), list(domain.attrs))
    fed = Federation.from_codes(codes, domain, part, seed=0)
    return randdpgen(fed.measure, domain, part, rho, workload=workload(domain, ways), rng=np.random.default_rng(0),
                     ledger=ledger, rounds=4, max_iters=20, final_iters=0, **kw)


def test_optpba_and_weights():
    frame, sizes = bayes_net(500)
    dom = Domain.from_dict(sizes)
    d = len(dom)
    two = _refined(dom, 2)
    assert math.fsum(two.selection_budgets.values()) == pytest.approx(ALPHA, rel=1e-12)
    assert len(set(np.round(list(two.selection_budgets.values()), 15))) == 1  # homogeneous: equal
    assert set(two.weights.values()) == {2 * (d - 1)}
    three = _refined(dom, 3)
    assert set(three.weights.values()) == {3 * comb(d - 1, 2)}
    mixed = _refined(dom, [2, 3])
    b2 = sum(v for r, v in mixed.selection_budgets.items() if len(r) == 2)
    b3 = sum(v for r, v in mixed.selection_budgets.items() if len(r) == 3)
    n2, n3 = comb(d, 2), comb(d, 3)
    # Per-marginal shares |r|^(2/3) (§4.3): 0.43283 / 0.56717 (computed) is the per-marginal ratio 2^(2/3) : 3^(2/3).
    assert 2 ** (2 / 3) / (2 ** (2 / 3) + 3 ** (2 / 3)) == pytest.approx(0.43283, abs=1e-5)
    assert (b2 / n2) / (b2 / n2 + b3 / n3) == pytest.approx(0.43283, abs=1e-5)
    assert b2 + b3 == pytest.approx(ALPHA, rel=1e-12)


@pytest.mark.parametrize("T, rounds", [(240, 239), (3, 2), (2, 2), (1, 1)])
def test_budget_schedule_without_annealing(T, rounds):
    budgets = budget_schedule(1.0, T, lambda t: False)
    assert len(budgets) == rounds and math.fsum(budgets) == pytest.approx(1.0, rel=1e-12)


def test_budget_schedule_with_annealing_never_overshoots():
    budgets = budget_schedule(0.0125, 240, lambda t: t in (5, 50))
    assert len(budgets) == 53 and math.fsum(budgets) == pytest.approx(0.0125, rel=1e-12)
    ratios = np.array(budgets[1:]) / np.array(budgets[:-1])
    # rho_t only grows by the annealing factor (the last round takes the remainder, which may be anything <= 3x).
    assert np.all(np.isclose(ratios[:-1], 1) | np.isclose(ratios[:-1], 4))


# -- the DMM protocols (Algorithm 1; doc/deviations.md, "Noise-share counts (protocol A)") -----------------
def _monte_carlo(fed, attrs, rho, draws, **kw):
    return np.array([combine(fed.measure(attrs, rho, **kw), fed.domain)[0] for _ in range(draws)])


def test_protocol_a_unbiased_with_the_exact_variance():
    dom, codes = toy(40)
    part = HybridPartition.grid(40, ["a", "b", "c"], n_slices=2, column_groups=[["a", "c"], ["b"]], random_state=0)
    fed = Federation.from_codes(codes, dom, part, seed=1)
    rho, draws = 2.0, 20000
    ys = _monte_carlo(fed, ("a", "b"), rho, draws)
    truth = exact_counts(dom, codes, ("a", "b"))
    se = ys.std(axis=0) / np.sqrt(draws)
    assert np.all(np.abs(ys.mean(axis=0) - truth) < 4 * se)
    v_a = 2 * (2 + 2) / (2 * rho)  # K = 2 slices, split 1 + 1: Σ|r|/|A_ij| = 4 per slice -> 4/rho
    assert v_a == secure_sum_variance(split_budget(part, dom, ("a", "b"), rho)) == 4 / rho
    assert ys.var(axis=0).mean() == pytest.approx(v_a, rel=0.05)
    assert combine(fed.replies[-1], dom)[1] == pytest.approx(v_a)


def test_protocol_b_unbiased_with_the_per_cell_variance():
    dom, codes = toy(30)
    part = HybridPartition.vertical(30, [["a"], ["b", "c"]])
    fed = Federation.from_codes(codes, dom, part, seed=2)
    rho, draws = 50.0, 20000
    ys = _monte_carlo(fed, ("a", "b"), rho, draws, protocol="indicator")
    truth = exact_counts(dom, codes, ("a", "b"))
    se = ys.std(axis=0) / np.sqrt(draws)
    assert np.all(np.abs(ys.mean(axis=0) - truth) < 4 * se)
    # Per cell: Σ_ℓ [∏_j (b_ℓj + σ_j²) − ∏_j b_ℓj], with σ_j² = 1/(2 ρ_j), ρ_j = rho / 2.
    s2 = 1 / (2 * rho / 2)
    a_onehot = np.eye(2)[codes[:, 0]]
    b_onehot = np.eye(3)[codes[:, 1]]
    per_cell = ((a_onehot[:, :, None] + s2) * (b_onehot[:, None, :] + s2) - a_onehot[:, :, None] * b_onehot[:, None, :]
                ).sum(axis=0).ravel()
    assert np.allclose(ys.var(axis=0), per_cell, rtol=0.08)  # 20k draws: s.e. of a variance ~1% (+ kurtosis)
    mean_v = indicator_variance(split_budget(part, dom, ("a", "b"), rho), dom)
    assert mean_v == pytest.approx(per_cell.mean(), rel=1e-12)
    assert combine(fed.replies[-1], dom)[1] == pytest.approx(mean_v)


def test_protocol_b_single_party_with_and_without_the_shortcut():
    dom, codes = toy(25)
    part = HybridPartition.vertical(25, [["a", "b"], ["c"]])
    fed = Federation.from_codes(codes, dom, part, seed=3)
    rho = 1.0
    # With the shortcut the party releases its noisy marginal: 1/(2ρ) per cell. Without it, its noisy one-hot
    # matrix summed over the R = 25 records: R/(2ρ) per cell.
    for shortcut, expected in ((True, 1 / (2 * rho)), (False, 25 / (2 * rho))):
        reply = fed.measure(("a", "b"), rho, protocol="indicator", shortcut=shortcut)
        assert combine(reply, dom)[1] == pytest.approx(expected)
        ys = _monte_carlo(fed, ("a", "b"), rho, 4000, protocol="indicator", shortcut=shortcut)
        assert ys.var(axis=0).mean() == pytest.approx(expected, rel=0.05)  # s.e. ~1% (4000 draws, 6 cells)


def test_protocol_b_noise_matrix_drawn_once_per_party_per_call():
    dom, codes = toy(30)
    part = HybridPartition.grid(30, ["a", "b", "c"], n_slices=2, column_groups=[["a"], ["b"], ["c"]],
                                random_state=0)
    fed = Federation.from_codes(codes, dom, part, seed=0)
    reply = fed.measure(("a", "b", "c"), 1.0, protocol="indicator")
    assert len(reply.parts) == 6  # one message per party: 2 slices x 3 parties
    for msg in reply.parts:
        assert msg.matrix.shape == (15, dom[msg.attrs[0]])  # R_i x n_{A_ij}: every cell reuses these columns


def test_degenerate_partitions_variances():
    dom, codes = toy(12)
    cols = ["a", "b", "c"]
    rho = 0.5
    central = HybridPartition.centralized(12, cols)
    assert measurement_variance(central, dom, ("a", "b"), rho, protocol="secure_sum") == 1 / (2 * rho)
    horizontal = HybridPartition.horizontal(12, cols, n_slices=3, random_state=0)
    assert measurement_variance(horizontal, dom, ("a", "b"), rho, protocol="secure_sum") == pytest.approx(3 / (2 * rho))
    vertical = HybridPartition.vertical(12, [["a"], ["b", "c"]])
    assert measurement_variance(vertical, dom, ("a", "b"), rho, protocol="secure_sum") == pytest.approx(4 / (2 * rho))
    assert paper_bound_variance(2, 2, rho) == 2 * 4 / (2 * rho)


def test_theorem_4_1_counterexample_is_flagged():
    dom = Domain(["a", "b", "c"], [2, 2, 2])
    part = HybridPartition.vertical(10, [["a"], ["b", "c"]])
    shares = split_budget(part, dom, ("a", "b", "c"), 1.0)
    factor = secure_sum_variance(shares) * 2  # Σ_j |r|/|A_j| = 3/1 + 3/2
    assert factor == pytest.approx(4.5) and factor > 2**2
    assert exceeds_paper_bound(part, dom, ("a", "b", "c")) and not exceeds_paper_bound(part, dom, ("a", "b"))
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 2, (200, 3)), columns=["a", "b", "c"])
    with pytest.warns(PaperBoundWarning, match="understates"):
        HybridSynthesizer(1.0, domain={"a": 2, "b": 2, "c": 2}, workload=3, max_rounds=5, variance_model="paper_bound",
                          partition={"n_slices": 1, "column_groups": [["a"], ["b", "c"]]}, random_state=0).fit(X)


def test_idmm_divides_the_variance_and_charges_e_times():
    dom, codes = toy(40)
    part = HybridPartition.grid(40, ["a", "b", "c"], n_slices=2, column_groups=[["a", "c"], ["b"]], random_state=0)
    fed = Federation.from_codes(codes, dom, part, seed=4)
    ys = _monte_carlo(fed, ("a", "b"), 2.0, 8000, n_repeats=3)
    assert combine(fed.replies[-1], dom)[1] == pytest.approx((4 / 2.0) / 3)  # four shares of sigma^2 = 1/6
    # The shares are discrete Gaussians, whose variance at sigma^2 = 1/6 is well below sigma^2 (0.0906).
    k = np.arange(-30, 31)
    weights = np.exp(-k**2 / (2 / 6))
    assert ys.var(axis=0).mean() == pytest.approx(4 * (k**2 * weights).sum() / weights.sum(), rel=0.06)
    assert fed.replies[-1].zcdp_charged == pytest.approx(6.0)
    frame, sizes = bayes_net(3000)
    with pytest.warns(UserWarning, match="costs 3 times"):
        paper = HybridSynthesizer(1.0, domain=sizes, n_repeats=3, max_rounds=30, random_state=0, **PAPER).fit(frame)
    assert paper.privacy_ledger_.total_rho() == pytest.approx((3 * (ALPHA + BETA) + 1 - ALPHA - BETA) * paper.rho_,
                                                              rel=1e-9)
    assert paper.privacy_report_["rho_true"] == pytest.approx(paper.privacy_ledger_.total_rho(), rel=1e-9)
    # Recommended settings: the selection is not charged, everything is a measurement, so e times rho.
    with pytest.warns(UserWarning, match="costs 3 times"):
        rec = HybridSynthesizer(1.0, domain=sizes, n_repeats=3, max_rounds=40, random_state=0).fit(frame)
    assert rec.privacy_ledger_.total_rho() == pytest.approx(3 * rec.rho_, rel=1e-9)
    assert rec.privacy_report_["rho_true"] == pytest.approx(3 * rec.rho_, rel=1e-9)
    # init="oneway" with a charged selection: the 1-way rounds measure (1 - alpha) of their budget.
    with pytest.warns(UserWarning):
        mixed = HybridSynthesizer(1.0, domain=sizes, n_repeats=2, max_rounds=30, random_state=0,
                                  **{**PAPER, "init": "oneway"}).fit(frame)
    assert mixed.privacy_report_["rho_true"] == pytest.approx(mixed.privacy_ledger_.total_rho(), rel=1e-9)


# -- ledger; the curator sees messages only ----------------------------------------------------------------
@pytest.fixture(scope="module", params=["recommended", "paper"])
def fitted(request):
    frame, sizes = bayes_net(6000)
    settings = PAPER if request.param == "paper" else {}
    syn = HybridSynthesizer(1.0, domain=sizes, partition={"n_slices": 2, "n_vertical": 2}, max_rounds=40,
                            random_state=0, **settings).fit(frame)
    return frame, sizes, syn


def test_ledger_sums_to_rho_and_splits_each_call_among_the_slice_parties(fitted):
    _, sizes, syn = fitted
    ledger = syn.privacy_ledger_
    assert ledger.total_rho() == pytest.approx(syn.rho_, rel=1e-12)
    assert syn.privacy_report_["rho_true"] == pytest.approx(syn.rho_, rel=1e-9)
    K = syn.partition_.n_slices
    dmm = [e for e in ledger if e.mechanism == NOISE_MECHANISMS[syn.protocol]]
    em = [e for e in ledger if e.mechanism == "exponential"]
    n_init = len(sizes) if syn.settings_["init"] == "oneway" else 0
    assert len(dmm) == len(syn.refined_workload_) + n_init + syn.n_rounds_
    assert len(em) == (syn.n_rounds_ if syn.settings_["charge_selection"] else 0)
    for entry in dmm:
        # Each slice's parties spend the call's rho in total: over K slices the shares sum to K rho'.
        assert math.fsum(entry.details["per_party"].values()) == pytest.approx(K * entry.rho, rel=1e-12)
    assert math.fsum(syn.round_budgets_) == pytest.approx(syn.rho_, rel=1e-12)
    assert len(syn.round_budgets_) == n_init + syn.n_rounds_


def test_curator_runs_on_the_messages_alone():
    frame, sizes = bayes_net(3000)
    dom = Domain.from_dict(sizes)
    part = HybridPartition.grid(len(frame), list(frame.columns), n_slices=2, n_vertical=2, random_state=0)
    fed = Federation.from_codes(frame.to_numpy(), dom, part, seed=5)
    kw = dict(workload=workload(dom, 2), rounds=30, max_iters=50, final_iters=50)
    first = randdpgen(fed.measure, dom, part, 0.05, rng=np.random.default_rng(9), ledger=PrivacyLedger(), **kw)
    # The parties (and their data) are gone: only their messages remain.
    replay = ReplayFederation(fed.replies)
    del fed
    second = randdpgen(replay.measure, dom, part, 0.05, rng=np.random.default_rng(9), ledger=PrivacyLedger(), **kw)
    assert second.selected == first.selected
    for c in first.model.potentials:
        np.testing.assert_array_equal(second.model.potentials[c], first.model.potentials[c])
    with pytest.raises(LookupError):
        replay.measure(("x0", "x1"), 1.0)


def test_joblib_backends_give_identical_results():
    frame, sizes = bayes_net(3000)
    kw = dict(domain=sizes, partition={"n_slices": 2, "n_vertical": 2}, max_rounds=20, max_iters=50, random_state=0)
    base = HybridSynthesizer(1.0, **kw).fit(frame).sample(500)
    threads = HybridSynthesizer(1.0, n_jobs=2, **kw)
    with parallel_backend("threading"):
        threads.fit(frame)
    pd.testing.assert_frame_equal(threads.sample(500), base)


# -- end to end, monotonicity in ε, K = S = 1 ---------------------------------------------------------------
@pytest.mark.slow
def test_end_to_end_tiny_noise_recovers_the_2way_marginals():
    frame, sizes = bayes_net(20000)
    syn = HybridSynthesizer(1e4, domain=sizes, partition={"n_slices": 2, "n_vertical": 2}, random_state=0).fit(frame)
    synthetic = syn.sample()
    assert marginal_tvd(frame, synthetic, ways=2, domain=Domain.from_dict(sizes)) < 0.02
    again = HybridSynthesizer(1e4, domain=sizes, partition={"n_slices": 2, "n_vertical": 2}, random_state=0)
    pd.testing.assert_frame_equal(again.fit(frame).sample(), synthetic)


@pytest.mark.slow
def test_more_budget_gives_less_error():
    frame, sizes = bayes_net(5000)
    dom = Domain.from_dict(sizes)

    def error(eps):
        return np.mean([
            marginal_tvd(frame, HybridSynthesizer(eps, domain=sizes, partition={"n_slices": 2, "n_vertical": 2},
                                                  max_iters=200, random_state=s).fit(frame).sample(), ways=2,
                         domain=dom)
            for s in range(5)])

    assert error(1.0) < error(0.1)


def test_k_s_1_measures_like_a_central_mechanism():
    frame, sizes = bayes_net(3000)
    syn = HybridSynthesizer(1.0, domain=sizes, max_rounds=20, random_state=0, **PAPER).fit(frame)
    assert syn.partition_.n_slices == 1 and syn.partition_.n_vertical == 1
    rounds = [e for e in syn.privacy_ledger_ if e.description.startswith("round") and "measurement" in e.description]
    for entry, rho_t in zip(rounds, syn.round_budgets_):
        assert entry.scale == pytest.approx(math.sqrt(1 / (2 * BETA * rho_t)), rel=1e-12)  # exactly 1/(2ρ')


# -- the estimator surface --------------------------------------------------------------------------------
def test_party_frames_form():
    frame, sizes = bayes_net(400)
    frame.insert(0, "ID", np.arange(400) * 7)
    left, right = frame.iloc[:200], frame.iloc[200:]
    frames = {"P1": left[["ID", "x0", "x1", "x2", "x3"]], "P2": left[["ID", "x4", "x5", "x6", "x7"]],
              "P3": right[["ID", "x0", "x1", "x2", "x3"]], "P4": right[["ID", "x4", "x5", "x6", "x7"]]}
    syn = HybridSynthesizer(1.0, domain=sizes, max_rounds=10, max_iters=30, random_state=0).fit(frames)
    assert syn.partition_.n_slices == 2 and syn.partition_.n_vertical == 2
    assert list(syn.sample(5).columns) == [f"x{j}" for j in range(8)]
    with pytest.raises(ValueError, match="partition comes from the frames"):
        HybridSynthesizer(1.0, domain=sizes, partition={"n_slices": 2}).fit(frames)


@pytest.mark.parametrize("params, match", [
    ({"alpha": 0.5, "beta": 0.5}, "alpha \\+ beta < 1"),
    ({"protocol": "magic"}, "protocol"),
    ({"variance_model": "x"}, "variance_model"),
    ({"n_repeats": 0}, "n_repeats"),
    ({"partition": {"n_slices": 2, "bogus": 1}}, "recipe keys"),
    ({"selection_scores": "triples"}, "selection_scores"),
])
def test_bad_parameters(params, match):
    frame, sizes = bayes_net(200)
    with pytest.raises(ValueError, match=match):
        HybridSynthesizer(1.0, domain=sizes, **params).fit(frame)


# -- selection scored on pairs ---------------------------------------------------------------------------------
def test_pair_scores_measure_the_pairs_once_and_spend_rho_exactly():
    frame, sizes = bayes_net(3000)
    syn = HybridSynthesizer(1.0, domain=sizes, partition={"n_slices": 1, "n_vertical": 2}, workload=3,
                            selection_scores="pairs", alpha=0.5, max_rounds=24, max_iters=50, final_iters=50,
                            random_state=0).fit(frame)
    ledger = syn.privacy_ledger_
    selection = [e for e in ledger if e.description.startswith("selection measurement")]
    pairs = {tuple(e.description.split(" (DMM")[0].removeprefix("selection measurement ").split(" x ")) for e in selection}
    assert len(selection) == len(pairs) == comb(len(sizes), 2)     # every pair of the 3-way workload, once
    assert math.fsum(e.rho for e in selection) == pytest.approx(0.5 * syn.rho_, rel=1e-12)
    assert ledger.total_rho() == pytest.approx(syn.rho_, rel=1e-12)
    assert syn.selected_ and all(len(r) == 3 for r in syn.selected_)  # the rounds measure workload triples


def test_a_candidates_pair_score_is_the_sum_of_its_pairs_errors_less_the_expected_noise():
    from skdpsynth.synthesizers.hybrid.rounds import _RandDPGenRounds, selection_parts

    frame, sizes = bayes_net(2000)
    dom = Domain.from_dict(sizes)
    part = HybridPartition.vertical(len(frame), [list(sizes)[:4], list(sizes)[4:]])
    fed = Federation.from_codes(frame.to_numpy(), dom, part, seed=1)
    captured = {}
    original = _RandDPGenRounds.scores

    def spy(self, model, candidates, rho_measure):
        out = original(self, model, candidates, rho_measure)
        captured.setdefault("first", (self, model, list(candidates), rho_measure, out))
        return out

    _RandDPGenRounds.scores = spy
    try:
        randdpgen(fed.measure, dom, part, 0.5, workload=workload(dom, 3), rng=np.random.default_rng(0),
                  ledger=PrivacyLedger(), rounds=20, max_iters=30, final_iters=30, selection_scores="pairs",
                  charge_selection=False, init="oneway", variance_model="exact", use_selection_measurements=True)
    finally:
        _RandDPGenRounds.scores = original
    steps, model, candidates, rho_measure, scores = captured["first"]
    assert set(steps.scored) == {p for r in candidates for p in selection_parts([r], "pairs")[r]}
    # The scores read the parties' noisy replies (the first DMM of each pair), never anything else.
    released = {}
    for reply in fed.replies:
        released.setdefault(tuple(reply.attrs), combine(reply, dom)[0])
    for p in steps.scored:
        np.testing.assert_array_equal(steps.selection[p][0], released[p])
        assert not np.array_equal(steps.selection[p][0], exact_counts(dom, frame.to_numpy(), p))
    for r, score in zip(candidates[:10], scores[:10]):
        expected = 0.0
        for p in itertools.combinations(r, 2):
            y, var = steps.selection[p]
            expected += (np.abs(y - model.project(p).ravel()).sum()
                         - math.sqrt(2 / math.pi) * math.sqrt(var) * dom.size(p))
        expected -= math.sqrt(2 / math.pi) * math.sqrt(steps.variance(r, rho_measure)) * dom.size(r)
        assert score == pytest.approx(steps.weights[r] * expected, rel=1e-9)


def test_out_of_domain_values_are_rejected():
    frame, sizes = bayes_net(200)
    frame.loc[0, "x1"] = 7
    with pytest.raises(ValueError):
        HybridSynthesizer(1.0, domain={**sizes, "x1": [0, 1, 2]}).fit(frame)


def test_clone_pipeline_and_train_on_synthetic():
    from sklearn.linear_model import LogisticRegression

    frame, sizes = bayes_net(3000)
    syn = HybridSynthesizer(1.0, domain=sizes, partition={"n_slices": 2, "n_vertical": 2}, max_rounds=20,
                            max_iters=50, random_state=0)
    assert clone(syn).get_params() == syn.get_params()
    tos = TrainOnSynthetic(syn, LogisticRegression(max_iter=500)).fit(frame.drop(columns="x7"), frame["x7"])
    assert tos.score(frame.drop(columns="x7"), frame["x7"]) > 0.4
    # The sizes are public: dtypes built from them are declared public (else the fit warns of a leak).
    cats = frame.astype({c: mark_public(pd.CategoricalDtype(range(k))) for c, k in sizes.items()})
    pipe = SynthesisPipeline([("synth", HybridSynthesizer(1.0, partition={"n_slices": 2, "n_vertical": 2},
                                                          max_rounds=20, max_iters=50, random_state=0))])
    assert pipe.fit(cats).sample(100).shape == (100, 8)


def test_none_hyperparameters_resolve_to_recommended_or_paper_settings():
    frame, sizes = bayes_net(1500)
    rec = HybridSynthesizer(1.0, domain=sizes, random_state=0).fit(frame)
    assert rec.settings_ == {"alpha": 0.3, "beta": 0.2, "init": "oneway", "charge_selection": False,
                             "variance_model": "exact", "use_selection_measurements": True, "max_rounds": 4 * 8}
    assert rec.get_params()["alpha"] is None  # stored as given (sklearn contract)
    # K = S = 1: the paper's IDMM repeats e = K*S = 1 time, so nothing to warn about.
    paper = HybridSynthesizer(1.0, domain=sizes, paper_reproduction=True, alpha=0.15, random_state=0).fit(frame)
    assert paper.privacy_report_["rho_true"] == pytest.approx(paper.rho_, rel=1e-9)
    assert paper.settings_ == {"alpha": 0.15, "beta": 0.2, "init": "uniform", "charge_selection": True,
                               "variance_model": "paper_bound", "use_selection_measurements": False,
                               "max_rounds": 16 * 8}
