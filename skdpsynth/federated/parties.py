"""The data holders and the federation that answers the curator's measurement requests.

A :class:`Party` owns the integer codes of its slice's records restricted to
its columns.  Its only outputs are noisy: a noisy one-hot matrix or a noisy
marginal (protocol B), or its input to the simulated secure-aggregation
primitive of protocol A, which only the :class:`Federation` consumes and
which leaves it as a noisy slice count.

The :class:`Federation` is the curator's one handle on the parties: its
:meth:`~Federation.measure` runs the parties' local work through joblib
(``n_jobs``; any joblib backend can execute it, since every party's noise
comes from a seed fixed by the call, not from shared state) and returns a
:class:`~skdpsynth.federated.messages.MeasurementReply` of noisy arrays.
Every reply is also kept in :attr:`Federation.replies`, and
:class:`ReplayFederation` answers the same requests from such a log without
any data: the curator's algorithm runs unchanged against it, which is how the
tests show that the curator reads nothing but the messages.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from joblib import Parallel, delayed

from ..domain import Domain
from .dmm import PROTOCOLS, split_budget
from .messages import MeasurementReply, NoisyIndicators, NoisyLocalMarginal, SliceCount

__all__ = ["Party", "Federation", "ReplayFederation"]


class Party:
    """One data holder: the records of one slice, restricted to its columns.

    Parameters
    ----------
    spec : PartySpec
        Its public description (name, slice, row positions, columns).
    codes : ndarray of shape (n_rows, n_columns)
        Its private data: integer codes of ``spec.columns`` for its rows, in
        the slice's roster order.
    domain : Domain
        The public domain (sizes of its columns).
    """

    def __init__(self, spec, codes: np.ndarray, domain: Domain):
        codes = np.asarray(codes)
        if codes.shape != (len(spec.rows), len(spec.columns)):
            raise ValueError(f"Party {spec.name!r}: codes of shape {codes.shape}, expected "
                             f"{(len(spec.rows), len(spec.columns))}.")
        self.name = spec.name
        self.slice = spec.slice
        self.columns = tuple(spec.columns)
        self.n_rows = len(spec.rows)  # the public roster size
        self._domain = domain
        self._codes = codes
        self._position = {c: k for k, c in enumerate(self.columns)}

    def __repr__(self) -> str:
        return f"Party({self.name!r}, slice={self.slice}, columns={list(self.columns)}, n_rows={self.n_rows})"

    def _flat(self, attrs: tuple[str, ...], strides: Sequence[int]) -> np.ndarray:
        """Per record, ``Σ_a code_a · stride_a`` over ``attrs`` (a mixed-radix cell index)."""
        out = np.zeros(self.n_rows, dtype=np.int64)
        for a, stride in zip(attrs, strides):
            out += self._codes[:, self._position[a]].astype(np.int64) * int(stride)
        return out

    def _local_strides(self, attrs: tuple[str, ...]) -> list[int]:
        shape = self._domain.shape_of(attrs)
        return [int(np.prod(shape[k + 1:])) for k in range(len(shape))]

    # -- the party's three local steps (each returns only noisy values) -------------------------------
    def noisy_indicators(self, attrs: tuple[str, ...], variance: float, rho: float,
                         rng: np.random.Generator) -> NoisyIndicators:
        """Protocol B: the one-hot matrix over ``attrs`` plus ``N(0, variance)`` on every entry."""
        n_cells = self._domain.size(attrs)
        matrix = rng.normal(0.0, np.sqrt(variance), size=(self.n_rows, n_cells))
        matrix[np.arange(self.n_rows), self._flat(attrs, self._local_strides(attrs))] += 1.0
        return NoisyIndicators(self.slice, self.name, attrs, matrix, variance, rho)

    def noisy_local_marginal(self, attrs: tuple[str, ...], variance: float, rho: float,
                             rng: np.random.Generator) -> NoisyLocalMarginal:
        """Protocol B shortcut: the party's own marginal over ``attrs`` plus ``N(0, variance)`` per cell."""
        n_cells = self._domain.size(attrs)
        counts = np.bincount(self._flat(attrs, self._local_strides(attrs)), minlength=n_cells).astype(float)
        return NoisyLocalMarginal(self.slice, self.name, attrs, counts + rng.normal(0.0, np.sqrt(variance), n_cells),
                                  variance, rho)

    def secure_sum_input(self, attrs: tuple[str, ...], strides: Sequence[int], n_cells: int, variance: float,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Protocol A: this party's input to the secure-aggregation primitive (never sent to the curator).

        Its part of every record's cell index in the marginal (the primitive
        adds the parties' parts record by record and counts) and its noise
        share ``N(0, variance)`` per cell.  A real deployment computes the
        noisy slice count with a secure multi-party inner-product protocol;
        this library simulates that functionality in :class:`Federation`.
        """
        return self._flat(attrs, strides), rng.normal(0.0, np.sqrt(variance), n_cells)


def _local_step(party: Party, kind: str, args: tuple, seed: Sequence[int]):
    """One party's local work for one request (module level, so any joblib backend can run it)."""
    rng = np.random.default_rng(np.random.SeedSequence(list(seed)))
    return getattr(party, kind)(*args, rng)


class Federation:
    """The parties of a hybrid partition, answering distributed marginal measurements.

    Parameters
    ----------
    parties : list of Party
    partition : HybridPartition
        The public partition the parties were built from.
    domain : Domain
    n_jobs : int or None, default=None
        joblib ``n_jobs`` for the parties' local work (``None``: sequential,
        or the active ``joblib.parallel_backend``).
    seed : int, default=0
        Root of the parties' noise seeds: call ``k``'s party ``p`` draws from
        ``SeedSequence([seed, k, p])``, so results do not depend on the backend.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import Federation, HybridPartition, combine
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> codes = np.array([[0, 1], [1, 2], [1, 0], [0, 1]])
    >>> part = HybridPartition.vertical(4, [["a"], ["b"]])
    >>> fed = Federation.from_codes(codes, dom, part, seed=0)
    >>> reply = fed.measure(("a", "b"), rho=1e6)          # tiny noise
    >>> values, variance = combine(reply, dom)
    >>> np.round(values).astype(int).tolist(), reply.party_rhos()
    ([0, 2, 0, 1, 0, 1], {'party0.0': 500000.0, 'party0.1': 500000.0})
    """

    def __init__(self, parties: list[Party], partition, domain: Domain, *, n_jobs=None, seed: int = 0):
        self.parties = list(parties)
        self.partition = partition
        self.domain = domain
        self.n_jobs = n_jobs
        self.seed = int(seed)
        self.replies: list[MeasurementReply] = []
        self._number = {p.name: k for k, p in enumerate(self.parties)}
        self._by_name = {p.name: p for p in self.parties}

    @classmethod
    def from_codes(cls, codes: np.ndarray, domain: Domain, partition, *, n_jobs=None, seed: int = 0) -> "Federation":
        """Split a table of integer codes (columns in domain order) among the partition's parties."""
        parties = []
        for spec in partition.parties():
            cols = [domain.index(c) for c in spec.columns]
            parties.append(Party(spec, codes[np.ix_(np.asarray(spec.rows), cols)], domain))
        return cls(parties, partition, domain, n_jobs=n_jobs, seed=seed)

    def measure(self, attrs: Sequence[str], rho: float, *, protocol: str = "secure_sum", n_repeats: int = 1,
                shortcut: bool = True) -> MeasurementReply:
        """``DMM(r, ρ')``: every slice's involved parties answer with noisy values (spec §3.2).

        Parameters
        ----------
        attrs : sequence of str
            The marginal ``r``.
        rho : float
            The call's zCDP budget ``ρ'``; party ``(i, j)`` spends
            ``n_repeats · |A_ij| / |r| · ρ'``.
        protocol : {"secure_sum", "indicator"}
        n_repeats : int, default=1
            The paper's IDMM ``e``: noise variance divided by ``e`` at ``e`` times the cost.
        shortcut : bool, default=True
            Protocol B: a party holding all of ``r`` in its slice releases its noisy marginal.

        Returns
        -------
        MeasurementReply
        """
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
        r = self.domain.canonical(attrs)
        shape = self.domain.shape_of(r)
        strides = {a: int(np.prod(shape[k + 1:])) for k, a in enumerate(r)}
        n_cells = self.domain.size(r)
        call = len(self.replies)
        jobs, plan = [], []
        for shares in split_budget(self.partition, self.domain, r, rho):
            for s in shares:
                variance = 1.0 / (2.0 * n_repeats * s.rho)
                if protocol == "secure_sum":
                    kind, args = "secure_sum_input", (s.attrs, [strides[a] for a in s.attrs], n_cells, variance)
                elif shortcut and len(shares) == 1:
                    kind, args = "noisy_local_marginal", (s.attrs, variance, n_repeats * s.rho)
                else:
                    kind, args = "noisy_indicators", (s.attrs, variance, n_repeats * s.rho)
                jobs.append(delayed(_local_step)(self._by_name[s.party], kind, args,
                                                 (self.seed, call, self._number[s.party])))
                plan.append((s, variance))
        outputs = Parallel(n_jobs=self.n_jobs)(jobs)
        if protocol == "secure_sum":
            parts = self._secure_aggregate(plan, outputs, r, n_cells, n_repeats)
        else:
            parts = tuple(outputs)
        reply = MeasurementReply(r, float(rho), int(n_repeats), protocol, parts)
        self.replies.append(reply)
        return reply

    @staticmethod
    def _secure_aggregate(plan, outputs, r, n_cells: int, n_repeats: int) -> tuple:
        """The simulated secure-aggregation primitive: per slice, ``bincount(Σ_j parts) + Σ_j noise``."""
        parts = []
        slices = sorted({s.slice for s, _ in plan})
        for i in slices:
            members = [(s, v, out) for (s, v), out in zip(plan, outputs) if s.slice == i]
            index = sum(out[0] for _, _, out in members)
            noisy = np.bincount(index, minlength=n_cells).astype(float) + sum(out[1] for _, _, out in members)
            parts.append(SliceCount(i, r, noisy, float(sum(v for _, v, _ in members)),
                                    {s.party: n_repeats * s.rho for s, _, _ in members}))
        return tuple(parts)


class ReplayFederation:
    """Answers measurement requests from a log of replies, holding no data at all.

    Parameters
    ----------
    replies : sequence of MeasurementReply
        E.g. :attr:`Federation.replies` of an earlier run.

    Raises
    ------
    LookupError
        From :meth:`measure`, if a request differs from the logged one (or
        the log is exhausted).
    """

    def __init__(self, replies: Sequence[MeasurementReply]):
        self._replies = list(replies)
        self.replies: list[MeasurementReply] = []

    def measure(self, attrs: Sequence[str], rho: float, *, protocol: str = "secure_sum", n_repeats: int = 1,
                shortcut: bool = True) -> MeasurementReply:
        k = len(self.replies)
        if k >= len(self._replies):
            raise LookupError(f"Request {k} ({tuple(attrs)}) is beyond the {len(self._replies)} logged replies.")
        reply = self._replies[k]
        same = (set(reply.attrs) == set(attrs) and np.isclose(reply.rho, rho, rtol=1e-12, atol=0)
                and reply.protocol == protocol and reply.n_repeats == n_repeats)
        if not same:
            raise LookupError(f"Request {k} asks for {tuple(attrs)} at rho={rho} ({protocol}, e={n_repeats}); "
                              f"the log has {reply.attrs} at rho={reply.rho} ({reply.protocol}, e={reply.n_repeats}).")
        self.replies.append(reply)
        return reply
