"""Every noise draw of a fit is paid for by exactly one entry of its ledger, and every entry by a draw (issue 39).

The spies of ``privacy_spies.py`` record each draw of the samplers (discrete Gaussian / Laplace, the Gumbel noise
of the exponential mechanism, continuous normal / Laplace noise, VertiMRF's DPFM phantoms and GRR) wherever the
package binds them, and :func:`privacy_spies.reconcile` matches the draws with the fit's ``privacy_ledger_`` by
sampler, scale and number of values.  A draw no entry pays for (drawn twice and charged once, charged to a ledger
the fit throws away, an extra draw) or an entry no draw matches (noise recorded but not drawn as recorded) fails
the test, naming it, and so does a count measurement whose entry states a sensitivity other than 1.  The
documented exceptions are explicit below, each with its reason.  Each case also checks that the ledger sums to
the stated budget (at most it, for a transformer) and that a fit inside the fit gets the public domain.

Every synthesizer and DP transformer is fitted here with its defaults, then through its privacy-relevant options
(``partition_source``, ``privacy_mode``, ``measurement_form``, ``protocol``, ``secure_computation``, ``compress``,
VertiMRF's encoders, HisRec and accounting options, DPKBins strategies, the continuous noise), each on a small
table with few rounds: the point is the bookkeeping, not the fit.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
import pandas as pd
import pytest

from privacy_spies import NoiseSpy, Uncharged, reconcile
from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.federated import HybridPartition, VerticalFederatedData
from skdpsynth.federated.runtime import PartyHost
from skdpsynth.pipeline import SynthesisPipeline
from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer, TableDiscretizer
from skdpsynth.privacy import PrivacyLeakWarning, PrivacyLedger, noise_context
from skdpsynth.synthesizers import aim as aim_module
from skdpsynth.synthesizers import mst as mst_module
from skdpsynth.synthesizers import select_measure
from skdpsynth.synthesizers.hybrid import PaperBoundWarning

N_ROWS = 613
DOMAIN = {"a": 3, "b": 3, "c": 2, "d": 4}

# RandDPGen's default selection is not charged: its scores read the data only through the selection measurements,
# which are paid for (doc/federated.md, "Defaults"), so the exponential mechanism is post-processing.  randdpgen
# receives no data, only the parties' messages (tests/test_hybrid.py::test_curator_runs_on_the_messages_alone).
UNCHARGED_SELECTION = Uncharged("gumbel", "synthesizers/hybrid/rounds.py",
                                "RandDPGen's selection is post-processing of the paid selection measurements")


def _table(n: int = N_ROWS, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = rng.integers(0, 2, n)
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": (a + c + rng.integers(0, 2, n)) % 4})


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return _table()


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    """Numeric and string columns for the DP transformers."""
    rng = np.random.default_rng(3)
    return pd.DataFrame({"x": rng.normal(50.0, 10.0, N_ROWS), "y": rng.exponential(3.0, N_ROWS),
                         "s": rng.choice(["u", "v", "w"], N_ROWS, p=[0.6, 0.3, 0.1])})


def _hybrid(**kw):
    params = dict(domain=DOMAIN, partition={"n_slices": 2, "n_vertical": 2}, max_rounds=6, max_iters=30,
                  final_iters=30, random_state=1)
    params.update(kw)
    return HybridSynthesizer(1.0, **params)


def _explicit_grid():
    return HybridPartition.grid(N_ROWS, list(DOMAIN), n_slices=2, n_vertical=2, random_state=0)


# "d" has 6 public codes of which the data use 4: a sub-fit given a domain read from the data would see 4.
VERTICAL_DOMAIN = {**DOMAIN, "d": 6}


def _vertical(**kw):
    params = dict(party_columns=2, domain=VERTICAL_DOMAIN, n_sketches=50, n_bins=2, md_iters=50, random_state=2,
                  local_mrf_params={"max_iters": 30, "final_iters": 30, "rounds": 6})
    params.update(kw)
    return VerticalMRFSynthesizer(4.0, 1e-6, **params)


class _VerticalOverTheRuntime:
    """VertiMRF whose parties answer behind the runtime (the local backend, so that the spies see their draws): the
    same mechanisms as in process, reached through VerticalPartyServer's encode."""

    def __init__(self, **kw):
        self.kw = kw

    def fit(self, X):
        groups = {"party0": ["a", "b"], "party1": ["c", "d"]}
        hosts = {name: PartyHost(X[cols]) for name, cols in groups.items()}
        return _vertical(party_columns=None, domain=None, secure_computation="cryptographic", **self.kw).fit(
            VerticalFederatedData(VERTICAL_DOMAIN, groups, hosts))


def _partition(**kw):
    params = dict(domain=DOMAIN, rounds=4, max_iters=20, final_iters=30, random_state=3)
    params.update(kw)
    return PartitionSynthesizer(1.0, **params)


def _view(**kw):
    params = dict(domain=DOMAIN, view_size=2, n_search=20, random_state=4)
    params.update(kw)
    return ViewSynthesizer(1.0, **params)


# id -> (estimator factory, documented exceptions, the warning the fit must give, or None)
SYNTHESIZERS = {
    "MST": (lambda: MSTSynthesizer(1.0, domain=DOMAIN, max_iters=100, random_state=0), (), None),
    "AIM": (lambda: AIMSynthesizer(1.0, domain=DOMAIN, rounds=8, max_iters=50, final_iters=50, random_state=0),
            (), None),
    "Hybrid": (_hybrid, (UNCHARGED_SELECTION,), None),
    "VerticalMRF": (_vertical, (), None),
    "View": (_view, (), None),
    "Partition": (_partition, (), None),
}

# Public constraints cost nothing and change no draw (doc/constraints.md): the fits reconcile as without them.
_RULES = [{"forbid": {"a": 0, "b": 0}}, {"dependency": {"determinant": "d", "dependent": "c", "mapping": {0: 0, 1: 1}}}]

OPTIONS = {
    "MST-constraints": (lambda: MSTSynthesizer(1.0, domain=DOMAIN, max_iters=100, random_state=0, constraints=_RULES),
                        (), None),
    "View-constraints": (lambda: _view(constraints=_RULES), (), None),
    "Partition-constraints": (lambda: _partition(constraints=_RULES), (), None),
    "MST-compress=False": (lambda: MSTSynthesizer(1.0, domain=DOMAIN, compress=False, max_iters=100,
                                                  random_state=0), (), None),
    # The default for a release: noise from the OS CSPRNG (SystemRandomGenerator), which the spies wrap as what it
    # is.  Which draws a fit makes and what it charges do not depend on the noise values, so no seed is needed.
    "MST-random_state=None": (lambda: MSTSynthesizer(1.0, domain=DOMAIN, max_iters=100), (), None),
    "Partition-random_state=None": (lambda: _partition(random_state=None), (), None),
    "Hybrid-protocol=indicator": (lambda: _hybrid(protocol="indicator", partition=_explicit_grid()),
                                  (UNCHARGED_SELECTION,), None),
    "Hybrid-protocol=indicator-no-shortcut": (
        lambda: _hybrid(protocol="indicator", local_marginal_shortcut=False, partition=_explicit_grid()),
        (UNCHARGED_SELECTION,), None),
    "Hybrid-protocol=indicator-simulated-roster": (lambda: _hybrid(protocol="indicator"), (UNCHARGED_SELECTION,),
                                                   PrivacyLeakWarning),
    "Hybrid-secure_computation=cryptographic": (lambda: _hybrid(secure_computation="cryptographic"),
                                                (UNCHARGED_SELECTION,), None),
    "Hybrid-charge_selection=True": (lambda: _hybrid(charge_selection=True), (), None),
    "Hybrid-init=uniform": (lambda: _hybrid(init="uniform"), (UNCHARGED_SELECTION,), None),
    "Hybrid-selection_scores=pairs": (lambda: _hybrid(workload=3, selection_scores="pairs"), (UNCHARGED_SELECTION,),
                                      None),
    "Hybrid-variance_model=paper_bound": (lambda: _hybrid(variance_model="paper_bound", workload=3),
                                          (UNCHARGED_SELECTION,), PaperBoundWarning),
    "Hybrid-n_repeats=2": (lambda: _hybrid(n_repeats=2), (UNCHARGED_SELECTION,), UserWarning),
    "Hybrid-paper_reproduction": (lambda: _hybrid(paper_reproduction=True), (), UserWarning),
    "Partition-strict-model-uniform": (lambda: _partition(partition_source="model", measurement_form="uniform"),
                                       (), None),
    "Partition-strict-model-aggregate": (lambda: _partition(partition_source="model"), (), None),
    "Partition-strict-initial_model-uniform": (lambda: _partition(measurement_form="uniform"), (), None),
    "Partition-strict_utility=efficiency": (lambda: _partition(strict_utility="efficiency"), (), None),
    "Partition-max_partition_steps=0": (lambda: _partition(max_partition_steps=0), (), None),
    "Partition-paper": (lambda: _partition(privacy_mode="paper"), (), PrivacyLeakWarning),
    "Partition-paper-uniform": (lambda: _partition(privacy_mode="paper", measurement_form="uniform"), (),
                                PrivacyLeakWarning),
    "View-variant=dpview+": (lambda: _view(variant="dpview+", view_size=3), (), None),
    "View-view_size=auto-paid-count": (lambda: _view(view_size="auto"), (), None),
    "View-view_size=auto-n_public": (lambda: _view(view_size="auto", n_public=600), (), None),
    "VerticalMRF-encoder=fo": (lambda: _vertical(encoder="fo"), (), PrivacyLeakWarning),
    "VerticalMRF-encoder=fo-paper-accounting": (lambda: _vertical(encoder="fo", fo_accounting="paper"), (),
                                                PrivacyLeakWarning),
    "VerticalMRF-encoder=none": (lambda: _vertical(encoder="none"), (), None),
    "VerticalMRF-his_rec=uniform": (lambda: _vertical(his_rec="uniform"), (), None),
    "VerticalMRF-sketch_accounting=rdp_opt": (lambda: _vertical(sketch_accounting="rdp_opt"), (), None),
    "VerticalMRF-local_mrf=mst": (lambda: _vertical(local_mrf="mst", local_mrf_params={"max_iters": 30}), (), None),
    "VerticalMRF-n_bins=None": (lambda: _vertical(n_bins=None), (), None),
    "VerticalMRF-secure_computation=cryptographic": (lambda: _vertical(secure_computation="cryptographic"), (),
                                                     None),
    "VerticalMRF-over-the-runtime": (_VerticalOverTheRuntime, (), None),
    "VerticalMRF-over-the-runtime-local_mrf=mst": (
        lambda: _VerticalOverTheRuntime(local_mrf="mst", local_mrf_params={"max_iters": 30}), (), None),
}


def _fit(make, warning, X, spy):
    """Fit; when the fit's own budget check refuses its ledger, say first which draws that ledger does not pay."""
    estimator = make()
    try:
        with pytest.warns(warning) if warning is not None else contextlib.nullcontext():
            return estimator.fit(X)
    except RuntimeError:
        for refused in spy.calls_to("check_spend")[-1:]:
            reconcile(refused.args["ledger"], spy)
        raise


def _spends_its_budget(fitted) -> None:
    """A synthesizer's ledger sums to its budget, a transformer's to at most its budget (as each fit checks itself,
    to a relative 1e-9)."""
    ledger = fitted.privacy_ledger_
    paid = [e for e in ledger if e.accounting != "leak"]
    if isinstance(fitted, ViewSynthesizer):
        assert ledger.total_epsilon() == pytest.approx(fitted.epsilon, rel=1e-9)
    elif isinstance(fitted, VerticalMRFSynthesizer):
        assert math.fsum(e.epsilon for e in paid) == pytest.approx(fitted.epsilon, rel=1e-9)
        assert math.fsum(e.delta for e in paid) == pytest.approx(fitted.delta, rel=1e-9)
    elif isinstance(fitted, HybridSynthesizer):
        assert ledger.total_zcdp() == pytest.approx(fitted.privacy_report_["rho_true"], rel=1e-9)
    elif hasattr(fitted, "rho_"):
        assert ledger.total_zcdp() == pytest.approx(fitted.rho_, rel=1e-9)
    else:
        assert math.fsum(e.epsilon for e in paid) <= fitted.epsilon * (1 + 1e-9)
        assert math.fsum(e.delta for e in paid) <= (getattr(fitted, "delta", None) or 0.0) * (1 + 1e-9)


def _sub_fits_get_the_public_domain(fitted, spy) -> None:
    """A fit inside the fit (VertiMRF's local learners) is given the public domain of its columns, never one read
    from the data (VertiMRF, Section 5.1: LocMRF on the party's columns)."""
    public = fitted.domain_.to_dict()
    for fit in spy.calls_to("fit"):
        if fit.parent is not None:
            learner = fit.args["self"]
            assert learner.domain_.to_dict() == {c: public[c] for c in learner.domain_.attrs}, \
                f"a sub-fit got the domain {learner.domain_.to_dict()}"
            assert learner.privacy_ledger_.is_private


def _check(fitted, spy, allow):
    counts = reconcile(fitted.privacy_ledger_, spy, allow=allow)
    matched = sum(v for k, v in counts.items() if k != "allowed")
    assert matched > 0, "no draw was matched: the spies saw nothing"
    if allow:  # the one exception, RandDPGen's uncharged selection: one draw a round, no more
        assert len(counts["allowed"]) == fitted.n_rounds_
    _spends_its_budget(fitted)
    if hasattr(fitted, "domain_"):
        _sub_fits_get_the_public_domain(fitted, spy)


@pytest.mark.parametrize("name", list(SYNTHESIZERS))
def test_every_draw_of_a_synthesizer_is_charged_once(table, name, monkeypatch):
    make, allow, warning = SYNTHESIZERS[name]
    spy = NoiseSpy(monkeypatch)
    fitted = _fit(make, warning, table, spy)
    _check(fitted, spy, allow)


# fo_accounting="paper" charges the GRR columns their Theorem-1 ε′ (twice the conservative one), so the ledger sums to
# more than the budget and the fit's own spend check refuses it: the option cannot be fitted at all.
_UNFITTABLE = {"VerticalMRF-encoder=fo-paper-accounting": pytest.mark.xfail(
    strict=True, raises=RuntimeError, reason="VerticalMRFSynthesizer(encoder='fo', fo_accounting='paper') spends "
    "more than its budget and its fit raises (reported in issue 39)")}


@pytest.mark.parametrize("name", [pytest.param(name, marks=_UNFITTABLE.get(name, ())) for name in OPTIONS])
def test_every_privacy_option_reconciles(table, name, monkeypatch):
    make, allow, warning = OPTIONS[name]
    spy = NoiseSpy(monkeypatch)
    fitted = _fit(make, warning, table, spy)
    _check(fitted, spy, allow)


@pytest.mark.parametrize("make", [lambda: MSTSynthesizer(1.0, domain=DOMAIN, max_iters=100, random_state=0),
                                  lambda: _view()], ids=["MST", "View"])
def test_continuous_noise_reconciles(table, make, monkeypatch):
    spy = NoiseSpy(monkeypatch)
    with noise_context("continuous"):
        fitted = make().fit(table)
    _check(fitted, spy, ())
    counts = reconcile(fitted.privacy_ledger_, spy)
    assert counts.get("normal", 0) + counts.get("laplace", 0) > 0
    assert "discrete_gaussian" not in counts and "discrete_laplace" not in counts


TRANSFORMERS = {
    "DPKBins-uniform": lambda: DPKBinsDiscretizer(4, epsilon=1.0, random_state=0),
    "DPKBins-quantile": lambda: DPKBinsDiscretizer(4, strategy="quantile", epsilon=1.0, random_state=0),
    "DPKBins-quantile-public-bounds": lambda: DPKBinsDiscretizer(4, strategy="quantile", bounds=(0.0, 100.0),
                                                                 epsilon=1.0, random_state=0),
    "DPCategoricalEncoder": lambda: DPCategoricalEncoder(epsilon=1.0, delta=1e-6, random_state=0),
    "TableDiscretizer": lambda: TableDiscretizer({"x": "numeric", "y": "numeric", "s": "categorical"},
                                                 strategy="quantile", epsilon=1.0, delta=1e-6, random_state=0),
    # Two strategy groups that both spend (one DPKBinsDiscretizer each), besides the categories.
    "TableDiscretizer-two-strategies": lambda: TableDiscretizer(
        {"x": {"type": "numeric", "strategy": "uniform"}, "y": {"type": "numeric", "strategy": "quantile"},
         "s": "categorical"}, epsilon=1.0, delta=1e-6, random_state=0),
}
_COLUMNS = {"DPKBins-uniform": ["x", "y"], "DPKBins-quantile": ["x", "y"], "DPKBins-quantile-public-bounds": ["x"],
            "DPCategoricalEncoder": ["s"], "TableDiscretizer": ["x", "y", "s"],
            "TableDiscretizer-two-strategies": ["x", "y", "s"]}


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_every_draw_of_a_dp_transformer_is_charged_once(raw, name, monkeypatch):
    spy = NoiseSpy(monkeypatch)
    fitted = TRANSFORMERS[name]().fit(raw[_COLUMNS[name]])
    _check(fitted, spy, ())


def test_public_metadata_draws_nothing_and_charges_nothing(raw, monkeypatch):
    spy = NoiseSpy(monkeypatch)
    fitted = [DPKBinsDiscretizer(4, bounds=(0.0, 100.0), epsilon=1.0).fit(raw[["x"]]),
              DPCategoricalEncoder(categories={"s": ["u", "v", "w"]}, epsilon=1.0, delta=1e-6).fit(raw[["s"]])]
    assert spy.draws == [] and all(len(f.privacy_ledger_) == 0 for f in fitted)


def test_a_pipelines_ledger_pays_for_every_step(raw, monkeypatch):
    """The steps' entries are copied into the pipeline's ledger (tagged with the step): still one draw each."""
    spy = NoiseSpy(monkeypatch)
    pipe = SynthesisPipeline([("table", TableDiscretizer({"x": "numeric", "s": "categorical"}, epsilon=0.3,
                                                         delta=1e-6, random_state=0)),
                              ("synth", MSTSynthesizer(0.7, max_iters=50, random_state=0))]).fit(raw[["x", "s"]])
    counts = reconcile(pipe.privacy_ledger_, spy)
    assert counts["discrete_laplace"] > 0 and counts["discrete_gaussian"] > 0 and counts["gumbel"] > 0


# -- the reconciliation fails, and says why, on the bugs it is for ----------------------------------------------------
@pytest.fixture()
def mst_fit(table, monkeypatch):
    spy = NoiseSpy(monkeypatch)
    return MSTSynthesizer(1.0, domain=DOMAIN, max_iters=50, random_state=0).fit(table), spy


def test_a_draw_charged_to_another_ledger_is_named(mst_fit):
    """A measurement charged to a ledger the fit does not keep (here: the fit's ledger without one entry)."""
    fitted, spy = mst_fit
    entries = list(fitted.privacy_ledger_)
    dropped = next(e for e in entries if e.description.startswith("2-way marginal"))
    kept = PrivacyLedger([e for e in entries if e is not dropped])
    with pytest.raises(AssertionError, match=r"uncharged draw discrete_gaussian\(.*size=\d+\) in gaussian_mechanism "
                                             r"at skdpsynth/synthesizers/select_measure\.py.*charged it to another "
                                             r"ledger than the fit's \('2-way marginal"):
        reconcile(kept, spy)


def test_an_entry_without_its_draw_is_named(mst_fit):
    fitted, spy = mst_fit
    padded = fitted.privacy_ledger_.copy()
    padded.add("1-way marginal z", "discrete gaussian", rho=0.01, sensitivity=1.0, scale=7.0, n_values=5)
    with pytest.raises(AssertionError, match=r"ledger entry '1-way marginal z' \(discrete gaussian, scale=7, "
                                             r"n_values=5\) has no matching draw of discrete_gaussian\(49, size=5\)"):
        reconcile(padded, spy)


def test_an_aim_measurement_drawn_twice_averaged_and_charged_once_is_named(table, monkeypatch):
    """The issue's planted bug, planted here by wrapping the measurement AIM calls: half the variance it records."""
    measure = aim_module.measure_marginals

    def twice(codes, domain, cliques, sigma, rng, ledger, **kw):
        first = measure(codes, domain, cliques, sigma, rng, ledger, **kw)
        if len(cliques) == 1 and len(cliques[0]) > 1:   # a round's measurement, not the 1-way start
            second = measure(codes, domain, cliques, sigma, rng, PrivacyLedger(), **kw)
            first[0].values[:] = (first[0].values + second[0].values) / 2
        return first

    monkeypatch.setattr(aim_module, "measure_marginals", twice)
    spy = NoiseSpy(monkeypatch)
    fitted = AIMSynthesizer(1.0, domain=DOMAIN, rounds=8, max_iters=30, final_iters=30, random_state=0).fit(table)
    assert fitted.privacy_ledger_.total_zcdp() == pytest.approx(fitted.rho_)  # the budget check cannot see it
    with pytest.raises(AssertionError, match=r"uncharged draw discrete_gaussian\(.*in gaussian_mechanism at "
                                             r"skdpsynth/synthesizers/select_measure\.py.*charged it to another "
                                             r"ledger than the fit's \('marginal "):
        reconcile(fitted.privacy_ledger_, spy)


def test_an_extra_draw_without_a_ledger_is_named(table, monkeypatch):
    measure = mst_module.measure_marginals

    def with_an_extra_draw(codes, domain, cliques, sigma, rng, ledger, **kw):
        select_measure.gaussian_mechanism(np.zeros(3), sigma=sigma, random_state=rng)  # drawn, never charged
        return measure(codes, domain, cliques, sigma, rng, ledger, **kw)

    monkeypatch.setattr(mst_module, "measure_marginals", with_an_extra_draw)
    spy = NoiseSpy(monkeypatch)
    fitted = MSTSynthesizer(1.0, domain=DOMAIN, max_iters=30, random_state=0).fit(table)
    with pytest.raises(AssertionError, match=r"2 mismatch\(es\)(.|\n)*uncharged draw discrete_gaussian\(.*size=3\) "
                                             r"in gaussian_mechanism at .*test_privacy_reconciliation\.py.*was given "
                                             r"no ledger"):
        reconcile(fitted.privacy_ledger_, spy)


def test_a_stale_exception_is_an_error(table, monkeypatch):
    spy = NoiseSpy(monkeypatch)
    fitted = _hybrid(charge_selection=True).fit(table)
    with pytest.raises(AssertionError, match="covers no draw"):
        reconcile(fitted.privacy_ledger_, spy, allow=[UNCHARGED_SELECTION])


@pytest.mark.parametrize("make", [
    lambda: AIMSynthesizer(1.0, domain=DOMAIN, rounds=8, max_iters=30, final_iters=30, random_state=0),
    lambda: _hybrid(protocol="indicator", partition=_explicit_grid())], ids=["AIM", "Hybrid-indicator"])
def test_the_spies_change_no_draw(table, make, monkeypatch):
    """A seeded fit ends with the same model with and without the spies: they share the generators' bit streams
    (the exact samplers, the Gumbel noise, the parties' continuous noise)."""
    plain = make().fit(table)
    NoiseSpy(monkeypatch)
    spied = make().fit(table)
    assert plain.model_.potentials.keys() == spied.model_.potentials.keys()
    for clique, table_ in plain.model_.potentials.items():
        np.testing.assert_array_equal(table_, spied.model_.potentials[clique])
