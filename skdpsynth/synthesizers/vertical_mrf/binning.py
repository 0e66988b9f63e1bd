"""Public equal-width binning, noisy within-bin value distributions and HisRec (VertiMRF dimension reduction).

VertiMRF's dimension reduction and histogram recovery are §6.1 of both
versions of the paper (HisRec is KDD'24's Eq. (5)); ``doc/deviations.md``
lists where this module departs from them.

* Binning (``doc/deviations.md``, "Binning over the public domain"):
  :func:`equal_width_bins` maps each raw code of an attribute with public
  domain size u to one of b equal-width bins using **only u and b** — never
  the observed min/max — so the map itself exposes nothing;
  :func:`binned_size` is the number of bins of a map.
* Value distributions (``doc/deviations.md``, "Laplace noise on the
  per-value counts"): :func:`value_distributions` perturbs the per-value
  counts of one attribute with the Laplace mechanism (sensitivity 1 under
  add/remove-one, budget ε′_b, one ledger entry), clips at 0 and normalises
  within each bin (:func:`normalize_within_bins`); a bin whose noisy mass is
  0 gets the uniform distribution over its values.
  :func:`uniform_value_distributions` is the UniSam ablation (extended
  version, App. A.1), which costs nothing.
* HisRec (§6.1, Eq. (5)): :func:`his_rec` spreads a table over binned
  domains to the raw domains,
  T_high[v_1..v_l] = T_low[bin(v_1)..bin(v_l)] · Π_i U_i[v_i].
  Post-processing only.

Conventions.  Codes are 0-based here (the paper's are 1-based): value v ∈
{0, …, u−1} falls in bin ``bin_map[v]`` ∈ {0, …, B−1}.  An attribute that is
not binned (u ≤ b) has ``bin_map = arange(u)`` and U ≡ 1; it needs no value
distribution and spends no budget.  Who pays for what (ε′_b = ε_bin/d_b;
``doc/deviations.md``, "Binning budget per binned column") is the caller's
business: each call of :func:`value_distributions` costs exactly its
``epsilon``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ...privacy.mechanisms import laplace_mechanism

if TYPE_CHECKING:
    from ...privacy.ledger import PrivacyLedger

__all__ = [
    "equal_width_bins",
    "binned_size",
    "normalize_within_bins",
    "value_distributions",
    "uniform_value_distributions",
    "his_rec",
]

# Tolerance of the "sums to 1 within every bin" check of his_rec's value distributions.
_SUM_TOL = 1e-9


# ----------------------------------------------------------------------------------------------------------------------
# Validation helpers
# ----------------------------------------------------------------------------------------------------------------------
def _positive_int(name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return value


def _check_bin_map(bin_map, name: str = "bin_map") -> np.ndarray:
    """A 1-d, non-empty, non-negative integer array whose bins 0..max are all used."""
    bm = np.asarray(bin_map)
    if bm.ndim != 1 or bm.size == 0 or not np.issubdtype(bm.dtype, np.integer):
        raise ValueError(f"{name} must be a non-empty 1-d integer array")
    if (bm < 0).any():
        raise ValueError(f"{name} must map values to bins >= 0")
    bm = bm.astype(np.int64, copy=False)
    if (np.bincount(bm) == 0).any():
        raise ValueError(f"{name} leaves a bin between 0 and {int(bm.max())} empty; bins must be 0..B-1, each used")
    return bm


def _check_codes(codes, size: int) -> np.ndarray:
    c = np.asarray(codes)
    if c.ndim != 1 or not (np.issubdtype(c.dtype, np.integer) or c.size == 0):
        raise ValueError("codes must be a 1-d integer array")
    c = c.astype(np.int64, copy=False)
    if c.size and (c.min() < 0 or c.max() >= size):
        raise ValueError(f"codes must lie in [0, {size})")
    return c


# ----------------------------------------------------------------------------------------------------------------------
# Binning (§6.1; doc/deviations.md, "Binning over the public domain")
# ----------------------------------------------------------------------------------------------------------------------
def equal_width_bins(size: int, n_bins: int) -> np.ndarray:
    """The equal-width bin of every raw code 0..size−1: ``v * n_bins // size`` if size > n_bins, else the identity.

    This is bin(v) = ⌊(v−1)·b/u⌋ + 1 on 1-based codes and bins, shifted to
    0-based ones.  It depends on the public domain size and ``n_bins`` only
    (``doc/deviations.md``, "Binning over the public domain"), so releasing it
    costs no privacy.  With u > b every
    bin is used and holds ⌊u/b⌋ or ⌈u/b⌉ consecutive values; with u ≤ b the
    attribute is not binned.

    Parameters
    ----------
    size : int
        Public domain size u ≥ 1 of the attribute.
    n_bins : int
        Number of bins b ≥ 1.

    Returns
    -------
    numpy.ndarray of int64, shape (size,)
        The 0-based bin of each 0-based value; non-decreasing, with
        min(size, n_bins) distinct bins.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.binning import equal_width_bins
    >>> equal_width_bins(10, 4).tolist()
    [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    >>> equal_width_bins(3, 4).tolist()   # u <= b: no binning
    [0, 1, 2]
    """
    size, n_bins = _positive_int("size", size), _positive_int("n_bins", n_bins)
    v = np.arange(size, dtype=np.int64)
    if size <= n_bins:
        return v
    return v * n_bins // size  # exact integer arithmetic: ⌊v·b/u⌋


def binned_size(bin_map: ArrayLike) -> int:
    """The number of bins of a bin map, ``max(bin_map) + 1``.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.binning import binned_size, equal_width_bins
    >>> binned_size(equal_width_bins(10, 4)), binned_size(equal_width_bins(3, 4))
    (4, 3)
    """
    return int(_check_bin_map(bin_map).max()) + 1


# ----------------------------------------------------------------------------------------------------------------------
# Value distributions (§6.1; doc/deviations.md, "Laplace noise on the per-value counts")
# ----------------------------------------------------------------------------------------------------------------------
def normalize_within_bins(counts: ArrayLike, bin_map: ArrayLike) -> np.ndarray:
    """U[v] = max(c_v, 0) / Σ_{v′ in bin(v)} max(c_v′, 0); uniform over a bin whose clipped mass is 0 (§6.1).

    Post-processing of (noisy or exact) per-value counts; vectorised with one
    weighted ``np.bincount`` over the bin map.

    Parameters
    ----------
    counts : array-like of float, shape (u,)
        Per-value counts (noisy counts may be negative; they are clipped at 0).
    bin_map : array-like of int, shape (u,)
        The bin of each value (e.g. :func:`equal_width_bins`).

    Returns
    -------
    numpy.ndarray of float64, shape (u,)
        Sums to 1 within every bin.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.binning import normalize_within_bins
    >>> normalize_within_bins([3, 1, -2, 0, 5], [0, 0, 1, 1, 2]).tolist()
    [0.75, 0.25, 0.5, 0.5, 1.0]
    """
    bm = _check_bin_map(bin_map)
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != bm.shape:
        raise ValueError(f"counts has shape {c.shape} but bin_map has shape {bm.shape}")
    if not np.isfinite(c).all():
        raise ValueError("counts must be finite")
    clipped = np.maximum(c, 0.0)
    n_bins = int(bm.max()) + 1
    mass = np.bincount(bm, weights=clipped, minlength=n_bins)[bm]  # Σ over the value's bin, per value
    width = np.bincount(bm, minlength=n_bins)[bm].astype(np.float64)
    safe = np.where(mass > 0, mass, 1.0)
    return np.where(mass > 0, clipped / safe, 1.0 / width)


def value_distributions(codes: ArrayLike, size: int, bin_map: ArrayLike, epsilon: float, *, random_state=None,
                        ledger: PrivacyLedger | None = None, description: str = "",
                        party: str | None = None) -> np.ndarray:
    """The noisy within-bin value distribution U of one binned attribute (§6.1); ε-DP.

    ñ_v = n_v + Lap(1/ε) for every value v (the counts ``np.bincount(codes,
    minlength=size)`` have L1 sensitivity 1 under add/remove-one; noise on
    counts, not on distribution elements: ``doc/deviations.md``, "Laplace
    noise on the per-value counts"; integer counts get exact discrete
    Laplace noise), then U = :func:`normalize_within_bins` (ñ, ``bin_map``):
    U[v] = max(ñ_v, 0) / Σ_{v′ in bin(v)} max(ñ_v′, 0), uniform over a bin
    whose noisy mass is 0.  Only U is returned; the noisy counts stay inside.

    Parameters
    ----------
    codes : array-like of int, shape (n,)
        The party's 0-based codes of the attribute, in [0, size).
    size : int
        Public domain size u.
    bin_map : array-like of int, shape (size,)
        Public bin map (:func:`equal_width_bins`).
    epsilon : float
        Budget ε′_b of this attribute (pure DP).
    random_state : None, int, numpy.random.Generator, ...
        Source of the noise; ``None`` (default, for releases): OS entropy.
    ledger : PrivacyLedger, optional
        If given, exactly one ``"pure"`` entry (ε = ``epsilon``, sensitivity 1) is appended.
    description, party : str
        Ledger description and party tag.

    Returns
    -------
    numpy.ndarray of float64, shape (size,)
        Non-negative; sums to 1 within every bin.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> from skdpsynth.synthesizers.vertical_mrf.binning import equal_width_bins, value_distributions
    >>> codes = np.array([0, 0, 0, 1, 2, 3, 3, 4, 5, 5, 5, 5])
    >>> ledger = PrivacyLedger()
    >>> U = value_distributions(codes, 6, equal_width_bins(6, 2), 1e9, random_state=0, ledger=ledger)
    >>> U.round(4).tolist()   # a huge ε: the exact within-bin frequencies
    [0.6, 0.2, 0.2, 0.2857, 0.1429, 0.5714]
    >>> len(ledger), ledger.total_epsilon()
    (1, 1000000000.0)
    """
    size = _positive_int("size", size)
    bm = _check_bin_map(bin_map)
    if bm.shape[0] != size:
        raise ValueError(f"bin_map has {bm.shape[0]} entries but size is {size}")
    c = _check_codes(codes, size)
    counts = np.bincount(c, minlength=size)  # int64: exact discrete Laplace noise below
    noisy = laplace_mechanism(counts, epsilon=epsilon, sensitivity=1.0, random_state=random_state,
                              ledger=ledger, description=description, party=party)
    return normalize_within_bins(noisy, bm)


def uniform_value_distributions(bin_map: ArrayLike) -> np.ndarray:
    """``U[v] = 1/|bin(v)|``: the UniSam ablation of HisRec (extended version, App. A.1); no data, no budget.

    For an unbinned attribute (``bin_map = arange(u)``) this is U ≡ 1.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.binning import equal_width_bins, uniform_value_distributions
    >>> uniform_value_distributions(equal_width_bins(5, 2)).round(4).tolist()
    [0.3333, 0.3333, 0.3333, 0.5, 0.5]
    >>> uniform_value_distributions([0, 1, 2]).tolist()
    [1.0, 1.0, 1.0]
    """
    bm = _check_bin_map(bin_map)
    return 1.0 / np.bincount(bm)[bm].astype(np.float64)


# ----------------------------------------------------------------------------------------------------------------------
# HisRec (§6.1, Eq. (5))
# ----------------------------------------------------------------------------------------------------------------------
def his_rec(table: ArrayLike, bin_maps: Sequence[ArrayLike | None],
            value_dists: Sequence[ArrayLike | None]) -> np.ndarray:
    """HisRec (§6.1, Eq. (5)): T_high[v_1..v_l] = T_low[bin_1(v_1)..bin_l(v_l)] · Π_i U_i[v_i].

    Recovers a table over the raw domains from one over the binned domains
    (e.g. the CarEst output over binned attributes), assuming the attributes
    are independent given their bins: Pr[A, B] ≈ Σ_{X,Y} Pr[X, Y]·Pr[A|X]·Pr[B|Y].
    Since every U_i sums to 1 within each bin, the result has the same total
    and its bin-marginal (summing the values of each bin) is ``table``.
    Post-processing only.  Vectorised: one ``np.take`` per axis (repeat each
    bin slice over its values) and one broadcast multiply per axis.

    Parameters
    ----------
    table : array-like of float, shape (B_1, …, B_l)
        The table over the binned domains, B_i = :func:`binned_size` (bin_maps[i]).
    bin_maps : sequence of l bin maps or None
        The bin map of each axis; ``None`` means not binned (identity of length B_i).
    value_dists : sequence of l arrays or None
        U_i, of length u_i = len(bin_maps[i]), summing to 1 within each bin
        (:func:`value_distributions`).  ``None`` means
        :func:`uniform_value_distributions` — U ≡ 1 for an unbinned axis, the
        UniSam ablation for a binned one.

    Returns
    -------
    numpy.ndarray of float64, shape (u_1, …, u_l)

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.binning import equal_width_bins, his_rec
    >>> low = np.array([[6.0, 2.0], [0.0, 4.0]])          # A binned 4 -> 2, B not binned
    >>> U_a = np.array([0.5, 0.5, 0.25, 0.75])
    >>> high = his_rec(low, [equal_width_bins(4, 2), None], [U_a, None])
    >>> high.tolist()
    [[3.0, 1.0], [3.0, 1.0], [0.0, 1.0], [0.0, 3.0]]
    >>> float(high.sum()) == float(low.sum())
    True
    """
    low = np.asarray(table, dtype=np.float64)
    l = low.ndim
    if l == 0:
        raise ValueError("table must have at least one axis")
    if len(bin_maps) != l or len(value_dists) != l:
        raise ValueError(f"table has {l} axes but {len(bin_maps)} bin maps and {len(value_dists)} value distributions")
    out = low
    for i, (bm, U) in enumerate(zip(bin_maps, value_dists)):
        name = f"bin_maps[{i}]"
        bm = np.arange(low.shape[i], dtype=np.int64) if bm is None else _check_bin_map(bm, name)
        if int(bm.max()) + 1 != low.shape[i]:
            raise ValueError(f"{name} has {int(bm.max()) + 1} bins but axis {i} of table has length {low.shape[i]}")
        if U is None:
            U = uniform_value_distributions(bm)
        else:
            U = np.asarray(U, dtype=np.float64)
            if U.shape != bm.shape:
                raise ValueError(f"value_dists[{i}] has shape {U.shape} but {name} has shape {bm.shape}")
            if not np.isfinite(U).all() or (U < 0).any():
                raise ValueError(f"value_dists[{i}] must be finite and non-negative")
            sums = np.bincount(bm, weights=U)
            if np.abs(sums - 1.0).max() > _SUM_TOL:
                raise ValueError(f"value_dists[{i}] must sum to 1 within every bin")
        shape = [1] * l
        shape[i] = bm.shape[0]
        out = np.take(out, bm, axis=i) * U.reshape(shape)  # T_low[.., bin(v_i), ..] · U_i[v_i]
    return out
