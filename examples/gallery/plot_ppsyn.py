"""
PPSyn (PartitionSynthesizer) vs AIM and MST: workload error across ε
====================================================================

PPSyn (Zhang, Deng & Yin, *Partition-based differentially private synthetic
data generation*) is an AIM-style select–measure–generate loop that measures
the **group sums** of a partition of a marginal's cells instead of every
cell: fewer numbers, so less noise, at the price of some reconstruction
error. :class:`~skdpsynth.PartitionSynthesizer` implements it; its default
``privacy_mode="strict"`` is differentially private end to end (the paper's
algorithm as published is not, see :doc:`/partition`).

The paper's headline result is its Fig. 3: the workload error on random
3-way marginals against ε on Adult and two other data sets, with PPSyn
below AIM and MST "in most cases", the gap largest at small ε. The paper
prints no numbers (its results are only plotted), so this example draws the
same kind of plot:

* the workload error of the paper (AIM's convention):
  ``(1/|W|) Σ_w ‖M_w(D)/|D| − M_w(D̂)/|D̂|‖₁`` over all 3-way marginals with
  at most 10,000 cells, which is also the workload given to PPSyn and AIM;
* PPSyn (strict, all defaults), AIM and MST at δ = 1e-9;
* ε ∈ {0.1, 0.5}, 2 seeds per point;
* **a documented subset** to fit the time limit of a gallery page: 7 of the
  14 attributes of the bundled Adult benchmark (all 48,842 records). On the
  full table one strict PPSyn fit takes about a minute on a 2-core machine
  (doc/partition.md). The subset keeps hours-per-week (99 values), the kind
  of large domain where partitioning pays off.

The full experiment (14 attributes, 80 % splits, 5 runs, range queries and
the no-partition ablation):
``python examples/reproduce_ppsyn.py --datasets adult --epsilons 0.1 0.5 --runs 5 --methods strict strict-whole aim``.

The seeds are fixed so that the page is reproducible, and that makes the
privacy noise reproducible too: a real release must leave
``random_state=None``.
"""

# %%
# Data and workload
# -----------------
# The domain and the workload come from public metadata only (attribute
# sizes), so choosing them costs nothing.
import itertools
import math
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np

from skdpsynth import AIMSynthesizer, MSTSynthesizer, PartitionSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.metrics import marginal_tvd
from skdpsynth.privacy import ReproducibleNoiseWarning

COLUMNS = ["workclass", "education-num", "marital-status", "occupation", "relationship", "hours-per-week",
           "income>50K"]
adult = load_adult(discretized=True)
real, domain = adult.frame[COLUMNS], adult.domain.project(COLUMNS)
workload = [c for c in itertools.combinations(COLUMNS, 3) if math.prod(domain[a] for a in c) <= 10_000]
print(f"{len(real):,} records, {len(COLUMNS)} attributes, domain sizes {list(domain.to_dict().values())}")
print(f"workload: {len(workload)} of {math.comb(len(COLUMNS), 3)} 3-way marginals have at most 10,000 cells")

# %%
# Fit the three synthesizers on the grid
# --------------------------------------
EPSILONS = [0.1, 0.5]
SEEDS = [0, 1]
DELTA = 1e-9


def make(method, epsilon, seed):
    common = dict(epsilon=epsilon, delta=DELTA, domain=domain.to_dict(), random_state=seed)
    if method == "PPSyn":
        return PartitionSynthesizer(workload=workload, **common)   # privacy_mode="strict", the default
    if method == "AIM":
        return AIMSynthesizer(workload=workload, **common)
    return MSTSynthesizer(**common)


METHODS = ["PPSyn", "AIM", "MST"]
error = {m: np.zeros((len(EPSILONS), len(SEEDS))) for m in METHODS}
seconds = dict.fromkeys(METHODS, 0.0)
with warnings.catch_warnings():
    # A fixed seed makes the noise reproducible; the synthesizers warn about it.
    warnings.simplefilter("ignore", ReproducibleNoiseWarning)
    for i, eps in enumerate(EPSILONS):
        for j, seed in enumerate(SEEDS):
            for method in METHODS:
                start = time.perf_counter()
                synthetic = make(method, eps, seed).fit(real).sample()
                seconds[method] += time.perf_counter() - start
                # The paper's ℓ1 workload error is twice the mean TVD over the workload.
                error[method][i, j] = 2 * marginal_tvd(real, synthetic, cliques=workload, domain=domain)

for method in METHODS:
    print(f"{method}: fit + sample, {len(EPSILONS) * len(SEEDS)} fits: {seconds[method]:.1f} s")

# %%
# Our numbers beside the full experiment's
# ----------------------------------------
# The paper gives no numbers for Fig. 3; the reference columns are the means
# of 5 runs of the full script on all 14 attributes, as recorded in the user
# guide's PPSyn page (doc/partition.md). They are on a larger table, so only
# the ordering is comparable, not the values.
FULL_RUN = {("PPSyn", 0.1): 0.340, ("PPSyn", 0.5): 0.162, ("AIM", 0.1): 0.382, ("AIM", 0.5): 0.195}
print(f"{'ε':>4} {'method':>6} {'workload error (runs)':>30}   full script, 14 attributes")
for i, eps in enumerate(EPSILONS):
    for method in METHODS:
        runs = ", ".join(f"{v:.4f}" for v in error[method][i])
        ref = FULL_RUN.get((method, eps))
        print(f"{eps:>4g} {method:>6} {error[method][i].mean():8.4f} ({runs})   "
              + (f"{ref:.3f}" if ref is not None else "not run"))

# %%
# Workload error vs ε (the shape of the paper's Fig. 3)
# -----------------------------------------------------
# One line per method (mean of the seeds), error bars span the runs.
fig, ax = plt.subplots(figsize=(6.5, 4))
for method, marker in zip(METHODS, "osd"):
    values = error[method]
    mean = values.mean(axis=1)
    ax.errorbar(EPSILONS, mean, yerr=[mean - values.min(axis=1), values.max(axis=1) - mean], marker=marker,
                capsize=4, label=method + (" (strict, DP)" if method == "PPSyn" else ""))
ax.set_xscale("log")
ax.set_xticks(EPSILONS, [f"{e:g}" for e in EPSILONS])
ax.minorticks_off()  # only the grid's ε as ticks
ax.set_xlabel("ε (δ = 1e-9)")
ax.set_ylabel("workload error (mean ℓ1, 3-way marginals)")
ax.set_title(f"Adult, {len(COLUMNS)} attributes: PPSyn vs AIM vs MST, {len(SEEDS)} seeds")
ax.set_ylim(bottom=0)
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
plt.show()

# %%
# What to read from it
# --------------------
# The ordering of the paper's Fig. 3 shows up on this subset: MST, which
# measures only 2-way marginals, has the highest 3-way workload error, and
# strict PPSyn is below AIM on average at both budgets. With 2 seeds the
# picture is noisy at ε = 0.1: in the run above one of the two PPSyn fits
# there is slightly above both AIM fits, while at ε = 0.5 both PPSyn fits are
# clearly below. The full experiment on all 14 attributes (5 runs each,
# doc/partition.md) has every strict PPSyn run below every AIM run at both
# budgets, and its ablation shows that the partitions are what wins:
# strict PPSyn restricted to whole marginals is level with AIM.
#
# The price is time: strict PPSyn's fits here take far longer than AIM's
# (see the timings printed above). Most of it goes to re-estimating the
# graphical model after each measurement: in a profile of one strict fit on a
# similar 7-attribute subset of Adult (ε = 0.5), mirror descent took 36 of
# the 39 s.
