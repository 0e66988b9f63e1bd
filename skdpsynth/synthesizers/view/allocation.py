"""S3 budget shares and S4 consistency weights: closed-form KKT solutions (DPView paper §IV-D, §IV-E1).

Both depend on public domain sizes only, so they cost no privacy budget.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["budget_shares", "allocation_objective", "consistency_weights"]


def budget_shares(view_sizes: ArrayLike, method: str = "optimal") -> np.ndarray:
    """Fraction ``P_i`` of ε given to each view (paper §IV-D, Eq. (2)–(4)).

    ``min Σ S_i / P_i²`` subject to ``Σ P_i = 1`` (the total Laplace noise
    variance ``Σ_i S_i · 2/(P_i ε)²`` without the constant ``2/ε²``) has the
    unique solution ``P_i = S_i^{1/3} / Σ_j S_j^{1/3}``: stationarity of the
    Lagrangian gives ``P_i = (2 S_i/λ)^{1/3}``, and ``Σ P_i = 1`` fixes
    ``λ = 2 (Σ_j S_j^{1/3})³``.

    Parameters
    ----------
    view_sizes : array-like of int
        ``S_i = dom(v_i)``, the number of cells of each view.
    method : {"optimal", "uniform"}, default="optimal"
        ``"uniform"`` (``P_i = 1/k``) is the even split, for ablations.

    Returns
    -------
    numpy.ndarray of float64, positive, summing to 1

    Examples
    --------
    >>> budget_shares([8, 27, 64]).round(6).tolist()   # (2/9, 3/9, 4/9)
    [0.222222, 0.333333, 0.444444]
    """
    sizes = np.asarray(view_sizes, dtype=np.float64)
    if sizes.ndim != 1 or sizes.size == 0 or not np.all(sizes >= 1):
        raise ValueError("view_sizes must be a non-empty 1-d array of sizes >= 1.")
    if method == "uniform":
        return np.full(sizes.size, 1.0 / sizes.size)
    if method != "optimal":
        raise ValueError(f"method must be 'optimal' or 'uniform', got {method!r}.")
    roots = np.cbrt(sizes)
    return roots / roots.sum()


def allocation_objective(view_sizes: ArrayLike, shares: ArrayLike) -> float:
    """``Σ S_i / P_i²``, Eq. (2); at the optimum it equals ``(Σ S_i^{1/3})³``.

    Examples
    --------
    >>> round(allocation_objective([8, 27, 64], budget_shares([8, 27, 64])), 6), allocation_objective([8, 27, 64], [1/3] * 3)
    (729.0, 891.0)
    """
    sizes, shares = np.asarray(view_sizes, dtype=np.float64), np.asarray(shares, dtype=np.float64)
    return float(np.sum(sizes / shares**2))


def consistency_weights(shares: ArrayLike, xi: ArrayLike, method: str = "optimal") -> np.ndarray:
    """Weights ``w_i`` of the views sharing an attribute set ``A`` (paper §IV-E1, Eq. (5)–(6)).

    View ``i``'s projection onto one cell of ``A`` sums ``ξ_i = dom(v_i \\ A)``
    cells of noise ``Lap(1/(P_i ε))``, so its variance is ``∝ ξ_i / P_i²``.
    ``min Σ (w_i/P_i)² ξ_i`` s.t. ``Σ w_i = 1`` gives the inverse-variance
    weights ``w_i = (P_i²/ξ_i) / Σ_j (P_j²/ξ_j)``.

    Examples
    --------
    >>> consistency_weights([2/9, 4/9], [2, 8]).tolist(), consistency_weights([2/9, 4/9], [4, 4]).round(6).tolist()
    ([0.5, 0.5], [0.2, 0.8])
    """
    shares, xi = np.asarray(shares, dtype=np.float64), np.asarray(xi, dtype=np.float64)
    if method == "uniform":
        return np.full(shares.size, 1.0 / shares.size)
    if method != "optimal":
        raise ValueError(f"method must be 'optimal' or 'uniform', got {method!r}.")
    precision = shares**2 / xi
    return precision / precision.sum()
