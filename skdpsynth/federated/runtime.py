"""Where the parties run and how the curator talks to them: the federated runtime.

A party is a :class:`PartyServer`.  It loads its own records, where it runs,
from a *source* it controls (a file path, a loader function, or an array
already in that process), and answers the curator's request packets with
bytes only: a DP message of :mod:`~skdpsynth.federated.wire`, or a protocol
packet (its public key, data sealed for the other party of a secure product,
a masked secure-aggregation input).  The curator side
(:class:`~skdpsynth.federated.Federation`) sends requests and reads replies
through a *backend*, which decides where the servers live:

* :class:`LocalBackend` — in this process (what ``Federation.from_codes``
  uses, and ``backend="local"``);
* :class:`ProcessBackend` — one dedicated local process per party
  (``concurrent.futures`` with the ``spawn`` start method; the party's
  source is read in its process);
* :class:`DaskBackend` — one ``dask.distributed`` worker per party, named in
  :class:`PartyHost`; the server lives on its worker and the client only ever
  gathers bytes.

Every backend carries the same bytes, so a fit is the same whichever runs it.
:class:`~skdpsynth.federated.curator.FederatedData` bundles the public schema, the partition and the
parties' hosts; ``HybridSynthesizer().fit(FederatedData(...))`` fits without
the records ever entering the curator's process.

Trust model.  Parties are semi-honest; the curator may deviate in the
requests it writes, so a party derives every layout from its own copy of the
public job (:mod:`~skdpsynth.federated.party_job`) and refuses anything else.
The curator does not collude with a party.  Party-to-party data (the secure product's masked
inputs) and the curator's triple seeds travel *sealed* (ChaCha20-Poly1305
under pairwise X25519 + HKDF keys), relayed by the curator, so whoever
carries the bytes learns nothing from them.  Public keys are not
authenticated: the channel between each party and the curator must be (TLS,
or files exchanged over an authenticated channel).  On a dask cluster the
workers run the client's code: the curator could submit a task that reads a
party's data, so a shared cluster fits organisations that trust the code the
curator submits; those that do not use the file-based CLI roles
(``skdpsynth party`` / ``skdpsynth curator``), which run the same servers.
"""
from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import threading
import uuid
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..privacy import warn_privacy_leak
from ..privacy.randomness import SystemRandomGenerator
from ..utils import moved_names
from .messages import SliceCount
from .party_job import PartyJob
from . import wire as _wire
from .wire import MessageError, pack, to_bytes, unpack

# Names moved to other modules (doc/changelog.md): importable from here, with a DeprecationWarning, until 0.2.
_MOVED = {"FederatedData": "skdpsynth.federated.curator"}


__getattr__ = moved_names(__name__, _MOVED)


__all__ = [
    "CURATOR",
    "NOISE_MODES",
    "PartyHost",
    "PartyServer",
    "PartyDataError",
    "LocalBackend",
    "ProcessBackend",
    "DaskBackend",
    "load_party_codes",
    "open_sealed",
]

CURATOR = "curator"
"""The curator's name in packets (its requests' sender, its key pair's name)."""

NOISE_MODES = ("private", "curator")
"""How a party seeds its noise: ``"private"`` (OS entropy, its own) or ``"curator"`` (the curator's seed)."""

DEALER_PURPOSE = b"skdpsynth/dealer-seed"
RELAY_PURPOSE = b"skdpsynth/product-relay"


# --------------------------------------------------------------------------- sealing
def open_sealed(key: bytes, nonce: bytes, ciphertext: bytes, context: bytes, *, sender: str | None = None) -> bytes:
    """:func:`~skdpsynth.federated.secure_aggregation.open_sealed`, failing with a :class:`MessageError` naming ``sender``.

    Examples
    --------
    >>> import os
    >>> from skdpsynth.federated.runtime import open_sealed
    >>> from skdpsynth.federated.secure_aggregation import seal
    >>> key = os.urandom(32)
    >>> nonce, box = seal(key, b"secret", b"a->b")
    >>> open_sealed(key, nonce, box, b"a->b")
    b'secret'
    """
    from .secure_aggregation import SecureAggregationError
    from .secure_aggregation import open_sealed as _open

    try:
        return _open(key, nonce, ciphertext, context)
    except SecureAggregationError as exc:
        raise MessageError(sender, "sealed data do not authenticate (wrong key or context, or tampered).") from exc


def _hex(value: bytes) -> str:
    return bytes(value).hex()


def _unhex(reader_sender: str, value, what: str) -> bytes:
    try:
        return bytes.fromhex(value)
    except (TypeError, ValueError):
        raise MessageError(reader_sender, f"{what} is not a hex string.") from None


# --------------------------------------------------------------------------- the party's data
def load_party_codes(source, name: str, columns: tuple, sizes: tuple, n_rows: int | None) -> np.ndarray:
    """Read a party's integer codes from its source and check them against the public job.

    Parameters
    ----------
    source : str, os.PathLike, callable, pandas.DataFrame or ndarray
        A ``.npy`` file (2-D integer array, columns in the job's order) or
        a ``.csv`` file (a header naming at least the party's columns); a
        function of no arguments returning a DataFrame or an array; or the
        table itself.  DataFrames are matched by column name.
    name : str
        The party (for error messages).
    columns, sizes : tuple
        The party's columns and their public domain sizes.
    n_rows : int or None
        The party's public roster size; ``None`` when the number of records
        is not public (VertiMRF's parties: any number of rows is read).

    Returns
    -------
    ndarray of shape (n_rows, len(columns)), int64

    Raises
    ------
    ValueError
        Naming the party and column, if the data do not fit the job (missing
        columns, another number of rows, codes that are not integers in
        ``[0, size)``).  No statistic of the data is quoted.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from skdpsynth.federated.runtime import load_party_codes
    >>> frame = pd.DataFrame({"b": [2, 0, 1], "a": [1, 1, 0], "other": [5, 6, 7]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "alice.csv")
    ...     frame.to_csv(path, index=False)
    ...     codes = load_party_codes(path, "alice", ("a", "b"), (2, 3), n_rows=3)
    >>> codes.tolist(), codes.dtype.name       # the job's columns, in its order
    ([[1, 2], [1, 0], [0, 1]], 'int64')
    >>> load_party_codes(frame, "alice", ("a", "b"), (2, 2), n_rows=3)
    Traceback (most recent call last):
    ...
    ValueError: Party 'alice': column 'b' has codes outside [0, 2) of the public domain.
    """
    import pandas as pd

    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not path.endswith((".npy", ".csv")):
            raise ValueError(f"Party {name!r}: unsupported data file {path!r}; use .csv or .npy.")
        try:
            data = np.load(path, allow_pickle=False) if path.endswith(".npy") else pd.read_csv(path)
        except (ValueError, EOFError):  # the readers' words quote line numbers, sizes or bytes of the data
            data = None
        if data is None:  # raised outside the handler, so that no chained exception carries their words
            raise ValueError(f"Party {name!r}: its data file {path!r} cannot be read as a "
                             f"{'NumPy array' if path.endswith('.npy') else 'CSV table with a header line'}.")
    elif callable(source):
        data = source()
    else:
        data = source
    if isinstance(data, pd.DataFrame):
        missing = [c for c in columns if c not in data.columns]
        if missing:
            raise ValueError(f"Party {name!r}: its data have no column(s) {missing}.")
        data = data[list(columns)].to_numpy()
    data = np.asarray(data)
    if data.ndim != 2 or data.shape[1] != len(columns) or (n_rows is not None and data.shape[0] != n_rows):
        # What the public job expects, never the data's own shape: its number of rows is private, and this
        # text may reach the curator (the process and dask backends carry a party's exception back).
        wrong = ("not a 2-D table" if data.ndim != 2 else
                 "another number of columns" if data.shape[1] != len(columns) else
                 "another number of rows than its roster")
        expects = "" if n_rows is None else f"{n_rows} roster rows and "
        raise ValueError(f"Party {name!r}: its data are {wrong}; the job expects {expects}the columns "
                         f"{list(columns)}.")
    if data.dtype.kind not in "iub":
        if data.dtype.kind == "f" and np.isfinite(data).all() and (data == np.round(data)).all():
            data = data.astype(np.int64)
        else:
            raise ValueError(f"Party {name!r}: its data must be integer codes of the public domain.")
    data = data.astype(np.int64, copy=False)
    for k, (column, size) in enumerate(zip(columns, sizes)):
        if data.shape[0] and (data[:, k].min() < 0 or data[:, k].max() >= size):
            raise ValueError(f"Party {name!r}: column {column!r} has codes outside [0, {size}) of the public domain.")
    return data


@dataclass(frozen=True)
class PartyHost:
    """Where one party runs and where its records come from.

    Parameters
    ----------
    source : str, os.PathLike, callable, DataFrame or ndarray
        Read by :func:`load_party_codes` *where the party runs*: give a path
        or a loader function so that the records never pass through the
        curator's process.
    worker : str, optional
        :class:`DaskBackend`: the name (or address) of the worker the party
        is pinned to.
    noise : {"private", "curator"}, default="private"
        ``"private"``: the party draws its noise from its own OS entropy,
        which the curator never sees.  ``"curator"``: it uses the seed the
        curator sends, so a fit is reproducible, and the curator, who knows
        the seed, can remove the noise; for tests and benchmarks only (the
        curator then warns with a ``PrivacyLeakWarning``).

    Examples
    --------
    >>> from skdpsynth.federated.runtime import PartyHost
    >>> PartyHost("alice.npy")                  # read by the party, where it runs
    PartyHost(source='alice.npy', worker=None, noise='private')
    >>> PartyHost("bob.npy", worker="worker-1").worker
    'worker-1'
    >>> PartyHost("carol.npy", noise="public")
    Traceback (most recent call last):
    ...
    ValueError: noise must be one of ('private', 'curator'), got 'public'.
    """

    source: Any
    worker: str | None = None
    noise: str = "private"

    def __post_init__(self):
        if self.noise not in NOISE_MODES:
            raise ValueError(f"noise must be one of {NOISE_MODES}, got {self.noise!r}.")


# --------------------------------------------------------------------------- the party's server
class PartyDataError(ValueError):
    """The party's own data do not fit the public job (the text names the party and column, never a value).

    Examples
    --------
    >>> from skdpsynth.federated.runtime import PartyDataError
    >>> issubclass(PartyDataError, ValueError)
    True
    """


_REQUEST_FIELDS = {
    "setup": frozenset({"op", "session", "curator_key", "number", "seed", "domain", "spec", "slice_parties"}),
    "measure": frozenset({"op", "kind", "attrs", "r", "variance", "rho", "call"}),
    "product_open": frozenset({"op", "call", "r", "attrs", "peer", "peer_key", "nonce", "triple"}),
    "product_share": frozenset({"op", "call", "r", "first", "second", "variance", "round_id", "participants",
                                "public_keys", "peer", "nonce", "shape"}),
    "chain_open": frozenset({"op", "call", "r", "attrs", "chain", "nonce", "share_nonce", "peer_keys"}),
    "chain_step": frozenset({"op", "call", "r", "round", "variance", "round_id", "participants", "public_keys",
                             "boxes"}),
}
"""Every field a request of each operation may carry; a request with any other field is refused."""


class PartyServer:
    """One party's side of the protocol: its records, its keys, and the answers to the curator's requests.

    Parameters
    ----------
    name : str
        The party's name in the partition.
    source : see :class:`PartyHost`
        Read at the ``setup`` request, against the public job.
    noise : {"private", "curator"}, default="private"
        See :class:`PartyHost`.
    private_key : bytes, optional
        The party's 32-byte X25519 private key (a party that restarts, e.g.
        between the rounds of the file-based protocol, keeps its key);
        by default a fresh one from the OS at setup.
    max_rho : float, optional
        The party's own guard: refuse any request that would take its total
        zCDP (``1 / (2 σ²)`` per answer, from the noise it adds) above this
        budget.
    job : PartyJob, optional
        The party's own copy of the public job (domain, its roster entry, its
        slice's columns), from a channel it trusts, e.g.
        :meth:`PartyJob.from_partition <skdpsynth.federated.party_job.PartyJob.from_partition>`
        on the job description.  A setup that describes another job is
        refused.  Without it, the first setup's job is pinned.

    Notes
    -----
    :meth:`handle` is the only entry point: bytes in (a request packet from
    the curator), bytes out (a DP message or a protocol packet).  The party
    trusts nothing the curator sends beyond the marginal's attribute names,
    the noise variance and protocol material (keys, sealed data): every
    layout (the columns it counts, cell strides, the number of cells, a
    product's dimensions) is derived from its job (see
    :mod:`~skdpsynth.federated.party_job`), so its noise always covers
    exactly the cells it counts, and its guard charges the answer it sends.
    A request with unknown fields, a layout other than the derived one, or
    a budget claim that does not match its noise is refused with a
    :class:`~skdpsynth.federated.wire.MessageError`; any other failure is
    reported to the curator without its text (which could describe the
    data), and kept in :attr:`last_error` for the party's operator.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated.runtime import CURATOR, PartyServer
    >>> from skdpsynth.federated.wire import pack
    >>> server = PartyServer("alice", np.array([[0, 1], [1, 2], [1, 0]]))
    >>> server                                  # the source is read at the setup request
    PartyServer('alice', not set up)
    >>> server.holds()
    {'party': 'alice', 'columns': None, 'n_rows': None}
    >>> server.handle(pack("Request", sender=CURATOR, fields={"op": "measure"}))
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from 'curator': party 'alice' got 'measure' before its setup.
    """

    def __init__(self, name: str, source, *, noise: str = "private", private_key: bytes | None = None,
                 max_rho: float | None = None, job: PartyJob | None = None):
        if noise not in NOISE_MODES:
            raise ValueError(f"noise must be one of {NOISE_MODES}, got {noise!r}.")
        if job is not None:
            job.check(name)
        self.name = name
        self.noise = noise
        self.max_rho = None if max_rho is None else float(max_rho)
        self.spent_rho = 0.0
        self.job = job
        self.last_error: BaseException | None = None
        self._private_key = private_key
        self._source = source
        self.party = None
        self._seed = None
        self._number = None
        self._curator_key = None
        self.peer_keys: dict = {}     # peer -> its public key (hex), pinned at first sight (persisted by the file role)
        self.pending_product = None  # the open secure product (its triple seed is secret: private state)
        self.pending_chain = None    # the open k-party product: call, marginal, members (its state is in the party)

    @classmethod
    def from_party(cls, party, *, noise: str = "curator", job: PartyJob | None = None) -> "PartyServer":
        """A server around an in-process :class:`~skdpsynth.federated.Party` (the local backend)."""
        server = cls(party.name, None, noise=noise, job=job)
        server.party = party
        return server

    def __repr__(self) -> str:
        held = "not set up" if self.party is None else f"{self.party.n_rows} rows of {list(self.party.columns)}"
        return f"PartyServer({self.name!r}, {held})"

    def holds(self) -> dict:
        """What this server holds of the private data: its columns and roster size (for audits)."""
        if self.party is None:
            return {"party": self.name, "columns": None, "n_rows": None}
        return {"party": self.name, "columns": tuple(self.party.columns), "n_rows": self.party.n_rows,
                "shape": tuple(self.party._codes.shape)}

    # -- entry point -------------------------------------------------------------------------------
    def handle(self, request: bytes) -> bytes:
        """Answer one request packet from the curator (bytes in, bytes out)."""
        packet = unpack(request, kinds=("Request",), sender=CURATOR, max_bytes=_wire.MAX_BYTES,
                        size_limit=self._request_limit)
        op = packet.fields.get("op")
        handler = {"setup": self._setup, "measure": self._measure, "product_open": self._product_open,
                   "product_share": self._product_share, "chain_open": self._chain_open,
                   "chain_step": self._chain_step}.get(op)
        if handler is None:
            raise MessageError(CURATOR, f"unknown request operation {op!r} for party {self.name!r}.")
        unknown = set(packet.fields) - _REQUEST_FIELDS[op]
        if unknown:
            raise MessageError(CURATOR, f"a {op!r} request to party {self.name!r} carries fields {sorted(unknown)} "
                                        "that no such request has.")
        if op != "setup" and self._number is None:
            raise MessageError(CURATOR, f"party {self.name!r} got {op!r} before its setup.")
        try:
            return handler(packet.fields, packet.arrays)
        except (MessageError, PartyDataError):
            raise
        except (KeyError, TypeError, AttributeError) as exc:
            self.last_error = exc
            raise MessageError(CURATOR, f"request {op!r} to party {self.name!r} is malformed (a field is missing "
                                        "or of the wrong type).") from None
        except Exception as exc:
            # Numerical and protocol errors can quote sizes or codes of the party's data: the curator gets none.
            self.last_error = exc
            raise MessageError(CURATOR, f"party {self.name!r} could not answer the {op!r} request (its operator "
                                        "sees why in PartyServer.last_error).") from None

    def _spend(self, variance: float) -> None:
        """Charge the party's own budget for an answer with noise variance ``variance`` (refuse beyond it)."""
        rho = 1.0 / (2.0 * variance)
        if self.max_rho is not None and self.spent_rho + rho > self.max_rho * (1 + 1e-9):
            raise MessageError(CURATOR, f"party {self.name!r} refuses: the request would take its spending to "
                                        f"rho={self.spent_rho + rho:.6g}, above its budget {self.max_rho:.6g}.")
        self.spent_rho += rho

    def _variance(self, fields: dict) -> float:
        """The request's noise variance, and its budget claim (if any) checked against it."""
        variance = fields["variance"]
        if isinstance(variance, bool) or not isinstance(variance, (int, float)) or \
                not (math.isfinite(variance) and variance > 0):
            raise MessageError(CURATOR, f"request to party {self.name!r} asks for noise variance {variance!r}.")
        variance = float(variance)
        if "rho" in fields:
            rho = fields["rho"]
            if isinstance(rho, bool) or not isinstance(rho, (int, float)) or \
                    not math.isclose(float(rho), 1.0 / (2.0 * variance), rel_tol=1e-9):
                raise MessageError(CURATOR, f"request to party {self.name!r} claims rho={rho!r}, which its noise "
                                            f"variance {variance!r} does not give (1/(2 variance)).")
        return variance

    @staticmethod
    def _count(value, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise MessageError(CURATOR, f"{what} {value!r} is not a non-negative integer.")
        return value

    def _rng(self, call: int) -> np.random.Generator:
        if self.noise == "curator":
            return np.random.default_rng(np.random.SeedSequence([self._seed, int(call), self._number]))
        return SystemRandomGenerator()

    # -- sizes a request may have -------------------------------------------------------------------
    @staticmethod
    def _box_bytes(words: int, scale_bits: int) -> int:
        """The exact size of a sealed matrix of ``words`` words at ``scale_bits`` (relay_word_bytes each)."""
        from .secure_aggregation import SEAL_OVERHEAD
        from .secure_product import relay_word_bytes

        return words * relay_word_bytes(scale_bits) + SEAL_OVERHEAD

    def _relay_box_bytes(self, pending: dict) -> int:
        """The size of the peer's sealed masked input for the open two-party product (job and ring only)."""
        t = pending["triple"]
        return self._box_bytes(int(t["n"]) * int(t["d2"] if t["role"] == 1 else t["d1"]), int(t["scale_bits"]))

    def _chain_box_bytes(self, sender: int) -> int:
        """The size of the sealed matrix position ``sender`` sends this party in the open k-party product."""
        from .secure_chain import chain_matrix_width

        pending = self.pending_chain
        width = chain_matrix_width(pending["dims"], sender, pending["position"])
        return self._box_bytes(self.job.n_rows * width, pending["scale_bits"])

    def _request_limit(self, fields: dict) -> int:
        """How large a request beyond the default limit may be: its sealed matrices as this party's job lays them out.

        Called by :func:`~skdpsynth.federated.wire.unpack` with the request's
        unvalidated fields, before any array is read.  Only the operations
        that carry sealed matrices get more than the default limit, and only
        as many bytes as the open product's public layout gives (roster size,
        cells, word bytes of its ring): never a size the curator states.
        """
        from .secure_chain import chain_receives
        from .secure_product import SCALE_BITS_CHOICES

        op, payload = fields.get("op"), 0
        if self.job is None or self._number is None:
            return 0
        if op == "product_share" and self.pending_product is not None:
            payload = self._relay_box_bytes(self.pending_product)
        elif op == "chain_step" and self.pending_chain is not None and self.party._chain is not None:
            chain = self.party._chain
            payload = sum(self._chain_box_bytes(q) for q in chain_receives(chain.k, chain.position, chain.next_round))
        elif op == "chain_open" and isinstance(fields.get("chain"), dict) and \
                fields["chain"].get("scale_bits") in SCALE_BITS_CHOICES:
            _, position, n, dims = self.job.chain_layout(self.job.marginal(fields.get("r")))
            payload = self._box_bytes(n * math.prod(dims[1:position]), fields["chain"]["scale_bits"])
        return payload + _wire.PACKET_ALLOWANCE if payload else 0

    # -- operations --------------------------------------------------------------------------------
    def _setup(self, fields: dict, arrays: dict) -> bytes:
        from .parties import Party
        from .partition import PartySpec

        offered = PartyJob.from_setup(self.name, fields)
        if self.job is None:
            self.job = offered               # pinned: a later setup must describe the same job
        elif offered != self.job:
            differ = self.job.differences(offered)
            raise MessageError(CURATOR, f"the setup's {' and '.join(differ)} {'differs' if len(differ) == 1 else 'differ'}"
                                        f" from the job description of party {self.name!r}.")
        job = self.job
        if self.party is None:
            sizes = tuple(job.domain[c] for c in job.columns)
            try:
                codes = load_party_codes(self._source, self.name, job.columns, sizes, job.n_rows)
            except ValueError as exc:
                raise PartyDataError(str(exc)) from None
            rows = np.arange(job.n_rows)  # positions in the slice's roster: public, only their number matters here
            self.party = Party(PartySpec(job.slice, job.index, self.name, rows, job.columns), codes, job.domain)
        elif tuple(self.party.columns) != job.columns or self.party.n_rows != job.n_rows:
            raise MessageError(CURATOR, f"setup for party {self.name!r} describes another slice or columns.")
        self.party._domain = job.domain
        self._number = self._count(fields["number"], "the party's number")
        self._seed = fields.get("seed")
        if self.noise == "curator" and not isinstance(self._seed, int):
            raise MessageError(CURATOR, f"party {self.name!r} uses the curator's noise seed, but none was sent.")
        self._curator_key = _unhex(CURATOR, fields["curator_key"], "curator_key")
        public_key = self.party.setup_secure(_unhex(CURATOR, fields["session"], "session"),
                                             private_key=self._private_key)
        return pack("PublicKey", sender=self.name, fields={"key": _hex(public_key), "noise": self.noise})

    def _measure(self, fields: dict, arrays: dict) -> bytes:
        kind, job = fields["kind"], self.job
        r = job.marginal(fields["r"])
        attrs = job.check_attrs(r, fields["attrs"])
        variance = self._variance(fields)
        rho = 1.0 / (2.0 * variance)
        rng = self._rng(self._count(fields["call"], "the call number"))
        if kind == "count":
            strides, n_cells = job.count_layout(r)
            self._spend(variance)
            values = self.party.local_noisy_count(attrs, strides, n_cells, variance, rng)
            message = SliceCount(self.party.slice, r, values, variance, {self.name: rho})
        elif kind in ("local_marginal", "indicators"):
            if kind == "local_marginal":
                job.count_layout(r)          # the shortcut is for a party holding all of r
            self._spend(variance)
            release = self.party.noisy_local_marginal if kind == "local_marginal" else self.party.noisy_indicators
            message = release(attrs, variance, rho, rng)
        else:
            raise MessageError(CURATOR, f"unknown measurement kind {kind!r}.")
        return to_bytes(message, sender=self.name)

    def _peer_key(self, peer: str, key_hex) -> bytes:
        """The peer's public key, pinned at first sight: the curator cannot swap it within a session."""
        key = _unhex(CURATOR, key_hex, "peer_key")
        if bytes.fromhex(self.peer_keys.setdefault(peer, key.hex())) != key:
            raise MessageError(CURATOR, f"party {self.name!r} was sent another public key for {peer!r} than before.")
        return key

    def _product_open(self, fields: dict, arrays: dict) -> bytes:
        from . import secure_aggregation
        from .secure_product import SCALE_BITS_CHOICES, TripleSeed, pack_words

        call, peer, t = self._count(fields["call"], "the call number"), fields["peer"], fields["triple"]
        r = self.job.marginal(fields["r"])
        attrs = self.job.check_attrs(r, fields["attrs"])
        role = t["role"]
        first, second, n, d1, d2 = self.job.product_layout(r, role, peer)
        # Every ring of SCALE_BITS_CHOICES is safe for the party (secure_product.product_scale_bits): the release
        # is C + noise in each; a narrower one shrinks the relay, and its encoding refuses a noise share outside
        # its range.  The word width follows from the ring (relay_word_bytes), the sizes from the job.
        if (t["n"], t["d1"], t["d2"]) != (n, d1, d2) or t["scale_bits"] not in SCALE_BITS_CHOICES or \
                type(t["scale_bits"]) is not int or set(t) != {"role", "n", "d1", "d2", "scale_bits"}:
            raise MessageError(CURATOR, f"the secure product offered to party {self.name!r} does not have the "
                                        "dimensions its job gives (roster size, the two parties' cells).")
        dealer_key = self.party._secure.pairwise_key(CURATOR, self._curator_key, purpose=DEALER_PURPOSE)
        seed = open_sealed(dealer_key, _unhex(CURATOR, fields["nonce"], "nonce"), arrays["sealed_seed"].tobytes(),
                           f"dealer|{call}|{self.name}".encode(), sender=CURATOR)
        triple = TripleSeed(role=role, seed=seed, n=n, d1=d1, d2=d2, scale_bits=int(t["scale_bits"]))
        masked = self.party.product_masked_input(triple, attrs)
        # Kept so that a party restarted between the two steps (file-based protocol) can resume the product,
        # and so that the second step is held to the layout of the first.
        self.pending_product = {"call": call, "r": list(r), "peer": peer, "attrs": list(attrs),
                                "triple": {**t, "seed": seed.hex()}}
        relay_key = self.party._secure.pairwise_key(peer, self._peer_key(peer, fields["peer_key"]),
                                                    purpose=RELAY_PURPOSE)
        context = f"relay|{call}|{self.name}->{peer}".encode()
        nonce, box = secure_aggregation.seal(relay_key, pack_words(masked, triple.scale_bits), context)
        return pack("Sealed", sender=self.name,
                    fields={"recipient": peer, "nonce": _hex(nonce), "shape": list(masked.shape)},
                    arrays={"ciphertext": np.frombuffer(box, dtype=np.uint8)})

    def _resume_product(self, call: int) -> None:
        """Re-create the product of ``call`` from :attr:`pending_product` if this process did not open it."""
        from .secure_product import TripleSeed

        pending = self.pending_product
        if self.party._product is not None or pending is None or pending["call"] != call:
            return
        t = pending["triple"]
        triple = TripleSeed(role=int(t["role"]), seed=bytes.fromhex(t["seed"]), n=int(t["n"]), d1=int(t["d1"]),
                            d2=int(t["d2"]), scale_bits=int(t["scale_bits"]))
        # The same product resumed, not a reused triple: a ledger of its own (the seed is in the process's).
        self.party.product_masked_input(triple, tuple(pending["attrs"]), ledger=set())

    def _product_share(self, fields: dict, arrays: dict) -> bytes:
        call, peer = self._count(fields["call"], "the call number"), fields["peer"]
        pending = self.pending_product
        if pending is None or (pending["call"], pending["peer"]) != (call, peer) or \
                list(fields["r"]) != pending["r"]:
            raise MessageError(CURATOR, f"party {self.name!r} has no open secure product of this call, peer and "
                                        "marginal.")
        r = tuple(pending["r"])
        first, second, n, d1, d2 = self.job.product_layout(r, int(pending["triple"]["role"]), peer)
        if (tuple(fields["first"]), tuple(fields["second"])) != (first, second):
            raise MessageError(CURATOR, f"the secure product's share requested of party {self.name!r} lays the "
                                        "marginal out otherwise than its job gives.")
        participants = list(fields["participants"])
        if sorted(participants) != sorted([self.name, peer]):
            raise MessageError(CURATOR, f"party {self.name!r} masks a product share only with its peer {peer!r}.")
        keys = {name: _unhex(CURATOR, key, "public key") for name, key in fields["public_keys"].items()}
        if set(keys) != set(participants) or keys[peer].hex() != self.peer_keys.get(peer) or \
                keys[self.name] != self.party.public_key:
            raise MessageError(CURATOR, f"the public keys sent to party {self.name!r} are not its own and its "
                                        "peer's of this session.")
        from .secure_product import product_scale_bits, unpack_words

        variance, f = self._variance(fields), int(pending["triple"]["scale_bits"])
        if f > product_scale_bits(n, [variance]):
            raise MessageError(CURATOR, f"party {self.name!r} refuses the product's fixed point: its own noise "
                                        "share's variance does not fit the narrow ring chosen for it.")
        ciphertext = arrays["ciphertext"]
        if ciphertext.size != self._relay_box_bytes(pending):
            raise MessageError(peer, "its sealed product input does not have the product's dimensions.")
        relay_key = self.party._secure.pairwise_key(peer, keys[peer], purpose=RELAY_PURPOSE)
        plain = open_sealed(relay_key, _unhex(CURATOR, fields["nonce"], "nonce"), ciphertext.tobytes(),
                            f"relay|{call}|{peer}->{self.name}".encode(), sender=peer)
        del ciphertext, arrays["ciphertext"]              # the box is read: do not keep a second copy around
        other = unpack_words(plain, f, (n, d2 if pending["triple"]["role"] == 1 else d1))
        del plain
        self._resume_product(call)
        self._spend(variance)
        masked = self.party.product_share(other, r, first, second, variance, self._rng(call),
                                          keys, self._count(fields["round_id"], "the round"), participants)
        self.pending_product = None
        return pack("MaskedInput", sender=self.name,
                    fields={"round_id": masked.round_id, "participants": list(masked.participants),
                            "transcript": _hex(masked.transcript), "scale_bits": masked.scale_bits},
                    arrays={"values": np.asarray(masked.values)})


    # -- the secure k-party product (secure_chain) -------------------------------------------------
    def _chain_open(self, fields: dict, arrays: dict) -> bytes:
        """Round 0 of a k-party product: open the dealer's sealed seed (and share), seal what it sends."""
        from .secure_chain import ChainSeed
        from .secure_product import SCALE_BITS_CHOICES, unpack_words

        call = self._count(fields["call"], "the call number")
        r = self.job.marginal(fields["r"])
        attrs = self.job.check_attrs(r, fields["attrs"])
        members, position, n, dims = self.job.chain_layout(r)
        names = [p for p, _ in members]
        f = fields["chain"].get("scale_bits") if isinstance(fields["chain"], dict) else None
        # Any ring of SCALE_BITS_CHOICES is safe (the release is C + noise in each); the rest is the job's.
        if type(f) is not int or f not in SCALE_BITS_CHOICES or \
                fields["chain"] != {"parties": names, "n": n, "dims": list(dims), "scale_bits": f}:
            raise MessageError(CURATOR, f"the k-party product offered to party {self.name!r} does not have the "
                                        "order and dimensions its job gives (parties, roster size, cells).")
        peer_keys = fields["peer_keys"]
        if not isinstance(peer_keys, dict) or set(peer_keys) != set(names) - {self.name}:
            raise MessageError(CURATOR, f"the k-party product offered to party {self.name!r} does not name the "
                                        "keys of exactly its other parties.")
        for peer, key in peer_keys.items():
            self._peer_key(peer, key)
        dealer_key = self.party._secure.pairwise_key(CURATOR, self._curator_key, purpose=DEALER_PURPOSE)
        seed = open_sealed(dealer_key, _unhex(CURATOR, fields["nonce"], "nonce"), arrays["sealed_seed"].tobytes(),
                           f"chain-dealer|{call}|{self.name}".encode(), sender=CURATOR)
        explicit = None
        if position >= 3:
            width = math.prod(dims[1:position])
            box = arrays["sealed_share"]
            if box.size != self._box_bytes(n * width, f):
                raise MessageError(CURATOR, f"the explicit triple share sent to party {self.name!r} does not have "
                                            "the dimensions its job gives.")
            plain = open_sealed(dealer_key, _unhex(CURATOR, fields["share_nonce"], "share_nonce"), box.tobytes(),
                                f"chain-share|{call}|{self.name}".encode(), sender=CURATOR)
            explicit = unpack_words(plain, f, (n, width), np.uint64)
        elif "sealed_share" in arrays or "share_nonce" in fields:
            raise MessageError(CURATOR, f"party {self.name!r} at chain position {position} takes no explicit share.")
        message = ChainSeed(position=position, seed=seed, n=n, dims=dims, scale_bits=f)
        outgoing = self.party.chain_open(message, attrs, explicit)
        self.pending_chain = {"call": call, "r": list(r), "members": members, "position": position,
                              "dims": list(dims), "scale_bits": f}
        return self._chain_reply(call, names, outgoing, None, f)

    def _chain_reply(self, call: int, names: list, outgoing: dict, masked, scale_bits: int) -> bytes:
        """The matrices for the other parties, each sealed under the pair's key, and the masked share (if any)."""
        from . import secure_aggregation
        from .secure_product import pack_words

        boxes, out_arrays = [], {}
        for i, (position, matrix) in enumerate(sorted(outgoing.items())):
            peer = names[position - 1]
            key = self.party._secure.pairwise_key(peer, bytes.fromhex(self.peer_keys[peer]), purpose=RELAY_PURPOSE)
            nonce, box = secure_aggregation.seal(key, pack_words(matrix, scale_bits),
                                                 f"chain|{call}|{self.name}->{peer}".encode())
            boxes.append({"to": peer, "nonce": _hex(nonce)})
            out_arrays[f"box{i}"] = np.frombuffer(box, dtype=np.uint8)
        fields = {"boxes": boxes}
        if masked is not None:
            fields["share"] = {"round_id": masked.round_id, "participants": list(masked.participants),
                               "transcript": _hex(masked.transcript), "scale_bits": masked.scale_bits}
            out_arrays["values"] = np.asarray(masked.values)
        return pack("ChainBoxes", sender=self.name, fields=fields, arrays=out_arrays)

    def _chain_step(self, fields: dict, arrays: dict) -> bytes:
        """A later round of the k-party product: open the relayed matrices, compute, seal on (or release)."""
        call, pending = self._count(fields["call"], "the call number"), self.pending_chain
        if pending is None or pending["call"] != call or list(fields["r"]) != pending["r"] or \
                self.party._chain is None or fields["round"] != self.party._chain.next_round:
            raise MessageError(CURATOR, f"party {self.name!r} has no open k-party product of this call, marginal "
                                        "and round.")
        from .secure_chain import chain_matrix_width, chain_receives
        from .secure_product import product_scale_bits, unpack_words

        r, members = tuple(pending["r"]), pending["members"]
        names = [p for p, _ in members]
        want = chain_receives(len(names), pending["position"], fields["round"])
        received = {}
        for i, box in enumerate(fields["boxes"]):
            sender = box["from"]
            if sender not in names or sender == self.name or names.index(sender) + 1 in received:
                raise MessageError(CURATOR, f"party {self.name!r} got a k-party product matrix from no other party "
                                            "of the product, or twice.")
            key = self.party._secure.pairwise_key(sender, bytes.fromhex(self.peer_keys[sender]),
                                                  purpose=RELAY_PURPOSE)
            q, sealed = names.index(sender) + 1, arrays[f"box{i}"]
            if q not in want or sealed.size != self._chain_box_bytes(q):
                raise MessageError(sender, "its k-party product matrix does not have the product's dimensions.")
            plain = open_sealed(key, _unhex(CURATOR, box["nonce"], "nonce"), sealed.tobytes(),
                                f"chain|{call}|{sender}->{self.name}".encode(), sender=sender)
            width = chain_matrix_width(pending["dims"], q, pending["position"])
            received[q] = unpack_words(plain, pending["scale_bits"], (self.job.n_rows, width), np.uint64)
        if len(arrays) != len(fields["boxes"]):
            raise MessageError(CURATOR, f"a k-party product step to party {self.name!r} carries unnamed arrays.")
        variance, keys = None, None
        if self.party.chain_releases:
            participants = list(fields["participants"])
            if sorted(participants) != sorted(names):
                raise MessageError(CURATOR, f"party {self.name!r} masks a k-party product share only with the "
                                            "product's parties.")
            keys = {name: _unhex(CURATOR, key, "public key") for name, key in fields["public_keys"].items()}
            if set(keys) != set(names) or keys[self.name] != self.party.public_key or \
                    any(keys[p].hex() != self.peer_keys.get(p) for p in names if p != self.name):
                raise MessageError(CURATOR, f"the public keys sent to party {self.name!r} are not its own and its "
                                            "product's parties' of this session.")
            variance = self._variance(fields)
            if pending["scale_bits"] > product_scale_bits(self.job.n_rows, [variance], n_terms=len(names) + 1):
                raise MessageError(CURATOR, f"party {self.name!r} refuses the k-party product's fixed point: its own "
                                            "noise share's variance does not fit the narrow ring chosen for it.")
            self._spend(variance)
        outgoing, masked = self.party.chain_step(
            received, r, [attrs for _, attrs in members], variance, self._rng(call), keys or {},
            self._count(fields["round_id"], "the round") if variance is not None else 0, names)
        if self.party._chain is None:
            self.pending_chain = None
        return self._chain_reply(call, names, outgoing, masked, pending["scale_bits"])


# --------------------------------------------------------------------------- backends
class _Backend:
    """Carries request bytes to named parties and their reply bytes back; counts the bytes."""

    kind = "?"

    def __init__(self, hosts: Mapping[str, PartyHost], *, jobs: Mapping[str, Any] | None = None, server=None):
        self.hosts = {name: host if isinstance(host, PartyHost) else PartyHost(host) for name, host in hosts.items()}
        # Each party's own copy of the public job, handed to its server where it starts (not by request).
        self.jobs = dict(jobs or {})
        # What a party runs: ``server(name, source, noise=..., job=...)``, an object whose ``handle`` takes request
        # bytes and returns reply bytes.  A module-level class (picklable by reference) so that a method's own
        # server (e.g. VertiMRF's party) runs on processes and workers without this module importing the method.
        self.server = PartyServer if server is None else server
        self.bytes_sent = 0
        self.bytes_received = 0
        self.n_requests = 0
        self._started = False

    @property
    def names(self) -> tuple:
        return tuple(self.hosts)

    def noise_modes(self) -> dict:
        return {name: host.noise for name, host in self.hosts.items()}

    def start(self) -> "_Backend":
        if not self._started:
            self._start()
            self._started = True
        return self

    def close(self) -> None:
        if self._started:
            self._close()
            self._started = False

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def call(self, requests: Mapping[str, bytes]) -> dict:
        """Send every party its request (concurrently where the backend can) and return ``{party: reply}``."""
        unknown = set(requests) - set(self.hosts)
        if unknown:
            raise KeyError(f"No host for parties {sorted(unknown)}.")
        self.start()
        self.n_requests += len(requests)
        self.bytes_sent += sum(len(r) for r in requests.values())
        replies = self._call(dict(requests))
        for name in requests:
            if name not in replies:
                raise MessageError(name, "no reply (the party dropped out); the round is aborted.")
        for name, reply in replies.items():
            if not isinstance(reply, (bytes, bytearray)):
                raise MessageError(name, f"the reply is a {type(reply).__name__}, not bytes.")
        self.bytes_received += sum(len(r) for r in replies.values())
        return replies

    def _start(self):
        pass

    def _close(self):
        pass


class LocalBackend(_Backend):
    """The parties' servers in this process (the default; same bytes as the distributed backends).

    Parameters
    ----------
    hosts : mapping of party name to PartyHost (or source)
    servers : mapping of party name to PartyServer, optional
        Ready servers (e.g. around in-process parties); then ``hosts`` may be empty.
    jobs : mapping of party name to job, optional
        Each party's own copy of the public job, given to its server where it starts.
    server : class, default=PartyServer
        What each party runs, called as ``server(name, source, noise=..., job=...)``: RandDPGen's
        :class:`PartyServer`, or a method's own (e.g. VertiMRF's
        :class:`~skdpsynth.synthesizers.vertical_mrf.remote.VerticalPartyServer`).  Every backend takes it; for
        processes and dask workers it must be importable where the party runs (a module-level class).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import Federation, HybridPartition
    >>> from skdpsynth.federated.runtime import LocalBackend, PartyHost
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> part = HybridPartition.grid(4, ["a", "b"], n_slices=1, column_groups=[["a"], ["b"]], shuffle=False)
    >>> codes = np.array([[0, 1], [1, 2], [1, 0], [0, 0]])
    >>> backend = LocalBackend({p.name: PartyHost(codes[:, [dom.index(c) for c in p.columns]])
    ...                         for p in part.parties()})
    >>> backend.kind, backend.names
    ('local', ('party0.0', 'party0.1'))
    >>> with Federation.connect(backend, part, dom, seed=0):    # the setup round
    ...     print(backend.servers["party0.1"].holds())
    {'party': 'party0.1', 'columns': ('b',), 'n_rows': 4, 'shape': (4, 1)}
    >>> backend.n_requests
    2
    """

    kind = "local"

    def __init__(self, hosts: Mapping[str, Any] | None = None, *, servers: Mapping[str, PartyServer] | None = None,
                 jobs: Mapping[str, Any] | None = None, server=None):
        super().__init__(hosts or {}, jobs=jobs, server=server)
        self.servers = dict(servers or {})
        for name, server in self.servers.items():
            self.hosts.setdefault(name, PartyHost(None, noise=server.noise))

    def _start(self):
        for name, host in self.hosts.items():
            if name not in self.servers:
                self.servers[name] = self.server(name, host.source, noise=host.noise, job=self.jobs.get(name))

    def _call(self, requests):
        return {name: self.servers[name].handle(request) for name, request in requests.items()}


# One process per party: its server lives in that process's module state.
_PROCESS_SERVER: list = []


def _process_init(name: str, source, noise: str, job=None, server=None) -> None:
    _PROCESS_SERVER[:] = [(server or PartyServer)(name, source, noise=noise, job=job)]


def _process_handle(name: str, request: bytes) -> bytes:
    server = _PROCESS_SERVER[0]
    if server.name != name:
        raise RuntimeError(f"Request for party {name!r} reached the process of party {server.name!r}.")
    return server.handle(request)


def _process_holds() -> dict:
    return _PROCESS_SERVER[0].holds()


class ProcessBackend(_Backend):
    """Every party in a process of its own on this machine (``spawn`` start method).

    Parameters
    ----------
    hosts : mapping of party name to PartyHost (or source)
        Sources must be picklable (a path, or a module-level loader); they are
        read in the party's process.

    Examples
    --------
    Nothing starts before the first request (:meth:`start`, or a
    :class:`~skdpsynth.federated.Federation` connecting to it); then each
    party gets its own process, shut down at :meth:`close`.

    >>> from skdpsynth.federated.runtime import PartyHost, ProcessBackend
    >>> backend = ProcessBackend({"alice": "alice.npy", "bob": PartyHost("bob.npy")})
    >>> backend.kind, backend.names
    ('processes', ('alice', 'bob'))
    >>> backend.hosts["alice"]                  # a bare source becomes a PartyHost
    PartyHost(source='alice.npy', worker=None, noise='private')
    """

    kind = "processes"

    def _start(self):
        context = multiprocessing.get_context("spawn")
        self._executors = {
            name: ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_process_init,
                                      initargs=(name, host.source, host.noise, self.jobs.get(name), self.server))
            for name, host in self.hosts.items()}

    def _call(self, requests):
        futures = {name: self._executors[name].submit(_process_handle, name, request)
                   for name, request in requests.items()}
        try:
            return {name: future.result() for name, future in futures.items()}
        except BrokenProcessPool as exc:
            raise RuntimeError(
                "A party's process died. With backend='processes' the parties' processes are started with the "
                "'spawn' method, which re-imports the main script: guard its top level with "
                "`if __name__ == \"__main__\":`.") from exc

    def holds(self) -> dict:
        """``{party: what its process holds}`` (see :meth:`PartyServer.holds`)."""
        self.start()
        return {name: ex.submit(_process_holds).result() for name, ex in self._executors.items()}

    def _close(self):
        for executor in self._executors.values():
            executor.shutdown(wait=True, cancel_futures=True)
        self._executors = {}


# Servers hosted on dask workers, keyed by (worker address, backend token, party).
_DASK_SERVERS: dict = {}
_DASK_LOCK = threading.Lock()


def _dask_key(name: str, token: str):
    from distributed import get_worker

    return (get_worker().address, token, name)


def _dask_host(name: str, token: str, source, noise: str, job=None, server=None) -> bytes:
    key = _dask_key(name, token)
    with _DASK_LOCK:
        _DASK_SERVERS[key] = (server or PartyServer)(name, source, noise=noise, job=job)
    return pack("Hosted", sender=name)


def _dask_handle(name: str, token: str, request: bytes) -> bytes:
    key = _dask_key(name, token)
    server = _DASK_SERVERS.get(key)
    if server is None:
        raise RuntimeError(f"Party {name!r} is not hosted on worker {key[0]} (was it restarted or moved?).")
    return server.handle(request)


def _dask_holds(token: str, dask_worker=None) -> list:
    """On one worker: what every server of this backend holds there."""
    return [server.holds() for (address, tok, _), server in list(_DASK_SERVERS.items())
            if tok == token and address == dask_worker.address]


def _dask_release(token: str, dask_worker=None) -> int:
    with _DASK_LOCK:
        keys = [k for k in _DASK_SERVERS if k[1] == token and k[0] == dask_worker.address]
        for k in keys:
            del _DASK_SERVERS[k]
    return len(keys)


class DaskBackend(_Backend):
    """Every party on its own ``dask.distributed`` worker; the curator is the client.

    Parameters
    ----------
    client : distributed.Client
    hosts : mapping of party name to PartyHost
        Each with ``worker`` naming a distinct worker of the client's
        cluster; the source is read on that worker.

    Notes
    -----
    Every task is pinned (``workers=[...]``, ``allow_other_workers=False``);
    a party's server lives in its worker's process and is released at
    :meth:`close`.  Tasks return bytes only, which is all the client gathers.

    Examples
    --------
    The client is contacted only when the backend starts; the hosts are
    checked at once (``None`` stands in for a ``distributed.Client`` here).

    >>> from skdpsynth.federated.runtime import DaskBackend, PartyHost
    >>> backend = DaskBackend(None, {"alice": PartyHost("alice.npy", worker="w0"),
    ...                              "bob": PartyHost("bob.npy", worker="w1")})
    >>> backend.kind, backend.names
    ('dask', ('alice', 'bob'))
    >>> DaskBackend(None, {"alice": PartyHost("alice.npy", worker="w0"),
    ...                    "bob": PartyHost("bob.npy", worker="w0")})
    Traceback (most recent call last):
    ...
    ValueError: DaskBackend: workers ['w0'] would host several parties; give each party its own.
    """

    kind = "dask"

    def __init__(self, client, hosts: Mapping[str, PartyHost], *, jobs: Mapping[str, Any] | None = None,
                 server=None):
        super().__init__(hosts, jobs=jobs, server=server)
        self.client = client
        self.token = uuid.uuid4().hex
        missing = [name for name, host in self.hosts.items() if not host.worker]
        if missing:
            raise ValueError(f"DaskBackend: parties {missing} name no worker (PartyHost(worker=...)).")
        workers = [host.worker for host in self.hosts.values()]
        shared = sorted({w for w in workers if workers.count(w) > 1})
        if shared:
            raise ValueError(f"DaskBackend: workers {shared} would host several parties; give each party its own.")

    def _address(self, worker: str) -> str:
        info = self.client.scheduler_info()["workers"]
        for address, meta in info.items():
            if worker in (address, meta.get("name"), str(meta.get("name"))):
                return address
        names = sorted(str(meta.get("name")) for meta in info.values())
        raise ValueError(f"DaskBackend: no worker {worker!r} in the cluster (workers: {names}).")

    def _start(self):
        self._addresses = {name: self._address(host.worker) for name, host in self.hosts.items()}
        futures = [self.client.submit(_dask_host, name, self.token, host.source, host.noise, self.jobs.get(name),
                                      self.server, workers=[self._addresses[name]], allow_other_workers=False, pure=False,
                                      key=f"skdpsynth-host-{name}-{self.token}")
                   for name, host in self.hosts.items()]
        for name, reply in zip(self.hosts, self.client.gather(futures)):
            unpack(reply, kinds=("Hosted",), sender=name)

    def _call(self, requests):
        names = list(requests)
        futures = [self.client.submit(_dask_handle, name, self.token, requests[name],
                                      workers=[self._addresses[name]], allow_other_workers=False, pure=False,
                                      key=f"skdpsynth-{name}-{uuid.uuid4().hex}")
                   for name in names]
        return dict(zip(names, self.client.gather(futures)))

    def holds(self) -> dict:
        """``{worker address: [what each hosted server holds]}`` (an audit of where the data are)."""
        self.start()
        return self.client.run(_dask_holds, self.token, workers=sorted(set(self._addresses.values())))

    def _close(self):
        with contextlib.suppress(Exception):
            self.client.run(_dask_release, self.token, workers=sorted(set(self._addresses.values())))


BACKENDS = ("local", "processes", "dask")


def warn_curator_noise(modes: Mapping[str, str], ledger=None) -> None:
    """The ``PrivacyLeakWarning`` of parties that let the curator seed their noise."""
    seeded = sorted(name for name, mode in modes.items() if mode == "curator")
    if seeded:
        warn_privacy_leak(
            f"Parties {seeded} draw their noise from the curator's seed (PartyHost(noise='curator')): the curator "
            "can regenerate and remove it, so the fit is not differentially private towards the curator. Use "
            "noise='private' (the default) outside tests and benchmarks.",
            stacklevel=4, ledger=ledger, description=f"noise of parties {seeded} seeded by the curator")

