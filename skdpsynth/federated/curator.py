"""The curator's side of the parties: the federation that answers its measurement requests.

The :class:`Federation` is the curator's one handle on the parties
(:class:`~skdpsynth.federated.parties.Party`): its :meth:`~Federation.measure`
runs the parties' local work through joblib (``n_jobs``; any joblib backend
can execute it, since every party's noise comes from a seed fixed by the
call, not from shared state), or through a runtime backend
(:mod:`~skdpsynth.federated.runtime`) where the parties run elsewhere, and
returns a :class:`~skdpsynth.federated.messages.MeasurementReply` of noisy
arrays.

How protocol A's slice count is computed is the federation's
``secure_computation`` setting: ``"simulated"`` (the default) collects every
involved party's per-record index part in this process and adds them, a
stand-in for the secure primitive; ``"cryptographic"`` runs real
cryptography (:mod:`~skdpsynth.federated.secure_product` and
:mod:`~skdpsynth.federated.secure_aggregation`, optional extra
``skdpsynth[distributed]``), so the curator never receives per-record data.

Every reply is also kept in :attr:`Federation.replies`, and
:class:`ReplayFederation` answers the same requests from such a log without
any data: the curator's algorithm runs unchanged against it, which is how the
tests show that the curator reads nothing but the messages.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from ..domain import Domain
from .dmm import PROTOCOLS, split_budget
from .messages import MeasurementReply, SliceCount
from .parties import SECURE_COMPUTATIONS, Party, _crypto_modules, _from_chain_layout, _from_product_layout
from .party_job import PartyJob
from .partition import HybridPartition
from .runtime import (CURATOR, DEALER_PURPOSE, DaskBackend, LocalBackend, PartyHost, PartyServer, ProcessBackend,
                      _Backend, _unhex)
from . import wire as _wire
from .wire import MessageError, from_bytes, pack, unpack

__all__ = ["Federation", "ReplayFederation", "FederatedData", "VerticalFederatedData"]


def _local_step(party: Party, kind: str, args: tuple, seed: Sequence[int]):
    """One party's local work for one request (module level, so any joblib backend can run it)."""
    rng = np.random.default_rng(np.random.SeedSequence(list(seed)))
    return getattr(party, kind)(*args, rng)


class Federation:
    """The parties of a hybrid partition, answering distributed marginal measurements.

    Parameters
    ----------
    parties : list of Party
    partition : HybridPartition
        The public partition the parties were built from.
    domain : Domain
    n_jobs : int or None, default=None
        joblib ``n_jobs`` for the parties' local work (``None``: sequential,
        or the active ``joblib.parallel_backend``).
    seed : int, default=0
        Root of the parties' noise seeds: call ``k``'s party ``p`` draws from
        ``SeedSequence([seed, k, p])``, so results do not depend on the backend.
    secure_computation : {"simulated", "cryptographic"}, default="simulated"
        How protocol A (``"secure_sum"``) computes each slice's noisy count
        ``c_i + Σ_j z_ij``; protocol B is the same in both modes.

        * ``"simulated"``: every involved party hands its per-record part of
          the cell index and its noise share to this object, which adds them
          and counts.  The *curator process sees per-record data*: a stand-in
          for the secure primitive, only for experiments.
        * ``"cryptographic"``: a slice where one party holds all of ``r``
          sends its own noisy marginal (already DP).  A slice where ``r`` is
          split between two parties runs the secure two-party product
          (:mod:`~skdpsynth.federated.secure_product`) with the curator as
          trusted dealer: the curator sends each party a triple seed, the
          two parties exchange uniformly masked one-hot matrices *with each
          other*, and each sends the curator its share plus its noise,
          masked by pairwise secure aggregation
          (:mod:`~skdpsynth.federated.secure_aggregation`).  The curator
          sees the public keys, the masked shares (uniform one by one) and
          their sum, i.e. only the noisy slice count (exactly: counts and
          noise shares are integers, which the fixed-point encoding holds
          without rounding).  Three or
          more parties sharing ``r`` in one slice run the secure k-party
          product (:mod:`~skdpsynth.federated.secure_chain`, a chain of
          dealer-assisted two-party products, ``k`` rounds) the same way.
          Trust model: semi-honest parties; a curator that may deviate in
          its requests (each party derives every layout from its own copy
          of the public job, :mod:`~skdpsynth.federated.party_job`) but does
          not collude with any party (it knows the triples, so with one party
          it would learn the other's data); public keys are not
          authenticated and party dropouts abort the call.  Every party gets
          one X25519 key pair per federation (session id from
          :func:`os.urandom`), each ``measure`` call is a fresh aggregation
          round, and every product a fresh triple.  The noise shares are the
          very draws of the simulated mode (same seeds), so both modes
          release the same counts; each party draws its share itself, but the
          seeds derive from the public ``seed`` (reproducibility), so a real
          deployment must give every party a private seed instead.  The parties' work runs sequentially in this
          process (``n_jobs`` is not used for it: key holders cannot be
          pickled), all roles simulated in one process but with real
          cryptography.  Needs ``cryptography`` (``skdpsynth[distributed]``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import Federation, HybridPartition, combine
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> codes = np.array([[0, 1], [1, 2], [1, 0], [0, 1]])
    >>> part = HybridPartition.vertical(4, [["a"], ["b"]])
    >>> fed = Federation.from_codes(codes, dom, part, seed=0)
    >>> reply = fed.measure(("a", "b"), rho=1e6)          # tiny noise
    >>> values, variance = combine(reply, dom)
    >>> np.round(values).astype(int).tolist(), reply.party_rhos()
    ([0, 2, 0, 1, 0, 1], {'party0.0': 500000.0, 'party0.1': 500000.0})

    The same measurement with real cryptography (the curator sees no per-record data):

    >>> fed = Federation.from_codes(codes, dom, part, seed=0, secure_computation="cryptographic")
    >>> values, _ = combine(fed.measure(("a", "b"), rho=1e6), dom)
    >>> np.round(values).astype(int).tolist()
    [0, 2, 0, 1, 0, 1]
    """

    def __init__(self, parties: list[Party] | None, partition, domain: Domain, *, n_jobs=None, seed: int = 0,
                 secure_computation: str = "simulated", backend=None, dealer_secret: bytes | None = None,
                 session: bytes | None = None, curator_private_key: bytes | None = None):
        if secure_computation not in SECURE_COMPUTATIONS:
            raise ValueError(f"secure_computation must be one of {SECURE_COMPUTATIONS}, got {secure_computation!r}.")
        if parties is None and backend is None:
            raise ValueError("A Federation needs its parties (in this process) or a backend that hosts them.")
        if secure_computation == "simulated" and parties is None:
            raise ValueError("secure_computation='simulated' adds the parties' per-record data in this process; "
                             "with parties on a backend use secure_computation='cryptographic'.")
        self.parties = None if parties is None else list(parties)
        self.partition = partition
        self.domain = domain
        self.n_jobs = n_jobs
        self.seed = int(seed)
        self.secure_computation = secure_computation
        self.replies: list[MeasurementReply] = []
        self._specs = {spec.name: spec for spec in partition.parties()}
        self._number = {name: k for k, name in enumerate(self._specs)}
        self._by_name = {} if parties is None else {p.name: p for p in self.parties}
        self._public_keys: dict = {}
        self._round = 0
        self._dealer_secret = dealer_secret
        self._session = session if session is not None else b"skdpsynth/federation/" + os.urandom(16)
        self._curator_private_key = curator_private_key
        self.noise_modes: dict = {}
        if secure_computation == "cryptographic" and backend is None:
            backend = LocalBackend(servers={
                p.name: PartyServer.from_party(p, job=PartyJob.from_partition(domain, partition, p.name))
                for p in self.parties})
        self.backend = backend
        if backend is not None:
            self._setup()

    @classmethod
    def from_codes(cls, codes: np.ndarray, domain: Domain, partition, *, n_jobs=None, seed: int = 0,
                   secure_computation: str = "simulated") -> "Federation":
        """Split a table of integer codes (columns in domain order) among the partition's parties."""
        parties = []
        for spec in partition.parties():
            cols = [domain.index(c) for c in spec.columns]
            parties.append(Party(spec, codes[np.ix_(np.asarray(spec.rows), cols)], domain))
        return cls(parties, partition, domain, n_jobs=n_jobs, seed=seed, secure_computation=secure_computation)

    @classmethod
    def connect(cls, backend, partition, domain: Domain, *, seed: int, secure_computation: str = "cryptographic",
                dealer_secret: bytes | None = None, session: bytes | None = None,
                curator_private_key: bytes | None = None) -> "Federation":
        """A federation whose parties run on ``backend`` (:mod:`~skdpsynth.federated.runtime`).

        Starts the backend and runs the setup round (every party reads its
        data where it runs, checks it against the public job and returns
        its public key).  Close the federation (or use it as a context
        manager) to release the parties.

        Parameters
        ----------
        backend : LocalBackend, ProcessBackend or DaskBackend
        partition : HybridPartition
        domain : Domain
        seed : int
            Sent to the parties: only those hosted with ``noise="curator"``
            use it (see :class:`~skdpsynth.federated.runtime.PartyHost`).
        secure_computation : "cryptographic"
            The only mode in which no per-record data reach the curator.
        dealer_secret : bytes, optional
            Derive the secure products' triple seeds from this curator-private
            secret (so that a curator replaying a fit from files sends the
            same seeds); by default they are fresh OS entropy.
        session, curator_private_key : bytes, optional
            The session identifier and the curator's X25519 key, kept by a
            curator that replays a fit (by default fresh from the OS).
        """
        backend.start()
        try:
            return cls(None, partition, domain, seed=seed, secure_computation=secure_computation, backend=backend,
                       dealer_secret=dealer_secret, session=session, curator_private_key=curator_private_key)
        except BaseException:
            backend.close()
            raise

    def close(self) -> None:
        """Release the parties' backend (if any)."""
        if self.backend is not None:
            self.backend.close()

    def __enter__(self) -> "Federation":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def _request(arrays: dict | None = None, **fields) -> bytes:
        """A request packet to a party (sealed data ride as uint8 arrays)."""

        arrays = {k: np.frombuffer(bytes(v), dtype=np.uint8) for k, v in (arrays or {}).items()}
        return pack("Request", sender=CURATOR, fields=fields, arrays=arrays)

    def _setup(self) -> None:
        """The setup round: every party gets the public job and answers with its public key."""

        secure_aggregation, _ = _crypto_modules()
        self._curator = secure_aggregation.SecureAggregationParty(CURATOR, self._session,
                                                                  private_key=self._curator_private_key)
        requests = {
            name: self._request(op="setup", session=self._session.hex(), curator_key=self._curator.public_key.hex(),
                                number=self._number[name], seed=self.seed,
                                **PartyJob.from_partition(self.domain, self.partition, name).setup_fields())
            for name in self._specs}
        for name, data in self.backend.call(requests).items():
            packet = unpack(data, kinds=("PublicKey",), sender=name)
            try:
                key = bytes.fromhex(packet.fields["key"])
            except (KeyError, TypeError, ValueError):
                raise MessageError(name, "its public key is not a hex string.") from None
            if len(key) != 32 or packet.fields.get("noise") not in ("private", "curator"):
                raise MessageError(name, "its setup reply is malformed (a 32-byte key and its noise mode).")
            self._public_keys[name] = key
            self.noise_modes[name] = packet.fields["noise"]

    def measure(self, attrs: Sequence[str], rho: float, *, protocol: str = "secure_sum", n_repeats: int = 1,
                shortcut: bool = True) -> MeasurementReply:
        """``DMM(r, ρ')``: every slice's involved parties answer with noisy values (paper §4.1, Algorithm 1).

        Parameters
        ----------
        attrs : sequence of str
            The marginal ``r``.
        rho : float
            The call's zCDP budget ``ρ'``; party ``(i, j)`` spends
            ``n_repeats · |A_ij| / |r| · ρ'``.
        protocol : {"secure_sum", "indicator"}
        n_repeats : int, default=1
            The paper's IDMM ``e``: noise variance divided by ``e`` at ``e`` times the cost.
        shortcut : bool, default=True
            Protocol B: a party holding all of ``r`` in its slice releases its noisy marginal.

        Returns
        -------
        MeasurementReply
        """
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
        r = self.domain.canonical(attrs)
        strides = dict(zip(r, self.domain.strides(r)))
        n_cells = self.domain.size(r)
        call = len(self.replies)
        if self.secure_computation == "cryptographic":
            reply = MeasurementReply(r, float(rho), int(n_repeats), protocol,
                                     self._backend_measure(r, rho, protocol, n_repeats, shortcut, call))
            self.replies.append(reply)
            return reply
        jobs, plan = [], []
        for shares in split_budget(self.partition, self.domain, r, rho):
            for s in shares:
                variance = 1.0 / (2.0 * n_repeats * s.rho)
                if protocol == "secure_sum":
                    kind, args = "secure_sum_input", (s.attrs, [strides[a] for a in s.attrs], n_cells, variance)
                elif shortcut and len(shares) == 1:
                    kind, args = "noisy_local_marginal", (s.attrs, variance, n_repeats * s.rho)
                else:
                    kind, args = "noisy_indicators", (s.attrs, variance, n_repeats * s.rho)
                jobs.append(delayed(_local_step)(self._by_name[s.party], kind, args,
                                                 (self.seed, call, self._number[s.party])))
                plan.append((s, variance))
        outputs = Parallel(n_jobs=self.n_jobs)(jobs)
        if protocol == "secure_sum":
            parts = self._secure_aggregate(plan, outputs, r, n_cells, n_repeats)
        else:
            parts = tuple(outputs)
        reply = MeasurementReply(r, float(rho), int(n_repeats), protocol, parts)
        self.replies.append(reply)
        return reply

    def _backend_measure(self, r: tuple, rho: float, protocol: str, n_repeats: int, shortcut: bool,
                         call: int) -> tuple:
        """One DMM call through the backend: requests out, validated messages in (the cryptographic mode).

        Protocol A: a slice where one party holds all of ``r`` sends its
        noisy count; a slice where two parties share ``r`` runs the secure
        product (curator as dealer, the parties' masked inputs sealed for
        each other and relayed) and pairwise-masked aggregation of their
        shares; three or more parties run the k-party product
        (:class:`_ChainRun`).  Protocol B: every party sends its noisy matrix or marginal.
        """

        _, secure_product = _crypto_modules()
        slices = [shares for shares in split_budget(self.partition, self.domain, r, rho) if shares]
        requests, expected, products, chains = {}, {}, [], []
        for shares in slices:
            variances = [1.0 / (2.0 * n_repeats * s.rho) for s in shares]
            if protocol == "secure_sum" and len(shares) == 2:
                products.append(self._product_open(r, shares, variances, {s.party: n_repeats * s.rho for s in shares},
                                                    call, requests, secure_product))
                continue
            if protocol == "secure_sum" and len(shares) > 2:
                chains.append(_ChainRun(self, r, shares, variances, n_repeats, call, requests))
                continue
            for s, v in zip(shares, variances):
                if protocol == "secure_sum":
                    kind, message_kind = "count", "SliceCount"
                elif shortcut and len(shares) == 1:
                    kind, message_kind = "local_marginal", "NoisyLocalMarginal"
                else:
                    kind, message_kind = "indicators", "NoisyIndicators"
                requests[s.party] = self._request(op="measure", kind=kind, attrs=list(s.attrs), r=list(r),
                                                  variance=v, rho=n_repeats * s.rho, call=call)
                expected[s.party] = ({"sender": s.party, "kind": message_kind, "attrs": r if kind == "count"
                                      else s.attrs, "rho": n_repeats * s.rho}, s)
        replies = self.backend.call(requests) if requests else {}
        parts = []
        for name, (exp, s) in expected.items():
            message = from_bytes(replies[name], expected=exp, domain=self.domain).message
            self._check_party_message(name, s, message)
            parts.append(message)
        if products or chains:
            parts += self._secure_rounds(products, chains, r, call, replies)
        return tuple(sorted(parts, key=lambda m: (m.slice, self._number.get(getattr(m, "party", ""), -1))))

    def _check_party_message(self, name: str, share, message) -> None:

        if message.slice != share.slice:
            raise MessageError(name, f"it answers for slice {message.slice}, the party is in slice {share.slice}.")
        matrix = getattr(message, "matrix", None)
        if matrix is not None and matrix.shape[0] != self._specs[name].n_rows:
            raise MessageError(name, f"its matrix has {matrix.shape[0]} rows, its roster {self._specs[name].n_rows}.")

    def _dealer_seeds(self, call: int, slice_: int):
        if self._dealer_secret is None:
            return None

        return tuple(hmac.new(self._dealer_secret, f"{role}|{call}|{slice_}".encode(), hashlib.sha256).digest()
                     for role in ("A", "B"))

    def _product_open(self, r: tuple, shares, variances, rhos: dict, call: int, requests: dict,
                      secure_product) -> tuple:
        """Secure product, step 1: the dealer's sealed triple seed to each of the two parties."""
        from .secure_aggregation import seal

        s1, s2 = shares
        n = self._specs[s1.party].n_rows
        if self._specs[s2.party].n_rows != n:
            raise ValueError(f"Parties {s1.party!r} and {s2.party!r} of slice {s1.slice} have different rosters.")
        dealer = secure_product.ProductDealer(n, self.domain.size(s1.attrs), self.domain.size(s2.attrs),
                                              scale_bits=secure_product.product_scale_bits(n, variances),
                                              seeds=self._dealer_seeds(call, s1.slice))
        for s, peer, triple in zip((s1, s2), (s2, s1), dealer.seeds()):
            key = self._curator.pairwise_key(s.party, self._public_keys[s.party], purpose=DEALER_PURPOSE)
            nonce, box = seal(key, triple.seed, f"dealer|{call}|{s.party}".encode())
            requests[s.party] = self._request(
                {"sealed_seed": box}, op="product_open", call=call, r=list(r), attrs=list(s.attrs), peer=peer.party,
                peer_key=self._public_keys[peer.party].hex(), nonce=nonce.hex(),
                triple={"role": triple.role, "n": triple.n, "d1": triple.d1, "d2": triple.d2,
                        "scale_bits": triple.scale_bits})
        return shares, variances, dealer, rhos

    def _secure_rounds(self, products, chains, r: tuple, call: int, opened: dict) -> list:
        """The rounds after the opening: two-party products finish in one, k-party products in ``k − 1``."""
        round_id, self._round = self._round, self._round + 1
        requests, plan = self._product_share_requests(products, r, call, opened, round_id)
        for chain in chains:
            chain.receive(0, opened)
            requests.update(chain.requests(1, round_id))
        replies = self.backend.call(requests)
        parts = self._product_collect(plan, r, replies)
        t = 1
        while not all(chain.done for chain in chains):
            for chain in chains:
                chain.receive(t, replies)
            requests = {}
            for chain in chains:
                requests.update(chain.requests(t + 1, round_id))
            replies = self.backend.call(requests) if requests else {}
            t += 1
        return parts + [chain.finish() for chain in chains]

    def _product_share_requests(self, products, r: tuple, call: int, opened: dict, round_id: int) -> tuple:
        """Secure product, steps 2-3: relay the sealed inputs and ask for the masked shares."""
        requests, plan = {}, []
        for (s1, s2), (v1, v2), dealer, rhos in products:
            names = [s1.party, s2.party]
            keys = {n: self._public_keys[n].hex() for n in names}
            sealed = {}
            n, f = self._specs[s1.party].n_rows, dealer.scale_bits
            for s, peer in ((s1, s2), (s2, s1)):
                size = _box_bytes(n * self.domain.size(s.attrs), f)     # from the public layout only
                packet = unpack(opened[s.party], kinds=("Sealed",), sender=s.party,
                                max_bytes=max(_wire.MAX_BYTES, size + _wire.PACKET_ALLOWANCE))
                if packet.fields.get("recipient") != peer.party or set(packet.arrays) != {"ciphertext"} or \
                        packet.arrays["ciphertext"].size != size:
                    raise MessageError(s.party, f"its sealed product input is not addressed to {peer.party!r} or "
                                                "does not have the product's size.")
                sealed[s.party] = packet
            for s, peer, v in ((s1, s2, v1), (s2, s1, v2)):
                packet = sealed[peer.party]
                requests[s.party] = self._request(
                    {"ciphertext": packet.arrays["ciphertext"].tobytes()}, op="product_share", call=call, r=list(r), first=list(s1.attrs), second=list(s2.attrs),
                    variance=v, round_id=round_id, participants=names, public_keys=keys, peer=peer.party,
                    nonce=packet.fields.get("nonce"), shape=packet.fields.get("shape"))
            plan.append(((s1, s2), (v1, v2), dealer, rhos, names))
        return requests, plan

    def _product_collect(self, plan, r: tuple, replies: dict) -> list:
        """Secure product, step 4: collect the masked shares, add them, decode."""
        from .secure_aggregation import aggregate_encoded

        parts = []
        for (s1, s2), (v1, v2), dealer, rhos, names in plan:
            masked = {}
            d = (self.domain.size(s1.attrs), self.domain.size(s2.attrs))
            for name in names:
                packet = unpack(replies[name], kinds=("MaskedInput",), sender=name)
                masked[name] = _masked_input(name, packet.fields, packet.arrays.get("values"), d)
            matrix = dealer.finish(aggregate_encoded(masked, expected=names))
            noisy = _from_product_layout(matrix, self.domain, r, s1.attrs, s2.attrs)
            parts.append(SliceCount(s1.slice, r, noisy, float(v1 + v2), rhos))
        return parts

    def _chain_seeds(self, call: int, slice_: int, k: int):
        if self._dealer_secret is None:
            return None
        return tuple(hmac.new(self._dealer_secret, f"chain{p}|{call}|{slice_}".encode(), hashlib.sha256).digest()
                     for p in range(1, k + 1))

    @staticmethod
    def _secure_aggregate(plan, outputs, r, n_cells: int, n_repeats: int) -> tuple:
        """The simulated secure-aggregation primitive: per slice, ``bincount(Σ_j parts) + Σ_j noise``."""
        parts = []
        slices = sorted({s.slice for s, _ in plan})
        for i in slices:
            members = [(s, v, out) for (s, v), out in zip(plan, outputs) if s.slice == i]
            index = sum(out[0] for _, _, out in members)
            noise = sum(out[1] for _, _, out in members)  # integer shares: the sum is exact
            noisy = (np.bincount(index, minlength=n_cells) + noise).astype(float)
            parts.append(SliceCount(i, r, noisy, float(sum(v for _, v, _ in members)),
                                    {s.party: n_repeats * s.rho for s, _, _ in members}))
        return tuple(parts)


def _box_bytes(words: int, scale_bits: int) -> int:
    """The size of a sealed matrix of ``words`` relay words at ``scale_bits`` (what the public layout implies)."""
    from .secure_aggregation import SEAL_OVERHEAD
    from .secure_product import relay_word_bytes

    return words * relay_word_bytes(scale_bits) + SEAL_OVERHEAD


def _masked_input(name: str, fields: dict, values, shape: tuple):
    """A party's masked secure-aggregation share from a reply packet (checked: uint64 of ``shape``)."""
    from .secure_aggregation import MaskedInput

    if values is None or values.dtype != np.uint64 or values.shape != shape:
        raise MessageError(name, f"its masked share must be a uint64 array of shape {shape}.")
    try:
        return MaskedInput(party=name, round_id=int(fields["round_id"]), participants=tuple(fields["participants"]),
                           transcript=_unhex(name, fields["transcript"], "transcript"),
                           scale_bits=int(fields["scale_bits"]), values=values)
    except (KeyError, TypeError, ValueError):
        raise MessageError(name, "its masked share's fields are malformed.") from None


class _ChainRun:
    """The curator's side of one k-party secure product (:mod:`~skdpsynth.federated.secure_chain`).

    Dealer (sealed master seeds, sealed explicit triple shares), relay (every
    party-to-party matrix sealed under the pair's key, delivered to its
    recipient in the recipient's next active round) and, at the end, the
    pairwise-masked aggregation of the ``k`` shares, decoded to the slice's
    noisy count.  The chain order and every layout come from public data
    (:meth:`PartyJob.chain_layout <skdpsynth.federated.party_job.PartyJob.chain_layout>`
    on each party's side, the same rule here).
    """

    def __init__(self, fed: "Federation", r: tuple, shares, variances, n_repeats: int, call: int, requests: dict):
        from .party_job import chain_order
        from .secure_aggregation import seal
        from .secure_chain import ChainDealer
        from .secure_product import pack_words, product_scale_bits

        self.fed, self.r, self.call, self.slice = fed, r, call, shares[0].slice
        self.variance = float(sum(variances))       # the simulated mode's sum, in the same order
        self.rhos = {s.party: n_repeats * s.rho for s in shares}
        ordered = sorted(zip(shares, variances), key=lambda sv: fed._number[sv[0].party])
        sizes = [fed.domain.size(s.attrs) for s, _ in ordered]
        ordered = [ordered[i] for i in chain_order(sizes)]
        self.names = [s.party for s, _ in ordered]
        self.groups = [tuple(s.attrs) for s, _ in ordered]
        self.variances = {s.party: v for s, v in ordered}
        n = fed._specs[self.names[0]].n_rows
        if any(fed._specs[name].n_rows != n for name in self.names):
            raise ValueError(f"The parties {self.names} of slice {self.slice} have different rosters.")
        self.k = len(self.names)
        dims = [fed.domain.size(g) for g in self.groups]
        self.n, self.dims = n, dims
        f = product_scale_bits(n, variances, n_terms=self.k + 1)     # public n and variances: the two-party rule
        self.dealer = ChainDealer(n, dims, scale_bits=f, seeds=fed._chain_seeds(call, self.slice, self.k))
        self.mailbox = {name: [] for name in self.names}
        self.masked: dict = {}
        self.done = False
        chain = {"parties": self.names, "n": n, "dims": dims, "scale_bits": self.dealer.scale_bits}
        for message, name, attrs in zip(self.dealer.seeds(), self.names, self.groups):
            key = fed._curator.pairwise_key(name, fed._public_keys[name], purpose=DEALER_PURPOSE)
            nonce, box = seal(key, message.seed, f"chain-dealer|{call}|{name}".encode())
            sealed, extra = {"sealed_seed": box}, {}
            if message.position >= 3:
                share_nonce, sealed["sealed_share"] = seal(key, pack_words(self.dealer.explicit_share(message.position),
                                                                           f), f"chain-share|{call}|{name}".encode())
                extra["share_nonce"] = share_nonce.hex()
            requests[name] = fed._request(
                sealed, op="chain_open", call=call, r=list(r), attrs=list(attrs), chain=chain, nonce=nonce.hex(),
                peer_keys={p: fed._public_keys[p].hex() for p in self.names if p != name}, **extra)

    def receive(self, t: int, replies: dict) -> None:
        """Read round ``t``'s replies: sealed matrices into the recipients' mailboxes, masked shares kept."""
        from .secure_chain import chain_active, chain_matrix_width, chain_sends

        if self.done:
            return
        f = self.dealer.scale_bits
        for p, name in enumerate(self.names, start=1):
            if not chain_active(self.k, p, t):
                continue
            # Each box's size from the public layout: roster size x the matrix's width x word bytes.
            sizes = {self.names[q - 1]: _box_bytes(self.n * chain_matrix_width(self.dims, p, q), f)
                     for q in chain_sends(self.k, p, t)}
            packet = unpack(replies[name], kinds=("ChainBoxes",), sender=name,
                            max_bytes=max(_wire.MAX_BYTES, sum(sizes.values()) + _wire.PACKET_ALLOWANCE))
            boxes = packet.fields.get("boxes")
            want = [self.names[q - 1] for q in chain_sends(self.k, p, t)]
            if not isinstance(boxes, list) or sorted(b.get("to") for b in boxes if isinstance(b, dict)) != \
                    sorted(want) or set(packet.arrays) - {"values"} != {f"box{i}" for i in range(len(boxes))} or \
                    any(packet.arrays[f"box{i}"].size != sizes[b["to"]] for i, b in enumerate(boxes)):
                raise MessageError(name, f"its k-party product matrices are not addressed to {want} or do not have "
                                         "their layout's sizes.")
            for i, box in enumerate(boxes):
                self.mailbox[box["to"]].append({"from": name, "nonce": box.get("nonce"),
                                                "ciphertext": packet.arrays[f"box{i}"].tobytes()})
            if "share" in packet.fields:
                shape = (self.fed.domain.size(self.groups[0]), self.fed.domain.size(self.r) //
                         self.fed.domain.size(self.groups[0]))
                self.masked[name] = _masked_input(name, packet.fields["share"], packet.arrays.get("values"), shape)
        self.done = t == self.k - 1

    def requests(self, t: int, round_id: int) -> dict:
        """Round ``t``'s requests: every active party gets the matrices waiting for it."""
        from .secure_chain import chain_active

        if self.done or t >= self.k:
            return {}
        keys = {name: self.fed._public_keys[name].hex() for name in self.names}
        out = {}
        for p, name in enumerate(self.names, start=1):
            if not chain_active(self.k, p, t):
                continue
            boxes, self.mailbox[name] = self.mailbox[name], []
            out[name] = self.fed._request(
                {f"box{i}": b["ciphertext"] for i, b in enumerate(boxes)}, op="chain_step", call=self.call,
                r=list(self.r), round=t, variance=self.variances[name], round_id=round_id, participants=self.names,
                public_keys=keys, boxes=[{"from": b["from"], "nonce": b["nonce"]} for b in boxes])
        return out

    def finish(self) -> SliceCount:
        """Add the ``k`` masked shares, let the dealer add ``Z`` and decode: the slice's noisy count."""
        from .secure_aggregation import aggregate_encoded

        matrix = self.dealer.finish(aggregate_encoded(self.masked, expected=self.names))
        noisy = _from_chain_layout(matrix, self.fed.domain, self.r, self.groups)
        return SliceCount(self.slice, self.r, noisy, self.variance, self.rhos)


class ReplayFederation:
    """Answers measurement requests from a log of replies, holding no data at all.

    Parameters
    ----------
    replies : sequence of MeasurementReply
        E.g. :attr:`Federation.replies` of an earlier run.

    Raises
    ------
    LookupError
        From :meth:`measure`, if a request differs from the logged one (or
        the log is exhausted).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import Federation, HybridPartition, ReplayFederation
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> codes = np.array([[0, 1], [1, 2], [1, 0], [0, 1]])
    >>> fed = Federation.from_codes(codes, dom, HybridPartition.vertical(4, [["a"], ["b"]]), seed=0)
    >>> first, second = fed.measure(("a", "b"), rho=1.0), fed.measure(("a",), rho=0.5)
    >>> replay = ReplayFederation(fed.replies)                 # no data, only the log
    >>> replay.measure(("a", "b"), rho=1.0) is first
    True
    >>> replay.measure(("b",), rho=0.5)
    Traceback (most recent call last):
    ...
    LookupError: Request 1 asks for ('b',) at rho=0.5 (secure_sum, e=1); the log has ('a',) at rho=0.5 (secure_sum, e=1).
    """

    def __init__(self, replies: Sequence[MeasurementReply]):
        self._replies = list(replies)
        self.replies: list[MeasurementReply] = []

    def measure(self, attrs: Sequence[str], rho: float, *, protocol: str = "secure_sum", n_repeats: int = 1,
                shortcut: bool = True) -> MeasurementReply:
        k = len(self.replies)
        if k >= len(self._replies):
            raise LookupError(f"Request {k} ({tuple(attrs)}) is beyond the {len(self._replies)} logged replies.")
        reply = self._replies[k]
        same = (set(reply.attrs) == set(attrs) and np.isclose(reply.rho, rho, rtol=1e-12, atol=0)
                and reply.protocol == protocol and reply.n_repeats == n_repeats)
        if not same:
            raise LookupError(f"Request {k} asks for {tuple(attrs)} at rho={rho} ({protocol}, e={n_repeats}); "
                              f"the log has {reply.attrs} at rho={reply.rho} ({reply.protocol}, e={reply.n_repeats}).")
        self.replies.append(reply)
        return reply


def _party_hosts(hosts: Mapping[str, Any], names: list, whose: str) -> dict:
    """``{party: PartyHost}`` (a bare source becomes a host), naming exactly the parties ``names``."""
    hosts = {name: host if isinstance(host, PartyHost) else PartyHost(host) for name, host in hosts.items()}
    if set(names) != set(hosts):
        raise ValueError(f"hosts must name {whose} exactly: missing {sorted(set(names) - set(hosts))}, "
                         f"unknown {sorted(set(hosts) - set(names))}.")
    return hosts


def _checked_backend(backend):
    """``"local"``, ``"processes"`` or a ``distributed.Client`` (anything else that is not a string)."""
    if isinstance(backend, str) and backend not in ("local", "processes"):
        raise ValueError(f"backend must be 'local', 'processes' or a distributed.Client, got {backend!r}.")
    return backend


class FederatedData:
    """Hybrid-partitioned data that stay with their parties: ``HybridSynthesizer().fit(FederatedData(...))``.

    Parameters
    ----------
    domain : Domain or dict
        The public schema: every column and its number of codes (parties
        hold integer codes of it).
    partition : HybridPartition
        The public roster: which slice and columns each party holds.
    hosts : mapping of party name to PartyHost (or a bare source)
        One per party of the partition.
    backend : {"local", "processes"} or distributed.Client, default="local"
        Where the parties run: in this process, in one local process each,
        or on the workers of a dask cluster (each :class:`PartyHost` naming
        its worker).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated import FederatedData
    >>> from skdpsynth.federated.runtime import PartyHost
    >>> from skdpsynth.synthesizers import HybridSynthesizer
    >>> rng = np.random.default_rng(0)
    >>> dom = Domain(["a", "b", "c"], [2, 3, 2])
    >>> part = HybridPartition.grid(400, ["a", "b", "c"], n_slices=2, column_groups=[["a", "b"], ["c"]],
    ...                             random_state=0)
    >>> codes = np.column_stack([rng.integers(0, 2, 400), rng.integers(0, 3, 400), rng.integers(0, 2, 400)])
    >>> hosts = {p.name: PartyHost(codes[np.ix_(p.rows, [dom.index(c) for c in p.columns])])
    ...          for p in part.parties()}   # in practice: a path each party reads itself
    >>> data = FederatedData(dom, part, hosts)
    >>> syn = HybridSynthesizer(epsilon=1.0, secure_computation="cryptographic").fit(data)
    >>> syn.sample(5).shape
    (5, 3)
    """

    __skdpsynth_remote__ = True   # how the synthesizers' fit recognises it (utils.is_remote_data)

    def __init__(self, domain, partition, hosts: Mapping[str, Any], *, backend="local"):
        self.domain = domain if isinstance(domain, Domain) else Domain.from_dict(dict(domain))
        self.partition = HybridPartition.coerce(partition)
        self.partition.validate(list(self.domain.attrs), self.partition.n_rows)
        self.hosts = _party_hosts(hosts, [p.name for p in self.partition.parties()], "the partition's parties")
        self.backend = _checked_backend(backend)

    def __repr__(self) -> str:
        where = self.backend if isinstance(self.backend, str) else "dask"
        return (f"FederatedData({len(self.domain)} columns, {self.partition.n_slices} x "
                f"{self.partition.n_vertical} parties, backend={where!r})")

    def make_backend(self) -> _Backend:
        """A new, not yet started backend for the hosts (each party's server gets its job from here, not by request)."""
        jobs = {name: PartyJob.from_partition(self.domain, self.partition, name) for name in self.hosts}
        return _make_backend(self.backend, self.hosts, jobs=jobs)

    def connect_options(self) -> dict:
        """Extra keyword arguments of :meth:`Federation.connect <skdpsynth.federated.Federation.connect>`
        (a curator that replays a fit keeps its session, key and dealer secret)."""
        return {}

    def federation(self, *, seed: int, secure_computation: str = "cryptographic", backend: _Backend | None = None):
        """A connected :class:`Federation` over a started backend (close it after use)."""
        return Federation.connect(backend or self.make_backend(), self.partition, self.domain, seed=seed,
                                  secure_computation=secure_computation, **self.connect_options())


def _make_backend(where, hosts: Mapping[str, PartyHost], *, jobs: Mapping, server=None) -> _Backend:
    """A new, not yet started backend: ``where`` is ``"local"``, ``"processes"`` or a ``distributed.Client``."""
    if where == "local":
        return LocalBackend(hosts, jobs=jobs, server=server)
    if where == "processes":
        return ProcessBackend(hosts, jobs=jobs, server=server)
    return DaskBackend(where, hosts, jobs=jobs, server=server)


def vertical_parties(domain: Domain, party_columns) -> tuple:
    """``((party, columns), ...)`` of a vertical partition: at least two parties, disjoint columns covering ``domain``.

    ``party_columns`` is ``{party: columns}``, a sequence of ``(party, columns)`` pairs, or lists of columns
    (parties ``party0``, ``party1``, …); columns come back in domain order.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated.curator import vertical_parties
    >>> vertical_parties(Domain(["a", "b", "c"], [2, 2, 2]), [["c", "a"], ["b"]])
    (('party0', ('a', 'c')), ('party1', ('b',)))
    """
    if isinstance(party_columns, Mapping):
        named = [(str(k), list(v)) for k, v in party_columns.items()]
    elif isinstance(party_columns, (list, tuple)) and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], (list, tuple))
            for p in party_columns):
        named = [(str(name), list(cols)) for name, cols in party_columns]
    elif isinstance(party_columns, (list, tuple)):
        named = [(f"party{i}", list(cols)) for i, cols in enumerate(party_columns)]
    else:
        raise TypeError(f"party_columns must be a dict {{party: columns}} or a list of column lists, got "
                        f"{type(party_columns).__name__}.")
    if len(named) < 2:
        raise ValueError(f"A vertical partition needs at least two parties, got {len(named)}.")
    # Disjoint columns that cover the domain: HybridPartition's checks and messages (its one row is a stand-in).
    HybridPartition([np.arange(1)], [cols for _, cols in named],
                    party_names={(0, j): n for j, (n, _) in enumerate(named)}).validate(list(domain.attrs), 1)
    return tuple((name, domain.canonical(cols)) for name, cols in named)


class VerticalFederatedData:
    """Vertically partitioned data that stay with their parties: ``VerticalMRFSynthesizer().fit(VerticalFederatedData(...))``.

    Every party holds some columns of the same individuals, aligned by the
    parties beforehand (row ``i`` of every party's data is the same person,
    e.g. after a private set intersection on a record ID).  Unlike
    :class:`FederatedData` there is no roster: the number of records is not
    public (VertiMRF releases a noisy count), unless ``n_rows`` says it is.

    Parameters
    ----------
    domain : Domain or dict
        The public schema: every column and its number of codes (parties
        hold integer codes of it).
    party_columns : dict or list of lists
        ``{party: columns}``, or lists of columns (parties ``party0``,
        ``party1``, …).  Disjoint, covering ``domain``, at least two parties.
    hosts : mapping of party name to PartyHost (or a bare source)
        One per party: where it runs and where it reads its records
        (:class:`~skdpsynth.federated.runtime.PartyHost`).
    backend : {"local", "processes"} or distributed.Client, default="local"
        As for :class:`FederatedData`.
    n_rows : int, optional
        The number of records, if it is public: every party then checks that
        its data have that many rows.  By default no party is asked to reveal it.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import VerticalMRFSynthesizer
    >>> from skdpsynth.federated import VerticalFederatedData
    >>> from skdpsynth.federated.runtime import PartyHost
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 2000)
    >>> hospital = np.column_stack([a, (a + rng.integers(0, 2, 2000)) % 3])     # columns a, b
    >>> insurer = ((a + (rng.random(2000) < 0.2)) % 3).reshape(-1, 1)           # column c
    >>> data = VerticalFederatedData({"a": 3, "b": 3, "c": 3}, {"hospital": ["a", "b"], "insurer": ["c"]},
    ...                              {"hospital": PartyHost(hospital), "insurer": PartyHost(insurer)})
    >>> data                                       # in practice each host is a file its party reads
    VerticalFederatedData(3 columns, 2 parties, backend='local')
    >>> syn = VerticalMRFSynthesizer(4.0, 1e-6, n_sketches=200, secure_computation="cryptographic",
    ...                              local_mrf_params={"max_iters": 100}).fit(data)
    >>> syn.sample(5).shape, syn.runtime_["requests"]     # setup, the leader's sealed secret, the messages
    ((5, 3), 5)
    """

    __skdpsynth_remote__ = True   # how the synthesizers' fit recognises it (utils.is_remote_data)

    def __init__(self, domain, party_columns, hosts: Mapping[str, Any], *, backend="local", n_rows: int | None = None):
        self.domain = domain if isinstance(domain, Domain) else Domain.from_dict(dict(domain))
        self.parties = vertical_parties(self.domain, party_columns)
        if n_rows is not None and (isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer))
                                   or n_rows < 1):
            raise ValueError(f"n_rows must be a positive integer (the public number of records) or None, got "
                             f"{n_rows!r}.")
        self.n_rows = None if n_rows is None else int(n_rows)
        self.hosts = _party_hosts(hosts, [name for name, _ in self.parties], "the parties")
        self.backend = _checked_backend(backend)

    def __repr__(self) -> str:
        where = self.backend if isinstance(self.backend, str) else "dask"
        return f"VerticalFederatedData({len(self.domain)} columns, {len(self.parties)} parties, backend={where!r})"

    @property
    def party_columns(self) -> dict:
        """``{party: columns}`` (columns in domain order)."""
        return {name: list(cols) for name, cols in self.parties}

    def make_backend(self, *, server, jobs: Mapping) -> _Backend:
        """A new, not yet started backend running ``server`` for every party, each with its own copy of ``jobs``."""
        return _make_backend(self.backend, self.hosts, jobs=jobs, server=server)

    def session(self) -> bytes:
        """The session identifier of a new run (a curator replaying a run from files keeps its own)."""
        return b"skdpsynth/vertical/" + os.urandom(16)
