"""Which pandas categorical dtypes carry a domain that may be used without a privacy leak.

A synthesizer takes a column's domain from its ``CategoricalDtype`` when no
``domain=`` entry names it.  That is safe only when the categories are public
metadata or were released with differential privacy — which is how the DP
preprocessing steps (:mod:`skdpsynth.preprocessing`) hand a domain on.  A
dtype made by ``X.astype("category")`` takes its categories from the data
itself, which is not private.  The DP steps therefore mark the dtypes they
produce with :func:`mark_public`, and the synthesizers ask :func:`is_public`
before trusting a dtype; an unmarked one is treated as read from the data (a
:class:`~skdpsynth.privacy.PrivacyLeakWarning`, recorded in the ledger).

Marks are held by value for the life of the process (two dtypes with the
same categories and order are the same domain, and a domain that was once
public or released stays so).  They are not carried by pickles: a frame
transformed in one process and fitted in another (e.g. a joblib worker) is
warned about, unless the DP step runs in the same process, as it does inside
a :class:`~skdpsynth.pipeline.SynthesisPipeline`.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["mark_public", "is_public"]

_PUBLIC: set = set()


def _key(dtype: pd.CategoricalDtype):
    return (bool(dtype.ordered), tuple(dtype.categories.tolist()), str(dtype.categories.dtype))


def mark_public(dtype: pd.CategoricalDtype) -> pd.CategoricalDtype:
    """Record that ``dtype``'s categories are public metadata or a DP release; returns ``dtype``.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdpsynth.privacy.metadata import is_public, mark_public
    >>> dtype = mark_public(pd.CategoricalDtype(["no", "yes"]))
    >>> is_public(pd.Series(["yes", "no"], dtype=dtype).dtype)
    True
    >>> is_public(pd.Series(["x", "y", "z"]).astype("category").dtype)
    False
    """
    if not isinstance(dtype, pd.CategoricalDtype):
        raise TypeError(f"Expected a pandas CategoricalDtype, got {type(dtype).__name__}.")
    _PUBLIC.add(_key(dtype))
    return dtype


def is_public(dtype) -> bool:
    """True if ``dtype`` is a ``CategoricalDtype`` whose categories were marked by :func:`mark_public`.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from skdpsynth.privacy.metadata import is_public, mark_public
    >>> dtype = pd.CategoricalDtype(["child", "adult", "senior"])
    >>> is_public(dtype), is_public(np.dtype("int64"))
    (False, False)
    >>> _ = mark_public(dtype)
    >>> is_public(pd.CategoricalDtype(["child", "adult", "senior"]))  # marks are held by value
    True
    """
    return isinstance(dtype, pd.CategoricalDtype) and _key(dtype) in _PUBLIC
