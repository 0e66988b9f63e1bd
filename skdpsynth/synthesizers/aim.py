"""AIM: an adaptive and iterative mechanism (McKenna, Mullins, Sheldon & Miklau, VLDB 2022).

Workload-aware select-measure-generate:

1. candidates = the downward closure of the workload, each weighted by
   ``w_r = Σ_s c_s |r ∩ s|``;
2. spend part of the budget on every 1-way marginal and fit a first model;
3. rounds (at most ``16 d`` measurements), each measurement costing ``ρ_t`` split 0.1 selection / 0.9 measurement:

   * keep the candidates whose junction tree stays within
     ``max_model_size · ρ_used / ρ`` MB (or that the model already covers);
   * select ``k`` (``selections_per_round``, default 1, more on wide tables)
     with the exponential mechanism on
     ``w_r (‖M_r(D) − A_r‖₁ − √(2/π) σ n_r)`` (sensitivity ``max w_r``), one
     after another, each over the candidates that share at most one
     attribute with the round's earlier picks;
     ``A_r`` is the model's answer ``M_r(p)``, computed lazily (the same
     distribution, scoring only the candidates whose upper bound, an earlier
     score plus how far the model can have moved since, could still win), or,
     with sampled scoring (the default above 1,000 candidates), estimated from
     records drawn from the model;
   * measure them with Gaussian noise σ and re-estimate (warm start);
   * annealing: if the model's answers on the new cliques moved by less than
     the expected noise ``√(2/π) σ Σ n_r``, halve σ and double ε for later rounds;
   * when less than two rounds' budget is left, the last round spends exactly the remainder;

4. a final, longer estimate; generate by randomized rounding.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from ..domain import Domain
from ..graphical import GraphicalModel, mirror_descent
from ..graphical.tables import num_threads, single_threaded_blas
from ..marginals import marginals
from ..params import Interval, Options
from ..privacy import PrivacyLedger, lazy_exponential_mechanism
from .base import BaseSynthesizer
from .rounds import LedgerBudget, Round, fit_in_rounds
from .select_measure import (
    CandidateErrors,
    check_fit_memory,
    ENGINE_PARAMETER_CONSTRAINTS,
    ONE_WAY_LABEL,
    one_way_sigma,
    WORKLOAD_CONSTRAINT,
    child_generator,
    choose_engine,
    compile_workload,
    measure_marginals,
    model_size_check,
    resolve_workload,
)

__all__ = ["AIMSynthesizer"]

# The extra mirror-descent iterations, in chunks, that a round stopped at the noise level gets while its
# annealing test would still pass (see _fit_codes).  Each chunk is a new warm-started estimate: the chunks' extra
# iterations help, not only the decision (doc/engine.md has the measurements).
_ANNEAL_CHECK_ITERS = (10, 20, 40, 80)


class _Selector:
    """A round's selections: ``k`` exponential mechanisms, each over the candidates that fit the size limit and
    share at most one attribute with the round's earlier picks, on the round's scores
    ``w_r (‖M_r(D) − A_r‖₁ − √(2/π) σ n_r)``.

    ``A_r`` comes from the model: exactly and lazily (``"exact"``: only the candidates whose bound could win
    are scored, by inference), or for every candidate from records drawn from the model (``"sampled"``).
    """

    def __init__(self, domain: Domain, candidates: list, weight: np.ndarray, errors: CandidateErrors,
                 scoring: str, n_samples: int, scoring_rng: np.random.Generator):
        self.domain, self.candidates, self.weight, self.errors = domain, candidates, weight, errors
        self.scoring, self.n_samples, self.scoring_rng = scoring, n_samples, scoring_rng
        self.abs_weight = np.abs(weight)
        self.by_abs_weight = np.argsort(-self.abs_weight, kind="stable")
        self.n_cells = np.array([domain.size(c) for c in candidates], dtype=float)
        self.size_cache: dict = {}

    def select(self, model, k: int, sigma: float, epsilon: float, size_limit: float, rng,
               ledger: PrivacyLedger) -> tuple[list, int]:
        """The round's ``k`` picks, and how many scores were computed."""
        candidates, weight, errors = self.candidates, self.weight, self.errors
        errors.track(model)
        bias = np.sqrt(2 / np.pi) * sigma * self.n_cells
        if self.scoring == "sampled":
            sampled_scores = weight * (errors.sampled(self.n_samples, self.scoring_rng, workers=num_threads()) - bias)
        chosen: list = []
        scored = []
        for _ in range(k):
            fits = model_size_check(self.domain, model.cliques + chosen, size_limit, self.size_cache)

            # The round's scores do not see its earlier picks: the next best candidates would mostly be the
            # triples around the same under-fitted pair.  So a pick may share at most one attribute with the
            # round's earlier picks (the others wait for the re-fitted model's scores); faster and more accurate
            # (doc/engine.md).
            picked = [set(p) for p in chosen]

            def eligible(i: int) -> bool:
                attrs = set(candidates[i])
                return all(len(attrs & p) < 2 and attrs != p for p in picked) and fits(candidates[i])

            # The exponential mechanism over the candidates that fit, with sensitivity their largest |weight|.
            sensitivity = next(self.abs_weight[i] for i in self.by_abs_weight if eligible(i))
            if self.scoring == "sampled":
                upper = sampled_scores

                def score(i: int) -> float:
                    scored.append(i)
                    return sampled_scores[i]
            else:
                def score(i: int) -> float:
                    scored.append(i)
                    return weight[i] * (errors.exact(i) - bias[i])

                # Scoring and size-checking every candidate each round is what made wide tables slow (20,875
                # candidates for 50 attributes): the lazy mechanism (same distribution) scores only those whose
                # upper bound could win; the bounds follow the earlier scores and how far the model moved since.
                error_low, error_high = errors.bounds()
                upper = np.where(weight >= 0, weight * (error_high - bias), weight * (error_low - bias))
            # Scores in threads, each with a one-thread BLAS (see single_threaded_blas), also when there is one
            # thread: the sums are then BLAS products whatever the thread count, so the scores' bits are the same.
            # The selection is the same with any number of threads.
            with single_threaded_blas():
                pick = lazy_exponential_mechanism(upper, score, epsilon=epsilon, sensitivity=sensitivity,
                                                  eligible=eligible, workers=num_threads(), random_state=rng,
                                                  ledger=ledger, description="select a marginal")
            chosen.append(candidates[pick])
        return chosen, len(scored)


class AIMSynthesizer(BaseSynthesizer):
    """AIM: workload-adaptive selection of marginals, fitted with Private-PGM.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float, default=1e-9
    domain : dict or Domain, optional
        Public domain (see :class:`~skdpsynth.synthesizers.base.BaseSynthesizer`).
    workload : None, int or list, default=None
        The marginals the synthetic data should preserve: ``None`` is all
        3-way marginals, an int ``k`` all k-way ones, or a list of cliques or
        ``(clique, weight)`` pairs.
    max_cells : int, default=10000
        Workload cliques with more cells are dropped.  When no k-way marginal
        of the default workload fits, the largest smaller marginals that do
        are used (said with ``verbose``); ``workload_`` holds what was used.
    rounds : int, optional
        The paper's ``T``: each measurement's first budget is that of ``T``
        equal measurements (default ``16 · n_attributes``), so this bounds
        the number of measurements; a round makes ``selections_per_round_``
        of them.
    max_model_size : float, default=80
        Junction-tree size limit in MB, scaled by the fraction of the budget used.
    max_iters : int, default=1000
        Mirror-descent iterations per round (fewer when it converges first).
    final_iters : int, default=2500
        Iterations of the final estimate.
    tol : float, default=1e-6
        Relative loss decrease over 10 iterations under which an estimate stops early.
    round_stopping : {"noise", None}, default="noise"
        When a round's estimate stops (the final one is not affected).
        ``"noise"``: as soon as its loss ``Σ ‖Q μ − y‖² / σ²`` is at most the
        previous round's plus the number of new answers, i.e. the model fits
        the earlier measurements as well as before and the new one to its
        noise level; ``None``: after ``max_iters`` iterations or ``tol``.
        With ``"noise"``, a round whose annealing test would pass at that
        point (the model's answer on the new clique moved less than the
        noise) goes on, for at most 150 iterations, until it would fail: the
        test is about the fitted model, which a noise-level stop has not
        reached.
    final_stopping : {"noise", None}, default="noise"
        When the final estimate stops.  ``"noise"``: as soon as its loss is
        at most the number of answers measured, i.e. the model fits all
        measurements to their noise level (standardized residuals of
        root-mean-square at most 1: Morozov's discrepancy principle; usually
        already true after the last round, so the final estimate is short);
        ``None``: after ``final_iters`` iterations or ``tol``.  Fitting past
        the noise level fits the noise: more iterations leave the synthetic
        data's TVD unchanged (``doc/engine.md``).
    scoring : {"auto", "exact", "sampled"}, default="auto"
        How the selection computes the model's answers ``A_r`` in its
        scores.  ``"exact"``: by inference on the model, for the candidates
        that could win (lazy selection).  ``"sampled"``: every round,
        ``scoring_samples`` records are drawn from the model and ``A_r`` is
        their marginal scaled to the model's total (exact for 1-way
        candidates and those the model holds); the records come from the
        released model alone, so the scores keep sensitivity ``max w_r``
        and the guarantee is the same.  ``"auto"``: sampled when there are
        more than 1,000 candidates (the default workload on 19 attributes
        or more), where exact inference on thousands of 3-way marginals
        dominates a fit; the choice is in ``scoring_`` and the verbose
        output.  On Adult (305 candidates) auto is exact.
    scoring_samples : "auto" or int, default="auto"
        Records ``S`` drawn per round for sampled scoring.  The estimate's
        L1 error on an ``n_r``-cell marginal is about
        ``√(2/π) N √(n_r / S)`` at most for ``N`` records, and the work per
        round grows as ``S`` times the number of candidates.  ``"auto"``:
        50,000 up to 10,000 candidates, 25,000 above (in
        ``scoring_samples_``).  Fewer records make noisier scores, which
        favour candidates of many cells (the largest of many noisy scores
        wins) and so larger, slower models (``doc/engine.md``, "AIM on wide
        tables").
    selections_per_round : "auto" or int, default="auto"
        Candidates selected (each with its own exponential mechanism, on the
        round's scores, over the candidates sharing at most one attribute
        with the round's earlier picks, since the scores do not see them)
        and measured before each re-estimate.  Each is charged as a round of one would be, so
        the budget and the number of measurements are unchanged; only the
        model is re-fitted ``k`` times less often.  ``"auto"``: one per 8
        attributes (1 up to 15 attributes, so on Adult; 3 for 25, 6 for 50,
        12 for 100); at most the number of attributes; in
        ``selections_per_round_``.
    sampling : {"round", "sample"}, default="round"
    constraints : list of Constraint or dict, optional
        Public structural constraints (:mod:`skdpsynth.constraints`): value
        combinations no synthetic record may have, e.g.
        ``[{"forbid": {"relationship": "Husband", "sex": "Female"}}]``.  Public
        metadata, no budget; folded into the fitted model as impossible cells
        (see ``doc/constraints.md``).
    random_state : None, int or numpy.random.Generator
    verbose : int, default=0
    privacy_unit : str, optional
        User-level DP: the identifier column of ``X`` (e.g. ``"user_id"``).
        Each person's records are bounded to ``max_contributions`` before
        anything is measured, the identifier is dropped (never synthesized
        and not in the domain) and the guarantee, as ``privacy_ledger_``
        states it, holds per person.  ``X`` must then be a DataFrame.  See
        ``doc/user_level.md``.
    max_contributions : int, optional
        ``k``: records kept per person (chosen uniformly at random within
        each person; a missing identifier is a person of its own); required
        with ``privacy_unit``.  The method runs at the record-level budget
        ``ρ/k²`` (group privacy), so its noise grows with ``k``.

    Attributes
    ----------
    workload_ : list of (tuple, float)
        The workload the fit used: ``(clique, weight)`` pairs after the
        ``max_cells`` filter (public: computed from the domain alone).
    selected_ : list of tuple
        The cliques selected and measured, in order.
    scoring_ : {"exact", "sampled"}
        The scoring used (see ``scoring``).
    scoring_samples_ : int
        The records drawn per round for sampled scoring (see ``scoring_samples``).
    selections_per_round_ : int
        The selections per round used (see ``selections_per_round``).

    Notes
    -----
    Every attribute's 1-way marginal is measured, including those of
    attributes that no workload clique contains.  Before any work the fit
    checks that the true answers it holds fit in memory, and raises a
    ``MemoryError`` with the numbers otherwise.

    Examples
    --------
    >>> from skdpsynth import AIMSynthesizer
    >>> from skdpsynth.datasets import load_adult
    >>> adult = load_adult(discretized=True)
    >>> X = adult.frame.iloc[:3000, [1, 6, 8, 13]]
    >>> aim = AIMSynthesizer(epsilon=1.0, domain=adult.domain.project(X.columns).to_dict(), random_state=0)
    >>> aim.fit(X).sample(10).shape
    (10, 4)
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-9,
        *,
        domain=None,
        workload=None,
        max_cells: int | None = 10000,
        rounds: int | None = None,
        max_model_size: float = 80.0,
        max_iters: int = 1000,
        final_iters: int = 2500,
        tol: float = 1e-6,
        round_stopping: str | None = "noise",
        final_stopping: str | None = "noise",
        scoring: str = "auto",
        scoring_samples="auto",
        selections_per_round="auto",
        sampling: str = "round",
        constraints=None,
        random_state=None,
        verbose: int = 0,
        privacy_unit=None,
        max_contributions: int | None = None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.domain = domain
        self.workload = workload
        self.max_cells = max_cells
        self.rounds = rounds
        self.max_model_size = max_model_size
        self.max_iters = max_iters
        self.final_iters = final_iters
        self.tol = tol
        self.round_stopping = round_stopping
        self.final_stopping = final_stopping
        self.scoring = scoring
        self.scoring_samples = scoring_samples
        self.selections_per_round = selections_per_round
        self.sampling = sampling
        self.constraints = constraints
        self.random_state = random_state
        self.verbose = verbose
        self.privacy_unit = privacy_unit
        self.max_contributions = max_contributions

    _parameter_constraints = {
        "workload": WORKLOAD_CONSTRAINT,
        "max_cells": [Interval(Integral, 1, None), None],
        "rounds": [Interval(Integral, 1, None), None],
        "max_model_size": [Interval(Real, 0, None, closed="neither")],
        "round_stopping": [Options("noise"), None],
        "final_stopping": [Options("noise"), None],
        **ENGINE_PARAMETER_CONSTRAINTS,
    }

    def _choose_engine(self, domain: Domain, n_candidates: int) -> None:
        """``scoring_`` and ``selections_per_round_`` from the hyper-parameters and public sizes only."""
        self.scoring_, self.scoring_samples_, self.selections_per_round_ = choose_engine(
            self.scoring, self.scoring_samples, self.selections_per_round, len(domain), n_candidates)
        self._log(f"scoring: {self.scoring_}"
                  + (f" on {self.scoring_samples_:,} records drawn from the model" if self.scoring_ == "sampled" else "")
                  + f" ({n_candidates:,} candidates); {self.selections_per_round_} selection(s) per round")

    def _one_way_sigma(self, attr) -> float | None:
        return one_way_sigma(self.privacy_ledger_, attr)   # every column's 1-way marginal is measured first

    def _fit_codes(self, codes, domain: Domain, ledger: PrivacyLedger, rng, rho: float) -> None:
        rounds = self.rounds or 16 * len(domain)
        if len(domain) >= rounds:
            # Every attribute's 1-way marginal costs one round's measurement budget (0.9 ρ / rounds):
            # with this few rounds they would use up the whole budget before any selection.
            raise ValueError(
                f"rounds={rounds} is too small for {len(domain)} one-way marginals; AIM needs more rounds "
                f"than attributes (default 16 per attribute = {16 * len(domain)})."
            )
        workload = resolve_workload(self.workload, domain, self.max_cells, log=self._log)
        self.workload_ = workload
        weights = compile_workload(workload, domain)
        candidates = list(weights)
        self._choose_engine(domain, len(candidates))
        # The true answers of every candidate are held for the whole fit; refuse before computing them.
        check_fit_memory("AIMSynthesizer", domain, candidates, self.max_model_size, 8.0,
                         "Lower max_cells (default 10000) or use a smaller workload, or coarsen the domain.")
        answers = {c: t.ravel() for c, t in marginals(codes, domain, candidates).items()}
        errors = CandidateErrors(domain, answers, candidates)
        weight = np.array([weights[c] for c in candidates], dtype=float)
        self.selected_ = []
        steps = _AIMRounds(self, codes, domain, ledger, rng, rho, rounds, candidates, weight, errors)
        self.model_ = fit_in_rounds(steps, LedgerBudget(rho, ledger))
        self.n_records_ = self.model_.total


@dataclass
class _AIMRound(Round):
    """A round's noise scale ``sigma``, selection ``epsilon`` and model-size limit; then what the estimate saw."""

    sigma: float = 0.0
    epsilon: float = 0.0
    size_limit: float = 0.0
    used_after: float = 0.0
    chosen: list = field(default_factory=list)
    n_scored: int = 0
    moved_less_than_noise: Callable[[], bool] | None = None
    iterations: int = 0
    extra_iterations: int = 0


class _AIMRounds:
    """AIM's steps (step 2 to 4 of the module docstring) for :func:`~.rounds.fit_in_rounds`.

    Each measurement's budget is ``ρ_t = ρ / rounds`` at first, split 0.9 to the Gaussian measurement
    (``σ``) and 0.1 to the selection (``ε``); annealing halves ``σ`` and doubles ``ε``; the last round
    takes exactly what the ledger says is left.
    """

    def __init__(self, synth: AIMSynthesizer, codes, domain: Domain, ledger: PrivacyLedger, rng, rho: float,
                 rounds: int, candidates: list, weight: np.ndarray, errors: CandidateErrors):
        self.synth, self.codes, self.domain, self.ledger, self.rng = synth, codes, domain, ledger, rng
        self.rho, self.candidates, self.weight, self.errors = rho, candidates, weight, errors
        self.sigma = np.sqrt(rounds / (2 * 0.9 * rho))
        self.epsilon = np.sqrt(8 * 0.1 * rho / rounds)
        self.per_round = synth.selections_per_round_

    def initial_model(self) -> GraphicalModel:
        """Every 1-way marginal measured with one round's ``σ``, and a first estimate."""
        one_way = [c for c in self.candidates if len(c) == 1]
        self.measurements = measure_marginals(self.codes, self.domain, one_way, self.sigma, self.rng, self.ledger,
                                              label=ONE_WAY_LABEL)
        model, self.info = mirror_descent(self.domain, self.measurements, iters=self.synth.max_iters,
                                          tol=self.synth.tol)
        self.selector = _Selector(self.domain, self.candidates, self.weight, self.errors, self.synth.scoring_,
                                  self.synth.scoring_samples_, child_generator(self.rng))
        return model

    def plan(self, budget: LedgerBudget, number: int) -> _AIMRound:
        """``σ`` and ``ε`` of the round; when less than two rounds' budget is left, those that spend it all."""
        k, sigma, epsilon = self.per_round, self.sigma, self.epsilon
        last = budget.left < 2 * k * (0.5 / sigma**2 + epsilon**2 / 8)
        if last:   # 0.9 of what is left measuring and 0.1 selecting
            remaining = budget.left
            sigma = np.sqrt(k / (2 * 0.9 * remaining))
            epsilon = np.sqrt(8 * 0.1 * remaining / k)
        used_after = budget.fraction_used(planned=k * (0.5 / sigma**2 + epsilon**2 / 8))
        return _AIMRound(number, last, sigma, epsilon, self.synth.max_model_size * used_after, used_after)

    def select_and_measure(self, model: GraphicalModel, plan: _AIMRound) -> list:
        plan.chosen, plan.n_scored = self.selector.select(model, self.per_round, plan.sigma, plan.epsilon,
                                                          plan.size_limit, self.rng, self.ledger)
        return measure_marginals(self.codes, self.domain, plan.chosen, plan.sigma, self.rng, self.ledger)

    def estimate(self, model: GraphicalModel, plan: _AIMRound, new: list) -> GraphicalModel:
        """Warm-started mirror descent, stopped at the noise level; longer while the annealing test would pass.

        A round stops once the model fits everything as well as the last one did, plus the new answers to
        their noise level (one χ² unit each): past that point it only refines what later rounds and the final
        estimate refine anyway.  Annealing asks whether the *fitted* model moved less than the noise on the new
        cliques; a round stopped at the noise level has not finished moving, so the test would pass too soon.
        So a round whose test would pass goes on, chunk by chunk of ``_ANNEAL_CHECK_ITERS``, until it fails
        (doc/engine.md).
        """
        synth, domain = self.synth, self.domain
        self.measurements += new
        before = [model.project(c).ravel() for c in plan.chosen]
        threshold = np.sqrt(2 / np.pi) * plan.sigma * sum(b.size for b in before)
        after: list = []

        def moved_less_than_noise() -> bool:   # the annealing test, on the model's answers so far
            return sum(np.abs(a - b).sum() for a, b in zip(after, before)) <= threshold

        target = self.info.loss + sum(m.n_answers for m in new) if synth.round_stopping == "noise" else None
        model, self.info = mirror_descent(domain, self.measurements, potentials=model, iters=synth.max_iters,
                                          tol=synth.tol, step_size=self.info.step_size, target_loss=target)
        plan.iterations = self.info.iterations
        after = [model.project(c).ravel() for c in plan.chosen]
        if target is not None and not plan.last:
            for chunk in _ANNEAL_CHECK_ITERS:
                if not moved_less_than_noise():
                    break
                model, self.info = mirror_descent(domain, self.measurements, potentials=model, iters=chunk,
                                                  tol=synth.tol, step_size=self.info.step_size)
                plan.extra_iterations += self.info.iterations
                after = [model.project(c).ravel() for c in plan.chosen]
                if self.info.iterations < chunk:   # converged: the movement is final
                    break
        plan.moved_less_than_noise = moved_less_than_noise
        return model

    def end_round(self, model: GraphicalModel, plan: _AIMRound) -> None:
        """Record the picks; anneal (halve ``σ``, double ``ε``) if the model moved less than the noise."""
        synth = self.synth
        synth.selected_ += plan.chosen
        synth._log(
            f"round {len(synth.selected_) // self.per_round}: {', '.join(map(str, plan.chosen))} (sigma "
            f"{plan.sigma:.1f}), budget used {plan.used_after:.1%}, residual {self.info.residual:.3f} sigma, model "
            f"{model.size_mb():.2f} MB, {plan.iterations + plan.extra_iterations} iterations "
            f"({plan.extra_iterations} after fitting to the noise), "
            + (f"{len(self.candidates):,} candidates scored on {synth.scoring_samples_:,} sampled records"
               if synth.scoring_ == "sampled" else f"{plan.n_scored:,} of {len(self.candidates):,} candidates scored")
        )
        if not plan.last and plan.moved_less_than_noise():
            self.sigma, self.epsilon = plan.sigma / 2, plan.epsilon * 2

    def final_model(self, model: GraphicalModel) -> GraphicalModel:
        """The final estimate, stopped once every measurement fits to its noise level (χ² of the answers)."""
        synth = self.synth
        synth._log(f"{len(synth.selected_)} rounds done; final estimation ({synth.final_iters:,} iterations at most)")
        target = sum(m.n_answers for m in self.measurements) if synth.final_stopping == "noise" else None
        model, info = mirror_descent(self.domain, self.measurements, potentials=model, iters=synth.final_iters,
                                     tol=synth.tol, step_size=self.info.step_size, target_loss=target,
                                     callback=synth._estimation_progress("final estimation", self.measurements,
                                                                         synth.final_iters))
        synth._log(f"final estimation: {info.iterations:,} iterations ({info.seconds:.1f} s), residual "
                   f"{info.residual:.3f} sigma")
        return model
