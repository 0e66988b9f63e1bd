"""Compare synthesizers (and, optionally, the reference implementation) on a benchmark data set.

    python -m skdpsynth.benchmarks.compare --dataset adult --methods aim mst --epsilon 0.1 1 10 --seeds 3
    python -m skdpsynth.benchmarks.compare --dataset adult --methods partition --epsilon 1 --seeds 3   # PPSyn

For every method, ε and seed: fit on the data, generate as many records as the
synthesizer's noisy count, and report fit seconds (fit + generation, as the
reference figures are timed), the average TVD over all 1-, 2- and 3-way
marginals, and, when the data set has a target, TSTR accuracy (train a fixed
classifier — one-hot + logistic regression — on the synthetic records, test on
real records) next to the train-real baseline.  A table is printed and all
results are written as JSON.

Data: ``adult`` (bundled, integer-coded 14-attribute benchmark; TSTR target
``income>50K``, tested on the last 16,281 records — the original adult.test
part), ``nltcs`` (looked up next to the repository in ``shared/data``), or any
``--data CSV --domain JSON``.  With ``--holdout`` the synthesizers are fitted
on the train part only and TVD is measured against it; without it they see the
whole table (as in the published reference figures), so TSTR is then not a
strict hold-out.

Reference peer: with ``--reference-python`` (the interpreter of a separate
virtual environment where ``pip install mbi`` was done) and
``--reference-mechanisms`` (a checkout of private-pgm's ``mechanisms/``
folder), the reference MST/AIM run as subprocesses through
``reference_runner.py`` in this folder, on the same data, and are scored by the
same code.  The reference is a comparator only, never a dependency.

Memory: ``peak MB`` (beside ``fit_seconds``; the largest over the seeds in the
table, per row in the JSON as ``peak_rss_mb``) is the peak resident memory of
the process that ran the fit, during the timed fit + generation (Linux:
``VmHWM``, reset through ``/proc/self/clear_refs`` just before and read just
after).  It includes what that process already held: for skdpsynth this
process (interpreter, libraries, the data, earlier results), for the reference
its own runner process (interpreter, JAX, the data), which reports it in its
JSON line the same way.  Where the reset is unavailable the figure is the
process's ``ru_maxrss`` so far (a high-water mark since it started) and
``peak_rss_of_fit`` is false; the table marks it ``*``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..domain import Domain
from ..metrics import marginal_tvd, tstr_score
from ..privacy import ReproducibleNoiseWarning
from .engine import PeakRSS

ADULT_TRAIN_ROWS = 32561


def _load(dataset: str, data: Path | None, domain: Path | None):
    if data is not None:
        dom = Domain.from_dict(json.loads(Path(domain).read_text()))
        return pd.read_csv(data)[list(dom)], dom, None, data, domain
    if dataset == "adult":
        from ..datasets import adult_discretized_paths, load_adult

        bunch = load_adult(discretized=True)
        csv, dom_json = adult_discretized_paths()
        return bunch.frame, bunch.domain, bunch.target_name, csv, dom_json
    if dataset == "nltcs":
        root = Path(__file__).resolve().parents[3] / "shared" / "data" / "nltcs"
        csv, dom_json = root / "nltcs.csv", root / "nltcs-domain.json"
        if not csv.exists():
            sys.exit(f"NLTCS not found at {csv}; pass --data and --domain.")
        dom = Domain.from_dict(json.loads(dom_json.read_text()))
        return pd.read_csv(csv)[list(dom)], dom, None, csv, dom_json
    sys.exit(f"Unknown dataset {dataset!r}; use adult, nltcs or --data/--domain.")


def _make(method: str, epsilon: float, delta: float, seed: int, domain: Domain, args):
    from ..synthesizers import AIMSynthesizer, MSTSynthesizer, PartitionSynthesizer

    common = dict(epsilon=epsilon, delta=delta, domain=domain.to_dict(), random_state=seed, verbose=args.verbose)
    if method == "mst":
        return MSTSynthesizer(**common)
    if method == "aim":
        return AIMSynthesizer(**common, max_model_size=args.max_model_size)
    if method == "partition":   # PPSyn, strict (DP) mode
        return PartitionSynthesizer(**common)
    sys.exit(f"Unknown method {method!r}; use mst, aim or partition.")


def _score(real: pd.DataFrame, synth: pd.DataFrame, domain: Domain, target, test: pd.DataFrame | None) -> dict:
    tvd = marginal_tvd(real, synth[list(domain)], ways=(1, 2, 3), domain=domain)
    out = {"tvd1": tvd[1], "tvd2": tvd[2], "tvd3": tvd[3]}
    if target is not None and test is not None:
        out["tstr_accuracy"] = tstr_score(real, synth[list(domain)], test, target)
    return out


def _run_reference(method, epsilon, delta, seed, csv, dom_json, args) -> tuple[pd.DataFrame, float, float | None, bool]:
    runner = Path(__file__).with_name("reference_runner.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "synthetic.csv"
        cmd = [
            str(args.reference_python), str(runner), "--mechanisms-dir", str(args.reference_mechanisms),
            "--method", method, "--data", str(csv), "--domain", str(dom_json), "--epsilon", str(epsilon),
            "--delta", str(delta), "--seed", str(seed), "--out", str(out),
        ]
        if method == "aim":
            cmd += ["--max-model-size", str(args.max_model_size)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.reference_timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"reference {method} failed:\n{proc.stderr[-2000:]}")
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        # The runner reports its own peak (see reference_runner.py); getrusage(RUSAGE_CHILDREN) would not
        # do: on Linux a child's ru_maxrss starts at this process's peak when it is started (vfork + exec).
        peak = info.get("peak_rss_mb")
        return (pd.read_csv(out), float(info["fit_seconds"]), None if peak is None else float(peak),
                bool(info.get("peak_rss_of_fit", False)))


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--domain", type=Path, default=None)
    ap.add_argument("--methods", nargs="+", default=["mst", "aim"])
    ap.add_argument("--epsilon", type=float, nargs="+", default=[1.0])
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1")
    ap.add_argument("--holdout", action="store_true", help="fit on the train part only (adult)")
    ap.add_argument("--max-model-size", type=float, default=80.0)
    ap.add_argument("--reference-python", type=Path, default=os.environ.get("SKDPSYNTH_REFERENCE_PYTHON"))
    ap.add_argument("--reference-mechanisms", type=Path, default=os.environ.get("SKDPSYNTH_REFERENCE_MECHANISMS"))
    ap.add_argument("--reference-methods", nargs="*", default=None, help="default: the same as --methods")
    ap.add_argument("--reference-timeout", type=float, default=3 * 3600)
    ap.add_argument("--out", type=Path, default=None, help="JSON results (default compare-<dataset>.json)")
    ap.add_argument("--verbose", type=int, default=0)
    args = ap.parse_args(argv)
    # A benchmark: seeded on purpose (comparable runs), nothing released.
    warnings.filterwarnings("ignore", category=ReproducibleNoiseWarning)

    frame, domain, target, csv, dom_json = _load(args.dataset, args.data, args.domain)
    test = frame.iloc[ADULT_TRAIN_ROWS:] if target is not None else None
    train = frame.iloc[:ADULT_TRAIN_ROWS] if (target is not None and args.holdout) else frame
    if args.holdout and target is not None:
        tmp_csv = Path(tempfile.mkdtemp()) / "train.csv"
        train.to_csv(tmp_csv, index=False)
        csv = tmp_csv
    baseline = tstr_score(train, train, test, target) if target is not None else None
    peers = [(m, "skdpsynth") for m in args.methods]
    if args.reference_python and args.reference_mechanisms:
        peers += [(m, "reference") for m in (args.reference_methods if args.reference_methods is not None else args.methods)]

    rows = []
    for epsilon in args.epsilon:
        for method, impl in peers:
            for seed in range(args.seeds):
                if impl == "skdpsynth":
                    with PeakRSS() as peak:
                        start = time.perf_counter()
                        synth = _make(method, epsilon, args.delta, seed, domain, args).fit(train).sample()
                        seconds = time.perf_counter() - start
                    peak_mb, of_fit = peak.mb, peak.exact
                else:
                    synth, seconds, peak_mb, of_fit = _run_reference(method, epsilon, args.delta, seed, csv,
                                                                     dom_json, args)
                row = {"dataset": args.dataset, "method": method, "implementation": impl, "epsilon": epsilon,
                       "delta": args.delta, "seed": seed, "fit_seconds": seconds, "peak_rss_mb": peak_mb,
                       "peak_rss_of_fit": of_fit, "rows": len(synth)}
                row.update(_score(train, synth, domain, target, test))
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)

    metrics = ["fit_seconds", "tvd1", "tvd2", "tvd3"] + (["tstr_accuracy"] if target is not None else [])
    print(f"\n{args.dataset}: {len(train):,} records, delta={args.delta}, seeds 0..{args.seeds - 1} (mean)")
    if baseline is not None:
        print(f"train-real-test-real accuracy (same classifier): {baseline:.4f}")
    header = (f"{'method':<6} {'impl':<10} {'eps':>5} {metrics[0]:>13} {'peak MB':>8} "
              + " ".join(f"{m:>13}" for m in metrics[1:]))
    print(header)
    print("-" * len(header))
    summary = []
    for epsilon in args.epsilon:
        for method, impl in peers:
            sel = [r for r in rows if r["method"] == method and r["implementation"] == impl and r["epsilon"] == epsilon]
            means = {m: statistics.fmean(r[m] for r in sel) for m in metrics}
            peaks = [r["peak_rss_mb"] for r in sel if r["peak_rss_mb"] is not None]
            peak_mb = max(peaks) if peaks else None
            exact = len(peaks) == len(sel) and all(r["peak_rss_of_fit"] for r in sel)
            summary.append({"method": method, "implementation": impl, "epsilon": epsilon, **means,
                            "peak_rss_mb": peak_mb})
            peak_text = "-" if peak_mb is None else f"{peak_mb:.0f}" + ("" if exact else "*")
            print(f"{method:<6} {impl:<10} {epsilon:>5g} {means[metrics[0]]:>13.4f} {peak_text:>8} "
                  + " ".join(f"{means[m]:>13.4f}" for m in metrics[1:]))
    print("means over the seeds; peak MB: largest over the seeds of the fitting process's peak resident memory "
          "during fit + generation (what it already held included; * = its ru_maxrss so far instead)")
    out = args.out or Path(f"compare-{args.dataset}.json")
    out.write_text(json.dumps({"rows": rows, "summary": summary, "train_real_accuracy": baseline}, indent=2))
    print(f"\nwrote {out}")
    return rows


if __name__ == "__main__":
    main()
