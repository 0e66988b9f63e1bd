"""Public constraints on Adult: violating records and quality, with and without them (doc/constraints.md).

    python -m skdpsynth.benchmarks.constraints                      # AIM and MST, eps = 1, seeds 0-9
    python -m skdpsynth.benchmarks.constraints --methods mst --seeds 0 1 2

Data: the bundled discretized Adult (48,842 records, 14 columns) with the ``education`` column of the raw Adult
(its 16 levels as labels, the same records in the same order), so that two public constraints apply:

* ``relationship`` Husband (code 2) implies ``sex`` Male (code 1): ``{"forbid": {"relationship": 2, "sex": 0}}``
  (one real record breaks it);
* ``education`` fixes ``education-num`` (code = years − 1): a functional dependency with the census mapping
  (no real record breaks it).

Each method fits the whole table at the given ε with ``random_state=seed``, once without and once with the
constraints (the same noise: constraints change no release), samples ``n_records_`` records and reports the
number of synthetic records that break a constraint, and the mean total variation distance of every 2-way and
3-way marginal against the real table.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from .. import AIMSynthesizer, MSTSynthesizer
from ..datasets import load_adult
from ..metrics import marginal_tvd

EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
             "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate"]
CONSTRAINTS = [
    {"forbid": {"relationship": 2, "sex": 0}},
    {"dependency": {"determinant": "education", "dependent": "education-num",
                    "mapping": {level: years - 1 for years, level in enumerate(EDUCATION, start=1)}}},
]
METHODS = {"aim": AIMSynthesizer, "mst": MSTSynthesizer}


def adult_with_education() -> tuple[pd.DataFrame, dict]:
    """Discretized Adult with the raw ``education`` labels inserted before ``education-num``; its public domain."""
    adult, raw = load_adult(discretized=True), load_adult()
    frame = adult.frame.copy()
    frame.insert(frame.columns.get_loc("education-num"), "education", raw.frame["education"].str.strip().to_numpy())
    domain = {**adult.domain.to_dict(), "education": EDUCATION}
    return frame, {c: domain[c] for c in frame.columns}


def breaking(frame: pd.DataFrame) -> int:
    """Records that break one of :data:`CONSTRAINTS`."""
    years = frame["education"].map({level: y for y, level in enumerate(EDUCATION)})
    return int(((frame["relationship"] == 2) & (frame["sex"] == 0)).sum() + (years != frame["education-num"]).sum())


def run(method: str, epsilon: float, seed: int, frame: pd.DataFrame, domain: dict, constrained: bool) -> dict:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = METHODS[method](epsilon=epsilon, domain=domain, random_state=seed,
                                constraints=CONSTRAINTS if constrained else None).fit(frame)
    synthetic = synth.sample(random_state=seed)
    codes = {c: (domain[c] if isinstance(domain[c], int) else len(domain[c])) for c in frame.columns}
    real, fake = (f.assign(education=pd.Categorical(f["education"], EDUCATION).codes) for f in (frame, synthetic))
    tvd = marginal_tvd(real, fake, ways=(2, 3), domain=codes)
    return {"method": method, "seed": seed, "constrained": constrained, "violations": breaking(synthetic),
            "tvd2": tvd[2], "tvd3": tvd[3], "seconds": time.perf_counter() - start}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="+", choices=sorted(METHODS), default=["aim", "mst"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    args = parser.parse_args(argv)
    frame, domain = adult_with_education()
    print(f"real records breaking a constraint: {breaking(frame)} of {len(frame):,}")
    rows = []
    for method in args.methods:
        for seed in args.seeds:
            for constrained in (False, True):
                rows.append(run(method, args.epsilon, seed, frame, domain, constrained))
                r = rows[-1]
                print(f"{method} seed {seed} {'with' if constrained else 'without'} constraints: "
                      f"{r['violations']} violating, TVD2 {r['tvd2']:.4f}, TVD3 {r['tvd3']:.4f} "
                      f"({r['seconds']:.1f} s)", flush=True)
    table = pd.DataFrame(rows)
    summary = table.groupby(["method", "constrained"]).agg(
        fits=("seed", "size"), violating=("violations", "sum"), tvd2=("tvd2", "mean"), tvd2_sd=("tvd2", "std"),
        tvd3=("tvd3", "mean"), tvd3_sd=("tvd3", "std"))
    paired = table.pivot_table(index=["method", "seed"], columns="constrained", values=["tvd2", "tvd3"])
    diff = (paired.xs(True, axis=1, level=1) - paired.xs(False, axis=1, level=1)).groupby("method").agg(["mean", "std"])
    print(f"\nAdult, epsilon = {args.epsilon}, seeds {args.seeds}\n")
    print(summary.to_string(float_format=lambda v: f"{v:.4f}"))
    print("\nWith minus without constraints, paired by seed (mean, sd):\n")
    print(diff.to_string(float_format=lambda v: f"{v:+.4f}"))


if __name__ == "__main__":
    main()
