"""PPSyn (Zhang, Deng & Yin): partition-based DP synthetic data — Algorithm 1 (§4.1) of the paper.

An AIM-style select–measure–generate loop with two changes: a selected marginal's cells are grouped and only the
group sums are measured (less noise, some reconstruction error), and each marginal's budget comes from an error
target ``η·Contr``::

    1-3   noisy 1-way marginals with init_frac·ρ, split ∝ c_i^{2/3} (PrivSyn); fit the model
    5-11  while budget is left:
            select a marginal m and its partition P_m and budget ρ_m   (PartSele: §4.2.1, Algorithm 2)
            measure the group sums of P_m with Gaussian noise of budget ρ_m       (lines 7-8, Est)
            re-estimate the model (warm start)                     (line 9: Private-PGM, §3.3 Eq. (6))
    12    sample from the model

Section, algorithm and line numbers are the paper's; ``doc/deviations.md`` lists where this module departs from it.

``privacy_mode="strict"`` (default; ``doc/deviations.md``, "Strict mode") partitions public proxy marginals (the
first, 1-way model's), chooses a (marginal, partition) pair with the exponential mechanism on a utility of bounded
sensitivity, releases the deviation the pair's group sums capture with Gaussian noise and derives ρ_m from that; the
ledger sums to exactly ρ.

Strict mode's scores (measured reasons in ``doc/partition.md``): scoring a marginal by ``η·Contr − RE`` with RE
computed on the model cannot see the deviation being measured — one group (measuring only the total) then looks
perfect and is chosen forever.  Here each partition of the public sequence is scored by the part of the deviation
its group sums capture, ``G = Σ_I |Σ_{i∈I} d_i|`` (sensitivity 1), minus the noise its ``k`` sums add at the
round's budget (``strict_utility="gain"``; the ratio form ``max(η·G − r, 0)/k^{2/3}``, the paper's contribution
per unit of budget, is ``"efficiency"``); the EM picks the partition with the marginal, and ``G̃``
replaces ``C̃`` in the budget formula.  Each measurement's ρ_m is clipped to ``round_budget`` (by default between
the measurement share over T and four times that), which bounds the rounds and keeps one marginal from taking
the rest.  ``privacy_mode="paper"`` runs the algorithm as published — partitions, budgets and scores from the raw
data — which is not differentially private (``doc/deviations.md``, "PartSele is not differentially private"): it
warns, records the leak in the ledger and never states a DP guarantee.

On wide tables (more than 1,000 candidates: 19 attributes or more with the default workload) strict mode scores
each round on records drawn from the model instead of exact inference, and makes one selection per 8 attributes
before each re-estimate (``scoring``, ``selections_per_round``; the same options as AIM's, see ``doc/partition.md``).
"""
from __future__ import annotations

from numbers import Integral, Real

from ...domain import Domain
from ...marginals import marginals
from ...params import MAX_RHO, Interval, Options, PrivacyParameter
from ...privacy import PrivacyLedger, warn_privacy_leak
from ..base import BaseSynthesizer
from ..rounds import LedgerBudget, fit_in_rounds
from ..select_measure import (
    ENGINE_PARAMETER_CONSTRAINTS,
    WORKLOAD_CONSTRAINT,
    check_fit_memory,
    choose_engine,
    compile_workload,
    resolve_workload,
)
from .rounds import STRICT_MAX_MODEL_MB, PPSynRounds

__all__ = ["PartitionSynthesizer"]

class PartitionSynthesizer(BaseSynthesizer):
    """PPSyn: marginals measured through partitions of their cells, each with a budget from an error target.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float, default=1e-9
        (ε, δ) target, converted to zCDP ρ with the Canonne–Kamath–Steinke bound (``doc/deviations.md``,
        "Delta and the zCDP conversion").
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
        Workload cliques with more cells are dropped (as in AIM).
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
        ``"efficiency"``: ``max(η·G − r, 0)/k^{2/3}`` (sensitivity η), the paper's contribution per unit of
        budget, which favours few groups and is measured worse (``doc/partition.md``).  Paper mode uses the
        paper's score and ignores this.
    contr_frac : float, default=0.5
        Strict mode: share of each round's selection budget that releases the chosen marginal's contribution.
    partition_source : {"model", "initial_model"}, default="initial_model"
        Strict mode: partition the marginals of the first (1-way) model, computed once, or the current model's
        (rebuilt when a marginal moved by more than 1 % of the total: much slower, ``doc/partition.md``).
    termination : {"first_increase", "global_min"}, default="first_increase"
        Where a partition sequence stops: the paper's first increase of the required budget, or its minimum.
    split_rule : {"max_re_interval", "global"}, default="max_re_interval"
        Algorithm 4's choice of the rectangle to split (``doc/deviations.md``, "Choosing the rectangle to
        split").
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
        ``"auto"``: 10 in strict mode, 80 (AIM's) in paper mode.  A partitioned measurement of a large
        marginal costs little budget but adds the whole clique to the model, so strict fits grow large, slow
        models under 80 MB (``doc/partition.md``).
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
    model_ : GraphicalModel
    measurements_ : list of Measurement
        What the estimator was given (public: noisy values, σ and, in aggregate form, the group query).
    selected_ : list of dict
        Per selection: ``clique``, ``round`` (the round it was selected in, from 1), ``n_groups`` (``|P|``),
        ``labels`` (the cells' groups, C order), ``rho`` (ρ_m), ``sigma``, ``final``, and in strict mode the
        released noisy captured ``contribution`` G̃ (``skipped`` when it left no feasible partition).  Paper mode
        stores no contribution (it is raw).
    rho_used_ : float
        The zCDP budget spent (per person with ``privacy_unit``).
    n_rounds_ : int
        Selections made (``len(selected_)``).
    scoring_ : {"exact", "sampled"}
    scoring_samples_ : int
    selections_per_round_ : int
        The engine used (see ``scoring``, ``scoring_samples`` and ``selections_per_round``).
    epsilon_spent_ : float
        ``rho_used_`` as ε at ``delta`` (infinite in paper mode: no DP guarantee); per person with
        ``privacy_unit``.

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
        constraints=None,
        random_state=None,
        verbose: int = 0,
        privacy_unit=None,
        max_contributions: int | None = None,
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
        self.constraints = constraints
        self.random_state = random_state
        self.verbose = verbose
        self.privacy_unit = privacy_unit
        self.max_contributions = max_contributions

    # -- validation ---------------------------------------------------------
    _parameter_constraints = {
        "rho": [None, PrivacyParameter(MAX_RHO)],
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

    # -- Algorithm 1 --------------------------------------------------------
    def _fit_codes(self, codes, domain: Domain, ledger: PrivacyLedger, rng, rho: float) -> None:
        strict = self.privacy_mode == "strict"
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
                "budgets and selection scores are computed from the raw data without a DP mechanism (the paper's "
                "§4.2; doc/deviations.md, 'PartSele is not differentially private'), so the fit is NOT "
                "differentially private. Use privacy_mode='strict' for a DP guarantee.",
                stacklevel=4, ledger=ledger,
                description="PPSyn paper mode: partitions, budgets and scores from the raw data")
        workload = resolve_workload(self.workload, domain, self.max_cells, log=self._log)
        if self.candidates == "downward_closure":
            candidates = list(compile_workload(workload, domain))
        else:
            candidates = list(dict.fromkeys([(a,) for a in domain] + [c for c, _ in workload]))
        model_limit = self.max_model_size
        if isinstance(model_limit, str):   # "auto": what PPSynRounds resolves it to
            model_limit = STRICT_MAX_MODEL_MB if strict else 80.0
        # 16 bytes a candidate cell: the true answers and their precomputed partition tables.
        check_fit_memory("PartitionSynthesizer", domain, candidates, model_limit, 16.0,
                         "Lower max_cells or use a smaller workload, or coarsen the domain.")
        answers = marginals(codes, domain, candidates)  # true counts, shaped; never leave the fit
        self._choose_engine(domain, len(candidates), strict)
        self.selected_ = []
        budget = LedgerBudget(rho, ledger)
        steps = PPSynRounds(self, codes, domain, ledger, rng, rho, candidates, answers, T, bounds)
        self.model_ = fit_in_rounds(steps, budget)
        self.n_records_ = self.model_.total
        self.measurements_ = steps.measurements
        self.rho_used_ = budget.spent
        self.n_rounds_ = len(self.selected_)
        self.epsilon_spent_ = ledger.epsilon(float(self.delta))
        self.sequence_builds_ = steps.cache.builds

    def _state_per_person(self, k: int) -> None:
        # A user-level fit spent rho_used_ at record level; per person it is k² times that (the ledger's view).
        self.rho_used_ *= k * k
        self.epsilon_spent_ = self.privacy_ledger_.epsilon(float(self.delta))

    def _choose_engine(self, domain: Domain, n_candidates: int, strict: bool) -> None:
        """``scoring_``, ``scoring_samples_`` and ``selections_per_round_`` from hyper-parameters and public sizes
        (paper mode: exact scoring, one selection per round, as published)."""
        if strict:
            engine = choose_engine(self.scoring, self.scoring_samples, self.selections_per_round, len(domain),
                                   n_candidates)
        else:
            engine = ("exact", choose_engine("auto", self.scoring_samples, 1, len(domain), n_candidates)[1], 1)
        self.scoring_, self.scoring_samples_, self.selections_per_round_ = engine
        if strict:
            self._log(f"scoring: {self.scoring_}" + (f" on {self.scoring_samples_:,} records drawn from the model"
                                                      if self.scoring_ == "sampled" else "")
                      + f" ({n_candidates:,} candidates); {self.selections_per_round_} selection(s) per round")
