"""The GRR frequency oracle of the VertiMRF-FO baseline (FO LocEnc and FO CarEst).

The FO variant is the extended version's §4.2 (with its Theorem 1) and
KDD'24's App. B; ``doc/deviations.md`` lists where this module departs from
them.

* GRR (Wang et al. SIGMOD'19): :func:`grr_probabilities`,
  :func:`grr_perturb` (FO LocEnc of one column: keep the value with
  probability p = e^{ε′}/(e^{ε′}+u−1), else report a uniformly random other
  value, each with q = 1/(e^{ε′}+u−1)), :func:`grr_transition_matrix` and
  its closed-form inverse :func:`grr_inverse`.
* FO CarEst: :func:`fo_marginal` counts the noisy tuples of l aligned
  perturbed columns and applies P^{−1} = ⊗_i P_i^{−1} axis by axis (never the
  (∏u)×(∏u) matrix); unbiased before the final clip at 0
  (``doc/deviations.md``, "Clamping CarEst cells at zero").
* Accounting (``doc/deviations.md``, "Frequency-oracle accounting"):
  :func:`fo_epsilon_prime` (``"conservative"`` default,
  ``"paper"`` for reproduction) and :func:`fo_theorem1_epsilon`.

**The record count leaks.**  FO LocEnc sends every record's perturbed row,
aligned across parties, so the server learns the exact number of records n
(the length of the columns; GRR hides values, not presence).  Under the
add/remove-one-individual neighbouring relation of this package
(``doc/deviations.md``, "Add or remove one person") that is *not*
differentially private for any ε: n and n+1 give
disjoint output spaces.  The per-record guarantee of GRR holds only for
replace-one neighbours (a record's values change, n does not).  This module
only computes; the synthesizer that runs the FO variant must record the
release of n as a leak in its privacy ledger
(:meth:`~skdpsynth.privacy.PrivacyLedger.add_leak`).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ...privacy.randomness import noise_generator

__all__ = [
    "grr_probabilities",
    "grr_transition_matrix",
    "grr_inverse",
    "grr_perturb",
    "fo_marginal",
    "fo_epsilon_prime",
    "fo_theorem1_epsilon",
]

_ACCOUNTING = ("conservative", "paper")


# ----------------------------------------------------------------------------------------------------------------------
# Validation helpers
# ----------------------------------------------------------------------------------------------------------------------
def _check_epsilon(epsilon, name: str = "epsilon") -> float:
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive finite number, got {epsilon!r}") from None
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"{name} must be a positive finite number, got {epsilon!r}")
    return eps


def _check_size(size, name: str = "size") -> int:
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) or int(size) < 1:
        raise ValueError(f"{name} must be a positive int, got {size!r}")
    return int(size)


def _check_delta(delta) -> float:
    try:
        dl = float(delta)
    except (TypeError, ValueError):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}") from None
    if not (0.0 < dl < 1.0):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return dl


def _check_codes(codes, size: int, name: str = "codes") -> np.ndarray:
    c = np.asarray(codes)
    if c.ndim != 1 or not (np.issubdtype(c.dtype, np.integer) or c.size == 0):
        raise ValueError(f"{name} must be a 1-d integer array")
    c = c.astype(np.int64, copy=False)
    if c.size and (c.min() < 0 or c.max() >= size):
        raise ValueError(f"{name} must lie in [0, {size})")
    return c


def _grr(epsilon: float, size: int) -> tuple[float, float, float]:
    """(p, q, p − q) computed without overflow: divide numerator and denominator by e^{ε′}."""
    r = math.exp(-epsilon)  # e^{−ε′} ∈ (0, 1); no overflow for huge ε′
    denom = 1.0 + (size - 1) * r  # (e^{ε′} + u − 1)/e^{ε′}
    return 1.0 / denom, r / denom, -math.expm1(-epsilon) / denom


# ----------------------------------------------------------------------------------------------------------------------
# GRR
# ----------------------------------------------------------------------------------------------------------------------
def grr_probabilities(epsilon: float, size: int) -> tuple[float, float]:
    """(p, q) = (e^{ε′}/(e^{ε′}+u−1), 1/(e^{ε′}+u−1)) of GRR on a domain of size u.

    p is the probability of reporting the true value, q that of each other
    value; p + (u−1)q = 1 and p/q = e^{ε′}.  Computed as 1/(1 + (u−1)e^{−ε′})
    and e^{−ε′}/(1 + (u−1)e^{−ε′}), which do not overflow for large ε′.

    Examples
    --------
    >>> import math
    >>> from skdpsynth.synthesizers.vertical_mrf.frequency_oracle import grr_probabilities
    >>> p, q = grr_probabilities(math.log(3), 4)   # e^ε′ = 3
    >>> round(p, 12), round(q, 12)
    (0.5, 0.166666666667)
    """
    p, q, _ = _grr(_check_epsilon(epsilon), _check_size(size))
    return p, q


def grr_transition_matrix(size: int, epsilon: float) -> np.ndarray:
    """P = (p − q)I + qJ: P[v′, v] = Pr[report v′ | true v], so E[noisy counts] = P · counts.

    Examples
    --------
    >>> import math
    >>> from skdpsynth.synthesizers.vertical_mrf.frequency_oracle import grr_transition_matrix
    >>> grr_transition_matrix(3, math.log(2)).round(6).tolist()
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]
    """
    size = _check_size(size)
    _, q, pq = _grr(_check_epsilon(epsilon), size)
    return pq * np.eye(size) + q


def grr_inverse(size: int, epsilon: float) -> np.ndarray:
    """The closed-form inverse P^{−1} = (I − qJ)/(p − q) of GRR's transition matrix (as p + (u − 1)q = 1).

    Since p + (u−1)q = 1, J² = uJ gives ((p−q)I + qJ)(I − qJ) = (p−q)I +
    q(1 − (p−q) − uq)J = (p−q)I.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.frequency_oracle import grr_inverse, grr_transition_matrix
    >>> bool(np.allclose(grr_inverse(5, 0.7) @ grr_transition_matrix(5, 0.7), np.eye(5)))
    True
    """
    size = _check_size(size)
    _, q, pq = _grr(_check_epsilon(epsilon), size)
    return (np.eye(size) - q) / pq


def grr_perturb(codes: ArrayLike, size: int, epsilon: float, random_state=None) -> np.ndarray:
    """GRR of one column of 0-based codes (FO LocEnc), ε′-LDP per value; vectorised.

    Each code is kept with probability p (:func:`grr_probabilities`);
    otherwise it is replaced by r + [r ≥ v] with r uniform on {0, …, u−2},
    i.e. by a uniformly random *other* value.  The keep decision compares a
    53-bit uniform with p, so the keep probability is p rounded up to a
    multiple of 2^{−53}; the replacement draw is exact.

    Parameters
    ----------
    codes : array-like of int, shape (n,)
        True codes in [0, size).
    size : int
        Public domain size u; for u = 1 the codes are returned unchanged.
    epsilon : float
        The GRR ε′ (:func:`fo_epsilon_prime`).
    random_state : None, int, numpy.random.Generator, ...
        Source of the perturbation (:func:`~skdpsynth.privacy.randomness.noise_generator`);
        ``None`` (default, for releases): OS entropy.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.frequency_oracle import grr_perturb
    >>> codes = np.array([0, 1, 2, 3] * 5)
    >>> out = grr_perturb(codes, 4, 1.0, random_state=0)
    >>> out.shape, out.dtype, bool(((out >= 0) & (out < 4)).all())
    ((20,), dtype('int64'), True)
    >>> bool((grr_perturb(codes, 4, 50.0, random_state=0) == codes).all())   # p = 1 - 3e^-50
    True
    """
    size = _check_size(size)
    eps = _check_epsilon(epsilon)
    c = _check_codes(codes, size)
    if size == 1:
        return c.copy()
    p, _, _ = _grr(eps, size)
    rng = noise_generator(random_state)
    keep = rng.random(c.shape[0]) < p
    r = rng.integers(0, size - 1, size=c.shape[0], dtype=np.int64)  # uniform on {0..u−2}
    other = r + (r >= c)  # skip the true value: uniform on the u−1 others
    return np.where(keep, c, other)


# ----------------------------------------------------------------------------------------------------------------------
# FO CarEst
# ----------------------------------------------------------------------------------------------------------------------
def fo_marginal(perturbed: Sequence[ArrayLike], sizes: Sequence[int], epsilons: Sequence[float] | float, *,
                clip: bool = True) -> np.ndarray:
    """FO CarEst: P^{−1} applied to the counts of the aligned perturbed tuples, clipped at 0.

    T̂ = ⊗_i P_i^{−1} · counts, applied axis-wise: along axis i,
    P_i^{−1} x = (x − q_i Σ x)/(p_i − q_i), O(∏u) per axis and no
    (∏u)×(∏u) (or even u_i×u_i) matrix.  Before clipping the estimate is
    unbiased for the true contingency table: E[counts] = (⊗_i P_i)·T.  The
    result sums to n before clipping (P^{−1} preserves totals); rescaling to
    n̂ is the caller's job.  Post-processing of the GRR reports.

    Parameters
    ----------
    perturbed : sequence of l array-likes of int, each shape (n,)
        The perturbed columns (:func:`grr_perturb`) of the marginal's
        attributes, row-aligned (possibly from different parties).
    sizes : sequence of l ints
        Their domain sizes u_i.
    epsilons : sequence of l floats, or a float
        The GRR ε′ each column was perturbed with (one float: the same for all).
    clip : bool, default True
        Clip negative cells to 0 (``doc/deviations.md``, "Clamping CarEst
        cells at zero").  ``clip=False`` returns the unbiased
        (possibly negative) estimate.

    Returns
    -------
    numpy.ndarray of float64, shape tuple(sizes)

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.frequency_oracle import fo_marginal, grr_perturb
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 50_000); b = np.where(rng.random(50_000) < 0.9, a, 1 - a)
    >>> est = fo_marginal([grr_perturb(a, 2, 2.0, 1), grr_perturb(b, 2, 2.0, 2)], [2, 2], 2.0)
    >>> true = np.histogram2d(a, b, bins=2)[0]
    >>> est.shape, bool(np.abs(est - true).max() < 1500)
    ((2, 2), True)
    """
    cols = list(perturbed)
    l = len(cols)
    if l == 0:
        raise ValueError("need at least one perturbed column")
    if len(sizes) != l:
        raise ValueError(f"{l} perturbed columns but {len(sizes)} domain sizes")
    sizes = [_check_size(u, f"sizes[{i}]") for i, u in enumerate(sizes)]
    eps = [epsilons] * l if np.ndim(epsilons) == 0 else list(epsilons)
    if len(eps) != l:
        raise ValueError(f"{l} perturbed columns but {len(eps)} epsilons")
    eps = [_check_epsilon(e, f"epsilons[{i}]") for i, e in enumerate(eps)]
    cols = [_check_codes(c, u, f"perturbed[{i}]") for i, (c, u) in enumerate(zip(cols, sizes))]
    if len({c.shape[0] for c in cols}) != 1:
        raise ValueError("perturbed columns must be row-aligned (same length)")
    n_cells = math.prod(sizes)
    flat = np.ravel_multi_index(tuple(cols), tuple(sizes)) if cols[0].size else np.zeros(0, dtype=np.int64)
    est = np.bincount(flat, minlength=n_cells).astype(np.float64).reshape(sizes)
    for axis, (u, e) in enumerate(zip(sizes, eps)):  # ⊗_i P_i^{−1}, one axis at a time
        _, q, pq = _grr(e, u)
        est = (est - q * est.sum(axis=axis, keepdims=True)) / pq
    return np.maximum(est, 0.0) if clip else est


# ----------------------------------------------------------------------------------------------------------------------
# Accounting (doc/deviations.md, "Frequency-oracle accounting")
# ----------------------------------------------------------------------------------------------------------------------
def fo_epsilon_prime(epsilon_enc: float, d: int, delta: float | None,
                     accounting: str = "conservative") -> float:
    """The GRR ε′ per attribute for an FO LocEnc budget ε_enc over the global d attributes.

    * ``"conservative"`` (default): ε′ = ε_enc/d.  A record's d perturbed
      values compose sequentially (basic composition) under replace-one
      neighbours, which is the only relation under which FO LocEnc is DP at
      all (it reveals n, see the module docstring).  ``delta`` is not used
      (pass ``None`` or any value in (0, 1)).
    * ``"paper"``: ε′ = max(2ε_enc/d, ε_enc/(2√(2d ln(1/δ)))), the ε′ for
      which :func:`fo_theorem1_epsilon` returns exactly ε_enc (the authors' code uses
      2ε_enc/d).  For reproducing the paper only: Theorem 1 rests on a
      flawed halving argument (``doc/deviations.md``, "Frequency-oracle
      accounting").

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.frequency_oracle import fo_epsilon_prime
    >>> fo_epsilon_prime(0.32, 15, None)
    0.021333333333333333
    >>> round(fo_epsilon_prime(0.32, 15, 0.5 / 36177, "paper"), 4)   # Adult at ε = 0.8 (ε_enc = 0.32, n = 36,177)
    0.0427
    """
    eps = _check_epsilon(epsilon_enc, "epsilon_enc")
    d = _check_size(d, "d")
    if accounting == "conservative":
        if delta is not None:
            _check_delta(delta)
        return eps / d
    if accounting == "paper":
        log_term = math.log(1.0 / _check_delta(delta))
        return max(2.0 * eps / d, eps / (2.0 * math.sqrt(2.0 * d * log_term)))
    raise ValueError(f"accounting must be one of {_ACCOUNTING}, got {accounting!r}")


def fo_theorem1_epsilon(epsilon_prime: float, d: int, delta: float) -> float:
    """Theorem 1 (extended version, §4.2) as stated: min(dε′/2, 2ε′√(2d ln(1/δ))) for FO LocEnc at ε′.

    **Only for reproducing the paper.**  The proof claims GRR with ε′ is
    ε′/2-DP per attribute under the paper's "bounded DP", arguing that an
    ε-DP mechanism under one neighbouring relation is 2ε-DP under the other —
    but that implication runs from add/remove-one to replace-one, not back,
    so the halving is unjustified (``doc/deviations.md``, "Frequency-oracle
    accounting"), and under add/remove-one FO
    LocEnc is not DP at all (it reveals n).  Use
    ``fo_epsilon_prime(..., accounting="conservative")`` for a sound budget.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.frequency_oracle import fo_epsilon_prime, fo_theorem1_epsilon
    >>> e_prime = fo_epsilon_prime(0.32, 15, 1e-5, "paper")
    >>> round(fo_theorem1_epsilon(e_prime, 15, 1e-5), 12)
    0.32
    """
    eps = _check_epsilon(epsilon_prime, "epsilon_prime")
    d = _check_size(d, "d")
    log_term = math.log(1.0 / _check_delta(delta))
    return min(d * eps / 2.0, 2.0 * eps * math.sqrt(2.0 * d * log_term))
