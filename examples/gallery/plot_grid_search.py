"""
Grid search over ε and a hyper-parameter, and what it costs
===========================================================

Synthesizers are scikit-learn estimators, so
:class:`~sklearn.model_selection.GridSearchCV` can tune them with the
package's scorers (:func:`~skdpsynth.metrics.marginal_scorer`,
:func:`~skdpsynth.metrics.tstr_scorer`). Here: :class:`~skdpsynth.AIMSynthesizer`
on 8 attributes of the integer-coded Adult benchmark, searching ε and
``max_cells`` (the largest marginal, in cells, that AIM may measure), scored
by the 2-way marginal TVD of a synthetic sample against the held-out fold.

**The privacy cost.** Every ``fit`` spends the synthesizer's whole budget
on the records it is given. A grid search fits every candidate on every
cross-validation split, plus one refit of the winner on all the data, and
all those fits read the same people: the cost adds up (see "Model selection
multiplies the cost" in :doc:`/privacy`). The scores also read the held-out
real records without noise, so the *choice* of the winner is not covered
by any fit's guarantee either. Tune on public or synthetic data when you
can; otherwise budget the whole search, as computed below.

The seeds (``random_state=0``) make the example reproducible, and therefore
also the privacy noise: a real release must not fix the seed.
"""

# %%
# Data: 8 attributes of Adult
# ---------------------------
# The domain (attribute sizes) is public metadata shipped with the data set.
import warnings

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.model_selection import GridSearchCV, KFold

from skdpsynth import AIMSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.metrics import marginal_scorer
from skdpsynth.privacy import ReproducibleNoiseWarning, cdp_epsilon, cdp_rho

adult = load_adult(discretized=True)
columns = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship", "sex", "income>50K"]
X = adult.frame[columns]
domain = {c: adult.domain[c] for c in columns}
print(f"{len(X):,} records, domain sizes {domain}")

# %%
# The search
# ----------
# 3 values of ε × 2 of ``max_cells`` = 6 candidates, 2 folds: 12 fits, then
# the refit of the best candidate on all records.
delta = 1e-9
grid = {"epsilon": [0.1, 0.3, 1.0], "max_cells": [100, 10000]}
search = GridSearchCV(
    AIMSynthesizer(delta=delta, domain=domain, random_state=0),
    grid,
    scoring=marginal_scorer(ways=2, domain=domain),  # −(average 2-way TVD): greater is better
    cv=KFold(n_splits=2, shuffle=True, random_state=0),
)
with warnings.catch_warnings():
    # A fixed seed makes the noise reproducible; the synthesizer warns about it.
    warnings.simplefilter("ignore", ReproducibleNoiseWarning)
    search.fit(X)

results = pd.DataFrame(search.cv_results_)
table = results[["param_epsilon", "param_max_cells", "mean_test_score", "std_test_score", "mean_fit_time"]]
print(table.to_string(index=False))
print("best:", search.best_params_)

# %%
# Score vs ε
# ----------
# Greater is better (0 would be a perfect match of every 2-way marginal).
fig, ax = plt.subplots(figsize=(6, 3.5))
for max_cells, rows in results.groupby("param_max_cells"):
    ax.errorbar(rows["param_epsilon"].astype(float), -rows["mean_test_score"], yerr=rows["std_test_score"],
                marker="o", capsize=3, label=f"max_cells = {max_cells}")
ax.set_xscale("log")
ax.set_xlabel("ε of one fit (δ = 1e-9)")
ax.set_ylabel("average 2-way TVD (held-out fold)")
ax.set_title("AIM on 8 Adult attributes, 2-fold grid search")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# What the search spent
# ---------------------
# Each fit is ρ-zCDP with ρ = ``cdp_rho(ε, δ)``, and zCDP composes by adding
# ρ. Counting every fit, as :doc:`/privacy` does: each candidate once per
# split, and the winner once more. (With k folds a record is in k − 1 of a
# candidate's k training sets, here 1 of 2, so a per-record count is lower;
# this total is the simple, conservative one. Neither covers the choice of
# the winner, made from noiseless scores on real records.)
n_splits = search.n_splits_
rho_total = sum(n_splits * cdp_rho(float(e), delta) for e in results["param_epsilon"])
rho_total += cdp_rho(search.best_params_["epsilon"], delta)  # the refit
refit = search.best_estimator_.privacy_ledger_
print(f"the refit alone: ({refit.epsilon(delta):.3g}, {delta:g})-DP")
print(f"the whole search: ρ = {rho_total:.4g}, i.e. ({cdp_epsilon(rho_total, delta):.3g}, {delta:g})-DP, "
      f"over {n_splits * len(results) + 1} fits")
