"""VertiMRF binning/HisRec (KDD'24 §6.1 and Eq. (5)) and the GRR frequency oracle (KDD'24 App. B; the extended
version's §4.2 and Theorem 1).

Modules: skdpsynth.synthesizers.vertical_mrf.binning and skdpsynth.synthesizers.vertical_mrf.frequency_oracle.
Every statistical tolerance is derived from the exact distribution of the
statistic; the derivation is stated next to each test.  Seeds are fixed.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from skdpsynth.synthesizers.vertical_mrf import binning
from skdpsynth.synthesizers.vertical_mrf.binning import (
    binned_size,
    equal_width_bins,
    his_rec,
    normalize_within_bins,
    uniform_value_distributions,
    value_distributions,
)
from skdpsynth.synthesizers.vertical_mrf.frequency_oracle import (
    fo_epsilon_prime,
    fo_marginal,
    fo_theorem1_epsilon,
    grr_inverse,
    grr_perturb,
    grr_probabilities,
    grr_transition_matrix,
)
from skdpsynth.privacy import PrivacyLedger


# ---------------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------------
def bin_marginal(table: np.ndarray, bin_maps) -> np.ndarray:
    """Sum a raw-domain table over the values of every bin, axis by axis (the inverse direction of HisRec)."""
    out = np.asarray(table, dtype=np.float64)
    for axis, bm in enumerate(bin_maps):
        bm = np.asarray(bm)
        onehot = (bm[None, :] == np.arange(bm.max() + 1)[:, None]).astype(np.float64)  # (B, u)
        out = np.moveaxis(np.tensordot(out, onehot, axes=([axis], [1])), -1, axis)
    return out


def ci_records(sizes, n_bins, rng):
    """Records whose raw table factorises within bins: T_high[v] = K[bin(v)] · Π_i w_i[v_i] (integers).

    Then the 1-way count of value v_i is w_i[v_i]·g_i(bin_i(v_i)), so the exact
    value distribution is U_i[v_i] = w_i[v_i] / Σ_{v′ in bin} w_i[v′] and
    T_low[bin(v)]·Π_i U_i[v_i] = T_high[v]: the attributes are conditionally
    independent given their bins, the case in which HisRec is exact.
    """
    bin_maps = [equal_width_bins(u, n_bins) for u in sizes]
    ws = []
    for u in sizes:
        w = rng.integers(1, 5, u)
        if u > 3:
            w[1] = 0  # a value that never occurs, in a bin that does
        ws.append(w)
    K = rng.integers(0, 4, tuple(binned_size(bm) for bm in bin_maps))
    K.flat[0] = 0  # an empty combination of bins
    high = K[np.ix_(*bin_maps)]
    for i, w in enumerate(ws):
        shape = [1] * len(sizes)
        shape[i] = sizes[i]
        high = high * w.reshape(shape)
    flat = np.repeat(np.arange(high.size), high.ravel())
    rng.shuffle(flat)
    codes = np.unravel_index(flat, tuple(sizes))
    return [np.asarray(c, dtype=np.int64) for c in codes], bin_maps, high.astype(np.float64)


def binned_histogram(codes, bin_maps):
    binned = tuple(bm[c] for c, bm in zip(codes, bin_maps))
    shape = tuple(binned_size(bm) for bm in bin_maps)
    return np.bincount(np.ravel_multi_index(binned, shape), minlength=math.prod(shape)).reshape(shape).astype(float)


# ---------------------------------------------------------------------------------------------------------------------
# Equal-width binning (KDD'24 §6.1; doc/deviations.md, "Binning over the public domain")
# ---------------------------------------------------------------------------------------------------------------------
def test_equal_width_bins_match_closed_form_on_grid():
    for u in range(1, 41):
        for b in range(1, 13):
            got = equal_width_bins(u, b)
            assert got.dtype == np.int64 and got.shape == (u,)
            if u > b:
                # 1-based: bin(v) = ⌊(v−1)·b/u⌋ + 1 for v ∈ [u]; exact Python integer arithmetic.
                expected = [((v - 1) * b) // u + 1 for v in range(1, u + 1)]
                assert (got + 1).tolist() == expected
                widths = np.bincount(got)
                assert widths.shape == (b,) and (widths > 0).all()  # every bin non-empty
                assert set(widths.tolist()) <= {u // b, -(-u // b)}  # widths differ by 1 at most
                assert (np.diff(got) >= 0).all() and binned_size(got) == b
            else:  # not binned
                assert got.tolist() == list(range(u)) and binned_size(got) == u


@pytest.mark.parametrize("size, n_bins", [(0, 3), (5, 0), (-1, 2), (4.0, 2), (4, 2.5), (True, 2), ("4", 2)])
def test_equal_width_bins_validation(size, n_bins):
    with pytest.raises(ValueError):
        equal_width_bins(size, n_bins)


def test_bin_map_validation():
    for bad in ([], [[0, 1]], [0.0, 1.0], [-1, 0], [0, 2]):  # empty, 2-d, float, negative, bin 1 unused
        with pytest.raises(ValueError):
            binned_size(bad)


# ---------------------------------------------------------------------------------------------------------------------
# Value distributions (KDD'24 §6.1; doc/deviations.md, "Laplace noise on the per-value counts")
# ---------------------------------------------------------------------------------------------------------------------
def test_normalize_within_bins_clips_and_uses_uniform_for_empty_bins():
    U = normalize_within_bins([3.0, -1.0, 1.0, -2.0, -5.0, 0.0, 7.0], [0, 0, 0, 1, 1, 1, 2])
    np.testing.assert_allclose(U, [0.75, 0.0, 0.25, 1 / 3, 1 / 3, 1 / 3, 1.0], rtol=0, atol=1e-15)


def test_value_distributions_sum_to_one_and_ledger_entry():
    rng = np.random.default_rng(1)
    size, bm = 23, equal_width_bins(23, 5)
    codes = rng.integers(0, size, 400)
    ledger = PrivacyLedger()
    U = value_distributions(codes, size, bm, 0.3, random_state=2, ledger=ledger, description="U(age)", party="p1")
    assert U.dtype == np.float64 and U.shape == (size,) and (U >= 0).all()
    np.testing.assert_allclose(np.bincount(bm, weights=U), 1.0, rtol=0, atol=1e-12)
    assert len(ledger) == 1
    (entry,) = ledger.entries
    assert entry.accounting == "pure" and entry.epsilon == 0.3 and entry.sensitivity == 1.0
    assert entry.party == "p1" and entry.description == "U(age)" and entry.n_values == size
    assert ledger.total_epsilon() == 0.3
    # Same seed, same noise: reproducible with a fixed random_state.
    np.testing.assert_array_equal(U, value_distributions(codes, size, bm, 0.3, random_state=2))


def test_value_distributions_huge_epsilon_is_exact_and_empty_bin_is_uniform():
    rng = np.random.default_rng(3)
    size, bm = 17, equal_width_bins(17, 4)  # bins of widths 5, 4, 4, 4 (values 0-4, 5-8, 9-12, 13-16)
    codes = rng.integers(0, 13, 300)  # nothing in the last bin (13..16)
    codes = codes[codes != 6]  # and a value that never occurs inside a used bin
    counts = np.bincount(codes, minlength=size).astype(float)
    U = value_distributions(codes, size, bm, 1e9, random_state=4)
    # Scale 1e-9: Pr[a discrete Laplace draw is non-zero] = 2e^{-1e9}/(1+e^{-1e9}) = 0 in floating point.
    mass = np.bincount(bm, weights=counts)[bm]
    exact = np.where(mass > 0, counts / np.where(mass > 0, mass, 1), 0.0)
    np.testing.assert_array_equal(U[:13], exact[:13])
    assert U[6] == 0.0
    np.testing.assert_array_equal(U[13:], 0.25)  # zero noisy mass: uniform over the 4 values


def test_value_distributions_validation():
    bm = equal_width_bins(6, 2)
    with pytest.raises(ValueError):
        value_distributions([0, 6], 6, bm, 1.0, random_state=0)  # code out of range
    with pytest.raises(ValueError):
        value_distributions([0, 1], 6, equal_width_bins(5, 2), 1.0, random_state=0)  # bin map of another size
    with pytest.raises(ValueError):
        value_distributions([0.5, 1], 6, bm, 1.0, random_state=0)  # non-integer codes
    with pytest.raises(ValueError):
        value_distributions([0, 1], 6, bm, -1.0, random_state=0)  # epsilon <= 0 (laplace_mechanism)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_value_distribution_noise_scale(monkeypatch, epsilon):
    """The noise on the per-value counts is discrete Laplace of scale b = 1/ε (sensitivity 1).

    The noisy counts ñ are captured from the real call path (a wrapper around the
    module's laplace_mechanism).  With a = e^{−1/b}, the discrete Laplace
    P(k) = (1−a)/(1+a)·a^{|k|} has mean 0, σ² = 2a/(1−a)² and fourth moment
    μ4 = Σ k⁴P(k) (summed exactly below).  Z = ñ − n are N i.i.d. draws, so the
    mean square m2 = mean(Z²) has E[m2] = σ² and Var[m2] = (μ4 − σ⁴)/N exactly —
    the kurtosis-corrected analogue of the χ²_N bound N·m2/σ² for Gaussian noise.
    By the CLT (N = 10⁵) we accept |m2 − σ²| ≤ 5·√((μ4 − σ⁴)/N) and
    |mean(Z)| ≤ 5σ/√N (two-sided 5σ: false-alarm rate < 1e-6 each).  Counts of
    1000 per value make clipping irrelevant (Pr[|Z| ≥ 1000] ≤ 2a^{1000} < 1e-200).
    """
    captured = []
    original = binning.laplace_mechanism

    def spy(values, **kwargs):
        out = original(values, **kwargs)
        captured.append((np.asarray(values, dtype=np.float64).copy(), out.copy(), kwargs))
        return out

    monkeypatch.setattr(binning, "laplace_mechanism", spy)
    size, reps = 500, 200
    bm = equal_width_bins(size, 50)
    codes = np.repeat(np.arange(size), 1000)
    rng = np.random.default_rng(20240601)
    for _ in range(reps):
        U = value_distributions(codes, size, bm, epsilon, random_state=rng)  # ledger=None
        exact_counts, noisy, kwargs = captured[-1]
        np.testing.assert_allclose(U, normalize_within_bins(noisy, bm), rtol=0, atol=1e-15)
    assert kwargs["epsilon"] == epsilon and kwargs["sensitivity"] == 1.0 and kwargs["ledger"] is None
    z = np.concatenate([noisy - exact for exact, noisy, _ in captured])
    assert z.size == size * reps and (z == np.round(z)).all()  # exact discrete noise on integer counts

    b = 1.0 / epsilon
    a = math.exp(-1.0 / b)
    var = 2 * a / (1 - a) ** 2
    k = np.arange(-2000, 2001, dtype=np.float64)
    pmf = (1 - a) / (1 + a) * a ** np.abs(k)
    assert abs(pmf.sum() - 1) < 1e-12 and abs((k**2 * pmf).sum() - var) < 1e-9 * var
    mu4 = float((k**4 * pmf).sum())
    n = z.size
    assert abs(z.mean()) <= 5 * math.sqrt(var / n)
    assert abs((z**2).mean() - var) <= 5 * math.sqrt((mu4 - var**2) / n)


def test_uniform_value_distributions():
    bm = equal_width_bins(10, 4)
    U = uniform_value_distributions(bm)
    np.testing.assert_allclose(U, 1.0 / np.bincount(bm)[bm])
    np.testing.assert_allclose(np.bincount(bm, weights=U), 1.0)
    np.testing.assert_array_equal(uniform_value_distributions(np.arange(5)), np.ones(5))


# ---------------------------------------------------------------------------------------------------------------------
# HisRec (KDD'24 §6.1, Eq. (5))
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sizes", [(10,), (10, 7), (10, 3, 9), (3, 12, 2)])
def test_his_rec_exact_under_conditional_independence(sizes):
    """Exact U and exact binned histogram reproduce the raw histogram when attributes are CI given bins.

    Mixed binned (u > 4) and unbinned (u <= 4) attributes; 1-, 2- and 3-way.
    "Exact" up to floating-point rounding of T_low·Π U (a few ulps): rtol 1e-12.
    """
    rng = np.random.default_rng(sum(sizes))
    codes, bin_maps, high = ci_records(sizes, 4, rng)
    raw = np.bincount(np.ravel_multi_index(tuple(codes), sizes), minlength=math.prod(sizes)).reshape(sizes)
    np.testing.assert_array_equal(raw, high)  # the records realise the constructed table
    low = binned_histogram(codes, bin_maps)
    # Exact value distributions, two ways: normalised true counts, and the mechanism at ε = 1e9 (zero noise).
    exact_U = [normalize_within_bins(np.bincount(c, minlength=u), bm) for c, u, bm in zip(codes, sizes, bin_maps)]
    noisy_U = [value_distributions(c, u, bm, 1e9, random_state=i)
               for i, (c, u, bm) in enumerate(zip(codes, sizes, bin_maps))]
    for e, n in zip(exact_U, noisy_U):
        np.testing.assert_array_equal(e, n)
    rec = his_rec(low, bin_maps, exact_U)
    assert rec.shape == tuple(sizes) and rec.dtype == np.float64
    np.testing.assert_allclose(rec, high, rtol=1e-12, atol=1e-12)
    # Unbinned attributes may be given as None / None (identity map, U ≡ 1): same result.
    maps_none = [None if binned_size(bm) == u else bm for bm, u in zip(bin_maps, sizes)]
    U_none = [None if binned_size(bm) == u else U for bm, u, U in zip(bin_maps, sizes, exact_U)]
    np.testing.assert_array_equal(his_rec(low, maps_none, U_none), rec)


def test_his_rec_is_not_exact_without_conditional_independence():
    """Control for test_his_rec_exact_under_conditional_independence: within-bin dependence (A = B on raw values) is lost, but totals and bin-marginals are kept."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, 8, 2000)
    b = a.copy()  # identical attributes: strongly dependent inside each bin
    bm = equal_width_bins(8, 2)
    low = binned_histogram([a, b], [bm, bm])
    U = normalize_within_bins(np.bincount(a, minlength=8), bm)
    rec = his_rec(low, [bm, bm], [U, U])
    raw = np.bincount(a * 8 + b, minlength=64).reshape(8, 8)
    assert np.abs(rec - raw).max() > 50
    assert math.isclose(rec.sum(), 2000, rel_tol=1e-12)
    np.testing.assert_allclose(bin_marginal(rec, [bm, bm]), low, rtol=1e-12)


@pytest.mark.parametrize("sizes, n_bins", [((10,), 3), ((10, 3, 9), 4), ((5, 6), 2), ((2, 3), 4)])
def test_his_rec_preserves_totals_and_bin_marginal(sizes, n_bins):
    """Any (noisy, real-valued) T_low and any noisy U summing to 1 per bin: Σ and the bin-marginal are kept."""
    rng = np.random.default_rng(11)
    bin_maps = [equal_width_bins(u, n_bins) for u in sizes]
    low = rng.gamma(2.0, 50.0, tuple(binned_size(bm) for bm in bin_maps))
    Us = [value_distributions(rng.integers(0, u, 100), u, bm, 0.2, random_state=rng) for u, bm in zip(sizes, bin_maps)]
    for UU in (Us, [uniform_value_distributions(bm) for bm in bin_maps], [None] * len(sizes)):
        rec = his_rec(low, bin_maps, UU)
        assert rec.shape == tuple(sizes) and (rec >= 0).all()
        assert math.isclose(rec.sum(), low.sum(), rel_tol=1e-12)
        np.testing.assert_allclose(bin_marginal(rec, bin_maps), low, rtol=1e-12)


def test_his_rec_validation():
    bm = equal_width_bins(6, 2)
    U = uniform_value_distributions(bm)
    with pytest.raises(ValueError):
        his_rec(np.ones((3, 2)), [bm, None], [U, None])  # axis 0 has 3 cells, bin map 2 bins
    with pytest.raises(ValueError):
        his_rec(np.ones(2), [bm], [np.full(6, 0.5)])  # U sums to 1.5 per bin
    with pytest.raises(ValueError):
        his_rec(np.ones(2), [bm], [np.ones(5)])  # U of the wrong length
    with pytest.raises(ValueError):
        his_rec(np.ones((2, 2)), [bm], [U])  # one bin map for two axes
    with pytest.raises(ValueError):
        his_rec(np.float64(3.0), [], [])  # 0-d table


# ---------------------------------------------------------------------------------------------------------------------
# GRR (KDD'24 App. B; extended version §4.2)
# ---------------------------------------------------------------------------------------------------------------------
def test_grr_probabilities():
    for eps in (0.01, 0.5, 1.0, 3.0, 800.0):  # 800: e^ε overflows a float; the computation does not
        for u in (1, 2, 5, 100):
            p, q = grr_probabilities(eps, u)
            assert math.isclose(p + (u - 1) * q, 1.0, rel_tol=1e-14)
            if eps < 700:
                assert math.isclose(p, math.exp(eps) / (math.exp(eps) + u - 1), rel_tol=1e-14)
                assert math.isclose(q, 1.0 / (math.exp(eps) + u - 1), rel_tol=1e-14)
                assert math.isclose(p / q, math.exp(eps), rel_tol=1e-13)
    for bad in ((0.0, 3), (-1.0, 3), (float("inf"), 3), (float("nan"), 3), (1.0, 0), (1.0, 2.0)):
        with pytest.raises(ValueError):
            grr_probabilities(*bad)


@pytest.mark.parametrize("epsilon, size", [(0.5, 6), (2.0, 6), (1.0, 2)])
def test_grr_keep_probability_and_uniform_off_values(epsilon, size):
    """Pr[keep] = p; a changed value is uniform over the u−1 others.

    Keep indicators are i.i.d. Bernoulli(p): |p̂ − p| ≤ 5·√(p(1−p)/n) (binomial,
    5 standard errors).  Given a change, the reported value is uniform on the u−1
    other values, so the counts per (true value, reported value) among changes
    are multinomial: Pearson χ² over all true values, accept p-value > 1e-4.
    """
    n = 120_000
    rng = np.random.default_rng(5)
    codes = rng.integers(0, size, n)
    out = grr_perturb(codes, size, epsilon, random_state=6)
    assert out.dtype == np.int64 and out.shape == (n,) and out.min() >= 0 and out.max() < size
    p, _ = grr_probabilities(epsilon, size)
    keep = out == codes
    assert abs(keep.mean() - p) <= 5 * math.sqrt(p * (1 - p) / n)
    if size > 2:
        changed = ~keep
        # Offset (out − v) mod u ∈ {1..u−1} of each changed record, tabulated per true value v.
        offset = (out[changed] - codes[changed]) % size
        table = np.bincount(codes[changed] * size + offset, minlength=size * size).reshape(size, size)
        assert (table[:, 0] == 0).all()
        chi2 = stats.chisquare(table[:, 1:], axis=1).statistic  # u − 2 degrees of freedom per true value
        total = stats.chi2.sf(chi2.sum(), df=size * (size - 2))
        assert total > 1e-4
    # Determinism with a fixed seed; OS entropy by default.
    np.testing.assert_array_equal(out, grr_perturb(codes, size, epsilon, random_state=6))
    assert grr_perturb(codes[:10], size, epsilon).shape == (10,)


def test_grr_perturb_edge_cases():
    codes = np.array([0, 0, 0])
    np.testing.assert_array_equal(grr_perturb(codes, 1, 0.1, random_state=0), codes)  # one value: unchanged
    assert grr_perturb(np.array([], dtype=np.int64), 4, 1.0, random_state=0).shape == (0,)
    for bad in ([0, 4], [-1, 0], [0.5, 1.0], [[0, 1]]):
        with pytest.raises(ValueError):
            grr_perturb(bad, 4, 1.0, random_state=0)


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("size", [1, 2, 3, 10, 50])
def test_grr_inverse_closed_form(epsilon, size):
    P = grr_transition_matrix(size, epsilon)
    p, q = grr_probabilities(epsilon, size)
    np.testing.assert_allclose(P, (p - q) * np.eye(size) + q * np.ones((size, size)), rtol=0, atol=1e-15)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, rtol=0, atol=1e-14)
    inv = grr_inverse(size, epsilon)
    ref = np.linalg.inv(P)
    # Entries scale like 1/(p − q) (≈ 1e3 for ε = 0.05, u = 50): compare relative to the largest entry.
    scale = max(1.0, np.abs(ref).max())
    assert np.abs(inv - ref).max() <= 1e-12 * scale
    assert np.abs(inv @ P - np.eye(size)).max() <= 1e-12 * scale


def test_fo_marginal_matches_kronecker_inverse():
    """Axis-wise application equals (⊗ P_i^{−1}) · counts built explicitly (small case), for l = 1, 2, 3."""
    rng = np.random.default_rng(8)
    n = 3000
    for sizes, eps in (((4,), (0.7,)), ((3, 5), (0.4, 1.3)), ((2, 3, 4), (1.0, 0.2, 2.5))):
        cols = [rng.integers(0, u, n) for u in sizes]
        counts = np.bincount(np.ravel_multi_index(tuple(cols), sizes), minlength=math.prod(sizes)).astype(float)
        kron = np.ones((1, 1))
        for u, e in zip(sizes, eps):
            kron = np.kron(kron, grr_inverse(u, e))  # row-major ravel order: first axis outermost
        ref = (kron @ counts).reshape(sizes)
        est = fo_marginal(cols, sizes, eps, clip=False)
        assert est.shape == sizes and est.dtype == np.float64
        np.testing.assert_allclose(est, ref, rtol=1e-10, atol=1e-8 * n)
        assert math.isclose(est.sum(), n, rel_tol=1e-10)  # P^{−1} preserves the total
        np.testing.assert_array_equal(fo_marginal(cols, sizes, eps), np.maximum(est, 0.0))  # clip (doc/deviations.md, "Clamping CarEst cells at zero")
    # One ε for all columns.
    cols = [rng.integers(0, 3, 50), rng.integers(0, 2, 50)]
    np.testing.assert_array_equal(fo_marginal(cols, [3, 2], 0.9), fo_marginal(cols, [3, 2], [0.9, 0.9]))


def test_fo_marginal_clips_negatives():
    rng = np.random.default_rng(9)
    a = rng.integers(0, 8, 200)
    cols = [grr_perturb(a, 8, 0.2, random_state=10), grr_perturb(a, 8, 0.2, random_state=11)]
    raw = fo_marginal(cols, [8, 8], 0.2, clip=False)
    assert raw.min() < 0  # low ε, tiny n: the unbiased estimate has negative cells
    clipped = fo_marginal(cols, [8, 8], 0.2)
    assert clipped.min() == 0.0
    np.testing.assert_array_equal(clipped, np.maximum(raw, 0.0))


def test_fo_marginal_validation():
    a = np.array([0, 1, 2])
    with pytest.raises(ValueError):
        fo_marginal([], [], [])
    with pytest.raises(ValueError):
        fo_marginal([a, a[:2]], [3, 3], 1.0)  # not aligned
    with pytest.raises(ValueError):
        fo_marginal([a], [2], 1.0)  # code 2 outside a domain of size 2
    with pytest.raises(ValueError):
        fo_marginal([a, a], [3], 1.0)
    with pytest.raises(ValueError):
        fo_marginal([a, a], [3, 3], [1.0])
    with pytest.raises(ValueError):
        fo_marginal([a], [3], 0.0)


def test_fo_car_est_unbiased():
    """FO CarEst (before clipping) is unbiased; the mean over 200 reps is within 3 s.e. of the truth.

    Exact covariance of one estimate: the noisy count vector is a sum of independent
    one-hot draws with probabilities π_r = P e_{x_r} (P = P_1 ⊗ P_2), so
    Cov(c) = diag(P T) − Σ_r π_r π_rᵀ and Cov(P^{−1}c) = P^{−1} diag(P T) P^{−ᵀ} − diag(T)
    (P^{−1}π_r = e_{x_r}).  The s.e. of the mean of R = 200 reps is √(diag Cov / R).
    Per cell we require |mean − T| ≤ 3 s.e. (a fixed seed, so a fixed outcome); jointly, the
    Mahalanobis statistic R·δᵀ Cov⁺ δ (rank k − 1: every estimate sums to n) must
    be below the χ²_{k−1} 0.999-quantile.
    """
    sizes, eps = (3, 2), (1.0, 0.6)
    n, reps = 2000, 200
    rng = np.random.default_rng(12)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.8, (a >= 1).astype(np.int64), rng.integers(0, 2, n))  # correlated with a
    truth = np.bincount(a * 2 + b, minlength=6).reshape(sizes).astype(float)
    noise = np.random.default_rng(13)
    ests = np.stack([
        fo_marginal([grr_perturb(a, 3, eps[0], random_state=noise), grr_perturb(b, 2, eps[1], random_state=noise)],
                    sizes, eps, clip=False)
        for _ in range(reps)
    ])
    P = np.kron(grr_transition_matrix(3, eps[0]), grr_transition_matrix(2, eps[1]))
    Pinv = np.kron(grr_inverse(3, eps[0]), grr_inverse(2, eps[1]))
    t = truth.ravel()
    cov = Pinv @ np.diag(P @ t) @ Pinv.T - np.diag(t)
    # The exact covariance agrees with the empirical one (loose: sample covariance of 200 draws).
    emp = np.cov(ests.reshape(reps, -1), rowvar=False)
    # (χ²_199/199 has s.d. √(2/199) ≈ 0.10 for Gaussian estimates: allow 5 s.d.)
    assert np.abs(np.diag(emp) / np.diag(cov) - 1).max() < 0.5
    delta = ests.reshape(reps, -1).mean(axis=0) - t
    se = np.sqrt(np.diag(cov) / reps)
    assert (np.abs(delta) <= 3 * se).all(), (delta / se).round(2)
    maha = reps * delta @ np.linalg.pinv(cov) @ delta
    assert maha < stats.chi2.ppf(0.999, df=t.size - 1)


# ---------------------------------------------------------------------------------------------------------------------
# FO accounting (Theorem 1; doc/deviations.md, "Frequency-oracle accounting")
# ---------------------------------------------------------------------------------------------------------------------
def test_fo_epsilon_prime_modes():
    assert fo_epsilon_prime(0.32, 15, None) == 0.32 / 15
    assert fo_epsilon_prime(0.32, 15, 1e-5, "conservative") == 0.32 / 15
    paper = fo_epsilon_prime(0.32, 15, 0.5 / 36177, "paper")
    assert paper == max(2 * 0.32 / 15, 0.32 / (2 * math.sqrt(2 * 15 * math.log(2 * 36177))))
    assert round(paper, 4) == 0.0427  # Adult at ε = 0.8: ε_enc = 0.4 ε = 0.32, d = 15, n = 36,177 (computed)
    # "paper" is never below twice "conservative" (its first term is 2ε_enc/d).
    for d in (1, 5, 50, 5000):
        assert fo_epsilon_prime(1.0, d, 1e-6, "paper") >= 2 * fo_epsilon_prime(1.0, d, None)


def test_fo_theorem1_identity():
    """What holds: Theorem 1 evaluated at the "paper" ε′ returns ε_enc exactly (up to rounding), in both branches.

    With A = d/2 and B = 2√(2d ln(1/δ)), Theorem 1 is ε′·min(A, B) and the
    "paper" ε′ = max(ε/A, ε/B) = ε/min(A, B), so the product is ε.  The max picks
    the first term (2ε/d) when A ≤ B, i.e. d ≤ 32 ln(1/δ), and the second term
    for larger d; the grid below covers both.  For "conservative" ε′ = ε/d,
    Theorem 1 gives ε·min(A, B)/d ≤ ε/2 (the paper would call it "ε/2-DP").
    """
    branches = set()
    for eps in (0.1, 0.32, 1.0, 5.0):
        for d in (1, 2, 5, 15, 50, 400, 5000):
            for delta in (1e-9, 1e-5, 0.1, 0.5):
                A, B = d / 2, 2 * math.sqrt(2 * d * math.log(1 / delta))
                branches.add(A <= B)
                e_prime = fo_epsilon_prime(eps, d, delta, "paper")
                assert e_prime == max(2 * eps / d, eps / (2 * math.sqrt(2 * d * math.log(1 / delta))))
                assert math.isclose(fo_theorem1_epsilon(e_prime, d, delta), eps, rel_tol=1e-12)
                assert fo_theorem1_epsilon(fo_epsilon_prime(eps, d, delta), d, delta) <= eps / 2 * (1 + 1e-12)
    assert branches == {True, False}


def test_fo_accounting_validation():
    for args in ((0.0, 5, 1e-5), (-1.0, 5, 1e-5), (1.0, 0, 1e-5), (1.0, 2.5, 1e-5), (float("inf"), 5, 1e-5)):
        with pytest.raises(ValueError):
            fo_epsilon_prime(*args)
        with pytest.raises(ValueError):
            fo_theorem1_epsilon(*args)
    for delta in (None, 0.0, 1.0, -0.1, 2.0):
        with pytest.raises(ValueError):
            fo_epsilon_prime(1.0, 5, delta, "paper")
        with pytest.raises(ValueError):
            fo_theorem1_epsilon(1.0, 5, delta)
    with pytest.raises(ValueError):
        fo_epsilon_prime(1.0, 5, 1.5)  # conservative ignores delta but still rejects an invalid one
    with pytest.raises(ValueError):
        fo_epsilon_prime(1.0, 5, 1e-5, "rdp")
