"""Out-of-core fitting through dask (issue 16): marginals and fits equal the in-memory ones exactly."""
import itertools
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

# Not skipped when missing: dask[dataframe,distributed] (pyarrow with it) is in the test extra CI installs.
import dask.dataframe as dd
import distributed
import pyarrow  # noqa: F401  (Parquet)

from skdpsynth import AIMSynthesizer, Domain, MSTSynthesizer
from skdpsynth.marginals import as_codes, marginal, marginals
from skdpsynth.outofcore import DaskCodes, as_dask_codes

N_ROWS = 20_000
COLORS = ["red", "green", "blue", "other"]


@pytest.fixture(scope="module")
def table():
    """20k rows, 6 columns: integer codes of several sizes and dtypes, string labels, a pandas Categorical."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, 3, N_ROWS)
    b = (a + rng.integers(0, 2, N_ROWS)) % 5
    frame = pd.DataFrame({
        "a": a.astype(np.int64),
        "b": b.astype(np.uint8),
        "c": rng.choice(np.array(COLORS), N_ROWS, p=[0.5, 0.3, 0.15, 0.05]),
        "d": pd.Categorical(rng.choice(["lo", "hi"], N_ROWS), categories=["lo", "hi"]),
        "e": (b * 7 + rng.integers(0, 3, N_ROWS)) % 40,
        "f": rng.integers(0, 2, N_ROWS).astype(np.int32),
    })
    domain = {"a": 3, "b": 5, "c": COLORS, "d": ["lo", "hi"], "e": 40, "f": 2}
    return frame, domain


def in_memory_codes(frame: pd.DataFrame, domain: dict) -> tuple[np.ndarray, Domain]:
    coded = pd.DataFrame({
        name: (pd.Index(spec).get_indexer(frame[name]) if isinstance(spec, list) else frame[name].to_numpy())
        for name, spec in domain.items()
    })
    dom = Domain(list(domain), [spec if isinstance(spec, int) else len(spec) for spec in domain.values()])
    return as_codes(coded, dom), dom


def write_parquet(frame: pd.DataFrame, directory, files: int = 3) -> None:
    directory.mkdir(exist_ok=True)
    for i, part in enumerate(np.array_split(np.arange(len(frame)), files)):
        frame.iloc[part].to_parquet(directory / f"part-{i}.parquet", index=False)


def test_marginals_equal_in_memory_exactly(table):
    frame, domain = table
    codes, dom = in_memory_codes(frame, domain)
    lazy = as_dask_codes(dd.from_pandas(frame, npartitions=7), domain)
    assert isinstance(lazy, DaskCodes) and lazy.npartitions == 7 and lazy.domain == dom
    cliques = [()] + [c for k in (1, 2, 3) for c in itertools.combinations(dom.attrs, k)]
    expected = marginals(codes, dom, cliques)
    got = marginals(lazy, dom, cliques)
    assert got.keys() == expected.keys()
    for c in cliques:
        assert got[c].dtype == expected[c].dtype and got[c].shape == expected[c].shape
        assert np.array_equal(got[c], expected[c]), c
    # A lone marginal, and a clique given out of order, as in memory.
    assert np.array_equal(marginal(lazy, dom, ("e", "b")), marginal(codes, dom, ("e", "b")))


def test_one_pass_per_request_and_kept_tables(table, monkeypatch):
    frame, domain = table
    lazy = as_dask_codes(dd.from_pandas(frame, npartitions=4), domain)
    calls = []
    count = DaskCodes._count
    monkeypatch.setattr(DaskCodes, "_count", lambda self, dom, cl: (calls.append(list(cl)), count(self, dom, cl)))
    dom = lazy.domain
    marginals(lazy, dom, [("a", "b"), ("c", "d", "e")])
    assert len(calls) == 1 and len(calls[0]) == 2
    marginals(lazy, dom, [("a",), ("d", "e"), ("a", "b")])  # contained in counted tables: no pass
    total = marginal(lazy, dom, ())
    assert isinstance(total, np.ndarray) and total.shape == () and float(total) == N_ROWS
    assert len(calls) == 1
    marginal(lazy, dom, ("a", "f"))
    assert calls[1:] == [[("a", "f")]]


def fitted_equal(lazy_fit, eager_fit) -> None:
    assert lazy_fit.tree_ == eager_fit.tree_
    assert lazy_fit.domain_ == eager_fit.domain_
    for clique in lazy_fit.model_.cliques:
        assert np.array_equal(lazy_fit.model_.project(clique), eager_fit.model_.project(clique))
    assert lazy_fit.n_records_ == eager_fit.n_records_
    pd.testing.assert_frame_equal(lazy_fit.sample(2000, random_state=1), eager_fit.sample(2000, random_state=1),
                                  check_dtype=False)


def mst(domain):
    return MSTSynthesizer(epsilon=1.0, domain=domain, max_iters=300, random_state=11)


def test_mst_on_dask_dataframe_equals_in_memory_fit(table, monkeypatch):
    frame, domain = table
    eager = mst(domain).fit(frame)
    passes = []
    count = DaskCodes._count
    monkeypatch.setattr(DaskCodes, "_count", lambda self, dom, cl: (passes.append(len(cl)), count(self, dom, cl)))
    lazy = mst(domain).fit(dd.from_pandas(frame, npartitions=5))
    fitted_equal(lazy, eager)
    assert lazy.privacy_ledger_.is_private
    assert lazy.privacy_ledger_.total_rho() == pytest.approx(eager.privacy_ledger_.total_rho(), rel=1e-12)
    # Two passes over the data: the 1-way marginals, then every pair of the compressed domain (the tree's from it).
    assert passes == [len(domain), len(domain) * (len(domain) - 1) // 2]
    assert list(lazy.feature_names_in_) == list(frame.columns)


def test_mst_on_parquet_directory_equals_in_memory_fit(table, tmp_path):
    frame, domain = table
    write_parquet(frame, tmp_path / "data")
    eager = mst(domain).fit(frame)
    fitted_equal(mst(domain).fit(str(tmp_path / "data")), eager)
    fitted_equal(mst(domain).fit(tmp_path / "data" / "*.parquet"), eager)  # a glob, as os.PathLike


def test_parquet_path_reads_the_domain_columns_only(table, tmp_path):
    frame, domain = table
    write_parquet(frame.assign(extra=np.arange(len(frame))), tmp_path / "data", files=2)
    sub = {a: domain[a] for a in ("a", "c", "e")}
    eager = mst(sub).fit(frame[list(sub)])
    fitted_equal(mst(sub).fit(str(tmp_path / "data")), eager)


def test_aim_on_dask_dataframe_equals_in_memory_fit(table):
    frame, domain = table
    sub = {a: domain[a] for a in ("a", "b", "c", "d")}

    def aim():
        return AIMSynthesizer(epsilon=2.0, domain=sub, rounds=8, max_iters=100, random_state=5)

    eager = aim().fit(frame[list(sub)])
    lazy = aim().fit(dd.from_pandas(frame[list(sub)], npartitions=3))
    assert lazy.selected_ == eager.selected_
    pd.testing.assert_frame_equal(lazy.sample(500, random_state=2), eager.sample(500, random_state=2),
                                  check_dtype=False)


def test_distributed_client_is_used(table):
    frame, domain = table
    eager = mst(domain).fit(frame)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        with distributed.get_task_stream(client) as stream:
            lazy = mst(domain).fit(dd.from_pandas(frame, npartitions=4))
    assert len(stream.data) >= 2 * 4  # two passes of 4 partitions ran on the cluster
    fitted_equal(lazy, eager)


def test_missing_domain_raises(table):
    frame, domain = table
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(ValueError, match="need their public domain"):
        MSTSynthesizer(random_state=0).fit(ddf)
    with pytest.raises(ValueError, match=r"lacks \['f'\]"):
        MSTSynthesizer(domain={a: s for a, s in domain.items() if a != "f"}, random_state=0).fit(ddf)
    with pytest.raises(ValueError, match="need their public domain"):
        MSTSynthesizer(random_state=0).fit("no/such/dir/*.parquet")  # before reading anything
    with pytest.raises(ValueError, match="do not pass y"):
        MSTSynthesizer(domain=domain, random_state=0).fit(ddf, frame["f"])


@pytest.mark.parametrize("column, value", [("c", "SECRET-LABEL"), ("e", 4127), ("a", -31)])
def test_out_of_domain_value_raises_without_quoting_it(table, column, value):
    frame, domain = table
    bad = frame.copy()
    if column == "c":
        bad[column] = bad[column].astype(object)
    bad.loc[12345, column] = value
    with pytest.raises(ValueError, match=f"Column '{column}' has values") as err:
        MSTSynthesizer(domain=domain, random_state=0).fit(dd.from_pandas(bad, npartitions=4))
    assert str(value) not in str(err.value)


def test_import_does_not_need_dask():
    code = (
        "import sys\n"
        "sys.modules['dask'] = None  # as if dask were not installed: importing it raises ImportError\n"
        "import numpy as np, pandas as pd\n"
        "import skdpsynth\n"
        "from skdpsynth import MSTSynthesizer\n"
        "X = pd.DataFrame({'a': np.arange(200) % 3, 'b': np.arange(200) % 2})\n"
        "MSTSynthesizer(domain={'a': 3, 'b': 2}, max_iters=20, random_state=0).fit(X).sample(5)\n"
        "assert not [m for m in sys.modules if m.startswith('dask.') or m == 'distributed'], 'dask imported'\n"
    )
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True)
