"""Tests of DPKBinsDiscretizer (skdpsynth.preprocessing.discretizer)."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from skdpsynth.privacy import ReproducibleNoiseWarning
from skdpsynth import MSTSynthesizer
from skdpsynth.preprocessing import discretizer
from skdpsynth.preprocessing.discretizer import DPKBinsDiscretizer, _bounds_threshold, _dp_quantile
from skdpsynth.privacy import PrivacyLedger, PrivacyLeakWarning




@pytest.fixture
def ages():
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "age": rng.integers(17, 91, size=2000),
        "income": rng.uniform(0, 1000, size=2000),
    })


# -- public bounds ---------------------------------------------------------------
def test_public_bounds_exact_edges_no_ledger_no_warning(ages):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # seeded on purpose
        disc = DPKBinsDiscretizer(n_bins={"age": 5, "income": 4},
                                  bounds={"age": (17, 90), "income": (0, 1000)}, epsilon=1.0)
        assert disc.fit(ages) is disc
        out = disc.transform(ages)
    np.testing.assert_allclose(disc.bin_edges_["age"], np.linspace(17, 90, 6), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(disc.bin_edges_["income"], [0, 250, 500, 750, 1000])
    assert len(disc.privacy_ledger_) == 0  # epsilon given but nothing needed it
    assert disc.bounds_ == {"age": (17.0, 90.0), "income": (0.0, 1000.0)}
    assert disc.n_bins_ == {"age": 5, "income": 4}
    assert list(out.columns) == ["age", "income"]
    assert out.index.equals(ages.index)
    cats = out["age"].cat.categories
    assert isinstance(cats, pd.IntervalIndex) and cats.closed == "left" and out["age"].cat.ordered
    assert len(cats) == 5
    # Each value lies in its interval.
    for value, interval in zip(ages["income"], out["income"]):
        assert value in interval


def test_clipping_and_closed_last_bin():
    X = pd.DataFrame({"x": [-5.0, 0.0, 2.5, 4.999, 5.0, 10.0, 7.5, 1e9, -1e300]})
    disc = DPKBinsDiscretizer(n_bins=4, bounds=(0, 10), output="code").fit(X)
    codes = disc.transform(X)["x"].tolist()
    # bins [0,2.5) [2.5,5) [5,7.5) [7.5,10]; finite out-of-range values go to the end bins
    assert codes == [0, 0, 1, 1, 2, 3, 3, 3, 0]
    assert list(disc.transform(X)["x"].cat.categories) == [0, 1, 2, 3]


def test_full_category_list_even_when_bins_empty():
    X = pd.DataFrame({"x": [0.1, 0.2]})
    out = DPKBinsDiscretizer(n_bins=6, bounds=(0, 6)).fit_transform(X)
    assert len(out["x"].cat.categories) == 6
    assert out["x"].value_counts().sort_index().tolist() == [2, 0, 0, 0, 0, 0]


# -- inferred bounds -------------------------------------------------------------
def test_inferred_bounds_warn_once_naming_exactly_those_columns():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 9.0], "c": [0.0, 1.0, 2.0]})
    with pytest.warns(PrivacyLeakWarning) as record:
        disc = DPKBinsDiscretizer(n_bins=2, bounds={"b": (0, 10)}).fit(X)
    leaks = [w for w in record if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1
    msg = str(leaks[0].message)
    assert "'a'" in msg and "'c'" in msg and "'b'" not in msg
    assert disc.bounds_ == {"a": (1.0, 3.0), "b": (0.0, 10.0), "c": (0.0, 2.0)}
    # Nothing spent; the leak is recorded, naming the same columns.
    assert [e.accounting for e in disc.privacy_ledger_] == ["leak"]
    assert disc.privacy_ledger_.leaks[0].details["columns"] == ["a", "c"]


def test_no_warning_with_public_bounds_or_epsilon():
    X = pd.DataFrame({"a": np.random.default_rng(1).normal(50, 10, 3000)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # seeded on purpose
        DPKBinsDiscretizer(bounds=(0, 100)).fit(X)
        DPKBinsDiscretizer(epsilon=1.0, random_state=0).fit(X)
        DPKBinsDiscretizer(strategy="quantile", epsilon=1.0, random_state=0).fit(X)


def test_quantile_without_epsilon_warns_about_edges():
    X = pd.DataFrame({"a": np.arange(100.0)})
    with pytest.warns(PrivacyLeakWarning, match="quantile"):
        disc = DPKBinsDiscretizer(n_bins=4, strategy="quantile", bounds=(0, 100)).fit(X)
    np.testing.assert_allclose(disc.bin_edges_["a"], [0, 24.75, 49.5, 74.25, 100])


# -- DP bounds -------------------------------------------------------------------
def test_dp_bounds_power_of_two_and_ledger():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(50, 10, 5000), "b": rng.normal(50, 10, 5000)})
    disc = DPKBinsDiscretizer(n_bins=5, epsilon=2.0, random_state=0).fit(X)
    # Two columns need DP bounds: 1.0 each, one Laplace histogram per column.
    entries = disc.privacy_ledger_.entries
    assert len(entries) == 2
    assert all(e.mechanism == "discrete laplace" and e.epsilon == 1.0 and e.sensitivity == 1.0 and e.scale == 1.0
               for e in entries)
    assert "'a'" in entries[0].description and "'b'" in entries[1].description
    assert disc.privacy_ledger_.total_epsilon() == pytest.approx(2.0, abs=1e-12)
    # With eps=1 the threshold is ln(259/0.02) ≈ 9.47. Expected bucket counts of N(50, 10), n=5000:
    # (16,32]: 5000*Phi(-1.8) ≈ 180, (32,64] and (64,128]: thousands / ≈ 400 -> pass (failure ~e^-170);
    # (8,16]: ≈ 1.7, (128,256]: ≈ 0 -> each passes with probability about 1% or less.
    assert _bounds_threshold(1.0) == pytest.approx(math.log(259 / 0.02))
    for c in "ab":
        assert disc.bounds_[c] == (16.0, 128.0)
        edges = disc.bin_edges_[c]
        np.testing.assert_allclose(edges, np.linspace(16, 128, 6))
    # Reproducible with a fixed random_state.
    again = DPKBinsDiscretizer(n_bins=5, epsilon=2.0, random_state=0).fit(X)
    assert again.bounds_ == disc.bounds_


def test_dp_bounds_negative_and_zero_buckets():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.uniform(-100, -3, 4000), "z": np.zeros(4000)})
    disc = DPKBinsDiscretizer(n_bins=3, epsilon=2.0, random_state=1).fit(X)
    # a: magnitudes in (2,4] .. (64,128] all hold hundreds of points -> [-128, -2].
    assert disc.bounds_["a"] == (-128.0, -2.0)
    # z: only the zero bucket passes -> degenerate [0, 0] widened to [-0.5, 0.5].
    assert disc.bounds_["z"] == (-0.5, 0.5)
    assert disc.transform(X)["z"].cat.codes.unique().tolist() == [1]


def test_dp_bounds_fail_clearly_with_too_little_data():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="bounds=.*larger epsilon"):
        DPKBinsDiscretizer(epsilon=0.01, random_state=0).fit(X)


# -- DP quantiles ----------------------------------------------------------------
def test_dp_quantiles_concentrate_and_spend_exactly_epsilon():
    n, k, eps = 10_000, 4, 50.0
    x = np.random.default_rng(5).uniform(0, 1, n)
    disc = DPKBinsDiscretizer(n_bins=k, strategy="quantile", bounds=(0, 1), epsilon=eps,
                              random_state=0).fit(pd.DataFrame({"u": x}))
    edges = disc.bin_edges_["u"]
    assert edges[0] == 0 and edges[-1] == 1 and np.all(np.diff(edges) > 0)
    # Each quantile gets eps_q = 50/3. EM concentration: choosing a point whose rank error exceeds t has
    # probability <= (total length 1) e^{-eps_q t/2} / (mass of the ~2 intervals at rank error <= 1,
    # length ~2/n, weight >= e^{-eps_q/2}) = (n/2) e^{-eps_q (t-1)/2} <= 1e-6 for t >= 3.7.
    # We allow 10 ranks (covers unusually short gaps).
    ecdf = np.searchsorted(np.sort(x), edges[1:-1]) / n
    np.testing.assert_allclose(ecdf, [0.25, 0.5, 0.75], atol=10 / n)
    # Against the true quantiles add 5 SD of the empirical quantile, sqrt(q(1-q)/n) <= 0.005.
    np.testing.assert_allclose(edges[1:-1], [0.25, 0.5, 0.75], atol=10 / n + 5 * 0.005)
    led = disc.privacy_ledger_
    assert len(led) == k - 1
    # The rank utility moves by max(q, 1 - q) under add/remove: the weights are calibrated to it.
    assert [(e.mechanism, e.sensitivity) for e in led] == [("exponential", 0.75), ("exponential", 0.5),
                                                           ("exponential", 0.75)]
    assert abs(led.total_epsilon() - eps) <= 1e-12


def test_dp_quantiles_with_dp_bounds_budget_split():
    rng = np.random.default_rng(7)
    X = pd.DataFrame({"a": rng.normal(50, 10, 3000), "b": rng.exponential(20, 3000)})
    disc = DPKBinsDiscretizer(n_bins=5, strategy="quantile", epsilon=2.0, bounds_epsilon_fraction=0.25,
                              random_state=0).fit(X)
    led = disc.privacy_ledger_.to_frame()
    assert abs(disc.privacy_ledger_.total_epsilon() - 2.0) <= 1e-12
    for c in "ab":
        rows = led[led["description"].str.contains(f"'{c}'")]
        assert math.fsum(rows["epsilon"]) == pytest.approx(1.0, abs=1e-12)
        bounds_rows = rows[rows["mechanism"] == "discrete laplace"]
        assert bounds_rows["epsilon"].tolist() == [0.25]
        q_rows = rows[rows["mechanism"] == "exponential"]
        assert len(q_rows) == 4 and np.allclose(q_rows["epsilon"], 0.75 / 4)
        assert np.all(np.diff(disc.bin_edges_[c]) > 0)
    again = DPKBinsDiscretizer(n_bins=5, strategy="quantile", epsilon=2.0, bounds_epsilon_fraction=0.25,
                               random_state=0).fit(X)
    for c in "ab":
        np.testing.assert_array_equal(again.bin_edges_[c], disc.bin_edges_[c])


def test_quantile_one_bin_needs_no_budget():
    X = pd.DataFrame({"a": [1.0, 2.0]})
    disc = DPKBinsDiscretizer(n_bins=1, strategy="quantile", bounds=(0, 4), epsilon=1.0).fit(X)
    assert len(disc.privacy_ledger_) == 0
    np.testing.assert_array_equal(disc.bin_edges_["a"], [0, 4])


class _Spy(np.ndarray):
    """Zeros standing in for the Gumbel noise of a Gumbel-max draw; they record what they are added to, which
    is the mechanism's log-weight of every interval."""

    seen: list = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _Spy.seen.append(next(np.array(x, dtype=float) for x in inputs if not isinstance(x, _Spy)))
        return getattr(ufunc, method)(*[np.asarray(x).view(np.ndarray) for x in inputs], **kwargs)


def _quantile_log_density(data, q: float, eps: float, x: np.ndarray) -> np.ndarray:
    """The exact log-density at ``x`` of one DP quantile over [0, 1], from the log-weights the mechanism
    samples with: interval i (between consecutive points of 0, the sorted data, 1) has probability
    w_i / sum(w), spread uniformly over its length."""
    points = np.concatenate([[0.0], np.sort(np.asarray(data, dtype=float)), [1.0]])
    _Spy.seen.clear()
    _dp_quantile(points[1:-1], 0.0, 1.0, q, eps, np.random.default_rng(0))
    (log_w,) = _Spy.seen
    with np.errstate(divide="ignore", invalid="ignore"):  # empty intervals: never an output, never looked up
        log_density = log_w - np.log(np.diff(points)) - np.logaddexp.reduce(log_w[np.isfinite(log_w)])
    return log_density[np.searchsorted(points, x, side="right") - 1]


def _quantile_privacy_loss(d, d_prime, q: float, eps: float) -> float:
    """max over outputs x in [0, 1] of |log p_D(x) - log p_D'(x)|: both densities are constant between the
    points of D and D', so their midpoints cover every output (a set of measure zero aside)."""
    cuts = np.unique(np.concatenate([[0.0, 1.0], d, d_prime]))
    x = (cuts[:-1] + cuts[1:]) / 2
    return float(np.max(np.abs(_quantile_log_density(d, q, eps, x) - _quantile_log_density(d_prime, q, eps, x))))


def test_dp_quantile_costs_exactly_the_epsilon_it_is_charged(monkeypatch):
    """The exact privacy loss of one DP quantile over neighbouring data sets (one record added), computed from
    its output density: never above the epsilon charged, and nearly reached.  The rank utility -|i - q n| moves
    by max(q, 1 - q) under add/remove, so weights calibrated to a sensitivity of 1 spend only max(q, 1 - q) of
    the epsilon charged (a median at half its budget)."""
    monkeypatch.setattr(discretizer, "gumbel", lambda rng, shape: np.zeros(shape).view(_Spy))
    eps = 2.0
    grid = [0.0625, 0.25, 0.5, 0.75, 0.9375]
    worst = {}
    for q in (0.1, 0.25, 0.5, 0.75):
        loss = 0.0
        for n in range(4):
            for d in itertools.combinations_with_replacement(grid, n):
                for added in [0.0, 0.03, 0.6, 1.0] + grid:
                    loss = max(loss, _quantile_privacy_loss(np.array(d), np.sort(np.r_[d, added]), q, eps))
        assert loss <= eps * (1 + 1e-12), q
        worst[q] = loss
    # The median, D = {0.0625, 0.0625, 1, 1, 1} and a record added at 0.03: the loss is 0.9997 eps.
    d = np.array([0.0625, 0.0625, 1.0, 1.0, 1.0])
    assert _quantile_privacy_loss(d, np.sort(np.r_[d, 0.03]), 0.5, eps) > 0.99 * eps
    # Beyond what the old calibration could spend (q = 0.1 needs larger data sets to come near eps).
    assert all(worst[q] > max(q, 1 - q) * eps for q in (0.25, 0.5, 0.75))
    monkeypatch.undo()
    X = pd.DataFrame({"u": np.random.default_rng(8).uniform(0, 1, 50)})
    disc = DPKBinsDiscretizer(n_bins=4, strategy="quantile", bounds=(0, 1), epsilon=1.5, random_state=0).fit(X)
    assert [(e.epsilon, e.sensitivity) for e in disc.privacy_ledger_] == [(0.5, 0.75), (0.5, 0.5), (0.5, 0.75)]
    assert disc.privacy_ledger_.total_epsilon() == pytest.approx(1.5, abs=1e-15)


# -- inverse_transform -------------------------------------------------------------
def test_inverse_uniform_draws_inside_bins_and_uniform(ages):
    disc = DPKBinsDiscretizer(n_bins={"age": 5, "income": 4},
                              bounds={"age": (17, 90), "income": (0, 1000)}, random_state=0).fit(ages)
    codes = pd.DataFrame({"age": np.repeat([0, 1, 2, 3, 4], 400), "income": np.repeat([0, 1, 2, 3], 500)})
    back = disc.inverse_transform(codes)
    assert list(back.columns) == ["age", "income"]
    assert back.dtypes.tolist() == ages.dtypes.tolist()
    inc_edges = disc.bin_edges_["income"]
    for code in range(4):
        vals = back["income"][codes["income"] == code].to_numpy()
        lo, hi = inc_edges[code], inc_edges[code + 1]
        assert np.all((vals >= lo) & (vals < hi))
        se = (hi - lo) / math.sqrt(12 * vals.size)  # SD of a uniform / sqrt(m)
        assert abs(vals.mean() - (lo + hi) / 2) < 5 * se
    age_edges = disc.bin_edges_["age"]
    for code in range(5):
        vals = back["age"][codes["age"] == code].to_numpy()
        lo, hi = age_edges[code], age_edges[code + 1]
        assert np.all(vals >= lo) and (np.all(vals < hi) if code < 4 else np.all(vals <= hi))
        # Uniform over the bin's integers.
        ints = np.arange(math.ceil(lo), (math.floor(hi) if code == 4 else math.ceil(hi) - 1) + 1)
        se = math.sqrt((ints.size ** 2 - 1) / 12 / vals.size)
        assert abs(vals.mean() - ints.mean()) < 5 * se
    # A fresh call gives fresh draws; refitting with the same seed reproduces the sequence.
    second = disc.inverse_transform(codes)
    assert not second["income"].equals(back["income"])
    disc2 = clone(disc).fit(ages)
    assert disc2.inverse_transform(codes).equals(back)


def test_inverse_midpoint_exact_and_integer_rules():
    X = pd.DataFrame({"f": np.array([0.5, 9.0], dtype=np.float32), "i": np.array([0, 2], dtype=np.int16)})
    disc = DPKBinsDiscretizer(n_bins={"f": 4, "i": 4}, bounds={"f": (0, 10), "i": (0, 2)}).fit(X)
    codes = pd.DataFrame({"f": [0, 1, 2, 3], "i": [0, 1, 2, 3]})
    back = disc.inverse_transform(codes, method="midpoint")
    np.testing.assert_array_equal(back["f"], np.array([1.25, 3.75, 6.25, 8.75], dtype=np.float32))
    assert back.dtypes.tolist() == [np.float32, np.int16]
    # i bins: [0,.5) [.5,1) [1,1.5) [1.5,2]: integers 0, none, 1, 2. The empty bin [.5,1) gives
    # round(0.75) = 1 (nearest integer to its midpoint).
    assert back["i"].tolist() == [0, 1, 1, 2]
    drawn = disc.inverse_transform(codes)
    assert drawn["i"].tolist() == [0, 1, 1, 2]


def test_round_trip(ages):
    disc = DPKBinsDiscretizer(n_bins={"age": 5, "income": 7},
                              bounds={"age": (17, 90), "income": (0, 1000)}, random_state=2).fit(ages)
    t = disc.transform(ages)
    for method in ("uniform", "midpoint"):
        again = disc.transform(disc.inverse_transform(t, method=method))
        pd.testing.assert_frame_equal(again, t)
    # Integer codes as input too.
    code_frame = t.apply(lambda s: s.cat.codes.astype("int64"))
    pd.testing.assert_frame_equal(disc.transform(disc.inverse_transform(code_frame)), t)


def test_mst_reads_domain_from_dtype_without_leak():
    rng = np.random.default_rng(11)
    n = 1500
    X = pd.DataFrame({
        "age": rng.integers(17, 91, n),
        "hours": rng.normal(40, 8, n),
        "score": rng.uniform(0, 1, n),
    })
    disc = DPKBinsDiscretizer(n_bins={"age": 5, "hours": 4, "score": 3},
                              bounds={"age": (17, 90), "hours": (0, 100), "score": (0, 1)}, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        t = disc.fit_transform(X)
        synth = MSTSynthesizer(epsilon=1, random_state=0).fit(t)
    assert list(synth.domain_.shape) == [5, 4, 3]
    sample = synth.sample(200)
    for c in X.columns:
        assert sample[c].dtype == t[c].dtype
    back = disc.inverse_transform(sample)
    assert list(back.columns) == list(X.columns) and back.dtypes.tolist() == X.dtypes.tolist()
    assert back["age"].between(17, 90).all() and back["score"].between(0, 1).all()


# -- sklearn ---------------------------------------------------------------------
def test_sklearn_api(ages):
    disc = DPKBinsDiscretizer(n_bins=3, bounds=(0, 1000), epsilon=0.5, output="code", random_state=4)
    params = disc.get_params()
    assert params["n_bins"] == 3 and params["bounds"] == (0, 1000) and params["output"] == "code"
    c = clone(disc)
    assert c.get_params() == params and not hasattr(c, "bin_edges_")
    pipe = Pipeline([("disc", disc)])
    out = pipe.fit_transform(ages)
    assert list(out.columns) == ["age", "income"]
    assert list(pipe.get_feature_names_out()) == ["age", "income"]
    assert disc.n_features_in_ == 2 and list(disc.feature_names_in_) == ["age", "income"]
    assert disc.dtypes_ == {"age": ages["age"].dtype, "income": np.dtype("float64")}
    assert isinstance(disc.privacy_ledger_, PrivacyLedger)


def test_array_input():
    X = np.array([[0.0, 10.0], [1.0, 20.0], [2.0, 30.0]])
    disc = DPKBinsDiscretizer(n_bins=2, bounds={"x0": (0, 2), "x1": (10, 30)}, output="code").fit(X)
    out = disc.transform(X)
    assert list(out.columns) == ["x0", "x1"]
    assert out["x0"].tolist() == [0, 1, 1] and out["x1"].tolist() == [0, 1, 1]
    assert list(disc.get_feature_names_out()) == ["x0", "x1"]


def test_transform_reorders_columns_by_name(ages):
    disc = DPKBinsDiscretizer(n_bins=3, bounds=(0, 1000)).fit(ages)
    pd.testing.assert_frame_equal(disc.transform(ages[["income", "age"]]), disc.transform(ages))
    with pytest.raises(ValueError, match="missing"):
        disc.transform(ages[["age"]])


# -- hostile inputs ------------------------------------------------------------
@pytest.mark.parametrize("X", [pd.DataFrame(), pd.DataFrame(index=range(3)), np.empty((4, 0))])
def test_no_columns(X):
    with pytest.raises(ValueError, match=r"at least one column: got 0 feature\(s\)"):
        DPKBinsDiscretizer(bounds=(0, 1)).fit(X)


def test_zero_rows_with_public_metadata_or_dp_quantiles():
    """0 rows: whatever can be computed without the data (or by a DP mechanism) is, as for the synthesizers."""
    empty = pd.DataFrame({"age": np.array([], dtype=np.int64), "x": np.array([], dtype=float)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        disc = DPKBinsDiscretizer(n_bins={"age": 3}, bounds={"age": (0, 90)}, edges={"x": [0, 1, 2]},
                                  output="code").fit(empty)
    assert disc.bin_edges_["age"].tolist() == [0.0, 30.0, 60.0, 90.0] and len(disc.privacy_ledger_) == 0
    out = disc.transform(empty)
    assert out.shape == (0, 2) and list(out["age"].cat.categories) == [0, 1, 2]
    back = disc.inverse_transform(out)
    assert back.shape == (0, 2) and back.dtypes.tolist() == [np.int64, np.float64]
    # DP quantiles run their mechanism on no data: valid, strictly increasing edges within the bounds.
    quant = DPKBinsDiscretizer(n_bins=4, strategy="quantile", bounds=(0, 90), epsilon=1.0, random_state=0)
    edges = quant.fit(empty[["age"]]).bin_edges_["age"]
    assert edges[0] == 0 and edges[-1] == 90 and np.all(np.diff(edges) > 0)
    assert quant.privacy_ledger_.total_epsilon() == pytest.approx(1.0)
    # DP bounds run too, and find nothing above the threshold: the usual error, asking for public bounds.
    with pytest.raises(ValueError, match="Could not estimate bounds for column 'age'.*bounds="):
        DPKBinsDiscretizer(epsilon=1.0, random_state=0).fit(empty[["age"]])
    # Bounds or quantiles read from the data (no DP) cannot be read from nothing.
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="no values.*give public bounds"):
        DPKBinsDiscretizer().fit(empty[["age"]])
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="no values.*quantile.*epsilon"):
        DPKBinsDiscretizer(strategy="quantile", bounds=(0, 90)).fit(empty[["age"]])


def test_nan_raises_at_fit_and_transform():
    with pytest.raises(ValueError, match="missing values"):
        DPKBinsDiscretizer(bounds=(0, 1)).fit(pd.DataFrame({"a": [np.nan, np.nan]}))
    with pytest.raises(ValueError, match="missing values"):
        DPKBinsDiscretizer(epsilon=1.0).fit(pd.DataFrame({"a": [1.0, np.nan]}))
    disc = DPKBinsDiscretizer(bounds=(0, 1)).fit(pd.DataFrame({"a": [0.5]}))
    with pytest.raises(ValueError, match="missing values"):
        disc.transform(pd.DataFrame({"a": [0.5, np.nan]}))
    with pytest.raises(ValueError, match="missing values"):
        disc.transform(pd.DataFrame({"a": pd.array([1, None], dtype="Int64")}))


def test_single_distinct_value_widened():
    X = pd.DataFrame({"a": [7, 7, 7]})
    with pytest.warns(PrivacyLeakWarning):
        disc = DPKBinsDiscretizer(n_bins=2, output="code").fit(X)
    assert disc.bounds_["a"] == (6.5, 7.5)
    assert disc.inverse_transform(disc.transform(X), method="midpoint")["a"].tolist() == [7, 7, 7]


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_values_raise_naming_the_column(bad):
    """±inf is never a measurement: an error naming the column, in fit and transform, not a silent end bin."""
    X = pd.DataFrame({"ok": [1.0, 2.0, 3.0], "a": [1.0, 5.0, bad]})
    for kwargs in ({"bounds": (0, 10)}, {"epsilon": 1.0, "random_state": 0}, {"edges": {"a": [0, 5, 10]},
                                                                            "bounds": {"ok": (0, 4)}}):
        with pytest.raises(ValueError, match="Column 'a' has infinite values"):
            DPKBinsDiscretizer(n_bins=2, **kwargs).fit(X)
    with pytest.raises(ValueError, match="Column 'a' has infinite values"):
        DPKBinsDiscretizer(n_bins=2).fit(X)  # rejected before anything is read from the data: no leak
    disc = DPKBinsDiscretizer(n_bins=2, bounds=(0, 10)).fit(X.iloc[:2])
    with pytest.raises(ValueError, match="Column 'a' has infinite values"):
        disc.transform(X)
    with pytest.raises(ValueError, match="Column 'a' has infinite values"):
        disc.transform(X.astype(object))  # object columns of numbers are checked the same way


@pytest.mark.parametrize("col", [
    pd.Series(["a", "b"]), pd.Series([True, False]), pd.Series(["a", "b"], dtype="category"),
    pd.Series(pd.to_datetime(["2020-01-01", "2021-01-01"])),
])
def test_non_numeric_columns(col):
    with pytest.raises(TypeError, match="categorical encoder"):
        DPKBinsDiscretizer(bounds=(0, 1)).fit(pd.DataFrame({"c": col}))


@pytest.mark.parametrize("bounds", [(1, 1), (2, 1), (0, np.inf), (np.nan, 1), {"a": (0,)}, "ab", {"zz": (0, 1)}])
def test_bad_bounds(bounds):
    with pytest.raises(ValueError, match="bounds"):
        DPKBinsDiscretizer(bounds=bounds).fit(pd.DataFrame({"a": [0.5]}))


@pytest.mark.parametrize("kwargs, match", [
    ({"n_bins": 0}, "n_bins"), ({"n_bins": 2.5}, "n_bins"), ({"n_bins": True}, "n_bins"),
    ({"n_bins": {"b": 2}}, "n_bins"), ({"strategy": "kmeans"}, "strategy"), ({"output": "onehot"}, "output"),
    ({"epsilon": -1.0}, "epsilon"), ({"epsilon": np.inf}, "epsilon"),
    ({"bounds_epsilon_fraction": 1.0}, "bounds_epsilon_fraction"),
])
def test_bad_params(kwargs, match):
    params = {"bounds": (0, 1), **kwargs}
    with pytest.raises(ValueError, match=match):
        DPKBinsDiscretizer(**params).fit(pd.DataFrame({"a": [0.5]}))


def test_inverse_transform_rejects_bad_codes():
    disc = DPKBinsDiscretizer(n_bins=3, bounds=(0, 3)).fit(pd.DataFrame({"a": [1.0]}))
    with pytest.raises(ValueError, match="outside 0..2"):
        disc.inverse_transform(pd.DataFrame({"a": [0, 3]}))
    with pytest.raises(TypeError, match="Categorical of bins"):
        disc.inverse_transform(pd.DataFrame({"a": [0.5]}))
    with pytest.raises(ValueError, match="method"):
        disc.inverse_transform(pd.DataFrame({"a": [0]}), method="median")


# -- public edges ---------------------------------------------------------------------------------------
def test_public_edges_fix_the_bins_for_free_and_keep_a_point_mass():
    X = pd.DataFrame({"gain": np.r_[np.zeros(90, dtype=np.int64), np.arange(1, 11) * 900],
                      "age": np.arange(100) % 70 + 18})
    disc = DPKBinsDiscretizer(n_bins=4, bounds={"age": (18, 90)}, edges={"gain": [0, 1, 5000, 10000]},
                              output="code", random_state=0).fit(X)
    assert disc.bin_edges_["gain"].tolist() == [0.0, 1.0, 5000.0, 10000.0]
    assert disc.n_bins_ == {"gain": 3, "age": 4} and disc.bounds_["gain"] == (0.0, 10000.0)
    assert len(disc.privacy_ledger_) == 0
    codes = disc.transform(X)["gain"].to_numpy()
    assert (codes == 0).sum() == 90
    back = disc.inverse_transform(disc.transform(X))["gain"]
    assert back.dtype == np.int64 and ((back == 0) == (X["gain"] == 0)).all()  # [0, 1) holds only the integer 0


def test_public_edges_with_dp_quantiles_elsewhere_spends_only_on_the_others():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=500), "b": rng.integers(0, 100, 500)})
    disc = DPKBinsDiscretizer(n_bins=4, strategy="quantile", bounds={"a": (-5, 5)}, edges={"b": [0, 50, 100]},
                              epsilon=1.0, random_state=0).fit(X)
    assert disc.bin_edges_["b"].tolist() == [0.0, 50.0, 100.0]
    described = disc.privacy_ledger_.to_frame()["description"].tolist()
    assert len(described) == 3 and all("'a'" in d for d in described)


@pytest.mark.parametrize("edges, kwargs, match", [
    ({"b": [0]}, {}, "at least two"),
    ({"b": [0, 0, 1]}, {}, "strictly increasing"),
    ({"b": [0, np.inf]}, {}, "finite"),
    ({"b": "0,1"}, {}, "sequence"),
    ({"zz": [0, 1]}, {}, "not in the data"),
    ({"b": [0, 1, 2]}, {"bounds": {"b": (0, 2)}}, "both public edges and bounds"),
    ({"b": [0, 1, 2]}, {"n_bins": {"a": 3, "b": 5}}, "contradicts"),
])
def test_public_edges_validation(edges, kwargs, match):
    X = pd.DataFrame({"a": [1.0, 2.0], "b": [0, 1]})
    kwargs = {"bounds": {"a": (0, 3)}, **kwargs}
    with pytest.raises(ValueError, match=match):
        DPKBinsDiscretizer(edges=edges, **kwargs).fit(X)


# -- inverse_transform(random_state=...) -------------------------------------------
def test_inverse_transform_random_state_makes_the_draws_reproducible(ages):
    disc = DPKBinsDiscretizer(n_bins=4, bounds={"age": (17, 91), "income": (0, 1000)}, random_state=0).fit(ages)
    Xt = disc.transform(ages)
    first = disc.inverse_transform(Xt, random_state=1)
    pd.testing.assert_frame_equal(disc.inverse_transform(Xt, random_state=1), first)  # same seed, same values
    pd.testing.assert_frame_equal(disc.inverse_transform(Xt, random_state=np.random.default_rng(1)), first)
    assert not disc.inverse_transform(Xt, random_state=2)["income"].equals(first["income"])
    # None keeps the fitted stream: fresh values at each call, the sequence reproduced by a refit with the seed.
    a, b = disc.inverse_transform(Xt), disc.inverse_transform(Xt)
    assert not a["income"].equals(b["income"])
    refit = clone(disc).fit(ages)
    pd.testing.assert_frame_equal(refit.inverse_transform(Xt), a)
    # An explicit random_state does not advance the fitted stream.
    refit.inverse_transform(Xt, random_state=5)
    pd.testing.assert_frame_equal(refit.inverse_transform(Xt), b)
    # A Generator is drawn from (and advanced), as everywhere in the package.
    rng = np.random.default_rng(3)
    assert not disc.inverse_transform(Xt, random_state=rng)["income"].equals(
        disc.inverse_transform(Xt, random_state=rng)["income"])
    with pytest.raises(TypeError):
        disc.inverse_transform(Xt, "midpoint")  # method stays keyword-only


# -- columns at transform -----------------------------------------------------------
def test_transform_rejects_an_unknown_extra_column(ages):
    disc = DPKBinsDiscretizer(n_bins=3, bounds=(0, 1000)).fit(ages)
    with pytest.raises(ValueError, match=r"unexpected \['zip'\]"):
        disc.transform(ages.assign(zip=1.0))
    with pytest.raises(ValueError, match=r"unexpected \['zip'\]"):
        disc.inverse_transform(disc.transform(ages).assign(zip=1.0))
    with pytest.raises(ValueError, match="X has 3 features, but DPKBinsDiscretizer is expecting 2"):
        disc.transform(np.zeros((4, 3)))


def test_object_columns_of_numbers_are_binned_other_objects_are_not():
    X = pd.DataFrame({"a": np.array([0.5, 1, 2.5], dtype=object)})
    disc = DPKBinsDiscretizer(n_bins=3, bounds=(0, 3), output="code").fit(X)
    assert disc.transform(X)["a"].tolist() == [0, 1, 2]
    for bad in (["1", "2", "3"], [1.0, {"k": 1}, 2.0], [1.0, "Secret-7", 2.0]):
        with pytest.raises(TypeError, match="Column 'a' has (dtype object and )?non-numeric") as info:
            DPKBinsDiscretizer(bounds=(0, 3)).fit(pd.DataFrame({"a": np.array(bad, dtype=object)}))
        assert "Secret" not in str(info.value)  # no value of the private data in a message
    with pytest.raises(ValueError, match="Complex data not supported"):
        DPKBinsDiscretizer(bounds=(0, 3)).fit(pd.DataFrame({"a": [1 + 1j, 2.0]}))
