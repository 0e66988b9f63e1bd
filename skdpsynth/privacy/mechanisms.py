"""Basic DP mechanisms with explicit sensitivity, optionally recorded in a ledger.

Sensitivities refer to the add/remove-one-record neighbouring relation (see
:mod:`skdpsynth.privacy.accounting`): a vector of counts has L1 and L2
sensitivity 1.

Noise.  Counts are integers, so by default (``noise="discrete"``) the Gaussian
and Laplace mechanisms add *exact* discrete Gaussian / discrete Laplace noise
(:mod:`skdpsynth.privacy.samplers`; Canonne, Kamath & Steinke 2020): the
output is an integer whose distribution is exactly the one the privacy proof
assumes, with none of the floating-point artefacts that let the low bits of
textbook float noise reveal the input (Mironov 2012).  The discrete Gaussian
with σ² ≥ Δ²/(2ρ) is ρ-zCDP and the discrete Laplace with scale ≥ Δ/ε is ε-DP
for integer-valued queries of sensitivity Δ, the same costs as their
continuous versions.  ``noise="continuous"`` (per call, or for the package
with :func:`set_noise`) restores NumPy's floating-point samplers, which the
mechanisms also use for non-integer values.
"""
from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, wait
from contextlib import contextmanager
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..utils import thread_pool
from .accounting import _check, exponential_mechanism_rho, gaussian_rho, gaussian_sigma
from .randomness import gumbel, noise_generator
from .samplers import discrete_gaussian, discrete_laplace

if TYPE_CHECKING:
    from .ledger import PrivacyLedger

__all__ = [
    "gaussian_mechanism",
    "laplace_mechanism",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "lazy_exponential_mechanism",
    "get_noise",
    "set_noise",
    "noise_context",
]

_NOISE_KINDS = ("discrete", "continuous")
_noise = {"kind": "discrete"}


def get_noise() -> str:
    """The package's default noise for count measurements: ``"discrete"`` (exact) or ``"continuous"``.

    Examples
    --------
    >>> from skdpsynth.privacy import get_noise
    >>> get_noise()
    'discrete'
    """
    return _noise["kind"]


def set_noise(kind: str) -> str:
    """Set the package's default noise (``"discrete"`` or ``"continuous"``); returns the previous one.

    The default, ``"discrete"``, adds exact discrete Gaussian / Laplace noise
    to integer counts.  ``"continuous"`` is NumPy's floating-point noise,
    kept for comparison with other implementations.

    Examples
    --------
    >>> from skdpsynth.privacy import set_noise
    >>> previous = set_noise("continuous")
    >>> set_noise(previous)
    'continuous'
    """
    if kind not in _NOISE_KINDS:
        raise ValueError(f"noise must be one of {_NOISE_KINDS}, got {kind!r}.")
    previous, _noise["kind"] = _noise["kind"], kind
    return previous


@contextmanager
def noise_context(kind: str):
    """Use ``kind`` as the default noise inside a ``with`` block.

    Examples
    --------
    >>> from skdpsynth.privacy import gaussian_mechanism, noise_context
    >>> with noise_context("continuous"):
    ...     noisy = gaussian_mechanism([10, 20], rho=0.5, random_state=0)
    >>> bool((noisy != noisy.round()).all())  # float noise
    True
    """
    previous = set_noise(kind)
    try:
        yield
    finally:
        set_noise(previous)


def _discrete(values: np.ndarray, noise: str | None) -> bool:
    """Whether to add exact discrete noise: the chosen kind, and integer values (it needs them)."""
    kind = get_noise() if noise is None else noise
    if kind not in _NOISE_KINDS:
        raise ValueError(f"noise must be one of {_NOISE_KINDS} or None, got {noise!r}.")
    if kind == "continuous":
        return False
    integral = bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)))
    if not integral and noise == "discrete":
        raise ValueError("noise='discrete' needs integer values (counts); use noise='continuous' for real values.")
    return integral


def _one_of(**kwargs: float | None) -> tuple[str, float]:
    given = [(k, v) for k, v in kwargs.items() if v is not None]
    if len(given) != 1:
        raise ValueError(f"Give exactly one of {' / '.join(kwargs)}.")
    name, value = given[0]
    return name, _check(name, value)


def gaussian_mechanism(values: ArrayLike, *, sigma: float | None = None, rho: float | None = None,
                       sensitivity: float = 1.0, random_state=None,
                       ledger: PrivacyLedger | None = None, description: str = "",
                       party: str | None = None, noise: str | None = None) -> np.ndarray:
    """Add Gaussian noise of variance σ² to ``values``; costs ρ = Δ²/(2σ²) zCDP.

    Integer ``values`` (counts) get exact discrete Gaussian noise by default
    (see the module docstring); others N(0, σ²).

    Parameters
    ----------
    values : array-like
        The exact answers (e.g. a marginal), any shape.
    sigma, rho : float
        Exactly one: the noise scale, or the zCDP cost (then σ = Δ/√(2ρ)).
    sensitivity : float, default=1.0
        L2 sensitivity Δ of ``values``.
    random_state : None, int or numpy.random.Generator
        Source of the noise.
    ledger : PrivacyLedger, optional
        If given, a ``"zcdp"`` entry is appended to it.
    description : str, default=""
        Ledger description.
    party : str, optional
        Ledger party tag.
    noise : {"discrete", "continuous"}, optional
        Exact discrete Gaussian noise (integer ``values`` only) or NumPy's
        floating-point normal; default :func:`get_noise` (``"discrete"``),
        which falls back to continuous noise for non-integer values.

    Returns
    -------
    numpy.ndarray
        Noisy float64 values, same shape as ``values`` (integer-valued with discrete noise).

    Examples
    --------
    >>> from skdpsynth.privacy import PrivacyLedger, gaussian_mechanism
    >>> ledger = PrivacyLedger()
    >>> noisy = gaussian_mechanism([10, 20, 30], rho=0.5, random_state=0, ledger=ledger)
    >>> noisy.shape, ledger.total_rho()
    ((3,), 0.5)
    """
    name, value = _one_of(sigma=sigma, rho=rho)
    sigma = value if name == "sigma" else gaussian_sigma(value, sensitivity)
    rho = gaussian_rho(sigma, sensitivity) if name == "sigma" else value
    values = np.asarray(values, dtype=np.float64)
    rng = noise_generator(random_state)
    if _discrete(values, noise):
        # σ² rounded up, never down: the noise is at least what ρ needs.
        variance = float(np.nextafter(sigma * sigma, np.inf))
        noisy = values + discrete_gaussian(variance, values.shape, random_state=rng)
        mechanism = "discrete gaussian"
    else:
        noisy = np.asarray(values + rng.normal(0.0, sigma, size=values.shape))
        mechanism = "gaussian"
    if ledger is not None:
        ledger.add(description, mechanism, rho=rho, sensitivity=float(sensitivity), scale=sigma,
                   party=party, n_values=values.size)
    return noisy


def laplace_mechanism(values: ArrayLike, *, epsilon: float | None = None,
                      scale: float | None = None, sensitivity: float = 1.0, random_state=None,
                      ledger: PrivacyLedger | None = None, description: str = "",
                      party: str | None = None, noise: str | None = None) -> np.ndarray:
    """Add Laplace noise of scale b to ``values``; is ε-DP with b = Δ/ε.

    Integer ``values`` (counts) get exact discrete Laplace noise,
    P(k) ∝ exp(−|k|/b), by default (see the module docstring); others
    Laplace(0, b).

    Parameters
    ----------
    values : array-like
        The exact answers, any shape.
    epsilon, scale : float
        Exactly one: the pure-DP cost ε, or the Laplace scale b (then ε = Δ/b).
    sensitivity : float, default=1.0
        L1 sensitivity Δ of ``values``.
    random_state, ledger, description, party, noise
        As in :func:`gaussian_mechanism`; the ledger entry is ``"pure"``.

    Returns
    -------
    numpy.ndarray
        Noisy float64 values, same shape as ``values`` (integer-valued with discrete noise).

    Examples
    --------
    >>> from skdpsynth.privacy import PrivacyLedger, laplace_mechanism
    >>> ledger = PrivacyLedger()
    >>> noisy = laplace_mechanism([[1, 2], [3, 4]], epsilon=0.5, random_state=0, ledger=ledger)
    >>> noisy.shape, ledger.total_epsilon()
    ((2, 2), 0.5)
    """
    name, value = _one_of(epsilon=epsilon, scale=scale)
    sensitivity = _check("sensitivity", sensitivity)
    scale = sensitivity / value if name == "epsilon" else value
    epsilon = value if name == "epsilon" else sensitivity / value
    values = np.asarray(values, dtype=np.float64)
    rng = noise_generator(random_state)
    if _discrete(values, noise):
        # The scale rounded up, never down: ε-DP holds for the float actually used.
        noisy = values + discrete_laplace(float(np.nextafter(scale, np.inf)), values.shape, random_state=rng)
        mechanism = "discrete laplace"
    else:
        noisy = np.asarray(values + rng.laplace(0.0, scale, size=values.shape))
        mechanism = "laplace"
    if ledger is not None:
        ledger.add(description, mechanism, epsilon=epsilon, sensitivity=sensitivity, scale=scale,
                   party=party, n_values=values.size)
    return noisy


def _log_weights(scores: ArrayLike, epsilon: float, sensitivity: float,
                 monotonic: bool) -> np.ndarray:
    """Validated, max-shifted log-weights ε·s/(2Δ) (or ε·s/Δ if monotonic)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError("scores must be a non-empty 1-d array.")
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise ValueError("scores must not contain NaN or +inf.")
    finite = np.isfinite(scores)
    if not finite.any():
        raise ValueError("All scores are -inf: nothing can be selected.")
    epsilon, sensitivity = _check("epsilon", epsilon), _check("sensitivity", sensitivity)
    # Shift by the best score first so huge scores cannot overflow exp().
    shifted = np.where(finite, scores - scores[finite].max(), -np.inf)
    return shifted * (epsilon / (sensitivity if monotonic else 2.0 * sensitivity))


def exponential_mechanism_probabilities(scores: ArrayLike, epsilon: float, sensitivity: float = 1.0,
                                        monotonic: bool = False) -> np.ndarray:
    """Exact selection distribution of :func:`exponential_mechanism`.

    Returns p_i ∝ exp(ε·s_i/(2Δ)), or exp(ε·s_i/Δ) when ``monotonic``;
    entries with score -inf get probability 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.privacy import exponential_mechanism_probabilities
    >>> p = exponential_mechanism_probabilities([0.0, np.log(3.0), -np.inf], epsilon=2.0)
    >>> np.round(p, 6).tolist()
    [0.25, 0.75, 0.0]
    """
    weights = np.exp(_log_weights(scores, epsilon, sensitivity, monotonic))
    return weights / weights.sum()


def exponential_mechanism(scores: ArrayLike, *, epsilon: float, sensitivity: float = 1.0,
                          monotonic: bool = False, random_state=None,
                          ledger: PrivacyLedger | None = None, description: str = "",
                          party: str | None = None) -> int:
    """Select an index with probability ∝ exp(ε·score/(2Δ)); costs ε²/8 zCDP.

    Parameters
    ----------
    scores : array-like of shape (n_candidates,)
        Quality scores (higher is better); -inf marks candidates never chosen.
    epsilon : float
        Privacy parameter ε of the mechanism.
    sensitivity : float, default=1.0
        Sensitivity Δ of every score.
    monotonic : bool, default=False
        Set when all scores move in the same direction between neighbours;
        then exp(ε·score/Δ) is used, for the same privacy cost.
    random_state, ledger, description, party
        As in :func:`gaussian_mechanism`; the ledger entry is ``"zcdp"`` with
        ρ = ε²/8 (bounded-range analysis) and ``scale=epsilon``.

    Returns
    -------
    int
        The selected index.

    Examples
    --------
    >>> from skdpsynth.privacy import PrivacyLedger, exponential_mechanism
    >>> ledger = PrivacyLedger()
    >>> exponential_mechanism([0.0, 1e6, 5.0], epsilon=1.0, random_state=0, ledger=ledger)
    1
    >>> ledger.total_rho()
    0.125
    """
    log_w = _log_weights(scores, epsilon, sensitivity, monotonic)
    rng = noise_generator(random_state)
    # Gumbel-max: argmax(log w + Gumbel) is a sample from w / sum(w).
    choice = int(np.argmax(log_w + gumbel(rng, log_w.shape)))
    _record_exponential(ledger, description, epsilon, sensitivity, party, log_w.size, monotonic)
    return choice


def lazy_exponential_mechanism(upper_bounds: ArrayLike, score: Callable[[int], float], *, epsilon: float,
                               sensitivity: float = 1.0, eligible: Callable[[int], bool] | None = None,
                               monotonic: bool = False, workers: int = 1, random_state=None,
                               ledger: PrivacyLedger | None = None, description: str = "",
                               party: str | None = None) -> int:
    """The exponential mechanism for costly scores: computes only those that could win.

    Selects ``i`` with probability ∝ exp(ε·score(i)/(2Δ)) exactly as
    :func:`exponential_mechanism` on the array of all scores (same
    distribution, same cost ε²/8 zCDP), but asks ``score`` only for the
    candidates that can still win.  Gumbel-max: the selection is the argmax
    of ``ε·s_i/(2Δ) + G_i`` with ``G_i`` iid Gumbel; with ``s_i ≤ u_i``,
    candidates are scored in decreasing order of ``ε·u_i/(2Δ) + G_i`` until
    the best exact key is at least the next bound.  The tighter the bounds
    (e.g. a score computed earlier plus how far it can have moved since),
    the fewer scores are computed.

    Parameters
    ----------
    upper_bounds : array-like of shape (n_candidates,)
        ``u_i``, an upper bound of each score (finite, or -inf for a
        candidate never selected).
    score : callable
        ``score(i)``: the exact score of candidate ``i``, at most
        ``upper_bounds[i]`` (a ``ValueError`` otherwise, since the selection
        would no longer be exact), or -inf to exclude ``i``.
    eligible : callable, optional
        ``eligible(i)``: false excludes ``i`` (as a score of -inf would);
        asked only of candidates that would otherwise be the best so far,
        for when eligibility is costly too.
    workers : int, default 1
        Scores computed at once, in as many threads (``score`` must then be
        thread-safe).  The selection is the same for any number: it is the
        argmax of the exact keys, which no unscored candidate can reach;
        more workers only score a few candidates more (those started before
        a better key came in).
    epsilon, sensitivity, monotonic, random_state, ledger, description, party
        As in :func:`exponential_mechanism`; ``sensitivity`` is that of the
        exact scores (of the eligible candidates).

    Returns
    -------
    int
        The selected index.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.privacy import lazy_exponential_mechanism
    >>> scores = np.array([0.0, 50.0, 5.0])
    >>> asked = []
    >>> def score(i):
    ...     asked.append(i)
    ...     return scores[i]
    >>> lazy_exponential_mechanism([10.0, 60.0, 10.0], score, epsilon=1.0, random_state=0)
    1
    >>> asked
    [1]
    """
    upper_bounds = np.asarray(upper_bounds, dtype=np.float64)
    bounds = _log_weights(upper_bounds, epsilon, sensitivity, monotonic)
    shift = upper_bounds[np.isfinite(bounds)].max()
    scale = epsilon / (sensitivity if monotonic else 2.0 * sensitivity)
    rng = noise_generator(random_state)
    noise = gumbel(rng, bounds.shape)
    bound_keys = bounds + noise
    order = np.argsort(-bound_keys, kind="stable")
    # The best exact key so far, ties to the earlier in ``order`` (as scoring one by one would have it).
    choice, best, best_rank = -1, -np.inf, len(order)

    def consider(rank: int, s: float) -> None:
        nonlocal choice, best, best_rank
        i = int(order[rank])
        if np.isnan(s) or s > upper_bounds[i]:
            raise ValueError(f"score({i}) = {s!r} is not at most its upper bound {upper_bounds[i]!r}.")
        key = (s - shift) * scale + noise[i]
        if (key > best or (key == best and choice >= 0 and rank < best_rank)) and (eligible is None
                                                                                 or eligible(i)):
            choice, best, best_rank = i, key, rank

    # Candidates in decreasing order of bound key, until none left can beat the best exact key: those not
    # started have later ranks, so a bound key equal to the best cannot win either.
    if workers <= 1:
        for rank, i in enumerate(order):
            if bound_keys[i] <= best:
                break
            consider(rank, float(score(int(i))))
    else:
        pool = thread_pool("score", workers)
        running: dict = {}
        rank = 0
        try:
            while True:
                while len(running) < workers and rank < len(order) and bound_keys[order[rank]] > best:
                    running[pool.submit(score, int(order[rank]))] = rank
                    rank += 1
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=running.get):
                    consider(running.pop(future), float(future.result()))
        finally:   # on an error, no score of this call is left running behind the caller's back
            for future in running:
                future.cancel()
            wait(running)
    if choice < 0:
        raise ValueError("All scores are -inf: nothing can be selected.")
    _record_exponential(ledger, description, epsilon, sensitivity, party, bounds.size, monotonic)
    return choice


def _record_exponential(ledger, description, epsilon, sensitivity, party, n_values, monotonic) -> None:
    if ledger is not None:
        ledger.add(description, "exponential", rho=exponential_mechanism_rho(epsilon),
                   sensitivity=float(sensitivity), scale=float(epsilon), party=party,
                   n_values=int(n_values), monotonic=bool(monotonic))
