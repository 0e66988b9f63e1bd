"""Protocol A's noise: every party adds an exact discrete Gaussian share (the distributed discrete Gaussian).

What is checked: the released slice counts are integers whose noise has exactly the law of the sum of the
parties' discrete Gaussian shares; the cryptographic path releases exactly the simulated path's counts; a party
drawing its own noise reads the OS CSPRNG; the ledger names the mechanism, charges each share its discrete
Gaussian cost 1/(2 sigma^2) (Canonne, Kamath & Steinke 2020) and sums exactly to the budget.

Every statistical test uses a fixed seed, so it is deterministic.  Goodness of fit is a chi-square test at level
1e-4, as in tests/test_privacy_samplers.py: a correct law fails a changed seed with probability 1e-4 per test,
while the power checks below (a wrong law at the same sample size) give p-values below 1e-10.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from skdpsynth import Domain, HybridSynthesizer
from skdpsynth.federated import Federation, HybridPartition, combine
from skdpsynth.federated.dmm import split_budget
from skdpsynth.federated.messages import SliceCount
from skdpsynth.federated.wire import ledger_entries_for
from skdpsynth.privacy import PrivacyLedger
from skdpsynth.privacy import randomness
from skdpsynth.synthesizers.hybrid import randdpgen

ALPHA = 1e-4
MECHANISMS = {"secure_sum": "discrete gaussian (distributed)", "indicator": "gaussian (distributed)"}


def dgauss_pmf(sigma2: float, radius: int) -> np.ndarray:
    """The discrete Gaussian N_Z(0, sigma2) on -radius..radius (normalised: the tail beyond is < e^-98 here)."""
    y = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-y**2 / (2 * sigma2))
    return w / w.sum()


def chisquare_pvalue(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray, min_expected: float = 5.0) -> float:
    """Chi-square goodness of fit, the tail bins expecting fewer than ``min_expected`` draws pooled outward."""
    expected = draws.size * pmf
    big = np.flatnonzero(expected >= min_expected)
    lo, hi = big[0], big[-1]
    exp_bins = expected[lo:hi + 1].copy()
    exp_bins[0] += expected[:lo].sum()
    exp_bins[-1] += expected[hi + 1:].sum()
    obs_bins = np.bincount(np.clip(draws, support[lo], support[hi]) - support[lo], minlength=exp_bins.size)
    stat = float(((obs_bins - exp_bins) ** 2 / exp_bins).sum())
    return float(stats.chi2.sf(stat, exp_bins.size - 1))


def _codes(dom: Domain, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.integers(0, k, n) for k in dom.shape])


def _truth(codes: np.ndarray, dom: Domain, attrs: tuple) -> np.ndarray:
    idx = np.ravel_multi_index(tuple(codes[:, dom.index(a)] for a in attrs), dom.shape_of(attrs))
    return np.bincount(idx, minlength=dom.size(attrs))


# -- the law of the released counts ------------------------------------------------------------------------------
@pytest.mark.parametrize("layout, n_shares", [("vertical", 2), ("centralized", 1)])
def test_secure_sum_counts_are_integers_with_the_law_of_the_parties_discrete_gaussian_shares(layout, n_shares):
    """A 2-way marginal split between two parties (two shares of sigma^2 = 3 each) or held by one (one share of
    sigma^2 = 3): noisy count minus true count is exactly the n-fold convolution of N_Z(0, 3)."""
    dom = Domain(["a", "b"], [60, 50])  # 3000 cells: 20 calls give 60,000 draws
    codes = _codes(dom, 40, seed=0)
    part = (HybridPartition.vertical(40, [["a"], ["b"]]) if layout == "vertical"
            else HybridPartition.centralized(40, ["a", "b"]))
    rho = n_shares / 6.0  # each share gets rho / n_shares = 1/6: sigma^2 = 1 / (2 * 1/6) = 3
    fed = Federation.from_codes(codes, dom, part, seed=38)
    truth = _truth(codes, dom, ("a", "b"))
    noise = []
    for _ in range(20):
        reply = fed.measure(("a", "b"), rho)
        (part_,) = reply.parts
        assert part_.variance == pytest.approx(3.0 * n_shares, rel=1e-12)  # the shares' sigma^2, summed
        values = combine(reply, dom)[0]
        assert np.array_equal(values, np.round(values)), "the noisy counts are not integers"
        noise.append(values.astype(np.int64) - truth)
    noise = np.concatenate(noise)
    radius = 60
    law = dgauss_pmf(3.0, radius)
    for _ in range(n_shares - 1):
        law = np.convolve(law, dgauss_pmf(3.0, radius))
    support = np.arange(-(law.size // 2), law.size // 2 + 1)
    assert chisquare_pvalue(noise, support, law) > ALPHA
    # Power: the same draws against the law of the other number of shares.
    other = np.convolve(dgauss_pmf(3.0, radius), dgauss_pmf(3.0, radius)) if n_shares == 1 else dgauss_pmf(3.0, radius)
    assert chisquare_pvalue(noise, np.arange(-(other.size // 2), other.size // 2 + 1), other) < 1e-10


def test_cryptographic_path_releases_exactly_the_simulated_counts():
    """Same seeds, same integer shares: the secure product and secure aggregation add them in the ring without
    rounding, so the cryptographic mode's counts equal the simulated mode's bit for bit (split and unsplit
    marginals, two slices)."""
    pytest.importorskip("cryptography")
    dom = Domain(["a", "b", "c", "d"], [3, 4, 2, 5])
    codes = _codes(dom, 60, seed=1)
    part = HybridPartition.grid(60, list(dom.attrs), n_slices=2, column_groups=[["a", "b"], ["c", "d"]],
                                random_state=0)
    sim = Federation.from_codes(codes, dom, part, seed=7)
    cry = Federation.from_codes(codes, dom, part, seed=7, secure_computation="cryptographic")
    for attrs, rho in [(("a", "c"), 0.02), (("a", "b"), 0.05), (("b", "d"), 0.3), (("c", "d"), 1e-4)]:
        a, b = sim.measure(attrs, rho), cry.measure(attrs, rho)
        for pa, pb in zip(a.parts, b.parts):
            assert np.array_equal(pa.values, pb.values), attrs
            assert pa.variance == pytest.approx(pb.variance, rel=1e-12)
        values = combine(b, dom)[0]
        assert np.array_equal(values, np.round(values)), attrs


def test_a_party_drawing_its_own_noise_reads_the_os_csprng(monkeypatch):
    """Parties hosted with their own noise (PartyHost's default, noise='private') draw their shares with the exact
    sampler from os.urandom, at least one 64-bit word per cell, for a count one party holds and for a product
    split between two; the counts are integers."""
    pytest.importorskip("cryptography")
    from skdpsynth.federated.runtime import LocalBackend, PartyHost

    dom = Domain(["a", "b"], [60, 50])
    codes = _codes(dom, 30, seed=2)
    part = HybridPartition.vertical(30, [["a"], ["b"]])
    backend = LocalBackend({p.name: PartyHost(codes[:, [dom.index(c) for c in p.columns]]) for p in part.parties()})
    reads = []
    real = randomness.os.urandom
    monkeypatch.setattr(randomness.os, "urandom", lambda n: reads.append(n) or real(n))
    with Federation.connect(backend, part, dom, seed=0) as fed:
        for attrs in (("a",), ("a", "b")):
            reads.clear()
            values = combine(fed.measure(attrs, 0.01), dom)[0]
            assert max(reads, default=0) >= 8 * dom.size(attrs), attrs  # one read covers a whole share
            assert np.array_equal(values, np.round(values)), attrs


# -- what the ledger says ----------------------------------------------------------------------------------------
def test_ledger_names_the_distributed_discrete_gaussian_and_charges_each_share_its_cost():
    """Each DMM entry names the noise its messages carry; each party's charge is 1/(2 sigma^2) of its share
    (CKS: the discrete Gaussian costs what the continuous one does), a slice's shares add up to the call's
    rho', and the entries sum exactly to the budget."""
    dom = Domain(["a", "b", "c"], [2, 3, 4])
    codes = _codes(dom, 300, seed=3)
    part = HybridPartition.grid(300, ["a", "b", "c"], n_slices=2, column_groups=[["a"], ["b", "c"]],
                                random_state=0)
    for protocol in ("secure_sum", "indicator"):
        fed = Federation.from_codes(codes, dom, part, seed=5)
        ledger = PrivacyLedger()
        randdpgen(fed.measure, dom, part, 0.5, workload=[(("a", "b"), 1.0), (("b", "c"), 1.0), (("a", "c"), 1.0)],
                  rng=np.random.default_rng(0), ledger=ledger, rounds=4, max_iters=20, final_iters=20,
                  protocol=protocol)
        assert math.fsum(e.rho for e in ledger) == pytest.approx(0.5, rel=1e-12)
        dmm = [e for e in ledger if "(DMM" in e.description]
        assert len(dmm) == len(fed.replies) and {e.mechanism for e in dmm} == {MECHANISMS[protocol]}
        for entry, reply in zip(dmm, fed.replies):
            assert entry.rho == reply.rho  # one call, rho' (parallel across slices)
            if protocol != "secure_sum":
                continue
            for msg, shares in zip(reply.parts, split_budget(part, dom, reply.attrs, reply.rho)):
                # One discrete Gaussian share per involved party: sigma_ij^2 = 1/(2 rho_ij), cost rho_ij each.
                assert msg.party_rhos == pytest.approx({s.party: s.rho for s in shares}, rel=1e-12)
                assert msg.variance == pytest.approx(sum(1 / (2 * s.rho) for s in shares), rel=1e-12)
                assert math.fsum(msg.party_rhos.values()) == pytest.approx(reply.rho, rel=1e-12)


def test_hybrid_fit_ledger_names_the_shares_and_sums_exactly_to_the_budget():
    X = pd.DataFrame(np.random.default_rng(4).integers(0, 3, (800, 4)), columns=["w", "x", "y", "z"])
    syn = HybridSynthesizer(1.0, domain={c: 3 for c in X}, partition={"n_slices": 2, "n_vertical": 2},
                            max_rounds=6, random_state=0).fit(X)
    ledger = syn.privacy_ledger_
    assert ledger.total_rho() == pytest.approx(syn.rho_, rel=1e-12)
    dmm = [e for e in ledger if "(DMM" in e.description]
    assert dmm and all(e.mechanism == "discrete gaussian (distributed)" for e in dmm)
    assert ledger.statement() == f"({ledger.epsilon():.4f}, {syn.delta:g})-DP"


def test_a_party_message_backs_its_count_with_a_discrete_gaussian_entry():
    msg = SliceCount(0, ("a",), np.array([3.0, 5.0]), variance=2.0, party_rhos={"p0": 0.5, "p1": 0.5})
    assert [(e.mechanism, e.party, e.rho, e.scale) for e in ledger_entries_for(msg)] == [
        ("discrete gaussian", "p0", 0.5, 1.0), ("discrete gaussian", "p1", 0.5, 1.0)]
