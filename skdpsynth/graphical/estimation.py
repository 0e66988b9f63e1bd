"""Estimation: fit a graphical model to noisy linear measurements of marginals.

This is the method of McKenna, Sheldon & Miklau, "Graphical-model based
estimation and inference for differential privacy" (ICML 2019): minimise

    L(μ) = Σ_i ‖Q_i μ_{r_i} − y_i‖² / σ_i²

over the marginal polytope by entropic mirror descent on the potentials of a
Markov random field, with the clique marginals ``μ`` computed exactly by belief
propagation.  Two methods: accelerated mirror descent (Tseng 2008, with
backtracking and adaptive restart; the default) and plain mirror descent with
Armijo backtracking.
"""
from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, lsqr

from ..domain import Domain
from ..marginals import maximal_cliques
from . import tables as table_ops
from .exp_tables import exponentiate, step_table
from .inference import assemble_potentials, belief_propagation
from .junction_tree import JunctionTree, broadcast_shape, reduce_axes
from .model import _IMPOSSIBLE, GraphicalModel

__all__ = ["Measurement", "mirror_descent", "minimum_variance_total", "independent_estimate", "EstimationInfo",
           "fit_under_constraints"]


@dataclass
class Measurement:
    """A noisy linear measurement ``y = Q μ_clique + noise`` with noise s.d. ``sigma``.

    Parameters
    ----------
    clique : tuple of str
        The attributes whose marginal is measured.
    values : ndarray
        The noisy answers ``y`` (flattened in the clique's canonical order when
        ``query`` is None: the marginal of :func:`skdpsynth.marginals.marginal`,
        raveled).
    sigma : float
        Standard deviation of the noise on every answer (weights the loss by ``1/σ²``).
    query : None, ndarray, scipy sparse matrix or scipy LinearOperator
        ``Q`` with one column per cell of the clique's marginal; ``None`` is the
        identity (the marginal itself).  Use it for aggregated cells (a
        compressed domain, a partition of the cells) or any linear query.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical import Measurement
    >>> m = Measurement(("a",), np.array([10.0, 30.0]), sigma=2.0)
    >>> m.n_answers
    2
    """

    clique: tuple[str, ...]
    values: np.ndarray
    sigma: float
    query: object = None

    def __post_init__(self):
        self.clique = tuple(self.clique)
        self.values = np.asarray(self.values, dtype=float).ravel()
        self.sigma = float(self.sigma)
        if not self.sigma > 0:
            raise ValueError(f"Measurement of {self.clique}: sigma must be > 0, got {self.sigma}.")
        if self.query is not None and not isinstance(self.query, LinearOperator) and not sp.issparse(self.query):
            self.query = np.asarray(self.query, dtype=float)
        if self.query is not None and self.query.shape[0] != self.values.size:
            raise ValueError(
                f"Measurement of {self.clique}: query has {self.query.shape[0]} rows but {self.values.size} values."
            )

    @property
    def n_answers(self) -> int:
        return self.values.size

    def apply(self, marginal: np.ndarray) -> np.ndarray:
        """``Q μ`` for a flattened marginal."""
        return marginal if self.query is None else self.query @ marginal

    def adjoint(self, residual: np.ndarray) -> np.ndarray:
        """``Qᵀ r``."""
        if self.query is None:
            return residual
        if isinstance(self.query, LinearOperator):
            return self.query.rmatvec(residual)
        # Transposing a sparse matrix builds a new one: keep it (estimation calls this every iteration).
        return _of_query(self.query, "transpose", self._transpose) @ residual

    def _transpose(self):
        return self.query.T.tocsr() if sp.issparse(self.query) else self.query.T

    def products(self) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
        """``(μ ↦ Q μ, r ↦ Qᵀ r)``, as functions for estimation's inner loop.

        A sparse query with at most one entry per column (a compressed domain's diagonal scaling, or a partition
        of the cells into groups) is applied with ``np.bincount`` and a gather, which give the sparse product's
        floating-point result exactly (the same products, added in the same order from 0.0) at a fraction of its
        fixed cost: estimation applies every query a few thousand times.

        Examples
        --------
        >>> import numpy as np, scipy.sparse as sp
        >>> from skdpsynth.graphical import Measurement
        >>> groups = sp.csr_matrix(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))   # cells {0, 2} and {1}
        >>> apply, adjoint = Measurement(("a",), [5.0, 2.0], 1.0, groups).products()
        >>> apply(np.array([1.0, 2.0, 3.0])).tolist(), adjoint(np.array([10.0, 20.0])).tolist()
        ([4.0, 2.0], [10.0, 20.0, 10.0])
        """
        if self.query is None:
            return (lambda mu: mu), (lambda r: r)
        columns = _of_query(self.query, "one_entry_columns", self._one_entry_columns) if sp.issparse(self.query) \
            else None
        if columns is None:
            query = self.query
            return (lambda mu: query @ mu), self.adjoint
        rows, cols, weights, n_rows, n_cols = columns

        def apply(mu: np.ndarray) -> np.ndarray:
            return np.bincount(rows, weights=weights * mu[cols], minlength=n_rows)

        def adjoint(r: np.ndarray) -> np.ndarray:
            out = np.zeros(n_cols)
            out[cols] = weights * r[rows] + 0.0   # + 0.0: the sparse product's sum starts at 0.0 (so -0.0 is 0.0)
            return out
        return apply, adjoint

    def _one_entry_columns(self):
        """``(rows, cols, weights, n_rows, n_cols)`` of a sparse query with at most one entry per column, in the
        order its sparse products add them (CSR with sorted indices, or CSC); ``None`` for any other query."""
        q = self.query
        if q.format == "csr" and q.has_sorted_indices:
            rows = np.repeat(np.arange(q.shape[0]), np.diff(q.indptr))
            cols, weights = q.indices, q.data
        elif q.format == "csc":
            cols = np.repeat(np.arange(q.shape[1]), np.diff(q.indptr))
            rows, weights = q.indices, q.data
        else:
            return None
        if np.bincount(cols, minlength=q.shape[1]).max(initial=0) > 1:
            return None
        order = np.argsort(cols, kind="stable")   # the product's order: by column within each row
        return (rows[order].astype(np.intp), cols[order].astype(np.intp), np.asarray(weights, float)[order],
                q.shape[0], q.shape[1])

    def column_norm_sq(self) -> float:
        """Largest squared column norm of ``Q`` (1 for the identity): the loss's curvature per unit of mass."""
        if self.query is None:
            return 1.0
        return _of_query(self.query, "column_norm_sq", self._column_norm_sq)

    def _column_norm_sq(self) -> float:
        if isinstance(self.query, LinearOperator):
            # One column at a time would be exact; the Frobenius bound is cheap and safe.
            eye = np.eye(self.query.shape[1])
            return float(max(np.sum((self.query @ eye) ** 2, axis=0)))
        q = self.query
        sq = q.multiply(q).sum(axis=0) if sp.issparse(q) else np.sum(q * q, axis=0)
        return float(np.max(sq))

    def total_estimate(self) -> tuple[float, float] | None:
        """An unbiased estimate of the record count from this measurement, and its variance.

        When some weights ``a`` satisfy ``Qᵀa = 1`` (every cell of the marginal
        is recovered exactly once: the marginal itself, a partition of its
        cells, rescaled cells), ``aᵀy`` estimates ``Σ μ`` with variance
        ``σ²‖a‖²``; otherwise ``None``.
        """
        if self.query is None:
            return float(self.values.sum()), self.sigma**2 * self.n_answers
        a = _of_query(self.query, "total_weights", self._total_weights)
        if a is None:
            return None
        return float(a @ self.values), self.sigma**2 * float(a @ a)

    def _total_weights(self) -> np.ndarray | None:
        """``a`` with ``Qᵀa = 1``, or ``None`` when there is none."""
        ones = np.ones(self.query.shape[1])
        if isinstance(self.query, np.ndarray):
            a = np.linalg.lstsq(self.query.T, ones, rcond=None)[0]
        else:
            a = lsqr(self.query.T if sp.issparse(self.query) else self.query.H, ones, atol=1e-12, btol=1e-12)[0]
        return a if np.allclose(self.adjoint(a), ones, atol=1e-8) else None


# What a measurement derives from its query alone, kept while the query lives: every estimate asks again (PPSyn and
# AIM estimate from all the fit's measurements each round). Kept here, not on the measurement, so that a fitted
# model holds nothing but what it was given.
_DERIVED: dict = {}


def _of_query(query, name: str, compute):
    """``compute()``, computed once per query object (``name`` says which derived quantity it is)."""
    key = (id(query), name)
    held = _DERIVED.get(key)
    if held is not None and held[0]() is query:
        return held[1]
    value = compute()
    try:   # the entry goes with the query (before its id can be reused); the callback holds the dict itself,
        # because a query freed while the interpreter shuts down finds this module's globals already None
        _DERIVED[key] = (weakref.ref(query, lambda _, key=key, cache=_DERIVED: cache.pop(key, None)), value)
    except TypeError:
        pass
    return value


def minimum_variance_total(measurements: Iterable[Measurement]) -> float | None:
    """Minimum-variance unbiased estimate of the record count from the measurements.

    Each measurement that determines the total (see
    :meth:`Measurement.total_estimate`) gives an unbiased estimate ``T_i`` with
    variance ``v_i``; they are combined as ``Σ (T_i / v_i) / Σ (1 / v_i)``.
    Returns ``None`` when no measurement qualifies.

    Examples
    --------
    >>> from skdpsynth.graphical import Measurement, minimum_variance_total
    >>> ms = [Measurement(("a",), [30.0, 70.0], sigma=1.0), Measurement(("b",), [20.0, 50.0, 34.0], sigma=2.0)]
    >>> round(minimum_variance_total(ms), 4)
    100.5714
    >>> minimum_variance_total([]) is None
    True
    """
    num = den = 0.0
    for m in measurements:
        est = m.total_estimate()
        if est is not None:
            t, v = est
            num += t / v
            den += 1.0 / v
    return num / den if den > 0 else None


def _diagonal(m: Measurement) -> np.ndarray | None:
    """The diagonal of ``Q`` when it is the identity or diagonal, else ``None``."""
    if m.query is None:
        return np.ones(m.n_answers)
    q = m.query
    if sp.issparse(q):
        if q.shape[0] == q.shape[1] and q.nnz == np.count_nonzero(q.diagonal()):
            return np.asarray(q.diagonal(), dtype=float)
        return None
    if isinstance(q, np.ndarray) and q.shape[0] == q.shape[1] and np.count_nonzero(q - np.diag(np.diag(q))) == 0:
        return np.diag(q).astype(float)
    return None


def _weighted_simplex_projection(z: np.ndarray, w: np.ndarray, total: float) -> np.ndarray:
    """``argmin Σ w_i (μ_i − z_i)²`` over ``μ ≥ 0, Σ μ = total`` (exact, by sorting the breakpoints).

    KKT: ``μ_i = max(z_i − θ / w_i, 0)`` with ``θ`` such that the sum is ``total``.
    """
    order = np.argsort(-(z * w), kind="stable")
    zs, inv = z[order], 1.0 / w[order]
    theta = (np.cumsum(zs) - total) / np.cumsum(inv)
    active = np.nonzero(zs * w[order] > theta)[0]
    k = active[-1] if active.size else 0
    return np.maximum(z - theta[k] / w, 0.0)


def independent_estimate(domain: Domain, measurements: Iterable[Measurement],
                         known_total: float | None = None) -> dict[str, np.ndarray] | None:
    """The exact fit of a model of independent attributes to 1-way measurements.

    For 1-way measurements with identity or diagonal queries, the
    estimation problem separates by attribute: each marginal is the
    weighted least-squares projection of its measurements onto the
    non-negative vectors summing to the record count, solved exactly (what
    :func:`mirror_descent` approaches iteratively).

    Parameters
    ----------
    domain : Domain
    measurements : iterable of Measurement
        Every one over a single attribute, identity or diagonal ``Q``; every
        attribute of ``domain`` measured.
    known_total : float, optional
        Default :func:`minimum_variance_total`.

    Returns
    -------
    dict of str to ndarray, or None
        Each attribute's estimated marginal (summing to the total); ``None``
        when the measurements are not of that form (use :func:`mirror_descent`).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import Measurement
    >>> from skdpsynth.graphical.estimation import independent_estimate
    >>> dom = Domain(["a"], [3])
    >>> est = independent_estimate(dom, [Measurement(("a",), [60.0, 45.0, -5.0], 1.0)])
    >>> np.round(est["a"], 6).tolist()
    [57.5, 42.5, 0.0]
    """
    measurements = list(measurements)
    weights = {a: np.zeros(domain[a]) for a in domain.attrs}
    sums = {a: np.zeros(domain[a]) for a in domain.attrs}
    for m in measurements:
        if len(m.clique) != 1 or m.clique[0] not in weights:
            return None
        q = _diagonal(m)
        if q is None or q.size != domain[m.clique[0]]:
            return None
        weights[m.clique[0]] += q**2 / m.sigma**2
        sums[m.clique[0]] += q * m.values / m.sigma**2
    if any((w <= 0).any() for w in weights.values()):
        return None
    if known_total is None:
        known_total = minimum_variance_total(measurements)
        if known_total is None:
            return None
    total = max(float(known_total), 1.0)
    return {a: _weighted_simplex_projection(sums[a] / weights[a], weights[a], total) for a in domain.attrs}


@dataclass
class EstimationInfo:
    """Diagnostics of one :func:`mirror_descent` run.

    Examples
    --------
    >>> from skdpsynth.graphical import EstimationInfo
    >>> info = EstimationInfo(iterations=10, loss=8.0, step_size=0.5, n_oracle_calls=12, seconds=0.01,
    ...                       converged=True, n_answers=8)
    >>> info.residual
    1.0
    """

    iterations: int
    loss: float
    step_size: float
    n_oracle_calls: int
    seconds: float
    converged: bool
    loss_history: list[float] = field(default_factory=list, repr=False)
    n_answers: int = 0

    @property
    def residual(self) -> float:
        """Root-mean-square of the standardized residuals (Q μ − y) / σ over all measured answers.

        About 1 when the model fits the measurements to their noise level;
        well above 1 means the estimate has not converged (or the
        measurements are inconsistent beyond their noise).
        """
        return float(np.sqrt(self.loss / self.n_answers)) if self.n_answers else float("nan")


def _canonical_measurement(domain: Domain, m: Measurement) -> Measurement:
    canon = domain.canonical(m.clique)
    if canon == m.clique:
        return m
    if m.query is not None:
        raise ValueError(
            f"Measurement of {m.clique}: a query matrix must be written against the canonical "
            f"clique order {canon}."
        )
    shape = tuple(domain[a] for a in m.clique)
    perm = [m.clique.index(a) for a in canon]
    return Measurement(canon, m.values.reshape(shape).transpose(perm), m.sigma)


def mirror_descent(
    domain: Domain,
    measurements: Sequence[Measurement],
    *,
    known_total: float | None = None,
    potentials: Mapping[tuple[str, ...], np.ndarray] | GraphicalModel | None = None,
    cliques: Iterable[Iterable[str]] = (),
    iters: int = 1000,
    step_size: float | None = None,
    tol: float = 0.0,
    backtracking_steps: int = 25,
    step_growth: float = 1.05,
    callback: Callable[[int, float], None] | None = None,
    target_loss: float | None = None,
    method: str = "accelerated",
) -> tuple[GraphicalModel, EstimationInfo]:
    """Fit a :class:`GraphicalModel` to noisy measurements (Private-PGM estimation).

    Parameters
    ----------
    domain : Domain
    measurements : sequence of Measurement
    known_total : float, optional
        The record count if it is known (public, or already released).  By
        default the minimum-variance unbiased estimate from the measurements
        (:func:`minimum_variance_total`).
    potentials : mapping or GraphicalModel, optional
        Warm start: log-potentials of a previous fit.  Each clique is added into
        a model clique containing it (cliques contained in none are added as
        model cliques).
    cliques : iterable of tuple, optional
        Extra cliques to include in the model structure.
    iters : int
        Maximum number of mirror-descent iterations.
    step_size : float, optional
        Initial step, e.g. where a previous fit ended (warm start); it never
        starts below the safe step ``2 / Lipschitz`` (the default), where
        ``Lipschitz = 2 N Σ_i c_i / σ_i²`` bounds the curvature of the loss
        relative to the entropy of the normalised model (``c_i`` = largest
        squared column norm of ``Q_i``).
    tol : float
        Stop early when the relative decrease of the loss over the last 10
        iterations falls below ``tol``, or its decrease below 0.01 (the loss
        is a χ² statistic; 0 runs all ``iters``).
    backtracking_steps : int
        Armijo backtracking: the step is halved up to this many times per
        iteration until the loss decreases sufficiently.
    step_growth : float
        Each iteration first tries the previous step times this factor.
    callback : callable, optional
        ``callback(iteration, loss)`` after every iteration (progress, logging).
    target_loss : float, optional
        Stop as soon as the loss is at most this.  With the number of answers
        (``Σ_i n_i``) it is Morozov's discrepancy principle: stop once the
        model fits the measurements to their noise level (standardized
        residuals of root-mean-square 1); iterating further fits the noise.
    method : {"accelerated", "armijo"}, default="accelerated"
        ``"armijo"``: entropic mirror descent with Armijo backtracking
        (McKenna et al. 2019, Algorithm 1), monotone, linear convergence on
        small well-conditioned problems.  ``"accelerated"``: Tseng's
        accelerated mirror descent with backtracking and adaptive restart
        (the accelerated family Private-PGM also offers), ``O(1/k²)``
        instead of ``O(1/k)``: on real fits (many records, skewed data,
        large domains) it reaches in far fewer iterations a loss that plain
        mirror descent does not reach (``doc/engine.md``).  Its
        iterations cost the same (one belief propagation each); the model
        returned is the best one visited.

    Returns
    -------
    model : GraphicalModel
    info : EstimationInfo

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import Measurement, mirror_descent
    >>> dom = Domain(["a", "b"], [2, 2])
    >>> ms = [Measurement(("a",), [30.0, 70.0], 1.0), Measurement(("a", "b"), [20.0, 10, 30, 40], 1.0)]
    >>> model, info = mirror_descent(dom, ms, iters=500)
    >>> np.round(model.project(["a", "b"]), 1).tolist()
    [[20.0, 10.0], [30.0, 40.0]]
    """
    if method not in ("accelerated", "armijo"):
        raise ValueError(f"method must be 'armijo' or 'accelerated', got {method!r}.")
    start = time.perf_counter()
    # One BLAS thread: the tables' sums are BLAS products there (tables.sum_over), bit for bit the same on any
    # machine, and the passes' own threads use the cores.
    with table_ops.single_threaded_blas():
        problem = _Problem(domain, measurements, known_total, potentials, cliques)
        fit = _accelerated if method == "accelerated" else _armijo
        return fit(problem, iters, step_size, tol, backtracking_steps, step_growth, callback, target_loss, start)


def fit_under_constraints(model: GraphicalModel, allowed_cells, iters: int = 200) -> GraphicalModel:
    """The model re-estimated with structural zeros: as close as it can get to its own clique marginals while
    every forbidden cell has probability 0.

    Multiplying a model by a constraint's indicator (:meth:`GraphicalModel.constrain`) alone redistributes
    the mass of the forbidden cells in proportion to what is left, which can pull the marginals the method
    measured away from the measurements (an education level whose number of years the model had spread
    would lose most of its records).  Here the constrained model is the start of a mirror descent
    (:func:`mirror_descent`) whose targets are the unconstrained model's marginals on its cliques; the
    forbidden cells stay at probability 0 throughout.  Post-processing: it reads the model only.

    Parameters
    ----------
    model : GraphicalModel
    allowed_cells : iterable of (sequence of str, bool ndarray)
        As for :meth:`GraphicalModel.constrain`.
    iters : int, default=200
        Mirror-descent iterations.

    Returns
    -------
    GraphicalModel
        Over the same domain and total.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel, fit_under_constraints
    >>> dom = Domain(["level", "years"], [2, 2])
    >>> spread = GraphicalModel(dom, {("level",): np.log([0.5, 0.5]), ("years",): np.log([0.5, 0.5])}, total=100)
    >>> fixed = np.eye(2, dtype=bool)                     # each level fixes its years
    >>> spread.constrain([(("level", "years"), fixed)]).project(["level"]).round(1).tolist()
    [50.0, 50.0]
    >>> fit_under_constraints(spread, [(("level", "years"), fixed)]).project(["level", "years"]).round(1).tolist()
    [[50.0, 0.0], [0.0, 50.0]]
    """
    allowed_cells = list(allowed_cells)
    targets = [Measurement(c, model.project(list(c)).ravel(), 1.0) for c in model.cliques]
    refit, _ = mirror_descent(model.domain, targets, known_total=model.total,
                              potentials=model.constrain(allowed_cells), iters=iters)
    return refit


_WARM_START_FLOOR = 30.0


class _Problem:
    """The estimation problem on its junction tree: loss, gradient, and the potentials they move.

    The junction-tree tables are linear in the model-clique potentials ``θ``,
    so a trial step is one subtraction per table: ``tables − α · (assembled
    gradient)``; ``θ`` itself is only updated when a step is accepted.
    """

    def __init__(self, domain, measurements, known_total, potentials, cliques):
        measurements = [_canonical_measurement(domain, m) for m in measurements]
        for m in measurements:
            expected = m.query.shape[1] if m.query is not None else m.n_answers
            if expected != domain.size(m.clique):
                raise ValueError(
                    f"Measurement of {m.clique} acts on {expected} cells but the clique has {domain.size(m.clique)}."
                )
        if known_total is None:
            known_total = minimum_variance_total(measurements)
            if known_total is None:
                raise ValueError("No measurement estimates the record count; pass known_total.")
        self.domain = domain
        self.total = total = max(float(known_total), 1.0)
        self.n_answers = sum(m.n_answers for m in measurements)

        warm_model = potentials if isinstance(potentials, GraphicalModel) else None
        if warm_model is not None:
            potentials = potentials.potentials
        warm = {domain.canonical(c): np.asarray(v, float) for c, v in (potentials or {}).items()}
        model_cliques = maximal_cliques(
            [domain.canonical(c) for c in cliques] + [m.clique for m in measurements] + list(warm)
        )
        model_cliques = [domain.canonical(c) for c in model_cliques]
        self.theta = theta = {c: np.zeros(domain.shape_of(c)) for c in model_cliques}
        for c, v in warm.items():
            host = next(mc for mc in model_cliques if set(c) <= set(mc))
            table_ops.add(theta[host], v.reshape(broadcast_shape(domain, host, c)), out=theta[host])

        self.jt = jt = JunctionTree.from_cliques(domain, model_cliques)
        # Each measured clique is read from one junction-tree clique, and its gradient
        # goes to one model clique (which lives in one junction-tree clique).
        self.measured = measured = list(dict.fromkeys(m.clique for m in measurements))
        owner = {c: next(mc for mc in model_cliques if set(c) <= set(mc)) for c in measured}
        self.host = {c: jt.clique_containing(c) for c in measured}
        self.reads = _read_plan(domain, jt, self.host)
        # The gradient's way back along the plan (gradient_terms, the hot loop): each step's gradient with the
        # summed axes restored as ones, and the shape of what it broadcasts to.
        self.adjoint_reads = [(key, source, axes, _with_unit_axes(domain.shape_of(key[1]), axes),
                               None if isinstance(source, int) else domain.shape_of(source[1]))
                              for key, source, axes in reversed(self.reads)]
        self.measured_shapes = {c: domain.shape_of(c) for c in measured}
        self.groups = {c: [] for c in measured}
        for m in measurements:
            self.groups[m.clique].append(m)
        # What the loss reads of each measurement, looked up once (loss_and_grad is the innermost loop):
        # (μ ↦ Qμ, r ↦ Qᵀr, answers, σ², 2/σ²).
        self.loss_terms = [
            (c, [(*m.products(), m.values, m.sigma**2, 2.0 / m.sigma**2) for m in self.groups[c]])
            for c in measured]
        # Where each measured clique's gradient lands in the potentials: its owner model clique (shape
        # precomputed: hot loop).  The tables get it along the read plan (gradient_terms).
        self.lands = {c: (owner[c], broadcast_shape(domain, owner[c], c)) for c in measured}
        self.table_shapes = [domain.shape_of(c) for c in jt.cliques]
        # Curvature of the loss relative to the entropy of the normalised model:
        # L(μ') − L(μ) − ⟨∇L(μ), μ' − μ⟩ ≤ ½ · lipschitz · N · ‖p' − p‖₁².
        self.lipschitz = 2.0 * total * sum(m.column_norm_sq() / m.sigma**2 for m in measurements)
        # (marginals, log-partition) of θ when already made (then the estimate's first pass is skipped).
        # A warm start from a model calibrated on this very junction tree, with the same cliques (so θ holds its
        # potentials unchanged): its marginals are those of the first tables, and the first pass is saved
        # (AIM's annealing continues a round's estimate in chunks, each a new estimate from the last).
        self._theta_calibration = None
        if warm_model is not None and set(model_cliques) == set(warm):
            cached = warm_model.cached_calibration()
            if cached is not None and cached[0].same_structure(jt):
                marginals, log_z = cached[1:]
                if warm_model.total != total:   # new measurements estimate the record count anew
                    marginals = [m * (total / warm_model.total) for m in marginals]
                self._theta_calibration = (marginals, log_z)
        if warm:
            self._lift_vanishing_cells()

    def _lift_vanishing_cells(self) -> None:
        """Warm start: lift potentials more than 30 below their clique's largest to that floor, when harmless.

        A previous fit drives the potentials of cells measured at or below zero towards −∞ (their gradient
        never vanishes); from there new measurements that put mass in them take thousands of steps to be
        heard.  Lifted to e^−30 of the clique's largest cell they carry no mass to speak of, and only the
        starting point moves, not the optimum.  But overlapping cliques' potentials can carry large
        offsetting values (only their sum matters), and cells that several cliques hold low get lifted by
        each: on AIM rounds at ε = 10 that raised the starting loss from 7 900 to 3·10⁸.  So the lift is kept
        only when it does not raise the loss (two belief propagations).
        """
        # Impossible cells (a constraint's, GraphicalModel.constrain) stay impossible.
        floored = {c: np.where(v <= _IMPOSSIBLE / 2, v, np.maximum(v, v.max() - _WARM_START_FLOOR)) if v.size else v
                   for c, v in self.theta.items()}
        if all(np.array_equal(floored[c], v) for c, v in self.theta.items()):
            return
        losses, calibrations = [], []
        for theta in (self.theta, floored):
            if theta is self.theta and self._theta_calibration is not None:
                calibration = self._theta_calibration
            else:
                calibration = self.calibrate(assemble_potentials(self.jt, theta))
            calibrations.append(calibration)
            losses.append(self.loss_and_grad(self.measured_marginals(calibration[0]), gradient=False)[0])
        # Either way, the kept potentials' calibration is at hand: the estimate starts from it.
        if losses[1] <= losses[0] * (1 + 1e-9) + 1e-9:
            self.theta = floored
            self._theta_calibration = calibrations[1]
        else:
            self._theta_calibration = calibrations[0]

    def initial_calibration(self, tables):
        """:meth:`calibrate` of the first tables, or the one already made of them (the warm start's own, or the
        lift's)."""
        if self._theta_calibration is not None:
            return self._theta_calibration
        return self.calibrate(tables)

    def calibrate(self, tables):
        """Belief propagation: (junction-tree marginals, log-partition)."""
        return belief_propagation(self.jt, tables, self.total)

    def measured_marginals(self, marginals) -> dict:
        """Each measured clique's marginal (flattened), summed out of the junction-tree marginals."""
        partial = {}
        for key, source, axes in self.reads:
            base = marginals[source] if isinstance(source, int) else partial[source]
            partial[key] = reduce_axes(base, axes)
        return {c: partial[(self.host[c], c)].ravel() for c in self.measured}

    def loss_and_grad(self, mus, gradient: bool = True) -> tuple[float, dict | None]:
        """``Σ_i ‖Q_i μ_i − y_i‖² / σ_i²`` and (unless ``gradient=False``) its gradient, per measured clique."""
        loss, grads = 0.0, ({} if gradient else None)
        for c, terms in self.loss_terms:
            mu, g = mus[c], None
            for apply, adjoint, answers, variance, scale in terms:
                r = apply(mu) - answers
                loss += float(r @ r) / variance
                if gradient:
                    gm = scale * adjoint(r)
                    g = gm if g is None else g + gm
            if gradient:
                grads[c] = g
        return loss, grads

    def gradient_terms(self, grads) -> list:
        """The loss gradient on each junction-tree table, as arrays that broadcast to it and sum to it
        (``None`` where no measured clique lands).

        The adjoint of :meth:`measured_marginals`: each clique's gradient is broadcast back along the read
        plan's shared partial sums (which are summed here: they are small), so a large table gets one term
        per plan step that reads it, not one per measured clique it hosts.  The terms are summed into the
        step itself (:func:`.tables.step`), block by block, never as a whole table.  A clique's gradient may
        land in another table than its owner potential's (:meth:`move_potentials`): only the tables' sum,
        the model's log-density, matters.
        """
        acc = {(self.host[c], c): grads[c].reshape(self.measured_shapes[c]) for c in self.measured}
        terms: list = [None] * len(self.jt.cliques)
        owned = set()   # partial sums that are this call's own arrays (the others are views: added out of place)
        for key, source, axes, unit_axes_shape, source_shape in self.adjoint_reads:
            g = acc.pop(key, None)
            if g is None:
                continue
            g = g.reshape(unit_axes_shape) if axes else g   # np.expand_dims, without its checks
            if isinstance(source, int):
                terms[source] = [g] if terms[source] is None else terms[source] + [g]
            elif source not in acc:
                acc[source] = np.broadcast_to(g, source_shape)
            elif source in owned:
                table_ops.add(acc[source], g, out=acc[source])
            else:
                acc[source] = table_ops.add(acc[source], g)
                owned.add(source)
        return terms

    def start_tables(self) -> list:
        """The junction-tree tables of ``θ``, the large ones exponentiated (:mod:`.exp_tables`): the steps
        multiply them by the exponentials of the small gradient terms, and belief propagation never takes the
        exponential of a whole table again."""
        return [exponentiate(t) for t in assemble_potentials(self.jt, self.theta)]

    @staticmethod
    def step_tables(tables, gradient_terms, step: float) -> list:
        """``tables − step · gradient`` (for exponentiated tables, their product with ``exp(−step · gradient)``),
        the untouched tables shared, not copied."""
        return [t if g is None else step_table(t, step, g) for t, g in zip(tables, gradient_terms)]

    def move_potentials(self, grads, alpha: float) -> None:
        """``θ ← θ − α ∇L``: the step a trial of the tables took, made on the model's potentials."""
        for c in self.measured:
            o, shape = self.lands[c]
            self.theta[o] = self.theta[o] - alpha * grads[c].reshape(shape)

    def model(self, marginals, log_z) -> GraphicalModel:
        model = GraphicalModel(self.domain, self.theta, self.total)
        model.set_calibration(self.jt, marginals, log_z)
        return model




def _with_unit_axes(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` with a 1 inserted at each of ``axes`` (of the result): the shape ``np.expand_dims`` gives."""
    sizes = iter(shape)
    return tuple(1 if i in axes else next(sizes) for i in range(len(shape) + len(axes)))


def _read_plan(domain: Domain, jt: JunctionTree, host: dict) -> list:
    """How to sum every measured clique out of the junction-tree marginals with few passes over large tables.

    Returns steps ``(key, source, axes)``: sum ``source`` (a table index, or
    the key of an earlier step) over ``axes`` into ``key = (table, attributes)``.
    The cliques a table hosts are read through shared partial sums: first the
    union of what is needed, then, recursively, the attribute that fewest
    targets need is summed out once for all the targets without it.
    """
    steps = []

    def add(key, source, src_attrs):
        steps.append((key, source, tuple(i for i, a in enumerate(src_attrs) if a not in key[1])))

    def plan(h, source, src_attrs, targets):
        union = domain.canonical(set().union(*targets))
        if union != src_attrs:
            add((h, union), source, src_attrs)
            source, src_attrs = (h, union), union
        if (h, src_attrs) not in {s[0] for s in steps} and src_attrs in targets:
            add((h, src_attrs), source, src_attrs)              # no sum: the table itself (the root's case)
        rest = [t for t in targets if t != src_attrs]
        if len(rest) <= 1:
            for t in rest:
                add((h, t), source, src_attrs)
            return
        drop = min(src_attrs, key=lambda a: sum(a in t for t in rest))
        without = [t for t in rest if drop not in t]
        within = [t for t in rest if drop in t]
        if without:
            plan(h, source, src_attrs, without)
        if within:
            plan(h, source, src_attrs, within)

    by_table: dict[int, list] = {}
    for c, h in host.items():
        by_table.setdefault(h, []).append(c)
    for h, targets in by_table.items():
        plan(h, h, jt.cliques[h], targets)
    return steps


def _start_step(problem: _Problem, step_size, scale: float) -> tuple[float, float]:
    """(initial step, safe step ``scale / lipschitz``); a warm-start step never starts below the safe one.

    A previous fit that ended at its optimum may have halved its step to
    nothing, and the early stop would then end this fit before it moves.
    """
    safe = scale / problem.lipschitz if problem.lipschitz > 0 else 1.0
    return (safe if step_size is None else max(float(step_size), safe)), safe


# The loss is a χ² statistic (residuals in units of their noise): a decrease below this over 10 iterations is
# far below anything the measurements can tell apart.
_CHI2_RESOLUTION = 1e-2


def _converged(history, tol) -> bool:
    """Decrease of the loss over the last 10 iterations at most ``tol`` (relative) or ``_CHI2_RESOLUTION``."""
    if tol <= 0 or len(history) <= 10:
        return False
    return history[-11] - history[-1] <= max(tol * max(abs(history[-11]), 1e-12), _CHI2_RESOLUTION)


def _armijo(problem, iters, step_size, tol, backtracking_steps, step_growth, callback, target_loss, start):
    """Entropic mirror descent with Armijo backtracking (Algorithm 1 of McKenna et al. 2019)."""
    alpha, safe_step = _start_step(problem, step_size, 2.0)
    tables = problem.start_tables()
    marginals, log_z = problem.initial_calibration(tables)
    mus = problem.measured_marginals(marginals)
    loss, grads = problem.loss_and_grad(mus)
    history = [loss]
    calls, it = 1, 0
    reached = converged = target_loss is not None and loss <= target_loss

    def line_search(alpha):
        """Armijo backtracking from ``alpha``: (accepted step or None, BP calls, the trial's results)."""
        n_calls = 0
        for _ in range(backtracking_steps + 1):
            new_tables = problem.step_tables(tables, grad_terms, alpha)
            new_marginals, new_log_z = problem.calibrate(new_tables)
            n_calls += 1
            new_mus = problem.measured_marginals(new_marginals)
            new_loss, new_grads = problem.loss_and_grad(new_mus)
            # Armijo condition for mirror descent: L(μ') ≤ L(μ) + ½⟨∇L(μ), μ' − μ⟩.
            predicted = sum(float(grads[c] @ (mus[c] - new_mus[c])) for c in problem.measured)
            if loss - new_loss >= 0.5 * predicted:
                return alpha, n_calls, (new_tables, new_marginals, new_log_z, new_loss, new_grads, new_mus)
            alpha *= 0.5
        return None, n_calls, None

    for it in range(1, 0 if reached else iters + 1):
        grad_terms = problem.gradient_terms(grads)
        alpha *= step_growth
        accepted, n_calls, trial = line_search(alpha)
        calls += n_calls
        if accepted is None and alpha > safe_step:
            # A warm-start step far too large for these measurements: restart from the safe step 2/L.
            accepted, n_calls, trial = line_search(safe_step)
            calls += n_calls
        if accepted is None:
            break  # no acceptable step: at a (numerical) optimum
        alpha = accepted
        new_tables, new_marginals, new_log_z, new_loss, new_grads, new_mus = trial
        problem.move_potentials(grads, alpha)
        tables, marginals, log_z = new_tables, new_marginals, new_log_z
        loss, grads, mus = new_loss, new_grads, new_mus
        history.append(loss)
        if callback is not None:
            callback(it, loss)
        if _converged(history, tol):
            converged = True
            break
        if target_loss is not None and loss <= target_loss:
            converged = reached = True
            break

    info = EstimationInfo(it, loss, alpha, calls, time.perf_counter() - start, converged, history,
                          problem.n_answers)
    return problem.model(marginals, log_z), info


def _accelerated(problem, iters, step_size, tol, backtracking_steps, step_growth, callback, target_loss, start):
    """Accelerated entropic mirror descent with backtracking and adaptive restart.

    Tseng's accelerated method with a Bregman distance (Tseng 2008;
    Hanzely, Richtárik & Xiao 2021, triangle-scaling exponent 2) for the
    normalised model ``p = μ / N`` and the entropy: three sequences,

        y = (1 − θ) x + θ z,   u' = u − (α / θ) ∇L(y),   z' = BP(u'),   x' = (1 − θ) x + θ z',

    where ``u`` are the potentials, ``z`` their (model) marginals and ``x``
    a running average of them (a point of the marginal polytope, not
    itself a model).  The step ``α`` is backtracked until

        L(x') ≤ L(y) + ⟨∇L(y), x' − y⟩ + θ² (N / α) · ½ max_c ‖z'_c − z_c‖₁² / N²,

    with ``c`` over the measured cliques: stricter than the method's test
    with ``KL(z' ‖ z)`` (Pinsker, and marginalising only shrinks the
    distance), computed from the measured marginals alone, and guaranteed by
    the loss's smoothness for ``α ≤ 1 / lipschitz``.  ``θ`` follows
    ``θ'² / α' = (1 − θ') θ² / α``.  When ``L(x)`` rises the momentum is
    restarted (O'Donoghue & Candès 2015) from the best model so far, with
    half the step: θ = 1, an ordinary mirror-descent step.

    The model returned is the best ``z`` visited (the only sequence with
    potentials); the history records its loss.  ``tol`` stops the loop when
    both that loss and the running minimum of ``L(x)`` have stalled.
    """
    alpha, safe_step = _start_step(problem, step_size, 1.0)
    N = problem.total
    tables = problem.start_tables()
    marginals, log_z = problem.initial_calibration(tables)
    z = problem.measured_marginals(marginals)
    loss_z, _ = problem.loss_and_grad(z, gradient=False)
    x, loss_x = z, loss_z
    best = (loss_z, dict(problem.theta), tables, marginals, log_z, z)
    history = [loss_z]
    progress = [loss_x]     # running minimum of L(x): the sequence whose convergence the method guarantees
    calls, it = 1, 0
    theta_prev = None       # None: no momentum (the next step is plain mirror descent from z)
    alpha_prev = alpha
    reached = converged = target_loss is not None and loss_z <= target_loss
    for it in range(1, 0 if reached else iters + 1):
        trial_alpha = alpha * step_growth
        accepted = None
        for _ in range(backtracking_steps + 1):
            if theta_prev is None:
                theta = 1.0
            else:
                r = alpha_prev / (trial_alpha * theta_prev**2)
                theta = 2.0 / (1.0 + np.sqrt(1.0 + 4.0 * r))
            y = {c: (1 - theta) * x[c] + theta * z[c] for c in problem.measured}
            loss_y, grads = problem.loss_and_grad(y)
            step = trial_alpha / theta
            new_tables = problem.step_tables(tables, problem.gradient_terms(grads), step)
            new_marginals, new_log_z = problem.calibrate(new_tables)
            calls += 1
            new_z = problem.measured_marginals(new_marginals)
            new_x = {c: (1 - theta) * x[c] + theta * new_z[c] for c in problem.measured}
            new_loss_x, _ = problem.loss_and_grad(new_x, gradient=False)
            linear = sum(float(grads[c] @ (new_x[c] - y[c])) for c in problem.measured)
            # ½‖z' − z‖₁² of the normalised models is at least that of any measured clique's marginal, and
            # at most KL(z' ‖ z) (Pinsker): so the test is stricter than the KL one, and as safe.
            kl = 0.5 * max(float(np.abs(new_z[c] - z[c]).sum()) for c in problem.measured) ** 2 / N**2
            if new_loss_x <= loss_y + linear + theta**2 * (N / trial_alpha) * kl + 1e-12 * abs(loss_y):
                accepted = trial_alpha
                break
            trial_alpha *= 0.5
        if accepted is None:
            break  # no acceptable step: at a (numerical) optimum
        problem.move_potentials(grads, step)
        tables, marginals, log_z, z = new_tables, new_marginals, new_log_z, new_z
        loss_z, _ = problem.loss_and_grad(z, gradient=False)
        alpha_prev, alpha = accepted, accepted
        if loss_z < best[0]:
            best = (loss_z, dict(problem.theta), tables, marginals, log_z, z)
        if new_loss_x > loss_x:
            if theta_prev is None and alpha_prev <= safe_step * step_growth:
                break  # a plain mirror-descent step at the safe step no longer descends: a (numerical) optimum
            # Restart from the best model so far, with no momentum and half the step: the averaged
            # sequence rose, so the steps outgrew what the loss's curvature allows here.
            loss_z, potentials, tables, marginals, log_z, z = best
            problem.theta = dict(potentials)
            x, loss_x = z, loss_z
            theta_prev, alpha = None, max(alpha / 2, safe_step)
        else:
            theta_prev = theta
            x, loss_x = new_x, new_loss_x
        history.append(best[0])
        progress.append(min(progress[-1], loss_x))
        if callback is not None:
            callback(it, loss_z)
        if _converged(history, tol) and _converged(progress, tol):
            converged = True
            break
        if target_loss is not None and best[0] <= target_loss:
            converged = reached = True
            break

    loss_z, potentials, tables, marginals, log_z, z = best
    problem.theta = dict(potentials)
    info = EstimationInfo(it, loss_z, alpha, calls, time.perf_counter() - start, converged, history,
                          problem.n_answers)
    return problem.model(marginals, log_z), info
