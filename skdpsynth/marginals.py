"""Integer codes -> marginal counts, and workloads of marginals.

Data enter the engine as an ``(n_records, n_attributes)`` integer array whose
columns follow the :class:`~skdpsynth.domain.Domain` order (see
:func:`as_codes`).  A marginal over a clique of attributes is the contingency
table of those columns, an ndarray whose axes are in domain order.  Counting is
one ``ravel_multi_index`` + ``bincount`` pass per marginal; never a Python loop
over records.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .domain import Domain

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
            raise ValueError(f"Expected a 2-D array with {len(domain)} columns, got shape {arr.shape}.")
        codes = np.column_stack([_integer_column(arr[:, j], a) for j, a in enumerate(domain)]) if len(domain) else arr
    codes = np.asfortranarray(codes, dtype=np.intp)
    if codes.size:
        lo, hi = codes.min(axis=0), codes.max(axis=0)
        bad = [(a, int(l), int(h), s) for a, l, h, s in zip(domain, lo, hi, domain.shape) if l < 0 or h >= s]
        if bad:
            a, l, h, s = bad[0]
            raise ValueError(
                f"Column {a!r} has codes in [{l}, {h}] but its domain size is {s} (codes must be 0..{s - 1})."
                + (f" {len(bad) - 1} more column(s) are out of range too." if len(bad) > 1 else "")
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


def marginal(codes: np.ndarray, domain: Domain, clique: Iterable[str], weights: np.ndarray | None = None) -> np.ndarray:
    """Contingency table of ``clique`` (axes in domain order) from validated codes.

    Parameters
    ----------
    codes : ndarray of shape (n, len(domain))
        Output of :func:`as_codes`.
    domain : Domain
    clique : iterable of str
        Attributes of the marginal; an empty clique gives the record count as a 0-d array.
    weights : ndarray of shape (n,), optional
        Per-record weights (default 1).

    Returns
    -------
    numpy.ndarray of float64 with shape ``domain.shape_of(clique)``

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
    shape = domain.shape_of(clique)
    if not clique:
        total = codes.shape[0] if weights is None else float(np.sum(weights))
        return np.asarray(float(total))
    cols = tuple(codes[:, domain.index(a)] for a in clique)
    flat = np.ravel_multi_index(cols, shape) if len(cols) > 1 else cols[0]
    counts = np.bincount(flat, weights=weights, minlength=int(np.prod(shape)))
    return counts.astype(np.float64, copy=False).reshape(shape)


def marginals(
    codes: np.ndarray, domain: Domain, cliques: Iterable[Iterable[str]], weights: np.ndarray | None = None
) -> dict[Clique, np.ndarray]:
    """Contingency tables of many cliques, reusing work where it is cheaper.

    A clique contained in an already counted clique whose table has fewer cells
    than there are records is obtained by summing that table instead of another
    pass over the data (e.g. all 2-way marginals from the 3-way ones).

    Returns
    -------
    dict mapping each canonical clique to its table
    """
    wanted = {domain.canonical(c) for c in cliques}
    n = codes.shape[0]
    done: dict[Clique, np.ndarray] = {}
    # Largest first, so that subsets can be summed out of their supersets.
    for clique in sorted(wanted, key=lambda c: (-len(c), -domain.size(c))):
        source = None
        for cand, table in done.items():
            if table.size < n and set(clique) <= set(cand) and (source is None or table.size < done[source].size):
                source = cand
        if source is None:
            done[clique] = marginal(codes, domain, clique, weights)
        else:
            axes = tuple(i for i, a in enumerate(source) if a not in clique)
            done[clique] = done[source].sum(axis=axes)
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
    """
    out: set[Clique] = set()
    for c in cliques:
        c = domain.canonical(c) if domain is not None else tuple(c)
        for k in range(1, len(c) + 1):
            out.update(itertools.combinations(c, k))
    return sorted(out, key=lambda c: (len(c), c))


def maximal_cliques(cliques: Iterable[Iterable[str]]) -> list[Clique]:
    """The cliques not contained in another one (first occurrence kept, order preserved)."""
    cliques = [tuple(c) for c in cliques]
    sets = [frozenset(c) for c in cliques]
    out, seen = [], set()
    for c, s in zip(cliques, sets):
        if s in seen or any(s < t for t in sets):
            continue
        seen.add(s)
        out.append(c)
    return out
