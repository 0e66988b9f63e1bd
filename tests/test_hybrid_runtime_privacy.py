"""Issue 38, items 2 and 7: no figure of a fitted HybridSynthesizer or VerticalMRFSynthesizer reveals a private
record count, and out-of-core input to them is refused before anything is read or computed.

Item 2: with a roster simulated from ``X`` and ``secure_computation="cryptographic"``, ``runtime_``'s byte counts grew
by a fixed number of bytes per record (the secure product relays records x cells words), so a pickled model gave n
exactly. Item 7: both methods died with ``AttributeError: 'DaskCodes' object has no attribute 'shape'`` on a dask
frame, and VerticalMRFSynthesizer computed a list of per-party dask frames (length included) in ``np.asarray``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("cryptography")
# Not skipped when missing: dask[dataframe] (pyarrow with it) is in the test extra CI installs.
import dask.dataframe as dd

from skdpsynth import HybridSynthesizer, VerticalMRFSynthesizer
from skdpsynth.federated import HybridPartition

COLUMNS = ["a", "b", "c", "d"]
DOMAIN = {c: 3 for c in COLUMNS}
# K = S = 2: the column groups {a, b} and {c, d} share every cross-group marginal, measured by the secure product.
RECIPE = {"n_slices": 2, "n_vertical": 2}
FAST = dict(max_rounds=6, max_iters=30, final_iters=30, secure_computation="cryptographic")


def _records(n_extra: int) -> pd.DataFrame:
    """1,237 records, plus ``n_extra`` more appended (the same first 1,237 rows in every call)."""
    rng = np.random.default_rng(38)
    codes = rng.integers(0, 3, size=(1237 + n_extra, len(COLUMNS)))
    codes[:, 1] = (codes[:, 0] + (rng.random(len(codes)) < 0.2)) % 3   # some structure for the model to find
    return pd.DataFrame(codes, columns=COLUMNS)


def _fit(X, partition):
    return HybridSynthesizer(1.0, domain=DOMAIN, random_state=5, **FAST).fit(X, partition=partition)


def test_runtime_of_a_simulated_roster_holds_no_figure_that_depends_on_the_record_count():
    small, large = _records(0), _records(4)   # 1,237 and 1,241 records
    simulated = [_fit(X, RECIPE) for X in (small, large)]
    public = [_fit(X, HybridPartition.grid(len(X), COLUMNS, random_state=0, **RECIPE)) for X in (small, large)]

    # Control: on these sizes the byte counts do differ, by the records alone (same layout, same requests).
    assert public[0].runtime_["requests"] == public[1].runtime_["requests"]
    assert public[1].runtime_["bytes_sent"] > public[0].runtime_["bytes_sent"]
    assert public[1].runtime_["bytes_received"] > public[0].runtime_["bytes_received"]
    # A public roster's size is public: its byte counts are kept.
    assert {"bytes_sent", "bytes_received"} <= set(public[0].runtime_)

    # A simulated roster's size is the private n: nothing in runtime_ changes with it, and it keeps only what the
    # public layout and the number of measurements fix.
    assert simulated[0].runtime_ == simulated[1].runtime_
    assert simulated[0].runtime_ == {"backend": "local", "n_parties": 4,
                                     "requests": simulated[0].runtime_["requests"]}


# -- item 7: out-of-core input ---------------------------------------------------------------------------------


class PartitionRead(Exception):
    """Raised by every partition of the frame below: any computation of it (its length included) fails with it."""


def _unreadable_frame():
    meta = pd.DataFrame({c: pd.Series(dtype=np.int64) for c in COLUMNS})

    def read(i):
        raise PartitionRead(f"partition {i} was read")

    frame = dd.from_map(read, [0, 1, 2], meta=meta, enforce_metadata=False)
    with pytest.raises(PartitionRead):   # the frame is a working trap: its length needs a computation
        len(frame)
    return frame


def _synthesizers():
    return {
        "hybrid": HybridSynthesizer(1.0, domain=DOMAIN, partition=RECIPE, secure_computation="cryptographic"),
        "vertimrf": VerticalMRFSynthesizer(1.0, 1e-6, domain=DOMAIN, party_columns=2),
    }


@pytest.mark.parametrize("method", ["hybrid", "vertimrf"])
@pytest.mark.parametrize("form", ["dask frame", "parquet path", "per-party dask frames"])
def test_out_of_core_input_is_refused_before_anything_is_read(method, form, tmp_path, monkeypatch):
    def no_read(*args, **kwargs):
        raise PartitionRead("the Parquet files were opened")

    monkeypatch.setattr(dd, "read_parquet", no_read)
    frame = _unreadable_frame()
    if form == "dask frame":
        X = frame
    elif form == "parquet path":
        X = str(tmp_path / "records" / "*.parquet")
    elif method == "hybrid":   # {party: frame with an ID column}, the form of per-party pandas frames
        X = {"left": frame[["a", "b"]].assign(ID=1), "right": frame[["c", "d"]].assign(ID=1)}
    else:                      # [frame of party0, frame of party1]
        X = [frame[["a", "b"]], frame[["c", "d"]]]
    synthesizer = _synthesizers()[method]
    with pytest.raises(TypeError, match=r"does not fit out-of-core data .*Pass a pandas DataFrame"):
        synthesizer.fit(X)
    assert not hasattr(synthesizer, "privacy_ledger_")   # refused before any work: nothing was spent
