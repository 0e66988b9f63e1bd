"""Conditional sampling: ``sample(n, conditions=...)`` draws from the fitted model's conditional distribution."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from skdpsynth import (AIMSynthesizer, Domain, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.datasets import load_adult
from skdpsynth.graphical import GraphicalModel

COLUMNS = ["sex", "relationship", "race", "income>50K", "native-country"]


@pytest.fixture(scope="module")
def adult():
    data = load_adult(discretized=True)
    return data.frame[COLUMNS].iloc[:8000], data.domain.project(COLUMNS).to_dict()


def test_a_conditioned_model_is_the_restricted_joint_renormalised():
    rng = np.random.default_rng(0)
    dom = Domain(["a", "b", "c"], [3, 4, 2])
    model = GraphicalModel(dom, {("a", "b"): rng.normal(size=(3, 4)), ("b", "c"): rng.normal(size=(4, 2))}, 500.0)
    mask_a, mask_c = np.array([True, False, True]), np.array([False, True])
    given = model.restrict({"a": mask_a, "c": mask_c})
    joint = model.project(["a", "b", "c"])
    restricted = joint[mask_a][:, :, mask_c]
    assert given.domain.shape == (2, 4, 1)
    np.testing.assert_allclose(given.project(["a", "b", "c"]), restricted / restricted.sum() * 500.0, rtol=1e-10)
    assert given.total == model.total and model.project(["a"])[1] > 0   # the original model is unchanged


def test_conditions_the_model_cannot_meet_are_refused():
    dom = Domain(["a", "b"], [2, 2])
    with np.errstate(divide="ignore"):
        model = GraphicalModel(dom, {("a", "b"): np.log([[1.0, 0.0], [1.0, 5.0]])}, total=80)
    with pytest.raises(ValueError, match="probability 0"):
        model.restrict({"a": np.array([True, False]), "b": np.array([False, True])})
    with pytest.raises(ValueError, match="at least one"):
        model.restrict({"a": np.array([False, False])})
    with pytest.raises(ValueError, match="not an attribute"):
        model.restrict({"z": np.array([True])})


def test_iid_conditional_samples_follow_the_models_conditional_distribution(adult):
    X, domain = adult
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mst = MSTSynthesizer(1.0, domain=domain, sampling="sample", compress=False, random_state=0).fit(X)
    n = 20000
    synthetic = mst.sample(n, random_state=1, conditions={"income>50K": 1, "race": [0, 4]})
    assert set(synthetic["income>50K"]) == {1} and set(synthetic["race"]) <= {0, 4}
    # The model's p(relationship | income = 1, race in {0, 4}), from its unconditioned joint.
    joint = mst.model_.project(["relationship", "race", "income>50K"])[:, [0, 4], 1].sum(axis=1)
    expected = joint / joint.sum()
    observed = np.bincount(synthetic["relationship"], minlength=domain["relationship"])
    # i.i.d. draws: a chi-square goodness-of-fit test at level 1e-3 (fixed seed, so the outcome is fixed).
    keep = expected * n >= 5
    chi2 = ((observed[keep] - n * expected[keep]) ** 2 / (n * expected[keep])).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3


def _fitted(name, X, domain):
    half = [COLUMNS[:2], COLUMNS[2:]]
    make = {
        "mst": lambda: MSTSynthesizer(1.0, domain=domain, random_state=0),          # compresses rare countries
        "aim": lambda: AIMSynthesizer(1.0, domain=domain, random_state=0, max_iters=100),
        "ppsyn": lambda: PartitionSynthesizer(1.0, domain=domain, random_state=0, max_iters=100),
        "hybrid": lambda: HybridSynthesizer(1.0, domain=domain, random_state=0, max_rounds=12, max_iters=50,
                                            partition={"n_slices": 1, "n_vertical": 2}),
        "vertimrf": lambda: VerticalMRFSynthesizer(4.0, 1e-6, domain=domain, party_columns=half, n_sketches=200,
                                                   random_state=0, local_mrf_params={"max_iters": 100}),
    }[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make().fit(X)


@pytest.mark.parametrize("name", ["mst", "aim", "ppsyn", "hybrid", "vertimrf"])
def test_every_record_meets_the_conditions(adult, name):
    X, domain = adult
    synth = _fitted(name, X, domain)
    if name == "mst":
        assert synth.compression_ is not None and not synth.compression_.supports["native-country"].all()
    rare = [int(v) for v in np.argsort(np.bincount(X["native-country"], minlength=domain["native-country"]))[:3]]
    synthetic = synth.sample(3000, random_state=0, conditions={"sex": 0, "native-country": rare})
    assert len(synthetic) == 3000
    assert set(synthetic["sex"]) == {0} and set(synthetic["native-country"]) <= set(rare)
    assert synth.sample(5, random_state=0).shape == (5, len(COLUMNS))   # unconditioned sampling is unchanged


def test_conditions_are_checked_and_view_says_it_cannot_condition(adult):
    X, domain = adult
    mst = _fitted("mst", X, domain)
    with pytest.raises(ValueError, match="not a fitted column"):
        mst.sample(5, conditions={"salary": 1})
    with pytest.raises(ValueError, match="codes 0 .. 1"):
        mst.sample(5, conditions={"sex": 2})
    with pytest.raises(ValueError, match="lists no value"):
        mst.sample(5, conditions={"sex": []})
    with pytest.raises(TypeError, match="conditions must be a dict"):
        mst.sample(5, conditions=[("sex", 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        view = ViewSynthesizer(1.0, domain=domain, random_state=0).fit(X)
    with pytest.raises(NotImplementedError, match="cannot sample conditionally"):
        view.sample(5, conditions={"sex": 0})


def test_labelled_columns_condition_on_their_values():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], 3000),
                      "size": rng.choice(["S", "M", "L"], 3000)})
    domain = {"colour": ["blue", "green", "red"], "size": ["L", "M", "S"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mst = MSTSynthesizer(1.0, domain=domain, random_state=0).fit(X)
    synthetic = mst.sample(500, random_state=0, conditions={"colour": "red", "size": ["S", "M"]})
    assert set(synthetic["colour"]) == {"red"} and set(synthetic["size"]) <= {"S", "M"}
    with pytest.raises(ValueError, match="outside its public categories"):
        mst.sample(5, conditions={"colour": "purple"})
