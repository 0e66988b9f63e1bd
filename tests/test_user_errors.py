"""A user's mistakes get a clear error naming what to change, or a correct result (issue 43).

Each test here failed before its fix: a traceback from deep inside (numpy, math, a sort), a silent change, or
an error that named neither the parameter nor the column.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.params import MAX_EPSILON, InvalidParameterError
from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer, TableDiscretizer
from skdpsynth.synthesizers.vertical_mrf.sketches import dpfm_parameters
from skdpsynth.utils import MemoryLimitError

FAST = {
    MSTSynthesizer: {},
    AIMSynthesizer: {"max_iters": 20, "final_iters": 20},
    PartitionSynthesizer: {"max_iters": 20, "final_iters": 20},
    ViewSynthesizer: {},
    HybridSynthesizer: {"max_iters": 20, "final_iters": 20},
    VerticalMRFSynthesizer: {"party_columns": 2, "n_sketches": 32},
}
SYNTHESIZERS = list(FAST)


def _make(cls, **params):
    return cls(random_state=0, **{**FAST[cls], **params})


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # leak and reproducibility warnings of the small fits
        yield


@pytest.mark.parametrize("cls", SYNTHESIZERS, ids=lambda c: c.__name__)
def test_an_empty_table_without_a_domain_is_refused_naming_the_column(cls):
    empty = pd.DataFrame({"a": np.array([], int), "s": pd.Series([], dtype=object)})
    with pytest.raises(ValueError, match="Column 'a' has no values to read its categories from: give its "
                                         "categories or size in domain="):
        _make(cls).fit(empty)


@pytest.mark.parametrize("cls", SYNTHESIZERS, ids=lambda c: c.__name__)
def test_an_empty_table_with_a_domain_fits_and_samples(cls):
    empty = pd.DataFrame({"a": np.array([], int), "b": np.array([], int), "c": np.array([], int)})
    synthetic = _make(cls, domain={"a": 2, "b": 3, "c": 2}).fit(empty).sample(5)
    assert synthetic.shape == (5, 3)
    assert synthetic["b"].between(0, 2).all()


MIXED = pd.DataFrame({0: [0, 1, 0, 1] * 10, "b": [1, 0, 0, 1] * 10, "c": [0, 0, 1, 1] * 10})


@pytest.mark.parametrize("cls", [c for c in SYNTHESIZERS if c is not VerticalMRFSynthesizer],
                         ids=lambda c: c.__name__)
def test_column_names_of_mixed_types_fit(cls):
    synthetic = _make(cls).fit(MIXED).sample(4)
    assert list(synthetic.columns) == [0, "b", "c"]


def test_vertical_mrf_asks_for_string_column_names():
    with pytest.raises(TypeError, match="VerticalMRFSynthesizer needs string column names .*column 0 has a name of "
                                        "type int. Rename the columns"):
        _make(VerticalMRFSynthesizer).fit(MIXED)


ESTIMATORS = [(cls, lambda cls=cls, **kw: _make(cls, **kw)) for cls in SYNTHESIZERS] + [
    (DPKBinsDiscretizer, lambda **kw: DPKBinsDiscretizer(n_bins=3, random_state=0, **kw)),
    (DPCategoricalEncoder, lambda **kw: DPCategoricalEncoder(delta=1e-6, random_state=0, **kw)),
    (TableDiscretizer, lambda **kw: TableDiscretizer(random_state=0, **kw)),
]


@pytest.mark.parametrize("epsilon", [1e11, 1e307])
@pytest.mark.parametrize("cls, make", ESTIMATORS, ids=[c.__name__ for c, _ in ESTIMATORS])
def test_an_epsilon_too_large_to_compute_with_is_refused_by_name(cls, make, epsilon):
    X = pd.DataFrame({"a": [0, 1, 2, 1] * 25, "b": [1, 0, 0, 1] * 25, "c": [0, 0, 1, 1] * 25})
    with pytest.raises(InvalidParameterError, match=r"epsilon must be (None or )?a finite number > 0 and <= "
                                                    r"1e\+10, got (100000000000\.0|1e\+307)\. Past 1e\+10 the "
                                                    "noise calibration"):
        make(epsilon=epsilon).fit(X)


def test_partition_synthesizer_bounds_rho_too():
    X = pd.DataFrame({"a": [0, 1, 2, 1] * 25, "b": [1, 0, 0, 1] * 25})
    with pytest.raises(InvalidParameterError, match=r"rho must be None or a finite number > 0 and <= 1e\+20"):
        PartitionSynthesizer(rho=1e30).fit(X)


@pytest.mark.parametrize("cls", SYNTHESIZERS, ids=lambda c: c.__name__)
def test_the_largest_epsilon_fits(cls):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({c: rng.integers(0, k, 300) for c, k in zip("abcd", (3, 4, 2, 5))})
    est = _make(cls, epsilon=MAX_EPSILON, domain={"a": 3, "b": 4, "c": 2, "d": 5}).fit(X)
    assert est.sample(3).shape == (3, 4)


def test_dpfm_parameters_at_any_epsilon():
    # k_p = 1 from ε′ = ln 2 on, α_min = 0 once 1 − e^{−ε′} rounds to 1; e^{ε′} itself overflows past 709.
    assert dpfm_parameters(1e6, 1.0) == (1, 0) == dpfm_parameters(710.0, 1.0)
    assert dpfm_parameters(700.0, 1.0) == (1, 0)


@pytest.mark.parametrize("spec", [4.5, 2.0, True, "ab"])
def test_a_domain_entry_that_is_neither_a_size_nor_categories_is_refused_by_name(spec):
    X = pd.DataFrame({"a": [0, 1, 2, 1] * 25, "b": [1, 0, 0, 1] * 25})
    with pytest.raises(ValueError, match=r"domain\['b'\] must be a positive integer size or a list of categories, "
                                         f"got {spec!r}"):
        MSTSynthesizer(domain={"a": 3, "b": spec}).fit(X)


@pytest.fixture(scope="module")
def fitted():
    X = pd.DataFrame({"a": [0, 1, 2, 1] * 25, "b": [1, 0, 0, 1] * 25})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MSTSynthesizer(domain={"a": 3, "b": 2}, random_state=0).fit(X)


@pytest.mark.parametrize("n", [True, np.True_, -1, 2.0, "3"])
def test_sample_refuses_what_is_not_a_number_of_records(fitted, n):
    with pytest.raises(ValueError, match=f"n_samples must be a non-negative integer, got {n!r}"):
        fitted.sample(n)


def test_sample_refuses_more_records_than_memory_holds_before_allocating(fitted):
    n = 10**13
    with pytest.raises(MemoryLimitError, match=r"sample\(n_samples=10,000,000,000,000\) of 2 columns needs about "
                                               r".* of memory, but .* is available\. Draw fewer records, or draw "
                                               "them in batches"):
        fitted.sample(n)
    assert issubclass(MemoryLimitError, ValueError) and not math.isnan(fitted.n_records_)


# -- the command line: one line and exit status 2 ------------------------------------------------------------------
def _cli(tmp_path, capsys, frame: pd.DataFrame, schema: dict, *options: str) -> tuple[int, str]:
    import json

    from skdpsynth.cli import main

    data, schema_path = tmp_path / "d.csv", tmp_path / "s.json"
    frame.to_csv(data, index=False)
    schema_path.write_text(json.dumps(schema))
    code = main(["synthesize", str(data), "--schema", str(schema_path), "-o", str(tmp_path / "out.csv"), "-q",
                 *options])
    err = capsys.readouterr().err.strip()
    return code, err


def _small(n: int = 200) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 3, n), "x": rng.uniform(0, 10, n)})
    return frame, {"a": {"type": "categorical", "categories": [0, 1, 2]},
                   "x": {"type": "numeric", "bounds": [0, 10], "n_bins": 4}}


def test_cli_more_rows_than_memory_holds(tmp_path, capsys):
    code, err = _cli(tmp_path, capsys, *_small(), "--rows", "1000000000000")
    assert code == 2 and "\n" not in err
    assert err.startswith("skdpsynth: error: --rows 1,000,000,000,000: sample(n_samples=1,000,000,000,000) of 2 "
                          "columns needs about")


def test_cli_a_schema_with_a_billion_bins(tmp_path, capsys):
    frame, schema = _small()
    schema["x"]["n_bins"] = 10**9
    code, err = _cli(tmp_path, capsys, frame, schema)
    assert code == 2 and "\n" not in err
    assert err.startswith("skdpsynth: error: the bins (--bins, or n_bins and edges in --schema): DPKBinsDiscretizer "
                          "with 1,000,000,000 bins over 1 column(s) (n_bins) needs about")
    assert "Use fewer bins" in err


def test_cli_bins_option_too_large_is_named(tmp_path, capsys):
    frame, schema = _small()
    del schema["x"]["n_bins"]
    code, err = _cli(tmp_path, capsys, frame, schema, "--bins", str(10**9))
    assert code == 2 and "\n" not in err
    assert err.startswith("skdpsynth: error: the bins (--bins, or n_bins and edges in --schema): DPKBinsDiscretizer "
                          "with 1,000,000,000 bins"), err


def test_public_edges_too_many_for_memory_are_refused_before_each_edge_is_read(monkeypatch):
    _little_memory(monkeypatch)
    frame = pd.DataFrame({"x": [0.5, 1.5]})
    with pytest.raises(MemoryLimitError, match=r"DPKBinsDiscretizer with 1,000,000 public bins for column 'x' "
                                               r"\(edges\) needs about 488\.3 MiB"):
        DPKBinsDiscretizer(edges={"x": list(range(10**6 + 1))}).fit(frame)


def test_cli_views_too_large_name_the_method_and_the_option(tmp_path, capsys):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"c{i}": rng.integers(0, 1000, 50) for i in range(4)})
    schema = {c: {"type": "categorical", "categories": list(range(1000))} for c in frame}
    code, err = _cli(tmp_path, capsys, frame, schema, "--method", "view", "--view-size", "2",
                     "--max-view-cells", "100")
    assert code == 2 and "\n" not in err
    assert err.startswith("skdpsynth: error: --method view: The view (") and "more than max_view_cells=100" in err
    with pytest.raises(SystemExit) as exit_:
        _cli(tmp_path, capsys, frame, schema, "--max-view-cells", "100")
    assert exit_.value.code == 2


# -- item 8: the smaller ones ---------------------------------------------------------------------------------------
def test_an_infinite_value_is_named_as_such_without_a_numpy_warning():
    X = pd.DataFrame({"a": [0.0, 1.0, np.inf, 1.0] * 5, "b": [1, 0, 0, 1] * 5})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=r"Column 'a' holds infinite values \(inf or -inf\)"):
            MSTSynthesizer().fit(X)


def test_a_target_of_the_wrong_length_is_not_called_two_dimensional():
    X = pd.DataFrame({"a": [0, 1, 2, 1] * 5, "b": [1, 0, 0, 1] * 5})
    with pytest.raises(ValueError, match="y must have one entry per row of X; it has another number of entries"):
        MSTSynthesizer().fit(X, pd.Series([0, 1] * 5))
    with pytest.raises(ValueError, match=r"y must be 1-D \(one target column\)"):
        MSTSynthesizer().fit(X, np.zeros((20, 2)))


def test_a_category_outside_the_schema_at_fit_is_not_labelled_transform():
    from skdpsynth import SynthesisPipeline

    raw = pd.DataFrame({"c": ["x", "y", "z", "x"] * 5})
    pipe = SynthesisPipeline([("table", TableDiscretizer({"c": {"type": "categorical", "categories": ["x", "y"]}})),
                              ("synth", MSTSynthesizer(random_state=0))])
    with pytest.raises(ValueError, match=r"^Column 'c' has values outside its categories"):
        pipe.fit(raw)


def test_dates_follow_the_rule_of_numbers():
    dates = pd.DataFrame({"d": pd.date_range("2000-01-01", periods=1001, freq="h")})
    with pytest.raises(ValueError, match="Date or time columns 'd' would become categories with more than 1,000 "
                                         "values each"):
        MSTSynthesizer().fit(dates)
    few = pd.DataFrame({"d": pd.date_range("2000-01-01", periods=1000, freq="h")})
    assert MSTSynthesizer(random_state=0).fit(few).domain_["d"] == 1000


def test_the_pipeline_refuses_one_dimensional_and_sparse_input_by_name():
    import scipy.sparse as sp

    from skdpsynth import SynthesisPipeline

    pipe = SynthesisPipeline([("table", TableDiscretizer(n_bins=3)), ("synth", MSTSynthesizer(random_state=0))])
    with pytest.raises(ValueError, match="X must be a DataFrame or a 2-D array, got an array with 1 dimension"):
        pipe.fit(np.arange(10.0), np.arange(10) % 2)
    with pytest.raises(TypeError, match="Sparse input is not supported"):
        pipe.fit(sp.csr_matrix(np.eye(3)))


def test_cli_a_header_that_names_a_column_twice(tmp_path, capsys):
    from skdpsynth.cli import main

    data = tmp_path / "dup.csv"
    data.write_text("age,age,b\n1,2,0\n3,4,1\n")
    assert main(["synthesize", str(data), "--infer-schema", "-o", str(tmp_path / "o.csv"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("its header names column 'age' more than once; give every column its own name")
    assert "\n" not in err and not (tmp_path / "o.csv").exists()


# -- acceptance 3: memory checked before any allocation proportional to a size the user gave ------------------------
def _little_memory(monkeypatch, n_bytes=64 * 2**20):
    import skdpsynth.utils
    monkeypatch.setattr(skdpsynth.utils, "available_memory", lambda: n_bytes)


def _nothing_counted(monkeypatch):
    """Counting any marginal fails the test: a refusal must come before the data are read or budget spent."""
    import skdpsynth.marginals

    def no_counts(*args, **kwargs):
        raise AssertionError("a marginal was counted before the memory check")

    monkeypatch.setattr(skdpsynth.marginals, "_count", no_counts)


def _three_columns(n=200, a=5):
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.integers(0, a, n), "b": rng.integers(0, 5, n), "c": rng.integers(0, 3, n)})


@pytest.mark.parametrize("cls, match", [
    (MSTSynthesizer, r"MSTSynthesizer's 1-way marginals \(10,000,008 cells in all; the largest, 'a', has "
                     r"10,000,000 values\) needs about 457\.8 MiB .* Coarsen the domain"),
    (AIMSynthesizer, r"AIMSynthesizer: the true answers of 4 candidate marginals \(10,000,023 cells\) and a model "
                     r"of up to 10,000,023 cells being estimated .* within max_model_size=80 MB\) needs about 2\.5 "
                     r"GiB .* Lower max_cells"),
    (PartitionSynthesizer, r"PartitionSynthesizer: the true answers of \d candidate marginals \(10,000,0\d\d cells\) "
                           r"and a model of up to 10,000,0\d\d cells .* Lower max_cells"),
    (HybridSynthesizer, r"HybridSynthesizer: 1 workload marginals of at most max_cells cells and the 1-way marginals "
                        r"\(10,000,023 cells in all\), noised by 1 party needs about 1\.3 GiB .* Lower max_cells"),
    (ViewSynthesizer, r"ViewSynthesizer: 3 views of 10,000,008 cells in all needs about 457\.8 MiB .* smaller "
                      r"view_size"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_domain_too_large_for_memory_is_refused_before_any_count(monkeypatch, cls, match):
    """A public domain with a 10,000,000-value column: its 1-way marginal alone is 10,000,000 cells, each held
    with its noise and its model's tables (33 to 221 bytes a cell, measured at 3,000,000 values); with 64 MiB
    available every synthesizer refuses before counting anything, with both numbers and the way out."""
    _little_memory(monkeypatch)
    _nothing_counted(monkeypatch)
    with pytest.raises(MemoryLimitError, match=match):
        _make(cls, domain={"a": 10**7, "b": 5, "c": 3}).fit(_three_columns())


def test_hybrid_max_cells_does_not_let_a_workload_marginal_past_memory(monkeypatch):
    _little_memory(monkeypatch)
    _nothing_counted(monkeypatch)
    with pytest.raises(MemoryLimitError, match=r"HybridSynthesizer: 3 workload marginals .*\(25,040,003 cells in "
                                               r"all\), noised by 1 party"):
        _make(HybridSynthesizer, domain={"a": 5000, "b": 5000, "c": 3}, max_cells=10**18).fit(_three_columns())


def test_hybrid_without_a_small_enough_marginal_says_how_small_the_smallest_is():
    with pytest.raises(ValueError, match=r"No workload marginal has at most max_cells=10,000 cells \(the smallest "
                                         r"has 50,000\)\. Raise max_cells or coarsen the domain"):
        _make(HybridSynthesizer, domain={"a": 10**4, "b": 5, "c": 10**4}, workload=[("a", "b")]).fit(_three_columns())


def test_view_of_a_fixed_size_is_checked_against_memory_before_the_record_count(monkeypatch):
    _little_memory(monkeypatch)
    _nothing_counted(monkeypatch)
    with pytest.raises(MemoryLimitError, match=r"ViewSynthesizer: \d views of [\d,]{10,} cells in all needs about "
                                               r"[\d.]+ GiB"):
        _make(ViewSynthesizer, domain={"a": 10**7, "b": 5, "c": 3}, view_size=2, max_view_cells=10**9,
              n_search=1).fit(_three_columns())


def test_vertical_mrf_sketches_are_checked_against_memory_before_any_key(monkeypatch):
    """n_bins=10**9 leaves two 100,000-value columns unbinned: 2,000 sketches of 200,003 values, 19 GB."""
    _little_memory(monkeypatch)
    _nothing_counted(monkeypatch)
    with pytest.raises(MemoryLimitError, match=r"VerticalMRFSynthesizer: n_sketches=2,000 sketches of 200,003 column "
                                               r"values \(after binning with n_bins=1000000000\) needs about 17\.9 GiB"
                                               r".* Lower n_sketches or n_bins"):
        VerticalMRFSynthesizer(domain={"a": 10**5, "b": 10**5, "c": 3}, party_columns=[["a"], ["b", "c"]],
                               n_bins=10**9, random_state=0).fit(_three_columns())


def test_vertical_mrf_rounds_and_cross_marginals_beyond_the_pool_allocate_nothing():
    """n_cross_marginals=n_refine_rounds=10**9 asked for a 10**9-long array (8 GB); the rounds are now spread as
    numbers and stop when no candidate is left."""
    fit = _make(VerticalMRFSynthesizer, domain={"a": 5, "b": 5, "c": 3}, n_cross_marginals=10**9,
                n_refine_rounds=10**9).fit(_three_columns())
    assert len(fit.cross_marginals_) <= 3


def test_vertical_mrf_says_a_memory_refusal_is_its_local_models(monkeypatch):
    _little_memory(monkeypatch, 2**30)
    with pytest.raises(MemoryLimitError, match=r"Party '.*'s local model \(aim\): AIMSynthesizer: .* give the local "
                                               r"learner's settings in local_mrf_params"):
        _make(VerticalMRFSynthesizer, domain={"a": 10**9, "b": 10**9, "c": 3}, n_sketches=2,
              party_columns=[["a"], ["b", "c"]]).fit(_three_columns())


@pytest.mark.parametrize("cls", SYNTHESIZERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("make", [sp_matrix for sp_matrix in ("dok_matrix", "csr_matrix", "coo_array")])
def test_sparse_input_of_any_format_gets_the_sparse_error(cls, make):
    """Item 7: VerticalMRFSynthesizer read a DOK matrix (a dict subclass) as a dict of per-party frames."""
    import scipy.sparse as sp
    X = getattr(sp, make)(np.random.default_rng(0).integers(0, 3, (50, 3)))
    with pytest.raises(TypeError, match="Sparse input is not supported: a synthesizer needs the table of records"):
        _make(cls).fit(X)


@pytest.mark.parametrize("cls", SYNTHESIZERS, ids=lambda c: c.__name__)
def test_a_boolean_epsilon_is_refused_by_name(cls):
    """Item 6: epsilon=True was taken as 1 by all but View."""
    with pytest.raises(InvalidParameterError, match="epsilon must be a finite number > 0 and <= 1e\\+10, got True"):
        _make(cls, epsilon=True).fit(_three_columns())


@pytest.mark.parametrize("n_jobs", [0, 10**6])
def test_hybrid_n_jobs_joblib_cannot_use_is_refused_by_name(n_jobs):
    """joblib refused n_jobs=0 and 1,000,000 mid-fit ('Numeric literal 2000000 is too large'), not naming n_jobs."""
    with pytest.raises(InvalidParameterError, match=rf"n_jobs must be None, an integer in \[1, 4096\] or an integer "
                                                    rf"in \[-4096, -1\], got {n_jobs}"):
        _make(HybridSynthesizer, n_jobs=n_jobs).fit(_three_columns())


@pytest.mark.parametrize("cls", SYNTHESIZERS, ids=lambda c: c.__name__)
def test_a_domain_given_as_a_list_is_refused_by_name(cls):
    """Item 6: domain=[3, 2] gave a raw TypeError that did not name domain."""
    with pytest.raises(InvalidParameterError, match=r"domain must be None, a mapping or a Domain, got \[3, 5, 3\]"):
        _make(cls, domain=[3, 5, 3]).fit(_three_columns())
