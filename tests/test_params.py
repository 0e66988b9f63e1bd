"""Hyper-parameter constraints (skdpsynth.params): declared once per estimator, checked at fit by one validator."""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import pandas as pd
import pytest

from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.params import InvalidParameterError, Interval, Names, Options, declared_constraints, validate_params
from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer, TableDiscretizer

SYNTHESIZERS = (MSTSynthesizer, AIMSynthesizer, PartitionSynthesizer, HybridSynthesizer, VerticalMRFSynthesizer,
                ViewSynthesizer)
TRANSFORMERS = (DPKBinsDiscretizer, DPCategoricalEncoder, TableDiscretizer)


@pytest.mark.parametrize("cls", SYNTHESIZERS + TRANSFORMERS, ids=lambda c: c.__name__)
def test_every_parameter_is_declared(cls):
    assert set(cls().get_params()) <= set(declared_constraints(cls))


def test_the_meta_estimators_declare_theirs():
    from sklearn.tree import DecisionTreeClassifier

    from skdpsynth.pipeline import SynthesisPipeline, TrainOnSynthetic

    tos = TrainOnSynthetic(MSTSynthesizer(), DecisionTreeClassifier())
    assert set(tos.get_params(deep=False)) <= set(declared_constraints(TrainOnSynthetic))
    assert set(SynthesisPipeline([("s", MSTSynthesizer())]).get_params(deep=False)) <= set(
        declared_constraints(SynthesisPipeline))
    with pytest.raises(InvalidParameterError, match="synthesizer must be an object with fit and sample methods"):
        TrainOnSynthetic(DecisionTreeClassifier(), DecisionTreeClassifier()).fit(
            pd.DataFrame({"a": [0, 1]}), pd.Series([0, 1]))
    with pytest.raises(InvalidParameterError, match="n_samples must be None or an integer >= 1, got True"):
        TrainOnSynthetic(MSTSynthesizer(), DecisionTreeClassifier(), n_samples=True).fit(
            pd.DataFrame({"a": [0, 1]}), pd.Series([0, 1]))


@pytest.mark.parametrize("cls", SYNTHESIZERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("params, message", [
    ({"epsilon": True}, "epsilon must be a finite number > 0 and <= 1e\\+10, got True"),
    ({"epsilon": float("inf")}, "epsilon must be a finite number > 0 and <= 1e\\+10, got inf"),
    ({"epsilon": 1e307}, "epsilon must be a finite number > 0 and <= 1e\\+10, got 1e\\+307. Past 1e\\+10 the noise"),
    ({"epsilon": "1"}, "epsilon must be a finite number > 0 and <= 1e\\+10, got '1'"),
    ({"verbose": "x"}, "verbose must be an integer >= 0 or True or False, got 'x'"),
    ({"random_state": -1}, "random_state must be None, an integer >= 0, a numpy Generator, RandomState or SeedSequence, got -1"),
])
def test_every_synthesizer_refuses_at_fit_naming_the_parameter(cls, params, message):
    frame = pd.DataFrame({"a": [0, 1, 1, 0], "b": [1, 0, 1, 1], "c": [0, 0, 1, 1]})
    estimator = cls(domain={"a": 2, "b": 2, "c": 2}, **params)    # stored as given
    assert estimator.get_params()[next(iter(params))] is params[next(iter(params))]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        estimator.fit(frame)


def test_delta_is_checked_only_where_the_method_has_one():
    with pytest.raises(ValueError, match=r"delta must be a finite number in \(0, 1\), got 1.0"):
        validate_params(MSTSynthesizer(delta=1.0))
    validate_params(ViewSynthesizer(epsilon=0.5))      # pure epsilon: no delta parameter


def test_interval_ends_and_kinds():
    positive = Interval(Integral, 1, None)
    assert positive.accepts(1) and positive.accepts(np.int64(5)) and not positive.accepts(0)
    assert not positive.accepts(1.0) and not positive.accepts(True)
    unit = Interval(Real, 0, 1, closed="neither")
    assert unit.accepts(0.5) and unit.accepts(np.float32(0.5)) and not unit.accepts(0) and not unit.accepts(1)
    assert not unit.accepts(float("nan")) and not unit.accepts(np.bool_(True))
    assert Interval(Real, 0, 1, closed="left").accepts(0) and not Interval(Real, 0, 1, closed="left").accepts(1)
    assert str(Interval(Real, None, 3, closed="neither")) == "a finite number < 3"
    with pytest.raises(ValueError, match="closed must be"):
        Interval(Real, 0, 1, closed="open")


def test_options_do_not_take_a_boolean_for_a_number():
    assert Options(1, "auto").accepts(1) and not Options(1, "auto").accepts(True)
    assert Options(True).accepts(True) and not Options(True).accepts(1)
    assert str(Options("a", "b", "c")) == "'a', 'b' or 'c'"


def test_a_subclass_declaration_replaces_its_base():
    class Base:
        _parameter_constraints = {"k": [Interval(Integral, 1, None)], "s": [Options("x")]}

        def get_params(self, deep=False):
            return {"k": self.k, "s": "x"}

    class Child(Base):
        _parameter_constraints = {"k": [Options("auto"), Interval(Integral, 1, None)]}

    child = Child()
    child.k = "auto"
    validate_params(child)
    child.k = 0
    with pytest.raises(ValueError, match=r"k must be 'auto' or an integer >= 1, got 0\."):
        validate_params(child)
    assert [str(c) for c in declared_constraints(Child)["s"]] == ["'x'"]


@pytest.mark.parametrize("cls", TRANSFORMERS, ids=lambda c: c.__name__)
def test_every_dp_transformer_refuses_a_boolean_epsilon_at_fit(cls):
    with pytest.raises(InvalidParameterError, match="epsilon must be None or a finite number > 0 and <= 1e\\+10, got True"):
        cls(epsilon=True).fit(pd.DataFrame({"a": [0.5, 1.5]}))


def test_names_hint_at_a_single_name():
    with pytest.raises(TypeError, match=r"columns must be None or a list of names, got 'age'\. Write columns=\['age'\]"):
        validate_params(None, {"columns": "age"}, {"columns": [None, Names()]})
