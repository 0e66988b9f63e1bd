"""The public job as one party holds it, and every layout the party derives from it.

A party of the federated runtime answers a curator it does not trust with
its guarantee (Algorithm 2's local steps, RandDPGen paper §4; threat model in
``doc/federated.md``).  So it never takes a *layout* from a request: which of
its columns a marginal covers, the strides of a cell index, the number of
cells it counts and adds noise to, the shape of a secure product.  It derives
all of them from its own copy of the public job (the domain, its own roster
entry, and which columns the other parties of its slice hold) and the
marginal's attribute names, and refuses a request that asks for anything
else.  A count is then always over exactly the cells its noise covers, and a
product always has the dimensions the party's own codes fit.

The job comes from the party's own channel (``PartyServer(job=...)``, the
file-based role reads it from the job description), or, for a server started
without one, from the first setup request, after which it is pinned: a later
setup that describes another job is refused.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..domain import Domain
from .wire import MessageError

__all__ = ["PartyJob", "chain_order"]

_CURATOR = "curator"


def _refuse(text: str) -> MessageError:
    return MessageError(_CURATOR, text)


def chain_order(sizes: Sequence[int]) -> tuple:
    """The chain order of a k-party secure product (:mod:`~skdpsynth.federated.secure_chain`).

    ``sizes`` are the involved parties' numbers of cells, in slice order;
    ``order[q]`` is the slice-order index of the party at chain position
    ``q + 1``.  The party with the most cells comes first (the earliest on
    ties), so that the matrix the others share is the narrowest; the rest
    keep the slice order.  Public: every party and the curator derive it.

    Examples
    --------
    >>> chain_order([4, 10, 3, 10])
    (1, 0, 2, 3)
    """
    first = max(range(len(sizes)), key=lambda i: (sizes[i], -i))
    return (first,) + tuple(i for i in range(len(sizes)) if i != first)


@dataclass(frozen=True)
class PartyJob:
    """What one party knows of the public job: the domain, its roster entry, its slice's columns.

    Parameters
    ----------
    name : str
        The party.
    domain : Domain
        The public schema.
    columns : tuple of str
        The party's columns.
    n_rows : int
        Its public roster size (the records of its slice).
    slice, index : int
        Its slice and its position in the slice.
    slice_columns : tuple of (str, tuple of str)
        Every party of its slice (itself included), in slice order, with its columns.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.federated import HybridPartition
    >>> from skdpsynth.federated.party_job import PartyJob
    >>> dom = Domain(["a", "b", "c"], [2, 3, 4])
    >>> job = PartyJob.from_partition(dom, HybridPartition.vertical(5, [["a", "c"], ["b"]]), "party0.0")
    >>> job.columns, job.n_rows
    (('a', 'c'), 5)
    >>> job.count_layout(("a", "c"))          # strides and number of cells, from the domain alone
    ([4, 1], 8)
    >>> job.product_layout(("a", "b", "c"), role=1, peer="party0.1")   # first, second, n, d1, d2
    (('a', 'c'), ('b',), 5, 8, 3)
    >>> job.count_layout(("a", "b"))
    Traceback (most recent call last):
    ...
    skdpsynth.federated.wire.MessageError: Message from 'curator': party 'party0.0' holds only ['a'] of the marginal ['a', 'b'], so it cannot count it alone.
    """

    name: str
    domain: Domain
    columns: tuple
    n_rows: int
    slice: int
    index: int
    slice_columns: tuple

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def from_partition(cls, domain: Domain | Mapping, partition, name: str) -> "PartyJob":
        """The job of party ``name`` from the public domain and partition (e.g. a job description's)."""
        from .partition import HybridPartition

        domain = domain if isinstance(domain, Domain) else Domain.from_dict(dict(domain))
        parties = HybridPartition.coerce(partition).parties()
        own = [p for p in parties if p.name == name]
        if not own:
            raise ValueError(f"The job has no party {name!r}.")
        spec = own[0]
        mates = tuple((p.name, tuple(p.columns)) for p in parties if p.slice == spec.slice)
        return cls(name, domain, tuple(spec.columns), int(spec.n_rows), int(spec.slice), int(spec.index), mates)

    @classmethod
    def from_setup(cls, name: str, fields: Mapping) -> "PartyJob":
        """The job a setup request describes (a server without a job of its own pins it)."""
        try:
            domain = Domain([str(a) for a in fields["domain"]["attrs"]],
                            [int(s) for s in fields["domain"]["sizes"]])
            spec = fields["spec"]
            columns, n_rows = tuple(str(c) for c in spec["columns"]), int(spec["n_rows"])
            mates = tuple((str(p), tuple(str(c) for c in cols))
                          for p, cols in dict(fields.get("slice_parties") or {name: columns}).items())
            job = cls(str(spec["name"]), domain, columns, n_rows, int(spec["slice"]), int(spec["index"]), mates)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise _refuse(f"the setup for party {name!r} is malformed: it does not describe a job (domain, spec, "
                          "slice).") from None
        job.check(name)
        return job

    def check(self, name: str) -> None:
        """Refuse a job that is not a consistent description of party ``name``."""
        if self.name != name:
            raise _refuse(f"setup for party {self.name!r} reached party {name!r}.")
        if self.n_rows < 0 or not self.columns or not set(self.columns) <= set(self.domain.attrs):
            raise _refuse(f"setup for party {name!r} names no columns, or columns outside the domain.")
        mates = dict(self.slice_columns)
        if len(mates) != len(self.slice_columns) or mates.get(name) != self.columns:
            raise _refuse(f"setup for party {name!r} lists its slice inconsistently with its own columns.")
        if any(not set(cols) <= set(self.domain.attrs) for cols in mates.values()):
            raise _refuse(f"setup for party {name!r} gives a slice-mate columns outside the domain.")

    def differences(self, other: "PartyJob") -> list[str]:
        """What of ``other`` differs from this job: ``"domain"``, ``"roster entry"``, ``"slice"``."""
        entry = ("name", "columns", "n_rows", "slice", "index")
        parts = (("domain", self.domain == other.domain),
                 ("roster entry", all(getattr(self, k) == getattr(other, k) for k in entry)),
                 ("slice", self.slice_columns == other.slice_columns))
        return [what for what, same in parts if not same]

    def setup_fields(self) -> dict:
        """The parts of a setup request that describe this job (what :meth:`from_setup` reads)."""
        return {"domain": {"attrs": list(self.domain.attrs), "sizes": [int(s) for s in self.domain.shape]},
                "spec": {"name": self.name, "slice": self.slice, "index": self.index, "n_rows": self.n_rows,
                         "columns": list(self.columns)},
                "slice_parties": {p: list(cols) for p, cols in self.slice_columns}}

    # -- layouts -----------------------------------------------------------------------------------
    def marginal(self, r: Sequence) -> tuple:
        """``r`` as the canonical marginal of the domain (refused otherwise)."""
        if isinstance(r, (str, bytes)) or not isinstance(r, Sequence) or not r:
            raise _refuse(f"a request to party {self.name!r} names no marginal.")
        r = tuple(r)
        if not all(isinstance(a, str) and a in self.domain.attrs for a in r) or len(set(r)) != len(r) \
                or self.domain.canonical(r) != r:
            raise _refuse(f"a request to party {self.name!r} names a marginal that is not a canonical list of "
                          "distinct domain columns.")
        return r

    def own_attrs(self, r: Sequence) -> tuple:
        """The party's columns of the marginal ``r``, in ``r``'s order (at least one)."""
        r = self.marginal(r)
        own = tuple(a for a in r if a in self.columns)
        if not own:
            raise _refuse(f"party {self.name!r} holds none of the marginal {list(r)}.")
        return own

    def check_attrs(self, r: Sequence, attrs: Sequence) -> tuple:
        """Refuse a request whose ``attrs`` are not exactly the party's columns of ``r``."""
        own = self.own_attrs(r)
        if isinstance(attrs, (str, bytes)) or tuple(attrs) != own:
            raise _refuse(f"a request to party {self.name!r} names attributes other than its columns of the "
                          f"marginal {list(r)}.")
        return own

    def count_layout(self, r: Sequence) -> tuple[list, int]:
        """Strides of ``r``'s cells (row-major over the domain) and their number, for a party holding all of ``r``."""
        r = self.marginal(r)
        own = self.own_attrs(r)
        if own != r:
            raise _refuse(f"party {self.name!r} holds only {list(own)} of the marginal {list(r)}, so it cannot "
                          "count it alone.")
        return list(self.domain.strides(r)), self.domain.size(r)

    def product_layout(self, r: Sequence, role: int, peer: str) -> tuple:
        """``(first, second, n, d1, d2)`` of the secure product of ``r`` with slice-mate ``peer``.

        The party holds ``first`` (role 1) or ``second`` (role 2); the peer
        holds the rest of ``r``.  ``n`` is the slice's roster size, ``d1`` and
        ``d2`` the numbers of cells over ``first`` and ``second``.
        """
        r = self.marginal(r)
        own = self.own_attrs(r)
        other = tuple(a for a in r if a not in own)
        mates = dict(self.slice_columns)
        if peer == self.name or peer not in mates:
            raise _refuse(f"party {self.name!r} has no slice-mate {peer!r} to compute a product with.")
        if not other or not set(other) <= set(mates[peer]):
            raise _refuse(f"party {self.name!r} and {peer!r} do not hold the marginal {list(r)} between them.")
        if role not in (1, 2):
            raise _refuse(f"a product request to party {self.name!r} gives it role {role!r}, not 1 or 2.")
        first, second = (own, other) if role == 1 else (other, own)
        return first, second, self.n_rows, self.domain.size(first), self.domain.size(second)

    def chain_layout(self, r: Sequence) -> tuple:
        """``(members, position, n, dims)`` of the secure k-party product of ``r`` in this party's slice.

        ``members`` lists ``(party, its attributes of r)`` in chain order
        (:func:`~skdpsynth.federated.secure_chain.chain_order`: the party with
        the most cells first, the rest in slice order), ``position`` is this
        party's (1-based), ``n`` the roster size and ``dims`` every member's
        number of cells.  Refused unless at least three parties of the slice
        hold attributes of ``r`` and they hold all of it.

        Examples
        --------
        >>> from skdpsynth import Domain
        >>> from skdpsynth.federated import HybridPartition
        >>> dom = Domain(["a", "b", "c"], [2, 5, 3])
        >>> job = PartyJob.from_partition(dom, HybridPartition.vertical(7, [["a"], ["b"], ["c"]]), "party0.2")
        >>> job.chain_layout(("a", "b", "c"))
        ((('party0.1', ('b',)), ('party0.0', ('a',)), ('party0.2', ('c',))), 3, 7, (5, 2, 3))
        """
        r = self.marginal(r)
        self.own_attrs(r)
        involved = [(p, tuple(a for a in r if a in cols)) for p, cols in self.slice_columns]
        involved = [(p, attrs) for p, attrs in involved if attrs]
        if len(involved) < 3 or sum(len(attrs) for _, attrs in involved) != len(r):
            raise _refuse(f"the marginal {list(r)} is not split among three or more parties of party "
                          f"{self.name!r}'s slice.")
        sizes = [self.domain.size(attrs) for _, attrs in involved]
        order = chain_order(sizes)
        members = tuple(involved[i] for i in order)
        position = 1 + [p for p, _ in members].index(self.name)
        return members, position, self.n_rows, tuple(sizes[i] for i in order)
