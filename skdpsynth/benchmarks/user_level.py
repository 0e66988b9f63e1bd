"""User-level DP against per-record fits on a table of people with 1–40 records each (issue 45, point 2).

    python -m skdpsynth.benchmarks.user_level                         # MST and AIM, eps = 0.5, 1, 2; k = 1, 5, 10, 40; 3 seeds
    python -m skdpsynth.benchmarks.user_level --epsilons 0.5 1 2 --ks 5 --seeds 0
    python -m skdpsynth.benchmarks.user_level --jsonl runs.jsonl      # every run as it finishes; --table-from reads it

Data: :func:`~skdpsynth.benchmarks.generators.make_person_table` (``--people``, default 5,000 people, about 32,000
records; records per person from 1 to 40, median 4; the columns correlated within a person, and heavy contributors
of another latent type than light ones).  Its domain is public (the generator's).

Protocol: per seed, each method fits the whole table at (ε, δ = 1e-9) with ``random_state=seed`` and samples as
many records as the table has; the score is the mean total variation distance over every 2-way and every 3-way
marginal (:func:`~skdpsynth.metrics.marginal_tvd`) against the **full** table without the identifier.

* ``per-record``: the method on the records, identifier dropped.  Its guarantee is per record; for a person with
  up to 40 records it is only what group privacy gives, 40²·ρ-zCDP: **not** a per-person guarantee at ε.
* ``k=…``: the method with ``privacy_unit="person_id", max_contributions=k``: (ε, δ)-DP per person.  Two errors
  add up: the noise (the records are measured at ρ/k²) and the bounding bias (heavy contributors lose records,
  so the bounded table is not the full one).  The column ``bias`` is that bias alone: the TVD between the
  bounded table (exact, no noise; one random selection per seed) and the full one.

Times are for orientation only (2-core machine, shared).
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics import marginal_tvd
from ..privacy.contributions import bound_contributions
from ..synthesizers import AIMSynthesizer, MSTSynthesizer
from .generators import make_person_table

METHODS = ("mst", "aim")
KS = (1, 5, 10, 40)
EPSILONS = (0.5, 1.0, 2.0)
UNIT = "person_id"


def make_synthesizer(method: str, epsilon: float, domain: dict, seed: int, k: int | None):
    """The method at ``epsilon``; user-level with ``k`` (``None``: per record)."""
    unit = {} if k is None else {"privacy_unit": UNIT, "max_contributions": k}
    if method == "mst":
        return MSTSynthesizer(epsilon, 1e-9, domain=domain, random_state=seed, **unit)
    return AIMSynthesizer(epsilon, 1e-9, domain=domain, random_state=seed, **unit)


def run(people: pd.DataFrame, method: str, epsilon: float, seed: int, k: int | None) -> dict:
    """One fit: its 2-way and 3-way TVD against the full table, and the bounding bias alone."""
    domain = dict(people.attrs["domain"])
    full = people.drop(columns=[UNIT])
    X = full if k is None else people
    synth = make_synthesizer(method, epsilon, domain, seed, k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise: a benchmark, not a release
        start = time.perf_counter()
        synth.fit(X)
        seconds = time.perf_counter() - start
        synthetic = synth.sample(len(full), random_state=seed)
    tvd = marginal_tvd(full, synthetic, ways=(2, 3), domain=domain)
    bias = {2: 0.0, 3: 0.0} if k is None else marginal_tvd(
        full, bound_contributions(people, UNIT, k, random_state=seed), ways=(2, 3), domain=domain)
    return {"method": method, "fit": "per-record" if k is None else f"k={k}", "epsilon": epsilon, "seed": seed,
            "tvd2": tvd[2], "tvd3": tvd[3], "bias2": bias[2], "bias3": bias[3],
            "guarantee": synth.privacy_ledger_.statement(), "fit_s": seconds}


def table(rows: list[dict]) -> str:
    """Markdown: one line per method, ε and fit; mean ± sd over the seeds."""
    df = pd.DataFrame(rows)
    order = {"per-record": -1, **{f"k={k}": k for k in range(1, 1000)}}
    lines = ["| method | ε | fit | guarantee | 2-way TVD | 3-way TVD | bias 2-way | bias 3-way | fit s |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for (method, eps, fit), group in sorted(df.groupby(["method", "epsilon", "fit"]),
                                            key=lambda item: (METHODS.index(item[0][0]), item[0][1],
                                                              order[item[0][2]])):
        def cell(column: str) -> str:
            sd = group[column].std() if len(group) > 1 else 0.0
            return f"{group[column].mean():.4f} ± {sd:.4f}"

        guarantee = "per record only (NOT per person)" if fit == "per-record" else "per person"
        lines.append(f"| {method} | {eps:g} | {fit} | {guarantee} | {cell('tvd2')} | {cell('tvd3')} | "
                     f"{group['bias2'].mean():.4f} | {group['bias3'].mean():.4f} | {group['fit_s'].mean():.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--people", type=int, default=5000)
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--ks", nargs="+", type=int, default=list(KS), help="max_contributions of the user-level fits")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--no-per-record", action="store_true", help="skip the per-record reference fits")
    ap.add_argument("--jsonl", type=Path, help="append every run to this file as it finishes")
    ap.add_argument("--table-from", type=Path, help="print the table of the runs in this JSON-lines file, fit nothing")
    args = ap.parse_args(argv)
    if args.table_from:
        print(table([json.loads(line) for line in args.table_from.read_text().splitlines() if line.strip()]))
        return 0
    people = make_person_table(args.people, random_state=0)
    counts = people.groupby(UNIT).size()
    print(f"{len(counts):,} people, {len(people):,} records: {int(counts.min())}-{int(counts.max())} each, "
          f"median {counts.median():g}, mean {counts.mean():.2f}", flush=True)
    fits = ([] if args.no_per_record else [None]) + list(args.ks)
    rows = []
    for eps in args.epsilons:
        for seed in args.seeds:
            for method in args.methods:
                for k in fits:
                    row = run(people, method, eps, seed, k)
                    rows.append(row)
                    print(f"eps={eps:g} seed={seed} {method:4s} {row['fit']:10s} tvd2 {row['tvd2']:.4f} "
                          f"tvd3 {row['tvd3']:.4f}  fit {row['fit_s']:.1f} s", flush=True)
                    if args.jsonl:
                        with args.jsonl.open("a") as f:
                            f.write(json.dumps(row) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
