"""User-level differential privacy (issue 45, point 2): privacy_unit= and max_contributions=.

The audits (neighbours that differ by one person's rows, and the planted per-record calibration) are in
tests/test_privacy_audit.py; here: the bounding, the budget scaling, the per-person ledger and the refusals.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer, SynthesisPipeline,
                       TrainOnSynthetic, ViewSynthesizer)
from skdpsynth.benchmarks.generators import make_person_table
from skdpsynth.params import InvalidParameterError
from skdpsynth.privacy import LedgerEntry, PrivacyLedger, cdp_epsilon, cdp_rho
from skdpsynth.privacy.contributions import bound_contributions, person_codes
from skdpsynth.privacy.ledger import group_entry

K = 5
PEOPLE = make_person_table(300, random_state=0)
DOMAIN = dict(PEOPLE.attrs["domain"])
SMALL = {c: DOMAIN[c] for c in ("age", "plan", "device")}
X_SMALL = PEOPLE[["person_id", *SMALL]]


def _fast(cls, **kwargs):
    extra = {MSTSynthesizer: dict(max_iters=50), AIMSynthesizer: dict(rounds=8, max_iters=20, final_iters=30),
             PartitionSynthesizer: dict(rounds=6, max_iters=20, final_iters=30),
             ViewSynthesizer: dict(n_search=20)}[cls]
    return cls(domain=SMALL, random_state=0, **extra, **kwargs)


# -- the bounding --------------------------------------------------------------------------------------------------
def test_bounding_keeps_min_count_k_per_person():
    counts = PEOPLE.groupby("person_id").size()
    kept = bound_contributions(PEOPLE, "person_id", K, random_state=1)
    assert "person_id" not in kept.columns
    per_person = PEOPLE.loc[kept.index, "person_id"].value_counts().reindex(counts.index, fill_value=0)
    assert (per_person == np.minimum(counts, K)).all()
    assert kept.index.is_monotonic_increasing  # the original order, rows as they were
    pd.testing.assert_frame_equal(kept, PEOPLE.loc[kept.index, kept.columns])


def test_bounding_is_uniform_within_a_person():
    """Each of a person's 5 rows is kept with probability k/5 = 0.4, whoever else is in the table."""
    frame = pd.DataFrame({"id": ["a"] * 5 + ["b"] * 50, "x": range(55)})
    rng = np.random.default_rng(2)
    hits = np.zeros(5)
    for _ in range(2000):
        hits += np.isin(np.arange(5), bound_contributions(frame, "id", 2, random_state=rng).index)
    assert np.allclose(hits / 2000, 0.4, atol=0.04)


def test_missing_identifiers_are_people_of_their_own():
    ids = pd.Series(["a", None, "a", np.nan, "b", "a"])
    codes = person_codes(ids)
    assert codes[0] == codes[2] == codes[5] and len({codes[1], codes[3], codes[0], codes[4]}) == 4
    kept = bound_contributions(pd.DataFrame({"id": ids, "x": range(6)}), "id", 1, random_state=0)
    assert sorted(kept.index.intersection([1, 3, 4])) == [1, 3, 4] and len(kept) == 4


# -- the fit ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [MSTSynthesizer, AIMSynthesizer, PartitionSynthesizer, ViewSynthesizer])
def test_identifier_never_reaches_the_synthesizer(cls):
    synth = _fast(cls, privacy_unit="person_id", max_contributions=K).fit(X_SMALL)
    assert list(synth.domain_.attrs) == list(SMALL)
    assert synth.feature_names_in_.tolist() == list(SMALL) and synth.n_features_in_ == 3
    assert list(synth.sample(20).columns) == list(SMALL)
    ledger = synth.privacy_ledger_
    assert ledger.privacy_unit == "person_id" and ledger.max_contributions == K
    assert ledger.statement().endswith("per person ('person_id', at most 5 records each)")
    assert "per person ('person_id', at most 5 records each)" in str(ledger.guarantee())
    assert -1 <= synth.score(X_SMALL) <= 0  # the identifier column is dropped from real records too


def test_record_level_budget_is_the_person_budget_over_k():
    """Group privacy: the method spends rho/k^2 (zCDP) or epsilon/k (pure) per record; the ledger states rho, epsilon."""
    mst = _fast(MSTSynthesizer, privacy_unit="person_id", max_contributions=K).fit(X_SMALL)
    rho = cdp_rho(1.0, 1e-9)
    assert mst.rho_ == pytest.approx(rho, rel=1e-12)
    assert mst.privacy_ledger_.record_level().total_rho() == pytest.approx(rho / K**2, rel=1e-9)
    assert mst.privacy_ledger_.total_rho() == pytest.approx(rho, rel=1e-9)
    assert mst.privacy_ledger_.epsilon() == pytest.approx(1.0, rel=1e-6)
    assert all(e.rho <= rho / K**2 * (1 + 1e-9) for e in mst.privacy_ledger_.entries)  # recorded per record
    view = _fast(ViewSynthesizer, privacy_unit="person_id", max_contributions=K).fit(X_SMALL)
    assert view.privacy_ledger_.record_level().total_epsilon() == pytest.approx(1.0 / K, rel=1e-9)
    assert view.privacy_ledger_.statement() == "1.0000-DP (pure) per person ('person_id', at most 5 records each)"
    assert np.allclose(view.noise_scales_, 1.0 / view.epsilons_) and view.epsilons_.sum() <= 1.0 / K * (1 + 1e-9)
    pp = _fast(PartitionSynthesizer, privacy_unit="person_id", max_contributions=K).fit(X_SMALL)
    assert pp.rho_used_ == pytest.approx(pp.rho_, rel=1e-9)
    assert pp.epsilon_spent_ == pytest.approx(1.0, rel=1e-6)


def test_noise_grows_with_k():
    """The measurement noise of MST's 1-way marginals scales with k (sigma ∝ k)."""
    sigmas = {}
    for k in (1, 4):
        mst = _fast(MSTSynthesizer, privacy_unit="person_id", max_contributions=k).fit(X_SMALL)
        sigmas[k] = mst.privacy_ledger_.entries[0].scale
    assert sigmas[4] == pytest.approx(4 * sigmas[1], rel=1e-9)


def test_target_rows_are_bounded_with_their_records():
    X, y = X_SMALL.drop(columns=["device"]), PEOPLE["device"]
    synth = _fast(MSTSynthesizer, privacy_unit="person_id", max_contributions=2).fit(X, y)
    assert synth.feature_names_in_.tolist() == ["age", "plan"] and list(synth.sample(5).columns)[-1] == "device"


def test_privacy_unit_none_is_unchanged_and_clone_keeps_the_parameters():
    plain = _fast(MSTSynthesizer).fit(X_SMALL[list(SMALL)])
    same = _fast(MSTSynthesizer, privacy_unit=None, max_contributions=None).fit(X_SMALL[list(SMALL)])
    pd.testing.assert_frame_equal(plain.sample(50, random_state=3), same.sample(50, random_state=3))
    assert plain.privacy_ledger_.entries == same.privacy_ledger_.entries
    assert "privacy_unit" not in vars(plain.privacy_ledger_)
    unit = _fast(AIMSynthesizer, privacy_unit="person_id", max_contributions=3)
    params = clone(unit).get_params()
    assert params["privacy_unit"] == "person_id" and params["max_contributions"] == 3


# -- refusals --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, X, error, match", [
    (dict(max_contributions=K), X_SMALL, ValueError, "go together"),
    (dict(privacy_unit="person_id"), X_SMALL, ValueError, "go together"),
    (dict(privacy_unit="user", max_contributions=K), X_SMALL, ValueError, "'user' is not a column"),
    (dict(privacy_unit="person_id", max_contributions=0), X_SMALL, InvalidParameterError, "max_contributions"),
    (dict(privacy_unit="person_id", max_contributions=2.5), X_SMALL, InvalidParameterError, "max_contributions"),
    (dict(privacy_unit="person_id", max_contributions=K), X_SMALL.to_numpy(), TypeError, "DataFrame"),
    (dict(privacy_unit="person_id", max_contributions=K), "people/*.parquet", TypeError, "Out-of-core"),
    (dict(privacy_unit="person_id", max_contributions=K, domain={**SMALL, "person_id": 300}), X_SMALL, ValueError,
     "names the privacy unit"),
])
def test_refusals(kwargs, X, error, match):
    params = {"domain": SMALL, **kwargs}
    with pytest.raises(error, match=match):
        MSTSynthesizer(**params).fit(X)


def test_federated_synthesizers_and_pipelines_refuse():
    with pytest.raises(TypeError):
        HybridSynthesizer(privacy_unit="person_id", max_contributions=K)
    synth = MSTSynthesizer(domain=SMALL, privacy_unit="person_id", max_contributions=K)
    with pytest.raises(ValueError, match="fit it directly"):
        SynthesisPipeline([("synth", synth)]).fit(X_SMALL)
    with pytest.raises(ValueError, match="record-level"):
        TrainOnSynthetic(synth, LogisticRegression()).fit(X_SMALL, PEOPLE["hour"])


# -- the ledger ------------------------------------------------------------------------------------------------------
def test_group_privacy_of_every_kind_of_entry():
    zcdp = LedgerEntry("m", "gaussian", "zcdp", rho=0.01, epsilon=None, sensitivity=1.0, scale=3.0)
    pure = LedgerEntry("c", "laplace", "pure", rho=None, epsilon=0.1)
    approx = LedgerEntry("t", "laplace-threshold", "approx", rho=None, epsilon=0.1, delta=1e-9)
    leak = LedgerEntry("r", "none", "leak", rho=None, epsilon=None)
    assert group_entry(zcdp, 3).rho == pytest.approx(0.09) and group_entry(zcdp, 3).sensitivity == 3.0
    assert group_entry(zcdp, 3).scale == 3.0 and group_entry(pure, 3).epsilon == pytest.approx(0.3)
    grouped = group_entry(approx, 3)
    assert grouped.epsilon == pytest.approx(0.3) and grouped.delta == pytest.approx(3 * math.exp(0.2) * 1e-9)
    assert group_entry(leak, 3) is leak and group_entry(zcdp, 1) is zcdp
    with pytest.raises(ValueError, match="no guarantee"):
        group_entry(LedgerEntry("t", "x", "approx", rho=None, epsilon=1.0, delta=0.1), 10)


def test_per_person_ledger_states_and_composes_per_person():
    ledger = PrivacyLedger(zcdp_delta=1e-9)
    ledger.add("marginals", "gaussian", rho=cdp_rho(1.0, 1e-9) / 4)
    person = ledger.per_person("user", 2)
    assert person.epsilon() == pytest.approx(1.0, rel=1e-6) and ledger.epsilon() < 0.6
    assert person.statement() == "(1.0000, 1e-09)-DP per person ('user', at most 2 records each)"
    assert "privacy_unit='user', max_contributions=2" in repr(person) and "per person" in repr(person)
    assert person.copy().statement() == person.statement()
    assert person.record_level().statement() == ledger.statement()
    person.check_budget(rho=cdp_rho(1.0, 1e-9))
    with pytest.raises(ValueError, match="different units"):
        PrivacyLedger().extend(person)
    with pytest.raises(ValueError, match="different units"):
        person.extend(ledger)
    assert cdp_epsilon(person.total_rho(), 1e-9) == pytest.approx(person.epsilon())
    leaky = person.copy()
    leaky.add_leak("categories read from the data")
    assert leaky.statement().startswith("NOT differentially private")
