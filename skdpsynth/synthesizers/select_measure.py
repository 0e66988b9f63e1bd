"""Select-measure pieces shared by the marginal-based synthesizers.

* :func:`measure_marginals` — Gaussian measurement of marginals, recorded in the ledger;
* :func:`compile_workload` — AIM's candidate set (downward closure) and weights;
* :class:`CandidateErrors` — the L1 errors of the model on AIM's candidates
  (its quality score is ``w_r`` times the error minus the expected L1 norm
  of the measurement noise), computed on demand, with bounds for the others
  (AIM's lazy selection), or all at once from records drawn from the model
  (AIM's sampled scoring, through :class:`MarginalBatch`);
* :func:`filter_by_model_size`, :func:`model_size_check` — AIM's junction-tree size guard;
* :func:`resolve_workload` — a workload hyper-parameter as weighted cliques.

AIM, MST, RandDPGen (HybridSynthesizer) and PPSyn (PartitionSynthesizer) call
these rather than each writing its own.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import combinations
from numbers import Integral

import numpy as np

from ..domain import Domain
from ..graphical import GraphicalModel, Measurement
from ..graphical.bounds import clique_index, marginal_change_bounds
from ..graphical.junction_tree import junction_tree_cells
from ..graphical.sampling import sample_model
from ..graphical.tables import num_threads
from ..marginals import downward_closure, marginal, marginals, workload as make_workload
from ..params import Interval, Options
from ..privacy import PrivacyLedger, gaussian_mechanism
from ..utils import check_memory, is_lazy_codes, thread_pool

__all__ = [
    "measure_marginals",
    "one_way_sigma",
    "compile_workload",
    "CandidateErrors",
    "MarginalBatch",
    "filter_by_model_size",
    "model_size_check",
    "resolve_workload",
    "choose_engine",
    "child_generator",
    "held_by_model",
    "sampled_shares",
]

# Share of the sampling inflation's bound taken off sampled errors (AIM's scores, PartitionSynthesizer's captured
# contributions): the measured inflation is about half the bound (doc/engine.md, "AIM on wide tables").
INFLATION_SHARE = 0.5
# scoring="auto": sampled scoring above this many candidates (the 3-way workload of 19 attributes or more).
SAMPLED_SCORING_CANDIDATES = 1000
# scoring_samples="auto": 50,000 records up to this many candidates, 25,000 above (a round's scoring work grows as
# records times candidates).
MANY_CANDIDATES = 10_000
# selections_per_round="auto": one selection per round for each this many attributes.
ATTRIBUTES_PER_SELECTION = 8

Clique = tuple[str, ...]


def measure_marginals(
    codes: np.ndarray,
    domain: Domain,
    cliques: Sequence[Clique],
    sigma: float,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    *,
    weights: Sequence[float] | None = None,
    label: str = "marginal",
) -> list[Measurement]:
    """Measure each clique's marginal with Gaussian noise, charging the ledger.

    With ``weights`` (normalised to unit L2 norm, as in MST) clique ``i`` gets
    noise ``sigma / w_i``, so the set costs exactly ``1 / (2 sigma²)`` in zCDP
    whatever the number of cliques; without them every clique gets ``sigma``
    and costs ``1 / (2 sigma²)`` each.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> from skdpsynth.synthesizers.select_measure import measure_marginals
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> codes = np.array([[0, 1], [1, 2], [1, 0], [0, 1]])
    >>> ledger = PrivacyLedger()
    >>> ms = measure_marginals(codes, dom, [("a",), ("a", "b")], sigma=1e-6, rng=np.random.default_rng(0),
    ...                        ledger=ledger)   # tiny noise
    >>> [m.clique for m in ms], [np.round(m.values).astype(int).tolist() for m in ms]
    ([('a',), ('a', 'b')], [[2, 2], [0, 2, 0, 1, 0, 1]])
    >>> ledger = PrivacyLedger()
    >>> ms = measure_marginals(codes, dom, [("a",), ("b",)], sigma=2.0, rng=np.random.default_rng(0),
    ...                        ledger=ledger, weights=[1, 1])
    >>> [round(m.sigma, 4) for m in ms], round(ledger.total_rho(), 12)   # the pair costs 1 / (2 * 2**2)
    ([2.8284, 2.8284], 0.125)
    """
    w = np.ones(len(cliques)) if weights is None else np.asarray(weights, dtype=float)
    if weights is not None:
        w = w / np.linalg.norm(w)
    if is_lazy_codes(codes):
        marginals(codes, domain, cliques)  # out-of-core codes: every clique in one pass over the data (kept)
    out = []
    for clique, wi in zip(cliques, w):
        s = sigma / wi
        y = gaussian_mechanism(
            marginal(codes, domain, clique).ravel(), sigma=s, random_state=rng, ledger=ledger,
            description=f"{label} {' x '.join(map(str, clique))}",
        )
        out.append(Measurement(clique, y, s))
    return out


ONE_WAY_LABEL = "1-way marginal"   # the label AIM and MST give their first measurements of every column


def one_way_sigma(ledger: PrivacyLedger, attr) -> float | None:
    """σ of the Gaussian measurements of ``attr``'s marginal alone recorded in ``ledger`` (by
    :func:`measure_marginals`, labelled ``"1-way marginal"`` or ``"marginal"``), combined by inverse variance:
    the noise of their weighted mean.  ``None`` when there is none.

    Reads only the ledger, the public statement of what was released and how.

    Examples
    --------
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.add("1-way marginal age", "gaussian", rho=0.125, scale=2.0)
    >>> _ = ledger.add("marginal age", "discrete gaussian", rho=0.125, scale=2.0)
    >>> _ = ledger.add("marginal age x sex", "gaussian", rho=0.125, scale=2.0)
    >>> round(one_way_sigma(ledger, "age"), 4), one_way_sigma(ledger, "sex")   # 2 / sqrt(2)
    (1.4142, None)
    """
    names = {f"{ONE_WAY_LABEL} {attr}", f"marginal {attr}"}
    sigmas = [e.scale for e in ledger.entries
              if e.description in names and "gaussian" in e.mechanism and e.scale is not None and e.scale > 0]
    if not sigmas:
        return None
    return float(np.sum(np.asarray(sigmas, dtype=float) ** -2.0) ** -0.5)


def compile_workload(workload: Iterable[tuple[Clique, float]], domain: Domain) -> dict[Clique, float]:
    """AIM's candidates: the downward closure of the workload, each weighted by ``Σ_s c_s |r ∩ s|``.

    Every attribute's 1-way marginal is a candidate, with weight 0 when no
    workload clique contains the attribute: the synthesizers measure all
    1-way marginals first, so no column of the synthetic data is left
    uniform because the workload (or ``max_cells``) happened to miss it.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.select_measure import compile_workload
    >>> dom = Domain(["a", "b", "c"], [2, 3, 4])
    >>> compile_workload([(("a", "b"), 1.0), (("b", "c"), 2.0)], dom)
    {('a',): 1.0, ('b',): 3.0, ('c',): 2.0, ('a', 'b'): 4.0, ('b', 'c'): 5.0}
    >>> compile_workload([(("a", "b"), 1.0)], dom)   # c is in no workload clique: weight 0
    {('c',): 0.0, ('a',): 1.0, ('b',): 1.0, ('a', 'b'): 2.0}
    """
    workload = [(domain.canonical(c), float(w)) for c, w in workload]
    # |r ∩ s| = Σ_{a ∈ r} [a ∈ s], so w_r = Σ_{a ∈ r} W_a with W_a the total weight of the workload cliques
    # containing a: linear in the candidates instead of candidates × workload (19 600 × 20 875 for 50 attributes).
    per_attribute: dict[str, float] = {}
    for s_, w in workload:
        for a in s_:
            per_attribute[a] = per_attribute.get(a, 0.0) + w
    weights = {r: sum(per_attribute[a] for a in r) for r in downward_closure([c for c, _ in workload], domain)}
    missing = {(a,): 0.0 for a in domain if (a,) not in weights}
    return {**missing, **weights} if missing else weights


class CandidateErrors:
    """The L1 errors ``‖y_r − M_r(p)‖₁`` of the candidates, computed on demand, with bounds for all of them.

    For AIM's lazy selection: a candidate whose error was computed at an
    earlier model is bounded by that error plus how far its marginal can have
    moved since (:func:`~skdpsynth.graphical.bounds.marginal_change_bounds`,
    accumulated model by model); one never computed by ``0 ≤ error ≤ N + the
    model's total``.

    Parameters
    ----------
    domain : Domain
    answers : mapping of clique -> ndarray
        What the model is compared with (flattened marginals, all summing to ``N``).
    candidates : sequence of cliques

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel
    >>> from skdpsynth.synthesizers.select_measure import CandidateErrors
    >>> dom = Domain(["a", "b"], [2, 2])
    >>> errors = CandidateErrors(dom, {("a", "b"): np.array([10.0, 0.0, 0.0, 10.0])}, [("a", "b")])
    >>> errors.track(GraphicalModel(dom, {}, total=20.0))     # uniform: 5 per cell
    >>> errors.exact(0)
    20.0
    >>> [round(float(b[0]), 6) for b in errors.bounds()]   # just computed: both at the error (plus a 1e-9 slack)
    [20.0, 20.0]
    """

    # Relative slack on the bounds: the errors are sums of up to 10^4-10^6 rounded terms.
    _SLACK = 1e-9
    _INFLATION_SHARE = INFLATION_SHARE

    def __init__(self, domain: Domain, answers: Mapping[Clique, np.ndarray], candidates: Sequence[Clique]):
        self.candidates = list(candidates)
        self.answers = answers
        self._index = clique_index(domain, self.candidates)
        self._n_records = float(answers[self.candidates[0]].sum())
        self._error = np.full(len(self.candidates), np.nan)   # at the model it was computed for
        self._moved = np.zeros(len(self.candidates))           # bound of the marginal's change since then
        self.model: GraphicalModel | None = None
        self._batch: MarginalBatch | None = None                # sampled(): built on first use

    def track(self, model: GraphicalModel) -> None:
        """Move to ``model``: the bounds follow when its cliques include the current model's, else restart."""
        if self.model is not None and model is not self.model:
            try:
                change = marginal_change_bounds(model, self.model, self._index)
            except ValueError:   # not nested (a caller's own models): forget, every error is bounded by N + total
                self._error[:] = np.nan
            else:
                self._moved += model.total * change + abs(model.total - self.model.total)
        self.model = model

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of every candidate's error under the current model."""
        cap = self._n_records + self.model.total
        known = ~np.isnan(self._error)
        lower = np.where(known, np.maximum(self._error - self._moved, 0.0), 0.0)
        upper = np.where(known, np.minimum(self._error + self._moved, cap), cap)
        slack = self._SLACK * cap
        return np.maximum(lower * (1 - self._SLACK) - slack, 0.0), upper * (1 + self._SLACK) + slack

    def exact(self, i: int) -> float:
        """The error of candidate ``i`` under the current model (remembered for later bounds)."""
        r = self.candidates[i]
        error = self._error[i] = float(np.abs(self.answers[r] - self.model.project(r).ravel()).sum())
        self._moved[i] = 0.0
        return error

    def sampled(self, n_samples: int, rng: np.random.Generator, workers: int = 1) -> np.ndarray:
        """Every candidate's error, with the model's answer estimated from ``n_samples`` records drawn from it.

        ``‖y_r − (total / N) · M_r(S)‖₁ − κ_r / 2`` for ``N = n_samples``
        records ``S`` generated from the current model by randomized
        rounding; exact for the 1-way candidates and those a model clique
        holds (cheap projections).  The sampling error inflates an L1 error
        by at most ``κ_r = √(2/π) · total · Σ_cells √(p̂(1 − p̂)/N)`` (``p̂``
        the cells' sampled shares), about half of that on average in our
        measurements, hence the correction.  The estimate depends on the
        data only through ``y_r`` (the records are drawn from the model
        alone, with ``rng``, and ``κ_r`` from the records), so it changes by
        at most 1 when a record is added or removed, as the exact error does.
        The marginals of the records are counted in ``workers`` threads (the
        same numbers with any number).

        Examples
        --------
        >>> import numpy as np
        >>> from skdpsynth import Domain
        >>> from skdpsynth.graphical import GraphicalModel
        >>> from skdpsynth.synthesizers.select_measure import CandidateErrors
        >>> dom = Domain(["a", "b"], [2, 2])
        >>> errors = CandidateErrors(dom, {("a", "b"): np.array([10.0, 0.0, 0.0, 10.0])}, [("a", "b")])
        >>> errors.track(GraphicalModel(dom, {("a",): np.zeros(2)}, total=20.0))
        >>> errors.sampled(1000, np.random.default_rng(0)).round(1)   # exact: 20
        array([20.])
        """
        model = self.model
        estimate = np.full(len(self.candidates), np.nan)
        for i in np.flatnonzero(held_by_model(model, self.candidates)):
            estimate[i] = self.exact(i)
        drawn = np.isnan(estimate)
        if not drawn.any():
            return estimate
        if self._batch is None:
            self._flatten_answers()
        records = sample_model(model, n_records=n_samples, method="round", random_state=rng)
        total = model.total

        def errors(members, offsets, counts):
            share = counts / n_samples
            answers = self._batch_answers[offsets[0]:offsets[0] + counts.size]
            error = np.add.reduceat(np.abs(answers - total * share), offsets - offsets[0])
            # The sampling error inflates the L1 error: by √(2/π)·s summed over the cells (s the estimate's
            # standard deviation) where the model is right, by little where it is far off.  Half of that bound
            # is taken off, a constant given the records, so the score's sensitivity is unchanged.
            spread = np.add.reduceat(np.sqrt(share * (1 - share) / n_samples), offsets - offsets[0])
            return members, error - self._INFLATION_SHARE * np.sqrt(2 / np.pi) * total * spread

        sampled = np.empty(len(self._batch_index))
        for members, values in self._batch.map_counts(records, errors, workers=workers):
            sampled[members] = values
        take = drawn[self._batch_index]
        estimate[self._batch_index[take]] = sampled[take]
        return estimate

    def _flatten_answers(self) -> None:
        """Lay the multi-way candidates' answers out as one array (views replace the arrays in ``answers``).

        Copied one candidate at a time, each original dropped as soon as it is copied (the mapping is the
        caller's: its arrays become views with the same values), so memory never holds both copies.
        """
        self._batch_index = np.array([i for i, r in enumerate(self.candidates) if len(r) > 1], dtype=np.int64)
        self._batch = MarginalBatch(self.model.domain, [self.candidates[i] for i in self._batch_index])
        self._batch_answers = np.empty(self._batch.size)
        for j, i in enumerate(self._batch_index):
            r, start, size = self.candidates[i], self._batch.offsets[j], self._batch.sizes[j]
            self._batch_answers[start:start + size] = self.answers[r]
            self.answers[r] = self._batch_answers[start:start + size]


class MarginalBatch:
    """Many marginals of the same records at once, as one flat array of their cells (each canonical, row-major).

    Cliques sharing all but their last attribute form a group whose flat
    index of that prefix is computed once; per-clique sums (the L1 errors of
    thousands of candidates) are ``reduceat`` over the flat array, block by
    block (:meth:`iter_counts`) so that memory stays bounded.

    Parameters
    ----------
    domain : Domain
    cliques : sequence of tuples
        Each of at least one attribute; clique ``i``'s cells are
        ``flat[offsets[i]:offsets[i + 1]]``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.select_measure import MarginalBatch
    >>> dom = Domain(["a", "b", "c"], [2, 2, 3])
    >>> records = np.array([[0, 1, 2], [1, 1, 0], [0, 1, 2]])
    >>> batch = MarginalBatch(dom, [("a", "b", "c"), ("b",)])
    >>> [m.tolist() for m in batch.split(batch.counts(records))]
    [[0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0], [0, 3]]
    >>> batch.sums(batch.counts(records)).tolist()      # per clique: the number of records
    [3, 3]
    """

    def __init__(self, domain: Domain, cliques: Sequence[Clique]):
        self.domain = domain
        canonical = [domain.canonical(r) for r in cliques]
        groups: dict[Clique, list[int]] = {}
        for i, r in enumerate(canonical):
            groups.setdefault(r[:-1], []).append(i)
        sizes = np.array([domain.size(r) for r in canonical], dtype=np.int64)
        # Laid out group by group, so that each group's counts are one contiguous block.
        order = [i for members in groups.values() for i in members]
        start = np.zeros(len(cliques), dtype=np.int64)
        start[order] = np.concatenate([[0], np.cumsum(sizes[order])[:-1]]) if order else []
        self.offsets, self.sizes, self.size = start, sizes, int(sizes.sum())
        self._by_position = np.argsort(start, kind="stable")
        self._groups = [(prefix, [(i, canonical[i][-1], int(start[i]), int(sizes[i]), domain[canonical[i][-1]])
                                  for i in members])
                        for prefix, members in groups.items()]

    def counts(self, records: np.ndarray, workers: int = 1) -> np.ndarray:
        """Every clique's marginal of ``records`` (codes, columns in domain order), concatenated."""
        flat = np.empty(self.size, dtype=np.int64)

        def store(members, offsets, counts):
            flat[offsets[0]:offsets[0] + counts.size] = counts
        self.map_counts(records, store, workers=workers)
        return flat

    def iter_counts(self, records: np.ndarray, max_cells: int = 1 << 22):
        """The marginals of ``records`` block by block of about ``max_cells`` cells (memory stays bounded).

        Yields ``(cliques, offsets, counts)``: the indices of the block's cliques (order given at
        construction), their offsets in the flat layout, and the block's counts, which start at
        ``offsets[0]``.
        """
        columns = self._columns(records)
        for chunk in self._chunks(max_cells):
            yield self._count(columns, chunk)

    def map_counts(self, records: np.ndarray, function: Callable, *, max_cells: int = 1 << 22,
                   workers: int = 1) -> list:
        """``function(cliques, offsets, counts)`` on every block of :meth:`iter_counts`, in ``workers`` threads.

        Returns the calls' results in block order.  With several workers the groups are cut into at least four
        blocks per worker, and at most ``workers`` blocks' counts exist at a time.  ``bincount`` holds the GIL
        for part of its time, so the gain is modest (``doc/engine.md``).  The counts are the same whatever the number of workers; ``function`` must be safe to call from several threads.
        """
        columns = self._columns(records)
        if workers <= 1:
            return [function(*self._count(columns, chunk)) for chunk in self._chunks(max_cells)]
        target = max(1, min(max_cells, -(-self.size // (4 * workers))))
        return list(thread_pool("counts", workers).map(lambda chunk: function(*self._count(columns, chunk)),
                                                      self._chunks(target)))

    def _columns(self, records: np.ndarray) -> dict:
        return {a: np.ascontiguousarray(records[:, j], dtype=np.int64) for j, a in enumerate(self.domain.attrs)}

    def _chunks(self, max_cells: int) -> list[range]:
        """Consecutive groups (so each block's counts are contiguous) of about ``max_cells`` cells each."""
        chunks, first, cells = [], 0, 0
        for g, (_, members) in enumerate(self._groups):
            cells += sum(m[3] for m in members)
            if cells >= max_cells:
                chunks.append(range(first, g + 1))
                first, cells = g + 1, 0
        if first < len(self._groups):
            chunks.append(range(first, len(self._groups)))
        return chunks

    def _count(self, columns: dict, chunk: range) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The marginals of one block of groups: ``(cliques, offsets, counts)``."""
        domain = self.domain
        block = []
        # One bincount per clique over the group's prefix index: one bincount per group over all its keys at once
        # is slower, its scattered writes and gathered columns cost more than the calls (doc/engine.md).
        for prefix, members in (self._groups[g] for g in chunk):
            prefix_index = np.zeros(len(columns[domain.attrs[0]]), dtype=np.int64)
            for a in prefix:
                prefix_index = prefix_index * domain[a] + columns[a]
            for i, last, start, cells, size in members:
                block.append((i, start, np.bincount(prefix_index * size + columns[last], minlength=cells)))
        return (np.array([b[0] for b in block], dtype=np.int64), np.array([b[1] for b in block], dtype=np.int64),
                np.concatenate([b[2] for b in block]))

    def concatenate(self, tables: Sequence[np.ndarray]) -> np.ndarray:
        """The cliques' flattened tables (in the order given at construction) as one array in this layout."""
        flat = np.empty(self.size)
        for start, size, table in zip(self.offsets, self.sizes, tables):
            flat[start:start + size] = np.ravel(table)
        return flat

    def split(self, flat: np.ndarray) -> list[np.ndarray]:
        """``flat`` as one array per clique, in the order given at construction."""
        return [flat[start:start + size] for start, size in zip(self.offsets, self.sizes)]

    def sums(self, flat: np.ndarray) -> np.ndarray:
        """The sum of each clique's cells in ``flat``, in the order given at construction."""
        totals = np.empty(len(self.sizes), dtype=np.result_type(flat.dtype, np.int64))
        totals[self._by_position] = np.add.reduceat(flat, self.offsets[self._by_position])
        return totals


def filter_by_model_size(
    candidates: Iterable[Clique],
    domain: Domain,
    model_cliques: Sequence[Clique],
    size_limit_mb: float,
    cache: dict | None = None,
) -> list[Clique]:
    """Candidates already covered by a model clique, or whose addition keeps the junction tree within the limit.

    The candidates :func:`model_size_check` accepts (see there for how sizes are computed and memoised).

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.select_measure import filter_by_model_size
    >>> dom = Domain(["a", "b", "c"], [10, 10, 10])
    >>> filter_by_model_size([("a",), ("b", "c"), ("a", "b", "c")], dom, [("a", "b")], size_limit_mb=0.005)
    [('a',), ('b', 'c')]
    """
    fits = model_size_check(domain, model_cliques, size_limit_mb, cache)
    return [r for r in candidates if fits(r)]


#: Peak bytes a fit holds per cell of the model it estimates, beside the true answers (measured on a 3,000,000-value
#: attribute: 197 for AIM, 221 for PPSyn; mirror descent keeps potentials, beliefs, gradients and noisy targets).
MODEL_BYTES_PER_CELL = 256


def check_fit_memory(name: str, domain: Domain, candidates: Sequence[Clique], model_limit_mb: float | None,
                     answer_bytes_per_cell: float, advice: str) -> None:
    """Refuse, before any count or spend, a select–measure–estimate fit whose memory the public sizes rule out.

    It holds the true answers of every candidate (``answer_bytes_per_cell`` a cell) and estimates a model that
    starts with every 1-way marginal and grows, within ``model_limit_mb`` (None: no limit), to at most the
    candidates' cells (:data:`MODEL_BYTES_PER_CELL` a cell). Raises
    :class:`~skdpsynth.utils.MemoryLimitError` naming both numbers and ``advice``.
    """
    cells = float(sum(domain.size(c) for c in candidates))
    one_way = float(sum(domain.size((a,)) for a in domain.attrs))
    grown = cells if model_limit_mb is None else min(cells, model_limit_mb * 2**20 / 8.0)
    model_cells = max(one_way, grown)
    check_memory(answer_bytes_per_cell * cells + MODEL_BYTES_PER_CELL * model_cells,
                 f"{name}: the true answers of {len(candidates):,} candidate marginals ({cells:,.0f} cells) and a "
                 f"model of up to {model_cells:,.0f} cells being estimated (the 1-way marginals, growing"
                 + ("" if model_limit_mb is None else f" within max_model_size={model_limit_mb:g} MB") + ")",
                 advice)


def model_size_check(
    domain: Domain,
    model_cliques: Sequence[Clique],
    size_limit_mb: float,
    cache: dict | None = None,
) -> Callable[[Clique], bool]:
    """A test of AIM's junction-tree size guard: ``fits(r)`` is true when ``r`` is covered by a model clique
    or adding it keeps the junction tree within ``size_limit_mb``.

    The junction tree of a clique set is built component by component (the
    greedy elimination never mixes connected components), so its size is
    the sum of its components' sizes, and adding a candidate only changes
    the components it touches.  Sizes are therefore computed, and memoised
    in ``cache`` (a dict the caller keeps across rounds), per set of
    touched components: a round that grows one component leaves every
    candidate that does not touch it at no cost.  Answers are memoised too,
    so a caller may ask about the same candidate more than once.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.select_measure import model_size_check
    >>> dom = Domain(["a", "b", "c"], [10, 10, 10])
    >>> fits = model_size_check(dom, [("a", "b")], size_limit_mb=0.005)   # 655 cells of float64
    >>> fits(("a",)), fits(("b", "c")), fits(("a", "b", "c"))
    (True, True, False)
    """
    cache = {} if cache is None else cache
    # Connected components of the model's attributes (every attribute is in a 1-way clique or a singleton).
    component = {a: frozenset([a]) for a in domain.attrs}
    for c in model_cliques:
        merged = frozenset().union(*(component[a] for a in c))
        for a in merged:
            component[a] = merged
    members: dict[frozenset, list] = {}
    for c in model_cliques:
        members.setdefault(component[c[0]], []).append(tuple(c))

    # Sizes are memoised per domain (the cache may outlive one): key the sub-cache by its sizes.
    sizes = cache.setdefault(("domain", tuple(domain.to_dict().items())), {})

    def size_of(cliques: list, attrs: frozenset) -> float:
        key = (frozenset(map(frozenset, cliques)), attrs)
        size = sizes.get(key)
        if size is None:
            cells = junction_tree_cells(domain, cliques, [a for a in domain.attrs if a in attrs])
            size = sizes[key] = cells * 8 / 2**20
        return size

    component_size = {comp: size_of(members.get(comp, []), comp) for comp in set(component.values())}
    total = sum(component_size.values())
    model_sets = [set(c) for c in model_cliques]
    answers: dict[Clique, bool] = {}

    def fits(r: Clique) -> bool:
        answer = answers.get(r)
        if answer is None:
            if any(set(r) <= m for m in model_sets):
                answer = True
            else:
                touched = {component[a] for a in r}
                attrs = frozenset().union(*touched)
                joined = [c for comp in touched for c in members.get(comp, [])] + [tuple(r)]
                size = total - sum(component_size[comp] for comp in touched) + size_of(joined, attrs)
                answer = size <= size_limit_mb
            answers[r] = answer
        return answer

    return fits


def resolve_workload(workload, domain: Domain, max_cells: int | None, default_ways: int = 3,
                     log: Callable[[str], None] | None = None) -> list[tuple[Clique, float]]:
    """A workload hyper-parameter as ``[(clique, weight), ...]`` over ``domain``.

    ``None`` is all ``default_ways``-way marginals, an int ``k`` all k-way
    ones (k capped at the number of attributes), a list of cliques or
    ``(clique, weight)`` pairs is taken as given; cliques with more than
    ``max_cells`` cells are dropped (``None``: keep all).

    When no k-way marginal has at most ``max_cells`` cells, the largest
    ``k' < k`` for which some do is used instead (reported through ``log``);
    when not even a 1-way marginal fits, or an explicit list loses every
    clique, a ``ValueError`` names ``max_cells`` and the smallest size it
    would need.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.select_measure import resolve_workload
    >>> dom = Domain(["a", "b", "c"], [2, 3, 4])
    >>> resolve_workload(2, dom, max_cells=None)
    [(('a', 'b'), 1.0), (('a', 'c'), 1.0), (('b', 'c'), 1.0)]
    >>> resolve_workload([("c", "a"), (("b", "c"), 2.0)], dom, max_cells=None)   # canonical order, weights kept
    [(('a', 'c'), 1.0), (('b', 'c'), 2.0)]
    >>> resolve_workload(3, dom, max_cells=10, log=print)   # no 3-way marginal fits: 2-way instead
    no 3-way marginal has at most max_cells=10 cells; the workload is the 2 2-way marginals that do
    [(('a', 'b'), 1.0), (('a', 'c'), 1.0)]
    """
    if workload is None or isinstance(workload, (int, np.integer)):
        k = default_ways if workload is None else int(workload)
        if k < 1:
            raise ValueError(f"workload must be a positive integer, None or a list of cliques, got {workload!r}.")
        k = min(k, len(domain))
        for ways in range(k, 0, -1):
            out = make_workload(domain, ways=ways, max_cells=max_cells)
            if out:
                if ways < k and log is not None:
                    log(f"no {k}-way marginal has at most max_cells={max_cells:,} cells; the workload is the "
                        f"{len(out)} {ways}-way marginals that do")
                return out
        smallest = min(domain[a] for a in domain)
        raise ValueError(
            f"No marginal has at most max_cells={max_cells:,} cells (the smallest attribute has {smallest:,} "
            f"values). Raise max_cells (or pass max_cells=None) or coarsen the domain, e.g. with a discretizer."
        )
    out = []
    smallest = None
    for item in workload:
        if len(item) == 2 and not isinstance(item[1], str) and np.isscalar(item[1]):
            clique, weight = item
        else:
            clique, weight = item, 1.0
        clique = domain.canonical(clique)
        size = domain.size(clique)
        smallest = size if smallest is None else min(smallest, size)
        if max_cells is None or size <= max_cells:
            out.append((clique, float(weight)))
    if not out:
        if smallest is None:
            raise ValueError("The workload is empty: give at least one clique.")
        raise ValueError(
            f"No clique of the workload has at most max_cells={max_cells:,} cells (the smallest has "
            f"{smallest:,}). Raise max_cells (or pass max_cells=None) or give smaller cliques."
        )
    return out


# ------------------------------------------------------------------ the selection engine on wide tables
# What a ``workload`` hyper-parameter may be (resolve_workload reads it): None, k, or a list of cliques or pairs.
WORKLOAD_CONSTRAINT = [None, Interval(Integral, 1, None), list, tuple]
# The engine's hyper-parameters (AIMSynthesizer, PartitionSynthesizer), declared once for both.
ENGINE_PARAMETER_CONSTRAINTS = {
    "scoring": [Options("auto", "exact", "sampled")],
    "scoring_samples": [Options("auto"), Interval(Integral, 1, None)],
    "selections_per_round": [Options("auto"), Interval(Integral, 1, None)],
}


def choose_engine(scoring, scoring_samples, selections_per_round, n_attributes: int,
                  n_candidates: int) -> tuple[str, int, int]:
    """The engine's ``(scoring, scoring_samples, selections_per_round)`` from the hyper-parameters and public
    sizes only (so the same for any data over a domain).

    ``"auto"``: sampled scoring above 1,000 candidates; 50,000 records up to 10,000 candidates, 25,000 above;
    one selection per round per 8 attributes.  Selections are capped at ``n_attributes``: every 1-way candidate
    shares at most one attribute with any pick, so up to ``n_attributes`` picks always find an eligible one.

    Examples
    --------
    >>> from skdpsynth.synthesizers.select_measure import choose_engine
    >>> choose_engine("auto", "auto", "auto", n_attributes=14, n_candidates=305)     # Adult's 3-way workload
    ('exact', 50000, 1)
    >>> choose_engine("auto", "auto", "auto", n_attributes=50, n_candidates=20_875)
    ('sampled', 25000, 6)
    """
    chosen = scoring if scoring != "auto" else (
        "sampled" if n_candidates > SAMPLED_SCORING_CANDIDATES else "exact")
    samples = int(scoring_samples) if scoring_samples != "auto" else (
        50_000 if n_candidates <= MANY_CANDIDATES else 25_000)
    k = (max(1, n_attributes // ATTRIBUTES_PER_SELECTION) if selections_per_round == "auto"
         else min(int(selections_per_round), n_attributes))
    return chosen, samples, k


def child_generator(rng: np.random.Generator) -> np.random.Generator:
    """An independent generator (for the scoring records), which leaves ``rng``'s own stream untouched.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.select_measure import child_generator
    >>> rng = np.random.default_rng(0)
    >>> state = rng.bit_generator.state
    >>> child = child_generator(rng)
    >>> rng.bit_generator.state == state, child is rng
    (True, False)
    """
    try:
        return rng.spawn(1)[0]
    except TypeError:   # a bit generator without a seed sequence
        return np.random.default_rng(rng.integers(2**63))


def held_by_model(model: GraphicalModel, candidates: Sequence[Clique]) -> np.ndarray:
    """Which candidates are 1-way or inside a model clique (their marginals are cheap, exact projections).

    One set lookup per candidate against the subsets of the model's cliques, not a subset test against each.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel
    >>> from skdpsynth.synthesizers.select_measure import held_by_model
    >>> dom = Domain(["a", "b", "c"], [2, 2, 2])
    >>> model = GraphicalModel(dom, {("a", "b"): np.zeros((2, 2)), ("c",): np.zeros(2)}, total=10.0)
    >>> held_by_model(model, [("c",), ("b", "a"), ("a", "c")]).tolist()
    [True, True, False]
    """
    ways = {len(r) for r in candidates if len(r) > 1}
    held = {frozenset(s) for c in model.cliques for k in ways if k <= len(c) for s in combinations(c, k)}
    return np.array([len(r) == 1 or frozenset(r) in held for r in candidates], dtype=bool)


def sampled_shares(model: GraphicalModel, candidates: Sequence[Clique], n_samples: int,
                   rng: np.random.Generator) -> dict[Clique, np.ndarray]:
    """The candidates' marginals of ``n_samples`` records drawn from ``model`` (randomized rounding), as shares.

    Each is shaped over the candidate's attributes in its own order.  The records come from the model alone,
    so anything computed from them is post-processing of what the model was fitted on.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel
    >>> from skdpsynth.synthesizers.select_measure import sampled_shares
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> shares = sampled_shares(GraphicalModel(dom, {}, total=6.0), [("b", "a")], 600, np.random.default_rng(0))
    >>> shares[("b", "a")].shape, float(shares[("b", "a")].sum())
    ((3, 2), 1.0)
    """
    if not candidates:
        return {}
    domain = model.domain
    records = sample_model(model, n_records=n_samples, method="round", random_state=rng)
    batch = MarginalBatch(domain, candidates)
    flat = batch.counts(records, workers=num_threads()) / float(n_samples)
    out = {}
    for r, cells in zip(candidates, batch.split(flat)):
        canonical = domain.canonical(r)
        table = cells.reshape(domain.project(canonical).shape)
        out[r] = table if tuple(r) == canonical else table.transpose([canonical.index(a) for a in r])
    return out
