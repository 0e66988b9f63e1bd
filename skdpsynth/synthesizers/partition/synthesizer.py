"""PPSyn (Zhang, Deng & Yin): partition-based DP synthetic data — Algorithm 1 of the paper, spec ``partition.md``.

An AIM-style select–measure–generate loop with two changes: a selected marginal's cells are grouped and only the
group sums are measured (less noise, some reconstruction error), and each marginal's budget comes from an error
target ``η·Contr``::

    1-3   noisy 1-way marginals with init_frac·ρ, split ∝ c_i^{2/3} (PrivSyn); fit the model     (spec §4.2)
    5-11  while budget is left:
            select a marginal m and its partition P_m and budget ρ_m   (PartSele, §5; strict: §16)
            measure the group sums of P_m with Gaussian noise of budget ρ_m       (§10)
            re-estimate the model (warm start)                                     (§11)
    12    sample from the model

``privacy_mode="strict"`` (default, spec §16) partitions public proxy marginals (the first, 1-way model's), chooses
a (marginal, partition) pair with the exponential mechanism on a utility of bounded sensitivity, releases the
deviation the pair's group sums capture with Gaussian noise and derives ρ_m from that; the ledger sums to exactly ρ.

Where strict mode departs from spec §16 as written (measured reasons in ``doc/partition.md``): the spec scores a
marginal by ``η·Contr − RE`` with RE computed on the model, which cannot see the deviation being measured — one
group (measuring only the total) then looks perfect and is chosen forever.  Here each partition of the public
sequence is scored by the part of the deviation its group sums capture, ``G = Σ_I |Σ_{i∈I} d_i|`` (sensitivity
1), minus the noise its ``k`` sums add at the round's budget (``strict_utility="gain"``; the spec's ratio form
``max(η·G − r, 0)/k^{2/3}`` is ``"efficiency"``); the EM picks the partition with the marginal, and ``G̃``
replaces ``C̃`` in the budget formula.  Each measurement's ρ_m is clipped to ``round_budget`` (by default between
the measurement share over T and four times that), which bounds the rounds and keeps one marginal from taking
the rest.  ``privacy_mode="paper"`` runs the algorithm as published — partitions,
budgets and scores from the raw data — which is not differentially private (spec §15.1): it warns, records the
leak in the ledger and never states a DP guarantee.

On wide tables (more than 1,000 candidates: 19 attributes or more with the default workload) strict mode scores
each round on records drawn from the model instead of exact inference, and makes one selection per 8 attributes
before each re-estimate (``scoring``, ``selections_per_round``; the same options as AIM's, see ``doc/partition.md``).
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ...domain import Domain
from ...graphical import Measurement, mirror_descent
from ...marginals import marginals
from ...params import Interval, Options
from ...privacy import (
    PrivacyLedger,
    exponential_mechanism,
    gaussian_mechanism,
    lazy_exponential_mechanism,
    warn_privacy_leak,
)
from ...utils import check_memory
from ..base import BaseSynthesizer
from ..select_measure import (
    ENGINE_PARAMETER_CONSTRAINTS,
    WORKLOAD_CONSTRAINT,
    child_generator,
    choose_engine,
    compile_workload,
    held_by_model,
    model_size_check,
    resolve_workload,
    sampled_shares,
)
from .partitioning import aggregation_matrix, required_rho, uniform_estimate
from .selection import SequenceCache, StrictOptions, contributions, paper_scores, strict_options

__all__ = ["PartitionSynthesizer"]

# Strict mode rebuilds a candidate's partition sequence when its model marginal moved by more than this fraction
# of the total in L1 since the sequence was built (post-processing of the public model; saves rebuilding hundreds
# of sequences every round for marginals the last measurement barely touched).
_REFRESH = 0.01
# Strict mode's default cap on a multi-way sequence: partitions of up to 256 groups, plus single cells.
_STRICT_MAX_STEPS = 255
# Strict mode's default junction-tree size limit, MB (see ``max_model_size``).
_STRICT_MAX_MODEL_MB = 10.0


class _Budget:
    """The budget used so far, and how one measurement's ``ρ_m`` is settled: clipped to ``round_budget``, never
    more than is left, and all that is left when less than a selection's worth would remain."""

    def __init__(self, rho: float, used: float, rho_sel: float, bounds, max_selections: int | None):
        self.rho, self.used, self.rho_sel, self.bounds, self.max_selections = rho, used, rho_sel, bounds, max_selections

    def settle(self, rho_m: float, strict: bool, n_selected: int) -> tuple[float, bool, bool]:
        """``(rho_m, skipped, final)`` for a selection whose error target asks for ``rho_m``."""
        # Never overshoot, never leave less than a selection's worth.
        available = self.rho - self.used - self.rho_sel
        if self.bounds is not None and np.isfinite(rho_m):
            # A measurement gets at least the floor (less noise than its error target asks for; bounds the
            # number of rounds and the model's growth) and at most the cap (no single marginal takes the rest).
            rho_m = float(np.clip(rho_m, *self.bounds))
        last = self.max_selections is not None and n_selected + 1 >= self.max_selections
        # Skip only with room for a real round after it (2 ρ_sel: float rounding cannot leave a budget ≤ 0).
        skipped = not np.isfinite(rho_m) and strict and available > 2 * self.rho_sel and not last
        # The slack keeps float rounding from leaving a next round with a budget ≤ 0 (the round_budget floor
        # makes exact ties likely).
        slack = 1e-9 * self.rho
        final = False
        if not skipped and (not np.isfinite(rho_m) or rho_m > available
                            or available - rho_m <= self.rho_sel + slack or last):
            rho_m, final = available, True
        return rho_m, skipped, final


class _StrictSelector:
    """Strict PartSele's options for a round, and which of them a round's next pick may take.

    The deviations ``d_w = M_w(D) − M_w(p̂)`` use the model's marginals by inference (``"exact"``) or, for the
    multi-way candidates no model clique holds, from records drawn from the model (``"sampled"``); either way
    they depend on the data only through ``M_w(D)``, so each option's ``G`` has sensitivity 1.
    """

    def __init__(self, domain: Domain, candidates: list, answers, cache: SequenceCache, initial_proxy, eta: float,
                 *, uniform: bool, partitions: bool, noise_per_group, scoring: str, n_samples: int, scoring_rng):
        self.domain, self.candidates, self.answers, self.cache = domain, candidates, answers, cache
        self.initial_proxy, self.eta, self.uniform, self.partitions = initial_proxy, eta, uniform, partitions
        self.noise_per_group, self.scoring, self.n_samples, self.scoring_rng = (noise_per_group, scoring, n_samples,
                                                                                scoring_rng)
        self.position = {a: i for i, a in enumerate(domain.attrs)}
        self._incidence = None

    def options(self, model, eligible: list) -> tuple[StrictOptions, dict]:
        """The round's (marginal, partition) options over ``eligible``, and the marginals partitioned."""
        shares = None
        if self.scoring == "sampled":
            held = held_by_model(model, eligible)
            projected = {w: model.project(w) for w, h in zip(eligible, held) if h}
            shares = sampled_shares(model, [w for w, h in zip(eligible, held) if not h], self.n_samples,
                                    self.scoring_rng)
            projected.update((w, model.total * p) for w, p in shares.items())
        else:
            projected = {w: model.project(w) for w in eligible}
        proxies = projected if self.initial_proxy is None else self.initial_proxy
        options = strict_options(self.cache, eligible, proxies, {w: self.answers[w] - projected[w] for w in eligible},
                                 self.eta, uniform=self.uniform, partitions=self.partitions,
                                 noise_per_group=self.noise_per_group, sampled_shares=shares,
                                 n_samples=self.n_samples, total=model.total)
        return options, proxies

    def pick(self, options: StrictOptions, eligible: list, model_cliques: list, chosen: list, limit,
             size_cache: dict, *, epsilon: float, sensitivity: float, rng, ledger: PrivacyLedger,
             description: str) -> int:
        """The exponential mechanism for the round's next pick: the index of an option.

        A pick must fit the size limit with the model and the round's earlier picks, and share at most one
        attribute with each earlier pick (the round's utilities do not see them, and their neighbours would
        otherwise look as under-fitted as before: AIM's rule, :class:`~skdpsynth.AIMSynthesizer`).  The size
        test is costly on wide tables, so the lazy mechanism (same distribution) asks it only of the options
        that could win.  With exact scoring the round's options already fit the model, and its first pick is
        the plain mechanism over all of them.  Decided from released picks and public sizes only.
        """
        if not chosen and self.scoring == "exact":
            return exponential_mechanism(options.utility, epsilon=epsilon, sensitivity=sensitivity,
                                         random_state=rng, ledger=ledger, description=description)
        if self._incidence is None or self._incidence[0] is not eligible:   # candidates × attributes, per round
            incidence = np.zeros((len(eligible), len(self.position)), dtype=np.int32)
            for i, w in enumerate(eligible):
                incidence[i, [self.position[a] for a in w]] = 1
            self._incidence = (eligible, incidence)
        incidence = self._incidence[1]
        picked = np.zeros((len(self.position), len(chosen)), dtype=np.int32)
        for i, w in enumerate(chosen):
            picked[[self.position[a] for a in w], i] = 1
        shared = incidence @ picked
        same = (shared == incidence.sum(axis=1)[:, None]) & (shared == picked.sum(axis=0)[None, :])
        allowed = ((shared < 2) & ~same).all(axis=1)
        upper = np.where(allowed[options.candidate], options.utility, -np.inf)
        fits = (model_size_check(self.domain, list(model_cliques) + chosen, limit, size_cache) if limit is not None
                else None)
        return lazy_exponential_mechanism(
            upper, upper.__getitem__, epsilon=epsilon, sensitivity=sensitivity,
            eligible=None if fits is None else (lambda j: fits(eligible[int(options.candidate[j])])),
            ledger=ledger, random_state=rng, description=description)


class PartitionSynthesizer(BaseSynthesizer):
    """PPSyn: marginals measured through partitions of their cells, each with a budget from an error target.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float, default=1e-9
        (ε, δ) target, converted to zCDP ρ with the Canonne–Kamath–Steinke bound (spec §2.4).
    rho : float, optional
        A zCDP budget given directly; overrides ``epsilon``/``delta`` (``delta`` still converts what was spent
        back to ε in :attr:`epsilon_spent_`).
    eta : float, default=0.7
        Error impact η in (0, 1]: a measured marginal's expected L1 error (reconstruction + noise) is η times its
        current contribution ``‖M_w(D) − M_w(p̂)‖₁``.  Smaller η: fewer, more precise measurements.
    rounds : int, optional
        T of the paper; sizes the selection budget ``select_frac·ρ/T`` per round (default ``16 · n_attributes``
        in paper mode, ``2 · n_attributes`` in strict mode, whose ``round_budget`` keeps the rounds near T).
        The number of rounds actually run is set by the budgets the measurements need.
    init_frac : float, default=0.1
        Share of ρ for the initial 1-way marginals.
    select_frac : float, default=0.1
        Nominal share of ρ for selection: each round spends ``select_frac·ρ/T`` on selection (in strict mode,
        split between the exponential mechanism and the noisy contribution, see ``contr_frac``).
    workload : None, int or list, default=None
        Marginals the data should preserve (``None``: all 3-way ones; an int k: all k-way; or a list of cliques
        or ``(clique, weight)`` pairs).  Weights are ignored: PPSyn scores contributions, not weighted errors.
    max_cells : int, default=10000
        Workload cliques with more cells are dropped (the spec's ``max_workload_cells``).
    candidates : {"downward_closure", "workload"}, default="downward_closure"
        The candidate marginals: every subset of a workload clique, or the workload plus all 1-way marginals.
    privacy_mode : {"strict", "paper"}, default="strict"
        ``"paper"`` is NOT differentially private (see the module docstring).
    em_sensitivity : float, optional
        Paper mode's exponential-mechanism sensitivity (default 1.0, which makes selection an argmax); strict
        mode's is fixed by ``strict_utility`` (1 or η) and this must be None.
    strict_utility : {"gain", "efficiency"}, default="gain"
        Strict mode's score of a (marginal, partition) pair.  ``"gain"``: the deviation its group sums capture
        minus the noise its ``k`` sums add at the nominal round budget ``ρ_T = (1 − init_frac − select_frac)·ρ/T``,
        ``G − r − k·√(2/π)/√(2ρ_T)`` (sensitivity 1; AIM's quality score applied to partitions).
        ``"efficiency"``: spec §16's ``max(η·G − r, 0)/k^{2/3}`` (sensitivity η), the paper's contribution per
        unit of budget, which favours few groups (Adult workload error 0.419 against 0.340 for ``"gain"`` at
        ε = 0.1, mean of 5 runs; see ``doc/partition.md``).  Paper mode uses the paper's score and ignores this.
    contr_frac : float, default=0.5
        Strict mode: share of each round's selection budget that releases the chosen marginal's contribution.
    partition_source : {"model", "initial_model"}, default="initial_model"
        Strict mode: partition the marginals of the first (1-way) model, computed once, or the current model's
        (rebuilt when a marginal moved by more than 1 % of the total: several times slower on Adult).
    termination : {"first_increase", "global_min"}, default="first_increase"
        Where a partition sequence stops: the paper's first increase of the required budget, or its minimum.
    split_rule : {"max_re_interval", "global"}, default="max_re_interval"
        Algorithm 4's choice of the rectangle to split (spec A12).
    max_partition_steps : int, "auto" or None, default="auto"
        Cap on the splits of a multi-way partition (None: down to single cells if needed).  ``"auto"``: 255 in
        strict mode (whose options are 1, 2, 4, …, 256 groups and single cells), None in paper mode.  0 (strict
        mode only): no partitions, every marginal is measured whole — an ablation that isolates what
        partitioning adds.
    measurement_form : {"uniform", "aggregate"}, default="aggregate"
        What the estimator is given: every cell's uniform estimate ``ỹ_I / |I|`` (the paper's Est), or the noisy
        group sums as linear queries (the model then spreads mass inside a group as the other measurements say).
    round_budget : "auto", None or (float, float), default="auto"
        Bounds ``(low, high)`` on one measurement's ρ_m as fractions of ρ.  ``"auto"``: strict mode
        ``((1 − init_frac − select_frac)/T, 4×that)``; paper mode unbounded (the paper's rule).
    max_model_size : float, "auto" or None, default="auto"
        Junction-tree size limit in MB, scaled by the share of the budget used (AIM's filter); None: no limit.
        ``"auto"``: 10 in strict mode, 80 (the spec's, AIM's) in paper mode.  A partitioned measurement of a large
        marginal costs little budget but adds the whole clique to the model, so strict fits on Adult at ε = 1
        grew to 51 MB models under 80 MB (over 5 minutes, 3-way TVD 0.103 at 20 MB against 0.098 at 10 MB).
    max_iters : int, default=50
        Mirror-descent iterations per round (warm started; fewer when it converges).
    final_iters : int, default=500
        Iterations of the final estimate.
    tol : float, default=1e-6
        Relative loss decrease over 10 iterations under which an estimate stops early.
    max_rounds : int, optional
        Safety cap on selections: the selection that reaches it spends all that is left.
    scoring : {"auto", "exact", "sampled"}, default="auto"
        Strict mode: how a round computes the model's marginals ``M_w(p̂)`` in the deviations ``d_w`` it scores.
        ``"exact"``: by inference on the model, for every candidate.  ``"sampled"``: from ``scoring_samples``
        records drawn from the model (exact for 1-way candidates and those a model clique holds), with half of
        the sampling's inflation bound taken off each option's ``G``; the records come from the released model
        alone, so ``G`` keeps sensitivity 1 and the guarantee is the same.  ``"auto"``: sampled above 1,000
        candidates (the default workload on 19 attributes or more), exact on Adult.  In ``scoring_``.
    scoring_samples : "auto" or int, default="auto"
        Records drawn per round for sampled scoring.  ``"auto"``: 50,000 up to 10,000 candidates, 25,000 above
        (in ``scoring_samples_``).
    selections_per_round : "auto" or int, default="auto"
        Strict mode: (marginal, partition) pairs selected and measured before each re-estimate.  Each is its own
        exponential mechanism on the round's utilities, over the candidates that fit the size limit with the
        round's earlier picks and share at most one attribute with each of them (the utilities do not see the
        earlier picks), followed by its own contribution release and measurement, each charged as in a round of
        one.  ``"auto"``: one per 8 attributes (1 up to 15 attributes, so on Adult; 6 for 50), at most the
        number of attributes; in ``selections_per_round_``.  Paper mode: 1.
    domain : dict or Domain, optional
        Public domain (see :class:`~skdpsynth.synthesizers.base.BaseSynthesizer`).
    sampling : {"round", "sample"}, default="round"
    random_state : None, int or numpy.random.Generator
    verbose : int, default=0

    Attributes
    ----------
    model_ : GraphicalModel
    measurements_ : list of Measurement
        What the estimator was given (public: noisy values, σ and, in aggregate form, the group query).
    selected_ : list of dict
        Per selection: ``clique``, ``round`` (the round it was selected in, from 1), ``n_groups`` (``|P|``),
        ``labels`` (the cells' groups, C order), ``rho`` (ρ_m), ``sigma``, ``final``, and in strict mode the
        released noisy captured ``contribution`` G̃ (``skipped`` when it left no feasible partition).  Paper mode
        stores no contribution (it is raw).
    rho_used_ : float
    n_rounds_ : int
        Selections made (``len(selected_)``).
    scoring_ : {"exact", "sampled"}
    scoring_samples_ : int
    selections_per_round_ : int
        The engine used (see ``scoring``, ``scoring_samples`` and ``selections_per_round``).
    epsilon_spent_ : float
        ``rho_used_`` as ε at ``delta`` (infinite in paper mode: no DP guarantee).

    Examples
    --------
    >>> from skdpsynth import PartitionSynthesizer
    >>> from skdpsynth.datasets import load_adult
    >>> adult = load_adult(discretized=True)
    >>> X = adult.frame.iloc[:3000, [1, 6, 8, 13]]
    >>> syn = PartitionSynthesizer(epsilon=1.0, domain=adult.domain.project(X.columns).to_dict(), random_state=0)
    >>> syn.fit(X).sample(10).shape
    (10, 4)
    >>> bool(abs(syn.privacy_ledger_.total_rho() - syn.rho_) < 1e-12)
    True
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-9,
        *,
        rho: float | None = None,
        eta: float = 0.7,
        rounds: int | None = None,
        init_frac: float = 0.1,
        select_frac: float = 0.1,
        workload=None,
        max_cells: int | None = 10000,
        candidates: str = "downward_closure",
        privacy_mode: str = "strict",
        em_sensitivity: float | None = None,
        strict_utility: str = "gain",
        contr_frac: float = 0.5,
        partition_source: str = "initial_model",
        termination: str = "first_increase",
        split_rule: str = "max_re_interval",
        max_partition_steps: int | str | None = "auto",
        measurement_form: str = "aggregate",
        round_budget="auto",
        max_model_size: float | str | None = "auto",
        max_iters: int = 50,
        final_iters: int = 500,
        tol: float = 1e-6,
        max_rounds: int | None = None,
        scoring: str = "auto",
        scoring_samples="auto",
        selections_per_round="auto",
        domain=None,
        sampling: str = "round",
        random_state=None,
        verbose: int = 0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.eta = eta
        self.rounds = rounds
        self.init_frac = init_frac
        self.select_frac = select_frac
        self.workload = workload
        self.max_cells = max_cells
        self.candidates = candidates
        self.privacy_mode = privacy_mode
        self.em_sensitivity = em_sensitivity
        self.strict_utility = strict_utility
        self.contr_frac = contr_frac
        self.partition_source = partition_source
        self.termination = termination
        self.split_rule = split_rule
        self.max_partition_steps = max_partition_steps
        self.measurement_form = measurement_form
        self.round_budget = round_budget
        self.max_model_size = max_model_size
        self.max_iters = max_iters
        self.final_iters = final_iters
        self.tol = tol
        self.max_rounds = max_rounds
        self.scoring = scoring
        self.scoring_samples = scoring_samples
        self.selections_per_round = selections_per_round
        self.domain = domain
        self.sampling = sampling
        self.random_state = random_state
        self.verbose = verbose

    # -- validation ---------------------------------------------------------
    _parameter_constraints = {
        "rho": [None, Interval(Real, 0, None, closed="neither")],
        "workload": WORKLOAD_CONSTRAINT,
        "max_cells": [Interval(Integral, 1, None), None],
        "privacy_mode": [Options("strict", "paper")],
        "candidates": [Options("downward_closure", "workload")],
        "partition_source": [Options("model", "initial_model")],
        "termination": [Options("first_increase", "global_min")],
        "split_rule": [Options("max_re_interval", "global")],
        "measurement_form": [Options("uniform", "aggregate")],
        "strict_utility": [Options("gain", "efficiency")],
        "eta": [Interval(Real, 0, 1, closed="right")],
        "init_frac": [Interval(Real, 0, 1, closed="neither")],
        "select_frac": [Interval(Real, 0, 1, closed="neither")],
        "contr_frac": [Interval(Real, 0, 1, closed="neither")],
        "rounds": [Interval(Integral, 1, None), None],
        "max_rounds": [Interval(Integral, 1, None), None],
        # 0: whole marginals only (strict mode; checked below).
        "max_partition_steps": [Options("auto"), Interval(Integral, 0, None), None],
        "em_sensitivity": [None, Interval(Real, 0, None, closed="neither")],
        "round_budget": [Options("auto"), None, tuple, list],
        "max_model_size": [Options("auto"), None, Interval(Real, 0, None, closed="neither")],
        **ENGINE_PARAMETER_CONSTRAINTS,
    }

    # -- validation ---------------------------------------------------------
    def _privacy_budget(self) -> dict:
        # rho (given instead of epsilon) and delta were checked by _check_params.
        return super()._privacy_budget() if self.rho is None else {"rho": float(self.rho)}

    def _check_params(self) -> None:
        """The declared constraints, then those across parameters."""
        super()._check_params()
        if not self.init_frac + self.select_frac < 1:
            raise ValueError(f"init_frac + select_frac must be < 1 (the rest measures the selected marginals), got "
                             f"{self.init_frac} + {self.select_frac}.")
        if self.max_partition_steps == 0 and self.privacy_mode != "strict":
            raise ValueError("max_partition_steps=0 (whole marginals only) applies to privacy_mode='strict'; "
                             "paper mode would measure only each marginal's total.")
        if self.em_sensitivity is not None and self.privacy_mode == "strict":
            raise ValueError("em_sensitivity applies to privacy_mode='paper' only: strict mode's utility has a "
                             "sensitivity fixed by construction (1 for 'gain', eta for 'efficiency').")
        bounds = self.round_budget
        if isinstance(bounds, (tuple, list)) and not (len(bounds) == 2 and all(
                Interval(Real).accepts(b) for b in bounds) and 0 < bounds[0] <= bounds[1] < 1):
            raise ValueError(f"round_budget must be 'auto', None or a pair (low, high) of fractions of the "
                             f"budget with 0 < low <= high < 1, got {bounds!r}.")
        if self.privacy_mode == "paper" and (self.scoring == "sampled" or self.selections_per_round not in ("auto", 1)):
            raise ValueError("scoring='sampled' and selections_per_round > 1 apply to privacy_mode='strict'; paper "
                             "mode scores partitions of the true marginals one round at a time, as published.")

    def _measure(self, m: tuple, labels: np.ndarray, rho_m: float, contribution: float | None, n_round: int,
                 answers, measurements: list, budget: _Budget, rng, ledger: PrivacyLedger) -> bool:
        """Lines 7-8 for one selection: the cap and spend-all rule, then noisy group sums (spec §10) and Est.

        ``contribution`` is the released ``G̃`` (strict mode) or None (paper mode).  Returns whether this was
        the final measurement.
        """
        strict = contribution is not None
        rho_m, skipped, final = budget.settle(rho_m, strict, len(self.selected_))
        record = {"clique": m, "round": n_round, "final": final}
        if strict:
            record["contribution"] = contribution
        if skipped:   # S6: no feasible partition for the released contribution; measure nothing
            budget.used += budget.rho_sel
            record.update(n_groups=0, labels=None, rho=0.0, sigma=None, skipped=True)
            self.selected_.append(record)
            self._log(f"selection {len(self.selected_)}: {m} skipped (no feasible partition)")
            return final
        n_groups = int(labels.max()) + 1
        sums = np.bincount(labels, weights=answers[m].ravel(), minlength=n_groups)
        noisy_sums = gaussian_mechanism(np.rint(sums).astype(np.int64), rho=rho_m, random_state=rng,
                                        ledger=ledger, description=f"selection {len(self.selected_) + 1}: "
                                        f"{n_groups} group sums of {' x '.join(map(str, m))}")
        sigma = 1.0 / np.sqrt(2 * rho_m)
        if self.measurement_form == "uniform":
            measurements.append(Measurement(m, uniform_estimate(labels, noisy_sums), sigma))
        else:
            measurements.append(Measurement(m, noisy_sums, sigma, query=aggregation_matrix(labels, n_groups)))
        budget.used += budget.rho_sel + rho_m
        record.update(n_groups=n_groups, labels=labels, rho=float(rho_m), sigma=float(sigma), skipped=False)
        self.selected_.append(record)
        self._log(f"selection {len(self.selected_)}: {m} in {n_groups}/{answers[m].size} groups (sigma "
                  f"{sigma:.1f}), budget used {budget.used / budget.rho:.1%}")
        return final

    # -- Algorithm 1 --------------------------------------------------------
    def _fit_codes(self, codes, domain: Domain, ledger: PrivacyLedger, rng, rho: float) -> None:
        strict = self.privacy_mode == "strict"
        eta = float(self.eta)
        T = self.rounds or (2 if strict else 16) * len(domain)
        bounds = self.round_budget
        if isinstance(bounds, str):   # "auto"
            floor = (1 - self.init_frac - self.select_frac) / T
            bounds = (floor, 4 * floor) if strict else None
        if bounds is not None:
            bounds = (bounds[0] * rho, bounds[1] * rho)
        if not strict:
            warn_privacy_leak(
                "PartitionSynthesizer(privacy_mode='paper') runs PPSyn as published: partitions, measurement "
                "budgets and selection scores are computed from the raw data without a DP mechanism (spec §15.1), "
                "so the fit is NOT differentially private. Use privacy_mode='strict' for a DP guarantee.",
                stacklevel=4, ledger=ledger,
                description="PPSyn paper mode: partitions, budgets and scores from the raw data")

        workload = resolve_workload(self.workload, domain, self.max_cells, log=self._log)
        if self.candidates == "downward_closure":
            candidates = list(compile_workload(workload, domain))
        else:
            candidates = list(dict.fromkeys([(a,) for a in domain] + [c for c, _ in workload]))
        cells = sum(domain.size(c) for c in candidates)
        check_memory(16.0 * cells, f"PartitionSynthesizer: the true answers of {len(candidates):,} candidate "
                     f"marginals ({cells:,.0f} cells) and their precomputed tables",
                     "Lower max_cells or use a smaller workload, or coarsen the domain.")
        answers = marginals(codes, domain, candidates)  # true counts, shaped; never leave the fit

        # Lines 1-3: 1-way marginals with init_frac·ρ, split ∝ c_i^{2/3} (spec §2.3, T1).
        weights = np.array([domain[a] for a in domain], dtype=float) ** (2 / 3)
        shares = self.init_frac * rho * weights / weights.sum()
        measurements = []
        for a, rho_a in zip(domain, shares):
            y = gaussian_mechanism(answers[(a,)].ravel(), rho=float(rho_a), random_state=rng, ledger=ledger,
                                   description=f"1-way marginal {a}")
            measurements.append(Measurement((a,), y, 1.0 / np.sqrt(2 * rho_a)))
        rho_used = float(shares.sum())
        model, info = mirror_descent(domain, measurements, iters=self.max_iters, tol=self.tol)

        # Line 4: the per-round selection budget.
        rho_sel = self.select_frac * rho / T
        if strict:
            rho_em, rho_c = (1 - self.contr_frac) * rho_sel, self.contr_frac * rho_sel
            if self.strict_utility == "gain":
                # Expected |noise| of one group sum at the nominal round budget.
                noise_per_group = np.sqrt(2 / np.pi) / np.sqrt(2 * (1 - self.init_frac - self.select_frac) * rho / T)
                em_epsilon, em_sensitivity = np.sqrt(8 * rho_em), 1.0
            else:
                noise_per_group = None
                em_epsilon, em_sensitivity = np.sqrt(8 * rho_em), eta
        else:
            em_epsilon, em_sensitivity = np.sqrt(8 * rho_sel), float(self.em_sensitivity or 1.0)
        max_model_size = self.max_model_size
        if isinstance(max_model_size, str):   # "auto"
            max_model_size = _STRICT_MAX_MODEL_MB if strict else 80.0
        max_steps = self.max_partition_steps
        if max_steps == "auto":
            max_steps = _STRICT_MAX_STEPS if strict else None
        cache = SequenceCache(split_rule=self.split_rule, max_steps=max_steps, refresh=_REFRESH if strict else 0.0,
                              first_steps=max_steps if strict and max_steps else 32)
        # "initial_model": every candidate's proxy is the first (1-way) model's marginal, so sequences are built once.
        initial_proxy = ({w: model.project(w) for w in candidates} if strict and self.partition_source == "initial_model"
                         else None)
        if strict:
            engine = choose_engine(self.scoring, self.scoring_samples, self.selections_per_round, len(domain),
                                   len(candidates))
        else:
            engine = ("exact", choose_engine("auto", self.scoring_samples, 1, len(domain), len(candidates))[1], 1)
        self.scoring_, self.scoring_samples_, self.selections_per_round_ = engine
        if strict:
            self._log(f"scoring: {self.scoring_}" + (f" on {self.scoring_samples_:,} records drawn from the model"
                                                      if self.scoring_ == "sampled" else "")
                      + f" ({len(candidates):,} candidates); {self.selections_per_round_} selection(s) per round")
            selector = _StrictSelector(
                domain, candidates, answers, cache, initial_proxy, eta, uniform=self.measurement_form == "uniform",
                partitions=max_steps != 0, noise_per_group=noise_per_group, scoring=self.scoring_,
                n_samples=self.scoring_samples_, scoring_rng=child_generator(rng) if self.scoring_ == "sampled" else None)
        budget = _Budget(rho, rho_used, rho_sel, bounds, self.max_rounds)
        self.selected_ = []
        size_cache: dict = {}

        # Lines 5-11.
        final, n_round = False, 0
        while not final:
            n_round += 1
            limit = None if max_model_size is None else max_model_size * budget.used / rho
            if limit is None or (strict and self.scoring_ == "sampled"):
                eligible = candidates   # sampled scoring tests the size of the picks only (see _StrictSelector.pick)
            else:
                fits = model_size_check(domain, model.cliques, limit, size_cache)
                eligible = [w for w in candidates if fits(w)] or candidates
            n_measured = len(measurements)
            if strict:
                # S1-S5: public sequences, (marginal, partition) pairs chosen by the EM on a sensitivity-1 (gain) or
                # -η (efficiency) utility, then the chosen pair's captured contribution released with noise.
                options, proxies = selector.options(model, eligible)
                chosen: list = []
                for _ in range(self.selections_per_round_):
                    n = len(self.selected_) + 1
                    j = selector.pick(options, eligible, model.cliques, chosen, limit, size_cache, epsilon=em_epsilon,
                                      sensitivity=em_sensitivity, rng=rng, ledger=ledger,
                                      description=f"selection {n}: select a marginal and its partition")
                    m = eligible[int(options.candidate[j])]
                    chosen.append(m)
                    noisy = gaussian_mechanism(np.array([options.captured[j]]), rho=rho_c, random_state=rng,
                                               ledger=ledger, description=f"selection {n}: captured "
                                               f"contribution of {' x '.join(map(str, m))}")
                    contribution = max(0.0, float(noisy[0]))
                    labels = (np.arange(answers[m].size) if options.step[j] < 0   # single cells: no sequence needed
                              else options.labels(j, cache.get(m, proxies[m])[0]))
                    rho_m = float(required_rho(options.sizes[j], options.errors[j], eta, contribution))
                    final = self._measure(m, labels, rho_m, contribution, n_round, answers, measurements, budget,
                                          rng, ledger)
                    if final:
                        break
            else:
                contr, projected = contributions(model, answers, eligible)
                scores, chosen_pairs = paper_scores(cache, eligible, answers, contr, eta, self.termination)
                n = len(self.selected_) + 1
                m = eligible[exponential_mechanism(scores, epsilon=em_epsilon, sensitivity=em_sensitivity,
                                                   random_state=rng, ledger=ledger,
                                                   description=f"selection {n}: select a marginal")]
                seq, t, rho_m = chosen_pairs[m]
                if not np.isfinite(rho_m):
                    t = len(seq) - 1  # nothing feasible: the finest partition built gets what is left
                final = self._measure(m, seq.labels(t), rho_m, None, n_round, answers, measurements, budget, rng,
                                      ledger)

            if len(measurements) == n_measured:
                continue   # every pick skipped: the model is unchanged
            # Line 9: re-estimate, warm started.
            model, info = mirror_descent(domain, measurements, potentials=model, iters=self.max_iters, tol=self.tol,
                                         step_size=info.step_size)
            self._log(f"after {len(self.selected_)} selections: budget used {budget.used / rho:.1%}, model "
                      f"{model.size_mb():.2f} MB, {info.iterations} iterations")
        rho_used = budget.used

        self._log(f"{len(self.selected_)} selections in {n_round} rounds done; final estimation ({self.final_iters:,} iterations at most)")
        model, info = mirror_descent(domain, measurements, potentials=model, iters=self.final_iters, tol=self.tol,
                                     step_size=info.step_size,
                                     callback=self._estimation_progress("final estimation", measurements,
                                                                        self.final_iters))
        self.model_ = model
        self.n_records_ = model.total
        self.measurements_ = measurements
        self.rho_used_ = rho_used
        self.n_rounds_ = len(self.selected_)
        self.epsilon_spent_ = ledger.epsilon(float(self.delta))
        self.sequence_builds_ = cache.builds
