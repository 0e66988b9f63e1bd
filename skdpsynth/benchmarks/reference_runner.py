"""Run the reference MST / AIM (private-pgm, package ``mbi``) once, as a timed peer.

This script is *not* part of skdpsynth's import graph.  It is executed by the
reference implementation's own interpreter, in a separate virtual environment,
as a subprocess of ``python -m skdpsynth.benchmarks.compare``, so that our
synthesizers can be compared with Ryan McKenna's reference MST and AIM on the
same data, budget and seeds::

    REF_PYTHON reference_runner.py --mechanisms-dir DIR --method mst|aim \\
        --data CSV[.gz] --domain JSON --epsilon 1 --delta 1e-9 --seed 0 \\
        --out synthetic.csv [--max-model-size 80 --max-iters 1000 --rounds N]

It prints exactly one JSON line to stdout::

    {"method": "mst", "epsilon": 1.0, "seed": 0, "fit_seconds": 93.2, "rows": 48842,
     "peak_rss_mb": 1234.5, "peak_rss_of_fit": true}

and writes the synthetic records to ``--out`` as integer codes with the same
columns as the domain file.  Everything the mechanisms themselves print goes to
stderr.  ``fit_seconds`` is wall-clock time (``time.perf_counter``) of the whole
mechanism call, selection + measurement + estimation + record generation; reading
the input and writing the output are not included.  ``peak_rss_mb`` is this
process's peak resident memory during that same call (Linux: ``VmHWM``, reset
through ``/proc/self/clear_refs`` just before it and read just after it; it
includes what the process already held: interpreter, JAX, the data), as
``compare.py`` measures its own fits.  Where the reset is unavailable,
``peak_rss_of_fit`` is false and the figure is ``getrusage(RUSAGE_SELF).ru_maxrss``
(Linux gives KiB), the process's peak so far, which on Linux starts at the
parent's peak when the child was started (vfork + exec).

``mbi`` is never a dependency of skdpsynth, and no private-pgm code lives in this
repository: this file imports neither skdpsynth (it runs in the other venv) nor
anything from private-pgm at module level.  It reads the data with plain pandas
(a ``.gz`` CSV works too) and json, builds ``mbi.Domain`` / ``mbi.Dataset`` from
them, and imports the mechanism module from ``--mechanisms-dir`` at run time.

Setting the comparator up (once per machine, outside this repository):

1. a separate venv with ``pip install mbi==2.0.0`` (the corrected reference
   figures use it, with ``jax_enable_x64``; 1.1.0's data generation was
   faulty), plus ``pandas`` and
   ``autodp`` (imported by private-pgm's ``mechanisms/mechanism.py``);
2. a checkout of private-pgm's ``mechanisms/`` folder (``mst.py``, ``aim.py``,
   ``mechanism.py``, ``cdp2adp.py``) in a version written for the installed
   ``mbi`` API (``from mbi import Dataset, Domain, LinearMeasurement, estimation``),
   patched only as far as needed to import and run there.

Then pass that venv's ``python`` as REF_PYTHON and the folder as
``--mechanisms-dir``.

Seeding: ``numpy.random.seed(seed)`` before the mechanism runs.  Both reference
mechanisms draw all their noise, selections and synthetic records from numpy's
global generator (MST calls ``np.random`` directly; AIM's ``prng`` defaults to
``np.random``), and JAX is used deterministically, so one seed fixes a run up to
floating-point non-determinism of the estimator.
"""
from __future__ import annotations

import argparse
import contextlib
import inspect
import itertools
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd


def _parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mechanisms-dir", required=True, type=Path,
                    help="folder holding private-pgm's mst.py / aim.py / mechanism.py / cdp2adp.py")
    ap.add_argument("--method", required=True, choices=["mst", "aim"])
    ap.add_argument("--data", required=True, help="integer-coded CSV (may be .gz)")
    ap.add_argument("--domain", required=True, help="JSON {column: size}")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="where to write the synthetic CSV")
    ap.add_argument("--max-model-size", type=float, default=80.0,
                    help="AIM only: model size limit in MB (reference default 80)")
    ap.add_argument("--max-iters", type=int, default=1000,
                    help="AIM only: mirror-descent iterations per estimate (reference default 1000)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="AIM only: rounds the budget is split into, counting the d initial one-way "
                         "measurements (default 16 * d); d + k gives about k + 1 selection rounds")
    ap.add_argument("--degree", type=int, default=3,
                    help="AIM only: workload = all marginals of this order, weight 1 (default 3, "
                         "the all-3-way workload of the reference figures; upstream's CLI uses 2)")
    ap.add_argument("--max-cells", type=int, default=None,
                    help="AIM only: drop workload marginals with more cells than this (default: keep all)")
    return ap.parse_args(argv)


def _load(data_path: str, domain_path: str):
    from mbi import Dataset, Domain

    with open(domain_path, encoding="utf-8") as fh:
        sizes = {str(k): int(v) for k, v in json.load(fh).items()}
    df = pd.read_csv(data_path)  # pandas infers gzip from a .gz suffix
    missing = [c for c in sizes if c not in df.columns]
    if missing:
        raise SystemExit(f"columns in the domain but not in the data: {missing}")
    domain = Domain(list(sizes), list(sizes.values()))
    columns = {c: df[c].to_numpy(dtype=np.int64) for c in sizes}
    return Dataset(columns, domain), [c for c in df.columns if c in sizes]  # data-file column order


def _import_mechanism(mechanisms_dir: Path, module: str):
    mechanisms_dir = mechanisms_dir.resolve()
    if not (mechanisms_dir / f"{module}.py").is_file():
        raise SystemExit(f"{mechanisms_dir / (module + '.py')} not found")
    # the mechanism files import each other as top-level modules (`from cdp2adp import ...`)
    sys.path.insert(0, str(mechanisms_dir))
    return __import__(module)


def _run_mst(mod, data, args):
    return mod.MST(data, args.epsilon, args.delta)


def _run_aim(mod, data, args):
    kwargs = {"max_model_size": args.max_model_size, "max_iters": args.max_iters}
    params = inspect.signature(mod.AIM).parameters
    if args.rounds is not None:
        if "rounds" not in params:
            raise SystemExit("this AIM takes no `rounds` argument")
        # AIM's `rounds` also counts the d one-way measurements it starts with (each is charged
        # one round's measurement budget), so rounds <= d leaves no budget; d + k gives k + 1.
        d = len(data.domain.attrs)
        if args.rounds <= d:
            raise SystemExit(f"--rounds must exceed the number of attributes ({d}); "
                             f"d + k gives about k + 1 selection rounds")
        kwargs["rounds"] = args.rounds
    kwargs = {k: v for k, v in kwargs.items() if k in params}
    mech = mod.AIM(args.epsilon, args.delta, **kwargs)
    attrs = list(data.domain.attrs)
    workload = [cl for cl in itertools.combinations(attrs, args.degree)
                if args.max_cells is None or data.domain.size(cl) <= args.max_cells]
    out = mech.run(data, [(cl, 1.0) for cl in workload])
    return out[1] if isinstance(out, tuple) else out  # newer versions return (model, synth)


def _reset_peak_rss() -> bool:
    """Reset this process's resident high-water mark (VmHWM, Linux >= 4.0); whether that worked."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mb(reset: bool) -> tuple[float, bool]:
    """``(MB, of the call)``: VmHWM since the reset, else ru_maxrss (the process's peak so far)."""
    if reset:
        try:
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024, True
        except OSError:
            pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, False  # KiB on Linux


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    run = _run_mst if args.method == "mst" else _run_aim
    with contextlib.redirect_stdout(sys.stderr):  # keep stdout for the one JSON line
        data, columns = _load(args.data, args.domain)
        mod = _import_mechanism(args.mechanisms_dir, args.method)
        np.random.seed(args.seed)
        reset = _reset_peak_rss()
        t0 = time.perf_counter()
        synth = run(mod, data, args)
        fit_seconds = time.perf_counter() - t0
        peak_mb, of_fit = _peak_rss_mb(reset)

    # mbi <= 1.x: Dataset.df (a DataFrame); mbi 2.x: Dataset.to_dict() (column -> array).
    records = synth.df if hasattr(synth, "df") else synth.to_dict()
    frame = pd.DataFrame({c: np.asarray(records[c]).astype(np.int64) for c in columns})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    print(json.dumps({
        "method": args.method,
        "epsilon": args.epsilon,
        "seed": args.seed,
        "fit_seconds": round(fit_seconds, 3),
        "rows": int(len(frame)),
        "peak_rss_mb": round(peak_mb, 1),
        "peak_rss_of_fit": of_fit,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
