from __future__ import annotations

import inspect
import math
import pickle

import numpy as np
import pandas as pd
import pytest

from skdpsynth import MSTSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.pipeline import SynthesisPipeline
from skdpsynth.preprocessing import TableDiscretizer
from skdpsynth.privacy import (
    BudgetExceededError,
    LedgerEntry,
    PrivacyLeakWarning,
    PrivacyLedger,
    cdp_epsilon,
    cdp_rho,
    gaussian_mechanism,
    laplace_mechanism,
    warn_privacy_leak,
)
from skdpsynth.privacy import Guarantee

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


# ---------------------------------------------------------------- guarantee
def _ledger(*specs) -> PrivacyLedger:
    """A ledger of hand-built entries: ("zcdp", rho), ("pure", eps), ("approx", eps, delta), ("leak",)."""
    entries = []
    for i, (kind, *cost) in enumerate(specs):
        if kind == "zcdp":
            entries.append(LedgerEntry(f"z{i}", "gaussian", "zcdp", rho=cost[0], epsilon=None))
        elif kind == "pure":
            entries.append(LedgerEntry(f"p{i}", "laplace", "pure", rho=None, epsilon=cost[0]))
        elif kind == "approx":
            entries.append(LedgerEntry(f"a{i}", "laplace-threshold", "approx", rho=None, epsilon=cost[0],
                                       delta=cost[1]))
        else:
            entries.append(LedgerEntry(f"leak {i}", "none", "leak", rho=None, epsilon=None))
    return PrivacyLedger(entries)


def _consistent(ledger: PrivacyLedger, delta: float) -> Guarantee:
    g = ledger.guarantee(delta)
    assert isinstance(g, Guarantee)
    assert ledger.epsilon(delta) == g.epsilon and g.delta == delta
    return g


def test_guarantee_pure_only():
    ledger = _ledger(("pure", 0.4), ("pure", 0.2))
    g = _consistent(ledger, 0.0)
    assert g.epsilon == pytest.approx(0.6, rel=1e-15) and g.is_private
    assert (g.n_pure, g.pure_epsilon, g.pure_folded, g.conversion_epsilon) == (2, pytest.approx(0.6), False, None)
    assert str(g).startswith("(0.6, 0)-DP") and "pure" in str(g)
    assert _consistent(ledger, 1e-6).epsilon == pytest.approx(0.6)  # zCDP route worse for two big releases
    many = _ledger(*[("pure", 0.1)] * 100)
    g = _consistent(many, 1e-6)
    assert g.pure_folded and g.converted_rho == pytest.approx(0.5)
    assert g.epsilon == g.conversion_epsilon == pytest.approx(cdp_epsilon(0.5, 1e-6), rel=1e-12)
    assert "folded" in str(g)


def test_guarantee_zcdp_only():
    ledger = _ledger(("zcdp", 0.1), ("zcdp", 0.15))
    g = _consistent(ledger, 1e-6)
    assert g.epsilon == pytest.approx(cdp_epsilon(0.25, 1e-6), rel=1e-12)
    assert (g.n_zcdp, g.rho, g.pure_folded, g.conversion_delta) == (2, pytest.approx(0.25), None, 1e-6)
    assert "rho=0.25" in str(g)
    with pytest.raises(ValueError, match="delta > 0"):
        ledger.epsilon(0.0)


def test_guarantee_zcdp_and_pure_takes_the_better_route():
    big = _ledger(("zcdp", 0.25), ("pure", 0.5))
    g = _consistent(big, 1e-6)
    added = 0.5 + cdp_epsilon(0.25, 1e-6)
    assert added < cdp_epsilon(0.25 + 0.125, 1e-6)
    assert g.epsilon == pytest.approx(added, rel=1e-12) and g.pure_folded is False
    assert g.converted_rho == pytest.approx(0.25) and "added" in str(g)
    small = _ledger(("zcdp", 0.25), ("pure", 0.01))
    g = _consistent(small, 1e-6)
    assert g.epsilon == pytest.approx(cdp_epsilon(0.25 + 0.01**2 / 2, 1e-6), rel=1e-12) and g.pure_folded
    assert g.converted_rho == pytest.approx(0.25 + 0.01**2 / 2) and "folded" in str(g)


def test_guarantee_approx_only():
    ledger = _ledger(("approx", 0.3, 1e-7), ("approx", 0.2, 1e-7))
    g = _consistent(ledger, 2e-7)
    assert g.epsilon == pytest.approx(0.5) and (g.n_approx, g.approx_delta) == (2, pytest.approx(2e-7))
    assert g.conversion_epsilon is None and "basic composition" in str(g)
    assert _consistent(ledger, 1e-6).epsilon == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"already spend delta=2e-07 > the target delta=1e-07.*delta >= 2e-07"):
        ledger.epsilon(1e-7)


def test_guarantee_zcdp_and_approx():
    ledger = _ledger(("zcdp", 0.25), ("approx", 0.3, 1e-7))
    g = _consistent(ledger, 1e-6)
    assert g.conversion_delta == pytest.approx(9e-7, rel=1e-12)
    assert g.epsilon == pytest.approx(0.3 + cdp_epsilon(0.25, 1e-6 - 1e-7), rel=1e-12)
    assert g.conversion_epsilon == pytest.approx(cdp_epsilon(0.25, 1e-6 - 1e-7), rel=1e-12)
    # The approx entries' delta leaves none for converting the zCDP entries: say so, and what to ask for.
    for delta in (1e-7, 5e-8):
        with pytest.raises(ValueError, match=r"already spend delta=1e-07 >=? the target.*"
                                             r"delta > 1e-07, e\.g\. delta=2e-07"):
            ledger.epsilon(delta)


def test_guarantee_pure_and_approx():
    ledger = _ledger(("pure", 0.5), ("approx", 0.3, 1e-7))
    g = _consistent(ledger, 1e-7)  # no delta left: the pure entry is added
    assert g.epsilon == pytest.approx(0.8) and g.pure_folded is False
    g = _consistent(ledger, 1e-3)
    assert g.epsilon == pytest.approx(0.3 + min(0.5, cdp_epsilon(0.125, 1e-3 - 1e-7)), rel=1e-12)


def test_guarantee_all_kinds():
    ledger = mixed_ledger()
    g = _consistent(ledger, 1e-6)
    left = 1e-6 - 1e-7
    folded, added = cdp_epsilon(ledger.total_zcdp(), left), 1.5 + cdp_epsilon(0.3, left)
    assert g.epsilon == pytest.approx(0.3 + min(folded, added), rel=1e-12)
    assert (g.n_zcdp, g.n_pure, g.n_approx, g.pure_folded) == (2, 2, 1, folded <= added)
    text = str(g)
    for part in (f"({g.epsilon:.6g}, 1e-06)-DP", "rho=0.3 (2 entries)", "eps=1.5 (2 entries)",
                 "eps=0.3, delta=1e-07 (1 entry)", "basic composition"):
        assert part in text, (part, text)


def test_guarantee_with_a_leak_is_none():
    ledger = mixed_ledger()
    ledger.add_leak("bounds of column 'age' read from the data")
    for delta in (1e-6, 1e-8):  # no delta gives a guarantee, not even one below the approx entries' delta
        g = _consistent(ledger, delta)
        assert g.epsilon == math.inf and not g.is_private
        assert g.leaks == ("bounds of column 'age' read from the data",)
        assert str(g).startswith("no DP guarantee") and "NOT differentially private" in str(g)
    with pytest.raises(ValueError):
        ledger.guarantee(1.0)


def test_guarantee_empty():
    g = _consistent(PrivacyLedger(), 1e-9)
    assert g.epsilon == 0.0 and g.is_private and "nothing" in str(g)


def test_docs_recipe_pipeline_states_its_guarantee():
    """doc/preprocessing.md: TableDiscretizer(epsilon=0.1, delta=1e-9) then MSTSynthesizer(epsilon=0.9)."""
    adult = load_adult()
    columns = ["age", "workclass", "sex", "hours-per-week"]
    X = adult.frame[columns].dropna().sample(2000, random_state=0)
    # `age`'s bounds (pure Laplace) and `workclass`'s categories (thresholded counts, (eps, delta)) are paid
    # from the discretizer's budget; the other two columns have public metadata.
    schema = {"age": "numeric", "workclass": "categorical",
              "sex": adult.schema["sex"], "hours-per-week": adult.schema["hours-per-week"]}
    pipe = SynthesisPipeline([
        ("table", TableDiscretizer(schema, epsilon=0.1, delta=1e-9, random_state=0)),
        ("synth", MSTSynthesizer(epsilon=0.9, random_state=0)),
    ]).fit(X)
    ledger = pipe.privacy_ledger_
    by_kind = {k: [e for e in ledger if e.accounting == k] for k in ("zcdp", "pure", "approx", "leak")}
    rho = math.fsum(e.rho for e in by_kind["zcdp"])
    pure = [e.epsilon for e in by_kind["pure"]]
    approx_eps = math.fsum(e.epsilon for e in by_kind["approx"])
    approx_delta = math.fsum(e.delta for e in by_kind["approx"])
    assert not by_kind["leak"] and pure and by_kind["approx"]
    assert rho == pytest.approx(cdp_rho(0.9, 1e-9), rel=1e-12)
    assert math.fsum(pure) + approx_eps == pytest.approx(0.1, rel=1e-12)
    assert approx_delta == pytest.approx(1e-9, rel=1e-12)

    # Each step spent its own delta=1e-9 (the discretizer's is an infinite-loss event: a value held by one record
    # released), so the pipeline is (eps, 2e-9)-DP, not (eps, 1e-9): at 1e-9 no delta is left for the zCDP part.
    with pytest.raises(ValueError, match=r"already spend delta=1e-09.*ask for delta > 1e-09"):
        ledger.epsilon(1e-9)
    delta = 2e-9
    left = delta - approx_delta
    folded = cdp_epsilon(rho + math.fsum(e * e / 2 for e in pure), left)
    added = math.fsum(pure) + cdp_epsilon(rho, left)
    expected = approx_eps + min(folded, added)
    g = _consistent(ledger, delta)
    assert g.epsilon == pytest.approx(expected, rel=1e-12)
    # Never below the approx entries plus the synthesizer's own conversion; never above the two budgets added.
    assert approx_eps + cdp_epsilon(rho, left) <= g.epsilon <= (0.1 + 0.9) * (1 + 1e-9)
    assert (g.n_approx, g.approx_epsilon, g.approx_delta) == (1, approx_eps, approx_delta)
    assert ledger.statement(delta) == f"({g.epsilon:.4f}, 2e-09)-DP"
    text = repr(ledger)
    assert "total_epsilon=0" not in text and f"approx=({approx_eps:.6g}, 1e-09)" in text
    # The steps' deltas add up: the ledger knows its own total delta and states the guarantee at it.
    assert ledger.delta == pytest.approx(2e-9, rel=1e-12)
    assert ledger.epsilon() == g.epsilon
    assert text.endswith(f": ({g.epsilon:.6g}, 2e-09)-DP)")
    synth_ledger = pipe.named_steps_["synth"].privacy_ledger_
    assert synth_ledger.delta == 1e-9 and synth_ledger.epsilon() == pytest.approx(0.9, rel=1e-9)
    assert repr(synth_ledger).endswith(f"{rho:.6g}-zCDP, (0.9, 1e-09)-DP)")


def test_zcdp_delta_is_validated_added_by_extend_and_kept_by_copy():
    with pytest.raises(ValueError, match="zcdp_delta"):
        PrivacyLedger(zcdp_delta=0.0)
    a = PrivacyLedger(zcdp_delta=1e-9)
    a.add("m", "gaussian", rho=0.01)
    assert a.copy().zcdp_delta == 1e-9
    b = PrivacyLedger(zcdp_delta=1e-8)
    b.add("m", "gaussian", rho=0.02)
    total = PrivacyLedger().extend(a).extend(b)
    assert total.delta == pytest.approx(1.1e-8)
    assert total.epsilon() == cdp_epsilon(0.03, total.delta)
    unknown = PrivacyLedger([LedgerEntry("m", "gaussian", "zcdp", rho=0.1, epsilon=None)])
    assert unknown.delta is None
    with pytest.raises(ValueError, match="give delta"):
        unknown.epsilon()
    assert "-zCDP" in repr(unknown)


# -------------------------------------------------------------------- repr
@pytest.mark.parametrize("specs, wanted, unwanted", [
    ([], ["n_entries=0", "0-DP"], ["rho=", "pure_epsilon="]),
    ([("pure", 0.4), ("pure", 0.2)], ["n_entries=2", "pure_epsilon=0.6 (2 entries)", "0.6-DP (pure)"],
     ["rho=", "approx="]),
    ([("zcdp", cdp_rho(1.0, 1e-9))], [f"rho={cdp_rho(1.0, 1e-9):.6g} (1 entry)", f"{cdp_rho(1.0, 1e-9):.6g}-zCDP"],
     ["total_epsilon", "pure_epsilon="]),
    ([("zcdp", 0.25), ("pure", 0.5)], ["rho=0.25 (1 entry)", "pure_epsilon=0.5 (1 entry)", "0.375-zCDP"], []),
    ([("approx", 0.3, 1e-7)], ["approx=(0.3, 1e-07) (1 entry)", "(0.3, 1e-07)-DP"], ["rho="]),
    ([("zcdp", 0.25), ("pure", 0.5), ("approx", 0.3, 1e-7)],
     ["rho=0.25", "pure_epsilon=0.5", "approx=(0.3, 1e-07)", "0.375-zCDP and (0.3, 1e-07)-DP",
      "delta > 1e-07"], []),
    ([("zcdp", 0.25), ("leak",)], ["n_leaks=1", "NOT differentially private", "no DP guarantee"], ["-zCDP"]),
])
def test_repr_states_the_guarantee(specs, wanted, unwanted):
    text = repr(_ledger(*specs))
    assert text.startswith("PrivacyLedger(") and text.endswith(")")
    for part in wanted:
        assert part in text, (part, text)
    for part in unwanted:
        assert part not in text, (part, text)
    assert "total_epsilon=0" not in text


def test_statement_without_delta_states_the_composition():
    ledger = _ledger(("zcdp", 0.25), ("pure", 0.5), ("approx", 0.3, 1e-7))
    assert ledger.statement() == ("0.375-zCDP and (0.3, 1e-07)-DP "
                                  "(give delta > 1e-07 for one (epsilon, delta)-DP statement)")
    assert ledger.statement(1e-6) == f"({ledger.epsilon(1e-6):.4f}, 1e-06)-DP"
    assert _ledger(("zcdp", 0.25)).statement() == "0.25-zCDP"
    assert _ledger(("pure", 0.5)).statement() == "0.5000-DP (pure)"


def test_statement_without_delta_is_at_the_ledgers_own_delta():
    """statement() states the guarantee at the ledger's own delta, as epsilon() and the repr do."""
    synth = PrivacyLedger(zcdp_delta=1e-9)  # what a synthesizer given (1, 1e-9) records
    synth.add("marginals", "gaussian", rho=cdp_rho(1.0, 1e-9))
    assert synth.statement() == synth.statement(1e-9) == "(1.0000, 1e-09)-DP"
    # A pipeline: category discovery's (eps, delta) entry and the synthesizer's; the deltas add up.
    pipe = PrivacyLedger()
    pipe.add("categories", "laplace-threshold", epsilon=0.05, delta=1e-9)
    pipe.extend(synth)
    assert pipe.delta == 2e-9
    assert pipe.statement() == f"({pipe.epsilon():.4f}, 2e-09)-DP" == pipe.statement(2e-9)
    assert repr(pipe).endswith(f"({pipe.epsilon():.6g}, 2e-09)-DP)")
    # Only (eps, delta) entries: their own delta.  Pure entries only: pure, unless a delta is asked for.
    approx = PrivacyLedger()
    approx.add("categories", "laplace-threshold", epsilon=0.3, delta=1e-7)
    assert approx.statement() == "(0.3000, 1e-07)-DP"
    assert _ledger(("pure", 0.5)).statement() == "0.5000-DP (pure)"
    # Unknown delta (zCDP entries without zcdp_delta): stated as it is.
    assert PrivacyLedger(synth.entries).statement() == "0.0149731-zCDP"


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
