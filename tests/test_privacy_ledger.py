from __future__ import annotations

import inspect
import math
import pickle

import numpy as np
import pandas as pd
import pytest

from skdpsynth.privacy import (
    BudgetExceededError,
    LedgerEntry,
    PrivacyLeakWarning,
    PrivacyLedger,
    cdp_epsilon,
    gaussian_mechanism,
    laplace_mechanism,
    warn_privacy_leak,
)

COLUMNS = ["description", "mechanism", "accounting", "rho", "epsilon", "delta",
           "sensitivity", "scale", "party", "n_values"]


def mixed_ledger() -> PrivacyLedger:
    ledger = PrivacyLedger()
    ledger.add("m1", "gaussian", rho=0.1, sensitivity=1.0, scale=math.sqrt(5), n_values=4)
    ledger.add("m2", "gaussian", rho=0.2)
    ledger.add("c1", "laplace", epsilon=0.5, scale=2.0)
    ledger.add("c2", "laplace", epsilon=1.0, party="A")
    ledger.add("x", "other", epsilon=0.3, delta=1e-7, note="external")
    return ledger


# ------------------------------------------------------------------ entries
def test_add_infers_kind():
    ledger = mixed_ledger()
    assert [e.accounting for e in ledger] == ["zcdp", "zcdp", "pure", "pure", "approx"]
    assert ledger.entries[-1].details == {"note": "external"}
    assert ledger.entries[-1].delta == 1e-7


@pytest.mark.parametrize("kwargs", [{}, {"rho": 0.1, "epsilon": 0.1}, {"rho": 0.1, "delta": 1e-6},
                                    {"rho": -0.1}, {"epsilon": float("nan")}, {"rho": float("inf")},
                                    {"epsilon": 1.0, "delta": 1.0}, {"rho": 0.1, "n_values": -1}])
def test_add_validation(kwargs):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError):
        ledger.add("bad", "m", **kwargs)
    assert len(ledger) == 0


@pytest.mark.parametrize("kwargs", [
    dict(accounting="renyi", rho=0.1, epsilon=None),
    dict(accounting="zcdp", rho=None, epsilon=None),
    dict(accounting="zcdp", rho=0.1, epsilon=0.1),
    dict(accounting="pure", rho=None, epsilon=None),
    dict(accounting="pure", rho=None, epsilon=1.0, delta=1e-6),
    dict(accounting="approx", rho=None, epsilon=1.0),
    dict(accounting="zcdp", rho=0.1, epsilon=None, scale=-1.0),
])
def test_entry_validation(kwargs):
    with pytest.raises(ValueError):
        LedgerEntry("d", "m", **kwargs)


def test_entry_is_frozen_and_details_ignored_in_eq():
    a = LedgerEntry("d", "m", "zcdp", rho=np.float64(0.1), epsilon=None, details={"k": 1})
    b = LedgerEntry("d", "m", "zcdp", rho=0.1, epsilon=None)
    assert a == b and hash(a) == hash(b)
    assert type(a.rho) is float
    with pytest.raises(AttributeError):
        a.rho = 1.0  # type: ignore[misc]


# ------------------------------------------------------------------- totals
def test_totals_mixed():
    ledger = mixed_ledger()
    assert ledger.total_rho() == pytest.approx(0.3)
    assert ledger.total_epsilon() == pytest.approx(1.5)
    assert ledger.total_zcdp() == pytest.approx(0.3 + 0.5**2 / 2 + 1.0**2 / 2)


def test_epsilon_pure_only():
    ledger = PrivacyLedger()
    ledger.add("a", "laplace", epsilon=1.0)
    assert ledger.epsilon(0.0) == 1.0
    # A single eps=1 release: the zCDP route (rho=0.5) is worse, so Σε wins.
    assert ledger.epsilon(1e-6) == 1.0
    many = PrivacyLedger()
    for _ in range(100):
        many.add("a", "laplace", epsilon=0.1)
    assert many.epsilon(0.0) == pytest.approx(10.0)
    # 100 releases: zCDP composition (rho = 100 * 0.01 / 2) beats Σε = 10.
    assert many.epsilon(1e-6) == pytest.approx(cdp_epsilon(0.5, 1e-6), rel=1e-12)
    assert many.epsilon(1e-6) < 10.0


def test_epsilon_zcdp_only_and_mixed():
    ledger = PrivacyLedger()
    ledger.add("g", "gaussian", rho=0.25)
    assert ledger.epsilon(1e-6) == pytest.approx(cdp_epsilon(0.25, 1e-6), rel=1e-12)
    with pytest.raises(ValueError):
        ledger.epsilon(0.0)
    ledger.add("l", "laplace", epsilon=0.5)
    # The better of two valid routes: all in zCDP, or the pure entry added by basic composition.
    all_zcdp, basic = cdp_epsilon(0.25 + 0.125, 1e-6), 0.5 + cdp_epsilon(0.25, 1e-6)
    assert basic < all_zcdp  # here basic composition wins
    assert ledger.epsilon(1e-6) == pytest.approx(min(all_zcdp, basic), rel=1e-12)
    small = PrivacyLedger()
    small.add("g", "gaussian", rho=0.25)
    small.add("l", "laplace", epsilon=0.01)
    assert small.epsilon(1e-6) == pytest.approx(cdp_epsilon(0.25 + 0.01**2 / 2, 1e-6), rel=1e-12)  # zCDP wins


def test_leak_entries_make_the_ledger_not_private():
    ledger = mixed_ledger()
    assert ledger.is_private and math.isfinite(ledger.epsilon(1e-6))
    spent = ledger.total_zcdp()
    ledger.add_leak("bounds of column 'age' read from the data", columns=["age"])
    assert not ledger.is_private
    assert ledger.epsilon(1e-6) == math.inf
    assert ledger.total_zcdp() == spent  # a leak has no cost that composes
    assert ledger.statement(1e-6).startswith("NOT differentially private: bounds of column 'age'")
    assert "NOT differentially private" in repr(ledger)
    frame = ledger.to_frame()
    assert frame["accounting"].iloc[-1] == "leak" and math.isnan(frame["rho"].iloc[-1])
    with pytest.raises(ValueError):
        LedgerEntry("x", "none", "leak", rho=0.1, epsilon=None)
    # The leak travels with extend (as in a pipeline's union of ledgers).
    union = PrivacyLedger().extend(ledger, party="step")
    assert not union.is_private and union.leaks[0].party == "step"


def test_epsilon_with_approx_entries():
    ledger = mixed_ledger()
    left = 1e-6 - 1e-7
    expected = 0.3 + min(cdp_epsilon(ledger.total_zcdp(), left), 1.5 + cdp_epsilon(ledger.total_rho(), left))
    assert ledger.epsilon(1e-6) == pytest.approx(expected, rel=1e-12)
    for delta in (1e-7, 5e-8, 0.0):
        with pytest.raises(ValueError):
            ledger.epsilon(delta)
    approx_only = PrivacyLedger()
    approx_only.add("x", "other", epsilon=0.3, delta=1e-7)
    approx_only.add("y", "other", epsilon=0.2, delta=1e-7)
    assert approx_only.epsilon(2e-7) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        approx_only.epsilon(1e-7)


def test_epsilon_empty_and_bad_delta():
    assert PrivacyLedger().epsilon(1e-6) == 0.0
    with pytest.raises(ValueError):
        PrivacyLedger().epsilon(1.0)
    with pytest.raises(ValueError):
        PrivacyLedger().epsilon(-1e-9)


# -------------------------------------------------------------------- frame
def test_to_frame():
    frame = mixed_ledger().to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == COLUMNS and len(frame) == 5
    assert frame["rho"].iloc[0] == 0.1 and np.isnan(frame["rho"].iloc[2])
    assert frame["party"].iloc[3] == "A"
    assert frame["n_values"].iloc[0] == 4 and pd.isna(frame["n_values"].iloc[1])
    empty = PrivacyLedger().to_frame()
    assert list(empty.columns) == COLUMNS and len(empty) == 0


# ------------------------------------------------------------------- budget
def test_check_budget_rho():
    ledger = PrivacyLedger()
    for _ in range(3):
        ledger.add("g", "gaussian", rho=0.1)
    ledger.check_budget(rho=0.3)  # exactly the budget (0.1 * 3 rounds above 0.3) passes
    ledger.add("l", "laplace", epsilon=0.2)  # adds 0.02 in zCDP
    ledger.check_budget(rho=0.32)
    with pytest.raises(BudgetExceededError, match="0.32") as info:
        ledger.check_budget(rho=0.31)
    assert isinstance(info.value, RuntimeError)


def test_check_budget_epsilon():
    ledger = PrivacyLedger()
    ledger.add("a", "laplace", epsilon=0.7)
    ledger.add("b", "laplace", epsilon=0.2)
    ledger.check_budget(epsilon=0.9)
    with pytest.raises(BudgetExceededError):
        ledger.check_budget(epsilon=0.8)
    ledger.add("g", "gaussian", rho=0.01)
    with pytest.raises(ValueError):
        ledger.check_budget(epsilon=10.0)  # no longer expressible in pure epsilon
    ledger.check_budget(rho=0.7**2 / 2 + 0.2**2 / 2 + 0.01, epsilon=10.0)


def test_check_budget_argument_errors():
    with pytest.raises(ValueError):
        PrivacyLedger().check_budget()
    with pytest.raises(ValueError):
        mixed_ledger().check_budget(rho=100.0)  # approx entries have no zCDP cost


# ----------------------------------------------------- pickling and unions
def test_pickle_round_trip():
    ledger = mixed_ledger()
    restored = pickle.loads(pickle.dumps(ledger))
    assert restored.entries == ledger.entries
    assert restored.entries[-1].details == {"note": "external"}
    assert restored.total_zcdp() == ledger.total_zcdp()


def test_extend_and_copy():
    step = PrivacyLedger()
    step.add("s1", "gaussian", rho=0.1)
    step.add("s2", "laplace", epsilon=0.4, party="B")
    total = PrivacyLedger()
    total.add("t", "gaussian", rho=0.2)
    assert total.extend(step, party="A") is total
    assert [e.party for e in total] == [None, "A", "B"]  # existing tags are kept
    assert [e.party for e in step] == [None, "B"]  # the source is untouched
    assert total.total_rho() == pytest.approx(0.3) and total.total_epsilon() == pytest.approx(0.4)
    clone = total.copy()
    clone.extend(clone)
    assert len(clone) == 6 and len(total) == 3
    with pytest.raises(TypeError):
        total.record("not an entry")  # type: ignore[arg-type]


def test_repr_and_mechanism_integration():
    ledger = PrivacyLedger()
    gaussian_mechanism(np.zeros(3), rho=0.05, random_state=0, ledger=ledger)
    laplace_mechanism(np.zeros(3), epsilon=0.1, random_state=0, ledger=ledger)
    assert ledger.total_zcdp() == pytest.approx(0.05 + 0.005)
    text = repr(ledger)
    assert text.startswith("PrivacyLedger(") and "n_entries=2" in text


# ----------------------------------------------------------------- warnings
def _infers_bounds():
    warn_privacy_leak("bounds inferred from the data")


def test_warn_privacy_leak_blames_the_callers_caller():
    assert issubclass(PrivacyLeakWarning, RuntimeWarning)
    with pytest.warns(PrivacyLeakWarning, match="inferred") as record:
        line = inspect.currentframe().f_lineno + 1
        _infers_bounds()
    assert record[0].filename == __file__ and record[0].lineno == line
