"""Cost of VertiMRF on Adult: each party's encoding and the server, time, peak memory and message sizes.

    python -m skdpsynth.benchmarks.vertical [--epsilon 1.6] [--n-sketches 2000] [--parties 2] [--repeats 2]
                                            [--data-dir DIR] [--no-isolate] [--no-tracemalloc] [--verbose 1]
                                            [--json OUT]

Data: the discretized Adult (``adult/adult-discretized.csv`` + ``adult-discretized-domain.json`` under
``--data-dir``, default the repository's sibling ``../shared/data``): all 48,842 records x 14 integer-coded
columns, m contiguous column blocks (m = 2: 7 & 7), δ = 1/n, VertiMRF-FM with t sketches.

One reference fit of :class:`~skdpsynth.VerticalMRFSynthesizer` (``keep_messages=True``) gives the public
configuration and the parties' serialised messages; then, ``--repeats`` times:

* **party i**: ``VerticalParty(i, config).run(codes_i, SketchKeys.generate(t))`` (keys made before the clock
  starts), split into the local model (AIM on the party's columns) and the sketch encoding inside it, plus the
  message serialisation;
* **party i, encoding alone**: :func:`skdpsynth.synthesizers.vertical_mrf.sketches.encode` on the party's binned codes (the pure
  LocEnc cost);
* **server**: ``VerticalServer(config).fit([VerticalMessage.from_bytes(b) for b in messages])`` (CarEst, HisRec,
  GraphCom, InitMRF, OptMRF).

Memory, per measured call: the resident set before it and its high-water mark during it (``VmHWM`` from
/proc, reset just before the call through /proc/self/clear_refs), ``getrusage`` ``ru_maxrss`` of the measuring
process, and, from one extra pass under tracemalloc (``--no-tracemalloc`` skips it), the peak of the traced
Python and NumPy allocations.  tracemalloc slows the allocation-heavy local model and server 2-7 fold, so the
seconds quoted are those of the untraced repeats (the traced pass's are printed beside them).  By default every
call (and the reference fit) runs in a fresh spawned process, so nothing carries over between measurements;
``ru_maxrss`` survives fork and exec on Linux, so a child's starts at this (small) process's high-water mark.
``--no-isolate`` measures in this process.

Targets (the issue's acceptance): encoding per party < 60 s, server < 120 s on this machine.  The paper
(Table 3 of the KDD version, ε not stated, t = 2000): 23.1 min per party (4.1 min with 40 threads), 67 min
server, 15 "Mb" communication.  Compare runs made on the same machine only; medians are quoted.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import statistics
import sys
import time
import tracemalloc
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TARGET_PARTY_S, TARGET_SERVER_S = 60.0, 120.0
PAPER = {"party_min": 23.1, "party_min_40_threads": 4.1, "server_min": 67.0, "comm": "15 Mb (4.9 Mb with 40 threads)"}


def load_adult(data_dir: Path) -> tuple[pd.DataFrame, dict]:
    """All rows of the discretized Adult, columns in the domain file's order, and the public domain."""
    csv, dom_path = data_dir / "adult" / "adult-discretized.csv", data_dir / "adult" / "adult-discretized-domain.json"
    for path in (csv, dom_path):
        if not path.is_file():
            sys.exit(f"error: {path} not found. Pass --data-dir pointing at the shared data directory (the one "
                     f"holding adult/); default {DEFAULT_DATA_DIR}.")
    sizes = json.loads(dom_path.read_text())
    frame = pd.read_csv(csv)
    if set(frame.columns) != set(sizes):
        raise ValueError(f"{csv.name}: columns {sorted(frame.columns)} differ from the domain's {sorted(sizes)}.")
    frame = frame[list(sizes)].astype(np.int64)
    domain = {c: int(s) for c, s in sizes.items()}
    bad = [c for c in frame.columns if frame[c].min() < 0 or frame[c].max() >= domain[c]]
    if bad:
        raise ValueError(f"{csv.name}: columns {bad} hold codes outside their public domain.")
    return frame, domain


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def _party_codes(config, index: int, codes: np.ndarray) -> np.ndarray:
    _, columns = config.parties[index]
    return codes[:, [config.domain.index(c) for c in columns]]


def reference_fit(frame: pd.DataFrame, domain: dict, epsilon: float, n_sketches: int, parties: int,
                  verbose: int = 0) -> dict:
    """One fit with ``keep_messages=True``: the public configuration and the parties' serialised messages."""
    from .. import VerticalMRFSynthesizer

    syn = VerticalMRFSynthesizer(epsilon=epsilon, delta=1.0 / len(frame), party_columns=parties, domain=domain,
                                 n_sketches=n_sketches, keep_messages=True, random_state=None, verbose=verbose)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        syn.fit(frame)
    return {"seconds": time.perf_counter() - start, "config": syn.config_, "messages": list(syn.messages_),
            "n_hat": syn.n_hat_, "maxrss_mb": _maxrss_mb()}


def measure(kind: str, config, index: int | None, payload, trace: bool = False) -> dict:
    """One measured call (in a fresh process by default): seconds, peak RSS, ru_maxrss, optionally tracemalloc."""
    from ..synthesizers.vertical_mrf import sketches as fm
    from ..synthesizers.vertical_mrf.message import VerticalMessage
    from ..synthesizers.vertical_mrf.party import VerticalParty
    from ..synthesizers.vertical_mrf import VerticalServer
    from .engine import reset_peak_rss, status_mb

    out = {"kind": kind, "index": index, "traced": trace}
    if kind in ("party", "encode"):
        codes = np.ascontiguousarray(payload)
        keys = fm.SketchKeys.generate(config.n_sketches)  # the shared keys: agreed before the clock starts
    if kind == "encode":
        _, columns = config.parties[index]
        binned = np.column_stack([config.bin_map(c)[codes[:, j]] for j, c in enumerate(columns)])
        sizes = [config.binned_size(c) for c in columns]
    clock = {"local_s": 0.0, "encode_s": 0.0}

    def timed(fn, slot):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                clock[slot] += time.perf_counter() - start
        return wrapper

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # as the synthesizer: log of zero cells in projections
        out["rss_before_mb"] = status_mb("VmRSS")
        peak_reset = reset_peak_rss()
        if trace:
            tracemalloc.start()
        start = time.perf_counter()
        if kind == "party":
            party = VerticalParty(index, config)
            party._local_model = timed(party._local_model, "local_s")  # instance attribute: this party only
            original_encode = fm.encode
            fm.encode = timed(original_encode, "encode_s")
            try:
                message = party.run(codes, keys)
            finally:
                fm.encode = original_encode
            run_s = time.perf_counter() - start
            wire = message.to_bytes()
            out.update(seconds=run_s, serialise_s=time.perf_counter() - start - run_s, **clock,
                       message_bytes=len(wire),
                       sketch_bytes=0 if message.sketches is None else int(message.sketches.nbytes),
                       sketch_shape=None if message.sketches is None else list(message.sketches.shape),
                       sketch_dtype=None if message.sketches is None else str(message.sketches.dtype))
        elif kind == "encode":
            sketches = fm.encode(binned, sizes, keys, config.gamma, config.budget.epsilon_prime)
            out.update(seconds=time.perf_counter() - start, sketch_shape=list(sketches.shape))
        elif kind == "server":
            messages = [VerticalMessage.from_bytes(b) for b in payload]
            result = VerticalServer(config).fit(messages)
            out.update(seconds=time.perf_counter() - start, n_cross_marginals=len(result.cross_marginals),
                       n_cliques=len(result.cliques),
                       max_clique_cells=int(max(config.domain.size(c) for c in result.cliques)))
        else:
            raise ValueError(kind)
        if trace:
            out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    out["peak_rss_mb"] = status_mb("VmHWM") if peak_reset else None
    out["maxrss_mb"] = _maxrss_mb()
    return out


def _call(isolate: bool, fn, *args):
    if not isolate:
        return fn(*args)
    # A fresh interpreter per measurement: no state left over from the previous one, and its own VmHWM.
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def _minmed(values) -> str:
    return f"{min(values):8.2f} {statistics.median(values):8.2f}"


def _mb(value) -> str:
    return "-" if value is None else f"{value:.0f}"


def _arguments(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.6)
    ap.add_argument("--n-sketches", type=int, default=2000, help="t")
    ap.add_argument("--parties", type=int, default=2, help="m contiguous column blocks")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=True,
                    help="each measurement in a fresh spawned process (default on)")
    ap.add_argument("--tracemalloc", action=argparse.BooleanOptionalAction, default=True,
                    help="one extra pass per measurement under tracemalloc for the Python peak (default on)")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw numbers here")
    ap.add_argument("--verbose", type=int, default=0, help="verbosity of the reference fit")
    return ap.parse_args(argv)


def _measure_all(args, config, codes: np.ndarray, wire: list) -> list[dict]:
    """Every party's run and encoding, then the server, ``--repeats`` times (plus the tracemalloc pass)."""
    from . import vertical  # functions pickled by reference to the importable module, also under ``python -m``

    rows = []
    passes = [(r, False) for r in range(args.repeats)] + ([(args.repeats, True)] if args.tracemalloc else [])
    for r, trace in passes:
        tag = "tracemalloc pass" if trace else f"repeat {r}"
        for i in range(len(config.parties)):
            for kind in ("party", "encode"):
                out = _call(args.isolate, vertical.measure, kind, config, i, _party_codes(config, i, codes), trace)
                rows.append({**out, "repeat": r})
                print(f"  {tag}: {kind:6} {config.parties[i][0]}: {out['seconds']:.1f} s", flush=True)
        out = _call(args.isolate, vertical.measure, "server", config, None, wire, trace)
        rows.append({**out, "repeat": r})
        print(f"  {tag}: server: {out['seconds']:.1f} s", flush=True)
    return rows


class _Table:
    """The results table: one line per measurement (min/median seconds, the traced pass, memory, target)."""

    def __init__(self, rows: list[dict]):
        self.timed = [x for x in rows if not x["traced"]]
        self.traced = [x for x in rows if x["traced"]]
        print(f"\n{'measurement':36} {'min s':>8} {'median s':>8} {'s traced':>9} {'tracemalloc':>11} "
              f"{'RSS before->peak':>16} {'maxrss':>7}  target")

    def median(self, kind, index, key="seconds") -> float:
        return statistics.median(x[key] for x in self.timed if x["kind"] == kind and x["index"] == index)

    def line(self, label, kind, index, key="seconds", target="", memory=True) -> float:
        sub = [x for x in self.timed if x["kind"] == kind and x["index"] == index]
        traced = [x for x in self.traced if x["kind"] == kind and x["index"] == index]
        secs = f"{traced[0][key]:9.2f}" if traced else f"{'-':>9}"
        if memory:
            tm = _mb(traced[0]["tracemalloc_peak_mb"]) if traced else "-"
            before = _mb(max((x["rss_before_mb"] or 0) for x in sub))
            peak = _mb(None if any(x["peak_rss_mb"] is None for x in sub) else max(x["peak_rss_mb"] for x in sub))
            mem = f"{tm:>8} MB {before:>6} ->{peak:>5} MB {max(x['maxrss_mb'] for x in sub):4.0f} MB"
        else:
            mem = f"{'':>11} {'':>16} {'':>7}"
        print(f"{label:36} {_minmed([x[key] for x in sub])} {secs} {mem}  {target}")
        return self.median(kind, index, key)


def _summary(table: _Table, config) -> dict:
    """The table's lines for every party and the server, and their medians against the targets."""
    summary = {}
    for i, (name, cols) in enumerate(config.parties):
        run_s = table.line(f"{name}: VerticalParty.run (total)", "party", i,
                           target=f"paper {PAPER['party_min']} min ({PAPER['party_min_40_threads']} min on 40 threads)")
        local_s = table.line("    local model (AIM)", "party", i, "local_s", memory=False)
        enc_in_run = table.line("    sketch encoding inside run", "party", i, "encode_s",
                                target=f"< {TARGET_PARTY_S:.0f} s", memory=False)
        table.line("    message serialisation (npz)", "party", i, "serialise_s", memory=False)
        enc_med = table.median("encode", i)
        enc_s = table.line(f"{name}: sketches.encode alone", "encode", i,
                           target=f"< {TARGET_PARTY_S:.0f} s: {'yes' if enc_med < TARGET_PARTY_S else 'no'}")
        summary[name] = {"run_median_s": run_s, "local_model_median_s": local_s,
                         "encode_in_run_median_s": enc_in_run, "encode_alone_median_s": enc_s}
    server_med = table.median("server", None)
    server_s = table.line("server: VerticalServer.fit", "server", None,
                          target=f"< {TARGET_SERVER_S:.0f} s: {'yes' if server_med < TARGET_SERVER_S else 'no'}; "
                                 f"paper {PAPER['server_min']:.0f} min")
    summary["server"] = {"median_s": server_s}
    party_ok = all(v["run_median_s"] < TARGET_PARTY_S for k, v in summary.items() if k != "server")
    print(f"whole party side (local model + encoding) < {TARGET_PARTY_S:.0f} s for every party: "
          f"{'yes' if party_ok else 'no'}")
    return summary


def _print_messages(config, wire: list, rows: list[dict], isolate: bool) -> None:
    """The messages' sizes, the server's model, and what the table's columns mean."""
    print(f"\nmessages (npz, compressed; what crosses the trust boundary) -- paper: {PAPER['comm']} in total")
    for i, (name, _) in enumerate(config.parties):
        p = next(x for x in rows if x["kind"] == "party" and x["index"] == i)
        print(f"  {name}: {len(wire[i]):,} bytes ({len(wire[i]) / 1e6:.3f} MB); sketch tensor {p['sketch_shape']} "
              f"{p['sketch_dtype']} = {p['sketch_bytes']:,} bytes raw")
    total = sum(len(b) for b in wire)
    print(f"  total: {total:,} bytes = {total / 1e6:.3f} MB = {total * 8 / 1e6:.2f} Mbit")
    srv = next(x for x in rows if x["kind"] == "server")
    print(f"server model: {srv['n_cliques']} cliques (largest {srv['max_clique_cells']:,} cells), "
          f"{srv['n_cross_marginals']} cross-party marginals")
    print("s traced: seconds of the tracemalloc pass (tracemalloc slows allocation-heavy code); tracemalloc: its "
          "peak of traced (Python + NumPy) allocations during the call; RSS before->peak: resident set before the "
          "call and its high-water mark during it (VmHWM, reset before the call); maxrss: getrusage ru_maxrss of "
          "the measuring process (" + ("a fresh process; inherits this process's high-water mark at spawn"
                                      if isolate else "in-process; resetting VmHWM resets it too") + ")")


def main(argv=None) -> dict:
    args = _arguments(argv)
    from . import vertical  # functions pickled by reference to the importable module, also under ``python -m``

    frame, domain = load_adult(args.data_dir.resolve())
    n = len(frame)
    codes = frame.to_numpy()
    print(f"VertiMRF-FM cost on discretized Adult: n={n:,}, d={len(domain)}, m={args.parties}, "
          f"t={args.n_sketches}, eps={args.epsilon:g}, delta=1/n; {args.repeats} timed repeat(s)"
          f"{' + 1 tracemalloc pass' if args.tracemalloc else ''}, "
          f"{'each measurement in a fresh process' if args.isolate else 'in-process'}; "
          f"this process: ru_maxrss {_maxrss_mb():.0f} MB", flush=True)
    ref = _call(args.isolate, vertical.reference_fit, frame, domain, args.epsilon, args.n_sketches, args.parties,
                args.verbose)
    config, wire = ref["config"], ref["messages"]
    k_p, alpha_min = config.sketch_parameters
    print(f"reference fit (keep_messages=True; all parties + server in one process): {ref['seconds']:.1f} s, "
          f"ru_maxrss {ref['maxrss_mb']:.0f} MB; n_hat={ref['n_hat']:.0f}, eps'={config.budget.epsilon_prime:.4g}, "
          f"k_p={k_p}, alpha_min={alpha_min}; "
          + "; ".join(f"{name}: {len(cols)} columns" for name, cols in config.parties), flush=True)
    rows = _measure_all(args, config, codes, wire)
    summary = _summary(_Table(rows), config)
    _print_messages(config, wire, rows, args.isolate)
    result = {"config": {"epsilon": args.epsilon, "n_sketches": args.n_sketches, "parties": args.parties,
                         "n": n, "repeats": args.repeats, "isolate": args.isolate},
              "reference_fit_s": ref["seconds"], "message_bytes": [len(b) for b in wire], "rows": rows,
              "summary": summary}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
