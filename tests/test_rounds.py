"""The shared round driver (skdpsynth.synthesizers.rounds): its loop, and the budget it reads from the ledger."""
from __future__ import annotations

import math

import numpy as np
import pytest

from skdpsynth.privacy import PrivacyLedger, gaussian_mechanism
from skdpsynth.synthesizers.rounds import LedgerBudget, Round, fit_in_rounds


def test_the_budget_is_what_the_ledger_holds_since_it_was_opened():
    ledger = PrivacyLedger()
    gaussian_mechanism([1.0], rho=0.5, random_state=0, ledger=ledger)   # an earlier release: not this budget's
    budget = LedgerBudget(1.0, ledger)
    assert budget.spent == 0.0 and budget.left == 1.0
    gaussian_mechanism([1.0], rho=0.25, random_state=0, ledger=ledger)
    ledger.add("an epsilon-DP release", "laplace", epsilon=1.0)           # not zCDP: not counted in rho
    gaussian_mechanism([1.0], rho=0.125, random_state=0, ledger=ledger)
    assert budget.spent == 0.375 and budget.left == 0.625
    assert budget.fraction_used(planned=0.125) == 0.5


def test_a_cost_function_counts_entries_at_another_budget():
    ledger = PrivacyLedger()
    budget = LedgerBudget(1.0, ledger, cost=lambda entry: entry.rho / entry.details.get("n_repeats", 1))
    ledger.add("measured 4 times", "gaussian", rho=0.4, n_repeats=4)
    ledger.add("selected once", "exponential", rho=0.2)
    assert math.isclose(budget.spent, 0.3) and math.isclose(ledger.total_rho(), 0.6)


class _Recorder:
    """A method whose rounds spend 0.25 each (nothing measured in round 2), recording the driver's calls."""

    def __init__(self, ledger, stop_early=False):
        self.ledger, self.calls, self.stop_early = ledger, [], stop_early

    def initial_model(self):
        self.calls.append("initial")
        return 0

    def plan(self, budget, number):
        self.calls.append(f"plan {number}")
        if budget.left <= 1e-12:
            return None
        return Round(number, last=self.stop_early and number == 2)

    def select_and_measure(self, model, plan):
        gaussian_mechanism([1.0], rho=0.25, random_state=0, ledger=self.ledger)
        self.calls.append(f"select {plan.number}")
        return [] if plan.number == 2 else ["a measurement"]

    def estimate(self, model, plan, new):
        self.calls.append(f"estimate {plan.number}")
        return model + 1

    def end_round(self, model, plan):
        self.calls.append(f"end {plan.number}")

    def final_model(self, model):
        self.calls.append("final")
        return model


def test_rounds_run_until_the_plan_finds_nothing_left():
    ledger = PrivacyLedger()
    method = _Recorder(ledger)
    model = fit_in_rounds(method, LedgerBudget(1.0, ledger))
    assert model == 3   # four rounds, one of which measured nothing and so was not re-estimated
    assert method.calls == ["initial", "plan 1", "select 1", "estimate 1", "end 1", "plan 2", "select 2", "end 2",
                            "plan 3", "select 3", "estimate 3", "end 3", "plan 4", "select 4", "estimate 4",
                            "end 4", "plan 5", "final"]


def test_a_last_round_ends_the_rounds():
    ledger = PrivacyLedger()
    method = _Recorder(ledger, stop_early=True)
    fit_in_rounds(method, LedgerBudget(1.0, ledger))
    assert method.calls[-3:] == ["select 2", "end 2", "final"]


@pytest.mark.parametrize("build", [
    lambda d: __import__("skdpsynth").AIMSynthesizer(epsilon=1.0, domain=d, rounds=8, max_iters=50, final_iters=50,
                                                     random_state=0),
    lambda d: __import__("skdpsynth").PartitionSynthesizer(epsilon=1.0, domain=d, rounds=6, max_iters=20,
                                                           final_iters=20, random_state=0),
    lambda d: __import__("skdpsynth").HybridSynthesizer(epsilon=1.0, domain=d, max_iters=20, final_iters=20,
                                                        random_state=0),
], ids=["AIM", "PPSyn", "RandDPGen"])
def test_the_rounds_spend_exactly_what_the_ledger_says_is_left(build):
    from skdpsynth.datasets import load_adult

    adult = load_adult(discretized=True)
    columns = ["workclass", "education-num", "sex", "income>50K"]
    est = build(adult.domain.project(columns).to_dict()).fit(adult.frame[columns].iloc[:2000])
    # The last round takes rho minus the ledger's sum, so the sum is rho up to the rounding of that subtraction.
    assert abs(est.privacy_ledger_.total_rho() - est.rho_) <= 2 * np.spacing(est.rho_)
