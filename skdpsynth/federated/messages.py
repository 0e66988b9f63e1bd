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
    """Protocol A: ``c_i + Σ_j z_ij`` for slice ``i`` (flat over ``attrs`` in domain order)."""

    slice: int
    attrs: tuple[str, ...]
    values: np.ndarray = field(repr=False)
    variance: float  # per cell
    party_rhos: dict  # party -> zCDP it spent on this slice count


@dataclass(frozen=True)
class NoisyIndicators:
    """Protocol B: party ``party``'s one-hot matrix over ``attrs`` (rows: the slice's roster order) plus noise."""

    slice: int
    party: str
    attrs: tuple[str, ...]
    matrix: np.ndarray = field(repr=False)  # (R_i, n_attrs)
    variance: float  # per entry
    rho: float


@dataclass(frozen=True)
class NoisyLocalMarginal:
    """Protocol B shortcut: a party holding every attribute of ``r`` in its slice releases its noisy marginal."""

    slice: int
    party: str
    attrs: tuple[str, ...]
    values: np.ndarray = field(repr=False)
    variance: float  # per cell
    rho: float


@dataclass(frozen=True)
class MeasurementReply:
    """The messages of one distributed marginal measurement ``DMM(r, ρ')``."""

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
        protocol B, spec §3.2.3).
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
