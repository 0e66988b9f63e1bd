"""Tests of skdpsynth.metrics: marginal fidelity, TSTR utility and the sklearn scorers."""
from __future__ import annotations

import importlib.util
import itertools
import math
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from skdpsynth import Domain
from skdpsynth.metrics import (
    MisclassificationErrors,
    kl_divergence,
    marginal_scorer,
    marginal_tvd,
    misclassification_variance,
    tstr_score,
    tstr_scorer,
)

SIZES = {"a": 4, "b": 3, "c": 2, "y": 2}
SCORE_PY = Path(__file__).resolve().parents[2] / "shared" / "tools" / "score.py"


def make_data(n=600, seed=0):
    """Integer-coded table whose label ``y`` depends on ``a`` and ``b`` (10% label noise)."""
    rng = np.random.default_rng(seed)
    a, b, c = rng.integers(0, 4, n), rng.integers(0, 3, n), rng.integers(0, 2, n)
    y = (a + b >= 3).astype(int)
    flip = rng.random(n) < 0.1
    y[flip] = 1 - y[flip]
    return pd.DataFrame({"a": a, "b": b, "c": c, "y": y})


def skewed_data(n, seed):
    """Random codes over SIZES with a seed-dependent non-uniform distribution per column."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({col: rng.choice(k, size=n, p=rng.dirichlet(np.ones(k))) for col, k in SIZES.items()})


def brute_tvd(real, synth, clique):
    p = real.value_counts(list(clique), normalize=True)
    q = synth.value_counts(list(clique), normalize=True)
    return 0.5 * p.sub(q, fill_value=0).abs().sum()


def brute_mean_tvd(real, synth, k):
    return np.mean([brute_tvd(real, synth, c) for c in itertools.combinations(real.columns, k)])


class FakeSynth(BaseEstimator):
    """Resamples training rows (``joint``) or each column independently, then replaces a
    ``noise`` fraction of cells by uniform codes."""

    def __init__(self, noise=0.0, joint=True):
        self.noise = noise
        self.joint = joint

    def fit(self, X, y=None):
        self.data_ = X.reset_index(drop=True)
        return self

    def sample(self, n_samples=None, random_state=None):
        rng = np.random.default_rng(random_state)
        n = len(self.data_) if n_samples is None else n_samples
        rows = rng.integers(len(self.data_), size=n)
        out = {}
        for col in self.data_.columns:
            values = self.data_[col].to_numpy()[rows if self.joint else rng.integers(len(self.data_), size=n)]
            out[col] = np.where(rng.random(n) < self.noise, rng.integers(SIZES[col], size=n), values)
        return pd.DataFrame(out)


# -- marginal_tvd ------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tvd_matches_brute_force(seed):
    real, synth = skewed_data(200, seed), skewed_data(150, seed + 10)
    got = marginal_tvd(real, synth, ways=(1, 2, 3))
    assert list(got) == [1, 2, 3]
    for k in (1, 2, 3):
        assert got[k] == pytest.approx(brute_mean_tvd(real, synth, k), abs=1e-12)
        assert 0 < got[k] < 1
    assert marginal_tvd(real, synth, ways=(1, 2, 3), domain=SIZES) == pytest.approx(got, abs=1e-12)


def test_tvd_zero_for_identical_and_shuffled_rows():
    real = make_data()
    shuffled = real.sample(frac=1, random_state=0).reset_index(drop=True)
    assert marginal_tvd(real, real, ways=(1, 2, 3, 4)) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}
    assert marginal_tvd(real, shuffled, ways=4) == pytest.approx(0.0, abs=1e-15)


def test_tvd_one_for_disjoint_supports():
    rng = np.random.default_rng(0)
    real = rng.integers(0, 2, size=(50, 3))
    synth = rng.integers(2, 4, size=(70, 3))
    dom = Domain(["x", "y", "z"], [4, 4, 4])
    assert marginal_tvd(real, synth, ways=(1, 2, 3), domain=dom) == pytest.approx({1: 1.0, 2: 1.0, 3: 1.0})


def test_tvd_symmetric():
    real, synth = skewed_data(120, 3), skewed_data(80, 4)
    assert marginal_tvd(real, synth) == pytest.approx(marginal_tvd(synth, real), abs=1e-15)


@pytest.mark.skipif(not SCORE_PY.exists(), reason="shared/tools/score.py is not beside the repository")
def test_tvd_matches_shared_score_py():
    spec = importlib.util.spec_from_file_location("shared_score", SCORE_PY)
    score = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(score)
    real, synth = skewed_data(300, 5), skewed_data(200, 6)
    got = marginal_tvd(real, synth, ways=(1, 2, 3), domain=SIZES)
    for k in (1, 2, 3):
        assert got[k] == pytest.approx(score.tvd(real, synth, SIZES, k), abs=1e-12)


def test_tvd_return_forms_and_cliques():
    real, synth = skewed_data(100, 7), skewed_data(100, 8)
    per_way = marginal_tvd(real, synth, ways=[2, 1])
    assert isinstance(per_way, dict) and sorted(per_way) == [1, 2]
    single = marginal_tvd(real, synth, ways=2)
    assert isinstance(single, float) and single == per_way[2]
    assert marginal_tvd(real, synth, ways=np.int64(2)) == single
    cliques = [("b", "a"), ("c",), ("a", "y", "c")]
    expected = np.mean([brute_tvd(real, synth, c) for c in cliques])
    got = marginal_tvd(real, synth, ways=1, cliques=cliques)  # cliques override ways
    assert isinstance(got, float) and got == pytest.approx(expected, abs=1e-12)
    assert marginal_tvd(real, synth, cliques=[("a", "b")]) == marginal_tvd(real, synth, cliques=[("b", "a")])


def test_tvd_union_encoding_of_unseen_values():
    # Without a domain, values only the synthetic data has still count (as real probability 0).
    real = pd.DataFrame({"s": ["x", "x", "y", "y"], "t": [1.0, 2.0, 1.0, 2.0]})
    synth = pd.DataFrame({"s": ["x", "z", "y", "z"], "t": [1.0, 3.0, 1.0, 2.0]})
    got = marginal_tvd(real, synth, ways=(1, 2))
    assert got[1] == pytest.approx(np.mean([0.5, 0.25]))
    assert got[2] == pytest.approx(brute_tvd(real, synth, ("s", "t")))


def test_tvd_categorical_input():
    real_codes, synth_codes = skewed_data(150, 9), skewed_data(150, 10)
    names = {col: [f"{col}{i}" for i in range(k)] for col, k in SIZES.items()}

    def as_category(df, reverse=False):
        return pd.DataFrame(
            {
                col: pd.Categorical.from_codes(df[col], categories=names[col]).reorder_categories(
                    names[col][::-1] if reverse else names[col]
                )
                for col in df
            }
        )

    expected = marginal_tvd(real_codes, synth_codes, ways=(1, 2, 3), domain=SIZES)
    real = as_category(real_codes)
    # Same categories in another order, and plain strings, are matched by value.
    assert marginal_tvd(real, as_category(synth_codes, reverse=True)) == pytest.approx(expected, abs=1e-12)
    assert marginal_tvd(real, as_category(synth_codes).astype(str)) == pytest.approx(expected, abs=1e-12)
    # Columns given in another order.
    assert marginal_tvd(real, as_category(synth_codes)[["y", "c", "b", "a"]]) == pytest.approx(expected, abs=1e-12)

    other = as_category(synth_codes)
    other["a"] = other["a"].cat.rename_categories({"a0": "zz"})
    with pytest.raises(ValueError, match="different categories"):
        marginal_tvd(real, other)
    with pytest.raises(ValueError, match="outside its categories"):
        marginal_tvd(real, other.astype(str))
    with pytest.raises(ValueError, match="different categories"):
        marginal_tvd(real, other, domain=SIZES)


def test_tvd_domain_forms():
    real, synth = skewed_data(100, 11), skewed_data(60, 12)
    expected = marginal_tvd(real, synth, ways=2, domain=SIZES)
    dom = Domain.from_dict(SIZES)
    assert marginal_tvd(real, synth, ways=2, domain=dom) == expected
    assert marginal_tvd(real.to_numpy(), synth.to_numpy(), ways=2, domain=dom) == pytest.approx(expected, abs=1e-15)
    # Cells empty in both tables do not change the TVD.
    big = {col: k + 3 for col, k in SIZES.items()}
    assert marginal_tvd(real, synth, ways=2, domain=big) == pytest.approx(expected, abs=1e-15)
    # A domain restricted to some columns compares those only.
    assert marginal_tvd(real, synth, ways=2, domain={"a": 4, "c": 2}) == pytest.approx(
        brute_tvd(real, synth, ("a", "c")), abs=1e-12
    )
    with pytest.raises(ValueError, match="domain size"):
        marginal_tvd(real, synth, ways=1, domain={**SIZES, "a": 2})


def test_tvd_errors():
    real, synth = skewed_data(50, 13), skewed_data(50, 14)
    with pytest.raises(ValueError, match="same"):
        marginal_tvd(real, synth.drop(columns="c"))
    with pytest.raises(ValueError, match="same"):
        marginal_tvd(real, synth.rename(columns={"c": "d"}))
    with pytest.raises(ValueError, match="no rows"):
        marginal_tvd(real, synth.iloc[:0])
    with pytest.raises(ValueError, match="no rows"):
        marginal_tvd(real, synth.iloc[:0], domain=SIZES)
    with pytest.raises(ValueError, match="lacks"):
        marginal_tvd(real, synth.drop(columns="c"), domain=SIZES)
    for ways in (0, 5, (1, 5), ()):
        with pytest.raises(ValueError, match="ways"):
            marginal_tvd(real, synth, ways=ways)


# -- kl_divergence -----------------------------------------------------------


def test_kl_zero_for_identical():
    real = make_data()
    assert kl_divergence(real, real, ways=(1, 2, 3), smoothing=0) == {1: 0.0, 2: 0.0, 3: 0.0}
    # With smoothing, identical tables cost only ~smoothing per empty cell.
    smoothed = kl_divergence(real, real, ways=3, domain={**SIZES, "a": 10})
    assert 0 <= smoothed < 1e-8


def test_kl_matches_formula_when_supports_covered():
    rng = np.random.default_rng(16)
    real = skewed_data(300, 15)
    synth = pd.DataFrame({col: rng.integers(k, size=2000) for col, k in SIZES.items()})  # covers every cell
    for k in (1, 2, 3):
        expected = []
        for clique in itertools.combinations(SIZES, k):
            p = real.value_counts(list(clique), normalize=True)
            q = synth.value_counts(list(clique), normalize=True).reindex(p.index)
            assert q.notna().all()
            expected.append(float(np.sum(p * np.log(p / q))))  # q restricted to p's support, not renormalised
        assert kl_divergence(real, synth, ways=k, smoothing=0) == pytest.approx(np.mean(expected), abs=1e-12)
        assert kl_divergence(real, synth, ways=k) == pytest.approx(np.mean(expected), abs=1e-6)
        assert kl_divergence(real, synth, ways=k) > 0


def test_kl_finite_with_missing_synthetic_cells():
    real = pd.DataFrame({"x": [0, 0, 1, 1]})
    synth = pd.DataFrame({"x": [0, 0, 0, 0]})
    s = 1e-3
    q = np.array([1 + s, s]) / (1 + 2 * s)
    expected = 0.5 * math.log(0.5 / q[0]) + 0.5 * math.log(0.5 / q[1])
    assert kl_divergence(real, synth, ways=1, smoothing=s) == pytest.approx(expected, rel=1e-12)
    default = kl_divergence(real, synth, ways=1)
    assert math.isfinite(default) and default > kl_divergence(real, synth, ways=1, smoothing=s)
    assert kl_divergence(real, synth, ways=1, smoothing=0) == math.inf
    with pytest.raises(ValueError, match="smoothing"):
        kl_divergence(real, synth, ways=1, smoothing=-1)


def test_kl_return_forms():
    real, synth = skewed_data(100, 17), skewed_data(100, 18)
    per_way = kl_divergence(real, synth, ways=(1, 2))
    assert sorted(per_way) == [1, 2] and kl_divergence(real, synth, ways=1) == per_way[1]
    assert kl_divergence(real, synth, cliques=[("a",), ("b",), ("c",), ("y",)]) == pytest.approx(per_way[1])


# -- tstr_score / misclassification_variance ----------------------------------


def test_tstr_on_real_equals_default_estimator_on_real():
    train, test = make_data(600, 0), make_data(400, 1)
    model = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=1000))
    model.fit(train.drop(columns="y"), train["y"])
    expected = accuracy_score(test["y"], model.predict(test.drop(columns="y")))
    assert expected > 0.8  # the task is learnable
    assert tstr_score(train, train, test, target="y") == expected


def test_tstr_estimator_and_scoring():
    train, test = make_data(600, 0), make_data(400, 1)
    tree = DecisionTreeClassifier(random_state=0)
    expected = accuracy_score(
        test["y"], tree.fit(train.drop(columns="y"), train["y"]).predict(test.drop(columns="y"))
    )
    assert tstr_score(train, train, test, "y", estimator=DecisionTreeClassifier(random_state=0)) == expected
    auc = tstr_score(train, train, test, "y", scoring="roc_auc")
    assert 0.8 < auc <= 1.0


def test_tstr_categorical_columns_use_union_codes():
    train, synth, test = make_data(600, 0), make_data(500, 2), make_data(400, 1)
    expected = tstr_score(train, synth, test, "y")

    def to_cat(df, order):
        return df.assign(**{col: pd.Categorical(df[col].map(lambda v: f"v{v}"), categories=order(col)) for col in df})

    forward = lambda col: [f"v{i}" for i in range(SIZES[col])]  # noqa: E731
    backward = lambda col: forward(col)[::-1]  # noqa: E731
    # Categories listed in different orders in each table, and plain strings, give the same model.
    got = tstr_score(to_cat(train, forward), to_cat(synth, backward), to_cat(test, forward).astype(str), "y")
    assert got == pytest.approx(expected, abs=1e-12)


def test_tstr_one_class_synthetic_is_constant_prediction():
    train, test = make_data(600, 0), make_data(400, 1)
    synth = train.assign(y=1)
    assert tstr_score(train, synth, test, "y") == (test["y"] == 1).mean()
    assert tstr_score(train, synth, test, "y", scoring="roc_auc") == 0.5
    assert tstr_score(train, synth, test, "y", scoring="balanced_accuracy") == 0.5


def test_tstr_errors():
    train, test = make_data(100, 0), make_data(100, 1)
    with pytest.raises(ValueError, match="target"):
        tstr_score(train, train, test, target="nope")
    with pytest.raises(ValueError, match="lacks"):
        tstr_score(train, train.drop(columns="b"), test, "y")
    with pytest.raises(ValueError, match="no rows"):
        tstr_score(train, train.iloc[:0], test, "y")


def test_misclassification_variance_known_value():
    # y = x on training data; the test set has 4/20 rows against that rule.
    train = pd.DataFrame({"x": [0, 1] * 10, "y": [0, 1] * 10})
    test = pd.DataFrame({"x": [0, 1] * 10, "y": [0, 1] * 8 + [1, 0] * 2})
    flipped = train.assign(y=1 - train["y"])  # synthetic data teaching the opposite rule
    errors = misclassification_variance(train, flipped, test, "y", return_errors=True)
    assert errors == MisclassificationErrors(real=pytest.approx(0.2), synthetic=pytest.approx(0.8))
    assert errors.variance == pytest.approx(0.6)
    assert misclassification_variance(train, flipped, test, "y") == pytest.approx(0.6)
    assert misclassification_variance(train, train, test, "y", estimator=DecisionTreeClassifier()) == 0.0
    # One-class synthetic data: always predicting 0 is wrong on half of the test rows.
    assert misclassification_variance(train, train.assign(y=0), test, "y") == pytest.approx(0.3)


# -- scorers -----------------------------------------------------------------


def test_marginal_scorer_value():
    train, test = make_data(600, 0), make_data(300, 1)
    synth = FakeSynth(noise=0.2).fit(train)
    tvd = marginal_tvd(test, synth.sample(len(test), random_state=0), ways=(1, 2))
    assert marginal_scorer(ways=(1, 2))(synth, test) == pytest.approx(-np.mean(list(tvd.values())), abs=1e-15)
    small = marginal_tvd(test, synth.sample(50, random_state=3), ways=2, domain=SIZES)
    assert marginal_scorer(ways=2, domain=SIZES, n_samples=50, random_state=3)(synth, test) == -small
    assert marginal_scorer(ways=2)(FakeSynth().fit(test), test, test["y"]) <= 0  # X already holds y: ignored
    # A search fitted with (X, y): y is appended to X, as fit(X, y) does.
    features, target = test.drop(columns="y"), test["y"]
    assert marginal_scorer(ways=2)(synth, features, target) == marginal_scorer(ways=2)(synth, test)
    scorer = pickle.loads(pickle.dumps(marginal_scorer(ways=2)))
    assert scorer(synth, test) == marginal_scorer(ways=2)(synth, test)
    for ways in (0, (), (1, 0), 1.5):
        with pytest.raises(ValueError, match="ways"):
            marginal_scorer(ways=ways)


def test_marginal_scorer_in_grid_search_and_cross_val_score():
    data = make_data(900, 0)
    search = GridSearchCV(FakeSynth(), {"noise": [1.0, 0.5, 0.0]}, scoring=marginal_scorer(ways=2), cv=3).fit(data)
    assert search.best_params_ == {"noise": 0.0}
    means = search.cv_results_["mean_test_score"]
    assert means[0] < means[1] < means[2] <= 0

    cv = KFold(3)
    scores = cross_val_score(FakeSynth(noise=0.1), data, scoring=marginal_scorer(ways=(1, 2), domain=SIZES), cv=cv)
    expected = []
    for tr, te in cv.split(data):
        fitted = FakeSynth(noise=0.1).fit(data.iloc[tr])
        tvd = marginal_tvd(data.iloc[te], fitted.sample(len(te), random_state=0), ways=(1, 2), domain=SIZES)
        expected.append(-np.mean(list(tvd.values())))
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-15)


def test_tstr_scorer_in_grid_search_and_cross_val_score():
    data = make_data(900, 0)
    # Independent columns lose the a,b -> y dependence; resampled rows keep it.
    search = GridSearchCV(FakeSynth(), {"joint": [False, True]}, scoring=tstr_scorer("y"), cv=3).fit(data)
    assert search.best_params_ == {"joint": True}
    means = search.cv_results_["mean_test_score"]
    assert means[1] > 0.8 and means[1] - means[0] > 0.2

    cv = KFold(3)
    scores = cross_val_score(FakeSynth(), data, scoring=tstr_scorer("y", n_samples=200, random_state=1), cv=cv)
    expected = [
        tstr_score(data.iloc[tr], FakeSynth().fit(data.iloc[tr]).sample(200, random_state=1), data.iloc[te], "y")
        for tr, te in cv.split(data)
    ]
    np.testing.assert_array_equal(scores, expected)
