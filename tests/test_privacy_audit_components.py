"""Component audits with power: one release of a synthesizer, audited where it happens, beside a planted mutant.

The end-to-end audits of ``test_privacy_audit.py`` run whole fits, so a few hundred runs see a fit's whole budget
spread over many releases and catch only gross leaks.  Here each audit isolates **one** release of a
synthesizer, and its statistic is the released quantity itself:

* MST: the first tree edge, chosen by the exponential mechanism on the candidate pairs' L1 errors, given the
  1-way release (held fixed, see :func:`_mst_setup`);
* AIM: the noisy count of the added record's cell in the marginal measured by the first round;
* PPSyn (strict): the noisy captured contribution ``G̃`` of the round's chosen (marginal, partition) pair;
* DPView: the noisy count of the added record's cell in one view's Laplace table.

Each audit calls the code the synthesizer calls (``MSTSynthesizer._select_tree``; ``measure_marginals``,
``gaussian_mechanism`` and ``measure_views`` as the synthesizer modules name them) with the arguments that a small
real fit passes, caught by a spy on each neighbour, D and D' = D plus the record (1, 1, 1).  So a calibration bug
in the synthesizer (a wrong share of the budget, a wrong σ or ε) reaches the audit through those arguments, and a
bug in the mechanism through the call.  The claim is computed here from the paper or doc page that states it, not
read from the synthesizer.

Beside each audit of the real code, the same audit runs with a planted mutant (by ``monkeypatch``, inside the
test) that doubles what the release reveals: half the noise scale, twice the exponential mechanism's ε, half its
sensitivity, a contribution of sensitivity 2 charged as 1, a budget split forgotten.  Each mutant's bound must
reach at least half of the claim (issue 39's acceptance); these 2x mutants in fact exceed the claim, and the
tests assert it, so the real-code audit's assertion (bound at most the claim) would fail on each of them too.
Two bugs that the issue found uncaught are planted as well: MST's selection charged but replaced by the argmax
of the exact scores (far above the claim), and an AIM measurement drawn twice and averaged with one draw charged
(half the variance: ρ doubled, not quadrupled; it must reach half of the claim, and does not exceed it with
these runs).

Tolerances: each bound is a Clopper–Pearson lower bound valid with probability 1 - alpha (alpha = 0.05); the
seeds are fixed, so every assertion is deterministic.  A bound above the claim on the real code would be, up to
that alpha, a proof that the claim is false.  Run with ``-s`` to see every bound, claim and ratio.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from skdpsynth import AIMSynthesizer, MSTSynthesizer, PartitionSynthesizer, ViewSynthesizer
from skdpsynth.privacy import PrivacyLedger, cdp_epsilon, cdp_rho, exponential_mechanism_probabilities
from skdpsynth.privacy.audit import DistinguishingEvent
from skdpsynth.synthesizers import aim as aim_module
from skdpsynth.synthesizers import mst as mst_module
from skdpsynth.synthesizers import select_measure
from skdpsynth.synthesizers.partition import rounds as ppsyn_module   # PPSyn's rounds make its releases
from skdpsynth.synthesizers.view import synthesizer as view_module
from test_privacy_audit import run_audit

# Three binary columns; D' adds the record (1, 1, 1).  The counts are chosen for MST (see _mst_setup): the pair
# (a, b) is positively correlated, c goes with a = b = 0, so adding (1, 1, 1) raises the L1 error of (a, b) by 1
# and lowers the other two pairs' by 1.
_COLUMNS = ("a", "b", "c")
_CELLS = {(0, 0, 1): 6, (1, 1, 0): 6, (0, 0, 0): 5, (1, 0, 0): 4, (0, 1, 0): 4}
_RECORD = (1, 1, 1)
_D = pd.DataFrame([cell for cell, count in _CELLS.items() for _ in range(count)], columns=list(_COLUMNS))
_D_PRIME = pd.concat([_D, pd.DataFrame([_RECORD], columns=list(_COLUMNS))], ignore_index=True)
_DOMAIN = {c: 2 for c in _COLUMNS}
_PAIRS = [("a", "b"), ("a", "c"), ("b", "c")]   # MST's candidate edges, in its order


class _Stop(Exception):
    """Ends a spied fit once the release under audit has been captured (the rest of the fit is not audited)."""


def _wrap(monkeypatch, owner, name: str, handler: Callable) -> Callable:
    """Replace ``owner.name`` by ``handler(inner, *args, **kwargs)`` and return ``inner``.

    ``inner`` is what was there: the real function, or a mutant a test planted first.  The audits' releases call
    ``inner`` directly, so a planted mutant is on the audited path and the spy is not.
    """
    inner = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *args, **kwargs: handler(inner, *args, **kwargs))
    return inner


def _neighbour_codes(d_codes: np.ndarray, dprime_codes: np.ndarray) -> tuple:
    """Check that the fits saw D and D' = D plus one record, and return that record's codes."""
    d_codes, dprime_codes = np.asarray(d_codes), np.asarray(dprime_codes)
    assert dprime_codes.shape[0] == d_codes.shape[0] + 1
    np.testing.assert_array_equal(dprime_codes[:-1], d_codes)
    return tuple(int(v) for v in dprime_codes[-1])


def _cell(domain, clique, record: tuple) -> int:
    """Flat (C order) index of ``record``'s cell in the marginal on ``clique``."""
    return int(np.ravel_multi_index(tuple(record[domain.attrs.index(a)] for a in clique), domain.shape_of(clique)))


def _check_power(result, claim: float, *, exceeds: bool = True) -> None:
    """What a planted mutant must do: the bound reaches half of the claim (issue 39's acceptance), and with
    ``exceeds`` passes the claim, so that the real-code audit's assertion would fail on that mutant too."""
    assert result.epsilon_lower_bound >= 0.5 * claim
    if exceeds:
        assert result.epsilon_lower_bound > claim


# =====================================================================================================================
# MST: one edge choice of the spanning tree
# =====================================================================================================================
_MST_EPSILON, _MST_DELTA = 12.0, 1e-3
# The release is the index of the first edge; D' raises the score of (a, b), index 0, and lowers the other two
# alike: the events "(a, b) is picked" and its complement, in either direction, fixed in advance.
_MST_RUNS, _MST_EVENTS = 1000, DistinguishingEvent.all_at(0.5)


def _mst_claim() -> float:
    """ε of one edge choice: MST gives the tree selection a third of ρ and splits it over the d - 1 edges, each an
    exponential mechanism at ε = √(8 (ρ/3) / (d - 1)), i.e. ρ/(3 (d - 1)) = ε²/8 each (McKenna, Miklau & Sheldon,
    "Winning the NIST contest", JPC 2021, MST's selection step; doc/synthesizers.md, "MSTSynthesizer")."""
    rho = cdp_rho(_MST_EPSILON, _MST_DELTA)
    return float(np.sqrt(8.0 * (rho / 3.0) / (len(_COLUMNS) - 1)))


def _mst_setup(monkeypatch) -> SimpleNamespace:
    """The arguments two real MST fits (D and D') pass to ``_select_tree``, and the releases of the first edge.

    The edge choice is audited given the 1-way release, held fixed for both neighbours at one of its possible
    values: D's exact 1-way counts (a noise draw of zeros), with the σ the fit gave them.  The edge scores are
    then set by the data alone: (a, b) gains 1 and the other pairs lose 1 under D', the largest change the
    sensitivity of 1 allows, in opposite directions (the worst case for the non-monotonic mechanism).
    """
    calls = []

    def capture(inner, synth, codes, domain, rho, log1, ledger, rng):
        calls.append(SimpleNamespace(synth=synth, codes=codes, domain=domain, rho=rho, log1=log1))
        raise _Stop

    select_tree = _wrap(monkeypatch, MSTSynthesizer, "_select_tree", capture)
    for frame in (_D, _D_PRIME):
        with pytest.raises(_Stop):
            MSTSynthesizer(_MST_EPSILON, _MST_DELTA, domain=_DOMAIN, compress=False, random_state=0).fit(frame)
    d, dprime = calls
    _neighbour_codes(d.codes, dprime.codes)
    assert list(d.domain.attrs) == list(_COLUMNS)
    codes = np.asarray(d.codes)
    log1 = [dataclasses.replace(m, values=np.bincount(codes[:, j], minlength=d.domain[a]).astype(float))
            for j, (a, m) in enumerate(zip(d.domain.attrs, d.log1))]
    assert [m.clique for m in log1] == [(a,) for a in d.domain.attrs]

    def release(codes):
        def run(rng):
            tree = select_tree(d.synth, codes, d.domain, d.rho, log1, PrivacyLedger(), rng)
            return _PAIRS.index(tree[0])
        return run
    return SimpleNamespace(release_d=release(d.codes), release_dprime=release(dprime.codes))


def _mst_first_scores(setup) -> tuple[np.ndarray, np.ndarray]:
    """The scores MST gives the first edge choice under D and D' (from a spy on its exponential mechanism)."""
    seen = []

    def record(inner, scores, **kwargs):
        seen.append(np.array(scores, dtype=float))
        return inner(scores, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        _wrap(patch, mst_module, "exponential_mechanism", record)
        setup.release_d(np.random.default_rng(0))
        first_d = seen[0]
        seen.clear()
        setup.release_dprime(np.random.default_rng(0))
    return first_d, seen[0]


def test_mst_edge_choice_audit(monkeypatch):
    """MST's first edge choice, given the 1-way release, proves no more than its ε (pure: the mechanism's own)."""
    setup = _mst_setup(monkeypatch)
    claim = _mst_claim()
    scores_d, scores_dprime = _mst_first_scores(setup)
    np.testing.assert_allclose(scores_dprime - scores_d, [1.0, -1.0, -1.0], atol=1e-9)
    # The best event this pair of neighbours allows at the claimed ε (the audit can only approach it).
    p_d, p_dprime = (exponential_mechanism_probabilities(s, claim) for s in (scores_d, scores_dprime))
    print(f"\n[audit] MST first-edge probabilities under D {p_d.round(3)} and D' {p_dprime.round(3)}")
    res, _ = run_audit("MST one edge choice (1-way release fixed)", claim, setup.release_d, setup.release_dprime,
                       n_runs=_MST_RUNS, events=_MST_EVENTS, random_state=51)
    assert res.epsilon_lower_bound <= claim


_MST_MUTANTS = {
    "epsilon doubled": lambda inner, scores, **kw: inner(scores, **{**kw, "epsilon": 2.0 * kw["epsilon"]}),
    "sensitivity halved": lambda inner, scores, **kw: inner(scores, **{**kw, "sensitivity": kw["sensitivity"] / 2}),
    # The uncaught bug: the mechanism is called (and charged), but the tree takes the exact best pair.
    "argmax of the exact scores": lambda inner, scores, **kw: (inner(scores, **kw), int(np.argmax(scores)))[1],
}


@pytest.mark.parametrize("mutant", list(_MST_MUTANTS))
def test_mst_edge_choice_audit_catches_planted_mutant(monkeypatch, mutant):
    _wrap(monkeypatch, mst_module, "exponential_mechanism", _MST_MUTANTS[mutant])
    setup = _mst_setup(monkeypatch)
    claim = _mst_claim()
    if mutant == "argmax of the exact scores":
        scores_d, scores_dprime = _mst_first_scores(setup)
        assert np.argmax(scores_d) != np.argmax(scores_dprime)   # the exact best pair differs between neighbours
    res, _ = run_audit(f"PLANTED MST edge choice: {mutant}", claim, setup.release_d, setup.release_dprime,
                       n_runs=_MST_RUNS, events=_MST_EVENTS, random_state=51)
    _check_power(res, claim)


# =====================================================================================================================
# AIM: one round's noisy cell
# =====================================================================================================================
_AIM_EPSILON, _AIM_DELTA, _AIM_ROUNDS = 10.0, 1e-5, 8
_AIM_RUNS = 4000
# The claim is the measurement's (ε, δ) at this δ: a point of its privacy profile where 4000 runs per neighbour
# see the planted mutants clearly (at δ = 1e-3 the claim is larger and the same runs prove less of it).
_AIM_CLAIM_DELTA = 1e-2


def _aim_claim() -> float:
    """(ε, δ) of one measurement of a round before any annealing: σ = √(T / (2 · 0.9 ρ)), i.e. ρ_t = 0.9 ρ / T
    (McKenna, Mullins, Sheldon & Miklau 2022, Algorithm 1, α = 0.9)."""
    return cdp_epsilon(0.9 * cdp_rho(_AIM_EPSILON, _AIM_DELTA) / _AIM_ROUNDS, _AIM_CLAIM_DELTA)


def _aim_fit_until_round_one(frame: pd.DataFrame, calls: list, used: list) -> None:
    """A real AIM fit, stopped when the first round's measurements are handed to the estimator (its second call).

    ``calls`` receives every ``measure_marginals`` call (arguments and output), ``used`` the last measurement
    the round's estimate is given.
    """
    estimates = []

    def measure(inner, codes, domain, cliques, sigma, rng, ledger, **kwargs):
        out = inner(codes, domain, cliques, sigma, rng, ledger, **kwargs)
        calls.append(SimpleNamespace(codes=codes, domain=domain, cliques=list(cliques), sigma=sigma, kwargs=kwargs,
                                     out=out))
        return out

    def estimate(inner, domain, measurements, **kwargs):
        estimates.append(None)
        if len(estimates) == 2:   # the first model (1-way measurements), then round 1's estimate
            used.append(measurements[-1])
            raise _Stop
        return inner(domain, measurements, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        _wrap(patch, aim_module, "measure_marginals", measure)
        _wrap(patch, aim_module, "mirror_descent", estimate)
        with pytest.raises(_Stop):
            AIMSynthesizer(_AIM_EPSILON, _AIM_DELTA, domain=_DOMAIN, rounds=_AIM_ROUNDS, max_iters=50,
                           random_state=0).fit(frame)


def _aim_setup() -> SimpleNamespace:
    """The first round's measurement as a real AIM fit on D makes it, replayed on D and D'.

    The release is ``measure_marginals`` (what AIM calls) with the arguments AIM passed, on the round's selected
    marginal; the statistic is the noisy count of the record's cell, which D' raises by 1 whichever marginal was
    selected.  The audit is of the measurement given the selection (each is a mechanism of its own).
    """
    d_calls, dprime_calls, used = [], [], []
    _aim_fit_until_round_one(_D, d_calls, used)
    _aim_fit_until_round_one(_D_PRIME, dprime_calls, [])
    # One measurement call for the 1-way marginals, one for the round, and AIM estimates with exactly what the
    # round's call released.
    assert len(d_calls) == 2 and len(d_calls[1].out) == 1
    one_way, round_one = d_calls
    assert used[0] is round_one.out[0]
    record = _neighbour_codes(one_way.codes, dprime_calls[0].codes)
    (clique,) = round_one.cliques
    cell = _cell(round_one.domain, clique, record)
    measure = aim_module.measure_marginals   # the function AIM calls (a test's mutant sits in what it calls)

    def release(codes):
        def run(rng, n):
            out = measure(codes, round_one.domain, [clique] * n, round_one.sigma, rng, PrivacyLedger(),
                          **round_one.kwargs)
            return np.array([m.values[cell] for m in out])
        return run
    print(f"\n[audit] AIM round 1 measured {clique} with sigma {round_one.sigma:.4f}")
    return SimpleNamespace(release_d=release(one_way.codes), release_dprime=release(dprime_calls[0].codes))


def test_aim_round_cell_audit():
    """AIM's first-round measurement proves no more than the (ε, δ) of its ρ_t = 0.9 ρ / T."""
    setup = _aim_setup()
    claim = _aim_claim()
    res, _ = run_audit("AIM round 1 noisy cell", claim, setup.release_d, setup.release_dprime, n_runs=_AIM_RUNS,
                       delta=_AIM_CLAIM_DELTA, batch=True, random_state=52)
    assert res.epsilon_lower_bound <= claim


def _two_draws_averaged(inner, values, **kw):
    """The issue's uncaught bug: a second draw (not charged) averaged in, half the variance the ledger records."""
    return (inner(values, **kw) + inner(values, **{**kw, "ledger": None})) / 2.0


def _noise_halved_charged_as_planned(inner, values, **kw):
    """Half the noise scale, while the ledger is charged what the caller planned.

    (AIM reads its budget from the ledger: a mutant whose ledger charged the halved scale would only spend the
    budget four times faster, an honest if different run.)
    """
    inner(values, **kw)   # the charge (and a draw that is thrown away)
    return inner(values, **{**kw, "sigma": kw["sigma"] / 2.0, "ledger": None})


_AIM_MUTANTS = {
    "noise scale halved": _noise_halved_charged_as_planned,
    "two draws averaged, one charged": _two_draws_averaged,
}


@pytest.mark.parametrize("mutant", list(_AIM_MUTANTS))
def test_aim_round_cell_audit_catches_planted_mutant(monkeypatch, mutant):
    _wrap(monkeypatch, select_measure, "gaussian_mechanism", _AIM_MUTANTS[mutant])
    setup = _aim_setup()
    claim = _aim_claim()
    res, _ = run_audit(f"PLANTED AIM round 1 noisy cell: {mutant}", claim, setup.release_d, setup.release_dprime,
                       n_runs=_AIM_RUNS, delta=_AIM_CLAIM_DELTA, batch=True, random_state=52)
    # Two draws averaged halve the variance (ρ doubled, not quadrupled): half of the claim is what is asked.
    _check_power(res, claim, exceeds=mutant == "noise scale halved")


# =====================================================================================================================
# PPSyn (strict): one round's noisy contribution
# =====================================================================================================================
_PPSYN_RHO = 24.0
_PPSYN_RUNS = 400_000
_PPSYN_CLAIM_DELTA = 1e-3
_PPSYN_OPTION = (("a", "b"), 4)   # the pair audited: marginal (a, b), every cell a group (G = its whole deviation)


def _ppsyn_claim() -> float:
    """(ε, δ) of the noisy contribution: each round's selection budget is ρ_sel = select_frac · ρ / T (PPSyn,
    Algorithm 1 line 4), of which the share contr_frac releases G̃ with Gaussian noise (doc/partition.md, "The
    two privacy modes", steps 3-4); strict mode's defaults are T = 2 d, select_frac = 0.1, contr_frac = 0.5."""
    return cdp_epsilon(0.5 * 0.1 * _PPSYN_RHO / (2 * len(_COLUMNS)), _PPSYN_CLAIM_DELTA)


def _ppsyn_fit_until_contribution(frame: pd.DataFrame, state: SimpleNamespace) -> SimpleNamespace:
    """A real strict PPSyn fit, stopped when the round's noisy contribution reaches the budget formula.

    The 1-way release is held fixed: the D fit records its outputs and the D' fit is given the same ones, so both
    fits build the same model, options and utilities.  The selection is conditioned on the option
    ``_PPSYN_OPTION`` (the mechanism still runs and charges): the contribution of a fixed option is a mechanism of
    its own, whatever the selection would have chosen.
    """
    seen = SimpleNamespace()

    def noise(inner, values, **kwargs):
        what = kwargs["description"]
        out = inner(values, **kwargs)   # charged as in a real fit: the rounds read their budget from the ledger
        if what.startswith("1-way marginal") and what in state.one_way:
            return state.one_way[what].copy()
        if what.startswith("1-way marginal"):
            state.one_way[what] = out.copy()
        elif "captured contribution" in what:
            seen.contribution = SimpleNamespace(values=np.array(values, dtype=float), kwargs=kwargs, out=out)
        return out

    def options(inner, cache, eligible, *args, **kwargs):
        seen.eligible, seen.options = list(eligible), inner(cache, eligible, *args, **kwargs)
        return seen.options

    def select(inner, utility, **kwargs):
        inner(utility, **kwargs)
        clique, n_groups = _PPSYN_OPTION
        return next(j for j, (i, k) in enumerate(zip(seen.options.candidate, seen.options.sizes))
                    if seen.eligible[i] == clique and k == n_groups)

    def budget(inner, sizes, errors, eta, contribution):
        seen.used = contribution
        raise _Stop

    with pytest.MonkeyPatch.context() as patch:
        seen.gaussian = _wrap(patch, ppsyn_module, "gaussian_mechanism", noise)
        _wrap(patch, ppsyn_module, "strict_options", options)
        _wrap(patch, ppsyn_module, "exponential_mechanism", select)
        _wrap(patch, ppsyn_module, "required_rho", budget)
        with pytest.raises(_Stop):
            PartitionSynthesizer(rho=_PPSYN_RHO, domain=_DOMAIN, random_state=0).fit(frame)
    return seen


def _ppsyn_setup() -> SimpleNamespace:
    """The noisy contribution as real fits on D and D' release it, replayed in batches (one value, n copies)."""
    state = SimpleNamespace(one_way={})
    d = _ppsyn_fit_until_contribution(_D, state)
    dprime = _ppsyn_fit_until_contribution(_D_PRIME, state)
    assert d.eligible == dprime.eligible
    np.testing.assert_array_equal(d.options.sizes, dprime.options.sizes)
    # PPSyn goes on with exactly what the mechanism released (clipped at 0: post-processing).
    assert d.used == max(0.0, float(d.contribution.out[0]))
    print(f"\n[audit] PPSyn contribution G under D {d.contribution.values[0]:.4f}, under D' "
          f"{dprime.contribution.values[0]:.4f}")

    def release(call):
        def run(rng, n):
            return d.gaussian(np.full(n, call.values[0]), **{**call.kwargs, "random_state": rng, "ledger": None})
        return run
    return SimpleNamespace(release_d=release(d.contribution), release_dprime=release(dprime.contribution),
                           change=float(dprime.contribution.values[0] - d.contribution.values[0]))


def test_ppsyn_contribution_audit():
    """PPSyn's noisy contribution proves no more than the (ε, δ) of contr_frac · select_frac · ρ / T."""
    setup = _ppsyn_setup()
    # The pair of neighbours moves G by its whole sensitivity (the record's cell is above the model's count).
    assert setup.change == pytest.approx(1.0, abs=1e-9)
    claim = _ppsyn_claim()
    res, _ = run_audit("PPSyn strict noisy contribution", claim, setup.release_d, setup.release_dprime,
                       n_runs=_PPSYN_RUNS, delta=_PPSYN_CLAIM_DELTA, batch=True, random_state=53)
    assert res.epsilon_lower_bound <= claim


def _doubled_contribution(inner, *args, **kwargs):
    """G released at twice its value: sensitivity 2, charged as 1."""
    options = inner(*args, **kwargs)
    return dataclasses.replace(options, captured=2.0 * options.captured)


def _contribution_noise_halved(inner, values, **kwargs):
    if "captured contribution" in kwargs["description"]:
        kwargs = {**kwargs, "rho": 4.0 * kwargs["rho"]}   # σ = 1/√(2ρ): half the noise scale
    return inner(values, **kwargs)


_PPSYN_MUTANTS = {"noise scale halved": ("gaussian_mechanism", _contribution_noise_halved),
                  "contribution of sensitivity 2": ("strict_options", _doubled_contribution)}


@pytest.mark.parametrize("mutant", list(_PPSYN_MUTANTS))
def test_ppsyn_contribution_audit_catches_planted_mutant(monkeypatch, mutant):
    _wrap(monkeypatch, ppsyn_module, *_PPSYN_MUTANTS[mutant])
    setup = _ppsyn_setup()
    claim = _ppsyn_claim()
    res, _ = run_audit(f"PLANTED PPSyn noisy contribution: {mutant}", claim, setup.release_d, setup.release_dprime,
                       n_runs=_PPSYN_RUNS, delta=_PPSYN_CLAIM_DELTA, batch=True, random_state=53)
    _check_power(res, claim)


# =====================================================================================================================
# DPView: one view's Laplace table
# =====================================================================================================================
_VIEW_EPSILON = 2.0
_VIEW_RUNS = 4000


def _view_setup(monkeypatch) -> SimpleNamespace:
    """The arguments real DPView fits on D and D' pass to ``measure_views``; the release is one view's table.

    With ``view_size=2`` the plan has two views of four cells; DPView gives view i the share P_i of ε that
    minimises Σ s_i / P_i² (Lin, Yu & Huang, Section IV-D), equal shares for equal sizes: the claim is ε/2.
    """
    calls = []

    def capture(inner, codes, domain, views, epsilons, rng, ledger, kinds=None):
        calls.append(SimpleNamespace(codes=codes, domain=domain, views=list(views), epsilons=list(epsilons),
                                     kinds=list(kinds)))
        raise _Stop

    measure = _wrap(monkeypatch, view_module, "measure_views", capture)
    for frame in (_D, _D_PRIME):
        with pytest.raises(_Stop):
            ViewSynthesizer(_VIEW_EPSILON, domain=_DOMAIN, view_size=2, random_state=0).fit(frame)
    d, dprime = calls
    record = _neighbour_codes(d.codes, dprime.codes)
    assert d.views == dprime.views and d.kinds == dprime.kinds   # public: the plan depends on the domain only
    sizes = [int(np.prod([d.domain.shape[a] for a in view])) for view in d.views]
    assert len(sizes) == 2 and sizes[0] == sizes[1]
    view, epsilon, kind = d.views[0], d.epsilons[0], d.kinds[0]
    cell = tuple(record[a] for a in view)

    def release(codes):
        def run(rng, n):
            tables = measure(codes, d.domain, [view] * n, [epsilon] * n, rng, PrivacyLedger(), [kind] * n)
            return np.array([table[cell] for table in tables])
        return run
    return SimpleNamespace(release_d=release(d.codes), release_dprime=release(dprime.codes))


def test_dpview_view_cell_audit(monkeypatch):
    """One of DPView's two Laplace views proves no more than its ε/2."""
    setup = _view_setup(monkeypatch)
    claim = _VIEW_EPSILON / 2
    res, _ = run_audit("DPView one view's noisy cell", claim, setup.release_d, setup.release_dprime,
                       n_runs=_VIEW_RUNS, batch=True, random_state=54)
    assert res.epsilon_lower_bound <= claim


_VIEW_MUTANTS = {
    "Laplace scale halved": ("laplace_mechanism",
                             lambda inner, values, **kw: inner(values, **{**kw, "epsilon": 2.0 * kw["epsilon"]})),
    # Every view measured with the whole ε (the split of Section IV-D forgotten).
    "budget split forgotten": ("_split_budget", lambda inner, epsilon, shares: [float(epsilon)] * len(shares)),
}


@pytest.mark.parametrize("mutant", list(_VIEW_MUTANTS))
def test_dpview_view_cell_audit_catches_planted_mutant(monkeypatch, mutant):
    _wrap(monkeypatch, view_module, *_VIEW_MUTANTS[mutant])
    setup = _view_setup(monkeypatch)
    claim = _VIEW_EPSILON / 2
    res, _ = run_audit(f"PLANTED DPView one view's noisy cell: {mutant}", claim, setup.release_d,
                       setup.release_dprime, n_runs=_VIEW_RUNS, batch=True, random_state=54)
    _check_power(res, claim)
