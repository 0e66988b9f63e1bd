"""DPKBinsDiscretizer(strategy="adaptive"): DP bins that keep a numeric column's shape, point masses and precision."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from skdpsynth.preprocessing import TableDiscretizer
from skdpsynth.preprocessing import _adaptive
from skdpsynth.preprocessing.discretizer import DPKBinsDiscretizer, _magnitude_buckets
from skdpsynth.privacy import PrivacyLeakWarning


def _magnitudes():
    """The default buckets' lower and upper ends and magnitudes (sign(x) * 2^k, and 0)."""
    buckets = _magnitude_buckets()
    return buckets.lows, buckets.highs, buckets.reach


def _round_trip(disc, frame, seed=0):
    return disc.inverse_transform(disc.transform(frame), random_state=seed)


def _zero_inflated(n=4000, seed=0):
    """Hours-like integers: 45% at exactly 40, 40% at 0, the rest spread over 1..99."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=n, p=[0.45, 0.40, 0.15])
    spread = rng.integers(1, 100, size=n)
    return pd.DataFrame({"hours": np.where(kind == 0, 40, np.where(kind == 1, 0, spread)).astype(np.int64)})


def test_point_masses_come_back_exactly_and_integers_stay_integers():
    frame = _zero_inflated()
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=1.0, output="code", random_state=0).fit(frame)
    back = _round_trip(disc, frame)["hours"]
    assert back.dtype == np.int64
    # Each value is in its own bin: the round trip of a point-mass value is that value, whatever the draw.
    for value in (0, 40):
        assert ((back == value) == (frame["hours"] == value)).all()
    lower, upper = disc.bounds_["hours"]
    assert back.min() >= lower and back.max() <= upper


def test_values_stay_in_their_bins_and_the_bounds():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"income": rng.lognormal(10, 1.2, size=3000)})
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=1.0, output="code", random_state=0).fit(frame)
    codes = disc.transform(frame)
    back = disc.inverse_transform(codes, random_state=3)
    assert (disc.transform(back)["income"].to_numpy() == codes["income"].to_numpy()).all()
    lower, upper = disc.bounds_["income"]
    assert back["income"].min() >= lower and back["income"].max() <= upper
    assert back["income"].dtype == np.float64


def test_shape_is_kept_inside_the_bins():
    """Exact counts (no budget): the round trip's empirical CDF differs from the data's by at most the mass of
    one cell of the largest bin, because values are drawn cell by cell in proportion to the cells' counts."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(60, 2, 5000), rng.exponential(30, 1000) + 70])
    frame = pd.DataFrame({"x": x})
    with pytest.warns(PrivacyLeakWarning):
        disc = DPKBinsDiscretizer(8, strategy="adaptive", output="code", random_state=0).fit(frame)
    back = _round_trip(disc, frame)["x"].to_numpy()
    grid = np.sort(x)
    ks = np.max(np.abs(np.searchsorted(np.sort(back), grid, side="right") - np.arange(1, x.size + 1))) / x.size
    weights = disc.cell_weights_["x"]
    largest_cell = weights.max() / weights.sum()
    # Within a cell the draw is uniform: the CDFs differ by at most one cell's mass, plus sampling error of the
    # draw (the DKW bound at 1e-6: sqrt(ln(2e6) / (2 n))).
    assert ks <= largest_cell + np.sqrt(np.log(2e6) / (2 * x.size))
    uniform = DPKBinsDiscretizer(8, bounds=(x.min(), x.max()), output="code").fit(frame)
    ks_uniform = np.max(np.abs(np.searchsorted(np.sort(_round_trip(uniform, frame)["x"].to_numpy()), grid,
                                               side="right") - np.arange(1, x.size + 1))) / x.size
    assert ks < ks_uniform / 3


def test_decimals_are_respected():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"price": np.round(rng.gamma(2.0, 10.0, size=2000), 2)})
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=1.0, decimals={"price": 2}, output="code",
                              random_state=0).fit(frame)
    back = _round_trip(disc, frame)["price"].to_numpy()
    assert np.array_equal(back, np.round(back, 2))
    assert not np.array_equal(back, np.round(back, 1))  # not coarser than asked
    uniform = DPKBinsDiscretizer(5, bounds=(0, 200), decimals=1, output="code").fit(frame)
    drawn = _round_trip(uniform, frame)["price"].to_numpy()
    assert np.array_equal(drawn, np.round(drawn, 1))


def test_ledger_splits_the_budget_between_bounds_and_cells():
    frame = _zero_inflated()
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=0.8, output="code", random_state=0).fit(frame)
    entries = list(disc.privacy_ledger_)
    assert [e.description.split(":")[0] for e in entries] == ["bounds of column 'hours'", "histogram of column 'hours'"]
    assert entries[0].epsilon == pytest.approx(0.6) and entries[1].epsilon == pytest.approx(0.2)
    assert disc.privacy_ledger_.total_epsilon() == pytest.approx(0.8)
    public = DPKBinsDiscretizer("auto", strategy="adaptive", bounds=(0, 99), epsilon=0.8, output="code",
                                random_state=0).fit(frame)
    (entry,) = public.privacy_ledger_
    assert entry.epsilon == pytest.approx(0.8) and entry.description.startswith("histogram of column 'hours'")


def test_without_a_budget_the_histogram_is_a_leak():
    frame = _zero_inflated()
    with pytest.warns(PrivacyLeakWarning, match="histogram"):
        disc = DPKBinsDiscretizer("auto", strategy="adaptive", bounds=(0, 99)).fit(frame)
    assert not disc.privacy_ledger_.is_private


def test_auto_bins_need_the_adaptive_strategy():
    with pytest.raises(ValueError, match="n_bins='auto'.*strategy='adaptive'"):
        DPKBinsDiscretizer("auto", bounds=(0, 1)).fit(pd.DataFrame({"x": [0.5]}))


def test_empty_table_with_public_bounds_fits_like_any_other():
    empty = pd.DataFrame({"x": np.array([], dtype=float)})
    disc = DPKBinsDiscretizer(4, strategy="adaptive", bounds=(0.0, 1.0), epsilon=1.0, output="code",
                              random_state=0).fit(empty)
    codes = pd.DataFrame({"x": pd.Categorical.from_codes([0, disc.n_bins_["x"] - 1],
                                                         dtype=disc.transform(empty)["x"].dtype)})
    back = disc.inverse_transform(codes, random_state=0)["x"]
    assert back.between(0.0, 1.0).all()


def test_bounds_extend_over_a_gap_to_a_tail_the_union_bound_would_cut():
    lows, highs, magnitudes = _magnitudes()
    possible = _adaptive.possible_buckets(lows, highs, 1.0)
    epsilon = 0.01
    noisy = np.zeros(lows.size)
    zero = int(np.flatnonzero((lows == 0) & (highs == 0))[0])
    tail = int(np.flatnonzero(lows == 4096)[0])
    noisy[zero] = 30_000
    noisy[tail] = 0.5 * (_adaptive.extension_threshold(epsilon, 16) + 9.47 / epsilon)
    assert _adaptive.bounds_from_magnitudes(noisy, epsilon, 9.47 / epsilon, possible, magnitudes) == (zero, tail)
    noisy[tail] = 0.9 * _adaptive.extension_threshold(epsilon, 16)
    assert _adaptive.bounds_from_magnitudes(noisy, epsilon, 9.47 / epsilon, possible, magnitudes) == (zero, zero)


def test_bounds_never_jump_to_an_empty_magnitude_far_from_the_data():
    """A bucket far from the mode passing the union-bound threshold by noise no longer stretches the range."""
    lows, highs, magnitudes = _magnitudes()
    possible = _adaptive.possible_buckets(lows, highs, None)
    epsilon = 0.05
    noisy = np.zeros(lows.size)
    body = np.flatnonzero((lows >= 2.0 ** 14) & (highs <= 2.0 ** 17))
    noisy[body] = 2000
    noisy[np.flatnonzero(lows == 2.0 ** 60)] = 1000  # above the core threshold 9.47/0.05 = 189
    first, last = _adaptive.bounds_from_magnitudes(noisy, epsilon, 9.47 / epsilon, possible, magnitudes)
    assert (first, last) == (body[0], body[-1])


def test_bounds_span_both_signs_across_the_tiny_magnitudes():
    """A balance between -60,000 and 60,000: about 130 buckets of tiny magnitude lie between its halves."""
    lows, highs, magnitudes = _magnitudes()
    possible = _adaptive.possible_buckets(lows, highs, None)
    epsilon = 0.05
    noisy = np.zeros(lows.size)
    negative = np.flatnonzero((lows >= -(2.0 ** 16)) & (highs <= -(2.0 ** 13)))
    positive = np.flatnonzero((lows >= 2.0 ** 13) & (highs <= 2.0 ** 16))
    noisy[negative], noisy[positive] = 600, 500
    first, last = _adaptive.bounds_from_magnitudes(noisy, epsilon, 9.47 / epsilon, possible, magnitudes)
    assert lows[first] == -(2.0 ** 16) and highs[last] == 2.0 ** 16


def test_table_discretizer_defaults_bin_adaptively_only_what_has_no_public_bounds():
    frame = _zero_inflated().assign(age=np.arange(4000) % 70 + 18)
    table = TableDiscretizer({"age": {"type": "numeric", "bounds": [18, 90]}}, epsilon=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        table.fit(frame)
    assert table.schema_["age"] == {"type": "numeric", "bounds": [18.0, 90.0], "n_bins": 10, "strategy": "uniform"}
    assert table.schema_["hours"]["strategy"] == "adaptive"
    back = table.inverse_transform(table.transform(frame), random_state=0)
    assert ((back["hours"] == 40) == (frame["hours"] == 40)).all()


def test_schema_decimals_key_round_trips():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"price": np.round(rng.gamma(2.0, 10.0, size=1500), 2)})
    table = TableDiscretizer({"price": {"type": "numeric", "decimals": 2}}, epsilon=1.0, random_state=0).fit(frame)
    assert table.schema_["price"]["decimals"] == 2
    back = table.inverse_transform(table.transform(frame), random_state=0)["price"].to_numpy()
    assert np.array_equal(back, np.round(back, 2))
    with pytest.raises(ValueError, match="decimals"):
        TableDiscretizer({"price": {"type": "numeric", "decimals": 2.5}}).fit(frame)


def test_each_small_integer_keeps_its_share():
    """Cells holding one integer each take their mass from the magnitude bucket of that integer (2 is in
    (1, 2], not (2, 4]), so every value keeps about its share of the round trip."""
    counts = {0: 8500, 1: 3000, 2: 2800, 3: 1700, 4: 1000}
    frame = pd.DataFrame({"children": np.repeat(list(counts), list(counts.values())).astype(np.int64)})
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=0.05, output="code", random_state=2).fit(frame)
    back = _round_trip(disc, frame)["children"]
    share = back.value_counts(normalize=True).reindex(list(counts), fill_value=0.0)
    # Each value is its own bin, so the round trip is exact whatever the weights.
    assert np.allclose(share.to_numpy(), np.array(list(counts.values())) / len(frame))
    weights = disc.cell_weights_["children"]
    # The weights estimate each value's count: the bucket's noise is Laplace(1 / (0.75 * 0.05)), scale 27.
    assert np.all(np.abs(weights[:5] - np.array(list(counts.values()))) < 10 * 27 + 0.05 * 8500)


def test_noise_only_cells_spread_their_bucket_evenly():
    from skdpsynth.preprocessing._adaptive import noisy_cell_weights
    rng = np.random.default_rng(0)
    noisy = rng.laplace(0, 500, size=32) + 50  # 50 records a cell under noise of scale 500
    weights = noisy_cell_weights(noisy, 500.0, np.zeros(32, dtype=np.intp), np.array([1600.0]), np.ones(32))
    # mu = 50, alpha = 2500 / (2500 + 2 * 500**2) < 0.005: almost even.
    assert np.allclose(weights, 50.0, rtol=0.5)
    assert weights.sum() == pytest.approx(1600.0)
    exact = noisy_cell_weights(np.arange(32.0), 0.0, np.zeros(32, dtype=np.intp), np.array([496.0]), np.ones(32))
    assert np.allclose(exact, np.arange(32.0))


def test_a_lone_cell_of_many_values_needs_more_to_stand_out_than_a_single_value():
    """C = 32 cells of a bucket of 1,600 records (50 each), noise scale 500: the first threshold is
    500 ln(32 / 0.02) = 3,689, the lone cell's 500 ln(32 / 2e-4) = 5,992.  A count of 4,500 in one cell (the
    noise's 1-in-100 draw over the histogram, or a peak): kept when the cell is one value; spread with the
    rest when it is a cell of many values alone; kept when its neighbour stands out too (a cluster)."""
    from skdpsynth.preprocessing._adaptive import noisy_cell_weights

    noisy = np.full(32, 50.0)
    noisy[7] = 4500.0
    bucket, counts = np.zeros(32, dtype=np.intp), np.array([1600.0])
    one_value = noisy_cell_weights(noisy, 500.0, bucket, counts, np.ones(32), np.ones(32, dtype=bool))
    assert one_value[7] == 4500.0
    many = noisy_cell_weights(noisy, 500.0, bucket, counts, np.full(32, 100.0), np.zeros(32, dtype=bool))
    assert many.sum() == pytest.approx(1600.0) and many[7] < 0.1 * 1600.0
    assert np.array_equal(noisy_cell_weights(noisy, 500.0, bucket, counts, np.full(32, 100.0)), one_value)
    cluster = noisy.copy()
    cluster[8] = 3700.0
    beside = noisy_cell_weights(cluster, 500.0, bucket, np.array([8200.0]), np.full(32, 100.0),
                                np.zeros(32, dtype=bool))
    assert beside[7] == 4500.0 and beside[8] == 3700.0
    far = noisy.copy()
    far[7] = 6000.0
    alone = noisy_cell_weights(far, 500.0, bucket, np.array([6000.0]), np.full(32, 100.0), np.zeros(32, dtype=bool))
    assert alone[7] == 6000.0


def test_decimals_and_missing_values_are_released_without_a_schema():
    rng = np.random.default_rng(5)
    price = np.round(rng.gamma(2.0, 10.0, size=4000), 2)
    price[rng.uniform(size=4000) < 0.1] = np.nan
    frame = pd.DataFrame({"price": price})
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=1.0, missing="auto", output="code",
                              random_state=0).fit(frame)
    assert disc.lattice_steps_["price"] == pytest.approx(0.01)
    assert disc.missing_bins_["price"]
    back = _round_trip(disc, frame)["price"]
    assert back.isna().tolist() == frame["price"].isna().tolist()
    values = back.dropna().to_numpy()
    assert np.array_equal(values, np.round(values, 2))
    kinds = [e for e in disc.privacy_ledger_ if e.description.startswith("kinds of column")]
    assert len(kinds) == 1 and kinds[0].epsilon == pytest.approx(0.25 * 0.3)


def test_too_few_missing_values_to_release_join_the_middle_bin():
    """One missing value among 3,000 at epsilon 0.2: its count (1) does not pass ln(50) / 0.01 = 391, so the column
    has no missing bin; the value is put in the bin holding the middle of the released weight."""
    rng = np.random.default_rng(6)
    x = rng.normal(50, 10, size=3000)
    x[17] = np.nan
    frame = pd.DataFrame({"x": x})
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=0.2, missing="auto", output="code",
                              random_state=0).fit(frame)
    assert not disc.missing_bins_["x"] and "x" in disc.missing_fill_
    codes = disc.transform(frame)["x"]
    assert codes.iloc[17] == disc.missing_fill_["x"]
    assert not _round_trip(disc, frame)["x"].isna().any()


@pytest.mark.parametrize("tz", [None, "Europe/Oslo"])
def test_dates_are_binned_as_days_and_come_back_as_dates(tz):
    rng = np.random.default_rng(7)
    days = pd.Timestamp("2019-01-01") + pd.to_timedelta(rng.integers(0, 5 * 365, size=3000), unit="D")
    when = pd.Series(days).dt.tz_localize(tz) if tz else pd.Series(days)
    when[rng.uniform(size=3000) < 0.1] = pd.NaT
    frame = pd.DataFrame({"when": when, "n": rng.integers(0, 9, size=3000)})
    table = TableDiscretizer(epsilon=1.0, random_state=0).fit(frame)
    assert table.schema_["when"]["strategy"] == "adaptive" and table.schema_["when"]["missing"] == "category"
    back = table.inverse_transform(table.transform(frame), random_state=0)
    assert back["when"].dtype == frame["when"].dtype
    assert back["when"].isna().tolist() == frame["when"].isna().tolist()
    lower, upper = table.schema_["when"]["bounds"]  # days since 1970-01-01 UTC
    days_back = (back["when"].dropna().dt.tz_convert("UTC").dt.tz_localize(None) if tz else back["when"].dropna())
    offsets = (days_back - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)
    assert offsets.between(lower, upper).all()
    if tz is None:  # whole days in, whole days out (the kinds histogram finds 0 decimals)
        assert (days_back == days_back.dt.normalize()).all()


def test_date_columns_get_calendar_year_buckets():
    """A date column's values (days since 1970) sit in one or two magnitude buckets, whose 32 cells of 512 days
    would smear five years of dates into four cells (and past the last date); calendar years as the first level's
    buckets put the DP bounds on year starts and cut each occupied year into 32 cells of about 11 days."""
    rng = np.random.default_rng(3)
    days = pd.Timestamp("2019-01-01") + pd.to_timedelta(rng.integers(0, 1826, size=20000), unit="D")
    frame = pd.DataFrame({"when": pd.Series(days)})
    table = TableDiscretizer(epsilon=1.0, random_state=0).fit(frame)
    lower, upper = table.schema_["when"]["bounds"]
    start = (pd.Timestamp("2019-01-01") - pd.Timestamp("1970-01-01")).days
    end = (pd.Timestamp("2024-01-01") - pd.Timestamp("1970-01-01")).days
    # Each year holds ~4,000 records, the noise of its count has scale 1/0.75: the bounds are the years' ends.
    assert (lower, upper) == (start, end)
    disc = table.discretizers_["adaptive"]
    widths = np.diff(disc.cell_edges_["when"])
    assert widths[:-1].max() <= 12  # 365 or 366 days in 32 cells, on whole days (the last: the upper bound's cell)
    described = [e.description for e in table.privacy_ledger_.entries if e.description.startswith("bounds")]
    assert described == ["bounds of column 'when': noisy histogram of 585 public buckets (bucket_edges) and of "
                         "its missing values"]  # the years 1678 .. 2262; a date column may hold NaT
    back = table.inverse_transform(table.transform(frame), random_state=0)["when"]
    assert back.min() >= pd.Timestamp("2019-01-01") and back.max() <= pd.Timestamp("2024-01-01")


def test_public_bucket_edges_set_where_the_bounds_may_fall():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"year": rng.integers(1950, 2020, size=5000), "other": rng.normal(size=5000)})
    decades = list(range(1900, 2101, 10))
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=1.0, output="code", random_state=0,
                              bucket_edges={"year": decades}).fit(frame)
    assert disc.bounds_["year"] == (1950.0, 2020.0)
    assert disc.get_params()["bucket_edges"] is not None and "other" in disc.bounds_
    # Values beyond the grid are counted in its end buckets: the bounds never leave it.
    beyond = pd.DataFrame({"year": np.r_[np.full(3000, 2500), np.full(3000, 1990)]})
    disc = DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=1.0, output="code", random_state=0,
                              bucket_edges={"year": decades}).fit(beyond)
    assert disc.bounds_["year"] == (1990.0, 2100.0)
    # The other strategies' DP bounds use the same buckets.
    disc = DPKBinsDiscretizer(4, strategy="uniform", epsilon=1.0, random_state=0,
                              bucket_edges={"year": decades}).fit(frame[["year"]])
    assert disc.bounds_["year"] == (1950.0, 2020.0)


@pytest.mark.parametrize("bucket_edges, error, match", [
    ([0, 1], TypeError, "bucket_edges must be None or a mapping"),
    ({"x": [0, 1]}, ValueError, "bucket_edges names columns that are not"),
    ({"year": [0, 2, 1]}, ValueError, "bucket_edges for column 'year' must be finite and strictly increasing"),
    ({"year": [5]}, ValueError, "bucket_edges for column 'year' must be at least two numbers"),
    ({"year": np.arange(200_000.0)}, ValueError, "bucket_edges for column 'year' has 200,000 edges; at most"),
])
def test_bucket_edges_are_checked(bucket_edges, error, match):
    frame = pd.DataFrame({"year": [1990, 2000, 2010]})
    with pytest.raises(error, match=match):
        DPKBinsDiscretizer("auto", strategy="adaptive", epsilon=1.0, random_state=0,
                           bucket_edges=bucket_edges).fit(frame)
