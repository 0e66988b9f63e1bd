"""The differentially private Flajolet–Martin (DPFM) sketch layer of VertiMRF.

Sections and algorithms are those of the KDD'24 paper: the FM sketch is its
§2.2 and DPFM its Algorithm 2 (App. A; Algorithm 1 of the extended version);
LocEnc and CarEst are §4.2 (Algorithms 3 and 4 of the extended version) and
their privacy is Theorem 2 (§4.2, proof in App. C.1).  ``doc/deviations.md``
lists where this module departs from the paper.

* Keys (§4.2; ``doc/deviations.md``, "Keyed sketch hashes"):
  :func:`new_shared_secret`, :func:`derive_sketch_keys`, and
  :class:`SketchKeys`, a holder that hides its keys and refuses to be pickled.
* Hash (§2.2): :func:`hash_values` — ℋ_ξ(row) for aligned rows whose ID is
  the row index (0..n−1), from a keyed counter-based generator.  Arbitrary
  record IDs (which would need a keyed hash of the ID, e.g. keyed BLAKE2b)
  are **not** implemented.
* DPFM (App. A, Algorithm 2): :func:`dpfm_parameters`, :func:`sample_phantom_maxima`.
* LocEnc (§4.2): :func:`raw_sketches` (no DP; for tests and diagnostics) and
  :func:`encode` (the DP message part).
* CarEst (§4.2): :func:`complement_sketches`, :func:`car_est`.
* Accounting (Theorem 2): :func:`sketch_epsilon_prime`, :func:`theorem2_epsilon`,
  :func:`rdp_optimal_epsilon`; Theorem 2 holds only up to :data:`THEOREM2_RANGE`.

Geometric convention (of §2.2's geometric distribution): support {1, 2, …},
Pr[Y ≥ y] = (1+γ)^{−(y−1)}, so the max of K copies has
Pr[max ≤ y] = (1 − (1+γ)^{−y})^K.  The sketch of an empty set is 0.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import warnings
from typing import Iterable, Iterator, Sequence

import numpy as np

from ...privacy.randomness import noise_generator, random_uint64, warn_reproducible_noise

__all__ = [
    "KEY_PREFIX",
    "new_shared_secret",
    "derive_sketch_keys",
    "SketchKeys",
    "hash_values",
    "dpfm_parameters",
    "sample_phantom_maxima",
    "sketch_dtype",
    "sketch_max_value",
    "raw_sketches",
    "encode",
    "complement_sketches",
    "union_cardinality",
    "car_est",
    "hll_constant",
    "sketch_epsilon_prime",
    "theorem2_epsilon",
    "rdp_optimal_epsilon",
    "THEOREM2_RANGE",
]

#: Domain-separation prefix of the key derivation (doc/deviations.md, "Keyed sketch hashes").
KEY_PREFIX = b"vertimrf/sketch-key/"

# Runs hashed at once in LocEnc: bounds the (chunk × n) working matrix (uint8/16).
_CHUNK = 64


# ----------------------------------------------------------------------------------------------------------------------
# Keys (§4.2; doc/deviations.md, "Keyed sketch hashes")
# ----------------------------------------------------------------------------------------------------------------------
def new_shared_secret() -> bytes:
    """A fresh 256-bit shared secret S from the OS CSPRNG (in-process simulation).

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import new_shared_secret
    >>> s = new_shared_secret()
    >>> len(s), s != new_shared_secret()
    (32, True)
    """
    return secrets.token_bytes(32)


def derive_sketch_keys(secret: bytes, t: int) -> list[bytes]:
    """The t sketch keys ξ_h = HMAC-SHA256(S, ``b"vertimrf/sketch-key/" + str(h)``), h = 1..t.

    Runs are numbered from 1 as in the paper (h ∈ [t]).  Keep the result inside
    the parties: wrap it in :class:`SketchKeys` so it cannot leak through a
    ``repr`` or a pickle.

    Parameters
    ----------
    secret : bytes
        The shared secret S (at least 16 bytes; 32 recommended).
    t : int
        Number of runs (keys).

    Returns
    -------
    list of bytes
        t keys of 32 bytes each.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import derive_sketch_keys
    >>> keys = derive_sketch_keys(b"\\x00" * 32, 3)
    >>> len(keys), len(keys[0]), keys == derive_sketch_keys(b"\\x00" * 32, 3)
    (3, 32, True)
    >>> len(set(keys))
    3
    """
    if not isinstance(secret, (bytes, bytearray)) or len(secret) < 16:
        raise ValueError("secret must be at least 16 bytes")
    t = int(t)
    if t < 1:
        raise ValueError(f"t must be >= 1, got {t}")
    return [hmac.new(bytes(secret), KEY_PREFIX + str(h).encode(), hashlib.sha256).digest() for h in range(1, t + 1)]


class SketchKeys(Sequence):
    """The parties' t sketch keys; hidden from ``repr`` and never picklable.

    A sequence of ``bytes`` keys.  Keys must never reach the server, so any
    attempt to pickle (or deep-copy) this object raises :class:`TypeError`; a
    message must carry sketches, not keys.

    Parameters
    ----------
    keys : iterable of bytes
        The keys ξ_1..ξ_t (each at least 16 bytes).

    Examples
    --------
    >>> import pickle
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import SketchKeys
    >>> keys = SketchKeys.from_secret(b"\\x01" * 32, 4)
    >>> keys
    SketchKeys(t=4, <hidden>)
    >>> len(keys), len(keys[0])
    (4, 32)
    >>> pickle.dumps(keys)
    Traceback (most recent call last):
    ...
    TypeError: SketchKeys holds secret hash keys and cannot be pickled or sent
    """

    __slots__ = ("_keys",)

    def __init__(self, keys: Iterable[bytes]) -> None:
        ks = tuple(bytes(k) for k in keys)
        if not ks or any(len(k) < 16 for k in ks):
            raise ValueError("need at least one key, each of at least 16 bytes")
        self._keys = ks

    @classmethod
    def from_secret(cls, secret: bytes, t: int) -> "SketchKeys":
        """Keys derived from a shared secret by :func:`derive_sketch_keys`."""
        return cls(derive_sketch_keys(secret, t))

    @classmethod
    def generate(cls, t: int) -> "SketchKeys":
        """Keys from a fresh :func:`new_shared_secret` (in-process simulation)."""
        return cls(derive_sketch_keys(new_shared_secret(), t))

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i):
        return self._keys[i]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._keys)

    def __repr__(self) -> str:
        return f"SketchKeys(t={len(self._keys)}, <hidden>)"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("SketchKeys holds secret hash keys and cannot be pickled or sent")

    def __reduce_ex__(self, protocol):
        return self.__reduce__()


# ----------------------------------------------------------------------------------------------------------------------
# Hash (§2.2)
# ----------------------------------------------------------------------------------------------------------------------
def _open_uniform(raw: np.ndarray) -> np.ndarray:
    """Uniforms strictly inside (0, 1) from 64-bit words: (k + 1/2)·2^−52 with k the top 52 bits.

    Why 52 and not 53 bits: (k + 1/2) needs one more significant bit than k,
    so with 53-bit k the half is rounded away for k ≥ 2^52 and k = 2^53 − 1
    rounds to exactly 1.0.  With 52 bits every value is exact and
    min(u) = 2^−53, max(u) = 1 − 2^−53.
    """
    return ((raw >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0**-52


def _philox_key(key: bytes) -> int:
    # Philox takes a 128-bit key: the first 16 bytes of ξ_h.
    return int.from_bytes(bytes(key)[:16], "little")


def _geometric_from_uniform(u: np.ndarray, gamma: float, dtype) -> np.ndarray:
    # ℋ = ⌈−ln u / ln(1+γ)⌉ ≥ 1: Pr[ℋ ≥ y] = Pr[u < (1+γ)^{−(y−1)}] = (1+γ)^{−(y−1)} (§2.2).
    y = np.ceil(-np.log(u) / math.log1p(gamma))
    return np.maximum(y, 1.0).astype(dtype)


def sketch_max_value(gamma: float, k_p: int = 1, alpha_min: int = 0) -> int:
    """An upper bound on every value :func:`encode` can output: ⌈(53 ln 2 + ln k_p)/ln(1+γ)⌉ + 1, or α_min.

    A hash is at most ⌈53 ln 2 / ln(1+γ)⌉ (the smallest uniform is 2^−53,
    :func:`hash_values`); the phantom maximum's tail 1 − V^{1/k_p} is at
    least about 2^−53/k_p (:func:`sample_phantom_maxima`); the + 1 absorbs
    rounding.  A received sketch above it cannot come from :func:`encode`.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import sketch_max_value
    >>> sketch_max_value(1.0, 8047, 13)
    67
    """
    gamma = _check_gamma(gamma)
    return max(int(alpha_min), math.ceil((53 * math.log(2) + math.log(max(int(k_p), 1))) / math.log1p(gamma)) + 1)


def sketch_dtype(gamma: float, k_p: int = 1, alpha_min: int = 0) -> np.dtype:
    """The smallest unsigned dtype (``uint8`` or ``uint16``) that holds every possible sketch value.

    The largest value is bounded by the smallest uniform, 2^−53 (see
    :func:`hash_values`): ⌈(53 ln 2 + ln k_p)/ln(1+γ)⌉ + 1, or α_min.  This is
    ``uint8`` for γ ≳ 0.2 (γ = 1: at most 66 even for k_p = 10^4) and
    ``uint16`` for small γ such as 0.1.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import sketch_dtype
    >>> sketch_dtype(1.0, 8047, 13), sketch_dtype(0.1, 100, 49)
    (dtype('uint8'), dtype('uint16'))
    """
    bound = sketch_max_value(gamma, k_p, alpha_min)
    if bound <= np.iinfo(np.uint8).max:
        return np.dtype(np.uint8)
    if bound <= np.iinfo(np.uint16).max:
        return np.dtype(np.uint16)
    raise ValueError(f"gamma={gamma} is too small: sketch values could reach {bound}")


def _check_gamma(gamma: float) -> float:
    gamma = float(gamma)
    if not (gamma > 0 and math.isfinite(gamma)):
        raise ValueError(f"gamma must be a positive finite number, got {gamma}")
    return gamma


def hash_values(keys: Sequence[bytes], n: int, gamma: float, dtype=None) -> np.ndarray:
    """ℋ_{ξ_h}(row) for rows 0..n−1 and every key: a (t, n) matrix of Geometric(γ/(1+γ)) values ≥ 1.

    Run h draws U_h ∈ (0,1)^n from the counter-based
    ``Philox(key=<first 16 bytes of ξ_h>)`` in row order, so every party that
    holds the key gets the identical vector; then ℋ = ⌈−ln u/ln(1+γ)⌉.  The
    record ID is the row index (rows are aligned across parties, §3.1).

    Parameters
    ----------
    keys : sequence of bytes
        The keys ξ_h (a :class:`SketchKeys` or a list of bytes).
    n : int
        Number of rows.
    gamma : float
        Geometric parameter γ > 0.
    dtype : numpy dtype, optional
        Output dtype; default :func:`sketch_dtype` (``gamma``).

    Returns
    -------
    numpy.ndarray of shape (len(keys), n)

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import hash_values, derive_sketch_keys
    >>> keys = derive_sketch_keys(b"\\x02" * 32, 2)
    >>> h = hash_values(keys, 5, 1.0)
    >>> h.shape, h.dtype, bool((h >= 1).all())
    ((2, 5), dtype('uint8'), True)
    >>> bool((h == hash_values(keys, 5, 1.0)).all())   # same key -> same hashes
    True
    """
    gamma = _check_gamma(gamma)
    dtype = sketch_dtype(gamma) if dtype is None else np.dtype(dtype)
    n = int(n)
    out = np.empty((len(keys), n), dtype=dtype)
    for h, key in enumerate(keys):  # one counter-based stream per key; vectorised over rows
        raw = np.random.Philox(key=_philox_key(key)).random_raw(n)
        out[h] = _geometric_from_uniform(_open_uniform(raw), gamma, dtype)
    return out


# ----------------------------------------------------------------------------------------------------------------------
# DPFM (App. A, Algorithm 2)
# ----------------------------------------------------------------------------------------------------------------------
def dpfm_parameters(epsilon_prime: float, gamma: float) -> tuple[int, int]:
    """(k_p, α_min) = (⌈1/(e^{ε′} − 1)⌉, ⌈log_{1+γ} 1/(1 − e^{−ε′})⌉) of DPFM line 1.

    k_p as in the text, not the extended version's printed ⌈1/e^(ε′−1)⌉
    (``doc/deviations.md``, "Number of phantom elements").

    Computed with ``expm1``/``log1p`` and a final integer check, so that an
    exact integer ratio is not pushed one step up by a rounding error in the
    division: k_p is the least integer with k_p·(e^{ε′} − 1) ≥ 1 and α_min the
    least with α_min·ln(1+γ) ≥ ln(1/(1 − e^{−ε′})), both as evaluated in floats.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import dpfm_parameters
    >>> dpfm_parameters(0.1, 1.0), dpfm_parameters(0.01, 0.5), dpfm_parameters(1.0, 0.1)
    ((10, 4), (100, 12), (1, 5))
    """
    eps = float(epsilon_prime)
    gamma = _check_gamma(gamma)
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"epsilon_prime must be positive and finite, got {eps}")
    em1 = math.expm1(min(eps, 700.0))   # from ε′ = ln 2 on, k_p = 1; e^{ε′} overflows a float past 709
    k_p = max(math.ceil(1.0 / em1), 1)
    # Make k_p the least integer with k_p·(e^{ε′} − 1) ≥ 1 as evaluated in floating point.
    while k_p * em1 < 1.0:
        k_p += 1
    while k_p > 1 and (k_p - 1) * em1 >= 1.0:
        k_p -= 1
    target = -math.log(-math.expm1(-eps))  # ln(1/(1 − e^{−ε′})) > 0
    lg = math.log1p(gamma)
    alpha_min = max(math.ceil(target / lg), 0)
    while alpha_min * lg < target:  # least integer with α_min·ln(1+γ) ≥ ln(1/(1 − e^{−ε′}))
        alpha_min += 1
    while alpha_min > 0 and (alpha_min - 1) * lg >= target:
        alpha_min -= 1
    return k_p, alpha_min


def sample_phantom_maxima(k: int, gamma: float, size, random_state=None, dtype=None) -> np.ndarray:
    """α_p = max of k i.i.d. Geometric(γ/(1+γ)) by the O(1) sampler ⌈−log_{1+γ}(1 − V^{1/k})⌉.

    This is privacy noise: V comes from :func:`~skdpsynth.privacy.randomness.random_uint64`,
    i.e. from the OS CSPRNG when ``random_state`` is ``None`` (a fixed seed
    makes it reproducible).  1 − V^{1/k} is computed as −expm1(ln V / k) so
    it neither rounds to 0 (α_p = ∞) nor loses precision for large k.

    Parameters
    ----------
    k : int
        Number of phantom elements (k_p ≥ 1).
    gamma : float
        Geometric parameter.
    size : int or tuple of int
        Output shape.
    random_state : None, int, Generator, ...
        ``None``: OS CSPRNG.
    dtype : numpy dtype, optional
        Default :func:`sketch_dtype` (``gamma``, ``k``).

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import sample_phantom_maxima
    >>> a = sample_phantom_maxima(1000, 1.0, (2, 3), random_state=0)
    >>> a.shape, bool((a == sample_phantom_maxima(1000, 1.0, (2, 3), random_state=0)).all())
    ((2, 3), True)
    """
    gamma = _check_gamma(gamma)
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    dtype = sketch_dtype(gamma, k) if dtype is None else np.dtype(dtype)
    shape = (size,) if np.isscalar(size) else tuple(size)
    rng = None if random_state is None else noise_generator(random_state)
    v = _open_uniform(random_uint64(rng, int(np.prod(shape, dtype=np.int64))))
    tail = -np.expm1(np.log(v) / k)  # 1 − V^{1/k} ∈ (0, 1)
    alpha = np.ceil(-np.log(tail) / math.log1p(gamma))
    return np.maximum(alpha, 1.0).astype(dtype).reshape(shape)


# ----------------------------------------------------------------------------------------------------------------------
# LocEnc (§4.2)
# ----------------------------------------------------------------------------------------------------------------------
def _check_codes(codes, sizes) -> tuple[np.ndarray, np.ndarray]:
    codes = np.asarray(codes)
    if codes.ndim == 1:
        codes = codes[:, None]
    if codes.ndim != 2 or not np.issubdtype(codes.dtype, np.integer):
        raise ValueError("codes must be an (n, n_cols) integer array")
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if sizes.shape[0] != codes.shape[1]:
        raise ValueError(f"{codes.shape[1]} columns but {sizes.shape[0]} domain sizes")
    if (sizes < 1).any():
        raise ValueError("domain sizes must be >= 1")
    if codes.size and ((codes < 0).any() or (codes >= sizes[None, :]).any()):
        raise ValueError("codes must lie in [0, size) for their column")
    return codes, sizes


def raw_sketches(codes, sizes, keys: Sequence[bytes], gamma: float, dtype=None) -> np.ndarray:
    """Non-private FM sketches: S[h, off_j + v] = max{ℋ_{ξ_h}(row) : codes[row, j] = v}, 0 if none.

    Line 3 of DPFM (App. A, Algorithm 2) for every value of every column,
    vectorised.  **Not differentially private** — :func:`encode` adds the
    phantoms and the floor; this function exists for tests and diagnostics.

    Parameters
    ----------
    codes : array-like of int, shape (n, n_cols)
        One party's integer-coded columns (aligned rows; ID = row index).
    sizes : sequence of int
        Domain size of each column; column j occupies ``sizes[j]`` consecutive
        entries of the output, in column order.
    keys : sequence of bytes
        The t sketch keys.
    gamma : float
        Geometric parameter.
    dtype : numpy dtype, optional
        Default :func:`sketch_dtype` (``gamma``).

    Returns
    -------
    numpy.ndarray of shape (t, sum(sizes))

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import raw_sketches, hash_values, derive_sketch_keys
    >>> keys = derive_sketch_keys(b"\\x03" * 32, 2)
    >>> codes = np.array([[0], [1], [1]])        # extended version's Ex. 1: I_male = {row 0}, I_female = {rows 1, 2}
    >>> s, h = raw_sketches(codes, [3], keys, 1.0), hash_values(keys, 3, 1.0)
    >>> bool((s[:, 0] == h[:, 0]).all()), bool((s[:, 1] == h[:, 1:].max(axis=1)).all()), s[:, 2].tolist()
    (True, True, [0, 0])
    """
    codes, sizes = _check_codes(codes, sizes)
    gamma = _check_gamma(gamma)
    dtype = sketch_dtype(gamma) if dtype is None else np.dtype(dtype)
    n, n_cols = codes.shape
    t = len(keys)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    out = np.zeros((t, int(offsets[-1])), dtype=dtype)
    if n == 0:
        return out
    # Per column: rows sorted by value, and the start of each non-empty value group, so that
    # maximum.reduceat gives every group's max in one pass (empty values keep 0, the empty-set sketch).
    plans = []
    for j in range(n_cols):
        order = np.argsort(codes[:, j], kind="stable")
        counts = np.bincount(codes[:, j], minlength=int(sizes[j]))
        present = np.flatnonzero(counts)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[present]
        plans.append((order, starts, offsets[j] + present))
    for h0 in range(0, t, _CHUNK):
        y = hash_values(keys[h0:h0 + _CHUNK], n, gamma, dtype=dtype)  # (chunk, n), built once per chunk
        for order, starts, cols in plans:
            out[h0:h0 + y.shape[0], cols] = np.maximum.reduceat(y[:, order], starts, axis=1)
    return out


def encode(codes, sizes, keys: Sequence[bytes], gamma: float, epsilon_prime: float, random_state=None) -> np.ndarray:
    """LocEnc (§4.2): the DPFM sketch tensor of one party's columns, shape (t, Σ sizes).

    S[h, off_j + v] = max{α_𝒳, α_p, α_min} (DPFM, App. A) with 𝒳 the rows whose
    column j equals v, hashed with ξ_h, and a **fresh** α_p per (run,
    attribute, value).  Each entry is ε′-DP; the whole tensor is
    (4ε′√(t d ln 1/δ), δ)-DP by Theorem 2 when ε′ comes from
    :func:`sketch_epsilon_prime` with d the *global* number of attributes
    (``doc/deviations.md``, "Sketch budget over all d attributes").

    Parameters
    ----------
    codes : array-like of int, shape (n, n_cols)
        The party's integer-coded (binned) columns; rows aligned across parties.
    sizes : sequence of int
        Public (binned) domain size of each column.
    keys : sequence of bytes
        The t shared keys (:class:`SketchKeys`); they do not enter the output.
    gamma : float
        Geometric parameter γ (γ = 1 by default upstream: ``doc/deviations.md``,
        "The geometric parameter gamma").
    epsilon_prime : float
        Per-sketch ε′ > 0.
    random_state : None, int, Generator, ...
        Source of the phantom noise; ``None`` (default): OS CSPRNG.  A fixed
        value makes the noise reproducible and issues a
        :class:`~skdpsynth.privacy.ReproducibleNoiseWarning`.

    Returns
    -------
    numpy.ndarray of shape (t, sum(sizes))
        ``uint8`` (``uint16`` for small γ, see :func:`sketch_dtype`); column
        j's values occupy ``sizes[j]`` consecutive entries, in column order.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import encode, dpfm_parameters, SketchKeys
    >>> keys = SketchKeys.from_secret(b"\\x04" * 32, 3)
    >>> codes = np.array([[0, 1], [1, 2], [1, 0]])
    >>> s = encode(codes, [2, 3], keys, 1.0, 0.1, random_state=0)
    >>> s.shape, s.dtype, bool((s >= dpfm_parameters(0.1, 1.0)[1]).all())
    ((3, 5), dtype('uint8'), True)
    """
    k_p, alpha_min = dpfm_parameters(epsilon_prime, gamma)
    warn_reproducible_noise("encode", random_state)
    dtype = sketch_dtype(gamma, k_p, alpha_min)
    s = raw_sketches(codes, sizes, keys, gamma, dtype=dtype)
    phantoms = sample_phantom_maxima(k_p, gamma, s.shape, random_state=random_state, dtype=dtype)
    np.maximum(s, phantoms, out=s)
    np.maximum(s, np.asarray(alpha_min, dtype=dtype), out=s)
    return s


# ----------------------------------------------------------------------------------------------------------------------
# CarEst (§4.2)
# ----------------------------------------------------------------------------------------------------------------------
def complement_sketches(sketches) -> np.ndarray:
    """c[h, v] = max_{l ≠ v} S[h, l]: the sketch of the complement of value v within one attribute (§4.2).

    O(t·u) via the top two values per run.  A one-value domain has an empty
    complement, whose sketch is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import complement_sketches
    >>> complement_sketches(np.array([[3, 7, 5], [2, 2, 1]])).tolist()
    [[7, 5, 7], [2, 2, 2]]
    """
    s = np.asarray(sketches)
    if s.ndim != 2:
        raise ValueError("sketches must be a (t, u) array")
    t, u = s.shape
    if u == 1:
        return np.zeros_like(s)
    top = np.argmax(s, axis=1)
    first = s[np.arange(t), top]
    rest = s.copy()
    rest[np.arange(t), top] = 0
    second = rest.max(axis=1)
    out = np.repeat(first[:, None], u, axis=1)
    out[np.arange(t), top] = second
    return out


def hll_constant(gamma: float) -> float:
    """c(γ) = γ / ((1+γ) ln(1+γ)), the HLL bias constant (c(1) = 0.72135, the HLL α_∞).

    See ``doc/deviations.md``, "Unbiased CarEst estimator".

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import hll_constant
    >>> round(hll_constant(1.0), 5), round(hll_constant(0.5), 4), round(hll_constant(0.1), 4)
    (0.72135, 0.8221, 0.9538)
    """
    gamma = _check_gamma(gamma)
    return gamma / ((1.0 + gamma) * math.log1p(gamma))


def _hll(tt: np.ndarray, gamma: float) -> np.ndarray:
    # U = c(γ)·t / Σ_h (1+γ)^{−𝒯[h]}, the default (doc/deviations.md, "Unbiased CarEst estimator").
    t = tt.shape[0]
    return hll_constant(gamma) * t / np.exp(-math.log1p(gamma) * tt).sum(axis=0)


def _censored_mle(tt: np.ndarray, gamma: float, alpha_min: int, iters: int = 64) -> np.ndarray:
    """Per cell, the N ≥ 0 maximising Π_h Pr[α_h] with F(y) = (1 − (1+γ)^{−y})^N.

    Observations y ≤ α_min are censored (Pr = F(α_min)); y > α_min have
    Pr = F(y) − F(y−1).  With A_y = ln(1 − q^y), q = 1/(1+γ), D_y = A_{y−1} − A_y < 0,
    the score is Σ_y C_y A_y − Σ_{y uncensored} C_y D_y / expm1(−N D_y): strictly
    decreasing in N, so bisection on log N finds the unique root, all cells at once.
    """
    t = tt.shape[0]
    flat = tt.reshape(t, -1).astype(np.int64)
    a = int(alpha_min)
    flat = np.maximum(flat, a)  # ≤ α_min is "at the floor" (cannot happen for DP sketches)
    ymax = int(flat.max()) if flat.size else a
    n_cells = flat.shape[1]
    # C[cell, y]: histogram of the t maxima of each cell (the sufficient statistic)
    idx = (np.arange(n_cells, dtype=np.int64)[None, :] * (ymax + 1) + flat).ravel()
    counts = np.bincount(idx, minlength=n_cells * (ymax + 1)).reshape(n_cells, ymax + 1).astype(np.float64)
    lq = -math.log1p(gamma)
    y = np.arange(ymax + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        A = np.log(-np.expm1(lq * y))  # A_0 = −inf: F(0) = 0 for N > 0
    # D_y = A_{y−1} − A_y = ln(1 − q^{y−1}(1−q)/(1 − q^y)) computed stably; −inf for y = 1.
    D = np.full(ymax + 1, np.nan)
    if ymax >= 1:
        yy = y[1:]
        frac = np.exp(lq * (yy - 1)) * (-np.expm1(lq)) / (-np.expm1(lq * yy))
        with np.errstate(divide="ignore"):
            D[1:] = np.log1p(-frac)
    uncensored = (y > a) & (y >= 2)  # y = 1 > a = 0: Pr = F(1), no D term
    censored = counts[:, a]
    with np.errstate(invalid="ignore"):  # 0 · (−inf) for a = 0 without censored observations
        const = np.where(censored > 0, censored * A[a], 0.0) + (counts[:, y > a] * A[y > a]).sum(axis=1)
    Cu, Du = counts[:, uncensored], D[uncensored]
    zero = np.isneginf(const)  # an empty-set observation (a = 0) forces N = 0
    const = np.where(zero, 0.0, const)

    def score(log_n):
        n = np.exp(log_n)[:, None]
        with np.errstate(over="ignore"):  # expm1 → inf: that term's contribution is 0
            return const - (Cu * (Du / np.expm1(-n * Du))).sum(axis=1)

    lo = np.full(n_cells, math.log(1e-6))
    hi = np.full(n_cells, math.log(1e15))
    s_lo = score(lo)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        pos = score(mid) > 0
        lo = np.where(pos, mid, lo)
        hi = np.where(pos, hi, mid)
    est = np.exp(0.5 * (lo + hi))
    est[(s_lo <= 0) | zero] = 0.0  # likelihood maximal at N → 0
    return est.reshape(tt.shape[1:])


def union_cardinality(union_sketches, gamma: float, estimator: str = "hll", alpha_min: int | None = None,
                      _stacklevel: int = 2) -> np.ndarray:
    """Estimate the cardinality of a set from its t FM sketches (axis 0): the U of CarEst (§4.2).

    Phantom elements are *not* removed (that is :func:`car_est`'s job).

    Parameters
    ----------
    union_sketches : array-like of int, shape (t, ...)
        The t maxima of each set (e.g. 𝒯[:, v] for every cell v).
    gamma : float
        Geometric parameter γ.
    estimator : {"hll", "censored_mle", "paper_literal"}
        See :func:`car_est`.
    alpha_min : int, optional
        The floor; required for ``"censored_mle"`` (0 for non-private sketches).

    Returns
    -------
    numpy.ndarray of float, shape ``union_sketches.shape[1:]``

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import union_cardinality, sample_phantom_maxima
    >>> m = sample_phantom_maxima(10_000, 1.0, (2000, 1), random_state=1)   # maxima of 10 000 elements
    >>> bool(abs(union_cardinality(m, 1.0)[0] / 10_000 - 1) < 0.1)
    True
    >>> bool(abs(union_cardinality(m, 1.0, "censored_mle", alpha_min=0)[0] / 10_000 - 1) < 0.1)
    True
    """
    gamma = _check_gamma(gamma)
    tt = np.asarray(union_sketches)
    if tt.ndim < 1 or tt.shape[0] < 1:
        raise ValueError("union_sketches must have the t runs on axis 0")
    if estimator == "hll":
        return _hll(tt, gamma)
    if estimator == "censored_mle":
        if alpha_min is None:
            raise ValueError('estimator="censored_mle" needs alpha_min (0 for non-private sketches)')
        return _censored_mle(tt, gamma, alpha_min)
    if estimator == "paper_literal":
        warnings.warn('estimator="paper_literal" is the printed (1+γ)^HarmonicMean(𝒯) of Algorithm 4 of the '
                      "extended VertiMRF paper; it is badly biased (doc/deviations.md, 'Unbiased CarEst estimator') "
                      "and exists for ablation only.", UserWarning, stacklevel=_stacklevel)
        t = tt.shape[0]
        with np.errstate(divide="ignore"):
            hm = t / (1.0 / tt.astype(np.float64)).sum(axis=0)  # a 0 entry makes the harmonic mean 0
        return np.exp(math.log1p(gamma) * hm)
    raise ValueError(f"unknown estimator {estimator!r}; use 'hll', 'censored_mle' or 'paper_literal'")


def car_est(sketches_by_attr: Sequence[np.ndarray], gamma: float, k_p: int, n_hat: float,
            estimator: str = "hll", alpha_min: int | None = None, complements: bool = False) -> np.ndarray:
    """CarEst (§4.2): the l-way contingency table of marginal (A^1..A^l) from the parties' sketches.

    𝒯[h, v] = max_i c_i^{(h)}[v_i] is the sketch of the union of the
    complements (c_i = :func:`complement_sketches` of attribute i); its
    cardinality U[v] is estimated, the Σ_i (u_i − 1)·k_p phantoms are removed
    and T[v] = max(n̂ − (U[v] − Σ_i (u_i − 1) k_p), 0) (``doc/deviations.md``:
    "Clamping CarEst cells at zero", "Phantoms of unequal domains").
    Post-processing only.

    Parameters
    ----------
    sketches_by_attr : sequence of arrays of shape (t, u_i)
        For each attribute of the marginal, its sketch block (the columns
        of :func:`encode`'s output for that attribute), all with the same t keys.
    gamma : float
        Geometric parameter γ.
    k_p : int
        Phantoms per sketch (:func:`dpfm_parameters`); 0 for non-private sketches.
    n_hat : float
        The released noisy record count n̂.
    estimator : {"hll", "censored_mle", "paper_literal"}
        ``"hll"`` (default): U = c(γ)·t/Σ_h (1+γ)^{−𝒯[h,v]} (:func:`hll_constant`).
        ``"censored_mle"``: the maximum-likelihood N of the t maxima with
        observations at α_min censored; removes the α_min floor bias (needs
        ``alpha_min``).  ``"paper_literal"``: (1+γ)^{harmonic mean of 𝒯[:,v]}
        as printed in the extended version's Algorithm 4; badly biased,
        ablation only (warns).
    alpha_min : int, optional
        The floor α_min; required for ``"censored_mle"`` (0 for non-private sketches).
    complements : bool, default False
        True if ``sketches_by_attr`` already holds complement sketches.

    Returns
    -------
    numpy.ndarray of float, shape (u_1, …, u_l)

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import car_est, raw_sketches, derive_sketch_keys
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 20000); b = np.where(rng.random(20000) < 0.8, a, 1 - a)
    >>> keys = derive_sketch_keys(b"\\x05" * 32, 200)
    >>> sa, sb = raw_sketches(a, [2], keys, 1.0), raw_sketches(b, [2], keys, 1.0)  # two parties
    >>> est = car_est([sa, sb], 1.0, k_p=0, n_hat=20000)
    >>> true = np.histogram2d(a, b, bins=2)[0]
    >>> est.shape, bool(np.all(np.abs(est - true) <= 0.35 * (20000 - true)))
    ((2, 2), True)
    """
    gamma = _check_gamma(gamma)
    blocks = [np.asarray(s) for s in sketches_by_attr]
    if not blocks:
        raise ValueError("need at least one attribute")
    t = blocks[0].shape[0]
    if any(b.ndim != 2 or b.shape[0] != t for b in blocks):
        raise ValueError("every sketch block must be a (t, u_i) array with the same t")
    sizes = [b.shape[1] for b in blocks]
    comps = blocks if complements else [complement_sketches(b) for b in blocks]
    l = len(comps)
    tt = None
    for i, c in enumerate(comps):  # 𝒯[h, v] = max_i c_i[h, v_i] by broadcasting
        shape = [t] + [1] * l
        shape[i + 1] = sizes[i]
        ci = c.astype(np.int16).reshape(shape)  # values ≤ 483 (sketch_dtype bound)
        tt = ci if tt is None else np.maximum(tt, ci)
    tt = np.broadcast_to(tt, [t] + sizes)
    U = union_cardinality(tt, gamma, estimator=estimator, alpha_min=alpha_min, _stacklevel=3)
    phantoms = sum(u - 1 for u in sizes) * int(k_p)  # Σ_i (u_i − 1)·k_p (doc/deviations.md)
    return np.maximum(float(n_hat) - (U - phantoms), 0.0)


# ----------------------------------------------------------------------------------------------------------------------
# Accounting (Theorem 2, §4.2)
# ----------------------------------------------------------------------------------------------------------------------
#: Theorem 2 holds (is at least the RDP conversion of its proof) iff ε_enc ≤ THEOREM2_RANGE · ln(1/δ_enc).
#: With ρ = ε_enc²/(8 ln 1/δ) the conversion is ε_enc/√2 + ε_enc²/(8 ln 1/δ), which is ≤ ε_enc iff
#: ε_enc ≤ 8(1 − 1/√2) ln(1/δ) ≈ 2.343 ln(1/δ); there ρ < ln 1/δ, so the optimal order is ≥ 2.
THEOREM2_RANGE = 8.0 * (1.0 - 1.0 / math.sqrt(2.0))


def _check_acc(t, d, delta):
    if int(t) < 1 or int(d) < 1 or not (0 < float(delta) < 1):
        raise ValueError("need t >= 1, d >= 1 and 0 < delta < 1")


def sketch_epsilon_prime(epsilon_enc: float, t: int, d: int, delta: float) -> float:
    """ε′ = ε_enc / (4√(t d ln(1/δ))), the per-sketch budget of LocEnc line 2 (extended version, Algorithm 3).

    d is the global number of attributes (``doc/deviations.md``, "Sketch
    budget over all d attributes").

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import sketch_epsilon_prime
    >>> f"{sketch_epsilon_prime(0.288, 2000, 15, 0.5 / 36177):.4e}"
    '1.2427e-04'
    """
    _check_acc(t, d, delta)
    return float(epsilon_enc) / (4.0 * math.sqrt(int(t) * int(d) * math.log(1.0 / float(delta))))


def theorem2_epsilon(epsilon_prime: float, t: int, d: int, delta: float) -> float:
    """Theorem 2's figure 4ε′√(t d ln(1/δ)) for LocEnc with per-sketch ε′ (VertiMRF, KDD'24, §4.2).

    A valid (ε, δ) bound only while it is at least :func:`rdp_optimal_epsilon`,
    the conversion its proof rests on: for ε ≤ :data:`THEOREM2_RANGE` ·
    ln(1/δ) (about 2.34 ln(1/δ)).  Beyond, it states less than the proof
    gives.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import rdp_optimal_epsilon, theorem2_epsilon, sketch_epsilon_prime
    >>> round(theorem2_epsilon(sketch_epsilon_prime(0.288, 2000, 15, 1e-5), 2000, 15, 1e-5), 12)
    0.288
    >>> e = sketch_epsilon_prime(16.8, 2000, 15, 5e-3)     # 16.8 > 2.34 ln(200) = 12.4: out of range
    >>> round(theorem2_epsilon(e, 2000, 15, 5e-3), 6), round(rdp_optimal_epsilon(e, 2000, 15, 5e-3), 4)
    (16.8, 18.6158)
    """
    _check_acc(t, d, delta)
    return 4.0 * float(epsilon_prime) * math.sqrt(int(t) * int(d) * math.log(1.0 / float(delta)))


def rdp_optimal_epsilon(epsilon_prime: float, t: int, d: int, delta: float) -> float:
    """The best (ε, δ) conversion of Theorem 2's (λ, ρλ)-RDP, ρ = 2 t d ε′², over the orders λ ≥ 2.

    The proof of Theorem 2 (VertiMRF, KDD'24, App. C.1) shows the t runs
    are (λ, ρλ)-RDP and converts with (ε_λ + ln(1/δ)/(λ − 1), δ) at an
    order λ ≥ 2.  The minimum over λ is at λ* = 1 + √(ln(1/δ)/ρ): ε = ρ +
    2√(ρ ln(1/δ)) while λ* ≥ 2 (ρ ≤ ln 1/δ); past that the order stays at 2:
    ε = 2ρ + ln(1/δ).

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import rdp_optimal_epsilon
    >>> round(rdp_optimal_epsilon(1.2427e-04, 2000, 15, 0.5 / 36177), 4)
    0.2046
    """
    _check_acc(t, d, delta)
    rho = 2.0 * int(t) * int(d) * float(epsilon_prime) ** 2
    log_term = math.log(1.0 / float(delta))
    if rho > log_term:  # λ* < 2: the proof's conversion needs λ ≥ 2
        return 2.0 * rho + log_term
    return rho + 2.0 * math.sqrt(rho * log_term)
