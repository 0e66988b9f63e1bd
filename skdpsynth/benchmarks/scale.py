"""The engine at scale (issues 16 and 40): every figure, each case in a fresh process, with its time and peak memory.

    python -m skdpsynth.benchmarks.scale                      # the default cases, seed 0
    python -m skdpsynth.benchmarks.scale --cases aim-wide mst-wide --seeds 0 1 2
    python -m skdpsynth.benchmarks.scale --cases aim-25 --seeds 0 1 2 --params '{"scoring": "exact"}'
    python -m skdpsynth.benchmarks.scale --case aim-wide --seed 0     # one case, in this process (JSON line)

A case is a method on a table, ``<method>-<table>``:

* methods: ``mst`` (:class:`~skdpsynth.MSTSynthesizer`), ``aim``
  (:class:`~skdpsynth.AIMSynthesizer`) and ``ppsyn``
  (:class:`~skdpsynth.PartitionSynthesizer`, strict), all with their
  defaults at ``--epsilon`` (default 1) and δ = 1e-9, generating as many
  records as the noisy count; ``--params`` (JSON) passes hyper-parameters;
* tables: ``adult`` (bundled Adult, 48 842 × 14, discretized), ``25``, ``wide``
  and ``100`` (generated: 25 attributes × 200 000 rows, 50 × 200 000 and
  100 × 100 000, each with 2–20 values), and ``large-domain`` (generated: 10
  attributes with 50–100 values × 200 000 rows).

Every case runs as ``python -m skdpsynth.benchmarks.scale --case NAME`` in a
subprocess, so that its wall time is the whole process (imports, data, fit,
generation, scoring) and its peak resident memory is its own (the child reads
``resource.getrusage(RUSAGE_SELF)`` at its end).  For every table a run
touches, MST runs on the same table and seeds (unless ``--no-mst``), and the
summary puts each method's mean TVD beside MST's.

The generated tables come from
:func:`skdpsynth.benchmarks.generators.random_bayesian_network` (seeded by
``--data-seed``).  Every case reports the average TVD over all 2-way marginals
and over a seeded sample of at most 2 000 3-way marginals, beside the same
scores of two yardsticks on the same marginals: an independent-columns table
(each column resampled from its own marginal: what a model without any
dependence reaches) and a bootstrap resample of the data (the statistical
floor).  Times are wall-clock; nothing is asserted about them.  Counting
throughput has its own script: ``python -m skdpsynth.benchmarks.counting``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

METHODS = ("mst", "aim", "ppsyn")
TABLES = ("adult", "25", "wide", "100", "large-domain")
CASES = tuple(f"{m}-{t}" for t in TABLES for m in METHODS)
DEFAULT_CASES = ("mst-adult", "aim-adult", "aim-25", "aim-wide", "aim-large-domain")
# Whole-process targets, seconds (issue 16: Adult at ε = 10 and the large domain; issue 40: the wide tables).
TARGETS = {"aim-adult": 300.0, "aim-wide": 600.0, "aim-large-domain": 120.0, "aim-100": 1800.0,
           "ppsyn-wide": 900.0}
MAX_TRIPLES = 2000


def _split(case: str) -> tuple[str, str]:
    method, _, table = case.partition("-")
    if method not in METHODS or table not in TABLES:
        raise ValueError(f"unknown case {case!r}; known: {CASES}")
    return method, table


def _table(case: str, data_seed: int):
    """The case's table (DataFrame of codes) and its public domain."""
    table = _split(case)[1]
    if table == "adult":
        from skdpsynth.datasets import load_adult

        adult = load_adult(discretized=True)
        return adult.frame[list(adult.domain.attrs)], adult.domain
    from skdpsynth.benchmarks.generators import random_bayesian_network

    n_attributes, rows, low, high = {"25": (25, 200_000, 2, 20), "wide": (50, 200_000, 2, 20),
                                     "100": (100, 100_000, 2, 20), "large-domain": (10, 200_000, 50, 100)}[table]
    net = random_bayesian_network(n_attributes, min_values=low, max_values=high, max_parents=2,
                                  random_state=data_seed)
    return net.sample(rows, random_state=data_seed + 1, dtype="int64"), net.domain


def _scores(real, synthetic, domain, rng) -> dict:
    """Average TVD over all 2-way marginals and a seeded sample of 3-way marginals."""
    from skdpsynth.metrics import marginal_tvd

    pairs = list(itertools.combinations(domain.attrs, 2))
    triples = list(itertools.combinations(domain.attrs, 3))
    if len(triples) > MAX_TRIPLES:
        triples = [triples[i] for i in sorted(rng.choice(len(triples), MAX_TRIPLES, replace=False))]
    sizes = domain.to_dict()
    return {"tvd2": marginal_tvd(real, synthetic, domain=sizes, cliques=pairs),
            "tvd3": marginal_tvd(real, synthetic, domain=sizes, cliques=triples),
            "n_triples": len(triples)}


def run_case(case: str, seed: int, data_seed: int, epsilon: float, score: bool = True,
             params: dict | None = None) -> dict:
    """One case in this process: fit, generate, score (the time excludes scoring; ``score=False`` skips it)."""
    import pandas as pd

    from skdpsynth import AIMSynthesizer, MSTSynthesizer, PartitionSynthesizer

    start = time.perf_counter()
    real, domain = _table(case, data_seed)
    loaded = time.perf_counter()
    cls = {"mst": MSTSynthesizer, "aim": AIMSynthesizer, "ppsyn": PartitionSynthesizer}[_split(case)[0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the seed makes the noise reproducible: a benchmark, not a release
        model = cls(epsilon, 1e-9, domain=domain.to_dict(), random_state=seed, **(params or {})).fit(real)
        fitted = time.perf_counter()
        synthetic = model.sample()
    done = time.perf_counter()
    timing = {"case": case, "seed": seed, "data_seed": data_seed, "epsilon": epsilon, "params": params or {},
              "rows": len(real), "attributes": len(domain), "cells_max": int(max(domain.shape)),
              "load_s": loaded - start, "fit_s": fitted - loaded, "sample_s": done - fitted,
              "total_s": done - start, "synthetic_rows": len(synthetic),
              "engine": {k: getattr(model, k) for k in ("scoring_", "selections_per_round_") if hasattr(model, k)}}
    if not score:
        return timing
    rng = np.random.default_rng(1000 + seed)
    scores = _scores(real, synthetic, domain, rng)
    independent = pd.DataFrame({c: rng.choice(real[c].to_numpy(), size=len(real)) for c in real.columns})
    bootstrap = real.iloc[rng.integers(0, len(real), size=len(real))]
    # The yardsticks are scored on the same 3-way sample (the same seed).
    yard_ind = _scores(real, independent, domain, np.random.default_rng(1000 + seed))
    yard_boot = _scores(real, bootstrap, domain, np.random.default_rng(1000 + seed))
    return {**timing, **scores,
            "independent_tvd2": yard_ind["tvd2"], "independent_tvd3": yard_ind["tvd3"],
            "bootstrap_tvd2": yard_boot["tvd2"], "bootstrap_tvd3": yard_boot["tvd3"]}


def _child(case: str, seed: int, data_seed: int, epsilon: float, params: dict | None = None) -> dict:
    """Run one case in a fresh interpreter; its whole-process wall time and peak RSS."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "skdpsynth.benchmarks.scale", "--case", case, "--seed", str(seed),
               "--data-seed", str(data_seed), "--epsilon", str(epsilon)]
    if params:
        command += ["--params", json.dumps(params)]
    out = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"case {case} seed {seed} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = wall   # the child's own peak RSS is in result["peak_rss_mb"]
    return result


def _summary(results: list[dict]) -> list[str]:
    """Mean figures per case over its seeds, each beside MST's on the same table and seeds."""
    lines = []
    by_case: dict = {}
    for r in results:
        by_case.setdefault(r["case"], []).append(r)
    header = (f"{'case':18} {'seeds':>5} {'process s':>9} {'max s':>7} {'peak MB':>8} {'TVD2':>7} {'TVD3':>7} "
              f"{'/MST2':>6} {'/MST3':>6} {'indep3':>7} {'boot3':>7}")
    lines += [header, "-" * len(header)]
    for case, runs in by_case.items():
        seeds = sorted(r["seed"] for r in runs)
        mst = [r for r in by_case.get("mst-" + _split(case)[1], []) if r["seed"] in seeds]
        ratio2 = ratio3 = "     -"
        if len(mst) == len(runs) and not case.startswith("mst-"):
            ratio2 = f"{np.mean([r['tvd2'] for r in runs]) / np.mean([r['tvd2'] for r in mst]):6.3f}"
            ratio3 = f"{np.mean([r['tvd3'] for r in runs]) / np.mean([r['tvd3'] for r in mst]):6.3f}"
        mean = {k: np.mean([r[k] for r in runs]) for k in ("process_wall_s", "tvd2", "tvd3", "independent_tvd3",
                                                             "bootstrap_tvd3")}
        lines.append(f"{case:18} {len(runs):>5} {mean['process_wall_s']:>9.1f} "
                     f"{max(r['process_wall_s'] for r in runs):>7.1f} {max(r['peak_rss_mb'] for r in runs):>8.0f} "
                     f"{mean['tvd2']:>7.4f} {mean['tvd3']:>7.4f} {ratio2} {ratio3} "
                     f"{mean['independent_tvd3']:>7.4f} {mean['bootstrap_tvd3']:>7.4f}")
    return lines


def main(argv=None) -> list[dict]:
    """Run the cases and print the table (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", choices=CASES, default=list(DEFAULT_CASES))
    ap.add_argument("--case", choices=CASES, help="run one case in this process and print its JSON line")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--params", type=json.loads, default=None,
                    help="hyper-parameters (JSON) for the cases' synthesizer, e.g. '{\"scoring\": \"exact\"}'; "
                         "MST's comparison runs keep its defaults")
    ap.add_argument("--no-mst", action="store_true", help="do not add MST on the tables the cases use")
    ap.add_argument("--json", default=None, help="also write all results here")
    ap.add_argument("--no-score", action="store_true",
                    help="with --case: load, fit and generate only (a whole-process timing, as the reference's runner)")
    args = ap.parse_args(argv)
    if args.case:
        result = run_case(args.case, args.seed, args.data_seed, args.epsilon, score=not args.no_score,
                          params=args.params)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # KiB on Linux
        print(json.dumps(result))
        return [result]
    cases = list(dict.fromkeys(args.cases))
    if not args.no_mst:
        cases = list(dict.fromkeys([f"mst-{_split(c)[1]}" for c in cases] + cases))
    results = []
    for case in cases:
        for seed in args.seeds:
            params = None if case.startswith("mst-") and not args.cases.count(case) else args.params
            r = _child(case, seed, args.data_seed, args.epsilon, params)
            results.append(r)
            target = TARGETS.get(case)
            print(f"{case} seed {seed}: fit {r['fit_s']:.1f} s, process {r['process_wall_s']:.1f} s"
                  + (f" (target < {target:.0f} s)" if target else "") + f", peak {r['peak_rss_mb']:.0f} MB, "
                  f"TVD2 {r['tvd2']:.4f}, TVD3 {r['tvd3']:.4f}" + (f", {r['engine']}" if r.get("engine") else ""),
                  flush=True)
    print()
    header = (f"{'case':18} {'seed':>4} {'rows':>8} {'attrs':>5} {'fit s':>7} {'process s':>9} {'peak MB':>8} "
              f"{'TVD2':>7} {'TVD3':>7} {'indep2':>7} {'indep3':>7} {'boot2':>7} {'boot3':>7}")
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r['case']:18} {r['seed']:>4} {r['rows']:>8} {r['attributes']:>5} {r['fit_s']:>7.1f} "
              f"{r['process_wall_s']:>9.1f} {r['peak_rss_mb']:>8.0f} {r['tvd2']:>7.4f} {r['tvd3']:>7.4f} "
              f"{r['independent_tvd2']:>7.4f} {r['independent_tvd3']:>7.4f} {r['bootstrap_tvd2']:>7.4f} "
              f"{r['bootstrap_tvd3']:>7.4f}")
    print()
    print("\n".join(_summary(results)))
    print("\nTVD3 over all 3-way marginals, or a seeded sample of 2 000 of them; /MST: the mean TVD over the seeds "
          "divided by MST's on the same table and seeds; indep: independent columns (each resampled from its own "
          "marginal); boot: a bootstrap resample of the data (the floor).  Params: "
          + json.dumps(args.params or {}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
