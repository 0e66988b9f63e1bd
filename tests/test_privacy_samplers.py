"""Tests of the exact discrete Gaussian / discrete Laplace samplers.

Every statistical test uses a fixed seed, so it is deterministic.  The
goodness-of-fit level 1e-4 is chosen so that a correct sampler, over the ~20
p-values in this file, has a < 0.2 % chance of a failing seed when seeds are
changed, while real biases at these sample sizes give p-values of 1e-10 and
below (see the power tests).  Moment tolerances are 5 standard errors.
"""
from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from skdpsynth.privacy import samplers
from skdpsynth.privacy.randomness import SystemRandomGenerator
from skdpsynth.privacy.samplers import bernoulli_exp, discrete_gaussian, discrete_laplace

N = 200_000
ALPHA = 1e-4


# ------------------------------------------------------------- exact pmfs
def gauss_pmf(sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    """Support and pmf of the discrete Gaussian, normalised over ±(14σ + 3) (tail mass < e^-98)."""
    r = int(14 * math.sqrt(sigma2)) + 3
    y = np.arange(-r, r + 1)
    w = np.exp(-(y.astype(np.float64) ** 2) / (2 * sigma2))
    return y, w / w.sum()


def laplace_pmf(scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Closed form P(y) = (1 - e^{-1/b})/(1 + e^{-1/b})·e^{-|y|/b} over ±(40b + 3) (tail mass < e^-40)."""
    r = int(40 * scale) + 3
    y = np.arange(-r, r + 1)
    q = math.exp(-1 / scale)
    return y, (1 - q) / (1 + q) * np.exp(-np.abs(y) / scale)


def chisquare_pvalue(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray, min_expected: float = 5.0) -> float:
    """Chi-square goodness of fit; the tail bins expecting < ``min_expected`` draws are pooled
    into the outermost bins that expect more (the pmfs here are unimodal, so all others do)."""
    n = draws.size
    expected = n * pmf
    big = np.flatnonzero(expected >= min_expected)
    lo, hi = big[0], big[-1]
    assert (expected[lo:hi + 1] >= min_expected).all()
    exp_bins = expected[lo:hi + 1].copy()
    exp_bins[0] += expected[:lo].sum()
    exp_bins[-1] += expected[hi + 1:].sum()
    obs_bins = np.bincount(np.clip(draws, support[lo], support[hi]) - support[lo], minlength=exp_bins.size)
    assert obs_bins.size == exp_bins.size
    stat = float(((obs_bins - exp_bins) ** 2 / exp_bins).sum())
    return float(stats.chi2.sf(stat, exp_bins.size - 1))


def check_moments(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> None:
    """Mean 0 and the exact variance, within 5 standard errors (the latter from the 4th moment)."""
    y = support.astype(np.float64)
    var = float((y**2 * pmf).sum())
    m4 = float((y**4 * pmf).sum())
    n = draws.size
    x = draws.astype(np.float64)
    assert abs(x.mean()) < 5 * math.sqrt(var / n)
    assert abs((x**2).mean() - var) < 5 * math.sqrt((m4 - var**2) / n)


# ------------------------------------------------------- goodness of fit
@pytest.mark.parametrize("sigma2", [0.3, 1.0, 2.5, 100.0, 1e4 / 3])
def test_discrete_gaussian_fits_exact_pmf(sigma2):
    draws = discrete_gaussian(sigma2, N, random_state=12345)
    support, pmf = gauss_pmf(sigma2)
    assert chisquare_pvalue(draws, support, pmf) > ALPHA
    check_moments(draws, support, pmf)


@pytest.mark.parametrize("scale", [0.4, 1.0, 7.3, 1000 / 3])
def test_discrete_laplace_fits_exact_pmf(scale):
    draws = discrete_laplace(scale, N, random_state=2024)
    support, pmf = laplace_pmf(scale)
    assert chisquare_pvalue(draws, support, pmf) > ALPHA
    check_moments(draws, support, pmf)
    # the closed-form variance 2q/(1-q)² agrees with the pmf used above
    q = math.exp(-1 / scale)
    assert float((support.astype(float) ** 2 * pmf).sum()) == pytest.approx(2 * q / (1 - q) ** 2, rel=1e-9)


def test_other_code_paths_fit():
    """The mid-size-t paths (2^16 < t < 2^32: table + polynomial for exp(-U/t)),
    a Gaussian beyond its acceptance table (floats for large |Y|), dyadic
    scales (s > 1) and a small scale (s = 2^54)."""
    draws = discrete_laplace(100_000.0, N, random_state=3)  # t = 100000, s = 1
    q = math.exp(-1 / 1e5)
    var = 2 * q / (1 - q) ** 2
    assert abs(draws.mean()) < 5 * math.sqrt(var / N)
    # P(|Y| ≥ k) = 2q^k/(1+q) exactly: check a few quantiles of |Y| by binomial tolerances
    for k in (0, 10_000, 50_000, 100_000, 300_000):
        p = 1.0 if k == 0 else 2 * q**k / (1 + q)
        assert abs(np.mean(np.abs(draws) >= k) - p) <= 5 * math.sqrt(p * (1 - p) / N) + 1e-12

    sigma2 = 2.0**34  # σ = 131072: t > 2^16 and |Y| ≥ 2^17 (a third of the draws) fall outside the table
    draws = discrete_gaussian(sigma2, N, random_state=4)
    support, pmf = gauss_pmf(sigma2)
    edges = np.linspace(-4.0, 4.0, 33) * math.sqrt(sigma2)  # coarse bins, probabilities summed exactly
    p_bins = np.bincount(np.searchsorted(edges, support), weights=pmf, minlength=edges.size + 1)
    obs = np.bincount(np.searchsorted(edges, draws), minlength=edges.size + 1)
    assert (N * p_bins >= 5).all()
    stat = float(((obs - N * p_bins) ** 2 / (N * p_bins)).sum())
    assert stats.chi2.sf(stat, p_bins.size - 1) > ALPHA
    check_moments(draws, support, pmf)

    for scale in (0.5, 2.75, 0.2):  # dyadic (t = 1, s = 2; t = 11, s = 4) and s = 2^54
        draws = discrete_laplace(scale, 50_000, random_state=5)
        support, pmf = laplace_pmf(scale)
        assert chisquare_pvalue(draws, support, pmf) > ALPHA


# ------------------------------------------------------------------ power
def test_goodness_of_fit_has_power():
    """A slightly wrong sampler must fail the same check: here σ² off by 20 %, and the
    rounded continuous Gaussian (the floating-point shortcut this module replaces)."""
    support, pmf = gauss_pmf(2.5)
    wrong = discrete_gaussian(2.5 * 1.2, N, random_state=12345)
    assert chisquare_pvalue(wrong, support, pmf) < 1e-10
    support, pmf = gauss_pmf(1.0)
    rounded = np.rint(np.random.default_rng(0).normal(0.0, 1.0, N)).astype(np.int64)
    assert chisquare_pvalue(rounded, support, pmf) < 1e-10
    support, pmf = laplace_pmf(7.3)
    assert chisquare_pvalue(discrete_laplace(7.3 * 1.1, N, random_state=1), support, pmf) < 1e-10


# --------------------------------------------------------------- fallback
@pytest.fixture
def forced_fallback(monkeypatch):
    """Widen every float error bound by 2^31 (and the geometric window) so that a good share of
    all decisions goes to the exact fallback; count the fallback calls."""
    monkeypatch.setattr(samplers, "_ERROR_MARGIN_SCALE", 2.0**35)
    monkeypatch.setattr(samplers, "_GEOMETRIC_SLACK", 2**22)
    calls = {"n": 0}
    original = samplers._LazyUniform.less_exp

    def counting(self, gamma):
        calls["n"] += 1
        return original(self, gamma)

    monkeypatch.setattr(samplers._LazyUniform, "less_exp", counting)
    return calls


@pytest.mark.parametrize("sigma2", [0.3, 2.5, 1e4 / 3])
def test_fallback_path_discrete_gaussian_fits(forced_fallback, sigma2):
    n = 40_000
    draws = discrete_gaussian(sigma2, n, random_state=77)
    assert forced_fallback["n"] > n // 20  # many draws really went through the fallback
    support, pmf = gauss_pmf(sigma2)
    assert chisquare_pvalue(draws, support, pmf) > ALPHA
    check_moments(draws, support, pmf)


@pytest.mark.parametrize("scale", [7.3, 1000 / 3])
def test_fallback_path_discrete_laplace_fits(forced_fallback, scale):
    n = 40_000
    draws = discrete_laplace(scale, n, random_state=78)
    assert forced_fallback["n"] > n // 20
    support, pmf = laplace_pmf(scale)
    assert chisquare_pvalue(draws, support, pmf) > ALPHA


def test_fallback_bernoulli_exp_vectorised(forced_fallback):
    n = 20_000
    hits = bernoulli_exp(np.full(n, 1), 3, random_state=9)
    assert forced_fallback["n"] > n // 50
    p = math.exp(-1 / 3)
    assert abs(hits.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(40)])
def test_exact_scalar_bernoulli_exp(gamma):
    """The fallback alone (no bits of U known yet) is Bernoulli(exp(-γ))."""
    n = 3000
    rng = np.random.default_rng(int(gamma * 3))
    hits = sum(samplers._LazyUniform(0, 0, rng).less_exp(gamma) for _ in range(n))
    p = math.exp(-float(gamma))
    assert abs(hits / n - p) <= 5 * math.sqrt(p * (1 - p) / n)
    if gamma == 0:
        assert hits == n
    if gamma == 40:
        assert hits == 0


def test_fallback_continues_the_same_uniform():
    """Given the first k bits u of U with u/2^k < p < (u+1)/2^k, the fallback must accept with the
    conditional probability p·2^k - u (a fresh Bernoulli(p) would give p)."""
    rng = np.random.default_rng(11)
    n = 4000
    for gamma, k in [(Fraction(1, 3), 4), (Fraction(7, 2), 9), (Fraction(1), 32)]:
        p = math.exp(-float(gamma))
        u = math.floor(p * 2**k)
        cond = p * 2**k - u
        hits = sum(samplers._LazyUniform(u, k, rng).less_exp(gamma) for _ in range(n))
        assert abs(hits / n - cond) <= 5 * math.sqrt(cond * (1 - cond) / n)
        # outside the ambiguous interval the answer is forced
        assert samplers._LazyUniform(u + 1, k, rng).less_exp(gamma) is False
        assert samplers._LazyUniform(u - 1, k, rng).less_exp(gamma) is True


def test_fallback_geometric():
    rng = np.random.default_rng(12)
    n = 3000
    v = np.array([samplers._LazyUniform(0, 0, rng).geometric(1) for _ in range(n)])
    for k in range(4):
        p = math.exp(-k) * (1 - math.exp(-1))
        assert abs(np.mean(v == k) - p) <= 5 * math.sqrt(p * (1 - p) / n)


def test_exp_bracket_is_rigorous():
    for gamma in [Fraction(1, 3), Fraction(10**20 + 1, 10**19), Fraction(2**60 - 1, 2**55)]:
        lo, hi = samplers._exp_neg_bracket(gamma, 40)
        ctx = Context(prec=80)
        exact = ctx.exp(ctx.minus(ctx.divide(Decimal(gamma.numerator), Decimal(gamma.denominator))))
        assert lo < Fraction(exact) < hi
        assert hi - lo < Fraction(1, 10**35)


def test_numpy_exp_accuracy_assumption():
    """The float decisions assume numpy's exp has relative error ≤ 2^-40; check it on this platform."""
    rng = np.random.default_rng(13)
    g = np.concatenate([rng.uniform(0, 1, 500), rng.uniform(0, 50, 500), rng.uniform(0, 700, 500),
                        np.arange(40.0)])
    approx = np.exp(-g)
    ctx = Context(prec=60)  # note: unary minus would round to the default 28 digits; ctx.minus does not
    for gi, ai in zip(g, approx):
        exact = ctx.exp(ctx.minus(Decimal(float(gi))))
        assert abs(Decimal(float(ai)) - exact) <= exact * Decimal(2.0**-45)


# -------------------------------------------------------- bernoulli_exp
def test_bernoulli_exp_edges_and_frequency():
    assert bernoulli_exp(np.zeros(10_000, dtype=np.int64), 1, random_state=0).all()  # γ = 0: p = 1
    assert not bernoulli_exp(np.full(10_000, 10**6), 1, random_state=0).any()       # p = e^-10^6
    assert not bernoulli_exp(np.full(10_000, 2**62), 3, random_state=0).any()       # γ beyond float precision
    assert not bernoulli_exp(40, 1, random_state=0)
    n = 200_000
    for num, den in [(1, 3), (5, 2), (2**60 + 1, 2**60)]:
        p = math.exp(-num / den)
        freq = bernoulli_exp(np.full(n, num, dtype=np.uint64), den, random_state=num % 1000).mean()
        assert abs(freq - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_bernoulli_exp_shapes_and_validation():
    out = bernoulli_exp(np.arange(6).reshape(2, 3), [[1], [2]], random_state=0)
    assert out.shape == (2, 3) and out.dtype == bool
    assert bernoulli_exp([], 1, random_state=0).shape == (0,)
    with pytest.raises(ValueError, match="integers"):
        bernoulli_exp([0.5], 1)
    with pytest.raises(ValueError, match="non-negative"):
        bernoulli_exp([-1], 1)
    with pytest.raises(ValueError, match="positive"):
        bernoulli_exp([1], 0)


# ------------------------------------------ randomness, shapes, validation
@pytest.mark.parametrize("sampler, param", [(discrete_gaussian, 2.5), (discrete_laplace, 7.3),
                                            (discrete_laplace, 1000 / 3)])
def test_seeded_reproducibility_and_os_path(sampler, param):
    a = sampler(param, 1000, random_state=42)
    np.testing.assert_array_equal(a, sampler(param, 1000, random_state=42))
    np.testing.assert_array_equal(a, sampler(param, 1000, random_state=np.random.default_rng(42)))
    assert not np.array_equal(a, sampler(param, 1000, random_state=43))
    rng = np.random.default_rng(5)
    assert not np.array_equal(sampler(param, 1000, random_state=rng), sampler(param, 1000, random_state=rng))
    sampler(param, 10, random_state=np.random.SeedSequence(1))
    sampler(param, 10, random_state=np.random.RandomState(1))
    # None and SystemRandomGenerator read the OS CSPRNG: different draws on every call
    b, c = sampler(param, 1000), sampler(param, 1000, random_state=SystemRandomGenerator())
    assert b.dtype == np.int64 and not np.array_equal(b, c) and not np.array_equal(b, sampler(param, 1000))


def test_os_path_distribution():
    draws = discrete_gaussian(2.5, 50_000)  # unseeded: cannot be a fixed-seed test, so a loose level
    support, pmf = gauss_pmf(2.5)
    assert chisquare_pvalue(draws, support, pmf) > 1e-9


@pytest.mark.parametrize("sampler", [discrete_gaussian, discrete_laplace])
def test_shapes_and_dtype(sampler):
    for size, shape in [(5, (5,)), ((2, 3), (2, 3)), ((), ()), (0, (0,)), ((4, 0), (4, 0)), (np.int64(3), (3,))]:
        out = sampler(1.5, size, random_state=0)
        assert out.shape == shape and out.dtype == np.int64


@pytest.mark.parametrize("sampler, upper", [(discrete_gaussian, 2.0**100), (discrete_laplace, 2.0**52)])
def test_parameter_validation(sampler, upper):
    for bad in [0.0, -1.0, float("nan"), float("inf"), -float("inf"), upper * 2, "x", None]:
        with pytest.raises(ValueError):
            sampler(bad, 3)
    with pytest.raises(ValueError):
        sampler(1.0, -1)
    with pytest.raises(TypeError):
        sampler(1.0, 2.5)
    assert sampler(upper, 3, random_state=0).shape == (3,)


def test_extreme_parameters():
    # σ² tiny: P(Y ≠ 0) ∝ e^{-1/(2σ²)}, so every draw is 0 (through the exact fallback below 2^-400)
    assert not discrete_gaussian(1e-300, 200, random_state=0).any()
    assert not discrete_gaussian(1e-100, 1000, random_state=0).any()
    assert not discrete_laplace(1e-300, 1000, random_state=0).any()
    big = discrete_gaussian(1e24, 20_000, random_state=0).astype(np.float64)
    assert abs(big.std() / 1e12 - 1) < 5 / math.sqrt(2 * 20_000)
