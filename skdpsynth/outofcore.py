"""Fitting on data beyond memory: codes counted partition by partition with dask (issue 16).

``fit(X)`` of every synthesizer also takes a ``dask.dataframe.DataFrame`` or
the path (or glob) of Parquet files, which it reads with
``dask.dataframe.read_parquet`` (except the federated ones, whose parties take
their rows in memory: ``HybridSynthesizer`` and ``VerticalMRFSynthesizer``
refuse it before reading anything).  The records then never sit in memory
together: the synthesizer gets a :class:`DaskCodes`, a lazy stand-in for the
array of integer codes, and every marginal it asks for is counted partition
by partition — each partition is read, encoded over the public domain and
counted by the in-memory engine (:func:`skdpsynth.marginals.marginals`), all
the cliques of a request in one pass — and the per-partition tables are
summed by a tree reduction.  The tables are exactly the in-memory ones
(integer counts, summed exactly), so a fit with the same ``random_state``
gives the same model.  Everything after counting is unchanged.

The computation runs on whatever dask scheduler is in force: the local
threads by default, the cluster of an active ``distributed.Client`` when the
data outgrow one machine (its workers need skdpsynth installed).

Privacy: the public domain must be given for every column (``domain=``
with sizes or categories); reading categories or sizes from the data would
take them from the private records outside differential privacy, so it
raises here instead of warning.  Only DP mechanisms see the counted tables;
out-of-domain values raise without quoting them.

dask (and pyarrow for Parquet) are the optional extra ``skdpsynth[distributed]``:
this module imports them only when out-of-core data are actually fitted.

Examples
--------
>>> import dask.dataframe as dd, numpy as np, pandas as pd
>>> from skdpsynth import MSTSynthesizer
>>> rng = np.random.default_rng(0)
>>> frame = pd.DataFrame({"a": rng.integers(0, 3, 6000), "b": rng.integers(0, 4, 6000)})
>>> frame["c"] = (frame["a"] + frame["b"]) % 2
>>> domain = {"a": 3, "b": 4, "c": 2}
>>> lazy = MSTSynthesizer(domain=domain, random_state=0).fit(dd.from_pandas(frame, npartitions=4))
>>> eager = MSTSynthesizer(domain=domain, random_state=0).fit(frame)
>>> bool(np.array_equal(lazy.sample(100, random_state=1), eager.sample(100, random_state=1)))
True
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from .columns import resolve_columns
from .privacy import PrivacyLedger
from .domain import Domain
from .marginals import _integer_column, _uint_for

__all__ = ["DaskCodes", "as_dask_codes", "is_out_of_core", "read_out_of_core"]

Clique = tuple[str, ...]

#: Per-partition tables summed per task of the tree reduction.
SPLIT_EVERY = 8


def is_out_of_core(X) -> bool:
    """Whether ``X`` is out-of-core input: a dask DataFrame, or a path (``str`` / ``os.PathLike``) to Parquet files.

    Never imports dask: if ``dask.dataframe`` is not imported, ``X`` cannot be one of its frames.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.outofcore import is_out_of_core
    >>> is_out_of_core(pd.DataFrame({"a": [0]})), is_out_of_core("data/*.parquet")
    (False, True)
    """
    if isinstance(X, (str, os.PathLike)):
        return True
    dd = sys.modules.get("dask.dataframe")
    return dd is not None and isinstance(X, dd.DataFrame)


def read_out_of_core(X, domain):
    """The dask DataFrame of out-of-core input ``X``, checked against the public ``domain``.

    Parameters
    ----------
    X : dask.dataframe.DataFrame, str or os.PathLike
        A dask DataFrame, or a path or glob of Parquet files (only the columns
        of ``domain`` are read, in its order).
    domain : dict or Domain
        The public domain: a size or a list of categories for every column.

    Returns
    -------
    dask.dataframe.DataFrame

    Raises
    ------
    ValueError
        When ``domain`` is missing or lacks a column of the data.

    Examples
    --------
    >>> import os, tempfile
    >>> import dask.dataframe as dd, pandas as pd
    >>> from skdpsynth.outofcore import read_out_of_core
    >>> frame = pd.DataFrame({"a": [0, 1, 1, 2], "b": ["x", "y", "y", "y"]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     frame.to_parquet(os.path.join(tmp, "part-0.parquet"))
    ...     lazy = read_out_of_core(os.path.join(tmp, "*.parquet"), {"b": ["x", "y"], "a": 3})
    ...     rows = lazy.compute().to_numpy().tolist()
    >>> list(lazy.columns), rows                # the domain's columns, in its order
    (['b', 'a'], [['x', 0], ['y', 1], ['y', 1], ['y', 2]])
    >>> read_out_of_core(dd.from_pandas(frame, npartitions=2), {"a": 3})
    Traceback (most recent call last):
    ...
    ValueError: Out-of-core data need the public domain of every column; domain= lacks ['b']. ...
    """
    given = domain.to_dict() if isinstance(domain, Domain) else dict(domain or {})
    if not given:
        raise ValueError(
            "Out-of-core data (a dask DataFrame or Parquet files) need their public domain: give domain= with "
            "the size or the categories of every column. Reading them from the data would be a pass over the "
            "private records outside differential privacy."
        )
    import dask.dataframe as dd

    if isinstance(X, (str, os.PathLike)):
        X = dd.read_parquet(os.fspath(X), columns=list(given))
    missing = [c for c in X.columns if c not in given]
    if missing:
        raise ValueError(
            f"Out-of-core data need the public domain of every column; domain= lacks {missing}. Give their sizes "
            "or categories, or select the columns to synthesize first."
        )
    return X


def as_dask_codes(X, domain, ledger=None) -> "DaskCodes":
    """Out-of-core input as lazy codes over its public domain, encoded as ``fit`` encodes a DataFrame.

    Parameters
    ----------
    X : dask.dataframe.DataFrame, str or os.PathLike
        See :func:`read_out_of_core`.
    domain : dict or Domain
        A size or a list of categories for every column.
    ledger : PrivacyLedger, optional
        Where a privacy leak would be recorded (none can happen: the whole domain is given).

    Returns
    -------
    DaskCodes

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd
    >>> from skdpsynth.marginals import marginals
    >>> from skdpsynth.outofcore import as_dask_codes
    >>> frame = pd.DataFrame({"a": [0, 1, 1, 2], "b": ["x", "y", "y", "y"]})
    >>> codes = as_dask_codes(dd.from_pandas(frame, npartitions=2), {"a": 3, "b": ["x", "y"]})
    >>> codes.domain
    Domain(a=3, b=2)
    >>> marginals(codes, codes.domain, [("a", "b")])[("a", "b")].tolist()
    [[1.0, 0.0], [0.0, 2.0], [0.0, 1.0]]
    """

    frame = read_out_of_core(X, domain)
    # The dtypes only (dask's empty meta frame): with every column's domain given, nothing is read from the data.
    columns = resolve_columns(frame._meta, domain, ledger if ledger is not None else PrivacyLedger())
    return DaskCodes(frame, columns)


class DaskCodes:
    """Integer codes of a dask DataFrame over a public domain, counted partition by partition.

    The lazy counterpart of the array :func:`skdpsynth.marginals.as_codes`
    returns: :func:`~skdpsynth.marginals.marginal` and
    :func:`~skdpsynth.marginals.marginals` accept it, and a per-row transform
    of codes (``numpy array -> numpy array``) is applied lazily with
    :meth:`map_codes`.  Each partition's codes are a Fortran-ordered array of
    the narrowest unsigned dtype holding the domain, built when the partition
    is counted and dropped right after.

    Tables counted once are kept (a fit asks for the same marginals more than
    once: AIM's candidates, then the chosen ones; MST's pairs, then the tree),
    and a clique contained in a kept table is summed out of it.  The object
    lives only inside ``fit``, like the in-memory codes.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
    columns : sequence
        The synthesizer's column encodings (:class:`~skdpsynth.columns.Column`),
        one per column of the domain, in its order.
    transforms : sequence of callables, optional
        Applied in order to each partition's codes.

    Examples
    --------
    Built by :func:`as_dask_codes` (as ``fit`` does) rather than directly:

    >>> import dask.dataframe as dd, numpy as np, pandas as pd
    >>> from skdpsynth import Domain
    >>> from skdpsynth.outofcore import as_dask_codes
    >>> frame = pd.DataFrame({"a": [0, 1, 1, 2], "b": ["x", "y", "y", "y"]})
    >>> codes = as_dask_codes(dd.from_pandas(frame, npartitions=2), {"a": 3, "b": ["x", "y"]})
    >>> codes.npartitions, codes.domain
    (2, Domain(a=3, b=2))
    >>> {c: t.tolist() for c, t in codes.marginals(codes.domain, [("a",), ("b",)]).items()}
    {('a',): [1.0, 2.0, 1.0], ('b',): [1.0, 3.0]}
    >>> merged = codes.map_codes(lambda c: np.minimum(c, 1))   # lazy: runs as each partition is counted
    >>> merged.marginals(Domain(["a", "b"], [2, 2]), [("a",)])[("a",)].tolist()
    [1.0, 3.0]
    """

    # How the layers below recognise lazy codes without importing this module (utils.is_lazy_codes).
    __skdpsynth_lazy_codes__ = True

    def __init__(self, frame, columns: Sequence, transforms: Sequence[Callable[[np.ndarray], np.ndarray]] = ()):
        self._frame = frame
        self._columns = tuple(columns)
        self._transforms = tuple(transforms)
        self._tables: dict[tuple[Clique, tuple[int, ...]], np.ndarray] = {}

    @property
    def columns(self) -> tuple:
        """The column encodings, in domain order."""
        return self._columns

    @property
    def domain(self) -> Domain:
        """The public domain the partitions are encoded on (before any :meth:`map_codes`)."""
        return Domain([c.name for c in self._columns], [c.size for c in self._columns])

    @property
    def npartitions(self) -> int:
        return self._frame.npartitions

    def map_codes(self, func: Callable[[np.ndarray], np.ndarray]) -> "DaskCodes":
        """Lazy codes with ``func`` applied to each partition's codes (e.g. a domain compression)."""
        return DaskCodes(self._frame, self._columns, self._transforms + (func,))

    def marginals(self, domain: Domain, cliques: Iterable[Iterable[str]], weights=None) -> dict[Clique, np.ndarray]:
        """Contingency tables of ``cliques``, as :func:`skdpsynth.marginals.marginals` computes them in memory.

        The cliques not yet known are counted in one pass over the partitions.
        """
        if weights is not None:
            raise NotImplementedError("Per-record weights are not supported on out-of-core codes.")
        wanted = list(dict.fromkeys(domain.canonical(c) for c in cliques))
        missing = [c for c in wanted if self._lookup(domain, c) is None]
        if missing:
            self._count(domain, missing)
        return {c: self._lookup(domain, c) for c in wanted}

    def _lookup(self, domain: Domain, clique: Clique) -> np.ndarray | None:
        shape = domain.shape_of(clique)
        table = self._tables.get((clique, shape))
        if table is not None:
            return table.copy()
        for (src, src_shape), t in self._tables.items():
            if set(clique) <= set(src) and all(src_shape[src.index(a)] == s for a, s in zip(clique, shape)):
                return np.asarray(t.sum(axis=tuple(i for i, a in enumerate(src) if a not in clique)))
        return None

    def _count(self, domain: Domain, cliques: list[Clique]) -> None:
        import dask
        from dask import delayed

        task = _PartitionCount(self._columns, self._transforms, domain, cliques)
        level = [delayed(task, pure=False)(part) for part in self._frame.to_delayed(optimize_graph=True)]
        while len(level) > 1:  # tree reduction
            level = [delayed(_sum_tables, pure=False)(*level[i:i + SPLIT_EVERY])
                     for i in range(0, len(level), SPLIT_EVERY)]
        (tables,) = dask.compute(level[0])
        for c in cliques:
            self._tables[(c, domain.shape_of(c))] = tables[c]


class _PartitionCount:
    """One partition -> codes -> transforms -> the tables of ``cliques`` (the in-memory engine)."""

    def __init__(self, columns, transforms, domain: Domain, cliques: list[Clique]):
        self.columns, self.transforms, self.domain, self.cliques = columns, transforms, domain, cliques

    def __call__(self, frame: pd.DataFrame) -> dict[Clique, np.ndarray]:
        from .marginals import marginals

        codes = encode_partition(frame, self.columns)
        for transform in self.transforms:
            codes = transform(codes)
        return marginals(codes, self.domain, self.cliques)


def _sum_tables(*parts: dict[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
    out = {c: t.copy() for c, t in parts[0].items()}
    for part in parts[1:]:
        for c, t in part.items():
            out[c] += t
    return out


def encode_partition(frame: pd.DataFrame, columns: Sequence) -> np.ndarray:
    """One partition as a Fortran array of codes (narrowest unsigned dtype), with the in-memory encoding rules.

    Raises
    ------
    ValueError
        On a value outside a column's public domain (the message names the
        column, never the value: it is a value of the private data).
    """
    dtype = _uint_for(max(c.size for c in columns) - 1)
    out = np.empty((len(frame), len(columns)), dtype=dtype, order="F")
    for j, column in enumerate(columns):
        values = _integer_column(np.asarray(column.encode(frame[column.name])), column.name)
        if values.size and (int(values.max()) >= column.size or (values.dtype.kind == "i" and int(values.min()) < 0)):
            raise ValueError(f"Column {column.name!r} has values outside its public domain "
                             f"(codes 0..{column.size - 1}).")
        out[:, j] = values
    return out
