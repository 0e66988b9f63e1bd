"""Hostile inputs × every estimator (issue 43): a correct result, or a clear error raised by skdpsynth itself.

Each cell fits one estimator on one input.  It passes when the fit succeeds (and a synthesizer then samples), or
when it raises a ``ValueError`` or ``TypeError`` from skdpsynth's own code (not from numpy, pandas or
scikit-learn deep inside) whose message quotes neither the record count nor a value that only the data holds.
Tables have 137 records: no message may contain "137".
"""
from __future__ import annotations

import traceback
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer, TableDiscretizer

N = 137   # the private record count of every table below: no message may quote it
SECRET = 987_654.25   # a value only the data holds
PACKAGE = str(Path(__file__).resolve().parent.parent / "skdpsynth")


def _codes(n: int = N, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 4, n), "c": rng.integers(0, 2, n)})


def _with(frame: pd.DataFrame, column: str, row: int, value) -> pd.DataFrame:
    frame = frame.copy()
    if not isinstance(value, (int, np.integer)):
        frame[column] = frame[column].astype(object if isinstance(value, str) else float)
    frame.loc[row, column] = value
    return frame


INPUTS = {
    "no columns": lambda: pd.DataFrame(index=range(N)),
    "no rows, no domain": lambda: _codes().iloc[:0],
    "no rows, no domain, a text column": lambda: _codes().iloc[:0].assign(c=pd.Series([], dtype=object)),
    "a missing value": lambda: _with(_codes(), "b", 5, np.nan),
    "an infinite value": lambda: _with(_codes(), "b", 5, np.inf),
    "a continuous column": lambda: _codes().assign(b=np.linspace(0, SECRET, N)),
    "a huge integer code": lambda: _with(_codes(), "b", 5, 10**12),
    "a negative integer code": lambda: _with(_codes(), "b", 5, -3),
    "mixed column names": lambda: _codes().rename(columns={"a": 0}),
    "repeated column names": lambda: _codes().set_axis(["a", "a", "c"], axis=1),
    "a 1-D array": lambda: np.arange(N),
    "a 3-D array": lambda: np.zeros((N, 2, 2), dtype=int),
    "a sparse matrix": lambda: sp.csr_matrix(_codes().to_numpy()),
    "a list of rows": lambda: _codes().to_numpy().tolist(),
    "one column": lambda: _codes()[["a"]],
    "strings and numbers in a column": lambda: _with(_codes(), "b", 5, "x"),
    "a boolean column": lambda: _codes().assign(c=_codes()["c"].astype(bool)),
    "not a table": lambda: "not a table",
}

SYNTHESIZERS = {
    "MST": lambda: MSTSynthesizer(random_state=0),
    "AIM": lambda: AIMSynthesizer(random_state=0, max_iters=20, final_iters=20),
    "PPSyn": lambda: PartitionSynthesizer(random_state=0, max_iters=20, final_iters=20),
    "View": lambda: ViewSynthesizer(random_state=0),
    "Hybrid": lambda: HybridSynthesizer(random_state=0, max_iters=20, final_iters=20),
    "VertiMRF": lambda: VerticalMRFSynthesizer(random_state=0, party_columns=2, n_sketches=32),
}
TRANSFORMERS = {
    "DPKBinsDiscretizer": lambda: DPKBinsDiscretizer(n_bins=3, epsilon=1.0, random_state=0),
    "DPCategoricalEncoder": lambda: DPCategoricalEncoder(epsilon=1.0, delta=1e-6, random_state=0),
    "TableDiscretizer": lambda: TableDiscretizer(n_bins=3, epsilon=1.0, delta=1e-6, random_state=0),
}
ESTIMATORS = {**SYNTHESIZERS, **TRANSFORMERS}


def _raised_by_skdpsynth(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a ``raise`` statement of skdpsynth's own code (not from numpy, pandas or a
    builtin operation failing inside it, such as a sort of names that do not compare)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(PACKAGE) and frames[-1].line.startswith("raise")


@pytest.mark.parametrize("estimator", list(ESTIMATORS))
@pytest.mark.parametrize("hostile", list(INPUTS))
def test_a_hostile_input_gets_a_result_or_a_clear_error(hostile, estimator):
    X = INPUTS[hostile]()
    est = ESTIMATORS[estimator]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # leak and reproducibility warnings are expected of small fits
        try:
            est.fit(X)
            if estimator in SYNTHESIZERS:
                assert len(est.sample(5)) == 5
            else:
                est.transform(X)
        except (ValueError, TypeError) as exc:
            message = str(exc)
            assert _raised_by_skdpsynth(exc), f"raised outside skdpsynth: {type(exc).__name__}: {message}"
            assert str(N) not in message and str(SECRET) not in message, message


TABLES = [name for name, make in INPUTS.items() if isinstance(make(), pd.DataFrame)]


@pytest.mark.parametrize("method", ["mst", "view"])
@pytest.mark.parametrize("hostile", TABLES)
def test_the_command_line_gets_a_result_or_one_line_and_exit_2(hostile, method, tmp_path, capsys):
    from skdpsynth.cli import main

    data = tmp_path / "data.csv"
    INPUTS[hostile]().to_csv(data, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["synthesize", str(data), "--infer-schema", "--method", method, "-o", str(tmp_path / "o.csv"),
                     "-q", "--epsilon", "1"])
    err = capsys.readouterr().err.strip()
    assert code in (0, 2)
    if code == 2:
        assert err.startswith("skdpsynth: error: ") and "\n" not in err, err
        assert str(N) not in err and str(SECRET) not in err, err
