"""Empirical differential-privacy audits (black-box, Clopper–Pearson; see skdpsynth.privacy.audit).

Every audit runs a release on two neighbouring data sets — D and D' = D plus one
record, the package's add/remove relation, so a count or marginal cell moves by
one — and asserts that the ε lower bound it proves is at most the claimed ε.
A correct mechanism fails such an assertion with probability at most alpha =
0.05, and the seeds are fixed, so these tests are deterministic.

Two more kinds of assertion keep the audits honest:

* power: where runs are cheap (vectorised mechanisms, millions of draws) the
  bound must reach a stated fraction of the claim, so that a weak audit
  cannot pass vacuously;
* planted bugs: deliberately mis-calibrated mechanisms (too little noise, a
  threshold that forgets the +1, ``monotonic=True`` misused) and a synthesizer
  with a planted leak, sitting next to the correct ones, must be caught
  (ε lower bound > claimed ε). That shows the same harness can fail.

Run with ``-s`` to see every audit's bound, claim and ratio.
"""
from __future__ import annotations

import importlib.util
import itertools
import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.preprocessing.discretizer import DPKBinsDiscretizer, _dp_quantile
from skdpsynth.preprocessing.encoder import DPCategoricalEncoder, dp_threshold, release_above_threshold
from skdpsynth.privacy import (
    cdp_epsilon,
    exponential_mechanism,
    lazy_exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
    laplace_mechanism,
)
from skdpsynth.privacy.audit import (
    AuditResult,
    DistinguishingEvent,
    audit,
    clopper_pearson,
    epsilon_lower_bound,
)
from skdpsynth.synthesizers import select_measure


def report(name: str, result: AuditResult, claim: float, seconds: float | None = None) -> float:
    """Print one audit line (visible with -s) and return ε_lb / claim."""
    ratio = result.epsilon_lower_bound / claim
    timing = "" if seconds is None else f", {seconds:.1f} s"
    print(f"\n[audit] {name}: eps_lb={result.epsilon_lower_bound:.4f} claim={claim:.4f} (delta={result.delta:g}) "
          f"ratio={ratio:.3f}; {result.n_runs} runs/neighbour{timing}; event: {result.event}; held-out counts "
          f"{result.k_favoured}/{result.n_favoured} vs {result.k_other}/{result.n_other}")
    return ratio


def run_audit(name, claim, *args, **kwargs) -> tuple[AuditResult, float]:
    start = time.perf_counter()
    result = audit(*args, **kwargs)
    return result, report(name, result, claim, time.perf_counter() - start)


# =====================================================================================================================
# The toolkit itself
# =====================================================================================================================

@pytest.mark.parametrize("k, n", [(0, 1), (0, 20), (1, 20), (7, 20), (19, 20), (20, 20), (312, 1000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    lo, hi = clopper_pearson(k, n, 0.05)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)
    # Each end of the two-sided interval is a one-sided bound at half the level.
    assert clopper_pearson(k, n, 0.025, side="lower") == pytest.approx((lo, 1.0), abs=1e-12)
    assert clopper_pearson(k, n, 0.025, side="upper") == pytest.approx((0.0, hi), abs=1e-12)


def test_clopper_pearson_edges_vectorised_and_validation():
    lo, hi = clopper_pearson(np.array([0, 5, 10]), 10, 0.05, side="two-sided")
    assert lo[0] == 0.0 and hi[2] == 1.0 and np.all(lo <= hi)
    # k = 0: the upper bound solves (1 - p)^n = alpha.
    assert clopper_pearson(0, 50, 0.05, side="upper")[1] == pytest.approx(1 - 0.05 ** (1 / 50))
    for bad in [dict(k=3, n=2), dict(k=-1, n=2), dict(k=1, n=0), dict(k=0.5, n=2)]:
        with pytest.raises(ValueError):
            clopper_pearson(bad["k"], bad["n"])
    with pytest.raises(ValueError):
        clopper_pearson(1, 2, side="left")
    with pytest.raises(ValueError):
        clopper_pearson(1, 2, alpha=1.0)


def test_clopper_pearson_coverage_is_at_least_nominal():
    rng = np.random.default_rng(0)
    n, p = 40, 0.13
    k = rng.binomial(n, p, size=20000)
    lo, hi = clopper_pearson(k, n, 0.1)
    assert np.mean((lo <= p) & (p <= hi)) >= 0.9
    lo1, _ = clopper_pearson(k, n, 0.1, side="lower")
    assert np.mean(lo1 <= p) >= 0.9


def test_epsilon_lower_bound_formula_and_zero_floor():
    p_lo, _ = clopper_pearson(600, 1000, 0.025, side="lower")
    _, q_hi = clopper_pearson(100, 1000, 0.025, side="upper")
    assert epsilon_lower_bound(600, 1000, 100, 1000) == pytest.approx(math.log(p_lo / q_hi))
    assert epsilon_lower_bound(600, 1000, 100, 1000, delta=0.1) == pytest.approx(math.log((p_lo - 0.1) / q_hi))
    assert epsilon_lower_bound(100, 1000, 600, 1000) == 0.0  # wrong direction: nothing to claim
    assert epsilon_lower_bound(5, 1000, 0, 1000, delta=0.01) == 0.0  # p_lo below delta
    assert epsilon_lower_bound([600, 100], 1000, [100, 600], 1000).tolist() == [
        pytest.approx(math.log(p_lo / q_hi)), 0.0]
    with pytest.raises(ValueError):
        epsilon_lower_bound(1, 2, 1, 2, delta=1.0)


def test_distinguishing_event():
    x = np.array([-1.0, 0.0, 2.0])
    assert DistinguishingEvent(0.0, True, "D")(x).tolist() == [False, False, True]
    assert DistinguishingEvent(0.0, False, "D'")(x).tolist() == [True, True, False]


def test_audit_bookkeeping_and_event_direction():
    res = audit(lambda rng, n: rng.normal(0.0, 1.0, n), lambda rng, n: rng.normal(3.0, 1.0, n),
                n_runs=10_000, batch=True, random_state=3)
    assert res.n_runs == 10_000 and res.n_selection == 5000 and res.n_favoured == res.n_other == 5000
    # The shifted neighbour makes high values more likely: either {s > t} favouring D', or {s <= t} favouring D.
    assert (res.event.above, res.event.favours) in {(True, "D'"), (False, "D")}
    assert res.epsilon_lower_bound > 1.0
    # Same seed, same result; another selection share changes the split.
    again = audit(lambda rng, n: rng.normal(0.0, 1.0, n), lambda rng, n: rng.normal(3.0, 1.0, n),
                  n_runs=10_000, batch=True, random_state=3)
    assert again == res
    other = audit(lambda rng, n: rng.normal(0.0, 1.0, n), lambda rng, n: rng.normal(3.0, 1.0, n),
                  n_runs=10_000, batch=True, selection_fraction=0.2, random_state=3)
    assert other.n_selection == 2000 and other.n_favoured == 8000


def test_fixed_events_count_every_run_as_the_held_out_runs_of_a_selection():
    """With events fixed in advance, all runs are held out; they are the same runs (same seed) that a selection
    audit of twice as many holds out, so one event gives the same counts and bound."""
    def release(shift):
        return lambda rng: float(rng.laplace(shift, 1.0) > 1.0)

    selected = audit(release(0.0), release(1.0), n_runs=800, random_state=5)
    fixed = audit(release(0.0), release(1.0), n_runs=400, events=[selected.event], random_state=5)
    assert (fixed.n_selection, fixed.n_favoured, fixed.n_other) == (0, 400, 400) and np.isnan(fixed.selection_epsilon)
    assert (fixed.event, fixed.k_favoured, fixed.k_other) == (selected.event, selected.k_favoured, selected.k_other)
    assert fixed.epsilon_lower_bound == selected.epsilon_lower_bound
    # Four events: the best of them, each at alpha / 4.
    family = audit(release(0.0), release(1.0), n_runs=400, events=DistinguishingEvent.all_at(0.5), random_state=5)
    values = {}
    for event in DistinguishingEvent.all_at(0.5):
        one = audit(release(0.0), release(1.0), n_runs=400, events=[event], alpha=0.05 / 4, random_state=5)
        values[event] = one.epsilon_lower_bound
    assert family.epsilon_lower_bound == max(values.values()) and values[family.event] == max(values.values())
    with pytest.raises(ValueError, match="DistinguishingEvent"):
        audit(release(0.0), release(1.0), n_runs=10, events=[])
    with pytest.raises(ValueError, match="DistinguishingEvent"):
        audit(release(0.0), release(1.0), n_runs=10, events=[DistinguishingEvent(0.5, True, "D''")])


def test_audit_of_identical_releases_claims_nothing():
    res = audit(lambda rng, n: rng.normal(size=n), lambda rng, n: rng.normal(size=n), n_runs=200_000,
                batch=True, random_state=0)
    assert res.epsilon_lower_bound == 0.0
    res = audit(lambda rng: int(rng.integers(3)), lambda rng: int(rng.integers(3)), n_runs=500, random_state=0)
    assert res.epsilon_lower_bound == 0.0


def test_audit_rejects_bad_input():
    def ok(rng, n):
        return np.zeros(n)

    with pytest.raises(ValueError, match="scalar values"):
        audit(lambda rng, n: np.zeros((n, 2)), ok, n_runs=10, batch=True)
    with pytest.raises(ValueError, match="NaN"):
        audit(lambda rng, n: np.full(n, np.nan), ok, n_runs=10, batch=True)
    for kwargs in [dict(n_runs=3), dict(n_runs=10, delta=1.0), dict(n_runs=10, alpha=0.0),
                   dict(n_runs=10, selection_fraction=1.0), dict(n_runs=10, max_thresholds=1),
                   dict(n_runs=10, random_state="seed")]:
        with pytest.raises(ValueError):
            audit(ok, ok, batch=True, **kwargs)


@pytest.mark.parametrize("events", [None, DistinguishingEvent.all_at(2.0)], ids=["selected", "fixed"])
def test_audit_false_alarm_rate_is_at_most_alpha(events):
    """The guarantee itself: on an exactly ε-DP mechanism (Laplace, ε = 1, at its worst-case neighbours)
    the bound exceeds ε in at most an alpha share of independent audits (Clopper–Pearson is conservative,
    so in practice far fewer). The fixed events include {s > 2} favouring D', whose probability ratio is
    exactly e^ε (any threshold >= 1 is)."""
    n_audits, alpha = 300, 0.05
    exceed = 0
    for seed in range(n_audits):
        res = audit(lambda rng, n: rng.laplace(0.0, 1.0, n), lambda rng, n: 1.0 + rng.laplace(0.0, 1.0, n),
                    n_runs=4000, batch=True, alpha=alpha, events=events, random_state=seed)
        exceed += res.epsilon_lower_bound > 1.0
    # P[Binomial(300, 0.05) >= 27] < 0.01: the audit would have to be invalid to get there.
    assert exceed < 27
    print(f"\n[audit] false alarms on exact Laplace(eps=1), events {'fixed' if events else 'selected'}: "
          f"{exceed}/{n_audits} (alpha={alpha})")


# =====================================================================================================================
# Mechanisms
# =====================================================================================================================
#
# Where the events worth counting are known in advance (the statistic takes a few values: whether a count passed
# its threshold, a bound that is either kept or extended; or it is a noisy count, whose best events split the two
# neighbours' counts), they are fixed (DistinguishingEvent.all_at): every run is then held out, and half the runs
# of a selection audit give the same held-out sample.

@pytest.mark.parametrize("rho, sensitivity", [(0.5, 1.0), (0.125, 2.0)])
def test_audit_gaussian_mechanism(rho, sensitivity):
    """Gaussian noise on a count: ρ-zCDP with ρ = Δ²/2σ²; the claim at δ is cdp_epsilon(ρ, δ).

    With Δ = 2 (e.g. a sum of values in {0, 1, 2}) D' = D + a record of value 2 moves the answer by 2.
    """
    delta = 1e-3
    claim = cdp_epsilon(rho, delta)

    def release(count):
        return lambda rng, n: gaussian_mechanism(np.full(n, count), rho=rho, sensitivity=sensitivity,
                                                 random_state=rng)

    res, ratio = run_audit(f"gaussian_mechanism rho={rho} sensitivity={sensitivity}", claim,
                           release(10.0), release(10.0 + sensitivity), n_runs=2_000_000, delta=delta, batch=True,
                           random_state=11)
    assert res.epsilon_lower_bound <= claim
    assert ratio >= 0.5  # power: the audit must not be vacuous


@pytest.mark.parametrize("epsilon, sensitivity", [(1.0, 1.0), (0.5, 3.0)])
def test_audit_laplace_mechanism(epsilon, sensitivity):
    def release(count):
        return lambda rng, n: laplace_mechanism(np.full(n, count), epsilon=epsilon, sensitivity=sensitivity,
                                                random_state=rng)

    res, ratio = run_audit(f"laplace_mechanism eps={epsilon} sensitivity={sensitivity}", epsilon,
                           release(5.0), release(5.0 + sensitivity), n_runs=1_000_000, batch=True, random_state=12)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.5


def _exp_mech_scores(monotonic: bool, m: int = 50):
    """Neighbouring score vectors (sensitivity 1) where the selection of candidate 0 is most sensitive.

    Non-monotonic: candidate 0 gains 1 while every other loses 1. Monotonic: candidate 0 gains 1 and the
    others stay. Either way P[0] goes from 1/m to e^ε/(e^ε + m - 1): a ratio close to e^ε for large m.
    """
    d = np.zeros(m)
    dprime = np.r_[1.0, np.full(m - 1, 0.0 if monotonic else -1.0)]
    return d, dprime


@pytest.mark.slow
@pytest.mark.parametrize("monotonic", [False, True])
def test_audit_exponential_mechanism(monotonic):
    """ε-DP (the ledger's ε²/8 zCDP is a different, also valid, statement): audited against pure ε."""
    epsilon = 2.0
    d, dprime = _exp_mech_scores(monotonic)
    res, ratio = run_audit(
        f"exponential_mechanism eps={epsilon} monotonic={monotonic}", epsilon,
        lambda rng: exponential_mechanism(d, epsilon=epsilon, monotonic=monotonic, random_state=rng),
        lambda rng: exponential_mechanism(dprime, epsilon=epsilon, monotonic=monotonic, random_state=rng),
        n_runs=12_000, random_state=13 + monotonic)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.5


@pytest.mark.slow
def test_audit_lazy_exponential_mechanism():
    """The lazy version (bounds above the scores, most never computed) is audited like the exact one."""
    epsilon = 2.0
    d, dprime = _exp_mech_scores(False)

    def lazy(scores):
        return lambda rng: lazy_exponential_mechanism(scores + 1.0, scores.__getitem__, epsilon=epsilon,
                                                      random_state=rng)
    res, ratio = run_audit(f"lazy_exponential_mechanism eps={epsilon}", epsilon, lazy(d), lazy(dprime),
                           n_runs=12_000, random_state=17)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.5


@pytest.mark.parametrize("sigma2", [1.0, 2.5])
def test_audit_discrete_gaussian(sigma2):
    """Adding discrete Gaussian noise to an integer count is ρ-zCDP with ρ = 1/(2σ²) (Canonne, Kamath & Steinke)."""
    samplers = pytest.importorskip("skdpsynth.privacy.samplers")
    delta = 1e-3
    rho = 1.0 / (2.0 * sigma2)
    claim = cdp_epsilon(rho, delta)
    draws = samplers.discrete_gaussian(sigma2, 1000, random_state=0)
    assert draws.dtype == np.int64

    def release(count):
        return lambda rng, n: count + samplers.discrete_gaussian(sigma2, n, random_state=rng)

    res, ratio = run_audit(f"discrete_gaussian sigma2={sigma2}", claim, release(7), release(8), n_runs=1_000_000,
                           delta=delta, batch=True, random_state=14)
    assert res.epsilon_lower_bound <= claim
    assert ratio >= 0.5


@pytest.mark.parametrize("scale", [1.0, 0.4])
def test_audit_discrete_laplace(scale):
    """Adding discrete Laplace noise of scale b to an integer count is (1/b)-DP."""
    samplers = pytest.importorskip("skdpsynth.privacy.samplers")
    epsilon = 1.0 / scale
    assert samplers.discrete_laplace(scale, 1000, random_state=0).dtype == np.int64

    def release(count):
        return lambda rng, n: count + samplers.discrete_laplace(scale, n, random_state=rng)

    res, ratio = run_audit(f"discrete_laplace scale={scale}", epsilon, release(7), release(8), n_runs=1_000_000,
                           batch=True, random_state=15)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.5


@pytest.mark.slow
def test_audit_dp_quantile():
    """One DP quantile (exponential mechanism over [lower, upper], Smith 2011), charged ε.

    Under add/remove, a point's utility -|i - qn| moves by at most max(q, 1 - q), and the weights are
    calibrated to that sensitivity, so the mechanism is ε-DP and spends about all of it on this pair.
    D = one point at 0.125 and nine at the upper bound; D' adds a point at the lower bound. Then
    [0, 0.125) goes from utility -1 to -0.1 while (0.125, 1] goes from 0 to -0.9.
    """
    epsilon, q = 2.0, 0.1
    d = np.array([0.125] + [1.0] * 9)
    dprime = np.sort(np.r_[0.0, d])
    res, ratio = run_audit(f"_dp_quantile q={q} eps={epsilon}", epsilon,
                           lambda rng: _dp_quantile(d, 0.0, 1.0, q, epsilon, rng),
                           lambda rng: _dp_quantile(dprime, 0.0, 1.0, q, epsilon, rng),
                           n_runs=15_000, random_state=16)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.5


def test_audit_dp_kbins_discretizer_quantile_edges():
    """DPKBinsDiscretizer(strategy="quantile") with public bounds: the edges are the release.

    With two bins the single edge is the median, whose utility moves by at most 1/2 under add/remove; its
    weights are calibrated to that sensitivity, so the release is ε-DP.
    """
    epsilon = 4.0

    def release(values):
        frame = pd.DataFrame({"x": values})
        return lambda rng: DPKBinsDiscretizer(2, strategy="quantile", bounds=(0.0, 1.0), epsilon=epsilon,
                                              output="code", random_state=rng).fit(frame).bin_edges_["x"][1]

    res, ratio = run_audit(f"DPKBinsDiscretizer quantile n_bins=2 eps={epsilon}", epsilon,
                           release([0.3, 1.0]), release([0.0, 0.3, 1.0]), n_runs=2000, random_state=17)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.25


def test_audit_dp_kbins_discretizer_adaptive_histogram():
    """DPKBinsDiscretizer(strategy="adaptive") with public bounds: the cells' noisy counts are the release.

    Every record is in one cell, so the histogram has L1 sensitivity 1 and Laplace noise of scale 1/ε makes
    it ε-DP. The statistic is the released weight of the cell the extra record of D' falls in (before the
    post-processing that spreads bucket mass; with public bounds there is none), 100 records against 101: enough
    for the cell to stand out of the noise of all the cells, so its weight is its noisy count.
    """
    epsilon = 1.0

    def release(values):
        frame = pd.DataFrame({"x": values})

        def run(rng):
            disc = DPKBinsDiscretizer(2, strategy="adaptive", bounds=(0.0, 1.0), epsilon=epsilon, output="code",
                                      random_state=rng).fit(frame)
            assert disc.privacy_ledger_.total_epsilon() == pytest.approx(epsilon)
            cell = int(np.searchsorted(disc.cell_edges_["x"], 0.7, side="right") - 1)
            return disc.cell_weights_["x"][cell]
        return run

    # The weight is a whole number: an event that tells 100 from 101 (either way) is where the noise of a
    # Laplace count is e^ε times likelier under one neighbour than under the other, so the events are fixed.
    res, ratio = run_audit(f"DPKBinsDiscretizer adaptive cells eps={epsilon}", epsilon,
                           release([0.2] + [0.7] * 100), release([0.2] + [0.7] * 101), n_runs=2000,
                           events=DistinguishingEvent.all_at(100.5), random_state=18)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.25


def test_audit_dp_kbins_discretizer_adaptive_bounds():
    """DPKBinsDiscretizer(strategy="adaptive") without bounds: the released upper bound, from the magnitude
    histogram (three quarters of ε by default; the cells get the rest), is ε-DP overall.

    D has 60 records at 3 and 8 at 100, D' one more at 100: whether the bound reaches 128 (the bucket
    (64, 128] extends the range) depends on that bucket's noisy count, near the extension threshold.
    """
    epsilon = 1.0

    def release(values):
        frame = pd.DataFrame({"x": np.asarray(values, dtype=float)})
        return lambda rng: DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=epsilon, output="code",
                                              random_state=rng).fit(frame).bounds_["x"][1]

    # The bound stays at 4 (the top of the bucket (2, 4] of the 60 records) or is extended, to 128 or beyond.
    base = [3.0] * 60 + [100.0] * 8
    res, ratio = run_audit(f"DPKBinsDiscretizer adaptive bounds eps={epsilon}", epsilon,
                           release(base), release(base + [100.0]), n_runs=1500,
                           events=DistinguishingEvent.all_at(4.0), random_state=19)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.1


def test_audit_dp_kbins_discretizer_public_buckets():
    """DPKBinsDiscretizer(strategy="adaptive", bucket_edges=...) (TableDiscretizer gives date columns calendar
    years): the released upper bound, from the noisy histogram of the public buckets, is ε-DP overall.

    Buckets of ten over [0, 100]; D has 60 records at 3 and 8 at 95, D' one more at 95: whether the bound reaches
    100 depends on the last bucket's noisy count, near the extension threshold ln(9 / 0.02) / (0.75 ε).
    """
    epsilon = 1.0

    def release(values):
        frame = pd.DataFrame({"x": np.asarray(values, dtype=float)})
        return lambda rng: DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=epsilon, output="code",
                                              random_state=rng, bucket_edges={"x": list(range(0, 101, 10))}
                                              ).fit(frame).bounds_["x"][1]

    # The bound stays at 10 (the first bucket's, where the 60 records are) or is extended, to 100 mostly.
    base = [3.0] * 60 + [95.0] * 8
    res, ratio = run_audit(f"DPKBinsDiscretizer public buckets bounds eps={epsilon}", epsilon,
                           release(base), release(base + [95.0]), n_runs=1500,
                           events=DistinguishingEvent.all_at(10.0), random_state=26)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.1


def test_audit_dp_kbins_discretizer_kinds_histogram():
    """DPKBinsDiscretizer(strategy="adaptive") on a float column: the precision it learns comes from the kinds
    histogram alone (values by number of decimals, missing values: each record in one count), released with
    Laplace noise at 30% of the non-bounds budget, ε = 1.5 here (public bounds, ε = 5 for the column). D has
    30 whole numbers and 3 values with one decimal, D' one more of those (either side of ln(400) / 1.5 = 4.0);
    the statistic is whether the column's lattice is 0.1 (the one-decimal count passed the threshold)."""
    claim = 1.5

    def release(n_tenths):
        values = [float(v) for v in range(30)] + [0.5] * n_tenths
        frame = pd.DataFrame({"x": values})
        return lambda rng: float(DPKBinsDiscretizer("auto", strategy="adaptive", bounds=(0.0, 100.0), epsilon=5.0,
                                                    output="code", random_state=rng).fit(frame)
                                 .lattice_steps_["x"] == pytest.approx(0.1))

    res, ratio = run_audit(f"DPKBinsDiscretizer adaptive kinds eps={claim}", claim, release(3), release(4),
                           n_runs=3000, events=DistinguishingEvent.all_at(0.5), random_state=21)
    assert res.epsilon_lower_bound <= claim
    assert ratio >= 0.25


def test_audit_dp_kbins_discretizer_missing_values_count():
    """DPKBinsDiscretizer(strategy="adaptive", missing="auto") without bounds: the missing values are one more count
    of the magnitude histogram (a record is in one count), released with its Laplace noise (ε_b = 0.75 of ε = 1)
    against ln(10)/ε_b. D has 60 values at 3 and 3 missing ones, D' one missing value more; the statistic is
    whether the column got a bin for them."""
    epsilon = 1.0

    def release(n_missing):
        frame = pd.DataFrame({"x": [3.0] * 60 + [np.nan] * n_missing})
        return lambda rng: float(DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=epsilon, missing="auto",
                                                    output="code", random_state=rng).fit(frame).missing_bins_["x"])

    res, ratio = run_audit(f"DPKBinsDiscretizer adaptive missing count eps={epsilon}", 0.75 * epsilon, release(3),
                           release(4), n_runs=3000, events=DistinguishingEvent.all_at(0.5), random_state=22)
    assert res.epsilon_lower_bound <= 0.75 * epsilon
    assert ratio >= 0.25


def test_audit_encoder_missing_values_count():
    """DPCategoricalEncoder(missing="auto"): the missing values' count is released with the other counts against
    its own threshold ln(50)/ε; every record is in one count, so the release is ε-DP (δ only covers the values
    that D' has and D has not). D has 4 missing values and 20 "a", D' one missing value more; the statistic is
    whether the missing category was released (threshold 3.9 at ε = 1)."""
    epsilon, delta = 1.0, 1e-6

    def release(n_missing):
        frame = pd.DataFrame({"x": ["a"] * 20 + [None] * n_missing})
        return lambda rng: float(DPCategoricalEncoder(epsilon=epsilon, delta=delta, missing="auto",
                                                      random_state=rng).fit(frame).missing_["x"] == "category")

    res, ratio = run_audit(f"DPCategoricalEncoder missing auto eps={epsilon}", epsilon,
                           release(4), release(5), n_runs=3000, delta=delta, events=DistinguishingEvent.all_at(0.5),
                           random_state=20)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.25


def test_audit_release_above_threshold_count_one_vs_two():
    """Thresholded Laplace counts at τ = dp_threshold(ε, δ): a rare value seen once vs twice.

    With the discrete Laplace on counts, P[release | 1] = p = e^(-εm) / (1 + e^-ε) ≤ δ (m the smallest integer
    above τ - 1) and P[release | 2] = e^ε p (τ ≥ 2 here), so the best bound is log(e^ε - δ/p).
    """
    epsilon, delta = 2.0, 0.01
    tau = dp_threshold(epsilon, delta)
    p = np.exp(-epsilon * (np.floor(tau - 1) + 1)) / (1 + np.exp(-epsilon))
    best = np.log(np.exp(epsilon) - delta / p)

    def release(count):
        return lambda rng, n: release_above_threshold(np.full(n, count), epsilon=epsilon, threshold=tau,
                                                      random_state=rng)

    res, ratio = run_audit(f"release_above_threshold count 1 vs 2 eps={epsilon} delta={delta}", epsilon,
                           release(1), release(2), n_runs=2_000_000, delta=delta, batch=True, random_state=18)
    assert res.epsilon_lower_bound <= epsilon
    assert res.epsilon_lower_bound >= 0.8 * best  # the audit gets close to the best bound this pair allows


def test_audit_release_above_threshold_absent_vs_once():
    """The δ part: a value absent from D (never released) vs present once in D' (released w.p. exactly δ)."""
    epsilon, delta = 1.0, 1e-3
    tau = dp_threshold(epsilon, delta)
    res, _ = run_audit(f"release_above_threshold absent vs once eps={epsilon} delta={delta}", epsilon,
                       lambda rng, n: np.zeros(n, dtype=bool),
                       lambda rng, n: release_above_threshold(np.ones(n), epsilon=epsilon, threshold=tau,
                                                              random_state=rng),
                       n_runs=1_000_000, delta=delta, batch=True, random_state=19)
    assert res.epsilon_lower_bound <= epsilon
    # A value seen once is released with the exact discrete-Laplace tail P[Y >= m] = e^(-eps m) / (1 + e^-eps),
    # m the smallest integer above tau - 1: at most delta, and more than e^-eps * delta (integers cannot hit it).
    m = np.floor(tau - 1) + 1
    p = np.exp(-epsilon * m) / (1 + np.exp(-epsilon))
    assert np.exp(-epsilon) * delta < p <= delta
    released = release_above_threshold(np.ones(1_000_000), epsilon=epsilon, threshold=tau, random_state=25)
    lo, hi = clopper_pearson(int(released.sum()), released.size, 0.01)
    assert lo <= p <= hi and lo <= delta


def test_audit_dp_categorical_encoder():
    """DPCategoricalEncoder's DP discovery end to end; the event is "the rare category is released".

    At (4, 0.2) the threshold releases a value seen once with probability e^-4 / (1 + e^-4) and one seen twice
    with probability 1 / (1 + e^-4): the best bound, log((0.982 - 0.2) / 0.018) = 3.77, is within reach of five
    hundred fits per neighbour, all counted (an indicator: its events are fixed in advance); with a smaller δ the
    singleton's release probability is too small to estimate from so few.
    """
    epsilon, delta = 4.0, 0.2

    def release(n_rare):
        frame = pd.DataFrame({"c": ["common"] * 20 + ["rare"] * n_rare})
        return lambda rng: "rare" in DPCategoricalEncoder(epsilon=epsilon, delta=delta,
                                                          random_state=rng).fit(frame).categories_["c"]

    res, ratio = run_audit(f"DPCategoricalEncoder rare 1 vs 2 eps={epsilon} delta={delta}", epsilon,
                           release(1), release(2), n_runs=500, delta=delta, events=DistinguishingEvent.all_at(0.5),
                           random_state=20)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.5


# ---- deliberately mis-calibrated mechanisms: the audit must catch them -------------------------------------------

def test_audit_catches_gaussian_with_a_quarter_of_the_noise():
    rho, delta = 0.5, 1e-3
    claim = cdp_epsilon(rho, delta)
    sigma = gaussian_sigma(rho) / 4  # the bug: σ four times too small for the claimed ρ

    def release(count):
        return lambda rng, n: gaussian_mechanism(np.full(n, count), sigma=sigma, random_state=rng)

    res, _ = run_audit("PLANTED gaussian sigma/4", claim, release(10.0), release(11.0), n_runs=2_000_000,
                       delta=delta, batch=True, random_state=21)
    assert res.epsilon_lower_bound > claim


def test_audit_catches_laplace_with_half_the_scale():
    epsilon = 1.0

    def release(count):
        return lambda rng, n: laplace_mechanism(np.full(n, count), scale=0.5 / epsilon, random_state=rng)

    res, _ = run_audit("PLANTED laplace scale/2", epsilon, release(5.0), release(6.0), n_runs=1_000_000,
                       batch=True, random_state=22)
    assert res.epsilon_lower_bound > epsilon


def test_audit_catches_threshold_without_the_plus_one():
    """τ = ln(1/2δ)/ε forgets that a value occurring once has count 1: it leaks with probability e^ε δ > δ."""
    epsilon, delta = 1.0, 1e-3
    tau = dp_threshold(epsilon, delta) - 1.0
    res, _ = run_audit("PLANTED threshold without +1", epsilon,
                       lambda rng, n: np.zeros(n, dtype=bool),
                       lambda rng, n: release_above_threshold(np.ones(n), epsilon=epsilon, threshold=tau,
                                                              random_state=rng),
                       n_runs=1_000_000, delta=delta, batch=True, random_state=23)
    assert res.epsilon_lower_bound > epsilon


@pytest.mark.slow
def test_audit_catches_misused_monotonic_flag():
    """monotonic=True on scores that move in opposite directions: weights exp(ε s/Δ) then leak up to 2ε."""
    epsilon = 1.0
    d, dprime = _exp_mech_scores(monotonic=False)
    res, _ = run_audit("PLANTED exponential_mechanism monotonic=True misused", epsilon,
                       lambda rng: exponential_mechanism(d, epsilon=epsilon, monotonic=True, random_state=rng),
                       lambda rng: exponential_mechanism(dprime, epsilon=epsilon, monotonic=True, random_state=rng),
                       n_runs=12_000, random_state=24)
    assert res.epsilon_lower_bound > epsilon


# =====================================================================================================================
# Synthesizers: each fit is the release
# =====================================================================================================================
#
# Three binary columns, 24 records, no record (1, 1, 1); D' adds one. The statistic is what the fitted model
# says about that record: the sum, over every non-empty set of columns, of the model's count of the record's
# cell (for DPView, over the released view tables). A few hundred fits per neighbour can only prove a small
# fraction of a zCDP claim (the whole fit is a Gaussian-like shift of about sqrt(2ρ) ≈ 0.8 noise s.d., and the
# statistic carries most of it): these audits catch gross leaks — the planted one below shows that they do.
# Each fit is kept cheap (3 binary columns, few rounds and iterations); the public domain is always given.

_COLUMNS = ("a", "b", "c")
_CELLS = {(0, 0, 0): 6, (0, 1, 0): 4, (1, 0, 0): 4, (0, 0, 1): 4, (1, 1, 0): 3, (1, 0, 1): 3}
_D = pd.DataFrame([cell for cell, count in _CELLS.items() for _ in range(count)], columns=list(_COLUMNS))
_RECORD = (1, 1, 1)
_D_PRIME = pd.concat([_D, pd.DataFrame([_RECORD], columns=list(_COLUMNS))], ignore_index=True)
_DOMAIN = {c: 2 for c in _COLUMNS}
_SUBSETS = [s for k in (1, 2, 3) for s in itertools.combinations(_COLUMNS, k)]
# zCDP synthesizers are audited at (ε, δ) = (2, 0.01), i.e. ρ = cdp_rho(2, 0.01) ≈ 0.31: the planted leak's 75
# held-out runs can prove at most about 3.0 even when all are separated, so the claim must stay below that, and
# a smaller ε would leave nothing to see.
_EPS, _DELTA = 2.0, 0.01


def _record_count_in_model(model) -> float:
    return float(sum(model.project(s)[tuple(_RECORD[_COLUMNS.index(a)] for a in s)] for s in _SUBSETS))


def _record_count_in_views(synth) -> float:
    views, tables = synth.model_.plan.views, synth.model_.tables
    return float(sum(table[tuple(_RECORD[a] for a in view)] for view, table in zip(views, tables)))


def _synth_audit(name, make, statistic, claim, *, n_runs, delta, seed):
    def release(frame):
        return lambda rng: statistic(make(rng).fit(frame))

    return run_audit(name, claim, release(_D), release(_D_PRIME), n_runs=n_runs, delta=delta, random_state=seed)


@pytest.mark.slow
def test_audit_mst_synthesizer():
    # compress=False: on 24 records most noisy 1-way cells fall below 3σ ≈ 11.5 and would be merged, and the
    # merged model could not be asked about the record's cells.
    res, _ = _synth_audit(
        "MSTSynthesizer", lambda rng: MSTSynthesizer(_EPS, _DELTA, domain=_DOMAIN, compress=False, max_iters=30,
                                                     random_state=rng),
        lambda s: _record_count_in_model(s.model_), _EPS, n_runs=250, delta=_DELTA, seed=30)
    assert res.epsilon_lower_bound <= _EPS


@pytest.mark.slow
@pytest.mark.parametrize("engine", [{}, {"scoring": "sampled", "scoring_samples": 200, "selections_per_round": 2}],
                         ids=["exact", "sampled-2-per-round"])
def test_audit_aim_synthesizer(engine):
    """Also with sampled scores and two selections per round (the wide-table defaults' release path)."""
    res, _ = _synth_audit(
        f"AIMSynthesizer {engine}", lambda rng: AIMSynthesizer(_EPS, _DELTA, domain=_DOMAIN, rounds=6, max_iters=20,
                                                               final_iters=30, random_state=rng, **engine),
        lambda s: _record_count_in_model(s.model_), _EPS, n_runs=250, delta=_DELTA, seed=31)
    assert res.epsilon_lower_bound <= _EPS


def _hybrid_audited(partition, secure):
    return lambda rng: HybridSynthesizer(_EPS, _DELTA, partition=partition, domain=_DOMAIN, max_rounds=6, max_iters=20,
                                         final_iters=30, secure_computation=secure, random_state=rng)


_GRID = {"n_slices": 2, "n_vertical": 2}


def test_hybrid_audit_fits_release_the_same_statistic_with_either_secure_computation():
    """What lets one audit cover both protocols on the K = S = 2 grid: for the same seed, the cryptographic
    protocol (secure product and aggregation adding the parties' integer shares in the ring) releases a model whose
    audited statistic is the simulated protocol's, bit for bit, on both neighbours."""
    pytest.importorskip("cryptography")
    for frame in (_D, _D_PRIME):
        for seed in range(3):
            simulated, cryptographic = (
                _record_count_in_model(_hybrid_audited(_GRID, secure)(np.random.default_rng(seed)).fit(frame).model_)
                for secure in ("simulated", "cryptographic"))
            assert cryptographic == simulated


@pytest.mark.slow
@pytest.mark.parametrize("partition", [None, _GRID], ids=["central", "grid-2x2"])
def test_audit_hybrid_synthesizer(partition):
    """On the K = S = 2 grid, the cryptographic protocol A (its own release path: secure product and aggregation)
    when `cryptography` is installed; its runs are the simulated protocol's bit for bit (the test above), so this
    one audit covers both."""
    secure = "cryptographic" if partition is not None and importlib.util.find_spec("cryptography") else "simulated"
    res, _ = _synth_audit(f"HybridSynthesizer partition={partition} secure_computation={secure}",
                          _hybrid_audited(partition, secure), lambda s: _record_count_in_model(s.model_), _EPS,
                          n_runs=200, delta=_DELTA, seed=32)
    assert res.epsilon_lower_bound <= _EPS


@pytest.mark.slow
def test_audit_hybrid_synthesizer_over_the_federated_runtime():
    """Parties as PartyServers answering request bytes (FederatedData, K = S = 2): the runtime's release path.

    The parties use the curator's seed (noise="curator", a PrivacyLeakWarning) only so that the audit is
    reproducible; the noise is drawn by the same code as with private seeds.
    """
    pytest.importorskip("cryptography")
    from skdpsynth.federated import HybridPartition
    from skdpsynth.federated import FederatedData
    from skdpsynth.federated.runtime import PartyHost
    from skdpsynth.privacy import PrivacyLeakWarning

    columns = list(_COLUMNS)

    def release(frame):
        part = HybridPartition.grid(len(frame), columns, n_slices=2, n_vertical=2, random_state=0)
        hosts = {p.name: PartyHost(frame.iloc[p.rows][list(p.columns)].to_numpy(), noise="curator")
                 for p in part.parties()}
        data = FederatedData(_DOMAIN, part, hosts)

        def run(rng):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                model = HybridSynthesizer(_EPS, _DELTA, max_rounds=6, max_iters=20, final_iters=30,
                                          secure_computation="cryptographic", random_state=rng).fit(data)
            return _record_count_in_model(model.model_)
        return run

    res, _ = run_audit("HybridSynthesizer over FederatedData (cryptographic, K = S = 2)", _EPS, release(_D),
                       release(_D_PRIME), n_runs=200, delta=_DELTA, random_state=33)
    assert res.epsilon_lower_bound <= _EPS


@pytest.mark.slow
@pytest.mark.parametrize("form, engine", [
    ("uniform", {}), ("aggregate", {}),
    ("aggregate", {"scoring": "sampled", "scoring_samples": 200, "selections_per_round": 2}),
], ids=["uniform", "aggregate", "aggregate-sampled-2-per-round"])
def test_audit_partition_synthesizer(form, engine):
    """PPSyn strict mode: EM on the bounded utility, noisy contribution, partitioned measurements; also with sampled
    deviations and two selections per round (the wide-table defaults' release path)."""
    res, _ = _synth_audit(
        f"PartitionSynthesizer strict {form} {engine}",
        lambda rng: PartitionSynthesizer(_EPS, _DELTA, domain=_DOMAIN, rounds=6, max_iters=20, final_iters=30,
                                         measurement_form=form, random_state=rng, **engine),
        lambda s: _record_count_in_model(s.model_), _EPS, n_runs=200, delta=_DELTA, seed=35)
    assert res.epsilon_lower_bound <= _EPS


@pytest.mark.slow
def test_audit_vertical_mrf_synthesizer():
    """VertiMRF (FM sketches): parties {a, b} and {c}; basic composition of (ε, δ) over its releases."""
    res, _ = _synth_audit(
        "VerticalMRFSynthesizer",
        lambda rng: VerticalMRFSynthesizer(_EPS, _DELTA, party_columns=[["a", "b"], ["c"]], domain=_DOMAIN,
                                           n_sketches=64, md_iters=30, random_state=rng),
        lambda s: _record_count_in_model(s.model_), _EPS, n_runs=150, delta=_DELTA, seed=36)
    assert res.epsilon_lower_bound <= _EPS


@pytest.mark.slow
def test_audit_view_synthesizer():
    """Pure ε-DP (Laplace view tables); fits are cheap, so this one runs more of them."""
    epsilon = 2.0
    res, _ = _synth_audit(
        "ViewSynthesizer view_size=2",
        lambda rng: ViewSynthesizer(epsilon, domain=_DOMAIN, view_size=2, n_search=20, random_state=rng),
        _record_count_in_views, epsilon, n_runs=1000, delta=0.0, seed=33)
    assert res.epsilon_lower_bound <= epsilon


@pytest.mark.slow
def test_audit_catches_planted_synthesizer_leak(monkeypatch):
    """MST whose marginal measurements get 1/20 of the noise the ledger charges for: must be caught."""
    real = select_measure.gaussian_mechanism

    def leaky(values, **kwargs):
        noisy = real(values, **kwargs)  # draws and charges the advertised noise ...
        exact = np.asarray(values, dtype=np.float64)
        return exact + (noisy - exact) / 20.0  # ... but releases a twentieth of it

    monkeypatch.setattr(select_measure, "gaussian_mechanism", leaky)
    res, _ = _synth_audit(
        "PLANTED MSTSynthesizer with noise/20",
        lambda rng: MSTSynthesizer(_EPS, _DELTA, domain=_DOMAIN, compress=False, max_iters=30, random_state=rng),
        lambda s: _record_count_in_model(s.model_), _EPS, n_runs=150, delta=_DELTA, seed=34)
    assert res.epsilon_lower_bound > _EPS


# -- user-level fits: neighbours differ by ONE PERSON's rows ------------------------------------------------------
#
# 20 people with 2 records each, one per value of column a; D' adds a person with 40 identical records (a = 1), which
# the fit bounds to k = 4. A correct user-level fit runs at the record-level budget epsilon/k (rho/k^2), so the cell
# a = 1 moves by k against noise k times as large: exactly the per-person claim. A fit calibrated per record (the
# planted mutant: the whole budget at record level) moves it by k against the record-level noise: k times the claim.
# One binary column and DPView's Laplace view (2 ms a fit) or MST's 1-way measurement (6 ms) keep the runs cheap.

_UNIT_K = 4
_PEOPLE = pd.DataFrame({"person": np.repeat(np.arange(20), 2), "a": np.tile([0, 1], 20)})
_PEOPLE_PRIME = pd.concat([_PEOPLE, pd.DataFrame({"person": [99] * 40, "a": [1] * 40})], ignore_index=True)


def _user_level_view(epsilon):
    return lambda rng: ViewSynthesizer(epsilon, domain={"a": 2}, view_size=1, n_public=40, n_search=1,
                                       random_state=rng, privacy_unit="person", max_contributions=_UNIT_K)


def _user_level_mst(rng):
    return MSTSynthesizer(_EPS, _DELTA, domain={"a": 2}, compress=False, max_iters=10, random_state=rng,
                          privacy_unit="person", max_contributions=_UNIT_K)


def _person_audit(name, make, statistic, claim, *, n_runs, delta, seed):
    def release(frame):
        return lambda rng: statistic(make(rng).fit(frame))

    return run_audit(name, claim, release(_PEOPLE), release(_PEOPLE_PRIME), n_runs=n_runs, delta=delta,
                     random_state=seed)


def _cell_one_of_view(synth) -> float:
    return float(synth.model_.tables[0][1])


def _cell_one_of_model(synth) -> float:
    return float(synth.model_.project(("a",))[(1,)])


def test_audit_user_level_view_synthesizer():
    """Pure ε per person: the bound stays at most ε, and reaches half of it (the audit has power)."""
    epsilon = 1.0
    res, ratio = _person_audit(f"ViewSynthesizer user-level k={_UNIT_K} (one person's 40 rows)",
                               _user_level_view(epsilon), _cell_one_of_view, epsilon, n_runs=1000, delta=0.0,
                               seed=45)
    assert res.epsilon_lower_bound <= epsilon
    assert ratio >= 0.5


@pytest.mark.slow
def test_audit_user_level_mst_synthesizer():
    """zCDP per person: MST's 1-way measurement of the bounded records at rho/k^2."""
    res, _ = _person_audit(f"MSTSynthesizer user-level k={_UNIT_K} (one person's 40 rows)", _user_level_mst,
                           _cell_one_of_model, _EPS, n_runs=400, delta=_DELTA, seed=46)
    assert res.epsilon_lower_bound <= _EPS


@pytest.mark.parametrize("method", ["view", pytest.param("mst", marks=pytest.mark.slow)])
def test_audit_catches_per_record_calibration(monkeypatch, method):
    """PLANTED: the records bounded to k, but the method given the whole budget (no group-privacy scaling)."""
    from skdpsynth.synthesizers.base import BaseSynthesizer

    monkeypatch.setattr(BaseSynthesizer, "_record_level_budget", staticmethod(lambda budget, k: dict(budget)))
    if method == "view":
        res, _ = _person_audit("PLANTED ViewSynthesizer calibrated per record", _user_level_view(1.0),
                               _cell_one_of_view, 1.0, n_runs=300, delta=0.0, seed=47)
        assert res.epsilon_lower_bound > 1.0
    else:
        res, _ = _person_audit("PLANTED MSTSynthesizer calibrated per record", _user_level_mst, _cell_one_of_model,
                               _EPS, n_runs=300, delta=_DELTA, seed=48)
        assert res.epsilon_lower_bound > _EPS


# -- canary: a category that occurs once must not leave a DP fit -------------------------------------------------
@pytest.mark.parametrize("method", ["mst", "aim", "hybrid", "view"])
def test_canary_category_never_leaves_a_dp_fit(method, tmp_path):
    """A one-off category ("Canary-7f3e") discovered with DP must appear in no output: not in the synthetic
    records, the fitted schema, the ledger, the report, nor anywhere in the pickled pipeline."""
    import pickle

    from skdpsynth.metrics.report import write_report
    from skdpsynth.pipeline import SynthesisPipeline
    from skdpsynth.preprocessing import TableDiscretizer

    canary = "Canary-7f3e"
    rng = np.random.default_rng(3)
    n = 600
    frame = pd.DataFrame({"city": rng.choice(["Oslo", "Rome", "Lima"], n), "age": rng.integers(18, 80, n),
                          "member": rng.choice(["yes", "no"], n)})
    frame.loc[17, "city"] = canary
    synth = {"mst": MSTSynthesizer(epsilon=1.0, max_iters=200), "aim": AIMSynthesizer(epsilon=1.0, max_iters=100,
                                                                                      final_iters=100),
             "hybrid": HybridSynthesizer(epsilon=1.0, max_iters=100, final_iters=100),
             "view": ViewSynthesizer(epsilon=1.0, view_size=2)}[method]
    schema = {"age": {"type": "numeric", "bounds": [0, 100]}, "city": "categorical", "member": "categorical"}
    pipe = SynthesisPipeline([("table", TableDiscretizer(schema, epsilon=0.5, delta=1e-6)), ("synth", synth)])
    pipe.fit(frame)
    synthetic = pipe.sample()
    assert pipe.privacy_ledger_.is_private
    assert canary not in set(synthetic["city"])
    assert canary not in str(pipe.named_steps_["table"].schema_)
    assert canary not in pipe.privacy_ledger_.to_frame().to_string()
    assert canary.encode() not in pickle.dumps(pipe)
    table = pipe.named_steps_["table"]
    written = write_report(tmp_path / "r.html", real=frame, synthetic=synthetic, real_codes=table.transform(frame),
                           synthetic_codes=table.transform(synthetic), ledger=pipe.privacy_ledger_, delta=2e-6,
                           plots=False)
    # The report reads the real data (it says it is not DP) but shows it through the DP-fitted discretization,
    # where the canary is just "__other__".
    assert canary not in written["html"].read_text()


def test_canary_category_is_never_released_across_seeds():
    """Over 300 unseeded DP discoveries the one-off category is never released (its probability is at most δ =
    1e-6 each, so seeing it even once would be a 3e-4 event)."""
    from skdpsynth.preprocessing import DPCategoricalEncoder

    frame = pd.DataFrame({"c": ["common"] * 200 + ["Canary-7f3e"]})
    released = sum("Canary-7f3e" in DPCategoricalEncoder(epsilon=1.0, delta=1e-6).fit(frame).categories_["c"]
                   for _ in range(300))
    assert released == 0


def test_audit_dpfm_sketch_encoding():
    """The VertiMRF sketch release (skdpsynth.synthesizers.vertical_mrf.sketches.encode): one value's DPFM sketch is ε′-DP.

    D has 20 records all of value 0, D' adds one record of value 1, so the sketch of value 1 goes from phantoms
    only to phantoms plus one hashed record.  Each of the t runs has its own key and phantoms, so one encode with
    t keys gives t independent releases; a fresh key set per neighbour keeps the two samples independent."""
    from skdpsynth.synthesizers.vertical_mrf.sketches import SketchKeys, dpfm_parameters, encode

    epsilon_prime, gamma = 1.0, 1.0
    assert dpfm_parameters(epsilon_prime, gamma) == (1, 1)

    def release(codes):
        def draw(rng, n):
            keys = SketchKeys.from_secret(rng.bytes(32), n)
            return encode(codes, [2], keys, gamma, epsilon_prime, random_state=rng)[:, 1].astype(float)
        return draw

    d = np.zeros((20, 1), dtype=np.int64)
    d_prime = np.vstack([d, [[1]]])
    res, ratio = run_audit("DPFM sketch encode, value absent vs once", epsilon_prime, release(d), release(d_prime),
                           n_runs=40_000, batch=True, random_state=31)
    assert res.epsilon_lower_bound <= epsilon_prime
    # Best event: the sketch is 1, P = 1/2 under D (one phantom) and 1/4 under D' (phantom and record): log 2.
    assert res.epsilon_lower_bound >= 0.8 * np.log(2)


# -- a party's answers to the curator (the federated runtime's release path) ---------------------------------------
def _party_count_release(codes: np.ndarray, variance: float):
    """One party answering one count request of its column "a" (domain 3): the released value of cell 0.

    Each run sets up a fresh PartyServer from its own job (the roster size is public: D' has one more record) and
    seeds its noise from the run's generator (noise="curator", only so that the audit is reproducible; the noise
    is drawn by the same code as with private seeds).
    """
    pytest.importorskip("cryptography")
    from skdpsynth import Domain
    from skdpsynth.federated import HybridPartition
    from skdpsynth.federated.party_job import PartyJob
    from skdpsynth.federated.runtime import CURATOR, PartyServer
    from skdpsynth.federated.secure_aggregation import SecureAggregationParty
    from skdpsynth.federated.wire import from_bytes, pack

    domain = Domain(["a", "b"], [3, 2])
    job = PartyJob.from_partition(domain, HybridPartition.vertical(len(codes), [["a"], ["b"]]), "party0.0")
    curator = SecureAggregationParty(CURATOR, b"audit-session")
    count = pack("Request", sender=CURATOR, fields={"op": "measure", "kind": "count", "attrs": ["a"], "r": ["a"],
                                                     "variance": variance, "rho": 1 / (2 * variance), "call": 0})

    def run(rng):
        server = PartyServer("party0.0", codes, noise="curator", job=job)
        server.handle(pack("Request", sender=CURATOR, fields={
            "op": "setup", "session": b"audit-session".hex(), "curator_key": curator.public_key.hex(), "number": 0,
            "seed": int(rng.integers(2**62)), **job.setup_fields()}))
        run.last = from_bytes(server.handle(count), domain=domain).message.values
        run.charged = server.spent_rho
        return run.last[0]
    return run


_PARTY_D = np.array([[0]] * 6 + [[1]] * 5 + [[2]] * 4)
_PARTY_D_PRIME = np.vstack([_PARTY_D, [[0]]])     # one more record, of value 0


def _party_audit(name: str, variance: float, n_runs: int, seed: int):
    release_d, release_dprime = _party_count_release(_PARTY_D, variance), _party_count_release(_PARTY_D_PRIME, variance)
    release_d(np.random.default_rng(0))
    claim = cdp_epsilon(release_d.charged, _PARTY_DELTA)     # what the party's own guard charged for the answer
    res, _ = run_audit(name, claim, release_d, release_dprime, n_runs=n_runs, delta=_PARTY_DELTA, random_state=seed)
    return res, claim


_PARTY_DELTA = 1e-3


@pytest.mark.slow
def test_audit_party_server_count_answer():
    """A PartyServer's count answer: its guard's charge ρ = 1/(2 variance) bounds what the answer reveals."""
    res, claim = _party_audit("PartyServer count answer (variance 50)", 50.0, n_runs=1500, seed=41)
    assert res.epsilon_lower_bound <= claim
    release_d, release_dprime = (_party_count_release(c, 50.0) for c in (_PARTY_D, _PARTY_D_PRIME))
    res, _ = run_audit("PartyServer count answer, cell 0 minus cell 1", claim, _difference(release_d),
                       _difference(release_dprime), n_runs=300, delta=_PARTY_DELTA, random_state=44)
    assert res.epsilon_lower_bound <= claim


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["one draw for every cell", "a sixteenth of the variance"])
def test_audit_catches_a_party_server_that_adds_less_noise_than_it_charges(monkeypatch, planted):
    """The review's exploit planted back (one noise draw broadcast over the cells, as a curator's ``n_cells=1``
    layout made the party do), and a party whose noise has σ/4 of what its guard charges: both must be caught."""
    from skdpsynth.federated.parties import Party

    real = Party.local_noisy_count

    def planted_count(self, attrs, strides, n_cells, variance, rng):
        if planted == "one draw for every cell":
            return real(self, attrs, strides, 1, variance, rng)   # bincount keeps every cell; one noise value
        return real(self, attrs, strides, n_cells, variance / 16, rng)

    monkeypatch.setattr(Party, "local_noisy_count", planted_count)
    if planted == "one draw for every cell":
        # The statistic is cell 0 minus cell 1: exact under the planted bug, noisy (variance 2 v) otherwise.
        release_d, release_dprime = (_party_count_release(c, 50.0) for c in (_PARTY_D, _PARTY_D_PRIME))
        claim = cdp_epsilon(1 / (2 * 50.0), _PARTY_DELTA)
        res, _ = run_audit("PLANTED PartyServer: one noise draw for every cell", claim,
                           _difference(release_d), _difference(release_dprime), n_runs=300, delta=_PARTY_DELTA,
                           random_state=42)
    else:
        res, claim = _party_audit("PLANTED PartyServer: sigma/4", 50.0, n_runs=4000, seed=43)
    assert res.epsilon_lower_bound > claim


def _difference(run):
    """Cell 0 minus cell 1 of the same answer."""
    def statistic(rng):
        run(rng)
        return run.last[0] - run.last[1]
    return statistic
