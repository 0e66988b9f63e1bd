"""The public schema: an ordered set of discrete attributes and their sizes.

A :class:`Domain` is public metadata.  It must come from the user (or from a
DP mechanism), never be read silently from the private data.  Every
attribute ``a`` takes integer codes ``0 .. size(a) - 1``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from math import prod

__all__ = ["Domain"]


class Domain(Mapping):
    """Ordered mapping ``attribute name -> number of categories``.

    The order of the attributes is the canonical order used everywhere in the
    package: marginal arrays have their axes in domain order, whatever order a
    clique was written in.

    Parameters
    ----------
    attrs : sequence of str
        Attribute names, unique.
    shape : sequence of int
        Number of categories of each attribute (positive).

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> dom = Domain(["age", "sex", "income"], [10, 2, 2])
    >>> dom.size(["age", "income"])
    20
    >>> dom.project(["income", "age"])
    Domain(age=10, income=2)
    >>> dom.canonical(("income", "age"))
    ('age', 'income')
    """

    __slots__ = ("_attrs", "_shape", "_index")

    def __init__(self, attrs: Sequence[str], shape: Sequence[int]):
        attrs = tuple(attrs)
        shape = tuple(int(s) for s in shape)
        if len(attrs) != len(shape):
            raise ValueError(f"{len(attrs)} attributes but {len(shape)} sizes.")
        if len(set(attrs)) != len(attrs):
            dupes = sorted({a for a in attrs if attrs.count(a) > 1}, key=repr)
            raise ValueError(f"Duplicate attribute names in domain: {dupes}.")
        bad = [(a, s) for a, s in zip(attrs, shape) if s < 1]
        if bad:
            raise ValueError(f"Attribute sizes must be >= 1, got {bad}.")
        self._attrs = attrs
        self._shape = shape
        self._index = {a: i for i, a in enumerate(attrs)}

    # -- construction -------------------------------------------------------
    @classmethod
    def from_dict(cls, sizes: Mapping[str, int]) -> "Domain":
        """Build a domain from ``{attribute: size}`` (insertion order kept)."""
        return cls(list(sizes), list(sizes.values()))

    def to_dict(self) -> dict[str, int]:
        """``{attribute: size}`` in domain order (JSON-serialisable)."""
        return dict(zip(self._attrs, self._shape))

    # -- Mapping protocol ---------------------------------------------------
    def __getitem__(self, attr: str) -> int:
        try:
            return self._shape[self._index[attr]]
        except KeyError:
            raise KeyError(f"Attribute {attr!r} is not in the domain {list(self._attrs)}.") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)

    def __contains__(self, attr) -> bool:
        return attr in self._index

    def __eq__(self, other) -> bool:
        return isinstance(other, Domain) and self._attrs == other._attrs and self._shape == other._shape

    def __hash__(self) -> int:
        return hash((self._attrs, self._shape))

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}={s}" for a, s in zip(self._attrs, self._shape))
        return f"Domain({inner})"

    def __getstate__(self):
        return (self._attrs, self._shape)

    def __setstate__(self, state):
        attrs, shape = state
        self._attrs, self._shape = attrs, shape
        self._index = {a: i for i, a in enumerate(attrs)}

    # -- queries ------------------------------------------------------------
    @property
    def attrs(self) -> tuple[str, ...]:
        """Attribute names in canonical order."""
        return self._attrs

    @property
    def shape(self) -> tuple[int, ...]:
        """Attribute sizes in canonical order."""
        return self._shape

    def index(self, attr: str) -> int:
        """Position of ``attr`` in the canonical order."""
        try:
            return self._index[attr]
        except KeyError:
            raise KeyError(f"Attribute {attr!r} is not in the domain {list(self._attrs)}.") from None

    def canonical(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """``attrs`` deduplicated and sorted into domain order."""
        attrs = set(attrs)
        missing = attrs - self._index.keys()
        if missing:
            raise KeyError(f"Attributes {sorted(missing, key=repr)} are not in the domain {list(self._attrs)}.")
        return tuple(sorted(attrs, key=self._index.__getitem__))

    def project(self, attrs: Iterable[str]) -> "Domain":
        """The sub-domain over ``attrs`` (in canonical order)."""
        attrs = self.canonical(attrs)
        return Domain(attrs, [self[a] for a in attrs])

    def marginalize(self, attrs: Iterable[str]) -> "Domain":
        """The sub-domain over every attribute *not* in ``attrs``."""
        drop = set(attrs)
        return self.project([a for a in self._attrs if a not in drop])

    def shape_of(self, attrs: Iterable[str]) -> tuple[int, ...]:
        """Sizes of ``attrs`` in canonical order."""
        return tuple(self[a] for a in self.canonical(attrs))

    def strides(self, attrs: Iterable[str]) -> tuple[int, ...]:
        """Row-major strides of the marginal over ``attrs``, in canonical order.

        A cell's flat index is ``Σ_a code_a · stride_a``.

        Examples
        --------
        >>> from skdpsynth import Domain
        >>> Domain(["a", "b", "c"], [2, 3, 4]).strides(["c", "a"])
        (4, 1)
        """
        shape = self.shape_of(attrs)
        return tuple(prod(shape[k + 1:]) for k in range(len(shape)))

    def size(self, attrs: Iterable[str] | None = None) -> int:
        """Number of cells of the marginal over ``attrs`` (all attributes by default)."""
        if attrs is None:
            return prod(self._shape)
        # Direct lookups: selection plans call this millions of times a fit.
        shape, index = self._shape, self._index
        try:
            return prod([shape[index[a]] for a in set(attrs)])
        except KeyError:
            missing = sorted(set(attrs) - index.keys())
            raise KeyError(f"Attributes {missing} are not in the domain {list(self._attrs)}.") from None

    def union(self, other: "Domain") -> "Domain":
        """This domain followed by the attributes of ``other`` it lacks; shared sizes must agree."""
        for a in other:
            if a in self and self[a] != other[a]:
                raise ValueError(f"Attribute {a!r} has size {self[a]} here but {other[a]} in the other domain.")
        extra = [a for a in other if a not in self]
        return Domain(self._attrs + tuple(extra), self._shape + tuple(other[a] for a in extra))
