"""scikit-learn scorers for synthesizers, for model selection with ``GridSearchCV`` and friends.

A synthesizer is an estimator with ``fit(X, y=None)`` and
``sample(n_samples=None, random_state=None) -> DataFrame``.  A scorer here is a
callable ``scorer(synthesizer, X, y=None) -> float`` (greater is better) that
draws a synthetic sample from the fitted synthesizer and compares it with the
held-out table ``X``.  A ``y`` (when the search is fitted with one) is
appended to ``X`` as its last column, as ``fit(X, y)`` does (unless ``X``
already has a column of ``y``'s name: ``X`` is then taken as the full table);
without it ``X`` must be the full table, target column included.

A synthesizer that also has ``transform(X, y=None)`` — a
:class:`~skdpsynth.pipeline.SynthesisPipeline` — is scored by
:func:`marginal_scorer` in the space its preprocessing steps define: the real
``X`` goes through the fitted steps (``pipe.transform``) and is compared with
the synthesizer's records before their inverse transform
(``sample(..., inverse_transform=False)``).  Raw continuous
values would make every marginal differ (two halves of the real data have a
1-way TVD near 1 on a column like fnlwgt), so a search would select on noise.

Scorers are :func:`functools.partial` objects: picklable (parallel search) and
with a readable repr.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np
import pandas as pd

from ..domain import Domain
from ..utils import append_target
from .fidelity import _check_ways, marginal_tvd
from .utility import tstr_score

__all__ = ["marginal_scorer", "tstr_scorer"]


def marginal_scorer(
    ways: int | Sequence[int] = 2,
    domain: Domain | Mapping[str, int] | None = None,
    n_samples: int | None = None,
    random_state=0,
):
    """Scorer returning the negative average marginal TVD of a synthesizer's sample.

    ``scorer(synthesizer, X)`` draws ``synthesizer.sample(n_samples or len(X),
    random_state=random_state)`` and returns ``-marginal_tvd(X, sample, ways,
    domain)``; for a sequence of ``ways`` the per-way averages are averaged.
    Negated like sklearn's ``neg_*`` scorers, so greater is better and 0 is a
    perfect match.

    Parameters
    ----------
    ways : int or sequence of int, default 2
        Marginal orders compared (see :func:`~skdpsynth.metrics.marginal_tvd`).
    domain : Domain or dict {column: size}, optional
        Passed to :func:`~skdpsynth.metrics.marginal_tvd`.
    n_samples : int, optional
        Size of the synthetic sample; defaults to the number of rows of ``X``.
    random_state : int, Generator or None, default 0
        Seed of every sample.  Fixed by default so that all candidates of a
        search are compared on the same random stream, and scores are
        reproducible.

    Returns
    -------
    callable ``scorer(synthesizer, X, y=None) -> float``

    Examples
    --------
    >>> import pandas as pd
    >>> class Copy:  # a stand-in synthesizer that returns its training data
    ...     def fit(self, X, y=None):
    ...         self.X_ = X
    ...         return self
    ...     def sample(self, n_samples=None, random_state=None):
    ...         return self.X_
    >>> X = pd.DataFrame({"a": [0, 1, 1], "b": [1, 0, 1]})
    >>> marginal_scorer(ways=(1, 2))(Copy().fit(X), X)
    0.0
    """
    _check_ways(ways)  # fail now: inside a search a bad scorer only warns and records NaN scores
    return partial(_neg_marginal_tvd, ways=ways, domain=domain, n_samples=n_samples, random_state=random_state)


def tstr_scorer(target, estimator=None, scoring="accuracy", n_samples: int | None = None, random_state=0):
    """Scorer returning the Train-on-Synthetic-Test-on-Real score of a synthesizer's sample.

    ``scorer(synthesizer, X)`` draws ``synthesizer.sample(n_samples or len(X),
    random_state=random_state)``, trains ``estimator`` on it and scores it on
    ``X`` (which holds the ``target`` column) with
    :func:`~skdpsynth.metrics.tstr_score`.

    Parameters
    ----------
    target : str
        Label column.
    estimator : sklearn classifier, optional
        See :func:`~skdpsynth.metrics.tstr_score` for the default.
    scoring : str or callable, default "accuracy"
        Passed to :func:`sklearn.metrics.get_scorer`; should be greater-is-better.
    n_samples : int, optional
        Size of the synthetic sample; defaults to the number of rows of ``X``.
    random_state : int, Generator or None, default 0
        Seed of every sample (fixed so candidates are compared on one stream).

    Returns
    -------
    callable ``scorer(synthesizer, X, y=None) -> float``

    Examples
    --------
    >>> import pandas as pd
    >>> class Copy:  # a stand-in synthesizer that returns its training data
    ...     def fit(self, X, y=None):
    ...         self.X_ = X
    ...         return self
    ...     def sample(self, n_samples=None, random_state=None):
    ...         return self.X_
    >>> X = pd.DataFrame({"x": [0, 0, 1, 1] * 5, "y": [0, 0, 1, 1] * 5})
    >>> tstr_scorer(target="y")(Copy().fit(X), X)
    1.0
    """
    return partial(
        _tstr, target=target, estimator=estimator, scoring=scoring, n_samples=n_samples, random_state=random_state
    )


def _with_target(X, y):
    """``X`` with ``y`` as its last column, named as ``fit(X, y)`` names it (``y.name``, else ``"target"``)."""
    if y is None or (isinstance(X, pd.DataFrame) and getattr(y, "name", None) in X.columns):
        return X  # no target, or X is already the full table
    return append_target(X, y)


def _sample(synthesizer, X, n_samples, random_state, **kwargs):
    synthetic = synthesizer.sample(len(X) if n_samples is None else n_samples, random_state=random_state, **kwargs)
    # A search on an array passes array folds: compare like with like.
    return synthetic if isinstance(X, pd.DataFrame) else np.asarray(synthetic)


def _neg_marginal_tvd(synthesizer, X, y=None, *, ways, domain, n_samples, random_state) -> float:
    if callable(getattr(synthesizer, "transform", None)):
        # A synthesizer that transforms its input (SynthesisPipeline: preprocessing, then a synthesizer) is
        # compared where it models the data, bins and categories rather than raw values: its transform of the
        # real table against its records before the inverse transform.
        real = synthesizer.transform(X, y)
        synthetic = _sample(synthesizer, real, n_samples, random_state, inverse_transform=False)
    else:
        real = _with_target(X, y)
        synthetic = _sample(synthesizer, real, n_samples, random_state)
    tvd = marginal_tvd(real, synthetic, ways=ways, domain=domain)
    return 0.0 - float(np.mean(list(tvd.values())) if isinstance(tvd, dict) else tvd)  # not -x: avoids -0.0


def _tstr(synthesizer, X, y=None, *, target, estimator, scoring, n_samples, random_state) -> float:
    X = _with_target(X, y)
    return tstr_score(X, _sample(synthesizer, X, n_samples, random_state), X, target, estimator, scoring)
