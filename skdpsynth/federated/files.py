"""The file-based protocol: parties and a curator that share no cluster, only a folder of messages.

Organisations that will not run each other's code exchange files: the
curator writes one request file per party and round into an *exchange*
folder, every party answers with a reply file, and the curator goes on.  The
files are the very bytes the other backends carry (request packets, DP
messages, sealed or masked protocol packets; never pickles), so a fit over
files equals a fit over processes or dask workers.  ``skdpsynth party`` and
``skdpsynth curator`` (:mod:`skdpsynth.cli`) are the two roles.

The job description
-------------------
One public JSON file that every participant reads (:func:`write_job`,
:func:`read_job`)::

    {"format": "skdpsynth-federated-job", "version": 1,
     "method": "hybrid",                       # HybridSynthesizer (RandDPGen)
     "epsilon": 1.0, "delta": 1e-09,           # the whole fit's guarantee
     "domain": {"age": 10, "sex": 2, ...},     # every column and its number of codes
     "parties": [{"name": "party0.0", "rows": [0, 3, ...], "columns": ["age", ...]}, ...],
     "parameters": {"max_rounds": 9}}          # other HybridSynthesizer hyper-parameters (optional)

``parties`` is the public roster: a party's ``rows`` are positions in the
joint roster (parties with the same rows form a slice; within a slice they
hold the same individuals in the same order), ``columns`` what it holds.
Every party's data file holds its rows, in roster order, as integer codes of
``domain`` (a CSV with a header naming its columns, or a ``.npy`` array).

A VertiMRF job (``VerticalMRFSynthesizer``) says ``"method": "vertical"``;
its parties have a name and columns and no rows (they hold every record,
aligned by the parties beforehand, and the number of records is not public:
VertiMRF releases a noisy count), and an optional ``"n_rows"`` makes that
number public::

    {"format": "skdpsynth-federated-job", "version": 1, "method": "vertical",
     "epsilon": 1.0, "delta": 1e-06, "domain": {"age": 10, "sex": 2, ...},
     "parties": [{"name": "hospital", "columns": ["age", ...]}, {"name": "insurer", ...}],
     "parameters": {"n_sketches": 500}}       # VerticalMRFSynthesizer hyper-parameters (optional)

The exchange folder
-------------------
``round-RRRR.NAME.request`` (curator → party ``NAME``), ``round-RRRR.NAME.reply``
(party → curator), and ``done`` when the curator has finished.  Files are
written to a temporary name and renamed, so a reader never sees half a file.
The curator replays a fit from the replies already present, so it can stop
(``--no-wait``) and be started again; its private state (the seed of its own
choices, its key pair, the secret its triple seeds derive from) lives in its
state folder, a party's (its key pair, its setup, its spent budget) in its
own.  Keep both private; delete them after the fit.
"""
from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path

from ..domain import Domain
from .party_job import PartyJob
from .curator import FederatedData, VerticalFederatedData, vertical_parties
from .runtime import CURATOR, PartyHost, PartyServer, _Backend
from . import wire as _wire
from .wire import MessageError, unpack

__all__ = ["JOB_FORMAT", "read_job", "write_job", "FileBackend", "WaitingForParties", "FileFederatedData",
           "FileVerticalFederatedData",
           "CuratorState", "answer_requests"]

#: The ``"format"`` field of a job description written by :func:`write_job`; :func:`read_job` refuses other files.
JOB_FORMAT = "skdpsynth-federated-job"
JOB_VERSION = 1
METHODS = ("hybrid", "vertical")
"""The methods a job description runs: RandDPGen (HybridSynthesizer) and VertiMRF (VerticalMRFSynthesizer)."""
DONE = "done"


class WaitingForParties(RuntimeError):
    """The curator needs replies that are not in the exchange folder yet.

    Examples
    --------
    >>> from skdpsynth.federated.files import WaitingForParties
    >>> try:
    ...     raise WaitingForParties(3, ["party0.1", "party0.0"])
    ... except WaitingForParties as waiting:
    ...     print(waiting)
    waiting for party0.0, party0.1 to answer round 3
    """

    def __init__(self, round_: int, parties):
        self.round = round_
        self.parties = sorted(parties)
        super().__init__(f"waiting for {', '.join(self.parties)} to answer round {round_}")


def _atomic_write(path: Path, data: bytes, *, private: bool = False) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    if private:
        os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _request_path(exchange: Path, round_: int, name: str) -> Path:
    return exchange / f"round-{round_:04d}.{name}.request"


def _reply_path(exchange: Path, round_: int, name: str) -> Path:
    return exchange / f"round-{round_:04d}.{name}.reply"


# --------------------------------------------------------------------------- the job description
def write_job(path, *, domain, partition, epsilon: float, delta: float, parameters: Mapping | None = None,
              method: str = "hybrid", n_rows: int | None = None) -> dict:
    """Write a job description (see the module docstring); returns it as a dict.

    ``method="vertical"`` (VertiMRF): ``partition`` is ``{party: columns}``
    (or lists of columns), with no rows; ``n_rows`` only if the number of
    records is public.

    Examples
    --------
    >>> import tempfile, os
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.files import read_job, write_job
    >>> part = HybridPartition([[0, 1], [2, 3]], [["a"], ["b"]])
    >>> path = os.path.join(tempfile.mkdtemp(), "job.json")
    >>> _ = write_job(path, domain={"a": 2, "b": 3}, partition=part, epsilon=1.0, delta=1e-9)
    >>> job = read_job(path)
    >>> job["partition"].n_parties, job["domain"].size()
    (4, 6)
    """
    from .partition import HybridPartition

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    domain = domain if isinstance(domain, Domain) else Domain.from_dict(dict(domain))
    job = {"format": JOB_FORMAT, "version": JOB_VERSION, "method": method, "epsilon": float(epsilon),
           "delta": float(delta), "domain": {str(a): int(domain[a]) for a in domain.attrs}}
    if method == "vertical":
        job["parties"] = [{"name": name, "columns": [str(c) for c in cols]}
                          for name, cols in vertical_parties(domain, partition)]
        if n_rows is not None:
            job["n_rows"] = int(n_rows)
    else:
        job["parties"] = [{"name": p.name, "rows": [int(r) for r in p.rows], "columns": [str(c) for c in p.columns]}
                          for p in HybridPartition.coerce(partition).parties()]
    job["parameters"] = dict(parameters or {})
    Path(path).write_text(json.dumps(job, indent=1, allow_nan=False))
    return job


def read_job(path) -> dict:
    """Read and check a job description; ``domain`` and ``partition`` come back as objects.

    Raises
    ------
    ValueError
        On anything malformed (naming what).

    Examples
    --------
    >>> import os, tempfile
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.files import read_job, write_job
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "job.json")
    ...     _ = write_job(path, domain={"a": 2, "b": 3}, partition=HybridPartition([[0, 1], [2, 3]], [["a"], ["b"]]),
    ...                   epsilon=1.0, delta=1e-9, parameters={"max_rounds": 9})
    ...     job = read_job(path)
    >>> job["method"], job["epsilon"], job["parameters"], job["domain"].attrs
    ('hybrid', 1.0, {'max_rounds': 9}, ('a', 'b'))
    >>> [(p.name, p.columns) for p in job["partition"].parties()]
    [('party0.0', ('a',)), ('party0.1', ('b',)), ('party1.0', ('a',)), ('party1.1', ('b',))]
    """
    from .partition import HybridPartition

    try:
        job = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"Cannot read the job description {os.fspath(path)!r}: {exc}") from None
    if not isinstance(job, dict) or job.get("format") != JOB_FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a job description (format {JOB_FORMAT!r}).")
    if job.get("version") != JOB_VERSION:
        raise ValueError(f"Job description version {job.get('version')!r}; this version reads {JOB_VERSION}.")
    if job.get("method") not in METHODS:
        raise ValueError(f"Job method {job.get('method')!r}: the file-based protocol runs {' or '.join(map(repr, METHODS))}"
                         " (RandDPGen, VertiMRF).")
    for key in ("epsilon", "delta"):
        value = job.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"Job {key} must be a positive number, got {value!r}.")
    if not isinstance(job.get("parameters", {}), dict):
        raise ValueError("Job parameters must be an object of the method's hyper-parameters.")
    if job["method"] == "vertical":
        return _read_vertical_job(job, path)
    try:
        domain = Domain.from_dict({str(k): int(v) for k, v in dict(job["domain"]).items()})
        partition = HybridPartition.coerce(list(job["parties"])).validate(list(domain.attrs),
                                                                          _roster_size(job["parties"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"Job description {os.fspath(path)!r}: {exc}") from None
    return {**job, "domain": domain, "partition": partition, "parameters": dict(job.get("parameters", {}))}


def _read_vertical_job(job: dict, path) -> dict:
    n_rows = job.get("n_rows")
    if n_rows is not None and (isinstance(n_rows, bool) or not isinstance(n_rows, int) or n_rows < 1):
        raise ValueError(f"Job n_rows must be a positive integer (the public number of records) or absent, got "
                         f"{n_rows!r}.")
    try:
        domain = Domain.from_dict({str(k): int(v) for k, v in dict(job["domain"]).items()})
        parties = vertical_parties(domain, [(str(p["name"]), list(p["columns"])) for p in job["parties"]])
        if any(set(p) - {"name", "columns"} for p in job["parties"]):
            raise ValueError("a vertical job's parties have a name and columns only (no rows: the number of "
                             "records is not public; give n_rows if it is)")
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"Job description {os.fspath(path)!r}: {exc}") from None
    return {**job, "domain": domain, "party_columns": parties, "n_rows": n_rows,
            "parameters": dict(job.get("parameters", {}))}


def _roster_size(parties) -> int:
    rows = [int(r) for p in parties for r in p["rows"]]
    return max(rows) + 1 if rows else 0


# --------------------------------------------------------------------------- the curator's side
class FileBackend(_Backend):
    """The curator's carrier over an exchange folder: requests out as files, replies in as files.

    Parameters
    ----------
    names : sequence of str
        The parties.
    exchange : path
    timeout : float or None, default=None
        Seconds to wait for missing replies (polling); ``None`` raises
        :class:`WaitingForParties` at once (the curator stops and is run
        again later, replaying from the files).
    poll : float, default=0.2
        Seconds between looks at the folder while waiting.

    Examples
    --------
    The first run writes the request and stops; a party writes its reply;
    the next run (a new backend, from round 0 again) finds it:

    >>> import os, tempfile
    >>> from skdpsynth.federated.files import FileBackend, WaitingForParties
    >>> with tempfile.TemporaryDirectory() as exchange:
    ...     try:
    ...         FileBackend(["p0"], exchange).call({"p0": b"request bytes"})
    ...     except WaitingForParties as waiting:
    ...         print(waiting)
    ...     print(os.listdir(exchange))
    ...     with open(os.path.join(exchange, "round-0000.p0.reply"), "wb") as f:
    ...         _ = f.write(b"reply bytes")
    ...     print(FileBackend(["p0"], exchange).call({"p0": b"request bytes"}))
    waiting for p0 to answer round 0
    ['round-0000.p0.request']
    {'p0': b'reply bytes'}
    """

    kind = "files"

    def __init__(self, names, exchange, *, timeout: float | None = None, poll: float = 0.2):
        super().__init__({name: PartyHost(None) for name in names})
        self.exchange = Path(exchange)
        self.timeout = timeout
        self.poll = float(poll)
        self.round = 0

    def _start(self):
        self.exchange.mkdir(parents=True, exist_ok=True)

    def _call(self, requests):
        round_, self.round = self.round, self.round + 1
        missing = []
        for name, request in requests.items():
            if not _reply_path(self.exchange, round_, name).exists():
                if not _request_path(self.exchange, round_, name).exists():
                    _atomic_write(_request_path(self.exchange, round_, name), request)
                missing.append(name)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while missing:
            if deadline is None or time.monotonic() > deadline:
                raise WaitingForParties(round_, missing)
            time.sleep(self.poll)
            missing = [n for n in missing if not _reply_path(self.exchange, round_, n).exists()]
        return {name: _reply_path(self.exchange, round_, name).read_bytes() for name in requests}

    def finish(self) -> None:
        """Tell the parties the fit is over (the ``done`` file)."""
        _atomic_write(self.exchange / DONE, b"")


class CuratorState:
    """The curator's private state in its folder: its seed, its X25519 key and its dealer secret.

    Created on the first run (from OS entropy, or ``seed``), read on the
    next ones, so that a replayed fit makes the same choices and sends the
    same sealed seeds.  The file is private (mode 0600): whoever holds it
    can recompute the curator's own noise (its selections).

    Examples
    --------
    >>> import tempfile
    >>> from skdpsynth.federated.files import CuratorState
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     state = CuratorState(folder, seed=0)
    ...     again = CuratorState(folder)          # a later run reads the same state
    ...     print(again.seed, again.dealer_secret == state.dealer_secret, len(again.private_key))
    0 True 32
    """

    FILE = "curator-state.json"

    def __init__(self, folder, *, seed: int | None = None):
        self.path = Path(folder) / self.FILE
        if self.path.exists():
            state = json.loads(self.path.read_text())
            if seed is not None and seed != state["seed"]:
                raise ValueError(f"The curator state in {os.fspath(folder)!r} has another seed; use a new state "
                                 "folder for a new fit.")
        else:
            state = {"seed": int(seed) if seed is not None else int.from_bytes(os.urandom(8), "big") >> 1,
                     "session": (b"skdpsynth/federation/" + os.urandom(16)).hex(),
                     "private_key": os.urandom(32).hex(), "dealer_secret": os.urandom(32).hex()}
            Path(folder).mkdir(parents=True, exist_ok=True)
            _atomic_write(self.path, json.dumps(state).encode(), private=True)
        self.seed = int(state["seed"])
        self.session = bytes.fromhex(state["session"])
        self.private_key = bytes.fromhex(state["private_key"])
        self.dealer_secret = bytes.fromhex(state["dealer_secret"])


class FileFederatedData(FederatedData):
    """:class:`~skdpsynth.federated.FederatedData` whose parties answer through an exchange folder.

    Parameters
    ----------
    job : dict
        From :func:`read_job`.
    exchange : path
    state : CuratorState
    timeout : float or None
        See :class:`FileBackend`.

    Examples
    --------
    The curator measures one marginal; every time it stops for missing
    replies, the parties answer from their own data, and it runs again
    (replaying the rounds already answered):

    >>> import os, tempfile
    >>> import numpy as np
    >>> from skdpsynth.federated import HybridPartition, combine
    >>> from skdpsynth.federated.files import (CuratorState, FileFederatedData, WaitingForParties,
    ...                                        answer_requests, read_job, write_job)
    >>> codes = np.array([[0, 1], [1, 2], [1, 0], [0, 1]])
    >>> part = HybridPartition.vertical(4, [["a"], ["b"]])
    >>> own = {"party0.0": codes[:, [0]], "party0.1": codes[:, [1]]}   # each party's columns
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = write_job(os.path.join(tmp, "job.json"), domain={"a": 2, "b": 3}, partition=part,
    ...                   epsilon=1e6, delta=1e-9)                         # tiny noise
    ...     job = read_job(os.path.join(tmp, "job.json"))
    ...     exchange = os.path.join(tmp, "exchange")
    ...     data = FileFederatedData(job, exchange, CuratorState(os.path.join(tmp, "curator"), seed=0))
    ...     while True:
    ...         try:
    ...             reply = data.federation(seed=0).measure(("a", "b"), rho=1e5)
    ...             break
    ...         except WaitingForParties as waiting:
    ...             print(waiting)
    ...             for name in waiting.parties:
    ...                 _ = answer_requests(job, name, own[name], exchange, os.path.join(tmp, name))
    waiting for party0.0, party0.1 to answer round 0
    waiting for party0.0, party0.1 to answer round 1
    waiting for party0.0, party0.1 to answer round 2
    >>> values, _ = combine(reply, job["domain"])
    >>> np.round(values).astype(int).tolist()
    [0, 2, 0, 1, 0, 1]
    """

    def __init__(self, job: dict, exchange, state: CuratorState, *, timeout: float | None = None):
        names = [p.name for p in job["partition"].parties()]
        super().__init__(job["domain"], job["partition"], {n: PartyHost(None) for n in names})
        self.exchange = Path(exchange)
        self.state = state
        self.timeout = timeout
        self.last_backend = None

    def make_backend(self) -> FileBackend:
        self.last_backend = FileBackend([p.name for p in self.partition.parties()], self.exchange,
                                        timeout=self.timeout)
        return self.last_backend

    def connect_options(self) -> dict:
        return {"dealer_secret": self.state.dealer_secret, "session": self.state.session,
                "curator_private_key": self.state.private_key}


class FileVerticalFederatedData(VerticalFederatedData):
    """:class:`~skdpsynth.federated.VerticalFederatedData` whose parties answer through an exchange folder.

    Parameters
    ----------
    job : dict
        From :func:`read_job`, a ``"method": "vertical"`` job.
    exchange : path
    state : CuratorState
        Its session id is kept, so that a replayed run sends the same setup.
    timeout : float or None
        See :class:`FileBackend`.

    Examples
    --------
    The curator's first run writes the setup requests and stops; ``skdpsynth party`` answers them, and so on
    (``doc/federated.md``, "VertiMRF's parties over the runtime"):

    >>> import os, tempfile
    >>> from skdpsynth.federated.files import (CuratorState, FileVerticalFederatedData, WaitingForParties,
    ...                                        read_job, write_job)
    >>> from skdpsynth.synthesizers import VerticalMRFSynthesizer
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = write_job(os.path.join(tmp, "job.json"), domain={"a": 2, "b": 3}, partition={"p0": ["a"], "p1": ["b"]},
    ...                   epsilon=1.0, delta=1e-6, method="vertical")
    ...     job = read_job(os.path.join(tmp, "job.json"))
    ...     data = FileVerticalFederatedData(job, os.path.join(tmp, "exchange"), CuratorState(os.path.join(tmp, "c")))
    ...     try:
    ...         VerticalMRFSynthesizer(1.0, 1e-6, secure_computation="cryptographic").fit(data)
    ...     except WaitingForParties as waiting:
    ...         print(waiting)
    ...     print(sorted(os.listdir(os.path.join(tmp, "exchange"))))
    waiting for p0, p1 to answer round 0
    ['round-0000.p0.request', 'round-0000.p1.request']
    """

    def __init__(self, job: dict, exchange, state: CuratorState, *, timeout: float | None = None):
        parties = job["party_columns"]
        super().__init__(job["domain"], parties, {name: PartyHost(None) for name, _ in parties}, n_rows=job["n_rows"])
        self.exchange = Path(exchange)
        self.state = state
        self.timeout = timeout
        self.last_backend = None

    def make_backend(self, *, server=None, jobs=None) -> FileBackend:
        """The exchange folder (each party's server and job are its own, where it runs)."""
        self.last_backend = FileBackend([name for name, _ in self.parties], self.exchange, timeout=self.timeout)
        return self.last_backend

    def session(self) -> bytes:
        return self.state.session


# --------------------------------------------------------------------------- a party's side
class _PartyState:
    FILE = "party-state.json"

    def __init__(self, folder, name: str):
        self.path = Path(folder) / self.FILE
        self.name = name
        if self.path.exists():
            state = json.loads(self.path.read_text())
            if state["name"] != name:
                raise ValueError(f"The party state in {os.fspath(folder)!r} belongs to {state['name']!r}.")
        else:
            state = {"name": name, "private_key": os.urandom(32).hex(), "setup": None, "spent_rho": 0.0}
            Path(folder).mkdir(parents=True, exist_ok=True)
        self.state = state

    def save(self) -> None:
        _atomic_write(self.path, json.dumps(self.state).encode(), private=True)


def answer_requests(job: dict, name: str, data, exchange, state_folder, *, noise: str = "private",
                    server=None) -> int:
    """Answer every request for party ``name`` waiting in the exchange folder; returns how many.

    The party checks that the curator's setup matches the public job
    (domain and its own roster entry) and never spends more than the job's
    budget (its own zCDP over all its answers).  A vertical job's party
    (VertiMRF) runs ``server``, its method's own (this layer does not import
    the methods), and sends its one message once.

    Parameters
    ----------
    job : dict
        From :func:`read_job`.
    name : str
        This party.
    data : path or source
        Its records (see :func:`~skdpsynth.federated.runtime.load_party_codes`).
    exchange, state_folder : path
    noise : {"private", "curator"}, default="private"
    server : callable, optional
        For ``"method": "vertical"`` jobs (required there):
        ``server(job, name, data, noise=..., private_key=...)`` returns the
        party's server, with ``handle``, ``saved_state`` and ``restore``, e.g.
        :meth:`VerticalPartyServer.for_job
        <skdpsynth.synthesizers.vertical_mrf.remote.VerticalPartyServer.for_job>`
        (what ``skdpsynth party`` passes).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.files import (CuratorState, FileFederatedData, WaitingForParties,
    ...                                        answer_requests, read_job, write_job)
    >>> codes = np.array([[0], [1], [1], [0]])                           # party0.0's column "a"
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = write_job(os.path.join(tmp, "job.json"), domain={"a": 2, "b": 3},
    ...                   partition=HybridPartition.vertical(4, [["a"], ["b"]]), epsilon=1.0, delta=1e-9)
    ...     job = read_job(os.path.join(tmp, "job.json"))
    ...     exchange = os.path.join(tmp, "exchange")
    ...     data = FileFederatedData(job, exchange, CuratorState(os.path.join(tmp, "curator"), seed=0))
    ...     try:
    ...         data.federation(seed=0)                                  # the curator's setup requests
    ...     except WaitingForParties:
    ...         pass
    ...     state = os.path.join(tmp, "party0.0")
    ...     print(answer_requests(job, "party0.0", codes, exchange, state),
    ...           answer_requests(job, "party0.0", codes, exchange, state))   # nothing new the second time
    ...     print(sorted(f for f in os.listdir(exchange) if "party0.0" in f))
    1 0
    ['round-0000.party0.0.reply', 'round-0000.party0.0.request']
    """
    from ..privacy import cdp_rho

    if job["method"] == "vertical":
        return _answer_vertical(job, name, data, Path(exchange), state_folder, noise=noise, server=server)
    specs = {p.name: p for p in job["partition"].parties()}
    if name not in specs:
        raise ValueError(f"The job has no party {name!r} (its parties: {sorted(specs)}).")
    exchange = Path(exchange)
    state = _PartyState(state_folder, name)
    server = PartyServer(name, data, noise=noise, private_key=bytes.fromhex(state.state["private_key"]),
                         max_rho=cdp_rho(job["epsilon"], job["delta"]),
                         job=PartyJob.from_partition(job["domain"], job["partition"], name))
    server.spent_rho = float(state.state["spent_rho"])
    if state.state["setup"] is not None:
        server.handle(bytes.fromhex(state.state["setup"]))   # restore: the same keys and job as at setup
        server.spent_rho = float(state.state["spent_rho"])
        server.pending_product = state.state.get("pending_product")
        server.peer_keys = dict(state.state.get("peer_keys", {}))
    answered = 0
    for request_path in sorted(exchange.glob(f"round-*.{name}.request")):
        round_ = int(request_path.name.split(".")[0].split("-")[1])
        reply_path = _reply_path(exchange, round_, name)
        if reply_path.exists():
            continue
        request = request_path.read_bytes()
        # The request's size limit is the one the server applies: derived from its job and open product.
        op = unpack(request, kinds=("Request",), sender=CURATOR, max_bytes=_wire.MAX_BYTES,
                    size_limit=server._request_limit).fields.get("op")
        if op in ("chain_open", "chain_step"):
            # A k-party product's state (its share of the chain, n x cells words) lives in the party's process
            # between rounds; this role restarts between rounds and does not persist it yet.
            raise NotImplementedError(
                f"Party {name!r}: the file-based role does not run the secure k-party product (a marginal split "
                "among three or more parties of a slice) yet; use a workload whose marginals span at most two "
                "parties per slice, or the processes/dask backends.")
        reply = server.handle(request)       # the server refuses a setup for another job than its own
        if op == "setup":
            state.state["setup"] = request.hex()
        state.state["spent_rho"] = server.spent_rho
        state.state["pending_product"] = server.pending_product
        state.state["peer_keys"] = server.peer_keys
        state.save()
        _atomic_write(reply_path, reply)
        answered += 1
    return answered


def _pending(exchange: Path, name: str):
    """``(request bytes, reply path)`` of every request to ``name`` not answered yet, in round order."""
    for request_path in sorted(exchange.glob(f"round-*.{name}.request")):
        reply_path = _reply_path(exchange, int(request_path.name.split(".")[0].split("-")[1]), name)
        if not reply_path.exists():
            yield request_path.read_bytes(), reply_path


def _answer_vertical(job: dict, name: str, data, exchange: Path, state_folder, *, noise: str, server) -> int:
    """:func:`answer_requests` for a vertical job: the method's server, restored from the party's state folder."""
    names = [party for party, _ in job["party_columns"]]
    if name not in names:
        raise ValueError(f"The job has no party {name!r} (its parties: {sorted(names)}).")
    if server is None:
        raise ValueError("A vertical job's party runs VertiMRF's server: pass server= (skdpsynth party does).")
    state = _PartyState(state_folder, name)
    party = server(job, name, data, noise=noise, private_key=bytes.fromhex(state.state["private_key"]))
    party.restore(state.state.get("server") or {})
    answered = 0
    for request, reply_path in _pending(exchange, name):
        reply = party.handle(request)        # refuses a job other than its own, and a second message
        state.state["server"] = party.saved_state()   # before the reply: a party never answers twice
        state.save()
        _atomic_write(reply_path, reply)
        answered += 1
    return answered


def is_done(exchange) -> bool:
    """Whether the curator has finished (the ``done`` file exists)."""
    return (Path(exchange) / DONE).exists()

