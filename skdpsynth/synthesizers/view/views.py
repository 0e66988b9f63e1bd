"""S2 — view list generation from public domain sizes only (DPView paper §IV-C).

Every function here is a pure function of the attribute domain sizes ``s``
(public metadata), the view size ``d`` and a random generator — and, for the
automatic rule :func:`auto_view_size`, of ε and a record count that the
caller releases with DP or takes from public metadata: no data is read, so
nothing here costs privacy budget.

Attributes are referred to by their position ``0 .. m-1`` in the domain; the
returned views are sorted tuples of positions (the axis order of their
contingency tables).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .allocation import budget_shares

__all__ = [
    "ViewPlan",
    "base_view_generation",
    "cross_view_generation",
    "upper_cross_views",
    "view_list_generation",
    "view_chain",
    "view_domain_size",
    "count_views",
    "auto_view_size",
]

View = tuple[int, ...]


def view_domain_size(view, sizes: Sequence[int]) -> int:
    """``dom(v)``: the number of cells of the view's table (exact Python integer).

    Examples
    --------
    >>> from skdpsynth.synthesizers.view.views import view_domain_size
    >>> view_domain_size((0, 2), [3, 5, 4])
    12
    >>> view_domain_size((0, 1, 2), [10**7, 10**7, 10**7])   # exact, no float overflow
    1000000000000000000000
    """
    return math.prod(int(sizes[a]) for a in view)


@dataclass(frozen=True)
class ViewPlan:
    """The views DPView measures, all chosen from public domain sizes (paper §IV-C).

    Attributes
    ----------
    base, cross, upper : tuple of tuple of int
        Base views ``b_1..b_kB``, cross views ``c_i`` (between ``b_i`` and
        ``b_{i+1}``) and, for DPView+, upper cross views ``u_i``; each view a
        sorted tuple of attribute positions.
    view_type : {"I", "II", "III", "flat", "independent"}
        §IV-C2: ``d`` divides ``m`` (I); the short last base view has more (II)
        or at most (III, compensated) ``d/2`` attributes; ``m <= d`` (flat:
        one view, no cross views); "independent": no base view, every
        attribute is measured alone.  The type is that of the attributes not
        in ``single``.
    total_size : int
        ``D = Σ dom(b) + Σ dom(c)``, the objective VLG minimises (upper and single views excluded).
    feasible : bool
        Whether every cross view has ``dom <= max dom(b)`` (Algorithm 3's filter).
    compensation : tuple of int
        Type III: the ``d - r`` attributes of ``b_{kB-1}`` also put in ``b_kB``.
    single : tuple of int
        Attributes measured alone, each in a one-attribute view linked to the
        others without shared attributes, i.e. as an independent column
        (chosen by :func:`auto_view_size` when the budget cannot afford them
        in a larger view; not part of the paper).

    Examples
    --------
    >>> from skdpsynth.synthesizers.view.views import ViewPlan
    >>> plan = ViewPlan(base=((0, 1), (2, 3)), cross=((1, 2),), upper=((0, 3),), view_type="I",
    ...                 total_size=20, feasible=True)   # sizes [2, 3, 2, 4], d = 2: D = 6 + 8 + 6
    >>> plan.views
    ((0, 1), (2, 3), (1, 2), (0, 3))
    >>> plan.kinds
    ('base', 'base', 'cross', 'upper')
    >>> plan.chain   # linking order b1, c1, b2 as indices into views
    (0, 2, 1)
    >>> plan = ViewPlan(base=((0, 1),), cross=(), upper=(), view_type="flat", total_size=6, feasible=True,
    ...                 single=(2, 3))   # attributes 2 and 3 alone
    >>> plan.views, plan.kinds, plan.chain
    (((0, 1), (2,), (3,)), ('base', 'single', 'single'), (0, 1, 2))
    """

    base: tuple[View, ...]
    cross: tuple[View, ...]
    upper: tuple[View, ...]
    view_type: str
    total_size: int
    feasible: bool
    compensation: tuple[int, ...] = ()
    single: tuple[int, ...] = ()

    @property
    def views(self) -> tuple[View, ...]:
        """All measured views: base, cross, upper, then single (the order of every per-view array)."""
        return self.base + self.cross + self.upper + tuple((a,) for a in self.single)

    @property
    def kinds(self) -> tuple[str, ...]:
        """``"base"``, ``"cross"``, ``"upper"`` or ``"single"`` per entry of :attr:`views`."""
        return (("base",) * len(self.base) + ("cross",) * len(self.cross) + ("upper",) * len(self.upper)
                + ("single",) * len(self.single))

    @property
    def chain(self) -> tuple[int, ...]:
        """Indices into :attr:`views` in linking order ``b_1, c_1, b_2, …`` (see :func:`view_chain`), then the
        single views, which share no attribute with the views before them."""
        first_single = len(self.base) + len(self.cross) + len(self.upper)
        paper = view_chain(len(self.base), len(self.cross)) if self.base else ()
        return paper + tuple(range(first_single, first_single + len(self.single)))


def view_chain(n_base: int, n_cross: int) -> tuple[int, ...]:
    """Linking / normalization order over ``base + cross`` indices (paper §IV-E3, §IV-F).

    ``b_1, c_1, b_2, c_2, …, b_{n_cross+1}`` then, for Type III, ``b_kB``
    (adjacent to ``b_{kB-1}`` through the compensation attributes).  The paper's
    "for i = 1, …, d − 1" means this chain (``doc/deviations.md``, "The linking chain").

    Examples
    --------
    >>> view_chain(3, 2)   # Type I/II: b1 c1 b2 c2 b3
    (0, 3, 1, 4, 2)
    >>> view_chain(3, 1)   # Type III: b1 c1 b2 b3
    (0, 3, 1, 2)
    """
    order: list[int] = []
    for i in range(n_cross + 1):
        order.append(i)
        if i < n_cross:
            order.append(n_base + i)
    order.extend(range(n_cross + 1, n_base))
    return tuple(order)


def _by_size(view, sizes, largest: bool) -> list[int]:
    """Attributes of ``view`` by domain size (largest or smallest first); ties keep the view's order."""
    return sorted(view, key=(lambda a: -sizes[a]) if largest else (lambda a: sizes[a]))


def base_view_generation(d: int, sizes: Sequence[int], rng: np.random.Generator) -> tuple[list[list[int]], str, tuple[int, ...]]:
    """Algorithm 1 (BVG) with the Type-III compensation (paper §IV-C2, §IV-C4).

    Returns the base views (attribute lists in random order), the case
    (``"I"``, ``"II"``, ``"III"`` or ``"flat"``) and the compensation attributes.
    The sort key and the Type-III reading are ours (``doc/deviations.md``: "Base-view
    sort key", "The short base view stays last", "Type-III compensation").

    Examples
    --------
    >>> import numpy as np
    >>> B, kind, extra = base_view_generation(3, [5, 2, 9, 4, 3, 7, 8], np.random.default_rng(0))
    >>> kind, [len(b) for b in B], len(extra)   # m=7, d=3: r=1 <= 1.5, so b3 gets 2 attributes of b2
    ('III', [3, 3, 3], 2)
    >>> set(extra) <= set(B[1])
    True
    """
    m = len(sizes)
    if m <= d:
        return [list(rng.permutation(m))], "flat", ()
    k_b = -(-m // d)
    r = m - d * (k_b - 1)
    perm = [int(a) for a in rng.permutation(m)]
    full = [perm[j * d:(j + 1) * d] for j in range(k_b - 1)]
    last = perm[d * (k_b - 1):]
    if r == d:  # Type I: every view is full
        full.append(last)
        last = None
    h = d // 2

    def key(b):
        # Product of the ⌊d/2⌋ largest sizes, then the sorted sizes lexicographically.
        top = sorted((sizes[a] for a in b), reverse=True)
        return (math.prod(top[:h]), top)

    # Only the full views are sorted (stable: ties keep the permutation order); the short one stays last.
    full.sort(key=key, reverse=True)
    if last is None:
        return full, "I", ()
    if 2 * r > d:
        return full + [last], "II", ()
    # Type III (r <= d/2): d - r random attributes of b_{kB-1} are also put in b_kB.
    extra = tuple(int(a) for a in rng.choice(full[-1], size=d - r, replace=False))
    return full + [last + list(extra)], "III", extra


def cross_view_generation(d: int, sizes: Sequence[int], base: Sequence[Sequence[int]], view_type: str) -> list[list[int]]:
    """Algorithm 2 (CVG, paper §IV-C5), with the Type-III rule applied for both parities.

    ``c_i`` = the ``⌊d/2⌋`` largest-domain attributes of ``b_i`` plus the
    ``⌊d/2⌋`` smallest of ``b_{i+1}`` (high-to-low); for odd ``d`` one more
    attribute, the smallest remaining one of ``b_{i+1}`` unless that would
    break high-to-low (``dom(set1) <= dom(set2)·s_p``), then the smallest
    remaining one of ``b_i``.  Type III has no cross view between the last
    two base views.

    Examples
    --------
    A deterministic example (``a1..a6`` = positions 0..5):

    >>> sizes = [10, 2, 8, 3, 5, 4]
    >>> cross_view_generation(3, sizes, [[0, 1, 3], [2, 4, 5]], "I")
    [[0, 5, 1]]
    """
    if view_type == "flat":
        return []
    n_cross = len(base) - 2 if view_type == "III" else len(base) - 1
    h = d // 2
    out = []
    for i in range(n_cross):
        bi, bj = list(base[i]), list(base[i + 1])
        set1 = _by_size(bi, sizes, largest=True)[:h]
        set2 = _by_size(bj, sizes, largest=False)[:h]
        view = set1 + set2
        if d % 2:
            p = _by_size([a for a in bj if a not in set2], sizes, largest=False)[0]
            # "<=": a tie also switches the extra attribute to b_i (Algorithm 2, line 16).
            if view_domain_size(set1, sizes) <= view_domain_size(set2, sizes) * sizes[p]:
                p = _by_size([a for a in bi if a not in set1], sizes, largest=False)[0]
            view.append(p)
        out.append(view)
    return out


def upper_cross_views(base: Sequence[Sequence[int]], cross: Sequence[Sequence[int]]) -> list[list[int]]:
    """Definition 8: ``u_i = (b_i ∪ b_{i+1}) \\ c_i`` for every cross view ``c_i`` (paper §IV-G).

    Type III's last pair has no cross view, so no upper view ("vacant").

    Examples
    --------
    >>> upper_cross_views([[0, 1, 3], [2, 4, 5]], [[0, 5, 1]])
    [[2, 3, 4]]
    """
    return [sorted((set(base[i]) | set(base[i + 1])) - set(c)) for i, c in enumerate(cross)]


def _candidate(d, sizes, rng):
    base, kind, extra = base_view_generation(d, sizes, rng)
    cross = cross_view_generation(d, sizes, base, kind)
    dom_b = [view_domain_size(b, sizes) for b in base]
    dom_c = [view_domain_size(c, sizes) for c in cross]
    feasible = all(dc <= max(dom_b) for dc in dom_c)  # Algorithm 3's flag, reset for every run
    return base, cross, kind, extra, sum(dom_b) + sum(dom_c), feasible


def _search(d: int, sizes: list[int], n_search: int, rng: np.random.Generator):
    """Algorithm 3's loop: the smallest-``D`` candidate passing the filter, or (second value False) the
    smallest-``D`` one when none passes."""
    best, best_any = None, None
    for _ in range(n_search):
        cand = _candidate(d, sizes, rng)
        total, feasible = cand[4], cand[5]
        if best_any is None or total < best_any[4]:
            best_any = cand
        if feasible and (best is None or total < best[4]):  # strict: the first minimum is kept
            best = cand
        if cand[2] == "flat":
            break  # one possible candidate only
    return (best, True) if best is not None else (best_any, False)


def _core_plan(found, core: Sequence[int], upper: bool, single: Sequence[int]) -> ViewPlan:
    """The plan of a search run on the attributes ``core`` (positions 0..len(core)-1), in the attributes' positions."""
    base, cross, kind, extra, total, feasible = found
    ups = upper_cross_views(base, cross) if upper else []
    canon = lambda views: tuple(tuple(sorted(core[a] for a in v)) for v in views)  # noqa: E731
    return ViewPlan(canon(base), canon(cross), canon(ups), kind, int(total), bool(feasible),
                    tuple(sorted(core[a] for a in extra)), tuple(sorted(single)))


def view_list_generation(d: int, sizes: Sequence[int], n_search: int, rng: np.random.Generator,
                         upper: bool = False, single: Sequence[int] = ()) -> ViewPlan:
    """Algorithm 3 (VLG): ``n_search`` random BVG+CVG candidates, keep the smallest ``D`` (paper §IV-C6).

    A candidate is rejected when a cross view has a larger domain than the
    largest base view.  If every candidate is rejected, the smallest-``D``
    rejected one is returned with a warning (``doc/deviations.md``, "When no view
    list passes the filter").  ``upper=True`` adds the
    DPView+ upper cross views to the winner (they are not part of ``D``).

    Parameters
    ----------
    d : int
        View size, ``>= 2``; ``1`` measures every attribute alone.
    sizes : sequence of int
        Public domain size of every attribute.
    n_search : int
        Number of random candidates (``x`` of Algorithm 3).
    rng : numpy.random.Generator
    upper : bool, default=False
        DPView+.
    single : sequence of int, default=()
        Attributes measured alone (one-attribute views, :attr:`ViewPlan.single`);
        the views are generated for the others.  Not in the paper: the
        automatic rule (:func:`auto_view_size`) isolates the attributes whose
        domains the budget cannot afford in a larger view.

    Returns
    -------
    ViewPlan

    Examples
    --------
    >>> import numpy as np
    >>> adult = [85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2]
    >>> plan = view_list_generation(5, adult, 200, np.random.default_rng(0), upper=True)
    >>> plan.view_type, len(plan.base), len(plan.cross), len(plan.upper)   # Adult: m=14, d=5
    ('II', 3, 2, 2)
    >>> sorted(a for b in plan.base for a in b) == list(range(14))
    True
    >>> plan = view_list_generation(3, adult, 200, np.random.default_rng(0), single=(0, 2, 9, 10, 11, 12))
    >>> plan.view_type, len(plan.base), len(plan.cross), plan.single   # 8 attributes in views of 3
    ('II', 3, 2, (0, 2, 9, 10, 11, 12))
    """
    if d < 1:
        raise ValueError(f"view_size must be >= 1, got {d}.")
    if n_search < 1:
        raise ValueError(f"n_search must be >= 1, got {n_search}.")
    sizes = [int(s) for s in sizes]
    single = sorted({int(a) for a in single})
    if any(not 0 <= a < len(sizes) for a in single):
        raise ValueError(f"single must hold attribute positions in 0..{len(sizes) - 1}, got {single}.")
    core = [a for a in range(len(sizes)) if a not in set(single)]
    if d == 1 or (single and len(core) <= 1):  # a one-attribute view left beside single ones is one of them
        return ViewPlan((), (), (), "independent", 0, True, (), tuple(range(len(sizes))))
    best, feasible = _search(d, [sizes[a] for a in core], n_search, rng)
    if not feasible:
        warnings.warn(
            f"No view list with every cross view at most as large as the largest base view was found in "
            f"{n_search} trials; using the smallest one found (D={best[4]:,}).", RuntimeWarning, stacklevel=2)
    return _core_plan(best, core, upper, single)


def count_views(m: int, d: int, upper: bool = False) -> int:
    """Number of views (base + cross, + upper for DPView+) for ``m`` attributes and view size ``d`` (§IV-C2, §IV-G).

    Examples
    --------
    >>> [count_views(15, 5), count_views(15, 5, upper=True), count_views(41, 6), count_views(41, 6, upper=True)]
    [5, 7, 13, 19]
    >>> count_views(43, 5), count_views(4, 5)
    (17, 1)
    """
    if m <= d:
        return 1
    k_b = -(-m // d)
    r = m - d * (k_b - 1)
    n_cross = k_b - 2 if (r < d and 2 * r <= d) else k_b - 1
    return k_b + n_cross * (2 if upper else 1)


#: The TVD a 2-way marginal is assumed to lose when its two attributes are linked as independent.  It stands for
#: the data's dependence, which the rule may not read: measured (beyond the sampling floor) 0.062 on average over
#: Adult's pairs and about 0.02 on a generated 35-column table (``doc/view.md``, "Choosing the view size"); the
#: smaller value makes the rule prefer independent columns unless a view's noise is well below it.
DEPENDENCE = 0.03


def _noise_tvd(u: np.ndarray) -> np.ndarray:
    """TVD a marginal loses to noise of modelled size ``u``: ``u`` when small, saturating at 1/2.

    Non-negativity and normalization keep a noise-swamped table a distribution, about as far from the data's as a
    random one: the paper's views of 5 on Adult at ε = 1 give a 2-way TVD of 0.32-0.38 (``doc/view.md``).
    """
    return u / (1.0 + 2.0 * u)


def _expected_error(plan: ViewPlan, sizes: Sequence[int], epsilon: float, n: float,
                    dependence: float = DEPENDENCE, allocation: str = "optimal") -> float:
    """The modelled mean TVD of the 2-way marginals of data synthesized from ``plan`` (see :func:`auto_view_size`).

    A marginal on the attributes ``A`` read from a view ``v`` measured with ``Lap(1/ε_v)`` sums
    ``ξ = dom(v)/dom(A)`` noisy cells per cell, noise of mean absolute value ``2√ξ/(√π ε_v)`` (normal
    approximation), so its TVD is ``u = √(dom(v)·dom(A)) / (√π ε_v n)`` (through ``_noise_tvd``).  A pair in
    a view gets the smallest ``u`` of its views; a pair in none is the product of its 1-way marginals, which loses
    their noise and ``dependence``, the latter only as far as the marginals are not noise themselves.
    """
    m = len(sizes)
    if m < 2:
        return 0.0
    s = np.asarray(sizes, dtype=np.float64)
    views = plan.views
    cells = np.array([float(view_domain_size(v, sizes)) for v in views])
    eps = budget_shares(cells, allocation) * epsilon
    scale = 1.0 / (math.sqrt(math.pi) * eps * max(float(n), 1.0))
    one = np.full(m, np.inf)
    two = np.full((m, m), np.inf)
    for view, dom, sc in zip(views, cells, scale):
        idx = list(view)
        one[idx] = np.minimum(one[idx], np.sqrt(dom * s[idx]) * sc)
        block = np.ix_(idx, idx)
        two[block] = np.minimum(two[block], np.sqrt(dom * np.outer(s[idx], s[idx])) * sc)
    a, b = np.triu_indices(m, 1)
    covered = np.isfinite(two[a, b])
    apart = _noise_tvd(one[a] + one[b])
    error = np.where(covered, _noise_tvd(np.where(covered, two[a, b], 0.0)), apart + dependence * (1 - 2 * apart))
    return float(error.mean())


def auto_view_size(sizes: Sequence[int], epsilon: float, n: float, upper: bool = False, *, max_size: int = 8,
                   max_view_cells: int | None = None, dependence: float = DEPENDENCE, n_trials: int = 20,
                   allocation: str = "optimal") -> tuple[int, tuple[int, ...]]:
    """The view size ``d`` and the attributes measured alone whose modelled 2-way error is lowest (§IV-C7, ours).

    The paper's guideline (§IV-C7) picks one ``d`` for all attributes; on data whose domains differ (Adult: 2 to
    100 values) any one ``d`` either leaves the small attributes apart or buries the large ones in noise.  This
    rule scores, for every ``d`` in ``2 .. max_size`` and every ``k``, the plan that measures the ``k`` largest
    attributes alone (one-attribute views, i.e. independent columns) and the others in DPView's views of ``d``,
    plus the plan of independent columns only; it returns the plan with the lowest modelled mean TVD over the
    2-way marginals.  The model (``_expected_error``) charges a pair in a view the Laplace noise of its
    projection, ``u = √(dom(v)·dom(a,b)) / (√π ε_v n)`` with the paper's shares ``ε_v`` (§IV-D), saturating at
    1/2, and a pair in no view its 1-way marginals' noise plus ``dependence``, the TVD assumed lost by linking it
    as independent (the data's dependence, which the rule may not read).  ``doc/deviations.md``, "Automatic view
    size", and ``doc/view.md`` give the measurements behind it.

    Everything read is public: the domain sizes, ε and ``n``; ``n`` is private, so pass a public value or a
    differentially private estimate whose cost is accounted for (as :class:`ViewSynthesizer` does).  Each plan
    is scored on a seeded search of ``n_trials`` candidates (Algorithm 3), so the result is a function of the
    arguments only.

    Parameters
    ----------
    sizes : sequence of int
        Public domain size of every attribute.
    epsilon : float
        The budget of the views.
    n : float
        Record count (public or DP).
    upper : bool, default=False
        DPView+ (the upper cross views are part of every plan scored).
    max_size : int, default=8
        Largest ``d`` tried.
    max_view_cells : int, optional
        Plans whose views may have more cells (bounded by the product of the ``d`` largest sizes measured
        together) are not tried.
    dependence : float, default=DEPENDENCE
        TVD assumed lost by a pair linked as independent.
    n_trials : int, default=20
        Candidates of the search per plan scored.
    allocation : {"optimal", "uniform"}, default="optimal"
        The budget shares of the views (:func:`~.allocation.budget_shares`).

    Returns
    -------
    d : int
        The view size (1: every attribute alone).
    single : tuple of int
        The attributes measured alone, for :func:`view_list_generation`'s ``single``.

    Examples
    --------
    >>> sizes = [85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2]   # Adult
    >>> auto_view_size(sizes, 0.95, 48842)   # ε = 1 less the record count's 5%: 6 columns in views of 4
    (4, (0, 2, 3, 5, 9, 10, 11, 12))
    >>> auto_view_size(sizes, 0.95, 500)     # few records: sex and income together, the rest alone
    (2, (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12))
    >>> auto_view_size(sizes, 0.95, 10**8)   # many: the paper's views over every column
    (6, ())
    >>> auto_view_size([100, 100, 100], 0.1, 1000)   # no joint view is worth its noise
    (1, (0, 1, 2))
    """
    m = len(sizes)
    sizes = [int(x) for x in sizes]
    best = (1, tuple(range(m)))
    if m < 2:
        return best
    best_error = _expected_error(ViewPlan((), (), (), "independent", 0, True, (), best[1]), sizes, epsilon, n,
                                 dependence, allocation)
    order = sorted(range(m), key=lambda a: (-sizes[a], a))   # the largest domains are isolated first
    # Every k up to 64 columns; beyond, 64 of them, evenly spaced, to keep the rule under a few seconds.
    ks = range(m - 1) if m <= 64 else sorted({int(k) for k in np.linspace(0, m - 2, 64).round()})
    for d in range(2, min(max_size, m) + 1):
        for k in sorted(ks, reverse=True):   # ties go to the plan with more independent columns
            core = sorted(order[k:])
            if len(core) < d:   # d = len(core) already gave the single view of the core
                continue
            # No view of d columns of the core, cross and upper views included, exceeds its d largest sizes.
            if max_view_cells is not None and math.prod(sorted(sizes[a] for a in core)[-d:]) > max_view_cells:
                continue
            found, _ = _search(d, [sizes[a] for a in core], n_trials, np.random.default_rng(0))
            plan = _core_plan(found, core, upper, order[:k])
            error = _expected_error(plan, sizes, epsilon, n, dependence, allocation)
            if error < best_error:
                best, best_error = (d, plan.single), error
    return best
