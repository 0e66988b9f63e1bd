"""Canaries through the default numeric path (issue 42, acceptance 4): one-off values never leave a DP fit.

The table is what a user hands the command line without a schema: 2,000 ordinary records and, each in a record of
its own, five canaries — an extreme income (987654321.123 where incomes lie in 10k-200k), an extreme negative
balance (-876543210.987 where balances lie in -60k..60k), an extreme integer count (345,678 where counts are a
few dozen), a one-off city ("CANARY-7f3a") and a one-off date (1903-07-04 among 2015-2020).  It is fitted as
``skdpsynth synthesize --preprocessing-epsilon`` fits it (:func:`skdpsynth.cli.build_pipeline`: numeric columns
without public bounds get ``DPKBinsDiscretizer(strategy="adaptive", n_bins="auto")``, categories are discovered
with DP) and the canaries are looked for in everything the fit releases or keeps: ``sample()``, ``schema_`` and
``to_json()``, the ledger, the HTML report and the pickle of the fitted pipeline.

What "shows" a number means here: the value itself, or anything within 1 % of it (relative) — a bound, a bin or
cell edge, a synthetic value, a number in a text.  The DP bounds are powers of two: 2^30 = 1073741824 is 8.7 %
above the income canary, -2^30 is 22 % beyond the balance canary and 2^19 = 524288 is 52 % above the count
canary, so a bound at the canary's power of two is not within 1 % of it.  A date shows when a synthetic or stored
date lies within 10 years of the canary date (every other date is after 2015).

When can a canary's bucket be released at all?  The magnitude histogram gives each column's bounds (doc/
preprocessing.md; ``skdpsynth.preprocessing._adaptive.bounds_from_magnitudes``): the range grows to a bucket of
the next 16 whose noisy count exceeds ``t = ln(16 / 0.02) / ε_b`` (ε_b: the column's bounds budget; the very
next bucket also passes above ln(100) / ε_b, and no canary here is in it).  Each numeric canary here sits within
16 buckets of its column's range (the worst case: a canary farther away needs a chain of such steps), and its
bucket's true count is 1, so it passes with probability
``P(1 + Lap(1/ε_b) > t) = exp(-ε_b (t - 1)) / 2 = e^{ε_b} / 1600``; at ε_b = 0.025 (preprocessing ε 0.2 over
5 columns, half of it to the 3 numeric ones, three quarters of a column's share to its bounds) that is
6.4e-4 — an empty bucket passes with 1/1600 = 6.25e-4, and that ratio e^{ε_b} is all DP allows the canary to
change.  Only then does the canary's bucket get cells (width 2^24 for the income canary, so the canary's cell
reaches within 0.3 % of it) and synthetic values near it.  The other route: an empty bucket beyond the canary
passes (the union bound allows 1 % for some empty bucket anywhere, so MST seed 3 below releases the balance's
lower bound -2^32), bringing the canary's bucket inside the bounds; it then gets cells only if its own noisy
count passes ln(50) / ε_b (probability e^{ε_b} / 100), else it lies inside one wide cell (at least 2^31 wide,
the canary's window 2 % of 2^30 at most 1 % of it) holding a few synthetic values: about 0.2 % for such an empty
bucket times under 10 % for a value in the window, 1e-4 more.  So over the 3 numeric canaries and the 7 fits below, a canary would show in a run with unseeded noise
with probability about 1.6 %; the fits are seeded, so each test is deterministic, and
:func:`test_the_fit_reads_the_canaries_only_through_the_mechanisms` shows that nothing else of the fit depends on
them.  (3,000 seeded fits of each numeric column alone at ε_b = 0.025 released the same bounds with and without
its canary.)  The date column's buckets are calendar years: the canary's year is 112 buckets below the others',
beyond any window, so its bucket joins the range only through a chain of noise-only extensions.  A one-off
category discovered with DP is released with probability at most δ (the encoder's thresholded Laplace
histogram).
"""
from __future__ import annotations

import json
import math
import pickle
import re
import struct
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from privacy_spies import NoiseSpy, Replay, reconcile
from skdpsynth.cli import build_pipeline
from skdpsynth.metrics import report as report_module
from skdpsynth.metrics.report import write_report
from skdpsynth.preprocessing import TableDiscretizer
from stored_state import reachable

INCOME, BALANCE, VISITS = 987654321.123, -876543210.987, 345_678
CITY = "CANARY-7f3a"
WHEN = pd.Timestamp("1903-07-04")
NUMBERS = {"income": INCOME, "balance": BALANCE, "visits": VISITS}
CANARY_ROWS = {"income": 11, "balance": 23, "visits": 37, "city": 41, "when": 53}
N = 2000
EPSILON, DELTA, PRE_EPSILON = 1.0, 1e-9, 0.2
TEN_YEARS_NS = int(pd.Timedelta(days=3653).value)
_CANARY_DAYS = (WHEN - pd.Timestamp("1970-01-01")).days

# Every textual form a number can take in a page, a ledger or a JSON text: digits with or without thousands
# separators, decimals, exponents.  Signs are left out: a canary shows whatever sign is printed.
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
# The canary date's year as a year: not the digits of 0.1903 or 1,903.
_YEAR = re.compile(r"(?<![\d.,])1903(?!\d)")
_DATA_URI = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def canary_table() -> pd.DataFrame:
    rng = np.random.default_rng(42)
    frame = pd.DataFrame({
        "income": np.round(np.exp(rng.normal(np.log(50_000), 0.5, N)).clip(10_000, 200_000), 2),
        "balance": np.round(rng.uniform(-60_000, 60_000, N), 2),
        "visits": rng.poisson(12, N).astype(np.int64),
        "city": rng.choice(["Oslo", "Rome", "Lima", "Pune", "Kobe"], N, p=[0.3, 0.25, 0.2, 0.15, 0.1]),
        "when": pd.Timestamp("2015-01-01") + pd.to_timedelta(rng.integers(0, 6 * 365, N), unit="D"),
    })
    frame.loc[CANARY_ROWS["income"], "income"] = INCOME
    frame.loc[CANARY_ROWS["balance"], "balance"] = BALANCE
    frame.loc[CANARY_ROWS["visits"], "visits"] = VISITS
    frame.loc[CANARY_ROWS["city"], "city"] = CITY
    frame.loc[CANARY_ROWS["when"], "when"] = WHEN
    return frame


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return canary_table()


def _fit(frame: pd.DataFrame, method: str, seed: int):
    pipe = build_pipeline(None, method=method, epsilon=EPSILON, delta=DELTA, n_bins="auto", seed=seed, verbose=0,
                          preprocessing_epsilon=PRE_EPSILON, discover_categories=True)
    return pipe.fit(frame)


FITS = [("mst", s) for s in range(5)] + [("aim", 0), ("view", 0)]


@pytest.fixture(scope="module")
def fitted(table):
    cache = {}

    def get(method, seed):
        if (method, seed) not in cache:
            cache[method, seed] = _fit(table, method, seed)
        return cache[method, seed]
    return get


# -- what "shows a canary" means ------------------------------------------------------------------------------
def _near(values, canary: float) -> np.ndarray:
    """Which of ``values`` lie within 1 % (relative) of ``canary``, in absolute value (either sign shows it)."""
    values = np.abs(np.asarray(values, dtype=np.float64))
    return np.abs(values - abs(canary)) <= 0.01 * abs(canary)


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def _assert_text_clean(text: str, where: str) -> None:
    """No canary in a text: not the city, not the date (any form of its year), no number within 1 % of a numeric
    canary however it is formatted."""
    assert CITY not in text and CITY.lower() not in text.lower(), f"{where} shows the one-off city"
    assert not _YEAR.search(text), f"{where} shows the one-off date's year: {_YEAR.search(text)}"
    numbers = _numbers(text)
    for name, canary in NUMBERS.items():
        found = [x for x, near in zip(numbers, _near(numbers, canary)) if near]
        assert not found, f"{where} shows {found} within 1 % of the {name} canary {canary}"
    for digits in ("9876543", "8765432"):  # the big canaries' leading digits, in whatever notation
        assert digits not in text, f"{where} holds the digits {digits}"


def _date_numbers(values) -> np.ndarray:
    """Numbers a date may be stored as (ns, us or ms since the epoch) that lie within 10 years of the canary.

    Not seconds: -2.2e9 s is 1900, and -2^31 = -2.1e9 is an ordinary bound of a numeric column (the balance's,
    when an empty bucket passes: see the module docstring)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    hits = np.zeros(values.shape, dtype=bool)
    for unit in (1, 10**3, 10**6):
        hits |= np.abs(values * unit - WHEN.value) <= TEN_YEARS_NS
    return values[hits]


def _assert_stored_clean(obj, where: str) -> None:
    """Walk everything reachable from ``obj`` (tests/stored_state.py) except random generators' states (their
    words are random bits, not data): no number or array element near a numeric canary or the date, no text with
    the city or the date."""
    found = reachable(obj, where)
    rng_paths = tuple(path for path, _ in found.generators)

    def kept(path):
        return not any(path.startswith(p) for p in rng_paths)
    arrays = [(p, a) for p, a in found.arrays if kept(p)]
    numbers = [(p, x) for p, x in found.numbers if kept(p) and not p.startswith("len(")]
    assert arrays or numbers, "the walk found nothing: the test would pass vacuously"
    for path, values in arrays + [(p, np.asarray([float(x)])) for p, x in numbers]:
        finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
        for name, canary in NUMBERS.items():
            assert not _near(finite, canary).any(), f"{path} holds a value within 1 % of the {name} canary"
        assert _date_numbers(finite).size == 0, f"{path} holds a number within 10 years of the canary date"
    for path, text in found.texts:
        text = text.decode("latin-1") if isinstance(text, (bytes, bytearray)) else text
        assert CITY not in text and "1903-" not in text, f"{path} holds a canary text"


def _assert_pickle_clean(pipe) -> None:
    """The pickled bytes hold no canary in any binary or text form, and nothing unpickled lies near one."""
    blob = pickle.dumps(pipe)
    forms = {"city": [CITY.encode(), CITY.encode("utf-16-le")], "date": [b"1903-07-04"]}
    for order in "<>":
        forms["date"] += [struct.pack(order + "q", WHEN.value), struct.pack(order + "d", float(WHEN.value))]
        for name, canary in NUMBERS.items():
            forms.setdefault(name, []).append(struct.pack(order + "d", float(canary)))
            forms[name] += [struct.pack(order + "q", int(canary)), struct.pack(order + "i", int(canary))]
    for name, canary in NUMBERS.items():
        forms[name] += [f"{int(canary)}".encode(), repr(canary).encode()]
    for name, patterns in forms.items():
        for pattern in patterns:
            assert pattern not in blob, f"the pickle holds the {name} canary as {pattern!r}"
    _assert_stored_clean(pickle.loads(blob), "unpickled")


def _assert_sample_clean(synthetic: pd.DataFrame) -> None:
    for name, canary in NUMBERS.items():
        values = synthetic[name].dropna().to_numpy(dtype=np.float64)
        assert values.size and not _near(values, canary).any(), f"a synthetic {name} lies within 1 % of the canary"
    assert CITY not in set(synthetic["city"].dropna())
    when = synthetic["when"].dropna()
    assert pd.api.types.is_datetime64_any_dtype(when.dtype)  # binned as numbers, back as dates
    assert (when > WHEN + pd.Timedelta(days=3653)).all()


def _spent(ledger) -> float:
    """Σε over the pure and the approximate (category discovery) entries: basic composition."""
    return math.fsum(e.epsilon for e in ledger if e.accounting in ("pure", "approx"))


# -- the tests ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method, seed", FITS)
def test_no_canary_in_the_output_schema_ledger_or_pickle(fitted, method, seed):
    """Everything the fit releases or keeps, for 5 seeds of MST and one each of AIM and DPView (see the module
    docstring for why a canary's bucket is released with probability about 6.4e-4 per numeric canary and fit)."""
    pipe = fitted(method, seed)
    table = pipe.named_steps_["table"]
    assert pipe.privacy_ledger_.is_private
    assert _spent(table.privacy_ledger_) == pytest.approx(PRE_EPSILON, rel=1e-12)
    for name in NUMBERS:  # the default path is under test: adaptive DP bins for every numeric column
        assert table.schema_[name]["strategy"] == "adaptive"
    _assert_sample_clean(pipe.sample(random_state=seed))
    _assert_text_clean(str(table.schema_), "schema_")
    # The JSON text to_json() writes.
    _assert_text_clean(json.dumps(table.schema_, default=str), "the schema as JSON")
    _assert_stored_clean(table.schema_, "schema_")
    ledger = pipe.privacy_ledger_.to_frame()
    _assert_text_clean(ledger.to_string(), "the ledger")
    _assert_text_clean(" ".join(e.description for e in pipe.privacy_ledger_), "the ledger's descriptions")
    _assert_stored_clean(pipe.privacy_ledger_, "ledger")
    _assert_pickle_clean(pipe)


def _figures(monkeypatch) -> dict:
    """Spy on every figure the report saves: its lines' data, its texts (titles, tick labels, legends) and its
    axes' limits."""
    seen = {}
    original = report_module._save

    from matplotlib import dates
    from matplotlib.text import Text

    date_formatters = (dates.AutoDateFormatter, dates.ConciseDateFormatter, dates.DateFormatter)

    def spy(fig, path):
        seen[path.name] = {
            "lines": [(np.asarray(line.get_xdata()), np.asarray(line.get_ydata()))
                      for ax in fig.axes for line in ax.get_lines()],
            "texts": [t.get_text() for t in fig.findobj(Text)],
            "limits": [lim for ax in fig.axes for lim in (*ax.get_xlim(), *ax.get_ylim())],
            # matplotlib's date axes are in days since 1970-01-01
            "date_limits": [lim for ax in fig.axes for axis, lims in ((ax.xaxis, ax.get_xlim()), (ax.yaxis,
                            ax.get_ylim())) if isinstance(axis.get_major_formatter(), date_formatters)
                            for lim in lims],
        }
        return original(fig, path)

    monkeypatch.setattr(report_module, "_save", spy)
    return seen


@pytest.mark.parametrize("method, seed", [("mst", 0), ("aim", 0)])
def test_no_canary_in_the_report(fitted, table, method, seed, tmp_path, monkeypatch):
    """The report reads the real data and is the data owner's (doc/privacy.md), but promises never to show a value
    only the most extreme records hold (a real quantile needs 10 other records on each side; write_report's
    docstring) and shows categories through the DP-fitted discretization.  Looked for in the page's text and in
    every plotted line, text and axis limit."""
    pytest.importorskip("matplotlib")
    seen = _figures(monkeypatch)
    pipe = fitted(method, seed)
    synthetic = pipe.sample(random_state=seed)  # the same records whichever tests ran before
    disc = pipe.named_steps_["table"]
    written = write_report(tmp_path / "r.html", real=table, synthetic=synthetic, real_codes=disc.transform(table),
                           synthetic_codes=disc.transform(synthetic), ledger=pipe.privacy_ledger_, delta=DELTA,
                           plots=True)
    html = written["html"].read_text(encoding="utf-8")
    assert "data:image/png;base64," in html and set(seen) >= {"columns.png", "numeric.png", "associations.png"}
    _assert_text_clean(_DATA_URI.sub("", html), "the report")
    for name, figure in seen.items():
        _assert_text_clean("\n".join(figure["texts"]), name)
        for x, y in figure["lines"]:
            for values in (x, y):
                if np.issubdtype(values.dtype, np.datetime64):
                    assert (values > np.datetime64("1913-07-04")).all(), f"{name} plots the canary date"
                    continue
                values = values.astype(np.float64)
                for canary_name, canary in NUMBERS.items():
                    assert not _near(values, canary).any(), f"{name} plots the {canary_name} canary"
        for canary_name, canary in NUMBERS.items():
            assert not _near(figure["limits"], canary).any(), f"{name}'s axes reach the {canary_name} canary"
        assert all(low > _CANARY_DAYS + 3653 for low in figure["date_limits"]), f"{name}'s date axis reaches 1903"
    # The spy sees what is drawn: the real quantiles at every level (n = 2000: h = 1999 p lies in [10, 1989] for
    # p = 1 %..99 %, so each keeps 10 records on each side).
    lines = seen["numeric.png"]["lines"]
    for column in NUMBERS:
        real_quantiles = [x for x, _ in lines if x.size == 99]
        ordered = np.sort(table[column].to_numpy(dtype=np.float64))
        assert any(np.array_equal(q.astype(float), np.quantile(ordered, np.arange(1, 100) / 100))
                   for q in real_quantiles), f"the spy does not see the real quantiles of {column}"


@pytest.mark.slow
def test_no_canary_through_the_command_line(table, tmp_path):
    """``skdpsynth synthesize in.csv --epsilon 1 --preprocessing-epsilon 0.2 --report r.html`` with no schema: the
    CSV it writes and the report (plots included, their base64 left out) show no canary."""
    table.to_csv(tmp_path / "in.csv", index=False)
    run = subprocess.run([sys.executable, "-m", "skdpsynth", "synthesize", str(tmp_path / "in.csv"), "-o",
                          str(tmp_path / "out.csv"), "--epsilon", str(EPSILON), "--preprocessing-epsilon",
                          str(PRE_EPSILON), "--seed", "0", "--report", str(tmp_path / "r.html")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    _assert_text_clean(run.stdout + run.stderr, "the command's output")
    out = (tmp_path / "out.csv").read_text()
    assert len(out.splitlines()) > N // 2
    _assert_text_clean(out.replace(",", " "), "the synthetic CSV")  # commas separate fields, not thousands
    _assert_text_clean(_DATA_URI.sub("", (tmp_path / "r.html").read_text(encoding="utf-8")), "the report")


def test_every_adaptive_release_is_a_ledger_entry_and_the_costs_sum_to_the_budget(table, monkeypatch):
    """The preprocessing of the default path: per numeric column exactly two releases, the magnitude histogram
    (the bounds; three quarters of the column's share) and the cells' histogram (the rest), each a ledger entry
    naming the column and what was released, with the number of values drawn; every noise draw is paid for by
    exactly one entry (tests/privacy_spies.py), and the entries sum to the preprocessing budget."""
    spy = NoiseSpy(monkeypatch)
    disc = TableDiscretizer(epsilon=PRE_EPSILON, delta=DELTA / 2, random_state=0).fit(table)
    reconcile(disc.privacy_ledger_, spy)
    entries = list(disc.privacy_ledger_)
    assert set(NUMBERS) <= set(disc.numeric_columns_)
    # numeric_epsilon_fraction=None: in proportion to the columns released, an adaptive numeric column counting
    # twice; then split evenly over the numeric columns
    discovered = [c for c in disc.categorical_columns_ if any(e.description == f"categories of column {c!r}"
                                                              for e in entries)]
    weight = 2 * len(disc.numeric_columns_)
    numeric_share = PRE_EPSILON * weight / (weight + len(discovered)) / len(disc.numeric_columns_)
    adaptive = disc.discretizers_["adaptive"]
    for name in disc.numeric_columns_:
        mine = [e for e in entries if repr(name) in e.description]
        # A float column also releases its kinds (decimals, missing values): 30% of the non-bounds quarter.
        floating = not pd.api.types.is_integer_dtype(adaptive.dtypes_[name])
        kinds = [f"kinds of column {name!r}: noisy counts of its values by decimals (0 to 6, finer)"] if floating \
            else []
        # A float column's missing values are counted with its magnitudes (a record is in one of those counts).
        missing = " and of its missing values" if floating else ""
        # A date column's first histogram counts calendar years (1678 .. 2262), the others' magnitudes.
        buckets = "585 public buckets (bucket_edges)" if name in disc.date_dtypes_ else "sign(x)*2^k magnitude buckets"
        assert [e.description for e in mine] == [
            f"bounds of column {name!r}: noisy histogram of {buckets}{missing}", *kinds,
            f"histogram of column {name!r}: noisy counts of {adaptive.cell_edges_[name].size - 1} cells "
            "(adaptive bins)"]
        bounds, cells = mine[0], mine[-1]
        n_buckets = 585 if name in disc.date_dtypes_ else 259
        assert bounds.epsilon == pytest.approx(0.75 * numeric_share) and bounds.n_values == n_buckets + floating
        assert cells.epsilon == pytest.approx((0.25 * 0.7 if kinds else 0.25) * numeric_share)
        assert math.fsum(e.epsilon for e in mine) == pytest.approx(numeric_share)
        assert cells.n_values == adaptive.cell_weights_[name].size
    categories = [e for e in entries if e.description.startswith("categories of column")]
    assert len(categories) == len(disc.categorical_columns_)
    float_columns = sum(not pd.api.types.is_integer_dtype(adaptive.dtypes_[c]) for c in disc.numeric_columns_)
    assert len(categories) + 2 * len(disc.numeric_columns_) + float_columns == len(entries)
    assert _spent(disc.privacy_ledger_) == pytest.approx(PRE_EPSILON, rel=1e-12)
    assert math.fsum(e.delta for e in entries) <= DELTA / 2


def test_a_pipelines_ledger_pays_for_every_draw_and_states_the_budget(table, monkeypatch):
    spy = NoiseSpy(monkeypatch)
    pipe = _fit(table, "mst", 0)
    counts = reconcile(pipe.privacy_ledger_, spy)
    assert counts["discrete_laplace"] > 0 and counts["discrete_gaussian"] > 0
    assert pipe.privacy_ledger_.epsilon(DELTA) <= EPSILON * (1 + 1e-9)


def _fitted_state(pipe) -> dict:
    disc = pipe.named_steps_["table"].discretizers_["adaptive"]
    return {"schema": pipe.named_steps_["table"].schema_,
            **{attr: getattr(disc, attr) for attr in ("bounds_", "bin_edges_", "cell_edges_", "cell_weights_",
                                                      "bin_cells_", "n_bins_", "lattice_steps_")}}


def _assert_same(a, b, path="state"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=path)
    else:
        assert a == b, path


@pytest.mark.parametrize("without", ["canaries", "canary-income", "canary-balance", "canary-visits"])
def test_the_fit_reads_the_canaries_only_through_the_mechanisms(table, without, monkeypatch):
    """Fit the pipeline (the CLI's, with the city's categories public so that the categorical release does not
    depend on which values occur), then fit it again on the table without the canary record(s) while every
    mechanism replays the first fit's releases (tests/privacy_spies.py): the same mechanisms are called with the
    same public arguments, and every fitted bound, edge, cell, weight and bin, the schema and the synthetic
    records are identical.  So a canary reaches the fit only through the noisy counts, whose release is ε-DP:
    no min/max, no edge or cell at a data value, no stored record."""
    schema = {"city": {"type": "categorical", "categories": ["Kobe", "Lima", "Oslo", "Pune", "Rome"],
                       "handle_unknown": "other"}}
    frame = table  # dates too: they are binned as numbers (days since 1970)

    def fit(data):
        pipe = build_pipeline(schema, method="mst", epsilon=EPSILON, delta=DELTA, n_bins="auto", seed=3, verbose=0,
                              preprocessing_epsilon=PRE_EPSILON)
        return pipe.fit(data)

    with monkeypatch.context() as recording:
        spy = NoiseSpy(recording)
        first = fit(frame)
    replay = Replay(monkeypatch, spy)
    rows = list(CANARY_ROWS.values()) if without == "canaries" else [CANARY_ROWS[without.split("-")[1]]]
    second = fit(frame.drop(index=rows))
    assert replay.unused() == {}
    _assert_same(_fitted_state(first), _fitted_state(second))
    pd.testing.assert_frame_equal(first.sample(), second.sample())


def test_the_fitted_schema_exports_when_no_category_was_released(fitted):
    """schema_'s docstring: without a PrivacyLeakWarning it "may be exported (to_json) and reused as a public
    schema".  A column of identifiers, each held by one record, releases no category."""
    ids = pd.DataFrame({"id": [f"user-{i}" for i in range(500)], "x": np.arange(500) % 7})
    table = TableDiscretizer(epsilon=1.0, delta=DELTA, random_state=0).fit(ids)  # every id once: none released
    assert table.schema_["id"]["categories"] == []
    text = table.to_json()
    _assert_text_clean(text, "to_json()")
    assert TableDiscretizer.from_json(text).schema == json.loads(text)


class DatesNotBinned(Exception):
    """The date column was not binned as numbers (it went to category discovery)."""


def test_a_one_off_date_never_shows_when_dates_are_binned(table, monkeypatch):
    """Once dates are binned as numbers (adaptive DP bins over their int64 nanoseconds), the one-off 1903 date (a
    negative number of nanoseconds among positive ones: another sign, so far outside the range's reach) must
    show nowhere, the column must come back as dates, and the fit must read it only through the mechanisms."""
    dates = table[["when", "income"]]
    with monkeypatch.context() as recording:
        spy = NoiseSpy(recording)
        first = TableDiscretizer(epsilon=PRE_EPSILON, delta=DELTA, random_state=5).fit(dates)
    if "bounds" not in first.schema_["when"]:
        raise DatesNotBinned(first.schema_["when"])
    sample = first.inverse_transform(first.transform(dates), random_state=0)
    assert pd.api.types.is_datetime64_any_dtype(sample["when"].dtype)
    assert (sample["when"].dropna() > WHEN + pd.Timedelta(days=3653)).all()
    _assert_text_clean(first.to_json(), "to_json()")
    _assert_stored_clean(first, "table")
    blob = pickle.dumps(first)
    assert struct.pack("<q", WHEN.value) not in blob and b"1903-07-04" not in blob
    Replay(monkeypatch, spy)
    second = TableDiscretizer(epsilon=PRE_EPSILON, delta=DELTA, random_state=5).fit(
        dates.drop(index=CANARY_ROWS["when"]))
    assert first.schema_ == second.schema_


# -- found while writing the canaries: not leaks, a crash of the default path ------------------------------------
def test_the_zero_cell_of_a_continuous_column_gets_a_finite_weight():
    """A continuous column's zero bucket is the one cell [0, 5e-324).  When the magnitude histogram's noise makes
    that bucket occupied (its noisy count above ln(50)/ε: probability 1 % for an empty bucket) and the cell's own
    noisy count stays under its threshold, the bucket's noisy count is spread over its cells by size: the single
    cell must get all of it, not leftover / 5e-324 * 5e-324 = inf."""
    from skdpsynth.preprocessing import _adaptive

    weights = _adaptive.noisy_cell_weights(np.array([251.0]), 469.4, np.array([0]), np.array([300.0]),
                                           np.array([5e-324]))
    assert weights.tolist() == [300.0]


def test_a_column_around_zero_fits_for_every_seed(table):
    """The balance column (-60k..60k, no exact zero) as the canary fits bin it (ε_b = 0.025): 600 seeds.  With the
    bug above a fit raises OverflowError with probability about 0.9 % (28 of seeds 0..2999: the zero bucket is
    inside the bounds and occupied by noise, its cell's noisy count under the threshold), so 600 seeded fits all
    pass only with probability 0.4 % while it stays."""
    from skdpsynth.preprocessing import DPKBinsDiscretizer

    column = table[["balance"]].drop(index=CANARY_ROWS["balance"])
    for seed in range(600):
        try:
            DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=0.1 / 3, output="code",
                               random_state=seed).fit(column)
        except ValueError as exc:  # no bucket passed: the documented refusal (11 of 3,000 seeds)
            assert "Could not estimate bounds" in str(exc)


def test_the_checks_find_a_canary_where_one_is_planted(fitted, table):
    """The checks above are not vacuous: each finds a canary planted where a leak would put it."""
    pipe = fitted("mst", 0)
    disc = pipe.named_steps_["table"].discretizers_["adaptive"]
    income_edges = disc.cell_edges_["income"]
    try:  # an edge at 0.5 % from the canary, as the canary's own cell would have
        disc.cell_edges_["income"] = np.append(income_edges, INCOME * 1.005)
        with pytest.raises(AssertionError, match="within 1 % of the income canary"):
            _assert_pickle_clean(pipe)
        disc.cell_edges_["income"] = np.append(income_edges, INCOME)
        with pytest.raises(AssertionError, match="income canary as"):
            _assert_pickle_clean(pipe)
    finally:
        disc.cell_edges_["income"] = income_edges
    _assert_pickle_clean(pipe)
    for text, match in [("bounds [0, 987,654,321]", "within 1 %"), ("max 9.88e+08", "within 1 %"),
                        ("max -8.766e8", "within 1 %"), ("345678", "within 1 %"),
                        ("city CANARY-7f3a", "one-off city"), ("since 1903", "year"), ("1903-07-04", "year")]:
        with pytest.raises(AssertionError, match=match):
            _assert_text_clean(text, "planted")
    for planted in ({"income": INCOME * 0.995}, {"visits": VISITS}, {"city": CITY}, {"when": WHEN}):
        synthetic = pipe.sample(50, random_state=0)
        column, value = next(iter(planted.items()))
        if column == "when":
            synthetic = synthetic.assign(when=pd.Timestamp("2016-01-01"))
        synthetic[column] = synthetic[column].astype(object)
        synthetic.loc[synthetic.index[0], column] = value
        with pytest.raises(AssertionError):
            _assert_sample_clean(synthetic)
    stored = {"kept": {"rows": np.array([1.0, WHEN.value / 1e6]), "n": 3}}
    with pytest.raises(AssertionError, match="10 years of the canary date"):
        _assert_stored_clean(stored, "planted")
    assert _numbers("a 1,234.5 b 9.877e+08 c 42") == [1234.5, 9.877e8, 42.0]
