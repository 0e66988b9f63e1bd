"""The data holders: what a party computes from its own records.

A :class:`Party` owns the integer codes of its slice's records restricted to
its columns.  Its only outputs are noisy: a noisy one-hot matrix or a noisy
marginal (protocol B), or its input to the simulated secure-aggregation
primitive of protocol A, which only the curator's
:class:`~skdpsynth.federated.curator.Federation` consumes and which leaves it
as a noisy slice count.

How protocol A's slice count is computed is the federation's
``secure_computation`` setting (:data:`SECURE_COMPUTATIONS`; see
:mod:`~skdpsynth.federated.curator`).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..domain import Domain
from ..privacy.samplers import discrete_gaussian
from ..utils import moved_names
from .messages import NoisyIndicators, NoisyLocalMarginal

__all__ = ["Party", "SECURE_COMPUTATIONS"]

# Names moved to other modules (doc/changelog.md): importable from here, with a DeprecationWarning, until 0.2.
_MOVED = {"Federation": "skdpsynth.federated.curator", "ReplayFederation": "skdpsynth.federated.curator"}


__getattr__ = moved_names(__name__, _MOVED)


SECURE_COMPUTATIONS = ("simulated", "cryptographic")
"""The values of :class:`~skdpsynth.federated.curator.Federation`'s ``secure_computation``."""


def _crypto_modules():
    """The optional cryptographic modules (lazy: they need the ``cryptography`` package)."""
    try:
        from . import secure_aggregation, secure_product
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "secure_computation='cryptographic' needs the optional dependency 'cryptography'; "
            "install it with: pip install 'skdpsynth[distributed]'"
        ) from exc
    return secure_aggregation, secure_product


def _to_product_layout(vector: np.ndarray, domain: Domain, r: tuple, first: tuple, second: tuple) -> np.ndarray:
    """A vector over ``r``'s cells (canonical order) as a ``d1 × d2`` matrix over ``(first, second)``.

    The inverse of :func:`_from_product_layout`.
    """
    order = first + second
    arr = np.asarray(vector).reshape(domain.shape_of(r)).transpose([r.index(a) for a in order])
    return arr.reshape(domain.size(first), domain.size(second))


def _from_product_layout(matrix: np.ndarray, domain: Domain, r: tuple, first: tuple, second: tuple) -> np.ndarray:
    """A ``d1 × d2`` matrix over ``(first, second)`` (row-major flat indices) as a vector over ``r``'s cells."""
    order = first + second
    arr = np.asarray(matrix).reshape(tuple(domain.shape_of(first)) + tuple(domain.shape_of(second)))
    return arr.transpose([order.index(a) for a in r]).ravel()


def _to_chain_layout(vector: np.ndarray, domain: Domain, r: tuple, groups: Sequence[tuple]) -> np.ndarray:
    """A vector over ``r``'s cells as the ``d_1 × D`` matrix of a k-party product (:mod:`~.secure_chain`).

    ``groups`` are the chain's parties' attributes of ``r`` in chain order;
    rows index the first group's cells, columns the joint cell of the others
    (row-major in chain order, each group's attributes in ``r``'s order).
    The inverse of :func:`_from_chain_layout`.
    """
    order = tuple(a for g in groups for a in g)
    arr = np.asarray(vector).reshape(domain.shape_of(r)).transpose([r.index(a) for a in order])
    return arr.reshape(domain.size(groups[0]), -1)


def _from_chain_layout(matrix: np.ndarray, domain: Domain, r: tuple, groups: Sequence[tuple]) -> np.ndarray:
    """The ``d_1 × D`` matrix of a k-party product as a vector over ``r``'s cells (canonical order)."""
    order = tuple(a for g in groups for a in g)
    arr = np.asarray(matrix).reshape(tuple(domain[a] for a in order))
    return arr.transpose([order.index(a) for a in r]).ravel()


def _noise_share(variance: float, size: int, rng) -> np.ndarray:
    """One party's protocol-A noise share: ``size`` exact discrete Gaussian draws N_Z(0, σ²), σ² = ``variance``.

    Protocol A's noise is distributed: every involved party of a slice adds
    its own share to the slice's count (Kairouz, Liu & Steinke 2021, the
    distributed discrete Gaussian).  The accounting rests on each share
    alone: the party's count vector has L2 sensitivity 1, so count plus its
    share is ``1 / (2 variance)``-zCDP (Canonne, Kamath & Steinke 2020), and
    the other parties' independent shares are post-processing of it.  Each
    slice is charged the sum of its parties' shares' costs, the call's ρ'
    (the RandDPGen paper's split, Algorithm 1 line 6 and Section 5.1).  Integer
    shares keep the released counts integers with exactly this distribution
    (no floating-point noise, Mironov 2012) and pass through the secure
    aggregation's fixed-point ring exactly.  The draws come from
    :func:`~skdpsynth.privacy.samplers.discrete_gaussian` (CKS Algorithm 3):
    the OS CSPRNG for a party drawing its own noise
    (:class:`~skdpsynth.privacy.SystemRandomGenerator`), else ``rng``'s
    reproducible stream.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated.parties import _noise_share
    >>> share = _noise_share(4.0, 5, np.random.default_rng(0))
    >>> share.dtype, share.shape
    (dtype('int64'), (5,))
    """
    return discrete_gaussian(variance, size, random_state=rng)


class Party:
    """One data holder: the records of one slice, restricted to its columns.

    Parameters
    ----------
    spec : PartySpec
        Its public description (name, slice, row positions, columns).
    codes : ndarray of shape (n_rows, n_columns)
        Its private data: integer codes of ``spec.columns`` for its rows, in
        the slice's roster order.
    domain : Domain
        The public domain (sizes of its columns).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import HybridPartition, Party
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> spec = HybridPartition.vertical(4, [["a"], ["b"]]).parties()[1]
    >>> party = Party(spec, np.array([[1], [2], [0], [1]]), dom)    # its column "b" for the 4 records
    >>> party
    Party('party0.1', slice=0, columns=['b'], n_rows=4)
    >>> m = party.noisy_local_marginal(("b",), variance=1e-6, rho=5e5, rng=np.random.default_rng(0))  # tiny noise
    >>> np.round(m.values).astype(int).tolist()
    [1, 2, 1]
    """

    def __init__(self, spec, codes: np.ndarray, domain: Domain):
        codes = np.asarray(codes)
        if codes.shape != (len(spec.rows), len(spec.columns)):
            raise ValueError(f"Party {spec.name!r}: its codes are not a table of its {len(spec.rows)} roster rows "
                             f"by its {len(spec.columns)} columns.")  # not their shape: it may be a private count
        self.name = spec.name
        self.slice = spec.slice
        self.columns = tuple(spec.columns)
        self.n_rows = len(spec.rows)  # the public roster size
        self._domain = domain
        self._codes = codes
        self._position = {c: k for k, c in enumerate(self.columns)}
        self._secure = None          # its SecureAggregationParty (cryptographic mode only)
        self._product = None         # its ProductParty of the product in progress
        self._chain = None           # its ChainParty of the k-party product in progress

    def __repr__(self) -> str:
        return f"Party({self.name!r}, slice={self.slice}, columns={list(self.columns)}, n_rows={self.n_rows})"

    def _flat(self, attrs: tuple[str, ...], strides: Sequence[int]) -> np.ndarray:
        """Per record, ``Σ_a code_a · stride_a`` over ``attrs`` (a mixed-radix cell index)."""
        out = np.zeros(self.n_rows, dtype=np.int64)
        for a, stride in zip(attrs, strides):
            out += self._codes[:, self._position[a]].astype(np.int64) * int(stride)
        return out

    # -- the party's three local steps (each returns only noisy values) -------------------------------
    def noisy_indicators(self, attrs: tuple[str, ...], variance: float, rho: float,
                         rng: np.random.Generator) -> NoisyIndicators:
        """Protocol B: the one-hot matrix over ``attrs`` plus ``N(0, variance)`` on every entry."""
        n_cells = self._domain.size(attrs)
        matrix = rng.normal(0.0, np.sqrt(variance), size=(self.n_rows, n_cells))
        matrix[np.arange(self.n_rows), self._flat(attrs, self._domain.strides(attrs))] += 1.0
        return NoisyIndicators(self.slice, self.name, attrs, matrix, variance, rho)

    def noisy_local_marginal(self, attrs: tuple[str, ...], variance: float, rho: float,
                             rng: np.random.Generator) -> NoisyLocalMarginal:
        """Protocol B shortcut: the party's own marginal over ``attrs`` plus ``N(0, variance)`` per cell."""
        n_cells = self._domain.size(attrs)
        counts = np.bincount(self._flat(attrs, self._domain.strides(attrs)), minlength=n_cells).astype(float)
        return NoisyLocalMarginal(self.slice, self.name, attrs, counts + rng.normal(0.0, np.sqrt(variance), n_cells),
                                  variance, rho)

    def secure_sum_input(self, attrs: tuple[str, ...], strides: Sequence[int], n_cells: int, variance: float,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Protocol A: this party's input to the secure-aggregation primitive (never sent to the curator).

        Its part of every record's cell index in the marginal (the primitive
        adds the parties' parts record by record and counts) and its noise
        share (an exact discrete Gaussian of parameter σ² = ``variance`` per
        cell, see :func:`_noise_share`).  A real deployment computes the
        noisy slice count with a secure multi-party inner-product protocol;
        this library simulates that functionality in :class:`Federation`.
        """
        return self._flat(attrs, strides), _noise_share(variance, n_cells, rng)

    # -- protocol A with real cryptography (Federation(secure_computation="cryptographic")) ----------------
    def setup_secure(self, session: bytes, private_key: bytes | None = None) -> bytes:
        """Create this party's X25519 key pair for ``session``; returns the public key (for the curator).

        The private key stays inside the party's
        :class:`~skdpsynth.federated.secure_aggregation.SecureAggregationParty`
        (which refuses to be pickled, so such a party cannot be shipped to a
        process-based joblib backend).
        """
        secure_aggregation, _ = _crypto_modules()
        self._secure = secure_aggregation.SecureAggregationParty(self.name, session, private_key=private_key)
        return self._secure.public_key

    @property
    def public_key(self) -> bytes:
        """The party's secure-aggregation public key (after :meth:`setup_secure`)."""
        if self._secure is None:
            raise RuntimeError(f"Party {self.name!r} has no key pair; call setup_secure first.")
        return self._secure.public_key

    def local_noisy_count(self, attrs: tuple[str, ...], strides: Sequence[int], n_cells: int, variance: float,
                          rng: np.random.Generator) -> np.ndarray:
        """Protocol A, a slice where this party holds all of ``r``: its marginal plus its noise share.

        The same noise draw as :meth:`secure_sum_input`; the result is already
        the DP slice count (no cryptography needed), integer-valued.
        """
        counts = np.bincount(self._flat(attrs, strides), minlength=n_cells)
        return (counts + _noise_share(variance, n_cells, rng)).astype(float)

    def product_masked_input(self, message, attrs: tuple[str, ...], *, ledger=None) -> np.ndarray:
        """Secure product, step 2: take the dealer's seed, return ``V − A`` (or ``V − B``) for the other party.

        ``attrs`` are this party's attributes of ``r``; its one-hot code of a
        record is its flat index over them (row-major over
        ``domain.shape_of(attrs)``).  The returned words are uniform and go to
        the *other party* of the slice, never to the curator (which knows the
        seed's expansion).
        """
        _, secure_product = _crypto_modules()
        codes = self._flat(attrs, self._domain.strides(attrs))
        self._product = secure_product.ProductParty(message, codes, ledger=ledger)
        return self._product.masked_input()

    def product_share(self, other_masked: np.ndarray, r: tuple[str, ...], first: tuple[str, ...],
                      second: tuple[str, ...], variance: float, rng: np.random.Generator, public_keys: dict,
                      round_id: int, participants: Sequence[str]):
        """Secure product, steps 3–4: this party's share plus its noise, masked for secure aggregation.

        The noise share is :func:`_noise_share` per cell of ``r`` (the same draw
        as :meth:`secure_sum_input`; integers, which the fixed-point encoding
        represents exactly), laid out as the ``d1 × d2`` product
        matrix over ``(first, second)``, the two parties' attributes.
        Returns the :class:`~skdpsynth.federated.secure_aggregation.MaskedInput`
        sent to the curator (uniform on its own).
        """
        if self._product is None:
            raise RuntimeError(f"Party {self.name!r} has no product in progress.")
        product, self._product = self._product, None
        noise = _noise_share(variance, self._domain.size(r), rng)
        share = product.share(other_masked, _to_product_layout(noise, self._domain, r, first, second))
        return self._secure.mask_encoded(share, public_keys, round_id, participants=list(participants),
                                         scale_bits=product.scale_bits)

    def chain_open(self, message, attrs: tuple[str, ...], explicit=None, *, ledger=None) -> dict:
        """Secure k-party product, round 0: take the dealer's seed (and explicit share), return what it sends.

        ``attrs`` are this party's attributes of ``r`` (its code of a record is
        its flat index over them).  Returns ``{recipient position: matrix}``
        (:meth:`~skdpsynth.federated.secure_chain.ChainParty.open`): uniform
        words for the other parties, never for the curator.
        """
        from .secure_chain import ChainParty

        codes = self._flat(attrs, self._domain.strides(attrs))
        self._chain = ChainParty(message, codes, explicit=explicit, ledger=ledger)
        return self._chain.open()

    @property
    def chain_releases(self) -> bool:
        """Whether the next round of the open k-party product releases this party's share."""
        return self._chain is not None and self._chain.releases_share

    def chain_step(self, received: dict, r: tuple[str, ...], groups: Sequence[tuple], variance: float | None,
                   rng, public_keys: dict, round_id: int, participants: Sequence[str]) -> tuple:
        """Secure k-party product, a later round: ``(outgoing matrices, MaskedInput or None)``.

        In the round that releases its share, the party adds its noise share
        (:func:`_noise_share` per cell of ``r``, the draw of
        :meth:`secure_sum_input`, laid out over the chain's ``groups``) and
        masks the result for secure aggregation among the chain's parties.
        """
        if self._chain is None:
            raise RuntimeError(f"Party {self.name!r} has no k-party product in progress.")
        noise = None
        releases = self.chain_releases
        if releases:
            noise = _to_chain_layout(_noise_share(variance, self._domain.size(r), rng), self._domain, r, groups)
        chain = self._chain
        outgoing, share = chain.step(received, noise)
        if chain.next_round >= chain.k:
            self._chain = None
        masked = None if share is None else self._secure.mask_encoded(share, public_keys, round_id,
                                                                        participants=list(participants),
                                                                        scale_bits=chain.scale_bits)
        return outgoing, masked
