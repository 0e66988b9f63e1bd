"""Meta-estimators that put a synthesizer in front of ordinary scikit-learn models.

* :class:`TrainOnSynthetic` — fit a synthesizer on ``(X, y)``, train a
  classifier or regressor on its synthetic records only, predict on real data.
* :class:`SynthesisPipeline` — DP preprocessing steps followed by a
  synthesizer; ``sample`` returns records in the original schema.
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .domain import Domain
from .params import Dict, HasMethods, Interval, Options, validate_params
from .privacy import warn_privacy_leak
from .privacy.metadata import is_public
from .utils import append_target, as_value_list, check_random_state, redraw_rejected

try:  # public since scikit-learn 1.6
    from sklearn.utils import TransformerTags, get_tags
except ImportError:  # pragma: no cover - older scikit-learn reads ``_estimator_type``
    TransformerTags = get_tags = None

__all__ = ["SynthesisPipeline", "TrainOnSynthetic", "make_synthesis_pipeline"]


def _is_steps(steps) -> bool:
    """Whether ``steps`` is a list or tuple of (name, estimator) pairs."""
    return isinstance(steps, (list, tuple)) and all(
        isinstance(step, (list, tuple)) and len(step) == 2 and hasattr(step[1], "get_params") for step in steps)


def _estimator_has(attr: str):
    """``available_if`` check: the fitted estimator (or, before fit, the given one) has ``attr``."""

    def check(self) -> bool:
        getattr(self.estimator_ if hasattr(self, "estimator_") else self.estimator, attr)
        return True

    return check


class TrainOnSynthetic(MetaEstimatorMixin, BaseEstimator):
    """Train an estimator on differentially private synthetic data only.

    ``fit(X, y)`` fits a clone of ``synthesizer`` on the table ``X`` with
    ``y`` as its last column (through the synthesizer's own ``fit(X, y)``),
    draws ``n_samples`` synthetic records, splits the synthetic target off
    and fits a clone of ``estimator`` on the synthetic records alone.
    ``predict``, ``predict_proba``, ``predict_log_proba``,
    ``decision_function`` and ``score`` are the fitted estimator's, applied to
    real data; each exists only when ``estimator`` has it.  The meta-estimator
    is a classifier or a regressor as ``estimator`` is (scikit-learn tags are
    delegated), so ``cross_val_score`` stratifies for classifiers and uses the
    estimator's default score.

    The real records reach the fitted model only through the synthesizer, so
    the fitted estimator and its predictions are differentially private with
    the synthesizer's guarantee (post-processing), provided its domain is
    public metadata.

    Parameters
    ----------
    synthesizer : BaseSynthesizer
        An unfitted synthesizer, e.g. :class:`~skdpsynth.MSTSynthesizer`.  It is
        cloned; tune it with ``synthesizer__<param>`` (e.g. in a grid search).
    estimator : sklearn estimator
        A classifier or regressor, cloned and fitted on the synthetic records.
        Tune it with ``estimator__<param>``.
    n_samples : int, optional
        Number of synthetic records to train on.  Default: the synthesizer's
        noisy (DP) record count ``n_records_``, rounded.
    class_balance : None, "balanced" or dict, default=None
        The class proportions of the synthetic training set (classifiers;
        the target's public domain lists the classes).  ``None``: the
        synthesizer's own draw, ``synthesizer_.sample(n_samples)``, whose
        proportions are the model's.  ``"balanced"``: as many records of
        every class of the target's public domain, each class drawn by
        ``synthesizer_.sample(m, conditions={target: label})``; when
        ``n_samples`` is not a multiple of the number of classes, the
        remaining records go one each to the first classes of the domain.
        A dict ``{label: share}``: the listed classes get these shares of
        ``n_samples`` (real label values as keys, shares in [0, 1] summing to
        at most 1), and the classes not listed share the rest in the model's
        own proportions (one draw conditioned on all of them); a dict naming
        every class must sum to 1.  Counts are rounded by largest remainder,
        so they sum to ``n_samples``, and the records are shuffled.  Needs a
        synthesizer that samples conditionally (MST, AIM, PPSyn, RandDPGen,
        VertiMRF, or a :class:`SynthesisPipeline` ending in one):
        ``ViewSynthesizer``, an unknown label or bad shares are refused
        before the fit spends anything, and a class the model gives
        probability 0 is named.  Post-processing: the budget is the same.
        See ``doc/conditional_sampling.md``.
    random_state : None, int or numpy.random.Generator
        Seed of the synthetic draw (``synthesizer_.sample``).  ``None``
        continues the synthesizer's own stream, seeded by its ``random_state``.
        The noise of the synthesizer's fit is set by ``synthesizer.random_state``.

    Attributes
    ----------
    synthesizer_ : BaseSynthesizer
        The fitted clone of ``synthesizer``.
    estimator_ : estimator
        The clone of ``estimator`` fitted on the synthetic records.
    synthetic_data_ : pandas.DataFrame
        The synthetic records ``estimator_`` was trained on, as
        ``synthesizer_.sample`` returned them (columns named as in
        ``synthesizer_.feature_names_in_``), the target last and in ``y``'s
        dtype (with ``class_balance``, the classes' draws concatenated and
        shuffled).  Kept for inspection
        (it is DP output, safe to keep or release; it takes ``n_samples x
        (n_features + 1)`` values of memory: ``del model.synthetic_data_`` if
        it is not needed, prediction does not use it).
    classes_ : ndarray
        The class labels ``estimator_`` knows (classifiers only): values of the
        real label type, but only those the synthetic target produced.
    privacy_ledger_ : PrivacyLedger
        The synthesizer's ledger: what this fit spent.
    n_features_in_ : int
        Number of columns of ``X`` (the target not counted).
    feature_names_in_ : ndarray of str
        Column names of ``X``, when ``X`` is a DataFrame with string column names.

    See Also
    --------
    skdpsynth.metrics.tstr_score : train-on-synthetic-test-on-real for a given synthetic table.
    skdpsynth.metrics.tstr_scorer : a scorer that tunes a synthesizer by TSTR.

    Notes
    -----
    **The target's domain must be public.**  ``y`` is synthesized with ``X``,
    so its set of labels is part of the domain, and reading it from ``y``
    would not be differentially private (and could leave a label out).  Give
    it either in the synthesizer's ``domain=`` under ``y``'s name
    (``y.name``, or ``"target"`` when ``y`` has no name), as a number of
    integer codes or a list of labels, or pass ``y`` encoded by a DP step of
    :mod:`skdpsynth.preprocessing` (its categories are then the domain).  A
    ``y.astype("category")`` takes its categories from the data: the fit
    then issues a ``PrivacyLeakWarning`` and its ledger states no DP
    guarantee.  Without any of these, :meth:`fit` raises a ``ValueError``
    before spending anything.  The synthetic target is
    converted back to ``y``'s type and dtype, so predictions are real label
    values and compare directly with real labels.

    **Every fit spends the synthesizer's privacy budget again**, on the data it
    is given.  Cross-validation and grid searches refit, so they multiply the
    cost: ``cross_val_score(model, X, y, cv=k)`` is ``k`` fits, and
    ``GridSearchCV(model, grid, cv=k)`` is ``k x n_candidates`` fits, plus one
    refit on all of ``X``.  In zCDP the costs add up: with the same budget
    ``rho`` for every candidate a search costs ``(k * n_candidates + 1) * rho``;
    for a grid over ``synthesizer__epsilon`` (one ``delta``)::

        from skdpsynth.privacy import cdp_epsilon, cdp_rho
        per_candidate = [cdp_rho(p["synthesizer__epsilon"], delta) for p in search.cv_results_["params"]]
        total_rho = search.n_splits_ * sum(per_candidate) + search.best_estimator_.privacy_ledger_.total_rho()
        cdp_epsilon(total_rho, delta)  # the fits of the whole search, as (epsilon, delta)-DP

    The search itself is outside this accounting: the folds are chosen from
    the data (``StratifiedKFold`` reads the labels) and the validation scores,
    hence ``best_params_``, are computed on real held-out records in the
    clear.  Treat cross-validation and grid search on private data as
    non-private evaluation; select hyper-parameters on public or separate data
    when the selection or the refitted model is to be released.

    The synthetic target may lack a class of the real data (rare classes, low
    epsilon): ``classes_`` and ``predict_proba``'s columns are then those the
    estimator saw, and an estimator that needs two classes fails to fit when
    the synthetic target has only one.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skdpsynth import MSTSynthesizer
    >>> from skdpsynth.datasets import load_adult
    >>> from skdpsynth.pipeline import TrainOnSynthetic
    >>> adult = load_adult(discretized=True)
    >>> data = adult.frame.sample(4000, random_state=0)
    >>> features, target = ["education-num", "marital-status", "sex"], adult.target_name
    >>> X, y = data[features].iloc[:3000], data[target].iloc[:3000]
    >>> X_test, y_test = data[features].iloc[3000:], data[target].iloc[3000:]
    >>> domain = adult.domain.project([*features, target]).to_dict()  # public, target included
    >>> model = TrainOnSynthetic(
    ...     MSTSynthesizer(epsilon=1.0, domain=domain, random_state=0),
    ...     LogisticRegression(max_iter=1000),
    ... ).fit(X, y)
    >>> model.classes_.tolist()  # real label values
    [0, 1]
    >>> accuracy = model.score(X_test, y_test)  # on real held-out records
    >>> bool(accuracy > (y_test == 0).mean())  # better than always predicting the majority class
    True
    >>> round(model.privacy_ledger_.total_rho() / model.synthesizer_.rho_, 6)  # one budget spent
    1.0

    ``class_balance`` draws the training records class by class (conditional
    sampling: post-processing, no extra budget):

    >>> balanced = TrainOnSynthetic(
    ...     MSTSynthesizer(epsilon=1.0, domain=domain, random_state=0),
    ...     LogisticRegression(max_iter=1000), n_samples=1000, class_balance="balanced", random_state=0,
    ... ).fit(X, y)
    >>> balanced.synthetic_data_[target].value_counts().sort_index().tolist()
    [500, 500]

    Each fit spends the budget again, so a 3-fold cross-validation costs three
    budgets; total it from the fitted copies:

    >>> from sklearn.model_selection import cross_validate
    >>> from skdpsynth.privacy import cdp_epsilon
    >>> cv = cross_validate(model, X, y, cv=3, return_estimator=True)
    >>> total_rho = sum(m.privacy_ledger_.total_rho() for m in cv["estimator"])
    >>> round(total_rho / model.synthesizer_.rho_, 6)
    3.0
    >>> round(cdp_epsilon(total_rho, 1e-9), 2)  # the three fits together, as (epsilon, 1e-9)-DP
    1.78
    """

    _parameter_constraints = {
        "synthesizer": [HasMethods("fit", "sample")],
        "estimator": [HasMethods("fit")],
        "n_samples": [None, Interval(Integral, 1, None)],
        "class_balance": [None, Options("balanced"), Dict("{label: share}")],
        "random_state": ["random_state"],
    }

    def __init__(self, synthesizer, estimator, *, n_samples=None, class_balance=None, random_state=None):
        self.synthesizer = synthesizer
        self.estimator = estimator
        self.n_samples = n_samples
        self.class_balance = class_balance
        self.random_state = random_state

    # -- estimator type ------------------------------------------------------
    @property
    def _estimator_type(self):
        """The estimator's type ("classifier", "regressor", ...), for scikit-learn < 1.6."""
        if get_tags is not None:
            return get_tags(self.estimator).estimator_type
        return getattr(self.estimator, "_estimator_type", None)  # pragma: no cover

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        # X goes to the synthesizer: discrete columns (codes, categories, labels), dense only.
        tags.input_tags.categorical = True
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        try:
            inner = get_tags(self.estimator)
        except (AttributeError, TypeError, ValueError):  # not an estimator: fit will fail clearly
            return tags
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = deepcopy(inner.classifier_tags)
        tags.regressor_tags = deepcopy(inner.regressor_tags)
        tags.target_tags.multi_output = False  # the target is one synthesized column
        return tags

    # -- fit -----------------------------------------------------------------
    def fit(self, X, y):
        """Fit the synthesizer on ``(X, y)`` and the estimator on its synthetic records.

        Spends the synthesizer's privacy budget once (again at every call).

        Parameters
        ----------
        X : pandas.DataFrame or 2-D array of shape (n_records, n_features)
            Discrete features, as the synthesizer accepts them.
        y : array-like of shape (n_records,)
            The target.  Its domain must be public: declared in the
            synthesizer's ``domain=`` under ``y``'s name (``"target"`` if
            unnamed), or given by the ``CategoricalDtype`` of a DP step.

        Returns
        -------
        self
        """
        validate_params(self)
        _refuse_privacy_unit(self.synthesizer, "TrainOnSynthetic")
        y = self._check_target(y)
        n_samples = self.n_samples
        synthesizer = self._target_ready_synthesizer(y)
        if self.class_balance is not None:  # before fit: a refusal must not cost the budget
            self._check_class_balance(synthesizer, y)

        synthesizer.fit(X, y)
        if self.class_balance is None:
            synthetic = synthesizer.sample(n_samples, random_state=self.random_state)
        else:
            synthetic = self._balanced_sample(synthesizer, y)
        target = synthetic.columns[-1]  # the synthesizer appends y as its last column
        X_syn = synthetic.drop(columns=[target])
        y_syn = _like_target(synthetic[target], y)
        synthetic[target] = y_syn.array if isinstance(y_syn, pd.Series) else y_syn
        if isinstance(X, pd.DataFrame):
            X_syn.columns = X.columns
        else:
            X_syn = X_syn.to_numpy()  # the estimator sees what it will be given at predict time

        self.synthesizer_ = synthesizer
        self.estimator_ = clone(self.estimator).fit(X_syn, y_syn)
        self.synthetic_data_ = synthetic
        self.privacy_ledger_ = synthesizer.privacy_ledger_
        self.n_features_in_ = synthesizer.n_features_in_
        if isinstance(X, pd.DataFrame) and all(isinstance(c, str) for c in X.columns):
            self.feature_names_in_ = np.asarray(list(X.columns), dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        if hasattr(self.estimator_, "classes_"):
            self.classes_ = self.estimator_.classes_
        elif hasattr(self, "classes_"):
            del self.classes_
        return self

    # -- class balance --------------------------------------------------------
    def _check_class_balance(self, synthesizer, y) -> None:
        """What can be checked before the fit: conditional sampling, the shares, the labels when public here."""
        last = synthesizer
        if isinstance(synthesizer, SynthesisPipeline) and _is_steps(synthesizer.steps) and synthesizer.steps:
            last = synthesizer.steps[-1][1]
        if not getattr(last, "_conditional_sampling", True) or not _accepts_keyword(last.sample, "conditions"):
            raise ValueError(f"class_balance={self.class_balance!r} draws each class with "
                             f"sample(conditions=...), which {type(last).__name__} cannot do. Use "
                             "class_balance=None, or a synthesizer with a graphical model (MST, AIM, PPSyn, "
                             "RandDPGen, VertiMRF).")
        if isinstance(self.class_balance, Mapping):
            _checked_shares(self.class_balance)
            labels = _declared_labels(synthesizer, y)
            if labels is not None:
                self._class_groups(labels, 0)  # the labels and the shares' sum, as the draw will check them

    def _balanced_sample(self, synthesizer, y) -> pd.DataFrame:
        """``n_samples`` records drawn class by class as ``class_balance`` says, in a random order."""
        target = y.name if isinstance(y, pd.Series) and y.name is not None else "target"  # as fit names it
        n_samples = self.n_samples
        if n_samples is None:
            n_samples = int(round(getattr(synthesizer, "n_records_", None) or 0))
        values = _output_values(synthesizer, target)   # the synthesizer's labels, in domain order
        labels = _as_list(_like_target(pd.Series(values, dtype=object), y))   # the same, as real labels
        groups = self._class_groups(labels, n_samples)
        rng = None if self.random_state is None else check_random_state(self.random_state)
        parts = []
        for positions, count in groups:
            if count == 0:
                continue
            allowed = [values[i] for i in positions]
            shown = labels[positions[0]] if len(positions) == 1 else [labels[i] for i in positions]
            try:
                part = synthesizer.sample(count, random_state=rng,
                                          conditions={target: allowed[0] if len(allowed) == 1 else allowed})
            except NotImplementedError as err:
                raise NotImplementedError(f"class_balance={self.class_balance!r} needs conditional sampling. "
                                          f"{err}") from err
            except ValueError as err:
                raise ValueError(f"class_balance: cannot draw {count} records of class {shown!r} of the target "
                                 f"{target!r}. {err}") from err
            parts.append(part)
        if not parts:  # n_samples = 0: the empty table, with the synthesizer's columns and dtypes
            parts = [synthesizer.sample(0, random_state=rng)]
        synthetic = pd.concat(parts, ignore_index=True)
        # Class by class the records come in blocks; shuffle them, from the same stream as the draws.
        order = (rng if rng is not None else _sampling_stream(synthesizer)).permutation(len(synthetic))
        return synthetic.iloc[order].reset_index(drop=True)

    def _class_groups(self, labels: list, n_samples: int) -> list:
        """``[(label positions, number of records)]``: one group per class, and the unlisted classes together."""
        k = len(labels)
        if self.class_balance == "balanced":
            counts = _split_counts(np.full(k, 1.0 / k), n_samples)
            return [([i], int(c)) for i, c in enumerate(counts)]
        shares = _checked_shares(self.class_balance)
        positions = _label_positions(self.class_balance, labels)
        rest = [i for i in range(k) if i not in positions.values()]
        total = sum(shares.values())
        if not rest and not np.isclose(total, 1.0, rtol=0, atol=1e-9):
            raise ValueError(f"class_balance names every class, so its shares must sum to 1; they sum to "
                             f"{total:g}.")
        weights = [shares[key] for key in positions] + ([max(1.0 - total, 0.0)] if rest else [])
        counts = _split_counts(np.asarray(weights, dtype=float), n_samples)
        groups = [([positions[key]], int(c)) for key, c in zip(positions, counts)]
        if rest:  # the unlisted classes, in the model's own proportions: one draw conditioned on all of them
            groups.append((rest, int(counts[-1])))
        return groups

    @staticmethod
    def _check_target(y):
        if y is None:
            raise ValueError("TrainOnSynthetic requires y to be passed, but the target y is None.")
        if isinstance(y, pd.DataFrame):
            if y.shape[1] != 1:
                raise ValueError(f"y must be one column, got a DataFrame with {y.shape[1]} columns.")
            y = y.iloc[:, 0]
        if isinstance(y, pd.Categorical):
            y = pd.Series(y)
        if isinstance(y, pd.Series):
            return y
        y = np.asarray(y)
        if y.ndim != 1:
            # Not the shape: its length is the private record count.
            raise ValueError(f"y must be 1-D (one target column), got an array with {y.ndim} dimension(s).")
        return y

    def _target_ready_synthesizer(self, y):
        """A clone of the synthesizer that knows the target's public domain, or a clear error."""
        synthesizer = clone(self.synthesizer)
        name = str(getattr(y, "name", None) or "target")  # how BaseSynthesizer.fit names y
        params = synthesizer.get_params(deep=False)
        if "domain" not in params:
            # e.g. a SynthesisPipeline: its preprocessing steps own the target's domain (and warn on leaks).
            return synthesizer
        domain = params.get("domain")
        if isinstance(domain, Mapping) and name in domain:
            return synthesizer
        if isinstance(getattr(y, "dtype", None), pd.CategoricalDtype):
            if is_public(y.dtype):
                # Categories a DP step produced: hand them to the clone's domain so that they
                # are used whatever form y takes inside the synthesizer's fit.
                given = domain.to_dict() if isinstance(domain, Domain) else dict(domain or {})
                synthesizer.set_params(domain={**given, name: list(y.dtype.categories)})
            # Otherwise (e.g. y.astype("category")) the synthesizer's fit takes them from the dtype and
            # reports the leak (PrivacyLeakWarning, recorded in its ledger).
            return synthesizer
        raise ValueError(
            f"The domain of the target {name!r} is unknown: its labels would have to be read from y, which is "
            "not differentially private. Declare it in the synthesizer's domain= under the name "
            f"{name!r} (a number of integer codes or a list of labels, e.g. domain={{..., {name!r}: 2}}), "
            "or pass y encoded by a DP step of skdpsynth.preprocessing (a categorical whose categories are the labels)."
        )

    # -- delegation ----------------------------------------------------------
    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predictions of the estimator trained on synthetic data (real label values)."""
        check_is_fitted(self)
        return self.estimator_.predict(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities, columns in the order of ``classes_``."""
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log of the class probabilities, columns in the order of ``classes_``."""
        check_is_fitted(self)
        return self.estimator_.predict_log_proba(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """The estimator's decision function on ``X``."""
        check_is_fitted(self)
        return self.estimator_.decision_function(X)

    @available_if(_estimator_has("score"))
    def score(self, X, y, sample_weight=None):
        """The estimator's default score on real ``(X, y)`` (accuracy, R², ...)."""
        check_is_fitted(self)
        if sample_weight is None:
            return self.estimator_.score(X, y)
        return self.estimator_.score(X, y, sample_weight=sample_weight)


def _as_list(values) -> list:
    """A Series, Categorical or array as a list of Python scalars."""
    return pd.Series(values).tolist()


def _checked_shares(class_balance: Mapping) -> dict:
    """``{label: share}`` with every share in [0, 1] and their sum at most 1."""
    shares = {}
    for label, share in class_balance.items():
        if isinstance(share, (bool, np.bool_)) or not isinstance(share, (Real, np.number)) \
                or not 0 <= float(share) <= 1:
            raise ValueError(f"class_balance[{label!r}] must be a share in [0, 1] of the synthetic records, got "
                             f"{share!r}.")
        shares[label] = float(share)
    if not shares:
        raise ValueError("class_balance is an empty dict; give {label: share}, 'balanced' or None.")
    if sum(shares.values()) > 1 + 1e-9:
        raise ValueError(f"The shares of class_balance sum to {sum(shares.values()):g}, more than 1.")
    return shares


def _label_positions(class_balance: Mapping, labels: list) -> dict:
    """``{key: position in labels}`` for each key of ``class_balance``; a key that is no label is an error."""
    positions = {}
    for key in class_balance:
        found = [i for i, label in enumerate(labels) if _same(key, label)]
        if not found:
            raise ValueError(f"class_balance names {key!r}, which is not a class of the target's public domain "
                             f"(classes: {labels}).")
        positions[key] = found[0]
    if len(set(positions.values())) < len(positions):
        raise ValueError(f"class_balance names a class twice (keys {list(class_balance)}).")
    return positions


def _declared_labels(synthesizer, y) -> list | None:
    """The target's labels when its public domain is known before the fit (``domain=`` or a DP dtype), else None."""
    name = str(getattr(y, "name", None) or "target")
    params = synthesizer.get_params(deep=False)
    domain = params.get("domain")
    declared = None
    if isinstance(domain, Domain) and name in domain.attrs:
        declared = list(range(domain[name]))
    elif isinstance(domain, Mapping) and name in domain:
        declared = list(range(domain[name])) if isinstance(domain[name], Integral) else list(domain[name])
    elif isinstance(getattr(y, "dtype", None), pd.CategoricalDtype) and is_public(y.dtype):
        declared = list(y.dtype.categories)
    if declared is None:
        return None
    try:
        return _as_list(_like_target(pd.Series(declared, dtype=object), y))
    except (TypeError, ValueError):  # labels y's dtype cannot hold: the draw after the fit says so
        return None


def _split_counts(shares: np.ndarray, n: int) -> np.ndarray:
    """Integer counts summing to ``round(n * shares.sum())``, by largest remainder (ties: the first shares).

    ``n = 10`` over three equal shares gives ``[4, 3, 3]``.
    """
    exact = shares * n
    counts = np.floor(exact + 1e-9).astype(np.int64)
    missing = int(round(exact.sum())) - int(counts.sum())
    if missing > 0:
        order = np.argsort(-(exact - counts), kind="stable")
        counts[order[:missing]] += 1
    return counts


def _sampling_stream(synthesizer) -> np.random.Generator:
    """The fitted synthesizer's own sampling stream (a pipeline's: its synthesizer's), else fresh entropy."""
    if isinstance(synthesizer, SynthesisPipeline):
        synthesizer = synthesizer.steps_[-1][1]
    stream = getattr(synthesizer, "_sample_rng", None)
    return stream if isinstance(stream, np.random.Generator) else check_random_state(None)


def _like_target(values: pd.Series, y):
    """The synthetic target in the form and dtype of the real ``y``."""
    if isinstance(y, pd.Series):
        if isinstance(y.dtype, pd.CategoricalDtype):
            return pd.Series(pd.Categorical(values, dtype=y.dtype), name=y.name)
        return values.astype(y.dtype).rename(y.name)
    return values.to_numpy().astype(y.dtype)


# ---------------------------------------------------------------------------
# SynthesisPipeline
# ---------------------------------------------------------------------------
class SynthesisPipeline(BaseEstimator):
    """DP preprocessing steps followed by a synthesizer, with one privacy ledger.

    ``fit(X)`` fits each transformer on the output of the previous one and the
    synthesizer on the last output; ``sample(n)`` samples from the synthesizer
    and maps the records back with ``inverse_transform`` through the transformers in
    reverse order, so they come out in the original schema (column names,
    order, dtypes).

    The budget is explicit: every step spends its own ``epsilon`` (a transformer
    with public metadata spends nothing), and the pipeline's
    ``privacy_ledger_`` is the union of the steps' ledgers — nothing is
    subtracted or added behind your back.  To spend a total ε = 1 with 0.1 on
    DP bounds and categories, give the preprocessing step ``epsilon=0.1`` and the
    synthesizer ``epsilon=0.9``.  The steps' δ's add up too: with
    ``delta=1e-9`` for each the pipeline is (≈1, 2e-9)-DP.  The ledger knows
    that total (``privacy_ledger_.delta``); ``privacy_ledger_.epsilon()``
    states the composed ε at it, ``privacy_ledger_.guarantee()`` says how it
    was composed (pure-ε steps enter zCDP as ε²/2 when that is tighter than
    adding the ε's), and the repr shows it.  Every fit spends the budget
    again, as for any synthesizer (grid search multiplies the cost).

    Parameters
    ----------
    steps : list of (str, estimator)
        Transformers (``fit``/``transform``/``inverse_transform``, a
        ``privacy_ledger_`` when they spend budget) then a synthesizer
        (``fit``/``sample``/``privacy_ledger_``).  Parameters of steps are
        addressed as ``<name>__<param>`` (e.g. ``synth__epsilon`` in a grid
        search).

    Attributes
    ----------
    steps_ : list of (str, estimator)
        The fitted clones of the steps.
    named_steps_ : dict
    privacy_ledger_ : PrivacyLedger
        The union of the steps' ledgers, each entry tagged with its step name as ``party`` when it had none.
    n_records_ : float
        The synthesizer's noisy record count (default number of sampled records).
    missing_support_ : dict
        ``{column: z}`` for each categorical column whose missing category a
        step left tentative (its DP count of missing values was below the
        threshold; see ``TableDiscretizer.tentative_missing``): ``z``, the
        synthesizer's count of missing values over the noise σ of its own
        1-way measurement of the column (``value_z_scores``), decides it.
        With ``z >= 3`` the category is confirmed and the missing values come
        back; below, :meth:`sample` draws no record in it.  ``None``: the
        synthesizer measured no such marginal (``ViewSynthesizer``, PPSyn,
        the federated synthesizers), and the category stays tentative, read
        back as ``"__other__"`` like unreleased values.  Post-processing of DP
        releases (doc/preprocessing.md, "Missing values").

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdpsynth import MSTSynthesizer
    >>> from skdpsynth.pipeline import SynthesisPipeline
    >>> from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"age": rng.integers(18, 90, 3000), "hours": rng.integers(1, 99, 3000)})
    >>> pipe = SynthesisPipeline([
    ...     ("bins", DPKBinsDiscretizer(n_bins=8, bounds={"age": (17, 90), "hours": (1, 99)})),
    ...     ("synth", MSTSynthesizer(epsilon=1.0, random_state=0)),
    ... ]).fit(X)
    >>> synthetic = pipe.sample(500)
    >>> list(synthetic.columns), synthetic["age"].dtype == X["age"].dtype
    (['age', 'hours'], True)
    >>> bool(synthetic["age"].between(17, 90).all())
    True
    """

    # The steps' structure (names, transformers, a synthesizer last) is checked by _validate_steps.
    _parameter_constraints = {"steps": [list, tuple]}

    def __init__(self, steps):
        self.steps = steps

    # -- parameters (nested, like sklearn.pipeline.Pipeline) -------------------
    def get_params(self, deep=True):
        out = {"steps": self.steps}
        if deep and _is_steps(self.steps):   # anything else is refused by fit (_validate_steps), not here
            for name, est in self.steps:
                out[name] = est
                for key, value in est.get_params(deep=True).items():
                    out[f"{name}__{key}"] = value
        return out

    def set_params(self, **params):
        if "steps" in params:
            self.steps = params.pop("steps")
        if not params:
            return self
        names = [name for name, _ in self.steps]
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in names:
                raise ValueError(f"Invalid parameter {key!r} for {type(self).__name__}: no step named {name!r}.")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:  # replace a whole step
                self.steps = [(n, value if n == name else e) for n, e in self.steps]
        for name, sub_params in nested.items():
            dict(self.steps)[name].set_params(**sub_params)
        return self

    def _validate_steps(self):
        validate_params(self)
        if not self.steps:
            raise ValueError("steps must be a non-empty list of (name, estimator) pairs.")
        names = [name for name, _ in self.steps]
        if len(set(names)) != len(names) or any("__" in n for n in names):
            raise ValueError(f"Step names must be unique and contain no '__': {names}.")
        *transformers, (_, synth) = self.steps
        for name, t in transformers:
            if not all(hasattr(t, a) for a in ("fit", "transform", "inverse_transform")):
                raise TypeError(f"Step {name!r} must be a transformer with fit, transform and inverse_transform.")
        if not (hasattr(synth, "fit") and hasattr(synth, "sample")):
            raise TypeError("The last step must be a synthesizer (fit and sample).")
        _refuse_privacy_unit(synth, "SynthesisPipeline")

    # -- fit / sample ----------------------------------------------------------
    def fit(self, X, y=None):
        """Fit the transformers then the synthesizer; ``y``, if given, is synthesized as a last column."""
        from .privacy import PrivacyLedger

        self._validate_steps()
        if sp.issparse(X):
            raise TypeError("Sparse input is not supported: a synthesis pipeline needs the table of records; pass a "
                            "DataFrame.")
        if not hasattr(X, "shape"):   # a list of rows, or an array-like
            X = np.asarray(X)
        if len(X.shape) != 2:
            raise ValueError(f"X must be a DataFrame or a 2-D array, got an array with {len(X.shape)} dimension(s). "
                             "Reshape your data, e.g. with array.reshape(-1, 1) for a single column.")
        self.n_features_in_ = X.shape[1]  # the columns of X; a target given as y is not a feature
        X = append_target(X, y)  # the target goes through preprocessing like any column
        fitted, ledger, Xt = [], PrivacyLedger(), X
        for name, step in self.steps[:-1]:
            step = clone(step)
            Xt = step.fit(Xt).transform(Xt)
            fitted.append((name, step))
        name, synth = self.steps[-1]
        synth = clone(synth).fit(Xt)
        self.missing_support_, self._unsupported_missing = _decide_tentative_missing(fitted, synth)
        fitted.append((name, synth))
        for name, step in fitted:
            step_ledger = getattr(step, "privacy_ledger_", None)
            if step_ledger is not None:
                ledger.extend(step_ledger, party=name)
            elif not _is_stateless(step):
                warn_privacy_leak(
                    f"Step {name!r} ({type(step).__name__}) was fitted on the private data but is not a DP step "
                    "(it has no privacy_ledger_): what it learned (e.g. KBinsDiscretizer's bin edges) leaves fit() "
                    "without differential privacy, and inverse_transform writes it into the synthetic records. Use "
                    "a DP step of skdpsynth.preprocessing, or a stateless transformer.",
                    ledger=ledger, description=f"step {name!r} ({type(step).__name__}) fitted on the data without DP",
                    party=name)
        self.steps_ = fitted
        self.named_steps_ = dict(fitted)
        self.privacy_ledger_ = ledger
        self.n_records_ = getattr(synth, "n_records_", None)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # transform() maps real records into the synthesizer's space (for scoring), so scikit-learn's checks
        # see a transformer: declare it, with the synthesizers' input (discrete columns, labels).
        if TransformerTags is not None:
            tags.transformer_tags = TransformerTags()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

    def sample(self, n_samples=None, random_state=None, *, conditions=None,
               inverse_transform: bool = True) -> pd.DataFrame:
        """Sample from the synthesizer and map the records back to the original schema.

        Parameters
        ----------
        n_samples : int, optional
            Number of records; by default the synthesizer's noisy record count.
        random_state : None, int or numpy.random.Generator
            Seed of this draw, the synthesizer's sampling *and* the random
            parts of the inverse transforms (values drawn within a bin): the
            same ``random_state`` gives the same records.  ``None`` continues
            the fitted streams, so repeated calls differ.
        conditions : dict, optional
            ``{column: value}`` or ``{column: [values]}`` on the columns and
            values of the data given to :meth:`fit` (raw values, the target
            included), translated through the fitted preprocessing steps and
            passed to the synthesizer's conditional ``sample`` (see
            ``doc/conditional_sampling.md``).  A categorical column's value
            selects its category, and every record then holds one of the
            values listed; a value the encoder would map to its "other"
            category is refused (condition on the other label itself, e.g.
            ``"__other__"``, to draw those records).  A binned numeric
            column's value selects **the bin that holds it**: the records'
            values lie in that bin (drawn within it, not equal to the value),
            and a number outside the column's bins is refused.  The
            synthesizer must sample conditionally (MST, AIM, PPSyn, RandDPGen,
            VertiMRF).  Post-processing: no data, no budget.
        inverse_transform : bool, default=True
            ``False`` returns the synthesizer's records as they are, in the
            space the preprocessing steps define (bins, category codes): what
            :meth:`transform` makes of real data.  ``conditions`` are still
            on raw values.

        Returns
        -------
        pandas.DataFrame

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from skdpsynth import MSTSynthesizer
        >>> from skdpsynth.pipeline import make_synthesis_pipeline
        >>> from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer
        >>> rng = np.random.default_rng(0)
        >>> X = pd.DataFrame({"age": rng.integers(18, 90, 2000), "job": rng.choice(["a", "b", "c"], 2000)})
        >>> pipe = make_synthesis_pipeline(
        ...     DPKBinsDiscretizer(n_bins=6, columns=["age"], bounds={"age": (18, 90)}),
        ...     DPCategoricalEncoder({"job": ["a", "b", "c"]}, columns=["job"]),
        ...     MSTSynthesizer(epsilon=1.0, random_state=0),
        ... ).fit(X)
        >>> young_b = pipe.sample(200, random_state=0, conditions={"job": "b", "age": 20})
        >>> young_b["job"].unique().tolist(), bool(young_b["age"].between(18, 30).all())  # age's bin [18, 30)
        (['b'], True)
        """
        check_is_fitted(self, "steps_")
        rng = None if random_state is None else check_random_state(random_state)
        synthesizer = self.steps_[-1][1]
        extra = {} if conditions is None else {"conditions": self._translate_conditions(conditions)}

        def draw(n):
            return synthesizer.sample(n, random_state=rng, **extra)

        data = draw(n_samples)
        if getattr(self, "_unsupported_missing", None):
            data = self._redraw_unsupported(data, draw)
        if not inverse_transform:
            return data
        return self._inverse(data, rng)

    # Redraws allowed before sample() gives up (records in an unsupported category are about 1% at most).
    _MAX_REDRAWS = 100

    def _redraw_unsupported(self, data: pd.DataFrame, draw) -> pd.DataFrame:
        """Replace the records in a tentative missing category the synthesizer did not support by fresh draws
        outside all of them: sampling the model conditioned on those categories being empty."""
        def unsupported(frame: pd.DataFrame) -> np.ndarray:
            bad = np.zeros(len(frame), dtype=bool)
            for column, label in self._unsupported_missing.items():
                bad |= (frame[column].astype(object) == label).to_numpy()
            return bad

        return redraw_rejected(
            data.reset_index(drop=True), unsupported, draw, max_redraws=self._MAX_REDRAWS,
            failure="The synthesizer almost only draws records with missing values that its measurements did not "
                    f"support (columns {list(self._unsupported_missing)}); after {self._MAX_REDRAWS} redraws some "
                    "records still hold them.")

    def _inverse(self, data: pd.DataFrame, rng) -> pd.DataFrame:
        """The synthesizer's records through the transformers' ``inverse_transform``, in reverse order."""
        for _, step in reversed(self.steps_[:-1]):
            if rng is not None and _accepts_random_state(step.inverse_transform):
                data = step.inverse_transform(data, random_state=rng)
            else:
                data = step.inverse_transform(data)
        return data

    # -- conditions on raw values ------------------------------------------------
    def _probe(self, n_rows: int, *, raw: bool) -> pd.DataFrame:
        """``n_rows`` copies of one synthetic record, in the synthesizer's space or (``raw``) the input's.

        Conditions are translated by running values through the fitted steps,
        which take whole records; this record fills the other columns.  It is
        drawn from a generator of its own (post-processing of the model), so
        the fitted streams of :meth:`sample` do not move.
        """
        probe_rng = np.random.default_rng(0)
        record = self.steps_[-1][1].sample(1, random_state=probe_rng)
        if raw:
            record = self._inverse(record, probe_rng)
        return record.iloc[np.zeros(n_rows, dtype=np.intp)].reset_index(drop=True)

    def _translate_conditions(self, conditions) -> dict:
        """``{column: raw value(s)}`` -> ``{column: [the synthesizer's values]}``, checked column by column."""
        name, synthesizer = self.steps_[-1]
        if not _accepts_keyword(synthesizer.sample, "conditions"):
            raise TypeError(f"The synthesizer step {name!r} ({type(synthesizer).__name__}) does not sample "
                            "conditionally: its sample() takes no conditions=.")
        if not isinstance(conditions, Mapping):
            raise TypeError(f"conditions must be a dict {{column: value or list of values}}, got "
                            f"{type(conditions).__name__}.")
        if len(self.steps_) == 1 or not conditions:  # nothing to translate
            return dict(conditions)
        record = self._probe(1, raw=True)
        columns = list(record.columns)
        translated = {}
        for column, values in conditions.items():
            if column not in columns:
                raise ValueError(f"Cannot condition on {column!r}: not a column of the fitted data "
                                 f"(columns: {columns}).")
            listed = as_value_list(values)
            if not listed:
                raise ValueError(f"The condition on {column!r} lists no value.")
            translated[column] = self._translate_column(column, listed, record)
        return translated

    def _translate_column(self, column, listed: list, record: pd.DataFrame) -> list:
        """The synthesizer's values for the raw ``listed`` values of ``column``, through ``transform``.

        ``record`` (one raw record from :meth:`_probe`) fills the other columns.
        """
        frame = record.iloc[np.zeros(len(listed), dtype=np.intp)].reset_index(drop=True)
        frame[column] = pd.Series(listed).to_numpy()  # the dtype pandas infers, as for real data
        shown = listed[0] if len(listed) == 1 else listed
        binned = None
        for name, step in self.steps_[:-1]:
            edges = _bin_edges(step, column)
            if edges is not None:
                binned = (name, edges)
            try:
                frame = step.transform(frame)
            except (ValueError, TypeError) as err:
                raise ValueError(f"Cannot condition on {column!r} = {shown!r}: step {name!r} "
                                 f"({type(step).__name__}) does not take it. {err}") from err
        if column not in frame.columns:
            raise ValueError(f"Cannot condition on {column!r}: the preprocessing steps do not pass it to the "
                             "synthesizer under that name.")
        if binned is not None:
            _check_in_bins(column, listed, *binned)
        else:
            # A categorical value the encoder maps to another category (its "other" label) would give records
            # that do not hold it: refuse it, naming what it became.
            back = self._inverse(frame.copy(), np.random.default_rng(0))[column].tolist()
            for value, got in zip(listed, back):
                if not _same(value, got):
                    raise ValueError(f"Cannot condition on {column!r} = {value!r}: it is not one of the column's "
                                     f"categories, and the preprocessing maps it to {got!r}. Condition on "
                                     f"{got!r} itself to draw those records.")
        return list(frame[column])

    def _output_values(self, column) -> list:
        """The values :meth:`sample` can give ``column``, in domain order (a categorical column only)."""
        check_is_fitted(self, "steps_")
        values = _output_values(self.steps_[-1][1], column)
        if len(self.steps_) == 1:
            return values
        for name, step in self.steps_[:-1]:
            if _bin_edges(step, column) is not None:
                raise ValueError(f"Column {column!r} is binned by step {name!r}: its values are not a finite "
                                 "list of classes.")
        frame = self._probe(len(values), raw=False)
        dtype = frame[column].dtype
        frame[column] = pd.Categorical(values, dtype=dtype) if isinstance(dtype, pd.CategoricalDtype) else values
        return self._inverse(frame, np.random.default_rng(0))[column].tolist()

    def transform(self, X, y=None) -> pd.DataFrame:
        """Real records through the fitted preprocessing steps: the space the synthesizer was fitted in.

        ``y``, if given, is appended as the last column, as in :meth:`fit`.
        Use it to compare real and synthetic data where the synthesizer sees
        them, e.g. ``marginal_tvd(pipe.transform(X_test), pipe.sample(inverse_transform=False))``.
        """
        check_is_fitted(self, "steps_")
        Xt = append_target(X, y)
        for _, step in self.steps_[:-1]:
            Xt = step.transform(Xt)
        return Xt

    def score(self, X, y=None) -> float:
        """Negative mean 2-way TVD between a synthetic sample and real ``X``, in the steps' space.

        ``X`` (and ``y``, appended as in :meth:`fit`) goes through the fitted
        preprocessing steps and is compared with as many synthetic records,
        drawn with ``random_state=0``, before their inverse transform: the
        bins and categories the synthesizer models, not raw continuous values
        (two halves of real data would differ in almost every raw value).
        This is the default score of ``GridSearchCV(pipe, grid)``; 0 is a
        perfect match.  It reads the real ``X`` in the clear: evaluation,
        outside the privacy guarantee.

        Scores of candidates with different binnings (a search over
        ``<step>__n_bins``) are each measured in their own bins, and coarser
        bins are easier to match: such a search favours fewer bins.  Compare
        binnings with a downstream score instead (``tstr_scorer``, which
        works in the original schema).
        """
        from .metrics.scorers import marginal_scorer

        return marginal_scorer(ways=2)(self, X, y)


def _same(a, b) -> bool:
    """Whether two labels are equal, missing values (None, NaN, NA) being equal to each other."""
    a_na, b_na = _is_na(a), _is_na(b)
    if a_na or b_na:
        return a_na and b_na
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _is_na(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list-like value is not missing
        return False


def _bin_edges(step, column):
    """The bin edges of ``column`` when ``step`` bins it (a DP discretizer, or a table discretizer's), else None."""
    edges = getattr(step, "bin_edges_", None)
    if isinstance(edges, Mapping) and column in edges:
        return np.asarray(edges[column], dtype=float)
    for sub in getattr(step, "discretizers_", {}).values():  # TableDiscretizer: one discretizer per strategy
        found = _bin_edges(sub, column)
        if found is not None:
            return found
    return None


def _check_in_bins(column, listed: list, step_name: str, edges: np.ndarray) -> None:
    """Refuse a number outside a binned column's bounds (transform would clip it into an end bin)."""
    for value in listed:
        if isinstance(value, (bool, np.bool_)) or _is_na(value):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):  # e.g. a date, binned as days: transform has checked it
            continue
        if not edges[0] <= number <= edges[-1]:
            raise ValueError(f"Cannot condition on {column!r} = {value!r}: outside the column's bins, "
                             f"[{edges[0]:g}, {edges[-1]:g}] (step {step_name!r}). A value of a binned column "
                             "selects the bin that holds it.")


# A tentative missing category is confirmed when the synthesizer's model counts at least this many noise
# σ's of missing values (doc/preprocessing.md, "Missing values").
MISSING_Z = 3.0


def _decide_tentative_missing(transformers: list, synthesizer) -> tuple[dict, dict]:
    """Confirm each step's tentative missing category that the synthesizer's own measurement supports.

    Returns ``({column: z or None}, {column: label})``: the z-score of each
    tentative category (``None``: the synthesizer cannot tell, and the category stays tentative), and the
    labels, in the synthesizer's records, of those its measurement does not support.
    """
    support, unsupported = {}, {}
    scores = getattr(synthesizer, "value_z_scores", None)
    for _, step in transformers:
        tentative = step.tentative_missing() if callable(getattr(step, "tentative_missing", None)) else {}
        confirmed = []
        for column, label in tentative.items():
            try:
                values = _output_values(synthesizer, column)
            except (TypeError, ValueError):  # not passed to the synthesizer under its name: left as it is
                continue
            if not any(_same(v, label) for v in values):
                continue
            table = scores(column) if scores is not None else None
            z = None if table is None else float(table.iloc[[_same(v, label) for v in table.index]].iloc[0])
            support[column] = z
            if z is not None and z >= MISSING_Z:
                confirmed.append(column)
            elif z is not None:
                unsupported[column] = label
        if confirmed:
            step.confirm_missing(confirmed)
    return support, unsupported


def _output_values(synthesizer, column) -> list:
    """The values a fitted synthesizer's ``sample`` can put in ``column``, in the order of its public domain."""
    if isinstance(synthesizer, SynthesisPipeline):
        return synthesizer._output_values(column)
    columns = {c.name: c for c in getattr(synthesizer, "_columns", ())}
    if column not in columns:
        raise TypeError(f"Cannot list the values of column {column!r} of {type(synthesizer).__name__}: it is not "
                        "a fitted skdpsynth synthesizer with that column.")
    found = columns[column]
    return list(range(found.size)) if found.kind == "codes" else list(found.categories)


def _accepts_keyword(method, name: str) -> bool:
    """Whether ``method`` takes the keyword argument ``name``."""
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _refuse_privacy_unit(synth, where: str) -> None:
    """Refuse a user-level synthesizer: the pipeline's other releases are per record, and would mis-state it."""
    unit = getattr(synth, "privacy_unit", None)
    if unit is None:
        return
    raise ValueError(
        f"{where} does not support a synthesizer with privacy_unit={unit!r}: its DP preprocessing steps and "
        "its synthetic training set are record-level (a person's other records are not bounded there), so the "
        "pipeline could not state one per-person guarantee. Give the synthesizer a public schema (domain=, "
        "columns already discrete) and fit it directly on the DataFrame holding the identifier column, then "
        "work with its sample() (doc/user_level.md).")


def _accepts_random_state(method) -> bool:
    """Whether an ``inverse_transform`` takes ``random_state`` (the DP steps do; a plain sklearn one need not)."""
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False
    return "random_state" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _is_stateless(step) -> bool:
    """True for a transformer that learns nothing from the data (scikit-learn's ``requires_fit=False`` tag)."""
    if get_tags is None:  # pragma: no cover - scikit-learn < 1.6: assume it learns
        return False
    try:
        return not get_tags(step).requires_fit
    except (AttributeError, TypeError, ValueError):
        return False


def make_synthesis_pipeline(*steps) -> SynthesisPipeline:
    """A :class:`SynthesisPipeline` with step names made from the class names (lower case).

    Examples
    --------
    >>> from skdpsynth import MSTSynthesizer
    >>> from skdpsynth.pipeline import make_synthesis_pipeline
    >>> from skdpsynth.preprocessing import DPKBinsDiscretizer
    >>> pipe = make_synthesis_pipeline(DPKBinsDiscretizer(bounds=(0, 1)), MSTSynthesizer())
    >>> [name for name, _ in pipe.steps]
    ['dpkbinsdiscretizer', 'mstsynthesizer']
    """
    names = [type(s).__name__.lower() for s in steps]
    counts: dict[str, int] = {}
    unique = []
    for n in names:
        counts[n] = counts.get(n, 0) + 1
        unique.append(n if names.count(n) == 1 else f"{n}-{counts[n]}")
    return SynthesisPipeline(list(zip(unique, steps)))
