"""Issue 14: what a new scikit-learn user runs into with the synthesizers, the pipeline and the scorers.

Each test is the issue's reproduction (or its equivalent, made small) with the behaviour a user expects.
"""
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GridSearchCV

import skdpsynth.utils
from skdpsynth import AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer, ViewSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.metrics import marginal_scorer, marginal_tvd
from skdpsynth.pipeline import SynthesisPipeline
from skdpsynth.preprocessing import DPKBinsDiscretizer

pytestmark = pytest.mark.filterwarnings("ignore::skdpsynth.privacy.ReproducibleNoiseWarning")


# -- item 1: AIM on its defaults when no 3-way marginal fits max_cells -------------------------------------------
def test_aim_falls_back_to_the_largest_marginals_that_fit(capsys):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({c: rng.integers(0, 30, 1000) for c in "abc"})  # every 3-way marginal has 27,000 cells
    aim = AIMSynthesizer(domain={c: 30 for c in "abc"}, max_iters=50, final_iters=50, random_state=0, verbose=1)
    aim.fit(X)
    assert [c for c, _ in aim.workload_] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert "no 3-way marginal has at most max_cells=10,000 cells" in capsys.readouterr().err
    assert aim.sample(10).shape == (10, 3)
    assert abs(aim.privacy_ledger_.total_rho() - aim.rho_) < 1e-12


def test_aim_refuses_when_no_marginal_fits_max_cells_naming_it():
    X = pd.DataFrame({"a": np.arange(100) % 50, "b": np.arange(100) % 40})
    with pytest.raises(ValueError, match=r"max_cells=30.*smallest attribute has 40 values"):
        AIMSynthesizer(domain={"a": 50, "b": 40}, max_cells=30, random_state=0).fit(X)


def test_aim_measures_every_column_even_outside_its_workload():
    """A column the workload misses is measured 1-way, not left uniform."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.integers(0, 3, 4000), "b": rng.integers(0, 3, 4000),
                      "c": np.where(rng.random(4000) < 0.9, 0, rng.integers(0, 5, 4000))})
    aim = AIMSynthesizer(epsilon=5.0, domain={"a": 3, "b": 3, "c": 5}, workload=[("a", "b")], max_iters=100,
                         final_iters=200, random_state=0).fit(X)
    assert "1-way marginal c" in [e.description for e in aim.privacy_ledger_]
    share_c0 = (aim.sample(4000, random_state=0)["c"] == 0).mean()
    # Uniform would give 0.2; the true share is 0.92 and sampling noise on 4000 records is ~0.005.
    assert share_c0 > 0.85


def test_aim_rejects_too_few_rounds_before_any_work(monkeypatch):
    import skdpsynth.synthesizers.aim as aim_module

    def no_marginals(*args, **kwargs):  # the 4 GB of true answers the old code computed first
        raise AssertionError("marginals computed before the parameters were validated")

    monkeypatch.setattr(aim_module, "marginals", no_marginals)
    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"c{i}": rng.integers(0, 50, 100) for i in range(30)})
    with pytest.raises(ValueError, match="rounds=5 is too small for 30 one-way marginals"):
        AIMSynthesizer(domain={c: 50 for c in X}, max_cells=None, rounds=5, random_state=0).fit(X)


def _little_memory(monkeypatch, n_bytes):
    monkeypatch.setattr(skdpsynth.utils, "available_memory", lambda: n_bytes)


def test_mst_refuses_a_domain_whose_pair_marginals_do_not_fit_in_memory(monkeypatch):
    _little_memory(monkeypatch, 10 * 2**20)  # 10 MiB; the pair marginal needs 72 MB
    rng = np.random.default_rng(0)
    X = pd.DataFrame({c: rng.integers(0, 3000, 500) for c in "ab"})
    with pytest.raises(MemoryError, match=r"68\.7 MiB of memory, but 10\.0 MiB is available.*compress=True"):
        MSTSynthesizer(domain={"a": 3000, "b": 3000}, compress=False, random_state=0).fit(X)


def test_aim_refuses_candidate_answers_that_do_not_fit_in_memory(monkeypatch):
    _little_memory(monkeypatch, 90 * 2**20)  # the 80 MB model limit fits; 4,060 answers of 125,000 cells do not
    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"c{i}": rng.integers(0, 50, 100) for i in range(30)})
    with pytest.raises(MemoryError, match=r"AIMSynthesizer: the true answers of .* candidate marginals.*max_cells"):
        AIMSynthesizer(domain={c: 50 for c in X}, max_cells=None, random_state=0).fit(X)


def test_partition_synthesizer_shares_the_workload_fallback():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({c: rng.integers(0, 30, 1000) for c in "abc"})
    model = PartitionSynthesizer(domain={c: 30 for c in "abc"}, max_iters=20, final_iters=20, random_state=0)
    assert model.fit(X).sample(5).shape == (5, 3)


# -- item 4: SynthesisPipeline.sample(random_state=...) is reproducible -------------------------------------------
def test_pipeline_sample_random_state_reaches_the_inverse_transform():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.uniform(17, 90, 2000), "hours": rng.uniform(1, 99, 2000)})
    pipe = SynthesisPipeline([
        ("bins", DPKBinsDiscretizer(n_bins=5, bounds={"age": (17, 90), "hours": (1, 99)})),
        ("synth", MSTSynthesizer(epsilon=1.0, random_state=0)),
    ]).fit(X)
    a, b = pipe.sample(300, random_state=1), pipe.sample(300, random_state=1)
    pd.testing.assert_frame_equal(a, b)
    assert not pipe.sample(300, random_state=2).equals(a)
    assert not pipe.sample(300).equals(pipe.sample(300))  # None continues the fitted streams


# -- items 5 and 6: scoring a pipeline where it models the data; a default score --------------------------------
@pytest.fixture(scope="module")
def adult_raw():
    frame = load_adult().frame
    return frame[["age", "fnlwgt", "hours-per-week"]].dropna().iloc[:6000].reset_index(drop=True)


def _raw_pipeline():
    bounds = {"age": (17, 90), "fnlwgt": (10000, 1500000), "hours-per-week": (1, 99)}
    return SynthesisPipeline([("t", DPKBinsDiscretizer(n_bins=5, bounds=bounds)),
                              ("s", MSTSynthesizer(epsilon=1.0, random_state=0))])


def test_marginal_scorer_scores_a_pipeline_in_its_binned_space(adult_raw):
    train, test = adult_raw.iloc[:3000], adult_raw.iloc[3000:]
    pipe = _raw_pipeline().fit(train)
    score = marginal_scorer(ways=1)(pipe, test)
    # In raw values fnlwgt alone has a 1-way TVD near 1 (almost every value is unique); in 5 bins the
    # synthetic marginals sit within noise of the held-out ones.
    assert score > -0.1
    expected = marginal_tvd(pipe.transform(test), pipe.sample(len(test), random_state=0, inverse_transform=False),
                            ways=1)
    assert score == pytest.approx(-expected)


def test_grid_search_without_scoring_uses_the_default_score(adult_raw):
    search = GridSearchCV(_raw_pipeline(), {"t__n_bins": [3, 6]}, cv=2).fit(adult_raw.iloc[:3000])
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert np.all(search.cv_results_["mean_test_score"] <= 0)

    adult = load_adult(discretized=True)
    X = adult.frame.iloc[:4000, :4]
    synth = MSTSynthesizer(domain=adult.domain.project(X.columns).to_dict(), random_state=0)
    search = GridSearchCV(synth, {"epsilon": [0.01, 3.0]}, cv=2).fit(X)
    assert search.best_params_ == {"epsilon": 3.0}


def test_synthesizer_score_is_negative_mean_two_way_tvd():
    adult = load_adult(discretized=True)
    X = adult.frame.iloc[:, :4]
    mst = MSTSynthesizer(domain=adult.domain.project(X.columns).to_dict(), random_state=0).fit(X.iloc[:20000])
    held_out = X.iloc[20000:]
    expected = marginal_tvd(held_out, mst.sample(len(held_out), random_state=0), ways=2)
    assert mst.score(held_out) == pytest.approx(-expected)
    with pytest.raises(ValueError, match="X has 3 features, but MSTSynthesizer is expecting 4"):
        mst.score(held_out.iloc[:, :3])


# -- item 8: integer quantities are not category codes -----------------------------------------------------------
def test_integer_quantities_are_refused_naming_the_columns():
    frame = load_adult().frame.dropna().iloc[:2000]
    with pytest.raises(ValueError, match=r"'fnlwgt'.*would become category codes with more than 1,000 values.*"
                                         r"discretize them") as refused:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            MSTSynthesizer(random_state=0).fit(frame)
    # No statistic of the data in the message (it once quoted the inferred size, max + 1).
    assert f"{int(frame['fnlwgt'].max()) + 1:,}" not in str(refused.value)


def test_integer_codes_with_a_public_size_are_accepted():
    X = pd.DataFrame({"a": np.arange(3000) % 2000, "b": np.arange(3000) % 3})
    model = MSTSynthesizer(domain={"a": 2000, "b": 3}, random_state=0).fit(X)
    assert model.domain_["a"] == 2000


# -- item 10: edge cases of the synthesizers -----------------------------------------------------------------------
def test_domain_on_a_numpy_input_names_the_generated_column_names():
    X = np.zeros((10, 2), dtype=int)
    with pytest.raises(ValueError, match=r"X is an array, so its columns are named.*'x0', 'x1'"):
        MSTSynthesizer(domain={"age": 2, "sex": 2}).fit(X)


@pytest.mark.parametrize("make", [
    lambda: MSTSynthesizer(domain={"a": 3, "b": 4}, random_state=0),
    lambda: AIMSynthesizer(domain={"a": 3, "b": 4}, max_iters=20, final_iters=20, random_state=0),
    lambda: ViewSynthesizer(domain={"a": 3, "b": 4}, random_state=0),
    lambda: HybridSynthesizer(domain={"a": 3, "b": 4}, random_state=0),
], ids=["mst", "aim", "view", "hybrid"])
def test_every_synthesizer_accepts_zero_rows(make):
    X = pd.DataFrame({"a": np.array([], dtype=int), "b": np.array([], dtype=int)})
    model = make().fit(X)
    assert model.sample(5).shape == (5, 2)
