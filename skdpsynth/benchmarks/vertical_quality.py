"""Quality on vertically partitioned data: central AIM against the vertical methods (issue 44, the table of doc/federated.md).

    python -m skdpsynth.benchmarks.vertical_quality                       # NLTCS and Adult, 4 eps, 3 seeds
    python -m skdpsynth.benchmarks.vertical_quality --datasets nltcs --epsilons 1.6 --seeds 0
    python -m skdpsynth.benchmarks.vertical_quality --jsonl runs.jsonl    # every run as it finishes; --table-from reads it

Data (``--data-dir``, default the repository's sibling ``../shared/data``): NLTCS (21,574 x 16 binary) and the
discretized Adult (48,842 x 14), both split between **two parties** holding contiguous column blocks (8 + 8 and
7 + 7 columns), the same individuals in the same order.

Protocol (the one of ``examples/reproduce_vertimrf.py``, so that the figures compare with doc/vertical.md): per
seed, a seeded shuffle splits the records 80/20 and every method fits the same 80 % with ``δ = 1/n_train`` and
``random_state=seed``; it then samples ``n_train`` records, and the score is the mean total variation distance over
300 random 3-way marginals (drawn once with a fixed seed, the same for every method) against the full data.

Methods:

* ``aim``: :class:`~skdpsynth.AIMSynthesizer` on the pooled records (the central reference, not a vertical method);
* ``hybrid``: :class:`~skdpsynth.HybridSynthesizer` with one row slice and the two parties
  (``HybridPartition.vertical``), its defaults; the secure computation is simulated, which gives the same fit as
  the cryptographic protocol (doc/federated.md);
* ``hybrid-pairs``: the same with ``workload=3, selection_scores="pairs", alpha=0.5, max_rounds=8·d``: half the
  budget measures every pair once, and the rounds measure 3-way marginals chosen by the summed scores of their
  pairs (doc/federated.md, "Quality on vertically partitioned data").  These settings were chosen on NLTCS at
  ε = 1.6, seeds 0–2, with model marginals (not samples) as the score;
* ``vertimrf``: :class:`~skdpsynth.VerticalMRFSynthesizer`, its defaults.

The table gives the mean (and standard deviation) over the seeds, and each method's ratio to central AIM's mean.
Times are printed for orientation only (2-core machine, shared).

Diagnosis (``--exact-selection``, not private): the ``hybrid`` methods' selection scores read the exact marginals
of the training records instead of the noisy selection measurements (which are still taken and spent, so the
budget left for the rounds is unchanged).  The gap between a method and its exact-selection run is what selecting
on noisy answers costs; the gap between the exact-selection run and central AIM is what the rest of the algorithm
costs.  Such a run is labelled ``<method>+exact`` and is never a release.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data"
DATASETS = {"nltcs": ("nltcs/nltcs.csv", "nltcs/nltcs-domain.json"),
            "adult": ("adult/adult-discretized.csv", "adult/adult-discretized-domain.json")}
METHODS = ("aim", "hybrid", "hybrid-pairs", "vertimrf")
EPSILONS = (0.4, 0.8, 1.6, 3.2)
N_MARGINALS = 300


def load(name: str, data_dir: Path) -> tuple[pd.DataFrame, dict]:
    """The table (integer codes, columns in the domain file's order) and its public domain."""
    csv, domain_file = DATASETS[name]
    sizes = json.loads((data_dir / domain_file).read_text())
    frame = pd.read_csv(data_dir / csv)
    columns = [c for c in sizes if c in frame.columns]
    return frame[columns], {c: int(sizes[c]) for c in columns}


def triples(columns: list, seed: int = 0) -> list[tuple]:
    """``N_MARGINALS`` uniform 3-subsets of the columns (index tuples), drawn once."""
    rng = np.random.default_rng([seed, 7919, 3])
    return [tuple(sorted(rng.choice(len(columns), size=3, replace=False).tolist())) for _ in range(N_MARGINALS)]


def _distribution(codes: np.ndarray, sizes: list, cols: tuple) -> tuple[np.ndarray, np.ndarray]:
    keys = np.ravel_multi_index(tuple(codes[:, c] for c in cols), tuple(sizes[c] for c in cols))
    keys, counts = np.unique(keys, return_counts=True)
    return keys, counts / counts.sum()


def mean_tvd(real: np.ndarray, synthetic: np.ndarray, sizes: list, subsets: list) -> float:
    """Mean of ``½ Σ |p − q| = 1 − Σ min(p, q)`` over the marginals ``subsets``."""
    values = []
    for cols in subsets:
        rk, rp = _distribution(real, sizes, cols)
        sk, sp = _distribution(synthetic, sizes, cols)
        _, i, j = np.intersect1d(rk, sk, assume_unique=True, return_indices=True)
        values.append(1.0 - np.minimum(rp[i], sp[j]).sum())
    return float(np.mean(values))


def split(n: int, seed: int) -> np.ndarray:
    """The seed's 80 % training rows (sorted positions)."""
    perm = np.random.default_rng([seed, 104729]).permutation(n)
    return np.sort(perm[: int(round(0.8 * n))])


def make_synthesizer(method: str, epsilon: float, delta: float, domain: dict, groups: list, n_train: int, seed: int):
    """The estimator of ``method`` and the keyword arguments of its ``fit``."""
    from skdpsynth import AIMSynthesizer, HybridSynthesizer, VerticalMRFSynthesizer
    from skdpsynth.federated import HybridPartition

    if method == "aim":
        return AIMSynthesizer(epsilon, delta, domain=domain, random_state=seed), {}
    if method in ("hybrid", "hybrid-pairs"):
        extra = ({"workload": 3, "selection_scores": "pairs", "alpha": 0.5, "max_rounds": 8 * len(domain)}
                 if method == "hybrid-pairs" else {})
        synth = HybridSynthesizer(epsilon=epsilon, delta=delta, domain=domain, random_state=seed, **extra)
        return synth, {"partition": HybridPartition.vertical(n_train, groups)}
    return VerticalMRFSynthesizer(epsilon=epsilon, delta=delta, party_columns=groups, domain=domain,
                                  random_state=seed), {}


def _exact_selection(train: pd.DataFrame, domain: dict):
    """A context in which RandDPGen's selection reads the exact marginals of ``train`` (diagnosis only)."""
    from skdpsynth.synthesizers.hybrid.rounds import _RandDPGenRounds

    codes, columns = train.to_numpy(np.int64), list(domain)
    original = _RandDPGenRounds.scores

    def exact_scores(self, model, candidates, rho_measure):
        if not getattr(self, "_exact", False):
            for s in self.selection:
                idx = tuple(codes[:, columns.index(c)] for c in s)
                counts = np.zeros([domain[c] for c in s])
                np.add.at(counts, idx, 1)
                self.selection[s] = (counts.ravel(), self.selection[s][1])
            # The noise penalties of the selection measurements drop out: their budget is taken as unlimited.
            self.selection_budgets = {s: float("inf") for s in self.selection_budgets}
            self._exact = True
        return original(self, model, candidates, rho_measure)

    @contextlib.contextmanager
    def patched():
        _RandDPGenRounds.scores = exact_scores
        try:
            yield
        finally:
            _RandDPGenRounds.scores = original

    return patched()


def run(name: str, method: str, epsilon: float, seed: int, data_dir: Path, exact_selection: bool = False) -> dict:
    """One fit and its score (``exact_selection``: the non-private diagnosis, ``hybrid`` methods only)."""
    frame, domain = load(name, data_dir)
    columns = list(domain)
    train = frame.iloc[split(len(frame), seed)].reset_index(drop=True)
    half = len(columns) // 2
    groups = [columns[:half], columns[half:]]
    delta = 1.0 / len(train)
    synth, fit_kwargs = make_synthesizer(method, epsilon, delta, domain, groups, len(train), seed)
    diagnosis = _exact_selection(train, domain) if exact_selection else contextlib.nullcontext()
    with warnings.catch_warnings(), diagnosis:
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        synth.fit(train, **fit_kwargs)
        seconds = time.perf_counter() - start
        synthetic = synth.sample(len(train), random_state=seed)
    sizes = [domain[c] for c in columns]
    tvd3 = mean_tvd(frame.to_numpy(np.int64), synthetic[columns].to_numpy(np.int64), sizes, triples(columns))
    label = method + ("+exact" if exact_selection else "")
    return {"dataset": name, "method": label, "epsilon": epsilon, "seed": seed, "tvd3": tvd3, "fit_s": seconds}


def table(rows: list[dict]) -> str:
    """Markdown: one line per dataset and ε, mean ± sd per method, and the ratio to central AIM."""
    df = pd.DataFrame(rows)
    methods = [m for m in (*METHODS, *(f"{m}+exact" for m in METHODS)) if m in set(df["method"])]
    head = "| data | ε | " + " | ".join(methods) + " |\n|---|---:|" + "---:|" * len(methods) + "\n"
    lines = []
    for (name, eps), group in df.groupby(["dataset", "epsilon"], sort=True):
        stats = group.groupby("method")["tvd3"].agg(["mean", "std", "count"])
        ref = stats["mean"].get("aim", np.nan)
        cells = []
        for m in methods:
            if m not in stats.index:
                cells.append("–")
                continue
            mean, sd, k = stats.loc[m]
            ratio = "" if m == "aim" or not np.isfinite(ref) else f" ({mean / ref:.1f}×)"
            cells.append(f"{mean:.4f} ± {0.0 if k < 2 else sd:.4f}{ratio}")
        lines.append(f"| {name} | {eps:g} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--jsonl", type=Path, help="append every run to this file as it finishes")
    ap.add_argument("--table-from", type=Path, help="print the table of the runs in this JSON-lines file, fit nothing")
    ap.add_argument("--exact-selection", action="store_true",
                    help="diagnosis, not private: the hybrid methods select on exact marginals")
    args = ap.parse_args(argv)
    if args.exact_selection and not set(args.methods) <= {"hybrid", "hybrid-pairs"}:
        ap.error("--exact-selection diagnoses the hybrid methods only: give --methods hybrid hybrid-pairs")
    if args.table_from:
        print(table([json.loads(line) for line in args.table_from.read_text().splitlines() if line.strip()]))
        return 0
    rows = []
    for name in args.datasets:
        for eps in args.epsilons:
            for seed in args.seeds:
                for method in args.methods:
                    row = run(name, method, eps, seed, args.data_dir, args.exact_selection)
                    rows.append(row)
                    print(f"{name} eps={eps:g} seed={seed} {row['method']:13s} tvd3 {row['tvd3']:.4f}  "
                          f"fit {row['fit_s']:.1f} s", flush=True)
                    if args.jsonl:
                        with args.jsonl.open("a") as f:
                            f.write(json.dumps(row) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
