"""PPSyn's rounds (Algorithm 1, lines 5-11) for :func:`~skdpsynth.synthesizers.rounds.fit_in_rounds`.

Each round selects (marginal, partition) pairs, measures each pick's group sums with a budget ``ρ_m`` from its
error target, and re-estimates the model.  How ``ρ_m`` is settled (:meth:`PPSynRounds.settle`) reads what is
left from the fit's ledger: clipped to ``round_budget``, never more than is left, and all that is left when less
than a selection's worth would remain.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...domain import Domain
from ...graphical import GraphicalModel, Measurement, mirror_descent
from ...privacy import PrivacyLedger, exponential_mechanism, gaussian_mechanism, lazy_exponential_mechanism
from ..rounds import LedgerBudget, Round
from ..select_measure import child_generator, held_by_model, model_size_check, sampled_shares
from .partitioning import aggregation_matrix, required_rho, uniform_estimate
from .selection import SequenceCache, StrictOptions, contributions, paper_scores, strict_options

__all__: list[str] = []   # PartitionSynthesizer's own steps

# Strict mode rebuilds a candidate's partition sequence when its model marginal moved by more than this fraction
# of the total in L1 since the sequence was built (post-processing of the public model; saves rebuilding hundreds
# of sequences every round for marginals the last measurement barely touched).
_REFRESH = 0.01
# Strict mode's default cap on a multi-way sequence: partitions of up to 256 groups, plus single cells.
_STRICT_MAX_STEPS = 255
# Strict mode's default junction-tree size limit, MB (see ``max_model_size``).
STRICT_MAX_MODEL_MB = 10.0



class StrictSelector:
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


@dataclass
class PPSynRound(Round):
    """A round's model-size limit and the candidates within it; then the round's picks."""

    limit: float | None = None
    eligible: list = field(default_factory=list)
    n_measured: int = 0


class PPSynRounds:
    """PPSyn's steps for :func:`~skdpsynth.synthesizers.rounds.fit_in_rounds` (Algorithm 1).

    Parameters
    ----------
    synth : PartitionSynthesizer
        Its hyper-parameters, its log, and its ``selected_`` (one record per selection).
    codes, domain, ledger, rng, rho
        The fit's.
    candidates : list of tuple
    answers : dict
        The candidates' true marginals (never leave the fit).
    rounds : int
        ``T``: sets the per-round selection budget ``select_frac · ρ / T``.
    bounds : tuple of float or None
        ``round_budget`` in units of ρ (clip of each ``ρ_m``).
    """

    def __init__(self, synth, codes, domain: Domain, ledger: PrivacyLedger, rng, rho: float, candidates: list,
                 answers: dict, rounds: int, bounds):
        self.synth, self.codes, self.domain, self.ledger, self.rng = synth, codes, domain, ledger, rng
        self.rho, self.candidates, self.answers, self.bounds = rho, candidates, answers, bounds
        self.strict = synth.privacy_mode == "strict"
        self.eta = float(synth.eta)
        self.rho_sel = synth.select_frac * rho / rounds   # line 4: the per-round selection budget
        self._selection_mechanism(rounds)
        max_model_size = synth.max_model_size
        if isinstance(max_model_size, str):   # "auto"
            max_model_size = STRICT_MAX_MODEL_MB if self.strict else 80.0
        self.max_model_size = max_model_size
        max_steps = synth.max_partition_steps
        if max_steps == "auto":
            max_steps = _STRICT_MAX_STEPS if self.strict else None
        self.max_steps = max_steps
        self.cache = SequenceCache(split_rule=synth.split_rule, max_steps=max_steps,
                                   refresh=_REFRESH if self.strict else 0.0,
                                   first_steps=max_steps if self.strict and max_steps else 32)
        self.size_cache: dict = {}
        self.n_rounds = 0
        self.final = False

    def _selection_mechanism(self, rounds: int) -> None:
        """The exponential mechanism's ε and sensitivity; in strict mode, the split of ``ρ_sel`` between it and
        the released contribution, and the noise per group sum the ``"gain"`` utility deducts."""
        synth, rho, rho_sel = self.synth, self.rho, self.rho_sel
        self.noise_per_group = None
        if not self.strict:
            self.em_epsilon, self.em_sensitivity = np.sqrt(8 * rho_sel), float(synth.em_sensitivity or 1.0)
            return
        rho_em, self.rho_c = (1 - synth.contr_frac) * rho_sel, synth.contr_frac * rho_sel
        self.em_epsilon = np.sqrt(8 * rho_em)
        if synth.strict_utility == "gain":
            # Expected |noise| of one group sum at the nominal round budget.
            self.noise_per_group = np.sqrt(2 / np.pi) / np.sqrt(2 * (1 - synth.init_frac - synth.select_frac)
                                                                * rho / rounds)
            self.em_sensitivity = 1.0
        else:
            self.em_sensitivity = self.eta

    # -- the steps -----------------------------------------------------------------------------------------------
    def initial_model(self) -> GraphicalModel:
        """Lines 1-3: 1-way marginals with ``init_frac · ρ``, split ∝ ``c_i^{2/3}`` (as PrivSyn), and a first
        model; in strict mode, the selector (its proxies and, for sampled scoring, its generator)."""
        synth, domain = self.synth, self.domain
        weights = np.array([domain[a] for a in domain], dtype=float) ** (2 / 3)
        shares = synth.init_frac * self.rho * weights / weights.sum()
        self.measurements = []
        for a, rho_a in zip(domain, shares):
            y = gaussian_mechanism(self.answers[(a,)].ravel(), rho=float(rho_a), random_state=self.rng,
                                   ledger=self.ledger, description=f"1-way marginal {a}")
            self.measurements.append(Measurement((a,), y, 1.0 / np.sqrt(2 * rho_a)))
        model, self.info = mirror_descent(domain, self.measurements, iters=synth.max_iters, tol=synth.tol)
        if self.strict:
            # "initial_model": every candidate's proxy is the first (1-way) model's marginal, so sequences are
            # built once.
            initial_proxy = ({w: model.project(w) for w in self.candidates}
                             if synth.partition_source == "initial_model" else None)
            self.selector = StrictSelector(
                domain, self.candidates, self.answers, self.cache, initial_proxy, self.eta,
                uniform=synth.measurement_form == "uniform", partitions=self.max_steps != 0,
                noise_per_group=self.noise_per_group, scoring=synth.scoring_, n_samples=synth.scoring_samples_,
                scoring_rng=child_generator(self.rng) if synth.scoring_ == "sampled" else None)
        return model

    def plan(self, budget: LedgerBudget, number: int) -> PPSynRound | None:
        """The round's size limit (grown with the budget spent) and the candidates within it; None after the
        final measurement."""
        if self.final:
            return None
        self.budget, self.n_rounds = budget, number
        limit = None if self.max_model_size is None else self.max_model_size * budget.fraction_used()
        return PPSynRound(number, limit=limit, n_measured=len(self.measurements))

    def select_and_measure(self, model: GraphicalModel, plan: PPSynRound) -> list[Measurement]:
        """Lines 6-8: PartSele, then each pick's noisy group sums, until the round's picks or the budget end."""
        if plan.limit is None or (self.strict and self.synth.scoring_ == "sampled"):
            plan.eligible = self.candidates   # sampled scoring tests the size of the picks only (StrictSelector.pick)
        else:
            fits = model_size_check(self.domain, model.cliques, plan.limit, self.size_cache)
            plan.eligible = [w for w in self.candidates if fits(w)] or self.candidates
        if self.strict:
            self._strict_picks(model, plan)
        else:
            self._paper_pick(model, plan)
        return self.measurements[plan.n_measured:]

    def _strict_picks(self, model: GraphicalModel, plan: PPSynRound) -> None:
        """Strict mode's picks (``doc/deviations.md``, "Strict mode"): public sequences, (marginal, partition)
        pairs chosen by the EM on a sensitivity-1 (gain) or -η (efficiency) utility, then the chosen pair's
        captured contribution released with noise."""
        synth, eligible, rng, ledger = self.synth, plan.eligible, self.rng, self.ledger
        options, proxies = self.selector.options(model, eligible)
        chosen: list = []
        for _ in range(synth.selections_per_round_):
            n = len(synth.selected_) + 1
            j = self.selector.pick(options, eligible, model.cliques, chosen, plan.limit, self.size_cache,
                                   epsilon=self.em_epsilon, sensitivity=self.em_sensitivity, rng=rng, ledger=ledger,
                                   description=f"selection {n}: select a marginal and its partition")
            m = eligible[int(options.candidate[j])]
            chosen.append(m)
            noisy = gaussian_mechanism(np.array([options.captured[j]]), rho=self.rho_c, random_state=rng,
                                       ledger=ledger, description=f"selection {n}: captured "
                                       f"contribution of {' x '.join(map(str, m))}")
            contribution = max(0.0, float(noisy[0]))
            labels = (np.arange(self.answers[m].size) if options.step[j] < 0   # single cells: no sequence needed
                      else options.labels(j, self.cache.get(m, proxies[m])[0]))
            rho_m = float(required_rho(options.sizes[j], options.errors[j], self.eta, contribution))
            if self.measure_pick(m, labels, rho_m, contribution, plan):
                break

    def _paper_pick(self, model: GraphicalModel, plan: PPSynRound) -> None:
        """PartSele as published: scores and partitions from the true marginals (not DP)."""
        synth, eligible = self.synth, plan.eligible
        contr, projected = contributions(model, self.answers, eligible)
        scores, chosen_pairs = paper_scores(self.cache, eligible, self.answers, contr, self.eta, synth.termination)
        n = len(synth.selected_) + 1
        m = eligible[exponential_mechanism(scores, epsilon=self.em_epsilon, sensitivity=self.em_sensitivity,
                                           random_state=self.rng, ledger=self.ledger,
                                           description=f"selection {n}: select a marginal")]
        seq, t, rho_m = chosen_pairs[m]
        if not np.isfinite(rho_m):
            t = len(seq) - 1  # nothing feasible: the finest partition built gets what is left
        self.measure_pick(m, seq.labels(t), rho_m, None, plan)

    def settle(self, rho_m: float, n_selected: int) -> tuple[float, bool, bool]:
        """``(rho_m, skipped, final)`` for a selection whose error target asks for ``rho_m``.

        Called once the selection's own mechanisms are in the ledger, so what is left is what the measurement
        may take.
        """
        available = self.budget.left
        if self.bounds is not None and np.isfinite(rho_m):
            # A measurement gets at least the floor (less noise than its error target asks for; bounds the
            # number of rounds and the model's growth) and at most the cap (no single marginal takes the rest).
            rho_m = float(np.clip(rho_m, *self.bounds))
        max_selections = self.synth.max_rounds
        last = max_selections is not None and n_selected + 1 >= max_selections
        # Skip only with room for a real round after it (2 ρ_sel: float rounding cannot leave a budget ≤ 0).
        skipped = not np.isfinite(rho_m) and self.strict and available > 2 * self.rho_sel and not last
        # The slack keeps float rounding from leaving a next round with a budget ≤ 0 (the round_budget floor
        # makes exact ties likely).
        slack = 1e-9 * self.rho
        final = False
        if not skipped and (not np.isfinite(rho_m) or rho_m > available
                            or available - rho_m <= self.rho_sel + slack or last):
            rho_m, final = available, True
        return rho_m, skipped, final

    def measure_pick(self, m: tuple, labels: np.ndarray, rho_m: float, contribution: float | None,
                     plan: PPSynRound) -> bool:
        """Lines 7-8 for one selection: the cap and spend-all rule, then noisy group sums.

        ``contribution`` is the released ``G̃`` (strict mode) or None (paper mode).  Returns whether this was
        the final measurement (and then marks the round the last).
        """
        synth = self.synth
        rho_m, skipped, final = self.settle(rho_m, len(synth.selected_))
        self.final = plan.last = final
        record = {"clique": m, "round": plan.number, "final": final}
        if contribution is not None:
            record["contribution"] = contribution
        if skipped:   # no feasible partition for the released contribution; measure nothing
            record.update(n_groups=0, labels=None, rho=0.0, sigma=None, skipped=True)
            synth.selected_.append(record)
            synth._log(f"selection {len(synth.selected_)}: {m} skipped (no feasible partition)")
            return final
        n_groups = int(labels.max()) + 1
        sums = np.bincount(labels, weights=self.answers[m].ravel(), minlength=n_groups)
        noisy_sums = gaussian_mechanism(np.rint(sums).astype(np.int64), rho=rho_m, random_state=self.rng,
                                        ledger=self.ledger, description=f"selection {len(synth.selected_) + 1}: "
                                        f"{n_groups} group sums of {' x '.join(map(str, m))}")
        sigma = 1.0 / np.sqrt(2 * rho_m)
        if synth.measurement_form == "uniform":
            self.measurements.append(Measurement(m, uniform_estimate(labels, noisy_sums), sigma))
        else:
            self.measurements.append(Measurement(m, noisy_sums, sigma, query=aggregation_matrix(labels, n_groups)))
        record.update(n_groups=n_groups, labels=labels, rho=float(rho_m), sigma=float(sigma), skipped=False)
        synth.selected_.append(record)
        synth._log(f"selection {len(synth.selected_)}: {m} in {n_groups}/{self.answers[m].size} groups (sigma "
                   f"{sigma:.1f}), budget used {self.budget.fraction_used():.1%}")
        return final

    def estimate(self, model: GraphicalModel, plan: PPSynRound, new: list) -> GraphicalModel:
        """Line 9: re-estimate, warm started."""
        synth = self.synth
        model, self.info = mirror_descent(self.domain, self.measurements, potentials=model, iters=synth.max_iters,
                                          tol=synth.tol, step_size=self.info.step_size)
        synth._log(f"after {len(synth.selected_)} selections: budget used {self.budget.fraction_used():.1%}, model "
                   f"{model.size_mb():.2f} MB, {self.info.iterations} iterations")
        return model

    def end_round(self, model: GraphicalModel, plan: PPSynRound) -> None:
        """Nothing to anneal: each measurement's budget comes from its own error target."""

    def final_model(self, model: GraphicalModel) -> GraphicalModel:
        synth = self.synth
        synth._log(f"{len(synth.selected_)} selections in {self.n_rounds} rounds done; final estimation "
                   f"({synth.final_iters:,} iterations at most)")
        model, self.info = mirror_descent(self.domain, self.measurements, potentials=model, iters=synth.final_iters,
                                          tol=synth.tol, step_size=self.info.step_size,
                                          callback=synth._estimation_progress("final estimation", self.measurements,
                                                                              synth.final_iters))
        return model
