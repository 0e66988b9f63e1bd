"""Benchmark of the shared engine: marginal counting and mirror-descent estimation.

    python -m skdpsynth.benchmarks.engine [--data CSV --domain JSON] [--repeats 20] [--iters 200]

Reports, on the integer-coded Adult benchmark (48,842 x 14):

* throughput of counting all 2-way marginals (cells/s and record-passes/s),
  one pass at a time and batched;
* mirror-descent seconds per iteration (and per belief-propagation call) for
  the junction trees of a few clique sets: a spanning-tree chain of 2-way
  cliques (MST-like), a set of small 3-way cliques (AIM-like), a set of large
  3-way cliques (a 14 MB model, as in late AIM rounds), and any set given
  with ``--cliques "a,b;b,c,d"``.

Timings are medians over repeats on whatever machine runs it; compare runs
made on the same machine only.

Memory: beside every time, ``peak`` is the peak of the NumPy and Python
allocations (``tracemalloc``) during one extra, untimed call of the same work
(tracemalloc slows allocation-heavy code, so it never runs during a timed
call): one pass of the counting, and, for mirror descent, a run of its first
``min(--iters, 10)`` iterations (an iteration's working set repeats, so the
peak is reached early).  It is what the call itself allocates; the data and
the libraries already held by the process are not in it.

This module also holds the memory helpers of the other benchmark scripts
(:class:`PeakRSS`, :func:`tracemalloc_peak_mb`).
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from ..domain import Domain
from ..graphical import JunctionTree, Measurement, mirror_descent
from ..marginals import as_codes, kway_cliques, marginal, marginals


def _default_paths() -> tuple[Path, Path]:
    try:  # the bundled copy, once the datasets module ships one
        from ..datasets import adult_discretized_paths  # type: ignore[attr-defined]

        return adult_discretized_paths()
    except ImportError:
        shared = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"
        return shared / "adult-discretized.csv", shared / "adult-discretized-domain.json"


TRACE_ITERS = 10


def tracemalloc_peak_mb(fn) -> float:
    """Peak MB of the Python and NumPy allocations made during one call of ``fn`` (its result is dropped)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def status_mb(field: str) -> float | None:
    """``VmRSS`` / ``VmHWM`` of this process from /proc, in MB (None where unavailable)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset the resident high-water mark (VmHWM, Linux >= 4.0) so that it measures what follows; whether it worked."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


class PeakRSS:
    """Peak resident memory of this process during a ``with`` block, in MB (``.mb``).

    On Linux the resident high-water mark (``VmHWM``) is reset through
    ``/proc/self/clear_refs`` on entry and read on exit: the peak during the
    block, including what the process already held when it began.  Where that
    is unavailable, ``.mb`` is ``getrusage(RUSAGE_SELF).ru_maxrss``, the
    process's peak since it started, and ``.exact`` is False.
    """

    def __enter__(self) -> "PeakRSS":
        self.exact = reset_peak_rss()
        self.mb = None
        return self

    def __exit__(self, *exc) -> None:
        hwm = status_mb("VmHWM") if self.exact else None
        self.exact = hwm is not None
        self.mb = hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_counting(codes: np.ndarray, dom: Domain, repeats: int) -> dict:
    pairs = kway_cliques(dom, 2)
    cells = sum(dom.size(c) for c in pairs)
    one_by_one = _median_seconds(lambda: [marginal(codes, dom, c) for c in pairs], repeats)
    batched = _median_seconds(lambda: marginals(codes, dom, pairs), repeats)
    triples = kway_cliques(dom, 3)
    cells3 = sum(dom.size(c) for c in triples)
    batched3 = _median_seconds(lambda: marginals(codes, dom, triples), max(1, repeats // 4))
    n = codes.shape[0]
    return {
        "n_records": n,
        "two_way": {
            "marginals": len(pairs),
            "cells": cells,
            "seconds": one_by_one,
            "peak_mb": tracemalloc_peak_mb(lambda: [marginal(codes, dom, c) for c in pairs]),
            "cells_per_s": cells / one_by_one,
            "records_per_s": n * len(pairs) / one_by_one,
            "batched_seconds": batched,
            "batched_peak_mb": tracemalloc_peak_mb(lambda: marginals(codes, dom, pairs)),
        },
        "three_way": {"marginals": len(triples), "cells": cells3, "batched_seconds": batched3, "cells_per_s": cells3 / batched3,
                      "batched_peak_mb": tracemalloc_peak_mb(lambda: marginals(codes, dom, triples))},
    }


def bench_estimation(codes: np.ndarray, dom: Domain, cliques: list[tuple[str, ...]], iters: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    sigma = 10.0
    measured = [(a,) for a in dom] + list(cliques)
    ms = [Measurement(c, marginal(codes, dom, c).ravel() + rng.normal(0, sigma, dom.size(c)), sigma) for c in measured]
    jt = JunctionTree.from_cliques(dom, measured)
    model, info = mirror_descent(dom, ms, iters=iters)
    del model
    peak = tracemalloc_peak_mb(lambda: mirror_descent(dom, ms, iters=min(iters, TRACE_ITERS)))
    return {
        "cliques": [list(c) for c in cliques],
        "junction_tree_cliques": len(jt.cliques),
        "largest_clique_cells": max(dom.size(c) for c in jt.cliques),
        "model_size_mb": jt.size_mb(),
        "iterations": info.iterations,
        "oracle_calls": info.n_oracle_calls,
        "seconds": info.seconds,
        "seconds_per_iteration": info.seconds / max(info.iterations, 1),
        "seconds_per_oracle_call": info.seconds / info.n_oracle_calls,
        "final_loss": info.loss,
        "peak_mb": peak,
        "peak_iterations": min(iters, TRACE_ITERS),
    }


def _parse_cliques(text: str, dom: Domain) -> list[tuple[str, ...]]:
    return [dom.canonical(part.split(",")) for part in text.split(";") if part.strip()]


def main(argv=None) -> dict:
    data_default, domain_default = _default_paths()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=data_default)
    ap.add_argument("--domain", type=Path, default=domain_default)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--cliques", default=None, help='extra clique set, e.g. "age,sex;sex,race,income>50K"')
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)
    if not args.data.exists():
        sys.exit(f"Data file {args.data} not found; pass --data and --domain.")
    dom = Domain.from_dict(json.loads(args.domain.read_text()))
    codes = as_codes(pd.read_csv(args.data), dom)

    results = {"counting": bench_counting(codes, dom, args.repeats), "estimation": {}}
    c2 = results["counting"]["two_way"]
    c3 = results["counting"]["three_way"]
    print(f"Data: {args.data.name}, {codes.shape[0]:,} records x {len(dom)} attributes")
    print(
        f"all 2-way marginals ({c2['marginals']}, {c2['cells']:,} cells): {c2['seconds'] * 1e3:.1f} ms one by one "
        f"(peak {c2['peak_mb']:.1f} MB) = {c2['cells_per_s'] / 1e6:.1f} M cells/s, "
        f"{c2['records_per_s'] / 1e6:.1f} M record-passes/s; "
        f"batched {c2['batched_seconds'] * 1e3:.1f} ms (peak {c2['batched_peak_mb']:.1f} MB)"
    )
    print(
        f"all 3-way marginals ({c3['marginals']}, {c3['cells']:,} cells): batched {c3['batched_seconds'] * 1e3:.1f} ms "
        f"(peak {c3['batched_peak_mb']:.1f} MB) = {c3['cells_per_s'] / 1e6:.1f} M cells/s"
    )
    attrs = dom.attrs
    sets = {
        "chain of 2-way (MST-like)": [(attrs[i], attrs[i + 1]) for i in range(len(attrs) - 1)],
        "3-way cliques (AIM-like)": [
            dom.canonical(c)
            for c in [
                ("age", "education-num", "income>50K"),
                ("marital-status", "relationship", "sex"),
                ("occupation", "workclass", "income>50K"),
                ("race", "native-country", "sex"),
                ("hours-per-week", "income>50K", "sex"),
                ("capital-gain", "capital-loss", "income>50K"),
                ("relationship", "income>50K", "age"),
            ]
            if set(c) <= set(attrs)
        ],
        "large 3-way cliques (late AIM rounds)": [
            dom.canonical(c)
            for c in [
                ("age", "fnlwgt", "hours-per-week"),
                ("fnlwgt", "capital-gain", "capital-loss"),
                ("capital-gain", "income>50K", "native-country"),
                ("age", "education-num", "occupation"),
            ]
            if set(c) <= set(attrs)
        ],
    }
    if args.cliques:
        sets["given"] = _parse_cliques(args.cliques, dom)
    for name, cliques in sets.items():
        if not cliques:
            continue
        r = bench_estimation(codes, dom, cliques, args.iters)
        results["estimation"][name] = r
        print(
            f"mirror descent, {name}: junction tree {r['junction_tree_cliques']} cliques, "
            f"{r['model_size_mb']:.2f} MB (largest {r['largest_clique_cells']:,} cells); "
            f"{r['iterations']} iterations in {r['seconds']:.2f} s = {r['seconds_per_iteration'] * 1e3:.2f} ms/iteration "
            f"({r['seconds_per_oracle_call'] * 1e3:.2f} ms per belief-propagation call); "
            f"peak {r['peak_mb']:.1f} MB"
        )
    print("peak: tracemalloc peak of the NumPy/Python allocations during one extra, untimed call "
          f"(mirror descent: its first {min(args.iters, TRACE_ITERS)} iterations); data and libraries excluded")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
