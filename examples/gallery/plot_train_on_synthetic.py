"""
Train on synthetic, test on real: a classifier for Adult's income
=================================================================

:class:`~skdpsynth.TrainOnSynthetic` fits a synthesizer on the training
records, draws a synthetic table and trains an ordinary scikit-learn
classifier on the synthetic records only. The real records reach the
classifier only through the synthesizer, so the fitted classifier and its
predictions carry the synthesizer's (ε, δ)-DP guarantee (post-processing);
the public domain of every column, the target included, is metadata.

Here: :class:`~skdpsynth.MSTSynthesizer` at several ε (δ = 1e-9) on the
integer-coded Adult benchmark, a
:class:`~sklearn.ensemble.HistGradientBoostingClassifier` predicting
``income>50K``, and its accuracy on held-out *real* records, next to the
same classifier trained on the real training records (not private: a
reference only) and the majority class.

The seeds (``random_state=0``) make the example reproducible, and therefore
also the privacy noise: a real release must not fix the synthesizer's seed.
"""

# %%
# Split the real data
# -------------------
# The test records are never seen by the synthesizer; they only measure
# accuracy. Scoring on real records is an evaluation step, not a DP release.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

from skdpsynth import MSTSynthesizer, TrainOnSynthetic
from skdpsynth.datasets import load_adult
from skdpsynth.privacy import ReproducibleNoiseWarning

adult = load_adult(discretized=True)
data, domain = adult.frame, adult.domain
target = "income>50K"
X, y = data.drop(columns=target), data[target]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
print(f"{len(X_train):,} training and {len(X_test):,} test records, {X.shape[1]} features")

# The columns are category codes; the gradient-boosted trees split on them
# as ordinal values, which suits Adult's binned numeric columns.
classifier = HistGradientBoostingClassifier(random_state=0)

# %%
# References: train on real, and the majority class
# -------------------------------------------------
real_accuracy = clone(classifier).fit(X_train, y_train).score(X_test, y_test)
majority = max(np.mean(y_test == c) for c in np.unique(y_train))
print(f"train on real: accuracy {real_accuracy:.4f} (not private)")
print(f"majority class: accuracy {majority:.4f}")

# %%
# Train on synthetic at several ε
# -------------------------------
# Each fit spends its own budget on the training records; the ε values are
# alternatives, not a pipeline (running all of them on the same people
# would cost their sum, see :doc:`/privacy`).
epsilons = [0.1, 1.0, 10.0]
accuracy = []
for epsilon in epsilons:
    synthesizer = MSTSynthesizer(epsilon=epsilon, delta=1e-9, domain=domain.to_dict(), random_state=0)
    with warnings.catch_warnings():
        # A fixed seed makes the noise reproducible; the synthesizer warns about it.
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)
        model = TrainOnSynthetic(synthesizer, classifier, random_state=0).fit(X_train, y_train)
    accuracy.append(model.score(X_test, y_test))
    spent = model.synthesizer_.privacy_ledger_.epsilon(1e-9)
    print(f"ε = {epsilon:>4}: accuracy {accuracy[-1]:.4f} on real test records, "
          f"{len(model.synthetic_data_):,} synthetic training records, ({spent:.3g}, 1e-9)-DP")

# %%
# Accuracy vs ε
# -------------
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(epsilons, accuracy, "o-", label="train on synthetic (MST)")
ax.axhline(real_accuracy, color="k", linestyle="--", label="train on real (not private)")
ax.axhline(majority, color="grey", linestyle=":", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("ε (δ = 1e-9)")
ax.set_ylabel("accuracy on real test records")
ax.set_title("Adult, income>50K: HistGradientBoostingClassifier")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
