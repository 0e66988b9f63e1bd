"""Input handling shared by the preprocessing transformers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp


def as_frame(X, names=None, what: str = "X", *, keep_object_lists: bool = False) -> pd.DataFrame:
    """``X`` as a DataFrame with unique column names.

    A DataFrame is used as it is, a Series as one column; a 2-D array gets
    ``names`` (when they fit) or ``x0, x1, ...``.  With ``keep_object_lists``
    a non-array input (e.g. a list of mixed labels) becomes an object array,
    so numbers and strings keep their own types.  Sparse input is rejected.
    """
    if sp.issparse(X):
        raise TypeError("Sparse input is not supported; pass a DataFrame.")
    if isinstance(X, pd.DataFrame):
        frame = X
    elif isinstance(X, pd.Series):
        frame = X.to_frame()
    else:
        arr = np.asarray(X, dtype=object) if keep_object_lists and not isinstance(X, np.ndarray) else np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"{what} must be a DataFrame or a 2-D array, got an array of shape {arr.shape}.")
        if names is None or len(names) != arr.shape[1]:
            names = [f"x{j}" for j in range(arr.shape[1])]
        frame = pd.DataFrame(arr, columns=list(names))
    if frame.columns.has_duplicates:
        dup = list(frame.columns[frame.columns.duplicated()].unique())
        raise ValueError(f"{what} has duplicate column names {dup}.")
    return frame
