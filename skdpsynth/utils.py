"""Small shared utilities: random-state handling, memory checks, the target column of ``fit(X, y)``."""
from __future__ import annotations

import importlib
import numbers
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

__all__ = ["check_random_state", "available_memory", "check_memory", "MemoryLimitError", "format_bytes", "append_target",
           "moved_names", "as_value_list", "redraw_rejected", "thread_pool",
           "is_lazy_codes", "is_remote_data", "LAZY_CODES_MARKER", "REMOTE_DATA_MARKER"]

#: The class attribute (set to ``True``) by which out-of-core codes (:class:`skdpsynth.outofcore.DaskCodes`) are
#: recognised in the layers below :mod:`skdpsynth.outofcore`, which cannot import it.
LAZY_CODES_MARKER = "__skdpsynth_lazy_codes__"
#: The class attribute (set to ``True``) of records that stay with their parties
#: (:class:`skdpsynth.federated.FederatedData`), recognised by the synthesizers' common ``fit``.
REMOTE_DATA_MARKER = "__skdpsynth_remote__"


def check_random_state(seed=None) -> np.random.Generator:
    """Turn ``seed`` into a :class:`numpy.random.Generator`.

    The semantics follow :func:`sklearn.utils.check_random_state`, adapted to
    the ``Generator`` API that every random draw in this package goes through.

    Parameters
    ----------
    seed : None, int, numpy.random.Generator, numpy.random.RandomState or numpy.random.SeedSequence
        ``None`` gives a freshly seeded generator (OS entropy); an int or a
        ``SeedSequence`` seeds a new PCG64 generator; a ``Generator`` is
        returned as is (so draws advance the caller's stream); a legacy
        ``RandomState`` is converted by drawing a seed from it, so it too
        advances.

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> from skdpsynth.utils import check_random_state
    >>> a = check_random_state(0).integers(100, size=3)
    >>> b = check_random_state(0).integers(100, size=3)
    >>> bool((a == b).all())
    True
    """
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (numbers.Integral, np.integer)):
        if int(seed) < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {seed}.")
        return np.random.default_rng(int(seed))
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**31 - 1, size=4))
    raise ValueError(
        f"{seed!r} cannot be used to seed a numpy.random.Generator; pass None, an int, "
        "a SeedSequence, a Generator or a RandomState."
    )


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation, or ``None`` when the platform does not say.

    Linux's ``MemAvailable`` (what can be allocated without swapping), else
    the free physical pages.

    Examples
    --------
    >>> from skdpsynth.utils import available_memory
    >>> mem = available_memory()                # varies by machine; None if the platform does not say
    >>> mem is None or (isinstance(mem, int) and mem > 0)
    True
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n: float) -> str:
    """``n`` bytes as a short human-readable size (``"74.5 GiB"``).

    Binary units (1 KiB = 1024 B) up to TiB; whole bytes below 1 KiB, one
    decimal above.

    Examples
    --------
    >>> from skdpsynth.utils import format_bytes
    >>> format_bytes(512), format_bytes(1536), format_bytes(80 * 2**30)
    ('512 B', '1.5 KiB', '80.0 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


class MemoryLimitError(MemoryError, ValueError):
    """A step refused before it starts because it would need more memory than is available.

    A ``MemoryError`` (what it is) and a ``ValueError`` (what caused it: a size the user gave, such as a
    number of records, bins or cells, or data too large for the chosen settings).  Its message gives both
    numbers and what to change.

    Examples
    --------
    >>> from skdpsynth.utils import MemoryLimitError
    >>> issubclass(MemoryLimitError, MemoryError) and issubclass(MemoryLimitError, ValueError)
    True
    """


def check_memory(required: float, what: str, advice: str) -> None:
    """Refuse, before any work, a step that needs more memory than is available.

    Parameters
    ----------
    required : float
        Estimated bytes the step will hold at once.
    what : str
        What needs them, for the message (e.g. ``"the 2-way marginal of ('a', 'b')"``).
    advice : str
        What the user can change.

    Raises
    ------
    MemoryLimitError
        With both numbers, ``what`` and ``advice``, when ``required`` exceeds
        :func:`available_memory` (no check when that is unknown).

    Examples
    --------
    >>> from skdpsynth.utils import check_memory
    >>> check_memory(1024, "a small table", "nothing")  # fits: returns None
    """
    available = available_memory()
    if available is not None and required > available:
        raise MemoryLimitError(
            f"{what} needs about {format_bytes(required)} of memory, but {format_bytes(available)} is available. "
            f"{advice}"
        )


def append_target(X, y):
    """``X`` with ``y`` as its last column, as every ``fit(X, y)`` of this package synthesizes it.

    The column is named ``y.name``, else ``"target"``; an array ``X`` gets
    scikit-learn's column names ``x0 … x{d-1}``.  ``y=None`` returns ``X``
    unchanged.  The caller's ``X`` and ``y`` are not modified.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.utils import append_target
    >>> append_target(pd.DataFrame({"a": [0, 1]}), [1, 0]).columns.tolist()
    ['a', 'target']
    """
    if y is None:
        return X
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X)).rename(columns=lambda j: f"x{j}")
    # Neither length nor shape in the messages: both hold the private record count.
    if not isinstance(y, pd.Series) and np.ndim(y) != 1:
        raise ValueError("y must be 1-D (one target column).")
    target = y.copy() if isinstance(y, pd.Series) else pd.Series(np.asarray(y))
    if len(target) != len(frame):
        raise ValueError("y must have one entry per row of X; it has another number of entries.")
    name = target.name if target.name is not None else "target"
    if name in frame.columns:
        raise ValueError(f"y is named {name!r} but X already has such a column.")
    target.name, target.index = name, frame.index
    return pd.concat([frame, target.to_frame()], axis=1)  # a new frame: the caller's X is untouched


def moved_names(module: str, moved: dict, removal: str = "0.2"):
    """A module ``__getattr__`` that keeps names moved to other modules importable, with a ``DeprecationWarning``.

    The name is looked up in its new module by that module's name
    (``importlib``), so the old module does not import the new one: an alias
    adds no edge to the import graph (doc/architecture.md).

    Parameters
    ----------
    module : str
        The old module's ``__name__``.
    moved : dict
        ``{name: new module's name}``.
    removal : str, default="0.2"
        The release that removes the aliases.

    Examples
    --------
    >>> import warnings
    >>> from skdpsynth.utils import moved_names
    >>> getattr_ = moved_names("old.place", {"Domain": "skdpsynth.domain"})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     getattr_("Domain").__name__, str(caught[0].message).split(";")[0]
    ('Domain', 'old.place.Domain moved to skdpsynth.domain.Domain')
    """
    def __getattr__(name: str):
        if name in moved:
            warnings.warn(f"{module}.{name} moved to {moved[name]}.{name}; this alias will be removed in {removal}.",
                          DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__


def is_lazy_codes(codes) -> bool:
    """Whether ``codes`` are out-of-core codes, counted partition by partition (:mod:`skdpsynth.outofcore`).

    The three kinds of input a fit takes are an in-memory table, out-of-core codes and records that stay with
    their parties (:func:`is_remote_data`); the last two are recognised by a class attribute
    (:data:`LAZY_CODES_MARKER`, :data:`REMOTE_DATA_MARKER`), here only, so that no lower layer imports the
    modules that define them.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.utils import is_lazy_codes
    >>> is_lazy_codes(np.zeros((3, 2), dtype=int))
    False
    """
    return bool(getattr(codes, LAZY_CODES_MARKER, False))


def is_remote_data(X) -> bool:
    """Whether ``X`` holds records that stay with their parties (:class:`skdpsynth.federated.FederatedData`).

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.utils import is_remote_data
    >>> is_remote_data(pd.DataFrame({"a": [0, 1]}))
    False
    """
    return bool(getattr(X, REMOTE_DATA_MARKER, False))


def as_value_list(values) -> list:
    """One value, or a list, tuple, set, array, Index or Series of values, as a list of values.

    How a condition (``sample(conditions=...)``) or a constraint
    (:mod:`skdpsynth.constraints`) reads what a user gives for a column.

    Examples
    --------
    >>> from skdpsynth.utils import as_value_list
    >>> as_value_list("Husband"), as_value_list(("Husband", "Wife"))
    (['Husband'], ['Husband', 'Wife'])
    """
    if isinstance(values, (list, tuple, set, frozenset, np.ndarray, pd.Index, pd.Series)):
        return list(values)
    return [values]


def redraw_rejected(records, rejected, draw, *, max_redraws: int, failure: str):
    """``records`` with each rejected record replaced by a fresh draw that is not: sampling conditioned on
    not being rejected (post-processing of what ``draw`` samples).

    Parameters
    ----------
    records : numpy.ndarray or pandas.DataFrame
        Records, one per row; replaced in place (a DataFrame column by column, keeping its dtype).
    rejected : callable
        ``rejected(records) -> bool array``, one entry per row.
    draw : callable
        ``draw(n) -> records`` of the same kind.
    max_redraws : int
        Rounds of redrawing before giving up.
    failure : str
        The ``RuntimeError``'s text when rejected records are left after ``max_redraws`` rounds.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.utils import redraw_rejected
    >>> rng = np.random.default_rng(0)
    >>> draws = redraw_rejected(rng.integers(0, 4, (1000, 1)), lambda r: r[:, 0] == 3,
    ...                         lambda n: rng.integers(0, 4, (n, 1)), max_redraws=100, failure="never")
    >>> draws.shape, bool((draws != 3).all())
    ((1000, 1), True)
    """
    bad = np.asarray(rejected(records), dtype=bool)
    for _ in range(max_redraws):
        n_bad = int(bad.sum())
        if not n_bad:
            return records
        accept = max(1.0 - n_bad / len(records), 1e-3)
        fresh = draw(int(np.ceil(1.2 * n_bad / accept)) + 10)
        fresh = fresh[~np.asarray(rejected(fresh), dtype=bool)][:n_bad]
        where = np.flatnonzero(bad)[:len(fresh)]
        if isinstance(records, pd.DataFrame):
            for j in range(records.shape[1]):
                records.iloc[where, j] = fresh.iloc[:, j].to_numpy()
        else:
            records[where] = fresh
        bad[where] = False
    raise RuntimeError(failure)


_pools: dict = {}
_pools_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _pools_lock
    _pools_lock = threading.Lock()   # another thread may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def thread_pool(purpose: str, workers: int) -> ThreadPoolExecutor:
    """A process-wide pool of ``workers`` threads for one ``purpose``, made on first use and kept.

    Starting threads costs about a millisecond each, which is most of the time of a selection or a count over a
    small table; work that runs in threads again and again (every round of a fit) therefore shares a pool.  Each
    purpose has its own: a task must never wait for work it submitted to its own pool, which could then have no
    thread left to run it.  A forked child inherits the pool objects but not their threads, so it makes its own.

    Parameters
    ----------
    purpose : str
        What the pool is for (e.g. ``"score"``); also its threads' name prefix.
    workers : int
        The number of threads, >= 1.

    Examples
    --------
    >>> from skdpsynth.utils import thread_pool
    >>> list(thread_pool("example", 2).map(abs, [-1, 2, -3]))
    [1, 2, 3]
    >>> thread_pool("example", 2) is thread_pool("example", 2)
    True
    """
    key = (purpose, int(workers), os.getpid())
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(int(workers), thread_name_prefix=f"skdpsynth-{purpose}")
        return pool
