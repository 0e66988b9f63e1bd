"""Pairwise-mask secure aggregation (Bonawitz et al. 2017, without dropout recovery).

Protocol A of RandDPGen's distributed marginal measurement (paper §4.1, Algorithm 1;
``doc/deviations.md``, "Noise-share counts (protocol A)") needs the curator to
learn only ``Σ_j v_j``, the sum of the involved parties' noisy vectors, and
none of the ``v_j``.  This module is that primitive; :class:`~skdpsynth.federated.Federation`
uses it with ``secure_computation="cryptographic"`` (with
:mod:`skdpsynth.federated.secure_product` for cliques split between two parties).

Protocol (one round, honest-but-curious curator)
------------------------------------------------

1. Every party holds an X25519 key pair (:class:`SecureAggregationParty`) and
   sends its public key to the curator, which forwards the full
   ``{name: public_key}`` dict and the round's participant list to every party.
2. For each pair ``a < b`` (sorted names) both parties compute the same
   X25519 shared secret and derive, with HKDF-SHA256, a 32-byte seed whose
   ``info`` binds the mask label, the public session identifier, the round id
   and the ordered pair ``(a, b)``.  The seed keys a ChaCha20 keystream that is
   read as little-endian ``uint64`` words: the pairwise mask ``m_ab``.
3. Party ``i`` sends ``y_i = enc(v_i) + Σ_{j>i} m_ij − Σ_{j<i} m_ji (mod 2^64)``
   (:meth:`SecureAggregationParty.mask`), where ``enc`` is the fixed-point
   encoding :func:`encode`.
4. The curator adds the ``y_i`` modulo ``2^64`` — every mask appears once with
   ``+`` and once with ``−`` and cancels — and decodes the sum
   (:func:`aggregate`).

Each ``y_i`` alone is computationally indistinguishable from uniform on
``Z_{2^64}`` as long as one other participant's key stays secret.

Fixed-point arithmetic
----------------------

``encode(x, f) = round(x · 2^f) mod 2^64`` (two's complement for negatives) and
``decode(s, f) = int64(s) / 2^f``.  Scaling by ``2^f`` is exact in float64, so
each encoded value is off by at most ``2^(−f−1)`` and the decoded sum of ``n``
parties by at most ``n · 2^(−f−1)`` per cell.  The sum must satisfy
``|Σ| < 2^(63−f)``; :meth:`SecureAggregationParty.mask` enforces it by refusing
any input value with ``|x| ≥ 2^(63−f) / n``.  With the default
``f = DEFAULT_SCALE_BITS = 24`` that is ``|Σ| < 2^39 ≈ 5.5e11`` and a rounding
error ``≤ n · 3.0e-8``.  (Decoding converts the int64 sum to float64, which is
exact for ``|Σ| ≤ 2^(53−f)``, i.e. ``2^29 ≈ 5.4e8`` at ``f = 24``; beyond that
the float64 relative precision ``2^−53`` applies.)

Design decisions
----------------

* **Cryptographic mask expansion.**  The masks are a ChaCha20 keystream, not a
  NumPy generator.  ``PCG64`` and friends are statistically good but not
  cryptographic: their state can be recovered from a handful of outputs.  Count
  vectors have many cells whose value the curator can guess (empty cells), and
  each such cell hands it a mask word ``y_i − enc(v_i)``; with a
  non-cryptographic generator that could reveal the whole mask, hence every
  ``v_i``.  Each ChaCha20 key is used once (unique per session, round and
  pair), so the all-zero nonce is safe.
* **Mask reuse.**  Masking two vectors with the same masks reveals their
  difference.  Masks are bound to ``(session, round_id, pair)`` and a party
  refuses to mask twice in the same round.
* **Consistent views.**  A curator that sent different key sets or participant
  lists to different parties would make the masks not cancel (a wrong sum) or
  split the group.  Every party therefore checks that its key dict covers
  exactly the participant list (including itself, with its own key), and
  attaches to its output a transcript digest of ``(session, round, sorted
  names and keys)``; :func:`aggregate` refuses outputs whose participant lists
  or digests differ, naming the parties.  This catches inconsistency, not an
  actively malicious curator: substituting its own public keys for everybody
  else's is only prevented by authenticating public keys (signatures or a
  PKI), which is **not implemented**.
* **No dropout recovery.**  Bonawitz et al. secret-share each party's key so
  the survivors can remove a dropped party's masks.  That is **not
  implemented**: if any expected party's output is missing, :func:`aggregate`
  aborts the round with :class:`SecureAggregationError` naming it, instead of
  returning a wrong sum.  Rerun the round (new ``round_id``) with the
  remaining parties.
* Private keys never leave :class:`SecureAggregationParty`: it has no
  accessor for them and refuses to be pickled or deep-copied.

Examples
--------
>>> import numpy as np
>>> names = ["alice", "bob", "carol"]
>>> parties = {n: SecureAggregationParty(n, session="demo") for n in names}
>>> keys = {n: p.public_key for n, p in parties.items()}      # via the curator
>>> vectors = {"alice": np.array([1.5, -2.0]), "bob": np.array([0.25, 4.0]),
...            "carol": np.array([-3.0, 0.5])}
>>> masked = {n: parties[n].mask(vectors[n], keys, round_id=0, participants=names)
...           for n in names}
>>> aggregate(masked, expected=names).tolist()
[-1.25, 2.5]
"""
from __future__ import annotations

import hashlib
import operator
import os
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "DEFAULT_SCALE_BITS",
    "MASK_INFO_LABEL",
    "PAIR_KEY_INFO_LABEL",
    "SecureAggregationError",
    "MaskedInput",
    "SecureAggregationParty",
    "encode",
    "decode",
    "max_abs_value",
    "aggregate",
    "aggregate_encoded",
    "keystream_words",
    "seal",
    "open_sealed",
    "share_group_secret",
    "group_leader",
    "seal_group_secret",
    "open_group_secret",
]

DEFAULT_SCALE_BITS = 24
"""Default fixed-point fraction bits ``f``: range ``|Σ| < 2^39``, resolution ``2^−24``."""

MASK_INFO_LABEL = b"skdpsynth/secure-aggregation/v1/pairwise-mask"
"""HKDF ``info`` label of the pairwise mask seeds."""

PAIR_KEY_INFO_LABEL = b"skdpsynth/secure-aggregation/v1/pairwise-key"
"""HKDF ``info`` label of :meth:`SecureAggregationParty.pairwise_key` (distinct from the masks')."""

_TRANSCRIPT_LABEL = b"skdpsynth/secure-aggregation/v1/transcript"
_KEY_BYTES = 32
_TWO63 = float(2**63)


class SecureAggregationError(ValueError):
    """A secure-aggregation round cannot give a correct, private sum (the round is aborted).

    A subclass of :class:`ValueError`.

    Examples
    --------
    >>> from skdpsynth.federated.secure_aggregation import SecureAggregationError, encode
    >>> try:
    ...     encode([float("nan")])
    ... except SecureAggregationError as exc:
    ...     print(exc)
    cannot encode non-finite values
    """


# -- fixed-point encoding ------------------------------------------------------------------------------

def _check_scale_bits(scale_bits: int) -> int:
    f = operator.index(scale_bits)
    if not 0 <= f <= 62:
        raise SecureAggregationError(f"scale_bits must be in [0, 62], got {f}")
    return f


def max_abs_value(scale_bits: int = DEFAULT_SCALE_BITS, n_parties: int = 1) -> float:
    """Exclusive bound on ``|x|`` that :func:`encode` accepts: ``2^(63−f) / n_parties``.

    If each of ``n_parties`` inputs stays below it, their sum stays in the
    decodable range ``|Σ| < 2^(63−f)``.

    Examples
    --------
    >>> max_abs_value(24) == 2.0 ** 39
    True
    >>> max_abs_value(24, n_parties=4) == 2.0 ** 37
    True
    """
    f = _check_scale_bits(scale_bits)
    n = operator.index(n_parties)
    if n < 1:
        raise SecureAggregationError(f"n_parties must be >= 1, got {n}")
    return 2.0 ** (63 - f) / n


def encode(x, scale_bits: int = DEFAULT_SCALE_BITS, *, n_parties: int = 1) -> np.ndarray:
    """Fixed-point encode floats into ``Z_{2^64}``: ``round(x · 2^f) mod 2^64`` as ``uint64``.

    Negative values wrap (two's complement).  The rounding error is at most
    ``2^(−f−1)`` per value (scaling by ``2^f`` is exact in float64).

    Parameters
    ----------
    x : array_like of float
        Finite values with ``|x| < 2^(63−f) / n_parties`` (:func:`max_abs_value`).
    scale_bits : int, default 24
        Fraction bits ``f``.
    n_parties : int, default 1
        Number of inputs that will be summed; the bound shrinks by this factor
        so the sum cannot overflow.

    Returns
    -------
    numpy.ndarray of uint64, same shape as ``x``.

    Raises
    ------
    SecureAggregationError
        If a value is not finite or outside the range (overflow risk).

    Examples
    --------
    >>> encode([1.0, -1.0, 0.5], scale_bits=4).tolist()
    [16, 18446744073709551600, 8]
    >>> decode(encode([1.0, -1.0, 0.5], scale_bits=4), scale_bits=4).tolist()
    [1.0, -1.0, 0.5]
    >>> encode([2.0 ** 40])
    Traceback (most recent call last):
    ...
    skdpsynth.federated.secure_aggregation.SecureAggregationError: cannot encode values outside the range: ...
    """
    f = _check_scale_bits(scale_bits)
    bound = max_abs_value(f, n_parties)
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise SecureAggregationError("cannot encode non-finite values")
    scaled = np.rint(np.ldexp(x, f))
    bad = np.abs(scaled) >= bound * 2.0 ** f
    if np.any(bad):
        # The values may be a party's counts or noise: the text quotes only the public bound.
        raise SecureAggregationError(
            f"cannot encode values outside the range: "
            f"with scale_bits={f} and n_parties={operator.index(n_parties)} every |x| must be < {bound:.6g} "
            f"so that the sum stays below 2^{63 - f} (overflow risk); lower scale_bits or rescale the data"
        )
    return scaled.astype(np.int64).view(np.uint64)


def decode(encoded: np.ndarray, scale_bits: int = DEFAULT_SCALE_BITS) -> np.ndarray:
    """Decode a ``uint64`` (sum of) fixed-point value(s): ``int64(s) / 2^f`` as float64.

    Examples
    --------
    >>> s = encode([1.25, -3.5], 8) + encode([0.5, 1.0], 8)    # wraps mod 2^64
    >>> decode(s, 8).tolist()
    [1.75, -2.5]
    """
    f = _check_scale_bits(scale_bits)
    arr = np.asarray(encoded)
    if arr.dtype != np.uint64:
        raise SecureAggregationError(f"decode expects a uint64 array, got dtype {arr.dtype}")
    return np.ldexp(np.ascontiguousarray(arr).view(np.int64).astype(np.float64), -f)


# -- key derivation and mask expansion ------------------------------------------------------------------

def _frame(*parts: bytes) -> bytes:
    """Unambiguous concatenation: each part prefixed by its 4-byte big-endian length."""
    return b"".join(len(p).to_bytes(4, "big") + p for p in parts)


def _as_bytes(value, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be str or bytes, got {type(value).__name__}")


def _round_bytes(round_id) -> bytes:
    r = operator.index(round_id)
    if not 0 <= r < 2**64:
        raise SecureAggregationError(f"round_id must be an integer in [0, 2^64), got {r}")
    return r.to_bytes(8, "big")


def _hkdf(secret: bytes, info: bytes, length: int = _KEY_BYTES) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(secret)


def keystream_words(key: bytes, n_words: int) -> np.ndarray:
    """``n_words`` little-endian uint64 words of the ChaCha20 keystream under ``key`` (zero nonce, counter 0).

    The PRG of the pairwise masks (and of :mod:`~skdpsynth.federated.secure_product`'s
    triples).  ``key`` must be a 32-byte secret used for one stream only (the
    nonce is fixed).

    Examples
    --------
    >>> w = keystream_words(bytes(32), 3)
    >>> w.dtype, w.shape, bool(np.array_equal(w, keystream_words(bytes(32), 5)[:3]))
    (dtype('uint64'), (3,), True)
    """
    if len(key) != _KEY_BYTES:
        raise SecureAggregationError(f"keystream key must be {_KEY_BYTES} bytes, got {len(key)}")
    encryptor = Cipher(algorithms.ChaCha20(key, b"\x00" * 16), mode=None).encryptor()
    stream = encryptor.update(bytes(8 * n_words))
    return np.frombuffer(stream, dtype="<u8").astype(np.uint64, copy=False)


def _transcript(session: bytes, round_id: bytes, public_keys: Mapping[str, bytes]) -> bytes:
    parts = [_TRANSCRIPT_LABEL, session, round_id]
    for name in sorted(public_keys):
        parts += [name.encode("utf-8"), public_keys[name]]
    return hashlib.sha256(_frame(*parts)).digest()


# -- the protocol -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MaskedInput:
    """What one party sends the curator in one round (all of it public to the curator).

    Attributes
    ----------
    party : str
        Sender.
    round_id : int
        Round the masks are bound to.
    participants : tuple of str
        Sorted participant list the party masked for.
    transcript : bytes
        SHA-256 of (session, round, sorted names and public keys) as the party saw them.
    scale_bits : int
        Fixed-point fraction bits used by :func:`encode`.
    values : numpy.ndarray of uint64
        ``enc(v) + Σ_{j>i} m_ij − Σ_{j<i} m_ji  (mod 2^64)`` (read-only).

    Examples
    --------
    >>> from skdpsynth.federated.secure_aggregation import SecureAggregationParty, aggregate
    >>> a, b = SecureAggregationParty("a", "demo"), SecureAggregationParty("b", "demo")
    >>> keys = {"a": a.public_key, "b": b.public_key}
    >>> masked_a = a.mask([1.0, 2.0], keys, round_id=3, participants=["a", "b"])
    >>> masked_a
    MaskedInput(party='a', round_id=3, participants=('a', 'b'), scale_bits=24)
    >>> masked_a.values.dtype, masked_a.values.flags.writeable
    (dtype('uint64'), False)
    >>> masked_b = b.mask([0.5, 0.5], keys, round_id=3, participants=["a", "b"])
    >>> aggregate({"a": masked_a, "b": masked_b}, expected=["a", "b"]).tolist()
    [1.5, 2.5]
    """

    party: str
    round_id: int
    participants: tuple
    transcript: bytes = field(repr=False)
    scale_bits: int
    values: np.ndarray = field(repr=False)


class SecureAggregationParty:
    """One party of a pairwise-mask secure-aggregation session.

    Parameters
    ----------
    name : str
        The party's public, unique name; pairs are ordered by sorted names.
    session : str or bytes
        Public session identifier, bound into every derived key.
    private_key : X25519PrivateKey or 32 bytes, optional
        For reproducible tests only; by default a fresh key from the OS CSPRNG.

    Notes
    -----
    The private key cannot be read back, printed, pickled or deep-copied.

    Examples
    --------
    >>> a = SecureAggregationParty("a", session=b"s1")
    >>> len(a.public_key)
    32
    >>> b = SecureAggregationParty("b", session=b"s1")
    >>> a.pairwise_key("b", b.public_key, purpose="sketch") == b.pairwise_key("a", a.public_key, purpose="sketch")
    True
    """

    def __init__(self, name: str, session, *, private_key=None):
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, got {name!r}")
        self._name = name
        self._session = _as_bytes(session, "session")
        if private_key is None:
            private_key = X25519PrivateKey.generate()
        elif not isinstance(private_key, X25519PrivateKey):
            private_key = X25519PrivateKey.from_private_bytes(_as_bytes(private_key, "private_key"))
        self.__private_key = private_key
        self._public_key = private_key.public_key().public_bytes(
            encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw)
        self._used_rounds: set[int] = set()

    @property
    def name(self) -> str:
        """The party's public name."""
        return self._name

    @property
    def session(self) -> bytes:
        """The public session identifier."""
        return self._session

    @property
    def public_key(self) -> bytes:
        """Raw 32-byte X25519 public key (send it to the curator)."""
        return self._public_key

    def __repr__(self) -> str:
        return f"SecureAggregationParty(name={self._name!r}, session={self._session!r})"

    def __reduce_ex__(self, protocol):
        raise TypeError("SecureAggregationParty holds a private key and cannot be pickled or copied")

    # -- key agreement ---------------------------------------------------------------------------------
    def _shared_secret(self, peer_name: str, peer_public_key: bytes) -> bytes:
        if peer_name == self._name:
            raise SecureAggregationError(f"party {peer_name!r} cannot agree a key with itself")
        pk = _as_bytes(peer_public_key, "public key")
        if len(pk) != _KEY_BYTES:
            raise SecureAggregationError(f"public key of {peer_name!r} must be 32 bytes, got {len(pk)}")
        try:
            return self.__private_key.exchange(X25519PublicKey.from_public_bytes(pk))
        except ValueError as exc:  # e.g. a low-order point giving an all-zero secret
            raise SecureAggregationError(f"key agreement with {peer_name!r} failed: {exc}") from None

    def _pair_info(self, label: bytes, context: bytes, peer_name: str) -> bytes:
        lo, hi = sorted((self._name, peer_name))
        return _frame(label, self._session, context, lo.encode("utf-8"), hi.encode("utf-8"))

    def pairwise_key(self, peer_name: str, peer_public_key: bytes, *, purpose, length: int = 32) -> bytes:
        """A secret key shared with ``peer_name`` only, for uses other than masking.

        Example: VertiMRF's sketch key shared by two parties.  Derived with
        HKDF-SHA256 from the X25519 secret, with ``info`` binding
        :data:`PAIR_KEY_INFO_LABEL`, the session, ``purpose`` and the sorted
        pair, so it is symmetric, differs per pair, session and purpose, and is
        independent of the aggregation masks.

        Parameters
        ----------
        peer_name : str
        peer_public_key : bytes
            The peer's raw 32-byte public key.
        purpose : str or bytes
            What the key is for (domain separation).
        length : int, default 32
            Output bytes (at most 8160, the HKDF-SHA256 limit).

        Returns
        -------
        bytes
        """
        info = self._pair_info(PAIR_KEY_INFO_LABEL, _as_bytes(purpose, "purpose"), peer_name)
        return _hkdf(self._shared_secret(peer_name, peer_public_key), info, operator.index(length))

    def _mask_seed(self, peer_name: str, peer_public_key: bytes, round_id: bytes) -> bytes:
        info = self._pair_info(MASK_INFO_LABEL, round_id, peer_name)
        return _hkdf(self._shared_secret(peer_name, peer_public_key), info)

    # -- masking ---------------------------------------------------------------------------------------
    def _check_view(self, public_keys: Mapping[str, bytes], participants: Sequence[str]) -> dict:
        if isinstance(participants, str):
            raise TypeError("participants must be a sequence of names, not a str")
        plist = list(participants)
        dupes = sorted({p for p in plist if plist.count(p) > 1})
        if dupes:
            raise SecureAggregationError(f"participant list names {dupes} more than once")
        pset, kset = set(plist), set(public_keys)
        if pset != kset:
            raise SecureAggregationError(
                f"party {self._name!r}: public keys and participant list disagree "
                f"(participants without a key: {sorted(pset - kset)}; keys of non-participants: {sorted(kset - pset)})"
            )
        if self._name not in pset:
            raise SecureAggregationError(f"party {self._name!r} is not in the participant list {sorted(pset)}")
        if len(pset) < 2:
            raise SecureAggregationError("secure aggregation needs at least 2 participants (one input is its own sum)")
        keys = {n: _as_bytes(public_keys[n], f"public key of {n!r}") for n in plist}
        if keys[self._name] != self._public_key:
            raise SecureAggregationError(f"the public key listed for {self._name!r} is not this party's key")
        by_key: dict = {}
        for n, k in keys.items():
            by_key.setdefault(k, []).append(n)
        shared = [sorted(v) for v in by_key.values() if len(v) > 1]
        if shared:
            raise SecureAggregationError(f"parties {shared} were given the same public key")
        return keys

    def mask(self, vector, public_keys: Mapping[str, bytes], round_id: int, *, participants: Sequence[str],
             scale_bits: int = DEFAULT_SCALE_BITS) -> MaskedInput:
        """Encode ``vector`` and add this party's pairwise masks for round ``round_id``.

        Parameters
        ----------
        vector : array_like of float
            The party's input (any shape); every ``|x| < 2^(63−f) / n_participants``.
        public_keys : mapping of str to bytes
            Every participant's public key (this party's included), as
            forwarded by the curator.
        round_id : int
            Public round number; a party masks at most once per round.
        participants : sequence of str
            The round's participant list; it must name exactly the keys of
            ``public_keys``.
        scale_bits : int, default 24
            Fixed-point fraction bits (the same for all parties of the round).

        Returns
        -------
        MaskedInput

        Raises
        ------
        SecureAggregationError
            Inconsistent keys/participants, reused round, or overflow risk.
        """
        keys = self._check_view(public_keys, participants)
        f = _check_scale_bits(scale_bits)
        encoded = encode(np.asarray(vector, dtype=np.float64), f, n_parties=len(keys))
        return self.mask_encoded(encoded, public_keys, round_id, participants=participants, scale_bits=f)

    def mask_encoded(self, encoded, public_keys: Mapping[str, bytes], round_id: int, *,
                     participants: Sequence[str], scale_bits: int = DEFAULT_SCALE_BITS) -> MaskedInput:
        """Like :meth:`mask` for an input already in ``Z_{2^64}`` (a ``uint64`` array, e.g. from :func:`encode`).

        No overflow guard applies: the caller guarantees that the decoded sum
        stays in ``|Σ| < 2^(63−f)``.  ``scale_bits`` is only recorded (all
        parties of a round must agree on it).

        Raises
        ------
        SecureAggregationError
            Inconsistent keys/participants, reused round, or a non-``uint64`` input.
        """
        keys = self._check_view(public_keys, participants)
        rb = _round_bytes(round_id)
        r = int.from_bytes(rb, "big")
        if r in self._used_rounds:
            raise SecureAggregationError(
                f"party {self._name!r} already masked an input in round {r}; reusing masks reveals the difference "
                "of the two inputs, use a new round_id")
        f = _check_scale_bits(scale_bits)
        arr = np.asarray(encoded)
        if arr.dtype != np.uint64:
            raise SecureAggregationError(f"mask_encoded expects a uint64 array, got dtype {arr.dtype}")
        total = arr.ravel().copy()
        for peer in sorted(keys):
            if peer == self._name:
                continue
            m = keystream_words(self._mask_seed(peer, keys[peer], rb), total.size)
            if self._name < peer:
                np.add(total, m, out=total)        # uint64 arithmetic wraps mod 2^64
            else:
                np.subtract(total, m, out=total)
        self._used_rounds.add(r)
        values = total.reshape(arr.shape)
        values.flags.writeable = False
        return MaskedInput(party=self._name, round_id=r, participants=tuple(sorted(keys)),
                           transcript=_transcript(self._session, rb, keys), scale_bits=f, values=values)


def aggregate(masked: Mapping[str, MaskedInput], expected: Iterable[str]) -> np.ndarray:
    """Curator side: :func:`decode` of :func:`aggregate_encoded`.

    See :func:`aggregate_encoded` for the checks; returns ``Σ_i v_i`` (float64)
    within ``n · 2^(−f−1)`` per cell.

    Examples
    --------
    >>> names = ["x", "y", "z"]
    >>> ps = [SecureAggregationParty(n, "s") for n in names]
    >>> keys = {p.name: p.public_key for p in ps}
    >>> out = {p.name: p.mask([1.0], keys, 7, participants=names) for p in ps[:2]}   # z dropped out
    >>> aggregate(out, expected=names)
    Traceback (most recent call last):
    ...
    skdpsynth.federated.secure_aggregation.SecureAggregationError: round aborted: no masked input from ['z'] ...
    """
    total = aggregate_encoded(masked, expected)
    return decode(total, next(iter(masked.values())).scale_bits)


def aggregate_encoded(masked: Mapping[str, MaskedInput], expected: Iterable[str]) -> np.ndarray:
    """Curator side: check the round and add the masked inputs mod ``2^64`` (the masks cancel).

    Parameters
    ----------
    masked : mapping of str to MaskedInput
        What each party sent, keyed by sender.
    expected : iterable of str
        The round's participants (the list the curator forwarded).

    Returns
    -------
    numpy.ndarray of uint64
        ``Σ_i enc(v_i) mod 2^64`` (the masks cancelled), not yet decoded.

    Raises
    ------
    SecureAggregationError
        If an expected party is missing (dropout: recovery is not implemented,
        so the round is aborted), a party was not expected, a sender/key
        mismatch, the parties' participant lists, rounds, scale or key
        transcripts differ, or the arrays' shapes or dtypes differ.
        The message names the parties concerned.

    Examples
    --------
    >>> names = ["x", "y", "z"]
    >>> ps = [SecureAggregationParty(n, "s") for n in names]
    >>> keys = {p.name: p.public_key for p in ps}
    >>> out = {p.name: p.mask([1.0], keys, 7, participants=names) for p in ps}
    >>> aggregate_encoded(out, expected=names).tolist() == [3 << DEFAULT_SCALE_BITS]
    True
    """
    if isinstance(expected, str):
        raise TypeError("expected must be a collection of names, not a str")
    exp = set(expected)
    got = set(masked)
    missing, extra = sorted(exp - got), sorted(got - exp)
    if missing:
        raise SecureAggregationError(
            f"round aborted: no masked input from {missing} (dropout?); their masks cannot be removed because "
            "dropout recovery (Bonawitz et al. secret sharing) is not implemented — rerun with a new round_id")
    if extra:
        raise SecureAggregationError(f"round aborted: masked input from unexpected part(y/ies) {extra}")
    if len(exp) < 2:
        raise SecureAggregationError("secure aggregation needs at least 2 participants")
    names = sorted(exp)
    items = [masked[n] for n in names]
    wrong_sender = [n for n, it in zip(names, items) if not isinstance(it, MaskedInput) or it.party != n]
    if wrong_sender:
        raise SecureAggregationError(f"entries {wrong_sender} are not MaskedInput objects sent by that party")
    want = tuple(names)
    bad_list = [n for n, it in zip(names, items) if tuple(it.participants) != want]
    if bad_list:
        raise SecureAggregationError(
            f"round aborted: parties {bad_list} masked for a participant list other than {list(want)}; "
            "their masks would not cancel")

    def _groups(attr: str) -> list:
        groups: dict = {}
        for n, it in zip(names, items):
            groups.setdefault(getattr(it, attr), []).append(n)
        return list(groups.values())

    for attr, what in (("round_id", "round ids"), ("scale_bits", "scale_bits"),
                       ("transcript", "public-key sets (different transcripts)")):
        g = _groups(attr)
        if len(g) > 1:
            raise SecureAggregationError(f"round aborted: the parties used different {what}: groups {g}")
    dtypes = {n: np.asarray(it.values).dtype for n, it in zip(names, items)}
    bad_dtype = [n for n, d in dtypes.items() if d != np.uint64]
    if bad_dtype:
        raise SecureAggregationError(f"masked values of {bad_dtype} are not uint64")
    shapes = {n: np.shape(it.values) for n, it in zip(names, items)}
    if len(set(shapes.values())) > 1:
        raise SecureAggregationError(f"masked vectors have different shapes: {shapes}")
    return np.add.reduce(np.stack([np.asarray(it.values) for it in items]), axis=0, dtype=np.uint64)


# -- sealed point-to-point data (relayed by the curator) -------------------------------------------------------------
_NONCE_BYTES = 12
SEAL_OVERHEAD = 16
"""Bytes :func:`seal` adds to its plaintext (the Poly1305 tag): a receiver derives a box's exact size from it."""


def seal(key: bytes, plaintext: bytes, context: bytes) -> tuple[bytes, bytes]:
    """Encrypt and authenticate ``plaintext`` (ChaCha20-Poly1305) under a 32-byte key, bound to ``context``.

    Returns ``(nonce, ciphertext)``; the nonce is fresh from the OS.  Use it
    for data one party sends another through the curator, under their
    :meth:`SecureAggregationParty.pairwise_key`.

    Examples
    --------
    >>> import os
    >>> key = os.urandom(32)
    >>> nonce, box = seal(key, b"secret", b"a->b")
    >>> open_sealed(key, nonce, box, b"a->b")
    b'secret'
    """
    nonce = os.urandom(_NONCE_BYTES)
    return nonce, ChaCha20Poly1305(bytes(key)).encrypt(nonce, bytes(plaintext), bytes(context))


def open_sealed(key: bytes, nonce: bytes, ciphertext: bytes, context: bytes) -> bytes:
    """Decrypt what :func:`seal` produced.

    Raises
    ------
    SecureAggregationError
        A wrong key or context, or a tampered box.

    Examples
    --------
    >>> import os
    >>> from skdpsynth.federated.secure_aggregation import open_sealed, seal
    >>> key = os.urandom(32)
    >>> nonce, box = seal(key, b"secret", b"a->b")
    >>> open_sealed(key, nonce, box, b"a->b")
    b'secret'
    >>> open_sealed(key, nonce, box, b"b->a")        # another context does not authenticate
    Traceback (most recent call last):
    ...
    skdpsynth.federated.secure_aggregation.SecureAggregationError: sealed data do not authenticate ...
    """
    try:
        return ChaCha20Poly1305(bytes(key)).decrypt(bytes(nonce), bytes(ciphertext), bytes(context))
    except (InvalidTag, ValueError) as exc:
        raise SecureAggregationError("sealed data do not authenticate (wrong key or context, or tampered)") from exc


def share_group_secret(parties: Sequence[SecureAggregationParty], *, purpose, secret: bytes | None = None):
    """Give every party one secret that the curator relaying the messages never learns.

    The leader (the first name in sorted order) draws a 32-byte secret
    (from the OS unless ``secret`` is given) and seals it for every other
    party under their pairwise key for ``purpose``; the curator relays the
    sealed boxes; each party opens its own.  This is how VertiMRF's parties
    agree on the secret their sketch keys derive from (the paper leaves the
    method open, KDD'24 §4.2; ``doc/deviations.md``, "Keyed sketch hashes"):
    from the X25519 key agreement, never visible to the curator.

    Parameters
    ----------
    parties : sequence of SecureAggregationParty
        All of one session (in-process simulation: every role runs here).
    purpose : str or bytes
        Domain separation of the pairwise keys used.
    secret : bytes, optional
        The leader's secret (reproducible runs only).

    Returns
    -------
    secrets : dict of str to bytes
        The secret as each party holds it (all equal).
    relayed : dict of str to tuple of bytes
        What the curator saw: ``{receiver: (nonce, ciphertext)}``.

    Examples
    --------
    >>> ps = [SecureAggregationParty(n, b"session") for n in ("a", "b", "c")]
    >>> secrets, relayed = share_group_secret(ps, purpose="sketch")
    >>> len(set(secrets.values())), sorted(relayed)
    (1, ['b', 'c'])
    >>> any(secrets["a"] in box for _, box in relayed.values())
    False
    """
    by_name = {p.name: p for p in parties}
    if len(by_name) != len(parties) or not parties:
        raise SecureAggregationError("share_group_secret needs one or more parties with distinct names")
    if len({p.session for p in parties}) != 1:
        raise SecureAggregationError("the parties belong to different sessions")
    leader_name, *others = sorted(by_name)
    leader = by_name[leader_name]
    value = os.urandom(32) if secret is None else bytes(secret)
    # leader -> curator -> each receiver, who opens its own box
    relayed = seal_group_secret(leader, {name: by_name[name].public_key for name in others}, value, purpose=purpose)
    secrets = {leader_name: value}
    for name in others:
        secrets[name] = open_group_secret(by_name[name], leader_name, leader.public_key, *relayed[name],
                                          purpose=purpose)
    return secrets, relayed


def group_leader(names: Iterable[str]) -> str:
    """The party that draws a group secret: the first name in sorted order (:func:`share_group_secret`).

    Examples
    --------
    >>> group_leader(["hospital", "bank", "insurer"])
    'bank'
    """
    return sorted(names)[0]


def _group_context(purpose: bytes, receiver: str) -> bytes:
    return b"group-secret|" + purpose + b"|" + receiver.encode()


def seal_group_secret(leader: SecureAggregationParty, public_keys: Mapping[str, bytes], secret: bytes, *,
                      purpose) -> dict:
    """The leader's side of :func:`share_group_secret`: ``secret`` sealed for each receiver (to relay).

    Parameters
    ----------
    leader : SecureAggregationParty
    public_keys : mapping of str to bytes
        Every receiver (not the leader) and its public key.
    secret : bytes
    purpose : str or bytes

    Returns
    -------
    dict of str to (nonce, ciphertext)

    Examples
    --------
    >>> a, b = SecureAggregationParty("a", b"s"), SecureAggregationParty("b", b"s")
    >>> boxes = seal_group_secret(a, {"b": b.public_key}, b"k" * 32, purpose="sketch")
    >>> open_group_secret(b, "a", a.public_key, *boxes["b"], purpose="sketch") == b"k" * 32
    True
    """
    purpose = _as_bytes(purpose, "purpose")
    return {name: seal(leader.pairwise_key(name, key, purpose=purpose), bytes(secret), _group_context(purpose, name))
            for name, key in public_keys.items()}


def open_group_secret(party: SecureAggregationParty, leader_name: str, leader_public_key: bytes, nonce: bytes,
                      ciphertext: bytes, *, purpose) -> bytes:
    """A receiver's side of :func:`share_group_secret`: open the box the leader sealed for it.

    Raises :class:`SecureAggregationError` if the box does not authenticate
    (another key, purpose or receiver, or tampered bytes).

    Examples
    --------
    >>> a, b, c = (SecureAggregationParty(n, b"s") for n in "abc")
    >>> boxes = seal_group_secret(a, {"b": b.public_key, "c": c.public_key}, b"k" * 32, purpose="sketch")
    >>> open_group_secret(c, "a", a.public_key, *boxes["c"], purpose="sketch") == b"k" * 32
    True
    >>> open_group_secret(c, "a", a.public_key, *boxes["b"], purpose="sketch")   # b's box is not c's
    Traceback (most recent call last):
    ...
    skdpsynth.federated.secure_aggregation.SecureAggregationError: sealed data do not authenticate ...
    """
    purpose = _as_bytes(purpose, "purpose")
    key = party.pairwise_key(leader_name, leader_public_key, purpose=purpose)
    return open_sealed(key, nonce, ciphertext, _group_context(purpose, party.name))
