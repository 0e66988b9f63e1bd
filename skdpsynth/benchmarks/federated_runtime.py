"""Federated runtime of HybridSynthesizer (RandDPGen): in-process vs. local processes vs. a dask cluster.

    python -m skdpsynth.benchmarks.federated_runtime
    python -m skdpsynth.benchmarks.federated_runtime --epsilon 1 --seed 0 --rows 10000 --backends processes dask
    python -m skdpsynth.benchmarks.federated_runtime --vertical 3 --workload 3 --backends simulated processes

UCI Adult (bundled, discretized, all 14 columns) is split on a K = 2 by S grid
(``HybridPartition.grid(..., n_slices=2, n_vertical=S, random_state=0)``, S = 2
by default, ``--vertical``), and
every party's records are written to a CSV file of its own (in a temporary
folder).  ``HybridSynthesizer`` is then fitted at the given ε and seed by:

* ``in-process simulated``: ``fit(X, partition=...)`` with the default
  ``secure_computation="simulated"`` (no serialisation); when it runs, the
  script also checks that the in-process cryptographic fit equals it (same
  marginals, bit-identical measurements, equal privacy ledgers);
* ``in-process cryptographic``: the same with
  ``secure_computation="cryptographic"``: the same protocol as the remote runs,
  the table in memory; the reference of the overhead ratio;
* ``processes``: ``FederatedData(..., backend="processes")``: one spawned
  process per party, each reading its CSV (the time includes spawning them);
* ``dask LocalCluster``: ``FederatedData(..., backend=client)`` over a
  ``distributed.LocalCluster`` with one single-threaded worker process per
  party, each party pinned to its worker by name.  The cluster start is timed
  and reported apart; the fit time excludes it (a user brings a running
  cluster).

``--workload`` is HybridSynthesizer's ``workload`` (2: all pairs, 3: all
triples); with S = 3 a triple can span the three column groups, which the
cryptographic mode measures with the secure k-party product
(:mod:`~skdpsynth.federated.secure_chain`).

Each fit is timed end to end around ``.fit(...)`` with ``time.perf_counter``.
The table gives the fit time, its ratio to the in-process cryptographic fit,
and what crossed between curator and parties (``model.runtime_``: requests,
MB sent, MB received; none for the simulated mode).  The acceptance line
states the distributed overhead (fit time / in-process cryptographic fit
time) of the processes and dask runs against the target < 2.  Times depend
on the machine (its CPU count is printed); nothing is asserted about them.

Memory, beside the fit time: ``peak MB`` is this process's (the curator's, and
for the in-process runs also the parties') peak resident memory during the
fit (Linux: ``VmHWM``, reset through ``/proc/self/clear_refs`` just before the
fit and read just after; it includes what the process already held:
interpreter, libraries, the Adult table, earlier models).  Where the reset is
unavailable it is the process's ``ru_maxrss`` so far, a high-water mark since
the start, marked ``*``.  ``party MB`` (processes and dask runs) is the
largest peak resident memory of any party process: their ``VmHWM`` (peak
over the process's life, so for dask workers including their start-up), read
from /proc every 0.1 s during the fit and once after it.  ``getrusage
(RUSAGE_CHILDREN)`` is not used: on Linux a child's ``ru_maxrss`` starts at
the parent's peak when it is started, so it would report the curator's.

Noise.  The parties are hosted with ``PartyHost(noise="curator")``: they draw
their noise from the curator's seed, so every backend gives the identical
model for the same seed, and the script checks that each remote fit equals
the in-process cryptographic one (same selected marginals, bit-identical
noisy measurements).  That makes the fit non-private towards the curator
(hence the ``PrivacyLeakWarning``, silenced here); it is for benchmarks and
tests only, and does not change the work done, so the timings stand for the
default ``noise="private"``.
"""
from __future__ import annotations

import argparse
import glob
import os
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

RUNS = ("simulated", "cryptographic", "processes", "dask")
LABELS = {"simulated": "in-process simulated", "cryptographic": "in-process cryptographic",
          "processes": "processes", "dask": "dask LocalCluster"}
TARGET_OVERHEAD = 2.0


def _load(n_rows: int | None):
    """Adult (discretized), all its columns, optionally its first ``n_rows`` records; ``(X, domain)``."""
    from ..datasets import load_adult

    adult = load_adult(discretized=True)
    X = adult.frame
    domain = adult.domain
    if list(domain.attrs) != list(X.columns):
        domain = domain.project(list(X.columns))
    if n_rows is not None:
        X = X.iloc[:n_rows]
    return X.reset_index(drop=True), domain


def _write_parties(X, partition, folder: Path) -> dict:
    """Every party's records to ``folder/<party>.csv``; ``{party: path}``."""
    paths = {}
    for spec in partition.parties():
        paths[spec.name] = str(folder / f"{spec.name}.csv")
        X.iloc[spec.rows][list(spec.columns)].to_csv(paths[spec.name], index=False)
    return paths


class _ChildPeaks:
    """Largest ``VmHWM`` (MB) among this process's child processes, polled while in the ``with`` block.

    ``.mb`` is None where /proc is unavailable or no child process was seen.
    """

    def __init__(self, interval: float = 0.1):
        self.interval = interval
        self.peaks: dict[str, float] = {}
        self.mb = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _poll(self) -> None:
        pids = set()
        for path in glob.glob("/proc/self/task/*/children"):
            try:
                with open(path) as handle:
                    pids.update(handle.read().split())
            except OSError:
                pass
        for pid in pids:
            try:
                with open(f"/proc/{pid}/status") as status:
                    for line in status:
                        if line.startswith("VmHWM:"):
                            mb = int(line.split()[1]) / 1024
                            self.peaks[pid] = max(mb, self.peaks.get(pid, 0.0))
                            break
            except (OSError, ValueError):
                pass  # ended meanwhile

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()

    def __enter__(self) -> "_ChildPeaks":
        self._poll()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()
        self.mb = max(self.peaks.values(), default=None)


def _timed_fit(model, *args, **kwargs):
    """Fit ``model`` (warnings silenced: see the module docstring); ``(model, seconds, peak MB, exact)``."""
    from .engine import PeakRSS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with PeakRSS() as peak:
            start = time.perf_counter()
            model.fit(*args, **kwargs)
            seconds = time.perf_counter() - start
    return model, seconds, peak.mb, peak.exact


def _same_fit(a, b) -> bool:
    """Whether two fits selected the same marginals and measured bit-identical noisy values."""
    if a.selected_ != b.selected_ or len(a.measurements_) != len(b.measurements_):
        return False
    return all(m.clique == n.clique and np.array_equal(m.values, n.values)
               for m, n in zip(a.measurements_, b.measurements_))


def _fit_remote(args, domain, partition, hosts, backend):
    from ..federated import FederatedData
    from ..synthesizers import HybridSynthesizer

    model = HybridSynthesizer(args.epsilon, secure_computation="cryptographic", random_state=args.seed,
                              workload=args.workload)
    with _ChildPeaks() as parties:
        fitted = _timed_fit(model, FederatedData(domain, partition, hosts, backend=backend))
    return (*fitted, parties.mb)


def _run_dask(args, domain, partition, paths):
    """Fit on a fresh LocalCluster (one worker per party); ``(_fit_remote result, cluster start seconds)``."""
    import distributed

    from ..federated.runtime import PartyHost

    names = [spec.name for spec in partition.parties()]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=len(names), threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        client.wait_for_workers(len(names))
        startup = time.perf_counter() - start
        workers = sorted(str(meta["name"]) for meta in client.scheduler_info()["workers"].values())
        hosts = {name: PartyHost(paths[name], worker=worker, noise="curator") for name, worker in zip(names, workers)}
        fitted = _fit_remote(args, domain, partition, hosts, client)
    finally:
        client.close()
        cluster.close()
    return fitted, startup


def _print_table(rows: list[dict], models: dict, cluster_start, n_parties: int) -> None:
    """The runs side by side, then whether the fits are identical and the distributed overhead."""
    def mb(value):
        return "-" if value is None else f"{value / 1e6:.2f}"

    header = (f"{'run':<26}{'fit (s)':>9}{'peak MB':>9}{'party MB':>10}{'ratio':>8}{'requests':>10}"
              f"{'MB sent':>10}{'MB received':>13}  identical to in-process")
    print()
    print(header)
    print("-" * len(header))
    for row in rows:
        same = "-" if row["identical"] is None else ("yes" if row["identical"] else "no")
        requests = "-" if row["requests"] is None else str(row["requests"])
        peak = f"{row['peak_rss_mb']:.0f}" + ("" if row["peak_rss_of_fit"] else "*")
        party = "-" if row["party_peak_rss_mb"] is None else f"{row['party_peak_rss_mb']:.0f}"
        print(f"{LABELS[row['run']]:<26}{row['fit_s']:>9.1f}{peak:>9}{party:>10}{row['ratio']:>8.2f}{requests:>10}"
              f"{mb(row['bytes_sent']):>10}{mb(row['bytes_received']):>13}  {same}")
    print("ratio: fit time / in-process cryptographic fit time; identical: same selected marginals and "
          "bit-identical noisy measurements as the in-process cryptographic fit (curator-seeded noise)")
    print("peak MB: this process's peak resident memory during the fit (what it already held included"
          + ("" if all(row["peak_rss_of_fit"] for row in rows) else "; * = its ru_maxrss so far instead")
          + "); party MB: largest lifetime peak (VmHWM) of a party process")
    if "simulated" in models:
        same = (_same_fit(models["cryptographic"], models["simulated"])
                and list(models["cryptographic"].privacy_ledger_) == list(models["simulated"].privacy_ledger_))
        print(f"in-process cryptographic fit identical to the simulated one (marginals, measurements, ledger): "
              f"{'yes' if same else 'no'}")
    if cluster_start is not None:
        print(f"dask LocalCluster start ({n_parties} worker processes, not in the fit time): "
              f"{cluster_start:.1f} s")
    overhead = {row["run"]: row["ratio"] for row in rows if row["run"] in ("processes", "dask")}
    if overhead:
        parts = ", ".join(f"{name} {ratio:.2f}" for name, ratio in overhead.items())
        met = all(ratio < TARGET_OVERHEAD for ratio in overhead.values())
        print(f"distributed overhead (fit time / in-process cryptographic fit time): {parts} — target "
              f"< {TARGET_OVERHEAD:g} ({'met' if met else 'not met'})")
    print(f"CPU count: {os.cpu_count()}")


def main(argv=None) -> list[dict]:
    """Run the benchmark and print its table.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    list of dict
        One row per run: ``run``, ``fit_s``, ``peak_rss_mb``,
        ``peak_rss_of_fit``, ``party_peak_rss_mb`` (``None`` for the
        in-process runs), ``ratio``, ``requests``, ``bytes_sent``,
        ``bytes_received``, ``identical`` (``None`` for the in-process runs)
        and, for dask, ``cluster_start_s``.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0, help="random_state of every fit")
    ap.add_argument("--rows", type=int, default=None, help="first N records of Adult (default: all)")
    ap.add_argument("--vertical", type=int, default=2, help="S, the number of column groups (default 2)")
    ap.add_argument("--workload", type=int, default=2, help="HybridSynthesizer's workload (default 2)")
    ap.add_argument("--backends", nargs="+", choices=RUNS, default=list(RUNS),
                    help="runs to do; the in-process cryptographic run (the reference) is always done")
    args = ap.parse_args(argv)
    runs = [r for r in RUNS if r in set(args.backends) | {"cryptographic"}]

    from ..federated import HybridPartition
    from ..federated.runtime import PartyHost
    from ..synthesizers import HybridSynthesizer

    X, domain = _load(args.rows)
    partition = HybridPartition.grid(len(X), list(X.columns), n_slices=2, n_vertical=args.vertical, random_state=0)
    print(f"Adult: {len(X):,} rows x {X.shape[1]} columns, K = 2, S = {args.vertical} ({partition.n_parties} "
          f"parties), workload = {args.workload}, epsilon = {args.epsilon:g}, seed = {args.seed}; "
          f"CPUs: {os.cpu_count()}")

    rows, models, cluster_start = [], {}, None
    with tempfile.TemporaryDirectory() as folder:
        paths = _write_parties(X, partition, Path(folder))
        hosts = {name: PartyHost(path, noise="curator") for name, path in paths.items()}
        for run in runs:
            if run in ("simulated", "cryptographic"):
                model = HybridSynthesizer(args.epsilon, domain=domain.to_dict(), random_state=args.seed,
                                          secure_computation=run, workload=args.workload)
                fitted = (*_timed_fit(model, X, partition=partition), None)
            elif run == "processes":
                fitted = _fit_remote(args, domain, partition, hosts, "processes")
            else:
                fitted, cluster_start = _run_dask(args, domain, partition, paths)
            models[run], seconds, peak, exact, party_peak = fitted
            stats = models[run].runtime_ or {}
            rows.append({"run": run, "fit_s": seconds, "peak_rss_mb": peak, "peak_rss_of_fit": exact,
                         "party_peak_rss_mb": party_peak, "requests": stats.get("requests"),
                         "bytes_sent": stats.get("bytes_sent"), "bytes_received": stats.get("bytes_received")})
            print(f"  {LABELS[run]}: {seconds:.1f} s, peak {peak:.0f} MB"
                  + ("" if party_peak is None else f", party processes peak {party_peak:.0f} MB"), flush=True)

    reference = next(r["fit_s"] for r in rows if r["run"] == "cryptographic")
    for row in rows:
        row["ratio"] = row["fit_s"] / reference
        remote = row["run"] in ("processes", "dask")
        row["identical"] = _same_fit(models[row["run"]], models["cryptographic"]) if remote else None
        if row["run"] == "dask":
            row["cluster_start_s"] = cluster_start

    _print_table(rows, models, cluster_start, partition.n_parties)
    return rows
if __name__ == "__main__":
    main()
