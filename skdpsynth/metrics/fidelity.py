"""Fidelity of synthetic data: distances between real and synthetic marginals.

Both metrics compare the normalised contingency tables of a set of cliques
(all ``k``-way marginals for each requested ``k``, or an explicit list) and
average a per-marginal distance.  They are evaluation tools: they read the real
data in the clear and are not differentially private.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import rel_entr

from ..domain import Domain
from ..marginals import as_codes, kway_cliques, marginals

__all__ = ["marginal_tvd", "kl_divergence"]


def marginal_tvd(
    real,
    synthetic,
    ways: int | Sequence[int] = (1, 2, 3),
    domain: Domain | Mapping[str, int] | None = None,
    cliques: Iterable[Iterable[str]] | None = None,
) -> float | dict[int, float]:
    """Average total variation distance between real and synthetic marginals.

    The TVD of one marginal is ``0.5 * sum(|p - q|)`` over its cells, with
    ``p`` and ``q`` the real and synthetic counts each divided by its number of
    records; it lies in ``[0, 1]``.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame or 2-D integer array
        The two tables.  DataFrames must have the same columns (any order);
        arrays hold integer codes with columns in ``domain`` order.
    ways : int or sequence of int, default (1, 2, 3)
        Marginal orders ``k``: every ``k``-attribute marginal is compared.
    domain : Domain or dict {column: size}, optional
        Codes ``0 .. size - 1`` per column.  If omitted and every column of
        ``real`` has a pandas ``CategoricalDtype``, its categories define the
        domain (``synthetic`` values are matched to them by value and must
        lie in them); otherwise each column is encoded jointly over the values
        seen in either table.
    cliques : iterable of tuples of column names, optional
        Compare exactly these marginals instead of ``ways``.

    Returns
    -------
    float or dict
        * ``ways`` an int: the mean TVD over all ``ways``-way marginals;
        * ``ways`` a sequence: ``{k: mean TVD over all k-way marginals}``;
        * ``cliques`` given (``ways`` ignored): the mean TVD over ``cliques``.

    Raises
    ------
    ValueError
        If either table has no rows, the DataFrame columns differ, the data do
        not fit the domain, or a ``k`` is outside ``1 .. n_columns``.

    Examples
    --------
    >>> import pandas as pd
    >>> real = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1]})
    >>> synth = pd.DataFrame({"a": [0, 0, 0, 1], "b": [0, 1, 0, 1]})
    >>> marginal_tvd(real, synth, ways=1)
    0.125
    >>> marginal_tvd(real, synth, ways=(1, 2))
    {1: 0.125, 2: 0.25}
    >>> marginal_tvd(real, synth, cliques=[("b",)])
    0.0
    """

    def tvd(p, q):
        return 0.5 * np.abs(p - q).sum()

    return _average(real, synthetic, ways, domain, cliques, tvd)


def kl_divergence(
    real,
    synthetic,
    ways: int | Sequence[int] = (1, 2, 3),
    domain: Domain | Mapping[str, int] | None = None,
    cliques: Iterable[Iterable[str]] | None = None,
    smoothing: float = 1e-10,
) -> float | dict[int, float]:
    """Average Kullback-Leibler divergence ``KL(p_real || q_synthetic)`` over marginals, in nats.

    ``q`` is smoothed so that cells the synthetic data never produced do not
    make the divergence infinite: ``q' = (q + smoothing) / (1 + smoothing *
    n_cells)``.  The default pseudo-probability ``1e-10`` is the usual
    "epsilon" convention: unlike a pseudo-count (e.g. 0.5, Jeffreys) it does
    not depend on the sample or table size, so it barely moves ``q`` even on
    marginals with far more cells than records (a 3-way Adult marginal has up to
    ``10**6`` cells), while a real cell of mass ``p`` missing from the
    synthetic data costs about ``p * log(p / 1e-10)``.

    Parameters
    ----------
    real, synthetic, ways, domain, cliques
        As in :func:`marginal_tvd` (same input and return conventions).
    smoothing : float, default 1e-10
        Pseudo-probability added to every synthetic cell; ``0`` gives the
        unsmoothed divergence, ``inf`` when a real cell is missing.

    Returns
    -------
    float or dict
        As in :func:`marginal_tvd`.

    Examples
    --------
    >>> import pandas as pd
    >>> real = pd.DataFrame({"a": [0, 0, 1, 1]})
    >>> round(kl_divergence(real, pd.DataFrame({"a": [0, 1, 1, 1]}), ways=1), 6)
    0.143841
    >>> kl_divergence(real, real, ways=1)
    0.0
    """
    if not smoothing >= 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing}.")

    def kl(p, q):
        q = (q + smoothing) / (1.0 + smoothing * q.size)
        return rel_entr(p, q).sum()  # rel_entr takes 0 * log(0 / q) = 0

    return _average(real, synthetic, ways, domain, cliques, kl)


def _average(real, synthetic, ways, domain, cliques, divergence: Callable[[np.ndarray, np.ndarray], float]):
    """Encode both tables, count the marginals once, and average ``divergence`` per group."""
    codes_r, codes_s, dom = _encode(real, synthetic, domain)
    if cliques is not None:
        groups = {None: [dom.canonical(c) for c in cliques]}
        if not groups[None]:
            raise ValueError("cliques is empty.")
    else:
        ks, scalar = _check_ways(ways, len(dom))
        groups = {k: kway_cliques(dom, k) for k in ks}
    wanted = {c for cs in groups.values() for c in cs}
    # One batched pass per table: lower-order marginals are summed out of higher ones.
    tab_r, tab_s = marginals(codes_r, dom, wanted), marginals(codes_s, dom, wanted)
    n_r, n_s = len(codes_r), len(codes_s)
    per_clique = {c: float(divergence(tab_r[c] / n_r, tab_s[c] / n_s)) for c in wanted}
    out = {k: float(np.mean([per_clique[c] for c in cs])) for k, cs in groups.items()}
    return out[None] if cliques is not None else (out[ks[0]] if scalar else out)


def _check_ways(ways, n_columns: int | None = None) -> tuple[list[int], bool]:
    """``ways`` as a list of ints in ``1 .. n_columns``, and whether it was a scalar."""
    scalar = np.ndim(ways) == 0
    ks = [ways] if scalar else list(ways)
    top = np.inf if n_columns is None else n_columns
    if not ks or any(not isinstance(k, (int, np.integer)) or not 1 <= k <= top for k in ks):
        bound = "positive" if n_columns is None else f"in 1..{n_columns} (the number of columns)"
        raise ValueError(f"ways must be an int or a non-empty sequence of ints {bound}, got {ways!r}.")
    return [int(k) for k in ks], scalar


def _encode(real, synthetic, domain) -> tuple[np.ndarray, np.ndarray, Domain]:
    """Both tables as integer codes over one shared domain."""
    for name, X in (("real", real), ("synthetic", synthetic)):
        if len(X) == 0:
            raise ValueError(f"The {name} data have no rows.")
    if domain is not None:
        dom = domain if isinstance(domain, Domain) else Domain.from_dict(domain)
        if isinstance(real, pd.DataFrame) and isinstance(synthetic, pd.DataFrame):
            # as_codes takes category codes as they are; they must mean the same thing in both.
            for a in dom:
                r, s = getattr(real.get(a), "dtype", None), getattr(synthetic.get(a), "dtype", None)
                both = isinstance(r, pd.CategoricalDtype) and isinstance(s, pd.CategoricalDtype)
                if both and not r.categories.equals(s.categories):
                    raise ValueError(f"Column {a!r} has different categories in the real and synthetic data.")
        return as_codes(real, dom), as_codes(synthetic, dom), dom

    real, synthetic = pd.DataFrame(real), pd.DataFrame(synthetic)
    if set(real.columns) != set(synthetic.columns) or real.columns.has_duplicates or synthetic.columns.has_duplicates:
        raise ValueError(
            f"real and synthetic must have the same (unique) columns; got {list(real.columns)} "
            f"and {list(synthetic.columns)}."
        )
    cols = list(real.columns)
    if all(isinstance(real[c].dtype, pd.CategoricalDtype) for c in cols):
        dom = Domain(cols, [max(len(real[c].cat.categories), 1) for c in cols])
        for c in cols:
            s, cats = synthetic[c], real[c].cat.categories
            if isinstance(s.dtype, pd.CategoricalDtype) and set(s.cat.categories) != set(cats):
                raise ValueError(f"Column {c!r} has different categories in the real and synthetic data.")
            if not (s.isin(cats) | s.isna()).all():
                raise ValueError(f"Column {c!r} of the synthetic data has values outside its categories {list(cats)}.")
        # Match synthetic values to the real categories by value (their order may differ).
        synthetic = pd.DataFrame({c: pd.Categorical(synthetic[c], categories=real[c].cat.categories) for c in cols})
        return as_codes(real, dom), as_codes(synthetic, dom), dom

    # Joint encoding over the values of both tables: fine for evaluation, the evaluator holds both.
    n = len(real)
    codes, sizes = [], []
    for c in cols:
        joint, uniques = pd.factorize(pd.concat([real[c], synthetic[c]], ignore_index=True), use_na_sentinel=False)
        codes.append(joint)
        sizes.append(len(uniques))
    codes = np.asfortranarray(np.column_stack(codes), dtype=np.intp)
    return codes[:n], codes[n:], Domain(cols, sizes)
