"""Benchmark of the exact discrete Gaussian / discrete Laplace samplers.

    python -m skdpsynth.benchmarks.samplers [--size 1000000] [--repeats 5] [--sigmas 1,10,1000]
                                            [--scales 1,10,1000,333.3333333333333] [--json OUT]

Reports draws per second of :func:`skdpsynth.privacy.samplers.discrete_gaussian`
(at σ, i.e. ``sigma2 = σ²``) and :func:`~skdpsynth.privacy.samplers.discrete_laplace`
(at each scale), with raw bits from a seeded NumPy ``Generator`` and from the
OS CSPRNG (``random_state=None``), next to NumPy's continuous (inexact)
``Generator.normal`` / ``Generator.laplace`` for the same sizes.  The first
call for a parameter (which builds its cached tables) is timed separately.

Timings are medians over repeats on whatever machine runs it; compare runs
made on the same machine only.

Memory: beside the rates, ``peak MB`` gives, for the exact sampler seeded, the
exact sampler from the OS CSPRNG and NumPy's continuous sampler, the peak of
the NumPy and Python allocations (``tracemalloc``) during one extra, untimed
call of ``--size`` draws (the returned array included; tables cached by an
earlier call are not).  tracemalloc never runs during a timed call.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ..privacy.samplers import discrete_gaussian, discrete_laplace
from .engine import _median_seconds, tracemalloc_peak_mb


def _first_call_ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def bench(kind: str, param: float, size: int, repeats: int, seed: int = 0) -> dict:
    """Draws/s of one exact sampler (seeded and OS CSPRNG) and of NumPy's continuous counterpart."""
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        exact, arg = discrete_gaussian, param * param  # param is σ
        continuous = lambda: rng.normal(0.0, param, size)  # noqa: E731
    else:
        exact, arg = discrete_laplace, param
        continuous = lambda: rng.laplace(0.0, param, size)  # noqa: E731
    setup_ms = _first_call_ms(lambda: exact(arg, 1, random_state=seed))
    seeded = _median_seconds(lambda: exact(arg, size, random_state=rng), repeats)
    os_csprng = _median_seconds(lambda: exact(arg, size, random_state=None), repeats)
    numpy_s = _median_seconds(continuous, repeats)
    return {
        "distribution": kind,
        "param": param,
        "size": size,
        "first_call_ms": setup_ms,
        "seeded_per_s": size / seeded,
        "os_csprng_per_s": size / os_csprng,
        "numpy_continuous_per_s": size / numpy_s,
        "seeded_peak_mb": tracemalloc_peak_mb(lambda: exact(arg, size, random_state=rng)),
        "os_csprng_peak_mb": tracemalloc_peak_mb(lambda: exact(arg, size, random_state=None)),
        "numpy_continuous_peak_mb": tracemalloc_peak_mb(continuous),
    }


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sigmas", type=_floats, default=[1.0, 10.0, 1000.0], help="σ of the discrete Gaussian")
    ap.add_argument("--scales", type=_floats, default=[1.0, 10.0, 1000.0, 1000 / 3],
                    help="scales of the discrete Laplace (1000/3 is not dyadic: t ≈ 2^52)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args(argv)

    rows = [bench("gaussian", s, args.size, args.repeats) for s in args.sigmas]
    rows += [bench("laplace", b, args.size, args.repeats) for b in args.scales]
    print(f"{args.size:,} draws per call, median of {args.repeats}; M draws/s")
    print(f"{'distribution':<22}{'exact, seeded':>15}{'exact, OS CSPRNG':>18}{'numpy continuous':>18}"
          f"{'seeded/numpy':>14}{'first call':>12}{'peak MB seeded/OS/numpy':>25}")
    for r in rows:
        name = f"{r['distribution']} {'σ' if r['distribution'] == 'gaussian' else 'b'}={r['param']:g}"
        peaks = f"{r['seeded_peak_mb']:.1f}/{r['os_csprng_peak_mb']:.1f}/{r['numpy_continuous_peak_mb']:.1f}"
        print(f"{name:<22}{r['seeded_per_s'] / 1e6:>15.2f}{r['os_csprng_per_s'] / 1e6:>18.2f}"
              f"{r['numpy_continuous_per_s'] / 1e6:>18.2f}{r['seeded_per_s'] / r['numpy_continuous_per_s']:>14.2f}"
              f"{r['first_call_ms']:>10.1f}ms{peaks:>25}")
    print("peak MB: tracemalloc peak of the NumPy/Python allocations during one extra, untimed call")
    results = {"rows": rows}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
