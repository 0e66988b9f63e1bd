"""VertiMRF sketch layer (skdpsynth.synthesizers.vertical_mrf.sketches): DPFM and hashing (KDD'24 §2.2 and App. A,
Algorithm 2), CarEst (§4.2; the extended version's Algorithm 4) and the sketch accounting (Theorem 2).

Statistical tolerances come from simulations of the same estimators (the measured values are noted in place); where
a test uses fewer draws than those simulations, the reduction and the matching widening are noted in place.
"""
from __future__ import annotations

import hashlib
import math
import pickle
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from skdpsynth.synthesizers.vertical_mrf.sketches import (
    SketchKeys,
    _open_uniform,
    _philox_key,
    car_est,
    complement_sketches,
    derive_sketch_keys,
    dpfm_parameters,
    encode,
    hash_values,
    hll_constant,
    new_shared_secret,
    raw_sketches,
    rdp_optimal_epsilon,
    sample_phantom_maxima,
    sketch_epsilon_prime,
    theorem2_epsilon,
    union_cardinality,
)

SECRET = bytes(range(32))


# ---------------------------------------------------------------------------------------------------------------------
# DPFM and hashing
# ---------------------------------------------------------------------------------------------------------------------
DPFM_TABLE = {  # ε′ -> {γ: (k_p, α_min)}: the least k_p ≥ 1/(e^ε′ − 1) and α_min of the DP-FM lemma
    1.0: {1.0: (1, 1), 0.5: (1, 2), 0.1: (1, 5)},
    0.5: {1.0: (2, 2), 0.5: (2, 3), 0.1: (2, 10)},
    0.1: {1.0: (10, 4), 0.5: (10, 6), 0.1: (10, 25)},
    0.01: {1.0: (100, 7), 0.5: (100, 12), 0.1: (100, 49)},
    0.001: {1.0: (1000, 10), 0.5: (1000, 18), 0.1: (1000, 73)},
}
DPFM_GRID = [(e, g, kp, am) for e, row in DPFM_TABLE.items() for g, (kp, am) in row.items()]


@pytest.mark.parametrize("eps, gamma, k_p, alpha_min", DPFM_GRID)
def test_dpfm_parameters_table(eps, gamma, k_p, alpha_min):
    assert dpfm_parameters(eps, gamma) == (k_p, alpha_min)


def test_dpfm_parameters_satisfy_lemma_and_are_minimal():
    for eps, gamma, k_p, alpha_min in DPFM_GRID:
        assert k_p >= 1 / math.expm1(eps) > k_p - 1
        need = math.log(1 / -math.expm1(-eps)) / math.log1p(gamma)
        assert alpha_min >= need > alpha_min - 1
    # Near-integer ratios (ε′ = ln(1 + 1/k)): k_p is the least integer passing the lemma's condition as
    # evaluated in floats, so rounding in 1/(e^ε′ − 1) can neither break the condition nor add a step.
    for k in range(1, 2001):
        eps = math.log1p(1 / k)
        k_p, alpha_min = dpfm_parameters(eps, 1.0)
        assert k_p in (k, k + 1) and k_p * math.expm1(eps) >= 1 > (k_p - 1) * math.expm1(eps)
        target = -math.log(-math.expm1(-eps))
        assert alpha_min * math.log(2) >= target > (alpha_min - 1) * math.log(2)
    with pytest.raises(ValueError):
        dpfm_parameters(0.0, 1.0)


@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.1])
def test_hash_is_geometric(gamma):
    # 2·10^5 IDs rather than 10^6, for speed (the χ² test at p > 0.001 stays valid at any n).
    n = 200_000
    y = hash_values(derive_sketch_keys(SECRET, 1), n, gamma)[0].astype(np.int64)
    assert y.min() >= 1
    q = 1 / (1 + gamma)
    top = int(np.floor(1 + math.log(n / 50) / math.log1p(gamma)))  # expected count ≥ 50 in the tail bin
    ys = np.arange(1, top)
    expected = np.append(n * (q ** (ys - 1) - q ** ys), n * q ** (top - 1))  # Pr[Y = y], then Pr[Y ≥ top]
    observed = np.append([(y == v).sum() for v in ys], (y >= top).sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_same_key_same_hash_across_processes_and_keys_independent():
    keys = derive_sketch_keys(SECRET, 3)
    h = hash_values(keys, 10_000, 1.0)
    digest = hashlib.sha256(h.tobytes()).hexdigest()
    code = ("import hashlib; from skdpsynth.synthesizers.vertical_mrf.sketches import hash_values, derive_sketch_keys; "
            "print(hashlib.sha256(hash_values(derive_sketch_keys(bytes(range(32)), 3), 10000, 1.0).tobytes()).hexdigest())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == digest  # a second "party" in another process gets the same hashes
    # Different keys: correlation of the U vectors < 0.01 (n = 2·10^5: s.d. of the correlation ≈ 0.0022).
    u = [_open_uniform(np.random.Philox(key=_philox_key(k)).random_raw(200_000)) for k in keys]
    for i in range(3):
        for j in range(i + 1, 3):
            assert abs(np.corrcoef(u[i], u[j])[0, 1]) < 0.01
    assert 0 < min(x.min() for x in u) and max(x.max() for x in u) < 1


def _log_pmf_max(k: int, gamma: float, alpha_min: int, ys: np.ndarray) -> np.ndarray:
    """log Pr[max(Y_1..Y_k, α_min) = y] for y ≥ α_min, in log space (the DP-FM lemma's output law)."""
    lq = -math.log1p(gamma)
    log_f = k * np.log1p(-np.exp(lq * ys))  # log F(y)
    # log F(y−1) − log F(y) = k·log1p(−q^{y−1}(1−q)/(1−q^y)), stable for large y
    with np.errstate(divide="ignore"):
        step = k * np.log1p(-np.exp(lq * (ys - 1)) * (-np.expm1(lq)) / (-np.expm1(lq * ys)))
    out = log_f + np.log(-np.expm1(step))  # log(F(y) − F(y−1))
    return np.where(ys == alpha_min, log_f, out)


@pytest.mark.parametrize("eps", list(DPFM_TABLE))
@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.1])
def test_exact_dpfm_lemma(eps, gamma):
    k_p, alpha_min = dpfm_parameters(eps, gamma)
    for k in (k_p, k_p + 1, k_p + 5, k_p + 100, 10 * k_p + 3):
        # up to where Pr[max ≥ y] ≈ k(1+γ)^{−y} is far below 1e-30: the ratio tends to k/(k+1) there anyway
        y_hi = alpha_min + int(math.ceil((math.log(10 * k + 10) + 70) / math.log1p(gamma)))
        ys = np.arange(max(alpha_min, 1), y_hi, dtype=np.float64)
        ratio = _log_pmf_max(k, gamma, alpha_min, ys) - _log_pmf_max(k + 1, gamma, alpha_min, ys)
        assert np.isfinite(ratio).all()
        assert np.abs(ratio).max() <= eps + 1e-12


def test_mergeability_and_split_across_parties():
    keys = derive_sketch_keys(SECRET, 50)
    n = 3000
    rng = np.random.default_rng(4)
    part = rng.integers(0, 2, n)  # X_1 = rows with part == 0, X_2 = rows with part == 1
    whole = np.zeros(n, dtype=np.int64)  # one value holding X_1 ∪ X_2
    s_parts = raw_sketches(part, [2], keys, 1.0)
    s_whole = raw_sketches(whole, [1], keys, 1.0)
    assert (s_whole[:, 0] == s_parts.max(axis=1)).all()
    # a set split across two "parties" (columns encoded separately) equals the sketch of the whole set
    other = rng.integers(0, 3, n)
    both = raw_sketches(np.column_stack([part, other]), [2, 3], keys, 1.0)
    assert (both[:, :2] == s_parts).all() and (both[:, 2:] == raw_sketches(other, [3], keys, 1.0)).all()
    assert (both[:, 2:].max(axis=1) == s_whole[:, 0]).all()
    # and every sketch is the plain max of the row hashes
    h = hash_values(keys, n, 1.0)
    assert (s_parts[:, 1] == h[:, part == 1].max(axis=1)).all()


@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.1])
@pytest.mark.parametrize("k", [1, 10, 1000])
def test_phantom_sampler_cdf(gamma, k):
    m = 20_000
    a = sample_phantom_maxima(k, gamma, m, random_state=5).astype(np.int64)
    ys = np.arange(1, a.max() + 1)
    emp = np.searchsorted(np.sort(a), ys, side="right") / m
    theo = (-np.expm1(-math.log1p(gamma) * ys)) ** k
    # KS critical value at level 0.001 is 1.95/√m (conservative for a discrete law).
    assert np.abs(emp - theo).max() < 1.95 / math.sqrt(m)


# ---------------------------------------------------------------------------------------------------------------------
# Cardinality / CarEst
# ---------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.1])
@pytest.mark.parametrize("N", [1_000, 10_000])
def test_hll_estimator_no_dp(gamma, N):
    # t = 500, 30 reps.  The max of N hashed IDs is drawn with the exact O(1) sampler (the same law, checked by
    # test_hash_is_geometric and test_phantom_sampler_cdf); test_two_way_carest_no_dp_across_parties exercises the
    # real hash path.
    t, reps = 500, 30
    tt = sample_phantom_maxima(N, gamma, (t, reps), random_state=6)
    est = union_cardinality(tt, gamma)
    assert abs(est.mean() / N - 1) < 0.03
    rel_sd = est.std(ddof=1) / N
    assert 0.5 * 1.04 / math.sqrt(t) <= rel_sd <= 1.6 * 1.04 / math.sqrt(t)


def test_hll_constant_values():
    assert hll_constant(1.0) == pytest.approx(0.72135, abs=5e-6)
    assert hll_constant(0.5) == pytest.approx(0.8221, abs=5e-5)
    assert hll_constant(0.1) == pytest.approx(0.9538, abs=5e-5)


@pytest.mark.slow
def test_dp_union_floor_bias_and_censored_mle():
    # γ = 1, k_p = 5163, α_min = 13 (NLTCS's sketches at ε = 0.8, see ACCOUNTING_ROWS), t = 2000, 30 reps.  𝒯 = max(hashes of N records,
    # two DP sketches' phantoms, α_min), each part drawn with the exact max sampler.
    gamma, k_p, a_min, t, reps = 1.0, 5163, 13, 2000, 30

    def union(N, seed):
        parts = [sample_phantom_maxima(k, gamma, (t, reps), random_state=seed + i) for i, k in enumerate((N, k_p, k_p))]
        return np.maximum(np.maximum.reduce(parts), a_min)

    total = lambda N: N + 2 * k_p  # noqa: E731
    hll_bias = lambda N, s: union_cardinality(union(N, s), gamma).mean() - total(N)  # noqa: E731
    assert abs(hll_bias(30_000, 70)) < 0.02 * total(30_000)  # measured: −171 … −196
    assert hll_bias(1_000, 80) > 0.05 * total(1_000)  # measured: +1 781, the α_min floor effect
    for N, seed in ((1_000, 90), (5_000, 100), (10_000, 110)):
        mle = union_cardinality(union(N, seed), gamma, "censored_mle", alpha_min=a_min)
        assert abs(mle.mean() - total(N)) < 0.02 * total(N)  # measured: −3, +54, +28


def test_two_way_carest_no_dp_across_parties():
    # Every cell within 4 standard errors of an HLL union (1.04/√t relative) of the n − T records outside it; t = 500
    # rather than the paper's t = 2000 for speed, with the bound at t = 500.
    n, t = 20_000, 500
    rng = np.random.default_rng(8)
    a = (rng.random(n) < 0.85).astype(np.int64)
    b = np.where(rng.random(n) < 0.9, a, 1 - a)  # correlated; cells ≈ 15 300 / 1 700 / 300 / 2 700
    keys = SketchKeys.from_secret(SECRET, t)
    s_a, s_b = raw_sketches(a, [2], keys, 1.0), raw_sketches(b, [2], keys, 1.0)  # party A, party B
    est = car_est([s_a, s_b], 1.0, k_p=0, n_hat=n)
    true = np.zeros((2, 2))
    np.add.at(true, (a, b), 1)
    assert est.shape == (2, 2)
    assert np.all(np.abs(est - true) <= 4 * (1.04 / math.sqrt(t)) * (n - true))
    # censored MLE without DP (α_min = 0) meets the same bound
    est_mle = car_est([s_a, s_b], 1.0, k_p=0, n_hat=n, estimator="censored_mle", alpha_min=0)
    assert np.all(np.abs(est_mle - true) <= 4 * (1.04 / math.sqrt(t)) * (n - true))
    # 1-way (l = 1) form: T̂_A[v] = n̂ − U(complement of v)
    est_1 = car_est([s_a], 1.0, k_p=0, n_hat=n)
    assert np.all(np.abs(est_1 - np.bincount(a)) <= 4 * (1.04 / math.sqrt(t)) * (n - np.bincount(a)))


def test_phantom_count_three_way():
    rng = np.random.default_rng(9)
    blocks = [rng.integers(5, 13, (40, u)).astype(np.uint8) for u in (2, 4, 3)]
    k_p, n_hat = 7, 1e6  # n̂ large enough that nothing is clamped
    with_p = car_est(blocks, 1.0, k_p=k_p, n_hat=n_hat)
    without = car_est(blocks, 1.0, k_p=0, n_hat=n_hat)
    assert with_p.shape == (2, 4, 3)
    np.testing.assert_allclose(with_p - without, (1 + 3 + 2) * k_p, atol=1e-6)


def test_carest_broadcast_matches_loop_and_complements():
    rng = np.random.default_rng(10)
    blocks = [rng.integers(1, 40, (25, u)) for u in (3, 2)]
    comps = [complement_sketches(b) for b in blocks]
    for v in range(3):
        assert (comps[0][:, v] == np.delete(blocks[0], v, axis=1).max(axis=1)).all()
    out = car_est(blocks, 0.5, k_p=3, n_hat=1e5)
    for v0 in range(3):
        for v1 in range(2):
            tt = np.maximum(comps[0][:, v0], comps[1][:, v1])
            u = hll_constant(0.5) * 25 / np.sum(1.5 ** -tt.astype(float))
            assert out[v0, v1] == pytest.approx(max(1e5 - (u - 3 * 3), 0))
    np.testing.assert_array_equal(car_est(comps, 0.5, k_p=3, n_hat=1e5, complements=True), out)
    assert (complement_sketches(np.array([[5], [6]])) == 0).all()  # one-value domain: empty complement


def test_paper_literal_warns_and_unknown_estimator():
    blocks = [np.full((10, 2), 12, dtype=np.uint8)]
    with pytest.warns(UserWarning, match="ablation"):
        car_est(blocks, 1.0, k_p=0, n_hat=10_000, estimator="paper_literal")
    with pytest.raises(ValueError):
        car_est(blocks, 1.0, k_p=0, n_hat=10_000, estimator="quantile")
    with pytest.raises(ValueError):
        car_est(blocks, 1.0, k_p=0, n_hat=10_000, estimator="censored_mle")  # needs alpha_min


def test_encode_is_dpfm_of_the_raw_sketch():
    keys = SketchKeys.from_secret(SECRET, 30)
    rng = np.random.default_rng(11)
    codes = np.column_stack([rng.integers(0, 3, 500), rng.integers(0, 5, 500)])
    codes[:, 1] = np.minimum(codes[:, 1], 3)  # value 4 is empty
    eps = 0.05
    k_p, a_min = dpfm_parameters(eps, 1.0)
    s = encode(codes, [3, 5], keys, 1.0, eps, random_state=12)
    raw = raw_sketches(codes, [3, 5], keys, 1.0)
    ph = sample_phantom_maxima(k_p, 1.0, raw.shape, random_state=12)
    np.testing.assert_array_equal(s, np.maximum(np.maximum(raw, ph), a_min))
    assert s.shape == (30, 8) and s.dtype == np.uint8
    # small γ needs uint16 (values can exceed 255)
    s01 = encode(codes, [3, 5], keys, 0.1, eps, random_state=12)
    assert s01.dtype == np.uint16 and s01.min() >= dpfm_parameters(eps, 0.1)[1]
    with pytest.raises(ValueError):
        encode(codes, [3, 3], keys, 1.0, eps)  # code 3 outside a size-3 domain


def test_random_state_reproducible_and_none_fresh():
    keys = SketchKeys.from_secret(SECRET, 20)
    codes = np.arange(10).reshape(-1, 1) % 5  # tiny groups: phantoms (k_p = 100) dominate
    s1 = encode(codes, [5], keys, 1.0, 0.01, random_state=3)
    s2 = encode(codes, [5], keys, 1.0, 0.01, random_state=3)
    np.testing.assert_array_equal(s1, s2)
    n1 = encode(codes, [5], keys, 1.0, 0.01)
    n2 = encode(codes, [5], keys, 1.0, 0.01)
    assert not np.array_equal(n1, n2)
    # the hash part is deterministic: same key → same hashes
    np.testing.assert_array_equal(hash_values(keys, 10, 1.0), hash_values(list(keys), 10, 1.0))


# ---------------------------------------------------------------------------------------------------------------------
# Keys never leave the parties
# ---------------------------------------------------------------------------------------------------------------------
def test_keys_hidden_and_unpicklable():
    keys = SketchKeys.generate(5)
    assert "hidden" in repr(keys) and all(k.hex() not in repr(keys) and repr(k) not in repr(keys) for k in keys)
    with pytest.raises(TypeError):
        pickle.dumps(keys)
    with pytest.raises(TypeError):
        pickle.dumps({"message": np.zeros(3), "keys": keys})
    import copy
    with pytest.raises(TypeError):
        copy.deepcopy(keys)
    assert derive_sketch_keys(SECRET, 2)[0] == derive_sketch_keys(SECRET, 3)[0]  # run h's key does not depend on t
    assert len(new_shared_secret()) == 32
    with pytest.raises(ValueError):
        derive_sketch_keys(b"short", 2)


def test_keys_absent_from_pickled_message():
    secret = new_shared_secret()
    keys = SketchKeys.from_secret(secret, 40)
    codes = np.random.default_rng(13).integers(0, 4, (200, 2))
    s = encode(codes, [4, 4], keys, 1.0, 0.1)
    message = {"party_id": 0, "sizes": (4, 4), "gamma": 1.0, "epsilon_prime": 0.1, "sketches": s}
    blob = pickle.dumps(message)
    assert pickle.loads(blob)["sketches"].tobytes() == s.tobytes()
    for secret_bytes in [secret, *keys]:
        for piece in (secret_bytes, secret_bytes[:16], secret_bytes[:8]):
            assert piece not in blob and piece not in pickle.dumps(s)


# ---------------------------------------------------------------------------------------------------------------------
# Accounting
# ---------------------------------------------------------------------------------------------------------------------
# The sketches at the paper's settings (KDD'24 §7.1: t = 2000, δ = 1/n halved for the sketches, ε_sketch = 0.36 ε, or
# 0.56 ε on NLTCS, where the unused binning share moves to the sketches; n = 80 % of Table 1's records), γ = 1;
# computed, ε = 0.8 except Adult's second row (ε = 3.2).
ACCOUNTING_ROWS = [  # dataset, n (80 %), d, ε_sketch, δ_enc, ε′, k_p, α_min, RDP-opt ε
    ("NLTCS", 17259, 16, 0.448, 2.897e-05, 1.9369e-04, 5163, 13, 0.3192),
    ("Adult", 36177, 15, 0.288, 1.382e-05, 1.2427e-04, 8047, 13, 0.2046),
    ("Adult", 36177, 15, 1.152, 1.382e-05, 4.9708e-04, 2012, 11, 0.8294),
    ("BR2000", 30400, 13, 0.288, 1.645e-05, 1.3454e-04, 7433, 13, 0.2046),
    ("Fire", 244095, 15, 0.288, 2.048e-06, 1.1486e-04, 8706, 14, 0.2044),
]


@pytest.mark.parametrize("name, n, d, eps_sketch, delta_tab, eps_p, k_p, alpha_min, rdp", ACCOUNTING_ROWS)
def test_sketch_accounting_at_the_papers_settings(name, n, d, eps_sketch, delta_tab, eps_p, k_p, alpha_min, rdp):
    t = 2000
    delta = 0.5 / n  # δ_enc = (1/n)/2
    assert delta == pytest.approx(delta_tab, rel=5e-4)  # table shows 4 significant digits
    e = sketch_epsilon_prime(eps_sketch, t, d, delta)
    assert e == pytest.approx(eps_p, rel=5e-5)
    assert dpfm_parameters(e, 1.0) == (k_p, alpha_min)
    assert abs(theorem2_epsilon(e, t, d, delta) - eps_sketch) <= 1e-12
    assert rdp_optimal_epsilon(e, t, d, delta) == pytest.approx(rdp, abs=5e-5)


def test_rdp_optimal_below_theorem2():
    for t in (100, 2000):
        for d in (2, 15, 50):
            for delta in (1e-3, 1e-5, 1e-9):
                for eps in (0.01, 0.3, 1.0, 3.2, 10.0):
                    if eps > 2.34 * math.log(1 / delta):
                        continue
                    e = sketch_epsilon_prime(eps, t, d, delta)
                    rdp = rdp_optimal_epsilon(e, t, d, delta)
                    assert rdp <= theorem2_epsilon(e, t, d, delta) + 1e-12
                    # closed form of the optimal conversion of Theorem 2's RDP bound: ε/√2 + ε²/(8 ln 1/δ)
                    assert rdp == pytest.approx(eps / math.sqrt(2) + eps**2 / (8 * math.log(1 / delta)), rel=1e-12)
