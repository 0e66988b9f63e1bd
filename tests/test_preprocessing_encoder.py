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
        assert enc.categories_[col] == cats + [OTHER, MISSING]
    assert len(enc.privacy_ledger_) == 0
    Xt = enc.transform(X)
    assert list(Xt.columns) == list(X.columns)
    assert Xt.index.equals(X.index)
    for col in X.columns:
        assert isinstance(Xt[col].dtype, pd.CategoricalDtype)
        assert list(Xt[col].cat.categories) == enc.categories_[col]


def test_public_category_order_is_kept():
    X = pd.DataFrame({"s": ["b", "a"]})
    enc = DPCategoricalEncoder(categories={"s": ["b", "z", "a"]}).fit(X)
    assert enc.categories_["s"] == ["b", "z", "a", OTHER, MISSING]


def test_other_and_missing_only_when_enabled():
    X = pd.DataFrame({"s": ["a", "b"]})
    enc = DPCategoricalEncoder({"s": ["a", "b"]}, handle_unknown="error", missing="error").fit(X)
    assert enc.categories_["s"] == ["a", "b"]
    enc = DPCategoricalEncoder({"s": ["a", "b"]}, other_category="OTH", missing="error").fit(X)
    assert enc.categories_["s"] == ["a", "b", "OTH"]


def test_unseen_to_other_and_missing_to_missing():
    enc = DPCategoricalEncoder(categories={"s": ["a", "b"], "i": [1, 2]})
    enc.fit(pd.DataFrame({"s": ["a", "b"], "i": [1, 2]}))
    X = pd.DataFrame({"s": ["a", "zzz", None, "b"], "i": [2.0, 7.0, np.nan, 1.0]})
    Xt = enc.transform(X)
    assert Xt["s"].tolist() == ["a", OTHER, MISSING, "b"]
    assert Xt["i"].tolist() == [2, OTHER, MISSING, 1]


def test_handle_unknown_error_names_column_and_values():
    enc = DPCategoricalEncoder(categories={"s": ["a", "b"]}, handle_unknown="error")
    enc.fit(pd.DataFrame({"s": ["a", "b"]}))
    with pytest.raises(ValueError, match=r"Column 's'.*'zzz'"):
        enc.transform(pd.DataFrame({"s": ["a", "zzz"]}))


def test_missing_error():
    enc = DPCategoricalEncoder(categories={"s": ["a", "b"]}, missing="error")
    enc.fit(pd.DataFrame({"s": ["a", "b"]}))
    for bad in (None, np.nan, pd.NA):
        with pytest.raises(ValueError, match=r"Column 's' has 1 missing"):
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
    assert enc.categories_["i"] == [10, 20, 30, OTHER, MISSING]
    assert enc.categories_["b"] == [False, True, OTHER, MISSING]
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
    released = len(enc.categories_["u"]) - 2
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
    assert enc.categories_["s"] == ["apple", "fig", "pear", OTHER, MISSING]
    assert enc.categories_["i"] == [1, 2, 3, OTHER, MISSING]
    assert enc.categories_["r"] == ["common", OTHER, MISSING]
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
    assert enc.categories_["s"] == ["b", OTHER, MISSING]


def test_public_columns_cost_nothing_with_epsilon():
    X = mixed_frame()
    enc = DPCategoricalEncoder(PUBLIC, epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    assert len(enc.privacy_ledger_) == 0
    assert enc.thresholds_ == {}
    # delta is only required when some column needs discovery
    DPCategoricalEncoder(PUBLIC, epsilon=1.0).fit(X)


def test_all_missing_and_single_value_columns():
    X = pd.DataFrame({"m": [None] * 200, "one": ["k"] * 200})
    enc = DPCategoricalEncoder(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    assert enc.categories_["m"] == [OTHER, MISSING]
    assert enc.categories_["one"] == ["k", OTHER, MISSING]
    assert len(enc.privacy_ledger_) == 2  # the split depends on which columns are public, not on data
    assert enc.transform(X)["m"].unique().tolist() == [MISSING]
    with pytest.raises(ValueError, match="no categories"):
        DPCategoricalEncoder(epsilon=1.0, delta=1e-6, handle_unknown="error", missing="error",
                             random_state=0).fit(X[["m"]])


# -- hostile input ----------------------------------------------------------------
@pytest.mark.parametrize("kwargs, match", [
    ({"delta": 1e-6}, "delta was given without epsilon"),
    ({"epsilon": 0.0, "delta": 1e-6}, "epsilon must be > 0"),
    ({"epsilon": -1.0, "delta": 1e-6}, "epsilon must be > 0"),
    ({"epsilon": float("inf"), "delta": 1e-6}, "epsilon must be a finite"),
    ({"epsilon": 1.0, "delta": 0.0}, r"delta must be in \(0"),
    ({"epsilon": 1.0, "delta": 1.0}, r"delta must be in \(0"),
    ({"epsilon": 1.0}, "needs delta > 0"),
    ({"threshold": 5.0}, "threshold only applies"),
    ({"handle_unknown": "ignore"}, "handle_unknown must be"),
    ({"missing": "drop"}, "missing must be"),
    ({"other_category": "z", "missing_category": "z"}, "must differ"),
    ({"categories": {"s": ["a", "a", "b"]}}, "duplicate values"),
    ({"categories": {"s": []}}, "is empty"),
    ({"categories": {"s": "ab"}}, "must be a list"),
    ({"categories": {"s": ["a", None]}}, "missing value"),
    ({"categories": {"nope": ["a"]}}, "not in X"),
    ({"categories": {"s": ["a", "__other__"]}}, "other_category='__other__' is one of"),
    ({"categories": {"s": ["a", "NA"]}, "missing_category": "NA"}, "missing_category='NA' is one of"),
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
    with pytest.raises(ValueError, match="0 rows"):
        DPCategoricalEncoder({"s": ["a"]}).fit(pd.DataFrame({"s": pd.Series([], dtype=object)}))
    with pytest.raises(ValueError, match="no columns"):
        DPCategoricalEncoder().fit(pd.DataFrame())
    with pytest.raises(ValueError, match="2-D"):
        DPCategoricalEncoder().fit(np.array(["a", "b"]))


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
                                "c": ["x"]}).fit(
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
                               epsilon=0.5, delta=1e-7, random_state=0)
    Xt = enc.fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        mst = MSTSynthesizer(epsilon=1, random_state=0).fit(Xt)
    sample = mst.sample(500, random_state=0)
    back = enc.inverse_transform(sample)
    assert list(back.columns) == list(X.columns) and len(back) == 500
    present = back["city"].dropna()
    assert present.isin(["oslo", "rome", "lima", OTHER]).all()
    ages = back["age"]
    assert ages.dropna().isin([20, 30, 40, 50, OTHER]).all()
    if not (ages.isna().any() or (ages == OTHER).any()):
        assert ages.dtype == np.int64


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
