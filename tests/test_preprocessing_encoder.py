"""Tests of DPCategoricalEncoder: public categories, DP discovery, round trips, sklearn surface."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import clone

from skdpsynth.privacy import ReproducibleNoiseWarning
from skdpsynth import MSTSynthesizer
from skdpsynth.privacy import PrivacyLeakWarning
from skdpsynth.preprocessing.encoder import (
    DPCategoricalEncoder,
    dp_threshold,
    release_above_threshold,
)

OTHER, MISSING = "__other__", "__missing__"


def mixed_frame(n=600, seed=0):
    """str, int, bool and categorical columns, no missing values."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "s": rng.choice(["a", "b", "c"], n),
        "i": rng.choice([10, 20, 30], n).astype(np.int64),
        "b": rng.choice([True, False], n),
        "c": pd.Categorical(rng.choice(["x", "y"], n), categories=["y", "x", "z"]),
    })


PUBLIC = {"s": ["a", "b", "c"], "i": [10, 20, 30], "b": [False, True], "c": ["y", "x", "z"]}


# -- public categories ----------------------------------------------------------
def test_public_categories_exact_no_ledger_no_warning():
    X = mixed_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning (a leak in particular) fails
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # seeded on purpose
        enc = DPCategoricalEncoder(categories=PUBLIC).fit(X)
    for col, cats in PUBLIC.items():
        assert enc.categories_[col] == cats  # exactly the public list: no extra category by default
    assert enc.handle_unknown_ == {c: "error" for c in PUBLIC} and enc.missing_ == {c: "error" for c in PUBLIC}
    assert len(enc.privacy_ledger_) == 0
    Xt = enc.transform(X)
    assert list(Xt.columns) == list(X.columns)
    assert Xt.index.equals(X.index)
    for col in X.columns:
        assert isinstance(Xt[col].dtype, pd.CategoricalDtype)
        assert list(Xt[col].cat.categories) == enc.categories_[col]


def test_public_category_order_is_kept():
    X = pd.DataFrame({"s": ["b", "a"]})
    enc = DPCategoricalEncoder(categories={"s": ["b", "z", "a"]}, handle_unknown="other",
                               missing="category").fit(X)
    assert enc.categories_["s"] == ["b", "z", "a", OTHER, MISSING]


def test_other_and_missing_only_when_enabled():
    X = pd.DataFrame({"s": ["a", "b"]})
    enc = DPCategoricalEncoder({"s": ["a", "b"]}, handle_unknown="error", missing="error").fit(X)
    assert enc.categories_["s"] == ["a", "b"]
    enc = DPCategoricalEncoder({"s": ["a", "b"]}, handle_unknown="other", other_category="OTH").fit(X)
    assert enc.categories_["s"] == ["a", "b", "OTH"]
    enc = DPCategoricalEncoder({"s": ["a", "b"]}, missing="category").fit(X)
    assert enc.categories_["s"] == ["a", "b", MISSING]


def test_unseen_to_other_and_missing_to_missing():
    enc = DPCategoricalEncoder(categories={"s": ["a", "b"], "i": [1, 2]}, handle_unknown="other",
                               missing="category")
    enc.fit(pd.DataFrame({"s": ["a", "b"], "i": [1, 2]}))
    X = pd.DataFrame({"s": ["a", "zzz", None, "b"], "i": [2.0, 7.0, np.nan, 1.0]})
    Xt = enc.transform(X)
    assert Xt["s"].tolist() == ["a", OTHER, MISSING, "b"]
    assert Xt["i"].tolist() == [2, OTHER, MISSING, 1]


def test_handle_unknown_error_names_the_column_not_the_values():
    enc = DPCategoricalEncoder(categories={"s": ["a", "b"]}, handle_unknown="error")
    enc.fit(pd.DataFrame({"s": ["a", "b"]}))
    with pytest.raises(ValueError, match=r"Column 's' has values not among its categories.*handle_unknown='other'") \
            as info:
        enc.transform(pd.DataFrame({"s": ["a", "zzz"]}))
    assert "zzz" not in str(info.value)  # a value of the data: private (doc/privacy.md)


def test_missing_error():
    enc = DPCategoricalEncoder(categories={"s": ["a", "b"]}, missing="error")
    enc.fit(pd.DataFrame({"s": ["a", "b"]}))
    for bad in (None, np.nan, pd.NA):
        with pytest.raises(ValueError, match=r"Column 's' has missing values.*missing='category'"):  # not how many
            enc.transform(pd.DataFrame({"s": pd.Series(["a", bad], dtype=object)}))


# -- inferred categories ---------------------------------------------------------
def test_inferred_categories_warn_once_naming_exactly_those_columns():
    X = mixed_frame()
    enc = DPCategoricalEncoder(categories={"s": ["a", "b", "c"], "c": ["y", "x", "z"]})
    with pytest.warns(PrivacyLeakWarning) as record:
        enc.fit(X)
    leaks = [w for w in record if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1
    message = str(leaks[0].message)
    assert "['i', 'b']" in message
    assert "'s'" not in message and "'c'" not in message
    assert enc.categories_["i"] == [10, 20, 30]  # read from the data: every value is there, no extra category
    assert enc.categories_["b"] == [False, True]
    # Nothing spent; the leak is recorded, naming the same columns.
    assert [e.accounting for e in enc.privacy_ledger_] == ["leak"]
    assert enc.privacy_ledger_.leaks[0].details["columns"] == ["i", "b"]


def test_no_warning_with_epsilon():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # seeded on purpose
        DPCategoricalEncoder(epsilon=1.0, delta=1e-6, random_state=0).fit(mixed_frame())


# -- DP discovery -------------------------------------------------------------------
def _singleton_release_probability(eps, tau):
    """Exact P[1 + Y > tau] for the discrete Laplace Y, P[Y = k] ∝ exp(-eps |k|)."""
    m = math.floor(tau - 1) + 1  # the smallest integer > tau - 1
    return math.exp(-eps * m) / (1 + math.exp(-eps)) if m >= 1 else 1.0


def test_threshold_formula_bounds_both_laplace_tails():
    for eps, delta in [(1.0, 1e-6), (0.1, 1e-9), (2.5, 0.01), (0.5, 0.3)]:
        tau = dp_threshold(eps, delta)
        assert tau == pytest.approx(1 + math.log(1 / ((1 + math.exp(-eps)) * delta)) / eps, rel=1e-12)
        # Discrete Laplace (the default noise on counts): at most delta, and within a factor e^-eps of it.
        p = _singleton_release_probability(eps, tau)
        assert math.exp(-eps) * delta < p <= delta
        # Continuous Laplace(1/eps): exp(-eps (tau - 1)) / 2 <= delta, as 1 + e^-eps < 2.
        assert stats.laplace.sf(tau - 1, scale=1 / eps) <= delta
    # Large delta: the threshold is clipped to 1.
    assert dp_threshold(1.0, 0.8) == 1.0
    assert _singleton_release_probability(1.0, 1.0) <= 0.8


def test_the_continuous_threshold_would_leak_with_discrete_noise():
    """Why dp_threshold changed with the discrete default: 1 + ln(1/(2 delta))/eps releases a singleton with
    probability above delta whenever tau - 1 falls just below an integer."""
    eps, delta = 1.0, 0.5 * math.exp(-2.999)  # continuous threshold tau = 3.999...
    continuous_tau = 1 + math.log(1 / (2 * delta)) / eps
    assert _singleton_release_probability(eps, continuous_tau) > 1.3 * delta
    assert _singleton_release_probability(eps, dp_threshold(eps, delta)) <= delta


def test_encoder_uses_dp_threshold_per_column():
    X = mixed_frame()
    enc = DPCategoricalEncoder({"c": ["y", "x", "z"]}, epsilon=0.9, delta=3e-6, random_state=0).fit(X)
    # budget split over the 3 non-public columns
    expected = 1 + math.log(1 / ((1 + math.exp(-0.3)) * 1e-6)) / 0.3
    assert set(enc.thresholds_) == {"s", "i", "b"}
    for tau in enc.thresholds_.values():
        assert tau == pytest.approx(expected, rel=1e-12)
        assert _singleton_release_probability(0.3, tau) <= 1e-6


def test_single_occurrence_release_rate_at_most_delta():
    n, eps, delta = 20_000, 1.0, 0.05
    tau = dp_threshold(eps, delta)
    se = math.sqrt(delta * (1 - delta) / n)
    # the thresholding function on its own, vectorised
    rate = release_above_threshold(np.ones(n), epsilon=eps, threshold=tau, random_state=1).mean()
    assert rate <= delta + 5 * se
    # and through the encoder: 20,000 distinct values, each occurring once
    X = pd.DataFrame({"u": [f"v{k:05d}" for k in range(n)]})
    enc = DPCategoricalEncoder(epsilon=eps, delta=delta, random_state=2).fit(X)
    released = len(enc.categories_["u"]) - 1  # the released values, then OTHER
    assert released / n <= delta + 5 * se
    # the rate is the exact discrete-Laplace tail (at most delta, within a factor e^-eps of it), up to noise
    p = _singleton_release_probability(eps, tau)
    assert p <= delta and abs(rate - p) <= 5 * math.sqrt(p * (1 - p) / n)


def test_frequent_values_always_released_sorted_and_ledger():
    rng = np.random.default_rng(0)
    n = 3000
    X = pd.DataFrame({
        "s": rng.choice(["pear", "apple", "fig"], n),
        "i": rng.choice([3, 1, 2], n),
        "r": np.where(np.arange(n) == 0, "singleton", "common"),
    })
    eps, delta = 1.0, 1e-6
    enc = DPCategoricalEncoder(epsilon=eps, delta=delta, random_state=0).fit(X)
    # each count is ~1000 >> tau = 1 + 3 ln(1.5e6) ~ 43.7 (per-column eps = 1/3, delta = 1/3e-6)
    assert enc.categories_["s"] == ["apple", "fig", "pear", OTHER]  # DP discovery: "other" for unreleased values
    assert enc.categories_["i"] == [1, 2, 3, OTHER]
    assert enc.categories_["r"] == ["common", OTHER]
    entries = enc.privacy_ledger_.entries
    assert len(entries) == 3
    assert all(e.accounting == "approx" and e.mechanism == "laplace-threshold" for e in entries)
    assert [e.n_values for e in entries] == [3, 3, 1]
    assert math.fsum(e.epsilon for e in entries) == pytest.approx(eps, rel=1e-12)
    assert math.fsum(e.delta for e in entries) == pytest.approx(delta, rel=1e-12)
    assert enc.privacy_ledger_.epsilon(delta * (1 + 1e-9)) == pytest.approx(eps, rel=1e-12)
    assert enc.transform(X.iloc[:1])["r"].tolist() == [OTHER]


def test_dp_discovery_reproducible_and_random():
    rng = np.random.default_rng(1)
    # values with counts near the threshold, so the released set varies with the seed
    X = pd.DataFrame({"v": np.repeat(np.arange(60), rng.integers(1, 12, 60))})
    fit = lambda seed: DPCategoricalEncoder(epsilon=1.0, delta=0.01, random_state=seed).fit(X).categories_
    assert fit(5) == fit(5)
    assert len({tuple(fit(s)["v"]) for s in range(6)}) > 1


def test_threshold_can_be_raised_not_lowered():
    X = pd.DataFrame({"s": ["a"] * 30 + ["b"] * 200})
    tau = dp_threshold(1.0, 1e-6)
    with pytest.raises(ValueError, match="below the .*DP threshold"):
        DPCategoricalEncoder(epsilon=1.0, delta=1e-6, threshold=tau - 1).fit(X)
    enc = DPCategoricalEncoder(epsilon=1.0, delta=1e-6, threshold=100, random_state=0).fit(X)
    assert enc.thresholds_["s"] == 100
    assert enc.categories_["s"] == ["b", OTHER]


def test_public_columns_cost_nothing_with_epsilon():
    X = mixed_frame()
    enc = DPCategoricalEncoder(PUBLIC, epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    assert len(enc.privacy_ledger_) == 0
    assert enc.thresholds_ == {}
    # delta is only required when some column needs discovery
    DPCategoricalEncoder(PUBLIC, epsilon=1.0).fit(X)


def test_all_missing_and_single_value_columns():
    X = pd.DataFrame({"m": [None] * 200, "one": ["k"] * 200})
    with pytest.raises(ValueError, match="Column 'm' has missing values.*missing='category'"):
        DPCategoricalEncoder(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    enc = DPCategoricalEncoder(epsilon=1.0, delta=1e-6, missing="category", random_state=0).fit(X)
    assert enc.categories_["m"] == [OTHER, MISSING]
    assert enc.categories_["one"] == ["k", OTHER, MISSING]
    assert len(enc.privacy_ledger_) == 2  # the split depends on which columns are public, not on data
    assert enc.transform(X)["m"].unique().tolist() == [MISSING]
    with pytest.raises(ValueError, match="no categories"):
        DPCategoricalEncoder(epsilon=1.0, delta=1e-6, handle_unknown="error", missing="error",
                             random_state=0).fit(X[["one"]].iloc[:2])


# -- hostile input ----------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    ({"delta": 1e-6}, "delta was given without epsilon"),
    ({"epsilon": 0.0, "delta": 1e-6}, "epsilon must be None or a finite number > 0"),
    ({"epsilon": -1.0, "delta": 1e-6}, "epsilon must be None or a finite number > 0"),
    ({"epsilon": float("inf"), "delta": 1e-6}, "epsilon must be None or a finite number > 0"),
    ({"epsilon": 1.0, "delta": 0.0}, r"delta must be None or a finite number in \(0, 1\)"),
    ({"epsilon": 1.0, "delta": 1.0}, r"delta must be None or a finite number in \(0, 1\)"),
    ({"epsilon": 1.0}, "needs delta > 0"),
    ({"threshold": 5.0}, "threshold only applies"),
    ({"handle_unknown": "ignore"}, "handle_unknown must be"),
    ({"handle_unknown": {"s": "ignore"}}, "handle_unknown must be .* for column 's'"),
    ({"handle_unknown": {"zz": "other"}}, r"handle_unknown names columns that are not in X: \['zz'\]"),
    ({"missing": "drop"}, "missing must be"),
    ({"missing": {"zz": "category"}}, r"missing names columns that are not in X: \['zz'\]"),
    ({"other_category": "z", "missing_category": "z", "handle_unknown": "other", "missing": "category"},
     "must differ"),
    ({"categories": {"s": ["a", "a", "b"]}}, "duplicate values"),
    ({"categories": {"s": []}}, "is empty"),
    ({"categories": {"s": "ab"}}, "must be a list"),
    ({"categories": {"s": ["a", None]}}, "missing value"),
    ({"categories": {"nope": ["a"]}}, "not in X"),
    ({"categories": {"s": ["a", "__other__"]}, "handle_unknown": "other"}, "other_category='__other__' is one of"),
    ({"categories": {"s": ["a", "NA"]}, "missing_category": "NA", "missing": "category"},
     "missing_category='NA' is one of"),
])
def test_invalid_parameters(kwargs, match):
    X = pd.DataFrame({"s": ["a", "b"]})
    with pytest.raises(ValueError, match=match):
        DPCategoricalEncoder(**kwargs).fit(X)


def test_released_value_colliding_with_label_is_an_error():
    X = pd.DataFrame({"s": ["__other__"] * 500})
    with pytest.raises(ValueError, match="value found in the data"):
        DPCategoricalEncoder(epsilon=1.0, delta=1e-6, random_state=0).fit(X)


def test_empty_input():
    with pytest.raises(ValueError, match=r"at least one column: got 0 feature\(s\)"):
        DPCategoricalEncoder().fit(pd.DataFrame())
    with pytest.raises(ValueError, match="2-D.*Reshape your data"):
        DPCategoricalEncoder().fit(np.array(["a", "b"]))


def test_zero_rows_are_accepted_when_the_categories_need_no_data():
    """As for the synthesizers, 0 records is valid input: public categories need no data, DP discovery runs."""
    empty = pd.DataFrame({"s": pd.Series([], dtype=object), "t": pd.Series([], dtype=object)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = DPCategoricalEncoder({"s": ["a", "b"], "t": ["u"]}).fit(empty)
    assert enc.categories_ == {"s": ["a", "b"], "t": ["u"]} and len(enc.privacy_ledger_) == 0
    out = enc.transform(empty)
    assert out.shape == (0, 2) and list(out["s"].cat.categories) == ["a", "b"]
    assert enc.inverse_transform(out).shape == (0, 2)
    # DP discovery spends its budget and releases nothing: only the "other" category.
    dp = DPCategoricalEncoder({"t": ["u"]}, epsilon=1.0, delta=1e-6, random_state=0).fit(empty)
    assert dp.categories_["s"] == [OTHER]
    assert [(e.epsilon, e.delta) for e in dp.privacy_ledger_] == [(1.0, 1e-6)]
    # Categories read from the data without DP cannot be read from nothing.
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="Column 's' has no categories"):
        DPCategoricalEncoder({"t": ["u"]}).fit(empty)


def test_transform_column_mismatch():
    enc = DPCategoricalEncoder({"s": ["a"], "t": ["b"]}).fit(pd.DataFrame({"s": ["a"], "t": ["b"]}))
    with pytest.raises(ValueError, match="missing \\['t'\\]"):
        enc.transform(pd.DataFrame({"s": ["a"]}))
    # columns are matched by name, output in fitted order
    assert list(enc.transform(pd.DataFrame({"t": ["b"], "s": ["a"]})).columns) == ["s", "t"]


def test_array_input_named_x0():
    X = np.array([["a", 1], ["b", 2]], dtype=object)
    enc = DPCategoricalEncoder({"x0": ["a", "b"], "x1": [1, 2]}).fit(X)
    assert list(enc.feature_names_in_) == ["x0", "x1"]
    assert enc.n_features_in_ == 2
    assert list(enc.get_feature_names_out()) == ["x0", "x1"]
    assert enc.transform(X)["x1"].tolist() == [1, 2]


# -- inverse_transform -------------------------------------------------------------
def test_inverse_round_trip_preserves_values_and_dtypes():
    X = mixed_frame()
    enc = DPCategoricalEncoder(PUBLIC).fit(X)
    back = enc.inverse_transform(enc.transform(X))
    pd.testing.assert_frame_equal(back, X)
    assert back["i"].dtype == np.int64 and back["b"].dtype == bool
    assert list(back["c"].cat.categories) == ["y", "x", "z"]
    # DP-discovered columns too (every value frequent, so all released)
    enc = DPCategoricalEncoder(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    pd.testing.assert_frame_equal(enc.inverse_transform(enc.transform(X)), X)


def test_inverse_other_and_missing():
    enc = DPCategoricalEncoder({"s": ["a"], "i": [1, 2], "b": [True, False],
                                "c": ["x"]}, handle_unknown="other", missing="category").fit(
        pd.DataFrame({"s": ["a"], "i": [1], "b": [True], "c": pd.Categorical(["x"])}))
    Xt = pd.DataFrame({"s": ["a", OTHER, MISSING], "i": [1, 2, MISSING], "b": [True, False, OTHER],
                       "c": ["x", MISSING, "x"]})
    back = enc.inverse_transform(Xt)
    assert back["s"].iloc[1] == OTHER and pd.isna(back["s"].iloc[2])
    assert back["i"].dtype == np.float64 and back["i"].iloc[1] == 2 and np.isnan(back["i"].iloc[2])
    assert back["b"].dtype == object and back["b"].tolist() == [True, False, OTHER]
    assert isinstance(back["c"].dtype, pd.CategoricalDtype) and pd.isna(back["c"].iloc[1])
    with pytest.raises(ValueError, match="not among its encoded categories"):
        enc.inverse_transform(Xt.assign(s=["a", "zzz", "a"]))


def nullable_frame():
    """Nullable columns with a missing value each: ``Int64``, ``boolean``, ``string`` and ``Float64``."""
    return pd.DataFrame({
        "i": pd.array([1, 2, None, 2, 1], dtype="Int64"),
        "b": pd.array([True, False, None, True, True], dtype="boolean"),
        "s": pd.array(["a", "b", None, "a", "b"], dtype="string"),
        "f": pd.array([0.5, 1.5, None, 0.5, 0.5], dtype="Float64"),
    })


NULLABLE_PUBLIC = {"i": [1, 2], "b": [True, False], "s": ["a", "b"], "f": [0.5, 1.5]}


def test_inverse_keeps_nullable_dtypes_with_missing_values():
    # Issue 42: with missing="category", Int64 came back float64 (2.0) and boolean object.
    X = nullable_frame()
    enc = DPCategoricalEncoder(NULLABLE_PUBLIC, missing="category").fit(X)
    back = enc.inverse_transform(enc.transform(X))
    pd.testing.assert_frame_equal(back, X)
    for col in X.columns:
        assert back[col].dtype == X[col].dtype
        assert back[col].iloc[2] is pd.NA  # the dtype's own missing value, not NaN or None


def test_inverse_nullable_dtypes_with_the_other_label():
    # "__other__" fits a string column; an Int64 or boolean column cannot hold it and becomes object, its
    # missing values staying pd.NA (the input dtype's missing value), its real values Python scalars.
    X = nullable_frame()
    enc = DPCategoricalEncoder(NULLABLE_PUBLIC, handle_unknown="other", missing="category").fit(X)
    Xt = pd.DataFrame({"i": [1, OTHER, MISSING], "b": [True, OTHER, MISSING], "s": ["a", OTHER, MISSING],
                       "f": [0.5, 1.5, MISSING]})
    back = enc.inverse_transform(Xt)
    assert back["s"].dtype == "string" and back["s"].iloc[1] == OTHER and back["s"].iloc[2] is pd.NA
    assert back["f"].dtype == "Float64" and back["f"].iloc[2] is pd.NA
    for col, first in (("i", 1), ("b", True)):
        assert back[col].dtype == object and back[col].iloc[:2].tolist() == [first, OTHER]
        assert back[col].iloc[2] is pd.NA
    # Without "__other__" in the records, the nullable dtypes come back.
    back = enc.inverse_transform(Xt.iloc[[0, 2]])
    assert back["i"].dtype == "Int64" and back["b"].dtype == "boolean"


def test_inverse_missing_in_numpy_dtypes_unchanged():
    # NumPy dtypes keep their documented behaviour: int64 -> float64 with NaN, bool -> object with None.
    X = pd.DataFrame({"i": [1, 2], "b": [True, False], "t": pd.to_datetime(["2020-01-01", "2021-01-01"])})
    enc = DPCategoricalEncoder({"i": [1, 2], "b": [True, False], "t": list(X["t"])}, missing="category").fit(X)
    back = enc.inverse_transform(pd.DataFrame({"i": [2, MISSING], "b": [False, MISSING],
                                               "t": [X["t"].iloc[0], MISSING]}))
    assert back["i"].dtype == np.float64 and back["i"].iloc[0] == 2 and np.isnan(back["i"].iloc[1])
    assert back["b"].dtype == object and back["b"].iloc[1] is None
    # A date column keeps its dtype: NaT is its missing value.
    assert back["t"].dtype == X["t"].dtype and back["t"].iloc[0] == X["t"].iloc[0] and pd.isna(back["t"].iloc[1])


# -- integration and sklearn ----------------------------------------------------------
def test_mst_on_encoded_frame_without_leak_and_back():
    rng = np.random.default_rng(0)
    n = 2000
    X = pd.DataFrame({
        "city": rng.choice(["oslo", "rome", "lima"], n, p=[0.5, 0.3, 0.2]),
        "age": rng.choice([20, 30, 40, 50], n),
        "member": rng.choice([True, False], n),
    })
    X.loc[rng.random(n) < 0.05, "city"] = None
    enc = DPCategoricalEncoder({"age": [20, 30, 40, 50], "member": [False, True]},
                               epsilon=0.5, delta=1e-7, missing={"city": "category"}, random_state=0)
    Xt = enc.fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        mst = MSTSynthesizer(epsilon=1, random_state=0).fit(Xt)
    sample = mst.sample(500, random_state=0)
    back = enc.inverse_transform(sample)
    assert list(back.columns) == list(X.columns) and len(back) == 500
    present = back["city"].dropna()
    assert present.isin(["oslo", "rome", "lima", OTHER]).all()  # DP-discovered: OTHER for unreleased values
    # Public categories are exact: the synthetic values are among them, in the original dtype.
    assert back["age"].isin([20, 30, 40, 50]).all() and back["age"].dtype == np.int64
    assert back["member"].dtype == bool


def test_sklearn_clone_get_params_fit_returns_self():
    enc = DPCategoricalEncoder({"s": ["a"]}, epsilon=1.0, delta=1e-6, threshold=50.0, random_state=3)
    params = enc.get_params()
    assert params["categories"] == {"s": ["a"]} and params["threshold"] == 50.0
    twin = clone(enc)
    assert twin.get_params() == params and twin is not enc
    X = pd.DataFrame({"s": ["a", "b"]})
    assert enc.fit(X) is enc
    assert not hasattr(twin, "categories_")
    with pytest.raises(Exception, match="not fitted"):
        twin.transform(X)


# -- defaults: no extra category unless needed or asked for -------------------------------
def test_defaults_add_no_category_to_public_lists_and_only_other_to_dp_discovered_ones():
    X = pd.DataFrame({"pub": ["a", "b"] * 300, "dp": ["u"] * 400 + ["v"] * 200, "leak": ["x", "y"] * 300})
    enc = DPCategoricalEncoder({"pub": ["a", "b", "c"]}, columns=["pub", "dp"], epsilon=1.0, delta=1e-6,
                               random_state=0).fit(X)
    assert enc.categories_ == {"pub": ["a", "b", "c"], "dp": ["u", "v", OTHER]}
    assert enc.handle_unknown_ == {"pub": "error", "dp": "other"} and enc.missing_ == {"pub": "error", "dp": "error"}
    # Categories read from the data without DP hold every value: exact too.
    with pytest.warns(PrivacyLeakWarning):
        assert DPCategoricalEncoder().fit(X[["leak"]]).categories_ == {"leak": ["x", "y"]}
    # Missing values are an error at fit, naming the column and the parameter to set.
    holes = X.assign(pub=["a", None] * 300)
    with pytest.raises(ValueError, match=r"Column 'pub' has missing values.*missing='category'.*"
                                         r"missing=\{'pub': 'category'\}"):
        DPCategoricalEncoder({"pub": ["a", "b"]}, columns=["pub"]).fit(holes)
    enc = DPCategoricalEncoder({"pub": ["a", "b"]}, columns=["pub"], missing={"pub": "category"}).fit(holes)
    assert enc.categories_["pub"] == ["a", "b", MISSING]
    # Per column: an "other" category for one public column, none for another.
    enc = DPCategoricalEncoder({"pub": ["a"], "leak": ["x", "y"]}, columns=["pub", "leak"],
                               handle_unknown={"pub": "other"}).fit(X)
    assert enc.categories_ == {"pub": ["a", OTHER], "leak": ["x", "y"]}
    assert enc.transform(X)["pub"].tolist()[:2] == ["a", OTHER]


def test_public_categories_in_a_synthesis_pipeline_give_no_sentinels_and_train_on_synthetic_works():
    """Issue 14, item 2: the empty extra slots got mass from the noise, so synthetic rows held None and
    '__other__', and scikit-learn then failed on them ('<' not supported between 'str' and 'NoneType')."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from skdpsynth import TrainOnSynthetic
    from skdpsynth.pipeline import SynthesisPipeline

    public = {"color": ["red", "green", "blue"], "size": ["S", "M", "L"], "label": ["no", "yes"]}
    rng = np.random.default_rng(0)
    n = 3000
    color = rng.choice(public["color"], n)
    X = pd.DataFrame({"color": color, "size": rng.choice(public["size"], n)})
    y = pd.Series(np.where(color == "red", "yes", "no"), name="label")

    def pipeline():
        return SynthesisPipeline([("enc", DPCategoricalEncoder(categories=public)),
                                  ("synth", MSTSynthesizer(epsilon=0.05, random_state=0))])

    real = X.assign(label=y)
    synthetic = pipeline().fit(real).sample(5000, random_state=0)
    for col, cats in public.items():
        assert synthetic[col].isin(cats).all(), synthetic[col].value_counts(dropna=False)
        assert synthetic[col].dtype == real[col].dtype

    model = TrainOnSynthetic(pipeline(), make_pipeline(OneHotEncoder(), LogisticRegression()),
                             n_samples=3000, random_state=0).fit(X, y)
    assert set(model.classes_) <= {"no", "yes"}
    assert set(model.predict(X)) <= {"no", "yes"}


def test_inverse_transform_takes_and_ignores_random_state():
    X = mixed_frame()
    enc = DPCategoricalEncoder(PUBLIC).fit(X)
    Xt = enc.transform(X)
    for seed in (None, 0, np.random.default_rng(1)):
        pd.testing.assert_frame_equal(enc.inverse_transform(Xt, random_state=seed), X)


def test_missing_auto_releases_the_missing_category_only_when_frequent():
    """missing='auto' with DP discovery: the missing values' count is released against ln(50)/eps."""
    frequent = pd.DataFrame({"c": ["a"] * 500 + [None] * 300})
    rare = pd.DataFrame({"c": ["a"] * 500 + [None] * 2})
    enc = DPCategoricalEncoder(epsilon=1.0, delta=1e-6, missing="auto", random_state=0).fit(frequent)
    assert enc.missing_["c"] == "category" and enc.categories_["c"][-1] == "__missing__"
    assert enc.transform(frequent)["c"].iloc[-1] == "__missing__"
    enc = DPCategoricalEncoder(epsilon=1.0, delta=1e-6, missing="auto", random_state=0).fit(rare)
    # Below the threshold the category is tentative: in the list, read back as "other" until confirmed.
    assert enc.missing_["c"] == "tentative" and enc.categories_["c"][-2:] == ["__other__", "__missing__"]
    assert enc.tentative_missing() == {"c": "__missing__"}
    coded = enc.transform(rare)
    assert coded["c"].iloc[-1] == "__missing__"
    assert enc.inverse_transform(coded)["c"].tolist() == ["a"] * 500 + ["__other__"] * 2
    enc.confirm_missing(["c"])
    assert enc.missing_["c"] == "category" and enc.tentative_missing() == {}
    assert enc.inverse_transform(coded)["c"].iloc[-2:].isna().all()
    with pytest.raises(ValueError, match="no tentative missing category"):
        enc.confirm_missing(["c"])
    # Public categories: nothing is released, so missing values are refused.
    public = DPCategoricalEncoder(categories={"c": ["a"]}, missing="auto").fit(frequent.iloc[:500])
    assert public.missing_["c"] == "error"
    with pytest.raises(ValueError, match="missing='other'.*handle_unknown='other'"):
        DPCategoricalEncoder(categories={"c": ["a"]}, missing="other").fit(frequent.iloc[:500])


def test_a_tentative_missing_category_does_not_depend_on_the_data_having_missing_values():
    """Below its threshold the missing category is tentative whether or not the column has missing values: the
    domain (categories_) and missing_ of neighbours differing by one missing value are the same (same noise)."""
    without = pd.DataFrame({"c": ["a"] * 500 + ["b"] * 500})
    with_one = pd.DataFrame({"c": ["a"] * 500 + ["b"] * 499 + [None]})
    fitted = [DPCategoricalEncoder(epsilon=1.0, delta=1e-6, missing="auto", random_state=0).fit(frame)
              for frame in (without, with_one)]
    assert fitted[0].categories_ == fitted[1].categories_ == {"c": ["a", "b", "__other__", "__missing__"]}
    assert fitted[0].missing_ == fitted[1].missing_ == {"c": "tentative"}
