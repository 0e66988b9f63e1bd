"""Tests for skdpsynth.metrics.report: Cramér's V and the HTML fidelity report."""
from __future__ import annotations

import base64
import re
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from skdpsynth.metrics import marginal_tvd
from skdpsynth.metrics import report as report_module
from skdpsynth.metrics.report import cramers_v, write_report
from skdpsynth.privacy import PrivacyLedger

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DATA_URI = "data:image/png;base64,"


# --------------------------------------------------------------------------- #
# fixtures
# --------------------------------------------------------------------------- #
@pytest.fixture
def tables():
    """Original-schema tables, their codes (one Interval column, two string columns) and a ledger."""
    rng = np.random.default_rng(0)
    n = 300
    age = rng.integers(0, 30, n)
    color = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2])
    size = np.where(color == "red", "L", rng.choice(["S", "M"], n))
    real = pd.DataFrame({"age": age, "color": color, "size": size})
    synthetic = pd.DataFrame({
        "age": rng.integers(0, 30, n),
        "color": rng.choice(["red", "green", "blue"], n),
        "size": rng.choice(["S", "M", "L"], n),
    })
    bins = pd.IntervalIndex.from_breaks([0, 10, 20, 30], closed="left")
    dtypes = {"color": pd.CategoricalDtype(["blue", "green", "red"]),
              "size": pd.CategoricalDtype(["S", "M", "L"])}

    def codes(frame):
        out = frame.astype(dtypes)
        out["age"] = pd.cut(frame["age"], bins)
        return out

    ledger = PrivacyLedger()
    ledger.add("1-way marginals <b>bold</b>", "gaussian", rho=0.2, party="synth")
    ledger.add("select cliques", "exponential", rho=0.05, party="synth")
    ledger.add("bounds of age", "laplace", epsilon=0.1, party="table")
    return {"real": real, "synthetic": synthetic, "real_codes": codes(real),
            "synthetic_codes": codes(synthetic), "ledger": ledger}


class _TagChecker(HTMLParser):
    """Records open/close mismatches of non-void elements."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append((tag, list(self.stack)))
        else:
            self.stack.pop()


def _assert_well_formed(text: str) -> None:
    assert text.startswith("<!DOCTYPE html>")
    checker = _TagChecker()
    checker.feed(text)
    assert checker.errors == [] and checker.stack == []


# --------------------------------------------------------------------------- #
# cramers_v
# --------------------------------------------------------------------------- #
def test_cramers_v_perfect_association_and_independence():
    # b is a relabelling of a (perfect association, 3 x 3); c is independent of a by construction
    # (every (a, c) pair occurs exactly once: a product table, so chi2 is exactly 0).
    a = np.repeat([0, 1, 2], 2)
    df = pd.DataFrame({"a": a, "b": np.array(["z", "x", "y"])[a], "c": np.tile([0, 1], 3)})
    v = cramers_v(df)
    assert v.loc["a", "b"] == pytest.approx(1.0, abs=1e-12)
    assert v.loc["a", "c"] == 0.0
    assert v.loc["b", "c"] == 0.0
    assert list(np.diag(v)) == [1.0, 1.0, 1.0]


def test_cramers_v_hand_computation():
    # Contingency table [[3, 1], [1, 3]]: n = 8, E = 2 everywhere, chi2 = 4 * 1 / 2 = 2,
    # V = sqrt(2 / (8 * 1)) = 0.5.
    x = [0, 0, 0, 0, 1, 1, 1, 1]
    y = [0, 0, 0, 1, 0, 1, 1, 1]
    assert cramers_v(pd.DataFrame({"x": x, "y": y})).loc["x", "y"] == pytest.approx(0.5, abs=1e-12)
    # 2 x 3 table [[2, 0, 2], [0, 2, 2]]: n = 8, row sums 4, 4, column sums 2, 2, 4,
    # E = [[1, 1, 2], [1, 1, 2]], chi2 = 1 + 1 + 0 + 1 + 1 + 0 = 4, min(r, c) = 2,
    # V = sqrt(4 / 8) = 0.7071...
    x = [0, 0, 0, 0, 1, 1, 1, 1]
    y = ["p", "p", "r", "r", "q", "q", "r", "r"]
    assert cramers_v(pd.DataFrame({"x": x, "y": y})).loc["x", "y"] == pytest.approx(np.sqrt(0.5), abs=1e-12)


def test_cramers_v_matches_scipy_and_is_symmetric():
    contingency = pytest.importorskip("scipy.stats.contingency")
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.integers(0, 4, 500), "b": rng.integers(0, 3, 500)})
    df["c"] = (df["a"] + rng.integers(0, 2, 500)) % 5
    v = cramers_v(df)
    assert np.array_equal(v.to_numpy(), v.to_numpy().T)
    assert list(v.index) == list(v.columns) == ["a", "b", "c"]
    for x, y in [("a", "b"), ("a", "c"), ("b", "c")]:
        table = pd.crosstab(df[x], df[y]).to_numpy()
        expected = contingency.association(table, method="cramer", correction=False)
        assert v.loc[x, y] == pytest.approx(expected, rel=1e-10)


def test_cramers_v_constant_column_unobserved_categories_and_missing():
    base = pd.DataFrame({"a": ["u", "u", "v", "v"], "b": ["s", "t", "s", "t"], "k": ["c"] * 4})
    v = cramers_v(base)
    assert v.loc["k", "k"] == 0.0 and v.loc["a", "k"] == 0.0 and v.loc["a", "a"] == 1.0
    # An unused category does not change V (min(r, c) counts observed categories only).
    wide = {"a": pd.CategoricalDtype(["u", "v", "w"]), "b": pd.CategoricalDtype(["s", "t", "x"])}
    perfect = pd.DataFrame({"a": ["u", "u", "v", "v"], "b": ["s", "s", "t", "t"]})
    assert cramers_v(perfect.astype(wide)).loc["a", "b"] == pytest.approx(1.0)
    assert cramers_v(base[["a", "b"]].astype(wide)).loc["a", "b"] == 0.0  # product table, unused cells
    # Missing values are dropped pairwise.
    with_nan = pd.DataFrame({"a": ["u", "u", "v", "v", None], "b": ["s", "s", "t", "t", "s"]})
    assert cramers_v(with_nan).loc["a", "b"] == pytest.approx(1.0)
    with pytest.raises(TypeError):
        cramers_v(np.zeros((3, 2)))


# --------------------------------------------------------------------------- #
# write_report, tables only
# --------------------------------------------------------------------------- #
def test_report_tables_only(tables, tmp_path):
    out = write_report(tmp_path / "rep.html", **tables, delta=1e-6, title="Mine <script>alert(1)</script>",
                       seconds=12.34, plots=False)
    text = out["html"].read_text(encoding="utf-8")
    _assert_well_formed(text)
    assert out["html"] == tmp_path / "rep.html"
    assert out["images"] == [] and not (tmp_path / "rep_files").exists()
    assert "<img" not in text and DATA_URI not in text
    # the title is escaped, never injected
    assert "<script>" not in text
    assert "Mine &lt;script&gt;alert(1)&lt;/script&gt;" in text
    # privacy statement, zCDP total, summary by party and the full ledger
    eps = tables["ledger"].epsilon(1e-6)
    assert f"<b>({eps:.4f}, 1e-06)-DP</b>" in text
    assert f"{tables['ledger'].total_zcdp():.6g}" in text
    assert "<details><summary>Full ledger (3 entries)" in text
    assert "1-way marginals &lt;b&gt;bold&lt;/b&gt;" in text and "<b>bold</b>" not in text
    assert "<td>table</td><td>laplace</td>" in text
    # the TVD is computed on the codes for k = 1, 2, 3 and shown
    expected = marginal_tvd(tables["real_codes"], tables["synthetic_codes"], ways=[1, 2, 3])
    assert out["tvd"] == pytest.approx(expected)
    for k, value in expected.items():
        assert f"<td>{k}-way</td><td class=\"num\">{value:.4g}</td>" in text
    # header: row counts, seconds, columns
    assert "300 real rows" in text and "300 synthetic rows" in text and "12.3 s" in text
    assert "<td>age</td><td>int64</td>" in text
    # associations: matrices returned, top differences listed even without plots
    assert out["cramers_v_real"].equals(cramers_v(tables["real_codes"]))
    assert out["cramers_v_synthetic"].equals(cramers_v(tables["synthetic_codes"]))
    assert "Largest absolute differences" in text
    assert "matplotlib is not installed" not in text


def test_report_privacy_statement_without_delta(tables, tmp_path):
    pure = PrivacyLedger()
    pure.add("a", "laplace", epsilon=0.25)
    pure.add("b", "laplace", epsilon=0.5)
    tables_pure = {**tables, "ledger": pure}
    text = write_report(tmp_path / "pure.html", **tables_pure, plots=False)["html"].read_text(encoding="utf-8")
    assert "<b>0.7500-DP</b>" in text
    # zCDP entries and no delta: stated as zCDP, not as a misleading pure-epsilon figure
    text = write_report(tmp_path / "z.html", **tables, plots=False)["html"].read_text(encoding="utf-8")
    assert f"<b>{tables['ledger'].total_zcdp():.4g}-zCDP</b>" in text
    empty = {**tables, "ledger": PrivacyLedger()}
    text = write_report(tmp_path / "e.html", **empty, plots=False)["html"].read_text(encoding="utf-8")
    assert "no privacy-consuming step" in text


def test_report_uses_given_tvd_and_tstr_only_when_given(tables, tmp_path):
    out = write_report(tmp_path / "a.html", **tables, tvd={1: 0.123456, 2: 0.5}, plots=False)
    text = out["html"].read_text(encoding="utf-8")
    assert out["tvd"] == {1: 0.123456, 2: 0.5}
    assert "0.1235" in text and "3-way" not in text
    assert 'id="utility"' not in text and "train on synthetic" not in text.lower()

    tstr = {"target": "size<>", "metric": "accuracy", "synthetic": 0.81, "real": 0.85, "n_test": 1234}
    text = write_report(tmp_path / "b.html", **tables, tstr=tstr, plots=False)["html"].read_text(encoding="utf-8")
    _assert_well_formed(text)
    assert 'id="utility"' in text
    assert "<td>train on synthetic, test on real</td><td class=\"num\">0.81</td>" in text
    assert "<td>train on real, test on real (baseline)</td><td class=\"num\">0.85</td>" in text
    assert "majority" not in text  # absent key, absent row
    assert "size&lt;&gt;" in text and "<th>accuracy</th>" in text
    assert "1,234 held-out real records" in text and "<td>n_test</td>" not in text


def test_report_rejects_mismatched_codes_and_bad_arguments(tables, tmp_path):
    bad = tables["synthetic_codes"].copy()
    bad["size"] = bad["size"].cat.add_categories(["XL"])
    with pytest.raises(ValueError, match="different categories"):
        write_report(tmp_path / "x.html", **{**tables, "synthetic_codes": bad}, plots=False)
    with pytest.raises(ValueError, match="same"):
        write_report(tmp_path / "x.html", **{**tables, "synthetic_codes": bad.drop(columns="size")}, plots=False)
    with pytest.raises(ValueError, match="plots"):
        write_report(tmp_path / "x.html", **tables, plots="yes")
    with pytest.raises(ValueError, match="max_categories"):
        write_report(tmp_path / "x.html", **tables, plots=False, max_categories=0)


def test_interval_labels_are_compact():
    labels = report_module._category_labels(pd.IntervalIndex.from_breaks([0, 10, 20, 30], closed="left"))
    assert labels == ["[0, 10)", "[10, 20)", "[20, 30)"]
    labels = report_module._category_labels(pd.IntervalIndex.from_breaks([17, 21.5625, 26.125]))
    assert labels == ["(17, 21.6]", "(21.6, 26.1]"]
    labels = report_module._category_labels(pd.IntervalIndex.from_breaks([10000, 103125, 1500000]))
    assert labels == ["(10000, 103k]", "(103k, 1.5M]"]
    assert report_module._category_labels(pd.Index(["x" * 30]))[0].endswith("…")


# --------------------------------------------------------------------------- #
# write_report with plots
# --------------------------------------------------------------------------- #
def test_report_with_plots(tables, tmp_path):
    pytest.importorskip("matplotlib")
    out = write_report(tmp_path / "sub" / "my report.html", **tables, plots=True)
    folder = tmp_path / "sub" / "my report_files"
    # "age" is a number in both original tables: its quantile plots come between the two others
    assert out["images"] == [folder / "columns.png", folder / "numeric.png", folder / "associations.png"]
    text = out["html"].read_text(encoding="utf-8")
    _assert_well_formed(text)
    uris = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert text.count(DATA_URI) == 3 and len(uris) == 3
    for image, uri in zip(out["images"], uris):
        data = image.read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 5000
        assert base64.b64decode(uri) == data  # the embedded image is the saved file


def test_report_plots_auto_draws_when_matplotlib_available(tables, tmp_path):
    pytest.importorskip("matplotlib")
    out = write_report(tmp_path / "r.html", **tables)
    assert len(out["images"]) == 3 and all(p.exists() for p in out["images"])


def test_max_categories_truncation(tables, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(3)
    cats = ["c0", "c1", "c2", "c3", "c4", "c5"]
    # real frequencies: c4 > c1 > c5 > the rest
    values = np.repeat(cats, [5, 60, 2, 3, 90, 40])
    dtype = pd.CategoricalDtype(cats)
    real_codes = pd.DataFrame({"big": pd.Categorical(values, dtype=dtype),
                               "small": pd.Categorical(rng.choice(["a", "b"], values.size))})
    synthetic_codes = pd.DataFrame({"big": pd.Categorical(rng.choice(cats, 100), dtype=dtype),
                                    "small": pd.Categorical(rng.choice(["a", "b"], 100), categories=["a", "b"])})
    seen = {}
    original = report_module._save

    def spy(fig, path):
        seen[path.name] = {ax.get_title(): [t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes}
        return original(fig, path)

    monkeypatch.setattr(report_module, "_save", spy)
    write_report(tmp_path / "t.html", real=real_codes, synthetic=synthetic_codes, real_codes=real_codes,
                 synthetic_codes=synthetic_codes, ledger=tables["ledger"], plots=True, max_categories=3)
    panels = seen["columns.png"]
    (big_title,) = [t for t in panels if t.startswith("big")]
    assert "(top 3 of 6)" in big_title
    assert panels[big_title] == ["c1", "c4", "c5"]  # the 3 most frequent in the real data, category order
    (small_title,) = [t for t in panels if t.startswith("small")]
    assert "top" not in small_title and panels[small_title] == ["a", "b"]


# --------------------------------------------------------------------------- #
# without matplotlib
# --------------------------------------------------------------------------- #
def test_without_matplotlib(tables, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    with pytest.raises(ImportError, match=re.escape("skdpsynth[report]")):
        write_report(tmp_path / "r.html", **tables, plots=True)
    out = write_report(tmp_path / "r.html", **tables, plots="auto")
    text = out["html"].read_text(encoding="utf-8")
    _assert_well_formed(text)
    assert out["images"] == [] and not (tmp_path / "r_files").exists()
    assert "<img" not in text
    assert "Plots omitted: matplotlib is not installed" in text and "skdpsynth[report]" in text
    assert 'id="fidelity"' in text and 'id="privacy"' in text
    assert 'id="numeric"' in text and "<td>age</td>" in text  # the numeric table needs no matplotlib


def test_module_import_does_not_import_matplotlib():
    code = "import sys, skdpsynth.metrics.report; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# --------------------------------------------------------------------------- #
# numeric_fidelity
# --------------------------------------------------------------------------- #
def _numeric_pair():
    """Original-schema tables with float, integer, nullable, naive and time-zone aware date columns, each with
    missing values, and columns that are not compared (text, bool, categorical)."""
    rng = np.random.default_rng(42)
    n, m = 500, 400

    def with_missing(values, share, missing):
        values = pd.Series(values)
        values[rng.random(len(values)) < share] = missing
        return values

    start = pd.Timestamp("2020-01-01")
    real = pd.DataFrame({
        "x": with_missing(rng.normal(0.0, 1.0, n), 0.04, np.nan),
        "k": rng.binomial(20, 0.5, n),
        "nullable": with_missing(pd.array(rng.integers(0, 50, n), dtype="Int64"), 0.1, pd.NA),
        "d": with_missing(start + pd.to_timedelta(rng.integers(0, 10**7, n), unit="s"), 0.05, pd.NaT)
        .astype("datetime64[us]"),
        "tz": (start + pd.to_timedelta(rng.integers(0, 10**6, n), unit="s")).tz_localize("Europe/Oslo"),
        "text": rng.choice(["a", "b"], n),
        "flag": rng.random(n) < 0.5,
        "cat": pd.Categorical(rng.integers(0, 3, n)),
    })
    synthetic = pd.DataFrame({
        "x": with_missing(rng.normal(0.2, 1.1, m), 0.1, np.nan),
        "k": rng.binomial(20, 0.55, m),
        "nullable": with_missing(rng.integers(0, 60, m).astype(float), 0.02, np.nan),
        "d": with_missing(start + pd.to_timedelta(rng.integers(0, 12 * 10**6, m), unit="s"), 0.01, pd.NaT),
        "tz": (start + pd.to_timedelta(rng.integers(0, 10**6, m), unit="s")).tz_localize("America/Lima"),
        "text": rng.choice(["a", "b"], m),
        "flag": rng.random(m) < 0.5,
        "cat": pd.Categorical(rng.integers(0, 3, m)),
    })
    return real, synthetic


def _as_numbers(column: pd.Series) -> np.ndarray:
    """Independent of the module: dates as int64 UTC nanoseconds, numbers as float64; missing dropped."""
    column = column.dropna()
    if isinstance(column.dtype, pd.DatetimeTZDtype):
        column = column.dt.tz_convert(None)
    if pd.api.types.is_datetime64_any_dtype(column.dtype):
        return column.astype("datetime64[ns]").astype("int64").to_numpy()
    return column.astype("float64").to_numpy()


def test_numeric_fidelity_matches_scipy_and_pandas():
    ks_2samp = pytest.importorskip("scipy.stats").ks_2samp
    real, synthetic = _numeric_pair()
    stats = report_module.numeric_fidelity(real, synthetic)
    # text, bool and categorical columns are not compared; the rest in the order of `real`
    assert list(stats.index) == ["x", "k", "nullable", "d", "tz"] and stats.index.name == "column"
    assert list(stats.columns) == ["ks", "iqr_real", "iqr_synthetic", "iqr_ratio", "min_synthetic",
                                   "max_synthetic", "nan_real", "nan_synthetic"]
    for name in stats.index:
        x, y = _as_numbers(real[name]), _as_numbers(synthetic[name])
        # The same ratios of counts (searchsorted / n) at the same pooled points as scipy: equal, not close.
        assert stats.loc[name, "ks"] == ks_2samp(x, y).statistic, name
        assert 0 < stats.loc[name, "ks"] < 1
        for side, values in (("real", x), ("synthetic", y)):
            q1, q3 = np.quantile(values, [0.25, 0.75])
            assert stats.loc[name, f"iqr_{side}"] == pytest.approx(q3 - q1, rel=1e-12), (name, side)
        assert stats.loc[name, "iqr_ratio"] == pytest.approx(
            stats.loc[name, "iqr_synthetic"] / stats.loc[name, "iqr_real"], rel=1e-15)
        assert stats.loc[name, "nan_real"] == real[name].isna().sum() / len(real)
        assert stats.loc[name, "nan_synthetic"] == synthetic[name].isna().sum() / len(synthetic)
        # the synthetic range exactly, in the column's own type
        assert stats.loc[name, "min_synthetic"] == synthetic[name].min()
        assert stats.loc[name, "max_synthetic"] == synthetic[name].max()
    assert stats.loc["nullable", "nan_real"] > 0 and stats.loc["d", "nan_real"] > 0  # missing values were drawn
    assert isinstance(stats.loc["d", "max_synthetic"], pd.Timestamp)
    assert str(stats.loc["tz", "min_synthetic"].tz) == "America/Lima"
    assert type(stats.loc["k", "max_synthetic"]) is int


def test_numeric_fidelity_is_exact_for_large_integers():
    # 2**62 and 2**62 + 1 are one float64: compared as floats the two columns would look identical (KS 0).
    big = 2**62
    real = pd.DataFrame({"id": np.array([big, big + 1], dtype=np.int64)})
    synthetic = pd.DataFrame({"id": np.array([big + 1, big + 1], dtype=np.int64)})
    stats = report_module.numeric_fidelity(real, synthetic)
    assert stats.loc["id", "ks"] == 0.5  # F_real(2**62) = 1/2, F_synthetic(2**62) = 0
    assert stats.loc["id", "max_synthetic"] == big + 1 and type(stats.loc["id", "max_synthetic"]) is int


def test_numeric_fidelity_column_choice_and_degenerate_columns():
    real = pd.DataFrame({
        "empty": [np.nan, np.nan, np.nan, np.nan],
        "constant": [5.0, 5.0, 5.0, 5.0],
        "numeric_here_text_there": [1, 2, 3, 4],
        "date_here_number_there": pd.to_datetime(["2020-01-01"] * 4),
        "nullable_bool": pd.array([True, False, None, True], dtype="boolean"),
        "only_real": [1, 2, 3, 4],
    })
    synthetic = pd.DataFrame({
        "constant": [4.0, 5.0, 6.0, 7.0],
        "empty": [1.0, 2.0, 3.0, np.nan],
        "numeric_here_text_there": ["1", "2", "3", "4"],
        "date_here_number_there": [1, 2, 3, 4],
        "nullable_bool": pd.array([True, True, False, False], dtype="boolean"),
    })
    stats = report_module.numeric_fidelity(real, synthetic)
    assert list(stats.index) == ["empty", "constant"]
    assert np.isnan(stats.loc["empty", "ks"]) and np.isnan(stats.loc["empty", "iqr_real"])
    assert stats.loc["empty", "nan_real"] == 1.0 and stats.loc["empty", "nan_synthetic"] == 0.25
    # quartiles 4.75 and 6.25 against a real IQR of 0
    assert stats.loc["constant", "iqr_synthetic"] == 1.5 and stats.loc["constant", "iqr_ratio"] == np.inf
    assert stats.loc["constant", "ks"] == 0.5  # largest at 5: F_real = 1, F_synthetic = 2/4 (at 4: 0 and 1/4)
    none = report_module.numeric_fidelity(real[["only_real"]].astype(str), synthetic[["constant"]])
    assert none.empty and list(none.columns) == list(stats.columns)
    no_rows = report_module.numeric_fidelity(real[["constant"]], synthetic[["constant"]].iloc[:0])
    assert np.isnan(no_rows.loc["constant", "ks"]) and np.isnan(no_rows.loc["constant", "nan_synthetic"])
    assert np.isnan(no_rows.loc["constant", "max_synthetic"])
    with pytest.raises(TypeError, match="synthetic must be a pandas DataFrame"):
        report_module.numeric_fidelity(real, synthetic.to_numpy())


def test_numeric_fidelity_is_exported_and_documented():
    import skdpsynth.metrics as metrics

    assert "numeric_fidelity" in metrics.__all__ and metrics.numeric_fidelity is report_module.numeric_fidelity


# --------------------------------------------------------------------------- #
# the Numeric columns section
# --------------------------------------------------------------------------- #
def test_shown_levels_keep_ten_records_on_each_side():
    levels = report_module._LEVELS
    assert levels.size == 99 and levels[0] == 0.01 and levels[-1] == 0.99
    shown = report_module._shown_levels
    # h = p (n - 1): n = 21 allows h = 10 only (order statistic 10 of 0..20: ten records on each side)
    assert list(levels[shown(21, levels)]) == [0.5]
    assert not shown(20, levels).any()
    # n = 1001: h = 10 at 1% and 990 at 99%, all levels; n = 1000 loses 1% and 99% (h = 9.99 and 989.01)
    assert shown(1001, levels).all() and shown(1000, levels).sum() == 97


def test_report_numeric_section_tables_only(tables, tmp_path):
    out = write_report(tmp_path / "n.html", **tables, plots=False)
    text = out["html"].read_text(encoding="utf-8")
    _assert_well_formed(text)
    pd.testing.assert_frame_equal(out["numeric"], report_module.numeric_fidelity(tables["real"],
                                                                                 tables["synthetic"]))
    assert list(out["numeric"].index) == ["age"]
    stats = out["numeric"].loc["age"]
    section = text[text.index('<section id="numeric">'):]
    section = section[:section.index("</section>")]
    row = (f"<td>age</td><td class=\"num\">{stats['ks']:.4g}</td><td class=\"num\">{stats['iqr_real']:.4g}</td>"
           f"<td class=\"num\">{stats['iqr_synthetic']:.4g}</td><td class=\"num\">{stats['min_synthetic']:,}</td>"
           f"<td class=\"num\">{stats['max_synthetic']:,}</td><td class=\"num\">0.0%</td>"
           "<td class=\"num\">0.0%</td>")
    assert row in section
    assert "<td>color</td>" not in section and "<img" not in section
    # the sections' order: distributions (absent without plots), numeric columns, associations
    assert text.index('id="fidelity"') < text.index('id="numeric"') < text.index('id="associations"')
    # no numeric column (the codes as original tables): no section
    codes = {**tables, "real": tables["real_codes"], "synthetic": tables["synthetic_codes"]}
    out = write_report(tmp_path / "c.html", **codes, plots=False)
    assert out["numeric"].empty and 'id="numeric"' not in out["html"].read_text(encoding="utf-8")


def _plotted(monkeypatch) -> dict:
    """Spy on the saved figures: {file name: [(x data, y data) of every line of every axes]}."""
    seen = {}
    original = report_module._save

    def spy(fig, path):
        seen[path.name] = [(np.asarray(line.get_xdata()), np.asarray(line.get_ydata()))
                           for ax in fig.axes for line in ax.get_lines()]
        return original(fig, path)

    monkeypatch.setattr(report_module, "_save", spy)
    return seen


def test_report_never_shows_an_extreme_real_value(tables, tmp_path, monkeypatch):
    """Issue 42, acceptance 4: a one-off extreme number (and date) of the real data appears in no figure and no
    text of the report; each real quantile drawn has ten other real records at or below and at or above it."""
    pytest.importorskip("matplotlib")
    seen = _plotted(monkeypatch)
    real, synthetic = tables["real"].copy(), tables["synthetic"].copy()
    real.loc[17, "age"], real.loc[18, "age"] = 987654321, -55555
    n = len(real)
    real["when"] = pd.Timestamp("2021-03-01") + pd.to_timedelta(np.arange(n) % 97, unit="D")
    synthetic["when"] = pd.Timestamp("2021-03-01") + pd.to_timedelta(np.arange(n) % 89, unit="D")
    real.loc[5, "when"] = pd.Timestamp("1901-07-04")
    out = write_report(tmp_path / "x.html", **{**tables, "real": real, "synthetic": synthetic}, plots=True)
    text = out["html"].read_text(encoding="utf-8")
    for value in ("987654321", "987,654,321", "9.877e+08", "55555", "55,555", "1901"):
        assert value not in text
    lines = seen["numeric.png"]
    # per column: the real CDF (x = real quantiles), the synthetic CDF, y = x, the QQ points (x = real quantiles)
    assert len(lines) == 8
    for (cdf_x, _), (_, _), (_, _), (qq_x, _), column in ((lines[0], lines[1], lines[2], lines[3], "age"),
                                                          (lines[4], lines[5], lines[6], lines[7], "when")):
        ordered = np.sort(_as_numbers(real[column]))
        shown = qq_x.astype("datetime64[ns]").astype(np.int64) if column == "when" else qq_x.astype(float)
        # n = 300: h = 299 p must lie in [10, 289]: the levels 4%, ..., 96%
        assert np.array_equal(cdf_x, qq_x) and shown.size == 93
        assert ordered[10] <= shown.min() and shown.max() <= ordered[n - 11]
    for values in (data for line in lines for data in line):
        if np.issubdtype(values.dtype, np.datetime64):
            assert (values > np.datetime64("2000-01-01")).all()
        else:
            assert not np.isin(values.astype(float), [987654321.0, -55555.0]).any()


def test_report_hides_real_quantiles_of_few_records(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    seen = _plotted(monkeypatch)
    real = pd.DataFrame({"v": np.arange(30.0), "c": ["a", "b"] * 15})
    synthetic = pd.DataFrame({"v": np.arange(30.0) + 0.5, "c": ["a", "b"] * 15})
    codes = {"real_codes": real[["c"]].astype("category"), "synthetic_codes": synthetic[["c"]].astype("category")}
    out = write_report(tmp_path / "f.html", real=real, synthetic=synthetic, **codes, ledger=PrivacyLedger(),
                       plots=True)
    text = out["html"].read_text(encoding="utf-8")
    # n = 30: h = p * 29 lies in [10, 19] for p in 35%..65%; the quartiles (h = 7.25, 21.75) are not shown
    qq_x = seen["numeric.png"][3][0]
    assert list(qq_x) == list(np.quantile(real["v"], np.arange(35, 66) / 100))
    assert "<td>v</td><td class=\"num\">" in text and "<td class=\"num\">—</td><td class=\"num\">14.5</td>" in text
