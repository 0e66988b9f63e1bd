"""What a VertiMRF party sends to the server, and the server's checks on receipt.

A :class:`VerticalMessage` crosses the trust boundary in the project's wire
format (:func:`skdpsynth.federated.wire.vertical_to_bytes`; never pickled).
The server trusts nothing in it: :func:`vertical_from_bytes` reads the format,
then, given the job's public :class:`~.party.VerticalConfig`,
:func:`check_vertical_message` checks every field against what that job lets
the party send.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ...federated.wire import MAX_BYTES, MAX_MEMBERS, MessageError, read_vertical_fields, vertical_to_bytes
from ...privacy.ledger import LedgerEntry
from . import sketches as fm

__all__ = ["VerticalMessage", "vertical_from_bytes", "check_vertical_message"]

_VALUE_DIST_TOL = 1e-9  # a value distribution sums to 1 within each bin (binning.normalize_within_bins)
_CALIBRATION_REL = 1e-9  # relative tolerance of the party's ledger sums against its share of the budget


@dataclass
class VerticalMessage:
    """What one party sends to the server (KDD'24 Algorithm 1, line 2), and nothing else.

    Attributes
    ----------
    party : str
    columns : tuple of str
        The party's columns (public).
    local_potentials : dict {clique: ndarray}
        The local model's log-potentials (DP: post-processing of its noisy measurements).
    local_total : float
        The local model's (DP) record-count estimate.
    measured : list of tuple
        𝒮_i, the cliques the local model measured.
    graph_edges : list of (str, str)
        𝒢_i, the edges of the local model's triangulated graph.
    value_distributions : dict {column: ndarray}
        Noisy within-bin value distributions of the binned columns.
    sketches : ndarray or None
        FM: the (t, Σ binned sizes) DPFM tensor, columns in ``columns`` order.
    perturbed : ndarray or None
        FO: the GRR-perturbed binned codes, shape (n, n_columns).
    n_hat : float or None
        The noisy record count (count leader only).
    ledger : list of LedgerEntry
        The party's declared releases.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
    >>> msg = VerticalMessage("p1", ("b", "c"), {("b", "c"): np.zeros((3, 6))}, 500.0, [("b",), ("c",), ("b", "c")],
    ...                       [("b", "c")], {"c": np.array([0.5, 0.5, 1.0, 0.4, 0.6, 1.0])},
    ...                       sketches=np.zeros((50, 7), dtype=np.uint8))
    >>> back = VerticalMessage.from_bytes(msg.to_bytes())      # what crosses to the server
    >>> back.columns, back.graph_edges, back.sketches.shape, back.n_hat is None
    (('b', 'c'), [('b', 'c')], (50, 7), True)
    """

    party: str
    columns: tuple[str, ...]
    local_potentials: dict
    local_total: float
    measured: list
    graph_edges: list
    value_distributions: dict
    sketches: np.ndarray | None = None
    perturbed: np.ndarray | None = None
    n_hat: float | None = None
    ledger: list = field(default_factory=list)

    _FIELDS = ("party", "columns", "local_potentials", "local_total", "measured", "graph_edges",
               "value_distributions", "sketches", "perturbed", "n_hat", "ledger")

    def to_bytes(self) -> bytes:
        """Serialise in the project's wire format (:func:`~skdpsynth.federated.wire.vertical_to_bytes`; no pickle).

        Examples
        --------
        >>> import numpy as np
        >>> from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
        >>> msg = VerticalMessage("p0", ("a",), {("a",): np.zeros(2)}, 10.0, [("a",)], [], {}, n_hat=10.0)
        >>> VerticalMessage.from_bytes(msg.to_bytes()).n_hat
        10.0
        """
        return vertical_to_bytes(self)

    @classmethod
    def from_bytes(cls, data: bytes, *, config=None,
                   sender: str | None = None) -> "VerticalMessage":
        """Read a message written by :meth:`to_bytes` (:func:`vertical_from_bytes`).

        With the job's public ``config`` every field is validated against it
        (what the server does on receipt); ``sender`` is the party the bytes
        must come from.  Anything malformed raises
        :class:`~skdpsynth.federated.wire.MessageError` naming the party.
        """
        return vertical_from_bytes(data, config=config, sender=sender)


def vertical_from_bytes(data: bytes, *, config=None, sender: str | None = None, max_bytes: int = MAX_BYTES,
                        max_members: int = MAX_MEMBERS):
    """Read a VertiMRF party message written by :func:`vertical_to_bytes`, validating it on receipt.

    Parameters
    ----------
    data : bytes
        What :func:`~skdpsynth.federated.wire.vertical_to_bytes` wrote.
    config : VerticalConfig, optional
        The job's public configuration: then every field is checked against
        it as well (:func:`check_vertical_message`).
    sender : str, optional
        The party the message must come from (errors name it even when the
        bytes are not a message at all).
    max_bytes, max_members : int
        As in :func:`skdpsynth.federated.wire.from_bytes`.

    Returns
    -------
    VerticalMessage

    Raises
    ------
    MessageError
        Naming the sender: on a malformed message, as
        :func:`~skdpsynth.federated.wire.read_vertical_fields` lists; with
        ``config``, on any failure of :func:`check_vertical_message`.  The text
        names the party and the field, never a value or a size.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.message import vertical_from_bytes
    >>> vertical_from_bytes(b"random bytes", sender="hospital")
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from 'hospital': not a zip (.npz) archive.
    """
    message = VerticalMessage(**read_vertical_fields(data, sender=sender, max_bytes=max_bytes,
                                                   max_members=max_members))
    if config is not None:
        check_vertical_message(message, config)
    return message


class _VerticalCheck:
    """The checks of :func:`check_vertical_message`; every failure is a MessageError naming the party and field."""

    def __init__(self, message, config):
        self.msg, self.cfg, self.budget = message, config, config.budget
        party = getattr(message, "party", None)
        self.party = party if isinstance(party, str) else None

    def fail(self, problem: str):
        raise MessageError(self.party, problem)

    def array(self, field: str, value, kinds: str, shape: tuple | None = None, ndim: int | None = None):
        if not isinstance(value, np.ndarray) or value.dtype.kind not in kinds:
            self.fail(f"field {field!r} must be an array of {'floats' if kinds == 'f' else 'integers'}.")
        if (shape is not None and value.shape != tuple(shape)) or (ndim is not None and value.ndim != ndim):
            self.fail(f"field {field!r} does not have the shape the job's public domain implies.")
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            self.fail(f"field {field!r} holds non-finite values (NaN or infinity).")
        return value

    def number(self, field: str, value, *, integral: bool = False) -> float:
        """A finite number, > 0, or with ``integral`` an integer >= 1."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            self.fail(f"field {field!r} must be a number.")
        value = float(value)
        if integral and not (math.isfinite(value) and value >= 1 and value == math.floor(value)):
            self.fail(f"field {field!r} must be a finite integer >= 1.")
        if not (math.isfinite(value) and value > 0):
            self.fail(f"field {field!r} must be a finite number > 0.")
        return value

    def cliques(self, field: str, value, *, size: int | None = None) -> None:
        held = set(self.columns)
        items = [tuple(c) for c in value if isinstance(c, (tuple, list))] \
            if isinstance(value, (list, tuple)) else None
        if items is None or len(items) != len(value) or any(
                not c or not set(c) <= held or len(set(c)) != len(c) or (size is not None and len(c) != size)
                for c in items):
            self.fail(f"field {field!r} must list cliques of the party's own columns.")

    def run(self) -> None:
        cfg, msg = self.cfg, self.msg
        if self.party not in cfg.party_names:
            self.fail("the sender is not a party of this job.")
        self.index = cfg.party_names.index(self.party)
        self.columns = tuple(cfg.parties[self.index][1])
        if not isinstance(msg.columns, (tuple, list)) or tuple(msg.columns) != self.columns:
            self.fail("field 'columns' differs from the party's columns in the job's configuration.")
        self.number("local_total", msg.local_total)
        if self.index == cfg.count_leader:
            self.number("n_hat", msg.n_hat, integral=True)
        elif msg.n_hat is not None:
            self.fail("field 'n_hat': only the count leader sends the noisy record count.")
        self.model()
        self.value_distributions()
        self.encoding()
        self.ledger()

    def model(self) -> None:
        domain, msg = self.cfg.domain, self.msg
        if not isinstance(msg.local_potentials, Mapping) or not msg.local_potentials:
            self.fail("field 'local_potentials' must map the local model's cliques to tables.")
        self.cliques("local_potentials", list(msg.local_potentials))
        for clique, table in msg.local_potentials.items():
            if tuple(clique) != domain.canonical(clique):
                self.fail("field 'local_potentials': a clique is not in the domain's column order.")
            self.array("local_potentials", table, "f", domain.shape_of(clique))
        self.cliques("measured", msg.measured)
        self.cliques("graph_edges", msg.graph_edges, size=2)

    def value_distributions(self) -> None:
        cfg, dists = self.cfg, self.msg.value_distributions
        binned = [c for c in self.columns if cfg.is_binned(c)] if self.budget.releases_value_distributions else []
        if not isinstance(dists, Mapping) or set(dists) != set(binned):
            self.fail("field 'value_distributions' must hold exactly the party's binned columns." if binned else
                      "field 'value_distributions' must be empty: this job releases no value distribution.")
        for col in binned:
            dist = self.array("value_distributions", dists[col], "f", (cfg.domain[col],))
            sums = np.bincount(cfg.bin_map(col), weights=dist)
            if (dist < 0).any() or np.abs(sums - 1.0).max() > _VALUE_DIST_TOL:
                self.fail(f"field 'value_distributions': column {col!r} is not a distribution within each bin.")

    def encoding(self) -> None:
        cfg, msg = self.cfg, self.msg
        if cfg.encoder != "fm" and msg.sketches is not None:
            self.fail("field 'sketches': this job's encoder sends none.")
        if cfg.encoder != "fo" and msg.perturbed is not None:
            self.fail("field 'perturbed': this job's encoder sends none.")
        sizes = [cfg.binned_size(c) for c in self.columns]
        if cfg.encoder == "fm":
            k_p, alpha_min = cfg.sketch_parameters
            dtype = fm.sketch_dtype(cfg.gamma, k_p, alpha_min)
            if not isinstance(msg.sketches, np.ndarray) or msg.sketches.dtype != dtype:
                self.fail(f"field 'sketches' must be an array of {dtype.name} sketch values.")
            self.array("sketches", msg.sketches, "u", (cfg.n_sketches, sum(sizes)))
            if msg.sketches.size and msg.sketches.min() < max(alpha_min, 1):
                self.fail("field 'sketches' holds values below the sketches' minimum alpha_min.")
            if msg.sketches.size and msg.sketches.max() > fm.sketch_max_value(cfg.gamma, k_p, alpha_min):
                self.fail("field 'sketches' holds values above the largest a sketch can take.")
        elif cfg.encoder == "fo":
            table = self.array("perturbed", msg.perturbed, "iu", ndim=2)
            if table.shape[1] != len(self.columns) or (table < 0).any() or (table >= np.asarray(sizes)).any():
                self.fail("field 'perturbed' must hold one column of binned codes per column of the party.")

    def ledger(self) -> None:
        b, cfg = self.budget, self.cfg
        entries = self.msg.ledger
        if not isinstance(entries, (list, tuple)) or not all(
                isinstance(e, LedgerEntry) and e.party in (None, self.party) and e.accounting in ("pure", "approx")
                for e in entries):
            self.fail("field 'ledger' must list the party's own pure or (epsilon, delta) entries.")
        eps, delta = [b.epsilon_local], [b.delta_local]
        if self.index == cfg.count_leader:
            eps.append(b.epsilon_count)
        if b.releases_value_distributions:
            eps += [b.epsilon_per_binned] * sum(cfg.is_binned(c) for c in self.columns)
        if cfg.encoder == "fm":
            share = len(self.columns) / b.n_attributes
            eps.append(b.epsilon_encoding * share)
            delta.append(b.delta_encoding * share)
        elif cfg.encoder == "fo":
            eps.append(b.epsilon_prime * len(self.columns))
        spent = (math.fsum(e.epsilon for e in entries), math.fsum(e.delta for e in entries))
        if not all(math.isclose(s, math.fsum(x), rel_tol=_CALIBRATION_REL) for s, x in zip(spent, (eps, delta))):
            self.fail("field 'ledger': its entries do not add up to the party's share of the job's budget.")


def check_vertical_message(message, config) -> None:
    """Validate every field of a received VertiMRF party message against the job's public configuration.

    The server trusts nothing a party sends: the sender must be a party of
    the job and send its own columns; ``local_total`` finite and > 0;
    ``n_hat`` a finite integer >= 1 from the count leader only; the local
    model's potentials finite float tables over cliques of the party's
    columns (domain order, the domain's shapes), ``measured`` and
    ``graph_edges`` cliques of its columns; value distributions for exactly
    its binned columns when the job releases them, finite, >= 0, summing to 1
    within each bin; FM sketches of the configured dtype and shape, between
    α_min and the largest value a sketch can take; FO tables of binned codes;
    ledger entries of the party adding up to its share of the budget.

    Parameters
    ----------
    message : VerticalMessage
    config : VerticalConfig

    Raises
    ------
    MessageError
        Naming the party and the field (never a value or a size).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.vertical_mrf.party import VerticalConfig, vertical_budget
    >>> from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage, check_vertical_message
    >>> budget = vertical_budget(1.0, 1e-6, n_parties=2, n_attributes=2, n_binned=0, encoder="none")
    >>> config = VerticalConfig((("p0", ("a",)), ("p1", ("b",))), Domain(["a", "b"], [2, 3]), budget)
    >>> msg = VerticalMessage("p0", ("a",), {("a",): np.zeros(2)}, 10.0, [("a",)], [], {}, n_hat=float("nan"))
    >>> check_vertical_message(msg, config)
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from 'p0': field 'n_hat' must be a finite integer >= 1.
    """
    _VerticalCheck(message, config).run()
