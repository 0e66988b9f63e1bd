"""The engine at scale (issue 16): every figure, each case in a fresh process, with its time and peak memory.

    python -m skdpsynth.benchmarks.scale                      # every case
    python -m skdpsynth.benchmarks.scale --cases mst-adult aim-large-domain --seeds 0 1 2
    python -m skdpsynth.benchmarks.scale --case aim-wide --seed 0     # one case, in this process (JSON line)

Cases (each run as ``python -m skdpsynth.benchmarks.scale --case NAME`` in a
subprocess, so that its wall time is the whole process — imports, data, fit,
generation — and its peak resident memory is its own, read from
``resource.getrusage(RUSAGE_CHILDREN)`` after it ends):

* ``mst-adult``: ``MSTSynthesizer`` on bundled Adult (48 842 × 14, discretized)
  at ε = 1, δ = 1e-9, as many records as the noisy count (issue 16 point 1;
  the reference's side of that comparison runs in its own environment, see
  ``compare.py``).
* ``aim-adult``: ``AIMSynthesizer`` on bundled Adult; run it with
  ``--epsilon 10`` for point 2 (under 5 minutes per fit).
* ``aim-wide``: ``AIMSynthesizer`` at ε = 1 on a generated table of 50
  attributes (2–20 values) and 200 000 rows (point 3: under 10 minutes).
* ``aim-large-domain``: ``AIMSynthesizer`` at ε = 1 on a generated table of
  10 attributes with 50–100 values and 200 000 rows (point 3: under 2 minutes).

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

CASES = ("mst-adult", "aim-adult", "aim-wide", "aim-large-domain")
TARGETS = {"mst-adult": None, "aim-adult": 300.0, "aim-wide": 600.0, "aim-large-domain": 120.0}
MAX_TRIPLES = 2000


def _table(case: str, data_seed: int):
    """The case's table (DataFrame of codes) and its public domain."""
    if case in ("mst-adult", "aim-adult"):
        from skdpsynth.datasets import load_adult

        adult = load_adult(discretized=True)
        return adult.frame[list(adult.domain.attrs)], adult.domain
    from skdpsynth.benchmarks.generators import random_bayesian_network

    if case == "aim-wide":
        net = random_bayesian_network(50, min_values=2, max_values=20, max_parents=2, random_state=data_seed)
    elif case == "aim-large-domain":
        net = random_bayesian_network(10, min_values=50, max_values=100, max_parents=2, random_state=data_seed)
    else:
        raise ValueError(f"unknown case {case!r}; known: {CASES}")
    return net.sample(200_000, random_state=data_seed + 1, dtype="int64"), net.domain


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


def run_case(case: str, seed: int, data_seed: int, epsilon: float, score: bool = True) -> dict:
    """One case in this process: fit, generate, score (the time excludes scoring; ``score=False`` skips it)."""
    import pandas as pd

    from skdpsynth import AIMSynthesizer, MSTSynthesizer

    start = time.perf_counter()
    real, domain = _table(case, data_seed)
    loaded = time.perf_counter()
    cls = MSTSynthesizer if case == "mst-adult" else AIMSynthesizer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the seed makes the noise reproducible: a benchmark, not a release
        model = cls(epsilon, 1e-9, domain=domain.to_dict(), random_state=seed).fit(real)
        fitted = time.perf_counter()
        synthetic = model.sample()
    done = time.perf_counter()
    timing = {"case": case, "seed": seed, "data_seed": data_seed, "epsilon": epsilon, "rows": len(real),
              "attributes": len(domain), "cells_max": int(max(domain.shape)), "load_s": loaded - start,
              "fit_s": fitted - loaded, "sample_s": done - fitted, "total_s": done - start,
              "synthetic_rows": len(synthetic)}
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


def _child(case: str, seed: int, data_seed: int, epsilon: float) -> dict:
    """Run one case in a fresh interpreter; its whole-process wall time and peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "skdpsynth.benchmarks.scale", "--case", case, "--seed", str(seed),
                          "--data-seed", str(data_seed), "--epsilon", str(epsilon)],
                         capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"case {case} seed {seed} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the largest child so far (KiB on Linux): exact when the cases grow or run alone.
    result["process_wall_s"] = wall
    result["peak_rss_mb"] = max(peak, before) / 1024.0
    result["peak_is_this_case"] = peak > before
    return result


def main(argv=None) -> list[dict]:
    """Run the cases and print the table (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    ap.add_argument("--case", choices=CASES, help="run one case in this process and print its JSON line")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--json", default=None, help="also write all results here")
    ap.add_argument("--no-score", action="store_true",
                    help="with --case: load, fit and generate only (a whole-process timing, as the reference's runner)")
    args = ap.parse_args(argv)
    if args.case:
        result = run_case(args.case, args.seed, args.data_seed, args.epsilon, score=not args.no_score)
        print(json.dumps(result))
        return [result]
    results = []
    for case in args.cases:
        for seed in args.seeds:
            r = _child(case, seed, args.data_seed, args.epsilon)
            results.append(r)
            target = TARGETS[case]
            print(f"{case} seed {seed}: fit {r['fit_s']:.1f} s, process {r['process_wall_s']:.1f} s"
                  + (f" (target < {target:.0f} s)" if target else "") + f", peak {r['peak_rss_mb']:.0f} MB",
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
    print("\nTVD3 over all 3-way marginals, or a seeded sample of 2 000 of them; indep: independent columns "
          "(each resampled from its own marginal); boot: a bootstrap resample of the data (the floor).")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
