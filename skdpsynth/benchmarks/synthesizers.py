"""Every synthesizer on Adult at one ε: fit + sample time, peak memory and 2-/3-way TVD (the "choosing" table).

    python -m skdpsynth.benchmarks.synthesizers                          # seeds 0 1 2, ε = 1
    python -m skdpsynth.benchmarks.synthesizers --seeds 0 1 2 --epsilon 1
    python -m skdpsynth.benchmarks.synthesizers --methods mst dpview --seeds 0 --out synthesizers.json

Data: ``load_adult(discretized=True)`` — all 48,842 records, 14 integer-coded
attributes — with its public domain.  Every synthesizer is fitted on the whole
table at the given ε (δ = ``--delta``, 1e-9 by default, for the zCDP ones;
DPView is pure ε-DP and has no δ) and then samples as many records as the
table has.  Methods (``--methods``):

* ``mst``: ``MSTSynthesizer``; ``aim``: ``AIMSynthesizer`` (defaults: all
  3-way marginals of at most 10,000 cells);
* ``dpview`` / ``dpview+``: ``ViewSynthesizer(variant=...)`` with its defaults
  (``view_size="auto"``, the record count a Laplace count);
* ``randdpgen``: ``HybridSynthesizer`` with the simulated hybrid partition
  ``{"n_slices": 2, "n_vertical": 2}`` (K = S = 2: two seeded row slices, each
  split into two contiguous column groups — the quick setting of
  ``examples/reproduce_randdpgen.py`` and the grid of ``doc/federated.md``),
  simulated secure computation;
* ``vertimrf``: ``VerticalMRFSynthesizer(party_columns=2)`` (two parties
  holding contiguous column blocks in the table's column order, the 2-party
  setting of ``examples/reproduce_vertimrf.py``), FM sketches, defaults;
* ``ppsyn``: ``PartitionSynthesizer`` in its default strict (DP) mode.

Seeds fix the noise so that runs are comparable: a benchmark, not a release
(the ``ReproducibleNoiseWarning`` is silenced; any other warning is shown).
``seconds`` is wall-clock fit + ``sample`` in this process, ``CPU s`` the
CPU time this process used meanwhile (all its threads: run with
``OMP_NUM_THREADS=1`` to compare methods on one core; on a shared machine it
is less inflated by other load than the wall-clock time); ``peak MB`` is the
peak resident memory of this process during that fit + sample
(:class:`skdpsynth.benchmarks.engine.PeakRSS`: it includes what the process
already held — interpreter, data, earlier results; ``*`` when the reset of the
high-water mark is unavailable and the figure is the process's peak so far).
TVD2 / TVD3 are :func:`skdpsynth.metrics.marginal_tvd` over all 2-way and all
3-way marginals against the table the synthesizer was fitted on (scoring is
not timed).  The summary gives, per method, the mean over the seeds and the
spread (min–max).  Times are wall-clock and depend on the machine and its
load; nothing is asserted about them.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

from ..metrics import marginal_tvd
from ..privacy import ReproducibleNoiseWarning
from .engine import PeakRSS

METHODS = ("mst", "aim", "dpview", "dpview+", "randdpgen", "vertimrf", "ppsyn")
# What each method is, for the table: estimator, data setting as benchmarked, privacy notion.
DESCRIPTION = {
    "mst": ("MSTSynthesizer", "centralized", "zCDP -> (eps, delta)"),
    "aim": ("AIMSynthesizer", "centralized", "zCDP -> (eps, delta)"),
    "dpview": ("ViewSynthesizer(variant='dpview')", "centralized", "pure eps"),
    "dpview+": ("ViewSynthesizer(variant='dpview+')", "centralized", "pure eps"),
    "randdpgen": ("HybridSynthesizer", "hybrid K=S=2 (simulated)", "zCDP -> (eps, delta)"),
    "vertimrf": ("VerticalMRFSynthesizer", "vertical, 2 parties (simulated)", "(eps, delta) basic composition"),
    "ppsyn": ("PartitionSynthesizer", "centralized", "zCDP -> (eps, delta)"),
}


def make_synthesizer(method: str, epsilon: float, delta: float, seed: int, domain):
    """The estimator benchmarked as ``method`` (see the module docstring), seeded with ``seed``."""
    from ..synthesizers import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                                VerticalMRFSynthesizer, ViewSynthesizer)

    dom = domain.to_dict()
    if method == "mst":
        return MSTSynthesizer(epsilon, delta, domain=dom, random_state=seed)
    if method == "aim":
        return AIMSynthesizer(epsilon, delta, domain=dom, random_state=seed)
    if method in ("dpview", "dpview+"):   # pure ε-DP: no δ
        return ViewSynthesizer(epsilon, domain=dom, variant=method, random_state=seed)
    if method == "randdpgen":
        return HybridSynthesizer(epsilon, delta, domain=dom, partition={"n_slices": 2, "n_vertical": 2},
                                 random_state=seed)
    if method == "vertimrf":
        return VerticalMRFSynthesizer(epsilon, delta, domain=dom, party_columns=2, random_state=seed)
    if method == "ppsyn":
        return PartitionSynthesizer(epsilon, delta, domain=dom, random_state=seed)
    raise ValueError(f"unknown method {method!r}; known: {METHODS}")


def run_one(frame: pd.DataFrame, domain, method: str, seed: int, epsilon: float, delta: float = 1e-9) -> dict:
    """Fit ``method`` on ``frame``, sample ``len(frame)`` records, time it and score it (one row of results)."""
    columns = list(domain.attrs)
    real = frame[columns]
    model = make_synthesizer(method, epsilon, delta, seed, domain)
    with warnings.catch_warnings():
        # The seed makes the noise reproducible: right for a benchmark, never for a release.
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        with PeakRSS() as peak:
            start, cpu_start = time.perf_counter(), time.process_time()
            model.fit(real)
            fitted = time.perf_counter()
            synthetic = model.sample(len(real))
            done, cpu_done = time.perf_counter(), time.process_time()
    tvd = marginal_tvd(real, synthetic[columns], ways=(2, 3), domain=domain)
    ledger = model.privacy_ledger_
    return {"method": method, "estimator": DESCRIPTION[method][0], "seed": seed, "epsilon": epsilon,
            "delta": 0.0 if method in ("dpview", "dpview+") else delta, "rows": len(real),
            "attributes": len(columns), "synthetic_rows": len(synthetic),
            "fit_s": fitted - start, "sample_s": done - fitted, "seconds": done - start,
            "cpu_s": cpu_done - cpu_start,
            "peak_rss_mb": peak.mb, "peak_rss_of_fit": peak.exact,
            "epsilon_spent": float(ledger.epsilon(delta)), "is_private": bool(ledger.is_private),
            "tvd2": float(tvd[2]), "tvd3": float(tvd[3])}


def run_benchmark(frame: pd.DataFrame, domain, methods=METHODS, seeds=(0, 1, 2), epsilon: float = 1.0,
                  delta: float = 1e-9, log=None) -> list[dict]:
    """Every method × seed on ``frame`` (one :func:`run_one` row each); ``log`` gets each row as it finishes."""
    rows = []
    for method in methods:
        for seed in seeds:
            row = run_one(frame, domain, method, seed, epsilon, delta)
            rows.append(row)
            if log is not None:
                log(row)
    return rows


def summarize(rows: list[dict]) -> pd.DataFrame:
    """One line per method: mean seconds, largest peak, mean and min–max of TVD2 and TVD3 over the seeds."""
    frame = pd.DataFrame(rows)
    out = []
    for method, sel in frame.groupby("method", sort=False):
        out.append({"method": method, "estimator": DESCRIPTION[method][0], "setting": DESCRIPTION[method][1],
                    "privacy": DESCRIPTION[method][2], "seeds": len(sel),
                    "seconds": sel["seconds"].mean(), "cpu_s": sel["cpu_s"].mean(), "fit_s": sel["fit_s"].mean(), "sample_s": sel["sample_s"].mean(),
                    "peak_rss_mb": sel["peak_rss_mb"].max(), "peak_exact": bool(sel["peak_rss_of_fit"].all()),
                    "tvd2": sel["tvd2"].mean(), "tvd2_min": sel["tvd2"].min(), "tvd2_max": sel["tvd2"].max(),
                    "tvd3": sel["tvd3"].mean(), "tvd3_min": sel["tvd3"].min(), "tvd3_max": sel["tvd3"].max(),
                    "is_private": bool(sel["is_private"].all())})
    return pd.DataFrame(out)


def format_table(summary: pd.DataFrame) -> str:
    """The summary as a Markdown table (the form pasted into ``doc/choosing.md``)."""
    lines = ["| method | setting | seeds | fit + sample s | CPU s | peak MB | TVD2 (min–max) | TVD3 (min–max) |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in summary.itertuples():
        peak = f"{r.peak_rss_mb:.0f}" + ("" if r.peak_exact else "*")
        lines.append(f"| {r.method} | {r.setting} | {r.seeds} | {r.seconds:.1f} | {r.cpu_s:.1f} | {peak} | "
                     f"{r.tvd2:.4f} ({r.tvd2_min:.4f}–{r.tvd2_max:.4f}) | "
                     f"{r.tvd3:.4f} ({r.tvd3_min:.4f}–{r.tvd3_max:.4f}) |")
    return "\n".join(lines)


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-9, help="δ of the (ε, δ) methods (DPView is pure ε)")
    ap.add_argument("--out", type=Path, default=None, help="write every run as JSON here")
    args = ap.parse_args(argv)

    from ..datasets import load_adult

    adult = load_adult(discretized=True)
    print(f"Adult: {len(adult.frame):,} records x {len(adult.domain)} attributes, eps={args.epsilon:g}, "
          f"delta={args.delta:g}, seeds {args.seeds}", flush=True)
    rows = run_benchmark(adult.frame, adult.domain, args.methods, args.seeds, args.epsilon, args.delta,
                         log=lambda row: print(json.dumps(row), file=sys.stderr, flush=True))
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1))
    summary = summarize(rows)
    print(format_table(summary))
    print("seconds: wall-clock fit + sample (mean over seeds); CPU s: CPU time of this process during it (all its "
          "threads; less sensitive than wall-clock to other load on the machine); peak MB: peak resident memory of this process during "
          "fit + sample (largest over seeds); TVD: mean over all 2-/3-way marginals, mean (min-max) over seeds")
    if not summary["is_private"].all():
        print("WARNING: some fit's ledger is NOT differentially private:",
              list(summary.loc[~summary["is_private"], "method"]))
    return summary


if __name__ == "__main__":
    main()
