"""Generating records from a graphical model.

Attributes are generated one at a time, walking the junction tree from the
root: each new attribute is drawn conditionally on the attributes of its
clique that already have values (its separator and the clique's earlier new
attributes), which is exact for the model because the separator makes the
clique independent of everything generated before it.

Two methods, both giving exactly the requested number of records:

``"round"`` (randomized rounding, Private-PGM's default)
    Records sharing the values of the conditioning attributes form a group
    of size ``n_g``; the group's expected counts ``n_g · p(v | g)`` are rounded
    down and the remaining records are given to values chosen without
    replacement with probabilities proportional to the fractional parts.  The
    synthetic marginals then match the model's to within rounding.
``"sample"``
    Every record draws its value independently from ``p(v | g)``.

Everything is vectorised over groups and records (Gumbel-top-k for the
weighted draws without replacement, inverse-CDF search for i.i.d. draws).
"""
from __future__ import annotations

import numpy as np

from ..utils import check_random_state
from .junction_tree import sum_out

__all__ = ["sample_model", "randomized_round", "conditional_draw"]


def randomized_round(expected: np.ndarray, totals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Round each row of ``expected`` to integers summing to ``totals`` (row-wise).

    Row ``g`` keeps ``floor(expected[g])`` and adds one to ``totals[g] − Σ floor``
    cells drawn without replacement with probability proportional to the
    fractional parts (Gumbel-top-k).

    Parameters
    ----------
    expected : ndarray of shape (G, k)
        Non-negative, row sums equal to ``totals`` (up to float error).
    totals : ndarray of int, shape (G,)
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (G, k)

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical import randomized_round
    >>> expected = np.array([[1.5, 2.5, 1.0], [0.2, 0.3, 2.5]])
    >>> counts = randomized_round(expected, np.array([5, 3]), np.random.default_rng(0))
    >>> counts.tolist(), counts.sum(axis=1).tolist()
    ([[1, 3, 1], [1, 0, 2]], [5, 3])
    """
    floor = np.floor(expected)
    frac = expected - floor
    counts = floor.astype(np.int64)
    extra = totals - counts.sum(axis=1)
    # Float error can leave a row one short or over; never below zero cells.
    with np.errstate(divide="ignore"):
        keys = np.log(frac) + rng.gumbel(size=frac.shape)
    keys[frac <= 0] = -np.inf
    order = np.argsort(-keys, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(frac.shape[1])[None, :], axis=1)
    counts += (rank < extra[:, None]).astype(np.int64)
    short = totals - counts.sum(axis=1)
    if np.any(short != 0):
        # Only reachable through float error (fractions not adding up to `extra`):
        # fix the few affected rows on their most probable cell.
        rows = np.nonzero(short)[0]
        top = np.argmax(expected[rows], axis=1)
        counts[rows, top] = np.maximum(counts[rows, top] + short[rows], 0)
    return counts


def conditional_draw(
    group: np.ndarray, table: np.ndarray, method: str, rng: np.random.Generator
) -> np.ndarray:
    """Draw one value per record from ``table[group[i]]`` (a row of non-negative weights).

    Parameters
    ----------
    group : ndarray of int, shape (n,)
        Row of ``table`` each record conditions on.
    table : ndarray of shape (G, k)
        Unnormalised conditional distributions (rows with zero mass are uniform).
    method : {"round", "sample"}
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int, shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical.sampling import conditional_draw
    >>> group = np.array([0, 0, 0, 0, 1, 1])
    >>> table = np.array([[1.0, 1.0], [0.0, 2.0]])
    >>> values = conditional_draw(group, table, "round", np.random.default_rng(0))
    >>> values.tolist()
    [1, 0, 0, 1, 1, 1]
    >>> np.bincount(values[:4], minlength=2).tolist()  # group 0 split exactly 2 / 2
    [2, 2]
    """
    n = group.size
    k = table.shape[1]
    # np.unique(group, return_inverse=True, return_counts=True) without its sort: the groups are table rows.
    all_sizes = np.bincount(group, minlength=table.shape[0])
    used = np.flatnonzero(all_sizes)
    position = np.zeros(all_sizes.size, dtype=np.intp)
    position[used] = np.arange(used.size)
    inverse, sizes = position[group], all_sizes[used]
    probs = table[used]
    mass = probs.sum(axis=1, keepdims=True)
    probs = np.where(mass > 0, probs / np.where(mass > 0, mass, 1.0), 1.0 / k)
    if method == "sample":
        cdf = np.cumsum(probs, axis=1)
        cdf[:, -1] = 1.0
        # Offsetting each group's CDF by its index makes one sorted array to search.
        offsets = np.arange(used.size)[:, None]
        flat = (cdf + offsets).ravel()
        u = rng.random(n) + inverse
        pos = np.searchsorted(flat, u, side="right")
        return np.minimum(pos - inverse * k, k - 1)
    if method != "round":
        raise ValueError(f"method must be 'round' or 'sample', got {method!r}.")
    counts = randomized_round(probs * sizes[:, None], sizes, rng)
    # Records in a random order, then stably grouped: the i-th record of group g
    # takes the i-th value of g's run of rounded counts.
    perm = rng.permutation(n)
    by_group = perm[np.argsort(inverse[perm], kind="stable")]
    values = np.repeat(np.tile(np.arange(k), used.size), counts.ravel())
    out = np.empty(n, dtype=np.intp)
    out[by_group] = values
    return out


def sample_model(model, n_records: int | None = None, method: str = "round", random_state=None) -> np.ndarray:
    """Synthetic records from a :class:`~skdpsynth.graphical.GraphicalModel`.

    Parameters
    ----------
    model : GraphicalModel
    n_records : int, optional
        Number of records (default: the model's total, rounded).
    method : {"round", "sample"}
        Randomized rounding or i.i.d. sampling (see the module docstring).
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    ndarray of int, shape (n_records, len(model.domain)), columns in domain order

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel, sample_model
    >>> dom = Domain(["a", "b"], [2, 2])
    >>> model = GraphicalModel(dom, {("a", "b"): np.log([[1.0, 1.0], [1.0, 5.0]])}, total=80)
    >>> data = sample_model(model, random_state=0)
    >>> data.shape
    (80, 2)
    >>> np.bincount(data[:, 1]).tolist()  # the model's marginal of b is [20, 60]
    [20, 60]
    """
    if method not in ("round", "sample"):
        raise ValueError(f"method must be 'round' or 'sample', got {method!r}.")
    rng = check_random_state(random_state)
    n = int(round(model.total)) if n_records is None else int(n_records)
    if n < 0:
        raise ValueError(f"n_records must be >= 0, got {n}.")
    dom = model.domain
    jt = model.junction_tree
    marginals = model.clique_marginals
    data = np.zeros((n, len(dom)), dtype=np.intp, order="F")
    done: set[str] = set()
    for i, clique in enumerate(jt.cliques):  # breadth-first from the root
        for attr in clique:
            if attr in done:
                continue
            cond = [a for a in clique if a in done]
            table = sum_out(marginals[i], clique, cond + [attr])
            # Conditioning attributes first, the new one last: (G, k).
            axes = [dom.canonical(cond + [attr]).index(a) for a in cond + [attr]]
            table = np.transpose(table, axes).reshape(-1, dom[attr])
            if cond:
                group = np.ravel_multi_index(tuple(data[:, dom.index(a)] for a in cond), tuple(dom[a] for a in cond))
            else:
                group = np.zeros(n, dtype=np.intp)
            data[:, dom.index(attr)] = conditional_draw(group, table, method, rng) if n else 0
            done.add(attr)
    return np.ascontiguousarray(data)


def sample_restricted(model, allowed, n_records: int, method: str = "round", random_state=None) -> np.ndarray:
    """Synthetic records from ``model`` given that each attribute in ``allowed`` takes an allowed value.

    Draws from :meth:`GraphicalModel.restrict <skdpsynth.graphical.GraphicalModel.restrict>` and maps each
    restricted code back to its value, so every record meets the conditions.

    Parameters
    ----------
    model : GraphicalModel
    allowed : mapping of attribute to bool array
        One mask over each conditioned attribute's codes.
    n_records : int
    method : {"round", "sample"}
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    ndarray of int, shape (n_records, len(model.domain)), columns in domain order

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth import Domain
    >>> from skdpsynth.graphical import GraphicalModel, sample_restricted
    >>> dom = Domain(["a", "b"], [3, 2])
    >>> model = GraphicalModel(dom, {("a", "b"): np.zeros((3, 2))}, total=60)
    >>> data = sample_restricted(model, {"a": np.array([True, False, True])}, 60, random_state=0)
    >>> np.bincount(data[:, 0], minlength=3).tolist()
    [30, 0, 30]
    """
    codes = model.restrict(allowed).synthetic_data(n_records, method=method, random_state=random_state)
    for attr, mask in allowed.items():
        j = model.domain.index(attr)
        codes[:, j] = np.flatnonzero(np.asarray(mask, dtype=bool))[codes[:, j]]
    return codes
