"""What crosses from the parties to the curator, and how the curator reads it.

Every message is a noisy (DP) array plus the public facts needed to use it:
which slice and party sent it, over which attributes, with what noise
variance and at what zCDP cost.  The curator-side algorithm receives nothing
else from the parties; :func:`combine` turns the messages of one distributed
marginal measurement into the noisy count vector and its per-cell variance.

* :class:`SliceCount` — protocol A (``"secure_sum"``): one slice's noisy count,
  the output of the (simulated) secure-aggregation primitive.
* :class:`NoisyIndicators` — protocol B (``"indicator"``): one party's noisy
  per-record one-hot matrix over its attributes of ``r``.
* :class:`NoisyLocalMarginal` — protocol B's single-party shortcut: a party that
  holds all of ``r`` in its slice releases its noisy marginal.
* :class:`MeasurementReply` — everything one DMM call returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..domain import Domain

__all__ = ["SliceCount", "NoisyIndicators", "NoisyLocalMarginal", "MeasurementReply", "combine"]


@dataclass(frozen=True)
class SliceCount:
    """Protocol A: ``c_i + Σ_j z_ij`` for slice ``i`` (flat over ``attrs`` in domain order).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated.messages import SliceCount
    >>> m = SliceCount(0, ("a", "b"), np.array([1.2, 0.1, 2.9, -0.3, 1.0, 2.1]), variance=2.0,
    ...                party_rhos={"party0.0": 0.5, "party0.1": 0.5})     # 1/(2*0.5) + 1/(2*0.5)
    >>> m
    SliceCount(slice=0, attrs=('a', 'b'), variance=2.0, party_rhos={'party0.0': 0.5, 'party0.1': 0.5})
    >>> m.values.shape
    (6,)
    """

    slice: int
    attrs: tuple[str, ...]
    values: np.ndarray = field(repr=False)
    variance: float  # per cell
    party_rhos: dict  # party -> zCDP it spent on this slice count


@dataclass(frozen=True)
class NoisyIndicators:
    """Protocol B: party ``party``'s one-hot matrix over ``attrs`` (rows: the slice's roster order) plus noise.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated.messages import NoisyIndicators
    >>> m = NoisyIndicators(0, "party0.0", ("a",), np.array([[1.1, -0.2], [0.3, 0.8], [0.9, 0.1]]),
    ...                     variance=1.0, rho=0.5)                        # three records, |a| = 2
    >>> m
    NoisyIndicators(slice=0, party='party0.0', attrs=('a',), variance=1.0, rho=0.5)
    >>> m.matrix.shape
    (3, 2)
    """

    slice: int
    party: str
    attrs: tuple[str, ...]
    matrix: np.ndarray = field(repr=False)  # (R_i, n_attrs)
    variance: float  # per entry
    rho: float


@dataclass(frozen=True)
class NoisyLocalMarginal:
    """Protocol B shortcut: a party holding every attribute of ``r`` in its slice releases its noisy marginal.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated.messages import NoisyLocalMarginal
    >>> m = NoisyLocalMarginal(1, "party1.0", ("a",), np.array([2.3, 0.8]), variance=0.5, rho=1.0)
    >>> m
    NoisyLocalMarginal(slice=1, party='party1.0', attrs=('a',), variance=0.5, rho=1.0)
    >>> m.values.tolist()
    [2.3, 0.8]
    """

    slice: int
    party: str
    attrs: tuple[str, ...]
    values: np.ndarray = field(repr=False)
    variance: float  # per cell
    rho: float


@dataclass(frozen=True)
class MeasurementReply:
    """The messages of one distributed marginal measurement ``DMM(r, ρ')``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated.messages import MeasurementReply, SliceCount
    >>> parts = (SliceCount(0, ("a",), np.array([2.1, 0.9]), 2.0, {"party0.0": 0.5, "party0.1": 0.5}),
    ...          SliceCount(1, ("a",), np.array([1.2, 3.1]), 0.5, {"party1.0": 1.0}))
    >>> reply = MeasurementReply(("a",), rho=0.5, n_repeats=2, protocol="secure_sum", parts=parts)
    >>> reply
    MeasurementReply(attrs=('a',), rho=0.5, n_repeats=2, protocol='secure_sum')
    >>> reply.zcdp_charged, reply.party_rhos()
    (1.0, {'party0.0': 0.5, 'party0.1': 0.5, 'party1.0': 1.0})
    """

    attrs: tuple[str, ...]
    rho: float  # the call's budget ρ' (each slice's parties spend it in total, times n_repeats)
    n_repeats: int
    protocol: str
    parts: tuple = field(repr=False)

    @property
    def zcdp_charged(self) -> float:
        """zCDP of the call: ``e ρ'`` (sequential in a slice, parallel across slices)."""
        return self.n_repeats * self.rho

    def party_rhos(self) -> dict:
        """``{party: zCDP it spent}`` over all slices (each slice's values sum to :attr:`zcdp_charged`)."""
        out: dict = {}
        for part in self.parts:
            spent = part.party_rhos if isinstance(part, SliceCount) else {part.party: part.rho}
            for name, rho in spent.items():
                out[name] = out.get(name, 0.0) + rho
        return out


def _indicator_product(parts: list[NoisyIndicators], domain: Domain, attrs: tuple[str, ...]) -> np.ndarray:
    """``y[t] = Σ_ℓ ∏_j Ṽ_j[ℓ, t|A_j]`` as one einsum over the record axis (BLAS for two parties)."""
    label = {a: k + 1 for k, a in enumerate(attrs)}  # 0 is the record axis
    operands = []
    for part in parts:
        shape = (part.matrix.shape[0],) + domain.shape_of(part.attrs)
        operands += [part.matrix.reshape(shape), [0] + [label[a] for a in part.attrs]]
    out = np.einsum(*operands, [label[a] for a in attrs], optimize=True)
    return np.asarray(out, dtype=float).ravel()


def combine(reply: MeasurementReply, domain: Domain) -> tuple[np.ndarray, float]:
    """The curator's reading of a reply: the noisy count vector of ``r`` and its per-cell variance.

    Parameters
    ----------
    reply : MeasurementReply
    domain : Domain
        The public domain (for the shapes of protocol B's matrices).

    Returns
    -------
    values : ndarray of shape (n_r,)
        Flat over ``reply.attrs`` in domain order; unbiased for the true counts.
    variance : float
        Per-cell variance (exact for protocol A; the mean over cells for
        protocol B).

    Examples
    --------
    Protocol B: slice 0's two parties send noisy one-hot matrices (here
    without noise, to show the product), slice 1's single party its marginal:

    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated.messages import MeasurementReply, NoisyIndicators, NoisyLocalMarginal, combine
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> a = NoisyIndicators(0, "party0.0", ("a",), np.eye(2)[[0, 1, 0]], variance=1.0, rho=0.5)
    >>> b = NoisyIndicators(0, "party0.1", ("b",), np.eye(3)[[1, 2, 1]], variance=1.0, rho=0.5)
    >>> m = NoisyLocalMarginal(1, "party1.0", ("a", "b"), np.array([0.4, 2.2, -0.1, 1.1, 0.0, 0.8]), 0.5, 1.0)
    >>> values, variance = combine(MeasurementReply(("a", "b"), 1.0, 1, "indicator", (a, b, m)), dom)
    >>> values.round(1).tolist(), variance
    ([0.4, 4.2, -0.1, 1.1, 0.0, 1.8], 6.0)
    """
    attrs = domain.canonical(reply.attrs)
    n_cells = domain.size(attrs)
    values = np.zeros(n_cells)
    variance = 0.0
    by_slice: dict[int, list] = {}
    for part in reply.parts:
        by_slice.setdefault(part.slice, []).append(part)
    for parts in by_slice.values():
        if len(parts) == 1 and isinstance(parts[0], (SliceCount, NoisyLocalMarginal)):
            values += parts[0].values
            variance += parts[0].variance
            continue
        if not all(isinstance(p, NoisyIndicators) for p in parts):
            raise ValueError("A slice's reply mixes message kinds; expected one count or only indicator matrices.")
        values += _indicator_product(parts, domain, attrs)
        n_rows = parts[0].matrix.shape[0]
        factor = np.prod([1.0 + domain.size(p.attrs) * p.variance for p in parts])
        variance += n_rows * (factor - 1.0) / n_cells
    return values, float(variance)
