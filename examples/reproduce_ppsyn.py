"""Reproduce PPSyn's experiments (Zhang, Deng & Yin, §5) with PartitionSynthesizer.

Data (``--data-dir``, default the repository's sibling ``../shared/data``): Adult (48,842 x 14, the private-pgm
discretization) and NLTCS (21,574 x 16 binary).  The paper's BR2000 and LOANS are not available here.

Protocol (the paper's §5.1-5.2, with our choices where it is silent):

* per run, a seeded shuffle splits the records 80/20; every method synthesizes from the same 80 % with
  δ = 1e-9 and fresh noise; as many synthetic rows as training rows are sampled;
* ``werr``: workload error ``(1/|W|) Σ_w ‖M_w(D)/|D| − M_w(D̂)/|D̂|‖₁`` (AIM's convention, no ½) over ALL 3-way
  marginals with ≤ 10,000 cells, against the training data D;
* ``rq3``/``rq5``: range-query MSE ``(1/|Q|) Σ_q (frac_q(D) − frac_q(D̂))²`` over 210 3-attribute and 37
  5-attribute combinations (5-way: only combinations of ≤ 10⁶ cells, "under the constraint of maximum workload"),
  drawn once with a fixed seed with probability ∝ the product of per-attribute weights ``g_a = e²`` with
  ``e ~ Exp(1)`` (§5.1.2's "square exponential distribution"); 10 random boxes (``lo ≤ hi`` uniform per
  attribute) per combination (the paper gives neither the box count nor how boxes are drawn);
* ``svm`` (``--svm``): PrivMRF's classifier (``make_pipeline(StandardScaler(), SVC(gamma='auto'))`` on the integer
  codes; §5.2.1 follows PrivMRF's settings) trained on ``--svm-rows`` synthetic rows, misclassification on ≤ 5,000
  held-out rows, averaged over targets (the paper names none: Adult marital-status, race, sex, income>50K; NLTCS
  4 fixed columns);
* methods: PPSyn strict (DP, ``privacy_mode="strict"``), the ablation ``strict-whole`` (strict PPSyn measuring
  whole marginals only, ``max_partition_steps=0``: what partitioning adds), PPSyn paper (``privacy_mode="paper"``:
  NOT DP: doc/deviations.md, "PartSele is not differentially private" — shown for comparison only), and this
  package's AIM and MST on the same workload.

    python examples/reproduce_ppsyn.py --quick                       # Adult, eps 0.1 and 1, 1 run, strict + AIM
    python examples/reproduce_ppsyn.py --datasets adult --epsilons 0.1 0.5 --runs 5 --methods strict paper aim
    python examples/reproduce_ppsyn.py                               # the paper's grid (hours)
    python examples/reproduce_ppsyn.py --eta-sweep --epsilons 0.5    # Figs. 7-8: eta in 0.3 .. 1.0
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from skdpsynth import AIMSynthesizer, MSTSynthesizer, PartitionSynthesizer, PrivacyLeakWarning

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
ETAS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
METHODS = ("strict", "strict-whole", "paper", "aim", "mst")
LABELS = {"strict": "PPSyn strict", "strict-whole": "PPSyn strict, no partitions", "paper": "PPSyn paper (not DP)",
          "aim": "AIM", "mst": "MST"}
PPSYN = ("strict", "strict-whole", "paper")
DELTA, MAX_CELLS, N_RQ3, N_RQ5, BOXES, MAX_CELLS_5 = 1e-9, 10_000, 210, 37, 10, 1_000_000
TEST_ROWS = 5000
DATASETS = {
    "adult": {"csv": "adult/adult-discretized.csv", "domain": "adult/adult-discretized-domain.json",
              "targets": ("marital-status", "race", "sex", "income>50K")},
    "nltcs": {"csv": "nltcs/nltcs.csv", "domain": "nltcs/nltcs-domain.json", "targets": None},
}
CLAIMS = """Paper (§5.2-5.4; the paper gives figures, no numbers in text):
  Fig. 3  workload error: PPSyn below AIM and MST "in most cases", the gap largest at small epsilon;
  Figs. 4-5 range queries: PPSyn below AIM and MST (3-way and 5-way);
  Fig. 6  SVM misclassification: PPSyn lowest across epsilon;
  Figs. 7-8 eta: best near 0.7."""


@functools.lru_cache(maxsize=None)
def load(name: str, data_dir: str) -> tuple[pd.DataFrame, dict]:
    """The integer-coded table and its public domain {column: size}."""
    spec, root = DATASETS[name], Path(data_dir)
    csv, dom_path = root / spec["csv"], root / spec["domain"]
    for path in (csv, dom_path):
        if not path.is_file():
            sys.exit(f"error: {path} not found. Pass --data-dir pointing at the directory holding adult/ and "
                     f"nltcs/; default {DEFAULT_DATA_DIR}.")
    sizes = json.loads(dom_path.read_text())
    frame = pd.read_csv(csv)[list(sizes)].astype(np.int64)
    return frame, {c: int(sizes[c]) for c in frame.columns}


def targets(name: str, domain: dict) -> tuple:
    return DATASETS[name]["targets"] or tuple(list(domain)[i] for i in (0, 5, 10, 15))


def workload(domain: dict) -> list[tuple]:
    """All 3-way marginals with ≤ 10,000 cells (§5.1.1: AIM's workload with its maximum size)."""
    return [c for c in itertools.combinations(domain, 3) if math.prod(domain[a] for a in c) <= MAX_CELLS]


@functools.lru_cache(maxsize=None)
def range_queries(name: str, data_dir: str, seed: int) -> dict:
    """``{3: [(cols, lo, hi)], 5: [...]}``: combinations ∝ product of weights (§5.1.2), 10 boxes each (our choice)."""
    _, domain = load(name, data_dir)
    cols, sizes = list(domain), np.array(list(domain.values()))
    rng = np.random.default_rng([seed, 2718])
    weight = rng.exponential(size=len(cols)) ** 2
    out = {}
    for ways, count in ((3, N_RQ3), (5, N_RQ5)):
        combos = [c for c in itertools.combinations(range(len(cols)), ways)
                  if ways == 3 or np.prod(sizes[list(c)]) <= MAX_CELLS_5]
        p = np.array([np.prod(weight[list(c)]) for c in combos])
        picked = rng.choice(len(combos), size=min(count, len(combos)), replace=False, p=p / p.sum())
        queries = []
        for i in picked:
            idx = np.array(combos[i])
            a = rng.integers(0, sizes[idx], size=(BOXES, ways))
            b = rng.integers(0, sizes[idx], size=(BOXES, ways))
            queries.append((idx, np.minimum(a, b), np.maximum(a, b)))
        out[ways] = queries
    return out


def range_answers(codes: np.ndarray, queries) -> np.ndarray:
    """Fraction of rows inside each box, all combinations' boxes concatenated."""
    out = []
    for idx, lo, hi in queries:
        x = codes[:, idx][None, :, :]                       # (1, rows, ways)
        inside = ((x >= lo[:, None, :]) & (x <= hi[:, None, :])).all(axis=2)
        out.append(inside.mean(axis=1))
    return np.concatenate(out)


def workload_error(train: np.ndarray, synth: np.ndarray, domain: dict) -> float:
    cols, sizes = list(domain), list(domain.values())
    errors = []
    for clique in workload(domain):
        idx = [cols.index(a) for a in clique]
        shape = tuple(sizes[i] for i in idx)
        p = np.bincount(np.ravel_multi_index(tuple(train[:, i] for i in idx), shape), minlength=math.prod(shape))
        q = np.bincount(np.ravel_multi_index(tuple(synth[:, i] for i in idx), shape), minlength=math.prod(shape))
        errors.append(np.abs(p / p.sum() - q / q.sum()).sum())
    return float(np.mean(errors))


def misclassification(synth: pd.DataFrame, test: pd.DataFrame, target_cols, svm_rows: int, seed: int) -> float:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    rng = np.random.default_rng(seed)
    train = synth.iloc[rng.permutation(len(synth))[:svm_rows]]
    test = test.iloc[rng.permutation(len(test))[:TEST_ROWS]]
    rates = []
    for target in target_cols:
        features = [c for c in test.columns if c != target]
        if train[target].nunique() < 2:   # a constant synthetic target: predict it
            rates.append(float((test[target] != train[target].iloc[0]).mean()))
            continue
        clf = make_pipeline(StandardScaler(), SVC(gamma="auto")).fit(train[features], train[target])
        rates.append(float((clf.predict(test[features]) != test[target]).mean()))
    return float(np.mean(rates))


def make_synthesizer(method: str, epsilon: float, eta: float, domain: dict, wl: list):
    common = dict(domain=domain, random_state=None)
    if method == "strict-whole":   # ablation: strict PPSyn measuring whole marginals only
        return PartitionSynthesizer(epsilon, DELTA, eta=eta, workload=wl, max_partition_steps=0, **common)
    if method in ("strict", "paper"):
        return PartitionSynthesizer(epsilon, DELTA, eta=eta, workload=wl, privacy_mode=method, **common)
    if method == "aim":
        return AIMSynthesizer(epsilon, DELTA, workload=wl, **common)
    return MSTSynthesizer(epsilon, DELTA, **common)


def run_job(job: dict, data_dir: str, seed: int, svm: bool, svm_rows: int) -> dict:
    frame, domain = load(job["dataset"], data_dir)
    perm = np.random.default_rng([seed, 104729, job["run"]]).permutation(len(frame))
    n_train = int(round(0.8 * len(frame)))
    train, test = frame.iloc[np.sort(perm[:n_train])], frame.iloc[np.sort(perm[n_train:])]
    syn = make_synthesizer(job["method"], job["epsilon"], job["eta"], domain, workload(domain))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)   # paper mode: labelled "not DP" in every table
        syn.fit(train)
    fit_s = time.perf_counter() - start
    synth = syn.sample(len(train), random_state=job["run"])[list(frame.columns)].astype(np.int64)
    tr, sy = train.to_numpy(), synth.to_numpy()
    row = dict(job, fit_s=fit_s, werr=workload_error(tr, sy, domain))
    for ways, queries in range_queries(job["dataset"], data_dir, seed).items():
        row[f"rq{ways}"] = float(np.mean((range_answers(tr, queries) - range_answers(sy, queries)) ** 2))
    if svm:
        row["svm"] = misclassification(synth, test, targets(job["dataset"], domain), svm_rows, job["run"])
    return row


def _ms(values, digits: int = 4) -> str:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return "-"
    fmt = f".{digits - 1}e" if 0 < np.abs(values).max() < 1e-2 else f".{digits}f"   # range-query MSEs are ~1e-4
    if values.size == 1:
        return f"{values[0]:{fmt}}"
    return f"{values.mean():{fmt}} ± {values.std(ddof=1):{fmt}}"


def print_tables(frame: pd.DataFrame) -> None:
    metrics = [m for m in ("werr", "rq3", "rq5", "svm", "fit_s") if m in frame]
    for (dataset, eta), part in frame.groupby(["dataset", "eta"]):
        for metric in metrics:
            print(f"\n{dataset}, eta {eta}: {metric} (mean ± s.d. over runs; lower is better)")
            methods = [m for m in METHODS if m in set(part["method"])]
            print("  " + f"{'epsilon':>8} " + " ".join(f"{LABELS[m]:>24}" for m in methods))
            for eps, rows in part.groupby("epsilon"):
                cells = [_ms(rows.loc[rows["method"] == m, metric], 1 if metric == "fit_s" else 4) for m in methods]
                print("  " + f"{eps:>8} " + " ".join(f"{c:>24}" for c in cells))


def check_claims(frame: pd.DataFrame) -> None:
    print("\n" + CLAIMS)
    print("Measured here (PPSyn strict, the DP variant, against AIM / MST; mean over runs):")
    for (dataset, eta), part in frame.groupby(["dataset", "eta"]):
        for metric in [m for m in ("werr", "rq3", "rq5", "svm") if m in part]:
            means = part.groupby(["epsilon", "method"])[metric].mean().unstack()
            for base in ("aim", "mst"):
                if "strict" in means and base in means:
                    wins = (means["strict"] <= means[base]).dropna()
                    print(f"  {dataset} eta {eta} {metric}: strict <= {LABELS[base]} at {int(wins.sum())}/{wins.size} "
                          f"epsilons ({', '.join(str(e) for e in wins.index[wins.to_numpy()]) or 'none'})")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=["adult", "nltcs"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--eta", type=float, default=0.7)
    ap.add_argument("--eta-sweep", action="store_true", help="PPSyn at eta 0.3 .. 1.0 (Figs. 7-8)")
    ap.add_argument("--svm", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--svm-rows", type=int, default=5000, help="synthetic rows the SVM is trained on")
    ap.add_argument("--quick", action="store_true", help="Adult, eps 0.1 and 1, 1 run, strict + AIM, no SVM")
    ap.add_argument("--n-jobs", type=int, default=1, help="parallel fits (joblib)")
    ap.add_argument("--seed", type=int, default=0, help="seeds the splits and the range queries")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--out", type=Path, default=None, help="write every run's numbers here (JSON)")
    ap.add_argument("--load", type=Path, default=None, help="no fits: print the tables of an --out file")
    args = ap.parse_args(argv)
    if args.load:
        frame = pd.DataFrame(json.loads(args.load.read_text()))
        print_tables(frame)
        check_claims(frame)
        return
    if args.quick:
        args.datasets, args.epsilons, args.runs, args.methods, args.svm = ["adult"], [0.1, 1.0], 1, ["strict", "aim"], False
    etas = ETAS if args.eta_sweep else (args.eta,)
    jobs = [dict(dataset=d, epsilon=e, method=m, eta=(eta if m in PPSYN else args.eta), run=r)
            for d in args.datasets for e in args.epsilons for r in range(args.runs) for m in args.methods
            for eta in (etas if m in PPSYN else (args.eta,))]
    print(f"{len(jobs)} fits: {args.datasets} x eps {args.epsilons} x {args.runs} runs x {args.methods}"
          + (f" x eta {list(etas)}" if args.eta_sweep else ""), flush=True)
    start = time.perf_counter()
    done = []

    def report(row):
        extra = " ".join(f"{k} {row[k]:.4g}" for k in ("werr", "rq3", "rq5", "svm") if k in row)
        print(f"  {row['dataset']} eps {row['epsilon']} {LABELS[row['method']]} eta {row['eta']} run {row['run']}: "
              f"{extra}, fit {row['fit_s']:.0f} s  [{time.perf_counter() - start:.0f} s]", flush=True)
        done.append(row)
        if args.out:   # after every fit: an interrupted grid keeps what it measured
            args.out.write_text(json.dumps(done, indent=1))
        return row

    if args.n_jobs == 1:
        rows = [report(run_job(j, str(args.data_dir), args.seed, args.svm, args.svm_rows)) for j in jobs]
    else:
        # Workers import this file as a module so that run_job and its cached loaders pickle by reference.
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        module = __import__(Path(__file__).stem)
        rows = [report(r) for r in Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")(
            delayed(module.run_job)(j, str(args.data_dir), args.seed, args.svm, args.svm_rows) for j in jobs)]
    frame = pd.DataFrame(rows)
    print_tables(frame)
    check_claims(frame)


if __name__ == "__main__":
    main()
