"""ViewSynthesizer's defaults (issue 42): record count n̂ and 2-way TVD on Adult and on a 35-column table.

    python -m skdpsynth.benchmarks.view                       # ε = 1, TVD seeds 0 1 2, count seeds 0-9
    python -m skdpsynth.benchmarks.view --configs auto auto+ paper paper+ --seeds 0 1 2
    python -m skdpsynth.benchmarks.view --tables wide --wide-rows 48842

Three measurements, each at ``--epsilon`` (default 1):

* **record count**: ``n̂ / n − 1`` of the default fit (``ViewSynthesizer``'s
  defaults, DPView) on Adult for every ``--count-seeds`` (default 0–9),
  beside the paper's estimator (``n_estimator="mean"``, the mean of the noisy
  view totals, with the paper's ``view_size=5``);
* **TVD on Adult** (``load_adult(discretized=True)``, 48,842 × 14, its
  public domain): :func:`skdpsynth.metrics.marginal_tvd` over all 2-way and
  all 3-way marginals between the table and ``len(table)`` synthetic records,
  as ``python -m skdpsynth.benchmarks.synthesizers`` scores the
  synthesizer-choice table (``doc/choosing.md``);
* **TVD on a 35-column table** generated like the wide tables of
  ``python -m skdpsynth.benchmarks.scale``
  (:func:`~skdpsynth.benchmarks.generators.random_bayesian_network` with 2–20
  values per attribute and at most 2 parents, seeded by ``--data-seed``;
  ``--wide-rows`` records, 200,000 by default as there), scored like there:
  all 2-way marginals and a seeded sample of at most 2,000 3-way ones.

Configurations (``--configs``): ``auto`` / ``auto+`` are the defaults
(``view_size="auto"``, ``n_estimator="count"``) for DPView / DPView+;
``paper`` / ``paper+`` are the paper's ``view_size=5, n_estimator="mean"``
(slow: about 10⁶ cells per view on Adult); ``alone`` is ``view_size=1``, every
column measured alone (DP independent columns); ``independent`` is the yardstick of
``benchmarks.scale``: each column resampled from its own marginal (no privacy,
what a model without any dependence reaches).  Every row also gives the
modelled error the automatic rule minimised (``expected_error_``), the view
size and the number of columns measured alone.  Seeds fix the noise: a
benchmark, not a release.  Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np
import pandas as pd

from ..privacy import ReproducibleNoiseWarning

CONFIGS = {
    "auto": {"variant": "dpview"},
    "auto+": {"variant": "dpview+"},
    "paper": {"variant": "dpview", "view_size": 5, "n_estimator": "mean"},
    "paper+": {"variant": "dpview+", "view_size": 5, "n_estimator": "mean"},
    "alone": {"view_size": 1},
    "independent": None,
}
TABLES = ("adult", "wide")


def adult_table():
    """Adult's 14 discretized columns and their public domain."""
    from ..datasets import load_adult

    adult = load_adult(discretized=True)
    return adult.frame[list(adult.domain.attrs)], adult.domain


def wide_table(rows: int = 200_000, columns: int = 35, data_seed: int = 0):
    """A generated table like ``benchmarks.scale``'s wide ones: 2–20 values per column, at most 2 parents."""
    from .generators import random_bayesian_network

    net = random_bayesian_network(columns, min_values=2, max_values=20, max_parents=2, random_state=data_seed)
    return net.sample(rows, random_state=data_seed + 1, dtype="int64"), net.domain


def _synthesize(config: str, real: pd.DataFrame, domain, epsilon: float, seed: int):
    """``len(real)`` synthetic records of ``config`` and the fitted synthesizer (None for the yardstick)."""
    from ..synthesizers import ViewSynthesizer

    if CONFIGS[config] is None:
        rng = np.random.default_rng(1000 + seed)
        return pd.DataFrame({c: rng.choice(real[c].to_numpy(), size=len(real)) for c in real.columns}), None
    model = ViewSynthesizer(epsilon, domain=domain.to_dict(), random_state=seed, **CONFIGS[config]).fit(real)
    return model.sample(len(real)), model


def _score(table: str, real, synthetic, domain, seed: int) -> dict:
    """Adult: every 2- and 3-way marginal (``benchmarks.synthesizers``); wide: as ``benchmarks.scale``."""
    if table == "adult":
        from ..metrics import marginal_tvd

        tvd = marginal_tvd(real, synthetic[list(real.columns)], ways=(2, 3), domain=domain)
        return {"tvd2": float(tvd[2]), "tvd3": float(tvd[3])}
    from .scale import _scores

    scores = _scores(real, synthetic[list(real.columns)], domain, np.random.default_rng(1000 + seed))
    return {"tvd2": float(scores["tvd2"]), "tvd3": float(scores["tvd3"])}


def run_tvd(table: str, real, domain, config: str, seed: int, epsilon: float) -> dict:
    """One configuration on one table: time, the plan chosen, n̂ and the TVDs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)   # seeded on purpose
        start = time.perf_counter()
        synthetic, model = _synthesize(config, real, domain, epsilon, seed)
        seconds = time.perf_counter() - start
    row = {"table": table, "config": config, "seed": seed, "epsilon": epsilon, "rows": len(real),
           "columns": real.shape[1], "seconds": seconds, **_score(table, real, synthetic, domain, seed)}
    if model is not None:
        row.update(view_size=model.view_size_, alone=len(model.single_views_), views=len(model.view_plan_.views),
                   expected_error=model.expected_error_, n_error=model.n_records_ / len(real) - 1)
    return row


def run_counts(real, domain, seeds, epsilon: float, configs=("auto", "paper")) -> list[dict]:
    """``n̂ / n − 1`` of each configuration's fit on ``real`` for every seed (no sampling)."""
    from ..synthesizers import ViewSynthesizer

    rows = []
    for config in configs:
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ReproducibleNoiseWarning)
                model = ViewSynthesizer(epsilon, domain=domain.to_dict(), random_state=seed,
                                        **CONFIGS[config]).fit(real)
            rows.append({"config": config, "seed": seed, "n_error": model.n_records_ / len(real) - 1})
    return rows


def _joined(values) -> str:
    """The distinct values of a column over seeds ("4", "3/4"), or "-" for the yardstick's missing ones."""
    values = values.dropna()
    return "/".join(str(int(v)) for v in sorted(set(values))) if len(values) else "-"


def _tvd_summary(rows: list[dict]) -> list[str]:
    """One line per table and configuration: TVDs over the seeds beside the plan the rule chose."""
    frame = pd.DataFrame(rows)
    for column in ("expected_error", "view_size", "alone"):
        if column not in frame:
            frame[column] = np.nan
    lines = [f"{'table':6} {'config':12} {'seeds':>5} {'TVD2':>7} {'min-max':>15} {'TVD3':>7} {'model':>7} "
             f"{'d':>3} {'alone':>5} {'s':>6}"]
    for (table, config), sel in frame.groupby(["table", "config"], sort=False):
        model = sel["expected_error"].mean()
        lines.append(f"{table:6} {config:12} {len(sel):>5} {sel['tvd2'].mean():7.4f} "
                     f"{sel['tvd2'].min():7.4f}-{sel['tvd2'].max():.4f} {sel['tvd3'].mean():7.4f} "
                     f"{'      -' if np.isnan(model) else f'{model:7.4f}'} {_joined(sel['view_size']):>3} "
                     f"{_joined(sel['alone']):>5} {sel['seconds'].mean():6.1f}")
    return lines


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the TVD runs")
    ap.add_argument("--count-seeds", type=int, nargs="*", default=list(range(10)),
                    help="seeds of the record-count runs on Adult (none: skip them)")
    ap.add_argument("--configs", nargs="+", default=["auto", "auto+", "independent", "paper"],
                    choices=list(CONFIGS))
    ap.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    ap.add_argument("--wide-rows", type=int, default=200_000)
    ap.add_argument("--wide-columns", type=int, default=35)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write every run as JSON here")
    args = ap.parse_args(argv)

    results = {"counts": [], "tvd": []}
    adult, adult_domain = adult_table()
    if args.count_seeds:
        results["counts"] = run_counts(adult, adult_domain, args.count_seeds, args.epsilon)
        print(f"Record count on Adult ({len(adult):,} records), eps={args.epsilon:g}: n_hat / n - 1")
        for config, sel in pd.DataFrame(results["counts"]).groupby("config", sort=False):
            errors = ", ".join(f"{100 * e:+.2f}%" for e in sel["n_error"])
            print(f"  {config:6} seeds {list(sel['seed'])}: {errors}  (largest |error| "
                  f"{100 * sel['n_error'].abs().max():.2f}%)", flush=True)
    for table in args.tables:
        real, domain = ((adult, adult_domain) if table == "adult"
                        else wide_table(args.wide_rows, args.wide_columns, args.data_seed))
        print(f"{table}: {len(real):,} records x {real.shape[1]} columns", flush=True)
        for config in args.configs:
            for seed in args.seeds:
                row = run_tvd(table, real, domain, config, seed, args.epsilon)
                results["tvd"].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    if results["tvd"]:
        print("\n".join(_tvd_summary(results["tvd"])))
        print("TVD2/TVD3: mean over all 2-/3-way marginals (wide: a seeded sample of at most 2,000 3-way ones), "
              "mean and min-max over seeds; model: the mean 2-way TVD the automatic rule modelled (beyond the "
              "sampling floor); d: view size (1: every column alone); alone: columns measured alone; s: fit + "
              "sample seconds")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
