"""A generated mixed table with the column shapes real tables have (skew, heavy tails, point masses, dates, NaN)."""
from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

# Education levels and the standard-normal cut points that give them shares 15/45/25/12/3 %.
_EDUCATION = ("primary", "secondary", "bachelor", "master", "doctorate")
_EDUCATION_CUTS = (-1.0364, 0.2533, 1.0364, 1.8808)   # Φ⁻¹(0.15), Φ⁻¹(0.60), Φ⁻¹(0.85), Φ⁻¹(0.97)
_REGIONS = ("north", "south", "east", "west", "central")
_EMPLOYMENT = ("employed", "self-employed", "unemployed", "retired")
_FIRST_DAY, _DAYS = np.datetime64("2019-01-01"), 1826    # 2019-01-01 .. 2023-12-31


def make_mixed_table(n_records: int = 20000, random_state: int | None = 0) -> pd.DataFrame:
    """A generated table of customers whose columns have the shapes of real data.

    Made to measure preprocessing on columns that equal-width bins and a
    dtype-blind round trip get wrong (the benchmark
    ``python -m skdpsynth.benchmarks.preprocessing`` uses it beside the raw
    Adult table). The values are drawn from fixed distributions, so the
    table is deterministic for a given ``random_state`` and holds no one's
    data. Columns, in order:

    - ``age``: int64, 18 .. 95 (18 + a Gamma(2.5, 9) draw, rounded);
    - ``education``, ``employment``: categories that depend on a latent
      skill and on age (most people over 65 are ``"retired"``);
    - ``region``: five categories, their shares depending on education,
      with about 5% missing (``NaN``);
    - ``income``: float64, lognormal (skewed), rising with education and
      age, lower for the unemployed and retired;
    - ``balance``: float64, a share of income, about 8% missing (``NaN``;
      twice as often under 30 as over);
    - ``transfer_amount``: float64, Pareto with tail index 1 (heavy
      tailed: the largest values are over 1000 times the median);
    - ``basket_value``: float64 prices rounded to 2 decimals;
    - ``children``: int64, 0 .. 8, about half the records exactly 0;
    - ``hours_per_week``: int64, 1 .. 99, 45% of the records exactly 40;
    - ``account_opened``: datetime64[ns] day dates from 2019-01-01 to
      2023-12-31, more of them in later years and fewer on weekends;
    - ``churned``: the binary target, ``"yes"`` / ``"no"``, depending on
      tenure, income, employment, hours and children.

    Parameters
    ----------
    n_records : int, default=20000
        Number of records (at least 1).
    random_state : int or None, default=0
        Seed of the draws; ``None`` gives a different table each call.

    Returns
    -------
    pandas.DataFrame
        ``n_records`` rows and the 12 columns above.

    Raises
    ------
    ValueError
        If ``n_records`` is not an integer >= 1.

    Examples
    --------
    >>> from skdpsynth.datasets import make_mixed_table
    >>> table = make_mixed_table(1000, random_state=0)
    >>> table.shape
    (1000, 12)
    >>> str(table["account_opened"].dtype), str(table["children"].dtype)
    ('datetime64[ns]', 'int64')
    >>> bool((table["basket_value"] == table["basket_value"].round(2)).all())
    True
    >>> table.equals(make_mixed_table(1000, random_state=0))
    True
    """
    if isinstance(n_records, bool) or not isinstance(n_records, numbers.Integral) or n_records < 1:
        raise ValueError(f"n_records must be an integer >= 1, got {n_records!r}.")
    rng = np.random.default_rng(random_state)
    n = int(n_records)
    people = _people(rng, n)
    money = _money(rng, people)
    habits = _habits(rng, people)
    opened = _FIRST_DAY + _account_days(rng, n)
    tenure_years = (np.datetime64("2024-01-01") - opened).astype(np.int64) / 365.25
    churned = _churn(rng, people, money["income"], habits, tenure_years)
    return pd.DataFrame({
        "age": people["age"], "education": people["education"], "employment": people["employment"],
        "region": people["region"], **money, **habits,
        "account_opened": pd.to_datetime(opened).astype("datetime64[ns]"),
        "churned": np.where(churned, "yes", "no").astype(object),
    })


def _choose(rng, labels, weights: np.ndarray) -> np.ndarray:
    """One label per row of ``weights`` (rows: unnormalized probabilities), as an object array."""
    cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
    index = (rng.random(len(weights))[:, None] > cumulative[:, :-1]).sum(axis=1)
    return np.asarray(labels, dtype=object)[index]


def _people(rng, n: int) -> dict:
    """Age, a latent skill, and the categories that follow from them."""
    age = np.clip(np.round(18 + rng.gamma(2.5, 9.0, n)), 18, 95).astype(np.int64)
    skill = rng.standard_normal(n)
    level = np.searchsorted(_EDUCATION_CUTS, skill)
    retired = 1 / (1 + np.exp(-(age - 66) / 2.5))
    weights = np.column_stack([0.78 * (1 - retired), 0.12 * (1 - retired), (0.14 - 0.02 * level) * (1 - retired),
                               retired])
    employment = _choose(rng, _EMPLOYMENT, weights)
    # The educated live more in the centre, less in the south: a categorical association for the benchmark.
    region_weights = np.column_stack([np.full(n, 0.22), 0.30 - 0.04 * level, np.full(n, 0.18), np.full(n, 0.18),
                                      0.10 + 0.06 * level])
    region = _choose(rng, _REGIONS, region_weights)
    region[rng.random(n) < 0.05] = np.nan
    return {"age": age, "level": level, "education": np.asarray(_EDUCATION, dtype=object)[level],
            "employment": employment, "region": region}


def _money(rng, people: dict) -> dict:
    """Income (lognormal), balance (8% missing), transfers (Pareto tail) and basket values (2 decimals)."""
    age, level, employment = people["age"], people["level"], people["employment"]
    n = len(age)
    log_income = 9.9 + 0.3 * level + 0.02 * np.minimum(age - 18, 35) + rng.normal(0.0, 0.55, n)
    log_income += np.select([employment == "unemployed", employment == "retired"], [np.log(0.3), np.log(0.6)], 0.0)
    income = np.exp(log_income)
    balance = income * rng.beta(2.0, 5.0, n) * 0.8
    # Missing at random given age: twice the rate under 30; the expected share is 8% whatever the age mix.
    missing_weight = np.where(age < 30, 2.0, 1.0)
    balance[rng.random(n) < 0.08 * missing_weight / missing_weight.mean()] = np.nan
    relative = income / np.median(income)
    transfer = (rng.pareto(1.0, n) + 1.0) * 20.0 * relative**0.3
    basket = np.maximum(np.round(np.exp(rng.normal(3.4 + 0.25 * np.log(relative), 0.7)), 2), 0.01)
    return {"income": income, "balance": balance, "transfer_amount": transfer, "basket_value": basket}


def _habits(rng, people: dict) -> dict:
    """Children (a point mass at 0) and weekly hours (a point mass at 40)."""
    age, employment = people["age"], people["employment"]
    n = len(age)
    has_children = rng.random(n) < np.clip(0.15 + 0.015 * (age - 18), 0.0, 0.7)
    children = np.where(has_children, np.minimum(1 + rng.poisson(0.9, n), 8), 0).astype(np.int64)
    centre = 38.0 + np.select([employment == "self-employed", employment == "unemployed", employment == "retired"],
                              [6.0, -14.0, -16.0], 0.0)
    hours = np.clip(np.round(rng.normal(centre, 11.0)), 1, 99)
    # Off the point mass, 40 moves to 39 or 41, so the share at exactly 40 is the 45% drawn below.
    hours = np.where(hours == 40, 40 + rng.choice([-1, 1], n), hours)
    hours = np.where(rng.random(n) < 0.45, 40, hours).astype(np.int64)
    return {"children": children, "hours_per_week": hours}


def _account_days(rng, n: int) -> np.ndarray:
    """Opening days: a rising trend over the five years, and weekends at a third of a weekday's rate."""
    day = np.arange(_DAYS)
    weekday = (day + 1) % 7          # 2019-01-01 was a Tuesday (numpy weekday 1, Monday = 0)
    weight = (1.0 + 1.5 * day / _DAYS) * np.where(weekday >= 5, 1 / 3, 1.0)
    return rng.choice(day, size=n, p=weight / weight.sum()).astype("timedelta64[D]")


def _churn(rng, people: dict, income: np.ndarray, habits: dict, tenure_years: np.ndarray) -> np.ndarray:
    """The target: more churn in the first year, among the unemployed and part-timers; less with income, children."""
    logit = (-1.2 + 2.0 * (tenure_years < 1) - 1.5 * np.log(income / np.median(income))
             + 1.5 * (people["employment"] == "unemployed") + 1.0 * (habits["hours_per_week"] < 30)
             - 0.5 * habits["children"])
    return rng.random(len(income)) < 1 / (1 + np.exp(-logit))
