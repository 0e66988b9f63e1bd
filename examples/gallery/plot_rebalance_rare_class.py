"""
Rebalance a rare class: train on synthetic records drawn class by class
=======================================================================

A classifier trained on synthetic data learns the class balance of the
synthetic data, and with a rare class it may learn to predict the majority
class only. The synthesizer's model is a probability distribution, so it can
draw records of one class from ``p(features | class)`` — conditional sampling,
post-processing of the fitted model (no data, no budget).
:class:`~skdpsynth.TrainOnSynthetic`'s ``class_balance`` uses it to draw the
training set with the class proportions you choose: ``"balanced"`` (as many
records of every class) or a dict ``{label: share}``.

Here: Adult's ``income>50K`` made rarer (all 37,155 records with income
≤ 50K and 3,000 of the 11,687 above it, drawn at random: 7.5% positives),
:class:`~skdpsynth.MSTSynthesizer` at ε = 1 (δ = 1e-9), a one-hot logistic
regression, and its scores on held-out *real* records (TSTR: train on
synthetic, test on real) with the natural balance, with a 25% share of
positives and balanced, over three seeds. Accuracy rewards predicting the
majority class; balanced accuracy, the minority class's recall and its F1
score do not.

The seeds make the example reproducible, and therefore also the privacy
noise: a real release must not fix the synthesizer's seed.
"""

# %%
# A rare class
# ------------
# The subsample is made once, before the split, so that training and test
# records have the same 7.5% of positives.
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, recall_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from skdpsynth import MSTSynthesizer, TrainOnSynthetic
from skdpsynth.datasets import load_adult
from skdpsynth.privacy import ReproducibleNoiseWarning

adult = load_adult(discretized=True)
data, domain, target = adult.frame, adult.domain, adult.target_name
rng = np.random.default_rng(0)
positives = np.flatnonzero(data[target] == 1)
keep = np.union1d(np.flatnonzero(data[target] == 0), rng.choice(positives, 3000, replace=False))
data = data.iloc[keep]
X, y = data.drop(columns=target), data[target]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
print(f"{len(X_train):,} training and {len(X_test):,} test records, {y.mean():.1%} with income > 50K")

classifier = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=1000))


def scores(predicted) -> dict:
    """TSTR on the real test records; class 1 (income > 50K) is the minority."""
    return {"accuracy": accuracy_score(y_test, predicted),
            "balanced accuracy": balanced_accuracy_score(y_test, predicted),
            "minority recall": recall_score(y_test, predicted),
            "minority F1": f1_score(y_test, predicted)}


# %%
# Reference: train on the real records
# ------------------------------------
# Not private, and trained with the real 7.5% of positives.
real = scores(clone(classifier).fit(X_train, y_train).predict(X_test))
print("train on real:", {k: round(v, 4) for k, v in real.items()})

# %%
# Train on synthetic, three class balances, three seeds
# -----------------------------------------------------
# Each fit spends ε = 1 on the training records; the settings and seeds are
# alternatives for comparison, not one release (all of them on the same
# people would cost the sum, see :doc:`/privacy`). ``class_balance=None`` is
# the synthesizer's own draw; the other two draw each class with
# ``synthesizer_.sample(m, conditions={target: label})``.
balances = {"natural (None)": None, "{1: 0.25}": {1: 0.25}, "balanced": "balanced"}
rows = []
for seed in range(3):
    for name, balance in balances.items():
        synthesizer = MSTSynthesizer(epsilon=1.0, delta=1e-9, domain=domain.to_dict(), random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # the fixed seed: for this example only
            model = TrainOnSynthetic(synthesizer, classifier, class_balance=balance, random_state=seed)
            model.fit(X_train, y_train)
        share = float((model.synthetic_data_[target] == 1).mean())
        rows.append({"class_balance": name, "seed": seed, "synthetic positives": share,
                     **scores(model.predict(X_test))})
results = pd.DataFrame(rows)

# %%
# TSTR side by side
# -----------------
# Every seed, then the mean over the three (min–max in the figure).
metrics = ["accuracy", "balanced accuracy", "minority recall", "minority F1"]
print(results.round(4).to_string(index=False))
table = results.groupby("class_balance", sort=False)[["synthetic positives", *metrics]].mean()
table.loc["train on real (not private)"] = {"synthetic positives": float(y_train.mean()), **real}
print(table.round(4).to_string())

# %%
# The same in a figure
# --------------------
fig, ax = plt.subplots(figsize=(7, 3.5))
width = 0.8 / len(balances)
for i, name in enumerate(balances):
    group = results[results["class_balance"] == name][metrics]
    mean, low, high = group.mean(), group.min(), group.max()
    ax.bar(np.arange(len(metrics)) + i * width, mean, width, label=f"class_balance = {name}",
           yerr=[mean - low, high - mean], capsize=3)
ax.scatter(np.arange(len(metrics)) + width, [real[m] for m in metrics], color="k", marker="_", s=400, zorder=3,
           label="train on real (not private)")
ax.set_xticks(np.arange(len(metrics)) + width, metrics)
ax.set_ylabel("score on real test records")
ax.set_ylim(0, 1)
ax.set_title("Adult, income > 50K at 7.5%: MST (ε = 1) + logistic regression")
ax.legend(loc="lower left", fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Reading the numbers
# -------------------
# With the natural balance the classifier trained on synthetic records
# predicts (almost) only the majority class: its accuracy is that of always
# saying "≤ 50K" and it finds (almost) none of the positives. Drawing the
# positives at a larger share trades accuracy for recall: balanced, it finds
# most positives and its balanced accuracy is well above the majority
# class's 0.5 (and above the real-data model's, which is trained with 7.5% of
# positives and thresholds at 0.5), at the price of many false positives
# (accuracy and F1 fall). Which share is right depends on the costs of the two
# errors; the rebalancing itself is free.
