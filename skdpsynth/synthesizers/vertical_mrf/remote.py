"""VertiMRF's parties over the federated runtime: each party encodes where its data live, the server on the curator.

VertiMRF is one-shot (KDD'24 Algorithm 1, lines 1–2): every party sends one
:class:`~.message.VerticalMessage`, then the server works on the messages
alone.  Over the runtime (:mod:`skdpsynth.federated.runtime`; the backends
``local``, ``processes``, dask workers, or the exchange folder of the
``skdpsynth party`` / ``skdpsynth curator`` roles) a party is a
:class:`VerticalPartyServer` and the curator runs three rounds of request
packets (:func:`~skdpsynth.federated.wire.pack`):

1. ``setup`` (every party): the public job and a session id; the party
   checks the job against its own copy (:class:`VerticalJob`), reads its
   records where it runs and answers with its X25519 public key;
2. ``share_secret`` (the leader only, FM encoder): the leader draws the
   sketch secret (§4.2; ``doc/deviations.md``, "Keyed sketch hashes") and
   seals it for every other party under their pairwise keys
   (:func:`~skdpsynth.federated.secure_aggregation.seal_group_secret`); the
   curator relays the boxes and never holds the secret;
3. ``encode`` (every party): a party opens its box, derives the t sketch
   keys, runs :class:`~.party.VerticalParty` on its own columns and answers
   with its message's bytes (:meth:`VerticalMessage.to_bytes`), which the
   curator validates against the public configuration before the server
   reads them.

A party trusts nothing the curator sends: its
:class:`~.party.VerticalConfig` (columns, binning, budget split, sketch
parameters, ε and δ) comes from its own copy of the public job, a setup that
describes another job is refused, and it encodes once (a second ``encode``
would spend its share of the budget twice).  The record count is not part of
the job (VertiMRF releases a noisy n̂), unless the user makes it public.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ...domain import Domain
from ...federated.runtime import CURATOR, NOISE_MODES, PartyDataError, load_party_codes
from ...federated.wire import MessageError, pack, unpack
from ...privacy.randomness import SystemRandomGenerator, child_random_states
from . import sketches as fm
from .message import VerticalMessage
from .party import VerticalConfig, VerticalParty, vertical_budget

__all__ = ["PARTY_DEFAULTS", "VerticalJob", "VerticalPartyServer", "run_parties"]

PARTY_DEFAULTS = {
    "encoder": "fm", "budget_split": None, "delta_split": None, "n_sketches": 2000, "gamma": 1.0,
    "sketch_accounting": "theorem2", "fo_accounting": "conservative", "n_bins": 4, "his_rec": "value_dist",
    "local_mrf": "aim", "local_mrf_params": None, "local_max_clique_size": None, "max_clique_size": 2e6,
}
"""The hyper-parameters of :class:`~skdpsynth.VerticalMRFSynthesizer` that set what a party computes and sends
(its share of the budget, its encoding, its local model), with the estimator's defaults.  The others (the server's
graph, cross marginals, mirror descent) stay with the curator."""

SKETCH_PURPOSE = b"skdpsynth/vertimrf/sketch-secret"
"""Domain separation of the pairwise keys that seal the sketch secret."""

_REQUEST_FIELDS = {
    "setup": frozenset({"op", "session", "job"}),
    "share_secret": frozenset({"op", "public_keys", "sketch_secret"}),
    "encode": frozenset({"op", "public_keys", "nonce", "random_state"}),
}
"""Every field a request of each operation may carry; a request with any other field is refused."""


def _refuse(text: str) -> MessageError:
    return MessageError(CURATOR, text)


def _unhex(value, what: str, sender: str = CURATOR, size: int | None = None) -> bytes:
    try:
        data = bytes.fromhex(value)
    except (TypeError, ValueError):
        raise MessageError(sender, f"{what} is not a hex string.") from None
    if size is not None and len(data) != size:
        raise MessageError(sender, f"{what} is not {size} bytes.")
    return data


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"a job parameter of type {type(value).__name__} cannot be written in a job description")


# --------------------------------------------------------------------------- the public job
@dataclass(frozen=True)
class VerticalJob:
    """The public job of a VertiMRF run, as every participant holds it: schema, parties, budget, parameters.

    Parameters
    ----------
    domain : Domain
    parties : tuple of (name, tuple of str)
        Who holds which columns (in domain order), in the job's party order.
    epsilon, delta : float
        The whole run's guarantee.
    parameters : dict
        The keys of :data:`PARTY_DEFAULTS` (missing ones take their defaults).
    n_rows : int, optional
        The number of records, only if it is public (each party then checks
        its data against it).

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.vertical_mrf.remote import VerticalJob
    >>> job = VerticalJob(Domain(["a", "b", "c"], [2, 3, 6]), (("p0", ("a",)), ("p1", ("b", "c"))), 1.0, 1e-6,
    ...                   {"n_sketches": 50})
    >>> job.names, job.leader, job.config().n_sketches, job.config().is_binned("c")
    (['p0', 'p1'], 'p0', 50, True)
    >>> VerticalJob.from_fields(job.to_fields()) == job        # what a setup request carries
    True
    >>> job.differences(VerticalJob(job.domain, job.parties, 2.0, 1e-6, {"n_sketches": 50}))
    ['budget (epsilon, delta)']
    """

    domain: Domain
    parties: tuple
    epsilon: float
    delta: float
    parameters: Mapping = field(default_factory=dict)
    n_rows: int | None = None

    def __post_init__(self):
        unknown = set(self.parameters) - set(PARTY_DEFAULTS)
        if unknown:
            raise ValueError(f"VerticalJob: unknown parameters {sorted(unknown)}; a party's are "
                             f"{sorted(PARTY_DEFAULTS)}.")
        object.__setattr__(self, "parameters", {**PARTY_DEFAULTS, **dict(self.parameters)})
        object.__setattr__(self, "parties", tuple((str(n), tuple(c)) for n, c in self.parties))
        for key in ("epsilon", "delta"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or \
                    not (math.isfinite(value) and value > 0):
                raise ValueError(f"VerticalJob: {key} must be a positive number, got {value!r}.")
        if self.n_rows is not None and (isinstance(self.n_rows, bool) or not isinstance(self.n_rows, (int, np.integer))
                                        or self.n_rows < 1):
            raise ValueError(f"VerticalJob: n_rows must be a positive integer or None, got {self.n_rows!r}.")

    # -- who is who
    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.parties]

    @property
    def leader(self) -> str:
        """The party that draws the sketch secret (the first name in sorted order)."""
        from ...federated.secure_aggregation import group_leader

        return group_leader(self.names)

    def columns(self, name: str) -> tuple:
        return dict(self.parties)[name]

    def check(self, name: str) -> None:
        """Refuse a job that has no party ``name``."""
        if name not in self.names:
            raise _refuse(f"the job has no party {name!r}.")

    # -- what the party computes
    def config(self) -> VerticalConfig:
        """The run's public :class:`~.party.VerticalConfig` (the budget split of KDD'24 §7.1 and the sketches')."""
        p, domain = self.parameters, self.domain
        m, d = len(self.parties), len(domain)
        binning = p["n_bins"] is not None and p["encoder"] != "none"
        binned_cols = [c for c in domain.attrs if binning and domain[c] > p["n_bins"]]
        budget = vertical_budget(self.epsilon, self.delta, n_parties=m, n_attributes=d, n_binned=len(binned_cols),
                                 encoder=p["encoder"], n_sketches=p["n_sketches"], budget_split=p["budget_split"],
                                 delta_split=p["delta_split"], sketch_accounting=p["sketch_accounting"],
                                 fo_accounting=p["fo_accounting"], value_distributions=p["his_rec"] == "value_dist")
        local_cells = p["local_max_clique_size"]
        if local_cells is None:
            tau_prime = p["max_clique_size"] / (m * (sum(domain.shape) / d) ** 2)
            local_cells = max(tau_prime, max(domain.shape))  # doc/deviations.md, "A feasible local clique limit"
        return VerticalConfig(
            self.parties, domain, budget, n_sketches=int(p["n_sketches"]), gamma=float(p["gamma"]),
            n_bins=p["n_bins"] if binning else None, count_leader=0, local_learner=p["local_mrf"],
            local_params=dict(p["local_mrf_params"] or {}), local_max_cells=int(local_cells),
            fo_accounting=p["fo_accounting"])

    # -- on the wire
    def to_fields(self) -> dict:
        """The job as JSON fields (what a setup request and a job description carry)."""
        fields = {"domain": {"attrs": list(self.domain.attrs), "sizes": [int(s) for s in self.domain.shape]},
                  "parties": [[name, list(cols)] for name, cols in self.parties],
                  "epsilon": float(self.epsilon), "delta": float(self.delta),
                  "parameters": dict(sorted(self.parameters.items())),
                  "n_rows": None if self.n_rows is None else int(self.n_rows)}
        return json.loads(json.dumps(fields, default=_jsonable, allow_nan=False))

    @classmethod
    def from_fields(cls, fields: Mapping) -> "VerticalJob":
        """The job :meth:`to_fields` wrote (a malformed one is refused with a ``MessageError``)."""
        try:
            domain = Domain([str(a) for a in fields["domain"]["attrs"]], [int(s) for s in fields["domain"]["sizes"]])
            parties = tuple((str(name), tuple(str(c) for c in cols)) for name, cols in fields["parties"])
            job = cls(domain, parties, float(fields["epsilon"]), float(fields["delta"]), dict(fields["parameters"]),
                      fields.get("n_rows"))
            job.config()    # a job whose parameters make no run is not a job
        except (KeyError, TypeError, ValueError, AttributeError):
            raise _refuse("the job the curator sent is malformed: it does not describe a VertiMRF run (domain, "
                          "parties, budget, parameters).") from None
        return job

    def __eq__(self, other) -> bool:
        return isinstance(other, VerticalJob) and self.to_fields() == other.to_fields()

    def differences(self, other: "VerticalJob") -> list[str]:
        """What of ``other`` differs from this job (as JSON fields)."""
        a, b = self.to_fields(), other.to_fields()
        what = {"domain": "domain", "parties": "parties' columns", "n_rows": "record count"}
        out = [what[k] for k in ("domain", "parties") if a[k] != b[k]]
        if (a["epsilon"], a["delta"]) != (b["epsilon"], b["delta"]):
            out.append("budget (epsilon, delta)")
        keys = sorted(k for k in a["parameters"] if a["parameters"][k] != b["parameters"].get(k))
        if keys:
            out.append(f"parameters {keys}")
        if a["n_rows"] != b["n_rows"]:
            out.append(what["n_rows"])
        return out

    @classmethod
    def from_description(cls, description: Mapping) -> "VerticalJob":
        """The job of a job description (:func:`skdpsynth.federated.files.read_job` with ``"method": "vertical"``).

        Its ``parameters`` may hold the curator's hyper-parameters too; a party keeps those of :data:`PARTY_DEFAULTS`.
        """
        parameters = {k: v for k, v in description["parameters"].items() if k in PARTY_DEFAULTS}
        return cls(description["domain"], tuple(description["party_columns"]), float(description["epsilon"]),
                   float(description["delta"]), parameters, description.get("n_rows"))


# --------------------------------------------------------------------------- a party
def _random_state_fields(state) -> dict:
    """What a party seeded by the curator needs to rebuild its child generator of the in-process fit."""
    bit_generator = getattr(state, "bit_generator", None)
    seed_seq = getattr(bit_generator, "seed_seq", None)
    if type(bit_generator) is not np.random.PCG64 or not isinstance(seed_seq, np.random.SeedSequence):
        raise ValueError("Parties with noise='curator' rebuild the curator's generators from their SeedSequence: "
                         "give random_state as an int, or a numpy Generator of PCG64 made from a seed.")
    entropy = seed_seq.entropy
    return {"entropy": int(entropy) if isinstance(entropy, (int, np.integer)) else [int(e) for e in entropy],
            "spawn_key": [int(k) for k in seed_seq.spawn_key], "pool_size": int(seed_seq.pool_size)}


def _generator_from_fields(fields) -> np.random.Generator:
    try:
        entropy, spawn_key, pool_size = fields["entropy"], fields["spawn_key"], fields["pool_size"]
        ints = [entropy] if isinstance(entropy, int) else list(entropy)
        if not all(type(x) is int and x >= 0 for x in ints + list(spawn_key) + [pool_size]):
            raise ValueError
        seq = np.random.SeedSequence(entropy, spawn_key=tuple(spawn_key), pool_size=pool_size)
    except (KeyError, TypeError, ValueError):
        raise _refuse("the random state the curator sent is malformed (entropy, spawn_key, pool_size).") from None
    return np.random.Generator(np.random.PCG64(seq))


class VerticalPartyServer:
    """One VertiMRF party as a server of the federated runtime: its records, its key, its one message.

    Parameters
    ----------
    name : str
        The party's name in the job.
    source : see :class:`~skdpsynth.federated.runtime.PartyHost`
        Read where the party runs (:func:`~skdpsynth.federated.runtime.load_party_codes`), against its columns.
    noise : {"private", "curator"}, default="private"
        ``"private"``: its noise and, for the leader, the sketch secret come
        from its own OS entropy.  ``"curator"`` (tests and benchmarks only):
        from the random state and secret the curator sends, so that the fit
        equals the in-process one for the same seed.
    private_key : bytes, optional
        Its 32-byte X25519 key (a party restarted between rounds keeps it).
    job : VerticalJob, optional
        Its own copy of the public job; a setup describing another job is
        refused.  Without it the first setup's job is pinned.

    Notes
    -----
    :meth:`handle` is the only entry point (request bytes in, reply bytes
    out).  The party derives its :class:`~.party.VerticalConfig` from its job;
    requests carry protocol material only (a session id, public keys, the
    sealed secret; with ``noise="curator"`` the curator's random state).
    It refuses unknown fields, public keys that are not the job's parties'
    (or not its own), a sketch secret asked of another party than the
    leader or twice, and a second ``encode``.  Other failures reach the
    curator without their text (kept in :attr:`last_error`).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated.runtime import CURATOR
    >>> from skdpsynth.federated.wire import pack
    >>> from skdpsynth.synthesizers.vertical_mrf.remote import VerticalJob, VerticalPartyServer
    >>> job = VerticalJob(Domain(["a", "b"], [2, 3]), (("p0", ("a",)), ("p1", ("b",))), 1.0, 1e-6)
    >>> server = VerticalPartyServer("p1", np.array([[0], [2], [1]]), job=job)
    >>> server.holds()
    {'party': 'p1', 'columns': ('b',), 'loaded': False}
    >>> server.handle(pack("Request", sender=CURATOR, fields={"op": "encode"}))
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from 'curator': party 'p1' got 'encode' before its setup.
    """

    def __init__(self, name: str, source, *, noise: str = "private", private_key: bytes | None = None,
                 job: VerticalJob | None = None):
        if noise not in NOISE_MODES:
            raise ValueError(f"noise must be one of {NOISE_MODES}, got {noise!r}.")
        if job is not None and name not in job.names:
            raise ValueError(f"The job has no party {name!r} (its parties: {sorted(job.names)}).")
        self.name = name
        self.noise = noise
        self.job = job
        self.last_error: BaseException | None = None
        self._source = source
        self._private_key = private_key
        self._codes = None
        self._secure = None
        self.session: bytes | None = None
        self.public_keys: dict | None = None   # {party: hex}, pinned at first sight
        self._secret: bytes | None = None      # the leader's sketch secret, until it has encoded
        self.encoded = False

    @classmethod
    def for_job(cls, description: Mapping, name: str, source, *, noise: str = "private",
                private_key: bytes | None = None) -> "VerticalPartyServer":
        """The server of party ``name`` of a job description (:func:`skdpsynth.federated.files.read_job`).

        What the file-based role (``skdpsynth party``) runs for a ``"method": "vertical"`` job: the party's job is
        its own reading of the description, never the curator's.
        """
        return cls(name, source, noise=noise, private_key=private_key, job=VerticalJob.from_description(description))

    def __repr__(self) -> str:
        return f"VerticalPartyServer({self.name!r}, {'set up' if self._secure is not None else 'not set up'})"

    def holds(self) -> dict:
        """What this server holds of the private data: its columns and whether it has read them (for audits).

        Not its number of rows: in VertiMRF that is private (the curator's backends can ask for this).
        """
        columns = None if self.job is None else self.job.columns(self.name)
        return {"party": self.name, "columns": columns, "loaded": self._codes is not None}

    # -- state kept between rounds by a party that restarts (the file-based role)
    def saved_state(self) -> dict:
        """What a restarted party needs: the session, the pinned keys, the leader's secret, whether it encoded.

        Private (the secret): keep it where only the party reads it.
        """
        return {"session": None if self.session is None else self.session.hex(), "public_keys": self.public_keys,
                "secret": None if self._secret is None else self._secret.hex(), "encoded": self.encoded}

    def restore(self, state: Mapping) -> None:
        """Resume from :meth:`saved_state` (with the same private key and job)."""
        from ...federated.secure_aggregation import SecureAggregationParty

        if state.get("session") is not None:
            self.session = bytes.fromhex(state["session"])
            self._secure = SecureAggregationParty(self.name, self.session, private_key=self._private_key)
        self.public_keys = state.get("public_keys")
        self._secret = None if state.get("secret") is None else bytes.fromhex(state["secret"])
        self.encoded = bool(state.get("encoded"))

    # -- entry point
    def handle(self, request: bytes) -> bytes:
        """Answer one request packet from the curator (bytes in, bytes out)."""
        packet = unpack(request, kinds=("Request",), sender=CURATOR)
        op = packet.fields.get("op")
        handler = {"setup": self._setup, "share_secret": self._share_secret, "encode": self._encode}.get(op)
        if handler is None:
            raise _refuse(f"unknown request operation {op!r} for party {self.name!r}.")
        unknown = (set(packet.fields) - _REQUEST_FIELDS[op]) | \
            (set(packet.arrays) - ({"sealed_secret"} if op == "encode" else set()))
        if unknown:
            raise _refuse(f"a {op!r} request to party {self.name!r} carries fields {sorted(unknown)} that no such "
                          "request has.")
        if op != "setup" and self._secure is None:
            raise _refuse(f"party {self.name!r} got {op!r} before its setup.")
        try:
            return handler(packet.fields, packet.arrays)
        except (MessageError, PartyDataError):
            raise
        except (KeyError, TypeError, AttributeError) as exc:
            self.last_error = exc
            raise _refuse(f"request {op!r} to party {self.name!r} is malformed (a field is missing or of the "
                          "wrong type).") from None
        except Exception as exc:
            # The local learner's or the encoder's errors can quote sizes of the party's data: the curator gets none.
            self.last_error = exc
            raise _refuse(f"party {self.name!r} could not answer the {op!r} request (its operator sees why in "
                          "VerticalPartyServer.last_error).") from None

    def _load(self) -> np.ndarray:
        if self._codes is None:
            columns = self.job.columns(self.name)
            sizes = tuple(self.job.domain[c] for c in columns)
            try:
                self._codes = load_party_codes(self._source, self.name, columns, sizes, self.job.n_rows)
            except ValueError as exc:
                raise PartyDataError(str(exc)) from None
        return self._codes

    def _setup(self, fields: dict, arrays: dict) -> bytes:
        from ...federated.secure_aggregation import SecureAggregationParty

        offered = VerticalJob.from_fields(fields["job"])
        offered.check(self.name)
        if self.job is None:
            self.job = offered               # pinned: a later setup must describe the same job
        elif offered != self.job:
            differ = self.job.differences(offered)
            raise _refuse(f"the setup's {' and '.join(differ)} {'differs' if len(differ) == 1 else 'differ'} from "
                          f"the job of party {self.name!r}.")
        session = _unhex(fields["session"], "session")
        if self._secure is not None and session != self.session:
            raise _refuse(f"party {self.name!r} is already set up in another session.")
        self._load()                         # its data fit the job (columns, codes; rows only if public)
        if self._secure is None:
            self.session = session
            self._secure = SecureAggregationParty(self.name, session, private_key=self._private_key)
        return pack("PublicKey", sender=self.name, fields={"key": self._secure.public_key.hex(), "noise": self.noise})

    def _public_keys(self, given) -> dict:
        """The job's parties' public keys as the request gives them: all of them, its own, the same every time."""
        if not isinstance(given, Mapping) or set(given) != set(self.job.names):
            raise _refuse(f"the public keys sent to party {self.name!r} do not name exactly the job's parties.")
        keys = {name: _unhex(value, f"the public key of {name!r}", size=32) for name, value in given.items()}
        if keys[self.name] != self._secure.public_key:
            raise _refuse(f"the public key sent for party {self.name!r} is not its own.")
        hexed = {name: key.hex() for name, key in keys.items()}
        if self.public_keys is None:
            self.public_keys = hexed
        elif self.public_keys != hexed:
            raise _refuse(f"party {self.name!r} was sent other public keys than before.")
        return keys

    def _share_secret(self, fields: dict, arrays: dict) -> bytes:
        from ...federated.secure_aggregation import seal_group_secret

        job = self.job
        if job.parameters["encoder"] != "fm":
            raise _refuse(f"the job's encoder {job.parameters['encoder']!r} has no sketch secret to share.")
        if self.name != job.leader:
            raise _refuse(f"party {self.name!r} does not draw the sketch secret: the job's leader is {job.leader!r}.")
        if self._secret is not None or self.encoded:
            raise _refuse(f"party {self.name!r} has already drawn the sketch secret; it draws it once.")
        keys = self._public_keys(fields["public_keys"])
        if self.noise == "curator":
            if "sketch_secret" not in fields:
                raise _refuse(f"party {self.name!r} uses the curator's seed, but no sketch secret was sent.")
            secret = _unhex(fields["sketch_secret"], "sketch_secret", size=32)
        else:
            secret = fm.new_shared_secret()
        boxes = seal_group_secret(self._secure, {n: k for n, k in keys.items() if n != self.name}, secret,
                                  purpose=SKETCH_PURPOSE)
        self._secret = secret
        return pack("SealedSecrets", sender=self.name,
                    fields={"boxes": {n: {"nonce": nonce.hex(), "ciphertext": box.hex()}
                                      for n, (nonce, box) in boxes.items()}})

    def _sketch_keys(self, fields: dict, arrays: dict, keys: dict, n_sketches: int):
        from ...federated.secure_aggregation import SecureAggregationError, open_group_secret

        leader = self.job.leader
        if self.name == leader:
            if self._secret is None:
                raise _refuse(f"party {self.name!r} has drawn no sketch secret yet (share_secret comes first).")
            secret = self._secret
        else:
            if "sealed_secret" not in arrays or "nonce" not in fields:
                raise _refuse(f"the encode request to party {self.name!r} carries no sealed sketch secret.")
            try:
                secret = open_group_secret(self._secure, leader, keys[leader], _unhex(fields["nonce"], "nonce"),
                                           arrays["sealed_secret"].tobytes(), purpose=SKETCH_PURPOSE)
            except SecureAggregationError:
                raise MessageError(leader, "the sealed sketch secret does not authenticate (wrong key, or "
                                           "tampered).") from None
        return fm.SketchKeys.from_secret(secret, n_sketches)

    def _encode(self, fields: dict, arrays: dict) -> bytes:
        if self.encoded:
            raise _refuse(f"party {self.name!r} has sent its message already; a second would spend its budget twice.")
        keys = self._public_keys(fields["public_keys"])
        config = self.job.config()
        sketch_keys = self._sketch_keys(fields, arrays, keys, config.n_sketches) if config.encoder == "fm" else None
        random_state = None
        if self.noise == "curator":
            if "random_state" not in fields:
                raise _refuse(f"party {self.name!r} uses the curator's seed, but no random state was sent.")
            random_state = _generator_from_fields(fields["random_state"])
        codes = self._load()
        self.encoded = True      # before the run: whatever happens, its budget is not spent a second time
        message = VerticalParty(config.party_names.index(self.name), config).run(codes, sketch_keys,
                                                                                 random_state=random_state)
        self._secret = None      # no longer needed: the secret leaves the party's state
        return message.to_bytes()


# --------------------------------------------------------------------------- the curator
def _request(arrays: Mapping | None = None, **fields) -> bytes:
    return pack("Request", sender=CURATOR, fields=fields, arrays=dict(arrays or {}))


def _setup(backend, job: VerticalJob, session: bytes) -> tuple[dict, dict]:
    replies = backend.call({name: _request(op="setup", session=session.hex(), job=job.to_fields())
                            for name in job.names})
    keys, modes = {}, {}
    for name in job.names:
        packet = unpack(replies[name], kinds=("PublicKey",), sender=name)
        keys[name] = _unhex(packet.fields.get("key"), "its public key", name, size=32)
        modes[name] = packet.fields.get("noise")
        if modes[name] not in NOISE_MODES:
            raise MessageError(name, "its setup reply does not say how it draws its noise.")
    return keys, modes


def _sealed_boxes(reply: bytes, leader: str, receivers: list) -> dict:
    packet = unpack(reply, kinds=("SealedSecrets",), sender=leader)
    boxes = packet.fields.get("boxes")
    if not isinstance(boxes, Mapping) or set(boxes) != set(receivers):
        raise MessageError(leader, "its sealed sketch secrets are not one for every other party.")
    try:
        return {name: (_unhex(box["nonce"], "a nonce", leader), _unhex(box["ciphertext"], "a sealed box", leader))
                for name, box in boxes.items()}
    except (KeyError, TypeError):
        raise MessageError(leader, "its sealed sketch secrets are malformed.") from None


def run_parties(data, job: VerticalJob, rng) -> tuple[list, dict, dict]:
    """The curator's side: run every party of ``data`` where it lives; their message bytes, in the job's order.

    Parameters
    ----------
    data : VerticalFederatedData
        Where the parties run (:meth:`~skdpsynth.federated.VerticalFederatedData.make_backend`).
    job : VerticalJob
        The public job (each party gets its own copy where it starts, and checks the setup's against it).
    rng : numpy.random.Generator
        The fit's noise generator.  Drawn from as the in-process fit does
        (the sketch secret, then one child state per party); only parties
        hosted with ``noise="curator"`` are sent what concerns them.

    Returns
    -------
    wire : list of bytes
        Each party's :class:`~.message.VerticalMessage`, unread.
    noise_modes : dict
        ``{party: "private" or "curator"}`` as each party declared at setup.
    traffic : dict
        ``backend``, ``n_parties``, ``requests``, ``bytes_sent``, ``bytes_received``.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import VerticalFederatedData
    >>> from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
    >>> from skdpsynth.synthesizers.vertical_mrf.remote import VerticalJob, run_parties
    >>> rng = np.random.default_rng(0)
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> job = VerticalJob(dom, (("p0", ("a",)), ("p1", ("b",))), 2.0, 1e-6,
    ...                   {"n_sketches": 20, "local_mrf_params": {"max_iters": 20, "final_iters": 20}})
    >>> data = VerticalFederatedData(dom, {"p0": ["a"], "p1": ["b"]},
    ...                              {"p0": rng.integers(0, 2, (500, 1)), "p1": rng.integers(0, 3, (500, 1))})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")        # the local learners' fixed-seed warnings
    ...     wire, modes, traffic = run_parties(data, job, np.random.default_rng(1))
    >>> [VerticalMessage.from_bytes(b, config=job.config(), sender=n).party for n, b in zip(job.names, wire)]
    ['p0', 'p1']
    >>> modes, traffic["requests"]             # setup (2), the leader's sealed secret (1), the messages (2)
    ({'p0': 'private', 'p1': 'private'}, 5)
    """
    from ...federated.secure_aggregation import SecureAggregationParty  # noqa: F401  (needs `cryptography`)

    names, fm_encoder = job.names, job.parameters["encoder"] == "fm"
    # The in-process fit's draws, in its order (VerticalMRFSynthesizer._fit_codes): the leader's secret, then
    # one child state per party.
    secret = rng.bytes(32) if fm_encoder and not isinstance(rng, SystemRandomGenerator) else None
    states = child_random_states(rng, len(names))
    backend = data.make_backend(server=VerticalPartyServer, jobs={name: job for name in names})
    with backend:
        public_keys, modes = _setup(backend, job, data.session())
        seeded = {name for name in names if modes[name] == "curator"}
        if seeded and isinstance(rng, SystemRandomGenerator):
            # random_state=None: the curator still seeds the parties that asked for it (tests only), from a seed
            # of its own.
            own = np.random.default_rng(int.from_bytes(os.urandom(16), "big"))
            secret, states = (own.bytes(32) if fm_encoder else None), child_random_states(own, len(names))
        keys_hex = {name: key.hex() for name, key in public_keys.items()}
        boxes = {}
        if fm_encoder:
            leader = job.leader
            extra = {"sketch_secret": secret.hex()} if leader in seeded else {}
            reply = backend.call({leader: _request(op="share_secret", public_keys=keys_hex, **extra)})[leader]
            boxes = _sealed_boxes(reply, leader, [n for n in names if n != leader])
        requests = {}
        for name, state in zip(names, states):
            extra, arrays = {}, {}
            if name in boxes:
                nonce, box = boxes[name]
                extra["nonce"], arrays["sealed_secret"] = nonce.hex(), np.frombuffer(box, dtype=np.uint8)
            if name in seeded:
                extra["random_state"] = _random_state_fields(state)
            requests[name] = _request(arrays, op="encode", public_keys=keys_hex, **extra)
        replies = backend.call(requests)
    traffic = {"backend": backend.kind, "n_parties": len(names), "requests": backend.n_requests,
               "bytes_sent": backend.bytes_sent, "bytes_received": backend.bytes_received}
    return [replies[name] for name in names], modes, traffic
