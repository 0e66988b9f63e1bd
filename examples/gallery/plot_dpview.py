"""
DPView and DPView+ on Adult: k-way marginal error across ε
==========================================================

DPView (Lin, Yu & Huang, *DPView: Differentially Private Data Synthesis
Through Domain Size Information*) chooses its views (groups of attributes)
from the public domain sizes alone, measures each view's full contingency
table with Laplace noise (pure ε-DP, no δ), makes the tables consistent and
links partial records from view to view. DPView+ also measures "upper cross
views" to guide the linking. See
:class:`~skdpsynth.ViewSynthesizer` and :doc:`/view`.

The paper's marginal result is its Fig. 8: the average ℓ1 error of the 1-,
2- and 3-way marginals of the synthetic data against ε, on Adult and two
larger data sets, with DPView's error below its competitors'. The paper
prints no numbers (its results are only plotted), so this example draws the
same kind of plot for Adult with:

* Adult bucketized as in the paper: every numeric attribute cut into 10
  equal-width bins over **public** bounds, categorical attributes over their
  public category lists (15 attributes), so the paper's view size d = 5 gives
  5 views (DPView) and 7 (DPView+), the counts the paper reports;
* the synthesizers fitted on the 32,561 ``adult.data`` records (the official
  training part), as in ``examples/reproduce_dpview.py``;
* DPView and DPView+ with d = 5, and :class:`~skdpsynth.MSTSynthesizer` at
  δ = 1e-9 as a baseline (zCDP-based, so a weaker guarantee than pure ε-DP
  at the same ε);
* ε ∈ {0.1, 0.5, 2} and 2 seeds per point (the full experiment has
  5 values of ε, 3 runs, AIM, the ``view_size="auto"`` variants, range
  queries and 8 classifiers: ``python examples/reproduce_dpview.py --full``).

The error is the mean total variation distance (TVD) over all k-way
marginals; the paper's ℓ1 error is 2 × TVD.

The seeds are fixed so that the page is reproducible, and that makes the
privacy noise reproducible too: a real release must leave
``random_state=None``.
"""

# %%
# Bucketize Adult with a public schema
# ------------------------------------
# Binning over bounds fixed in advance reads nothing from the records, so it
# costs no budget. Capital gain and loss get the census top codes as bounds
# (the bundled schema gives them hand-made edges instead).
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from skdpsynth import MSTSynthesizer, ViewSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.metrics import marginal_tvd
from skdpsynth.preprocessing import TableDiscretizer
from skdpsynth.privacy import ReproducibleNoiseWarning

adult = load_adult()
PUBLIC_BOUNDS = {"capital-gain": [0, 99999], "capital-loss": [0, 5000]}
schema = {}
for col, spec in adult.schema.items():
    if spec["type"] == "numeric":
        schema[col] = {"type": "numeric", "bounds": spec.get("bounds", PUBLIC_BOUNDS.get(col)), "n_bins": 10}
    else:
        schema[col] = spec
coded = TableDiscretizer(schema, output="code").fit(adult.frame).transform(adult.frame)
train = pd.DataFrame({c: coded[c].cat.codes.astype(np.int64) for c in coded.columns}).iloc[: adult.n_train]
domain = {c: len(coded[c].cat.categories) for c in coded.columns}
print(f"{len(train):,} training records, {len(domain)} attributes; domain sizes {list(domain.values())}")

# %%
# Fit the three synthesizers on the grid
# --------------------------------------
EPSILONS = [0.1, 0.5, 2.0]
SEEDS = [0, 1]
WAYS = (1, 2, 3)


def make(method, epsilon, seed):
    if method == "MST":
        return MSTSynthesizer(epsilon=epsilon, delta=1e-9, domain=domain, random_state=seed)
    variant = "dpview+" if method == "DPView+" else "dpview"
    # The paper's configuration: views of d = 5 columns, n̂ the mean of the noisy view totals (§V-A).
    return ViewSynthesizer(epsilon=epsilon, view_size=5, n_estimator="mean", variant=variant, domain=domain,
                           random_state=seed)


METHODS = ["DPView", "DPView+", "MST"]
tvd = {m: np.zeros((len(WAYS), len(EPSILONS), len(SEEDS))) for m in METHODS}
seconds = dict.fromkeys(METHODS, 0.0)
n_views = {}
with warnings.catch_warnings():
    # A fixed seed makes the noise reproducible; the synthesizers warn about it.
    warnings.simplefilter("ignore", ReproducibleNoiseWarning)
    for i, eps in enumerate(EPSILONS):
        for j, seed in enumerate(SEEDS):
            for method in METHODS:
                start = time.perf_counter()
                synth = make(method, eps, seed).fit(train)
                synthetic = synth.sample()
                seconds[method] += time.perf_counter() - start
                if method != "MST":
                    n_views[method] = len(synth.model_.plan.views)
                scores = marginal_tvd(train, synthetic, ways=WAYS, domain=domain)
                for w, k in enumerate(WAYS):
                    tvd[method][w, i, j] = scores[k]

print(f"views: DPView {n_views['DPView']}, DPView+ {n_views['DPView+']} (the paper: 5 and 7 on Adult)")
for method in METHODS:
    print(f"{method}: fit + sample, {len(EPSILONS) * len(SEEDS)} fits: {seconds[method]:.1f} s")

# %%
# Our numbers beside the ones measured by the full script
# -------------------------------------------------------
# The paper gives no numbers for Fig. 8, so the reference column is the mean
# 2-way TVD of 3 runs of ``python examples/reproduce_dpview.py --full``, as
# recorded in the user guide's DPView page (same data, same d, other seeds).
FULL_RUN_2WAY = {  # (method, ε) -> 2-way TVD, from doc/view.md
    ("DPView", 0.1): 0.340, ("DPView", 0.5): 0.164, ("DPView", 2.0): 0.083,
    ("DPView+", 0.1): 0.395, ("DPView+", 0.5): 0.204, ("DPView+", 2.0): 0.101,
    ("MST", 0.1): 0.084, ("MST", 0.5): 0.044, ("MST", 2.0): 0.034,
}
print(f"{'ε':>4} {'method':>8} {'1-way':>7} {'2-way':>7} {'3-way':>7}   2-way, full script (3 runs)")
for i, eps in enumerate(EPSILONS):
    for method in METHODS:
        means = tvd[method][:, i].mean(axis=1)
        print(f"{eps:>4g} {method:>8} " + " ".join(f"{v:7.4f}" for v in means)
              + f"   {FULL_RUN_2WAY[method, eps]:.3f}")

# %%
# Error vs ε (the shape of the paper's Fig. 8)
# --------------------------------------------
# One line per method (mean of the seeds); the band spans the runs.
fig, axes = plt.subplots(1, len(WAYS), figsize=(11, 3.8), sharex=True)
for ax, w, k in zip(axes, range(len(WAYS)), WAYS):
    for method, style in zip(METHODS, ("o-", "s-", "^--")):
        values = tvd[method][w]
        line, = ax.plot(EPSILONS, values.mean(axis=1), style, label=method)
        ax.fill_between(EPSILONS, values.min(axis=1), values.max(axis=1), color=line.get_color(),
                        alpha=0.25, linewidth=0)
    ax.set_xscale("log")
    ax.set_xticks(EPSILONS, [f"{e:g}" for e in EPSILONS])
    ax.minorticks_off()  # only the grid's ε as ticks
    ax.set_xlabel("ε")
    ax.set_ylabel(f"mean TVD of {k}-way marginals")
    ax.set_title(f"{k}-way marginals")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
axes[0].legend(title="d = 5; MST: δ = 1e-9")
fig.suptitle(f"Adult, 10 equal-width bins (32,561 records): DPView vs DPView+ vs MST, {len(SEEDS)} seeds")
fig.tight_layout()
plt.show()

# %%
# What to read from it
# --------------------
# The paper reports DPView's marginal error below its competitors' (Fig. 8)
# and DPView+ ahead of DPView "in nearly all cases" (Fig. 7, classification).
# Neither holds here, and the full script (``--full``, 3 runs, doc/view.md)
# finds the same ordering. MST's error is lower at every ε and every k, by a
# factor between about 1.6 (3-way, ε = 2) and 17 (1-way, ε = 2) in the run
# above. DPView+ is at best level with DPView (slightly ahead on the 1-way
# marginals at ε = 0.1, behind everywhere else). With the paper's d = 5 a view of
# this bucketization has 17,000–67,000 cells (doc/view.md), so each cell's
# Laplace noise is large next to most counts; DPView+ splits the same ε over
# 7 views instead of 5, which makes that worse. Smaller views help: the
# package's default (``view_size="auto"``) picks d = 3–5 and measures the
# largest-domain columns alone, which lowers the 2-way TVD at ε = 0.1 from
# 0.340 to 0.090 (doc/view.md), still above MST. DPView's strengths are elsewhere: pure
# ε-DP with no δ, and a fit that reads the data exactly once.
