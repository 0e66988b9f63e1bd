"""Estimation: fit a graphical model to noisy linear measurements of marginals.

This is the method of McKenna, Sheldon & Miklau, "Graphical-model based
estimation and inference for differential privacy" (ICML 2019): minimise

    L(μ) = Σ_i ‖Q_i μ_{r_i} − y_i‖² / σ_i²

over the marginal polytope by entropic mirror descent on the potentials of a
Markov random field, with the clique marginals ``μ`` computed exactly by belief
propagation.  Step sizes are chosen by Armijo backtracking.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, lsqr

from ..domain import Domain
from ..marginals import maximal_cliques
from .inference import assemble_potentials, belief_propagation
from .junction_tree import JunctionTree, broadcast_shape, reduce_axes
from .model import GraphicalModel

__all__ = ["Measurement", "mirror_descent", "minimum_variance_total", "independent_estimate", "EstimationInfo"]


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
        held = self.__dict__.get("_query_t")
        if held is None or held[0] is not self.query:
            held = (self.query, self.query.T.tocsr() if sp.issparse(self.query) else self.query.T)
            self.__dict__["_query_t"] = held
        return held[1] @ residual

    def column_norm_sq(self) -> float:
        """Largest squared column norm of ``Q`` (1 for the identity): the loss's curvature per unit of mass."""
        if self.query is None:
            return 1.0
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
        ones = np.ones(self.query.shape[1])
        if isinstance(self.query, np.ndarray):
            a = np.linalg.lstsq(self.query.T, ones, rcond=None)[0]
        else:
            a = lsqr(self.query.T if sp.issparse(self.query) else self.query.H, ones, atol=1e-12, btol=1e-12)[0]
        if not np.allclose(self.adjoint(a), ones, atol=1e-8):
            return None
        return float(a @ self.values), self.sigma**2 * float(a @ a)


def minimum_variance_total(measurements: Iterable[Measurement]) -> float | None:
    """Minimum-variance unbiased estimate of the record count from the measurements.

    Each measurement that determines the total (see
    :meth:`Measurement.total_estimate`) gives an unbiased estimate ``T_i`` with
    variance ``v_i``; they are combined as ``Σ (T_i / v_i) / Σ (1 / v_i)``.
    Returns ``None`` when no measurement qualifies.
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
    """Diagnostics of one :func:`mirror_descent` run."""

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
        iterations falls below ``tol`` (0 runs all ``iters``).
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
    start = time.perf_counter()
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
    total = max(float(known_total), 1.0)

    if isinstance(potentials, GraphicalModel):
        potentials = potentials.potentials
    warm = {domain.canonical(c): np.asarray(v, float) for c, v in (potentials or {}).items()}
    model_cliques = maximal_cliques(
        [domain.canonical(c) for c in cliques] + [m.clique for m in measurements] + list(warm)
    )
    model_cliques = [domain.canonical(c) for c in model_cliques]
    theta = {c: np.zeros(domain.shape_of(c)) for c in model_cliques}
    for c, v in warm.items():
        host = next(mc for mc in model_cliques if set(c) <= set(mc))
        theta[host] += v.reshape(broadcast_shape(domain, host, c))

    jt = JunctionTree.from_cliques(domain, model_cliques)
    # Each measured clique is read from one junction-tree clique, and its gradient
    # goes to one model clique (which lives in one junction-tree clique).
    measured = list(dict.fromkeys(m.clique for m in measurements))
    owner = {c: next(mc for mc in model_cliques if set(c) <= set(mc)) for c in measured}
    # Each measured clique's marginal is summed out of the smallest table already
    # at hand: its junction-tree clique, or a larger measured clique read before it.
    reads = {}
    for c in sorted(measured, key=lambda c: -domain.size(c)):
        h = jt.clique_containing(c)
        source, src_attrs = ("table", h), jt.cliques[h]
        for done in reads:
            if set(c) < set(done) and domain.size(done) < domain.size(src_attrs):
                source, src_attrs = ("measured", done), done
        reads[c] = (source, tuple(i for i, a in enumerate(src_attrs) if a not in c))
    groups: dict[tuple, list[Measurement]] = {c: [] for c in measured}
    for m in measurements:
        groups[m.clique].append(m)

    # Where each measured clique's gradient lands: its owner's potential, and the
    # junction-tree table hosting that owner (shapes precomputed: hot loop below).
    lands = {}
    for c in measured:
        o = owner[c]
        h = jt.clique_containing(o)
        lands[c] = (o, broadcast_shape(domain, o, c), h, broadcast_shape(domain, jt.cliques[h], c))
    table_shapes = [domain.shape_of(c) for c in jt.cliques]

    def loss_and_grad(marginals):
        loss, grads, mus = 0.0, {}, {}
        tables = {}
        for c, ((kind, src), axes) in reads.items():  # largest first
            base = marginals[src] if kind == "table" else tables[src]
            tables[c] = reduce_axes(base, axes)
        for c in measured:
            mu = tables[c].ravel()
            g = None
            for m in groups[c]:
                r = m.apply(mu) - m.values
                loss += float(r @ r) / m.sigma**2
                gm = (2.0 / m.sigma**2) * (r if m.query is None else m.adjoint(r))
                g = gm if g is None else g + gm
            grads[c], mus[c] = g, mu
        return loss, grads, mus

    def gradient_tables(grads):
        """The loss gradient assembled into junction-tree tables (a trial step subtracts α times it)."""
        out = [None] * len(jt.cliques)
        for c in measured:
            _, _, h, shape = lands[c]
            g = grads[c].reshape(shape)
            out[h] = g if out[h] is None else out[h] + g
        return [np.zeros(s) if g is None else np.broadcast_to(g, s) for g, s in zip(out, table_shapes)]

    lipschitz = 2.0 * total * sum(m.column_norm_sq() / m.sigma**2 for m in measurements)
    safe_step = 2.0 / lipschitz if lipschitz > 0 else 1.0
    # A warm-start step never starts below the safe step: a previous fit that ended at its optimum may have
    # halved its step to nothing, and the early stop would then end this fit before it moves.
    alpha = safe_step if step_size is None else max(float(step_size), safe_step)

    # The junction-tree tables are linear in the potentials, so a trial step is
    # one subtraction per junction-tree clique: tables − α · (assembled gradient).
    tables = assemble_potentials(jt, theta)
    marginals, log_z = belief_propagation(jt, tables, total)
    loss, grads, mus = loss_and_grad(marginals)
    history = [loss]
    calls, converged, it = 1, False, 0
    reached = converged = target_loss is not None and loss <= target_loss
    def line_search(alpha):
        """Armijo backtracking from ``alpha``: (accepted step or None, BP calls, the trial's results)."""
        n_calls = 0
        for _ in range(backtracking_steps + 1):
            new_tables = [t - alpha * g for t, g in zip(tables, grad_tables)]
            new_marginals, new_log_z = belief_propagation(jt, new_tables, total)
            n_calls += 1
            new_loss, new_grads, new_mus = loss_and_grad(new_marginals)
            # Armijo condition for mirror descent: L(μ') ≤ L(μ) + ½⟨∇L(μ), μ' − μ⟩.
            predicted = sum(float(grads[c] @ (mus[c] - new_mus[c])) for c in measured)
            if loss - new_loss >= 0.5 * predicted:
                return alpha, n_calls, (new_tables, new_marginals, new_log_z, new_loss, new_grads, new_mus)
            alpha *= 0.5
        return None, n_calls, None

    for it in range(1, 0 if reached else iters + 1):
        grad_tables = gradient_tables(grads)
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
        for c in measured:
            o, shape, _, _ = lands[c]
            theta[o] = theta[o] - alpha * grads[c].reshape(shape)
        tables, marginals, log_z = new_tables, new_marginals, new_log_z
        loss, grads, mus = new_loss, new_grads, new_mus
        history.append(loss)
        if callback is not None:
            callback(it, loss)
        if tol > 0 and it >= 10 and history[-11] - loss <= tol * max(abs(history[-11]), 1e-12):
            converged = True
            break
        if target_loss is not None and loss <= target_loss:
            converged = reached = True
            break

    model = GraphicalModel(domain, theta, total)
    model.set_calibration(jt, marginals, log_z)
    info = EstimationInfo(it, loss, alpha, calls, time.perf_counter() - start, converged, history,
                          sum(m.n_answers for m in measurements))
    return model, info
