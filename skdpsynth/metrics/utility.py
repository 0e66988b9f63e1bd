"""Machine-learning utility of synthetic data: train on synthetic, test on real (TSTR).

Evaluation tools: they read the real data in the clear and are not differentially private.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, get_scorer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

__all__ = ["MisclassificationErrors", "misclassification_variance", "tstr_score"]


def tstr_score(real_train, synthetic, real_test, target, estimator=None, scoring="accuracy") -> float:
    """Train-on-Synthetic-Test-on-Real score.

    Fits a clone of ``estimator`` on ``synthetic`` (features: every column but
    ``target``) and scores it on ``real_test`` with
    :func:`sklearn.metrics.get_scorer` ``(scoring)``.

    Columns follow ``real_train``; ``synthetic`` and ``real_test`` must have
    them all (extra columns are ignored).  A column that is non-numeric
    (pandas categorical, string or object) in any of the three tables is
    replaced by integer codes over the union of its categories, so one value
    gets the same code in every table.

    Parameters
    ----------
    real_train : pandas.DataFrame
        Real training data.  Only fixes the columns and the category codes
        here; :func:`misclassification_variance` trains its baseline on it.
    synthetic : pandas.DataFrame
        Synthetic data to train on.
    real_test : pandas.DataFrame
        Held-out real data to score on.
    target : str
        Name of the label column.
    estimator : sklearn classifier, optional
        Defaults to ``make_pipeline(OneHotEncoder(handle_unknown="ignore"),
        LogisticRegression(max_iter=1000))``: it treats every column as
        nominal, the only reading valid for all integer-coded attributes,
        ignores categories the synthetic data never produced, and is
        deterministic (no random state) and fast enough for grid searches.
    scoring : str or callable, default "accuracy"
        Any value accepted by :func:`sklearn.metrics.get_scorer`.

    Returns
    -------
    float

    Notes
    -----
    If the synthetic target has a single class, nothing can be learnt but
    "always predict that class"; the score of exactly that constant predictor
    is returned (a classifier knowing all classes of ``real_test`` and
    synthetic, with probability 1 on that class), rather than an error.

    Examples
    --------
    >>> import pandas as pd
    >>> real = pd.DataFrame({"x": [0, 0, 1, 1] * 5, "y": [0, 0, 1, 1] * 5})
    >>> synth = pd.DataFrame({"x": [0, 1, 1, 0], "y": [0, 1, 1, 0]})
    >>> tstr_score(real, synth, real, target="y")
    1.0
    >>> tstr_score(real, synth.assign(y=1), real, target="y")  # one-class synthetic: constant prediction
    0.5
    """
    (_, _), (X_syn, y_syn), (X_test, y_test) = _prepare(real_train, synthetic, real_test, target)
    model = _fit(estimator, X_syn, y_syn, y_test)
    return float(get_scorer(scoring)(model, X_test, y_test))


@dataclass(frozen=True)
class MisclassificationErrors:
    """Misclassification rates on real test data of models trained on real and on synthetic data.

    Examples
    --------
    >>> from skdpsynth.metrics.utility import MisclassificationErrors
    >>> errors = MisclassificationErrors(real=0.125, synthetic=0.25)
    >>> errors
    MisclassificationErrors(real=0.125, synthetic=0.25)
    >>> errors.variance
    0.125
    """

    real: float
    synthetic: float

    @property
    def variance(self) -> float:
        """``|synthetic - real|``, the misclassification variance."""
        return abs(self.synthetic - self.real)


def misclassification_variance(
    real_train, synthetic, real_test, target, estimator=None, return_errors: bool = False
) -> float | MisclassificationErrors:
    """Absolute gap between the test errors of models trained on synthetic and on real data.

    ``|err_synthetic - err_real|``, where ``err_X`` is the misclassification
    rate on ``real_test`` of ``estimator`` fitted on ``X`` (the utility metric
    of the RandDPGen paper).  0 means the synthetic data are as useful as the
    real data for this task.

    Parameters
    ----------
    real_train, synthetic, real_test, target, estimator
        As in :func:`tstr_score` (same default estimator, column handling and
        one-class rule).
    return_errors : bool, default False
        Return a :class:`MisclassificationErrors` holding both errors (its
        ``variance`` property is the metric) instead of the float.

    Returns
    -------
    float or MisclassificationErrors

    Examples
    --------
    >>> import pandas as pd
    >>> real = pd.DataFrame({"x": [0, 0, 1, 1] * 5, "y": [0, 0, 1, 1] * 5})
    >>> misclassification_variance(real, real.assign(y=0), real, target="y", return_errors=True)
    MisclassificationErrors(real=0.0, synthetic=0.5)
    >>> misclassification_variance(real, real.assign(y=0), real, target="y")
    0.5
    """
    (X_real, y_real), (X_syn, y_syn), (X_test, y_test) = _prepare(real_train, synthetic, real_test, target)
    err = {
        name: float(1.0 - accuracy_score(y_test, _fit(estimator, X, y, y_test).predict(X_test)))
        for name, X, y in (("real", X_real, y_real), ("synthetic", X_syn, y_syn))
    }
    errors = MisclassificationErrors(**err)
    return errors if return_errors else errors.variance


def _default_estimator():
    return make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=1000))


def _fit(estimator, X, y, y_test):
    """A fitted clone of ``estimator``, or the constant predictor when ``y`` has one class."""
    if np.unique(y).size == 1:
        # Fit on every known label so probability-based scorers see a proper classifier.
        labels = np.union1d(y, y_test)
        return DummyClassifier(strategy="constant", constant=y[0]).fit(X.iloc[np.zeros(labels.size, int)], labels)
    return clone(_default_estimator() if estimator is None else estimator).fit(X, y)


def _prepare(real_train, synthetic, real_test, target):
    """``(X, y)`` of each table: aligned columns, consistent integer codes for non-numeric ones."""
    frames = [pd.DataFrame(f) for f in (real_train, synthetic, real_test)]
    cols = list(frames[0].columns)
    if target not in cols:
        raise ValueError(f"target {target!r} is not a column of real_train {cols}.")
    for name, f in zip(("real_train", "synthetic", "real_test"), frames):
        missing = [c for c in cols if c not in f.columns]
        if missing:
            raise ValueError(f"{name} lacks the columns {missing} of real_train.")
        if len(f) == 0:
            raise ValueError(f"{name} has no rows.")
    data = [{c: f[c] for c in cols} for f in frames]
    for c in cols:
        parts = [d[c] for d in data]
        if all(pd.api.types.is_numeric_dtype(p) for p in parts):
            continue
        # Codes over the union of categories (real_train's first) so a value means the same everywhere.
        cats = [
            p.cat.categories if isinstance(p.dtype, pd.CategoricalDtype) else pd.Index(p.dropna().unique())
            for p in parts
        ]
        union = cats[0].append(cats[1:]).unique()
        for d, p in zip(data, parts):
            d[c] = pd.Series(pd.Categorical(p, categories=union).codes, index=p.index)
    out = []
    for d in data:
        df = pd.DataFrame(d)
        out.append((df.drop(columns=target), df[target].to_numpy()))
    return out
