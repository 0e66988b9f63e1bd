"""ViewSynthesizer: DPView and DPView+ (Lin, Yu & Huang), pure ε-DP synthesis by linking views.

The pipeline, with the steps and sections of the paper (§IV, Fig. 1):

* S1 (§IV-B) — categorical codes over a public domain: done by the base class
  (numeric columns are bucketized beforehand, e.g. by
  :class:`~skdpsynth.preprocessing.DPKBinsDiscretizer` with public bounds in a
  :class:`~skdpsynth.pipeline.SynthesisPipeline`);
* S2 (§IV-C) — views from public domain sizes only (:mod:`.views`), their
  size chosen by default from the sizes, ε and a DP record count
  (:func:`~.views.auto_view_size`);
* S3 (§IV-D) — one Laplace measurement per view with budget ``P_i ε``,
  ``P_i ∝ dom(v_i)^{1/3}`` (:mod:`.allocation`), and by default one Laplace
  record count: the only data access;
* S4 (§IV-E) — consistency / non-negativity loop (:mod:`.postprocess`);
  consistency-aware normalization runs at sampling time, for the requested
  number of records;
* S5 (§IV-F, §IV-G) — linking ``b_1 → c_1 → b_2 → …`` (:mod:`.linking`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from ...domain import Domain
from ...marginals import marginal
from ...params import Interval, Options
from ...privacy import PrivacyLedger, laplace_mechanism
from ...utils import check_memory
from ..base import BaseSynthesizer
from .allocation import budget_shares
from .linking import integer_reference, link
from .postprocess import con_neg_loop, concentration, consistency_gap, negative_mass, normalize
from .views import ViewPlan, _expected_error, auto_view_size, view_domain_size, view_list_generation

__all__ = ["ViewSynthesizer", "ViewModel", "measure_views"]

#: Peak bytes per view cell (counted, noised, made consistent and linked): 36 measured on a 3,000,000-value column.
_VIEW_BYTES_PER_CELL = 48

_VARIANTS = ("dpview", "dpview+")


@dataclass
class ViewModel:
    """The fitted DPView model: views, post-processed (DP) tables and per-view noise thresholds.

    Attributes
    ----------
    plan : ViewPlan
        The views, as attribute positions.
    sizes : tuple of int
        Domain size of every attribute.
    tables : list of ndarray
        Post-processed tables, one per view of ``plan.views``: exactly consistent; negative mass at most
        ``postprocess_tol · n̂`` (normalization treats negative cells as 0).
    rhos : ndarray
        Per-view noise bound ``ρ_i = −ln(1−γ)/(P_i ε)`` used to pick the start view of normalization.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.view.synthesizer import ViewModel
    >>> from skdpsynth.synthesizers.view.views import ViewPlan
    >>> plan = ViewPlan(base=((0, 1), (1, 2)), cross=(), upper=(), view_type="III", total_size=8, feasible=True,
    ...                 compensation=(1,))
    >>> tables = [np.array([[2.0, 1.0], [0.0, 1.0]]), np.array([[1.0, 1.0], [0.0, 2.0]])]   # agree on attribute 1
    >>> model = ViewModel(plan, (2, 2, 2), tables, np.array([0.5, 0.5]))
    >>> codes, lost = model.synthesize(4, np.random.default_rng(0))
    >>> codes.shape, lost
    ((4, 3), 0)
    >>> sorted(map(tuple, codes.tolist()))
    [(0, 0, 0), (0, 0, 1), (0, 1, 1), (1, 1, 1)]
    """

    plan: ViewPlan
    sizes: tuple[int, ...]
    tables: list
    rhos: np.ndarray

    def synthesize(self, n: int, rng: np.random.Generator, return_tables: bool = False):
        """``n`` records (codes) by normalization (§IV-E3) and linking (§IV-F); post-processing only.

        Returns ``(codes, n_unmatched)``, plus the normalized integer tables of
        the chain views (``{view index: table}``) when ``return_tables``.
        """
        plan, sizes = self.plan, self.sizes
        views, chain = plan.views, plan.chain
        if n == 0:
            empty = np.empty((0, len(sizes)), dtype=np.intp)
            zeros = {i: np.zeros([sizes[a] for a in views[i]], dtype=np.int64) for i in chain}
            return (empty, 0, zeros) if return_tables else (empty, 0)
        normalized, _ = normalize(self.tables, views, chain, n, self.rhos, rng)
        first_upper = len(plan.base) + len(plan.cross)
        # DPView+: u_i is the reference when b_{i+1} is linked (§IV-G).
        references = {i + 1: (integer_reference(self.tables[first_upper + i], n, rng), views[first_upper + i])
                      for i in range(len(plan.upper))}
        codes, lost = link(normalized, views, chain, sizes, rng, references)
        return (codes, lost, normalized) if return_tables else (codes, lost)


def measure_views(codes: np.ndarray, domain: Domain, views, epsilons, rng: np.random.Generator,
                  ledger: PrivacyLedger, kinds=None) -> list[np.ndarray]:
    """S3: each view's full contingency table plus ``Lap(1/ε_i)`` noise on every cell (paper §IV-D).

    Under add/remove-one neighbours one record changes one cell of each table by
    1, so each table has L1 sensitivity 1 and view ``i`` is ``ε_i``-DP; the
    views compose sequentially to ``Σ ε_i``.  One pure ledger entry per view.

    Parameters
    ----------
    codes : ndarray of shape (n, len(domain))
    domain : Domain
    views : sequence of tuple of int
        Attribute positions of each view.
    epsilons : sequence of float
    rng : numpy.random.Generator
    ledger : PrivacyLedger
    kinds : sequence of str, optional
        ``"base"``/``"cross"``/``"upper"``, for the ledger descriptions.

    Returns
    -------
    list of ndarray
        Noisy tables, axes in attribute-position order.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> from skdpsynth.synthesizers.view.synthesizer import measure_views
    >>> dom = Domain(["a", "b", "c"], [2, 2, 3])
    >>> codes = np.array([[0, 1, 2], [1, 1, 0], [0, 1, 2], [0, 0, 1]])
    >>> ledger = PrivacyLedger()
    >>> noisy = measure_views(codes, dom, [(0, 1), (1, 2)], [1e6, 1e6], np.random.default_rng(0), ledger,
    ...                       kinds=["base", "cross"])   # a huge epsilon: almost exact counts
    >>> [np.round(t).astype(int).tolist() for t in noisy]
    [[[1, 2], [0, 1]], [[0, 1, 0], [1, 0, 2]]]
    >>> len(ledger), ledger.total_epsilon()
    (2, 2000000.0)
    """
    kinds = kinds or ["view"] * len(views)
    noisy = []
    for view, eps, kind in zip(views, epsilons, kinds):
        names = [domain.attrs[a] for a in view]
        noisy.append(laplace_mechanism(marginal(codes, domain, names), epsilon=float(eps), sensitivity=1.0,
                                       random_state=rng, ledger=ledger,
                                       description=f"{kind} view {tuple(names)}: Laplace counts"))
    return noisy


def _split_budget(epsilon: float, shares: np.ndarray) -> list[float]:
    """``P_i ε`` per view, the last one taking the remainder so that the ε's sum to ``epsilon`` to rounding."""
    eps = [float(p * epsilon) for p in shares[:-1]]
    return eps + [epsilon - math.fsum(eps)]


class ViewSynthesizer(BaseSynthesizer):
    """DPView / DPView+: pure ε-DP views chosen from public domain sizes, synthesized by linking.

    The attributes are split into base views of ``view_size`` attributes,
    adjacent base views are bridged by cross views (the large-domain half of
    one with the small-domain half of the next), and a random search keeps the
    list with the smallest total number of cells — all from the public domain
    sizes, without looking at the data.  Each view's full contingency table is
    released once with the Laplace mechanism, view ``i`` spending ``P_i ε`` with
    ``P_i ∝ dom(v_i)^{1/3}`` (the split minimising the total noise variance).
    The noisy tables are made consistent (inverse-variance weights ``∝
    P_i²/ξ_i``) and non-negative in alternation, normalized to integer tables
    that agree exactly and sum to the record count, and linked along the chain
    ``b_1 → c_1 → b_2 → …`` by maximum-cardinality matching on the shared
    attributes, which gives exactly the requested number of records.  DPView+
    also measures the upper cross views ``(b_i ∪ b_{i+1}) \\ c_i`` and uses them
    to choose partners when linking.

    By default (``view_size="auto"``) the view size is not the paper's fixed 5
    but the one whose modelled 2-way error is lowest for the domain sizes, ε
    and a DP record count; the attributes whose domains the budget cannot
    afford in a joint view are measured alone, as independent columns
    (:func:`~skdpsynth.synthesizers.view.views.auto_view_size`).  The record
    count ``n̂`` is that DP count.  ``view_size=5, n_estimator="mean"`` is the
    paper's configuration.

    Pure ε-DP (δ = 0) under add/remove-one neighbours: the record count and
    the view tables are the only releases, and ``sample`` is post-processing.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total pure-DP budget ε.
    domain : dict or Domain, optional
        Public domain ``{column: [categories]}`` or ``{column: size}``; see
        :class:`~skdpsynth.synthesizers.base.BaseSynthesizer`.
    view_size : "auto" or int, default="auto"
        ``"auto"``: the view size ``d`` and the attributes measured alone that
        minimise the modelled mean 2-way TVD
        (:func:`~skdpsynth.synthesizers.view.views.auto_view_size`); it reads
        the domain sizes, ε and the record count — the public ``n_public`` if
        given, else the Laplace count of ``count_share``.  An integer ``d >= 2``:
        the paper's base and cross views of ``d`` attributes over every
        attribute (the paper uses 5 for Adult); ``1``: every column alone
        (independent columns).
    variant : {"dpview", "dpview+"}, default="dpview"
        ``"dpview+"`` adds the upper cross views.
    n_search : int, default=1000
        Random candidates of the view-list search (Algorithm 3).
    n_public : int, optional
        A public record count: read by ``view_size="auto"`` and, with
        ``n_estimator="count"``, taken as ``n̂``; then no budget goes to the count.
    count_share : float, default=0.05
        Share of ε spent on a Laplace record count when one is needed
        (``view_size="auto"`` or ``n_estimator="count"``) and ``n_public`` is
        not given; the views get the rest.
    n_estimator : {"count", "mean", "weighted"}, default="count"
        ``n̂``: the record count (the Laplace count, or ``n_public``), or from
        the raw noisy view totals, their mean (the paper, §V-A) or their
        inverse-variance weighted mean (weights ``∝ P_i²/dom(v_i)``).  The
        totals' noise grows with the views' cell counts: with views of 5 on
        Adult at ε = 1, the mean is off by up to 9%.
    budget_allocation : {"optimal", "uniform"}, default="optimal"
        ``P_i ∝ dom(v_i)^{1/3}`` (the paper), or ``1/k`` (ablation).
    consistency_weights : {"optimal", "uniform"}, default="optimal"
        Inverse-variance weights (the paper), or equal weights (ablation).
    max_postprocess_iter : int, default=100
        Cap on the consistency / non-negativity iterations.
    postprocess_tol : float, default=1e-3
        The loop stops when the negative mass left by a consistency pass is at
        most ``postprocess_tol · n̂``.  Whatever is left at the cap is set to 0
        by normalization, which rescales every group anyway; reaching the cap
        is therefore not an error (no warning; see ``postprocess_converged_``,
        and ``doc/deviations.md``, "When the consistency loop stops").
    gamma : float, default=0.95
        Confidence of the noise bound ``ρ_i = −ln(1−γ)/(P_i ε)`` that picks the
        most concentrated view to start normalization from.
    max_view_cells : int, default=50_000_000
        Refuse (before spending any budget) view lists with a larger view;
        ``"auto"`` only tries view sizes whose views cannot be larger.
    constraints : list of Constraint or dict, optional
        Public structural constraints (:mod:`skdpsynth.constraints`): value
        combinations no synthetic record may have, e.g.
        ``[{"forbid": {"relationship": "Husband", "sex": "Female"}}]``.  Public
        metadata, no budget; folded into the fitted model as impossible cells
        (see ``doc/constraints.md``).
    random_state : None, int or numpy.random.Generator
        Seeds the view search, the noise and sampling.  Seeded noise is for
        reproducibility; leave it ``None`` when releasing data.
    verbose : int, default=0
        Progress lines on stderr when > 0.
    privacy_unit : str, optional
        User-level DP: the identifier column of ``X`` (e.g. ``"user_id"``).
        Each person's records are bounded to ``max_contributions`` before
        anything is measured, the identifier is dropped (never synthesized
        and not in the domain) and the guarantee, as ``privacy_ledger_``
        states it, holds per person.  ``X`` must then be a DataFrame.  See
        ``doc/user_level.md``.
    max_contributions : int, optional
        ``k``: records kept per person (chosen uniformly at random within
        each person; a missing identifier is a person of its own); required
        with ``privacy_unit``.  The method runs at the record-level budget
        ``ε/k`` (group privacy), so its noise grows with ``k``.

    Attributes
    ----------
    base_views_, cross_views_, upper_views_ : list of tuple of str
        The views (column names).
    single_views_ : list of tuple of str
        The one-column views of the columns measured alone (chosen by
        ``"auto"``; every column with ``view_size=1``; none with ``d >= 2``).
    view_type_ : {"I", "II", "III", "flat", "independent"}
        The case of the paper's §IV-C2 (Types I–III) for the columns in
        views; ``"flat"``: they fit in a single view; ``"independent"``: every
        column is measured alone.
    view_size_ : int
        The view size used (the chosen one for ``"auto"``; 1 when every column is measured alone).
    view_plan_ : ViewPlan
        The same views as attribute positions, with the linking chain.
    view_domain_sizes_, budget_shares_, epsilons_, noise_scales_ : ndarray
        Per view (base, cross, upper, single order): ``dom(v_i)``, ``P_i``, ``P_i ε`` and ``1/(P_i ε)``.
    expected_error_ : float
        The modelled mean 2-way TVD of the plan at ``n̂`` (what ``"auto"`` minimises; a model, not a measurement).
    n_records_ : int
        ``n̂``, the DP record count (the default number of sampled records).
    n_postprocess_iter_ : int
        Consistency passes run; ``postprocess_converged_`` tells whether the
        tolerance was reached, ``postprocess_negative_mass_`` is the negative
        mass left in the consistent tables (set to 0 by normalization).
    start_view_ : tuple of str
        The view consistency-aware normalization starts from.
    model_ : ViewModel
    privacy_ledger_ : PrivacyLedger
        One pure entry per view, plus the record count when one is released, summing to ε.

    Notes
    -----
    Linking is a grouped construction, not a generic matching algorithm: the
    records agreeing on the shared attributes form complete bipartite blocks,
    and pairing them up block by block is a maximum matching (proof in
    :mod:`skdpsynth.synthesizers.view.linking`); after normalization it is
    perfect.  A column measured alone is linked without shared attributes, by
    a random pairing.  ``sample(n)`` for ``n ≠ n̂`` re-normalizes the tables to
    ``n`` (post-processing), so it always returns exactly ``n`` records.

    Examples
    --------
    >>> from skdpsynth.datasets import load_adult
    >>> from skdpsynth.synthesizers.view import ViewSynthesizer
    >>> adult = load_adult(discretized=True)
    >>> synth = ViewSynthesizer(epsilon=1.0, domain=adult.domain.to_dict(), random_state=0).fit(adult.frame)
    >>> synth.view_size_, synth.view_type_, synth.base_views_   # the automatic rule on Adult at ε = 1
    (4, 'III', [('marital-status', 'relationship', 'sex', 'income>50K'), ('workclass', 'race', 'sex', 'income>50K')])
    >>> [c for (c,) in synth.single_views_]   # the columns the budget cannot afford in a joint view
    ['age', 'fnlwgt', 'education-num', 'occupation', 'capital-gain', 'capital-loss', 'hours-per-week', 'native-country']
    >>> abs(synth.n_records_ / len(adult.frame) - 1) < 0.01   # n̂: a Laplace count with 5% of ε
    True
    >>> synth.sample(100).shape
    (100, 14)
    >>> abs(synth.privacy_ledger_.total_epsilon() - 1.0) < 1e-12
    True

    The paper's configuration: views of ``view_size`` attributes over every column, ``n̂`` from the view totals.

    >>> X = adult.frame[["workclass", "education-num", "marital-status", "race", "sex", "income>50K"]].iloc[:5000]
    >>> paper = ViewSynthesizer(epsilon=1.0, view_size=3, n_estimator="mean",
    ...                         domain=adult.domain.project(X.columns).to_dict(), random_state=0).fit(X)
    >>> paper.view_type_, paper.base_views_
    ('I', [('education-num', 'marital-status', 'sex'), ('workclass', 'race', 'income>50K')])
    >>> paper.cross_views_   # the 1 largest attribute of b_1, the 1 smallest of b_2, 1 more (odd d)
    [('education-num', 'race', 'income>50K')]
    >>> paper.sample().shape == (paper.n_records_, 6)
    True
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        domain=None,
        view_size: int | str = "auto",
        variant: str = "dpview",
        n_search: int = 1000,
        n_public: int | None = None,
        count_share: float = 0.05,
        n_estimator: str = "count",
        budget_allocation: str = "optimal",
        consistency_weights: str = "optimal",
        max_postprocess_iter: int = 100,
        postprocess_tol: float = 1e-3,
        gamma: float = 0.95,
        max_view_cells: int = 50_000_000,
        constraints=None,
        random_state=None,
        verbose: int = 0,
        privacy_unit=None,
        max_contributions: int | None = None,
    ):
        self.epsilon = epsilon
        self.domain = domain
        self.view_size = view_size
        self.variant = variant
        self.n_search = n_search
        self.n_public = n_public
        self.count_share = count_share
        self.n_estimator = n_estimator
        self.budget_allocation = budget_allocation
        self.consistency_weights = consistency_weights
        self.max_postprocess_iter = max_postprocess_iter
        self.postprocess_tol = postprocess_tol
        self.gamma = gamma
        self.max_view_cells = max_view_cells
        self.constraints = constraints
        self.random_state = random_state
        self.verbose = verbose
        self.privacy_unit = privacy_unit
        self.max_contributions = max_contributions

    # -- validation -------------------------------------------------------------------------------------
    def _privacy_budget(self) -> dict:
        return {"epsilon": float(self.epsilon)}   # checked by _check_params (BaseSynthesizer's constraints)

    _parameter_constraints = {
        "view_size": [Options("auto"), Interval(Integral, 1, None)],
        "variant": [Options(*_VARIANTS)],
        "n_search": [Interval(Integral, 1, None)],
        "max_postprocess_iter": [Interval(Integral, 1, None)],
        "max_view_cells": [Interval(Integral, 1, None)],
        "n_public": [None, Interval(Integral, 1, None)],
        "count_share": [Interval(Real, 0, 1, closed="neither")],
        "gamma": [Interval(Real, 0, 1, closed="neither")],
        "postprocess_tol": [Interval(Real, 0, None)],
        "n_estimator": [Options("count", "mean", "weighted")],
        "budget_allocation": [Options("optimal", "uniform")],
        "consistency_weights": [Options("optimal", "uniform")],
    }

    # -- fit ----------------------------------------------------------------------------------------------
    def _fit_codes(self, codes, domain: Domain, ledger: PrivacyLedger, rng, epsilon: float) -> None:
        sizes = tuple(domain.shape)
        # The view plan is released: it gets the fit's public stream, never the noise generator's outputs.
        view_rng, noise_rng = self._public_rng, rng
        plan, d, n_count, eps_views = self._count_and_plan(codes, domain, ledger, view_rng, noise_rng, epsilon)
        view_sizes = np.array([view_domain_size(v, sizes) for v in plan.views], dtype=np.float64)
        self._log(f"{len(plan.views)} views (type {plan.view_type}, d={d}), {int(view_sizes.sum()):,} cells in all")

        # S3 (§IV-D): optimal shares, one Laplace release per view.
        shares = budget_shares(view_sizes, self.budget_allocation)
        epsilons = np.array(_split_budget(eps_views, shares))
        noisy = measure_views(codes, domain, plan.views, epsilons, noise_rng, ledger, plan.kinds)

        # n̂ from the record count or (§V-A) from the noisy totals; never from len(X).
        totals = np.array([t.sum() for t in noisy])
        if self.n_estimator == "count":
            n_hat = n_count
        elif self.n_estimator == "mean":
            n_hat = float(totals.mean())
        else:
            precision = shares**2 / view_sizes  # 1 / variance of each total, up to 2/ε²
            n_hat = float(np.sum(precision * totals) / precision.sum())
        n_hat = max(1, int(round(n_hat)))

        # S4 (§IV-E1, §IV-E2): consistency and non-negativity in alternation.
        tables, n_iter, converged = con_neg_loop(noisy, plan.views, sizes, shares, self.max_postprocess_iter,
                                                 tol=self.postprocess_tol * n_hat, weights=self.consistency_weights)
        del noisy
        # The loop ends on a consistency pass: every pair of views agrees on its intersection.
        gap = consistency_gap(tables, plan.views)
        if gap > 1e-9 * max(n_hat, float(np.abs(totals).max())):  # pragma: no cover - invariant
            raise RuntimeError(f"consistency failed (gap {gap:.3g}); please report this bug.")
        rhos = -math.log(1.0 - self.gamma) / epsilons  # §IV-E3, per-view noise scale (doc/deviations.md)
        chain = plan.chain
        start = chain[int(np.argmax([concentration(tables[i], rhos[i]) for i in chain]))]

        names = lambda view: tuple(domain.attrs[a] for a in view)  # noqa: E731
        self.view_plan_ = plan
        self.view_size_ = d
        self.view_type_ = plan.view_type
        self.base_views_ = [names(v) for v in plan.base]
        self.cross_views_ = [names(v) for v in plan.cross]
        self.upper_views_ = [names(v) for v in plan.upper]
        self.single_views_ = [names((a,)) for a in plan.single]
        self.view_domain_sizes_ = view_sizes.astype(np.int64)
        self.budget_shares_ = shares
        self.epsilons_ = epsilons
        self.noise_scales_ = 1.0 / epsilons
        self.expected_error_ = _expected_error(plan, sizes, eps_views, n_hat, allocation=self.budget_allocation)
        self.n_postprocess_iter_ = n_iter
        self.postprocess_converged_ = converged
        self.postprocess_negative_mass_ = negative_mass(tables)
        self.start_view_ = names(plan.views[start])
        self.n_records_ = n_hat
        self.model_ = ViewModel(plan, sizes, tables, rhos)
        self._log(f"n_hat={n_hat}; {n_iter} consistency pass(es), negative mass left "
                  f"{self.postprocess_negative_mass_ / n_hat:.2%} of n_hat (converged={converged}); "
                  f"normalization starts from {self.start_view_}")

    def _count_and_plan(self, codes, domain: Domain, ledger: PrivacyLedger, view_rng, noise_rng,
                        epsilon: float) -> tuple[ViewPlan, int, float | None, float]:
        """S2 (§IV-C) and the record count: ``(plan, d, n_count, ε of the views)``; ``n_count`` is None when
        neither the rule nor ``n̂`` needs a count."""
        sizes = tuple(domain.shape)
        upper = self.variant == "dpview+"
        auto = self.view_size == "auto"
        # The paper's views of d attributes depend on the public sizes only: checked before anything is spent.
        if auto:
            self._refuse_large_views([(a,) for a in range(len(sizes))], sizes, domain)
            self._check_view_memory([(a,) for a in range(len(sizes))], sizes)  # every column is in some view
        else:
            d = int(self.view_size)
            plan = view_list_generation(d, sizes, self.n_search, view_rng, upper=upper)
            self._refuse_large_views(plan.views, sizes, domain)
            self._check_view_memory(plan.views, sizes)

        # The record count: public, or a Laplace count (sensitivity 1) paid for here.
        eps_views, n_count = epsilon, None
        if self.n_public is not None:
            n_count = float(self.n_public)
        elif auto or self.n_estimator == "count":
            eps_count = float(self.count_share * epsilon)
            eps_views = epsilon - eps_count
            n_count = float(laplace_mechanism(marginal(codes, domain, []), epsilon=eps_count, sensitivity=1.0,
                                              random_state=noise_rng, ledger=ledger, description="record count"))
        if auto:
            d, single = auto_view_size(sizes, eps_views, max(n_count, 1.0), upper=upper,
                                       max_view_cells=self.max_view_cells, allocation=self.budget_allocation)
            plan = view_list_generation(d, sizes, self.n_search, view_rng, upper=upper, single=single)
            self._log(f"view_size='auto' chose d={d} with {len(single)} column(s) alone (record count "
                      f"{'public' if self.n_public is not None else 'DP'} ~{n_count:.0f})")
            self._refuse_large_views(plan.views, sizes, domain)   # invariant: the rule bounds the views' cells
            self._check_view_memory(plan.views, sizes)  # the record count alone is spent
        return plan, d, n_count, eps_views

    def _check_view_memory(self, views, sizes) -> None:
        """Refuse views whose noisy tables and their consistency steps do not fit in memory (public sizes)."""
        cells = float(sum(view_domain_size(v, sizes) for v in views))
        check_memory(_VIEW_BYTES_PER_CELL * cells,
                     f"ViewSynthesizer: {len(views):,} views of {cells:,.0f} cells in all",
                     "Use a smaller view_size, coarser bins, or a lower max_view_cells.")

    def _refuse_large_views(self, views, sizes, domain: Domain) -> None:
        """Refuse a view with more than ``max_view_cells`` cells, naming it (public sizes only)."""
        cells = [view_domain_size(v, sizes) for v in views]
        if max(cells, default=0) > self.max_view_cells:
            worst = views[int(np.argmax(cells))]
            raise ValueError(
                f"The view {tuple(domain.attrs[a] for a in worst)} has {max(cells):,} cells, more than "
                f"max_view_cells={self.max_view_cells:,}. Use a smaller view_size, coarser bins, or raise "
                f"max_view_cells.")

    # -- sample -------------------------------------------------------------------------------------------
    # Its views are linked, not a graphical model: sample(conditions=...) refuses, and TrainOnSynthetic's
    # class_balance says so before the fit spends the budget.
    _conditional_sampling = False

    def _sample_codes(self, n_samples: int, rng: np.random.Generator) -> np.ndarray:
        codes, lost = self.model_.synthesize(n_samples, rng)
        if lost or codes.shape[0] != n_samples:  # pragma: no cover - normalization makes linking perfect
            raise RuntimeError(f"linking left {lost} records unmatched; please report this bug.")
        return codes
