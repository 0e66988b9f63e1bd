"""
AIM vs MST on Adult: error of 2- and 3-way marginals across ε
==============================================================

AIM (McKenna, Mullins, Sheldon & Miklau, *AIM: An Adaptive and Iterative
Mechanism for Differentially Private Synthetic Data*, VLDB 2022) picks the
marginals it measures adaptively, round after round, to serve a workload
(by default all 3-way marginals). MST (McKenna, Miklau & Sheldon, 2021)
measures every 1-way marginal and a maximum spanning tree of 2-way
marginals, chosen once. The AIM paper's headline comparison plots the
workload error (3-way marginals) against ε for these and other mechanisms,
and reports AIM consistently ahead. This example draws the same kind of plot on the
bundled Adult benchmark with this package's
:class:`~skdpsynth.AIMSynthesizer` and :class:`~skdpsynth.MSTSynthesizer`.

What we measure: the mean total variation distance (TVD) between the real
and the synthetic 2-way and 3-way marginals (all 78 pairs and all 286
triples of the attributes used; the AIM paper's error is the ℓ1 distance,
which is 2 × TVD), for ε ∈ {0.1, 0.3, 1} at δ = 1e-9, with 2 seeds per point,
on all 48,842 records. To fit the time limit of a gallery page, the data is
a documented subset: 13 of the 14 attributes of the benchmark, leaving out
``fnlwgt`` (the census sampling weight, 100 bins), which shortens the fits. It is a small grid and 2 runs, so the lines show
the shape of the comparison, not tight estimates. For the full table and
larger grids use
``python -m skdpsynth.benchmarks.compare --dataset adult --methods aim mst --epsilon 0.1 1 10 --seeds 3``.

The seeds are fixed so that the page is reproducible, and that makes the
privacy noise reproducible too: a real release must leave
``random_state=None``.
"""

# %%
# Fit both synthesizers on the grid
# ---------------------------------
# The domain (attribute sizes) is public metadata shipped with the data set,
# so both synthesizers get it for free; only the records are private.
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np

from skdpsynth import AIMSynthesizer, MSTSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.metrics import marginal_tvd
from skdpsynth.privacy import ReproducibleNoiseWarning

adult = load_adult(discretized=True)
# The subset: every attribute but the sampling weight fnlwgt (time limit).
columns = [c for c in adult.frame.columns if c != "fnlwgt"]
real, domain = adult.frame[columns], adult.domain.project(columns)

EPSILONS = [0.1, 0.3, 1.0]
SEEDS = [0, 1]
DELTA = 1e-9
METHODS = {"AIM": AIMSynthesizer, "MST": MSTSynthesizer}

# tvd[method][ways] has one row per ε and one column per seed.
tvd = {m: {2: np.zeros((len(EPSILONS), len(SEEDS))), 3: np.zeros((len(EPSILONS), len(SEEDS)))} for m in METHODS}
seconds = {m: 0.0 for m in METHODS}
with warnings.catch_warnings():
    # A fixed seed makes the noise reproducible; the synthesizers warn about it.
    warnings.simplefilter("ignore", ReproducibleNoiseWarning)
    for i, eps in enumerate(EPSILONS):
        for j, seed in enumerate(SEEDS):
            for name, cls in METHODS.items():
                start = time.perf_counter()
                synth = cls(epsilon=eps, delta=DELTA, domain=domain.to_dict(), random_state=seed).fit(real)
                synthetic = synth.sample()
                seconds[name] += time.perf_counter() - start
                scores = marginal_tvd(real, synthetic, ways=(2, 3), domain=domain)
                tvd[name][2][i, j], tvd[name][3][i, j] = scores[2], scores[3]

print(f"Adult: {len(real):,} records, {len(domain)} attributes; δ = {DELTA:g}; seeds {SEEDS}")
for name in METHODS:
    print(f"{name}: fit + sample, all {len(EPSILONS) * len(SEEDS)} fits: {seconds[name]:.1f} s")

# %%
# The numbers
# -----------
# Mean over the seeds, with the two runs' range in brackets.
print(f"{'ε':>5} {'method':>6} {'2-way TVD':>24} {'3-way TVD':>24}")
for i, eps in enumerate(EPSILONS):
    for name in METHODS:
        cells = [f"{tvd[name][k][i].mean():.4f} [{tvd[name][k][i].min():.4f}, {tvd[name][k][i].max():.4f}]"
                 for k in (2, 3)]
        print(f"{eps:>5g} {name:>6} {cells[0]:>24} {cells[1]:>24}")

# %%
# Error vs ε
# ----------
# One line per method (mean of the seeds), the band spans the two runs.
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharex=True)
for ax, k in zip(axes, (2, 3)):
    for name, color in zip(METHODS, ("C0", "C1")):
        values = tvd[name][k]
        ax.plot(EPSILONS, values.mean(axis=1), "o-", color=color, label=name)
        ax.fill_between(EPSILONS, values.min(axis=1), values.max(axis=1), color=color, alpha=0.25, linewidth=0)
    ax.set_xscale("log")
    ax.set_xticks(EPSILONS, [f"{e:g}" for e in EPSILONS])
    ax.minorticks_off()  # only the grid's ε as ticks
    ax.set_xlabel("ε (δ = 1e-9)")
    ax.set_ylabel(f"mean TVD of {k}-way marginals")
    ax.set_title(f"{k}-way marginals")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
axes[0].legend()
fig.suptitle(f"Adult ({len(real):,} records, {len(columns)} attributes): AIM vs MST, "
             f"{len(SEEDS)} seeds (band: min–max)")
fig.tight_layout()
plt.show()

# %%
# What to read from it
# --------------------
# AIM spends its budget on the marginals that its current model gets most
# wrong, and its default workload is the 3-way marginals (those with at most
# 10,000 cells), so it is ahead on the 3-way error at every ε of the grid:
# MST's fixed tree of 2-way marginals cannot represent 3-way structure it
# never measured. The two are closest at ε = 0.3, where their 2-way errors
# overlap. This is the shape of the AIM paper's headline comparison; the AIM
# paper reports its own numbers on its own preprocessing of the data, which
# we do not quote here.
#
# The grid stops at ε = 1 because AIM runs more rounds, and each takes
# longer, as ε grows: its fits at ε = 2 or 3 take about half a minute each
# here, too long for a gallery page.
#
# Cost: when this example was written, the whole script took 31 s of CPU
# time (34 s of wall time on a 2-core machine shared with other jobs):
# ``time OMP_NUM_THREADS=1 python examples/gallery/plot_aim_vs_mst.py``. The
# per-method totals of fit + sample are printed above.
