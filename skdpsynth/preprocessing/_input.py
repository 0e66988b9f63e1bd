"""Input and output handling shared by the preprocessing transformers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn import get_config


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
            # Not the shape: its length is the private record count.
            raise ValueError(f"{what} must be a DataFrame or a 2-D array, got an array with {arr.ndim} dimension(s). "
                             "Reshape your data, e.g. with array.reshape(-1, 1) for a single column.")
        if names is None or len(names) != arr.shape[1]:
            names = [f"x{j}" for j in range(arr.shape[1])]
        frame = pd.DataFrame(arr, columns=list(names))
    if frame.columns.has_duplicates:
        dup = list(frame.columns[frame.columns.duplicated()].unique())
        raise ValueError(f"{what} has duplicate column names {dup}.")
    return frame


def check_has_columns(frame: pd.DataFrame, owner: str) -> None:
    """Reject a table without columns (0 rows are fine: see the module docs of each step)."""
    if frame.shape[1] == 0:
        # Not the shape: its length is the private record count.
        raise ValueError(f"{owner} needs at least one column: got 0 feature(s) while a minimum of 1 is required.")


def fitted_frame(X, names, owner: str, what: str = "X", *, keep_object_lists: bool = False) -> pd.DataFrame:
    """``X`` with exactly the columns seen in fit, in fit order.

    A DataFrame (or Series) is matched by column name: a column seen in fit
    that is absent, or a column fit did not see, is a ``ValueError`` (the
    order may differ; the output is in fit order).  An array must have as
    many columns as fit saw and gets their names.
    """
    names = list(names)
    if isinstance(X, (pd.DataFrame, pd.Series)):
        frame = as_frame(X, what=what, keep_object_lists=keep_object_lists)
        known = set(names)
        present = set(frame.columns)
        missing = [c for c in names if c not in present]
        extra = [c for c in frame.columns if c not in known]
        if missing or extra:
            raise ValueError(f"{what} columns differ from those seen in fit: missing {missing}, unexpected {extra}. "
                             f"{owner} transforms exactly the columns it was fitted on (any order).")
        return frame if list(frame.columns) == names else frame[names]
    frame = as_frame(X, names, what, keep_object_lists=keep_object_lists)
    if frame.shape[1] != len(names):
        raise ValueError(f"{what} has {frame.shape[1]} features, but {owner} is expecting {len(names)} features "
                         "as input.")
    return frame


def select_columns(columns, frame: pd.DataFrame) -> list:
    """The columns a step works on: all of ``frame``'s for ``None``, else ``columns`` (validated), in input order."""
    if columns is None:
        return list(frame.columns)
    if isinstance(columns, (str, bytes)) or not np.iterable(columns):
        raise TypeError(f"columns must be None or a list of column names, got {columns!r}; write "
                        f"columns=[{columns!r}] for a single column.")
    given = list(columns)
    seen, dup = set(), []
    for c in given:
        try:
            if c in seen:
                dup.append(c)
            seen.add(c)
        except TypeError:
            raise TypeError(f"columns must hold column names (hashable), got {c!r}.") from None
    if dup:
        raise ValueError(f"columns has duplicate names {dup}.")
    absent = [c for c in given if c not in set(frame.columns)]
    if absent:
        raise ValueError(f"columns names columns that are not in X: {absent}; X has columns "
                         f"{list(frame.columns)}.")
    return [c for c in frame.columns if c in seen]


def param_scope(columns, everything: str = "in X") -> str:
    """How error messages name the columns a per-column parameter may name."""
    return everything if columns is None else "in columns= (the columns this step works on)"


def assemble(frame: pd.DataFrame, new: dict) -> pd.DataFrame:
    """``frame`` with the columns in ``new`` replaced (column order, index and other columns' dtypes kept)."""
    out = frame.copy(deep=False)
    for c, values in new.items():
        out[c] = values
    return out


def as_array(frame: pd.DataFrame) -> np.ndarray:
    """The output values as a NumPy array: ``Categorical`` columns as their values, in the categories' dtype.

    Integer codes (or labels that are all numbers) give a numeric array
    (``DataFrame.to_numpy()`` would give ``object`` for Categorical columns
    with different category lists); other labels and ``Interval`` bins give
    an ``object`` array, as do mixed columns.
    """
    plain = {c: pd.Index(frame[c].cat.categories.tolist()).dtype for c in frame.columns  # inferred, not object
             if isinstance(frame[c].dtype, pd.CategoricalDtype)}
    return (frame.astype(plain) if plain else frame).to_numpy()


class OutputMixin:
    """``set_output`` for the DP transformers, whose natural output is a DataFrame of ``Categorical`` columns.

    Without ``set_output`` (and with the global ``transform_output`` left at
    ``"default"``) ``transform`` returns a DataFrame: the synthesizers read
    each column's public domain from its ``CategoricalDtype``.
    ``set_output(transform="pandas")`` (or the global ``"pandas"``) gives the
    same DataFrame; ``set_output(transform="default")`` gives a NumPy array
    of the output values (see :func:`as_array`: bin codes or ``Interval``
    objects, category labels), as scikit-learn's own transformers return.
    The setting survives :func:`sklearn.base.clone`.
    """

    _OUTPUTS = ("default", "pandas")

    def set_output(self, *, transform=None):
        """Set the output container of ``transform`` and ``fit_transform``.

        Parameters
        ----------
        transform : {"default", "pandas"} or None, default=None
            ``"default"``: a NumPy array of the output values (an integer
            array for bin codes, ``object`` for labels or ``Interval`` bins);
            ``"pandas"``: a DataFrame of ``Categorical`` columns (the output
            without ``set_output``); ``None``: unchanged.

        Returns
        -------
        self
        """
        if transform is None:
            return self
        if transform not in self._OUTPUTS:
            raise ValueError(f"transform must be one of {list(self._OUTPUTS)} or None, got {transform!r}; "
                             f"{type(self).__name__} has no {transform!r} output.")
        self._output_container = transform
        return self

    def __sklearn_clone__(self):
        twin = super().__sklearn_clone__()
        if hasattr(self, "_output_container"):
            twin._output_container = self._output_container
        return twin

    def _wrap_output(self, frame: pd.DataFrame):
        container = getattr(self, "_output_container", None)
        if container is None:  # the global setting; its "default" is this class's default, a DataFrame
            container = get_config().get("transform_output", "default")
            if container == "default":
                return frame
        if container == "default":
            return as_array(frame)
        if container == "pandas":
            return frame
        raise ValueError(f"The {container!r} output is not supported by {type(self).__name__}: use "
                         "set_output(transform='pandas') or 'default'.")
