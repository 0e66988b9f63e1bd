"""Consistency enforcement between a cross-party estimate and the local models (VertiMRF, §6.2).

A cross-party marginal M is estimated twice over: from the sketches (CarEst +
HisRec) and, on each party's part M_i = M ∩ 𝒜_i, by that party's local
model.  Following PriView (Qardaji et al., SIGMOD'14) in the general form of
KDD'24's §6.2, the two agree on T_A = (T̂↓A + T̃_A) / 2 and the CarEst table absorbs
the difference spread equally over the cells it covers (step 1); negatives are
set to 0 and the table renormalised (step 2).  Repeated ``iters`` times (4, as
the authors' code).  Only the CarEst table is used downstream (``doc/deviations.md``,
"Consistency updates only the cross-party table").
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["normalise", "enforce_consistency"]


def normalise(table: np.ndarray) -> np.ndarray:
    """Non-negative table scaled to sum 1 (uniform when it has no mass).

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.consistency import normalise
    >>> normalise([[1.0, -1.0], [3.0, 0.0]]).tolist()
    [[0.25, 0.0], [0.75, 0.0]]
    """
    t = np.clip(np.asarray(table, dtype=float), 0.0, None)
    total = t.sum()
    return t / total if total > 0 else np.full(t.shape, 1.0 / t.size)


def enforce_consistency(table: np.ndarray, sources: Sequence[tuple[Sequence[int], np.ndarray]],
                        iters: int = 4) -> np.ndarray:
    """Make a cross-party estimate agree with the local models' marginals on their shared attributes.

    Parameters
    ----------
    table : ndarray
        The CarEst(+HisRec) estimate of the marginal M (any scale; normalised first).
    sources : sequence of (axes, local_table)
        For each party, the axes of ``table`` it holds (increasing) and its
        local model's marginal on them (any scale; normalised first), with
        the axes in the same order.
    iters : int, default=4
        Passes over the sources.

    Returns
    -------
    ndarray
        A probability table (non-negative, sums to 1); multiply by n̂ for counts.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.consistency import enforce_consistency
    >>> est = np.array([[0.4, 0.1], [0.1, 0.4]])
    >>> out = enforce_consistency(est, [((0,), np.array([0.7, 0.3])), ((1,), np.array([0.5, 0.5]))])
    >>> np.round(out.sum(axis=1), 3).tolist()   # halfway between 0.5/0.5 and the local 0.7/0.3
    [0.6, 0.4]
    """
    t = normalise(table)
    states = []
    for axes, local in sources:
        axes = tuple(int(a) for a in axes)
        if list(axes) != sorted(set(axes)) or not axes:
            raise ValueError(f"axes must be distinct and increasing, got {axes}.")
        local = normalise(local)
        if local.shape != tuple(t.shape[a] for a in axes):
            raise ValueError(f"a local table of shape {local.shape} does not match axes {axes} of {t.shape}.")
        states.append([axes, local])
    for _ in range(int(iters)):
        for state in states:
            axes, local = state
            other = tuple(a for a in range(t.ndim) if a not in axes)
            projection = t.sum(axis=other)
            agreed = (projection + local) / 2.0
            shape = [t.shape[a] if a in axes else 1 for a in range(t.ndim)]
            # Step 1: spread the difference equally over the cells each agreed value covers.
            t = t + ((agreed - projection) / (t.size / projection.size)).reshape(shape)
            state[1] = agreed  # the local side is iteration state only
            # Step 2: validation.
            t = normalise(t)
    return t


def rake(table: np.ndarray, sources: Sequence[tuple[Sequence[int], np.ndarray]], iters: int = 1000,
         floor: float = 1e-6, tol: float = 1e-10) -> np.ndarray:
    """Iterative proportional fitting of ``table`` to the sources' marginals (they are trusted exactly).

    The cross-party estimate keeps only its interaction structure (its odds
    ratios); its margins on each party's attributes become that party's local
    marginals.  A small ``floor`` (relative to uniform) keeps cells a clamped
    estimate set to 0 reachable.  Stops when every margin is within ``tol``
    or after ``iters`` passes.  Returns a probability table.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.consistency import rake
    >>> out = rake(np.array([[0.4, 0.1], [0.1, 0.4]]), [((0,), np.array([0.7, 0.3])), ((1,), np.array([0.5, 0.5]))])
    >>> np.round(out.sum(axis=1), 6).tolist(), np.round(out.sum(axis=0), 6).tolist()
    ([0.7, 0.3], [0.5, 0.5])
    """
    t = normalise(table) + floor / np.asarray(table).size
    t /= t.sum()
    targets = []
    for axes, local in sources:
        axes = tuple(int(a) for a in axes)
        shape = [t.shape[a] if a in axes else 1 for a in range(t.ndim)]
        targets.append((tuple(a for a in range(t.ndim) if a not in axes), normalise(local).reshape(shape)))
    for _ in range(int(iters)):
        for other, target in targets:
            current = t.sum(axis=other, keepdims=True)
            t = t * np.divide(target, current, out=np.zeros_like(current), where=current > 0)
        if max(float(np.abs(t.sum(axis=other, keepdims=True) - target).max()) for other, target in targets) < tol:
            break
    return normalise(t)
