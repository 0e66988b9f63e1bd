"""RandDPGen's curator side: Algorithm 2 of the paper (§4.3) on the shared round driver.

:func:`randdpgen` reads the parties only through a ``measure(r, ρ')``
callable returning noisy messages (the distributed marginal measurement,
Algorithm 1, §4.1, of :mod:`skdpsynth.federated`), plus public metadata
(domain, partition), so it runs unchanged against a
:class:`~skdpsynth.federated.ReplayFederation` that holds no data.  Its rounds
are ``_RandDPGenRounds``, run by :func:`~skdpsynth.synthesizers.rounds.fit_in_rounds`.

Honest accounting (Theorem 5.1, §5.1; ``doc/deviations.md``, "Honest IDMM
accounting").  The selection measurements cost ``αρ`` in total, each round
``(1 − α − β)ρ_t`` (exponential mechanism) plus ``βρ_t`` (measurement), and
the rounds' ``ρ_t`` sum to exactly ``ρ``, so the ledger sums to ``ρ``.  The
paper's IDMM (App. D, Algorithm 5; ``n_repeats = e > 1``; its experiments use
``e = K·S``) divides every measurement's variance by ``e`` and therefore costs
``e`` times as much: the ledger then charges that, and a warning gives the
true (ε, δ).
"""
from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...domain import Domain
from ...federated import HybridPartition
from ...federated.dmm import NOISE_MECHANISMS, exceeds_paper_bound, measurement_variance, paper_bound_variance
from ...federated.messages import combine
from ...graphical import GraphicalModel, Measurement, minimum_variance_total, mirror_descent
from ...privacy import PrivacyLedger, exponential_mechanism
from ...utils import check_memory
from ..rounds import LedgerBudget, Round, fit_in_rounds
from ..select_measure import filter_by_model_size

__all__ = ["randdpgen", "RandDPGenResult", "budget_schedule", "selection_parts", "PaperBoundWarning"]

Clique = tuple[str, ...]


class PaperBoundWarning(UserWarning):
    """Theorem 4.1's ``K S² / (2ρ)`` understates a marginal's true DMM variance.

    Raised by :func:`randdpgen` with ``variance_model="paper_bound"`` when a
    workload marginal spans more parties' columns than a slice has parties
    (``|r| > S``).  See ``doc/deviations.md``, "The paper's variance bound can
    fail".

    Examples
    --------
    >>> import warnings
    >>> from skdpsynth.synthesizers.hybrid import PaperBoundWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", PaperBoundWarning)   # make the understatement an error
    ...     issubclass(PaperBoundWarning, UserWarning)
    True
    """


@dataclass
class RandDPGenResult:
    """What the curator ends with (all of it DP: post-processing of the parties' noisy messages).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel
    >>> from skdpsynth.synthesizers.hybrid import RandDPGenResult
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> model = GraphicalModel(dom, {(a,): np.zeros(dom[a]) for a in dom}, 100.0)   # uniform, 100 records
    >>> result = RandDPGenResult(model, [("a", "b")], {("a", "b"): 2.0}, {("a", "b"): 0.1}, {})
    >>> result.selected, result.round_budgets, result.total_estimate   # filled in by randdpgen's rounds
    ([], [], nan)
    >>> result.model.project(("a",)).ravel().tolist()
    [50.0, 50.0]
    """

    model: GraphicalModel
    refined_workload: list
    weights: dict
    selection_budgets: dict
    selection_measurements: dict  # r -> (ŷ_r, per-cell variance)
    selected: list = field(default_factory=list)
    round_budgets: list = field(default_factory=list)
    anneal_events: list = field(default_factory=list)
    measurements: list = field(default_factory=list)  # Measurement objects fed to Private-PGM
    total_estimate: float = float("nan")


SELECTION_SCORES = ("workload", "pairs")


def selection_parts(refined: list, selection_scores: str = "workload") -> dict:
    """The marginals whose selection measurements score each candidate: ``{r: (s, ...)}``.

    ``"workload"`` (Algorithm 2, lines 3-4, §4.3): each workload marginal is
    measured and scored on its own.  ``"pairs"``: a candidate is scored by the
    sum of the scores of its 2-way sub-marginals (itself if it has one
    attribute), which are measured instead.  Measuring the pairs is much
    cheaper than measuring every 3-way marginal (on 16 attributes, 120 pairs
    against 560 triples share the same αρ), so a 3-way workload can be
    selected from scores that stand out of the noise; the score then sees the
    pairs' errors, not a triple's own interaction (doc/federated.md,
    "Quality on vertically partitioned data").

    Examples
    --------
    >>> from skdpsynth.synthesizers.hybrid.rounds import selection_parts
    >>> selection_parts([("a", "b", "c"), ("d",)], "pairs")
    {('a', 'b', 'c'): (('a', 'b'), ('a', 'c'), ('b', 'c')), ('d',): (('d',),)}
    >>> selection_parts([("a", "b", "c")])
    {('a', 'b', 'c'): (('a', 'b', 'c'),)}
    """
    if selection_scores not in SELECTION_SCORES:
        raise ValueError(f"selection_scores must be one of {SELECTION_SCORES}, got {selection_scores!r}.")
    if selection_scores == "workload":
        return {r: (r,) for r in refined}
    return {r: tuple(itertools.combinations(r, 2)) if len(r) > 1 else (r,) for r in refined}


def budget_schedule(rho: float, rounds: int, anneal: Callable[[int], bool], anneal_factor: float = 4.0):
    """The per-round budgets ``ρ_t`` (Algorithm 2, lines 2, 5–7, 12–18) for a sequence of annealing decisions.

    ``anneal(t)`` says whether round ``t`` (1-based) triggers annealing.
    Returns the list of ``ρ_t``; they sum to ``ρ`` (the last round takes
    exactly the remainder).  :func:`randdpgen` runs the same rule.

    Examples
    --------
    >>> from skdpsynth.synthesizers.hybrid import budget_schedule
    >>> [round(r, 4) for r in budget_schedule(1.0, 4, lambda t: False)]   # the last round takes the rest
    [0.25, 0.25, 0.5]
    >>> [round(r, 4) for r in budget_schedule(1.0, 10, lambda t: t == 1)]   # round 1 anneals: x4
    [0.1, 0.4, 0.5]
    """
    out, rho_next, used, t = [], rho / rounds, 0.0, 0
    while used < rho * (1 - 1e-12):
        t += 1
        rho_t = rho_next
        used += rho_t
        out.append(rho_t)
        rho_next = anneal_factor * rho_t if anneal(t) else rho_t
        if rho - used <= 2 * rho_next * (1 + 1e-12):
            rho_next = rho - used
    return out


#: Peak bytes per cell of the marginals RandDPGen measures and estimates, beside 16 per party (each draws a noise
#: share of every measured marginal): 133 measured on a 3,000,000-value attribute with two parties.
_BYTES_PER_CELL, _BYTES_PER_CELL_AND_PARTY = 128, 16


def _check_workload_memory(domain: Domain, refined, partition: HybridPartition) -> None:
    """Refuse, before any measurement, marginals whose tables do not fit in memory (public sizes only): the
    refined workload, and the 1-way marginals of the first model."""
    cells = float(sum(domain.size(c) for c in refined) + sum(domain.size((a,)) for a in domain.attrs))
    parties = partition.n_parties
    check_memory((_BYTES_PER_CELL + _BYTES_PER_CELL_AND_PARTY * parties) * cells,
                 f"HybridSynthesizer: {len(refined):,} workload marginals of at most max_cells cells and the 1-way "
                 f"marginals ({cells:,.0f} cells in all), noised by {parties} part{'y' if parties == 1 else 'ies'}",
                 "Lower max_cells or use a smaller workload, or coarsen the domain.")


def randdpgen(
    measure: Callable,
    domain: Domain,
    partition: HybridPartition,
    rho: float,
    *,
    workload,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    alpha: float = 0.1,
    beta: float = 0.2,
    rounds: int | None = None,
    max_cells: int = 10_000,
    anneal_factor: float = 4.0,
    protocol: str = "secure_sum",
    shortcut: bool = True,
    variance_model: str = "paper_bound",
    n_repeats: int = 1,
    use_selection_measurements: bool = False,
    charge_selection: bool = True,
    init: str = "uniform",
    pgm_loss: str = "weighted",
    max_iters: int = 1000,
    final_iters: int = 1000,
    tol: float = 1e-6,
    max_model_size: float | None = None,
    selection_scores: str = "workload",
    log: Callable[[str], None] = lambda message: None,
) -> RandDPGenResult:
    """The curator's side of RandDPGen (Algorithm 2, §4.3, with the choices of ``doc/deviations.md``).

    Parameters
    ----------
    measure : callable
        ``measure(r, ρ', protocol=..., n_repeats=..., shortcut=...)`` returning a
        :class:`~skdpsynth.federated.MeasurementReply`, e.g.
        :meth:`Federation.measure <skdpsynth.federated.Federation.measure>`.
        The only access to the parties.
    domain : Domain
        Public domain.
    partition : HybridPartition
        Public partition (validated).
    rho : float
        Nominal zCDP budget ρ.
    workload : list of (clique, weight)
        The workload W with weights ``c_s``.
    rng : numpy.random.Generator
        The curator's randomness (exponential mechanism).
    ledger : PrivacyLedger
        Receives one entry per DMM call and per selection.
    selection_scores : {"workload", "pairs"}, default="workload"
        What the αρ selection measurements measure, and how a candidate is
        scored: every workload marginal, scored on its own noisy answer (the
        paper); or every pair inside a workload marginal, a candidate scored
        by the sum of its pairs' scores (:func:`selection_parts`).
    Other parameters
        As in :class:`HybridSynthesizer`.

    Returns
    -------
    RandDPGenResult

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import Federation, HybridPartition
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> from skdpsynth.synthesizers.hybrid import randdpgen
    >>> rng = np.random.default_rng(0)
    >>> dom = Domain(["a", "b", "c"], [2, 3, 2])
    >>> codes = np.column_stack([rng.integers(0, n, 200) for n in dom.shape])
    >>> part = HybridPartition.grid(200, dom.attrs, n_slices=2, n_vertical=2, random_state=0)
    >>> fed = Federation.from_codes(codes, dom, part, seed=0)   # 2 x 2 parties
    >>> ledger = PrivacyLedger()
    >>> result = randdpgen(fed.measure, dom, part, 1.0, workload=[(("a", "b"), 1.0), (("b", "c"), 1.0)],
    ...                    rng=np.random.default_rng(0), ledger=ledger, rounds=3, max_iters=100, final_iters=100)
    >>> result.refined_workload, len(result.round_budgets)
    ([('a', 'b'), ('b', 'c')], 2)
    >>> round(ledger.total_rho(), 12)   # the rounds use up rho exactly
    1.0
    >>> result.model.domain
    Domain(a=2, b=3, c=2)
    """
    rounds = rounds or 16 * len(domain)
    if init == "oneway" and len(domain) >= rounds:
        raise ValueError(f"init='oneway' needs more rounds than attributes ({len(domain)}); got {rounds}.")
    # Algorithm 2 lines 3-4 (§4.3): W* (refined by Maxsize, no downward closure), weights w_r, OptPBA budgets
    # ρ_r ∝ |r|^{2/3}.
    refined = list(dict.fromkeys(c for c, _ in workload if domain.size(c) <= max_cells))
    if not refined:
        smallest = min((domain.size(c) for c, _ in workload), default=0)
        raise ValueError(f"No workload marginal has at most max_cells={max_cells:,} cells (the smallest has "
                         f"{smallest:,}). Raise max_cells or coarsen the domain, e.g. with a discretizer.")
    _check_workload_memory(domain, refined, partition)
    weights = {r: sum(c * len(set(r) & set(s)) for s, c in workload) for r in refined}
    parts = selection_parts(refined, selection_scores)
    scored = list(dict.fromkeys(s for r in refined for s in parts[r]))
    shares = {s: len(s) ** (2 / 3) for s in scored}
    norm = math.fsum(shares.values())
    selection_budgets = {s: alpha * rho * shares[s] / norm for s in scored}
    if variance_model == "paper_bound":
        understated = [r for r in refined if exceeds_paper_bound(partition, domain, r)]
        if understated:
            warnings.warn(
                f"Theorem 4.1's variance K*S^2/(2 rho) understates the true DMM variance of {len(understated)} "
                f"workload marginals (e.g. {understated[0]}: |r| > S); the selection score and annealing threshold "
                "use the paper's bound as configured, Private-PGM uses the exact variance. "
                "variance_model='exact' uses the exact variance everywhere.", PaperBoundWarning, stacklevel=3)
    # A repeated measurement counts at its nominal budget in the schedule (the ledger charges its true cost).
    budget = LedgerBudget(rho, ledger, cost=lambda entry: entry.rho / entry.details.get("n_repeats", 1))
    steps = _RandDPGenRounds(
        measure, domain, partition, budget, refined, weights, selection_budgets, rng=rng, ledger=ledger,
        alpha=alpha, beta=beta, rounds=rounds, anneal_factor=anneal_factor, protocol=protocol, shortcut=shortcut,
        variance_model=variance_model, n_repeats=int(n_repeats), use_selection_measurements=use_selection_measurements,
        charge_selection=charge_selection, init=init, pgm_loss=pgm_loss, max_iters=max_iters, final_iters=final_iters,
        tol=tol, max_model_size=max_model_size, parts=None if selection_scores == "workload" else parts, log=log)
    model = fit_in_rounds(steps, budget)
    result = steps.result
    result.model = model
    result.measurements = steps.measured
    return result


@dataclass
class _RandDPGenRound(Round):
    """Round ``t``'s budget ``ρ_t``, the selection's ``ε_t`` and the measurement's share; then the pick."""

    rho_t: float = 0.0
    epsilon_t: float = 0.0
    measure_share: float = 0.0
    size_limit: float | None = None
    chosen: Clique = ()
    before: np.ndarray | None = None
    residual: float = float("nan")


class _RandDPGenRounds:
    """The curator's steps of Algorithm 2 for :func:`~.rounds.fit_in_rounds`.

    The rounds' budgets ``ρ_t`` (Algorithm 2, lines 2, 5–7 and 12–18) start at ``ρ / rounds``, grow by
    ``anneal_factor`` when the model barely moved, and sum to exactly ``ρ``: the ledger holds ``αρ`` of selection
    measurements and ``(1 − α) ρ_t`` per round, so the rounds have used ``(spent − αρ) / (1 − α)`` of their ``ρ``.
    """

    def __init__(self, measure: Callable, domain: Domain, partition: HybridPartition, budget: LedgerBudget,
                 refined: list,
                 weights: dict, selection_budgets: dict, *, rng, ledger: PrivacyLedger, alpha: float, beta: float,
                 rounds: int, anneal_factor: float, protocol: str, shortcut: bool, variance_model: str,
                 n_repeats: int, use_selection_measurements: bool, charge_selection: bool, init: str, pgm_loss: str,
                 max_iters: int, final_iters: int, tol: float, max_model_size: float | None, log: Callable,
                 parts: dict | None = None):
        self.measure, self.domain, self.partition, self.budget = measure, domain, partition, budget
        self.rho = rho = budget.rho
        self.refined, self.weights, self.selection_budgets = refined, weights, selection_budgets
        self.rng, self.ledger, self.alpha, self.beta, self.rounds = rng, ledger, alpha, beta, rounds
        self.anneal_factor, self.protocol, self.shortcut, self.e = anneal_factor, protocol, shortcut, n_repeats
        self.variance_model, self.use_selection_measurements = variance_model, use_selection_measurements
        self.charge_selection, self.init, self.pgm_loss = charge_selection, init, pgm_loss
        self.max_iters, self.final_iters, self.tol, self.max_model_size = max_iters, final_iters, tol, max_model_size
        self.log = log
        # None: each candidate scored on its own selection measurement (the paper); else r -> the marginals whose
        # scores it sums (selection_parts).
        self.parts = parts
        self.scored = list(selection_budgets)
        self.sensitivity = max(weights.values())
        self.measured: list[Measurement] = []
        self.exact_measured: list[Measurement] = []
        self.rho_next, self.step, self.size_cache = rho / rounds, None, {}

    # -- the pieces every step uses --------------------------------------------------------------------------------
    def variance(self, r: Clique, rho_prime: float) -> float:
        """The variance model of the score and the annealing threshold (Theorem 4.1's bound or the exact one;
        ``doc/deviations.md``, "Exact DMM variance in the score and annealing")."""
        if self.variance_model == "paper_bound":
            return paper_bound_variance(self.partition.n_slices, self.partition.n_vertical, rho_prime, self.e)
        return measurement_variance(self.partition, self.domain, r, rho_prime, protocol=self.protocol,
                                    n_repeats=self.e, shortcut=self.shortcut)

    def dmm(self, r: Clique, rho_prime: float, what: str) -> tuple[np.ndarray, float]:
        """One distributed measurement of ``r`` at ``ρ'``, charged to the ledger at its true cost."""
        reply = self.measure(r, rho_prime, protocol=self.protocol, n_repeats=self.e, shortcut=self.shortcut)
        values, var = combine(reply, self.domain)
        self.ledger.add(f"{what} {' x '.join(map(str, r))} (DMM, {self.protocol})", NOISE_MECHANISMS[self.protocol],
                        rho=reply.zcdp_charged, sensitivity=1.0, scale=math.sqrt(var), n_values=values.size,
                        per_party=reply.party_rhos(), n_repeats=self.e)
        return values, var

    def sd(self, var: float) -> float:
        """The standard deviation Private-PGM weighs a measurement by."""
        return 1.0 if self.pgm_loss == "unweighted" else math.sqrt(var)

    def add_measurement(self, r: Clique, y: np.ndarray, var: float) -> None:
        self.measured.append(Measurement(r, y, self.sd(var)))
        self.exact_measured.append(Measurement(r, y, math.sqrt(var)))

    def fit_on(self) -> list[Measurement]:
        """The round measurements, and with ``use_selection_measurements`` the selection measurements of
        marginals inside a measured clique (``doc/deviations.md``, "Selection measurements feed the model"): they
        sharpen the estimate without adding cliques (all of them would make the model a complete graph)."""
        if not self.use_selection_measurements:
            return self.measured
        sets = [set(m.clique) for m in self.measured]
        return self.measured + [m for m in self.selection_measurements if any(set(m.clique) <= c for c in sets)]

    def total(self) -> float:
        """The minimum-variance estimate of the record count from every measurement (§4.2, App. C)."""
        return max(minimum_variance_total(self.exact_selection + self.exact_measured), 1.0)

    # -- the steps -----------------------------------------------------------------------------------------------
    def initial_model(self) -> GraphicalModel:
        """Every ``r`` in W* measured once with ``ρ_r`` (total ``αρ``, §4.3); the first model (Algorithm 2,
        line 1)."""
        domain, alpha = self.domain, self.alpha
        selection = {r: self.dmm(r, self.selection_budgets[r], "selection measurement") for r in self.scored}
        self.selection = selection
        self.selection_measurements = [Measurement(r, y, self.sd(v)) for r, (y, v) in selection.items()]
        self.exact_selection = [Measurement(r, y, math.sqrt(v)) for r, (y, v) in selection.items()]
        what = "workload marginals" if self.parts is None else "pairs of workload marginals"
        self.log(f"{len(self.scored)} {what} measured for selection (alpha = {alpha:g} of the budget)")
        # The initial model is uniform, scaled to the MVU total of the selection measurements.
        total = self.total()
        model = GraphicalModel(domain, {(a,): np.zeros(domain[a]) for a in domain}, total)
        self.result = RandDPGenResult(model, self.refined, self.weights, self.selection_budgets,
                                      {r: (y, v) for r, (y, v) in selection.items()}, total_estimate=total)
        if self.init == "oneway":
            # A measured 1-way start (doc/deviations.md): every 1-way marginal measured with (1 − α)ρ_0 (no
            # selection needed), each counted as a round of ρ_0, so that αρ + (1 − α) Σ ρ_t = ρ still holds.
            for a in domain:
                self.add_measurement((a,), *self.dmm((a,), (1 - alpha) * self.rho_next, "initial 1-way measurement"))
                self.result.round_budgets.append(self.rho_next)
            self.result.total_estimate = self.total()
            model, info = mirror_descent(domain, self.measured, known_total=self.result.total_estimate,
                                         iters=self.max_iters, tol=self.tol)
            self.step = info.step_size
            self.log(f"{len(domain)} 1-way marginals measured; budget used {self.rounds_used() / self.rho:.1%}")
        return model

    def rounds_used(self) -> float:
        """``Σ ρ_t`` so far, from the ledger: it holds ``αρ + (1 − α) Σ ρ_t`` (nominal)."""
        return (self.budget.spent - self.alpha * self.rho) / (1 - self.alpha)

    def plan(self, budget: LedgerBudget, number: int) -> _RandDPGenRound | None:
        """The next ``ρ_t`` (Algorithm 2, lines 2, 5–7 and 12–18) until the rounds have used up ``ρ`` exactly."""
        used = self.rounds_used()
        if used >= self.rho * (1 - 1e-12):
            return None
        rho_t = self.rho_next
        # The score reads the data only through the (paid) selection measurements, so selection is
        # post-processing; without charging it, the round's whole (1 - alpha) rho_t goes to the measurement
        # (doc/deviations.md, "Selection is not charged").
        measure_share = self.beta if self.charge_selection else 1 - self.alpha
        limit = None if self.max_model_size is None else self.max_model_size * min((used + rho_t) / self.rho, 1.0)
        return _RandDPGenRound(number, False, rho_t, math.sqrt(8 * (1 - self.alpha - self.beta) * rho_t),
                               measure_share, limit)

    def select_and_measure(self, model: GraphicalModel, plan: _RandDPGenRound) -> list[Measurement]:
        """The exponential mechanism on the quality score of App. A (Algorithm 2, lines 8–9); a DMM of the pick
        (line 10)."""
        domain, rho_t = self.domain, plan.rho_t
        candidates = self.refined
        if plan.size_limit is not None:
            candidates = filter_by_model_size(self.refined, domain, model.cliques, plan.size_limit,
                                              self.size_cache) or self.refined
        scores = self.scores(model, candidates, plan.measure_share * rho_t)
        n = len(self.result.selected) + 1
        plan.chosen = candidates[exponential_mechanism(
            scores, epsilon=plan.epsilon_t, sensitivity=self.sensitivity, random_state=self.rng,
            ledger=self.ledger if self.charge_selection else None, description=f"round {n}: select a marginal")]
        # Measured with βρ_t (or (1 − α)ρ_t when selection is not charged).
        y, var = self.dmm(plan.chosen, plan.measure_share * rho_t, f"round {n}: measurement")
        self.add_measurement(plan.chosen, y, var)
        plan.before = model.project(plan.chosen).ravel()
        return self.measured[-1:]

    def scores(self, model: GraphicalModel, candidates: list, rho_measure: float) -> np.ndarray:
        """Each candidate's quality score, read from the selection measurements only (App. A)."""
        domain, selection, expected = self.domain, self.selection, math.sqrt(2 / math.pi)
        if self.parts is None:
            # The error on r's own selection measurement, penalised by the expected noise of both measurements.
            return np.array([
                self.weights[r] * (np.abs(selection[r][0] - model.project(r).ravel()).sum()
                                   - expected * math.sqrt(self.variance(r, rho_measure)
                                                          + self.variance(r, self.selection_budgets[r]))
                                   * domain.size(r))
                for r in candidates
            ])
        # Each part's error less its selection measurement's expected noise, summed over r's parts, less the
        # expected noise of measuring r.
        needed = dict.fromkeys(s for r in candidates for s in self.parts[r])
        error = {s: np.abs(selection[s][0] - model.project(s).ravel()).sum()
                 - expected * math.sqrt(self.variance(s, self.selection_budgets[s])) * domain.size(s)
                 for s in needed}
        return np.array([
            self.weights[r] * (math.fsum(error[s] for s in self.parts[r])
                               - expected * math.sqrt(self.variance(r, rho_measure)) * domain.size(r))
            for r in candidates
        ])

    def estimate(self, model: GraphicalModel, plan: _RandDPGenRound, new: list[Measurement]) -> GraphicalModel:
        """Private-PGM on all round measurements (Algorithm 2, line 11; §4.2), total = MVU estimate, warm start."""
        self.result.total_estimate = self.total()
        model, info = mirror_descent(self.domain, self.fit_on(), known_total=self.result.total_estimate,
                                     potentials=model, iters=self.max_iters, tol=self.tol, step_size=self.step)
        self.step, plan.residual = info.step_size, info.residual
        return model

    def end_round(self, model: GraphicalModel, plan: _RandDPGenRound) -> None:
        """Anneal when the model barely moved (Algorithm 2, lines 12–18); the last round takes what is left."""
        result, rho_t = self.result, plan.rho_t
        result.selected.append(plan.chosen)
        result.round_budgets.append(rho_t)
        moved = np.abs(model.project(plan.chosen).ravel() - plan.before).sum()
        threshold = (math.sqrt(2 / math.pi) * math.sqrt(self.variance(plan.chosen, plan.measure_share * rho_t))
                     * self.domain.size(plan.chosen))
        self.rho_next = rho_t
        if moved <= threshold:
            self.rho_next = self.anneal_factor * rho_t
            result.anneal_events.append(len(result.selected))
        used = self.rounds_used()
        if self.rho - used <= 2 * self.rho_next * (1 + 1e-12):
            self.rho_next = self.rho - used
        self.log(f"round {len(result.selected)}: {plan.chosen}, budget used {used / self.rho:.1%}, residual "
                 f"{plan.residual:.3f} sigma, model {model.size_mb():.2f} MB"
                 + (" (annealed)" if result.anneal_events and result.anneal_events[-1] == len(result.selected)
                    else ""))

    def final_model(self, model: GraphicalModel) -> GraphicalModel:
        if self.final_iters:
            model, info = mirror_descent(self.domain, self.fit_on(), known_total=self.result.total_estimate,
                                         potentials=model, iters=self.final_iters, tol=self.tol, step_size=self.step)
            self.log(f"final estimation: {info.iterations} iterations, residual {info.residual:.3f} sigma")
        return model
