"""Out-of-core fit: MST on a generated Parquet table of 100 million rows x 15 columns through dask (issue 16).

    python -m skdpsynth.benchmarks.outofcore [--rows 100000000] [--dir DIR] [--check] [--file-rows 1048576]
                                             [--row-group 1048576] [--seed 0] [--epsilon 1] [--max-iters 10000]
                                             [--json OUT]

1. **Write** (skipped when ``DIR`` already holds the table): rows of a seeded
   random Bayesian network over 15 attributes
   (:func:`skdpsynth.benchmarks.generators.random_bayesian_network`, 2-10
   values each) drawn chunk by chunk with ``sample_chunks`` and written as
   uint8 Parquet files of ``--file-rows`` rows in row groups of
   ``--row-group`` rows: one row group is in memory at a time.
2. **Fit** :class:`~skdpsynth.MSTSynthesizer` from the Parquet path on dask's
   default (local threads) scheduler: the marginals are counted partition by
   partition (:mod:`skdpsynth.outofcore`).
3. With ``--check``: count every 1-way marginal and a few 2-way ones out of
   core (one more pass over the files) and compare them for exact equality
   with a streaming count of the generator's rows drawn again from the seed,
   chunk by chunk with plain NumPy (``ravel_multi_index`` + ``bincount``).

Reported: the write time, the fit time (and the part of it spent in the
final Private-PGM estimate, which does not depend on the number of rows),
the check, and the whole process's peak resident memory
(``resource.getrusage``) after each stage.  Timings on a shared machine are
noisy: compare runs made side by side.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

N_ATTRIBUTES = 15
MAX_VALUES = 10


def _network(seed: int):
    from .generators import random_bayesian_network

    return random_bayesian_network(N_ATTRIBUTES, max_values=MAX_VALUES, random_state=seed)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def write_table(directory: Path, rows: int, seed: int, file_rows: int, row_group: int) -> dict:
    """Write the table (unless ``directory`` already holds it, marked complete); one row group in memory at a time."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamp = {"rows": rows, "seed": seed, "attributes": N_ATTRIBUTES, "max_values": MAX_VALUES,
             "file_rows": file_rows, "row_group": row_group}
    done = directory / "_COMPLETE.json"
    if done.exists() and json.loads(done.read_text()) == stamp:
        return {"written": False, "write_s": 0.0}
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    start = time.perf_counter()
    net = _network(seed)
    writer, in_file, in_group, group, n_files = None, 0, 0, [], 0

    def flush():
        nonlocal in_group, group
        if group:
            frame = group[0] if len(group) == 1 else pd.concat(group)
            writer.write_table(pa.Table.from_pandas(frame, preserve_index=False))
        in_group, group = 0, []

    # Chunks of the generator's default size (the rows drawn for a seed depend on it), grouped into row groups.
    for chunk in net.sample_chunks(rows, random_state=seed + 1, dtype=np.uint8):
        if writer is None:
            writer = pq.ParquetWriter(directory / f"part-{n_files:05d}.parquet",
                                      pa.Schema.from_pandas(chunk, preserve_index=False))
            n_files += 1
        group.append(chunk)
        in_group += len(chunk)
        in_file += len(chunk)
        if in_group >= row_group or in_file >= file_rows:
            flush()
        if in_file >= file_rows:
            writer.close()
            writer, in_file = None, 0
    if writer is not None:
        flush()
        writer.close()
    done.write_text(json.dumps(stamp))
    return {"written": True, "write_s": time.perf_counter() - start, "files": n_files}


def streaming_marginals(rows: int, seed: int, cliques) -> dict:
    """The marginals of the generator's rows, counted chunk by chunk with plain NumPy (the reference)."""
    net = _network(seed)
    dom = net.domain
    out = {c: np.zeros(dom.size(c), np.int64) for c in cliques}
    for chunk in net.sample_chunks(rows, random_state=seed + 1, dtype=np.uint8):
        for c in cliques:
            cols = tuple(chunk[a].to_numpy().astype(np.intp) for a in c)
            flat = np.ravel_multi_index(cols, dom.shape_of(c)) if len(c) > 1 else cols[0]
            out[c] += np.bincount(flat, minlength=out[c].size)
    return {c: t.reshape(dom.shape_of(c)) for c, t in out.items()}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--dir", type=Path, default=None,
                    help="where the Parquet table is (or is written); default: a cache directory per --rows/--seed")
    ap.add_argument("--check", action="store_true", help="compare marginals with a streaming NumPy count")
    ap.add_argument("--file-rows", type=int, default=1 << 20)
    ap.add_argument("--row-group", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--max-iters", type=int, default=10_000)
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)

    import dask

    from skdpsynth import MSTSynthesizer

    directory = args.dir or Path(os.environ.get("XDG_CACHE_HOME", tempfile.gettempdir())) / (
        f"skdpsynth-outofcore-{args.rows}-seed{args.seed}")
    net = _network(args.seed)
    domain = net.domain.to_dict()
    result = {"rows": args.rows, "attributes": N_ATTRIBUTES, "domain": domain, "dir": str(directory),
              "cpus": os.cpu_count(), "scheduler": dask.config.get("scheduler", "default (threads)")}
    result.update(write_table(directory, args.rows, args.seed, args.file_rows, args.row_group))
    result["parquet_mb"] = sum(p.stat().st_size for p in directory.glob("*.parquet")) / 2**20
    result["peak_rss_mb_after_write"] = _peak_rss_mb()
    print(f"table: {args.rows:,} rows x {N_ATTRIBUTES} in {directory} ({result['parquet_mb']:.0f} MB Parquet); "
          f"{'written in %.1f s' % result['write_s'] if result['written'] else 'already there'}", flush=True)

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seed makes the noise reproducible: a benchmark, not a release
        mst = MSTSynthesizer(args.epsilon, domain=domain, max_iters=args.max_iters, random_state=args.seed)
        mst.fit(str(directory))
    result["fit_s"] = time.perf_counter() - start
    result["estimation_s"] = mst.estimation_.seconds
    result["n_records_noisy"] = float(mst.n_records_)
    result["peak_rss_mb_after_fit"] = _peak_rss_mb()
    print(f"fit: {result['fit_s']:.1f} s (of which {result['estimation_s']:.1f} s Private-PGM estimation); "
          f"peak RSS so far {result['peak_rss_mb_after_fit']:.0f} MB", flush=True)

    if args.check:
        from skdpsynth.marginals import marginals
        from skdpsynth.outofcore import as_dask_codes

        attrs = list(domain)
        cliques = [(a,) for a in attrs] + list(itertools.combinations(attrs, 2))[::20]
        start = time.perf_counter()
        lazy = as_dask_codes(str(directory), domain)
        got = marginals(lazy, lazy.domain, cliques)
        result["check_outofcore_s"] = time.perf_counter() - start
        start = time.perf_counter()
        expected = streaming_marginals(args.rows, args.seed, cliques)
        result["check_streaming_s"] = time.perf_counter() - start
        bad = [c for c in cliques if not np.array_equal(got[c], expected[c])]
        result["check_cliques"] = len(cliques)
        result["check_equal"] = not bad
        result["peak_rss_mb_after_check"] = _peak_rss_mb()
        print(f"check: {len(cliques)} marginals out of core in {result['check_outofcore_s']:.1f} s, "
              f"streaming NumPy in {result['check_streaming_s']:.1f} s: "
              + ("all exactly equal" if not bad else f"DIFFER on {bad}"), flush=True)

    result["peak_rss_mb"] = _peak_rss_mb()
    print(f"whole-process peak RSS: {result['peak_rss_mb']:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    if args.check and not result["check_equal"]:
        raise SystemExit(1)
    return result


if __name__ == "__main__":
    main()
