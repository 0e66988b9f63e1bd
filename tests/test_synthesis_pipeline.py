"""SynthesisPipeline: DP preprocessing + synthesizer, one ledger, original schema out."""
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from skdpsynth import AIMSynthesizer, MSTSynthesizer, PrivacyLeakWarning, TrainOnSynthetic, ViewSynthesizer
from skdpsynth.metrics import marginal_scorer
from skdpsynth.pipeline import SynthesisPipeline, make_synthesis_pipeline
from skdpsynth.preprocessing import DPCategoricalEncoder
from skdpsynth.preprocessing import TableDiscretizer
from skdpsynth.privacy import cdp_rho
from skdpsynth.synthesizers.select_measure import one_way_sigma

COLORS = ["red", "green", "blue"]


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(0)
    n = 3000
    color = rng.choice(COLORS, n, p=[0.5, 0.3, 0.2])
    age = np.where(color == "red", rng.integers(18, 40, n), rng.integers(40, 90, n))
    income = rng.normal(50.0, 15.0, n) + (color == "blue") * 20
    return pd.DataFrame({"color": color, "age": age, "income": income})


def schema(public_income=True):
    out = {
        "color": {"type": "categorical", "categories": COLORS},
        "age": {"type": "numeric", "bounds": [17, 90], "n_bins": 6},
    }
    if public_income:
        out["income"] = {"type": "numeric", "bounds": [0, 120], "n_bins": 6}
    return out


def pipeline(epsilon_bins=None, **synth):
    return SynthesisPipeline([
        ("table", TableDiscretizer(schema(public_income=epsilon_bins is None), n_bins=6, epsilon=epsilon_bins,
                                   random_state=0)),
        ("synth", MSTSynthesizer(epsilon=1.0, random_state=0, **synth)),
    ])


def test_sample_comes_back_in_the_original_schema(mixed):
    pipe = pipeline().fit(mixed)
    out = pipe.sample(1000, random_state=1)
    assert list(out.columns) == list(mixed.columns)
    assert (out.dtypes == mixed.dtypes).all()
    assert set(out["color"]) <= set(COLORS)
    assert out["age"].between(17, 90).all() and out["income"].between(0, 120).all()
    # The dependence of age on color survives preprocessing + synthesis.
    young = out.loc[out["color"] == "red", "age"].mean() < out.loc[out["color"] != "red", "age"].mean()
    assert young
    assert len(pipe.sample()) == round(pipe.n_records_)


def test_ledger_is_the_union_of_the_steps(mixed):
    pipe = pipeline(epsilon_bins=0.2).fit(mixed)
    ledger = pipe.privacy_ledger_
    # Public metadata costs nothing; DP bounds of `income` cost the discretizer's 0.2 (pure ε);
    # the synthesizer spends its rho.  Nothing is subtracted or added.
    assert ledger.total_epsilon() == pytest.approx(0.2, rel=1e-12)
    assert ledger.total_rho() == pytest.approx(cdp_rho(1.0, 1e-9), rel=1e-12)
    frame = ledger.to_frame()
    assert set(frame["party"]) == {"table", "synth"}
    assert len(ledger) == len(pipe.named_steps_["table"].privacy_ledger_) + len(pipe.named_steps_["synth"].privacy_ledger_)
    # The composed statement: the better of pure entries in zCDP as eps^2/2, and basic composition.
    from skdpsynth.privacy import cdp_epsilon

    rho = cdp_rho(1.0, 1e-9)
    expected = min(cdp_epsilon(rho + 0.2**2 / 2, 1e-9), 0.2 + cdp_epsilon(rho, 1e-9))
    assert ledger.epsilon(1e-9) == pytest.approx(expected, rel=1e-9)
    assert ledger.epsilon(1e-9) <= 1.2 * (1 + 1e-9)  # never worse than adding the two budgets


def test_inferred_metadata_warns(mixed):
    pipe = SynthesisPipeline([("colors", DPCategoricalEncoder()), ("synth", MSTSynthesizer(random_state=0))])
    with pytest.warns(PrivacyLeakWarning, match="color"):
        pipe.fit(mixed[["color"]])


def test_params_clone_and_grid_search(mixed):
    pipe = pipeline()
    params = pipe.get_params()
    assert params["synth__epsilon"] == 1.0 and params["table__n_bins"] == 6
    pipe.set_params(synth__epsilon=2.0, table__n_bins=4)
    assert dict(pipe.steps)["synth"].epsilon == 2.0
    assert clone(pipe).get_params()["table__n_bins"] == 4
    cats = mixed[["color"]].assign(band=pd.cut(mixed["age"], [0, 40, 90], labels=["young", "old"]).astype(str))
    search = SynthesisPipeline([
        ("enc", DPCategoricalEncoder(categories={"color": COLORS, "band": ["young", "old"]})),
        ("synth", MSTSynthesizer(random_state=0)),
    ])
    grid = GridSearchCV(search, {"synth__epsilon": [0.1, 5.0]}, scoring=marginal_scorer(ways=2), cv=3).fit(cats)
    assert grid.best_params_ == {"synth__epsilon": 5.0}


def test_inside_train_on_synthetic(mixed):
    X = mixed[["age", "income"]]
    y = mixed["color"]
    synth = SynthesisPipeline([
        ("table", TableDiscretizer(schema(), random_state=0)),
        ("synth", MSTSynthesizer(epsilon=2.0, random_state=0)),
    ])
    model = TrainOnSynthetic(synth, make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression()))
    model.fit(X, y)
    pred = model.predict(X)
    assert set(pred) <= set(COLORS)
    # Age separates red (18-39) from the rest (40-89), so learning that alone gives ~0.8 accuracy while the
    # majority class gives 0.5: above 0.7 means the dependence went through preprocessing, MST and back.
    assert model.score(X, y) > 0.7


def test_step_validation(mixed):
    with pytest.raises(ValueError, match="non-empty"):
        SynthesisPipeline([]).fit(mixed)
    with pytest.raises(TypeError, match="synthesizer"):
        SynthesisPipeline([("enc", DPCategoricalEncoder(categories={"color": COLORS}))]).fit(mixed[["color"]])
    with pytest.raises(ValueError, match="unique"):
        SynthesisPipeline([("a", DPCategoricalEncoder()), ("a", MSTSynthesizer())]).fit(mixed)
    assert [n for n, _ in make_synthesis_pipeline(DPCategoricalEncoder(), DPCategoricalEncoder(), MSTSynthesizer()).steps] == [
        "dpcategoricalencoder-1", "dpcategoricalencoder-2", "mstsynthesizer"]


@pytest.fixture(scope="module")
def nullable():
    """Nullable Int64 / boolean / string columns, each with about 20% missing values."""
    rng = np.random.default_rng(1)
    n = 3000
    gone = {c: rng.random(n) < 0.2 for c in "ibs"}
    kids = pd.array(rng.integers(0, 3, n), dtype="Int64")
    kids[gone["i"]] = pd.NA
    owner = pd.array(rng.random(n) < 0.6, dtype="boolean")
    owner[gone["b"]] = pd.NA
    city = pd.array(rng.choice(["Oslo", "Rome"], n), dtype="string")
    city[gone["s"]] = pd.NA
    return pd.DataFrame({"kids": kids, "owner": owner, "city": city})


NULLABLE_SCHEMA = {"kids": {"type": "categorical", "categories": [0, 1, 2], "missing": "category"},
                   "owner": {"type": "categorical", "categories": [False, True], "missing": "category"},
                   "city": {"type": "categorical", "categories": ["Oslo", "Rome"], "missing": "category"}}


def test_table_discretizer_round_trips_nullable_dtypes(nullable):
    # Issue 42: Int64 came back float64 (2.0) and boolean object; missing values are the dtypes' pd.NA.
    table = TableDiscretizer(NULLABLE_SCHEMA).fit(nullable)
    pd.testing.assert_frame_equal(table.inverse_transform(table.transform(nullable)), nullable)


def test_sample_keeps_nullable_dtypes(nullable):
    pipe = SynthesisPipeline([("table", TableDiscretizer(NULLABLE_SCHEMA)),
                              ("synth", MSTSynthesizer(epsilon=1.0, random_state=0))]).fit(nullable)
    out = pipe.sample(2000, random_state=1)
    assert (out.dtypes == nullable.dtypes).all()
    for col, spec in NULLABLE_SCHEMA.items():
        present = out[col].dropna()
        assert present.isin(spec["categories"]).all()
        # About 20% of the records are missing (binomial sd 0.9% at n = 3000, plus the noise of MST's
        # 1-way measurement at rho 0.015, sd ~1.3%): the missing value does come back, as pd.NA.
        assert 0.1 < out[col].isna().mean() < 0.3
        assert out.loc[out[col].isna(), col].map(lambda v: v is pd.NA).all()


# -- scikit-learn's estimator checks (issue 43: they aborted, the pipeline looking like an untagged transformer) --
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from skdpsynth.preprocessing import TableDiscretizer  # noqa: E402

_TARGET_AS_COLUMN = (
    "fit(X, y) synthesizes y as the last column, so transform() takes the same columns (X and y); the check fits "
    "with y and transforms X alone"
)
_NOT_A_TRANSFORMER = (
    "transform() maps real records into the synthesizer's space for scoring; fit returns the fitted pipeline to "
    "sample from, so there is no fit_transform"
)
PIPELINE_EXPECTED_FAILED_CHECKS = {
    **dict.fromkeys(["check_n_features_in_after_fitting", "check_estimators_dtypes", "check_dtype_object",
                     "check_estimators_pickle", "check_f_contiguous_array_estimator",
                     "check_methods_sample_order_invariance", "check_methods_subset_invariance",
                     "check_dict_unchanged", "check_fit_idempotent"], _TARGET_AS_COLUMN),
    **dict.fromkeys(["check_transformer_data_not_an_array", "check_transformer_general",
                     "check_transformer_preserve_dtypes"], _NOT_A_TRANSFORMER),
    "check_complex_data": "values are opaque category labels: a complex number is a label like any other",
    "check_estimators_empty_data_messages": (
        "X of 0 columns with a y is a table of one column, the target, which a pipeline synthesizes"),
    "check_estimators_nan_inf": _TARGET_AS_COLUMN + " (NaN and inf are refused by column, naming it)",
}


@parametrize_with_checks([SynthesisPipeline([("table", TableDiscretizer(n_bins=3)),
                                             ("synth", MSTSynthesizer(random_state=0))])],
                         expected_failed_checks=lambda est: PIPELINE_EXPECTED_FAILED_CHECKS, xfail_strict=True)
def test_sklearn_estimator_checks_run_on_the_synthesis_pipeline(estimator, check):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the checks' data read without DP: leak warnings by design
        check(estimator)


# -- missing values whose DP count fell below its threshold ---------------------------------------------------
def _tentative_table(seed=0):
    """20,000 records: ``a`` with 1% missing values (200 records), ``b`` and ``c`` without any."""
    rng = np.random.default_rng(seed)
    n = 20_000
    X = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["p", "q"], n),
                      "c": rng.choice(["u", "v", "w"], n)})
    X.loc[rng.permutation(n)[:200], "a"] = None
    return X


def _fit_tentative(synthesizer, X):
    # epsilon 0.03 over 3 columns: each missing-value count gets Laplace(100) noise against the threshold
    # ln(10) / 0.01 = 230, so 200 missing values fall below it with probability 1 - e^(-0.3) / 2 = 0.63.
    table = TableDiscretizer(epsilon=0.03, delta=1e-9, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_synthesis_pipeline(table, synthesizer).fit(X)


@pytest.mark.parametrize("synth", [MSTSynthesizer(epsilon=1.0, delta=1e-9, random_state=0),
                                   AIMSynthesizer(epsilon=1.0, delta=1e-9, random_state=0, max_iters=100)],
                         ids=["mst", "aim"])
def test_the_synthesizers_measurement_decides_a_tentative_missing_category(synth):
    X = _tentative_table()
    pipe = _fit_tentative(synth, X)
    table = pipe.named_steps_["tablediscretizer"]
    # At this seed every column's missing count fell below its threshold: all three are decided by the model.
    assert set(pipe.missing_support_) == {"a", "b", "c"}
    sigma = one_way_sigma(pipe.named_steps_[type(synth).__name__.lower()].privacy_ledger_, "a")
    # a: 200 missing values are 200 / sigma noise sigmas (sigma < 20 here), far above 3; b, c: none, so the
    # model's count is its estimate of noise alone, below 3 sigmas but with probability 0.13% per column.
    assert sigma < 20 and pipe.missing_support_["a"] >= 200 / sigma - 4
    assert pipe.missing_support_["b"] < 3 and pipe.missing_support_["c"] < 3
    assert table.tentative_missing() == {"b": "__missing__", "c": "__missing__"}
    assert table.schema_["a"]["missing"] == "category" and table.schema_["b"]["missing"] == "other"
    synthetic = pipe.sample(20_000, random_state=1)
    # a's missing share is 1% up to the model's noise (sigma / n < 0.1%) and sampling (0.07%): 4 of each.
    assert abs(synthetic["a"].isna().mean() - 0.01) <= 4 * np.hypot(sigma / 20_000, np.sqrt(0.01 * 0.99 / 20_000))
    coded = pipe.sample(20_000, random_state=2, inverse_transform=False)
    for column in ("b", "c"):   # unsupported: no record drawn in the category, so none read back as "other"
        assert not (coded[column].astype(object) == "__missing__").any()
        assert not synthetic[column].isna().any()
    assert len(coded) == 20_000 and len(pipe.sample()) == round(pipe.n_records_)
    # Conditioning on a missing value of b is refused: the preprocessing reads its category as "__other__".
    with pytest.raises(ValueError, match="maps it to '__other__'"):
        pipe.sample(10, conditions={"b": None})


def test_a_synthesizer_that_cannot_tell_leaves_the_category_tentative():
    X = _tentative_table()
    pipe = _fit_tentative(ViewSynthesizer(epsilon=1.0, random_state=0), X)
    assert pipe.missing_support_ == {"a": None, "b": None, "c": None}
    table = pipe.named_steps_["tablediscretizer"]
    assert set(table.tentative_missing()) == {"a", "b", "c"}
    synthetic = pipe.sample(5_000, random_state=1)
    assert not synthetic.isna().any().any()   # read back as "__other__", like unreleased values
