"""Integer codes -> marginal counts, and workloads of marginals.

Data enter the engine as an ``(n_records, n_attributes)`` integer array whose
columns follow the :class:`~skdpsynth.domain.Domain` order (see
:func:`as_codes`).  A marginal over a clique of attributes is the contingency
table of those columns, an ndarray whose axes are in domain order.  Counting
runs over cache-sized chunks of rows with narrow-integer index arithmetic and
``bincount`` (see the counting engine below); :func:`marginals` counts all the
cliques it needs in one pass over the chunks.  Never a Python loop over
records.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .domain import Domain
from .utils import is_lazy_codes

__all__ = [
    "as_codes",
    "marginal",
    "marginals",
    "kway_cliques",
    "workload",
    "downward_closure",
    "maximal_cliques",
]

Clique = tuple[str, ...]


def as_codes(X, domain: Domain) -> np.ndarray:
    """Validate data and return it as an ``(n, len(domain))`` array of integer codes.

    Parameters
    ----------
    X : pandas.DataFrame or array-like of shape (n_records, n_attributes)
        A DataFrame must have every domain attribute as a column (extra columns
        are ignored); categorical columns contribute their category codes.  A
        2-D array must have its columns in domain order.
    domain : Domain

    Returns
    -------
    numpy.ndarray of dtype intp, C-contiguous per column (Fortran order)

    Raises
    ------
    ValueError
        On missing columns, missing values, non-integer values or codes outside
        ``0 .. size - 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.marginals import as_codes
    >>> as_codes(np.array([[0, 1], [2, 0]]), Domain(["a", "b"], [3, 2])).tolist()
    [[0, 1], [2, 0]]
    """
    if isinstance(X, pd.DataFrame):
        missing = [a for a in domain if a not in X.columns]
        if missing:
            raise ValueError(f"Data lacks the domain attributes {missing}.")
        cols = []
        for a in domain:
            col = X[a]
            if isinstance(col.dtype, pd.CategoricalDtype):
                codes = col.cat.codes.to_numpy()
                if (codes < 0).any():
                    raise ValueError(f"Column {a!r} has missing values or values outside its categories.")
                cols.append(codes)
            else:
                cols.append(_integer_column(col.to_numpy(), a))
        codes = np.column_stack(cols) if cols else np.empty((len(X), 0))
    else:
        arr = np.asarray(X)
        if arr.ndim != 2 or arr.shape[1] != len(domain):
            # Not the shape: its length is the private record count.
            raise ValueError(f"Expected a 2-D array with {len(domain)} columns (one per domain attribute), got "
                             f"{arr.ndim} dimension(s)" + (f" and {arr.shape[1]} columns." if arr.ndim == 2 else "."))
        codes = np.column_stack([_integer_column(arr[:, j], a) for j, a in enumerate(domain)]) if len(domain) else arr
    codes = np.asfortranarray(codes, dtype=np.intp)
    if codes.size:
        lo, hi = codes.min(axis=0), codes.max(axis=0)
        bad = [(a, int(l), int(h), s) for a, l, h, s in zip(domain, lo, hi, domain.shape) if l < 0 or h >= s]
        if bad:
            a, _, _, s = bad[0]
            # The offending codes are values of the private data: the message gives the public range only.
            raise ValueError(
                f"Column {a!r} has codes outside its public domain 0..{s - 1} (domain size {s}); declare its "
                "size in domain= or map the codes into it first."
                + (f" Columns {[str(b[0]) for b in bad[1:]]} are out of range too." if len(bad) > 1 else "")
            )
    return codes


def _integer_column(values: np.ndarray, name: str) -> np.ndarray:
    if values.dtype.kind in "iu":
        return values
    if values.dtype.kind == "b":
        return values.astype(np.intp)
    try:
        as_float = values.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"Column {name!r} is neither integer codes nor categorical; encode it first "
            "(see skdpsynth.preprocessing) or give it a pandas CategoricalDtype."
        ) from None
    if np.isnan(as_float).any():
        raise ValueError(f"Column {name!r} has missing values; encode them as their own category first.")
    if not np.all(np.mod(as_float, 1) == 0):
        raise ValueError(
            f"Column {name!r} holds non-integer values; discretize it with a DP discretizer "
            "(skdpsynth.preprocessing) before synthesis."
        )
    return as_float.astype(np.intp)


# ---------------------------------------------------------------------------
# Counting engine (issue 16).
#
# Rows are processed in chunks of ``_CHUNK`` rows so that every temporary lives
# in the CPU cache and memory stays bounded by the chunk, not by ``n``.  Per
# chunk, a clique's flat cell index is computed in the narrowest unsigned dtype
# that holds it (``np.multiply`` / ``np.add`` into a preallocated buffer) and
# counted with ``np.bincount``; totals accumulate in int64 (float64 with
# weights).  On top of that (measured by ``python -m skdpsynth.benchmarks.counting``):
#
# * tables of at most ``_SMALL_CELLS`` cells are counted without bincount, one
#   vectorised ``==`` + ``count_nonzero`` per cell (unweighted counts only);
# * a table of at most ``_LANE_MAX_CELLS`` cells whose first chunk is very
#   skewed (sum of squared cell shares > ``_LANE_SKEW``: consecutive rows often
#   fall in the same cell, a store-to-load dependency chain in bincount) is
#   counted from then on into ``_LANES`` interleaved copies (row ``i`` goes to
#   copy ``i % _LANES``) summed at the end.  On ordinary data the lanes cost
#   time, hence the test (doc/engine.md, "Data and domains", has the numbers).
#
# Compact code dtypes (uint8 / uint16) are read in place; wider or signed ones
# are narrowed chunk by chunk, so that all index arithmetic runs on 1-2 byte
# lanes.  Codes are checked against the domain per chunk (one ``max`` per
# column), so an invalid code raises instead of silently wrapping around.
# ---------------------------------------------------------------------------
_CHUNK = 1 << 17
_CHUNK_STRIDED = 1 << 15
_CHUNK_CAP = 1 << 24
_SMALL_CELLS = 8
_LANES = 4
_LANE_MAX_CELLS = 4096
_LANE_SKEW = 0.2


def _uint_for(maxval: int) -> np.dtype:
    """Narrowest unsigned dtype holding ``0 .. maxval`` (intp beyond uint32: bincount wants intp)."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if maxval <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.intp)


class _Table:
    """One clique being counted: its columns and sizes, how it is counted, and its running total."""

    __slots__ = ("cols", "sizes", "cells", "small", "wide", "lanes", "dtype", "muls", "total", "lane_off")

    def __init__(self, cols: Sequence[int], sizes: Sequence[int], weighted: bool):
        self.cols = tuple(cols)
        self.sizes = tuple(int(s) for s in sizes)
        self.cells = int(np.prod(self.sizes, dtype=object))
        self.small = not weighted and self.cells <= _SMALL_CELLS
        self.wide = False  # index arithmetic in intp on intp columns read in place
        self.lanes = 1
        self.set_dtype(_uint_for(self.cells - 1))
        self.total = np.zeros(self.cells, np.float64 if weighted else np.int64)
        self.lane_off = None

    def set_dtype(self, dtype) -> None:
        """Index dtype, and the strides as scalars of it.  A size equal to the
        dtype's modulus can only follow sizes 1 (codes 0), so 0 is as good."""
        self.dtype = np.dtype(dtype)
        mod = int(np.iinfo(self.dtype).max) + 1
        self.muls = tuple(self.dtype.type(s % mod) for s in self.sizes)

    def use_lanes(self, chunk: int, cache: dict) -> None:
        """Count into ``_LANES`` interleaved copies from now on (see the engine notes)."""
        self.lanes = _LANES
        self.set_dtype(np.intp if self.wide else _uint_for(self.cells * _LANES - 1))
        self.total = np.concatenate([self.total, np.zeros(self.cells * (_LANES - 1), self.total.dtype)])
        key = (self.cells, self.dtype)
        if key not in cache:
            cache[key] = (np.arange(chunk) % _LANES * self.cells).astype(self.dtype)
        self.lane_off = cache[key]

    def result(self) -> np.ndarray:
        total = self.total
        if self.lanes > 1:
            total = total.reshape(self.lanes, self.cells).sum(axis=0)
        return total.astype(np.float64).reshape(self.sizes)


def _as_code_array(codes) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError(f"codes must be a 2-D array of integer codes, got {codes.ndim} dimension(s).")
    if codes.dtype.kind == "b":
        return codes.view(np.uint8)
    if codes.dtype.kind not in "iu":
        if codes.size == 0:
            return codes.astype(np.intp)
        raise ValueError(f"codes must hold integer codes, got dtype {codes.dtype}.")
    return codes


def _count(codes, sizes: Sequence[int], cliques: Sequence[Sequence[int]], weights=None,
           chunk: int | None = None) -> list[_Table]:
    """Count the tables of ``cliques`` (tuples of increasing column indices, non-empty) in one pass.

    Memory besides the tables is a few buffers of ``chunk`` rows (the chunk
    grows to twice the largest table when that is bigger).
    """
    codes = _as_code_array(codes)
    n = codes.shape[0]
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        if weights.shape[0] != n:
            raise ValueError("weights must have one entry per row of codes.")  # both lengths are private counts
    tables = [_Table(c, [sizes[j] for j in c], weights is not None) for c in cliques]
    if n == 0 or not tables:
        return tables
    used = sorted({j for t in tables for j in t.cols})
    strided = any(codes[:, j].strides[0] != codes.dtype.itemsize for j in used)
    # Strided columns (C order) are read row block by row block: shorter chunks
    # keep a block's rows in cache while its columns are read one after another.
    # A chunk much shorter than a big table would spend its time zeroing and
    # adding bincount's output, so it grows to twice the largest table.
    biggest = max((t.cells for t in tables if not t.small), default=0)
    chunk = chunk or (_CHUNK_STRIDED if strided else _CHUNK)
    chunk = int(min(max(chunk, 2 * biggest), _CHUNK_CAP))

    # One table on intp columns (a lone ``marginal`` on ``as_codes`` output): index
    # arithmetic straight in intp beats narrowing the two columns first (doc/engine.md).
    # With several tables, narrowing each column once per chunk pays off.
    wide = (len(tables) == 1 and not tables[0].small and codes.dtype == np.intp
            and all(codes[:, j].strides[0] == codes.dtype.itemsize for j in used))
    if wide:
        tables[0].wide = True
        tables[0].set_dtype(np.intp)
    reader = _ChunkReader(codes, sizes, used, chunk, wide, strided)
    index_bufs, lane_offs = {}, {}
    mask = np.empty(chunk, bool) if any(t.small and t.cells > 1 for t in tables) else None

    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        m = stop - start
        cols = reader.read(start, stop)
        w = None if weights is None else weights[start:stop]
        for t in tables:
            idx = _cell_index(t, cols, m, chunk, index_bufs)
            if t.small:
                _count_small(t, idx, mask, m)
                continue
            np.add(t.total, np.bincount(idx, weights=w, minlength=t.total.shape[0]), out=t.total)
            if start == 0 and stop < n and t.cells <= _LANE_MAX_CELLS:
                mass = float(t.total.sum())
                if mass > 0 and float(np.square(t.total, dtype=np.float64).sum()) > _LANE_SKEW * mass * mass:
                    t.use_lanes(chunk, lane_offs)
    return tables


class _ChunkReader:
    """The used columns of ``codes``, read chunk by chunk, checked against their sizes and narrowed."""

    def __init__(self, codes: np.ndarray, sizes: Sequence[int], used: Sequence[int], chunk: int, wide: bool,
                 strided: bool):
        self.codes, self.sizes, self.used = codes, sizes, used
        signed = codes.dtype.kind == "i"
        self.uview = np.dtype(f"u{codes.dtype.itemsize}")  # for the signed dtypes
        # Per column: read in place (contiguous, and compact unsigned or ``wide``) or
        # narrowed chunk by chunk into a buffer of the narrowest dtype for its size.
        narrow = {}
        for j in used:
            contiguous = codes[:, j].strides[0] == codes.dtype.itemsize
            inplace = contiguous and (wide or (not signed and codes.dtype.itemsize <= 2))
            narrow[j] = None if inplace else np.empty(chunk, _uint_for(sizes[j] - 1))
        self.narrow = narrow
        # A strided column (C-order codes) is read once per chunk: copied into its
        # narrow buffer when that holds every value of the dtype (then checked
        # there), else staged in a contiguous buffer of the codes' dtype, checked
        # and narrowed.
        self.stage = None
        if strided and not all(np.can_cast(codes.dtype, narrow[j].dtype) for j in used if narrow[j] is not None):
            self.stage = np.empty(chunk, codes.dtype)

    def read(self, start: int, stop: int) -> dict:
        """Rows ``start:stop`` of every used column, by column index."""
        codes, sizes, narrow, stage, uview = self.codes, self.sizes, self.narrow, self.stage, self.uview
        m = stop - start
        cols = {}
        for j in self.used:
            col = codes[start:stop, j]
            if col.strides[0] != codes.dtype.itemsize:
                buf = narrow[j][:m] if stage is None or np.can_cast(codes.dtype, narrow[j].dtype) else stage[:m]
                np.copyto(buf, col)
                col = buf
            # One max per column and chunk (negative codes are huge in the unsigned view).
            if int((col.view(uview) if col.dtype.kind == "i" else col).max()) >= sizes[j]:
                # No offending value in the message: it is a value of the private data.
                raise ValueError(f"Column {j} has codes outside 0..{sizes[j] - 1}.")
            if narrow[j] is not None and col.base is not narrow[j]:
                np.copyto(narrow[j][:m], col, casting="unsafe")
                col = narrow[j][:m]
            cols[j] = col
        return cols


def _cell_index(t: _Table, cols: dict, m: int, chunk: int, index_bufs: dict) -> np.ndarray:
    """The flat cell (and lane) index of table ``t`` for each of the chunk's ``m`` rows."""
    dt = t.dtype
    if len(t.cols) == 1 and t.lanes == 1:
        return cols[t.cols[0]]
    if dt not in index_bufs:
        index_bufs[dt] = np.empty(chunk, dt)
    idx = index_bufs[dt][:m]
    if len(t.cols) == 1:
        np.add(cols[t.cols[0]], t.lane_off[:m], out=idx, dtype=dt, casting="unsafe")
    else:
        np.multiply(cols[t.cols[0]], t.muls[1], out=idx, dtype=dt, casting="unsafe")
        for k in range(1, len(t.cols)):
            if k > 1:
                np.multiply(idx, t.muls[k], out=idx)
            np.add(idx, cols[t.cols[k]], out=idx, dtype=dt, casting="unsafe")
        if t.lanes > 1:
            np.add(idx, t.lane_off[:m], out=idx)
    return idx


def _count_small(t: _Table, idx: np.ndarray, mask: np.ndarray | None, m: int) -> None:
    """Add the chunk's counts to a small table, one comparison per cell (the last cell gets the rest)."""
    total, seen = t.total, 0
    for v in range(t.cells - 1):
        c = np.count_nonzero(np.equal(idx, v, out=mask[:m]))
        total[v] += c
        seen += c
    total[-1] += m - seen


def marginal(codes: np.ndarray, domain: Domain, clique: Iterable[str], weights: np.ndarray | None = None) -> np.ndarray:
    """Contingency table of ``clique`` (axes in domain order) from validated codes.

    Parameters
    ----------
    codes : ndarray of shape (n, len(domain))
        Output of :func:`as_codes`, or any integer array of valid codes in
        domain order; compact dtypes (uint8, uint16) are counted fastest.
        Out-of-core codes (:class:`skdpsynth.outofcore.DaskCodes`) are counted
        partition by partition.
    domain : Domain
    clique : iterable of str
        Attributes of the marginal; an empty clique gives the record count as a 0-d array.
    weights : ndarray of shape (n,), optional
        Per-record weights (default 1).

    Returns
    -------
    numpy.ndarray of float64 with shape ``domain.shape_of(clique)``

    Raises
    ------
    ValueError
        If a code of a clique attribute lies outside ``0 .. size - 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.marginals import marginal
    >>> dom = Domain(["a", "b"], [2, 3])
    >>> marginal(np.array([[0, 2], [1, 2], [1, 0]]), dom, ["b", "a"]).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 1.0]]
    """
    clique = domain.canonical(clique)
    if is_lazy_codes(codes):
        return codes.marginals(domain, [clique], weights)[clique]
    if not clique:
        total = codes.shape[0] if weights is None else float(np.sum(weights))
        return np.asarray(float(total))
    (table,) = _count(codes, domain.shape, [tuple(domain.index(a) for a in clique)], weights)
    return table.result()


def marginals(
    codes: np.ndarray, domain: Domain, cliques: Iterable[Iterable[str]], weights: np.ndarray | None = None
) -> dict[Clique, np.ndarray]:
    """Contingency tables of many cliques, reusing work where it is cheaper.

    A clique contained in an already counted clique whose table has fewer cells
    than there are records is obtained by summing that table instead of
    counting it from the data (e.g. all 2-way marginals from the 3-way ones).
    The cliques that must be counted are counted together in one pass over
    chunks of rows, each chunk's columns read while they are in cache.

    ``codes`` may also be out-of-core codes (:class:`skdpsynth.outofcore.DaskCodes`,
    what ``fit`` makes of a dask DataFrame): all the cliques are then counted
    in one pass over its partitions and summed, with the same result.

    Returns
    -------
    dict mapping each canonical clique to its table

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.marginals import marginals
    >>> dom = Domain(["a", "b", "c"], [2, 2, 3])
    >>> codes = np.array([[0, 1, 2], [1, 1, 0], [1, 0, 2], [0, 1, 2]])
    >>> tables = marginals(codes, dom, [("a", "b"), ("c",), ("b", "a")])
    >>> sorted(tables)
    [('a', 'b'), ('c',)]
    >>> tables[("a", "b")].tolist(), tables[("c",)].tolist()
    ([[0.0, 2.0], [1.0, 1.0]], [1.0, 0.0, 3.0])
    """
    if is_lazy_codes(codes):
        return codes.marginals(domain, cliques, weights)
    wanted = {domain.canonical(c) for c in cliques}
    n = codes.shape[0]
    # Plan first (sources depend on table sizes only). Largest first, so that
    # subsets can be summed out of their supersets.
    source: dict[Clique, Clique | None] = {}
    sizes = {c: domain.size(c) for c in wanted}
    containing: dict[str, set] = {}   # attribute -> planned cliques (of fewer cells than rows) that contain it
    for clique in sorted(wanted, key=lambda c: (-len(c), -sizes[c])):
        # The planned supersets are those in every one of its attributes' sets: intersect, smallest set first.
        sets = sorted((containing.get(a, set()) for a in clique), key=len)
        supersets = set.intersection(*sets) if sets else set()
        source[clique] = min(supersets, key=lambda c: (sizes[c], _names_key(c))) if supersets else None
        if sizes[clique] < n:
            for a in clique:
                containing.setdefault(a, set()).add(clique)
    counted = [c for c, src in source.items() if src is None and c]
    tables = _count(codes, domain.shape, [tuple(domain.index(a) for a in c) for c in counted], weights)
    done: dict[Clique, np.ndarray] = {c: t.result() for c, t in zip(counted, tables)}
    for clique, src in source.items():
        if src is None:
            if not clique:
                done[clique] = marginal(codes, domain, clique, weights)
        else:
            axes = tuple(i for i, a in enumerate(src) if a not in clique)
            done[clique] = done[src].sum(axis=axes)
    return {c: done[c] for c in wanted}


def kway_cliques(domain: Domain, k: int, max_cells: int | None = None) -> list[Clique]:
    """All ``k``-attribute cliques of ``domain`` (canonical order), optionally only those with at most ``max_cells`` cells.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.marginals import kway_cliques
    >>> kway_cliques(Domain(["a", "b", "c"], [2, 50, 50]), 2, max_cells=100)
    [('a', 'b'), ('a', 'c')]
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}.")
    out = [c for c in itertools.combinations(domain.attrs, k)]
    if max_cells is not None:
        out = [c for c in out if domain.size(c) <= max_cells]
    return out


def workload(
    domain: Domain, ways: int | Sequence[int] = 3, max_cells: int | None = None, weights=None
) -> list[tuple[Clique, float]]:
    """A weighted workload of marginal queries: ``[(clique, weight), ...]``.

    Parameters
    ----------
    domain : Domain
    ways : int or sequence of int
        Clique sizes to include (e.g. ``3`` or ``(1, 2)``).
    max_cells : int, optional
        Drop cliques whose marginal has more cells than this.
    weights : float, mapping or callable, optional
        Weight of every clique (default 1.0); a mapping from clique to weight
        (missing cliques get 1.0); or a callable ``clique -> weight``.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.marginals import workload
    >>> workload(Domain(["a", "b", "c"], [2, 2, 2]), ways=2)
    [(('a', 'b'), 1.0), (('a', 'c'), 1.0), (('b', 'c'), 1.0)]
    """
    ways = [ways] if isinstance(ways, (int, np.integer)) else list(ways)
    cliques = [c for k in ways for c in kway_cliques(domain, int(k), max_cells)]
    if weights is None:
        weigh = lambda c: 1.0  # noqa: E731
    elif callable(weights):
        weigh = weights
    elif isinstance(weights, dict):
        canon = {domain.canonical(c): float(w) for c, w in weights.items()}
        weigh = lambda c: canon.get(c, 1.0)  # noqa: E731
    else:
        weigh = lambda c: float(weights)  # noqa: E731
    return [(c, float(weigh(c))) for c in cliques]


def downward_closure(cliques: Iterable[Iterable[str]], domain: Domain | None = None) -> list[Clique]:
    """Every non-empty subset of every clique, deduplicated, smallest first.

    With a ``domain`` the subsets are canonical; without one each clique's own
    order is kept (cliques should then already be canonical).

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.marginals import downward_closure
    >>> downward_closure([("a", "b"), ("b", "c")])
    [('a',), ('b',), ('c',), ('a', 'b'), ('b', 'c')]
    >>> downward_closure([("c", "a")], Domain(["a", "b", "c"], [2, 2, 2]))
    [('a',), ('c',), ('a', 'c')]
    """
    out: set[Clique] = set()
    for c in cliques:
        c = domain.canonical(c) if domain is not None else tuple(c)
        for k in range(1, len(c) + 1):
            out.update(itertools.combinations(c, k))
    return sorted(out, key=lambda c: (len(c), _names_key(c)))


def _names_key(clique: Clique) -> tuple:
    """A sort key of a clique's names: names of one type sort as themselves; a table whose column names mix
    types (``0`` and ``"b"``) has them sorted by type name first, since they do not compare."""
    return tuple((type(a).__name__, a) for a in clique)


def maximal_cliques(cliques: Iterable[Iterable[str]]) -> list[Clique]:
    """The cliques not contained in another one (first occurrence kept, order preserved).

    Examples
    --------
    >>> from skdpsynth.marginals import maximal_cliques
    >>> maximal_cliques([("a",), ("a", "b"), ("b", "a"), ("c",), ("b", "c")])
    [('a', 'b'), ('b', 'c')]
    """
    cliques = [tuple(c) for c in cliques]
    sets = [frozenset(c) for c in cliques]
    out, seen = [], set()
    for c, s in zip(cliques, sets):
        if s in seen or any(s < t for t in sets):
            continue
        seen.add(s)
        out.append(c)
    return out
