"""Who holds which part of a hybrid-partitioned table.

In the hybrid setting the full (virtual) table ``X`` is never held in one
place.  Its rows (individuals) are split into ``K`` disjoint *slices*; within
slice ``i`` the columns are split among ``S_i`` parties whose column groups
are disjoint and together cover every column.  Party ``(i, j)`` holds the rows
of slice ``i`` restricted to column group ``j``.  ``S_i = 1`` everywhere is
the pure horizontal case, ``K = 1`` the pure vertical case and ``K = S = 1``
the centralized case.  The vertical split may differ between slices; ``S`` is
then the largest number of parties in any slice.

A :class:`HybridPartition` is **public metadata**: which party holds which
rows (as 0-based positions in ``X``) and which columns.  It describes how the
data owners are organised (or is drawn at random with a recorded seed, for
experiments); it must never be derived from private values, and it holds no
data itself.
"""
from __future__ import annotations

import operator
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..utils import check_random_state

__all__ = ["HybridPartition", "PartySpec"]

Column = Hashable
_Split = tuple[tuple[Column, ...], ...]  # one slice: S_i column groups


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------
def _count(value: Any, name: str, minimum: int) -> int:
    """``value`` as an int >= ``minimum`` (bools rejected)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}.") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    return value


def _column_list(columns: Iterable[Column], what: str = "columns") -> list[Column]:
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Iterable):
        raise TypeError(f"{what} must be a sequence of column names, got {columns!r}.")
    columns = list(columns)
    seen: set = set()
    for c in columns:
        if c in seen:
            raise ValueError(f"Column {c!r} appears more than once in {what}.")
        seen.add(c)
    return columns


def _first_shared(arrays: Sequence[np.ndarray]) -> tuple[int, int, int] | None:
    """First value held by two of ``arrays`` (each duplicate-free): (value, a, b), a < b."""
    if len(arrays) < 2:
        return None
    values = np.concatenate(arrays)
    owner = np.repeat(np.arange(len(arrays)), [len(a) for a in arrays])
    order = np.argsort(values, kind="stable")
    values, owner = values[order], owner[order]
    hits = np.flatnonzero(values[1:] == values[:-1])
    if hits.size == 0:
        return None
    k = hits[0]
    return int(values[k]), int(owner[k]), int(owner[k + 1])


def _row_array(rows: Any, where: str) -> np.ndarray:
    """Validated, sorted int64 row positions of one slice / party."""
    arr = np.asarray(rows)
    if arr.ndim != 1:
        raise ValueError(f"Row positions of {where} must be 1-D, got an array of shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{where[0].upper()}{where[1:]} is empty: it must hold at least one row.")
    if arr.dtype.kind not in "iu":
        raise ValueError(
            f"Row positions of {where} must be integers, got dtype {arr.dtype} "
            "(cast with .astype(int) if the values are whole numbers)."
        )
    if (arr < 0).any():
        raise ValueError(
            f"{where[0].upper()}{where[1:]} contains the negative row position "
            f"{int(arr[arr < 0][0])}; row positions are 0-based."
        )
    arr = np.sort(arr.astype(np.int64, copy=False))
    dup = arr[1:][arr[1:] == arr[:-1]]
    if dup.size:
        raise ValueError(f"Row {int(dup[0])} is listed more than once in {where}.")
    return arr


def _parse_slices(slices: Any) -> tuple[np.ndarray, ...]:
    if isinstance(slices, (str, bytes, Mapping)) or not isinstance(slices, Iterable):
        raise TypeError(
            "slices must be a 1-D array-like of slice labels or a list of 1-D arrays of "
            f"row positions, got {type(slices).__name__}."
        )
    if isinstance(slices, (list, tuple)) and any(np.ndim(s) >= 1 for s in slices):
        # list of K arrays of row positions
        bad = [i for i, s in enumerate(slices) if np.ndim(s) != 1]
        if bad:
            raise ValueError(
                "slices mixes row-position arrays with scalars (element "
                f"{bad[0]}); pass either K arrays of row positions or one label per row."
            )
        rows = tuple(_row_array(s, f"slice {i}") for i, s in enumerate(slices))
        shared = _first_shared(rows)
        if shared is not None:
            row, a, b = shared
            raise ValueError(
                f"Row {row} is in two slices ({a} and {b}); every row must belong to exactly one slice."
            )
        return rows

    labels = np.asarray(slices)
    if labels.ndim != 1:
        raise ValueError(f"Slice labels must be 1-D, got an array of shape {labels.shape}.")
    if labels.size == 0:
        raise ValueError("slices is empty: the partition must cover at least one row.")
    if labels.dtype.kind not in "iu":
        raise ValueError(
            f"Slice labels must be non-negative integers, got dtype {labels.dtype} "
            "(cast with .astype(int) if the values are whole numbers)."
        )
    if (labels < 0).any():
        pos = int(np.flatnonzero(labels < 0)[0])
        raise ValueError(
            f"Slice labels must be non-negative integers; row {pos} has label {int(labels[pos])}."
        )
    counts = np.bincount(labels)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise ValueError(
            f"Slice {int(empty[0])} is empty: labels must use every value 0..{len(counts) - 1}."
        )
    order = np.argsort(labels, kind="stable").astype(np.int64, copy=False)
    return tuple(np.split(order, np.cumsum(counts)[:-1]))


def _parse_split(groups: Any, where: str) -> _Split:
    """One slice's column groups as a tuple of tuples (no data needed)."""
    if isinstance(groups, (str, bytes, Mapping)) or not isinstance(groups, Iterable):
        raise TypeError(f"Column groups {where} must be a list of lists of column names, got {groups!r}.")
    out = []
    for j, group in enumerate(groups):
        if isinstance(group, (str, bytes)) or not isinstance(group, Iterable):
            raise TypeError(
                f"Column group {j} {where} must be a list of column names, got {group!r} "
                "(write [['a', 'b'], ['c']], not ['a', 'b', 'c'])."
            )
        if isinstance(group, (set, frozenset)):
            raise TypeError(f"Column group {j} {where} is a set; pass a list so the column order is defined.")
        group = tuple(group)
        if not group:
            raise ValueError(f"Column group {j} {where} is empty: every party must hold at least one column.")
        seen: set = set()
        for c in group:
            if c in seen:
                raise ValueError(f"Column {c!r} is listed more than once in column group {j} {where}.")
            seen.add(c)
        out.append(group)
    if not out:
        raise ValueError(f"No column groups {where}: every slice needs at least one party.")
    return tuple(out)


def _parse_groups(column_groups: Any, n_slices: int) -> tuple[_Split, ...]:
    if isinstance(column_groups, Mapping):
        per: dict[int, _Split] = {}
        for key, split in column_groups.items():
            if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
                raise TypeError(f"column_groups keys must be slice indices (ints), got {key!r}.")
            i = int(key)
            if not 0 <= i < n_slices:
                raise ValueError(
                    f"column_groups has an entry for slice {i}, but there are only {n_slices} slices."
                )
            per[i] = _parse_split(split, f"of slice {i}")
        missing = [i for i in range(n_slices) if i not in per]
        if missing:
            raise ValueError(f"column_groups has no entry for slice {missing[0]} (there are {n_slices} slices).")
        return tuple(per[i] for i in range(n_slices))
    split = _parse_split(column_groups, "(shared by every slice)")
    return (split,) * n_slices


def _parse_names(party_names: Any, groups: tuple[_Split, ...]) -> dict[tuple[int, int], str]:
    names = {(i, j): f"party{i}.{j}" for i, split in enumerate(groups) for j in range(len(split))}
    if party_names is None:
        return names
    if not isinstance(party_names, Mapping):
        raise TypeError(f"party_names must be a dict {{(slice, index): name}}, got {type(party_names).__name__}.")
    for key, name in party_names.items():
        try:
            i, j = key
            i, j = operator.index(i), operator.index(j)
        except (TypeError, ValueError):
            raise ValueError(f"party_names keys must be (slice, index) pairs of ints, got {key!r}.") from None
        if (i, j) not in names:
            raise ValueError(f"party_names names party {(i, j)}, which does not exist in this partition.")
        if not isinstance(name, str):
            raise TypeError(f"Party names must be strings, got {name!r} for party {(i, j)}.")
        names[(i, j)] = name
    owner: dict[str, tuple[int, int]] = {}
    for key, name in names.items():
        if name in owner:
            raise ValueError(f"Party name {name!r} is used for parties {owner[name]} and {key}; names must be unique.")
        owner[name] = key
    return names


def _plain(value: Any) -> Any:
    """numpy scalar -> Python scalar, for readable messages."""
    return value.item() if isinstance(value, np.generic) else value


def _short(values: Sequence, limit: int = 4) -> str:
    if len(values) <= limit:
        return repr(list(values))
    head = ", ".join(repr(v) for v in values[: limit - 1])
    return f"[{head}, ... (+{len(values) - limit + 1})]"


# ---------------------------------------------------------------------------
# PartySpec
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class PartySpec:
    """What one party of a :class:`HybridPartition` holds.

    Parameters
    ----------
    slice : int
        Slice index ``i`` (which disjoint set of records).
    index : int
        Party index ``j`` within the slice (which column group).
    name : str
        Party name.
    rows : numpy.ndarray
        Sorted 0-based row positions into ``X`` (read-only).
    columns : tuple
        The columns the party holds, in the order given.

    Examples
    --------
    >>> from skdpsynth.federated import HybridPartition
    >>> p = HybridPartition([0, 1, 0], [["a"], ["b"]]).parties()[1]
    >>> p
    PartySpec(slice=0, index=1, name='party0.1', rows=<2 rows>, columns=('b',))
    >>> p.rows, p.n_rows
    (array([0, 2]), 2)
    """

    slice: int
    index: int
    name: str
    rows: np.ndarray
    columns: tuple

    @property
    def n_rows(self) -> int:
        """Number of rows (records) the party holds."""
        return len(self.rows)

    def __repr__(self) -> str:
        return (
            f"PartySpec(slice={self.slice}, index={self.index}, name={self.name!r}, "
            f"rows=<{len(self.rows)} rows>, columns={self.columns!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartySpec):
            return NotImplemented
        return (
            (self.slice, self.index, self.name, self.columns)
            == (other.slice, other.index, other.name, other.columns)
            and np.array_equal(self.rows, other.rows)
        )

    def __hash__(self) -> int:
        return hash((self.slice, self.index, self.name, self.columns, len(self.rows)))


# ---------------------------------------------------------------------------
# HybridPartition
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PartitionLayout:
    """Who holds which columns, without any rows: the public part of a partition.

    A synthesizer that simulates the parties from one table (e.g.
    ``HybridSynthesizer(partition={"n_slices": 2, "n_vertical": 2})``) builds
    its roster from that table's rows, so the roster's size is the private
    record count.  It keeps this layout instead: the slices, the column
    groups and the party names, which come from public information only.

    Examples
    --------
    >>> from skdpsynth.federated import HybridPartition
    >>> layout = HybridPartition([0, 0, 1], [["a"], ["b"]]).layout()
    >>> layout
    PartitionLayout(n_slices=2, n_vertical=2, n_parties=4, column_groups=[['a'], ['b']])
    >>> hasattr(layout, "n_rows")
    False
    """

    n_slices: int
    groups: tuple  # per slice: a tuple of column groups, one per party
    names: tuple  # per slice: the party names

    @property
    def n_vertical(self) -> int:
        """``S``, the largest number of parties in any slice."""
        return max(len(split) for split in self.groups)

    @property
    def n_parties(self) -> int:
        """Total number of parties."""
        return sum(len(split) for split in self.groups)

    def column_groups_of(self, i: int) -> list[list[Column]]:
        """The column groups of slice ``i``, one list per party."""
        return [list(group) for group in self.groups[i]]

    def __repr__(self) -> str:
        if all(split == self.groups[0] for split in self.groups):
            groups_txt = "[" + ", ".join(_short(g) for g in self.groups[0]) + "]"
        else:
            groups_txt = f"<per slice, parties per slice {_short([len(s) for s in self.groups], 6)}>"
        return (f"PartitionLayout(n_slices={self.n_slices}, n_vertical={self.n_vertical}, "
                f"n_parties={self.n_parties}, column_groups={groups_txt})")


class HybridPartition:
    """Public description of who holds which rows and columns of a table.

    ``K`` slices (disjoint sets of rows); slice ``i`` is held by ``S_i``
    parties, party ``(i, j)`` holding all rows of slice ``i`` but only the
    columns of its group ``j``.  Within a slice the groups are disjoint and
    cover all columns.  This object is public metadata and holds no data.

    The constructor checks what needs no data (well-formed labels or row
    arrays, no row in two slices, no empty slice, no empty or duplicated
    column group entries, valid party names).  The checks against a concrete
    table (row count, column names, disjoint and covering column groups) are
    done by :meth:`validate`, which a synthesizer calls at fit time.

    Parameters
    ----------
    slices : array-like of int, shape (n_rows,), or list of array-like of int
        Either one slice label in ``0 .. K-1`` per row of ``X`` (every label
        must be used), or a list of ``K`` 1-D arrays of 0-based row positions
        into ``X`` (one array per slice).
    column_groups : list of list of column names, or dict
        A list of ``S`` column groups, the same split in every slice, or a
        dict ``{slice_index: [[cols...], [cols...], ...]}`` giving each slice
        its own split (``S_i`` may differ).  Column names are compared as
        given (any hashable).
    party_names : dict, optional
        ``{(i, j): name}`` for some or all parties; unnamed parties are
        called ``f"party{i}.{j}"``.  Names must be unique.

    Attributes
    ----------
    n_slices : int
        ``K``.
    n_vertical : int
        ``S``, the largest number of parties in any slice.
    n_parties : int
        Total number of parties, ``sum_i S_i``.
    n_rows : int
        Number of rows covered by the slices.

    See Also
    --------
    HybridPartition.grid, HybridPartition.coerce, HybridPartition.from_party_frames

    Examples
    --------
    >>> from skdpsynth.federated import HybridPartition
    >>> part = HybridPartition([0, 0, 1, 1, 1], [["age", "sex"], ["income"]])
    >>> part
    HybridPartition(n_slices=2, n_vertical=2, n_parties=4, n_rows=5, slice_sizes=[2, 3], column_groups=[['age', 'sex'], ['income']])
    >>> part.slice_rows(1)
    array([2, 3, 4])
    >>> [(p.name, p.columns) for p in part.parties()[:2]]
    [('party0.0', ('age', 'sex')), ('party0.1', ('income',))]
    >>> part.validate(["age", "sex", "income"], n_rows=5) is part
    True

    Row-position arrays, a per-slice split and custom names:

    >>> part = HybridPartition(
    ...     [[0, 2], [1, 3, 4]],
    ...     {0: [["age", "sex", "income"]], 1: [["age"], ["sex"], ["income"]]},
    ...     party_names={(0, 0): "hospital"},
    ... )
    >>> part.n_slices, part.n_vertical, part.n_parties
    (2, 3, 4)
    >>> part.slice_labels()
    array([0, 1, 0, 1, 1])
    """

    __hash__ = None  # equality is by content; the object holds arrays

    def __init__(
        self,
        slices: Any,
        column_groups: Sequence[Sequence[Column]] | Mapping[int, Sequence[Sequence[Column]]],
        *,
        party_names: Mapping[tuple[int, int], str] | None = None,
    ):
        rows = _parse_slices(slices)
        groups = _parse_groups(column_groups, len(rows))
        names = _parse_names(party_names, groups)
        self._set(rows, groups, names)

    def _set(self, rows, groups, names) -> None:
        self._slices: tuple[np.ndarray, ...] = tuple(rows)
        self._groups: tuple[_Split, ...] = tuple(groups)
        self._names: dict[tuple[int, int], str] = dict(names)

    @classmethod
    def _from_parts(cls, rows, groups, names) -> "HybridPartition":
        obj = cls.__new__(cls)
        obj._set(rows, groups, names)
        return obj

    # -- validation ---------------------------------------------------------
    def validate(
        self,
        columns: Iterable[Column],
        n_rows: int,
        *,
        overlap: Literal["error", "first"] = "error",
    ) -> "HybridPartition":
        """Check the partition against a table's columns and row count.

        Parameters
        ----------
        columns : sequence of column names
            The columns of ``X`` (e.g. ``X.columns``), unique.
        n_rows : int
            The number of rows of ``X``.
        overlap : {"error", "first"}, default "error"
            What to do with a column held by two parties of one slice.
            ``"error"`` raises; ``"first"`` keeps it only with the
            lowest-index party of that slice that holds it
            (``doc/deviations.md``, "Overlapping columns go to the first
            party").  A party left with no columns is still an error.

        Returns
        -------
        HybridPartition
            ``self`` if nothing had to change, otherwise a new partition with
            the overlaps resolved.

        Raises
        ------
        ValueError
            If a row position is out of range, a row is in no slice, a party
            names a column that ``columns`` lacks, two parties of a slice hold
            the same column (``overlap="error"``), a column is held by no
            party of a slice, or a party ends up with no columns.

        Examples
        --------
        >>> from skdpsynth.federated import HybridPartition
        >>> part = HybridPartition([0, 0, 1], [["a", "b"], ["b", "c"]])
        >>> part.validate(["a", "b", "c"], 3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Column 'b' is held by two parties of slice 0: 'party0.0' and 'party0.1'. ...
        >>> part.validate(["a", "b", "c"], 3, overlap="first").column_groups_of(0)
        [['a', 'b'], ['c']]
        """
        if overlap not in ("error", "first"):
            raise ValueError(f"overlap must be 'error' or 'first', got {overlap!r}.")
        columns = _column_list(columns)
        n_rows = _count(n_rows, "n_rows", 0)

        # rows: in range, and every row in some slice (no row is in two slices by construction).
        # n_rows may be the length of private data (a table the partition is checked against): the messages
        # quote only what the partition alone determines (public, like the roster), never n_rows or anything
        # chosen by it (the first out-of-range position of a contiguous roster would be n_rows itself).
        end = max(int(rows[-1]) for rows in self._slices) + 1
        if end > n_rows:
            raise ValueError(
                f"The partition's roster has row positions up to {end - 1}, out of range: the table has fewer "
                "rows than the roster. Give the table one row per roster position."
            )
        covered = np.zeros(n_rows, dtype=bool)
        for rows in self._slices:
            covered[rows] = True
        missing = np.flatnonzero(~covered)
        if missing.size:
            holes = missing[missing < end]  # positions the partition itself skips: public
            where = (f"the partition skips row position(s) {_short(holes.tolist(), 5)}" if holes.size else
                     "the table has more rows than the partition's roster")
            raise ValueError(f"Some rows are in no slice: {where}; every row of X must belong to exactly one slice.")

        # columns, slice by slice
        known = set(columns)
        new_groups = []
        changed = False
        for i, split in enumerate(self._groups):
            owner: dict[Column, int] = {}
            kept: list[list[Column]] = [[] for _ in split]
            for j, group in enumerate(split):
                for c in group:
                    if c not in known:
                        raise ValueError(
                            f"Party {self._names[(i, j)]!r} (slice {i}, group {j}) holds column {c!r}, "
                            f"which is not a column of the data (columns: {_short(columns, 8)})."
                        )
                    if c in owner:
                        if overlap == "error":
                            raise ValueError(
                                f"Column {c!r} is held by two parties of slice {i}: "
                                f"{self._names[(i, owner[c])]!r} and {self._names[(i, j)]!r}. "
                                "Column groups within a slice must be disjoint: resolve the overlap "
                                "(e.g. drop the column from all but one party) or pass "
                                "overlap='first' to keep it with the lowest-index party."
                            )
                        changed = True
                        continue
                    owner[c] = j
                    kept[j].append(c)
            for j, cols in enumerate(kept):
                if not cols:
                    raise ValueError(
                        f"Party {self._names[(i, j)]!r} (slice {i}, group {j}) holds no columns once "
                        "overlapping columns are assigned to lower-index parties (overlap='first'); "
                        "every party must hold at least one column of its own."
                    )
            uncovered = [c for c in columns if c not in owner]
            if uncovered:
                raise ValueError(
                    f"Column {uncovered[0]!r} is held by no party of slice {i} "
                    f"(uncovered: {_short(uncovered, 5)}); within every slice the column groups "
                    "must cover all columns."
                )
            new_groups.append(tuple(tuple(cols) for cols in kept))
        if not changed:
            return self
        return self._from_parts(self._slices, new_groups, self._names)

    # -- accessors ----------------------------------------------------------
    @property
    def n_slices(self) -> int:
        """``K``, the number of row slices."""
        return len(self._slices)

    @property
    def n_rows(self) -> int:
        """Total number of rows covered by the slices."""
        return int(sum(len(rows) for rows in self._slices))

    @property
    def n_vertical(self) -> int:
        """``S``, the largest number of parties in any slice.

        See ``doc/deviations.md``, "Slices and parties of irregular
        partitions".
        """
        return max(len(split) for split in self._groups)

    @property
    def n_parties(self) -> int:
        """Total number of parties, ``sum_i S_i``."""
        return sum(len(split) for split in self._groups)

    def _check_slice(self, i: int) -> int:
        i = operator.index(i)
        if not 0 <= i < self.n_slices:
            raise IndexError(f"Slice index {i} out of range for {self.n_slices} slices.")
        return i

    def _party_list(self, i: int) -> str:
        return ", ".join(repr(self._names[(i, j)]) for j in range(len(self._groups[i])))

    def slice_rows(self, i: int) -> np.ndarray:
        """Sorted 0-based row positions of slice ``i`` (a fresh array)."""
        return self._slices[self._check_slice(i)].copy()

    def slice_labels(self, n_rows: int | None = None) -> np.ndarray:
        """Slice index of every row.

        Parameters
        ----------
        n_rows : int, optional
            Length of the result; defaults to the largest row position + 1.
            Rows in no slice get ``-1``.

        Returns
        -------
        numpy.ndarray of int64, shape (n_rows,)
        """
        if n_rows is None:
            n_rows = max(int(rows[-1]) for rows in self._slices) + 1
        n_rows = _count(n_rows, "n_rows", 0)
        labels = np.full(n_rows, -1, dtype=np.int64)
        for i, rows in enumerate(self._slices):
            if rows[-1] >= n_rows:
                raise ValueError(f"Slice {i} holds row {int(rows[-1])}, which is out of range for n_rows={n_rows}.")
            labels[rows] = i
        return labels

    def column_groups_of(self, i: int) -> list[list[Column]]:
        """The column groups of slice ``i``, one list per party (fresh lists)."""
        return [list(group) for group in self._groups[self._check_slice(i)]]

    def parties(self) -> list[PartySpec]:
        """All parties, slice by slice, as :class:`PartySpec` records."""
        out = []
        for i, (rows, split) in enumerate(zip(self._slices, self._groups)):
            view = rows.view()
            view.flags.writeable = False
            for j, group in enumerate(split):
                out.append(PartySpec(slice=i, index=j, name=self._names[(i, j)], rows=view, columns=group))
        return out

    def layout(self) -> PartitionLayout:
        """The partition without its rows (see :class:`PartitionLayout`)."""
        names = tuple(tuple(self._names[(i, j)] for j in range(len(split))) for i, split in enumerate(self._groups))
        return PartitionLayout(self.n_slices, tuple(self._groups), names)

    def shape_summary(self) -> pd.DataFrame:
        """One row per party: ``name``, ``slice``, ``index``, ``n_rows``, ``columns``.

        Examples
        --------
        >>> from skdpsynth.federated import HybridPartition
        >>> HybridPartition([0, 1, 1], [["a"], ["b", "c"]]).shape_summary()
               name  slice  index  n_rows columns
        0  party0.0      0      0       1    (a,)
        1  party0.1      0      1       1  (b, c)
        2  party1.0      1      0       2    (a,)
        3  party1.1      1      1       2  (b, c)
        """
        parties = self.parties()
        return pd.DataFrame(
            {
                "name": [p.name for p in parties],
                "slice": [p.slice for p in parties],
                "index": [p.index for p in parties],
                "n_rows": [p.n_rows for p in parties],
                "columns": [p.columns for p in parties],
            }
        )

    # -- dunder -------------------------------------------------------------
    def __repr__(self) -> str:
        sizes = [len(rows) for rows in self._slices]
        sizes_txt = _short(sizes, 6)
        if all(split == self._groups[0] for split in self._groups):
            groups_txt = "[" + ", ".join(_short(g) for g in self._groups[0]) + "]"
        else:
            groups_txt = f"<per slice, parties per slice {_short([len(s) for s in self._groups], 6)}>"
        return (
            f"HybridPartition(n_slices={self.n_slices}, n_vertical={self.n_vertical}, "
            f"n_parties={self.n_parties}, n_rows={self.n_rows}, slice_sizes={sizes_txt}, "
            f"column_groups={groups_txt})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HybridPartition):
            return NotImplemented
        return (
            self.n_slices == other.n_slices
            and self._groups == other._groups
            and self._names == other._names
            and all(np.array_equal(a, b) for a, b in zip(self._slices, other._slices))
        )

    # -- constructors -------------------------------------------------------
    @classmethod
    def grid(
        cls,
        n_rows: int,
        columns: Iterable[Column],
        *,
        n_slices: int = 2,
        column_groups: Sequence[Sequence[Column]] | None = None,
        n_vertical: int | None = None,
        shuffle: bool = True,
        random_state: Any = None,
    ) -> "HybridPartition":
        """A ``K x S`` grid, as in RandDPGen's experiments (§6.1–6.3).

        The paper does not say how it splits the table; see
        ``doc/deviations.md``, "Experiment partitions".

        The rows are permuted with ``random_state`` (unless ``shuffle`` is
        False) and split into ``n_slices`` slices whose sizes differ by at
        most one (:func:`numpy.array_split` of the permutation).  The columns
        are split the same way in every slice: either as the explicit
        ``column_groups`` (which must cover ``columns`` exactly) or into
        ``n_vertical`` near-equal *contiguous* groups in the given column
        order.  Give at most one of ``column_groups`` / ``n_vertical``; with
        neither, the columns are split into 2 groups.

        Parameters
        ----------
        n_rows : int
            Number of rows of ``X``.
        columns : sequence of column names
            The columns of ``X``, in order.
        n_slices : int, default 2
            ``K``; at most ``n_rows``.
        column_groups : list of list of column names, optional
            Explicit vertical split.
        n_vertical : int, optional
            ``S``, the number of contiguous column groups; at most
            ``len(columns)``.
        shuffle : bool, default True
            Permute rows before splitting; if False, slices are contiguous
            row ranges and ``random_state`` is unused.
        random_state : None, int or numpy.random.Generator
            Seed for the row permutation (see
            :func:`skdpsynth.utils.check_random_state`).  Record it: the
            assignment is part of the experiment's public description.

        Returns
        -------
        HybridPartition
            A validated partition.

        Examples
        --------
        >>> from skdpsynth.federated import HybridPartition
        >>> part = HybridPartition.grid(10, ["a", "b", "c"], n_slices=3, n_vertical=2, random_state=0)
        >>> [len(part.slice_rows(i)) for i in range(3)]
        [4, 3, 3]
        >>> part.column_groups_of(0)
        [['a', 'b'], ['c']]
        >>> HybridPartition.grid(4, ["a", "b", "c"], column_groups=[["c"], ["a", "b"]], shuffle=False)
        HybridPartition(n_slices=2, n_vertical=2, n_parties=4, n_rows=4, slice_sizes=[2, 2], column_groups=[['c'], ['a', 'b']])
        """
        n_rows = _count(n_rows, "n_rows", 1)
        n_slices = _count(n_slices, "n_slices", 1)
        if n_slices > n_rows:
            # Not n_rows: a recipe's roster is simulated from the table, whose length is the private count.
            raise ValueError(f"Cannot split the rows into n_slices={n_slices} non-empty slices: there are fewer "
                             "rows than slices.")
        columns = _column_list(columns)
        if column_groups is not None and n_vertical is not None:
            raise ValueError("Pass either column_groups or n_vertical, not both.")
        if column_groups is None:
            n_vertical = _count(2 if n_vertical is None else n_vertical, "n_vertical", 1)
            if n_vertical > len(columns):
                raise ValueError(
                    f"Cannot split {len(columns)} column(s) into n_vertical={n_vertical} non-empty groups."
                )
            column_groups = [
                [columns[k] for k in block] for block in np.array_split(np.arange(len(columns)), n_vertical)
            ]
        elif isinstance(column_groups, Mapping):
            raise TypeError(
                "grid uses the same column groups in every slice; for per-slice groups call "
                "HybridPartition(slices, {slice: groups, ...}) directly."
            )
        order = check_random_state(random_state).permutation(n_rows) if shuffle else np.arange(n_rows)
        part = cls(np.array_split(order, n_slices), column_groups)
        return part.validate(columns, n_rows)

    @classmethod
    def horizontal(
        cls,
        n_rows: int,
        columns: Iterable[Column],
        *,
        n_slices: int,
        shuffle: bool = True,
        random_state: Any = None,
    ) -> "HybridPartition":
        """Pure horizontal partition: ``K`` slices, one party each (``S = 1``).

        Rows are split as in :meth:`grid`.

        Examples
        --------
        >>> from skdpsynth.federated import HybridPartition
        >>> part = HybridPartition.horizontal(7, ["a", "b"], n_slices=3, random_state=1)
        >>> part.n_slices, part.n_vertical, part.n_parties
        (3, 1, 3)
        >>> part.column_groups_of(2)
        [['a', 'b']]
        """
        return cls.grid(
            n_rows, columns, n_slices=n_slices, n_vertical=1, shuffle=shuffle, random_state=random_state
        )

    @classmethod
    def vertical(cls, n_rows: int, column_groups: Sequence[Sequence[Column]]) -> "HybridPartition":
        """Pure vertical partition: one slice of all rows (``K = 1``).

        The columns of the table are taken to be the union of
        ``column_groups`` (in order of appearance); the groups must be
        disjoint.

        Examples
        --------
        >>> from skdpsynth.federated import HybridPartition
        >>> part = HybridPartition.vertical(5, [["a"], ["b", "c"]])
        >>> part.n_slices, part.n_vertical, part.n_parties
        (1, 2, 2)
        >>> part.slice_rows(0)
        array([0, 1, 2, 3, 4])
        """
        n_rows = _count(n_rows, "n_rows", 1)
        if isinstance(column_groups, Mapping):
            raise TypeError("vertical takes a list of column groups, not a dict.")
        part = cls([np.arange(n_rows)], column_groups)
        columns = list(dict.fromkeys(c for group in part._groups[0] for c in group))
        return part.validate(columns, n_rows)

    @classmethod
    def centralized(cls, n_rows: int, columns: Iterable[Column]) -> "HybridPartition":
        """One party holding everything (``K = S = 1``).

        ``n_rows`` may be 0: an empty table is one party holding no rows (a
        synthesizer accepts it, its noisy record count hides it).

        Examples
        --------
        >>> from skdpsynth.federated import HybridPartition
        >>> part = HybridPartition.centralized(3, ["a", "b"])
        >>> part.n_slices, part.n_vertical, part.n_parties
        (1, 1, 1)
        """
        n_rows = _count(n_rows, "n_rows", 0)
        columns = _column_list(columns)
        if n_rows == 0:
            # An empty table (a valid input: the noisy record count hides it) is one party holding no rows.
            template = cls([np.arange(1)], [columns])
            return cls._from_parts((np.arange(0, dtype=np.int64),), template._groups, template._names)
        return cls([np.arange(n_rows)], [columns]).validate(columns, n_rows)

    @classmethod
    def coerce(cls, obj: Any) -> "HybridPartition":
        """Build a partition from any of the accepted descriptions.

        Parameters
        ----------
        obj : HybridPartition, dict or list of dict
            * a :class:`HybridPartition`, returned as is;
            * a dict with keys ``"slices"``, ``"column_groups"`` and optionally
              ``"party_names"`` (the constructor's arguments);
            * a list of parties, each a dict ``{"name": str (optional),
              "rows": row positions, "columns": [...]}`` (or a
              :class:`PartySpec`).  Parties with identical row sets form one
              slice; slices are ordered by first appearance and parties
              within a slice keep their list order.  Row sets of different
              slices must be disjoint.

        Returns
        -------
        HybridPartition
            Not yet validated against data; call :meth:`validate`.

        Raises
        ------
        TypeError
            If ``obj`` is none of the above.
        ValueError
            If a description is malformed, e.g. two parties whose row sets
            overlap without being identical.

        Examples
        --------
        >>> from skdpsynth.federated import HybridPartition
        >>> part = HybridPartition.coerce([
        ...     {"name": "P1", "rows": [0, 1, 2], "columns": ["sex", "income"]},
        ...     {"name": "P2", "rows": [2, 1, 0], "columns": ["degree"]},
        ...     {"name": "P3", "rows": [3, 4], "columns": ["sex", "income", "degree"]},
        ... ])
        >>> part.n_slices, part.n_vertical, [p.name for p in part.parties()]
        (2, 2, ['P1', 'P2', 'P3'])
        >>> HybridPartition.coerce({"slices": [0, 1, 1], "column_groups": [["a"], ["b"]]}).n_parties
        4
        """
        if isinstance(obj, HybridPartition):
            return obj
        if isinstance(obj, Mapping):
            keys = set(obj)
            missing = [k for k in ("slices", "column_groups") if k not in keys]
            unknown = sorted(map(repr, keys - {"slices", "column_groups", "party_names"}))
            if missing or unknown:
                raise ValueError(
                    "A partition dict needs the keys 'slices' and 'column_groups' (and optionally "
                    f"'party_names'); missing: {missing}, unknown: {unknown}."
                )
            return cls(obj["slices"], obj["column_groups"], party_names=obj.get("party_names"))
        if isinstance(obj, (list, tuple)) and all(isinstance(p, (Mapping, PartySpec)) for p in obj):
            if not obj:
                raise ValueError("The list of parties is empty.")
            return cls._from_party_list(obj)
        raise TypeError(
            "partition must be a HybridPartition, a dict with keys 'slices' and 'column_groups', "
            f"or a list of party dicts {{'name', 'rows', 'columns'}}; got {type(obj).__name__}."
        )

    @classmethod
    def _from_party_list(cls, parties: Sequence[Mapping | PartySpec]) -> "HybridPartition":
        names: list[str | None] = []
        rowsets: list[np.ndarray] = []
        columns: list[Any] = []
        for k, p in enumerate(parties):
            if isinstance(p, PartySpec):
                name, rows, cols = p.name, p.rows, p.columns
            else:
                unknown = sorted(map(repr, set(p) - {"name", "rows", "columns"}))
                missing = [key for key in ("rows", "columns") if key not in p]
                if missing or unknown:
                    raise ValueError(
                        f"Party {k} of the list needs the keys 'rows' and 'columns' (and optionally "
                        f"'name'); missing: {missing}, unknown: {unknown}."
                    )
                name, rows, cols = p.get("name"), p["rows"], p["columns"]
            label = f"party {name!r}" if name is not None else f"party #{k} of the list"
            names.append(name)
            rowsets.append(_row_array(rows, label))
            columns.append(cols)

        def label(k: int) -> str:
            return repr(names[k]) if names[k] is not None else f"#{k} of the list"

        members = _identical_groups(rowsets)
        slice_rows = [rowsets[m[0]] for m in members]
        shared = _first_shared(slice_rows)
        if shared is not None:
            row, a, b = shared
            raise ValueError(
                f"Parties {label(members[a][0])} and {label(members[b][0])} both hold row {row} but "
                "their row sets differ. Parties holding the same records must list exactly the same "
                "rows (they form one slice); row sets of different slices must be disjoint."
            )
        groups = {i: [columns[k] for k in m] for i, m in enumerate(members)}
        party_names = {
            (i, j): names[k] for i, m in enumerate(members) for j, k in enumerate(m) if names[k] is not None
        }
        return cls(slice_rows, groups, party_names=party_names)

    @classmethod
    def from_party_frames(
        cls, frames: Mapping[Any, pd.DataFrame], id_column: Hashable
    ) -> tuple[pd.DataFrame, "HybridPartition"]:
        """Align per-party tables on a shared ID column.

        See ``doc/deviations.md``, "Aligning per-party tables by ID".

        Each party's frame holds an ID column plus the party's own columns.
        Parties whose ID sets are identical hold the same individuals and form
        one slice (slices ordered by first appearance in ``frames``); ID sets
        of different slices must be disjoint.  Within a slice the parties'
        columns must be disjoint.

        **The IDs are treated as a public roster** (``doc/deviations.md``,
        "Public ID roster"): which
        individuals exist and which slice holds each of them is assumed to be
        public metadata, shared with the curator for alignment; only the
        attribute values are protected.  Do not use this helper if the
        membership of an individual in a slice is itself sensitive.

        Parameters
        ----------
        frames : dict {party_name: pandas.DataFrame}
            Each frame has the ID column (or an index of that name) and at
            least one other column; IDs are unique within a frame.
        id_column : hashable
            Name of the ID column.

        Returns
        -------
        X : pandas.DataFrame
            One row per individual with a fresh ``RangeIndex``: slice 0's
            individuals in ID sort order, then slice 1's, and so on.  The ID
            column is dropped; the columns are in order of first appearance
            across ``frames``.
        partition : HybridPartition
            Validated against ``X``; its row positions refer to ``X`` and its
            party names are the keys of ``frames`` (as strings).

        Raises
        ------
        ValueError
            On duplicate or missing IDs within a frame, two parties whose ID
            sets overlap without being identical, a column held by two parties
            of one slice, or a slice that does not cover all columns.

        Examples
        --------
        >>> import pandas as pd
        >>> from skdpsynth.federated import HybridPartition
        >>> frames = {
        ...     "bank": pd.DataFrame({"ID": [2, 1], "income": [30, 50]}),
        ...     "insurer": pd.DataFrame({"ID": [1, 2], "age": [40, 25]}),
        ...     "clinic": pd.DataFrame({"ID": [9], "income": [20], "age": [61]}),
        ... }
        >>> X, part = HybridPartition.from_party_frames(frames, id_column="ID")
        >>> X
           income  age
        0      50   40
        1      30   25
        2      20   61
        >>> [(p.name, p.rows.tolist(), p.columns) for p in part.parties()]
        [('bank', [0, 1], ('income',)), ('insurer', [0, 1], ('age',)), ('clinic', [2], ('income', 'age'))]
        """
        if not isinstance(frames, Mapping):
            raise TypeError(f"frames must be a dict {{party_name: DataFrame}}, got {type(frames).__name__}.")
        if not frames:
            raise ValueError("frames is empty: at least one party is needed.")
        keys = list(frames)
        names = [str(k) for k in keys]
        if len(set(names)) != len(names):
            raise ValueError(f"Party names must be unique as strings, got {keys!r}.")

        tables = [_party_table(name, df, id_column) for name, df in zip(names, frames.values())]
        idsets = _id_sets(tables)
        members = _identical_groups(idsets)
        _check_no_partial_overlap(tables, names, idsets, members)
        groups = _slice_column_groups(tables, names, members)

        columns = list(dict.fromkeys(c for t in tables for c in t.columns))
        sizes = [len(idsets[m[0]]) for m in members]
        starts = np.concatenate([[0], np.cumsum(sizes)])
        partition = cls(
            [np.arange(starts[i], starts[i + 1]) for i in range(len(members))],
            groups,
            party_names={(i, j): names[k] for i, m in enumerate(members) for j, k in enumerate(m)},
        ).validate(columns, int(starts[-1]))
        return _aligned_table(tables, names, members, columns), partition


# ---------------------------------------------------------------------------
# The steps of HybridPartition.from_party_frames
# ---------------------------------------------------------------------------
def _party_table(name: str, df: Any, id_column: Hashable) -> pd.DataFrame:
    """One party's frame, checked, indexed by its IDs: the party's own columns only."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"Party {name!r}: expected a pandas DataFrame, got {type(df).__name__}.")
    if id_column not in df.columns:
        if df.index.name == id_column:
            df = df.reset_index()
        else:
            raise ValueError(f"Party {name!r} has no ID column {id_column!r}.")
    if df.columns.duplicated().any():
        dup = df.columns[df.columns.duplicated()][0]
        raise ValueError(f"Party {name!r} has the column {dup!r} more than once.")
    if len(df) == 0:
        raise ValueError(f"Party {name!r} holds no rows.")
    ids = df[id_column]
    if ids.isna().any():
        raise ValueError(f"Party {name!r} has missing values in the ID column {id_column!r}.")
    dup_ids = ids[ids.duplicated()]
    if len(dup_ids):
        raise ValueError(
            f"Party {name!r} lists ID {_plain(dup_ids.iloc[0])!r} more than once; each individual "
            "must appear at most once per party."
        )
    if df.shape[1] < 2:
        raise ValueError(f"Party {name!r} holds no columns besides the ID column {id_column!r}.")
    return df.set_index(id_column)


def _id_sets(tables: Sequence[pd.DataFrame]) -> list[np.ndarray]:
    """Each party's ID set as sorted integer codes shared by all parties."""
    # Codes, not the IDs themselves, so that set comparisons are vectorised.
    codes, _ = pd.factorize(pd.concat([pd.Series(t.index) for t in tables], ignore_index=True))
    codes = np.asarray(codes, dtype=np.int64)
    bounds = np.cumsum([len(t) for t in tables])[:-1]
    return [np.sort(c) for c in np.split(codes, bounds)]


def _identical_groups(arrays: Sequence[np.ndarray]) -> list[list[int]]:
    """The slices: the positions of identical arrays, grouped, in order of first appearance."""
    slice_of: dict[bytes, int] = {}
    members: list[list[int]] = []
    for k, a in enumerate(arrays):
        i = slice_of.setdefault(a.tobytes(), len(members))
        if i == len(members):
            members.append([])
        members[i].append(k)
    return members


def _check_no_partial_overlap(tables: Sequence[pd.DataFrame], names: Sequence[str],
                              idsets: Sequence[np.ndarray], members: Sequence[Sequence[int]]) -> None:
    """Refuse two slices sharing an individual (their parties' ID sets overlap without being identical)."""
    shared = _first_shared([idsets[m[0]] for m in members])
    if shared is not None:
        _, a, b = shared
        pa, pb = members[a][0], members[b][0]
        common = tables[pa].index.intersection(tables[pb].index)
        raise ValueError(
            f"Parties {names[pa]!r} and {names[pb]!r} partially overlap: they share "
            f"{len(common)} ID(s) (e.g. {_plain(common[0])!r}) but their ID sets differ. Parties of one "
            "slice must hold exactly the same individuals, and different slices must hold "
            "disjoint sets of individuals."
        )


def _slice_column_groups(tables: Sequence[pd.DataFrame], names: Sequence[str],
                         members: Sequence[Sequence[int]]) -> dict[int, list[list[Column]]]:
    """Each slice's column groups, one per party; refuses a column held by two parties of one slice."""
    groups: dict[int, list[list[Column]]] = {}
    for i, m in enumerate(members):
        owner: dict[Column, int] = {}
        for k in m:
            for c in tables[k].columns:
                if c in owner:
                    raise ValueError(
                        f"Column {c!r} is held by both {names[owner[c]]!r} and {names[k]!r}, which "
                        "hold the same individuals (one slice). Overlapping schemas must be "
                        "resolved first, e.g. by dropping the column from all but one party."
                    )
                owner[c] = k
        groups[i] = [list(tables[k].columns) for k in m]
    return groups


def _aligned_table(tables: Sequence[pd.DataFrame], names: Sequence[str], members: Sequence[Sequence[int]],
                   columns: Sequence[Column]) -> pd.DataFrame:
    """One row per individual: each slice's parties joined on the ID (in ID sort order), slice after slice."""
    blocks = []
    for m in members:
        try:
            order = tables[m[0]].index.sort_values()
        except TypeError as exc:
            raise ValueError(
                f"The IDs of party {names[m[0]]!r} cannot be sorted ({exc}); use IDs of one comparable type."
            ) from None
        block = pd.concat([tables[k].loc[order] for k in m], axis=1)
        blocks.append(block[columns].reset_index(drop=True))
    X = pd.concat(blocks, axis=0, ignore_index=True)
    X.columns.name = None
    return X
