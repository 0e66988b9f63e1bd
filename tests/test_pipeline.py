"""TrainOnSynthetic: a synthesizer fitted on (X, y), an estimator trained on its synthetic records only."""
import numpy as np
import pandas as pd
import pytest

from skdpsynth.privacy import mark_public
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    StratifiedKFold,
    check_cv,
    cross_val_score,
    cross_validate,
)
from sklearn.svm import LinearSVC
from sklearn.utils import get_tags

from skdpsynth import MSTSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.pipeline import TrainOnSynthetic
from skdpsynth.privacy import cdp_rho

FEATURES = ["education-num", "marital-status", "sex"]
TARGET = "income>50K"
DELTA = 1e-9


@pytest.fixture(scope="module")
def adult():
    return load_adult(discretized=True)


@pytest.fixture(scope="module")
def data(adult):
    """3000 training and 1000 test records of 3 Adult features and the income label."""
    frame = adult.frame.sample(4000, random_state=0).reset_index(drop=True)
    train, test = frame.iloc[:3000], frame.iloc[3000:]
    domain = adult.domain.project([*FEATURES, TARGET]).to_dict()
    return train[FEATURES], train[TARGET], test[FEATURES], test[TARGET], domain


def mst(domain, epsilon=1.0, **kw):
    # max_iters well below the default keeps every fit at ~0.1 s on these 4 small columns.
    return MSTSynthesizer(epsilon=epsilon, delta=DELTA, domain=domain, max_iters=300, random_state=0, **kw)


def model(domain, estimator=None, **kw):
    return TrainOnSynthetic(mst(domain), estimator or LogisticRegression(max_iter=1000), **kw)


class CountingMST(MSTSynthesizer):
    """MSTSynthesizer that records every fit (clones keep the class)."""

    fits: list = []

    def fit(self, X, y=None, **fit_params):
        CountingMST.fits.append(self)
        return super().fit(X, y, **fit_params)


# -- fit / predict -----------------------------------------------------------------------------------------
def test_fit_predict_score_shapes_and_real_labels(data):
    X, y, X_test, y_test, domain = data
    est = model(domain).fit(X, y)

    pred = est.predict(X_test)
    assert pred.shape == (len(X_test),) and pred.dtype == y.dtype
    assert set(np.unique(pred)) <= {0, 1}
    assert est.classes_.tolist() == [0, 1] and est.classes_.dtype == y.dtype
    proba = est.predict_proba(X_test)
    assert proba.shape == (len(X_test), 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.allclose(est.predict_log_proba(X_test), np.log(proba))
    assert est.decision_function(X_test).shape == (len(X_test),)
    score = est.score(X_test, y_test)
    assert score == accuracy_score(y_test, pred)
    # Trained on DP synthetic data of 3 features it still beats the majority class (0.76 here).
    assert score > (y_test == 0).mean()

    assert est.n_features_in_ == 3
    assert est.feature_names_in_.tolist() == FEATURES
    synthetic = est.synthetic_data_
    assert list(synthetic.columns) == [*FEATURES, TARGET]
    assert len(synthetic) == round(est.synthesizer_.n_records_)
    assert est.privacy_ledger_ is est.synthesizer_.privacy_ledger_


def test_estimator_is_trained_on_the_synthetic_records_only(data):
    X, y, X_test, _, domain = data
    est = model(domain).fit(X, y)
    synthetic = est.synthetic_data_
    direct = LogisticRegression(max_iter=1000).fit(synthetic[FEATURES], synthetic[TARGET])
    np.testing.assert_array_equal(est.estimator_.coef_, direct.coef_)
    np.testing.assert_array_equal(est.predict(X_test), direct.predict(X_test))
    # ... and not on the real ones.
    real = LogisticRegression(max_iter=1000).fit(X, y)
    assert not np.allclose(est.estimator_.coef_, real.coef_)


def test_budget_spent_exactly_once_per_fit(data):
    X, y, _, _, domain = data
    CountingMST.fits.clear()
    given = CountingMST(epsilon=1.0, delta=DELTA, domain=domain, max_iters=300, random_state=0)
    est = TrainOnSynthetic(given, LogisticRegression(max_iter=1000))
    rho = cdp_rho(1.0, DELTA)
    for n_calls in (1, 2):
        est.fit(X, y)
        assert len(CountingMST.fits) == n_calls  # one synthesizer fit per fit ...
        assert est.privacy_ledger_.total_rho() == pytest.approx(rho, rel=1e-12)  # ... spending rho once
        est.privacy_ledger_.check_budget(rho=rho)
    assert CountingMST.fits[0] is not CountingMST.fits[1] and given not in CountingMST.fits  # clones
    assert not hasattr(given, "privacy_ledger_")  # the given synthesizer is left unfitted


def test_n_samples_and_random_state(data):
    X, y, X_test, _, domain = data
    a = model(domain, n_samples=500, random_state=1).fit(X, y)
    b = model(domain, n_samples=500, random_state=1).fit(X, y)
    c = model(domain, n_samples=500, random_state=2).fit(X, y)
    assert a.synthetic_data_.shape == (500, 4)
    pd.testing.assert_frame_equal(a.synthetic_data_, b.synthetic_data_)
    np.testing.assert_array_equal(a.predict_proba(X_test), b.predict_proba(X_test))
    # Same synthesizer fit (its own random_state), another synthetic draw.
    assert a.privacy_ledger_.entries == c.privacy_ledger_.entries
    assert not a.synthetic_data_.equals(c.synthetic_data_)
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError, match="n_samples"):
            model(domain, n_samples=bad).fit(X, y)


def test_numpy_input(data):
    X, y, X_test, _, domain = data
    array_domain = {f"x{j}": domain[c] for j, c in enumerate(FEATURES)} | {"target": domain[TARGET]}
    est = model(array_domain).fit(X.to_numpy(), y.to_numpy())
    assert est.n_features_in_ == 3 and not hasattr(est, "feature_names_in_")
    assert list(est.synthetic_data_.columns) == ["x0", "x1", "x2", "target"]
    pred = est.predict(X_test.to_numpy())
    assert pred.shape == (len(X_test),) and set(np.unique(pred)) <= {0, 1}


# -- the target's domain and dtype ---------------------------------------------------------------------------
def test_categorical_target_needs_no_domain_entry(data):
    X, y, X_test, y_test, domain = data
    labels = mark_public(pd.CategoricalDtype(["<=50K", ">50K"]))  # a public label list, declared so
    y_cat = pd.Series(pd.Categorical.from_codes(y.to_numpy(), dtype=labels), name="income")
    features_only = {c: domain[c] for c in FEATURES}
    est = model(features_only).fit(X, y_cat)  # no PrivacyLeakWarning: the categories are the domain
    assert est.classes_.tolist() == ["<=50K", ">50K"]
    pred = est.predict(X_test)
    assert set(pred) <= {"<=50K", ">50K"}
    assert est.synthetic_data_["income"].dtype == labels
    y_test_cat = pd.Series(pd.Categorical.from_codes(y_test.to_numpy(), dtype=labels))
    assert est.score(X_test, y_test_cat) == accuracy_score(y_test_cat, pred)
    assert "income" not in est.synthesizer.domain  # the given synthesizer's domain is not touched


def test_string_target_with_label_list_in_domain(data):
    X, y, X_test, _, domain = data
    y_str = np.where(y.to_numpy() == 1, ">50K", "<=50K")  # numpy unicode, unnamed: "target"
    est = model({c: domain[c] for c in FEATURES} | {"target": ["<=50K", ">50K"]}).fit(X, y_str)
    pred = est.predict(X_test)
    assert pred.dtype == y_str.dtype and set(pred) <= {"<=50K", ">50K"}
    assert est.classes_.tolist() == ["<=50K", ">50K"]


@pytest.mark.parametrize("target", ["named", "unnamed"])
def test_unknown_target_domain_is_a_clear_error(data, target):
    X, y, _, _, domain = data
    CountingMST.fits.clear()
    features_only = {c: domain[c] for c in FEATURES}
    synth = CountingMST(epsilon=1.0, domain=features_only, max_iters=300, random_state=0)
    y_given, name = (y, TARGET) if target == "named" else (y.to_numpy(), "target")
    with pytest.raises(ValueError, match=f"domain of the target '{name}' is unknown.*domain="):
        TrainOnSynthetic(synth, LogisticRegression()).fit(X, y_given)
    assert CountingMST.fits == []  # raised before any budget was spent
    with pytest.raises(ValueError, match="requires y to be passed"):
        TrainOnSynthetic(synth, LogisticRegression()).fit(X, None)


# -- regressor ---------------------------------------------------------------------------------------------
def test_regressor_on_a_numeric_code_target(adult):
    frame = adult.frame.sample(3000, random_state=1)
    features = ["marital-status", "sex", TARGET]
    X, y = frame[features], frame["education-num"]
    domain = adult.domain.project([*features, "education-num"]).to_dict()
    est = TrainOnSynthetic(mst(domain), Ridge())
    assert is_regressor(est) and not is_classifier(est)
    assert get_tags(est).estimator_type == "regressor"
    assert not hasattr(est, "predict_proba") and not hasattr(est, "decision_function")  # Ridge has neither

    est.fit(X, y)
    assert not hasattr(est, "classes_")
    assert est.synthetic_data_["education-num"].dtype == y.dtype
    pred = est.predict(X)
    assert pred.shape == (len(X),) and pred.dtype.kind == "f"
    assert 0 < est.score(X, y) < 1  # R²: some signal, not perfect

    scores = cross_val_score(est, X, y, cv=3)
    assert scores.shape == (3,) and np.isfinite(scores).all()


# -- model selection ---------------------------------------------------------------------------------------
def test_cross_val_score_and_its_total_privacy_cost(data):
    X, y, _, _, domain = data
    est = model(domain)
    assert is_classifier(est) and get_tags(est).estimator_type == "classifier"
    scores = cross_val_score(est, X, y, cv=3)
    assert scores.shape == (3,) and ((scores > 0.5) & (scores <= 1)).all()
    # Every fold refits the synthesizer: 3 folds cost 3 budgets.
    cv = cross_validate(est, X, y, cv=3, return_estimator=True)
    ledgers = [m.privacy_ledger_ for m in cv["estimator"]]
    assert sum(ledger.total_rho() for ledger in ledgers) == pytest.approx(3 * cdp_rho(1.0, DELTA), rel=1e-12)
    # A classifier is cross-validated with stratified folds, a regressor with plain ones.
    assert isinstance(check_cv(3, y, classifier=is_classifier(est)), StratifiedKFold)
    assert isinstance(check_cv(3, y, classifier=is_classifier(TrainOnSynthetic(mst(domain), Ridge()))), KFold)


@pytest.mark.slow
def test_grid_search_over_synthesizer_and_estimator_params(data):
    X, y, X_test, _, domain = data
    CountingMST.fits.clear()
    synth = CountingMST(epsilon=1.0, delta=DELTA, domain=domain, max_iters=300, random_state=0)
    grid = {"synthesizer__epsilon": [0.5, 2.0], "estimator__C": [0.1, 1.0]}
    search = GridSearchCV(TrainOnSynthetic(synth, LogisticRegression(max_iter=1000)), grid, cv=3).fit(X, y)
    results = search.cv_results_
    assert len(results["params"]) == 4 and np.isfinite(results["mean_test_score"]).all()
    assert len(set(results["mean_test_score"])) > 1  # the parameters reach the fits
    best = search.best_estimator_
    assert best.synthesizer_.epsilon == search.best_params_["synthesizer__epsilon"]
    assert best.estimator_.C == search.best_params_["estimator__C"]
    assert search.predict(X_test).shape == (len(X_test),)
    # Privacy cost: every candidate refits the synthesizer on every fold, plus the refit on all of X:
    # 4 candidates x 3 folds + 1 = 13 fits, and their costs add up (zCDP composition).
    assert len(CountingMST.fits) == len(results["params"]) * search.n_splits_ + 1 == 13
    per_candidate = [cdp_rho(p["synthesizer__epsilon"], DELTA) for p in results["params"]]
    expected = search.n_splits_ * sum(per_candidate) + cdp_rho(search.best_params_["synthesizer__epsilon"], DELTA)
    spent = sum(f.privacy_ledger_.total_rho() for f in CountingMST.fits)
    assert spent == pytest.approx(expected, rel=1e-12)


# -- estimator API -----------------------------------------------------------------------------------------
def test_clone_get_params_set_params(data):
    X, y, _, _, domain = data
    est = model(domain, n_samples=100, random_state=3)
    params = est.get_params()
    assert params["synthesizer__epsilon"] == 1.0 and params["estimator__C"] == 1.0
    assert params["n_samples"] == 100 and params["random_state"] == 3
    assert params["synthesizer__domain"] is domain  # stored unmodified

    assert est.set_params(synthesizer__epsilon=3.0, estimator__C=0.5, n_samples=200) is est
    assert est.synthesizer.epsilon == 3.0 and est.estimator.C == 0.5 and est.n_samples == 200

    copy = clone(est)
    assert copy.synthesizer is not est.synthesizer and copy.estimator is not est.estimator
    assert copy.get_params()["synthesizer__epsilon"] == 3.0 and copy.get_params()["estimator__C"] == 0.5

    est.fit(X, y)
    refreshed = clone(est)
    assert not hasattr(refreshed, "estimator_") and not hasattr(refreshed, "synthesizer_")
    assert est.synthesizer.epsilon == 3.0 and not hasattr(est.synthesizer, "model_")  # params untouched
    with pytest.raises(NotFittedError):
        refreshed.predict(X)


def test_delegated_methods_exist_only_when_the_estimator_has_them(data):
    X, y, X_test, _, domain = data
    est = model(domain, LinearSVC())
    assert hasattr(est, "decision_function") and hasattr(est, "predict")
    assert not hasattr(est, "predict_proba") and not hasattr(est, "predict_log_proba")
    est.fit(X, y)
    assert est.decision_function(X_test).shape == (len(X_test),)
    assert not hasattr(est, "predict_proba")
    with pytest.raises(AttributeError):
        est.predict_proba(X_test)
