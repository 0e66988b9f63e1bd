"""PartSele (spec §5, Algorithm 2) in its two forms, and the partition sequences it scores.

* :class:`SequenceCache` keeps each candidate's merge/split sequence (spec §9) and extends a capped sequence
  only when the answer needs more steps, so the result equals the one on the full sequence;
* :func:`contributions` — ``Contr_w = ‖M_w(D) − M_w(p̂)‖₁`` (sensitivity 1 under add/remove: ``p̂`` depends only
  on earlier releases);
* :func:`paper_scores` — the paper's ``Contr_w / ρ_w`` (unbounded sensitivity: not DP, spec G3);
* :func:`strict_utilities` — spec §16 S3, ``u_w = max_t max(η C_w − r_t, 0) / k_t^{2/3}``, η-Lipschitz in C_w.

The exponential mechanism, the noisy contribution and the partitioned measurement themselves are the package's
mechanisms (:mod:`skdpsynth.privacy`), called by the synthesizer.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np

from ...graphical import GraphicalModel
from .partitioning import PartitionSequence, partition_sequence, strict_utility

__all__ = ["SequenceCache", "contributions", "paper_scores", "strict_utilities", "stopping_point",
           "unexplained_share"]

Clique = tuple[str, ...]


class SequenceCache:
    """Partition sequences of the candidates, computed from a source marginal and reused while it holds.

    Parameters
    ----------
    split_rule : {"max_re_interval", "global"}
        Algorithm 4's choice of rectangle (spec A12).
    max_steps : int or None
        The user's cap on a split sequence (``max_partition_steps``); None: up to single cells.
    refresh : float
        A sequence built from ``q`` is rebuilt when the source marginal has moved by more than ``refresh`` times
        its total in L1 (0: rebuilt at every call with a new array).  In strict mode the source is the public
        model, so this is post-processing whatever its value.
    first_steps : int
        Split sequences are first built to this many steps and doubled on demand.
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
    """
    contr, projected = {}, {}
    for w in candidates:
        q_hat = model.project(w)
        projected[w] = q_hat
        contr[w] = float(np.abs(answers[w] - q_hat).sum())
    return contr, projected


def unexplained_share(seq: PartitionSequence) -> np.ndarray:
    """``(n − k_t) / (n − 1)``: the share of the model's deviation from the data that ``k_t`` groups leave unexplained.

    Strict mode partitions the *model's* marginal, whose reconstruction error ``r_t`` knows nothing of the
    deviation ``C = ‖M_w(D) − M_w(p̂)‖₁`` the measurement is for: on a near-uniform model marginal ``r_0 ≈ 0``
    and a single group (which measures only the total) would look perfect.  With the deviation spread over the
    cells, group means absorb about ``k_t / n`` of it, so the data's reconstruction error is estimated as
    ``r_t + C (n − k_t)/(n − 1)``: all of it for one group, none when every cell is its own group.  The utility
    ``max((η − share_t) C − r_t, 0) / k_t^{2/3}`` stays η-Lipschitz in C.
    """
    n = int(np.prod(seq.shape))
    if n <= 1:
        return np.zeros(len(seq))
    return (n - seq.sizes) / (n - 1)


def _adjusted(seq: PartitionSequence, contribution: float) -> PartitionSequence:
    return dataclasses.replace(seq, errors=seq.errors + contribution * unexplained_share(seq))


def stopping_point(cache: SequenceCache, clique: Clique, q: np.ndarray, eta: float, contribution: float,
                   rule: str, *, unexplained: bool = False) -> tuple[PartitionSequence, int, float]:
    """The termination step of the paper's rule on ``clique``'s sequence, extending a capped sequence as needed.

    With ``unexplained`` (strict mode) the errors are the model sequence's plus the unexplained deviation
    (:func:`unexplained_share`).  Returns ``(sequence, t, rho)``; ``rho`` is ``inf`` when no step of the
    (complete) sequence is feasible.
    """
    seq, complete = cache.get(clique, q)
    while True:
        if unexplained:
            seq = _adjusted(seq, contribution)
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
    """Algorithm 2 as written: ``score_w = Contr_w / ρ_w`` on partitions of the TRUE marginals (not DP)."""
    scores, chosen = np.zeros(len(candidates)), {}
    for i, w in enumerate(candidates):
        seq, t, rho = stopping_point(cache, w, answers[w], eta, contr[w], rule)
        chosen[w] = (seq, t, rho)
        scores[i] = 0.0 if (contr[w] <= 0 or not np.isfinite(rho)) else contr[w] / rho
    return scores, chosen


def strict_utilities(cache: SequenceCache, candidates: list[Clique], projected: Mapping[Clique, np.ndarray],
                     contr: Mapping[Clique, float], eta: float) -> np.ndarray:
    """Spec §16 S1+S3: ``u_w`` on the public sequences of the model marginals ``projected[w]``, their errors
    raised by the deviation they leave unexplained (:func:`unexplained_share`).

    A capped sequence is extended while a later step could still beat the maximum found
    (``η C / k^{2/3}`` bounds every later term), so ``u_w`` equals its value on the full sequence.
    """
    out = np.zeros(len(candidates))
    for i, w in enumerate(candidates):
        seq, complete = cache.get(w, projected[w])
        while True:
            u = strict_utility(seq.sizes, seq.errors + contr[w] * unexplained_share(seq), eta, contr[w])
            if complete or eta * contr[w] / float(seq.sizes[-1] + 1) ** (2 / 3) <= u:
                break
            seq, complete = cache.extend(w)
        out[i] = u
    return out
