"""Seeded generators of wide categorical tables for scale benchmarks (issue 16).

The bundled data sets are narrow (Adult has 14 columns), so the scale
benchmarks need tables whose size, width and domain sizes can be chosen
freely while still looking like real data: skewed marginals and genuine,
sparse dependence between columns.  :func:`random_bayesian_network` draws a
random discrete Bayesian network with such properties, and
:meth:`BayesianNetwork.sample` draws rows from it by vectorised ancestral
sampling.  The intended uses are

* 50 attributes x 200,000 rows (``n_attributes=50, max_values=20``), the
  "wide table" case for marginal selection and counting;
* 10 attributes with 50-100 values each x 200,000 rows
  (``min_values=50, max_values=100``), the "large domain" case, where
  2-way marginals have up to 10,000 cells and 3-way ones up to a million;
* tables of 100 million rows and more for out-of-core counting, generated
  chunk by chunk with :meth:`BayesianNetwork.sample_chunks` so that only one
  chunk is ever in memory.

The network is public and synthetic: it is a benchmark fixture, not a
privacy mechanism, and its seeded draws use NumPy's PCG64 generator.  Because
the generating distribution is known exactly, benchmark results can be
compared with the truth (e.g. the exact marginals of the network), not only
with another estimate.

Examples
--------
>>> from skdpsynth.benchmarks.generators import random_bayesian_network
>>> net = random_bayesian_network(12, max_values=6, random_state=0)
>>> frame = net.sample(1000, random_state=1)
>>> frame.shape
(1000, 12)
>>> list(frame.columns) == list(net.domain.attrs)
True
>>> bool((frame.max() < list(net.domain.shape)).all())
True
"""
from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from math import prod

import numpy as np
import pandas as pd

from ..domain import Domain
from ..utils import check_random_state

__all__ = ["BayesianNetwork", "make_person_table", "random_bayesian_network"]

#: Rows sampled per block.  The rows drawn for a seed depend on it (the
#: uniforms of one block are drawn attribute by attribute), so it is fixed.
DEFAULT_CHUNK_ROWS = 1 << 16


@dataclass(frozen=True, eq=False, repr=False)
class BayesianNetwork:
    """A discrete Bayesian network over a :class:`~skdpsynth.Domain`, with a vectorised sampler.

    Usually built by :func:`random_bayesian_network`; it can also be built by
    hand, in which case the arguments are checked.

    Parameters
    ----------
    domain : Domain
        The attributes and their sizes; :meth:`sample` returns the columns in
        this order, as integer codes ``0 .. size - 1``.
    order : sequence of str
        A topological order of the attributes: every attribute comes after
        all its parents.
    parents : mapping of str to tuple of str
        Parents of each attribute, in domain order (empty for a root).
    cpts : mapping of str to numpy.ndarray
        Conditional probability table of each attribute ``a``: an array of
        shape ``(size(p1), ..., size(pm), size(a))`` with the parents' axes in
        the order of ``parents[a]`` and the attribute's own axis last; every
        row ``cpts[a][p1, ..., pm, :]`` is ``P(a | p1, ..., pm)`` and sums
        to 1.  The arrays are stored read-only.

    Attributes
    ----------
    edges : list of tuple of str
        ``(parent, child)`` pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.benchmarks.generators import BayesianNetwork
    >>> net = BayesianNetwork(
    ...     domain=Domain(["rain", "wet"], [2, 2]),
    ...     order=["rain", "wet"],
    ...     parents={"rain": (), "wet": ("rain",)},
    ...     cpts={"rain": np.array([0.8, 0.2]), "wet": np.array([[0.9, 0.1], [0.2, 0.8]])},
    ... )
    >>> net.edges
    [('rain', 'wet')]
    >>> frame = net.sample(100_000, random_state=0)
    >>> round(float(frame["rain"].mean()), 2)
    0.2
    >>> round(float(frame.loc[frame["rain"] == 1, "wet"].mean()), 2)
    0.8
    """

    domain: Domain
    order: tuple[str, ...]
    parents: Mapping[str, tuple[str, ...]]
    cpts: Mapping[str, np.ndarray] = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            raise TypeError(f"domain must be a skdpsynth.Domain, got {type(self.domain).__name__}.")
        dom = self.domain
        order = tuple(self.order)
        if sorted(order) != sorted(dom.attrs):
            raise ValueError(f"order must list every attribute of the domain once, got {list(order)}.")
        if set(self.parents) != set(dom.attrs) or set(self.cpts) != set(dom.attrs):
            raise ValueError("parents and cpts must have one entry per attribute of the domain.")
        position = {a: t for t, a in enumerate(order)}
        parents: dict[str, tuple[str, ...]] = {}
        cpts: dict[str, np.ndarray] = {}
        for a in dom.attrs:
            pa = tuple(self.parents[a])
            unknown = [p for p in pa if p not in dom]
            if unknown:
                raise ValueError(f"Parents {unknown} of {a!r} are not in the domain.")
            if len(set(pa)) != len(pa):
                raise ValueError(f"Duplicate parents of {a!r}: {list(pa)}.")
            late = [p for p in pa if position[p] >= position[a]]
            if late:
                raise ValueError(f"Parents {late} of {a!r} do not precede it in the order.")
            raw = self.cpts[a]
            cpt = np.asarray(raw, dtype=np.float64)
            if cpt is raw:
                cpt = cpt.view()  # read-only view; the caller's array keeps its flags
            expected = tuple(dom[p] for p in pa) + (dom[a],)
            if cpt.shape != expected:
                raise ValueError(f"The table of {a!r} has shape {cpt.shape}, expected {expected}.")
            if not np.isfinite(cpt).all() or (cpt < 0).any():
                raise ValueError(f"The table of {a!r} has negative or non-finite probabilities.")
            if not np.allclose(cpt.sum(axis=-1), 1.0, rtol=0.0, atol=1e-9):
                raise ValueError(f"The rows of the table of {a!r} must sum to 1.")
            cpt.flags.writeable = False
            parents[a], cpts[a] = pa, cpt
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "cpts", cpts)

    def __repr__(self) -> str:
        cells = sum(c.size for c in self.cpts.values())
        return (
            f"BayesianNetwork(n_attributes={len(self.domain)}, n_edges={len(self.edges)}, "
            f"sizes={min(self.domain.shape)}..{max(self.domain.shape)}, cpt_cells={cells})"
        )

    @property
    def edges(self) -> list[tuple[str, str]]:
        """``(parent, child)`` pairs, children in topological order."""
        return [(p, a) for a in self.order for p in self.parents[a]]

    # -- sampling -----------------------------------------------------------
    @cached_property
    def _plan(self) -> list[tuple[int, np.ndarray, np.ndarray, int, int]]:
        """Per attribute, in topological order: ``(column, parent columns, strides, width, n_steps)``."""
        dom = self.domain
        plan = []
        for a in self.order:
            pa = self.parents[a]
            sizes = [dom[p] for p in pa]
            # Flat (C-order) configuration index of the parents: sum of code * stride.
            strides = np.array([prod(sizes[i + 1:]) for i in range(len(sizes))], dtype=np.int64)
            cols = np.array([dom.index(p) for p in pa], dtype=np.intp)
            n_steps = (dom[a] - 1).bit_length()
            plan.append((dom.index(a), cols, strides, (1 << n_steps) - 1, n_steps))
        return plan

    @cached_property
    def _tables(self) -> list[np.ndarray]:
        """Cumulative CPT rows without their last entry (always 1), padded with 2.0 to ``2**n_steps - 1``.

        Entry ``[c, j]`` is ``P(a <= j | configuration c)``.  For ``u`` uniform in
        ``[0, 1)`` the number of entries of row ``c`` that are ``<= u`` is a draw
        from row ``c`` (inverse CDF); the padding is never ``<= u``.
        """
        tables = []
        for a, (_, _, _, width, _) in zip(self.order, self._plan):
            k = self.domain[a]
            rows = self.cpts[a].reshape(-1, k)
            table = np.full((rows.shape[0], width), 2.0)
            np.cumsum(rows[:, :-1], axis=1, out=table[:, : k - 1])
            np.minimum(table[:, : k - 1], 1.0, out=table[:, : k - 1])
            tables.append(table.ravel())
        return tables

    def _fill(self, block: np.ndarray, rng: np.random.Generator) -> None:
        """Draw ``len(block)`` rows into ``block`` (Fortran-ordered), attribute by attribute."""
        n = block.shape[0]
        for (col, pcols, strides, width, n_steps), table in zip(self._plan, self._tables):
            config = np.zeros(n, dtype=np.int64)
            for pc, stride in zip(pcols, strides):
                config += block[:, pc].astype(np.int64) * stride
            u = rng.random(n)
            # Branchless binary search within each row's segment of the flat table:
            # ``pos`` ends as the number of cumulative probabilities <= u, i.e. the code.
            pos = config * width
            start = pos.copy()
            step = 1 << (n_steps - 1) if n_steps else 0
            while step:
                pos += (table[pos + (step - 1)] <= u) * step
                step >>= 1
            pos -= start
            block[:, col] = pos

    def _dtype(self, dtype) -> np.dtype:
        top = max(self.domain.shape) - 1
        if dtype is None:
            return np.dtype(np.min_scalar_type(top))
        dtype = np.dtype(dtype)
        if dtype.kind not in "iu":
            raise ValueError(f"dtype must be an integer dtype, got {dtype}.")
        if np.iinfo(dtype).max < top:
            raise ValueError(f"dtype {dtype} cannot hold code {top}.")
        return dtype

    def sample(self, n: int, random_state=None, dtype=None, *, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> pd.DataFrame:
        """Draw ``n`` independent rows by vectorised ancestral sampling.

        Rows are drawn in blocks of ``chunk_rows``; within a block each
        attribute, in topological order, gets its parents' flat configuration
        index (``sum(code * stride)``) and one uniform per row, and its code
        is found by inverse CDF: a branchless binary search of the uniform in
        the row of cumulative probabilities of that configuration (about
        ``log2(size)`` gathers per row, no Python loop over rows).

        Parameters
        ----------
        n : int
            Number of rows.
        random_state : None, int, numpy.random.Generator, ...
            Seed, as for :func:`skdpsynth.utils.check_random_state`.
        dtype : None or integer dtype, default None
            Dtype of every column.  ``None`` gives the smallest unsigned dtype
            holding the largest code of the domain (``uint8`` up to 256
            values), one dtype for the whole table so that it is one
            contiguous block (cheap ``to_numpy()``); pass ``"int64"`` for
            plain integers.
        chunk_rows : int, default 65536
            Rows per block; bounds the temporary memory (about
            ``50 * chunk_rows`` bytes; blocks that fit in the CPU cache are also the
            fastest).  The rows drawn for a seed depend on it.

        Returns
        -------
        pandas.DataFrame
            ``n`` rows, columns ``domain.attrs`` in domain order, integer codes.
            Equal to the concatenation of :meth:`sample_chunks` with the same
            ``random_state`` and ``chunk_rows``.

        Examples
        --------
        >>> from skdpsynth.benchmarks.generators import random_bayesian_network
        >>> net = random_bayesian_network(5, min_values=200, max_values=300, random_state=0)
        >>> frame = net.sample(4, random_state=0)
        >>> frame.dtypes.unique().tolist(), frame.shape
        ([dtype('uint16')], (4, 5))
        >>> net.sample(4, random_state=0, dtype="int64").equals(frame.astype("int64"))
        True
        """
        n = _check_int(n, "n", minimum=0)
        chunk_rows = _check_int(chunk_rows, "chunk_rows", minimum=1)
        dtype = self._dtype(dtype)
        rng = check_random_state(random_state)
        out = np.empty((n, len(self.domain)), dtype=dtype, order="F")
        for start in range(0, n, chunk_rows):
            self._fill(out[start:start + chunk_rows], rng)  # each column of the block is contiguous
        return pd.DataFrame(out, columns=list(self.domain.attrs), copy=False)

    def sample_chunks(
        self, n: int, random_state=None, dtype=None, *, chunk_rows: int = DEFAULT_CHUNK_ROWS
    ) -> Iterator[pd.DataFrame]:
        """Draw ``n`` rows as consecutive frames of at most ``chunk_rows`` rows.

        For tables that do not fit in memory (out-of-core counting): only one
        chunk is alive at a time.  The chunks are exactly the rows of
        :meth:`sample` with the same arguments, and carry their row numbers
        as index.

        Parameters
        ----------
        n : int
            Total number of rows.
        random_state, dtype, chunk_rows
            As for :meth:`sample`.

        Yields
        ------
        pandas.DataFrame

        Examples
        --------
        >>> import pandas as pd
        >>> from skdpsynth.benchmarks.generators import random_bayesian_network
        >>> net = random_bayesian_network(10, random_state=0)
        >>> chunks = list(net.sample_chunks(2500, random_state=3, chunk_rows=1000))
        >>> [len(c) for c in chunks]
        [1000, 1000, 500]
        >>> pd.concat(chunks).equals(net.sample(2500, random_state=3, chunk_rows=1000))
        True
        """
        n = _check_int(n, "n", minimum=0)
        chunk_rows = _check_int(chunk_rows, "chunk_rows", minimum=1)
        dtype = self._dtype(dtype)
        rng = check_random_state(random_state)
        columns = list(self.domain.attrs)
        for start in range(0, n, chunk_rows):
            block = np.empty((min(chunk_rows, n - start), len(columns)), dtype=dtype, order="F")
            self._fill(block, rng)
            index = pd.RangeIndex(start, start + len(block))
            yield pd.DataFrame(block, columns=columns, index=index, copy=False)


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    return int(value)


def random_bayesian_network(
    n_attributes: int,
    *,
    min_values: int = 2,
    max_values: int = 10,
    max_parents: int = 2,
    concentration: float = 1.0,
    skew: float = 1.0,
    max_cpt_cells: int = 1_000_000,
    random_state=None,
    names: Sequence[str] | None = None,
) -> BayesianNetwork:
    """A seeded random discrete Bayesian network: a realistic wide categorical table generator.

    The choices, in the order the random draws are made:

    1. **Sizes.** Each attribute's number of values is uniform on
       ``[min_values, max_values]``.
    2. **Order.** A uniformly random topological order (a permutation of the
       attributes, so it is unrelated to the column order).
    3. **Parents.** Every attribute but the first in the order draws a number
       of parents uniformly in ``1 .. min(max_parents, #predecessors)`` and
       that many distinct parents uniformly among its predecessors, so the
       graph is connected (as a forest when ``max_parents=1``).  While the
       table would have more than ``max_cpt_cells`` cells, the largest parent
       is dropped, so tables (and the sampler's memory) stay bounded.
    4. **Tables.** Each attribute has a skewed *base measure*
       ``b_j ∝ (j + 1) ** -skew`` (Zipf-like, over a random permutation of
       its codes), and every row of its table is drawn independently from
       ``Dirichlet(concentration * size * b)``: the rows scatter around
       ``b``, so the marginals are skewed like census columns (a few common
       values, a long tail of rare ones) while each parent configuration
       shifts the distribution noticeably.  ``concentration=1`` with
       ``skew=0`` is the flat Dirichlet; smaller ``concentration`` gives
       sparser, more deterministic rows (stronger dependence), larger gives
       rows closer to ``b`` (weaker dependence).  Measured with the defaults
       (seed 0, sizes 2-20 and 50-100): a parent configuration moves its
       child's distribution away from the child's marginal by a total
       variation distance of about 0.28 on average (0.37 with
       ``concentration=0.5``), and the most common value of an attribute
       holds a median 32% (sizes 2-20) or 21% (sizes 50-100) of the rows.

    Parameters
    ----------
    n_attributes : int
        Number of attributes (10-100 for the issue 16 benchmarks; any
        positive number works).
    min_values, max_values : int, default 2 and 10
        Range of the attribute sizes (inclusive); ``2 <= min_values <= max_values``.
    max_parents : int, default 2
        Maximum in-degree; 0 gives independent columns.
    concentration : float, default 1.0
        Dirichlet concentration per value (relative to the base measure), > 0.
    skew : float, default 1.0
        Zipf exponent of the base measure, >= 0 (0: uniform base).
    max_cpt_cells : int, default 1_000_000
        Cap on ``prod(parent sizes) * size`` for each table; must be at least
        ``max_values``.
    random_state : None, int, numpy.random.Generator, ...
        Seed, as for :func:`skdpsynth.utils.check_random_state`.
    names : sequence of str, optional
        Attribute names (the column order); default ``a00, a01, ...``.

    Returns
    -------
    BayesianNetwork

    Examples
    --------
    >>> from skdpsynth.benchmarks.generators import random_bayesian_network
    >>> net = random_bayesian_network(50, max_values=20, random_state=0)
    >>> len(net.domain), min(net.domain.shape) >= 2, max(net.domain.shape) <= 20
    (50, True, True)
    >>> all(len(net.parents[a]) in (1, 2) for a in net.order[1:])
    True
    >>> net.domain == random_bayesian_network(50, max_values=20, random_state=0).domain
    True
    >>> frame = net.sample(200, random_state=1)
    >>> frame.shape
    (200, 50)
    """
    n_attributes = _check_int(n_attributes, "n_attributes", minimum=1)
    min_values = _check_int(min_values, "min_values", minimum=2)
    max_values = _check_int(max_values, "max_values", minimum=min_values)
    max_parents = _check_int(max_parents, "max_parents", minimum=0)
    max_cpt_cells = _check_int(max_cpt_cells, "max_cpt_cells", minimum=max_values)
    if not (isinstance(concentration, numbers.Real) and np.isfinite(concentration) and concentration > 0):
        raise ValueError(f"concentration must be a positive number, got {concentration!r}.")
    if not (isinstance(skew, numbers.Real) and np.isfinite(skew) and skew >= 0):
        raise ValueError(f"skew must be a non-negative number, got {skew!r}.")
    if names is None:
        width = max(2, len(str(n_attributes - 1)))
        names = [f"a{i:0{width}d}" for i in range(n_attributes)]
    else:
        names = [str(a) for a in names]
        if len(names) != n_attributes:
            raise ValueError(f"{len(names)} names for {n_attributes} attributes.")
    rng = check_random_state(random_state)

    sizes = rng.integers(min_values, max_values, endpoint=True, size=n_attributes)
    domain = Domain(names, sizes.tolist())
    order = [names[i] for i in rng.permutation(n_attributes)]

    parents: dict[str, tuple[str, ...]] = {}
    cpts: dict[str, np.ndarray] = {}
    for t, a in enumerate(order):
        k = domain[a]
        chosen: list[str] = []
        if t > 0 and max_parents > 0:
            m = int(rng.integers(1, min(max_parents, t), endpoint=True))
            chosen = [order[j] for j in rng.choice(t, size=m, replace=False)]
            while chosen and prod(domain[p] for p in chosen) * k > max_cpt_cells:
                chosen.remove(max(chosen, key=lambda p: domain[p]))
        pa = domain.canonical(chosen)
        base = (np.arange(1, k + 1, dtype=np.float64) ** -float(skew))[rng.permutation(k)]
        alpha = concentration * k * base / base.sum()
        n_rows = prod(domain[p] for p in pa)
        gamma = rng.standard_gamma(alpha, size=(n_rows, k))
        total = gamma.sum(axis=1, keepdims=True)
        # Rows whose draws all underflow (only for tiny concentrations) fall back to the base measure.
        cpt = np.where(total > 0, gamma / np.where(total > 0, total, 1.0), alpha / alpha.sum())
        parents[a] = pa
        cpts[a] = cpt.reshape(tuple(domain[p] for p in pa) + (k,))
    return BayesianNetwork(domain=domain, order=tuple(order), parents=parents, cpts=cpts)


#: The public domain of :func:`make_person_table`'s columns (codes ``0 .. size - 1``).
PERSON_TABLE_DOMAIN = {"age": 5, "region": 4, "plan": 3, "device": 3, "activity": 5, "hour": 4}


def make_person_table(n_people: int = 2000, max_records: int = 40, *, random_state=None) -> pd.DataFrame:
    """A table of people with 1 to ``max_records`` records each, for user-level privacy benchmarks (issue 45).

    Each person gets a number of records from a discretised log-normal
    (median 4, clipped to ``1 .. max_records``: most people have a few
    records, a few have many), person-level traits and record-level values
    that follow them:

    * ``age``, ``region``, ``plan``: the person's (identical on all their
      records); a latent type drives ``age`` and ``plan`` and is higher for
      people with many records, so heavy contributors differ from the rest;
    * ``device``: the person's preferred device on 80 % of their records;
    * ``activity``: depends on the type and the record's device;
    * ``hour``: the person's habit (from region and type) on 70 % of records.

    So records of one person are strongly correlated, and bounding each
    person to ``k`` records both limits what one person moves and shifts
    the distribution towards light contributors: both show in a
    user-level fit's error.

    Parameters
    ----------
    n_people : int, default=2000
    max_records : int, default=40
        The largest number of records of a person.
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    pandas.DataFrame
        Columns ``person_id`` (int, the identifier) then the integer codes of
        ``age`` (5), ``region`` (4), ``plan`` (3), ``device`` (3),
        ``activity`` (5) and ``hour`` (4): their public domain, also in
        ``frame.attrs["domain"]``.  Rows are shuffled (a person's records
        are not adjacent).

    Examples
    --------
    >>> from skdpsynth.benchmarks.generators import make_person_table
    >>> people = make_person_table(500, random_state=0)
    >>> list(people.columns)
    ['person_id', 'age', 'region', 'plan', 'device', 'activity', 'hour']
    >>> counts = people.groupby("person_id").size()
    >>> len(counts), int(counts.min()) >= 1, int(counts.max()) <= 40
    (500, True, True)
    >>> people.attrs["domain"]["activity"]
    5
    """
    n_people = _check_int(n_people, "n_people", 1)
    max_records = _check_int(max_records, "max_records", 1)
    rng = check_random_state(random_state)
    counts = np.clip(np.rint(np.exp(rng.normal(np.log(4.0), 1.0, n_people))), 1, max_records).astype(np.int64)
    # The latent type: 0 .. 4, two steps higher for the heaviest contributors.
    kind = rng.integers(0, 3, n_people) + (counts >= 10) + (counts >= 25)
    mixed = lambda p, own, size: np.where(rng.random(own.size) < p, own, rng.integers(0, size, own.size))  # noqa: E731
    age = mixed(0.7, kind, 5)
    region = rng.choice(4, size=n_people, p=[0.4, 0.3, 0.2, 0.1])
    plan = mixed(0.6, np.minimum(kind // 2, 2), 3)
    preferred, habit = rng.integers(0, 3, n_people), (region + kind) % 4
    person = np.repeat(np.arange(n_people), counts)
    device = mixed(0.8, preferred[person], 3)
    activity = mixed(0.6, (kind[person] + device) % 5, 5)
    hour = mixed(0.7, habit[person], 4)
    order = rng.permutation(person.size)
    frame = pd.DataFrame({"person_id": person, "age": age[person], "region": region[person], "plan": plan[person],
                          "device": device, "activity": activity, "hour": hour}).iloc[order].reset_index(drop=True)
    frame.attrs["domain"] = dict(PERSON_TABLE_DOMAIN)
    return frame
