"""Bundled data: the raw Adult table, its public schema, and the discretized benchmark."""
import numpy as np
import pandas as pd
import pytest

from skdpsynth import MSTSynthesizer, SynthesisPipeline
from skdpsynth.datasets import load_adult
from skdpsynth.preprocessing import TableDiscretizer


@pytest.fixture(scope="module")
def adult():
    return load_adult()


def test_raw_adult_shape_and_schema(adult):
    frame, schema = adult.frame, adult.schema
    assert frame.shape == (48842, 15) and list(frame.columns) == list(schema)
    assert adult.target_name == "income" and set(frame["income"]) == {"<=50K", ">50K"}
    assert (frame["income"] == ">50K").sum() == 11687  # adult.data + adult.test, labels without the '.'
    for column, spec in schema.items():
        values = frame[column]
        if spec["type"] == "numeric":
            assert values.dtype == np.int64 and not values.isna().any()
        else:
            # Every value in the records is in the public category list from adult.names.
            assert set(values.dropna()) <= set(spec["categories"])
            assert values.isna().any() == (spec.get("missing") == "category")


def test_discretized_benchmark(adult):
    bench = load_adult(discretized=True)
    assert bench.frame.shape == (48842, 14) and bench.domain.size(["age"]) == 85
    assert bench.n_train == adult.n_train == 32561


@pytest.mark.slow
def test_raw_adult_synthesizes_with_its_public_schema_only(adult):
    # The schema is public metadata: the pipeline must run with no PrivacyLeakWarning (an error in tests).
    X = adult.frame.sample(5000, random_state=0)
    pipe = SynthesisPipeline([
        ("table", TableDiscretizer(adult.schema, n_bins=8, random_state=0)),
        ("synth", MSTSynthesizer(epsilon=1.0, random_state=0)),
    ]).fit(X)
    out = pipe.sample(2000)
    assert list(out.columns) == list(X.columns) and (out.dtypes == X.dtypes).all()
    for column, spec in adult.schema.items():
        if spec["type"] == "numeric":
            lo, hi = spec["bounds"] if "bounds" in spec else (spec["edges"][0], spec["edges"][-1])
            assert out[column].between(lo, hi).all()
            if "edges" in spec:
                # The public [0, 1) bin of an integer column holds exactly 0, so the point mass at 0 survives
                # (equal-width bins would spread it over [0, 12500)). 1-way marginals at eps=1 on 5,000 rows
                # have noise of a few records per cell, far below 0.05 * 2000.
                assert abs((out[column] == 0).mean() - (X[column] == 0).mean()) < 0.05
        else:
            assert set(out[column].dropna()) <= set(spec["categories"])
    assert len(pipe.privacy_ledger_.to_frame().query("party == 'table'")) == 0  # public schema: free
