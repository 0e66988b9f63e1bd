"""The scikit-learn estimator surface of MSTSynthesizer and AIMSynthesizer.

Parameters, cloning and model selection; ``sample`` as pure post-processing;
output columns and dtypes; where the domain comes from; the privacy ledger;
and scikit-learn's own estimator checks on MST, AIM, PPSyn, RandDPGen and VertiMRF (see
``EXPECTED_FAILED_CHECKS`` below; ViewSynthesizer's run in ``test_view.py``, the DP transformers' in
``test_preprocessing_compose.py``).
"""
import copy
import gc
import pickle
import weakref

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdpsynth import (AIMSynthesizer, Domain, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       PrivacyLeakWarning, VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.datasets import load_adult
from skdpsynth.metrics import marginal_scorer
from skdpsynth.privacy import cdp_rho, mark_public
from stored_state import find_value, reachable

COLUMNS = ["workclass", "education-num", "marital-status", "sex", "income>50K"]
N_ROWS = 3000
DELTA = 1e-9
RACES = ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"]


@pytest.fixture(scope="module")
def adult():
    return load_adult(discretized=True)


@pytest.fixture(scope="module")
def table(adult):
    """5 Adult columns (integer codes), 3000 records, and their public domain."""
    return adult.frame[COLUMNS].iloc[:N_ROWS], adult.domain.project(COLUMNS).to_dict()


def make(kind, domain, **kw):
    """Fast configurations: each fit takes ~0.1-0.3 s on ``table``."""
    params = dict(epsilon=1.0, delta=DELTA, domain=domain, random_state=0)
    if kind == "mst":
        return MSTSynthesizer(**{**params, "max_iters": 300, **kw})
    if kind == "hybrid":
        return HybridSynthesizer(**{**params, "max_iters": 50, "final_iters": 100, **kw})
    if kind == "vertical_mrf":
        return VerticalMRFSynthesizer(**{**params, "party_columns": 3, "n_sketches": 64, "md_iters": 50,
                                         "local_mrf_params": {"max_iters": 50, "final_iters": 50}, **kw})
    if kind == "view":
        return ViewSynthesizer(**{"epsilon": 1.0, "domain": domain, "random_state": 0, "view_size": 2, **kw})
    if kind == "partition":
        return PartitionSynthesizer(**{**params, "rounds": 6, "max_iters": 20, "final_iters": 50, **kw})
    return AIMSynthesizer(**{**params, "rounds": 8, "max_iters": 200, "final_iters": 300, **kw})


KINDS = ["mst", "aim"]
ALL_KINDS = KINDS + ["hybrid", "vertical_mrf", "view", "partition"]  # every synthesizer, for the privacy checks


# -- hyper-parameters --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_get_params_clone_set_params_round_trip(kind, table):
    X, domain = table
    given = dict(domain)
    snapshot = copy.deepcopy(given)
    est = make(kind, given)
    params = est.get_params()
    for name, value in params.items():
        assert getattr(est, name) is value  # stored as given, not validated or converted in __init__
    assert params["domain"] is given

    twin = clone(est)
    assert type(twin) is type(est) and twin is not est
    assert twin.get_params() == params and twin.domain is not given  # clone copies the dict

    assert est.set_params(epsilon=2.0, random_state=5) is est
    assert est.epsilon == 2.0 and est.random_state == 5
    assert est.fit(X) is est
    assert est.domain is given and given == snapshot  # fit did not touch the dict
    assert est.get_params() == {**params, "epsilon": 2.0, "random_state": 5}
    assert "epsilon=2.0" in repr(est)
    fresh = clone(est)
    assert not any(hasattr(fresh, a) for a in ("model_", "privacy_ledger_", "domain_", "n_records_"))

    as_domain = Domain.from_dict(domain)
    est = make(kind, as_domain).fit(X)
    assert est.domain is as_domain and est.domain_ == as_domain


@pytest.mark.parametrize("kind", KINDS)
def test_invalid_hyper_parameters_fail_at_fit_not_init(kind, table):
    X, domain = table
    for bad in ({"epsilon": -1.0}, {"epsilon": np.inf}, {"delta": 0.0}, {"sampling": "bogus"}):
        est = make(kind, domain, **bad)  # accepted by __init__ (sklearn convention) ...
        with pytest.raises(ValueError, match=next(iter(bad))):  # ... rejected by fit, naming the parameter
            est.fit(X)
        assert not hasattr(est, "privacy_ledger_")


def test_grid_search_aim_with_marginal_scorer(table, monkeypatch):
    X, domain = table
    # Record every synthesizer fit the search makes (the estimator is AIMSynthesizer itself).
    fits = []
    original_fit = AIMSynthesizer.fit

    def recording_fit(self, X, y=None, **fit_params):
        out = original_fit(self, X, y, **fit_params)
        fits.append((self.epsilon, self.privacy_ledger_.total_rho()))
        return out

    monkeypatch.setattr(AIMSynthesizer, "fit", recording_fit)

    search = GridSearchCV(
        AIMSynthesizer(domain=domain, rounds=8, max_iters=200, final_iters=300, random_state=0),
        {"epsilon": [0.5, 2.0]},
        scoring=marginal_scorer(ways=2),
        cv=3,
    ).fit(X)

    results = search.cv_results_
    assert [p["epsilon"] for p in results["params"]] == [0.5, 2.0]
    scores = results["mean_test_score"]
    assert np.isfinite(scores).all() and (scores <= 0).all() and (scores > -1).all()  # minus a TVD
    assert search.best_estimator_.sample(10).shape == (10, len(COLUMNS))

    # The privacy cost of the search.  Every fit spends its candidate's whole budget on (part of) the same
    # data, and zCDP costs add up, so the search costs
    #     n_splits x sum over candidates of rho(candidate)  +  rho(best candidate) for the refit,
    # here 3 x (rho(0.5) + rho(2.0)) + rho(best): 2 candidates x 3 folds + 1 refit = 7 fits.
    n_fits = len(results["params"]) * search.n_splits_ + (1 if search.refit else 0)
    assert len(fits) == n_fits == 7
    per_candidate = {p["epsilon"]: cdp_rho(p["epsilon"], DELTA) for p in results["params"]}
    expected = search.n_splits_ * sum(per_candidate.values()) + per_candidate[search.best_params_["epsilon"]]
    assert sum(rho for _, rho in fits) == pytest.approx(expected, rel=1e-12)
    assert all(rho == pytest.approx(per_candidate[eps], rel=1e-12) for eps, rho in fits)


# -- sample() is post-processing ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_sample_spends_nothing(kind, table):
    X, domain = table
    est = make(kind, domain).fit(X)
    ledger = est.privacy_ledger_
    entries, total = ledger.entries, ledger.total_zcdp()
    est.sample()
    est.sample(500, random_state=1)
    est.sample(0)
    assert est.privacy_ledger_ is ledger
    assert len(ledger) == len(entries) and ledger.entries == entries and ledger.total_zcdp() == total


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_sample_after_the_training_data_is_deleted(kind, table):
    X, domain = table
    private = X.copy()
    ref = weakref.ref(private)
    est = make(kind, domain).fit(private)
    del private
    gc.collect()
    assert ref() is None  # the fitted synthesizer holds no reference to the training table
    # nor anything with one entry per record, however deep (a copy of the table, a column, per-record weights)
    assert find_value(reachable(est), N_ROWS, lengths_only=True) == []
    synthetic = est.sample(200, random_state=0)
    assert synthetic.shape == (200, len(COLUMNS))


@pytest.mark.parametrize("kind", KINDS)
def test_pickled_synthesizer_samples_identically(kind, table):
    X, domain = table
    est = make(kind, domain).fit(X)
    loaded = pickle.loads(pickle.dumps(est))
    pd.testing.assert_frame_equal(loaded.sample(300, random_state=7), est.sample(300, random_state=7))
    pd.testing.assert_frame_equal(loaded.sample(), est.sample())  # the unseeded stream is carried over too
    assert loaded.privacy_ledger_.entries == est.privacy_ledger_.entries


@pytest.mark.parametrize("kind", KINDS)
def test_unseeded_samples_differ_but_the_sequence_is_reproducible(kind, table):
    X, domain = table
    est = make(kind, domain).fit(X)
    first, second = est.sample(300), est.sample(300)
    assert not first.equals(second)
    twin = clone(est).fit(X)  # same random_state: same noise, same model, same sampling stream
    pd.testing.assert_frame_equal(twin.sample(300), first)
    pd.testing.assert_frame_equal(twin.sample(300), second)
    est.fit(X)  # refitting restarts the stream
    pd.testing.assert_frame_equal(est.sample(300), first)


# -- output columns and dtypes -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def typed(adult):
    """A mixed-type table (deliberately not in domain or alphabetical order) and its public domain."""
    src = adult.frame.iloc[:N_ROWS]
    workclasses = [f"wc{i}" for i in range(adult.domain["workclass"])]
    frame = pd.DataFrame(
        {
            # Category lists the user declares public (as a DP encoder's output would be).
            "sex": pd.Categorical.from_codes(src["sex"], dtype=mark_public(pd.CategoricalDtype(["Female", "Male"]))),
            "education-num": src["education-num"].astype(np.int16),
            "race": pd.Series(np.asarray(RACES)[src["race"]]),  # pandas' default string dtype
            "relationship": pd.Categorical.from_codes(
                src["relationship"], dtype=mark_public(pd.CategoricalDtype([f"r{i}" for i in range(6)], ordered=True))
            ),
            "workclass": pd.Series(np.asarray(workclasses)[src["workclass"]], dtype=object),
            "marital-status": src["marital-status"].astype(np.int64),
        }
    )
    domain = {"education-num": 16, "race": RACES, "workclass": workclasses, "marital-status": 7}
    return frame, domain, src["income>50K"].astype(np.uint8)


def check_same_schema(synthetic, frame, domain):
    assert list(synthetic.columns) == list(frame.columns)
    pd.testing.assert_series_equal(synthetic.dtypes, frame.dtypes)
    for name, col in frame.items():
        if isinstance(col.dtype, pd.CategoricalDtype):
            assert synthetic[name].cat.categories.equals(col.cat.categories)
            assert synthetic[name].cat.ordered == col.cat.ordered
            assert synthetic[name].notna().all()
        elif isinstance(domain.get(name), list):
            assert synthetic[name].isin(domain[name]).all()
        else:
            assert synthetic[name].between(0, domain[name] - 1).all()


@pytest.mark.parametrize("kind", KINDS)
def test_output_has_the_input_columns_order_and_dtypes(kind, typed):
    frame, domain, income = typed
    est = make(kind, domain).fit(frame)
    synthetic = est.sample(400, random_state=0)
    check_same_schema(synthetic, frame, domain)
    assert est.feature_names_in_.tolist() == list(frame.columns)

    # With y: the target comes back as the last column, named and typed as y.
    est = make(kind, {**domain, "income>50K": 2}).fit(frame, income)
    synthetic = est.sample(400, random_state=0)
    check_same_schema(synthetic, frame.assign(**{"income>50K": income}), {**domain, "income>50K": 2})


def test_categorical_y_keeps_its_categories(typed):
    """A categorical y with a public label list is a domain like a categorical column of X (no PrivacyLeakWarning)."""
    frame, domain, income = typed
    labels = mark_public(pd.CategoricalDtype(["<=50K", ">50K"]))
    y = pd.Series(pd.Categorical.from_codes(income.to_numpy(), dtype=labels), name="income")
    est = make("mst", domain).fit(frame, y)
    assert est.sample(50, random_state=0)["income"].dtype == labels


def test_fit_does_not_modify_the_input_frame(typed):
    frame, _, _ = typed
    X = frame[["sex", "relationship"]].copy()
    X.columns = [0, 1]  # non-string labels
    before = X.copy()
    make("mst", None).fit(X)  # both columns categorical: the domain comes from their dtypes
    pd.testing.assert_frame_equal(X, before)  # column labels included


# -- where the domain comes from ---------------------------------------------------------------------------
def test_domain_from_the_domain_parameter(adult):
    src = adult.frame.iloc[:N_ROWS]
    frame = pd.DataFrame({"age": src["age"], "race": np.asarray(RACES)[src["race"]], "sex": src["sex"]})
    # Sizes and category lists larger than what the data show: the domain is the parameter, not the data.
    domain = {"age": 100, "race": [*RACES, "Unseen"], "sex": 2}
    est = make("mst", domain).fit(frame)
    assert est.domain_ == Domain(["age", "race", "sex"], [100, 6, 2])
    assert est.sample(500, random_state=0)["race"].isin(domain["race"]).all()


def test_domain_from_categorical_dtypes(adult):
    src = adult.frame.iloc[:N_ROWS]
    frame = pd.DataFrame(
        {
            "sex": pd.Categorical.from_codes(src["sex"], dtype=mark_public(pd.CategoricalDtype(["F", "M", "unused"]))),
            "income": pd.Categorical.from_codes(src["income>50K"], dtype=mark_public(pd.CategoricalDtype(["low", "high"]))),
            "race": pd.Categorical.from_codes(src["race"], dtype=mark_public(pd.CategoricalDtype(RACES))),
        }
    )
    est = make("mst", None).fit(frame)  # no domain=, no warning: the dtypes are declared public
    assert est.domain_ == Domain(["sex", "income", "race"], [3, 2, 5])
    # The same categories on a dtype nobody declared public are treated as read from the data.
    undeclared = frame.assign(race=pd.Categorical.from_codes(src["race"], categories=[*RACES, "x"]))
    with pytest.warns(PrivacyLeakWarning, match=r"\['race'\].*CategoricalDtype"):
        assert not make("mst", None).fit(undeclared).privacy_ledger_.is_private


def test_domain_read_from_the_data_warns_naming_the_columns(adult):
    src = adult.frame.iloc[:N_ROWS]
    frame = pd.DataFrame(
        {
            "age": src["age"],
            "race": np.asarray(RACES)[src["race"]],
            "sex": pd.Categorical.from_codes(src["sex"], dtype=mark_public(pd.CategoricalDtype(["F", "M"]))),
            "income": src["income>50K"],
        }
    )
    with pytest.warns(PrivacyLeakWarning) as record:
        est = make("mst", {"income": 2}).fit(frame)
    (message,) = [str(w.message) for w in record if issubclass(w.category, PrivacyLeakWarning)]
    assert "'age'" in message and "'race'" in message
    assert "'sex'" not in message and "'income'" not in message  # declared by dtype / domain=
    assert est.domain_["age"] == src["age"].max() + 1 and est.domain_["race"] == len(set(src["race"]))


def test_non_integer_floats_point_to_the_dp_discretizers(table):
    X, domain = table
    noisy = X.assign(**{"education-num": X["education-num"] + 0.5})
    with pytest.raises(ValueError, match="education-num.*DP discretizer"):
        make("mst", {c: s for c, s in domain.items() if c != "education-num"}).fit(noisy)
    with pytest.raises(ValueError, match="education-num.*DP discretizer"):
        make("mst", domain).fit(noisy)  # a size in domain= does not make floats codes


def test_values_outside_the_public_domain_are_a_clear_error(table):
    X, domain = table
    labelled = X.assign(race=np.where(X["sex"] == 1, "White", "Black"))
    with pytest.raises(ValueError, match=r"'race' has values outside its public categories; declare them in domain="):
        make("mst", {**domain, "race": ["White", "Asian"]}).fit(labelled)
    with pytest.raises(ValueError, match=r"'education-num' has codes outside its public domain 0\.\.9 "):
        make("mst", {**domain, "education-num": 10}).fit(X)
    with pytest.raises(ValueError, match="not in the data"):
        make("mst", {**domain, "no-such-column": 3}).fit(X)
    # Missing values are not a category either, whatever the column's type.
    holes = X.assign(**{"education-num": X["education-num"].where(X.index != X.index[5])})  # float with a NaN
    with pytest.raises(ValueError, match="'education-num' has missing values"):
        make("mst", domain).fit(holes)
    missing_race = labelled.assign(race=labelled["race"].where(X["sex"] == 1))
    with pytest.raises(ValueError, match="'race' has missing values, which are not among its public categories"):
        make("mst", {**domain, "race": ["White", "Black"]}).fit(missing_race)


# -- the privacy ledger ------------------------------------------------------------------------------------
def total_sd(entries):
    """Standard deviation of the minimum-variance record-count estimate from these Gaussian measurements.

    Each measurement of a marginal gives an unbiased count ``sum(y)`` with variance ``sigma² · n_cells``
    (independent noise per cell); the inverse-variance combination has variance ``1 / sum(1 / v_i)``.
    """
    return sum(1.0 / (e.scale**2 * e.n_values) for e in entries) ** -0.5


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_ledger_spends_exactly_the_budget(kind, epsilon, table):
    X, domain = table
    est = make(kind, domain, epsilon=epsilon).fit(X)
    rho = cdp_rho(epsilon, DELTA)
    ledger = est.privacy_ledger_
    assert est.rho_ == rho
    assert ledger.total_rho() == pytest.approx(rho, rel=1e-12)
    assert ledger.total_zcdp() == pytest.approx(rho, rel=1e-12)  # no pure-DP or (eps, delta) entries
    ledger.check_budget(rho=rho)
    assert ledger.epsilon(DELTA) == pytest.approx(epsilon, rel=1e-9)

    # n_records_ is the noisy record count the model was fitted to (the minimum-variance combination of the
    # measured marginals' totals).  Its standard deviation follows from the ledger's sigmas: exactly for AIM,
    # where every measurement is a plain marginal; for MST, the 2-way measurements alone give an upper bound
    # (the estimate also uses those 1-way ones not altered by domain compression, which only lowers its
    # variance).  6 standard deviations: a false failure has probability < 2e-9.
    gaussian = [e for e in ledger if e.mechanism == "discrete gaussian"]  # variance σ² up to < 1e-30 for σ ≥ 1
    if kind == "mst":
        gaussian = [e for e in gaussian if e.description.startswith("2-way")]
    assert abs(est.n_records_ - N_ROWS) <= 6 * total_sd(gaussian)
    assert est.n_records_ != N_ROWS  # a noisy count, not the true one
    assert len(est.sample()) == round(est.n_records_)


# -- regressions: bugs found while writing these tests, fixed in base.py / mst.py / aim.py ---------------------
def test_mst_with_default_compression_fits_a_small_table(adult):
    """MST with compress=True (the default) must fit when every attribute has a rare cell.

    Failed (before the fix) with "No measurement estimates the record count; pass known_total.": once every attribute has a
    merged cell, no compressed 1-way measurement is a plain total, and the tree selection's first estimate
    (``mirror_descent(domain, log1)`` in ``MSTSynthesizer._select_tree``) has nothing to estimate the count from.
    """
    cols = ["age", "workclass", "fnlwgt"]
    X = adult.frame[cols].iloc[:2000]
    est = MSTSynthesizer(epsilon=1.0, domain=adult.domain.project(cols).to_dict(), max_iters=300, random_state=0)
    est.fit(X)
    assert est.sample(100).shape == (100, 3)


def test_aim_with_few_rounds_fits_or_rejects_rounds(table):
    """AIM with ``rounds`` below ~0.9 x the number of attributes spends more than rho on the 1-way marginals.

    Its last round then took the square root of a negative remaining budget (RuntimeWarning) and fails with
    "scores must not contain NaN or +inf."; it must fit within the budget or reject ``rounds`` clearly.
    """
    X, domain = table
    est = make("aim", domain, rounds=2)
    try:
        est.fit(X)
    except ValueError as exc:
        assert "rounds" in str(exc)
    else:
        est.privacy_ledger_.check_budget(rho=est.rho_)


# -- scikit-learn's estimator checks -----------------------------------------------------------------------
EXPECTED_FAILED_CHECKS = {
    "check_estimators_empty_data_messages": (
        "a DP fit must not depend on whether the data are empty: 0 records is a valid input (the noisy count "
        "hides it), so no error; a table with 0 columns is rejected, with its own message"
    ),
    "check_estimators_nan_inf": (
        "the check's arrays are non-integer floats, rejected (ValueError) as continuous values needing a DP "
        "discretizer before NaN/inf is looked at; missing values in discrete data are rejected too, by name"
    ),
    "check_complex_data": "values are opaque category labels: complex numbers are hashable labels like any other",
    "check_positive_only_tag_during_fit": (
        "integer columns are codes 0..size-1: with no domain= (as in the check) negative integers cannot be "
        "codes and are rejected, asking for domain=; negative labels are fine when listed in domain="
    ),
}


VERTICAL_MRF_FAILED_CHECKS = {
    "check_fit2d_1feature": (
        "VertiMRF splits the columns among its parties (party_columns=3 here), at least one each: a table of 2 "
        "columns (the check's feature and y) is refused, naming the numbers of columns and parties, not of features"
    ),
}


@pytest.mark.filterwarnings("ignore::skdpsynth.privacy.PrivacyLeakWarning")
@parametrize_with_checks(
    [MSTSynthesizer(max_iters=50, random_state=0),
     AIMSynthesizer(rounds=40, max_iters=50, final_iters=50, random_state=0),
     PartitionSynthesizer(rounds=6, max_iters=20, final_iters=20, random_state=0),
     HybridSynthesizer(max_iters=50, final_iters=50, random_state=0),
     VerticalMRFSynthesizer(party_columns=3, n_sketches=64, md_iters=50,
                            local_mrf_params={"max_iters": 50, "final_iters": 50}, random_state=0)],
    expected_failed_checks=lambda est: {**EXPECTED_FAILED_CHECKS, **(
        VERTICAL_MRF_FAILED_CHECKS if isinstance(est, VerticalMRFSynthesizer) else {})},
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
