"""Throughput of marginal counting on a large table: old one-pass-per-marginal code against the chunked engine.

    python -m skdpsynth.benchmarks.counting [--rows 10000000] [--cols 15] [--pairs 15] [--repeats 3]
                                            [--uniform] [--seed 0] [--json OUT]

Builds a seeded ``rows x cols`` table of codes (column sizes drawn from 2..100;
each column's category probabilities from a Dirichlet(0.5), i.e. skewed like
real data, or uniform with ``--uniform``) and stores it four ways: intp in
Fortran order (what :func:`skdpsynth.marginals.as_codes` returns), intp in C
order, uint8 in Fortran order and uint8 in C order.  For each layout it
reports, in millions of rows per second per 2-way marginal:

* ``old``: the previous ``marginal`` (``np.ravel_multi_index`` + one global
  ``np.bincount``, copied below as the baseline), one marginal at a time over
  ``--pairs`` 2-way cliques;
* ``marginal``: the current :func:`skdpsynth.marginals.marginal` on the same
  cliques, one at a time;
* ``marginals``: :func:`skdpsynth.marginals.marginals` over all 2-way cliques
  at once (one pass over row chunks), as rows x marginals / s;

plus the peak memory that NumPy allocates during one counting call (tracemalloc,
excluding the table itself) and whether the results equal the baseline's.
Times are the best of ``--repeats``.  Everything runs on one core: NumPy's
bincount and ufuncs are single-threaded and no threads are used.  Compare runs
made on the same machine only.
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from ..domain import Domain
from ..marginals import kway_cliques, marginal, marginals
from .engine import tracemalloc_peak_mb


def old_marginal(codes: np.ndarray, domain: Domain, clique, weights=None) -> np.ndarray:
    """The ``marginal`` of skdpsynth before issue 16 (the baseline)."""
    clique = domain.canonical(clique)
    shape = domain.shape_of(clique)
    if not clique:
        total = codes.shape[0] if weights is None else float(np.sum(weights))
        return np.asarray(float(total))
    cols = tuple(codes[:, domain.index(a)] for a in clique)
    flat = np.ravel_multi_index(cols, shape) if len(cols) > 1 else cols[0]
    counts = np.bincount(flat, weights=weights, minlength=int(np.prod(shape)))
    return counts.astype(np.float64, copy=False).reshape(shape)


def make_table(rows: int, cols: int, seed: int, uniform: bool) -> tuple[np.ndarray, Domain]:
    rng = np.random.default_rng(seed)
    sizes = [int(s) for s in rng.integers(2, 101, cols)]
    codes = np.empty((rows, cols), dtype=np.intp, order="F")
    for j, s in enumerate(sizes):
        if uniform:
            codes[:, j] = rng.integers(0, s, rows)
        else:
            cdf = np.cumsum(rng.dirichlet(np.full(s, 0.5)))
            codes[:, j] = np.minimum(np.searchsorted(cdf, rng.random(rows), side="right"), s - 1)
    return codes, Domain([f"c{j}" for j in range(cols)], sizes)


def _best_seconds(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_layout(codes: np.ndarray, dom: Domain, pairs, all_pairs, repeats: int, reference) -> dict:
    n = codes.shape[0]
    old = _best_seconds(lambda: [old_marginal(codes, dom, c) for c in pairs], repeats)
    new = _best_seconds(lambda: [marginal(codes, dom, c) for c in pairs], repeats)
    batch = _best_seconds(lambda: marginals(codes, dom, all_pairs), repeats)
    got = marginals(codes, dom, all_pairs)
    same = all(np.array_equal(got[c], reference[c]) for c in all_pairs) and all(
        np.array_equal(marginal(codes, dom, c), reference[c]) for c in pairs
    )
    return {
        "old_rows_per_s": n * len(pairs) / old,
        "marginal_rows_per_s": n * len(pairs) / new,
        "marginals_rows_per_s": n * len(all_pairs) / batch,
        "marginals_seconds": batch,
        "old_peak_mb": tracemalloc_peak_mb(lambda: old_marginal(codes, dom, pairs[0])),
        "marginal_peak_mb": tracemalloc_peak_mb(lambda: marginal(codes, dom, pairs[0])),
        "marginals_peak_mb": tracemalloc_peak_mb(lambda: marginals(codes, dom, all_pairs)),
        "equal_to_old": bool(same),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--cols", type=int, default=15)
    ap.add_argument("--pairs", type=int, default=15, help="2-way cliques timed one at a time (spread over all pairs)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--uniform", action="store_true", help="uniform codes instead of skewed (Dirichlet 0.5) ones")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    codes, dom = make_table(args.rows, args.cols, args.seed, args.uniform)
    all_pairs = kway_cliques(dom, 2)
    step = max(1, len(all_pairs) // max(1, args.pairs))
    pairs = all_pairs[::step][: args.pairs]
    layouts = {
        "intp, Fortran (as_codes)": codes,
        "intp, C order": np.ascontiguousarray(codes),
        "uint8, Fortran": np.asfortranarray(codes.astype(np.uint8)),
        "uint8, C order": np.ascontiguousarray(codes.astype(np.uint8)),
    }
    reference = {c: old_marginal(codes, dom, c) for c in all_pairs}
    print(
        f"Table: {args.rows:,} rows x {args.cols} columns (sizes {min(dom.shape)}..{max(dom.shape)}, "
        f"{'uniform' if args.uniform else 'skewed'} codes, seed {args.seed}), built in {time.perf_counter() - t:.1f} s; "
        f"{len(pairs)} 2-way cliques one at a time ({min(dom.size(c) for c in pairs)}..{max(dom.size(c) for c in pairs)} "
        f"cells), all {len(all_pairs)} in one marginals() call."
    )
    print("Single-threaded NumPy (bincount and ufuncs use one core); best of", args.repeats, "runs.")
    print()
    head = (f"{'layout':26s} {'old M rows/s':>13s} {'marginal':>10s} {'speed-up':>9s} {'marginals':>10s} "
            f"{'speed-up':>9s} {'peak MB old/new/batch':>22s} {'equal':>6s}")
    print(head)
    print("-" * len(head))
    results = {"rows": args.rows, "cols": args.cols, "sizes": list(dom.shape), "uniform": args.uniform,
               "pairs": [list(c) for c in pairs], "layouts": {}}
    for name, arr in layouts.items():
        r = bench_layout(arr, dom, pairs, all_pairs, args.repeats, reference)
        results["layouts"][name] = r
        old, new, batch = r["old_rows_per_s"] / 1e6, r["marginal_rows_per_s"] / 1e6, r["marginals_rows_per_s"] / 1e6
        peaks = f"{r['old_peak_mb']:.0f}/{r['marginal_peak_mb']:.1f}/{r['marginals_peak_mb']:.1f}"
        print(f"{name:26s} {old:13.1f} {new:10.1f} {new / old:8.2f}x {batch:10.1f} {batch / old:8.2f}x "
              f"{peaks:>22s} {'yes' if r['equal_to_old'] else 'NO':>6s}")
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tables_mb = sum(a.nbytes for a in layouts.values()) / 2**20
    print()
    print(f"Process peak RSS {maxrss:,.0f} MB, of which the four stored tables are {tables_mb:,.0f} MB.")
    print("'marginals' = rows x marginals per second, all 2-way cliques counted in one pass over chunks of rows;")
    print("peak MB = NumPy allocations (tracemalloc) during one call, tables excluded; equal = same tables as 'old'.")
    results["max_rss_mb"] = maxrss
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()

