"""Post-processing checked on what is stored, and canaries that reach every synthesizer (issue 39).

doc/privacy.md makes a fitted estimator post-processing of its mechanisms' outputs ("What the guarantee
covers") that keeps no value of the noise stream ("Randomness and the seed rule").  Here that is checked on everything
reachable from the fitted object (:mod:`stored_state`), for every synthesizer and for both pipelines:

* no stored array is a true 1-, 2- or 3-way marginal of the training data in any form a leak would take, nor
  the exact support of one, nor (1-way) the counts of some of its cells;
* no stored generator, seed sequence, state or integer belongs to the noise stream, and ``sample()`` leaves every
  noise generator's state as the fit left it;
* canaries: the table has an unusual record count (1,237) and a city that occurs once ("Canaryville", given
  through the public domain next to "Ghostburg", which never occurs), in a combination of the other columns that
  no other record has.  What such a canary can show depends on the method.  For every method: the record count is
  stored nowhere (two fits with independent noise: a leak puts it at the same place in both, a noisy estimate
  hits it by chance in one at most), and the one-off record's exact counts (the city's 1-way marginal where it is
  the only 1 next to zeros, and the 3-way marginal of its combination) are stored in no form, exact support
  included.  The count of one record cannot be told from DP noise in the released numbers, so nothing more can be
  asserted about them from one fit.  MST is the one method that stores a decision about rare values (its domain
  compression merges them): the canary and the absent city fall in the same merged cell, and ``sample()`` must
  treat them alike.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from stored_state import (MechanismInputs, NoiseStreams, find_inputs, find_marginals, find_noise_streams,
                          find_value, reachable, true_marginals)

from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer, SynthesisPipeline,
                       TrainOnSynthetic, VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.federated import VerticalFederatedData
from skdpsynth.federated.runtime import PartyHost
from skdpsynth.preprocessing import TableDiscretizer

N_ROWS = 1237
CANARY, GHOST = "Canaryville", "Ghostburg"
# Public domain of "city" and how often each occurs.  The rare cities (Riga ... Ghostburg) have distinct counts
# below MST's compression threshold (3 sigma = 60 records here), so a leak of their exact counts is told from
# noise, and 140 records together, so the merged cell keeps a share of the model whatever the noise (its noisy
# sum has s.d. 60); the canary's 1 next to Ghostburg's 0 makes the city's exact support something only the data
# can give.
CITY_COUNTS = {"Oslo": 341, "Rome": 287, "Lima": 223, "Pune": 149, "Kyiv": 97, "Riga": 36, "Baku": 31,
               "Thule": 26, "Suva": 19, "Nuuk": 14, "Apia": 9, "Vaduz": 4, CANARY: 1, GHOST: 0}
DOMAIN = {"city": list(CITY_COUNTS), "a": 3, "b": 4, "c": 2}


@pytest.fixture(scope="module")
def canary_table():
    """1,237 records; the canary city's only record is also the only one with (a, b, c) = (2, 1, 1)."""
    assert sum(CITY_COUNTS.values()) == N_ROWS
    rng = np.random.default_rng(39)
    city = np.repeat(np.arange(len(CITY_COUNTS)), list(CITY_COUNTS.values()))
    a = rng.integers(0, 3, N_ROWS)
    b = (a + rng.integers(0, 2, N_ROWS)) % 4  # a = 2 gives b in {2, 3}: (2, 1) occurs nowhere else
    c = (rng.random(N_ROWS) < 0.3 + 0.1 * a).astype(np.int64)
    canary = int(np.flatnonzero(city == DOMAIN["city"].index(CANARY))[0])
    a[canary], b[canary], c[canary] = 2, 1, 1
    order = rng.permutation(N_ROWS)
    X = pd.DataFrame({"city": np.array(DOMAIN["city"], dtype=object)[city[order]], "a": a[order], "b": b[order],
                      "c": c[order]})
    # Ages for the pipeline's DP bounds: the one column without public metadata.
    age = pd.Series(rng.integers(18, 80, N_ROWS), name="age")
    return X, age


def _codes(X: pd.DataFrame) -> np.ndarray:
    return np.column_stack([pd.Index(DOMAIN["city"]).get_indexer(X["city"]), X["a"], X["b"], X["c"]])


# -- the fits: every synthesizer and both pipelines, small and quick ----------------------------------------------
def _fit_mst(X, age, seed):
    return MSTSynthesizer(1.0, domain=DOMAIN, max_iters=200, random_state=seed).fit(X)


def _fit_aim(X, age, seed):
    return AIMSynthesizer(1.0, domain=DOMAIN, rounds=8, max_iters=100, final_iters=100, random_state=seed).fit(X)


def _fit_hybrid(X, age, seed):  # four simulated parties: their noise streams are seeded from the fit's
    return HybridSynthesizer(1.0, domain=DOMAIN, partition={"n_slices": 2, "n_vertical": 2}, max_iters=50,
                             final_iters=100, random_state=seed).fit(X)


def _fit_vertical(X, age, seed):  # city (14 values) is binned by DP: the model holds binned cliques
    return VerticalMRFSynthesizer(1.0, 1e-6, domain=DOMAIN, party_columns=[["city", "a"], ["b", "c"]],
                                  n_sketches=64, md_iters=50,
                                  local_mrf_params={"max_iters": 50, "final_iters": 50, "rounds": 4},
                                  random_state=seed).fit(X)


def _fit_vertical_runtime(X, age, seed):  # the same parties behind the runtime, each encoding its own columns
    codes = pd.DataFrame(_codes(X), columns=list(DOMAIN))
    groups = {"party0": ["city", "a"], "party1": ["b", "c"]}
    sizes = {c: (len(v) if isinstance(v, list) else v) for c, v in DOMAIN.items()}
    data = VerticalFederatedData(sizes, groups, {name: PartyHost(codes[cols]) for name, cols in groups.items()})
    return VerticalMRFSynthesizer(1.0, 1e-6, n_sketches=64, md_iters=50, secure_computation="cryptographic",
                                  local_mrf_params={"max_iters": 50, "final_iters": 50, "rounds": 4},
                                  random_state=seed).fit(data)


def _fit_view(X, age, seed):
    return ViewSynthesizer(1.0, domain=DOMAIN, view_size=2, n_search=20, random_state=seed).fit(X)


def _fit_partition(X, age, seed):
    return PartitionSynthesizer(1.0, domain=DOMAIN, rounds=6, max_iters=20, final_iters=50,
                                random_state=seed).fit(X)


def _fit_pipeline(X, age, seed):  # the canary string reaches MST through the table's public schema
    schema = {"city": DOMAIN["city"], "age": {"type": "numeric"}, "a": [0, 1, 2], "b": [0, 1, 2, 3]}
    steps = [("table", TableDiscretizer(schema, n_bins=4, epsilon=0.1, random_state=seed)),
             ("synth", MSTSynthesizer(0.9, max_iters=200, random_state=seed))]
    return SynthesisPipeline(steps).fit(pd.concat([X[["city", "a", "b"]], age], axis=1))


def _fit_train_on_synthetic(X, age, seed):
    synthesizer = MSTSynthesizer(1.0, domain=DOMAIN, max_iters=200, random_state=seed)
    classifier = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=200))
    return TrainOnSynthetic(synthesizer, classifier, random_state=seed).fit(X[["city", "a", "b"]], X["c"])


FITS = {"mst": _fit_mst, "aim": _fit_aim, "hybrid": _fit_hybrid, "vertical_mrf": _fit_vertical,
        "vertical_mrf_runtime": _fit_vertical_runtime,
        "view": _fit_view, "partition": _fit_partition, "pipeline": _fit_pipeline,
        "train_on_synthetic": _fit_train_on_synthetic}


def _synthesizer(est):
    return {SynthesisPipeline: lambda: est.named_steps_["synth"],
            TrainOnSynthetic: lambda: est.synthesizer_}.get(type(est), lambda: est)()


def _seen_codes(est, X, age) -> tuple[np.ndarray, dict]:
    """The codes the synthesizer was fitted on, with their domain sizes."""
    if isinstance(est, SynthesisPipeline):
        coded = est.named_steps_["table"].transform(pd.concat([X[["city", "a", "b"]], age], axis=1))
        sizes = {c: len(coded[c].cat.categories) for c in coded}
        return np.column_stack([coded[c].cat.codes for c in coded]), sizes
    return _codes(X), {c: (len(v) if isinstance(v, list) else v) for c, v in DOMAIN.items()}


def _targets(est, X, age) -> dict:
    """True marginals over the codes the synthesizer saw and over the codes its model works on (MST's
    compressed domain, VertiMRF's bins): every clique the model could hold."""
    codes, sizes = _seen_codes(est, X, age)
    out = true_marginals(codes, sizes)
    synth = _synthesizer(est)
    model_codes, model_sizes = None, dict(sizes)
    if getattr(synth, "compression_", None) is not None:
        model_codes = synth.compression_.transform(codes)
        model_sizes = dict(zip(sizes, synth.compression_.domain.shape))
    elif getattr(synth, "binned_", None):
        model_codes = codes.copy()
        for name, bins in synth.binned_.items():
            j = list(sizes).index(name)
            model_codes[:, j] = np.asarray(bins)[codes[:, j]]
            model_sizes[name] = int(np.max(bins)) + 1
    if model_codes is not None:
        out.update({tuple(f"{n}'" for n in k): v for k, v in true_marginals(model_codes, model_sizes).items()})
    return out


@dataclasses.dataclass
class _Fitted:
    est: object
    streams: NoiseStreams
    inputs: MechanismInputs


@pytest.fixture(scope="module")
def fitted(canary_table):
    """``fitted(kind, seed)``: a fit whose noise streams (each seed its own noise entropy) and mechanism inputs
    are recorded."""
    cache = {}

    def get(kind: str, seed: int = 0) -> _Fitted:
        if (kind, seed) not in cache:  # a PrivacyLeakWarning is an error (pyproject): every fit here is DP
            with pytest.MonkeyPatch.context() as patch:
                streams = NoiseStreams(entropy=NoiseStreams.ENTROPY + seed).install(patch)
                inputs = MechanismInputs().install(patch)
                cache[kind, seed] = _Fitted(FITS[kind](*canary_table, seed), streams, inputs)
        return cache[kind, seed]

    return get


KINDS = list(FITS)


# -- 1. nothing stored is a true marginal or the noise stream --------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_nothing_reachable_is_a_true_marginal_or_the_noise_stream(kind, fitted, canary_table):
    fit = fitted(kind)
    found = reachable(fit.est)
    assert len(found.arrays) > 5 and fit.streams.generators  # the walk reached the model; the fit drew noise
    assert find_marginals(found, _targets(fit.est, *canary_table)) == []
    assert find_noise_streams(found, fit.streams) == []


@pytest.mark.parametrize("kind", KINDS)
def test_nothing_reachable_is_what_a_mechanism_was_given(kind, fitted):
    """Beyond marginals: no stored value is an exact input of a mechanism, such as a selection's exact scores or
    PPSyn's exact captured contribution (a released value is that input plus noise, never the input itself)."""
    fit = fitted(kind)
    assert fit.inputs.inputs  # the mechanisms were seen
    assert find_inputs(reachable(fit.est), fit.inputs) == []


def test_the_scan_finds_every_form_a_leak_could_take(fitted, canary_table):
    """The scan's own power: each way of keeping a true statistic, a mechanism's exact input or the noise stream
    (inside slots, dataclasses, closures, partials, pandas and sparse objects) is found."""
    fit, streams = fitted("mst"), NoiseStreams()
    X = canary_table[0]
    truth = _targets(fit.est, *canary_table)
    noise = streams.generator(None)
    city, abc = truth[("city",)], truth[("a", "b", "c")]
    rare = ~fit.est.compression_.supports["city"]

    @dataclasses.dataclass
    class Box:
        value: object

    class Slotted:
        __slots__ = ("value",)

        def __init__(self, value):
            self.value = value

    marginal_leaks = {
        "counts in a dataclass": Box(city.copy()),
        "probabilities in a slot": Slotted(city / city.sum()),
        "a transposed 3-way table in a DataFrame": pd.DataFrame(abc.transpose(2, 0, 1).reshape(2, -1)),
        "a conditional table in a sparse matrix": sp.csr_matrix(np.nan_to_num(
            truth[("a", "b")] / truth[("a", "b")].sum(axis=1, keepdims=True))),
        "log-probabilities in a closure": (lambda w: (lambda: w))(np.log(city / city.sum(), where=city > 0,
                                                                         out=np.full(city.shape, -np.inf))),
        "cumulative probabilities as a partial's argument": functools.partial(np.searchsorted,
                                                                              np.cumsum(city) / city.sum()),
        "the rare values' counts as a dict of ints": {k: int(v) for k, v in zip(np.flatnonzero(rare), city[rare])},
        "the observed cities' codes in a Series": pd.Series(np.flatnonzero(city)),
        "the exact support of a 3-way marginal": (abc > 0).ravel(),
        "a cross-tabulation of the observed values": pd.crosstab(X["city"], [X["a"], X["b"]]),
    }
    noise_leaks = {
        "the noise generator": noise,
        "its bit generator's state dict": noise.bit_generator.state,
        "a child spawned from it": noise.bit_generator.seed_seq.spawn(1)[0],
        "a generator seeded from it": np.random.default_rng(int(noise.integers(2**63))),
        "a RandomState": np.random.RandomState(0),
    }
    scores = next(x for x in fit.inputs.inputs if (x != np.round(x)).any())  # the first tree edge's L1 errors
    input_leaks = {
        "a selection's exact scores, reversed": scores[::-1].tolist(),
        "one exact score": Box(float(scores[scores != np.round(scores)][0])),
    }
    for what, leak in {**marginal_leaks, **noise_leaks, **input_leaks}.items():
        found = reachable({"planted": [leak]})
        assert (find_marginals(found, truth) + find_noise_streams(found, streams)
                + find_inputs(found, fit.inputs)), what


# -- 2. sample() is post-processing: the noise generators stay as the fit left them -----------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_sample_leaves_the_noise_generators_untouched(kind, fitted):
    fit = fitted(kind)
    before = fit.streams.states()
    assert before  # the fit drew its noise from recorded generators
    synth = _synthesizer(fit.est)
    (fit.est if isinstance(fit.est, SynthesisPipeline) else synth).sample(500)
    synth.sample(50, random_state=3)
    assert fit.streams.states() == before


# -- 3. canaries ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_the_record_count_is_stored_nowhere(kind, fitted):
    """1,237 records: no number, array element or container length equal to it at the same place in two fits
    with independent noise.  A leak is there in both; a noisy integer estimate of noise s.d. sigma equals it by
    chance with probability at most 1 / (sigma sqrt(2 pi)) in one fit, and that squared in both."""
    first = set(find_value(reachable(fitted(kind, 0).est), N_ROWS))
    second = set(find_value(reachable(fitted(kind, 1).est), N_ROWS))
    assert first & second == set()


def test_mst_samples_the_canary_as_the_city_nobody_lives_in(fitted):
    """MST merges the rare cities by their noisy counts and sample() spreads the merged cell uniformly over
    them: the canary (1 record) and Ghostburg (none) are drawn alike.  Each merged city's share of n merged draws
    is Binomial(n, 1/k); the bounds hold with probability 1 - 1e-9 each."""
    synth = fitted("mst").est
    merged = [c for c, kept in zip(DOMAIN["city"], synth.compression_.supports["city"]) if not kept]
    assert {CANARY, GHOST} <= set(merged)  # both below 3 sigma: so they are for these noise streams
    cities = synth.sample(100_000, random_state=5)["city"]
    counts = cities[cities.isin(merged)].value_counts().reindex(merged, fill_value=0)
    n, k = int(counts.sum()), len(merged)
    assert n >= 1000  # enough draws for the bounds to mean something
    low, high = stats.binom.ppf(1e-9, n, 1 / k), stats.binom.isf(1e-9, n, 1 / k)
    assert counts.between(low, high).all(), counts.to_dict()


# -- 4. the DP transformers: what they store is their released metadata, nothing exact ---------------------------
def test_dp_transformers_store_no_exact_statistic_of_the_data():
    """DPKBinsDiscretizer, DPCategoricalEncoder and TableDiscretizer fitted with DP metadata store neither the
    data's exact range (its minimum and maximum are distinctive values found nowhere else), nor a category's exact
    count, nor the record count.  A noisy bound or edge equals a float of the data with probability 0; a count
    equal to a noisy one is told apart by the two-fit rule of the record-count test above."""
    from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer

    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-2.0, 8.0, N_ROWS - 2), [-3.718281828, 9.876543219]])
    color = np.repeat(["red", "green", "blue"], [613, 389, N_ROWS - 613 - 389])
    frame = pd.DataFrame({"x": rng.permutation(x), "color": rng.permutation(color)})
    exact = [frame["x"].min(), frame["x"].max(), N_ROWS, 613, 389]

    def fits(seed):
        yield DPKBinsDiscretizer(n_bins=5, epsilon=1.0, random_state=seed).fit(frame[["x"]])
        yield DPKBinsDiscretizer(n_bins=5, strategy="quantile", epsilon=1.0, bounds={"x": (-10.0, 10.0)},
                                 random_state=seed).fit(frame[["x"]])
        yield DPCategoricalEncoder(epsilon=1.0, delta=1e-6, random_state=seed).fit(frame[["color"]])
        yield TableDiscretizer(epsilon=1.0, delta=1e-6, random_state=seed).fit(frame)

    for first, second in zip(fits(0), fits(1)):
        for value in exact:
            found = set(find_value(reachable(first), value)) & set(find_value(reachable(second), value))
            assert not found, (type(first).__name__, value, found)
