"""Secure two-party product of one-hot matrices with a trusted dealer (Beaver-style matrix triples).

Protocol A of RandDPGen needs, per slice, the count ``C = V1ᵀ V2`` of a marginal
whose attributes are split between two parties of the slice: ``V1`` (``n × d1``)
is the one-hot matrix of party 1's part of each of the slice's ``n`` aligned
records, ``V2`` (``n × d2``) party 2's, and ``C[u, v]`` counts the records with
joint cell ``(u, v)``.  The curator must learn only ``C + noise1 + noise2``
(each party adds a noise share drawn by the caller, so the DP calibration
stays in :mod:`~skdpsynth.federated.dmm`; RandDPGen's parties add integer
discrete Gaussian shares), and neither party may
learn anything about the other's data.

Protocol (all arithmetic in ``Z_{2^64}``, ``uint64`` wraparound)
------------------------------------------------------------------

1. **Dealer** (the curator, :class:`ProductDealer`) draws two fresh 32-byte
   seeds ``sA``, ``sB`` and expands them with the ChaCha20 PRG
   (:func:`~skdpsynth.federated.secure_aggregation.keystream_words`) into
   ``A`` (``n × d1``) and ``B`` (``n × d2``).  It keeps ``Z = Aᵀ B`` (``d1 × d2``)
   and sends ``sA`` to party 1, ``sB`` to party 2 (:meth:`ProductDealer.seeds`;
   in a real deployment over an authenticated, confidential channel — not
   implemented here).
2. Party 1 sends ``E = V1 − A`` to party 2, party 2 sends ``F = V2 − B`` to
   party 1 (:meth:`ProductParty.masked_input`); each sees only uniform words.
3. Party 1 computes ``S1 = Aᵀ F``, party 2 ``S2 = Eᵀ B + Eᵀ F = Eᵀ V2``
   (:meth:`ProductParty.share`; party 2's product is a scatter-add of the rows
   of ``E`` by its codes, no dense one-hot).  Since ``V1 = E + A`` and
   ``V2 = F + B``: ``V1ᵀ V2 = EᵀF + EᵀB + AᵀF + AᵀB = S2 + S1 + Z``.
4. Each party returns ``S_j · 2^f + enc(noise_j)`` (fixed point, :func:`encode`),
   masks it with pairwise secure aggregation
   (:meth:`SecureAggregationParty.mask_encoded`), and the curator adds the two
   masked vectors (:func:`aggregate_encoded`), adds ``Z · 2^f`` and decodes
   (:meth:`ProductDealer.finish`): ``C + noise1 + noise2``.
   :func:`secure_product` runs the whole protocol in one process.

Trust model
-----------

* **Semi-honest** (honest-but-curious) dealer and parties: everybody follows
  the protocol; nothing here detects a deviating party (wrong ``E``, wrong
  share) — it would give a wrong count, not be caught.
* **The curator must not collude with either party.**  It knows ``A`` and
  ``B``, so together with party 2 (which receives ``E = V1 − A``) it learns
  ``V1``, and with party 1 it learns ``V2``.
* **Secure aggregation of the shares is essential**, not an optimisation: the
  curator knows ``A`` and ``B``, so a bare ``S1 = Aᵀ (V2 − B)`` would reveal
  ``Aᵀ V2`` (and ``V2`` itself when ``n ≤ d1``).  Masked, each share is
  uniform to the curator; it sees only the two masked vectors and their sum
  ``(C − Z) · 2^f + enc(noise1 + noise2)``, hence ``C + noise`` only.
* The parties see only uniform words (``E``, ``F``) and their own data.
* Only **two parties per product**.  A marginal whose attributes are split
  among three or more parties of one slice uses the chain of
  :mod:`~skdpsynth.federated.secure_chain`, built on this module's pieces.
* Fresh randomness per product: ``E`` and ``E'`` built from the same ``A``
  reveal ``V1 − V1'``.  The dealer hands out its seeds once, refuses two equal
  seeds, and finishes once; a party refuses a seed it has already used
  (``ledger``, by default one per process) and computes its share once.

Ranges
------

``C ≤ n`` and each noise value must stay below ``max_abs_value(f, 3) =
2^(63−f) / 3`` so that ``|C + noise1 + noise2| < 2^(63−f)``; the dealer
refuses ``n`` beyond that bound and :func:`encode` the noise beyond it.  The
decoded count is off by at most ``2 · 2^(−f−1) = 2^(−f)`` per cell (noise
rounding; none for integer noise, which encodes exactly), plus float64
rounding when ``|C + noise| > 2^(53−f)``.

Narrow relay words.  A share counts only modulo ``2^(64−f)`` (it is
multiplied by ``2^f``), so the masked inputs ``E``, ``F`` need only their low
``64 − f`` bits: they travel as words of :func:`relay_word_bytes` bytes
(:func:`pack_words`, :func:`unpack_words`), uniform on ``Z_{2^(64−f)}`` to
the receiver; in memory they are :func:`relay_dtype` words.  The decodable
range becomes ``|C + noise1 + noise2| < 2^(63−f)``.  The federation picks
``f`` from public quantities only, ``n`` and the noise shares' variances
(:func:`product_scale_bits`): the largest of :data:`SCALE_BITS_CHOICES`
(40: 3-byte words, 32: 4-byte words, 24: 5-byte words) with ``n`` and 12
standard deviations of each share below the range's third; a share beyond
that makes its party refuse, with probability below ``2^−102`` per value.

Examples
--------
>>> import numpy as np
>>> codes1, codes2 = np.array([0, 1, 1, 2]), np.array([1, 0, 1, 1])
>>> secure_product(codes1, 3, codes2, 2).noisy_counts.tolist()
[[0.0, 1.0], [1.0, 1.0], [0.0, 1.0]]

Step by step (what each message is and who sends it):

>>> from skdpsynth.federated.secure_aggregation import SecureAggregationParty, aggregate_encoded
>>> dealer = ProductDealer(n=4, d1=3, d2=2)                       # the curator
>>> to_p1, to_p2 = dealer.seeds()
>>> p1, p2 = ProductParty(to_p1, codes1), ProductParty(to_p2, codes2)
>>> E, F = p1.masked_input(), p2.masked_input()                   # exchanged between the parties
>>> s1 = p1.share(F, noise=np.full((3, 2), 0.5))
>>> s2 = p2.share(E, noise=np.full((3, 2), -0.25))
>>> sa = {n: SecureAggregationParty(n, session="demo") for n in ("p1", "p2")}
>>> keys = {n: p.public_key for n, p in sa.items()}
>>> masked = {"p1": sa["p1"].mask_encoded(s1, keys, 0, participants=["p1", "p2"]),
...           "p2": sa["p2"].mask_encoded(s2, keys, 0, participants=["p1", "p2"])}
>>> dealer.finish(aggregate_encoded(masked, expected=["p1", "p2"])).tolist()
[[0.25, 1.25], [1.25, 1.25], [0.25, 1.25]]
"""
from __future__ import annotations

import hashlib
import operator
import os
from dataclasses import dataclass, field
from typing import Mapping, MutableSet, Optional

import numpy as np

from .secure_aggregation import (
    DEFAULT_SCALE_BITS,
    MaskedInput,
    SecureAggregationError,
    SecureAggregationParty,
    aggregate_encoded,
    decode,
    encode,
    keystream_words,
    max_abs_value,
)

__all__ = [
    "SecureProductError",
    "TripleSeed",
    "ProductDealer",
    "ProductParty",
    "ProductTranscript",
    "secure_product",
    "matmul_t_mod64",
    "relay_dtype",
    "relay_word_bytes",
    "pack_words",
    "unpack_words",
    "product_scale_bits",
    "RELAY_SCALE_BITS",
    "SCALE_BITS_CHOICES",
    "TAIL_SIGMAS",
]

_SEED_BYTES = 32
_N_TERMS = 3          # C, noise1, noise2 share the decodable range
_PROCESS_LEDGER: set = set()

RELAY_SCALE_BITS = 32
"""Fraction bits from which the masked inputs are held as 32-bit words in memory: see :func:`relay_dtype`."""

SCALE_BITS_CHOICES = (40, 32, 24)
"""The fixed points a product may use, narrowest relay first (3-, 4- and 5-byte words): :func:`product_scale_bits`.
A party accepts any of them (the release is ``C + noise`` in each); it refuses any other."""

TAIL_SIGMAS = 12.0
"""How many standard deviations of a noise share :func:`product_scale_bits` keeps inside the range (two-sided
Gaussian tail ``2 exp(−72) < 2^−102``; discrete Gaussian shares are sub-Gaussian with the same parameter)."""


def relay_dtype(scale_bits: int) -> np.dtype:
    """The in-memory word type of the masked inputs ``E``, ``F`` at ``scale_bits`` ``f``: ``uint32`` when ``f ≥ 32``.

    A share enters the result as ``S · 2^f mod 2^64``, which depends only on
    ``S mod 2^(64−f)``; ``S`` (``Aᵀ F`` or ``Eᵀ V2``) is an integer combination
    of the words of ``F`` or ``E``, so only their low ``64 − f`` bits matter.
    At ``f ≥ 32`` the low 32 bits hold them.  On the wire the words are
    narrower still: :func:`relay_word_bytes`.

    Examples
    --------
    >>> relay_dtype(24), relay_dtype(32), relay_dtype(40)
    (dtype('uint64'), dtype('uint32'), dtype('uint32'))
    """
    return np.dtype(np.uint32) if _check_f(scale_bits) >= RELAY_SCALE_BITS else np.dtype(np.uint64)


def relay_word_bytes(scale_bits: int) -> int:
    """Bytes per word of a relayed matrix at ``scale_bits`` ``f``: ``⌈(64 − f) / 8⌉``, all a share depends on.

    Everything a share is computed from enters it through ring operations,
    and reduction modulo ``2^(64−f)`` is a ring homomorphism of ``Z_{2^64}``;
    the share is used only as ``S · 2^f mod 2^64``, a function of
    ``S mod 2^(64−f)``.  So the low ``64 − f`` bits of every relayed word
    give the same share, bit for bit (:mod:`~skdpsynth.federated.secure_chain`
    uses the same rule).

    Examples
    --------
    >>> [relay_word_bytes(f) for f in (40, 32, 24)]
    [3, 4, 5]
    """
    return -(-(64 - _check_f(scale_bits)) // 8)


def pack_words(matrix: np.ndarray, scale_bits: int) -> bytes:
    """The low :func:`relay_word_bytes` bytes of every word of ``matrix`` (row-major, little-endian).

    Examples
    --------
    >>> import numpy as np
    >>> m = np.array([[1, 2**24 + 5]], dtype=np.uint64)
    >>> pack_words(m, 40).hex(), unpack_words(pack_words(m, 40), 40, (1, 2)).tolist()
    ('010000050000', [[1, 5]])
    """
    m = np.asarray(matrix)
    if m.dtype not in (np.uint32, np.uint64):
        raise SecureProductError(f"pack_words takes uint32 or uint64 words, got {m.dtype}")
    width = relay_word_bytes(scale_bits)
    words = np.ascontiguousarray(m).astype(m.dtype.newbyteorder("<"), copy=False).view(np.uint8)
    words = words.reshape(m.size, m.dtype.itemsize)
    if width > m.dtype.itemsize:
        raise SecureProductError(f"{m.dtype} words cannot carry {width} bytes at scale_bits={scale_bits}")
    return words[:, :width].tobytes()


def unpack_words(buffer, scale_bits: int, shape: tuple, dtype=None) -> np.ndarray:
    """Read back :func:`pack_words`: ``shape`` words (zero-extended) of ``dtype`` (default :func:`relay_dtype`).

    Raises
    ------
    SecureProductError
        If the buffer does not hold exactly ``prod(shape)`` words.

    Examples
    --------
    >>> import numpy as np
    >>> words = np.array([[7, 2**40 + 9]], dtype=np.uint64)          # 3-byte words keep the low 24 bits
    >>> unpack_words(pack_words(words, 40), 40, (1, 2)).tolist()
    [[7, 9]]
    >>> unpack_words(bytes(5), 40, (1, 2))
    Traceback (most recent call last):
    ...
    skdpsynth.federated.secure_product.SecureProductError: a relayed matrix of shape (1, 2) takes 6 bytes at scale_bits=40, got 5
    """
    dtype = relay_dtype(scale_bits) if dtype is None else np.dtype(dtype)
    width, count = relay_word_bytes(scale_bits), int(np.prod(shape, dtype=np.int64))
    raw = np.frombuffer(buffer, dtype=np.uint8)
    if raw.size != count * width or width > dtype.itemsize:
        raise SecureProductError(f"a relayed matrix of shape {tuple(shape)} takes {count * width} bytes at "
                                 f"scale_bits={scale_bits}, got {raw.size}")
    out = np.zeros((count, dtype.itemsize), dtype=np.uint8)
    out[:, :width] = raw.reshape(count, width)
    return out.view(dtype.newbyteorder("<")).astype(dtype, copy=False).reshape(shape)


def product_scale_bits(n: int, variances, n_terms: int = 3) -> int:
    """The fixed point of a product chosen from public quantities: the largest of :data:`SCALE_BITS_CHOICES` that is safe.

    At ``f`` the decodable range is ``|C + Σ noise| < 2^(63−f)``: the dealer
    needs ``n < 2^(63−f)/n_terms`` and a party's encoding refuses a noise
    value of ``|x| ≥ 2^(63−f)/n_terms`` (``n_terms``: the count and the
    shares, 3 for two parties, ``k + 1`` for ``k``).  The rule takes the
    largest ``f`` (the narrowest relay words, :func:`relay_word_bytes`) at
    which ``n`` and :data:`TAIL_SIGMAS` standard deviations of every noise
    share (the public variances the parties are asked for) fit; a share
    beyond it makes its party refuse (probability below ``2^−102`` per
    value), never a wrong count.  Whatever the ring, the release is
    ``C + noise`` (a wrapped sum would be a function of it, post-processing),
    so the choice affects only traffic and the refusal probability, not
    privacy.

    Examples
    --------
    >>> product_scale_bits(24_000, [1e4, 2e4]), product_scale_bits(24_000, [1e12, 1.0])
    (40, 32)
    >>> product_scale_bits(24_000, [1e16, 1.0]), product_scale_bits(24_000, [1e4] * 4, n_terms=5)
    (24, 40)
    """
    for f in SCALE_BITS_CHOICES:
        bound = max_abs_value(f, n_terms)
        if n < bound and all(TAIL_SIGMAS * float(np.sqrt(v)) < bound for v in variances):
            return f
    return DEFAULT_SCALE_BITS


class SecureProductError(SecureAggregationError):
    """A secure product cannot give a correct, private result (refused).

    A subclass of :class:`~skdpsynth.federated.secure_aggregation.SecureAggregationError`.

    Examples
    --------
    >>> from skdpsynth.federated.secure_product import ProductDealer, SecureProductError
    >>> try:
    ...     ProductDealer(n=4, d1=3, d2=2, seeds=(bytes(32), bytes(32)))
    ... except SecureProductError as exc:
    ...     print(exc)
    the two seeds must differ (equal seeds would let each party unmask the other)
    """


def _positive(value, what: str) -> int:
    v = operator.index(value)
    if v < 1:
        raise SecureProductError(f"{what} must be >= 1, got {v}")
    return v


def _check_f(scale_bits) -> int:
    f = operator.index(scale_bits)
    if not 0 <= f <= 62:
        raise SecureProductError(f"scale_bits must be in [0, 62], got {f}")
    return f


_LIMB_BITS = 16
_EXACT_ROWS = 1 << 20  # rows per block: 2^20 · (2^16 − 1)^2 < 2^52, so every float64 partial sum is exact
_SMALL_SIDE, _SMALL_PRODUCT = 8, 128  # below these the integer loop beats splitting into limbs (measured, 24k rows)


def _limbs(x: np.ndarray) -> np.ndarray:
    """``n × p`` uint64 as ``n × 4p`` float64: columns ``[limb 0 of all p | limb 1 | limb 2 | limb 3]``."""
    n, p = x.shape
    limbs = np.ascontiguousarray(x).view(np.uint16).reshape(n, p, 4)   # little-endian: limb k = bits 16k..16k+15
    if limbs.dtype.byteorder == ">" or (limbs.dtype.byteorder == "=" and np.little_endian is False):
        limbs = limbs[:, :, ::-1]
    return limbs.transpose(0, 2, 1).reshape(n, 4 * p).astype(np.float64)


def matmul_t_mod64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``aᵀ b`` modulo ``2^64`` for ``uint64`` matrices ``a`` (n × p) and ``b`` (n × q), through float64 BLAS.

    NumPy's integer matmul has no BLAS and dominated the secure product
    (two ``n × d1 × d2`` products per clique).  Each operand is split into
    four 16-bit limbs and one float64 product of the limb matrices gives
    every limb product, exact because every partial sum stays below
    ``2^52`` (rows are taken in blocks of ``2^20``); the ten that survive
    modulo ``2^64`` are recombined with wrapping ``uint64`` shifts and adds.
    Narrow or small products (``min(p, q) < 8`` or ``p · q < 128``) use
    NumPy's integer loop, faster there.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated.secure_product import matmul_t_mod64
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2**64, size=(50, 3), dtype=np.uint64)
    >>> b = rng.integers(0, 2**64, size=(50, 4), dtype=np.uint64)
    >>> bool((matmul_t_mod64(a, b) == a.T @ b).all())
    True
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != np.uint64 or b.dtype != np.uint64 or a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise SecureProductError(f"matmul_t_mod64 needs two uint64 matrices with the same rows, got {a.dtype} "
                                 f"{a.shape} and {b.dtype} {b.shape}")
    n, p, q = a.shape[0], a.shape[1], b.shape[1]
    if min(p, q) < _SMALL_SIDE or p * q < _SMALL_PRODUCT:
        return a.T @ b                           # small: NumPy's integer loop wins (wraps modulo 2^64)
    out = np.zeros((p, q), dtype=np.uint64)
    for start in range(0, n, _EXACT_ROWS):
        # The four 16-bit limbs of every entry, side by side: one GEMM gives all 16 limb products.
        a_limbs = _limbs(a[start:start + _EXACT_ROWS])
        b_limbs = _limbs(b[start:start + _EXACT_ROWS])
        products = (a_limbs.T @ b_limbs).reshape(4, p, 4, q)
        for i in range(4):
            for j in range(4 - i):               # limbs with i + j >= 4 vanish modulo 2^64
                out += products[i, :, j, :].astype(np.uint64) << np.uint64(_LIMB_BITS * (i + j))
    return out


def _expand(seed: bytes, rows: int, cols: int) -> np.ndarray:
    return keystream_words(seed, rows * cols).reshape(rows, cols)


@dataclass(frozen=True)
class TripleSeed:
    """The dealer's message to one party: its PRG seed and the public product shape.

    Attributes
    ----------
    role : int
        1 (holds ``V1``, ``n × d1``) or 2 (holds ``V2``, ``n × d2``).
    seed : bytes
        32-byte secret seed of ``A`` (role 1) or ``B`` (role 2); send it over
        an authenticated, confidential channel.  Not shown in ``repr``.
    n, d1, d2 : int
        Public shape: aligned records and the two parties' domain sizes.
    scale_bits : int
        Fixed-point fraction bits ``f`` of the shares.

    Examples
    --------
    >>> from skdpsynth.federated.secure_product import ProductDealer
    >>> to_party1, to_party2 = ProductDealer(n=4, d1=3, d2=2).seeds()
    >>> to_party1                               # the secret seed is not shown
    TripleSeed(role=1, n=4, d1=3, d2=2, scale_bits=24)
    >>> to_party2.role, len(to_party2.seed)
    (2, 32)
    """

    role: int
    seed: bytes = field(repr=False)
    n: int
    d1: int
    d2: int
    scale_bits: int


class ProductDealer:
    """The curator as trusted initializer of one product ``V1ᵀ V2`` (``n × d1`` by ``n × d2``).

    Parameters
    ----------
    n, d1, d2 : int
        Public shape (``n`` aligned records, domain sizes of the two parties).
    scale_bits : int, default 24
        Fixed-point fraction bits ``f``; requires ``n < 2^(63−f) / 3``.
    seeds : pair of 32-byte bytes, optional
        ``(sA, sB)`` for reproducible tests only; by default fresh from the OS
        CSPRNG.  They must differ.

    Notes
    -----
    Keeps only ``Z = Aᵀ B``; hands out the seeds once (:meth:`seeds`) and
    decodes once (:meth:`finish`).

    Examples
    --------
    The whole exchange is in the module's example; the dealer's part:

    >>> from skdpsynth.federated.secure_product import ProductDealer
    >>> dealer = ProductDealer(n=4, d1=3, d2=2)
    >>> dealer, dealer.shape
    (ProductDealer(n=4, d1=3, d2=2, scale_bits=24), (4, 3, 2))
    >>> to_party1, to_party2 = dealer.seeds()
    >>> dealer.seeds()                          # one triple, one product
    Traceback (most recent call last):
    ...
    skdpsynth.federated.secure_product.SecureProductError: this dealer's seeds were already handed out: ...
    """

    def __init__(self, n: int, d1: int, d2: int, *, scale_bits: int = DEFAULT_SCALE_BITS, seeds=None):
        self._n, self._d1, self._d2 = _positive(n, "n"), _positive(d1, "d1"), _positive(d2, "d2")
        self._f = _check_f(scale_bits)
        if self._n >= max_abs_value(self._f, _N_TERMS):
            raise SecureProductError(
                f"n={self._n} records: counts up to n must stay below 2^(63-f)/3 = {max_abs_value(self._f, 3):.6g} "
                f"with scale_bits={self._f}; lower scale_bits")
        if seeds is None:
            sa, sb = os.urandom(_SEED_BYTES), os.urandom(_SEED_BYTES)
        else:
            sa, sb = (bytes(s) for s in seeds)
            if len(sa) != _SEED_BYTES or len(sb) != _SEED_BYTES:
                raise SecureProductError(f"seeds must be two {_SEED_BYTES}-byte strings")
        if sa == sb:
            raise SecureProductError("the two seeds must differ (equal seeds would let each party unmask the other)")
        self._seeds: Optional[tuple] = (sa, sb)
        a, b = _expand(sa, self._n, self._d1), _expand(sb, self._n, self._d2)
        self._z = matmul_t_mod64(a, b)           # Aᵀ B mod 2^64
        self._finished = False

    @property
    def shape(self) -> tuple:
        """``(n, d1, d2)``."""
        return (self._n, self._d1, self._d2)

    @property
    def scale_bits(self) -> int:
        return self._f

    def __repr__(self) -> str:
        return f"ProductDealer(n={self._n}, d1={self._d1}, d2={self._d2}, scale_bits={self._f})"

    def __reduce_ex__(self, protocol):
        raise TypeError("ProductDealer holds secret triple material and cannot be pickled or copied")

    def seeds(self) -> tuple:
        """``(message to party 1, message to party 2)`` as :class:`TripleSeed`; only once.

        Raises
        ------
        SecureProductError
            On a second call: each triple serves exactly one product.
        """
        if self._seeds is None:
            raise SecureProductError(
                "this dealer's seeds were already handed out: a triple serves one product only "
                "(reusing A or B reveals differences of the parties' data); create a new ProductDealer")
        sa, sb = self._seeds
        self._seeds = None
        common = dict(n=self._n, d1=self._d1, d2=self._d2, scale_bits=self._f)
        return TripleSeed(role=1, seed=sa, **common), TripleSeed(role=2, seed=sb, **common)

    def finish(self, encoded_sum) -> np.ndarray:
        """Add ``Z · 2^f`` to the aggregated shares and decode: ``C + noise1 + noise2`` (``d1 × d2`` float64).

        Parameters
        ----------
        encoded_sum : numpy.ndarray of uint64, shape ``(d1, d2)``
            :func:`~skdpsynth.federated.secure_aggregation.aggregate_encoded`
            of the two parties' masked shares.

        Raises
        ------
        SecureProductError
            Wrong dtype or shape, or a second call.
        """
        if self._finished:
            raise SecureProductError("this dealer already finished its product; a triple serves one product only")
        arr = np.asarray(encoded_sum)
        if arr.dtype != np.uint64:
            raise SecureProductError(
                f"finish expects the uint64 sum from aggregate_encoded, got dtype {arr.dtype} "
                "(aggregate() decodes too early: Z · 2^f must be added first)")
        if arr.shape != (self._d1, self._d2):
            raise SecureProductError(f"aggregated shares have shape {arr.shape}, expected {(self._d1, self._d2)}")
        self._finished = True
        total = arr + self._z * np.uint64(1 << self._f)
        return decode(total, self._f)


class ProductParty:
    """One of the two parties of a product; holds its codes and its dealer seed.

    Parameters
    ----------
    message : TripleSeed
        From :meth:`ProductDealer.seeds` (its ``role`` says which party this is).
    codes : array_like of int, shape ``(n,)``
        The party's index of each aligned record in ``[0, d_role)``: row ``i``
        of its one-hot matrix has its 1 in column ``codes[i]``.
    ledger : set, optional
        Digests of the seeds this party has used; a seed is refused twice.
        Defaults to one ledger per process.

    Raises
    ------
    SecureProductError
        Wrong length, codes out of range or not integers, or a reused seed.

    Examples
    --------
    >>> from skdpsynth.federated.secure_product import ProductDealer, ProductParty
    >>> to_party1, to_party2 = ProductDealer(n=4, d1=3, d2=2).seeds()
    >>> party1 = ProductParty(to_party1, [0, 1, 1, 2])
    >>> party1
    ProductParty(role=1, n=4, d=3)
    >>> E = party1.masked_input()               # for party 2: uniform words, not the codes
    >>> E.shape, E.dtype
    ((4, 3), dtype('uint64'))
    >>> ProductParty(to_party2, [1, 0, 2, 1])   # party 2's codes must be < d2 = 2
    Traceback (most recent call last):
    ...
    skdpsynth.federated.secure_product.SecureProductError: party 2: codes outside [0, 2) of the product's cells
    """

    def __init__(self, message: TripleSeed, codes, *, ledger: Optional[MutableSet] = None):
        if not isinstance(message, TripleSeed):
            raise TypeError(f"message must be a TripleSeed from ProductDealer.seeds(), got {type(message).__name__}")
        if message.role not in (1, 2):
            raise SecureProductError(f"role must be 1 or 2, got {message.role!r}")
        self._role = message.role
        self._n, self._f = message.n, message.scale_bits
        d1, d2 = message.d1, message.d2
        self._d_own, self._d_other = (d1, d2) if self._role == 1 else (d2, d1)
        c = np.asarray(codes)
        if c.ndim != 1:
            raise SecureProductError(f"party {self._role}: codes must be 1-D, got shape {c.shape}")
        if c.size and not np.issubdtype(c.dtype, np.integer):
            raise SecureProductError(f"party {self._role}: codes must be integers, got dtype {c.dtype}")
        # The texts name no count and no code of the party's data: errors may travel to the curator.
        if c.size != self._n:
            raise SecureProductError(
                f"party {self._role}: its records do not match the product's n={self._n} aligned records "
                "(mismatched n: the parties' records are not aligned)")
        if np.any((c < 0) | (c >= self._d_own)):
            raise SecureProductError(f"party {self._role}: codes outside [0, {self._d_own}) of the product's cells")
        ledger = _PROCESS_LEDGER if ledger is None else ledger
        digest = hashlib.sha256(b"skdpsynth/secure-product/v1/seed" + message.seed).digest()
        if digest in ledger:
            raise SecureProductError(
                f"party {self._role}: this seed was already used for a product; reusing a triple reveals the "
                "difference of two inputs — ask the dealer for a new one")
        ledger.add(digest)
        self._codes = c.astype(np.intp)
        self._mask = _expand(message.seed, self._n, self._d_own)     # A (role 1) or B (role 2)
        self._masked: Optional[np.ndarray] = None
        self._shared = False

    @property
    def role(self) -> int:
        return self._role

    @property
    def scale_bits(self) -> int:
        return self._f

    def __repr__(self) -> str:
        return f"ProductParty(role={self._role}, n={self._n}, d={self._d_own})"

    def __reduce_ex__(self, protocol):
        raise TypeError("ProductParty holds private data and cannot be pickled or copied")

    def masked_input(self) -> np.ndarray:
        """``E = V1 − A`` (role 1) or ``F = V2 − B`` (role 2), ``n × d``, for the other party.

        Words of :func:`relay_dtype` (``uint64``, or ``uint32`` at
        ``scale_bits ≥ 32``: the low half, all the share needs), uniform to
        its receiver.  Repeated calls return the same (read-only) array.
        """
        if self._masked is None:
            m = np.negative(self._mask)                          # −A mod 2^64
            m[np.arange(self._n), self._codes] += np.uint64(1)
            m = m.astype(relay_dtype(self._f), copy=False)       # mod 2^32 at f >= 32
            m.flags.writeable = False
            self._masked = m
        return self._masked

    def share(self, other_masked, noise=None) -> np.ndarray:
        """This party's fixed-point share ``S_j · 2^f + enc(noise_j)`` (``d1 × d2`` uint64); only once.

        Mask it with :meth:`SecureAggregationParty.mask_encoded` before it goes
        to the curator (a bare share reveals the other party's data to it).

        Parameters
        ----------
        other_masked : numpy.ndarray of uint64
            ``F`` (``n × d2``) for role 1, ``E`` (``n × d1``) for role 2.
        noise : array_like of float, shape ``(d1, d2)``, optional
            This party's noise share; every ``|x| < 2^(63−f) / 3``.  Integer
            values (below 2^53) are encoded exactly.

        Raises
        ------
        SecureProductError
            Wrong dtype/shape (e.g. mismatched ``n``), noise out of range, or a second call.
        """
        if self._shared:
            raise SecureProductError(f"party {self._role} already computed its share of this product")
        other = np.asarray(other_masked)
        if other.dtype != relay_dtype(self._f):
            raise SecureProductError(f"party {self._role}: the other party's masked input must be "
                                     f"{relay_dtype(self._f)}, got {other.dtype}")
        other = other.astype(np.uint64, copy=False)               # zero-extended: right modulo 2^(64-f)
        if other.shape != (self._n, self._d_other):
            raise SecureProductError(
                f"party {self._role}: the other party's masked input has shape {other.shape}, expected "
                f"{(self._n, self._d_other)} (mismatched n or domain size)")
        shape = (self._d_own, self._d_other) if self._role == 1 else (self._d_other, self._d_own)
        if noise is None:
            enc_noise = np.zeros(shape, dtype=np.uint64)
        else:
            nz = np.asarray(noise, dtype=np.float64)
            if nz.shape != shape:
                raise SecureProductError(f"party {self._role}: noise has shape {nz.shape}, expected {shape}")
            enc_noise = encode(nz, self._f, n_parties=_N_TERMS)
        if self._role == 1:
            s = matmul_t_mod64(self._mask, other)                      # Aᵀ F mod 2^64
        else:                                                          # Eᵀ V2 = Eᵀ B + Eᵀ F
            st = np.zeros((self._d_own, self._d_other), dtype=np.uint64)
            np.add.at(st, self._codes, other)                          # row codes[i] += E[i]
            s = st.T
        self._shared = True
        out = s * np.uint64(1 << self._f) + enc_noise
        return np.ascontiguousarray(out)


@dataclass(frozen=True)
class ProductTranscript:
    """One run of :func:`secure_product`: the result and every message, by receiver.

    Attributes
    ----------
    noisy_counts : numpy.ndarray of float64, ``d1 × d2``
        ``V1ᵀ V2 + noise1 + noise2`` (what the curator learns).
    received_by_party1 : numpy.ndarray of uint64
        ``F`` (``n × d2``), besides party 1's seed.
    received_by_party2 : numpy.ndarray of uint64
        ``E`` (``n × d1``), besides party 2's seed.
    curator_view : mapping of str to MaskedInput
        The two masked shares (their sum is all the curator adds).

    Examples
    --------
    >>> from skdpsynth.federated.secure_product import secure_product
    >>> run = secure_product([0, 1, 1, 2], 3, [1, 0, 1, 1], 2)
    >>> run.noisy_counts.tolist()
    [[0.0, 1.0], [1.0, 1.0], [0.0, 1.0]]
    >>> run.received_by_party1.shape, run.received_by_party2.shape
    ((4, 2), (4, 3))
    >>> sorted(run.curator_view)
    ['party1', 'party2']
    """

    noisy_counts: np.ndarray
    received_by_party1: np.ndarray = field(repr=False)
    received_by_party2: np.ndarray = field(repr=False)
    curator_view: Mapping[str, MaskedInput] = field(repr=False)


def secure_product(codes1, d1: int, codes2, d2: int, *, noise1=None, noise2=None,
                   scale_bits: int = DEFAULT_SCALE_BITS, names=("party1", "party2"), session="secure-product",
                   round_id: int = 0, dealer_seeds=None, ledger: Optional[MutableSet] = None) -> ProductTranscript:
    """Run the whole protocol in one process (simulation of the three roles, real cryptography).

    Parameters
    ----------
    codes1, codes2 : array_like of int, shape ``(n,)``
        The two parties' codes of the slice's aligned records (``< d1``, ``< d2``).
    d1, d2 : int
        Domain sizes.
    noise1, noise2 : array_like of float, shape ``(d1, d2)``, optional
        The parties' noise shares (default zero).
    scale_bits : int, default 24
    names : pair of str
        The parties' names in secure aggregation.
    session, round_id
        Secure-aggregation session and round (fresh X25519 keys are drawn).
    dealer_seeds : pair of bytes, optional
        Reproducible tests only (see :class:`ProductDealer`).
    ledger : set, optional
        Seed ledger of both parties (default: the process ledger).

    Returns
    -------
    ProductTranscript

    Examples
    --------
    Two parties hold the codes of the same four records; the curator learns
    only the noisy joint counts:

    >>> import numpy as np
    >>> from skdpsynth.federated.secure_product import secure_product
    >>> run = secure_product([0, 1, 1, 2], 3, [1, 0, 1, 1], 2,
    ...                      noise1=np.full((3, 2), 0.5), noise2=np.full((3, 2), -0.25))
    >>> run.noisy_counts.tolist()              # counts + 0.5 - 0.25
    [[0.25, 1.25], [1.25, 1.25], [0.25, 1.25]]
    """
    if len(names) != 2 or names[0] == names[1]:
        raise SecureProductError(f"names must be two distinct party names, got {names!r}")
    n = np.asarray(codes1).shape[0] if np.ndim(codes1) else 0
    dealer = ProductDealer(n, d1, d2, scale_bits=scale_bits, seeds=dealer_seeds)
    to1, to2 = dealer.seeds()
    p1, p2 = ProductParty(to1, codes1, ledger=ledger), ProductParty(to2, codes2, ledger=ledger)
    e, f = p1.masked_input(), p2.masked_input()
    shares = {names[0]: p1.share(f, noise1), names[1]: p2.share(e, noise2)}
    sa = {nm: SecureAggregationParty(nm, session) for nm in names}
    keys = {nm: p.public_key for nm, p in sa.items()}
    masked = {nm: sa[nm].mask_encoded(shares[nm], keys, round_id, participants=list(names),
                                      scale_bits=dealer.scale_bits) for nm in names}
    counts = dealer.finish(aggregate_encoded(masked, expected=list(names)))
    return ProductTranscript(counts, f, e, masked)
