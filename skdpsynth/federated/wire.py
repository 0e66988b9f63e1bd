"""The wire format of party → curator messages: typed, versioned, never pickled.

Every message of :mod:`~skdpsynth.federated.messages` crosses the trust
boundary as one ``.npz`` archive (written by :func:`numpy.savez`; each
member read once, its ``.npy`` header checked before its data, and no dtype
that would need pickle accepted) holding its float arrays plus one JSON
header, the ``header`` member (UTF-8 bytes as a ``uint8`` vector)::

    {"format": "skdpsynth-federated-message",   # FORMAT_NAME
     "version": 1,                               # FORMAT_VERSION
     "kind": "SliceCount",                       # or NoisyIndicators, NoisyLocalMarginal, MeasurementReply
     "sender": "party0.0",
     "fields": {...},      # the dataclass's scalar fields (attrs as a list)
     "arrays": {"values": {"key": "values", "shape": [6], "dtype": "<f8"}},
     "parts": [...],       # MeasurementReply only: one {"kind", "fields", "arrays"} per part
     "ledger": [{...}]}    # the sender's LedgerEntry's, one JSON object each

:func:`to_bytes` writes a message; :func:`from_bytes` reads one back into an
:class:`Envelope` after validating everything it can (see its docstring), and
raises :class:`MessageError`, naming the sender, on anything malformed or
inconsistent.  A round trip is exact: :func:`same_message` holds between the
message sent and the message received.

VertiMRF's party messages (kind ``"VerticalMessage"``, :data:`VERTICAL_KIND`)
use the same archive and header, with integer sketch and GRR arrays besides
the float ones: :func:`vertical_to_bytes` and :func:`read_vertical_fields`.
What those fields must hold for a given job is VertiMRF's to check
(:mod:`skdpsynth.synthesizers.vertical_mrf.message`).
"""
from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ..domain import Domain
from ..privacy.ledger import LedgerEntry, PrivacyLedger
from ..utils import moved_names
from .dmm import PROTOCOLS
from .messages import MeasurementReply, NoisyIndicators, NoisyLocalMarginal, SliceCount

# Names moved to other modules (doc/changelog.md): importable from here, with a DeprecationWarning, until 0.2.
_MOVED = {"vertical_from_bytes": "skdpsynth.synthesizers.vertical_mrf.message",
          "check_vertical_message": "skdpsynth.synthesizers.vertical_mrf.message"}

__getattr__ = moved_names(__name__, _MOVED)

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MessageError",
    "Envelope",
    "to_bytes",
    "from_bytes",
    "ledger_entries_for",
    "same_message",
    "VERTICAL_KIND",
    "vertical_to_bytes",
    "read_vertical_fields",
]

#: The ``"format"`` field of every message header; a message with another value is refused.
FORMAT_NAME = "skdpsynth-federated-message"
#: The wire-format version this package writes and accepts (the header's ``"version"``).
FORMAT_VERSION = 1
MAX_BYTES = 256 * 2**20  # default limit on an archive (and on its members' total size)
MAX_MEMBERS = 10_000  # default limit on the number of arrays in an archive

Message = Union[SliceCount, NoisyIndicators, NoisyLocalMarginal, MeasurementReply]
_KINDS = {cls.__name__: cls for cls in (SliceCount, NoisyIndicators, NoisyLocalMarginal, MeasurementReply)}
_PART_KINDS = ("SliceCount", "NoisyIndicators", "NoisyLocalMarginal")
_SCALARS = {  # the JSON fields of each kind (attrs as a list); the array field is separate
    "SliceCount": ("slice", "attrs", "variance", "party_rhos"),
    "NoisyIndicators": ("slice", "party", "attrs", "variance", "rho"),
    "NoisyLocalMarginal": ("slice", "party", "attrs", "variance", "rho"),
    "MeasurementReply": ("attrs", "rho", "n_repeats", "protocol"),
}
_ARRAY = {"SliceCount": ("values", 1), "NoisyIndicators": ("matrix", 2), "NoisyLocalMarginal": ("values", 1)}
_HEADER_KEYS = {"format", "version", "kind", "sender", "fields", "arrays", "ledger"}
_ENTRY_FIELDS = tuple(f.name for f in dataclasses.fields(LedgerEntry))
_EXPECTED_KEYS = {"sender", "kind", "attrs", "rho", "protocol", "n_repeats"}
_FLOAT = np.dtype(np.float64)
_REL = 1e-12  # relative tolerance of budget claims against ledger entries and expected requests
_CALIBRATION_REL = 1e-9  # relative tolerance of recomputed variances and per-slice budget sums


class MessageError(ValueError):
    """A received message is malformed, tampered with or inconsistent; ``sender`` says whose it is.

    Examples
    --------
    >>> from skdpsynth.federated.wire import from_bytes
    >>> from_bytes(b"not an archive", expected={"sender": "party0.1"})
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from 'party0.1': not a zip (.npz) archive.
    """

    def __init__(self, sender: str | None, problem: str):
        self.sender = sender
        self.problem = problem
        who = "an unknown sender" if sender is None else repr(sender)
        super().__init__(f"Message from {who}: {problem}")


@dataclass(frozen=True)
class Envelope:
    """A received message, validated, with its sender and the sender's ledger entries.

    Attributes
    ----------
    message : SliceCount, NoisyIndicators, NoisyLocalMarginal or MeasurementReply
    sender : str
    kind : str
        The message's class name.
    version : int
        The format version it was written with.
    ledger_entries : tuple of LedgerEntry
        What the sender recorded as spent for it (every entry's ``party`` set;
        an entry sent without one is the sender's).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated import NoisyLocalMarginal
    >>> from skdpsynth.federated.wire import from_bytes, to_bytes
    >>> m = NoisyLocalMarginal(0, "party0.0", ("a",), np.array([4.2, 1.9]), variance=0.5, rho=1.0)
    >>> env = from_bytes(to_bytes(m, sender="party0.0"))
    >>> env.sender, env.kind, env.version
    ('party0.0', 'NoisyLocalMarginal', 1)
    >>> env.message.values.tolist(), env.ledger().total_rho()
    ([4.2, 1.9], 1.0)
    """

    message: Any
    sender: str
    kind: str
    version: int
    ledger_entries: tuple[LedgerEntry, ...]

    def ledger(self) -> PrivacyLedger:
        """The ledger entries as a :class:`~skdpsynth.privacy.PrivacyLedger`."""
        return PrivacyLedger(self.ledger_entries)


# --------------------------------------------------------------------------- sending
def ledger_entries_for(message: Message) -> tuple[LedgerEntry, ...]:
    """The zCDP ledger entries that back a message's budget claims: one per (part, party).

    Each entry is a Gaussian release at unit L2 sensitivity by the party that
    spent it (a discrete Gaussian share for a :class:`SliceCount`, continuous
    Gaussian noise for protocol B's messages); :func:`to_bytes` sends these
    when not given entries.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated import NoisyLocalMarginal
    >>> from skdpsynth.federated.wire import ledger_entries_for
    >>> m = NoisyLocalMarginal(0, "party0.0", ("a",), np.array([3.0, 1.0]), variance=0.5, rho=1.0)
    >>> [(e.party, e.rho, e.n_values) for e in ledger_entries_for(m)]
    [('party0.0', 1.0, 2)]
    """
    if isinstance(message, MeasurementReply):
        return tuple(e for part in message.parts for e in ledger_entries_for(part))
    if isinstance(message, SliceCount):
        spent, n_values = message.party_rhos, int(np.size(message.values))
        what = f"slice {message.slice} noisy count {tuple(message.attrs)} (secure sum share)"
        mechanism = "discrete gaussian"
    elif isinstance(message, (NoisyIndicators, NoisyLocalMarginal)):
        spent = {message.party: message.rho}
        n_values = int(np.size(message.matrix if isinstance(message, NoisyIndicators) else message.values))
        what = f"slice {message.slice} {type(message).__name__} {tuple(message.attrs)}"
        mechanism = "gaussian"
    else:
        raise TypeError(f"Not a federated message: {type(message).__name__}.")
    return tuple(LedgerEntry(what, mechanism, "zcdp", rho=float(rho), epsilon=None, sensitivity=1.0,
                             scale=math.sqrt(1.0 / (2.0 * rho)) if rho > 0 else None, party=party,
                             n_values=n_values)
                 for party, rho in spent.items())


def _body(message: Message, prefix: str, arrays: dict) -> dict:
    """``{"kind", "fields", "arrays"}`` of one message (parts of a reply recursively); fills ``arrays``."""
    kind = type(message).__name__
    if kind not in _KINDS:
        raise TypeError(f"Not a federated message: {kind}.")
    fields: dict[str, Any] = {}
    for name in _SCALARS[kind]:
        value = getattr(message, name)
        if name == "attrs":
            value = [str(a) for a in value]
        elif name in ("slice", "n_repeats"):
            value = int(value)
        elif name in ("variance", "rho"):
            value = float(value)
        elif name == "party_rhos":
            value = {str(p): float(r) for p, r in value.items()}
        else:
            value = str(value)
        fields[name] = value
    body: dict[str, Any] = {"kind": kind, "fields": fields, "arrays": {}}
    if kind == "MeasurementReply":
        body["parts"] = [_body(part, f"part{k}.", arrays) for k, part in enumerate(message.parts)]
    else:
        name = _ARRAY[kind][0]
        array = np.asarray(getattr(message, name), dtype=_FLOAT)
        key = prefix + name
        arrays[key] = array
        body["arrays"][name] = {"key": key, "shape": list(array.shape), "dtype": array.dtype.str}
    return body


def _entry_json(entry: LedgerEntry) -> dict:
    if not isinstance(entry, LedgerEntry):
        raise TypeError(f"ledger_entries must hold LedgerEntry objects, got {type(entry).__name__}.")
    return {name: getattr(entry, name) for name in _ENTRY_FIELDS}


def to_bytes(message: Message, *, sender: str,
             ledger_entries: Iterable[LedgerEntry] | None = None) -> bytes:
    """Serialise a message for the curator: an ``.npz`` archive of its arrays and a JSON header.

    Parameters
    ----------
    message : SliceCount, NoisyIndicators, NoisyLocalMarginal or MeasurementReply
    sender : str
        Who sends it (a party's name, or e.g. the federation relaying a reply).
    ledger_entries : iterable of LedgerEntry, optional
        The sender's ledger entries for this message; their zCDP per party
        must add up to the message's budget claims.  Default:
        :func:`ledger_entries_for` the message.

    Returns
    -------
    bytes

    Raises
    ------
    TypeError
        If ``message`` is not a federated message, or an entry's ``details``
        do not serialise to JSON.
    ValueError
        If a scalar field is not finite (JSON carries no NaN or infinity).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated import SliceCount
    >>> from skdpsynth.federated.wire import from_bytes, same_message, to_bytes
    >>> m = SliceCount(0, ("a", "b"), np.arange(6.0), variance=2.0, party_rhos={"p0": 0.5, "p1": 0.5})
    >>> data = to_bytes(m, sender="aggregator")
    >>> env = from_bytes(data, expected={"sender": "aggregator", "attrs": ("b", "a"), "rho": 1.0})
    >>> env.kind, env.sender, same_message(env.message, m)
    ('SliceCount', 'aggregator', True)
    >>> [(e.party, e.rho) for e in env.ledger_entries]
    [('p0', 0.5), ('p1', 0.5)]
    """
    if not isinstance(sender, str) or not sender:
        raise ValueError(f"sender must be a non-empty string, got {sender!r}.")
    entries = ledger_entries_for(message) if ledger_entries is None else tuple(ledger_entries)
    arrays: dict[str, np.ndarray] = {}
    body = _body(message, "", arrays)
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kind": body["kind"], "sender": sender,
              "fields": body["fields"], "arrays": body["arrays"], "ledger": [_entry_json(e) for e in entries]}
    if "parts" in body:
        header["parts"] = body["parts"]
    text = json.dumps(header, allow_nan=False, separators=(",", ":"))
    buffer = io.BytesIO()
    # float64 and uint8 arrays only: nothing is pickled (``allow_pickle`` of savez needs NumPy >= 2.1)
    np.savez(buffer, header=np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **arrays)
    return buffer.getvalue()


# The header numpy.save writes (format 1.0), e.g. "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"
# padded with spaces to a newline: read by a pattern, where numpy's reader would parse it as a Python literal (most
# of the cost of reading a small message). Any other header goes to numpy's reader.
_NPY_HEADER = re.compile(rb"\{'descr': '([<>|=][a-zA-Z][0-9]{1,2})', 'fortran_order': (False|True), "
                         rb"'shape': \(((?:[0-9]+, )*[0-9]+,?|)\), \} *\n")


def _npy_header(member: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """``(shape, fortran_order, dtype, data offset)`` of a ``.npy`` file's bytes."""
    if member[:6] == b"\x93NUMPY" and member[6:8] == b"\x01\x00" and len(member) >= 10:
        end = 10 + int.from_bytes(member[8:10], "little")
        match = _NPY_HEADER.fullmatch(member, 10, end)
        if match is not None:
            shape = tuple(int(n) for n in match[3].split(b",") if n.strip())
            return shape, match[2] == b"True", np.dtype(match[1].decode("ascii")), end
    stream = io.BytesIO(member)
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(stream)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    return tuple(shape), bool(fortran_order), dtype, stream.tell()


# --------------------------------------------------------------------------- receiving
class _Reader:
    """The validation of one archive; every failure is a :class:`MessageError` naming the sender."""

    def __init__(self, data: bytes, expected: Mapping | None, domain: Domain | None, max_bytes: int,
                 max_members: int):
        self.expected = dict(expected or {})
        unknown = set(self.expected) - _EXPECTED_KEYS
        if unknown:
            raise ValueError(f"expected has unknown keys {sorted(unknown)}; allowed: {sorted(_EXPECTED_KEYS)}.")
        if domain is not None and not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {type(domain).__name__}.")
        self.sender = self.expected.get("sender")  # until the header names one
        self.domain = domain
        self.data = data
        self.max_bytes = int(max_bytes)
        self.max_members = int(max_members)

    def fail(self, problem: str):
        raise MessageError(self.sender, problem)

    # -- archive and arrays -----------------------------------------------------------------------
    def open(self) -> None:
        if not isinstance(self.data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(self.data).__name__}.")
        data = bytes(self.data)
        if len(data) > self.max_bytes:
            self.fail(f"{len(data)} bytes exceed the limit of {self.max_bytes}.")
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
            self.fail("not a zip (.npz) archive.")
        if len(infos) > self.max_members:
            self.fail(f"{len(infos)} archive members exceed the limit of {self.max_members}.")
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            self.fail("the archive has duplicate members.")
        if any(not n.endswith(".npy") for n in names):
            others = [n for n in names if not n.endswith(".npy")]
            self.fail(f"the archive has members that are not .npy arrays: {others}.")
        if any(i.compress_type != zipfile.ZIP_STORED for i in infos):
            self.fail("the archive has compressed members (np.savez stores them uncompressed).")
        if sum(i.file_size for i in infos) > self.max_bytes:
            self.fail(f"the archive's members exceed the limit of {self.max_bytes} bytes.")
        self.infos = {n[:-4]: i for n, i in zip(names, infos)}
        self.used = {"header"}

    def array(self, key: str, shape: tuple[int, ...] | None, dtype: np.dtype, ndim: int) -> np.ndarray:
        """Member ``key``, after checking its .npy header (no pickled objects, declared shape and dtype).

        The member is read once (its size is within the limits :meth:`open` checked); reading it to its end also
        checks its CRC.
        """
        info = self.infos.get(key)
        if info is None:
            self.fail(f"array {key!r} named in the header is missing from the archive.")
        try:
            with self.zip.open(info) as f:
                member = f.read()
            got_shape, fortran_order, got_dtype, offset = _npy_header(member)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            self.fail(f"array {key!r} is not a valid .npy array ({exc}).")
        if got_dtype.hasobject:
            self.fail(f"array {key!r} holds Python objects (pickle); refused.")
        if got_dtype != dtype:
            self.fail(f"array {key!r} has dtype {got_dtype.str}, the header says {dtype.str}.")
        if len(got_shape) != ndim or (shape is not None and tuple(got_shape) != shape):
            self.fail(f"array {key!r} has shape {tuple(got_shape)}, the header says "
                      f"{shape if shape is not None else f'{ndim} dimension(s)'}.")
        count = math.prod(got_shape)
        if len(member) - offset < count * dtype.itemsize:
            self.fail(f"array {key!r} is truncated.")
        array = np.frombuffer(member, dtype=dtype, count=count, offset=offset).copy()
        array = array.reshape(got_shape[::-1]).transpose() if fortran_order else array.reshape(got_shape)
        self.used.add(key)
        return array

    def json_header(self):
        """The ``header`` member parsed as strict JSON (no NaN or infinity literals, no duplicate keys)."""
        if "header" not in self.infos:
            self.fail("the archive has no JSON header member.")
        array = self.array("header", None, np.dtype(np.uint8), 1)

        def no_constants(name):
            raise ValueError(f"non-finite number {name}")

        def unique_keys(pairs):
            out = dict(pairs)
            if len(out) != len(pairs):
                raise ValueError("duplicate keys")
            return out

        try:
            header = json.loads(array.tobytes().decode("utf-8"), parse_constant=no_constants,
                                object_pairs_hook=unique_keys)
        except (UnicodeDecodeError, ValueError) as exc:
            self.fail(f"the JSON header is malformed ({exc}).")
        if not isinstance(header, dict):
            self.fail("the JSON header is not an object.")
        return header

    def header(self) -> dict:
        header = self.json_header()
        sender = header.get("sender")
        if not isinstance(sender, str) or not sender:
            self.fail(f"the header's sender must be a non-empty string, got {sender!r}.")
        self.sender = sender
        if header.get("format") != FORMAT_NAME:
            self.fail(f"unknown format {header.get('format')!r}, expected {FORMAT_NAME!r}.")
        version = header.get("version")
        if type(version) is not int or version != FORMAT_VERSION:
            self.fail(f"unsupported format version {version!r}; this reader knows version {FORMAT_VERSION}.")
        keys = set(header)
        if keys - _HEADER_KEYS - {"parts"} or _HEADER_KEYS - keys:
            self.fail(f"the JSON header is malformed: keys {sorted(keys)}, expected {sorted(_HEADER_KEYS)} "
                      "(and 'parts' for a MeasurementReply).")
        return header

    # -- scalar fields ------------------------------------------------------------------------------
    def number(self, where: str, name: str, value, *, positive: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(f"{where}: {name} must be a number, got {value!r}.")
        value = float(value)
        if not math.isfinite(value) or (value <= 0 if positive else value < 0):
            self.fail(f"{where}: {name} must be finite and {'> 0' if positive else '>= 0'}, got {value!r}.")
        return value

    def integer(self, where: str, name: str, value, *, low: int) -> int:
        if type(value) is not int or value < low:
            self.fail(f"{where}: {name} must be an integer >= {low}, got {value!r}.")
        return value

    def text(self, where: str, name: str, value) -> str:
        if not isinstance(value, str) or not value:
            self.fail(f"{where}: {name} must be a non-empty string, got {value!r}.")
        return value

    def attrs(self, where: str, value) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
            self.fail(f"{where}: attrs must be a non-empty sequence of strings, got {value!r}.")
        attrs = tuple(value)
        if len(set(attrs)) != len(attrs):
            self.fail(f"{where}: attrs {attrs} repeat an attribute.")
        if self.domain is not None:
            missing = [a for a in attrs if a not in self.domain]
            if missing:
                self.fail(f"{where}: attributes {missing} are not in the domain {list(self.domain.attrs)}.")
            if attrs != self.domain.canonical(attrs):
                self.fail(f"{where}: attrs {attrs} are not in domain order {self.domain.canonical(attrs)}.")
        return attrs

    def body(self, body, where: str, kinds) -> Message:
        """One message (a reply's parts recursively) from its header part and its arrays."""
        if not isinstance(body, dict):
            self.fail(f"{where}: the JSON header is malformed (not an object).")
        kind = body.get("kind")
        if kind not in kinds:
            self.fail(f"{where}: unknown message kind {kind!r}; expected one of {list(kinds)}.")
        expected_keys = {"kind", "fields", "arrays"} | ({"parts"} if kind == "MeasurementReply" else set())
        if set(body) != expected_keys:
            self.fail(f"{where}: the JSON header is malformed: keys {sorted(body)}, expected {sorted(expected_keys)}.")
        fields, arrays = body["fields"], body["arrays"]
        if not isinstance(fields, dict) or set(fields) != set(_SCALARS[kind]):
            got = sorted(fields) if isinstance(fields, dict) else fields
            self.fail(f"{where}: the JSON header is malformed: {kind} fields {got}, "
                      f"expected {sorted(_SCALARS[kind])}.")
        if kind == "MeasurementReply":
            return self.reply(fields, arrays, body["parts"], where)
        where = f"{where} ({kind}, slice {fields['slice']!r}" + (
            f", party {fields['party']!r})" if "party" in fields else ")")
        name, ndim = _ARRAY[kind]
        if not isinstance(arrays, dict) or set(arrays) != {name}:
            self.fail(f"{where}: the header's arrays must be exactly [{name!r}], got {arrays!r}.")
        spec = arrays[name]
        if not isinstance(spec, dict) or set(spec) != {"key", "shape", "dtype"} or not isinstance(spec["key"], str) \
                or not isinstance(spec["shape"], list) or not all(type(n) is int and n >= 0 for n in spec["shape"]):
            self.fail(f"{where}: the header's description of {name!r} is malformed: {spec!r}.")
        try:
            dtype = np.dtype(spec["dtype"])
        except TypeError:
            self.fail(f"{where}: array {name!r} has an unknown dtype {spec['dtype']!r}.")
        if dtype.kind != "f" or dtype.itemsize != 8:
            self.fail(f"{where}: array {name!r} must be float64, the header says {spec['dtype']!r}.")
        if spec["key"] in self.used:
            self.fail(f"{where}: array {spec['key']!r} is claimed twice in the header.")
        array = self.array(spec["key"], tuple(spec["shape"]), dtype, ndim)
        if not np.all(np.isfinite(array)):
            self.fail(f"{where}: array {name!r} holds non-finite values (NaN or infinity).")
        array = array.astype(_FLOAT, copy=False)
        slice_ = self.integer(where, "slice", fields["slice"], low=0)
        attrs = self.attrs(where, fields["attrs"])
        variance = self.number(where, "variance", fields["variance"], positive=True)
        if self.domain is not None:
            n_cells = self.domain.size(attrs)
            width = array.shape[-1]
            if width != n_cells:
                what = "matrix columns" if ndim == 2 else "value vector length"
                self.fail(f"{where}: {what} {width} differ from the {n_cells} cells of {attrs} in the domain.")
        if kind == "SliceCount":
            rhos = fields["party_rhos"]
            if not isinstance(rhos, dict) or not rhos:
                self.fail(f"{where}: party_rhos must be a non-empty object, got {rhos!r}.")
            rhos = {self.text(where, "a party name", p): self.number(where, f"party_rhos[{p!r}]", r, positive=True)
                    for p, r in rhos.items()}
            implied = math.fsum(1.0 / (2.0 * r) for r in rhos.values())
            self.calibrated(where, variance, implied, "the sum over parties of 1/(2 rho)")
            return SliceCount(slice_, attrs, array, variance, rhos)
        party = self.text(where, "party", fields["party"])
        rho = self.number(where, "rho", fields["rho"], positive=True)
        self.calibrated(where, variance, 1.0 / (2.0 * rho), "1/(2 rho)")
        cls = _KINDS[kind]
        return cls(slice_, party, attrs, array, variance, rho)

    def calibrated(self, where: str, variance: float, implied: float, formula: str) -> None:
        """The noise variance must be what the budget claims imply (Gaussian mechanism, unit L2 sensitivity)."""
        if not math.isclose(variance, implied, rel_tol=_CALIBRATION_REL):
            self.fail(f"{where}: variance {variance!r} does not match the claimed budget ({formula} = {implied!r}).")

    def reply(self, fields: dict, arrays, parts, where: str) -> MeasurementReply:
        if arrays != {}:
            self.fail(f"{where}: a MeasurementReply has no arrays of its own, the header lists {arrays!r}.")
        if not isinstance(parts, list) or not parts:
            self.fail(f"{where}: a MeasurementReply needs a non-empty list of parts.")
        attrs = self.attrs(where, fields["attrs"])
        rho = self.number(where, "rho", fields["rho"])
        n_repeats = self.integer(where, "n_repeats", fields["n_repeats"], low=1)
        protocol = fields["protocol"]
        if protocol not in PROTOCOLS:
            self.fail(f"{where}: unknown protocol {protocol!r}; expected one of {PROTOCOLS}.")
        allowed = ("SliceCount",) if protocol == "secure_sum" else ("NoisyIndicators", "NoisyLocalMarginal")
        messages = tuple(self.body(part, f"part {k}", allowed) for k, part in enumerate(parts))
        by_slice: dict[int, list] = {}
        for m in messages:
            by_slice.setdefault(m.slice, []).append(m)
        for i, members in by_slice.items():
            at = f"slice {i}"
            if len(members) > 1 and not all(isinstance(m, NoisyIndicators) for m in members):
                self.fail(f"{at}: a slice sends one count or marginal, or only indicator matrices; got "
                          f"{[type(m).__name__ for m in members]}.")
            held = [a for m in members for a in m.attrs]
            if len(set(held)) != len(held) or set(held) != set(attrs):
                self.fail(f"{at}: the parts' attributes {held} do not cover {attrs} exactly once.")
            if len({m.matrix.shape[0] for m in members if isinstance(m, NoisyIndicators)}) > 1:
                self.fail(f"{at}: the indicator matrices have different numbers of rows.")
            spent = math.fsum(r for m in members
                              for r in (m.party_rhos.values() if isinstance(m, SliceCount) else [m.rho]))
            if not math.isclose(spent, n_repeats * rho, rel_tol=_CALIBRATION_REL):
                self.fail(f"{at}: the parties claim rho={spent!r} in total, but the call charges "
                          f"n_repeats * rho = {n_repeats * rho!r}.")
        return MeasurementReply(attrs, rho, n_repeats, protocol, messages)

    # -- ledger and budget claims -------------------------------------------------------------------------
    def entries(self, raw) -> tuple[LedgerEntry, ...]:
        if not isinstance(raw, list):
            self.fail("the header's ledger must be a list of entries.")
        out = []
        for k, item in enumerate(raw):
            if not isinstance(item, dict) or set(item) != set(_ENTRY_FIELDS):
                self.fail(f"ledger entry {k} is malformed: expected the fields {list(_ENTRY_FIELDS)}.")
            types_ok = (isinstance(item["description"], str) and isinstance(item["mechanism"], str)
                        and isinstance(item["accounting"], str) and isinstance(item["details"], dict)
                        and (item["party"] is None or isinstance(item["party"], str))
                        and (item["n_values"] is None or type(item["n_values"]) is int)
                        and all(item[n] is None or (isinstance(item[n], (int, float)) and not isinstance(item[n], bool))
                                for n in ("rho", "epsilon", "delta", "sensitivity", "scale")))
            if not types_ok or item["delta"] is None:
                self.fail(f"ledger entry {k} is malformed: a field has the wrong type.")
            try:
                entry = LedgerEntry(**item)
            except (TypeError, ValueError) as exc:
                self.fail(f"ledger entry {k} is invalid: {exc}")
            if entry.party is None:
                entry = dataclasses.replace(entry, party=self.sender)
            out.append(entry)
        return tuple(out)

    def budget(self, message: Message, entries: tuple[LedgerEntry, ...]) -> None:
        """The ledger entries' zCDP per party must equal what the message claims each party spent."""
        if isinstance(message, MeasurementReply):
            claims = message.party_rhos()
        elif isinstance(message, SliceCount):
            claims = dict(message.party_rhos)
        else:
            claims = {message.party: message.rho}
            if message.party != self.sender:
                self.fail(f"it carries the {type(message).__name__} of party {message.party!r}; a party sends "
                          "only its own.")
        spent: dict[str, list[float]] = {}
        for k, entry in enumerate(entries):
            if entry.accounting != "zcdp":
                self.fail(f"ledger entry {k} is a {entry.accounting!r} entry; messages are paid for in zCDP only.")
            spent.setdefault(entry.party, []).append(entry.rho)
        for party in sorted(set(claims) | set(spent)):
            claimed = claims.get(party, 0.0)
            recorded = math.fsum(spent.get(party, []))
            if not math.isclose(claimed, recorded, rel_tol=_REL):
                self.fail(f"budget claim of party {party!r}: the message claims rho={claimed!r}, its ledger "
                          f"entries record rho={recorded!r}.")

    def check_expected(self, kind: str, message: Message) -> None:
        exp = self.expected
        if "sender" in exp and exp["sender"] != self.sender:
            self.fail(f"expected a message from {exp['sender']!r}.")
        if "kind" in exp and exp["kind"] != kind:
            self.fail(f"expected a {exp['kind']} message, got a {kind}.")
        if "attrs" in exp and set(exp["attrs"]) != set(message.attrs):
            self.fail(f"it answers attrs {message.attrs}, the request was {tuple(exp['attrs'])}.")
        if "rho" in exp:
            if isinstance(message, MeasurementReply):
                rho = message.rho
            elif isinstance(message, SliceCount):
                rho = math.fsum(message.party_rhos.values())
            else:
                rho = message.rho
            if not math.isclose(rho, float(exp["rho"]), rel_tol=_REL, abs_tol=0.0):
                self.fail(f"it claims rho={rho!r}, the request was rho={exp['rho']!r}.")
        for name in ("protocol", "n_repeats"):
            if name in exp:
                if not isinstance(message, MeasurementReply):
                    self.fail(f"expected[{name!r}] applies to a MeasurementReply, got a {kind}.")
                if getattr(message, name) != exp[name]:
                    self.fail(f"it has {name}={getattr(message, name)!r}, the request was {exp[name]!r}.")

    def read(self) -> Envelope:
        self.open()
        header = self.header()
        if "sender" in self.expected and self.expected["sender"] != self.sender:
            self.fail(f"expected a message from {self.expected['sender']!r}.")
        kind = header["kind"]
        if kind not in _KINDS:
            self.fail(f"unknown message kind {kind!r}; expected one of {list(_KINDS)}.")
        if ("parts" in header) != (kind == "MeasurementReply"):
            self.fail("the JSON header is malformed: 'parts' belongs to (and only to) a MeasurementReply.")
        body = {k: header[k] for k in ("kind", "fields", "arrays", "parts") if k in header}
        message = self.body(body, kind, (kind,))
        extra = set(self.infos) - self.used
        if extra:
            self.fail(f"the archive holds arrays the header does not name: {sorted(extra)}.")
        entries = self.entries(header["ledger"])
        self.budget(message, entries)
        self.check_expected(kind, message)
        return Envelope(message, self.sender, kind, header["version"], entries)


def from_bytes(data: bytes, *, expected: Mapping | None = None, domain: Domain | None = None,
               max_bytes: int = MAX_BYTES, max_members: int = MAX_MEMBERS) -> Envelope:
    """Read and validate a message written by :func:`to_bytes`.

    Parameters
    ----------
    data : bytes
    expected : dict, optional
        The request the message answers; any of ``"sender"``, ``"kind"``
        (class name), ``"attrs"`` (compared as sets), ``"rho"`` (relative
        tolerance 1e-12: a reply's call budget ``ρ'``; a slice count's total
        over parties; a party message's ``rho``), and for a reply
        ``"protocol"`` and ``"n_repeats"``.
    domain : Domain, optional
        The public domain: every ``attrs`` must be in it, in domain order,
        and every value vector (indicator matrix row) must have
        ``domain.size(attrs)`` entries.
    max_bytes : int, default=256 MiB
        Refuse larger archives (and archives whose members add up to more).
    max_members : int, default=10000
        Refuse archives with more members.

    Returns
    -------
    Envelope

    Raises
    ------
    MessageError
        Naming the sender (from the header, else ``expected["sender"]``) and
        the problem: not an uncompressed ``.npz`` archive or over the limits;
        unknown format or version; malformed JSON header (unknown or missing
        keys, wrong types, NaN or infinity); unknown message kind; arrays
        missing, extra, of another shape or dtype than the header says, not
        float64, holding Python objects, or holding non-finite values;
        ``attrs`` not a non-empty list of distinct strings (with ``domain``:
        not in the domain or not in its order, or the wrong number of cells);
        ``slice`` not an integer ≥ 0; a variance or ``rho`` not finite and
        > 0; a variance other than the claimed budget implies (``1/(2ρ)``
        per party, summed over a slice count's parties); a reply whose
        parts do not match its protocol, do not cover its ``attrs`` exactly
        once per slice, or whose parties' claims in a slice do not add up to
        ``n_repeats · ρ'``; a party message sent by someone else than its
        party; ledger entries that are malformed, not zCDP, or whose ρ per
        party (the sender's, for entries naming no party) differ from the
        message's claims; a mismatch with ``expected``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import NoisyIndicators
    >>> from skdpsynth.federated.wire import from_bytes, to_bytes
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> m = NoisyIndicators(0, "party0.1", ("b",), np.eye(3)[[1, 2, 0]], variance=1.0, rho=0.5)
    >>> env = from_bytes(to_bytes(m, sender="party0.1"), domain=dom)
    >>> env.message.matrix.shape, env.ledger().total_rho()
    ((3, 3), 0.5)
    >>> from_bytes(to_bytes(m, sender="party0.1"), expected={"rho": 0.25})
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from 'party0.1': it claims rho=0.5, the request was rho=0.25.
    """
    return _Reader(data, expected, domain, max_bytes, max_members).read()


def same_message(a: Message, b: Message) -> bool:
    """Exact equality of two messages: same kind, equal fields, arrays equal element by element (and dtype).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated import NoisyLocalMarginal
    >>> from skdpsynth.federated.wire import same_message
    >>> m = NoisyLocalMarginal(0, "p", ("a",), np.array([1.0, 2.0]), 0.5, 1.0)
    >>> same_message(m, m), same_message(m, NoisyLocalMarginal(0, "p", ("a",), np.array([1.0, 2.5]), 0.5, 1.0))
    (True, False)
    """
    if type(a) is not type(b):
        return False
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "parts":
            if len(x) != len(y) or not all(same_message(p, q) for p, q in zip(x, y)):
                return False
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            x, y = np.asarray(x), np.asarray(y)
            if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
                return False
        elif f.name == "party_rhos":
            if list(x.items()) != list(y.items()):
                return False
        elif x != y:
            return False
    return True


# --------------------------------------------------------------------------- protocol packets
PACKET_FORMAT = "skdpsynth-federated-packet"
"""The format name of protocol packets (requests, keys, sealed and masked data), distinct from DP messages."""
_PACKET_KEYS = {"format", "version", "kind", "sender", "fields", "arrays"}
_PACKET_DTYPES = tuple(np.dtype(t) for t in (np.float64, np.uint64, np.int64, np.uint8))
PACKET_ALLOWANCE = 2**20
"""Bytes a packet may take beyond its sealed payloads (JSON header, .npy and zip headers) when its size is
derived from a public layout (``unpack(size_limit=...)``)."""


@dataclass(frozen=True)
class Packet:
    """A protocol packet: a kind, its sender, JSON fields and named arrays.

    Packets carry what is not itself a DP release: the curator's requests to
    a party, a party's public key, data sealed for another party, masked
    secure-aggregation inputs.  They use the same archive layout as the DP
    messages (an ``.npz`` with a JSON ``header`` member, never pickled) under
    the format name :data:`PACKET_FORMAT`.
    """

    kind: str
    sender: str
    fields: dict
    arrays: dict


def pack(kind: str, *, sender: str, fields: Mapping | None = None, arrays: Mapping | None = None) -> bytes:
    """Serialise a protocol packet (see :class:`Packet`).

    Parameters
    ----------
    kind : str
    sender : str
    fields : dict, optional
        JSON-serialisable (finite numbers only).
    arrays : dict of str to ndarray, optional
        float64, uint64, int64 or uint8 arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.federated.wire import pack, unpack
    >>> data = pack("Request", sender="curator", fields={"op": "setup"}, arrays={"x": np.arange(3.0)})
    >>> p = unpack(data, kinds=("Request",), sender="curator")
    >>> p.fields, p.arrays["x"].tolist()
    ({'op': 'setup'}, [0.0, 1.0, 2.0])
    """
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"kind must be a non-empty string, got {kind!r}.")
    if not isinstance(sender, str) or not sender:
        raise ValueError(f"sender must be a non-empty string, got {sender!r}.")
    arrays = {k: np.ascontiguousarray(v) for k, v in dict(arrays or {}).items()}
    for key, value in arrays.items():
        if key == "header" or not key.isidentifier():
            raise ValueError(f"array name {key!r} is not allowed.")
        if value.dtype not in _PACKET_DTYPES:
            raise TypeError(f"array {key!r} has dtype {value.dtype}; packets carry {[d.str for d in _PACKET_DTYPES]}.")
    header = {"format": PACKET_FORMAT, "version": FORMAT_VERSION, "kind": kind, "sender": sender,
              "fields": dict(fields or {}),
              "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str} for k, v in arrays.items()}}
    text = json.dumps(header, allow_nan=False, separators=(",", ":"))
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **arrays)
    return buffer.getvalue()


class _PacketReader(_Reader):
    def __init__(self, data, kinds, sender, max_bytes, max_members, size_limit=None):
        super().__init__(data, None, None, max_bytes, max_members)
        self.sender = sender
        self.kinds = tuple(kinds)
        self.expected_sender = sender
        self.size_limit = size_limit

    def public_limit(self) -> int:
        """The limit ``size_limit`` gives for this packet's fields, read from its header alone (within ``max_bytes``)."""
        ceiling, self.max_bytes = self.max_bytes, len(self.data)
        self.open()                          # the zip directory only; no array is read but the header
        if "header" in self.infos and self.infos["header"].file_size > ceiling:
            self.fail(f"its JSON header exceeds the limit of {ceiling} bytes.")
        fields = self.json_header().get("fields")
        if not isinstance(fields, dict):
            self.fail("the JSON header is malformed: fields must be an object.")
        try:
            limit = int(self.size_limit(fields))
        except MessageError:
            raise
        except Exception:
            self.fail("its fields do not describe a payload whose size the receiver can derive.")
        if len(self.data) > max(limit, ceiling):
            self.fail(f"{len(self.data)} bytes exceed the limit of {max(limit, ceiling)} that its public layout "
                      "gives.")
        return max(limit, ceiling)

    def read_packet(self) -> Packet:
        if self.size_limit is not None and isinstance(self.data, (bytes, bytearray, memoryview)) and \
                len(self.data) > self.max_bytes:
            self.max_bytes = self.public_limit()
        self.open()
        header = self.json_header()
        if set(header) != _PACKET_KEYS:
            self.fail(f"the JSON header is malformed: expected the keys {sorted(_PACKET_KEYS)}.")
        sender = header["sender"]
        if not isinstance(sender, str) or not sender:
            self.fail(f"the header's sender must be a non-empty string, got {sender!r}.")
        if self.expected_sender is not None and sender != self.expected_sender:
            self.fail(f"the packet claims to come from {sender!r}.")
        self.sender = sender
        if header["format"] != PACKET_FORMAT:
            self.fail(f"unknown format {header['format']!r}, expected {PACKET_FORMAT!r}.")
        if type(header["version"]) is not int or header["version"] != FORMAT_VERSION:
            self.fail(f"unsupported format version {header['version']!r}; this reader knows {FORMAT_VERSION}.")
        if header["kind"] not in self.kinds:
            self.fail(f"unexpected packet kind {header['kind']!r}; expected one of {list(self.kinds)}.")
        if not isinstance(header["fields"], dict) or not isinstance(header["arrays"], dict):
            self.fail("the JSON header is malformed: fields and arrays must be objects.")
        _check_finite_json(self, header["fields"])
        arrays = {}
        for key, spec in header["arrays"].items():
            if key == "header" or not isinstance(spec, dict) or set(spec) != {"shape", "dtype"}:
                self.fail(f"the header's entry for array {key!r} is malformed.")
            try:
                dtype = np.dtype(spec["dtype"])
                shape = tuple(int(s) for s in spec["shape"])
            except (TypeError, ValueError):
                self.fail(f"the header's entry for array {key!r} is malformed.")
            if dtype not in _PACKET_DTYPES or any(s < 0 for s in shape):
                self.fail(f"array {key!r}: dtype {spec['dtype']!r} or shape {spec['shape']!r} is not allowed.")
            value = self.array(key, shape, dtype, len(shape))
            if dtype.kind == "f" and not np.isfinite(value).all():
                self.fail(f"array {key!r} holds non-finite values.")
            arrays[key] = value
        extra = set(self.infos) - self.used
        if extra:
            self.fail(f"the archive holds arrays the header does not name: {sorted(extra)}.")
        return Packet(header["kind"], sender, header["fields"], arrays)


def _check_finite_json(reader: _Reader, value) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        reader.fail("the JSON header holds a non-finite number.")
    if isinstance(value, dict):
        for v in value.values():
            _check_finite_json(reader, v)
    elif isinstance(value, list):
        for v in value:
            _check_finite_json(reader, v)


def unpack(data: bytes, *, kinds: Iterable[str], sender: str | None = None, max_bytes: int = MAX_BYTES,
           max_members: int = MAX_MEMBERS, size_limit=None) -> Packet:
    """Read and validate a protocol packet written by :func:`pack`.

    Parameters
    ----------
    data : bytes
    kinds : iterable of str
        The packet kinds acceptable here.
    sender : str, optional
        Who must have sent it.
    max_bytes, max_members : int
        As in :func:`from_bytes`.
    size_limit : callable, optional
        For a packet beyond ``max_bytes`` only: called with its JSON fields
        (read from the header alone, unvalidated) and returning the size the
        receiver's own copy of the public layout gives such a packet (its
        sealed payloads plus :data:`PACKET_ALLOWANCE`); the packet is read
        if it is within that size, refused otherwise.  Never a size the
        sender states: the callable derives it (e.g. roster size × cells ×
        word bytes) and may refuse by raising :class:`MessageError`.

    Raises
    ------
    MessageError
        Naming the sender, on a malformed archive or header, another format,
        version, kind or sender, arrays that differ from the header or hold
        non-finite floats, or a size beyond the limit.

    Examples
    --------
    >>> import numpy as np
    >>> data = pack("Sealed", sender="p", fields={"words": 300}, arrays={"box": np.zeros(300, np.uint8)})
    >>> unpack(data, kinds=("Sealed",), max_bytes=500)
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from an unknown sender: ... bytes exceed the limit of 500.
    >>> public = lambda fields: 300 + PACKET_ALLOWANCE          # e.g. from the receiver's own layout
    >>> unpack(data, kinds=("Sealed",), max_bytes=500, size_limit=public).arrays["box"].size
    300
    """
    return _PacketReader(data, kinds, sender, max_bytes, max_members, size_limit).read_packet()


# --------------------------------------------------------------------------- VertiMRF messages
#: The ``"kind"`` of a VertiMRF party message (:class:`~skdpsynth.synthesizers.vertical_mrf.message.VerticalMessage`).
VERTICAL_KIND = "VerticalMessage"
_VERTICAL_FIELDS = ("columns", "local_total", "measured", "graph_edges", "n_hat", "potentials",
                    "value_distributions")
_NUMERIC_KINDS = "iuf"  # integer and float arrays only: nothing np.savez would pickle


def vertical_to_bytes(message) -> bytes:
    """Serialise a VertiMRF party message: an ``.npz`` of its arrays and the JSON header of :func:`to_bytes`.

    The header's kind is :data:`VERTICAL_KIND` and its sender the party;
    ``fields`` holds ``columns``, ``local_total``, ``measured``,
    ``graph_edges``, ``n_hat``, the cliques of the ``potentials`` and the
    columns of the ``value_distributions``; ``arrays`` gives the shape and
    dtype of ``potential_<i>``, ``value_distribution_<i>`` and, if sent,
    ``sketches`` and ``perturbed``; ``ledger`` the party's entries.

    Parameters
    ----------
    message : VerticalMessage

    Returns
    -------
    bytes

    Raises
    ------
    TypeError
        If an array is not numeric.
    ValueError
        If a scalar field is not finite (JSON carries no NaN or infinity).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
    >>> from skdpsynth.federated.wire import read_vertical_fields, vertical_to_bytes
    >>> msg = VerticalMessage("p0", ("a",), {("a",): np.zeros(2)}, 10.0, [("a",)], [], {}, n_hat=10.0)
    >>> back = read_vertical_fields(vertical_to_bytes(msg), sender="p0")
    >>> back["party"], back["columns"], back["n_hat"]
    ('p0', ('a',), 10.0)
    """
    arrays: dict[str, np.ndarray] = {}
    specs: dict[str, dict] = {}

    def put(key: str, value) -> None:
        value = np.ascontiguousarray(value)
        if value.dtype.kind not in _NUMERIC_KINDS:
            raise TypeError(f"Array {key!r} of party {message.party!r} is not numeric.")
        arrays[key] = value
        specs[key] = {"shape": list(value.shape), "dtype": value.dtype.str}

    for i, table in enumerate(message.local_potentials.values()):
        put(f"potential_{i}", np.asarray(table, dtype=_FLOAT))
    for i, dist in enumerate(message.value_distributions.values()):
        put(f"value_distribution_{i}", np.asarray(dist, dtype=_FLOAT))
    for name in ("sketches", "perturbed"):
        if getattr(message, name) is not None:
            put(name, getattr(message, name))
    fields = {"columns": [str(c) for c in message.columns], "local_total": float(message.local_total),
              "measured": [[str(a) for a in c] for c in message.measured],
              "graph_edges": [[str(a) for a in e] for e in message.graph_edges],
              "n_hat": None if message.n_hat is None else float(message.n_hat),
              "potentials": [[str(a) for a in c] for c in message.local_potentials],
              "value_distributions": [str(c) for c in message.value_distributions]}
    entries = []
    for entry in message.ledger:
        item = _entry_json(entry)
        item["details"] = {k: v for k, v in entry.details.items()
                           if isinstance(v, (str, int, bool, type(None)))
                           or (isinstance(v, float) and math.isfinite(v))}
        entries.append(item)
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kind": VERTICAL_KIND, "sender": message.party,
              "fields": fields, "arrays": specs, "ledger": entries}
    text = json.dumps(header, allow_nan=False, separators=(",", ":"))
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **arrays)
    return buffer.getvalue()


class _VerticalReader(_Reader):
    """The archive, JSON header and arrays of one VertiMRF message; every failure names the sender only."""

    def __init__(self, data, sender, max_bytes, max_members):
        super().__init__(data, None, None, max_bytes, max_members)
        self.sender = self.claimed = sender

    def names(self, field: str, value, *, size: int | None = None) -> tuple[str, ...]:
        """A list of distinct non-empty strings (columns of a clique, an edge, the party's columns)."""
        if not isinstance(value, list) or not all(isinstance(a, str) and a for a in value) \
                or len(set(value)) != len(value) or (size is not None and len(value) != size):
            self.fail(f"field {field!r} must hold lists of distinct column names.")
        return tuple(value)

    def listed(self, field: str, value) -> list:
        if not isinstance(value, list):
            self.fail(f"field {field!r} must be a list.")
        return value

    def numeric(self, specs: dict, key: str, field: str) -> np.ndarray:
        spec = specs.get(key)
        if not isinstance(spec, dict) or set(spec) != {"shape", "dtype"} or not isinstance(spec["shape"], list) \
                or not all(type(s) is int and s >= 0 for s in spec["shape"]):
            self.fail(f"field {field!r}: the header's description of array {key!r} is missing or malformed.")
        try:
            dtype = np.dtype(spec["dtype"])
        except TypeError:
            self.fail(f"field {field!r}: array {key!r} has an unknown dtype.")
        if dtype.kind not in _NUMERIC_KINDS:
            self.fail(f"field {field!r}: array {key!r} is not numeric.")
        try:
            return self.array(key, tuple(spec["shape"]), dtype, len(spec["shape"]))
        except MessageError:
            pass  # the base reader's text quotes the shapes; an FO table's rows are the record count
        self.fail(f"field {field!r}: array {key!r} is missing, not a valid .npy array, or differs from its "
                  "description in the header.")

    def header_fields(self) -> tuple[dict, dict, list]:
        header = self.json_header()
        if set(header) != _HEADER_KEYS:
            self.fail(f"the JSON header is malformed: expected the keys {sorted(_HEADER_KEYS)}.")
        sender = header["sender"]
        if not isinstance(sender, str) or not sender:
            self.fail("the header's sender must be a non-empty string.")
        if self.claimed is not None and sender != self.claimed:
            self.fail("the header names another sender.")
        self.sender = sender
        if header["format"] != FORMAT_NAME or type(header["version"]) is not int \
                or header["version"] != FORMAT_VERSION:
            self.fail(f"not a {FORMAT_NAME!r} message of version {FORMAT_VERSION}.")
        if header["kind"] != VERTICAL_KIND:
            self.fail(f"expected a {VERTICAL_KIND}.")
        fields, specs = header["fields"], header["arrays"]
        if not isinstance(fields, dict) or set(fields) != set(_VERTICAL_FIELDS):
            self.fail(f"the header's fields must be exactly {list(_VERTICAL_FIELDS)}.")
        if not isinstance(specs, dict):
            self.fail("the header's arrays must be an object.")
        return fields, specs, header["ledger"]

    def read_vertical(self) -> dict:
        self.open()
        fields, specs, ledger = self.header_fields()
        out: dict[str, Any] = {"party": self.sender, "columns": self.names("columns", fields["columns"])}
        for name in ("local_total", "n_hat"):
            value = fields[name]
            if (value is not None or name != "n_hat") and (isinstance(value, bool)
                                                           or not isinstance(value, (int, float))):
                self.fail(f"field {name!r} must be a number.")
            out[name] = None if value is None else float(value)
        out["measured"] = [self.names("measured", c) for c in self.listed("measured", fields["measured"])]
        out["graph_edges"] = [self.names("graph_edges", e, size=2)
                              for e in self.listed("graph_edges", fields["graph_edges"])]
        cliques = [self.names("potentials", c) for c in self.listed("potentials", fields["potentials"])]
        if len(set(cliques)) != len(cliques):
            self.fail("field 'potentials' names a clique twice.")
        out["local_potentials"] = {c: self.numeric(specs, f"potential_{i}", "potentials")
                                   for i, c in enumerate(cliques)}
        binned = self.listed("value_distributions", fields["value_distributions"])
        binned = self.names("value_distributions", binned) if binned else ()
        out["value_distributions"] = {c: self.numeric(specs, f"value_distribution_{i}", "value_distributions")
                                      for i, c in enumerate(binned)}
        for name in ("sketches", "perturbed"):
            out[name] = self.numeric(specs, name, name) if name in specs else None
        if set(specs) - self.used or set(self.infos) - self.used:
            self.fail("the archive or its header holds arrays that no field names.")
        out["ledger"] = list(self.entries(ledger))
        return out


def read_vertical_fields(data: bytes, *, sender: str | None = None, max_bytes: int = MAX_BYTES,
                         max_members: int = MAX_MEMBERS) -> dict:
    """The fields of a VertiMRF party message written by :func:`vertical_to_bytes`, its format validated.

    This reads the format only; what the fields must hold for a given job is
    checked by VertiMRF's server
    (:func:`skdpsynth.synthesizers.vertical_mrf.message.check_vertical_message`),
    and :meth:`~skdpsynth.synthesizers.vertical_mrf.message.VerticalMessage.from_bytes`
    does both.

    Parameters
    ----------
    data : bytes
    sender : str, optional
        The party the message must come from (errors name it even when the
        bytes are not a message at all).
    max_bytes, max_members : int
        As in :func:`from_bytes`.

    Returns
    -------
    dict
        The message's fields: ``party``, ``columns``, ``local_potentials``,
        ``local_total``, ``measured``, ``graph_edges``,
        ``value_distributions``, ``sketches``, ``perturbed``, ``n_hat`` and
        ``ledger``.

    Raises
    ------
    MessageError
        Naming the sender, on anything malformed: not an uncompressed
        ``.npz`` archive; a header that is not strict JSON, lacks keys or has
        others, another format, version, kind or sender; fields of the wrong
        type; arrays that are missing, extra, not numeric or unlike their
        description; malformed ledger entries.  The text names the party and
        the field, never a value or a size.

    Examples
    --------
    >>> from skdpsynth.federated.wire import read_vertical_fields
    >>> read_vertical_fields(b"random bytes", sender="hospital")
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from 'hospital': not a zip (.npz) archive.
    """
    return _VerticalReader(data, sender, max_bytes, max_members).read_vertical()
