"""The estimator surface every synthesizer shares.

``fit`` turns a table into integer codes over a *public* domain, converts the
privacy budget to zCDP, runs the method (``_fit_codes``), checks the ledger
against the budget and records the fitted attributes.  ``sample`` is pure
post-processing of the fitted model: it never sees the training data and never
spends budget.

Where the domain comes from, in order:

1. the ``domain=`` hyper-parameter: ``{column: [categories]}`` or ``{column: size}``
   (or a :class:`~skdpsynth.domain.Domain`);
2. a pandas ``CategoricalDtype`` produced by a DP preprocessing step (how
   :mod:`skdpsynth.preprocessing` hands the domain on; see
   :mod:`skdpsynth.privacy.metadata`);
3. otherwise it is read from the data — including a ``CategoricalDtype`` that
   no DP step produced, such as ``X.astype("category")`` — with a
   :class:`~skdpsynth.privacy.PrivacyLeakWarning` naming the columns, recorded
   in the ledger (which then states no DP guarantee).

The seed rule: with ``random_state=None`` the noise comes from OS entropy and
every other stream of the fit (sampling included) from entropy of its own; a
fixed ``random_state`` makes the noise reproducible, and ``fit`` says so with a
:class:`~skdpsynth.privacy.ReproducibleNoiseWarning`.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Hashable, Mapping
from numbers import Integral, Real

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..columns import Column, resolve_columns
from ..constraints import compile_constraints, violations
from ..domain import Domain
from ..marginals import as_codes
from ..outofcore import is_out_of_core
from ..params import Interval, Options, PrivacyParameter, validate_params
from ..privacy import PrivacyLedger, cdp_rho
from ..privacy.contributions import bound_contributions
from ..privacy.randomness import child_random_states, noise_generator, warn_reproducible_noise
from ..utils import append_target, as_value_list, check_memory, check_random_state, is_remote_data, redraw_rejected

__all__ = ["BaseSynthesizer"]

_SAMPLE_BYTES_PER_CELL = 96   # peak of sample(): codes, decoded columns and the DataFrame (82 measured, rounded up)


class BaseSynthesizer(BaseEstimator):
    """Base class of the differentially private synthesizers.

    Subclasses declare their hyper-parameters in ``__init__`` (stored as
    given), implement ``_fit_codes`` and may override ``_sample_codes``.  The
    attributes below are set by :meth:`fit`.

    Attributes
    ----------
    privacy_ledger_ : PrivacyLedger
        Every release of private information made by the fit; sums to at most the budget.
    domain_ : Domain
        The public domain the data were coded on.
    n_records_ : float
        The (noisy, DP) record-count estimate; the default number of records of :meth:`sample`.
    model_ : object
        The fitted model (a :class:`~skdpsynth.graphical.GraphicalModel` for marginal-based methods).
    fit_time_ : float
        Seconds spent in :meth:`fit`.
    rho_ : float
        The zCDP budget the fit was given (for zCDP methods); per person with
        ``privacy_unit`` (the records are then measured at ``rho_ / k²``).
    feature_names_in_ : ndarray of str
        Column names seen in :meth:`fit` (the target last when ``y`` was
        given; never the ``privacy_unit`` column).

    Notes
    -----
    **User-level privacy.**  MST, AIM, PPSyn and DPView take
    ``privacy_unit=`` (the identifier column of ``X``) and
    ``max_contributions=`` (``k``): :meth:`fit` keeps at most ``k`` records
    per person, chosen uniformly at random within each person
    (:func:`~skdpsynth.privacy.contributions.bound_contributions`), drops the
    identifier, and runs the method at the record-level budget ``ρ/k²``
    (zCDP) or ``ε/k`` (pure ε-DP), so that the fit is (ε, δ)-DP for data sets
    that differ in all records of one person (group privacy; Bun & Steinke
    2016, Proposition 27).  ``privacy_ledger_`` states that per-person
    guarantee.  See ``doc/user_level.md``.

    Examples
    --------
    Every synthesizer inherits this API; here :class:`~skdpsynth.MSTSynthesizer`:

    >>> from skdpsynth import MSTSynthesizer
    >>> from skdpsynth.datasets import load_adult
    >>> from skdpsynth.synthesizers.base import BaseSynthesizer
    >>> adult = load_adult(discretized=True)
    >>> X = adult.frame.iloc[:2000, [1, 6, 8, 13]]
    >>> mst = MSTSynthesizer(epsilon=1.0, domain=adult.domain.project(X.columns).to_dict(), random_state=0)
    >>> isinstance(mst, BaseSynthesizer)
    True
    >>> mst.fit(X).sample(5).shape
    (5, 4)
    >>> mst.domain_
    Domain(workclass=9, relationship=6, sex=2, income>50K=2)
    >>> mst.privacy_ledger_.is_private, round(mst.privacy_ledger_.total_rho() / mst.rho_, 12)
    (True, 1.0)
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Columns are categories (codes or labels), never continuous features.
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

    # The constraints every synthesizer shares (skdpsynth.params; each applies where the estimator has the
    # parameter); subclasses declare their own in the same class attribute.
    _parameter_constraints: dict = {
        "domain": [None, Mapping, Domain],
        "epsilon": [PrivacyParameter()],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0, None), bool],
        "max_iters": [Interval(Integral, 1, None)],
        "final_iters": [Interval(Integral, 1, None)],
        "sampling": [Options("round", "sample")],
        "tol": [Interval(Real, 0, None)],
        "constraints": [None, list, tuple],
        "privacy_unit": [None, Hashable],
        "max_contributions": [None, Interval(Integral, 1, None)],
    }

    # zCDP by default (epsilon and delta checked by _check_params); pure-epsilon methods override _privacy_budget.
    def _privacy_budget(self) -> dict:
        return {"rho": cdp_rho(float(self.epsilon), float(self.delta))}

    # -- fit ----------------------------------------------------------------
    def fit(self, X, y=None, **fit_params):
        """Fit the synthesizer to private data, spending the privacy budget once.

        Parameters
        ----------
        X : pandas.DataFrame, 2-D array of integer codes, dask.dataframe.DataFrame or str
            A dask DataFrame, or the path (or glob) of Parquet files read with
            ``dask.dataframe.read_parquet`` (the columns of ``domain=``), is
            counted out of core, partition by partition on the active dask
            scheduler; ``domain=`` must then give every column (see
            :mod:`skdpsynth.outofcore`).  The federated methods
            (``HybridSynthesizer``, ``VerticalMRFSynthesizer``), whose
            parties take their rows in memory, refuse it with a ``TypeError``
            before reading anything.  With ``privacy_unit`` set, ``X`` must be
            a pandas DataFrame holding that identifier column.
        y : array-like of shape (n_records,), optional
            A column to synthesize with ``X`` (e.g. a classification target),
            appended as the last column (named after ``y.name``, else ``"target"``).
        **fit_params
            Method-specific (see the subclass).

        Returns
        -------
        self
        """
        start = time.perf_counter()
        unit = self._check_privacy_unit(X)  # before anything is read
        remote = is_remote_data(X)
        lazy = not remote and is_out_of_core(X)
        if remote:  # records that stay with their parties (skdpsynth.federated.FederatedData)
            self._check_remote(X, y)
            frame = None
        elif lazy:  # a dask DataFrame or Parquet files: counted partition by partition (skdpsynth.outofcore)
            self._refuse_out_of_core(X)
            if y is not None:
                raise ValueError("With out-of-core data (a dask DataFrame or Parquet files) the target is one of "
                                 "the columns; do not pass y.")
            frame = None
        elif unit is None:
            frame = self._as_frame(X, y)
        self._check_params()
        budget = person_budget = self._privacy_budget()
        warn_reproducible_noise(type(self).__name__, self.random_state)
        # The seed rule: noise from OS entropy (or the seed); every released stream from a source of its own.
        rng = noise_generator(self.random_state)
        if unit is not None:
            # Each person's records bounded to k with the noise's randomness; the identifier goes no further.
            k = int(self.max_contributions)
            frame = self._as_frame(bound_contributions(self._as_frame(X, y), unit, k, rng), None)
            budget = self._record_level_budget(person_budget, k)
        # A zCDP fit records the delta its rho was derived from: the ledger then states (epsilon, delta) itself.
        ledger = PrivacyLedger(zcdp_delta=float(self.delta) if "rho" in budget else None)
        if remote:
            domain = X.domain  # public: the job's schema; the parties hold codes of it
            columns = [Column(a, domain[a], "codes", None, np.dtype(np.int64)) for a in domain.attrs]
            codes, coded = X, None
        elif lazy:
            from ..outofcore import as_dask_codes

            codes, coded = as_dask_codes(X, getattr(self, "domain", None), ledger), None
            columns, domain = list(codes.columns), codes.domain
        else:
            columns = resolve_columns(frame, getattr(self, "domain", None), ledger,
                                       from_array=not isinstance(X, pd.DataFrame))
            domain = Domain([c.name for c in columns], [c.size for c in columns])
            coded = pd.DataFrame({c.name: c.encode(frame[c.name]) for c in columns}, index=frame.index)
            codes = as_codes(coded, domain)
        public_state, sample_state = child_random_states(self.random_state, 2)
        self._public_rng = check_random_state(public_state)
        self._columns = columns
        # sklearn's meaning: the columns of X (a target given as y is synthesized too, but is not a feature).
        n_features = len(columns) - (y is not None)
        self.n_features_in_ = n_features
        if all(isinstance(c.name, str) for c in columns[:n_features]):
            self.feature_names_in_ = np.asarray([c.name for c in columns[:n_features]], dtype=object)
        self.domain_ = domain
        # Public metadata, compiled against the public domain before anything is spent (doc/constraints.md).
        constraints = compile_constraints(getattr(self, "constraints", None), columns, domain.attrs)
        try:
            self._fit_codes(codes, domain, ledger, rng, **budget, **fit_params)
        finally:
            del self._public_rng
        del codes, coded, frame, rng  # nothing below may look at the data or the noise
        self._check_spend(ledger, self._charged_budget(budget))  # at record level, as the method spent it
        if unit is not None:
            ledger = ledger.per_person(unit, self.max_contributions)
        self.constraints_ = constraints
        if constraints:
            self._apply_constraints(constraints)
        self.privacy_ledger_ = ledger
        if unit is not None:
            self._state_per_person(int(self.max_contributions))
        if "rho" in budget:
            self.rho_ = person_budget["rho"]
        self._sample_rng = check_random_state(sample_state)
        self.fit_time_ = time.perf_counter() - start
        if getattr(self, "verbose", 0):  # the statement converts rho to epsilon: not worth it unread
            self._log(f"fit done in {self.fit_time_:.1f} s; spent {self._spent_text()}")
        return self

    def _check_spend(self, ledger: PrivacyLedger, charged: dict) -> None:
        """A method spends exactly what it states: no more (a privacy bug) and no less (a mis-stated guarantee)."""
        ledger.check_budget(**charged)
        (kind, stated), = charged.items()
        spent = ledger.total_zcdp() if kind == "rho" else ledger.total_epsilon()
        if not np.isclose(spent, stated, rtol=1e-9, atol=0.0):
            raise RuntimeError(f"{type(self).__name__} spent {kind}={spent!r} but states {stated!r}; the budget "
                               "split must give every stage's share to the stages that run.")

    def _check_privacy_unit(self, X):
        """The identifier column of a user-level fit (None without one), checked before anything is read.

        ``privacy_unit`` and ``max_contributions`` go together; ``X`` must be
        an in-memory DataFrame holding the identifier, which the public
        domain must not name (the identifier is never synthesized).
        """
        unit, k = getattr(self, "privacy_unit", None), getattr(self, "max_contributions", None)
        if unit is None and k is None:
            return None
        validate_params(self, {"privacy_unit": unit, "max_contributions": k})
        name = type(self).__name__
        if unit is None or k is None:
            raise ValueError(f"{name}: privacy_unit (the identifier column) and max_contributions (the records "
                             "kept per person, k) go together: give both for user-level DP, or neither.")
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"{name}(privacy_unit={unit!r}) needs the records in memory as a pandas DataFrame "
                            f"holding the identifier column, got {type(X).__name__}. Out-of-core data and "
                            "records that stay with their parties are not supported with a privacy unit.")
        if unit not in X.columns:
            raise ValueError(f"{name}: the privacy unit {unit!r} is not a column of X.")
        domain = getattr(self, "domain", None)
        if domain is not None and unit in (domain.attrs if isinstance(domain, Domain) else domain):
            raise ValueError(f"{name}: domain= names the privacy unit {unit!r}; the identifier is never "
                             "synthesized, so leave it out of the domain.")
        return unit

    @staticmethod
    def _record_level_budget(budget: dict, k: int) -> dict:
        """The budget of a record-level run whose guarantee for a group of ``k`` records is ``budget``.

        Group privacy: ρ-zCDP for one record is k²ρ-zCDP for k records (Bun
        & Steinke 2016, Proposition 27); ε-DP is kε-DP (Dwork & Roth 2014,
        Theorem 2.2).  So the run gets ρ/k² or ε/k — the same as scaling
        every sensitivity by k (a Gaussian's σ and a Laplace's scale by k,
        an exponential mechanism's ε by 1/k).
        """
        scale = {"rho": k * k, "epsilon": k}
        if set(budget) - set(scale):
            raise ValueError(f"No group-privacy scaling for a budget of {sorted(budget)}.")
        return {kind: value / scale[kind] for kind, value in budget.items()}

    def _state_per_person(self, k: int) -> None:
        """Restate fitted attributes that express privacy spent per person (after ``privacy_ledger_`` is)."""

    def _charged_budget(self, budget: dict) -> dict:
        """What the ledger may sum to: the budget, unless a method knowingly charges more (and says so)."""
        return budget

    def _check_params(self) -> None:
        """Validate hyper-parameters at fit: the declared ``_parameter_constraints`` (of this class and its
        bases), then what a subclass adds (checks across parameters), calling ``super()`` first."""
        validate_params(self)

    def _fit_codes(self, codes: np.ndarray, domain: Domain, ledger: PrivacyLedger, rng, **budget) -> None:
        raise NotImplementedError

    # Whether fit() takes data that stay with their parties (FederatedData); federated methods set it.
    _fits_federated_data = False

    # None: fit() counts out-of-core input (skdpsynth.outofcore). A method that cannot sets the sentence naming the
    # inputs it takes instead, and fit() refuses such input before it reads anything.
    _out_of_core_refusal: str | None = None

    def _refuse_out_of_core(self, X) -> None:
        """Raise if ``X`` (or one of per-party frames, a list or a dict) is out of core and the method cannot count it.

        Checked before any work: nothing is read or computed from the dask
        graph or the Parquet files (converting a dask frame to an array would
        compute it, its length included, and the length is the private record
        count).
        """
        if self._out_of_core_refusal is None:
            return
        parts = X.values() if isinstance(X, Mapping) else X if isinstance(X, (list, tuple)) else ()
        if is_out_of_core(X) or any(is_out_of_core(part) for part in parts):
            raise TypeError(f"{type(self).__name__} does not fit out-of-core data (a dask DataFrame or Parquet "
                            f"files): {self._out_of_core_refusal}")

    def _check_remote(self, X, y) -> None:
        if not self._fits_federated_data:
            raise TypeError(f"{type(self).__name__} needs the records in this process; {type(X).__name__} "
                            "(records that stay with their parties) is fitted by the federated synthesizers "
                            "(HybridSynthesizer, VerticalMRFSynthesizer).")
        if y is not None:
            raise ValueError(f"With {type(X).__name__} the target is one of the parties' columns; do not pass y.")
        if getattr(self, "domain", None) is not None:
            raise ValueError(f"With {type(X).__name__} the domain is the one it carries; leave domain=None.")

    @staticmethod
    def _as_frame(X, y) -> pd.DataFrame:
        if sp.issparse(X):
            raise TypeError("Sparse input is not supported: a synthesizer needs the table of records; pass a DataFrame.")
        if isinstance(X, pd.DataFrame):
            frame = X
        else:
            arr = np.asarray(X)
            if arr.ndim != 2:
                # Not the shape: its length is the private record count.
                raise ValueError(f"Expected a 2-D table of records, got an array with {arr.ndim} dimension(s); "
                                 "pass a DataFrame, or reshape a single column with array.reshape(-1, 1).")
            frame = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])  # sklearn's naming
        if frame.shape[1] == 0:
            raise ValueError("The table has no columns.")
        if frame.columns.has_duplicates:
            raise ValueError("The table has duplicate column names.")
        return append_target(frame, y)

    # -- sample -------------------------------------------------------------
    def sample(self, n_samples: int | None = None, random_state=None, *, conditions=None) -> pd.DataFrame:
        """Generate synthetic records (post-processing only: no data, no budget).

        Parameters
        ----------
        n_samples : int, optional
            Number of records; by default the fitted (noisy) record count ``n_records_``, rounded.
        random_state : None, int or numpy.random.Generator
            Seed of this draw.  ``None`` continues the synthesizer's own stream
            (seeded from ``random_state`` at fit), so repeated calls differ but
            the sequence is reproducible.
        conditions : dict, optional
            ``{column: value}`` or ``{column: [values]}``: draw from the
            model's conditional distribution given that each column takes
            one of its listed values (every record then satisfies them).
            The synthesizers with a graphical model (MST, AIM, PPSyn,
            RandDPGen, VertiMRF) condition it exactly; ``ViewSynthesizer``
            cannot and says so.  See ``doc/synthesizers.md``, "Conditional
            sampling".

        Returns
        -------
        pandas.DataFrame
            The fitted columns in their order and dtypes (categorical columns with their categories).

        Examples
        --------
        >>> from skdpsynth import MSTSynthesizer
        >>> from skdpsynth.datasets import load_adult
        >>> adult = load_adult(discretized=True)
        >>> X = adult.frame[["sex", "relationship", "income>50K"]]
        >>> mst = MSTSynthesizer(domain=adult.domain.project(X.columns).to_dict(), random_state=0).fit(X)
        >>> rich = mst.sample(1000, conditions={"income>50K": 1})
        >>> rich["income>50K"].unique().tolist()
        [1]
        """
        check_is_fitted(self, "model_")
        if n_samples is None:
            n_samples = int(round(self.n_records_))
        if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, (int, np.integer)) or n_samples < 0:
            raise ValueError(f"n_samples must be a non-negative integer, got {n_samples!r}.")
        check_memory(_SAMPLE_BYTES_PER_CELL * float(n_samples) * len(self._columns),
                     f"sample(n_samples={int(n_samples):,}) of {len(self._columns)} columns",
                     "Draw fewer records, or draw them in batches: each sample() call continues the "
                     "synthesizer's random stream.")
        allowed = None if conditions is None else self._condition_masks(conditions)
        rng = self._sample_rng if random_state is None else check_random_state(random_state)
        def draw(n: int) -> np.ndarray:
            return self._sample_codes(n, rng) if not allowed else self._sample_codes_given(n, rng, allowed)

        codes = draw(int(n_samples))
        if getattr(self, "constraints_", None):
            codes = self._redraw_violations(codes, draw)
        return pd.DataFrame({c.name: c.decode(codes[:, j]) for j, c in enumerate(self._columns)})

    def _condition_masks(self, conditions) -> dict:
        """``{attribute: bool mask over its codes}`` from ``{column: value or values}``, checked."""
        if not isinstance(conditions, Mapping):
            raise TypeError(f"conditions must be a dict {{column: value or list of values}}, got "
                            f"{type(conditions).__name__}.")
        columns = {c.name: c for c in self._columns}
        masks = {}
        for name, values in conditions.items():
            if name not in columns:
                raise ValueError(f"Cannot condition on {name!r}: not a fitted column (columns: {list(columns)}).")
            column = columns[name]
            listed = as_value_list(values)
            if not listed:
                raise ValueError(f"The condition on {name!r} lists no value.")
            codes = np.asarray(column.encode(pd.Series(listed, dtype=object if column.kind != "codes" else None)))
            if column.kind == "codes" and (codes.dtype.kind not in "iu" or (codes < 0).any()
                                           or (codes >= column.size).any()):
                raise ValueError(f"The condition on {name!r} must list codes 0 .. {column.size - 1}, got {listed!r}.")
            mask = np.zeros(column.size, dtype=bool)
            mask[codes.astype(np.intp)] = True
            masks[self.domain_.attrs[self._columns.index(column)]] = mask
        return masks

    def value_z_scores(self, column) -> pd.Series | None:
        """How clearly the fit's own measurements show each value of ``column``: the model's count of the
        value over the noise σ of the column's 1-way measurements.

        σ combines, by inverse variance, the Gaussian measurements of the
        column's marginal alone that :attr:`privacy_ledger_` records (AIM's
        and MST's first measurements, and AIM's later ones of the column
        alone).  A value no record holds gets a count of about σ's order at
        most (the model's estimate of pure noise); a z-score of 3 or more is
        rarely noise.  Post-processing of the released model and ledger: no
        data, no budget.

        Parameters
        ----------
        column : hashable
            A fitted column.

        Returns
        -------
        pandas.Series or None
            Indexed by the column's values, in the order of its domain;
            ``None`` when the fit made no Gaussian measurement of the column
            alone (``ViewSynthesizer``, the federated synthesizers, PPSyn).

        Examples
        --------
        >>> import pandas as pd
        >>> from skdpsynth import AIMSynthesizer
        >>> X = pd.DataFrame({"c": [0] * 900 + [1] * 100, "d": [0, 1] * 500})
        >>> synth = AIMSynthesizer(epsilon=1.0, domain={"c": 3, "d": 2}, rounds=4, random_state=0).fit(X)
        >>> (synth.value_z_scores("c") >= 3).tolist()   # code 2 is in the public domain, but no record holds it
        [True, True, False]
        """
        check_is_fitted(self, "domain_")
        names = [c.name for c in self._columns]
        if column not in names:
            raise ValueError(f"{column!r} is not a fitted column (columns: {names}).")
        j = names.index(column)
        attr = self.domain_.attrs[j]
        sigma = self._one_way_sigma(attr)
        counts = self._model_one_way(attr) if sigma is not None else None
        if counts is None:
            return None
        values = self._columns[j].decode(np.arange(self.domain_[attr]))
        return pd.Series(np.asarray(counts, dtype=float) / sigma, index=pd.Index(values, dtype=object),
                         name=column)

    def _one_way_sigma(self, attr) -> float | None:
        """σ of the fit's Gaussian measurements of ``attr`` alone (None: a method that makes none)."""
        return None

    def _model_one_way(self, attr) -> np.ndarray | None:
        """The fitted model's counts of ``attr``'s codes (a graphical model over the fitted domain; None else)."""
        from ..graphical import GraphicalModel

        model = getattr(self, "model_", None)
        if not isinstance(model, GraphicalModel) or model.domain != self.domain_:
            return None
        return np.asarray(model.project((attr,)), dtype=float).ravel()

    # Mirror-descent iterations of the re-estimate under the constraints (on Adult, 200 bring the 2-way TVD
    # back to the unconstrained model's; see doc/constraints.md).
    _CONSTRAINED_ITERS = 200

    def _apply_constraints(self, constraints: list) -> None:
        """Re-estimate a fitted graphical model with the compiled constraints' impossible cells as structural
        zeros, from its own marginals (post-processing: :func:`skdpsynth.graphical.fit_under_constraints`).

        A model over another domain (MST's compressed one) or of another kind is left as it is; ``sample``
        redraws the records that break a constraint.
        """
        from ..graphical import GraphicalModel, fit_under_constraints

        model = getattr(self, "model_", None)
        if isinstance(model, GraphicalModel):
            cells = self._model_allowed_cells(constraints)
            if cells:
                start = time.perf_counter()
                self.model_ = fit_under_constraints(model, cells, iters=self._CONSTRAINED_ITERS)
                self._log(f"re-estimated under {len(cells)} constraint(s) in {time.perf_counter() - start:.1f} s")

    def _model_allowed_cells(self, constraints: list) -> list:
        """The constraints' allowed cells over the model's domain (the fitted domain, unless a method maps it)."""
        return constraints if self.model_.domain == self.domain_ else []

    # Redraws allowed before sample() gives up on a model that almost never meets the constraints.
    _MAX_REDRAWS = 100

    def _redraw_violations(self, codes: np.ndarray, draw) -> np.ndarray:
        """Replace the records that break a constraint by fresh draws that meet them all.

        Drawing until the constraints hold is sampling the model conditioned on them.  A model the
        constraints were folded into never needs it; a ``ViewSynthesizer`` model or an MST cell of merged
        rare values does.
        """
        attrs = self.domain_.attrs
        return redraw_rejected(
            codes, lambda records: violations(records, self.constraints_, attrs), draw, max_redraws=self._MAX_REDRAWS,
            failure=f"{type(self).__name__}'s model almost never meets the constraints: after {self._MAX_REDRAWS} "
                    "redraws some records still break them. Check that the constraints are right, or fit with more "
                    "budget.")

    def _sample_codes_given(self, n_samples: int, rng: np.random.Generator, allowed: dict) -> np.ndarray:
        """Records from the model conditioned on ``allowed`` (a graphical model's; others refuse)."""
        from ..graphical import GraphicalModel, sample_restricted

        model = getattr(self, "model_", None)
        if not isinstance(model, GraphicalModel):
            raise NotImplementedError(f"{type(self).__name__} cannot sample conditionally: its model is not a "
                                      "graphical model. Sample without conditions and filter, or use MST, AIM, "
                                      "PPSyn, RandDPGen or VertiMRF.")
        return sample_restricted(model, allowed, n_samples, getattr(self, "sampling", "round"), rng)

    def score(self, X, y=None) -> float:
        """Negative mean 2-way TVD between a synthetic sample and held-out real records (greater is better).

        Draws ``len(X)`` records with ``random_state=0`` (every candidate of a
        search is compared on the same stream) and returns ``-marginal_tvd``
        over all 2-way marginals (1-way for a one-column table); ``y``, if
        given, is appended as the last column as in :meth:`fit`.  This is the
        default score of ``GridSearchCV(synthesizer, grid)`` without
        ``scoring=``; see :func:`skdpsynth.metrics.marginal_scorer` for others.
        It reads ``X`` in the clear: an evaluation on real data, outside the
        privacy guarantee.

        Parameters
        ----------
        X : pandas.DataFrame or 2-D array
            Real records with the fitted columns.
        y : array-like, optional
            The target, when the synthesizer was fitted with one.

        Returns
        -------
        float
            In ``[-1, 0]``; 0 is a perfect match of every 2-way marginal.

        Examples
        --------
        >>> from skdpsynth import MSTSynthesizer
        >>> from skdpsynth.datasets import load_adult
        >>> adult = load_adult(discretized=True)
        >>> X = adult.frame[["workclass", "education-num", "marital-status", "sex"]]
        >>> mst = MSTSynthesizer(domain=adult.domain.project(X.columns).to_dict()).fit(X.iloc[:20000])
        >>> -0.1 < mst.score(X.iloc[20000:]) <= 0  # two real halves differ by 0.016
        True
        """
        from ..metrics.scorers import marginal_scorer

        check_is_fitted(self, "model_")
        unit = getattr(self, "privacy_unit", None)
        if unit is not None and isinstance(X, pd.DataFrame) and unit in X.columns:
            X = X.drop(columns=[unit])  # the identifier was never synthesized
        n_features = np.shape(X)[1] if np.ndim(X) == 2 else None
        if n_features != self.n_features_in_:
            raise ValueError(f"X has {n_features} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        return marginal_scorer(ways=2 if len(self.domain_) > 1 else 1)(self, X, y)

    def _sample_codes(self, n_samples: int, rng: np.random.Generator) -> np.ndarray:
        return self.model_.synthetic_data(n_samples, method=getattr(self, "sampling", "round"), random_state=rng)

    # -- helpers ------------------------------------------------------------
    def _log(self, message: str) -> None:
        if getattr(self, "verbose", 0):
            print(f"[{type(self).__name__}] {message}", file=sys.stderr, flush=True)

    @staticmethod
    def _used(ledger, rho: float) -> float:
        """Share of the zCDP budget ``rho`` recorded in ``ledger`` so far."""
        return ledger.total_rho() / rho if rho > 0 else 0.0

    def _estimation_progress(self, what: str, measurements, iters: int):
        """A ``mirror_descent`` callback logging the fit residual a few times per run (None when quiet)."""
        if not getattr(self, "verbose", 0) or iters < 1000:
            return None
        n_answers = max(sum(m.n_answers for m in measurements), 1)
        every = max(iters // 4, 1)

        def report(iteration: int, loss: float) -> None:
            if iteration % every == 0 and iteration < iters:
                self._log(f"{what}: iteration {iteration:,}/{iters:,}, residual {np.sqrt(loss / n_answers):.3f} sigma")

        return report

    def _spent_text(self) -> str:
        ledger = getattr(self, "privacy_ledger_", None)
        if ledger is None:
            return "nothing"
        if not ledger.is_private:
            return ledger.statement()
        if ledger.total_rho() > 0:
            return f"rho={ledger.total_zcdp():.6g} => {ledger.statement(self.delta)}"
        return f"epsilon={ledger.total_epsilon():.6g}"
