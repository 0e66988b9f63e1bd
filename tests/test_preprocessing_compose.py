"""The DP preprocessing steps as scikit-learn building blocks (issue 14).

Composition of DPKBinsDiscretizer and DPCategoricalEncoder on a mixed table through ``columns=``; the rules all
three transformers share (columns at transform, ``set_output``); and scikit-learn's own estimator checks, with
the reason for every check a DP transformer legitimately fails (``EXPECTED_FAILED_CHECKS`` below).
"""
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdpsynth import MSTSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.pipeline import make_synthesis_pipeline
from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer, TableDiscretizer
from skdpsynth.privacy import ReproducibleNoiseWarning

NUMERIC, CATEGORICAL = ["age", "hours-per-week"], ["workclass", "sex"]


@pytest.fixture(scope="module")
def adult():
    """The raw Adult frame (int and object columns, workclass with missing values) and its public schema."""
    data = load_adult()
    frame = data.frame[["age", "workclass", "hours-per-week", "sex"]].iloc[:3000]
    return frame, data.schema


def composed_steps(schema, **synth):
    return (
        DPKBinsDiscretizer(n_bins=8, columns=NUMERIC, bounds={c: tuple(schema[c]["bounds"]) for c in NUMERIC}),
        DPCategoricalEncoder({c: schema[c]["categories"] for c in CATEGORICAL}, columns=CATEGORICAL,
                             missing={"workclass": "category"}),  # declared in Adult's public schema too
        MSTSynthesizer(epsilon=1.0, max_iters=200, **synth),
    )


def _quietly(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning, a PrivacyLeakWarning above all, fails
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # seeded on purpose
        return fit()


# -- item 3: a scikit-learn-native route for mixed tables ------------------------------------------------
def test_discretizer_and_encoder_compose_on_a_mixed_table(adult):
    frame, schema = adult
    pipe = make_synthesis_pipeline(*composed_steps(schema, random_state=0))
    _quietly(lambda: pipe.fit(frame))
    assert len(pipe.privacy_ledger_) == len(pipe.named_steps_["mstsynthesizer"].privacy_ledger_)  # metadata free
    synthetic = pipe.sample(2000, random_state=1)
    # The original schema: names, order, dtypes; values within the public bounds and categories.
    assert list(synthetic.columns) == list(frame.columns) and (synthetic.dtypes == frame.dtypes).all()
    assert synthetic["age"].between(17, 90).all() and synthetic["hours-per-week"].between(1, 99).all()
    assert synthetic["sex"].isin(schema["sex"]["categories"]).all()
    assert synthetic["workclass"].dropna().isin(schema["workclass"]["categories"]).all()
    # Each step names all the columns, and its transform leaves the other step's columns alone.
    disc, enc = pipe.named_steps_["dpkbinsdiscretizer"], pipe.named_steps_["dpcategoricalencoder"]
    assert disc.columns_ == NUMERIC and enc.columns_ == CATEGORICAL
    for step in (disc, enc):
        assert list(step.get_feature_names_out()) == list(frame.columns) == list(step.feature_names_in_)
    binned = disc.transform(frame)
    for c in CATEGORICAL:
        pd.testing.assert_series_equal(binned[c], frame[c])
    # The same public metadata through TableDiscretizer, the one-step route, gives the same encoded table.
    table = _quietly(lambda: TableDiscretizer({c: schema[c] for c in frame.columns}, n_bins=8).fit(frame))
    pd.testing.assert_frame_equal(enc.transform(binned), table.transform(frame))


@pytest.mark.parametrize("make", [
    lambda: DPKBinsDiscretizer(n_bins=3, columns=["x"], bounds={"x": (0, 10)}),
    lambda: DPCategoricalEncoder({"x": [1.5, 4.0, 9.0]}, columns=["x"]),
], ids=["discretizer", "encoder"])
def test_other_columns_pass_through_transform_and_inverse_unchanged(make):
    X = pd.DataFrame({
        "when": pd.to_datetime(["2020-01-01", "2021-06-30", "2022-12-31"]),
        "x": [1.5, 4.0, 9.0],
        "name": pd.Series(["a", None, "c"], dtype=object),
        "flag": [True, False, True],
        "code": pd.Categorical(["u", "v", "u"], categories=["v", "u"]),
        "n": pd.array([1, None, 3], dtype="Int64"),
    }, index=[10, 10, 7])  # duplicate labels: nothing may be aligned on the index
    step = make()
    Xt = _quietly(lambda: step.fit(X)).transform(X)
    assert list(Xt.columns) == list(X.columns) and Xt.index.equals(X.index)
    assert isinstance(Xt["x"].dtype, pd.CategoricalDtype)
    passed = [c for c in X.columns if c != "x"]
    pd.testing.assert_frame_equal(Xt[passed], X[passed])
    back = step.inverse_transform(Xt)
    pd.testing.assert_frame_equal(back[passed], X[passed])
    assert back["x"].dtype == X["x"].dtype and list(back.columns) == list(X.columns)
    assert step.n_features_in_ == 6 and list(step.get_feature_names_out()) == list(X.columns)
    assert X["x"].tolist() == [1.5, 4.0, 9.0]  # the input is not modified


def test_per_column_parameters_must_agree_with_columns():
    X = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "s": ["u", "v"]})
    disc = dict(columns=["a", "b"])
    for kwargs, match in [
        ({**disc, "bounds": {"a": (0, 5), "s": (0, 1)}}, r"bounds names columns that are not in columns=.*\['s'\]"),
        ({**disc, "edges": {"s": [0, 1]}, "bounds": (0, 5)}, r"edges names columns that are not in columns="),
        ({**disc, "n_bins": {"a": 2, "b": 2, "s": 2}, "bounds": (0, 5)}, r"n_bins dict.*unknown: \['s'\]"),
        ({**disc, "n_bins": {"a": 2}, "bounds": (0, 5)}, r"n_bins dict.*missing: \['b'\]"),
        ({"columns": ["a", "zz"], "bounds": (0, 5)}, r"columns names columns that are not in X: \['zz'\]"),
        ({"columns": ["a", "a"], "bounds": (0, 5)}, r"duplicate names \['a'\]"),
    ]:
        with pytest.raises(ValueError, match=match):
            DPKBinsDiscretizer(**kwargs).fit(X)
    with pytest.raises(TypeError, match=r"list of column names.*columns=\['a'\]"):
        DPKBinsDiscretizer(columns="a", bounds=(0, 5)).fit(X)
    with pytest.raises(TypeError, match="Column 's' has non-numeric dtype"):
        DPKBinsDiscretizer(bounds=(0, 5)).fit(X)  # all columns by default, as before
    enc = dict(columns=["s"])
    for kwargs, match in [
        ({**enc, "categories": {"s": ["u", "v"], "a": [1.0]}}, r"categories names columns that are not in columns="),
        ({**enc, "handle_unknown": {"a": "other"}}, r"handle_unknown names columns that are not in columns="),
        ({**enc, "missing": {"b": "category"}}, r"missing names columns that are not in columns="),
    ]:
        with pytest.raises(ValueError, match=match):
            DPCategoricalEncoder(**kwargs).fit(X)


# -- item 10: one rule for the columns at transform time -------------------------------------------------
def _fitted(kind, X):
    if kind == "discretizer":
        return DPKBinsDiscretizer(n_bins=2, bounds=(0, 10)).fit(X)
    if kind == "encoder":
        return DPCategoricalEncoder({c: sorted(X[c].unique()) for c in X}).fit(X)
    return TableDiscretizer({c: {"type": "numeric", "bounds": [0, 10]} for c in X}, n_bins=2).fit(X)


KINDS = ["discretizer", "encoder", "table"]


@pytest.mark.parametrize("kind", KINDS)
def test_columns_at_transform_must_be_those_seen_in_fit(kind):
    """scikit-learn's rule for all three: the same columns by name (any order), or a ValueError."""
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]})
    step = _fitted(kind, X)
    Xt = step.transform(X)
    pd.testing.assert_frame_equal(step.transform(X[["b", "a"]]), Xt)  # matched by name, fit order out
    for method, data in (("transform", X), ("inverse_transform", Xt)):
        with pytest.raises(ValueError, match=r"unexpected \['zip'\]"):
            getattr(step, method)(data.assign(zip=1.0))
        with pytest.raises(ValueError, match=r"missing \['b'\]"):
            getattr(step, method)(data[["a"]])
    with pytest.raises(ValueError, match=r"X has 3 features, but \w+ is expecting 2 features"):
        step.transform(np.ones((2, 3)))


# -- item 10: set_output ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_set_output_default_gives_an_array_pandas_a_dataframe(kind):
    X = pd.DataFrame({"a": [1.0, 2.0, 9.0], "b": [4.0, 5.0, 6.0]})
    step = _fitted(kind, X)
    frame = step.transform(X)  # without set_output: the DataFrame of Categoricals the synthesizers read
    assert isinstance(frame, pd.DataFrame) and all(isinstance(t, pd.CategoricalDtype) for t in frame.dtypes)
    with sklearn.config_context(transform_output="default"):  # the global default is this class's default
        assert isinstance(step.transform(X), pd.DataFrame)

    assert step.set_output(transform="default") is step
    array = step.transform(X)
    assert isinstance(array, np.ndarray) and array.shape == (3, 2)
    assert array.tolist() == [[frame[c].iloc[i] for c in frame] for i in range(3)]
    assert isinstance(step.fit_transform(X), np.ndarray)
    assert isinstance(clone(step).fit(X).transform(X), np.ndarray)  # the setting survives clone ...
    assert isinstance(pickle.loads(pickle.dumps(step)).transform(X), np.ndarray)  # ... and pickling
    back = step.inverse_transform(array, random_state=0)  # the array goes back like the frame
    pd.testing.assert_frame_equal(back.set_axis(X.index), step.inverse_transform(frame, random_state=0))

    step.set_output(transform="pandas")
    pd.testing.assert_frame_equal(step.transform(X), frame)
    fresh = _fitted(kind, X)
    with sklearn.config_context(transform_output="pandas"):
        pd.testing.assert_frame_equal(fresh.transform(X), frame)
    # Through scikit-learn's Pipeline.set_output, as for its own transformers.
    pipe = make_pipeline(_fitted(kind, X)).set_output(transform="default")
    assert isinstance(pipe.transform(X), np.ndarray)
    with pytest.raises(ValueError, match="transform must be one of"):
        step.set_output(transform="polars")


def test_array_output_of_codes_is_numeric():
    X = pd.DataFrame({"a": [1.0, 2.0, 9.0], "b": [4.0, 5.0, 6.0]})
    disc = DPKBinsDiscretizer(n_bins={"a": 2, "b": 3}, bounds=(0, 10), output="code").set_output(transform="default")
    out = disc.fit_transform(X)
    assert out.dtype.kind == "i" and out.tolist() == [[0, 1], [0, 1], [1, 1]]


# -- item 10: scikit-learn's estimator checks ------------------------------------------------------------
# Every check below fails for a reason that is part of what these transformers are; the rest pass.
EMPTY_DATA = ("0 records is valid input when the edges come from public bounds: a DP fit must not depend on whether "
              "the data are empty (as for the synthesizers); 0 columns is rejected with a message of our own")
NO_COLUMNS = ("a table with 0 columns is rejected (ValueError), but not with scikit-learn's message, which quotes the "
              "shape: its number of rows is the private record count (doc/privacy.md)")
COMPLEX_LABELS = "values are opaque category labels: a complex number is a label like any other"
DATAFRAME_OUTPUT = ("the output is a DataFrame of Categorical columns (the public domains the synthesizers read), "
                    "which np.asarray turns into an object array that assert_allclose cannot compare; the check "
                    "passes with set_output(transform='default')")
COMPARES_OUTPUTS = ["check_pipeline_consistency", "check_estimators_pickle", "check_transformer_data_not_an_array",
                    "check_transformer_general", "check_methods_sample_order_invariance",
                    "check_methods_subset_invariance", "check_fit_idempotent"]


def expected_failed_checks(estimator):
    failed = {}
    if getattr(estimator, "_output_container", None) != "default":
        failed.update(dict.fromkeys(COMPARES_OUTPUTS, DATAFRAME_OUTPUT))
    if isinstance(estimator, DPKBinsDiscretizer):
        failed["check_estimators_empty_data_messages"] = EMPTY_DATA
        return failed
    failed["check_estimators_empty_data_messages"] = NO_COLUMNS
    if isinstance(estimator, DPCategoricalEncoder):
        failed["check_complex_data"] = COMPLEX_LABELS
        failed["check_estimators_nan_inf"] = ("inf is a category label like any other; NaN, a missing value, is "
                                              "rejected (by name) unless missing='category' gives it a category")
    else:  # TableDiscretizer: only int and float columns are numeric, everything else is categorical
        failed["check_complex_data"] = COMPLEX_LABELS
        # Passes since the default bins the checks' float columns adaptively (measured: strict xfail turned
        # XPASS); the DataFrame-output reason stands for the other checks.
        failed.pop("check_fit_idempotent", None)
    return failed


def _estimators():
    # Parameters that make them run on the checks' unnamed float arrays of any width: one public range for
    # every column (out-of-range values fall in the end bins), codes as output so that values compare; the
    # encoder and the table read their metadata from the data (PrivacyLeakWarning, filtered below).
    plain = [DPKBinsDiscretizer(n_bins=3, bounds=(-10, 10), output="code"), DPCategoricalEncoder(),
             TableDiscretizer(n_bins=3, output="code")]
    return plain + [clone(est).set_output(transform="default") for est in plain]


@pytest.mark.filterwarnings("ignore::skdpsynth.privacy.PrivacyLeakWarning")
@parametrize_with_checks(_estimators(), expected_failed_checks=expected_failed_checks, xfail_strict=True)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)



def test_an_empty_table_goes_through_a_synthesis_pipeline_as_through_a_synthesizer():
    """Item 10: the synthesizers accept 0 records (the noisy count hides it); with public metadata, so do the steps."""
    empty = pd.DataFrame({"age": np.array([], dtype=np.int64), "city": pd.Series([], dtype=object)})
    routes = [
        lambda: make_synthesis_pipeline(TableDiscretizer({"age": {"type": "numeric", "bounds": [0, 100], "n_bins": 4},
                                                          "city": ["Oslo", "Rome"]}), MSTSynthesizer(epsilon=1.0)),
        lambda: make_synthesis_pipeline(DPKBinsDiscretizer(n_bins=4, columns=["age"], bounds={"age": (0, 100)}),
                                        DPCategoricalEncoder({"city": ["Oslo", "Rome"]}, columns=["city"]),
                                        MSTSynthesizer(epsilon=1.0)),
    ]
    for route in routes:
        pipe = route()
        synthetic = _quietly(lambda: pipe.fit(empty)).sample(50, random_state=0)
        assert (synthetic.dtypes == empty.dtypes).all() and len(synthetic) == 50
        assert synthetic["age"].between(0, 100).all() and synthetic["city"].isin(["Oslo", "Rome"]).all()
