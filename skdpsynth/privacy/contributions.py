"""Bounding each person's contribution to at most ``k`` records (user-level differential privacy).

A synthesizer fitted with ``privacy_unit="user_id", max_contributions=k``
first keeps at most ``k`` records per value of ``user_id``, chosen uniformly
at random within each person, then drops the identifier.  Two data sets that
differ in all records of one person then give bounded tables that differ in
at most ``k`` records, and the record-level mechanism run on them at
``ρ/k²`` (zCDP) or ``ε/k`` (pure ε-DP) protects that person at ``ρ`` or ``ε``
(group privacy: Bun & Steinke 2016, Proposition 27; Dwork & Roth 2014,
Theorem 2.2).

Why the selection keeps the guarantee: every row gets an independent uniform
key and a person keeps the ``k`` rows of smallest key, so the rows kept for
one person are a uniformly random ``k``-subset of that person's rows (all of
them if they are ``k`` or fewer), independently of every other person.  Adding
a person therefore leaves the distribution of everyone else's kept rows
unchanged: couple the two selections on the other persons and the bounded
tables differ by the added person's ``min(count, k)`` rows only; the output
distribution is a mixture over the couplings, each within the group-privacy
bound, and the bound survives mixing (Rényi divergence is jointly
quasi-convex: van Erven & Harremoës 2014, Theorem 13).  A selection that
looked at other persons' rows (e.g. "keep the rows whose values are most
common") would not have this property.

See ``doc/user_level.md``.
"""
from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd

from ..utils import check_random_state

__all__ = ["bound_contributions", "person_codes"]


def person_codes(ids: pd.Series) -> np.ndarray:
    """One integer per row naming its person; a missing identifier (NaN, None) is a person of its own.

    Treating every missing identifier as its own person never merges two
    people; it is also the only choice that needs no decision from the data.

    Parameters
    ----------
    ids : pandas.Series
        The identifier column.

    Returns
    -------
    ndarray of int64
        Equal codes for equal identifiers; codes of missing identifiers are all distinct.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.privacy.contributions import person_codes
    >>> person_codes(pd.Series(["ann", "bob", "ann", None, None])).tolist()
    [0, 1, 0, 2, 3]
    """
    codes, uniques = pd.factorize(ids, use_na_sentinel=True)
    codes = codes.astype(np.int64)
    missing = codes < 0
    codes[missing] = len(uniques) + np.arange(int(missing.sum()), dtype=np.int64)
    return codes


def bound_contributions(frame: pd.DataFrame, privacy_unit: Hashable, max_contributions: int,
                        random_state=None) -> pd.DataFrame:
    """Keep at most ``max_contributions`` records per person, chosen uniformly at random within each person.

    Parameters
    ----------
    frame : pandas.DataFrame
        The records, with the identifier column ``privacy_unit``.
    privacy_unit : hashable
        The identifier column: records with equal values belong to one
        person; each record with a missing value is a person of its own
        (:func:`person_codes`).
    max_contributions : int
        ``k >= 1``: records kept per person at most (all of a person's
        records when they are ``k`` or fewer).
    random_state : None, int or numpy.random.Generator
        Source of the selection.  The selection is as secret as the noise:
        a synthesizer draws it from its noise generator (OS entropy unless
        ``random_state`` is set).

    Returns
    -------
    pandas.DataFrame
        The kept records, in their original order and with their index,
        without the identifier column.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.privacy.contributions import bound_contributions
    >>> frame = pd.DataFrame({"user": ["a"] * 5 + ["b"] * 2 + [None] * 2, "x": range(9)})
    >>> kept = bound_contributions(frame, "user", 3, random_state=0)
    >>> list(kept.columns), len(kept)   # a: 3 of 5, b: both, each missing identifier: itself
    (['x'], 7)
    >>> int(kept.index.isin(range(5)).sum())
    3
    """
    if privacy_unit not in frame.columns:
        raise ValueError(f"The privacy unit {privacy_unit!r} is not a column of the table.")
    k = int(max_contributions)
    if k < 1:
        raise ValueError(f"max_contributions must be >= 1, got {max_contributions!r}.")
    persons = person_codes(frame[privacy_unit])
    rng = check_random_state(random_state)
    # One independent uniform key per row: a person keeps its k smallest, a uniform k-subset of its own rows
    # whatever the other rows are (the keys of other persons' rows are never compared with its own).
    keys = rng.random(persons.size)
    order = np.lexsort((keys, persons))
    grouped = persons[order]
    n = grouped.size
    starts = np.ones(n, dtype=bool)
    starts[1:] = grouped[1:] != grouped[:-1]
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0)) if n else np.zeros(0, dtype=np.intp)
    keep = np.zeros(n, dtype=bool)
    keep[order] = np.arange(n) - first < k   # rank within the person, by key
    return frame.loc[keep, [c for c in frame.columns if c != privacy_unit]]
