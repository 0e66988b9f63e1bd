"""The generated mixed table, and the preprocessing benchmark's checks on small tables (issue 42).

Shares are tested against their generating probabilities with 4 binomial
standard deviations, sqrt(p (1 - p) / n), at fixed seeds.
"""
import numpy as np
import pandas as pd
import pytest

from skdpsynth.benchmarks import preprocessing as bench
from skdpsynth.datasets import make_mixed_table

N = 20000


@pytest.fixture(scope="module")
def table():
    return make_mixed_table(N, random_state=0)


def _within(share, p, n=N):
    return abs(share - p) <= 4 * np.sqrt(p * (1 - p) / n)


def test_mixed_table_columns_and_dtypes(table):
    assert table.shape == (N, 12)
    ints = ["age", "children", "hours_per_week"]
    floats = ["income", "balance", "transfer_amount", "basket_value"]
    assert all(table[c].dtype == np.int64 for c in ints)
    assert all(table[c].dtype == np.float64 for c in floats)
    assert table["account_opened"].dtype == "datetime64[ns]"
    for c in ["education", "employment", "region", "churned"]:
        assert not pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_datetime64_any_dtype(table[c])
    assert set(table["churned"]) == {"yes", "no"}
    assert table["age"].between(18, 95).all() and table["children"].between(0, 8).all()
    assert table["hours_per_week"].between(1, 99).all()
    assert table["account_opened"].between(pd.Timestamp("2019-01-01"), pd.Timestamp("2023-12-31")).all()
    assert (table["account_opened"] == table["account_opened"].dt.normalize()).all()     # day dates


def test_mixed_table_missing_values_point_masses_and_decimals(table):
    shares = table.isna().mean()
    assert _within(shares["balance"], 0.08) and _within(shares["region"], 0.05)
    assert (shares.drop(["balance", "region"]) == 0).all()
    assert _within((table["hours_per_week"] == 40).mean(), 0.45)
    assert (table["children"] == 0).mean() > 0.4
    basket = table["basket_value"]
    assert (basket == basket.round(2)).all() and bench.max_decimals(basket) == 2
    assert bench.max_decimals(table["income"]) == bench.FULL_PRECISION     # a continuous float


def test_mixed_table_tails_dates_and_associations(table):
    transfer = table["transfer_amount"]
    # Pareto with tail index 1: P(X > 1000 median) is about 1 / 2000, so ~10 records of 20,000.
    assert (transfer > 1000 * transfer.median()).sum() >= 3
    assert table["income"].mean() > 1.2 * table["income"].median()              # right-skewed
    day = table["account_opened"].dt.day_of_week
    assert _within((day >= 5).mean(), (2 / 3) / (5 + 2 / 3))               # weekends at a third of a weekday
    years = table["account_opened"].dt.year.value_counts()
    assert years[2023] > 1.5 * years[2019]                                    # the trend: 2.0x in expectation
    median_income = table.groupby("education")["income"].median()
    assert median_income["doctorate"] > median_income["secondary"] > median_income["primary"]
    churn = table.groupby("employment")["churned"].apply(lambda s: (s == "yes").mean())
    assert churn["unemployed"] > churn["employed"] + 0.2


def test_mixed_table_is_deterministic_per_seed():
    assert make_mixed_table(500, random_state=3).equals(make_mixed_table(500, random_state=3))
    assert not make_mixed_table(500, random_state=3).equals(make_mixed_table(500, random_state=4))
    for bad in (0, 2.5, True, "10"):
        with pytest.raises(ValueError, match="n_records"):
            make_mixed_table(bad)


def test_max_decimals_and_nan_tolerance():
    assert bench.max_decimals([1.0, 2.5, 3.25, np.nan]) == 2
    assert bench.max_decimals([1, 2, 3]) == 0 and bench.max_decimals([]) == 0
    assert bench.max_decimals([1e20, 123456.789012345]) == 9                 # 15 significant digits: recorded
    assert bench.max_decimals([0.1 + 0.2]) == bench.FULL_PRECISION          # 0.30000000000000004
    # 4 sd of (DP noise sigma / n) and sampling noise sqrt(p (1 - p) / m): 4 sqrt(1e-4 + 0.0736e-4).
    assert bench.nan_tolerance(0.08, 100.0, 10000, 10000) == pytest.approx(4 * np.sqrt(1.0736e-4))
    assert bench.nan_tolerance(0.08, None, 10000, 10000) == pytest.approx(4 * np.sqrt(0.0736e-4))


def test_one_way_sigma_combines_the_columns_own_measurements():
    from skdpsynth.privacy import PrivacyLedger
    from skdpsynth.synthesizers.select_measure import one_way_sigma

    ledger = PrivacyLedger()
    for description, scale in (("1-way marginal a", 2.0), ("marginal a", 2.0), ("marginal a x b", 1.0),
                               ("1-way marginal ab", 1.0)):
        ledger.add(description, "discrete gaussian", rho=1 / (2 * scale ** 2), scale=scale)
    ledger.add("select a marginal", "exponential", rho=0.1, scale=0.5)
    ledger.add("bounds of column 'a'", "discrete laplace", epsilon=0.1, scale=0.1)
    assert one_way_sigma(ledger, "a") == pytest.approx(np.sqrt(2.0))   # (1/4 + 1/4) ** -0.5
    assert one_way_sigma(ledger, "b") is None


class _Stub:
    """A pipeline whose fit fails on the named columns, as the preprocessing does on an unsupported column."""

    def __init__(self, frame, schema):
        self.frame, self.schema = frame, schema

    def fit(self, frame):
        if "when" in frame.columns:
            raise ValueError("fit: column 'when' holds dates, which are not supported")
        if "cat" in frame.columns and self.schema.get("cat", {}).get("missing") != "category":
            raise ValueError("fit: categorical column 'cat' has missing values")
        if "boom" in frame.columns:
            raise ValueError("the model is too large")
        return self

    def sample(self, n):
        return self.frame.head(n)


def test_fit_with_fallback_declares_missing_and_drops_unsupported_columns():
    train = pd.DataFrame({"x": [1.0, 2.0], "when": pd.to_datetime(["2020-01-01", "2021-01-01"]),
                          "cat": ["a", None], "y": ["p", "q"]})
    fit = bench.fit_with_fallback(train, "y", {}, _Stub)
    assert fit["columns"] == ["x", "cat", "y"]
    assert fit["schema"] == {"cat": bench.MISSING_CATEGORY}
    assert fit["notes"]["when"].startswith("not supported yet (error: fit: column 'when' holds dates")
    assert fit["notes"]["cat"].startswith("needed schema")
    with pytest.raises(ValueError, match="too large"):      # an error naming no column is not worked around
        bench.fit_with_fallback(train.assign(boom=1), "y", {}, _Stub)
    with pytest.raises(ValueError, match="'when'"):          # nor one naming the target
        bench.fit_with_fallback(train, "when", {}, _Stub)


class _Fitted:
    """The fitted attributes ``column_checks`` reads: the table step's schema and the ledger."""

    def __init__(self, schema, ledger):
        self.named_steps_ = {"table": type("T", (), {"schema_": schema})()}
        self.privacy_ledger_ = ledger


def test_column_checks_pass_the_data_itself_and_fail_each_defect(table):
    real = table.iloc[:4000]
    schema = {c: {"type": "numeric", "bounds": [real[c].min(), real[c].max()]}
              for c in ["age", "balance", "basket_value", "account_opened"]}
    from skdpsynth.privacy import PrivacyLedger

    ledger = PrivacyLedger()
    ledger.add("1-way marginal balance", "discrete gaussian", rho=0.005, scale=10.0)
    cols = ["age", "balance", "basket_value", "account_opened", "region"]
    rows = {r["column"]: r for r in bench.column_checks(real[cols], real[cols], _Fitted(schema, ledger),
                                                        original=real[cols])}
    for c in ["age", "balance", "basket_value", "account_opened"]:
        r = rows[c]
        assert r["ks"] == 0 and r["ks_ok"] and r["iqr_ok"] and r["bounds_ok"] and r["dtype_ok"], c
    assert rows["balance"]["nan_ok"] and rows["balance"]["nan_sigma"] == 10.0
    assert rows["region"]["nan_ok"] and rows["region"]["dtype_ok"] is None and "ks" not in rows["region"]
    assert rows["basket_value"]["decimals_ok"] and rows["age"]["decimals_ok"] is None
    assert rows["balance"]["decimals_ok"] is None                         # full precision: nothing to keep

    bad = real[cols].copy()
    bad["age"] = bad["age"].astype(float) + 200            # float, shifted out of range and bounds
    bad["balance"] = bad["balance"].fillna(1.0)             # no missing values left
    bad["basket_value"] = bad["basket_value"] + 1e-7        # precision lost
    bad["account_opened"] = bad["account_opened"].astype(str)
    rows = {r["column"]: r for r in bench.column_checks(real[cols], bad, _Fitted(schema, ledger),
                                                        original=real[cols])}
    assert not rows["age"]["dtype_ok"] and not rows["age"]["ks_ok"] and not rows["age"]["bounds_ok"]
    assert rows["age"]["synthetic_outside_data"] == 1.0
    assert not rows["balance"]["nan_ok"] and not rows["basket_value"]["decimals_ok"]
    assert not rows["account_opened"]["dtype_ok"] and not rows["account_opened"]["ks_ok"]
    assert bench._verdict([rows["age"]]).startswith("FAIL: ks (1/1), ") and bench._verdict([rows["region"]]) == "PASS"


def test_iqr_check_zero_iqr_and_one_unit():
    real = pd.Series(np.r_[np.zeros(80), np.arange(1, 21)], dtype=np.int64)   # 80 % zeros: IQR 0
    stats = pd.Series({"ks": 0.0, "iqr_real": 0.0, "iqr_synthetic": 1.0, "min_synthetic": 0, "max_synthetic": 20})
    out = bench._shape_checks(stats, real, real, None, dates=False)
    assert not out["iqr_ok"] and out["iqr_one_unit"] and out["bounds_ok"] is None
    stats["iqr_synthetic"] = 0.0
    assert bench._shape_checks(stats, real, real, None, dates=False)["iqr_ok"]


def test_pipelines_of_both_modes():
    frame = make_mixed_table(300, random_state=1)
    assert bench.initial_schema(frame, "new") == {}
    assert bench.initial_schema(frame, "baseline") == {"region": bench.MISSING_CATEGORY}
    options = dict(method="mst", seed=0, epsilon=1.0, delta=1e-9, preprocessing_epsilon=0.1)
    new = bench.make_pipeline(frame, {}, mode="new", **options).steps[0][1]
    base = bench.make_pipeline(frame, bench.initial_schema(frame, "baseline"), mode="baseline", **options).steps[0][1]
    assert new.get_params()["n_bins"] == "auto" and new.get_params()["strategy"] != "uniform"
    assert base.get_params()["n_bins"] == 16 and base.get_params()["strategy"] == "uniform"


def test_run_one_end_to_end_on_a_small_table():
    frame = make_mixed_table(2000, random_state=0)
    result = bench.run_one(frame, "churned", case="mixed", mode="new", seed=0, method="mst", epsilon=8.0,
                           preprocessing_epsilon=2.0)
    assert result["n_train"] == result["n_synthetic"] == 1600
    assert result["is_private"] and result["epsilon_spent"] <= 8.0 + 1e-9 and not result["privacy_leaks"]
    assert 0.0 <= result["tstr"] <= 1.0 and 0.0 <= result["tstr_majority"] <= 1.0
    scored = {r["column"] for r in result["columns"]}
    measured = {c for c in frame.columns if bench._is_measured(frame[c]) or frame[c].isna().any()}
    assert measured == scored | set(result["notes"]) - {c for c, n in result["notes"].items() if "needed" in n}
    for r in result["columns"]:
        if r.get("ks") is not None:
            assert 0.0 <= r["ks"] <= 1.0 and r["ks_ok"] == (r["ks"] <= bench.KS_MAX)
    text = bench.format_tables([result])
    assert "### mixed, new defaults" in text and all(f"| {c} |" in text for c in scored)
    assert text.count("| PASS |") + text.count("| FAIL") == len(scored)


def test_via_csv_reads_the_table_as_the_command_line_does():
    frame = make_mixed_table(200, random_state=2)
    read = bench._via_csv(frame, bench.initial_schema(frame, "baseline"))
    assert list(read.columns) == list(frame.columns) and len(read) == len(frame)
    for c in ["age", "children", "hours_per_week"]:
        assert read[c].dtype == np.int64 and (read[c] == frame[c]).all()
    pd.testing.assert_series_equal(read["basket_value"], frame["basket_value"])   # floats round-trip exactly
    assert read["region"].isna().sum() == frame["region"].isna().sum()


def test_missing_support_line_separates_columns_with_and_without_missing_values():
    group = [{"missing_support": {"region": (5.8, True), "city": (0.4, False)}},
             {"missing_support": {"region": (12.25, True), "city": (1.9, False), "team": (None, False)}},
             {"missing_support": {}}]
    assert bench._missing_support_line(group) == (
        "tentative missing categories (z = model count / sigma; >= 3 confirms): region z 5.8..12.2 (2 fits); "
        "columns without missing values z 0.4..1.9 (2 fits, some undecided)")
    assert bench._missing_support_line([{"missing_support": {}}, {}]) is None
