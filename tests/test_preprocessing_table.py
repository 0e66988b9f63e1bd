"""Tests of TableDiscretizer: schema routing, budget split, warnings, JSON, round trips, hostile input."""
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdpsynth.privacy import ReproducibleNoiseWarning
from skdpsynth import MSTSynthesizer
from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer
from skdpsynth.preprocessing.table import (
    TableDiscretizer,
    normalize_schema,
    schema_from_json,
    schema_to_json,
)
from skdpsynth.privacy import PrivacyLeakWarning

COLORS = ["red", "green", "blue"]
SIZES = ["S", "M", "L"]


def mixed_frame(n=2000, seed=0):
    """int, float, str and bool columns (no missing values)."""
    rng = np.random.default_rng(seed)
    color = rng.choice(COLORS, n, p=[0.5, 0.3, 0.2])
    age = np.where(color == "red", rng.integers(18, 40, n), rng.integers(40, 90, n)).astype(np.int64)
    income = rng.normal(50.0, 15.0, n) + (color == "blue") * 20
    return pd.DataFrame({
        "age": age,
        "color": color,
        "income": income,
        "size": rng.choice(SIZES, n),
        "member": rng.choice([True, False], n),
    })


def public_schema():
    return {
        "age": {"type": "numeric", "bounds": [17, 90], "n_bins": 6},
        "color": COLORS,
        "income": {"type": "numeric", "bounds": [-20, 140], "n_bins": 8},
        "size": {"type": "categorical", "categories": SIZES},
        "member": [False, True],
    }


@pytest.fixture(scope="module")
def X():
    return mixed_frame()


def _fit_quietly(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning (PrivacyLeakWarning above all) fails the test
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # seeded on purpose
        return est.fit(X)


# -- full public schema ------------------------------------------------------------------------------
def test_full_public_schema_is_free_exact_and_round_trips(X):
    table = _fit_quietly(TableDiscretizer(public_schema(), random_state=0), X)
    assert len(table.privacy_ledger_) == 0
    assert table.numeric_columns_ == ["age", "income"]
    assert table.categorical_columns_ == ["color", "size", "member"]
    assert isinstance(table.discretizer_, DPKBinsDiscretizer) and isinstance(table.encoder_, DPCategoricalEncoder)
    assert list(table.feature_names_in_) == list(X.columns) and table.n_features_in_ == 5

    Xt = table.transform(X)
    assert list(Xt.columns) == list(X.columns)
    assert all(isinstance(Xt[c].dtype, pd.CategoricalDtype) for c in Xt.columns)
    # Exact public categories: no extra labels for public lists.
    assert list(Xt["color"].cat.categories) == COLORS
    assert list(Xt["size"].cat.categories) == SIZES
    assert list(Xt["member"].cat.categories) == [False, True]
    age_bins = Xt["age"].cat.categories
    assert isinstance(age_bins, pd.IntervalIndex) and len(age_bins) == 6
    assert age_bins[0].left == 17 and age_bins[-1].right == 90
    assert np.allclose(pd.IntervalIndex(Xt["income"].cat.categories).length, 20.0)

    for method in ("uniform", "midpoint"):
        back = table.inverse_transform(Xt, method=method)
        assert list(back.columns) == list(X.columns)
        assert (back.dtypes == X.dtypes).all()
        for c in ("color", "size", "member"):
            assert back[c].tolist() == X[c].tolist()
        # Numeric values land in the bins they came from.
        again = table.transform(back)
        for c in ("age", "income"):
            assert (again[c].cat.codes == Xt[c].cat.codes).all()
    assert list(table.get_feature_names_out()) == list(X.columns)


def test_schema_is_complete_after_fit_and_reusable_for_free(X):
    table = TableDiscretizer({"age": {"type": "numeric", "bounds": [17, 90], "n_bins": 6}}, n_bins=5,
                             strategy="uniform", epsilon=1.0, delta=1e-6, random_state=0)
    Xt = _fit_quietly(table, X).transform(X)
    schema = table.schema_
    assert list(schema) == list(X.columns)
    assert schema["age"] == {"type": "numeric", "bounds": [17.0, 90.0], "n_bins": 6, "strategy": "uniform"}
    assert schema["income"]["n_bins"] == 5 and schema["income"]["bounds"] == list(table.discretizer_.bounds_["income"])
    # DP-discovered: an "other" category for unreleased values; missing values (none here) are a candidate of
    # the release, and unreleased their category is tentative, read back as "other" (what the schema says).
    assert schema["color"] == {"type": "categorical", "categories": sorted(COLORS),
                               "handle_unknown": "other", "missing": "other"}
    tentative = table.tentative_missing()
    assert tentative["color"] == "__missing__"
    # Reusing the DP-released schema is post-processing: no budget, no warning, the same output (without the
    # tentative categories, which only a fit's own release adds).
    reused = _fit_quietly(TableDiscretizer(schema, random_state=0), X)
    assert len(reused.privacy_ledger_) == 0
    for c, label in tentative.items():
        kept = [v for v in Xt[c].cat.categories if v != label]
        Xt[c] = Xt[c].cat.set_categories(pd.Index(kept, dtype=object))  # keeps the order (remove may sort)
    pd.testing.assert_frame_equal(reused.transform(X), Xt)
    assert reused.schema_ == schema


def test_integer_column_with_few_values_is_numeric_unless_declared(X):
    frame = X.assign(rating=np.tile([1, 2, 3, 4], len(X) // 4))
    with pytest.warns(PrivacyLeakWarning):
        table = TableDiscretizer(public_schema(), n_bins=3).fit(frame)
    assert "rating" in table.numeric_columns_
    declared = _fit_quietly(TableDiscretizer({**public_schema(), "rating": [1, 2, 3, 4]}), frame)
    assert "rating" in declared.categorical_columns_
    assert list(declared.transform(frame)["rating"].cat.categories) == [1, 2, 3, 4]
    assert declared.inverse_transform(declared.transform(frame))["rating"].dtype == np.int64


def test_other_and_missing_options_in_the_schema():
    X = pd.DataFrame({"c": ["a", "b", None, "z"], "x": [1.0, 2.0, 3.0, 4.0]})
    schema = {"c": {"type": "categorical", "categories": ["a", "b"], "handle_unknown": "other",
                    "missing": "category"},
              "x": {"type": "numeric", "bounds": [0, 5], "n_bins": 5}}
    table = _fit_quietly(TableDiscretizer(schema, output="code"), X)
    Xt = table.transform(X)
    assert list(Xt["c"].cat.categories) == ["a", "b", "__other__", "__missing__"]
    assert Xt["c"].tolist() == ["a", "b", "__missing__", "__other__"]
    back = table.inverse_transform(Xt)
    assert back["c"].tolist()[:2] == ["a", "b"] and back["c"].tolist()[3] == "__other__"
    assert pd.isna(back["c"].iloc[2])
    # Exact public categories (the default) reject unseen and missing values, pointing to the options.
    with pytest.raises(ValueError, match="[Cc]olumn 'c' has missing values.*'missing': 'category'"):
        TableDiscretizer({"c": ["a", "b", "z"], "x": schema["x"]}).fit(X)
    strict = _fit_quietly(TableDiscretizer({"c": ["a", "b"], "x": schema["x"]}), X.iloc[:2])
    with pytest.raises(ValueError, match="[Cc]olumn 'c' has missing values.*'missing': 'category'"):
        strict.transform(X.iloc[[0, 2]])
    with pytest.raises(ValueError, match="Column 'c' has values outside its categories.*'handle_unknown'"):
        strict.transform(X.iloc[[0, 3]])


def test_mixed_strategies_and_encoder_groups(X):
    schema = {"age": {"type": "numeric", "bounds": [17, 90], "strategy": "quantile", "n_bins": 4},
              "income": {"type": "numeric", "bounds": [-20, 140]},
              "color": COLORS}
    table = TableDiscretizer(schema, epsilon=2.0, delta=1e-6, numeric_epsilon_fraction=0.25,
                             random_state=0)
    _fit_quietly(table, X)
    assert set(table.discretizers_) == {"uniform", "quantile"} and table.discretizer_ is None
    assert isinstance(table.encoder_, DPCategoricalEncoder)
    ledger = table.privacy_ledger_
    assert ledger.total_epsilon() == pytest.approx(0.5, abs=1e-12)  # 3 quantiles of `age`
    approx = [e for e in ledger if e.accounting == "approx"]
    assert [e.description for e in approx] == ["categories of column 'size'", "categories of column 'member'"]
    assert math.fsum(e.epsilon for e in approx) == pytest.approx(1.5, abs=1e-12)
    assert math.fsum(e.delta for e in approx) == pytest.approx(1e-6, abs=1e-18)
    Xt = table.transform(X)
    assert list(Xt.columns) == list(X.columns)
    back = table.inverse_transform(Xt)
    assert list(back.columns) == list(X.columns) and (back.dtypes == X.dtypes).all()


# -- JSON ------------------------------------------------------------------------------------------
def test_json_round_trip_and_from_json(X, tmp_path):
    table = _fit_quietly(TableDiscretizer(public_schema(), output="code", random_state=0), X)
    text = table.to_json()
    assert json.loads(text)["age"]["bounds"] == [17.0, 90.0]  # bounds as lists
    assert schema_from_json(text) == table.schema_
    path = tmp_path / "schema.json"
    table.to_json(path)
    assert schema_from_json(path) == table.schema_
    assert schema_from_json(str(path)) == table.schema_
    for source in (path, text):
        loaded = _fit_quietly(TableDiscretizer.from_json(source, output="code", random_state=0), X)
        assert len(loaded.privacy_ledger_) == 0
        pd.testing.assert_frame_equal(loaded.transform(X), table.transform(X))
    # Unfitted: the (canonical) schema parameter.
    assert schema_from_json(TableDiscretizer(public_schema()).to_json()) == normalize_schema(public_schema())
    assert schema_to_json({"n": {"type": "numeric", "bounds": (np.int64(0), np.float64(1.5))}}, indent=None) == \
        '{"n": {"type": "numeric", "bounds": [0, 1.5]}}'


def test_json_hostile():
    with pytest.raises(ValueError, match="duplicate keys"):
        schema_from_json('{"a": ["x"], "a": ["y"]}')
    with pytest.raises(ValueError, match="object"):
        schema_from_json('["a", "b"]')
    with pytest.raises(TypeError, match="dict spec"):
        schema_from_json('{"a": 1}')
    with pytest.raises(ValueError, match="string column names"):
        schema_to_json({0: ["x"]})
    with pytest.raises(TypeError, match="JSON"):
        schema_to_json({"t": [pd.Timestamp("2020-01-01")]})
    with pytest.raises(TypeError, match="schema= too"):
        TableDiscretizer.from_json('{"a": ["x"]}', schema={})


# -- budget ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fraction", [0.5, 0.3])
def test_partial_schema_budget_split(X, fraction):
    schema = {"age": {"type": "numeric", "bounds": [17, 90]}, "color": COLORS}
    eps, delta = 1.0, 1e-6
    table = TableDiscretizer(schema, epsilon=eps, delta=delta, numeric_epsilon_fraction=fraction,
                             strategy="uniform", random_state=0)
    _fit_quietly(table, X)  # no warning
    ledger = table.privacy_ledger_
    pure = [e for e in ledger if e.accounting == "pure"]
    approx = [e for e in ledger if e.accounting == "approx"]
    # Numeric: DP bounds of `income` (pure ε); categorical: discovery of `size` and `member` ((ε, δ)).
    assert [e.description.split("'")[1] for e in pure] == ["income"]
    assert sorted(e.description.split("'")[1] for e in approx) == ["member", "size"]
    assert ledger.total_epsilon() == pytest.approx(fraction * eps, abs=1e-12)
    assert math.fsum(e.epsilon for e in approx) == pytest.approx((1 - fraction) * eps, abs=1e-12)
    assert math.fsum(e.delta for e in ledger) == pytest.approx(delta, abs=1e-18)
    assert math.fsum(e.epsilon for e in ledger) <= eps * (1 + 1e-12)
    assert ledger.epsilon(delta) <= eps * (1 + 1e-12)
    assert all(e.party is None for e in ledger)
    # Ledger = union of the sub-steps' ledgers.
    assert len(ledger) == len(table.discretizer_.privacy_ledger_) + len(table.encoder_.privacy_ledger_)
    assert table.schema_["color"]["categories"] == COLORS
    assert set(table.schema_["size"]["categories"]) <= set(SIZES)


def test_only_one_substep_needing_budget_gets_all_of_it(X):
    numeric_only = TableDiscretizer({"color": COLORS, "size": SIZES, "member": [False, True],
                                     "age": {"type": "numeric", "bounds": [17, 90]}},
                                    epsilon=0.7, numeric_epsilon_fraction=0.2, random_state=0)
    _fit_quietly(numeric_only, X)  # no delta needed: the numeric mechanisms are pure ε
    assert numeric_only.privacy_ledger_.total_epsilon() == pytest.approx(0.7, abs=1e-12)
    categorical_only = TableDiscretizer({"age": {"type": "numeric", "bounds": [17, 90]},
                                         "income": {"type": "numeric", "bounds": [-20, 140]}},
                                        epsilon=0.7, delta=1e-7, numeric_epsilon_fraction=0.2, random_state=0)
    _fit_quietly(categorical_only, X)
    entries = list(categorical_only.privacy_ledger_)
    assert all(e.accounting == "approx" for e in entries) and len(entries) == 3
    assert math.fsum(e.epsilon for e in entries) == pytest.approx(0.7, abs=1e-12)
    assert math.fsum(e.delta for e in entries) == pytest.approx(1e-7, abs=1e-18)
    # Nothing to release: nothing spent although a budget is given.
    free = _fit_quietly(TableDiscretizer(public_schema(), epsilon=1.0, delta=1e-6), X)
    assert len(free.privacy_ledger_) == 0


def test_seeded_fit_is_reproducible(X):
    kwargs = dict(epsilon=1.0, delta=1e-6, random_state=3)
    a = _fit_quietly(TableDiscretizer(**kwargs), X)
    b = _fit_quietly(TableDiscretizer(**kwargs), X)
    assert a.schema_ == b.schema_
    pd.testing.assert_frame_equal(a.inverse_transform(a.transform(X)), b.inverse_transform(b.transform(X)))


# -- leaks -----------------------------------------------------------------------------------------
def test_no_schema_no_epsilon_warns_once_naming_inferred_columns(X):
    schema = {"age": {"type": "numeric", "bounds": [17, 90]}, "color": COLORS}
    with pytest.warns(PrivacyLeakWarning) as record:
        table = TableDiscretizer(schema).fit(X)
    leaks = [w for w in record if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1
    message = str(leaks[0].message)
    assert "numeric columns ['income']" in message
    assert "categorical columns ['size', 'member']" in message
    assert "'age'" not in message and "'color'" not in message
    assert leaks[0].filename == __file__  # attributed to the caller of fit
    # Nothing spent, and the ledger records the leaks (so it states no DP guarantee).
    ledger = table.privacy_ledger_
    assert ledger.total_epsilon() == 0 and not ledger.is_private
    assert sorted(c for e in ledger.leaks for c in e.details["columns"]) == ["income", "member", "size"]
    assert table.schema_["income"]["bounds"] == [float(X["income"].min()), float(X["income"].max())]

    with pytest.warns(PrivacyLeakWarning) as record:
        TableDiscretizer().fit(X)
    message = str(record[0].message)
    assert "['age', 'income']" in message and "['color', 'size', 'member']" in message


# -- integration -----------------------------------------------------------------------------------
def test_mst_on_transformed_table_and_back(X):
    frame = X[["age", "income", "color", "size"]]
    schema = {"age": {"type": "numeric", "bounds": [17, 90], "n_bins": 6},
              "income": {"type": "numeric", "bounds": [-20, 140], "n_bins": 8},
              "color": COLORS}  # `size`: DP discovery
    table = TableDiscretizer(schema, epsilon=0.5, delta=1e-6, random_state=0)
    _fit_quietly(table, frame)
    Xt = table.transform(frame)
    synth = _fit_quietly(MSTSynthesizer(epsilon=1, random_state=0), Xt)
    sample = synth.sample(500, random_state=1)
    back = table.inverse_transform(sample)
    assert list(back.columns) == list(frame.columns)
    assert (back.dtypes == frame.dtypes).all()
    assert len(back) == 500
    assert set(back["color"]) <= set(COLORS)  # public categories are exact
    assert back["age"].between(17, 90).all() and back["income"].between(-20, 140).all()
    assert set(back["size"].dropna()) <= set(SIZES) | {"__other__"}


# -- hostile input ---------------------------------------------------------------------------------
def test_hostile_frames(X):
    with pytest.raises(ValueError, match=r"at least one column: got 0 feature\(s\)"):
        TableDiscretizer().fit(pd.DataFrame(index=range(3)))
    dup = pd.concat([X[["age"]], X[["age"]]], axis=1)
    with pytest.raises(ValueError, match="duplicate column names"):
        TableDiscretizer({"age": {"type": "numeric", "bounds": [0, 1]}}).fit(dup)
    with pytest.raises(ValueError, match=r"not in X: \['zip'\]"):
        TableDiscretizer({**public_schema(), "zip": ["1"]}).fit(X)
    with pytest.raises(TypeError, match="declared numeric"):
        TableDiscretizer({**public_schema(), "color": {"type": "numeric", "bounds": [0, 1]}}).fit(X)


def test_hostile_schemas(X):
    bad = [
        ({"age": {"type": "ordinal"}}, ValueError, "unknown type"),
        ({"age": {"bounds": [0, 1]}}, ValueError, "unknown type"),
        ({"age": (17, 90)}, ValueError, "ambiguous"),
        ({"age": {"type": "numeric", "bounds": [90, 17]}}, ValueError, "lower < upper"),
        ({"age": {"type": "numeric", "bounds": [0, float("inf")]}}, ValueError, "finite"),
        ({"age": {"type": "numeric", "bins": 3}}, ValueError, "unknown keys"),
        ({"age": {"type": "numeric", "n_bins": 0}}, ValueError, "n_bins"),
        ({"age": {"type": "numeric", "strategy": "kmeans"}}, ValueError, "strategy"),
        ({"color": []}, ValueError, "empty"),
        ({"color": ["red", "red"]}, ValueError, "duplicate"),
        ({"color": ["red", None]}, ValueError, "missing value"),
        ({"color": {"type": "categorical", "missing": "drop"}}, ValueError, "missing"),
        ({"color": 3}, TypeError, "dict spec"),
        (["age"], TypeError, "schema must be a dict"),
    ]
    for schema, error, match in bad:
        with pytest.raises(error, match=match):
            TableDiscretizer(schema).fit(X)


def test_hostile_params(X):
    schema = {"age": {"type": "numeric", "bounds": [17, 90]}, "color": COLORS}
    with pytest.raises(ValueError, match="delta was given without epsilon"):
        TableDiscretizer(public_schema(), delta=1e-6).fit(X)
    with pytest.raises(ValueError, match=r"needs delta.*'size', 'member'"):
        TableDiscretizer(schema, epsilon=1.0).fit(X)
    for kwargs, match in [({"epsilon": 0}, "epsilon"), ({"epsilon": 1, "delta": 1.0}, "delta"),
                          ({"numeric_epsilon_fraction": 1.0}, "numeric_epsilon_fraction"),
                          ({"n_bins": 0}, "n_bins"), ({"strategy": "kmeans"}, "strategy"),
                          ({"output": "onehot"}, "output")]:
        with pytest.raises(ValueError, match=match):
            TableDiscretizer(public_schema(), **kwargs).fit(X)


def test_missing_values_in_numeric_columns_are_rejected(X):
    holes = X.copy()
    holes.loc[3, "income"] = np.nan
    # Public bounds (free equal-width bins): no bin for missing values unless the spec asks for one.
    with pytest.raises(ValueError, match="numeric column 'income' has missing values.*'missing': 'category'"):
        TableDiscretizer(public_schema()).fit(holes)
    table = _fit_quietly(TableDiscretizer(public_schema()), X)
    with pytest.raises(ValueError, match="'income' has missing values"):
        table.transform(holes)
    # Declared categorical with a missing category, the column is accepted (no rows dropped).
    coarse = holes.assign(income=holes["income"].round(-1))
    schema = {**public_schema(), "income": {"type": "categorical", "missing": "category"}}
    with pytest.warns(PrivacyLeakWarning, match="income"):
        out = TableDiscretizer(schema).fit_transform(coarse)
    assert len(out) == len(coarse) and out["income"].iloc[3] == "__missing__"
    # Or numeric with a missing-value bin: missing values come back missing.
    schema = {**public_schema(), "income": {"type": "numeric", "bounds": [-20, 140], "missing": "category"}}
    table = _fit_quietly(TableDiscretizer(schema, random_state=0), holes)
    assert table.schema_["income"]["missing"] == "category"
    back = table.inverse_transform(table.transform(holes))
    assert back["income"].isna().tolist() == holes["income"].isna().tolist()


def test_adaptive_float_columns_get_a_missing_bin_by_default(X):
    """An adaptive column whose dtype can hold missing values gets a bin for them (decided from the dtype, so
    the domain is public); missing values come back missing, the others as numbers."""
    holes = X.copy()
    holes.loc[::7, "income"] = np.nan
    table = _fit_quietly(TableDiscretizer({"color": COLORS, "size": SIZES, "member": [False, True]},
                                          epsilon=2.0, random_state=0), holes)
    assert table.schema_["income"]["strategy"] == "adaptive" and table.schema_["income"]["missing"] == "category"
    assert "missing" not in table.schema_["age"]  # an int64 column cannot hold missing values: no bin
    codes = table.transform(holes)
    assert codes["income"].cat.categories[-1] == "__missing__"
    back = table.inverse_transform(codes)
    assert back["income"].isna().tolist() == holes["income"].isna().tolist()

def test_transform_and_inverse_check_columns(X):
    table = _fit_quietly(TableDiscretizer(public_schema()), X)
    with pytest.raises(ValueError, match=r"missing \['size'\]"):
        table.transform(X.drop(columns="size"))
    with pytest.raises(ValueError, match=r"unexpected \['extra'\]"):
        table.transform(X.assign(extra=1))
    # Any column order in, the fit order out.
    shuffled = X[list(reversed(X.columns))]
    pd.testing.assert_frame_equal(table.transform(shuffled), table.transform(X))
    with pytest.raises(ValueError, match="method"):
        table.inverse_transform(table.transform(X), method="median")
    with pytest.raises(ValueError, match="missing"):
        table.inverse_transform(table.transform(X).drop(columns="age"))


def test_sklearn_surface():
    schema = public_schema()
    table = TableDiscretizer(schema, n_bins=4, epsilon=0.5)
    assert table.get_params()["schema"] is schema  # stored as given, validated in fit
    TableDiscretizer({"age": {"type": "bogus"}})  # no error before fit
    cloned = clone(table)
    assert cloned.get_params()["schema"] == schema and cloned.n_bins == 4
    with pytest.raises(Exception, match="not fitted"):
        table.transform(mixed_frame(10))


# -- public edges in the schema ------------------------------------------------------------------------
def test_schema_edges_are_free_round_trip_and_reappear_in_the_fitted_schema():
    X = pd.DataFrame({"gain": np.r_[np.zeros(95, dtype=np.int64), np.arange(1, 6) * 3000],
                      "city": ["Oslo", "Rome"] * 50})
    schema = {"gain": {"type": "numeric", "edges": [0, 1, 5000, 20000]}, "city": ["Oslo", "Rome"]}
    table = TableDiscretizer(schema, random_state=0).fit(X)
    assert len(table.privacy_ledger_) == 0
    assert table.schema_["gain"] == {"type": "numeric", "edges": [0.0, 1.0, 5000.0, 20000.0]}
    assert len(table.transform(X)["gain"].cat.categories) == 3
    back = table.inverse_transform(table.transform(X))
    assert ((back["gain"] == 0) == (X["gain"] == 0)).all() and back["gain"].dtype == np.int64
    # The fitted schema is a public schema: refitting with it gives the same bins.
    again = TableDiscretizer(schema_from_json(table.to_json()), random_state=0).fit(X)
    assert again.schema_ == table.schema_


@pytest.mark.parametrize("spec, match", [
    ({"type": "numeric", "edges": [1]}, "at least two"),
    ({"type": "numeric", "edges": [0, 2, 1]}, "strictly increasing"),
    ({"type": "numeric", "edges": "0 1"}, "list of numbers"),
    ({"type": "numeric", "edges": [0, 1, 2], "bounds": [0, 5]}, "contradicts"),
    ({"type": "numeric", "edges": [0, 1, 2], "n_bins": 4}, "contradicts"),
])
def test_schema_edges_validation(spec, match):
    with pytest.raises(ValueError, match=match):
        normalize_schema({"gain": spec})


# -- issue 14: defaults, empty tables, inf, reproducible inverse ------------------------------------
def test_categorical_defaults_are_those_of_the_encoder(X):
    """Public and data-read categories are exact; DP-discovered ones get "__other__", and their missing values
    are a candidate of the release ("auto"): without missing values in the data they resolve to "other"."""
    frame = X[["color", "size", "member"]]
    dp = _fit_quietly(TableDiscretizer({"color": COLORS}, epsilon=1.0, delta=1e-6, random_state=0), frame)
    assert {c: (s["handle_unknown"], s["missing"]) for c, s in dp.schema_.items()} == {
        "color": ("error", "error"), "size": ("other", "other"), "member": ("other", "other")}
    # The missing values' category is tentative (see test_preprocessing_encoder.py): in the domain, read as other.
    assert list(dp.transform(frame)["size"].cat.categories) == sorted(SIZES) + ["__other__", "__missing__"]
    with pytest.warns(PrivacyLeakWarning):
        read = TableDiscretizer({"color": COLORS}).fit(frame)
    assert read.schema_["size"] == {"type": "categorical", "categories": sorted(SIZES), "handle_unknown": "error",
                                    "missing": "error"}
    assert list(read.transform(frame)["size"].cat.categories) == sorted(SIZES)
    encoder = DPCategoricalEncoder({"color": COLORS}, epsilon=1.0, delta=1e-6, missing={"size": "auto", "member": "auto"},
                                   random_state=0).fit(frame)
    # The schema writes a tentative missing category as what it reads back as, "other".
    assert {c: (encoder.handle_unknown_[c], encoder.missing_[c].replace("tentative", "other")) for c in frame} == {
        c: (s["handle_unknown"], s["missing"]) for c, s in dp.schema_.items()}
    assert encoder.tentative_missing() == dp.tentative_missing() == {"size": "__missing__", "member": "__missing__"}


def test_zero_rows_are_accepted_with_public_metadata(X):
    empty = X.iloc[:0]
    table = _fit_quietly(TableDiscretizer(public_schema(), random_state=0), empty)
    assert len(table.privacy_ledger_) == 0
    out = table.transform(empty)
    assert out.shape == (0, 5) and list(out["color"].cat.categories) == COLORS
    back = table.inverse_transform(out)
    assert back.shape == (0, 5) and list(back.columns) == list(X.columns)
    # DP category discovery runs on no data and releases nothing: only the "other" category and the tentative
    # missing one are left.
    dp = _fit_quietly(TableDiscretizer({k: v for k, v in public_schema().items() if k != "size"}, epsilon=1.0,
                                       delta=1e-6, random_state=0), empty)
    assert list(dp.transform(empty)["size"].cat.categories) == ["__other__", "__missing__"]


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_values_raise_naming_the_column(X, bad):
    holes = X.copy()
    holes.loc[5, "income"] = bad
    with pytest.raises(ValueError, match="numeric column 'income' has infinite values"):
        TableDiscretizer(public_schema()).fit(holes)
    table = _fit_quietly(TableDiscretizer(public_schema()), X)
    with pytest.raises(ValueError, match="numeric column 'income' has infinite values"):
        table.transform(holes)


def test_inverse_transform_random_state_makes_the_draws_reproducible(X):
    schema = {**public_schema(), "age": {"type": "numeric", "bounds": [17, 90], "n_bins": 4,
                                         "strategy": "quantile"}}
    table = _fit_quietly(TableDiscretizer(schema, epsilon=1.0, random_state=0), X)
    assert len(table.discretizers_) == 2  # one stream per strategy: the seed must reach both
    Xt = table.transform(X)
    first = table.inverse_transform(Xt, random_state=7)
    pd.testing.assert_frame_equal(table.inverse_transform(Xt, random_state=7), first)
    pd.testing.assert_frame_equal(table.inverse_transform(Xt, "uniform", random_state=np.random.default_rng(7)),
                                  first)
    other = table.inverse_transform(Xt, random_state=8)
    assert not other["age"].equals(first["age"]) and not other["income"].equals(first["income"])
    # None: the fitted streams, fresh at each call.
    assert not table.inverse_transform(Xt)["income"].equals(table.inverse_transform(Xt)["income"])
