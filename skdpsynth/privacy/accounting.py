"""Privacy accounting: conversions between zCDP, pure ε-DP and (ε, δ)-DP.

Zero-concentrated differential privacy (ρ-zCDP, Bun & Steinke 2016) is the
package's internal currency: it composes by adding ρ, Gaussian noise has an
exact ρ, and pure ε-DP mechanisms embed into it (ε-DP implies ε²/2-zCDP).
A total ρ is turned into an (ε, δ)-DP statement only at the end.

Neighbouring relation
---------------------
Two datasets are neighbours when one is obtained from the other by adding or
removing a single record (unbounded DP). Under this relation a histogram or
marginal (a vector of counts) changes by exactly one in exactly one cell, so
it has L1 and L2 sensitivity 1.
"""
from __future__ import annotations

import functools
import math

__all__ = [
    "cdp_delta",
    "cdp_rho",
    "cdp_epsilon",
    "cdp_epsilon_loose",
    "cdp_rho_loose",
    "pure_to_zcdp",
    "exponential_mechanism_rho",
    "gaussian_rho",
    "gaussian_sigma",
    "laplace_scale",
]


def _check(name: str, value: float, *, strict: bool = True) -> float:
    """Return ``value`` as a float, requiring it finite and > 0 (>= 0 if not strict)."""
    value = float(value)
    if not math.isfinite(value) or value < 0 or (strict and value == 0):
        bound = ">" if strict else ">="
        raise ValueError(f"{name} must be a finite number {bound} 0, got {value}.")
    return value


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if delta == 0:
        raise ValueError(
            "delta=0 cannot be reached from zCDP; for pure epsilon-DP use pure_to_zcdp(epsilon)."
        )
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}.")
    return delta


def _bisect(go_up, lo: float, hi: float) -> tuple[float, float]:
    """Shrink ``[lo, hi]`` until adjacent floats; ``go_up(mid)`` means the root is above mid."""
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return lo, hi
        if go_up(mid):
            lo = mid
        else:
            hi = mid


def cdp_delta(rho: float, epsilon: float) -> float:
    """Tight δ such that ρ-zCDP implies (ε, δ)-DP.

    Uses Canonne, Kamath & Steinke (2020), δ = inf_{α>1} exp((α-1)(αρ-ε)) /
    (α-1) · (1-1/α)^α. The log of the bound is convex in α, so the optimal α
    is found by bisection on the sign of its derivative.

    Parameters
    ----------
    rho : float
        zCDP parameter, ``rho >= 0``.
    epsilon : float
        Target ε, ``epsilon >= 0``.

    Returns
    -------
    float
        δ in [0, 1].

    Examples
    --------
    >>> from skdpsynth.privacy import cdp_delta
    >>> round(cdp_delta(0.5, 3.0), 6)
    0.005143
    >>> cdp_delta(0.0, 1.0)
    0.0
    """
    rho = _check("rho", rho, strict=False)
    epsilon = _check("epsilon", epsilon, strict=False)
    if rho == 0:
        return 0.0

    # Work with x = α - 1 = exp(t): α may sit extremely close to 1 (large ρ)
    # or be huge (tiny ρ); log1p(1/x) = log(α) - log(α - 1) avoids cancellation.
    def slope(t: float) -> float:  # d/dα of the log-bound; increasing in t
        x = math.exp(t)
        return (1.0 + 2.0 * x) * rho - epsilon - math.log1p(math.exp(-t))

    # At α_max = (ε+1)/(2ρ) + 2 the slope is positive, so the optimum is below it.
    t_max = math.log((epsilon + 1.0) / (2.0 * rho) + 1.0)
    t_lo, t_hi = _bisect(lambda t: slope(t) < 0, -700.0, t_max)
    x = math.exp(0.5 * (t_lo + t_hi))
    log_delta = x * ((1.0 + x) * rho - epsilon) - x * math.log1p(1.0 / x) - math.log1p(x)
    return min(max(math.exp(min(log_delta, 0.0)), 0.0), 1.0)


def cdp_rho(epsilon: float, delta: float) -> float:
    """Largest ρ such that ρ-zCDP implies (ε, δ)-DP (inverse of :func:`cdp_delta`).

    Parameters
    ----------
    epsilon : float
        Target ε > 0.
    delta : float
        Target δ in (0, 1). ``delta=0`` raises: use :func:`pure_to_zcdp`.

    Returns
    -------
    float

    Examples
    --------
    >>> from skdpsynth.privacy import cdp_rho
    >>> round(cdp_rho(1.0, 1e-9), 10)
    0.0149730577
    """
    return _cdp_rho(_check("epsilon", epsilon), _check_delta(delta))


# The two conversions by bisection are pure functions of two floats that every fit asks for a few times (a
# thousand-odd evaluations of cdp_delta each); they are cached by value.
@functools.lru_cache(maxsize=4096)
def _cdp_rho(epsilon: float, delta: float) -> float:
    lo, hi = 0.0, epsilon + 1.0
    while cdp_delta(hi, epsilon) <= delta:  # δ(ρ) -> 1 as ρ grows, so this ends
        lo, hi = hi, 2.0 * hi
    # cdp_delta is increasing in ρ; keep lo feasible so the answer is conservative.
    lo, _ = _bisect(lambda r: cdp_delta(r, epsilon) <= delta, lo, hi)
    return lo


def cdp_epsilon(rho: float, delta: float) -> float:
    """Smallest ε such that ρ-zCDP implies (ε, δ)-DP (inverse of :func:`cdp_rho`).

    Parameters
    ----------
    rho : float
        zCDP parameter, ``rho >= 0``.
    delta : float
        Target δ in (0, 1).

    Returns
    -------
    float

    Examples
    --------
    >>> from skdpsynth.privacy import cdp_epsilon, cdp_rho
    >>> round(cdp_epsilon(cdp_rho(1.0, 1e-6), 1e-6), 9)
    1.0
    """
    return _cdp_epsilon(_check("rho", rho, strict=False), _check_delta(delta))


@functools.lru_cache(maxsize=4096)
def _cdp_epsilon(rho: float, delta: float) -> float:
    if rho == 0 or cdp_delta(rho, 0.0) <= delta:
        return 0.0
    hi = cdp_epsilon_loose(rho, delta)  # the loose bound is always achievable
    while cdp_delta(rho, hi) > delta:  # defensive: never expected to run
        hi *= 2.0
    # cdp_delta is decreasing in ε; keep hi feasible so the answer is conservative.
    _, hi = _bisect(lambda e: cdp_delta(rho, e) > delta, 0.0, hi)
    return hi


def cdp_epsilon_loose(rho: float, delta: float) -> float:
    """Loose conversion ε = ρ + 2√(ρ log(1/δ)) (Bun & Steinke 2016, Prop. 1.3).

    Examples
    --------
    >>> from skdpsynth.privacy import cdp_epsilon_loose
    >>> round(cdp_epsilon_loose(0.5, 1e-6), 6)
    5.756522
    """
    rho = _check("rho", rho, strict=False)
    delta = _check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def cdp_rho_loose(epsilon: float, delta: float) -> float:
    """Exact inverse of :func:`cdp_epsilon_loose` in ρ.

    Solves s² + 2s√L - ε = 0 for s = √ρ with L = log(1/δ), written as
    s = ε / (√(L+ε) + √L) to avoid cancellation.

    Examples
    --------
    >>> from skdpsynth.privacy import cdp_rho_loose
    >>> round(cdp_rho_loose(1.0, 1e-9), 10)
    0.0117811604
    """
    epsilon = _check("epsilon", epsilon, strict=False)
    log_inv = math.log(1.0 / _check_delta(delta))
    s = epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))
    return s * s


def pure_to_zcdp(epsilon: float) -> float:
    """ρ = ε²/2: an ε-DP mechanism is ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4).

    Examples
    --------
    >>> from skdpsynth.privacy import pure_to_zcdp
    >>> pure_to_zcdp(1.0)
    0.5
    """
    return _check("epsilon", epsilon, strict=False) ** 2 / 2.0


def exponential_mechanism_rho(epsilon: float) -> float:
    """ρ = ε²/8 for the ε-exponential mechanism (bounded range; Cesar & Rogers 2021).

    Examples
    --------
    >>> from skdpsynth.privacy import exponential_mechanism_rho
    >>> exponential_mechanism_rho(2.0)
    0.5
    """
    return _check("epsilon", epsilon, strict=False) ** 2 / 8.0


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """ρ = Δ²/(2σ²) of the Gaussian mechanism with L2 sensitivity Δ.

    Examples
    --------
    >>> from skdpsynth.privacy import gaussian_rho
    >>> gaussian_rho(1.0)
    0.5
    """
    return _check("sensitivity", sensitivity) ** 2 / (2.0 * _check("sigma", sigma) ** 2)


def gaussian_sigma(rho: float, sensitivity: float = 1.0) -> float:
    """σ = Δ/√(2ρ): the Gaussian noise scale that costs exactly ρ.

    Examples
    --------
    >>> from skdpsynth.privacy import gaussian_sigma
    >>> gaussian_sigma(0.5)
    1.0
    """
    return _check("sensitivity", sensitivity) / math.sqrt(2.0 * _check("rho", rho))


def laplace_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """b = Δ/ε: the Laplace scale giving ε-DP for L1 sensitivity Δ.

    Examples
    --------
    >>> from skdpsynth.privacy import laplace_scale
    >>> laplace_scale(0.5)
    2.0
    """
    return _check("sensitivity", sensitivity) / _check("epsilon", epsilon)
