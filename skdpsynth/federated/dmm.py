"""Distributed marginal measurement (DMM): the budget split and the noise it implies.

RandDPGen's measurement of a marginal ``r`` on hybrid-partitioned data (paper
§4.1, Algorithm 1).  In slice ``i`` the parties holding attributes of
``r`` are ``J_i(r)``; party ``j`` holds ``A_ij = Attr_ij ∩ r`` and gets the
share ``ρ_ij = |A_ij| / |r| · ρ'`` of the call's budget ``ρ'`` (sequential
composition inside a slice: the parties see the same people; parallel
composition across slices: disjoint people), so every call is ``ρ'``-zCDP.

Two protocols turn the parties' answers into a noisy count vector:

``"secure_sum"`` (protocol A, default)
    Each involved party adds a noise share to the slice's exact count, which
    a secure-aggregation (secure inner-product) primitive computes without
    revealing it.  The share is an exact *discrete* Gaussian ``N_Z(0, σ_ij²)``
    per cell, ``σ_ij² = 1/(2 e ρ_ij)`` (the distributed discrete Gaussian of
    Kairouz, Liu & Steinke 2021): the party's count plus its share alone is
    ``e ρ_ij``-zCDP (Canonne, Kamath & Steinke 2020), whatever the others
    add, and the released counts are integers with exactly that noise.
    This library *simulates* the primitive in-process
    (:class:`~skdpsynth.federated.curator.Federation`) or runs it with real
    cryptography; the curator only ever receives the noisy sum.  Per-cell
    variance ``V_A = Σ_i Σ_{j∈J_i} 1/(2 e ρ_ij)`` — public; exact up to the
    discrete Gaussian's variance being below its σ² (by a relative 2e-7 at
    σ² = 1, see :func:`~skdpsynth.privacy.samplers.discrete_gaussian`), so
    it is a tight upper bound.  Why this reading of the paper is the default:
    ``doc/deviations.md``, "Noise-share counts (protocol A)".
``"indicator"`` (protocol B, the paper's text read literally)
    Each involved party releases its per-record one-hot matrix over ``A_ij``
    plus continuous ``N(0, 1/(2 e ρ_ij))`` noise on every entry; the curator
    multiplies the matrices record by record and sums.  Unbiased but not Gaussian, and
    its variance grows with the slice size ``R_i``; the mean per-cell
    variance ``V̄_B = (1/n_r) Σ_i R_i (∏_j (1 + n_{A_ij} σ_ij²) − 1)`` is
    public (the ID roster, hence ``R_i``, is public: ``doc/deviations.md``,
    "Public ID roster").  With the single-party shortcut a party holding all
    of ``r`` in its slice releases its noisy marginal instead (variance
    ``1/(2 e ρ')`` per cell).

``e`` is the number of repeats of the paper's IDMM (App. D, Algorithm 5;
``n_repeats``; ``doc/deviations.md``, "Honest IDMM accounting"): averaging
``e`` draws is one draw with variance divided by ``e`` and costs ``e`` times
the zCDP.  ``paper_bound_variance`` is Theorem 4.1's ``K S² / (2 e ρ')``,
which is *not* a bound when ``|r| > S`` (``doc/deviations.md``, "The paper's
variance bound can fail"); :func:`exceeds_paper_bound` detects that case.

Everything here reads public metadata only (the partition and the domain).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..domain import Domain

__all__ = [
    "NOISE_MECHANISMS",
    "PartyShare",
    "split_budget",
    "secure_sum_variance",
    "indicator_variance",
    "paper_bound_variance",
    "measurement_variance",
    "exceeds_paper_bound",
    "PROTOCOLS",
]

#: The cross-party measurement protocols :func:`measurement_variance` (and the synthesizer) accept.
PROTOCOLS = ("secure_sum", "indicator")

#: The mechanism each protocol's ledger entries name: protocol A's parties add exact discrete Gaussian shares,
#: protocol B's parties continuous Gaussian noise to their (per-record) releases.
NOISE_MECHANISMS = {"secure_sum": "discrete gaussian (distributed)", "indicator": "gaussian (distributed)"}


@dataclass(frozen=True)
class PartyShare:
    """One involved party's part in measuring a marginal: its attributes of ``r`` and its budget.

    Examples
    --------
    >>> from skdpsynth.federated.dmm import PartyShare, secure_sum_variance
    >>> share = PartyShare(slice=0, party="party0.0", attrs=("a",), rho=0.5, n_rows=3)
    >>> share.attrs, secure_sum_variance([[share]])   # its noise share: 1 / (2 * 0.5)
    (('a',), 1.0)
    """

    slice: int
    party: str
    attrs: tuple[str, ...]  # A_ij, in domain order
    rho: float  # ρ_ij (before the n_repeats multiplier)
    n_rows: int  # R_i, the slice's public roster size


def split_budget(partition, domain: Domain, attrs: Sequence[str], rho: float) -> list[list[PartyShare]]:
    """Per slice, the involved parties and their shares ``ρ_ij = |A_ij| / |r| · ρ`` (Algorithm 1, line 6).

    Parameters
    ----------
    partition : HybridPartition
        Who holds what (validated against the domain's attributes).
    domain : Domain
    attrs : sequence of str
        The marginal ``r``.
    rho : float
        The call's zCDP budget ``ρ'``; each slice's shares sum to it.

    Returns
    -------
    list of list of PartyShare
        One list per slice, parties in partition order.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.dmm import split_budget
    >>> part = HybridPartition.grid(10, ["a", "b", "c"], n_slices=2, column_groups=[["a"], ["b", "c"]],
    ...                             random_state=0)
    >>> shares = split_budget(part, Domain(["a", "b", "c"], [2, 2, 2]), ["a", "c"], 1.0)
    >>> [(s.party, s.attrs, s.rho) for s in shares[0]]
    [('party0.0', ('a',), 0.5), ('party0.1', ('c',), 0.5)]
    """
    r = domain.canonical(attrs)
    out = [[] for _ in range(partition.n_slices)]
    for party in partition.parties():
        held = tuple(a for a in r if a in set(party.columns))
        if held:
            out[party.slice].append(PartyShare(party.slice, party.name, held, len(held) / len(r) * rho,
                                               len(party.rows)))
    return out


def secure_sum_variance(shares: list[list[PartyShare]], n_repeats: int = 1) -> float:
    """Per-cell variance of protocol A, ``Σ_i Σ_j 1 / (2 e ρ_ij)``: the sum of the shares' σ².

    Exact for σ² ≥ 1 up to a relative 2e-7 (a discrete Gaussian's variance
    is below its σ²), an upper bound below.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.dmm import secure_sum_variance, split_budget
    >>> part = HybridPartition([[0, 1, 2], [3, 4, 5]], [["a"], ["b", "c"]])
    >>> shares = split_budget(part, Domain(["a", "b", "c"], [2, 3, 2]), ["a", "b"], 1.0)
    >>> secure_sum_variance(shares), secure_sum_variance(shares, n_repeats=2)
    (4.0, 2.0)
    """
    return float(sum(1.0 / (2.0 * n_repeats * s.rho) for slice_ in shares for s in slice_))


def indicator_variance(shares: list[list[PartyShare]], domain: Domain, n_repeats: int = 1,
                       shortcut: bool = True) -> float:
    """Mean per-cell variance of protocol B, ``V̄_B``; with ``shortcut``, single-party
    slices release a noisy marginal (variance ``1 / (2 e ρ')`` per cell).

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.dmm import indicator_variance, split_budget
    >>> dom = Domain(["a", "b", "c"], [2, 3, 2])
    >>> part = HybridPartition([[0, 1, 2], [3, 4, 5]], [["a"], ["b", "c"]])
    >>> indicator_variance(split_budget(part, dom, ["a", "b"], 1.0), dom)   # grows with the slice sizes
    11.0
    >>> indicator_variance(split_budget(part, dom, ["b", "c"], 1.0), dom)   # single-party shortcut
    1.0
    """
    total = 0.0
    for slice_ in shares:
        if not slice_:
            continue
        if shortcut and len(slice_) == 1:
            total += 1.0 / (2.0 * n_repeats * slice_[0].rho)
            continue
        n_r = int(np.prod([domain.size(s.attrs) for s in slice_]))
        factor = np.prod([1.0 + domain.size(s.attrs) / (2.0 * n_repeats * s.rho) for s in slice_])
        total += slice_[0].n_rows * (factor - 1.0) / n_r
    return float(total)


def paper_bound_variance(n_slices: int, n_vertical: int, rho: float, n_repeats: int = 1) -> float:
    """Theorem 4.1's per-cell variance ``K S² / (2 e ρ')`` (not a true bound when ``|r| > S``).

    Examples
    --------
    >>> from skdpsynth.federated.dmm import paper_bound_variance
    >>> paper_bound_variance(n_slices=2, n_vertical=2, rho=1.0), paper_bound_variance(2, 2, 1.0, n_repeats=4)
    (4.0, 1.0)
    """
    return n_slices * n_vertical**2 / (2.0 * n_repeats * rho)


def measurement_variance(partition, domain: Domain, attrs: Sequence[str], rho: float, *, protocol: str,
                         n_repeats: int = 1, shortcut: bool = True) -> float:
    """The exact (protocol A) or mean (protocol B) per-cell variance of ``DMM(r, ρ')``.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.dmm import measurement_variance
    >>> dom = Domain(["a", "b", "c"], [2, 3, 2])
    >>> part = HybridPartition([[0, 1, 2], [3, 4, 5]], [["a"], ["b", "c"]])
    >>> [measurement_variance(part, dom, ["a", "b"], 1.0, protocol=p) for p in ("secure_sum", "indicator")]
    [4.0, 11.0]
    """
    shares = split_budget(partition, domain, attrs, rho)
    if protocol == "secure_sum":
        return secure_sum_variance(shares, n_repeats)
    if protocol == "indicator":
        return indicator_variance(shares, domain, n_repeats, shortcut)
    raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")


def exceeds_paper_bound(partition, domain: Domain, attrs: Sequence[str]) -> bool:
    """Whether protocol A's exact variance exceeds Theorem 4.1's ``K S² / (2ρ)`` for ``r``.

    See ``doc/deviations.md``, "The paper's variance bound can fail".

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.dmm import exceeds_paper_bound
    >>> dom = Domain(["a", "b", "c"], [2, 3, 2])
    >>> part = HybridPartition([[0, 1, 2], [3, 4, 5]], [["a"], ["b", "c"]])   # S = 2 parties per slice
    >>> exceeds_paper_bound(part, dom, ["a", "b"]), exceeds_paper_bound(part, dom, ["a", "b", "c"])   # |r| > S
    (False, True)
    """
    exact = secure_sum_variance(split_budget(partition, domain, attrs, 1.0))
    return exact > paper_bound_variance(partition.n_slices, partition.n_vertical, 1.0) * (1 + 1e-12)
