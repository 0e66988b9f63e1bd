"""PartSele (paper §4.2.1, Algorithm 2) in its two forms, and the partition sequences it scores.

* :class:`SequenceCache` keeps each candidate's merge/split sequence (the paper's precomputation, §4.2.2) and
  extends a capped sequence only when the answer needs more steps, so the result equals the one on the full
  sequence;
* :func:`contributions` — ``Contr_w = ‖M_w(D) − M_w(p̂)‖₁`` (sensitivity 1 under add/remove: ``p̂`` depends only
  on earlier releases);
* :func:`paper_scores` — the paper's ``Contr_w / ρ_w`` (unbounded sensitivity: not DP; ``doc/deviations.md``,
  "PartSele is not differentially private");
* :func:`strict_options` — strict mode's options (``doc/deviations.md``, "Strict mode"): (marginal, partition)
  pairs of the public sequences, each scored by the gain ``G − r − k·c`` (sensitivity 1) or the efficiency
  ``max(η G − r, 0) / k^{2/3}`` (sensitivity ≤ η), with ``G`` the deviation its group sums capture.

The exponential mechanism, the noisy contribution and the partitioned measurement themselves are the package's
mechanisms (:mod:`skdpsynth.privacy`), called by the synthesizer.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np

from ...graphical import GraphicalModel
from ..select_measure import INFLATION_SHARE
from .partitioning import PartitionSequence, captured_contribution, group_sum_statistic, partition_sequence

__all__ = ["SequenceCache", "StrictOptions", "contributions", "paper_scores", "strict_options", "stopping_point"]

Clique = tuple[str, ...]


class SequenceCache:
    """Partition sequences of the candidates, computed from a source marginal and reused while it holds.

    Parameters
    ----------
    split_rule : {"max_re_interval", "global"}
        Algorithm 4's choice of rectangle (``doc/deviations.md``, "Choosing the rectangle to split").
    max_steps : int or None
        The user's cap on a split sequence (``max_partition_steps``); None: up to single cells.
    refresh : float
        A sequence built from ``q`` is rebuilt when the source marginal has moved by more than ``refresh`` times
        its total in L1 (0: rebuilt at every call with a new array).  In strict mode the source is the public
        model, so this is post-processing whatever its value.
    first_steps : int
        Split sequences are first built to this many steps and doubled on demand.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.partition.selection import SequenceCache
    >>> q = np.array([[4.0, 4.0, 0.0], [4.0, 3.0, 9.0]])
    >>> cache = SequenceCache(first_steps=2)
    >>> seq, complete = cache.get(("a", "b"), q)
    >>> seq.kind, seq.sizes.tolist(), complete
    ('split', [1, 2, 3], False)
    >>> cache.get(("a", "b"), q)[0] is seq   # same source marginal: reused
    True
    >>> seq, complete = cache.extend(("a", "b"))   # steps doubled on demand
    >>> seq.sizes.tolist(), complete, cache.builds
    ([1, 2, 3, 4, 5], False, 2)
    """

    def __init__(self, *, split_rule: str = "max_re_interval", max_steps: int | None = None, refresh: float = 0.0,
                 first_steps: int = 32):
        self.split_rule = split_rule
        self.max_steps = max_steps
        self.refresh = refresh
        self.first_steps = first_steps
        self._store: dict[Clique, tuple[np.ndarray, PartitionSequence, bool]] = {}
        self.builds = 0

    def _build(self, q: np.ndarray, steps: int | None) -> tuple[PartitionSequence, bool]:
        self.builds += 1
        if q.ndim == 1:
            return partition_sequence(q), True
        cap = steps if self.max_steps is None else min(steps, self.max_steps)
        seq = partition_sequence(q, split_rule=self.split_rule, max_steps=cap)
        # Complete when every cell is a group, or the user's cap is reached (the sequence the user asked for).
        complete = int(seq.sizes[-1]) == q.size or len(seq) - 1 < cap or (
            self.max_steps is not None and len(seq) - 1 >= self.max_steps)
        return seq, complete

    def get(self, clique: Clique, q: np.ndarray) -> tuple[PartitionSequence, bool]:
        """The sequence for ``clique`` from source marginal ``q`` (cached), and whether it is complete."""
        held = self._store.get(clique)
        if held is not None:
            q_old, seq, complete = held
            if q_old is q or (self.refresh > 0 and np.abs(q_old - q).sum() <= self.refresh * max(q.sum(), 1.0)):
                return seq, complete
            steps = max(self.first_steps, len(seq) - 1)
        else:
            steps = self.first_steps
        seq, complete = self._build(q, steps)
        self._store[clique] = (q, seq, complete)
        return seq, complete

    def extend(self, clique: Clique) -> tuple[PartitionSequence, bool]:
        """Double the steps of ``clique``'s (incomplete) sequence, from the same source marginal."""
        q, seq, complete = self._store[clique]
        if complete:
            return seq, complete
        seq, complete = self._build(q, 2 * max(len(seq) - 1, 1))
        self._store[clique] = (q, seq, complete)
        return seq, complete


def contributions(model: GraphicalModel, answers: Mapping[Clique, np.ndarray],
                  candidates: Iterable[Clique]) -> tuple[dict[Clique, float], dict[Clique, np.ndarray]]:
    """``Contr_w = ‖M_w(D) − M_w(p̂)‖₁`` per candidate, and the model marginals ``M_w(p̂)`` (shaped).

    ``answers[w]`` holds the true marginal counts (shaped); the model's marginals are in counts too (they sum to
    the model's total).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel
    >>> from skdpsynth.synthesizers.partition.selection import contributions
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> model = GraphicalModel(dom, {(a,): np.zeros(dom[a]) for a in dom}, 24.0)   # uniform: 4 per cell
    >>> q = np.array([[4.0, 4.0, 0.0], [4.0, 3.0, 9.0]])
    >>> contr, projected = contributions(model, {("a",): q.sum(1), ("a", "b"): q}, [("a",), ("a", "b")])
    >>> contr
    {('a',): 8.0, ('a', 'b'): 10.0}
    >>> projected[("a", "b")].tolist()
    [[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]]
    """
    contr, projected = {}, {}
    for w in candidates:
        q_hat = model.project(w)
        projected[w] = q_hat
        contr[w] = float(np.abs(answers[w] - q_hat).sum())
    return contr, projected


def stopping_point(cache: SequenceCache, clique: Clique, q: np.ndarray, eta: float, contribution: float,
                   rule: str) -> tuple[PartitionSequence, int, float]:
    """The termination step of the paper's rule on ``clique``'s sequence, extending a capped sequence as needed.

    Returns ``(sequence, t, rho)``; ``rho`` is ``inf`` when no step of the
    (complete) sequence is feasible.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.partition.selection import SequenceCache, stopping_point
    >>> q = np.array([0, 1, 1, 2, 10, 11, 12, 30.0])
    >>> seq, t, rho = stopping_point(SequenceCache(), ("x",), q, 0.7, 40.0, "first_increase")
    >>> seq.kind, t, int(seq.sizes[t]), round(rho, 6)
    ('merge', 5, 3, 0.004974)
    """
    seq, complete = cache.get(clique, q)
    while True:
        t = seq.stop(eta, contribution, rule=rule)
        rho = float(seq.rho(eta, contribution)[t])
        if complete:
            return seq, t, rho
        if rule == "first_increase" and t < len(seq) - 1 and np.isfinite(rho):  # stopped inside: later costs more
            return seq, t, rho
        # global_min: every later step costs at least k² / (π (η C)²) with k > the last size.
        if rule == "global_min" and contribution > 0 and (
                rho <= float(seq.sizes[-1] + 1) ** 2 / (np.pi * (eta * contribution) ** 2)):
            return seq, t, rho
        seq, complete = cache.extend(clique)


def paper_scores(cache: SequenceCache, candidates: list[Clique], answers: Mapping[Clique, np.ndarray],
                 contr: Mapping[Clique, float], eta: float, rule: str) -> tuple[np.ndarray, dict]:
    """Algorithm 2 as written: ``score_w = Contr_w / ρ_w`` on partitions of the TRUE marginals (not DP).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.partition.selection import SequenceCache, paper_scores
    >>> q = np.array([[4.0, 4.0, 0.0], [4.0, 3.0, 9.0]])
    >>> answers = {("a",): q.sum(1), ("a", "b"): q}
    >>> contr = {("a",): 8.0, ("a", "b"): 10.0}   # from contributions() against a uniform model
    >>> scores, chosen = paper_scores(SequenceCache(), [("a",), ("a", "b")], answers, contr, 0.7, "first_increase")
    >>> scores.round(2).tolist()
    [197.04, 70.69]
    >>> {w: int(seq.sizes[t]) for w, (seq, t, rho) in chosen.items()}   # groups of the chosen partitions
    {('a',): 2, ('a', 'b'): 4}
    """
    scores, chosen = np.zeros(len(candidates)), {}
    for i, w in enumerate(candidates):
        seq, t, rho = stopping_point(cache, w, answers[w], eta, contr[w], rule)
        chosen[w] = (seq, t, rho)
        scores[i] = 0.0 if (contr[w] <= 0 or not np.isfinite(rho)) else contr[w] / rho
    return scores, chosen


@dataclasses.dataclass(frozen=True)
class StrictOptions:
    """The (marginal, partition) pairs strict mode chooses among in one round, with their utilities.

    ``step[j] = -1`` stands for the finest partition (every cell a group), offered for every candidate whether
    or not its (capped) sequence reaches it.  ``captured`` is private (``G_{w,t}``) and never leaves the fit.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.partition.partitioning import partition_sequence
    >>> from skdpsynth.synthesizers.partition.selection import StrictOptions
    >>> seq = partition_sequence([[4.0, 4.0, 0.0], [4.0, 3.0, 9.0]])
    >>> opts = StrictOptions(candidate=np.array([0, 0]), step=np.array([1, -1]), sizes=np.array([2.0, 6.0]),
    ...                      errors=np.zeros(2), captured=np.array([4.0, 6.0]), utility=np.array([1.5, 1.2]))
    >>> opts.labels(0, seq).tolist()   # step 1 of the split sequence: two groups
    [0, 0, 0, 1, 1, 1]
    >>> opts.labels(1, seq).tolist()   # step -1: every cell its own group
    [0, 1, 2, 3, 4, 5]
    """

    candidate: np.ndarray   # index into the candidate list
    step: np.ndarray        # step t of the candidate's sequence, -1: single cells
    sizes: np.ndarray       # k = |P|
    errors: np.ndarray      # r: public reconstruction error charged to the partition (0 in aggregate form)
    captured: np.ndarray    # G_{w,t} (private)
    utility: np.ndarray     # max(η G − r, 0) / k^{2/3} (sensitivity ≤ η), or the gain G − r − k·c (sensitivity 1)

    def labels(self, j: int, seq: PartitionSequence) -> np.ndarray:
        """Group of every cell (flat, C order) for option ``j`` whose candidate's sequence is ``seq``."""
        t = int(self.step[j])
        return np.arange(int(np.prod(seq.shape))) if t < 0 else seq.labels(t)


def _step_grid(seq: PartitionSequence) -> np.ndarray:
    """Steps whose group counts are 1, 2, 4, … (and the sequence's finest), so a round scores O(log n) options
    per candidate instead of every step."""
    k = seq.sizes
    grid = np.flatnonzero((k & (k - 1)) == 0)
    return np.union1d(grid, [int(np.argmax(k))])


def strict_options(cache: SequenceCache, candidates: list[Clique], proxies: Mapping[Clique, np.ndarray],
                   deviations: Mapping[Clique, np.ndarray], eta: float, *, uniform: bool,
                   partitions: bool = True, noise_per_group: float | None = None,
                   sampled_shares: Mapping[Clique, np.ndarray] | None = None, n_samples: int | None = None,
                   total: float | None = None) -> StrictOptions:
    """Strict PartSele's choices and utilities, scored by the captured contribution.

    For every candidate ``w``, the public sequence of its proxy marginal is cut at ``k = 1, 2, 4, …`` groups,
    plus single cells.  A partition ``P`` can only correct the part of the deviation ``d_w = M_w(D) − M_w(p̂)``
    its group sums see, ``G = Σ_I |Σ_{i∈I} d_i|`` (:func:`captured_contribution`); the utility is
    ``max(η·G − r, 0) / k^{2/3}``, a bounded-sensitivity form of the paper's contribution per unit of budget, with
    ``G`` in place of ``Contr``.  ``r`` is the proxy's reconstruction error when
    cells are filled uniformly (``uniform``), and 0 when the group sums enter as linear queries (the model keeps
    its own shape inside a group).  ``G`` has sensitivity 1, so every utility has sensitivity ``≤ η``.

    With ``noise_per_group`` (the expected absolute noise ``σ√(2/π)`` of one group sum at the round's budget) the
    utility is instead the *gain* ``G − r − k·noise_per_group``: the deviation the measurement can correct minus
    the noise its ``k`` sums add — AIM's quality score, applied to partitions.  It has sensitivity 1.
    ``partitions=False`` offers single cells only (whole marginals: an ablation).

    ``sampled_shares`` (sampled scoring): for the candidates it holds, the model's marginal in ``deviations`` was
    estimated from ``n_samples`` records drawn from the model (``total`` times their shares ``p̂``), which inflates
    every ``|Σ_I d_i|`` by up to ``√(2/π)·total·√(p̂_I(1 − p̂_I)/n_samples)``; half of that bound is taken off each
    option's ``G`` (as in AIM's sampled scores: a constant given the records, so ``G`` keeps sensitivity 1).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.partition.selection import SequenceCache, strict_options
    >>> proxy = {("a",): np.array([12.0, 12.0]), ("a", "b"): np.full((2, 3), 4.0)}   # a uniform model
    >>> q = np.array([[4.0, 4.0, 0.0], [4.0, 3.0, 9.0]])
    >>> deviation = {("a",): q.sum(1) - proxy[("a",)], ("a", "b"): q - proxy[("a", "b")]}
    >>> opts = strict_options(SequenceCache(), [("a",), ("a", "b")], proxy, deviation, 0.7, uniform=False)
    >>> opts.candidate.tolist(), opts.sizes.tolist()
    ([0, 0, 1, 1, 1, 1], [2.0, 1.0, 1.0, 2.0, 4.0, 6.0])
    >>> opts.captured.tolist()   # G: the deviation each partition's group sums can see
    [8.0, 0.0, 0.0, 8.0, 8.0, 10.0]
    >>> opts.utility.round(3).tolist()
    [3.528, 0.0, 0.0, 3.528, 2.222, 2.12]
    """
    sampled_shares = sampled_shares or {}
    inflation = INFLATION_SHARE * np.sqrt(2 / np.pi) * (total or 0.0)

    def spread(p: np.ndarray) -> np.ndarray:   # √(p(1 − p)/S): the sampled share's standard deviation
        return np.sqrt(np.clip(p * (1 - p), 0.0, None) / n_samples)

    parts = []
    for i, w in enumerate(candidates):
        d, share = deviations[w], sampled_shares.get(w)
        whole = np.abs(d).sum()
        if share is not None:
            whole -= inflation * spread(share).sum()
        if not partitions:
            parts.append((np.array([i]), np.array([-1]), np.array([float(d.size)]), np.zeros(1), np.array([whole])))
            continue
        seq, _ = cache.get(w, proxies[w])
        steps = _step_grid(seq)
        sizes = seq.sizes[steps].astype(np.float64)
        errors = seq.errors[steps] if uniform else np.zeros(steps.size)
        if share is None:
            captured = captured_contribution(seq, d, steps)
        else:   # the deviation's and the shares' group sums in one pass
            both = group_sum_statistic(seq, np.stack([d.reshape(seq.shape), share.reshape(seq.shape)]), steps,
                                       lambda sums: np.stack([np.abs(sums[0]), spread(sums[1])]))
            captured = both[0] - inflation * both[1]
        n = d.size
        if sizes.max() < n:   # single cells: captures all of Contr, no reconstruction error
            steps = np.append(steps, -1)
            sizes = np.append(sizes, n)
            errors = np.append(errors, 0.0)
            captured = np.append(captured, whole)
        parts.append((np.full(steps.size, i), steps, sizes, np.maximum(errors, 0.0), captured))
    cand, step, sizes, errors, captured = (np.concatenate(x) for x in zip(*parts))
    if noise_per_group is None:
        utility = np.maximum(eta * captured - errors, 0.0) / sizes ** (2.0 / 3.0)
    else:
        utility = captured - errors - sizes * float(noise_per_group)
    return StrictOptions(cand, step, sizes, errors, captured, utility)
