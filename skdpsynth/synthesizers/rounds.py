"""The select → measure → estimate rounds that AIM, RandDPGen and PPSyn share, and the budget they draw on.

All three fit a first model, then repeat rounds until their budget is spent: plan the round's budget from what
is left, select marginals with a DP mechanism, measure them with noise, re-estimate the model from every
measurement so far; then a final, longer estimate.  :func:`fit_in_rounds` is that loop, once; a method supplies
its steps as a :class:`RoundMethod`.

What a round may spend comes from :class:`LedgerBudget`, which reads what has been spent from the fit's
:class:`~skdpsynth.privacy.PrivacyLedger`: no method keeps a count of its own beside the ledger, so the rounds
spend exactly what the ledger says is left.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..graphical import GraphicalModel, Measurement
from ..privacy import PrivacyLedger
from ..privacy.ledger import LedgerEntry

__all__ = ["LedgerBudget", "Round", "RoundMethod", "fit_in_rounds"]


class LedgerBudget:
    """A fit's zCDP budget ``ρ``, of which the spent part is read from its ledger.

    Parameters
    ----------
    rho : float
        The budget, ρ-zCDP.
    ledger : PrivacyLedger
        The fit's ledger: every zCDP entry recorded in it from now on counts
        as spent (entries already there are other releases).
    cost : callable, optional
        ``cost(entry) -> float``, the budget an entry counts for, if not its
        ``rho``.  RandDPGen's paper mode counts its repeated measurements at
        their nominal budget here (the ledger itself charges their true cost).

    Examples
    --------
    >>> from skdpsynth.privacy import PrivacyLedger, gaussian_mechanism
    >>> from skdpsynth.synthesizers.rounds import LedgerBudget
    >>> ledger = PrivacyLedger()
    >>> budget = LedgerBudget(1.0, ledger)
    >>> _ = gaussian_mechanism([10, 20], rho=0.25, random_state=0, ledger=ledger)
    >>> budget.spent, budget.left, budget.fraction_used()
    (0.25, 0.75, 0.25)
    >>> budget.fraction_used(planned=0.25)   # once a round of 0.25 is spent
    0.5
    """

    def __init__(self, rho: float, ledger: PrivacyLedger, cost: Callable[[LedgerEntry], float] | None = None):
        self.rho, self.ledger, self.cost = float(rho), ledger, cost
        # The ledger only grows: the costs of the entries read so far, and their sum, are kept until it does.
        self._read, self._costs, self._spent = len(ledger), [], 0.0

    @property
    def spent(self) -> float:
        """ρ spent so far: the sum over the zCDP entries recorded since this budget was opened (of ``cost``)."""
        if len(self.ledger) != self._read:
            new = [e for e in itertools.islice(self.ledger, self._read, None) if e.accounting == "zcdp"]
            self._costs += [e.rho if self.cost is None else self.cost(e) for e in new]
            self._read, self._spent = len(self.ledger), math.fsum(self._costs)
        return self._spent

    @property
    def left(self) -> float:
        """``ρ`` minus what is spent."""
        return self.rho - self.spent

    def fraction_used(self, planned: float = 0.0) -> float:
        """The fraction of ``ρ`` spent, once ``planned`` more is (model-size limits grow with it)."""
        return (self.spent + planned) / self.rho


@dataclass
class Round:
    """One round's plan; a method's plan may carry more (its noise scale, its selection budget…).

    Attributes
    ----------
    number : int
        1-based.
    last : bool
        This round spends what is left: no round follows it.  A method may
        also find out while measuring (PPSyn's budget rule) and set it then.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from skdpsynth.synthesizers.rounds import Round
    >>> @dataclass
    ... class NoisyRound(Round):
    ...     sigma: float = 1.0
    >>> NoisyRound(3, last=True, sigma=2.5)
    NoisyRound(number=3, last=True, sigma=2.5)
    """

    number: int
    last: bool = False


class RoundMethod(Protocol):
    """A method's steps, which :func:`fit_in_rounds` runs in order.

    ``initial_model``, then for each round ``plan``, ``select_and_measure``,
    ``estimate`` (when something was measured) and ``end_round``, until
    ``plan`` returns ``None`` or a round is the last; then ``final_model``.
    AIM, RandDPGen and PPSyn each implement it (``_AIMRounds``,
    ``_RandDPGenRounds``, ``PPSynRounds``).

    Examples
    --------
    >>> from skdpsynth.synthesizers.rounds import RoundMethod
    >>> sorted(name for name in vars(RoundMethod) if not name.startswith("_"))
    ['end_round', 'estimate', 'final_model', 'initial_model', 'plan', 'select_and_measure']
    """

    def initial_model(self) -> GraphicalModel:
        """Measure what the method measures first (1-way marginals, selection measurements) and fit a model."""

    def plan(self, budget: LedgerBudget, number: int) -> Round | None:
        """Round ``number``'s budget from what ``budget`` says is left; ``None`` once nothing is."""

    def select_and_measure(self, model: GraphicalModel, plan: Round) -> list[Measurement]:
        """Select the round's marginals on ``model`` and measure them: the new measurements.

        One step, because PPSyn measures each pick before it selects the
        next (a measurement can use up the budget, and then no pick follows).
        """

    def estimate(self, model: GraphicalModel, plan: Round, new: list[Measurement]) -> GraphicalModel:
        """Re-estimate the model from every measurement so far, warm started from ``model``."""

    def end_round(self, model: GraphicalModel, plan: Round) -> None:
        """After the estimate: record the round, anneal."""

    def final_model(self, model: GraphicalModel) -> GraphicalModel:
        """The final, longer estimate."""


def fit_in_rounds(method: RoundMethod, budget: LedgerBudget) -> GraphicalModel:
    """Fit a first model, run rounds until the budget is spent, then estimate the final model.

    A round whose picks measured nothing (PPSyn skips a pick with no
    feasible partition) leaves the model as it was.

    Parameters
    ----------
    method : RoundMethod
    budget : LedgerBudget

    Returns
    -------
    GraphicalModel
        The final model.

    Examples
    --------
    A method that measures one 1-way marginal per round, ρ = 0.25 each:

    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import mirror_descent
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> from skdpsynth.synthesizers.rounds import LedgerBudget, Round, fit_in_rounds
    >>> from skdpsynth.synthesizers.select_measure import measure_marginals
    >>> domain = Domain(["a", "b"], [2, 3])
    >>> codes = np.random.default_rng(0).integers(0, 2, size=(100, 2))
    >>> ledger, rng = PrivacyLedger(), np.random.default_rng(0)
    >>> class OneWayRounds:
    ...     measurements = []
    ...     def initial_model(self):
    ...         self.measurements += measure_marginals(codes, domain, [("a",)], np.sqrt(2.0), rng, ledger)
    ...         return mirror_descent(domain, self.measurements, iters=50)[0]
    ...     def plan(self, budget, number):
    ...         return Round(number, last=budget.left <= 0.25) if budget.left > 1e-12 else None
    ...     def select_and_measure(self, model, plan):
    ...         return measure_marginals(codes, domain, [("b",)], np.sqrt(2.0), rng, ledger)
    ...     def estimate(self, model, plan, new):
    ...         self.measurements += new
    ...         return mirror_descent(domain, self.measurements, potentials=model, iters=50)[0]
    ...     def end_round(self, model, plan):
    ...         pass
    ...     def final_model(self, model):
    ...         return model
    >>> model = fit_in_rounds(OneWayRounds(), LedgerBudget(1.0, ledger))
    >>> len(ledger), round(ledger.total_rho(), 12)   # a first measurement and three rounds of 1 / (2 sigma^2)
    (4, 1.0)
    """
    model = method.initial_model()
    number = 0
    while (plan := method.plan(budget, number + 1)) is not None:
        number = plan.number
        new = method.select_and_measure(model, plan)
        if new:
            model = method.estimate(model, plan, new)
        method.end_round(model, plan)
        if plan.last:
            break
    return method.final_model(model)
