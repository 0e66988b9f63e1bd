"""Passes over large tables, shared by threads.

Belief propagation, reading measured marginals and mirror-descent steps are
passes over junction-tree tables of up to tens of millions of cells; on large
models they are most of an AIM fit.  NumPy releases the GIL inside its ufunc
and ``einsum`` loops, so each pass over a table of at least
``PARALLEL_CELLS`` cells is cut into slabs along one axis, and threads
work on the slabs (``doc/engine.md`` has the timings).

Passes that make several operations on each cell (a step that sums its
gradient terms; the downward pass's product, maximum and sum) go through a
slab in cache-sized blocks, so that each operation after the first reads the
block from cache.  An operand that broadcasts with only a few cells in its
innermost loop is first widened (a small copy): NumPy's broadcast loops cost
several times a plain pass on short runs.

The cut depends on the table's shape alone, never on the number of threads:
sums add the same partial sums in the same order on any machine, so a seeded
fit gives the same result with one thread or many.  ``SKDPSYNTH_NUM_THREADS``
sets the number of threads (default: the CPU count, at most 4; ``1`` runs the
slabs one after the other).
"""
from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from math import prod

import numpy as np

from ..utils import thread_pool

__all__ = ["blas_is_single_threaded", "num_threads", "single_threaded_blas", "sum_over"]

# Smaller tables are worked on whole: a slab's thread hand-off costs tens of microseconds.
PARALLEL_CELLS = 2**18
_SLABS = 4

_CPUS = os.cpu_count() or 1   # read once: passes ask for it tens of thousands of times per fit


def num_threads() -> int:
    """Threads for passes over large tables: ``SKDPSYNTH_NUM_THREADS``, else the CPU count (at most 4).

    Examples
    --------
    >>> import os
    >>> from skdpsynth.graphical.tables import num_threads
    >>> os.environ["SKDPSYNTH_NUM_THREADS"] = "1"    # e.g. when other processes use the other cores
    >>> num_threads()
    1
    >>> del os.environ["SKDPSYNTH_NUM_THREADS"]
    """
    value = os.environ.get("SKDPSYNTH_NUM_THREADS")
    if value:
        return max(1, int(value))
    return max(1, min(_CPUS, _SLABS))


_blas_state = threading.local()    # this thread's open single_threaded_blas blocks and its limiter
_blas_controller = None
_limits_changed = 0   # how many times a single_threaded_blas block has set or lifted limits
_open_blocks = 0      # outermost single_threaded_blas blocks open, in all threads
_limits_lock = threading.Lock()


def _blas():
    """threadpoolctl's controller of the loaded BLAS libraries (made once: making one inspects every loaded
    library, milliseconds; numpy's BLAS is loaded by now)."""
    global _blas_controller
    if _blas_controller is None:
        from threadpoolctl import ThreadpoolController   # installed with scikit-learn

        _blas_controller = ThreadpoolController().select(user_api="blas")
    return _blas_controller


def blas_is_single_threaded() -> bool:
    """Whether a BLAS call made by this thread now runs on one thread (``False`` when no BLAS threadpoolctl
    knows of is loaded: then it cannot tell).

    While a :func:`single_threaded_blas` block is open in any thread, the
    answer is asked of the libraries once per thread after each time such a
    block sets or lifts limits; otherwise at every call.

    Examples
    --------
    >>> from skdpsynth.graphical.tables import blas_is_single_threaded, single_threaded_blas
    >>> with single_threaded_blas():
    ...     blas_is_single_threaded()
    True
    """
    # Asking the libraries is a foreign call that gives up the GIL (slow while other threads compute): the
    # answer is remembered per thread until a block somewhere sets or lifts a limit.
    state = _blas_state
    generation = _limits_changed
    if not _open_blocks or getattr(state, "generation", None) != generation:
        libraries = _blas().lib_controllers
        state.single = bool(libraries) and all(library.get_num_threads() == 1 for library in libraries)
        state.generation = generation
    return state.single


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Within the block, BLAS runs on one thread, for work that runs its own threads.

    NumPy's BLAS uses every core for one matrix product; on the small products
    of out-of-clique marginals that gains nothing, so AIM scores candidates in
    threads of its own instead, each calling a single-threaded BLAS, which is
    faster (``doc/engine.md`` has the timings).  One BLAS thread also makes the products'
    summation order, hence their last bits, the same on any machine: so
    :func:`sum_over` uses BLAS only where it runs on one thread, and
    estimation runs in such a block.

    Blocks nest; each thread's outermost block sets the limit and lifts it.
    A limit may not reach every thread: threadpoolctl lets one thread at a
    time set OpenBLAS's process-wide limit (others' blocks then set none),
    and OpenMP builds limit the calling thread alone (the passes' workers then
    set their own, see :func:`_map`).  Sums follow what reaches each thread
    (:func:`blas_is_single_threaded`), so they are right either way.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical.tables import single_threaded_blas
    >>> with single_threaded_blas():
    ...     float((np.ones((200, 200)) @ np.ones(200)).sum())
    40000.0
    """
    global _limits_changed, _open_blocks
    state = _blas_state
    depth = getattr(state, "depth", 0)
    if depth == 0:
        state.limiter = _blas().limit(limits=1)
        with _limits_lock:   # after the change: a thread that read the old count asks again
            _limits_changed += 1
            _open_blocks += 1
    state.depth = depth + 1
    try:
        yield
    finally:
        state.depth -= 1
        if state.depth == 0:
            state.limiter.restore_original_limits()
            state.limiter = None
            with _limits_lock:
                _limits_changed += 1
                _open_blocks -= 1


def _with_single_threaded_blas(function: Callable) -> Callable:
    """``function`` run with a one-thread BLAS in whichever thread calls it (a worker's own limit when the
    caller's does not reach it), so that the workers' sums are the caller's, bit for bit."""
    def run(item):
        if blas_is_single_threaded():
            return function(item)
        with single_threaded_blas():
            return function(item)
    return run


def _map(function: Callable, items: list) -> list:
    threads = num_threads()
    if threads == 1 or len(items) == 1:
        return [function(item) for item in items]
    if blas_is_single_threaded():
        function = _with_single_threaded_blas(function)
    return list(thread_pool("tables", threads).map(function, items))


def _slabs(table: np.ndarray) -> tuple[int, list[tuple]] | None:
    """``(axis, index tuples)`` cutting the table's first axis of more than one cell into at most 4 slabs, or
    ``None`` when the table is small (worked on whole)."""
    if table.size < PARALLEL_CELLS:
        return None
    return _cut(table.shape)


@lru_cache(maxsize=1024)
def _cut(shape: tuple[int, ...]) -> tuple[int, list[tuple]] | None:
    for axis, size in enumerate(shape):
        if size > 1:
            count = min(_SLABS, size)
            cuts = [size * k // count for k in range(count + 1)]
            lead = (slice(None),) * axis
            return axis, [lead + (slice(a, b),) for a, b in zip(cuts[:-1], cuts[1:])]
    return None


# Passes that make several operations on each cell go block by block: a block's operands stay in the core's
# L2 cache (1 MB here) from one operation to the next.
_BLOCK_CELLS = 2**15


@lru_cache(maxsize=1024)
def _blocks(shape: tuple[int, ...]) -> list[list[tuple]]:
    """Cache-sized blocks of a table of this shape, in at most ``_SLABS`` groups (one group per task).

    A block is an index over the leading axes (slices, so that it keeps every axis): whole rows of the
    trailing axes that fit in ``_BLOCK_CELLS``, and runs along the axis before them.
    """
    lead = len(shape)
    while lead > 0 and prod(shape[lead - 1:]) <= _BLOCK_CELLS:
        lead -= 1
    if lead == 0:
        return [[()]]
    run = max(1, _BLOCK_CELLS // prod(shape[lead:]))
    blocks = [tuple(slice(i, i + 1) for i in outer) + (slice(a, min(a + run, shape[lead - 1])),)
              for outer in itertools.product(*(range(n) for n in shape[:lead - 1]))
              for a in range(0, shape[lead - 1], run)]
    count = min(_SLABS, len(blocks))
    cuts = [len(blocks) * k // count for k in range(count + 1)]
    return [blocks[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def _by_blocks(shape: tuple[int, ...], work: Callable[[list[tuple]], list]) -> list:
    """``work`` over a table of this shape: whole when it is small, else over its blocks' groups in threads
    (the results of every block, in block order)."""
    if prod(shape) < PARALLEL_CELLS:
        return work([()])
    return [found for group in _map(work, _blocks(shape)) for found in group]


def _part(operand, index: tuple):
    """The part of a broadcast operand that meets a block or a slab (an index over leading axes): all of it on
    axes where it has one cell."""
    if not index or np.ndim(operand) == 0:
        return operand
    return operand[tuple(s if n != 1 else slice(None) for s, n in zip(index, operand.shape))]


# Elementwise passes with a broadcast operand.  NumPy loops innermost over the longest run of trailing axes on
# which every operand is either whole or broadcast; an operand whole on the last axes but broadcast just before
# them (a gradient or a message over a clique's first and last attributes) leaves runs of a few cells, and the
# pass costs about 4× a plain one (doc/engine.md).  Such an operand is first made whole on enough of the last axes
# (a small copy), which restores long runs with the same values.
_SHORT_RUN = 16          # runs shorter than this are widened ...
_WIDE_RUN = 128          # ... to at least this many cells where the copy allows
_WIDEN_FRACTION = 16     # the widened copy has at most 1/16 of the table's cells
_WIDEN_MIN_CELLS = 2**14


def compact(operand: np.ndarray) -> np.ndarray:
    """A broadcast view (stride 0 on an axis) as the array it views, with one cell on those axes."""
    if 0 not in operand.strides:
        return operand
    return operand[tuple(slice(0, 1) if stride == 0 else slice(None) for stride in operand.strides)]


def _inner_run(operand_shape: tuple[int, ...], shape: tuple[int, ...]) -> int:
    """Cells of the innermost loop an elementwise pass over ``shape`` makes with this broadcast operand."""
    run, broadcast = 1, None
    for size, own in zip(reversed(shape), reversed(operand_shape)):
        if size == 1:
            continue
        if broadcast is not None and (own == 1) != broadcast:
            break
        broadcast = own == 1
        run *= size
    return run


@lru_cache(maxsize=4096)
def _widening(operand_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape to widen a broadcast operand to (see above), or ``None`` when it is left as it is."""
    if _inner_run(operand_shape, shape) >= _SHORT_RUN:
        return None
    cap = prod(shape) // _WIDEN_FRACTION
    best = None
    for start in range(len(shape) - 1, -1, -1):
        wide = operand_shape[:start] + shape[start:]
        if prod(wide) > cap:
            break
        best = wide
        if prod(shape[start:]) >= _WIDE_RUN:
            break
    if best is None or _inner_run(best, shape) < _SHORT_RUN:
        return None
    return best


def _operand(operand, shape: tuple[int, ...]):
    """``operand`` ready for an elementwise pass over a table of ``shape`` (widened where its runs are short)."""
    if prod(shape) < _WIDEN_MIN_CELLS or np.ndim(operand) == 0:
        return operand
    operand = compact(operand)
    if operand.shape == shape:
        return operand
    wide = _widening(operand.shape, shape)
    return operand if wide is None else np.ascontiguousarray(np.broadcast_to(operand, wide))


def reduce_in_slabs(table: np.ndarray, axes: tuple[int, ...], reduce: Callable) -> np.ndarray | None:
    """``reduce(table, axes)`` slab by slab (partial sums added, or kept slabs joined), or ``None`` if small."""
    cut = _slabs(table)
    if cut is None:
        return None
    axis, slabs = cut
    parts = _map(lambda index: reduce(table[index], axes), slabs)
    if axis in axes:
        total = np.array(parts[0], copy=True)
        for part in parts[1:]:
            total += part
        return total
    return np.concatenate(parts, axis=sum(1 for a in range(axis) if a not in axes))


# Sums over axes as BLAS products with vectors of ones (sum_over).  numpy's einsum and sum reduce a table over
# some axes at 0.5–4 GB/s when a kept axis is innermost or the summed runs are short; the products stream the
# table at memory speed (doc/engine.md has the timings).
_BLAS_MIN_CELLS = 4096             # below this, einsum's call costs less than a plan's steps
_MAX_ONES = 2**22                  # longest vector of ones kept (32 MB)
_MAX_INDICATOR_CELLS = 2**18       # largest 0/1 matrix kept per (summed, kept) pair (2 MB)
_INDICATOR_MAX_KEPT = 8            # up to this many kept cells, one product with a 0/1 matrix (2 flops per cell
                                   # per kept cell: still memory-bound) beats a batch of small products
_ones_buffer = np.ones(0)


def _ones(n: int) -> np.ndarray:
    global _ones_buffer
    buffer = _ones_buffer
    if buffer.size < n:
        buffer = _ones_buffer = np.ones(min(max(n, 2 * buffer.size), _MAX_ONES))   # plans ask for at most that
    return buffer[:n]


@lru_cache(maxsize=256)
def _indicator(summed: int, kept: int) -> np.ndarray:
    """The ``(summed · kept) × kept`` matrix that sums ``(…, summed, kept)`` rows over ``summed``."""
    return np.tile(np.eye(kept), (summed, 1))


@lru_cache(maxsize=4096)
def _sum_plan(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple | None:
    """Steps that sum a C-ordered table of ``shape`` over ``axes`` with BLAS products, or ``None``.

    Adjacent axes that are both summed or both kept are merged; then the
    innermost summed run goes, step by step: a trailing run is a
    matrix-vector product with ones (``"right"``); a run before a trailing
    kept run is one (``"left"``, when nothing precedes it), one product with
    a 0/1 matrix (``"indicator"``, few kept cells) or a batch of
    vector-matrix products (``"batch"``).
    """
    runs: list[list] = []          # [cells, summed]
    for i, n in enumerate(shape):
        if n == 1:
            continue
        summed = i in axes
        if runs and runs[-1][1] == summed:
            runs[-1][0] *= n
        else:
            runs.append([n, summed])
    steps = []
    while any(summed for _, summed in runs):
        n, summed = runs[-1]
        if summed:
            if n > _MAX_ONES:
                return None
            steps.append(("right", prod(r[0] for r in runs[:-1]), n))
            runs.pop()
            continue
        s = runs[-2][0]
        before = prod(r[0] for r in runs[:-2])
        if s > _MAX_ONES:
            return None
        if before == 1:
            steps.append(("left", s, n))
        elif n <= _INDICATOR_MAX_KEPT and s * n * n <= _MAX_INDICATOR_CELLS:
            steps.append(("indicator", before, s, n))
        else:
            steps.append(("batch", before, s, n))
        runs[-2:] = [[n, False]]
        if len(runs) > 1 and not runs[-2][1]:
            runs[-2:] = [[runs[-2][0] * n, False]]
    return tuple(steps), tuple(n for i, n in enumerate(shape) if i not in axes)


def sum_over(table: np.ndarray, axes: tuple[int, ...]) -> np.ndarray | None:
    """``table`` summed over ``axes`` by BLAS products, or ``None`` where they do not apply.

    They apply where BLAS runs on one thread (within
    :func:`single_threaded_blas`: the same sums, bit for bit, on any machine)
    to C-contiguous tables of at least 4 096 cells, of finite values (a 0/1
    matrix product turns an infinite cell into NaN in its neighbours' sums).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical.tables import single_threaded_blas, sum_over
    >>> table = np.arange(2.0 * 3 * 1000 * 2).reshape(2, 3, 1000, 2)
    >>> with single_threaded_blas():
    ...     np.array_equal(sum_over(table, (1, 2)), table.sum(axis=(1, 2)))
    True
    """
    if table.size < _BLAS_MIN_CELLS or not table.flags.c_contiguous or not blas_is_single_threaded():
        return None
    plan = _sum_plan(table.shape, tuple(axes))
    if plan is None:
        return None
    steps, shape = plan
    x = table
    for kind, *sizes in steps:
        if kind == "right":
            rows, s = sizes
            x = x.reshape(rows, s) @ _ones(s)
        elif kind == "left":
            s, kept = sizes
            x = _ones(s) @ x.reshape(s, kept)
        elif kind == "indicator":
            before, s, kept = sizes
            x = x.reshape(before, s * kept) @ _indicator(s, kept)
        else:
            before, s, kept = sizes
            x = _ones(s) @ x.reshape(before, s, kept)
    return x.reshape(shape)


def _whole(table: np.ndarray, reduce: Callable, combine: Callable) -> float:
    """``reduce`` of the whole table: of each slab in threads, then ``combine`` of theirs (slabs in order)."""
    cut = _slabs(table)
    if cut is None:
        return float(reduce(table))
    return float(combine(_map(lambda index: float(reduce(table[index])), cut[1])))


def total(table: np.ndarray) -> float:
    """The sum of all cells."""
    return _whole(table, np.sum, sum)


def maximum(table: np.ndarray) -> float:
    """The largest cell."""
    return _whole(table, np.max, max)


def minimum(table: np.ndarray) -> float:
    """The smallest cell."""
    return _whole(table, np.min, min)


def exp_shifted(table: np.ndarray, shift: float, out: np.ndarray | None = None) -> np.ndarray:
    """``exp(table − shift)``, into ``out`` (which may be ``table`` itself) or a new array."""
    cut = _slabs(table)
    if cut is None:
        out = np.subtract(table, shift, out=out)
        return np.exp(out, out=out)
    out = np.empty_like(table) if out is None else out

    def work(index):
        np.subtract(table[index], shift, out=out[index])
        np.exp(out[index], out=out[index])
    _map(work, cut[1])
    return out


def multiply_inplace(table: np.ndarray, factor) -> None:
    """``table *= factor`` (a number, or an array that broadcasts to the table)."""
    cut = _slabs(table)
    if cut is None:
        table *= _operand(factor, table.shape)
        return
    factor = _operand(factor, table.shape)
    _, slabs = cut

    def work(index):
        table[index] *= _part(factor, index)
    _map(work, slabs)


def multiply_and_measure(table: np.ndarray, factor) -> tuple[float, float]:
    """``table *= factor``, then ``(largest cell, sum of all cells)``, in one pass block by block.

    The sum adds the blocks' sums in a fixed order (blocks depend on the shape alone), so it is the same
    with any number of threads.
    """
    _, peak, _, summed = product(table, [factor], out=table, summed=True)
    return peak, summed


def product(table: np.ndarray, factors, out: np.ndarray | None = None, *, smallest: bool = False,
            summed: bool = False) -> tuple[np.ndarray, float, float | None, float | None]:
    """``table`` times every one of ``factors`` (numbers, or arrays that broadcast to the table), with the
    result's largest cell and, when asked, its smallest and its sum, in one pass block by block.

    Returns ``(result, largest, smallest or None, sum or None)``; the result is ``out`` (which may be
    ``table`` itself) or a new array.  The sum adds the blocks' sums in a fixed order (blocks depend on the
    shape alone), so it is the same with any number of threads.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical.tables import product
    >>> result, largest, smallest, total = product(np.ones((2, 3)), [np.array([[1.0], [2.0]]), 0.5],
    ...                                            smallest=True, summed=True)
    >>> result.tolist(), largest, smallest, total
    ([[0.5, 0.5, 0.5], [1.0, 1.0, 1.0]], 1.0, 0.5, 4.5)
    """
    shape = table.shape
    factors = [_operand(f, shape) for f in factors]
    if out is None:
        out, table = np.empty(shape), _operand(table, shape)

    def measure(blocks):
        found = []
        for index in blocks:
            part = out[index]
            if factors:
                np.multiply(_part(table, index), _part(factors[0], index), out=part)
                for factor in factors[1:]:
                    part *= _part(factor, index)
            else:
                np.copyto(part, _part(table, index))
            found.append((part.max(), part.min() if smallest else None, part.sum() if summed else None))
        return found
    found = _by_blocks(shape, measure)
    return (out, float(max(peak for peak, _, _ in found)),
            float(min(low for _, low, _ in found)) if smallest else None,
            float(sum(part for _, _, part in found)) if summed else None)


def add(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``a + b`` (``b`` may broadcast to ``a``'s shape), into ``out`` (which may be ``a``) or a new array."""
    if a.size < _WIDEN_MIN_CELLS and b.size < _WIDEN_MIN_CELLS:
        return np.add(a, b, out=out)
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = _operand(a, shape), _operand(b, shape)
    out = np.empty(shape) if out is None else out
    if prod(shape) < PARALLEL_CELLS:
        return np.add(a, b, out=out)
    _, slabs = _slabs(out)   # out has at least as many cells as a or b: it is cut

    def work(index):
        np.add(_part(a, index), _part(b, index), out=out[index])
    _map(work, slabs)
    return out


def step(table: np.ndarray, size: float, direction) -> np.ndarray:
    """``table − size · direction`` as a new array.

    ``direction`` broadcasts to the table, or is a sequence of arrays that do: their sum, added in the given
    order, block by block (a few hundred kilobytes each, so that the sum and the step stay in the core's cache
    and the whole direction is never made).
    """
    shape = table.shape
    terms = list(direction) if isinstance(direction, (list, tuple)) else [direction]
    if table.size < _WIDEN_MIN_CELLS:   # small: whole-table numpy (the same numbers)
        summed = terms[0]
        for term in terms[1:]:
            summed = summed + term
        return table - size * summed
    table, terms = _operand(table, shape), [_operand(t, shape) for t in terms]
    out = np.empty(shape)

    def work(blocks):
        for index in blocks:
            o = out[index]
            if len(terms) == 1:
                np.multiply(_part(terms[0], index), -size, out=o)
            else:
                np.add(_part(terms[0], index), _part(terms[1], index), out=o)
                for term in terms[2:]:
                    o += _part(term, index)
                o *= -size
            o += _part(table, index)
        return []
    _by_blocks(shape, work)
    return out
