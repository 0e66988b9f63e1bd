"""Secure k-party product of one-hot matrices (k ≥ 3): a chain of dealer-assisted two-party products.

Protocol A of RandDPGen needs, per slice, the count ``C`` of a marginal ``r``
(paper §4.1, Algorithm 1).  When ``r``'s attributes are split among ``k``
parties of one slice, party ``p`` holds the one-hot matrix ``V_p``
(``n × d_p``) of its part of every aligned record, and ``C`` is the sum over
records of the outer product of their ``k`` one-hot rows.  Written as a
matrix, ``C = V_1ᵀ W`` with ``W = V_2 ⊙ V_3 ⊙ … ⊙ V_k`` the *row-wise*
Kronecker (face-splitting) product: row ``i`` of ``W`` is the one-hot of
record ``i``'s joint code over parties ``2..k`` (``n × D``, ``D = d_2 ⋯ d_k``).
The curator must learn only ``C + Σ_p noise_p`` and no party anything about
another's data.  :mod:`~skdpsynth.federated.secure_product` is the two-party
case (``k = 2``), which stays on its own code path.

Chain order.  Position 1 is the party with the most cells (ties: slice
order), so that the shared matrix ``W`` is the narrowest; positions
``2..k`` follow in slice order (:func:`chain_order`, public: every party
derives it from its own copy of the job).

Protocol (all arithmetic in ``Z_{2^64}``)
-----------------------------------------

The dealer (the curator, :class:`ChainDealer`) sends every party one 32-byte
master seed; a party expands it (ChaCha20, sub-seeds by SHA-256 with a label)
into its masks.  ``W^(j)`` denotes ``V_2 ⊙ … ⊙ V_j``, which after step ``j``
is additively shared among parties ``2..j``; ``W^(2) = V_2`` is party 2's.

Step ``j = 3..k`` (a Beaver triple for an element-wise product, shared × private):

* holders ``m ∈ {2..j−1}`` have masks ``B_m`` (``n × D_{j−1}``) and
  triple shares ``T_m`` (``n × D_j``), both from their seeds; party ``j`` has
  a mask ``A_j`` (``n × d_j``) from its seed and its triple share ``T_j =
  (Σ_m B_m) ⊙ A_j − Σ_m T_m`` *explicitly* from the dealer (the only dealer
  message that is not a seed: ``n × D_j`` words);
* party ``j`` sends ``E_j = V_j − A_j`` to every holder (it can do so at
  once, round 0); every holder sends ``F_m = W_m − B_m`` to party ``j``;
* with ``F = Σ_m F_m`` and ``B = Σ_m B_m``: ``W ⊙ V_j = F ⊙ V_j + B ⊙ E_j +
  B ⊙ A_j``, so party ``j`` takes ``F ⊙ V_j + T_j`` (placing each row of
  ``F`` in the block of its own code: no multiplication) and holder ``m``
  takes ``B_m ⊙ E_j + T_m``: new shares of ``W^(j)``.

Final product (a Beaver matrix triple, private × shared):

* party 1 has ``A_1`` (``n × d_1``), holders ``m ∈ {2..k}`` have ``B'_m``
  (``n × D``); the dealer keeps ``Z = A_1ᵀ Σ_m B'_m`` (``d_1 × D``);
* party 1 sends ``E_1 = V_1 − A_1`` to every holder (round 0), every holder
  sends ``F'_m = W_m − B'_m`` to party 1;
* holder ``m`` takes ``S_m = E_1ᵀ W_m``, party 1 ``S_1 = A_1ᵀ Σ_m F'_m``;
  ``Σ_p S_p = V_1ᵀ W − A_1ᵀ B' = C − Z``.

Every party returns ``S_p · 2^f + enc(noise_p)`` masked by pairwise secure
aggregation (:mod:`~skdpsynth.federated.secure_aggregation`) among the ``k``
parties; the curator adds the masked shares, adds ``Z · 2^f`` and decodes
(:meth:`ChainDealer.finish`): ``C + Σ_p noise_p``.  Integer noise shares
(RandDPGen's discrete Gaussians) are encoded exactly.

Rounds (:func:`chain_active`, :func:`chain_sends`, :func:`chain_receives`):
round 0 opens (seeds, explicit shares; every ``E`` and party 2's first
``F``), round ``t = 1..k−2`` is step ``j = t + 2`` (parties ``2..j``), round
``k − 1`` is party 1's final share; ``k`` rounds in all.  Each ordered pair
of parties exchanges at most one matrix per product.

What each participant sees
--------------------------

* **Party 1**: its seed; ``F'_m = W_m − B'_m`` for every holder — uniform
  words (``B'_m`` is expanded from ``m``'s seed, which party 1 never sees).
* **Party ``p ≥ 2``**: its seed; ``E_1`` and ``E_j`` (``j > p``), each masked
  by a seed it never sees; at its own step (``p ≥ 3``) the ``F_m`` masked by
  the holders' ``B_m`` and the explicit ``T_p``, masked by the holders'
  ``T_m``.  All uniform words, jointly (each carries a fresh mask of its own).
* **The curator**: the seeds and explicit shares it made, the parties'
  matrices only sealed for their recipients (the runtime seals every one
  under the pair's X25519 key, :mod:`~skdpsynth.federated.runtime`), the
  ``k`` masked shares (each uniform as long as another participant's key is
  secret) and their sum ``(C − Z) · 2^f + enc(Σ noise)``: ``C + noise`` only.

Trust model
-----------

Semi-honest parties and dealer; **no collusion** between the curator and any
party (the curator knows every mask: with party ``p`` it would learn what
``p`` receives unmasked) nor among parties (holders of shares of ``W``
together hold ``W``).  Nothing detects a deviating party (it gives a wrong
count, not a leak to the others).  Fresh randomness per product: a party
refuses a master seed it has used (``ledger``), and the dealer hands out
each seed and explicit share once and finishes once.

Traffic
-------

With ``D_j = d_2 ⋯ d_j`` (``D = D_k``), in words (:func:`chain_matrix_width`
gives each party-to-party matrix's width): the explicit
shares ``n · Σ_{j=3..k} D_j`` (dealer → party ``j``); ``E_1`` to ``k − 1``
holders, ``n d_1 (k − 1)``; ``E_j`` to ``j − 2`` holders, ``n Σ_j d_j (j −
2)``; the ``F_m``, ``n Σ_{j=3..k} (j − 2) D_{j−1}``; the ``F'_m``, ``n D (k −
1)``; ``k`` masked shares of ``d_1 D`` words.  The runtime relays party-to-
party matrices through the curator (each counted once to it, once from it).
Every relayed matrix and explicit share travels as words of
:func:`~skdpsynth.federated.secure_product.relay_word_bytes` bytes (3 at
``f = 40``): the shares are computed from them by ring operations only and
used as ``S · 2^f``, so their low ``64 − f`` bits give the same share, bit for
bit; the federation picks ``f`` by the two-party rule,
:func:`~skdpsynth.federated.secure_product.product_scale_bits` with
``n_terms = k + 1`` (public ``n`` and variances).

Ranges
------

``C ≤ n`` and each of the ``k`` noise values must stay below
``max_abs_value(f, k + 1) = 2^(63−f) / (k + 1)``; the dealer refuses ``n``
beyond it, the party's encoding any noise beyond it.

Examples
--------
>>> import numpy as np
>>> codes = [np.array([0, 1, 1, 0]), np.array([1, 0, 1, 1]), np.array([0, 0, 1, 1])]
>>> secure_chain_product(codes, [2, 2, 2]).reshape(2, 2, 2)[1].tolist()   # cells (1, ·, ·)
[[1.0, 0.0], [0.0, 1.0]]
"""
from __future__ import annotations

import hashlib
import operator
import os
from collections.abc import Mapping, MutableSet, Sequence
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .secure_aggregation import DEFAULT_SCALE_BITS, SecureAggregationParty, aggregate_encoded, decode, encode, \
    max_abs_value
from .party_job import chain_order
from .secure_product import SecureProductError, _expand, matmul_t_mod64

__all__ = ["ChainSeed", "ChainDealer", "ChainParty", "chain_active", "chain_sends",
           "chain_receives", "chain_matrix_width", "secure_chain_product"]

_SEED_BYTES = 32
_SUB_SEED_LABEL = b"skdpsynth/secure-chain/v1/"
_PROCESS_LEDGER: set = set()


# --------------------------------------------------------------------------- the public schedule
def chain_active(k: int, position: int, t: int) -> bool:
    """Whether the party at ``position`` (1-based) acts in round ``t`` of a ``k``-party chain.

    Examples
    --------
    >>> [[chain_active(3, p, t) for p in (1, 2, 3)] for t in range(3)]
    [[True, True, True], [False, True, True], [True, False, False]]
    """
    if t == 0:
        return True
    if 1 <= t <= k - 2:
        return 2 <= position <= t + 2
    return t == k - 1 and position == 1


def chain_sends(k: int, position: int, t: int) -> tuple:
    """The positions the party at ``position`` sends a matrix to in round ``t``.

    Examples
    --------
    >>> chain_sends(4, 1, 0), chain_sends(4, 2, 0), chain_sends(4, 4, 0), chain_sends(4, 3, 2)
    ((2, 3, 4), (3,), (2, 3), (1,))
    """
    if t == 0:
        if position == 1:
            return tuple(range(2, k + 1))
        return (3,) if position == 2 else tuple(range(2, position))
    if not chain_active(k, position, t) or position == 1:
        return ()
    step = t + 2
    return (step + 1,) if step < k else (1,)


def chain_receives(k: int, position: int, t: int) -> tuple:
    """The positions whose matrices the party at ``position`` reads in round ``t`` (sent in earlier rounds).

    Examples
    --------
    >>> chain_receives(4, 2, 1), chain_receives(4, 4, 2), chain_receives(4, 1, 3)
    ((1, 3, 4), (1, 2, 3), (2, 3, 4))
    """
    if position == 1:
        return tuple(range(2, k + 1)) if t == k - 1 else ()
    if t != max(1, position - 2) or t > k - 2:
        return ()
    earlier = tuple(range(2, position)) if position >= 3 else ()
    return tuple(sorted((1,) + earlier + tuple(range(max(3, position + 1), k + 1))))


def chain_matrix_width(dims: Sequence[int], sender: int, receiver: int) -> int:
    """Columns of the one matrix the party at position ``sender`` sends to ``receiver`` (``n`` rows).

    ``E_1`` (``d_1``) from position 1; the last holders' ``F'_m`` (``D``) to
    position 1; ``E_j`` (``d_j``) from ``j`` to an earlier holder; the ``F_m``
    of step ``j`` (``D_{j−1}``) from a holder to ``j``.  Public: the receiver
    knows the size of what it may accept before reading it.

    Examples
    --------
    >>> dims = (5, 2, 3, 4)
    >>> [chain_matrix_width(dims, 1, 2), chain_matrix_width(dims, 3, 1), chain_matrix_width(dims, 4, 2),
    ...  chain_matrix_width(dims, 2, 4)]
    [5, 24, 4, 6]
    """
    k = len(dims)
    if sender == receiver or not (1 <= sender <= k and 1 <= receiver <= k):
        raise SecureProductError(f"no matrix goes from position {sender} to {receiver} in a {k}-party chain")
    if sender == 1:
        return dims[0]
    if receiver == 1:
        return _widths(dims)[-1]
    return dims[sender - 1] if sender > receiver else _widths(dims)[receiver - 1]


def _widths(dims: Sequence[int]) -> list:
    """``D_j = d_2 ⋯ d_j`` for ``j = 2..k`` (index ``j``; entries 0 and 1 unused)."""
    widths = [0, 0, dims[1]]
    for d in dims[2:]:
        widths.append(widths[-1] * d)
    return widths


def _sub_seed(master: bytes, label: str) -> bytes:
    return hashlib.sha256(_SUB_SEED_LABEL + master + label.encode()).digest()


def _row_kron(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise Kronecker product ``x ⊙ y`` (``n × p`` by ``n × q`` → ``n × pq``, ``y``'s index minor), mod 2^64."""
    return (x[:, :, None] * y[:, None, :]).reshape(x.shape[0], -1)


def _place(x: np.ndarray, codes: np.ndarray, d: int) -> np.ndarray:
    """``x ⊙ onehot(codes)``: row ``i`` of ``x`` in block ``codes[i]`` of ``d`` (no multiplication)."""
    n, p = x.shape
    out = np.zeros((n, p, d), dtype=np.uint64)
    out[np.arange(n), :, codes] = x
    return out.reshape(n, p * d)


def _one_hot(codes: np.ndarray, d: int) -> np.ndarray:
    out = np.zeros((codes.size, d), dtype=np.uint64)
    out[np.arange(codes.size), codes] = 1
    return out


def _check_dims(n, dims, scale_bits) -> tuple:
    n = operator.index(n)
    dims = tuple(operator.index(d) for d in dims)
    f = operator.index(scale_bits)
    if n < 1 or len(dims) < 3 or min(dims) < 1:
        raise SecureProductError(f"a chain needs n >= 1 and at least three parties of >= 1 cell, got n={n}, "
                                 f"dims={list(dims)}")
    if not 0 <= f <= 62:
        raise SecureProductError(f"scale_bits must be in [0, 62], got {f}")
    if n >= max_abs_value(f, len(dims) + 1):
        raise SecureProductError(f"n={n} records: counts up to n must stay below 2^(63-f)/(k+1) = "
                                 f"{max_abs_value(f, len(dims) + 1):.6g} with scale_bits={f}")
    return n, dims, f


class _Masks:
    """Every mask one party's master seed expands to (what the dealer and that party both compute)."""

    def __init__(self, master: bytes, position: int, n: int, dims: tuple):
        self.master, self.position, self.n, self.dims = master, position, n, dims
        self.widths = _widths(dims)

    def own(self) -> np.ndarray:            # A_1 or A_j: masks the party's own one-hot
        return _expand(_sub_seed(self.master, "A"), self.n, self.dims[self.position - 1])

    def step_mask(self, j: int) -> np.ndarray:      # B_m of step j (holder m < j)
        return _expand(_sub_seed(self.master, f"B{j}"), self.n, self.widths[j - 1])

    def step_share(self, j: int) -> np.ndarray:     # T_m of step j (holder m < j)
        return _expand(_sub_seed(self.master, f"T{j}"), self.n, self.widths[j])

    def final_mask(self) -> np.ndarray:     # B'_m of the final product
        return _expand(_sub_seed(self.master, "final"), self.n, self.widths[-1])


@dataclass(frozen=True)
class ChainSeed:
    """The dealer's message to the party at one position: its master seed and the public chain shape.

    Attributes
    ----------
    position : int
        1-based chain position (1: the party whose one-hot multiplies the shared matrix).
    seed : bytes
        32-byte secret master seed (not shown in ``repr``); send it sealed.
    n : int
        Aligned records.
    dims : tuple of int
        Every position's number of cells (``d_1, …, d_k``).
    scale_bits : int
        Fixed-point fraction bits of the shares.

    Examples
    --------
    >>> ChainDealer(4, (3, 2, 2)).seeds()[0]
    ChainSeed(position=1, n=4, dims=(3, 2, 2), scale_bits=24)
    """

    position: int
    seed: bytes = field(repr=False)
    n: int
    dims: tuple
    scale_bits: int


class ChainDealer:
    """The curator as trusted initializer of one ``k``-party product (``k ≥ 3``).

    Parameters
    ----------
    n : int
        Aligned records.
    dims : sequence of int
        Cells of each chain position (``d_1`` first, see :func:`chain_order`).
    scale_bits : int, default 24
    seeds : sequence of ``k`` distinct 32-byte bytes, optional
        Reproducible runs only; by default fresh from the OS CSPRNG.

    Examples
    --------
    >>> dealer = ChainDealer(4, (3, 2, 2))
    >>> [s.position for s in dealer.seeds()]
    [1, 2, 3]
    >>> dealer.explicit_share(3).shape                    # n × d_2 d_3, for position 3 only
    (4, 4)
    """

    def __init__(self, n: int, dims: Sequence[int], *, scale_bits: int = DEFAULT_SCALE_BITS, seeds=None):
        self._n, self._dims, self._f = _check_dims(n, dims, scale_bits)
        k = len(self._dims)
        masters = [os.urandom(_SEED_BYTES) for _ in range(k)] if seeds is None else [bytes(s) for s in seeds]
        if len(masters) != k or any(len(s) != _SEED_BYTES for s in masters):
            raise SecureProductError(f"seeds must be {k} strings of {_SEED_BYTES} bytes")
        if len(set(masters)) != k:
            raise SecureProductError("the seeds must differ (equal seeds would let a party unmask another)")
        self._masters: Optional[list] = masters
        masks = [_Masks(s, p, self._n, self._dims) for p, s in enumerate(masters, start=1)]
        self._explicit = {j: self._step_share(masks, j) for j in range(3, k + 1)}
        final = masks[1].final_mask()
        for m in masks[2:]:
            final = final + m.final_mask()
        self._z = matmul_t_mod64(masks[0].own(), final)       # Z = A_1ᵀ Σ_m B'_m
        self._finished = False

    @staticmethod
    def _step_share(masks: list, j: int) -> np.ndarray:
        """``T_j = (Σ_m B_m) ⊙ A_j − Σ_m T_m`` over the holders ``m = 2..j−1`` of step ``j``."""
        holders = masks[1:j - 1]
        b = holders[0].step_mask(j)
        t = holders[0].step_share(j)
        for m in holders[1:]:
            b = b + m.step_mask(j)
            t = t + m.step_share(j)
        return _row_kron(b, masks[j - 1].own()) - t

    @property
    def shape(self) -> tuple:
        """``(n, dims)``."""
        return self._n, self._dims

    @property
    def scale_bits(self) -> int:
        return self._f

    def __repr__(self) -> str:
        return f"ChainDealer(n={self._n}, dims={self._dims}, scale_bits={self._f})"

    def __reduce_ex__(self, protocol):
        raise TypeError("ChainDealer holds secret triple material and cannot be pickled or copied")

    def seeds(self) -> list:
        """One :class:`ChainSeed` per position (only once)."""
        if self._masters is None:
            raise SecureProductError("this dealer's seeds were already handed out: a chain serves one product only")
        masters, self._masters = self._masters, None
        return [ChainSeed(p, s, self._n, self._dims, self._f) for p, s in enumerate(masters, start=1)]

    def explicit_share(self, position: int) -> np.ndarray:
        """Position ``j``'s triple share ``T_j`` of its step (``j ≥ 3``, ``n × D_j`` uint64; only once)."""
        share = self._explicit.pop(operator.index(position), None)
        if share is None:
            raise SecureProductError(f"no explicit share for position {position} (only 3..k have one, "
                                     "handed out once)")
        return share

    def finish(self, encoded_sum) -> np.ndarray:
        """Add ``Z · 2^f`` to the aggregated shares and decode: ``C + Σ noise`` (``d_1 × D`` float64; once)."""
        if self._finished:
            raise SecureProductError("this dealer already finished its product")
        arr = np.asarray(encoded_sum)
        if arr.dtype != np.uint64 or arr.shape != self._z.shape:
            raise SecureProductError(f"finish expects the uint64 sum of shape {self._z.shape} from "
                                     f"aggregate_encoded, got {arr.dtype} {arr.shape}")
        self._finished = True
        return decode(arr + self._z * np.uint64(1 << self._f), self._f)


class ChainParty:
    """One party of a ``k``-party product: its codes, its master seed, its share of the chain.

    Parameters
    ----------
    message : ChainSeed
    codes : array_like of int, shape ``(n,)``
        The party's flat code of each aligned record, in ``[0, d_position)``.
    explicit : numpy.ndarray of uint64, optional
        The dealer's :meth:`ChainDealer.explicit_share` (positions ``3..k``
        only, ``n × D_position``).
    ledger : set, optional
        Digests of the master seeds this party has used (default: one per process).

    Examples
    --------
    >>> dealer = ChainDealer(4, (2, 2, 2))
    >>> first = ChainParty(dealer.seeds()[0], [0, 1, 1, 0])
    >>> first, sorted(first.open())                      # round 0: E_1 for positions 2 and 3
    (ChainParty(position=1 of 3, n=4, d=2), [2, 3])
    """

    def __init__(self, message: ChainSeed, codes, *, explicit=None, ledger: Optional[MutableSet] = None):
        if not isinstance(message, ChainSeed):
            raise TypeError(f"message must be a ChainSeed, got {type(message).__name__}")
        self._n, self._dims, self._f = _check_dims(message.n, message.dims, message.scale_bits)
        self._k, self._p = len(self._dims), operator.index(message.position)
        if not 1 <= self._p <= self._k:
            raise SecureProductError(f"position must be in 1..{self._k}, got {self._p}")
        c = np.asarray(codes)
        # The texts name no count and no code of the party's data: errors may travel to the curator.
        if c.ndim != 1 or c.size != self._n or (c.size and not np.issubdtype(c.dtype, np.integer)):
            raise SecureProductError(f"position {self._p}: its codes are not one integer per aligned record")
        if np.any((c < 0) | (c >= self._dims[self._p - 1])):
            raise SecureProductError(f"position {self._p}: codes outside [0, {self._dims[self._p - 1]}) of its cells")
        self._masks = _Masks(bytes(message.seed), self._p, self._n, self._dims)
        widths = self._masks.widths
        if self._p >= 3:
            arr = None if explicit is None else np.asarray(explicit)
            if arr is None or arr.dtype != np.uint64 or arr.shape != (self._n, widths[self._p]):
                raise SecureProductError(f"position {self._p}: its explicit triple share must be uint64 of shape "
                                         f"{(self._n, widths[self._p])}")
            self._explicit = arr
        elif explicit is not None:
            raise SecureProductError(f"position {self._p} gets no explicit triple share")
        ledger = _PROCESS_LEDGER if ledger is None else ledger
        digest = hashlib.sha256(b"skdpsynth/secure-chain/v1/seed" + bytes(message.seed)).digest()
        if digest in ledger:
            raise SecureProductError(f"position {self._p}: this seed was already used for a product; ask the "
                                     "dealer for a new one")
        ledger.add(digest)
        self._codes = c.astype(np.intp)
        self._round = 0
        self._inbox: dict = {}
        self._w: Optional[np.ndarray] = None

    def __repr__(self) -> str:
        return f"ChainParty(position={self._p} of {self._k}, n={self._n}, d={self._dims[self._p - 1]})"

    def __reduce_ex__(self, protocol):
        raise TypeError("ChainParty holds private data and cannot be pickled or copied")

    @property
    def position(self) -> int:
        return self._p

    @property
    def scale_bits(self) -> int:
        return self._f

    @property
    def k(self) -> int:
        return self._k

    @property
    def next_round(self) -> int:
        """The round this party acts in next (``k`` when it is done)."""
        return self._round

    @property
    def releases_share(self) -> bool:
        """Whether its next round releases its share (round ``k − 1`` for position 1, ``k − 2`` for the others)."""
        return self._round == (self._k - 1 if self._p == 1 else self._k - 2)

    def _masked_own(self) -> np.ndarray:
        e = np.negative(self._masks.own())
        e[np.arange(self._n), self._codes] += np.uint64(1)
        return e

    def open(self) -> dict:
        """Round 0: ``{recipient position: matrix}`` (``E_1``, ``E_j``, or party 2's first ``F``)."""
        if self._round != 0:
            raise SecureProductError(f"position {self._p} already opened this product")
        self._round = max(1, self._p - 2) if self._p >= 2 else self._k - 1
        if self._p == 2:
            return {3: _one_hot(self._codes, self._dims[1]) - self._masks.step_mask(3)}
        e = self._masked_own()
        e.flags.writeable = False
        return {q: e for q in chain_sends(self._k, self._p, 0)}

    def step(self, received: Mapping[int, np.ndarray], noise=None) -> tuple:
        """Round ``next_round``: read the matrices received, return ``(outgoing, share or None)``.

        ``outgoing`` maps recipient positions to matrices; ``share`` is this
        party's ``S_p · 2^f + enc(noise)`` (``d_1 × D`` uint64) in the round
        it releases it, to be masked by secure aggregation.  ``noise``
        (``d_1 × D``, every ``|x| < 2^(63−f)/(k+1)``) is needed then only.
        """
        t = self._round
        if t == 0 or t >= self._k or not chain_active(self._k, self._p, t):
            raise SecureProductError(f"position {self._p} has no round {t} to run in this product")
        want = chain_receives(self._k, self._p, t)
        if sorted(received) != list(want):
            raise SecureProductError(f"position {self._p} expects in round {t} the matrices of positions "
                                     f"{list(want)}, got {sorted(received)}")
        self._inbox.update(received)
        if self._p == 1:
            outgoing, share = {}, self._final_share(noise)
        else:
            outgoing, share = self._holder_step(t + 2, noise)
        self._round = t + 1 if self._p >= 2 and t + 2 < self._k else self._k
        return outgoing, share

    def _take(self, q: int, shape: tuple) -> np.ndarray:
        arr = np.asarray(self._inbox.pop(q))
        if arr.dtype != np.uint64 or arr.shape != shape:
            raise SecureProductError(f"position {self._p}: the matrix of position {q} must be uint64 of shape "
                                     f"{shape} (mismatched n or cells)")
        return arr

    def _holder_step(self, j: int, noise) -> tuple:
        """Step ``j`` for a holder (``p < j``) or for party ``j``: the new share of ``W^(j)``, then pass it on."""
        n, widths = self._n, self._masks.widths
        if self._p < j:                                      # W_m ← B_m ⊙ E_j + T_m
            e_j = self._take(j, (n, self._dims[j - 1]))
            self._w = _row_kron(self._masks.step_mask(j), e_j) + self._masks.step_share(j)
        else:                                                # W_j ← F ⊙ V_j + T_j
            f = self._take(2, (n, widths[j - 1]))
            for q in range(3, j):
                f = f + self._take(q, (n, widths[j - 1]))
            self._w = _place(f, self._codes, self._dims[j - 1]) + self._explicit
            self._explicit = None
        if j < self._k:
            return {j + 1: self._w - self._masks.step_mask(j + 1)}, None
        e_1 = self._take(1, (n, self._dims[0]))
        share = matmul_t_mod64(e_1, self._w)                 # S_m = E_1ᵀ W_m
        outgoing = {1: self._w - self._masks.final_mask()}
        self._w = None
        return outgoing, self._encoded(share, noise)

    def _final_share(self, noise) -> np.ndarray:
        """Party 1: ``S_1 = A_1ᵀ Σ_m F'_m``."""
        width = self._masks.widths[-1]
        f = self._take(2, (self._n, width))
        for q in range(3, self._k + 1):
            f = f + self._take(q, (self._n, width))
        return self._encoded(matmul_t_mod64(self._masks.own(), f), noise)

    def _encoded(self, share: np.ndarray, noise) -> np.ndarray:
        out = share * np.uint64(1 << self._f)
        if noise is not None:
            nz = np.asarray(noise, dtype=np.float64)
            if nz.shape != share.shape:
                raise SecureProductError(f"position {self._p}: noise has shape {nz.shape}, expected {share.shape}")
            out += encode(nz, self._f, n_parties=self._k + 1)
        return np.ascontiguousarray(out)


def secure_chain_product(codes: Sequence, dims: Sequence[int], *, noises: Sequence | None = None,
                         scale_bits: int = DEFAULT_SCALE_BITS, session="secure-chain", round_id: int = 0,
                         dealer_seeds=None, ledger: Optional[MutableSet] = None) -> np.ndarray:
    """Run the whole ``k``-party protocol in one process (all roles, real cryptography, no sealing).

    Parameters
    ----------
    codes : sequence of ``k`` arrays of int, each ``(n,)``
        The parties' codes, in chain order (position 1 first).
    dims : sequence of ``k`` int
    noises : sequence of ``k`` arrays ``(d_1, D)``, optional
        The parties' noise shares.
    scale_bits, session, round_id
        Fixed point and the secure-aggregation round (fresh X25519 keys).
    dealer_seeds : sequence of ``k`` bytes, optional
    ledger : set, optional

    Returns
    -------
    numpy.ndarray of float64, ``d_1 × D``
        ``C + Σ noise``: ``C[u, w]`` counts the records whose position-1 code is
        ``u`` and whose joint code over positions ``2..k`` (row-major) is ``w``.

    Examples
    --------
    >>> import numpy as np
    >>> c = [np.array([0, 1, 1]), np.array([1, 1, 0]), np.array([2, 2, 0])]
    >>> noisy = secure_chain_product(c, [2, 2, 3], noises=[np.ones((2, 6))] * 3)
    >>> (noisy - 3).astype(int).tolist()                 # every noise share is 1
    [[0, 0, 0, 0, 0, 1], [1, 0, 0, 0, 0, 1]]
    """
    k = len(dims)
    dealer = ChainDealer(len(codes[0]), dims, scale_bits=scale_bits, seeds=dealer_seeds)
    parties = [ChainParty(m, c, explicit=dealer.explicit_share(m.position) if m.position >= 3 else None,
                          ledger=ledger) for m, c in zip(dealer.seeds(), codes)]
    mailbox: dict = {p: {} for p in range(1, k + 1)}
    for party in parties:
        for q, matrix in party.open().items():
            mailbox[q][party.position] = matrix
    names = [f"position{p}" for p in range(1, k + 1)]
    secure = {nm: SecureAggregationParty(nm, session) for nm in names}
    keys = {nm: s.public_key for nm, s in secure.items()}
    masked = {}
    for t in range(1, k):
        sent: dict = {p: {} for p in range(1, k + 1)}
        for party in parties:
            p = party.position
            if not chain_active(k, p, t):
                continue
            inbox = {q: mailbox[p].pop(q) for q in chain_receives(k, p, t)}
            noise = None if noises is None else noises[p - 1]
            outgoing, share = party.step(inbox, noise)
            for q, matrix in outgoing.items():
                sent[q][p] = matrix
            if share is not None:
                masked[names[p - 1]] = secure[names[p - 1]].mask_encoded(share, keys, round_id, participants=names,
                                                                         scale_bits=scale_bits)
        for q, boxes in sent.items():
            mailbox[q].update(boxes)
    return dealer.finish(aggregate_encoded(masked, expected=names))
