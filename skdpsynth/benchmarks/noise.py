"""What exact discrete noise costs a whole fit, against floating-point noise, on bundled Adult.

    python -m skdpsynth.benchmarks.noise [--methods mst view view+ aim] [--repeats 3] [--epsilon 1]
                                         [--seeded] [--json OUT]

For each method, fits on the bundled discretized Adult (48,842 x 14) with
``noise="discrete"`` (the default: exact discrete Gaussian / Laplace, raw bits
from the OS CSPRNG when ``random_state=None``) and with
``noise="continuous"`` (NumPy's floating-point samplers), alternating the
two, and reports the median fit time of each, their ratio, and the seconds
spent inside the noise mechanisms themselves.  ``--seeded`` fits with
``random_state=0..`` instead of ``None`` (bits from a seeded NumPy generator).

Compare runs made on the same machine only; medians are quoted because
shared machines are noisy.

Memory: ``peak MB`` is the largest, over the repeats, peak resident memory of
this process during one fit (Linux: ``VmHWM``, reset through
``/proc/self/clear_refs`` just before the fit and read just after it; it
includes what the process already held: interpreter, libraries, the Adult
table).  Where the reset is unavailable it is the process's ``ru_maxrss``
so far, a high-water mark since the start, and is marked ``*``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time
import warnings
from pathlib import Path

from skdpsynth import AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, ViewSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.benchmarks.engine import PeakRSS
from skdpsynth.privacy import ReproducibleNoiseWarning, noise_context

_FACTORIES = {
    "mst": lambda eps, domain, seed: MSTSynthesizer(epsilon=eps, domain=domain, random_state=seed),
    "aim": lambda eps, domain, seed: AIMSynthesizer(epsilon=eps, domain=domain, random_state=seed),
    "hybrid": lambda eps, domain, seed: HybridSynthesizer(epsilon=eps, domain=domain, random_state=seed),
    "view": lambda eps, domain, seed: ViewSynthesizer(epsilon=eps, domain=domain, random_state=seed),
    "view+": lambda eps, domain, seed: ViewSynthesizer(epsilon=eps, variant="dpview+", domain=domain,
                                                        random_state=seed),
}


class _MechanismClock:
    """Wall seconds spent inside the count mechanisms, where the synthesizers call them (restored on exit)."""

    _SITES = (("skdpsynth.synthesizers.select_measure", "gaussian_mechanism"),
              ("skdpsynth.synthesizers.view.synthesizer", "laplace_mechanism"))

    def __init__(self):
        self.seconds = 0.0
        self._saved = []

    def __enter__(self):
        for module_name, name in self._SITES:
            module = importlib.import_module(module_name)
            original = getattr(module, name)
            self._saved.append((module, name, original))

            def timed(*args, _original=original, **kwargs):
                start = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - start

            setattr(module, name, timed)
        return self

    def __exit__(self, *exc):
        for module, name, original in self._saved:
            setattr(module, name, original)


def run(method: str, noise: str, epsilon: float, seed) -> dict:
    adult = load_adult(discretized=True)
    synth = _FACTORIES[method](epsilon, adult.domain.to_dict(), seed)
    with noise_context(noise), _MechanismClock() as clock, PeakRSS() as peak:
        synth.fit(adult.frame)
    kinds = sorted({e.mechanism for e in synth.privacy_ledger_})
    return {"method": method, "noise": noise, "fit_s": synth.fit_time_, "mechanism_s": clock.seconds,
            "mechanisms": kinds, "rounds": len(getattr(synth, "selected_", [])) or None,
            "peak_rss_mb": peak.mb, "peak_rss_of_fit": peak.exact}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=["mst", "view", "view+", "aim"], choices=list(_FACTORIES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeded", action="store_true", help="random_state=0, 1, ... instead of None")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=ReproducibleNoiseWarning)  # --seeded is a benchmark choice

    # HybridSynthesizer's noise is the parties' (continuous) shares, not these mechanisms: see doc/privacy.md.
    print(f"{'method':8} {'noise':11} {'fit s (median)':>15} {'peak MB':>8} {'in mechanisms s':>16}"
          f"  ratio discrete/continuous")
    rows = []
    for method in args.methods:
        times = {"discrete": [], "continuous": []}
        inside = {"discrete": [], "continuous": []}
        peaks = {"discrete": [], "continuous": []}
        for r in range(args.repeats):
            for noise in ("discrete", "continuous"):  # alternate, so drift hits both alike
                out = run(method, noise, args.epsilon, r if args.seeded else None)
                times[noise].append(out["fit_s"])
                inside[noise].append(out["mechanism_s"])
                peaks[noise].append(out)
                rows.append(out)
        rounds = {k: [r["rounds"] for r in rows if r["method"] == method and r["noise"] == k] for k in times}
        med = {k: statistics.median(v) for k, v in times.items()}
        ins = {k: statistics.median(v) for k, v in inside.items()}
        ratios = [d / c for d, c in zip(times["discrete"], times["continuous"])]
        for noise in ("discrete", "continuous"):
            peak = max(r["peak_rss_mb"] for r in peaks[noise])
            mark = "" if all(r["peak_rss_of_fit"] for r in peaks[noise]) else "*"
            print(f"{method:8} {noise:11} {med[noise]:15.2f} {f'{peak:.0f}{mark}':>8} {ins[noise]:16.3f}"
                  + (f"  {statistics.median(ratios):.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f})"
                     if noise == "discrete" else "")
                  + (f"  rounds {rounds[noise]}" if rounds[noise][0] else ""), flush=True)
    print("peak MB: largest peak resident memory of this process during one fit (VmHWM reset before the fit; "
          "includes what the process already held)"
          + ("; * = unavailable, process ru_maxrss so far instead" if not all(r["peak_rss_of_fit"] for r in rows)
             else ""))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
