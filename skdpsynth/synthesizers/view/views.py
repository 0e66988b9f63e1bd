"""S2 — view list generation from public domain sizes only (DPView paper §IV-C).

Every function here is a pure function of the attribute domain sizes ``s``
(public metadata), the view size ``d`` and a random generator: no data is
read, so nothing here costs privacy budget.

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
    view_type : {"I", "II", "III", "flat"}
        §IV-C2: ``d`` divides ``m`` (I); the short last base view has more (II)
        or at most (III, compensated) ``d/2`` attributes; ``m <= d`` (flat:
        one view, no cross views).
    total_size : int
        ``D = Σ dom(b) + Σ dom(c)``, the objective VLG minimises (upper views excluded).
    feasible : bool
        Whether every cross view has ``dom <= max dom(b)`` (Algorithm 3's filter).
    compensation : tuple of int
        Type III: the ``d - r`` attributes of ``b_{kB-1}`` also put in ``b_kB``.

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
    """

    base: tuple[View, ...]
    cross: tuple[View, ...]
    upper: tuple[View, ...]
    view_type: str
    total_size: int
    feasible: bool
    compensation: tuple[int, ...] = ()

    @property
    def views(self) -> tuple[View, ...]:
        """All measured views: base, then cross, then upper (the order of every per-view array)."""
        return self.base + self.cross + self.upper

    @property
    def kinds(self) -> tuple[str, ...]:
        """``"base"``, ``"cross"`` or ``"upper"`` per entry of :attr:`views`."""
        return ("base",) * len(self.base) + ("cross",) * len(self.cross) + ("upper",) * len(self.upper)

    @property
    def chain(self) -> tuple[int, ...]:
        """Indices into :attr:`views` in linking order ``b_1, c_1, b_2, …`` (see :func:`view_chain`)."""
        return view_chain(len(self.base), len(self.cross))


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


def view_list_generation(d: int, sizes: Sequence[int], n_search: int, rng: np.random.Generator,
                         upper: bool = False) -> ViewPlan:
    """Algorithm 3 (VLG): ``n_search`` random BVG+CVG candidates, keep the smallest ``D`` (paper §IV-C6).

    A candidate is rejected when a cross view has a larger domain than the
    largest base view.  If every candidate is rejected, the smallest-``D``
    rejected one is returned with a warning (``doc/deviations.md``, "When no view
    list passes the filter").  ``upper=True`` adds the
    DPView+ upper cross views to the winner (they are not part of ``D``).

    Parameters
    ----------
    d : int
        View size, ``>= 2``.
    sizes : sequence of int
        Public domain size of every attribute.
    n_search : int
        Number of random candidates (``x`` of Algorithm 3).
    rng : numpy.random.Generator
    upper : bool, default=False
        DPView+.

    Returns
    -------
    ViewPlan

    Examples
    --------
    >>> import numpy as np
    >>> plan = view_list_generation(5, [85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2], 200,
    ...                             np.random.default_rng(0), upper=True)
    >>> plan.view_type, len(plan.base), len(plan.cross), len(plan.upper)   # Adult: m=14, d=5
    ('II', 3, 2, 2)
    >>> sorted(a for b in plan.base for a in b) == list(range(14))
    True
    """
    if d < 2:
        raise ValueError(f"view_size must be >= 2, got {d}.")
    if n_search < 1:
        raise ValueError(f"n_search must be >= 1, got {n_search}.")
    sizes = [int(s) for s in sizes]
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
    if best is None:
        warnings.warn(
            f"No view list with every cross view at most as large as the largest base view was found in "
            f"{n_search} trials; using the smallest one found (D={best_any[4]:,}).", RuntimeWarning, stacklevel=2)
        best = best_any
    base, cross, kind, extra, total, feasible = best
    ups = upper_cross_views(base, cross) if upper else []
    canon = lambda views: tuple(tuple(sorted(v)) for v in views)  # noqa: E731
    return ViewPlan(canon(base), canon(cross), canon(ups), kind, int(total), bool(feasible), tuple(sorted(extra)))


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


def _gaussian_mass_above(n_axis: int, d: int, threshold: float) -> float:
    """Mass of the cells with probability > ``threshold`` of a d-dim standard normal on an ``n_axis``^d grid over [-3, 3]^d.

    The cell probabilities factorise over the axes, so the distribution of
    ``log p(cell)`` is built axis by axis (values merged to 1e-9 in log space)
    instead of enumerating ``n_axis**d`` cells.
    """
    edges = np.linspace(-3.0, 3.0, n_axis + 1)
    centers = (edges[:-1] + edges[1:]) / 2
    p1 = np.exp(-centers**2 / 2)
    p1 /= p1.sum()
    logp1 = np.log(p1)
    keys, mass = np.zeros(1), np.ones(1)
    for _ in range(d):
        keys = (keys[:, None] + logp1[None, :]).ravel()
        mass = (mass[:, None] * p1[None, :]).ravel()
        keys, inv = np.unique(np.round(keys, 9), return_inverse=True)
        mass = np.bincount(inv.ravel(), weights=mass)
    return float(mass[keys > np.log(threshold)].sum())


def auto_view_size(sizes: Sequence[int], epsilon: float, n: float, upper: bool = False, gamma: float = 0.95,
                   tau: float = 0.5, max_size: int = 8) -> int:
    """Our reading of the paper's guideline for the view size ``d`` (§IV-C7); needs a record count ``n``.

    For each ``d`` in ``2 .. min(m, max_size)``: with ``k(d)`` views sharing ε
    evenly, Laplace noise stays within ``ρ = −ln(1−γ)·k(d)/ε`` with probability
    ``γ``; a view is modelled as a d-dimensional standard normal discretized on
    ``L^d`` cells (``L`` = the geometric-mean attribute domain size); ``mass(d)``
    is the probability of the cells whose expected count ``n·p(c)`` exceeds ``ρ``.
    The largest ``d`` with ``mass(d) >= tau`` is returned; if none passes,
    2 (even the smallest views are mostly noise, so keep them small; falling
    back to the default 5 would give small data the largest views).  The
    paper's printed formula has a sign error and an undefined threshold;
    ``γ = 0.95``, ``τ = 0.5`` and the grid model are ours (``doc/deviations.md``,
    "Automatic view size").

    ``n`` is private: pass a public value, or a differentially private estimate
    whose cost is accounted for (as :class:`ViewSynthesizer` does).

    Examples
    --------
    >>> sizes = [85, 9, 100, 16, 7, 15, 6, 5, 2, 100, 100, 99, 42, 2]   # Adult
    >>> auto_view_size(sizes, 1.0, 48842), auto_view_size(sizes, 1.0, 1e8), auto_view_size(sizes, 0.1, 1000)
    (3, 6, 2)
    """
    m = len(sizes)
    if m < 2:
        return 2
    n_axis = max(2, int(round(math.exp(np.mean(np.log(np.asarray(sizes, dtype=np.float64)))))))
    best = None
    for d in range(2, min(m, max_size) + 1):
        rho = -math.log(1.0 - gamma) * count_views(m, d, upper) / epsilon
        if _gaussian_mass_above(n_axis, d, rho / max(float(n), 1.0)) >= tau:
            best = d
    return 2 if best is None else best
