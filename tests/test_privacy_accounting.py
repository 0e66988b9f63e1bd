from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from skdpsynth.privacy import (
    cdp_delta,
    cdp_epsilon,
    cdp_epsilon_loose,
    cdp_rho,
    cdp_rho_loose,
    exponential_mechanism_rho,
    gaussian_rho,
    gaussian_sigma,
    laplace_scale,
    pure_to_zcdp,
)

EPSILONS = [1e-3, 0.1, 0.5, 1.0, 3.0, 10.0, 50.0]
DELTAS = [1e-12, 1e-9, 1e-6, 1e-3, 0.1, 0.5]
GRID = [(e, d) for e in EPSILONS for d in DELTAS]


@pytest.mark.parametrize(
    "epsilon, delta, expected",
    [(1.0, 1e-9, 0.0149730577), (0.1, 1e-9, 0.000177138447), (10.0, 1e-9, 1.09078570)],
)
def test_cdp_rho_known_values(epsilon, delta, expected):
    # Reference values are given to 9 significant digits.
    assert cdp_rho(epsilon, delta) == pytest.approx(expected, rel=1e-8)


def test_cdp_rho_loose_known_value_and_inverse():
    assert cdp_rho_loose(1.0, 1e-9) == pytest.approx(0.0117811604, rel=1e-8)
    for epsilon, delta in GRID:
        rho = cdp_rho_loose(epsilon, delta)
        assert cdp_epsilon_loose(rho, delta) == pytest.approx(epsilon, rel=1e-12)


def _log_bound(alpha, rho, epsilon):
    # log of exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a, written naively.
    return (alpha - 1) * (alpha * rho - epsilon) - np.log(alpha - 1) + alpha * np.log(1 - 1 / alpha)


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.3, 2.0])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_cdp_delta_matches_direct_minimisation(rho, epsilon):
    res = minimize_scalar(lambda t: _log_bound(1 + np.exp(t), rho, epsilon),
                          bounds=(-30, 30), method="bounded", options={"xatol": 1e-10})
    expected = min(math.exp(res.fun), 1.0)
    assert cdp_delta(rho, epsilon) == pytest.approx(expected, rel=1e-7)
    # It is an infimum: never above the bound at any particular alpha (nor above 1).
    for alpha in [1.01, 1.5, 2.0, 10.0, 1e3]:
        bound = math.exp(min(_log_bound(alpha, rho, epsilon), 0.0))
        assert cdp_delta(rho, epsilon) <= bound * (1 + 1e-12)


def test_cdp_delta_edge_cases():
    assert cdp_delta(0.0, 1.0) == 0.0
    assert cdp_delta(1e-30, 1.0) == 0.0
    big = cdp_delta(100.0, 1.0)
    assert 0.99 < big <= 1.0  # delta -> 1 as rho -> inf, never above 1
    assert 0.0 < cdp_delta(0.5, 0.0) <= 1.0


@pytest.mark.parametrize("epsilon, delta", GRID)
def test_round_trips(epsilon, delta):
    rho = cdp_rho(epsilon, delta)
    assert cdp_epsilon(rho, delta) == pytest.approx(epsilon, rel=1e-8)
    # rho is feasible (conservative) and tight: a bit more rho breaks delta.
    achieved = cdp_delta(rho, epsilon)
    assert achieved <= delta
    assert achieved == pytest.approx(delta, rel=1e-6)
    assert cdp_delta(rho * (1 + 1e-6), epsilon) > delta


@pytest.mark.parametrize("epsilon, delta", GRID)
def test_tight_conversion_beats_loose(epsilon, delta):
    assert cdp_rho(epsilon, delta) >= cdp_rho_loose(epsilon, delta)
    rho = cdp_rho_loose(epsilon, delta)
    assert cdp_epsilon(rho, delta) <= epsilon * (1 + 1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)  # the same 40 examples on every run
@given(rho=st.floats(1e-6, 20.0), delta=st.floats(1e-12, 0.5))
def test_cdp_epsilon_is_smallest_feasible(rho, delta):
    epsilon = cdp_epsilon(rho, delta)
    assert cdp_delta(rho, epsilon) <= delta
    if epsilon > 0:
        assert cdp_delta(rho, epsilon * (1 - 1e-6)) > delta


def test_monotonicity():
    for delta in DELTAS:
        rhos = [cdp_rho(e, delta) for e in EPSILONS]
        assert np.all(np.diff(rhos) > 0)
    for epsilon in EPSILONS:
        rhos = [cdp_rho(epsilon, d) for d in DELTAS]
        assert np.all(np.diff(rhos) > 0)
    rho_grid = [1e-4, 1e-2, 0.1, 1.0, 10.0]
    assert np.all(np.diff([cdp_delta(r, 1.0) for r in rho_grid]) > 0)
    assert np.all(np.diff([cdp_delta(0.1, e) for e in EPSILONS]) < 0)
    assert np.all(np.diff([cdp_epsilon(r, 1e-6) for r in rho_grid]) > 0)
    assert np.all(np.diff([cdp_epsilon(0.1, d) for d in DELTAS]) < 0)


def test_simple_conversions():
    assert pure_to_zcdp(2.0) == 2.0
    assert exponential_mechanism_rho(2.0) == 0.5
    assert gaussian_rho(2.0, sensitivity=3.0) == pytest.approx(9 / 8)
    assert gaussian_sigma(9 / 8, sensitivity=3.0) == pytest.approx(2.0)
    for rho in [1e-3, 0.5, 7.0]:
        assert gaussian_rho(gaussian_sigma(rho, 2.0), 2.0) == pytest.approx(rho, rel=1e-14)
    assert laplace_scale(0.5, sensitivity=2.0) == 4.0
    assert cdp_epsilon(0.0, 1e-6) == 0.0


@pytest.mark.parametrize(
    "func, args",
    [
        (cdp_rho, (0.0, 1e-6)),
        (cdp_rho, (-1.0, 1e-6)),
        (cdp_rho, (float("nan"), 1e-6)),
        (cdp_rho, (float("inf"), 1e-6)),
        (cdp_rho, (1.0, 1.0)),
        (cdp_rho, (1.0, -0.1)),
        (cdp_rho, (1.0, 1.5)),
        (cdp_epsilon, (-0.1, 1e-6)),
        (cdp_epsilon, (0.1, 0.0)),
        (cdp_epsilon, (0.1, 1.0)),
        (cdp_delta, (-0.1, 1.0)),
        (cdp_delta, (0.1, -1.0)),
        (cdp_rho_loose, (1.0, 0.0)),
        (cdp_epsilon_loose, (0.1, 2.0)),
        (gaussian_sigma, (0.0,)),
        (gaussian_rho, (0.0,)),
        (gaussian_rho, (1.0, -1.0)),
        (laplace_scale, (0.0,)),
        (pure_to_zcdp, (-1.0,)),
    ],
)
def test_input_validation(func, args):
    with pytest.raises(ValueError):
        func(*args)


def test_delta_zero_points_to_pure_conversion():
    with pytest.raises(ValueError, match="pure_to_zcdp"):
        cdp_rho(1.0, 0.0)
