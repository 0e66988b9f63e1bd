from __future__ import annotations

import math

import numpy as np
import pytest

from skdpsynth.privacy import (
    PrivacyLedger,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    gaussian_mechanism,
    laplace_mechanism,
    lazy_exponential_mechanism,
)

N = 200_000


# ---------------------------------------------------------------- Gaussian
def test_gaussian_noise_distribution():
    sigma = 3.0
    noisy = gaussian_mechanism(np.zeros(N), sigma=sigma, random_state=0)
    # SE of the sample std of a normal is about sigma / sqrt(2n).
    assert abs(noisy.std(ddof=1) - sigma) < 4 * sigma / math.sqrt(2 * N)
    assert abs(noisy.mean()) < 4 * sigma / math.sqrt(N)


def test_gaussian_shape_dtype_and_reproducibility():
    values = np.arange(6, dtype=np.int64).reshape(2, 3)
    a = gaussian_mechanism(values, sigma=1.0, random_state=1)
    b = gaussian_mechanism(values, sigma=1.0, random_state=1)
    assert a.shape == (2, 3) and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, values)
    np.testing.assert_array_equal(values, np.arange(6).reshape(2, 3))  # input untouched
    rng = np.random.default_rng(5)
    first = gaussian_mechanism(values, sigma=1.0, random_state=rng)
    second = gaussian_mechanism(values, sigma=1.0, random_state=rng)
    assert not np.array_equal(first, second)  # a Generator is advanced, not reseeded


def test_gaussian_rho_sigma_conversion_and_ledger():
    ledger = PrivacyLedger()
    gaussian_mechanism([1.0, 2.0], rho=0.5, sensitivity=2.0, random_state=0, ledger=ledger,
                       description="counts", party="A")
    (entry,) = ledger.entries
    assert entry.accounting == "zcdp" and entry.mechanism == "discrete gaussian"  # integer values: exact noise
    assert entry.rho == 0.5
    assert entry.scale == pytest.approx(2.0 / math.sqrt(2 * 0.5))
    assert (entry.sensitivity, entry.party, entry.n_values) == (2.0, "A", 2)
    assert entry.description == "counts"

    gaussian_mechanism(np.zeros((4, 5)), sigma=3.0, sensitivity=1.5, random_state=0, ledger=ledger)
    entry = ledger.entries[-1]
    assert entry.rho == pytest.approx(1.5**2 / (2 * 9.0))
    assert entry.scale == 3.0 and entry.n_values == 20


def test_gaussian_rho_sets_noise_level():
    # rho = 1/(2 sigma^2) for unit sensitivity: rho = 1/18 must give sigma = 3.
    noisy = gaussian_mechanism(np.zeros(N), rho=1 / 18, random_state=2)
    assert abs(noisy.std(ddof=1) - 3.0) < 4 * 3.0 / math.sqrt(2 * N)


@pytest.mark.parametrize("kwargs", [{}, {"sigma": 1.0, "rho": 0.5}, {"sigma": 0.0}, {"rho": -1.0},
                                    {"sigma": 1.0, "sensitivity": 0.0}])
def test_gaussian_argument_validation(kwargs):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError):
        gaussian_mechanism([0.0], ledger=ledger, **kwargs)
    assert len(ledger) == 0


# ----------------------------------------------------------------- Laplace
def test_laplace_noise_distribution_and_ledger():
    epsilon, sensitivity = 0.5, 2.0
    b = sensitivity / epsilon
    ledger = PrivacyLedger()
    noisy = laplace_mechanism(np.zeros(N), epsilon=epsilon, sensitivity=sensitivity,
                              random_state=3, ledger=ledger, description="sums", noise="continuous")
    # |X| ~ Exponential(mean b, sd b), so the mean absolute deviation has SE b/sqrt(n).
    assert abs(np.abs(noisy).mean() - b) < 4 * b / math.sqrt(N)
    # Var X = 2b^2; SE of the sample variance is sqrt((mu4 - sigma^4)/n), mu4 = 24 b^4.
    assert abs(noisy.var(ddof=1) - 2 * b**2) < 4 * math.sqrt(20 * b**4 / N)
    (entry,) = ledger.entries
    assert (entry.accounting, entry.mechanism) == ("pure", "laplace")
    assert (entry.epsilon, entry.scale) == (0.5, 4.0)
    assert entry.rho is None and entry.n_values == N and entry.sensitivity == 2.0


def test_laplace_scale_argument():
    ledger = PrivacyLedger()
    out = laplace_mechanism([[1, 2], [3, 4]], scale=4.0, sensitivity=2.0, random_state=0,
                            ledger=ledger)
    assert out.shape == (2, 2) and out.dtype == np.float64
    assert ledger.total_epsilon() == pytest.approx(0.5)


@pytest.mark.parametrize(
    "kwargs", [{}, {"epsilon": 1.0, "scale": 1.0}, {"epsilon": 0.0}, {"scale": -2.0}]
)
def test_laplace_argument_validation(kwargs):
    with pytest.raises(ValueError):
        laplace_mechanism([0.0], **kwargs)


# ------------------------------------------------------------- Exponential
@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_probabilities_formula(monotonic):
    scores = np.array([1.0, 2.0, 3.0, 0.0, -2.5])
    epsilon, sensitivity = 1.3, 0.5
    factor = epsilon / sensitivity if monotonic else epsilon / (2 * sensitivity)
    expected = np.exp(factor * scores) / np.exp(factor * scores).sum()
    probs = exponential_mechanism_probabilities(scores, epsilon, sensitivity, monotonic=monotonic)
    np.testing.assert_allclose(probs, expected, rtol=1e-12)


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_selection_frequencies(monotonic):
    scores = np.array([0.0, 1.0, 2.0, -np.inf, 1.5])
    epsilon, n = 1.0, 100_000
    probs = exponential_mechanism_probabilities(scores, epsilon, monotonic=monotonic)
    rng = np.random.default_rng(4)
    draws = [exponential_mechanism(scores, epsilon=epsilon, monotonic=monotonic, random_state=rng)
             for _ in range(n)]
    freqs = np.bincount(draws, minlength=len(scores)) / n
    assert freqs[3] == 0.0  # -inf is never selected
    se = np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(freqs - probs) <= 4 * se)


def test_exponential_stable_with_huge_scores():
    scores = np.array([1e6, 1e6 - 2.0, -1e6, 0.0])
    probs = exponential_mechanism_probabilities(scores, epsilon=1.0)
    assert np.all(np.isfinite(probs)) and probs.sum() == pytest.approx(1.0)
    # Only score differences matter: p1/p0 = exp(eps * (-2) / 2).
    assert probs[1] / probs[0] == pytest.approx(math.exp(-1.0), rel=1e-12)
    assert probs[2] == 0.0 and probs[3] == 0.0
    picks = {exponential_mechanism(scores, epsilon=1.0, random_state=s) for s in range(200)}
    assert picks == {0, 1}


def _random_scores_and_bounds(rng, max_candidates: int, spread: float, slack: float):
    """A random selection problem: scores (a fifth -inf, at least one finite) and valid upper bounds."""
    m = int(rng.integers(1, max_candidates))
    scores = rng.normal(0, spread, m)
    scores[rng.random(m) < 0.2] = -np.inf
    if not np.isfinite(scores).any():
        scores[0] = 0.0
    bounds = np.where(np.isfinite(scores), scores + rng.exponential(slack, m), rng.normal(0, spread, m))
    return m, scores, bounds


def test_lazy_exponential_makes_the_same_choice_as_the_exact_one():
    """Same Gumbel draws, any valid bounds: the lazy mechanism selects what the exact one selects."""
    rng = np.random.default_rng(5)
    for seed in range(300):
        m, scores, bounds = _random_scores_and_bounds(rng, max_candidates=40, spread=10, slack=20)
        asked = []

        def score(i):
            asked.append(i)
            return scores[i]
        epsilon, monotonic = float(rng.uniform(0.1, 5)), bool(seed % 2)
        exact = exponential_mechanism(scores, epsilon=epsilon, monotonic=monotonic, random_state=seed)
        lazy = lazy_exponential_mechanism(bounds, score, epsilon=epsilon, monotonic=monotonic, random_state=seed)
        assert lazy == exact and exact in asked and len(set(asked)) == len(asked)
        # Eligibility asked separately (only of would-be winners) is the same as a score of -inf.
        fits = rng.random(m) < 0.7
        fits[exact] = True
        checked = []

        def eligible(i):
            checked.append(i)
            return bool(fits[i])
        exact = exponential_mechanism(np.where(fits, scores, -np.inf), epsilon=epsilon, monotonic=monotonic,
                                      random_state=seed)
        asked.clear()
        lazy = lazy_exponential_mechanism(bounds, score, epsilon=epsilon, monotonic=monotonic, random_state=seed,
                                          eligible=eligible)
        assert lazy == exact and set(checked) <= set(asked)


@pytest.mark.parametrize("workers", [2, 3])
def test_lazy_exponential_in_threads_makes_the_same_choice(workers):
    """Scores finishing out of order (random sleeps): same choice as one by one, and a superset of its scores."""
    import threading
    import time

    rng = np.random.default_rng(11)
    for seed in range(60):
        m, scores, bounds = _random_scores_and_bounds(rng, max_candidates=30, spread=3, slack=3)
        delays = rng.uniform(0, 2e-3, m)
        fits = rng.random(m) < 0.8
        lock, asked = threading.Lock(), {1: [], workers: []}

        def run(w):
            def score(i):
                time.sleep(delays[i])
                with lock:
                    asked[w].append(i)
                return scores[i]
            return lazy_exponential_mechanism(bounds, score, epsilon=1.0, random_state=seed, workers=w,
                                              eligible=lambda i: bool(fits[i]))
        if not fits[np.isfinite(scores)].any():
            continue
        one, many = run(1), run(workers)
        assert many == one and fits[one]
        assert set(asked[1]) <= set(asked[workers]) and len(set(asked[workers])) == len(asked[workers])


def test_lazy_exponential_scores_only_what_can_win():
    # 10,000 candidates with scores spread over 2 units of ε/2 against Gumbel noise: a handful are scored.
    scores = np.linspace(0.0, 4.0, 10_000)
    asked = []
    ledger = PrivacyLedger()
    i = lazy_exponential_mechanism(scores + 4.0, lambda i: asked.append(i) or scores[i], epsilon=1.0,
                                   random_state=0, ledger=ledger, description="pick")
    assert 1 <= len(asked) < 200 and i in asked
    assert ledger.total_rho() == pytest.approx(1 / 8) and ledger.entries[0].mechanism == "exponential"


def test_lazy_exponential_rejects_scores_above_their_bound():
    with pytest.raises(ValueError, match="upper bound"):
        lazy_exponential_mechanism([1.0, 1.0], lambda i: 2.0, epsilon=1.0, random_state=0)
    with pytest.raises(ValueError, match="nothing can be selected"):
        lazy_exponential_mechanism([1.0, 1.0], lambda i: -np.inf, epsilon=1.0, random_state=0)


@pytest.mark.parametrize(
    "scores", [[-np.inf, -np.inf], [1.0, np.nan], [np.inf, 0.0], [], [[1.0, 2.0]]]
)
def test_exponential_invalid_scores(scores):
    with pytest.raises(ValueError):
        exponential_mechanism(scores, epsilon=1.0, random_state=0)
    with pytest.raises(ValueError):
        exponential_mechanism_probabilities(scores, epsilon=1.0)


def test_exponential_invalid_epsilon():
    with pytest.raises(ValueError):
        exponential_mechanism([1.0, 2.0], epsilon=0.0)


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_ledger_entry(monotonic):
    ledger = PrivacyLedger()
    idx = exponential_mechanism([3.0, 1.0, 2.0], epsilon=0.8, sensitivity=2.0, monotonic=monotonic,
                                random_state=0, ledger=ledger, description="pick", party="B")
    assert idx in (0, 1, 2)
    (entry,) = ledger.entries
    assert entry.accounting == "zcdp" and entry.mechanism == "exponential"
    assert entry.rho == pytest.approx(0.8**2 / 8)
    assert (entry.scale, entry.sensitivity, entry.party, entry.n_values) == (0.8, 2.0, "B", 3)
    assert entry.details["monotonic"] is monotonic


# ------------------------------------------------------------ discrete noise
def test_counts_get_exact_discrete_noise_by_default():
    ledger = PrivacyLedger()
    counts = np.arange(12.0).reshape(3, 4)
    g = gaussian_mechanism(counts, rho=0.5, random_state=0, ledger=ledger)
    lap = laplace_mechanism(counts, epsilon=1.0, random_state=0, ledger=ledger)
    assert g.dtype == lap.dtype == np.float64 and g.shape == lap.shape == (3, 4)
    assert (g == g.round()).all() and (lap == lap.round()).all()  # integers: no float low bits to leak
    assert [e.mechanism for e in ledger] == ["discrete gaussian", "discrete laplace"]
    assert [e.rho for e in ledger][0] == 0.5 and ledger.entries[1].epsilon == 1.0  # the same costs
    # The discrete Laplace of scale b: E|X| = 2p / (1 - p^2) with p = exp(-1/b).
    b, n = 4.0, N
    noisy = laplace_mechanism(np.zeros(n), scale=b, random_state=5)
    p = math.exp(-1 / b)
    mean_abs, var_abs = 2 * p / (1 - p * p), 2 * p * (1 + p * p) / (1 - p * p) ** 2  # E|X| and Var|X|
    assert abs(np.abs(noisy).mean() - mean_abs) < 5 * math.sqrt(var_abs / n)


def test_noise_choice():
    from skdpsynth.privacy import get_noise, noise_context

    assert get_noise() == "discrete"
    real = np.array([0.5, 1.25])
    out = gaussian_mechanism(real, rho=0.5, random_state=0)  # not counts: continuous noise (the only option)
    assert not (out == out.round()).all()
    with pytest.raises(ValueError, match="needs integer values"):
        gaussian_mechanism(real, rho=0.5, noise="discrete")
    with pytest.raises(ValueError, match="noise must be one of"):
        laplace_mechanism([1.0], epsilon=1.0, noise="exact")
    ledger = PrivacyLedger()
    with noise_context("continuous"):
        laplace_mechanism([3.0, 4.0], epsilon=1.0, random_state=0, ledger=ledger)
    assert ledger.entries[0].mechanism == "laplace" and get_noise() == "discrete"
    # Seeded discrete noise is reproducible; unseeded draws from the OS CSPRNG differ call to call.
    a, b = (gaussian_mechanism(np.zeros(50), rho=0.01, random_state=7) for _ in range(2))
    assert (a == b).all()
    c, d = (gaussian_mechanism(np.zeros(50), rho=0.01) for _ in range(2))
    assert not (c == d).all()
