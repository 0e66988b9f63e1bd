"""Empirical (black-box) differential-privacy audits with Clopper–Pearson bounds.

An audit runs a mechanism many times on two neighbouring data sets D and D'
(D' = D plus one record, the package's add/remove relation), reduces each
output to a scalar statistic, picks a *distinguishing event* S = {statistic >
t} or {statistic <= t}, counts how often S happens under each neighbour and
turns the counts into a statistically valid **lower bound** on ε (Jagielski,
Ullman & Oprea 2020; Nasr et al. 2021; DP-Auditorium, Kong et al. 2024).

If the mechanism is (ε, δ)-DP, then for every event S fixed in advance and
for both orders of the neighbours,

    P[M(D) ∈ S] <= e^ε · P[M(D') ∈ S] + δ,

so ε >= log((P[M(D) ∈ S] - δ) / P[M(D') ∈ S]). Replacing the numerator
probability by a one-sided Clopper–Pearson *lower* bound and the denominator
probability by a one-sided Clopper–Pearson *upper* bound, each at level
α/2, gives a quantity that, with probability at least 1 - α over the runs, is
below the true ε (union bound over the two intervals).

What is and is not guaranteed
-----------------------------
* :func:`epsilon_lower_bound` is a valid lower bound with probability
  >= 1 - α **provided the event S was chosen without looking at the counts
  it is given**.
* :func:`audit` chooses S on a first part of the runs (the *selection*
  runs) and computes the bound on the remaining, independent runs only (the
  *held-out* runs), on exactly one event, so no multiple-testing correction
  is needed and the result is a valid lower bound on the ε of every
  (ε, δ) guarantee the mechanism truly has, with probability >= 1 - α.
* :func:`audit` with ``events`` fixed before any run counts each of them
  on every run at level α / (number of events), a union bound: the same
  guarantee, with no runs spent on choosing.
* Hence a test asserting ``epsilon_lower_bound <= claimed_epsilon`` fails
  for a correctly calibrated mechanism with probability at most α; with a
  fixed ``random_state`` the outcome is deterministic (a given seed either
  is one of those rare unlucky draws or it is not, once and for all).
* A lower bound is not a proof of privacy: a low ``epsilon_lower_bound``
  only means that *this* statistic and *these* neighbours did not reveal a
  violation. A bound above the claim is, up to the α error, a proof that the
  claim is false.
* Threshold events on one scalar cannot see everything: e.g. the
  floating-point artefacts of textbook Laplace/Gaussian samplers (Mironov
  2012) need events on the exact bit patterns of the outputs, and a bound
  from a few hundred runs can never exceed about ``log(n_held_out / 3.7)``.

Examples
--------
Audit the Laplace mechanism on a count (ε = 1) with a million vectorised
draws per neighbour:

>>> import numpy as np
>>> from skdpsynth.privacy.audit import audit
>>> def count_d(rng, size):            # D: the count is 0
...     return 0.0 + rng.laplace(0.0, 1.0, size)
>>> def count_dprime(rng, size):       # D' = D + one record: the count is 1
...     return 1.0 + rng.laplace(0.0, 1.0, size)
>>> result = audit(count_d, count_dprime, n_runs=1_000_000, batch=True, random_state=0)
>>> bool(0.9 < result.epsilon_lower_bound <= 1.0)
True
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = [
    "AuditResult",
    "DistinguishingEvent",
    "audit",
    "clopper_pearson",
    "epsilon_lower_bound",
]

_SIDES = ("two-sided", "lower", "upper")


def _as_counts(k: ArrayLike, n: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    k_arr, n_arr = np.asarray(k), np.asarray(n)
    for name, arr in (("k", k_arr), ("n", n_arr)):
        if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold whole numbers, got {arr!r}.")
    k_arr, n_arr = np.broadcast_arrays(k_arr.astype(np.float64), n_arr.astype(np.float64))
    if np.any(n_arr < 1) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ValueError("Counts must satisfy 0 <= k <= n and n >= 1.")
    return k_arr, n_arr


def _check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    return alpha


def _scalar_or_array(value: np.ndarray, scalar: bool):
    return float(value) if scalar else value


def clopper_pearson(k: ArrayLike, n: ArrayLike, alpha: float = 0.05, *,
                    side: str = "two-sided") -> tuple[Any, Any]:
    """Exact (Clopper–Pearson) confidence bounds for a binomial proportion.

    Given ``k`` successes in ``n`` independent Bernoulli(p) trials:

    * ``side="two-sided"``: the interval ``(lo, hi)`` with
      ``P[lo <= p <= hi] >= 1 - alpha``, each tail getting ``alpha / 2``:
      ``lo = Beta(alpha/2; k, n-k+1)``, ``hi = Beta(1-alpha/2; k+1, n-k)``;
    * ``side="lower"``: the one-sided lower bound ``lo = Beta(alpha; k, n-k+1)``
      with ``P[p >= lo] >= 1 - alpha``; ``hi`` is returned as 1;
    * ``side="upper"``: the one-sided upper bound ``hi = Beta(1-alpha; k+1, n-k)``
      with ``P[p <= hi] >= 1 - alpha``; ``lo`` is returned as 0.

    The bounds are exact (conservative): the coverage is at least the nominal
    level for every p. By convention ``lo = 0`` when ``k = 0`` and ``hi = 1``
    when ``k = n``.

    Parameters
    ----------
    k, n : int or array-like of int
        Successes and trials (broadcast together), ``0 <= k <= n``, ``n >= 1``.
    alpha : float, default=0.05
        Error probability in (0, 1).
    side : {"two-sided", "lower", "upper"}, default="two-sided"
        Which bound(s) hold at confidence ``1 - alpha``.

    Returns
    -------
    (lo, hi) : tuple of float, or of ndarray for array input

    Examples
    --------
    >>> from skdpsynth.privacy.audit import clopper_pearson
    >>> lo, hi = clopper_pearson(5, 10, 0.05)
    >>> round(lo, 4), round(hi, 4)
    (0.1871, 0.8129)
    >>> lo, hi = clopper_pearson(0, 100, 0.05, side="upper")   # the "rule of three": about 3/n
    >>> lo, round(hi, 4)
    (0.0, 0.0295)
    >>> clopper_pearson([0, 10], 10, 0.05, side="lower")[0].round(4).tolist()
    [0.0, 0.7411]
    """
    if side not in _SIDES:
        raise ValueError(f"side must be one of {_SIDES}, got {side!r}.")
    alpha = _check_alpha(alpha)
    scalar = np.ndim(k) == 0 and np.ndim(n) == 0
    k_arr, n_arr = _as_counts(k, n)
    a_low = {"two-sided": alpha / 2, "lower": alpha, "upper": 0.0}[side]
    a_high = {"two-sided": alpha / 2, "upper": alpha, "lower": 0.0}[side]
    lo = np.zeros_like(k_arr)
    hi = np.ones_like(k_arr)
    if a_low > 0:
        has = k_arr > 0
        lo = np.where(has, stats.beta.ppf(a_low, np.where(has, k_arr, 1.0), n_arr - k_arr + 1.0), 0.0)
    if a_high > 0:
        has = k_arr < n_arr
        hi = np.where(has, stats.beta.ppf(1.0 - a_high, k_arr + 1.0, np.where(has, n_arr - k_arr, 1.0)), 1.0)
    return _scalar_or_array(lo, scalar), _scalar_or_array(hi, scalar)


def _log_ratio_bound(k1, n1, k2, n2, delta: float, alpha: float) -> np.ndarray:
    """log((p_lo - δ) / q_hi), -inf where p_lo <= δ (arrays; no clipping at 0)."""
    p_lo, _ = clopper_pearson(k1, n1, alpha / 2, side="lower")
    _, q_hi = clopper_pearson(k2, n2, alpha / 2, side="upper")
    num = np.asarray(p_lo, dtype=np.float64) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num > 0, np.log(np.maximum(num, 1e-300)) - np.log(q_hi), -np.inf)


def epsilon_lower_bound(k1: ArrayLike, n1: ArrayLike, k2: ArrayLike, n2: ArrayLike, *,
                        delta: float = 0.0, alpha: float = 0.05):
    """A lower bound on ε, valid with probability >= 1 - alpha, from the counts of one event.

    The event S happened ``k1`` times in ``n1`` runs of M(D) and ``k2`` times in
    ``n2`` independent runs of M(D'). If M is (ε, δ)-DP then
    ``P[M(D) ∈ S] <= e^ε P[M(D') ∈ S] + δ``, hence

        ε >= log((p_lo - δ) / q_hi),

    where ``p_lo`` is the one-sided Clopper–Pearson lower bound of
    ``P[M(D) ∈ S]`` and ``q_hi`` the one-sided upper bound of ``P[M(D') ∈ S]``,
    each at level ``alpha / 2`` (so both hold together with probability
    >= 1 - alpha by the union bound). Swap the roles of the neighbours (and use
    the complement event) to test the other directions.

    The bound is valid only if S was fixed before these counts were seen (see
    :func:`audit`, which selects S on separate runs).

    Parameters
    ----------
    k1, n1 : int or array-like
        Occurrences of S and runs under the neighbour expected to make S *more* likely.
    k2, n2 : int or array-like
        Occurrences of S and runs under the other neighbour.
    delta : float, default=0.0
        The δ of the (ε, δ) claim being audited (0 for pure ε-DP).
    alpha : float, default=0.05
        Probability that the bound exceeds the true ε.

    Returns
    -------
    float or ndarray
        The lower bound, 0.0 where nothing positive can be claimed
        (``p_lo <= δ`` or the ratio is below 1).

    Examples
    --------
    >>> from skdpsynth.privacy.audit import epsilon_lower_bound
    >>> round(epsilon_lower_bound(5000, 10000, 1840, 10000), 3)   # plug-in ratio 5000/1840 = e^0.9997
    0.939
    >>> epsilon_lower_bound(30, 100, 40, 100)
    0.0
    >>> round(epsilon_lower_bound(600, 1000, 0, 1000, delta=0.5), 3)
    2.929
    """
    alpha = _check_alpha(alpha)
    delta = float(delta)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    scalar = all(np.ndim(x) == 0 for x in (k1, n1, k2, n2))
    bound = np.maximum(_log_ratio_bound(k1, n1, k2, n2, delta, alpha), 0.0)
    return _scalar_or_array(bound, scalar)


@dataclass(frozen=True)
class DistinguishingEvent:
    """The event ``statistic > threshold`` (``above=True``) or ``statistic <= threshold``.

    ``favours`` names the neighbour under which the event is expected to be
    more likely: ``"D"`` (the first release callable of :func:`audit`) or
    ``"D'"``; the bound is ``log((P_favoured_lo - δ) / P_other_hi)``.

    Examples
    --------
    >>> from skdpsynth.privacy.audit import DistinguishingEvent
    >>> event = DistinguishingEvent(threshold=0.5, above=True, favours="D'")
    >>> event([0.2, 0.5, 0.9]).tolist()
    [False, False, True]
    >>> print(event)
    statistic > 0.5 (more likely under D')
    """

    threshold: float
    above: bool
    favours: str

    def __call__(self, values: ArrayLike) -> np.ndarray:
        """Boolean mask: which statistic values fall in the event."""
        values = np.asarray(values, dtype=np.float64)
        return values > self.threshold if self.above else values <= self.threshold

    def __str__(self) -> str:
        return f"statistic {'>' if self.above else '<='} {self.threshold:.6g} (more likely under {self.favours})"

    @classmethod
    def all_at(cls, threshold: float) -> tuple["DistinguishingEvent", ...]:
        """The four events a threshold defines: ``{s > t}`` and ``{s <= t}``, each favouring D and D'.

        For an indicator statistic (0 or 1) and ``threshold=0.5`` these are
        all the events there are, so passing them to :func:`audit` as its
        ``events`` audits every direction without selection runs.

        Examples
        --------
        >>> from skdpsynth.privacy.audit import DistinguishingEvent
        >>> for event in DistinguishingEvent.all_at(0.5):
        ...     print(event)
        statistic > 0.5 (more likely under D')
        statistic > 0.5 (more likely under D)
        statistic <= 0.5 (more likely under D)
        statistic <= 0.5 (more likely under D')
        """
        t = float(threshold)
        return cls(t, True, "D'"), cls(t, True, "D"), cls(t, False, "D"), cls(t, False, "D'")


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    Attributes
    ----------
    epsilon_lower_bound : float
        ε lower bound from the held-out runs; with probability >= 1 - alpha it
        is at most the ε of every (ε, delta) guarantee the mechanism has.
    event : DistinguishingEvent
        The event chosen on the selection runs (with ``events`` given to
        :func:`audit`: the one of them with the largest bound).
    k_favoured, n_favoured : int
        Held-out occurrences of the event / runs under the favoured neighbour.
    k_other, n_other : int
        The same under the other neighbour.
    n_runs : int
        Runs per neighbour in all (selection + held-out).
    n_selection : int
        Runs per neighbour used to choose the event (0 with ``events``).
    selection_epsilon : float
        The bound the chosen event reached on the selection runs (a biased,
        optimistic figure: for diagnostics only); NaN with ``events``.
    delta, alpha : float
        As passed to :func:`audit`.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.privacy.audit import audit
    >>> result = audit(lambda rng, n: rng.laplace(0.0, 1.0, n), lambda rng, n: 1.0 + rng.laplace(0.0, 1.0, n),
    ...                n_runs=20_000, batch=True, random_state=0)
    >>> type(result).__name__, result.n_runs, result.n_selection, result.n_favoured
    ('AuditResult', 20000, 10000, 10000)
    >>> round(result.epsilon_lower_bound, 4)
    0.9402
    >>> print(result.event)
    statistic <= 0.00683587 (more likely under D)
    """

    epsilon_lower_bound: float
    event: DistinguishingEvent
    k_favoured: int
    n_favoured: int
    k_other: int
    n_other: int
    n_runs: int
    n_selection: int
    selection_epsilon: float
    delta: float
    alpha: float

    def __str__(self) -> str:
        return (f"epsilon >= {self.epsilon_lower_bound:.4f} (1 - alpha = {1 - self.alpha:g}, delta = {self.delta:g}) "
                f"from event [{self.event}]: {self.k_favoured}/{self.n_favoured} vs "
                f"{self.k_other}/{self.n_other} held-out runs ({self.n_runs} runs per neighbour)")


def _seed_sequence(random_state) -> np.random.SeedSequence:
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.SeedSequence(None if random_state is None else int(random_state))
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2**63)))
    raise ValueError(f"random_state must be None, an int, a SeedSequence or a Generator, got {random_state!r}.")


def _draw(release: Callable, statistic: Callable | None, n: int, seed: np.random.SeedSequence,
          batch: bool, which: str) -> np.ndarray:
    """``n`` statistic values of one neighbour, from independent randomness seeded by ``seed``."""
    if batch:
        out = release(np.random.default_rng(seed), n)
        values = np.asarray(out if statistic is None else statistic(out), dtype=np.float64)
        if values.shape != (n,):
            raise ValueError(f"In batch mode release_{which}(rng, size) (followed by statistic) must give "
                             f"{n} scalar values, got shape {values.shape}.")
    else:
        values = np.empty(n, dtype=np.float64)
        for i, child in enumerate(seed.spawn(n)):
            out = release(np.random.default_rng(child))
            values[i] = float(out if statistic is None else statistic(out))
    if np.isnan(values).any():
        raise ValueError(f"The statistic of release_{which} gave NaN; it must be a number for every run.")
    return values


def _candidate_thresholds(pooled_sorted: np.ndarray, max_thresholds: int) -> np.ndarray:
    """Thresholds: all distinct values, or order statistics dense in both tails (geometric ranks)."""
    unique = np.unique(pooled_sorted)
    if unique.size <= max_thresholds:
        return unique
    n = pooled_sorted.size
    ranks = np.unique(np.round(np.geomspace(1, n / 2, max_thresholds // 2)).astype(np.int64)) - 1
    idx = np.unique(np.concatenate([ranks, n - 1 - ranks]))
    return np.unique(pooled_sorted[idx])


def _event_table(sorted_d: np.ndarray, sorted_dp: np.ndarray, thresholds: np.ndarray):
    """Counts of {x <= t} and {x > t} under both neighbours for every threshold."""
    le_d = np.searchsorted(sorted_d, thresholds, side="right")
    le_dp = np.searchsorted(sorted_dp, thresholds, side="right")
    return {
        # (above, favours): (count under favoured, count under other)
        (True, "D"): (sorted_d.size - le_d, sorted_dp.size - le_dp),
        (True, "D'"): (sorted_dp.size - le_dp, sorted_d.size - le_d),
        (False, "D"): (le_d, le_dp),
        (False, "D'"): (le_dp, le_d),
    }


def audit(release_d: Callable, release_dprime: Callable, *, n_runs: int, delta: float = 0.0,
          statistic: Callable | None = None, batch: bool = False, alpha: float = 0.05,
          selection_fraction: float = 0.5, max_thresholds: int = 1000,
          events: Sequence[DistinguishingEvent] | None = None, random_state=None) -> AuditResult:
    """Black-box lower bound on the ε of a mechanism from runs on two neighbouring data sets.

    1. Draw ``n_runs`` outputs from each neighbour, from independent
       randomness, and reduce each to a scalar with ``statistic``.
    2. On the first ``selection_fraction`` of the runs of each neighbour,
       consider every event ``{s > t}`` and ``{s <= t}`` (t over the observed
       values, or up to ``max_thresholds`` order statistics dense in both
       tails), in both orders (favouring D or D'), and keep the one with the
       largest :func:`epsilon_lower_bound` on those runs.
    3. Count that single event on the remaining (held-out) runs and return
       :func:`epsilon_lower_bound` of those counts.

    With ``events``, fixed before any run, there is no step 2: every run is
    held out, each event is counted on all of them with its bound at level
    ``alpha / len(events)`` (union bound over the events), and the largest
    bound is returned.  Where the events worth trying are known in advance
    (a statistic with few values, such as an indicator or a released bound
    that takes one of a few values; a noisy count, whose best events split
    the two neighbours' counts), the runs that selection would spend count
    instead: half the runs give the same held-out sample.

    Guarantee: the held-out runs are independent of the choice of the event,
    so with probability >= 1 - ``alpha`` the returned bound is at most the ε
    of every (ε, ``delta``)-DP guarantee the mechanism satisfies for this
    pair of neighbours. A test ``result.epsilon_lower_bound <= claimed_epsilon``
    therefore fails for a correct mechanism with probability <= ``alpha``
    (and, with a fixed ``random_state``, deterministically).

    Parameters
    ----------
    release_d, release_dprime : callable
        The mechanism run on D and on D'. Without ``batch``: ``f(rng)`` returns
        one output, ``rng`` a fresh :class:`numpy.random.Generator` per run
        (pass it on as the mechanism's ``random_state``). With ``batch``:
        ``f(rng, size)`` returns ``size`` independent outputs (an array whose
        first axis has length ``size``) — for cheap mechanisms, where 10^6
        draws take milliseconds.
    n_runs : int
        Runs per neighbour, selection and held-out together (>= 4).
    delta : float, default=0.0
        The δ of the claim being audited (0 for pure ε-DP).
    statistic : callable, optional
        Output -> float (without ``batch``), or batch of outputs -> 1-d array
        of ``size`` floats (with ``batch``). Default: the output itself.
    batch : bool, default=False
        Vectorised mode, see ``release_d``.
    alpha : float, default=0.05
        Error probability of the bound.
    selection_fraction : float, default=0.5
        Share of the runs used to choose the event, in (0, 1); unused with
        ``events``.
    max_thresholds : int, default=1000
        Cap on the number of candidate thresholds (>= 2).
    events : sequence of DistinguishingEvent, optional
        Events fixed in advance (e.g. ``DistinguishingEvent.all_at(0.5)`` for
        an indicator statistic): no selection runs, see above.
    random_state : None, int, SeedSequence or Generator
        Seeds everything the audit draws; fix it for a deterministic test.

    Returns
    -------
    AuditResult

    Examples
    --------
    A Gaussian count with σ = 1 is ρ = 1/2 zCDP; at δ = 1e-3 that is
    ε = ``cdp_epsilon(0.5, 1e-3)``:

    >>> import numpy as np
    >>> from skdpsynth.privacy import cdp_epsilon, gaussian_mechanism
    >>> from skdpsynth.privacy.audit import audit
    >>> result = audit(lambda rng, n: gaussian_mechanism(np.zeros(n), sigma=1.0, random_state=rng),
    ...                lambda rng, n: gaussian_mechanism(np.ones(n), sigma=1.0, random_state=rng),
    ...                n_runs=400_000, delta=1e-3, batch=True, random_state=1)
    >>> claim = cdp_epsilon(0.5, 1e-3)
    >>> bool(0.5 * claim < result.epsilon_lower_bound <= claim)
    True

    One run at a time, e.g. for an estimator whose ``fit`` is the release,
    with ``statistic`` picking the released number:

    >>> from skdpsynth.privacy import laplace_mechanism
    >>> result = audit(lambda rng: laplace_mechanism([3.0], epsilon=1.0, random_state=rng),
    ...                lambda rng: laplace_mechanism([4.0], epsilon=1.0, random_state=rng),
    ...                statistic=lambda out: out[0], n_runs=2000, random_state=0)
    >>> result.n_runs, result.n_favoured, bool(result.epsilon_lower_bound <= 1.0)
    (2000, 1000, True)

    An indicator statistic, with its events fixed in advance: all runs count.

    >>> from skdpsynth.privacy.audit import DistinguishingEvent
    >>> result = audit(lambda rng: laplace_mechanism([3.0], epsilon=1.0, random_state=rng),
    ...                lambda rng: laplace_mechanism([4.0], epsilon=1.0, random_state=rng),
    ...                statistic=lambda out: float(out[0] > 4.0), events=DistinguishingEvent.all_at(0.5),
    ...                n_runs=1000, random_state=0)
    >>> result.n_selection, result.n_favoured, str(result.event)
    (0, 1000, "statistic > 0.5 (more likely under D')")
    """
    if isinstance(n_runs, bool) or not isinstance(n_runs, (numbers.Integral, np.integer)) or n_runs < 4:
        raise ValueError(f"n_runs must be an integer >= 4, got {n_runs!r}.")
    n_runs = int(n_runs)
    alpha = _check_alpha(alpha)
    delta = float(delta)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    if not 0.0 < float(selection_fraction) < 1.0:
        raise ValueError(f"selection_fraction must be in (0, 1), got {selection_fraction!r}.")
    if not (isinstance(max_thresholds, (numbers.Integral, np.integer)) and max_thresholds >= 2):
        raise ValueError(f"max_thresholds must be an integer >= 2, got {max_thresholds!r}.")
    seeds = _seed_sequence(random_state).spawn(4)
    if events is not None:
        events = _fixed_events(events)
        # The held-out streams (seeds 2 and 3): run by run, these are the runs a selection audit holds out.
        eval_d = _draw(release_d, statistic, n_runs, seeds[2], batch, "d")
        eval_dp = _draw(release_dprime, statistic, n_runs, seeds[3], batch, "dprime")
        return _best_fixed_event(events, eval_d, eval_dp, delta, alpha)

    n_sel = min(max(int(round(n_runs * float(selection_fraction))), 2), n_runs - 2)
    n_eval = n_runs - n_sel
    sel_d = np.sort(_draw(release_d, statistic, n_sel, seeds[0], batch, "d"))
    sel_dp = np.sort(_draw(release_dprime, statistic, n_sel, seeds[1], batch, "dprime"))

    # Step 2: choose the event on the selection runs only.
    thresholds = _candidate_thresholds(np.sort(np.concatenate([sel_d, sel_dp])), int(max_thresholds))
    best = (-np.inf, -np.inf, None)  # (bound, plug-in score, event)
    for (above, favours), (k_fav, k_oth) in _event_table(sel_d, sel_dp, thresholds).items():
        bounds = _log_ratio_bound(k_fav, n_sel, k_oth, n_sel, delta, alpha)
        # Tie-breaker when no event gives a positive bound: the smoothed plug-in log-ratio.
        plug_in = np.log(np.maximum((k_fav + 0.5) / (n_sel + 1) - delta, 1e-300)) - np.log((k_oth + 0.5) / (n_sel + 1))
        i = int(np.lexsort((plug_in, bounds))[-1])
        if (bounds[i], plug_in[i]) > best[:2]:
            best = (float(bounds[i]), float(plug_in[i]), DistinguishingEvent(float(thresholds[i]), above, favours))
    selection_bound, _, event = best

    # Step 3: count that one event on fresh, held-out runs.
    eval_d = _draw(release_d, statistic, n_eval, seeds[2], batch, "d")
    eval_dp = _draw(release_dprime, statistic, n_eval, seeds[3], batch, "dprime")
    fav, oth = (eval_d, eval_dp) if event.favours == "D" else (eval_dp, eval_d)
    k_fav, k_oth = int(event(fav).sum()), int(event(oth).sum())
    bound = epsilon_lower_bound(k_fav, n_eval, k_oth, n_eval, delta=delta, alpha=alpha)
    return AuditResult(
        epsilon_lower_bound=float(bound), event=event, k_favoured=k_fav, n_favoured=n_eval, k_other=k_oth,
        n_other=n_eval, n_runs=n_runs, n_selection=n_sel, selection_epsilon=max(selection_bound, 0.0),
        delta=delta, alpha=alpha,
    )


def _fixed_events(events) -> tuple[DistinguishingEvent, ...]:
    events = tuple(events) if not isinstance(events, DistinguishingEvent) else (events,)
    if not events or not all(isinstance(e, DistinguishingEvent) and e.favours in ("D", "D'") for e in events):
        raise ValueError("events must be a non-empty sequence of DistinguishingEvent, each favouring 'D' or \"D'\"; "
                         f"got {events!r}.")
    return events


def _best_fixed_event(events: tuple[DistinguishingEvent, ...], values_d: np.ndarray, values_dp: np.ndarray,
                      delta: float, alpha: float) -> AuditResult:
    """Each pre-registered event counted on every run, at level alpha / len(events); the largest bound."""
    n = values_d.size
    best = None
    for event in events:
        fav, oth = (values_d, values_dp) if event.favours == "D" else (values_dp, values_d)
        k_fav, k_oth = int(event(fav).sum()), int(event(oth).sum())
        bound = float(epsilon_lower_bound(k_fav, n, k_oth, n, delta=delta, alpha=alpha / len(events)))
        if best is None or bound > best[0]:
            best = (bound, event, k_fav, k_oth)
    bound, event, k_fav, k_oth = best
    return AuditResult(epsilon_lower_bound=bound, event=event, k_favoured=k_fav, n_favoured=n, k_other=k_oth,
                       n_other=n, n_runs=n, n_selection=0, selection_epsilon=float("nan"), delta=delta, alpha=alpha)
