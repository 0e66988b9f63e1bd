"""Rebalancing a class with conditional sampling: ``TrainOnSynthetic(class_balance=...)`` and conditions on raw
values through a ``SynthesisPipeline`` (doc/conditional_sampling.md)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from skdpsynth import MSTSynthesizer, ViewSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.params import InvalidParameterError
from skdpsynth.pipeline import TrainOnSynthetic, make_synthesis_pipeline
from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer, TableDiscretizer

FEATURES = ["education-num", "marital-status", "sex"]


@pytest.fixture(scope="module")
def adult():
    data = load_adult(discretized=True)
    frame = data.frame.iloc[:3000]
    return frame, data.domain, data.target_name


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # fixed seeds make the noise reproducible: the synthesizers say so
        yield


def _model(adult, target=None, **params):
    frame, domain, income = adult
    target = target or income
    synth = MSTSynthesizer(1.0, domain=domain.project([*FEATURES, target]).to_dict(), random_state=0)
    model = TrainOnSynthetic(synth, LogisticRegression(max_iter=300), **params)
    return model.fit(frame[FEATURES], frame[target])


def test_balanced_draws_equal_class_counts_and_spreads_the_remainder_over_the_first_classes(adult):
    model = _model(adult, n_samples=1000, class_balance="balanced", random_state=0)
    assert model.synthetic_data_["income>50K"].value_counts().to_dict() == {0: 500, 1: 500}
    assert model.classes_.tolist() == [0, 1]
    # Five races, 1003 records: 200 each, and the 3 left over go to the first three classes of the domain.
    race = _model(adult, target="race", n_samples=1003, class_balance="balanced", random_state=0)
    counts = race.synthetic_data_["race"].value_counts().sort_index()
    assert counts.tolist() == [201, 201, 201, 200, 200] and len(race.synthetic_data_) == 1003
    # The records come shuffled, not class by class.
    assert race.synthetic_data_["race"].iloc[:201].nunique() > 1


def test_dict_shares_are_honoured_and_unlisted_classes_share_the_rest(adult):
    model = _model(adult, n_samples=1000, class_balance={1: 0.3}, random_state=0)
    assert model.synthetic_data_["income>50K"].value_counts().to_dict() == {0: 700, 1: 300}
    every = _model(adult, n_samples=999, class_balance={0: 0.25, 1: 0.75}, random_state=0)
    assert every.synthetic_data_["income>50K"].value_counts().to_dict() == {1: 749, 0: 250}
    race = _model(adult, target="race", n_samples=1000, class_balance={1: 0.4, 3: 0.1}, random_state=0)
    counts = race.synthetic_data_["race"].value_counts()
    assert counts[1] == 400 and counts[3] == 100 and counts.drop([1, 3]).sum() == 500
    assert counts[4] > counts[2]   # the rest follows the model: race 4 (white) is the largest class


def test_default_draw_is_unchanged(adult):
    frame, domain, target = adult
    model = _model(adult, n_samples=500, random_state=3)
    synth = MSTSynthesizer(1.0, domain=domain.project([*FEATURES, target]).to_dict(), random_state=0)
    expected = synth.fit(frame[FEATURES], frame[target]).sample(500, random_state=3)
    pd.testing.assert_frame_equal(model.synthetic_data_, expected)


def test_class_balance_respects_random_state(adult):
    a = _model(adult, n_samples=400, class_balance="balanced", random_state=1).synthetic_data_
    b = _model(adult, n_samples=400, class_balance="balanced", random_state=1).synthetic_data_
    c = _model(adult, n_samples=400, class_balance="balanced", random_state=2).synthetic_data_
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    # None continues the synthesizer's own stream, seeded by its random_state: reproducible too.
    d = _model(adult, n_samples=400, class_balance="balanced").synthetic_data_
    pd.testing.assert_frame_equal(d, _model(adult, n_samples=400, class_balance="balanced").synthetic_data_)


def test_bad_class_balance_is_refused_before_the_fit(adult):
    frame, domain, target = adult
    for bad, match in [({2: 0.5}, "not a class of the target's public domain"),
                       ({1: 1.5}, r"class_balance\[1\] must be a share"),
                       ({0: 0.5, 1: 0.4}, "must sum to 1"),
                       ({0: 0.7, 1: 0.7}, "more than 1"),
                       ({}, "empty dict")]:
        model = TrainOnSynthetic(MSTSynthesizer(1.0, domain=domain.project([*FEATURES, target]).to_dict()),
                                 LogisticRegression(), class_balance=bad)
        with pytest.raises(ValueError, match=match):
            model.fit(frame[FEATURES], frame[target])
        assert not hasattr(model, "synthesizer_")
    with pytest.raises(InvalidParameterError, match="class_balance"):
        TrainOnSynthetic(MSTSynthesizer(), LogisticRegression(), class_balance="auto").fit(
            frame[FEATURES], frame[target])


def test_a_synthesizer_that_cannot_condition_is_named_before_the_fit(adult):
    frame, domain, target = adult
    view = ViewSynthesizer(1.0, domain=domain.project([*FEATURES, target]).to_dict(), random_state=0)
    model = TrainOnSynthetic(view, LogisticRegression(), class_balance="balanced")
    with pytest.raises(ValueError, match="class_balance='balanced'.*ViewSynthesizer cannot"):
        model.fit(frame[FEATURES], frame[target])
    assert not hasattr(model, "synthesizer_")   # refused before the fit spent anything


class _NoPositives(MSTSynthesizer):
    """MST whose fitted model gives the target's class 1 probability 0."""

    def _fit_codes(self, codes, domain, ledger, rng, **budget):
        super()._fit_codes(codes, domain, ledger, rng, **budget)
        target = domain.attrs[-1]
        for clique, table in self.model_.potentials.items():
            if target in clique:
                np.moveaxis(table, clique.index(target), 0)[1] = -np.inf


def test_a_class_of_probability_zero_is_named(adult):
    frame, domain, target = adult
    synth = _NoPositives(1.0, domain=domain.project([*FEATURES, target]).to_dict(), random_state=0)
    with pytest.raises(ValueError, match=r"class 1 of the target 'income>50K'.*probability 0"):
        TrainOnSynthetic(synth, LogisticRegression(), n_samples=100, class_balance="balanced").fit(
            frame[FEATURES], frame[target])
    # A share of 0 draws nothing of it, so nothing is refused.
    model = TrainOnSynthetic(synth, LogisticRegression(), n_samples=100, class_balance={0: 1.0})
    with pytest.raises(ValueError, match="needs samples of at least 2 classes"):   # the estimator's own error
        model.fit(frame[FEATURES], frame[target])


def test_clone_and_get_params(adult):
    model = TrainOnSynthetic(MSTSynthesizer(), LogisticRegression(), class_balance={1: 0.5})
    assert model.get_params()["class_balance"] == {1: 0.5}
    copy = clone(model)
    assert copy.class_balance == {1: 0.5} and copy.set_params(class_balance="balanced").class_balance == "balanced"


def _pipeline(X, **synth):
    return make_synthesis_pipeline(
        DPKBinsDiscretizer(n_bins=6, columns=["age"], bounds={"age": (18, 90)}),
        DPCategoricalEncoder({"job": ["a", "b", "c"], "paid": ["no", "yes"]}, columns=["job", "paid"]),
        MSTSynthesizer(1.0, random_state=0, **synth),
    ).fit(X[["age", "job"]], X["paid"])


@pytest.fixture(scope="module")
def raw():
    rng = np.random.default_rng(0)
    n = 2000
    job = rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])
    paid = np.where(rng.random(n) < np.where(job == "c", 0.6, 0.1), "yes", "no")
    return pd.DataFrame({"age": rng.integers(18, 90, n), "job": job, "paid": paid})


def test_pipeline_conditions_on_raw_categories_and_binned_numbers(raw):
    pipe = _pipeline(raw)
    out = pipe.sample(400, random_state=0, conditions={"job": ["a", "c"], "paid": "yes"})
    assert set(out["job"]) == {"a", "c"} and set(out["paid"]) == {"yes"} and len(out) == 400
    # A number selects the bin holding it: 45 is in [42, 54); its records are drawn within that bin.
    young = pipe.sample(300, random_state=0, conditions={"age": 45})
    assert young["age"].between(42, 53).all() and young["age"].nunique() > 1
    both = pipe.sample(300, random_state=0, conditions={"age": [18, 90]})   # the end bins, bounds included
    assert (both["age"].between(18, 29) | both["age"].between(78, 90)).all()
    coded = pipe.sample(50, random_state=0, conditions={"job": "b"}, inverse_transform=False)
    assert set(coded["job"]) == {"b"} and isinstance(coded["age"].dtype, pd.CategoricalDtype)
    # Without conditions the draw is the one it was.
    pd.testing.assert_frame_equal(pipe.sample(20, random_state=1), pipe.sample(20, random_state=1, conditions=None))


def test_pipeline_conditions_are_checked(raw):
    pipe = _pipeline(raw)
    with pytest.raises(ValueError, match="not a column of the fitted data"):
        pipe.sample(5, conditions={"salary": 1})
    with pytest.raises(ValueError, match="'job' = 'z'.*'dpcategoricalencoder'"):
        pipe.sample(5, conditions={"job": "z"})
    with pytest.raises(ValueError, match=r"'age' = 95: outside the column's bins, \[18, 90\]"):
        pipe.sample(5, conditions={"age": 95})
    with pytest.raises(ValueError, match="lists no value"):
        pipe.sample(5, conditions={"job": []})
    with pytest.raises(TypeError, match="conditions must be a dict"):
        pipe.sample(5, conditions=[("job", "a")])


def test_pipeline_refuses_a_value_its_encoder_maps_to_other(raw):
    schema = {"age": {"type": "numeric", "bounds": [18, 90]},
              "job": {"type": "categorical", "categories": ["a", "b"], "handle_unknown": "other"}}
    pipe = make_synthesis_pipeline(TableDiscretizer(schema, n_bins=4), MSTSynthesizer(1.0, random_state=0))
    pipe.fit(raw[["age", "job"]])
    with pytest.raises(ValueError, match="'job' = 'c'.*maps it to '__other__'"):
        pipe.sample(5, conditions={"job": "c"})
    assert set(pipe.sample(100, random_state=0, conditions={"job": "__other__"})["job"]) == {"__other__"}
    assert pipe.sample(100, random_state=0, conditions={"age": 20})["age"].between(18, 35).all()


def test_train_on_synthetic_balances_through_a_pipeline(raw):
    pipe = make_synthesis_pipeline(
        DPCategoricalEncoder({"job": ["a", "b", "c"], "paid": ["no", "yes"]}),
        MSTSynthesizer(1.0, random_state=0))
    classifier = make_pipeline(OneHotEncoder(), LogisticRegression())
    model = TrainOnSynthetic(pipe, classifier, n_samples=600, class_balance="balanced", random_state=0)
    model.fit(raw[["job"]], raw["paid"])
    assert model.synthetic_data_["paid"].value_counts().to_dict() == {"no": 300, "yes": 300}
    assert model.classes_.tolist() == ["no", "yes"]
    with pytest.raises(ValueError, match="'maybe', which is not a class"):
        TrainOnSynthetic(pipe, LogisticRegression(), class_balance={"maybe": 0.5}).fit(raw[["job"]], raw["paid"])
