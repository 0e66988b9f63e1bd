"""Plant known privacy bugs in a copy of the repository and check that the tests meant for them fail.

    python -m skdpsynth.benchmarks.privacy_mutants                      # the whole catalogue, one at a time
    python -m skdpsynth.benchmarks.privacy_mutants --list               # the catalogue, and whether each applies
    python -m skdpsynth.benchmarks.privacy_mutants --only mst_tree_sensitivity_quarter aim_measurement_drawn_twice
    python -m skdpsynth.benchmarks.privacy_mutants --jobs 2 --timeout 900
    python -m skdpsynth.benchmarks.privacy_mutants --only NAME --all-tests   # what else in the suite catches it

A *mutant* is a small, realistic privacy bug written against the current
source: one or more exact text replacements (each old text must occur exactly
once in its file, otherwise the mutant is reported **STALE**: the code moved
and the mutant must be rewritten, never silently skipped) and the tests that
must catch it (pytest node ids or test files, optionally a ``-k``
expression).  For each mutant the script copies the repository's
``skdpsynth/``, ``tests/``, ``doc/`` (without its build output),
``pyproject.toml`` and ``setup.cfg`` to a temporary folder, applies the
patch there, and runs pytest on the named tests in that copy (``PYTHONPATH``
and the working directory set to it; a probe plugin records which
``skdpsynth`` the run imported, and a run that did not import the copy's is
an **ERROR**).  The source tree itself is never modified.

Results, one row per mutant in a markdown table on stdout:

``caught``
    a named test failed (the table gives the first one and its first failure line);
``NOT CAUGHT``
    every named test passed;
``caught only by an unrelated test``
    with ``--all-tests``: no named test failed, another test of the suite did
    (an assertion that fails by chance is no protection);
``STALE``
    a patch's old text does not occur exactly once;
``ERROR``
    the patched file does not compile, a named test file does not exist yet,
    pytest could not run (collection error, usage error, nothing collected),
    the run timed out, or a named test already fails without the mutant.

Before the mutants, the named tests (the whole suite with ``--all-tests``) run
once on an unmodified copy: a failure there is not counted as a catch.  The
exit status is 0 only if every mutant run is ``caught``.

This is not part of CI: each mutant costs a copy of the tree and a pytest
start (about 3 s) plus its tests, and the whole catalogue minutes on two cores
(the "Testing privacy" section of ``doc/privacy.md`` gives the measured time).
Run it before a release and before closing any issue that touches a release
path.  It needs a source checkout
(the ``tests/`` folder next to the package); from an installed package it
stops with a message saying so.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

CAUGHT = "caught"
NOT_CAUGHT = "NOT CAUGHT"
UNRELATED = "caught only by an unrelated test"
STALE = "STALE"
ERROR = "ERROR"

# What a copy needs for the tests to run as in CI (doc/: the Markdown doctests, doc/api.rst, doc/privacy.md); the
# caches and the documentation's build output, which no test reads, are left out.
_COPIED = ("skdpsynth", "tests", "doc", "pyproject.toml", "setup.cfg")
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", "_build", "auto_examples",
                                  "generated")
# The pytest runs in progress, stopped together on Ctrl-C (see run_pytest).
_RUNNING: set[subprocess.Popen] = set()
_LOCK = threading.Lock()
_STOPPING = threading.Event()
_PROBE = "_skdpsynth_mutant_probe"
_PROBE_ENV = "SKDPSYNTH_MUTANT_PROBE"
_PROBE_SOURCE = '''"""Written by skdpsynth.benchmarks.privacy_mutants: records which skdpsynth this test run imports."""
import os


def pytest_configure(config):
    import skdpsynth

    with open(os.environ["{env}"], "w", encoding="utf-8") as out:
        out.write(os.path.realpath(skdpsynth.__file__))
'''.format(env=_PROBE_ENV)


@dataclass(frozen=True)
class Patch:
    """Replace ``old`` (which must occur exactly once) by ``new`` in ``file`` (relative to the repository root)."""

    file: str
    old: str
    new: str


@dataclass(frozen=True)
class Mutant:
    """A planted privacy bug: its patches and the tests that must catch it.

    ``tests`` are pytest node ids or test files relative to the repository
    root; ``keyword`` is an optional ``-k`` expression applied to them.
    """

    name: str
    component: str
    description: str
    patches: tuple[Patch, ...]
    tests: tuple[str, ...]
    keyword: str | None = None


@dataclass
class Result:
    """The outcome of one mutant (see the module docstring for the statuses)."""

    name: str
    component: str
    status: str
    caught_by: tuple[str, ...] = ()
    detail: str = ""
    unrelated: tuple[str, ...] = ()
    seconds: float = 0.0


@dataclass
class PytestRun:
    """One pytest run in a copy: exit code, the test ids it ran, the failed ones with their first line."""

    exit_code: int
    ran: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    imported: str = ""
    output: str = ""
    timed_out: bool = False


def _mutant(name: str, component: str, description: str, file: str, old: str, new: str, tests: Sequence[str], *,
            more: Sequence[Patch] = (), keyword: str | None = None) -> Mutant:
    return Mutant(name, component, description, (Patch(file, old, new), *more), tuple(tests), keyword)


_MST = "skdpsynth/synthesizers/mst.py"
_AIM = "skdpsynth/synthesizers/aim.py"
_HYBRID = "skdpsynth/synthesizers/hybrid/synthesizer.py"
_HYBRID_ROUNDS = "skdpsynth/synthesizers/hybrid/rounds.py"
_PPSYN = "skdpsynth/synthesizers/partition/rounds.py"
_VIEW = "skdpsynth/synthesizers/view/synthesizer.py"
_VERTICAL = "skdpsynth/synthesizers/vertical_mrf/party.py"
_KBINS = "skdpsynth/preprocessing/discretizer.py"
_ENCODER = "skdpsynth/preprocessing/encoder.py"
_SELECTION = "tests/test_privacy_selection.py"
_RECONCILIATION = "tests/test_privacy_reconciliation.py"
_POSTPROCESSING = "tests/test_privacy_postprocessing.py"
_COMPONENT_AUDITS = "tests/test_privacy_audit_components.py"
# VertiMRF's parties behind the federated runtime (VerticalPartyServer): the mutants of party.py reach them too.
_VERTICAL_RUNTIME = _RECONCILIATION + "::test_every_privacy_option_reconciles[VerticalMRF-over-the-runtime]"
_VERTICAL_RUNTIME_MST = _VERTICAL_RUNTIME.replace("runtime]", "runtime-local_mrf=mst]")

# A mutant marked "expected-pending" names the test file where its check belongs, no test of which catches it
# yet: it stays NOT CAUGHT (and the script's exit status non-zero) until one does.
CATALOGUE: tuple[Mutant, ...] = (
    # -- the six planted bugs of issue 39 that the suite did not catch --------------------------------------------
    _mutant("mst_tree_argmax_after_em", "MSTSynthesizer",
            "tree selection calls and charges the exponential mechanism, then takes the argmax of the exact scores",
            _MST, "            a, b = open_pairs[i]\n",
            "            i = int(np.argmax(scores))\n            a, b = open_pairs[i]\n",
            [_SELECTION + "::test_mst_tree_edges_are_the_mechanisms_picks",
             _COMPONENT_AUDITS + "::test_mst_edge_choice_audit"]),
    _mutant("mst_tree_sensitivity_quarter", "MSTSynthesizer",
            "tree selection with sensitivity 0.25 instead of 1 (four times the stated epsilon)",
            _MST, "i = exponential_mechanism(scores, epsilon=epsilon, sensitivity=1.0,",
            "i = exponential_mechanism(scores, epsilon=epsilon, sensitivity=0.25,",
            [_SELECTION + "::test_mst_tree_edges_are_the_mechanisms_picks",
             _COMPONENT_AUDITS + "::test_mst_edge_choice_audit"]),
    _mutant("mst_compression_stores_exact_counts", "MSTSynthesizer",
            "domain compression stores the exact 1-way counts and sample() draws rare values by them",
            _MST, "            self.compression_ = DomainCompression(domain, log1)\n",
            "            self.compression_ = DomainCompression(domain, log1)\n"
            "            self.compression_.counts = {a: t.ravel().astype(float) for (a,), t in\n"
            "                                        marginals(codes, domain, [(a,) for a in domain]).items()}\n",
            [_POSTPROCESSING + "::test_nothing_reachable_is_a_true_marginal_or_the_noise_stream",
             _POSTPROCESSING + "::test_mst_samples_the_canary_as_the_city_nobody_lives_in"],
            more=[Patch(_MST, "            if rare.size:\n"
                              "                res[is_rare] = rare[rng.integers(0, rare.size, size=int(is_rare.sum()))]\n",
                        "            if rare.size:\n"
                        "                counts = getattr(self, \"counts\", {}).get(a)\n"
                        "                weights = np.ones(rare.size) if counts is None else counts[rare] + 1e-9\n"
                        "                res[is_rare] = rare[rng.choice(rare.size, size=int(is_rare.sum()),\n"
                        "                                               p=weights / weights.sum())]\n")]),
    _mutant("sample_continues_the_noise_generator", "BaseSynthesizer (every synthesizer)",
            "sample() draws from the fit's noise generator instead of a stream of its own",
            "skdpsynth/synthesizers/base.py",
            "        del codes, coded, frame, rng  # nothing below may look at the data or the noise\n",
            "        del codes, coded, frame  # nothing below may look at the data\n",
            [_POSTPROCESSING + "::test_sample_leaves_the_noise_generators_untouched",
             _POSTPROCESSING + "::test_nothing_reachable_is_a_true_marginal_or_the_noise_stream"],
            more=[Patch("skdpsynth/synthesizers/base.py", "        self._sample_rng = check_random_state(sample_state)\n",
                        "        self._sample_rng = rng\n")]),
    _mutant("ppsyn_model_partitions_from_true_answers", "PartitionSynthesizer",
            "strict mode with partition_source='model' partitions the true answers instead of the model's",
            _PPSYN, "        proxies = projected if self.initial_proxy is None else self.initial_proxy\n",
            "        proxies = {w: self.answers[w] for w in eligible} if self.initial_proxy is None else self.initial_proxy\n",
            [_SELECTION + "::test_ppsyn_strict_partitions_only_released_values",
             _SELECTION + "::test_the_data_is_read_only_through_the_mechanisms"]),
    _mutant("aim_measurement_drawn_twice", "AIMSynthesizer",
            "a round's measurement is drawn twice and averaged, charged once (half the variance the ledger states)",
            _AIM, "        return measure_marginals(self.codes, self.domain, plan.chosen, plan.sigma, self.rng, self.ledger)\n",
            "        new = measure_marginals(self.codes, self.domain, plan.chosen, plan.sigma, self.rng, self.ledger)\n"
            "        again = measure_marginals(self.codes, self.domain, plan.chosen, plan.sigma, self.rng,\n"
            "                                  PrivacyLedger())\n"
            "        new[0].values[:] = (new[0].values + again[0].values) / 2\n"
            "        return new\n",
            [_RECONCILIATION + "::test_every_draw_of_a_synthesizer_is_charged_once",
             _COMPONENT_AUDITS + "::test_aim_round_cell_audit"]),
    # -- the nine the suite caught (issue 39) -------------------------------------------------------------------
    _mutant("gaussian_noise_scale_halved", "gaussian_mechanism",
            "discrete Gaussian noise drawn at half the standard deviation the ledger records",
            "skdpsynth/privacy/mechanisms.py", "        variance = float(np.nextafter(sigma * sigma, np.inf))\n",
            "        variance = float(np.nextafter(sigma * sigma / 4, np.inf))\n",
            ["tests/test_privacy_audit.py::test_audit_gaussian_mechanism"]),
    _mutant("measurement_charged_to_a_throwaway_ledger", "measure_marginals (MST, AIM)",
            "every marginal measurement is charged to a fresh ledger that is thrown away",
            "skdpsynth/synthesizers/select_measure.py",
            "            marginal(codes, domain, clique).ravel(), sigma=s, random_state=rng, ledger=ledger,\n",
            "            marginal(codes, domain, clique).ravel(), sigma=s, random_state=rng, ledger=PrivacyLedger(),\n",
            ["tests/test_mst_aim.py::test_mst_ledger_tree_and_budget"]),
    _mutant("bp_child_message_not_divided_out", "belief_propagation",
            "the downward pass does not divide out the message the child sent up (counted twice)",
            "skdpsynth/graphical/inference.py", "            msg -= msg_up[c].reshape(in_child)\n", "",
            ["tests/test_graphical.py::test_belief_propagation_matches_brute_force"]),
    _mutant("bp_upward_message_loses_its_shift", "belief_propagation",
            "the upward messages drop the shift of their exponentiated tables",
            "skdpsynth/graphical/inference.py",
            "        msg = np.log(np.maximum(sums, _TINY * peak))\n        msg += shift\n",
            "        msg = np.log(np.maximum(sums, _TINY * peak))\n",
            ["tests/test_graphical.py::test_belief_propagation_matches_brute_force"]),
    _mutant("dp_bounds_read_from_the_data", "DPKBinsDiscretizer",
            "the DP bounds charge the noisy histogram but return the data's min and max",
            _KBINS, "    return _widen(float(buckets.lows[passing[0]]), float(buckets.highs[passing[-1]]))\n",
            "    return _widen(float(values.min()), float(values.max()))\n",
            ["tests/test_preprocessing_discretizer.py::test_dp_bounds_power_of_two_and_ledger"]),
    _mutant("ppsyn_initial_partitions_from_true_answers", "PartitionSynthesizer",
            "strict mode's default partition source (the first model) replaced by the true answers",
            _PPSYN, "            initial_proxy = ({w: model.project(w) for w in self.candidates}",
            "            initial_proxy = ({w: self.answers[w] for w in self.candidates}",
            ["tests/test_partition_synthesizer.py::test_strict_mode_partitions_model_marginals_only"]),
    _mutant("aim_annealing_on_true_marginals", "AIMSynthesizer",
            "the annealing test measures the model's movement from the true marginal, not from its earlier answer",
            _AIM, "        before = [model.project(c).ravel() for c in plan.chosen]\n",
            "        before = [self.errors.answers[c] for c in plan.chosen]\n",
            ["tests/test_mst_aim.py::test_aim_annealing_test_waits_for_a_noise_stopped_round_to_settle"]),
    _mutant("unseeded_noise_from_a_fixed_seed", "noise_generator",
            "random_state=None gives a generator with a fixed seed instead of OS entropy",
            "skdpsynth/privacy/randomness.py",
            "        return SystemRandomGenerator() if random_state is None else random_state\n",
            "        return np.random.default_rng(0) if random_state is None else random_state\n",
            ["tests/test_privacy_holes.py::test_seeded_noise_can_be_stripped_from_a_pickle_and_unseeded_cannot"]),
    _mutant("category_threshold_without_plus_one", "DPCategoricalEncoder",
            "the (epsilon, delta) release threshold without its +1 (a value held by one record is released too often)",
            _ENCODER, "    return 1.0 + max(math.log(1.0 / ((1.0 + math.exp(-epsilon)) * delta)), 0.0) / epsilon\n",
            "    return max(math.log(1.0 / ((1.0 + math.exp(-epsilon)) * delta)), 0.0) / epsilon\n",
            ["tests/test_preprocessing_encoder.py::test_threshold_formula_bounds_both_laplace_tails",
             "tests/test_preprocessing_encoder.py::test_single_occurrence_release_rate_at_most_delta"]),
    # -- analogues in every synthesizer: wrong sensitivity, exact statistic stored, extra or uncharged draw, a
    # non-default option fed private data -------------------------------------------------------------------------
    _mutant("mst_tree_best_of_two_draws", "MSTSynthesizer",
            "each tree edge takes the better of two exponential-mechanism draws, the second one uncharged",
            _MST, "            a, b = open_pairs[i]\n",
            "            j = exponential_mechanism(scores, epsilon=epsilon, sensitivity=1.0, random_state=rng)\n"
            "            if scores[j] > scores[i]:\n"
            "                i = j\n"
            "            a, b = open_pairs[i]\n",
            [_SELECTION + "::test_mst_tree_edges_are_the_mechanisms_picks",
             _RECONCILIATION + "::test_every_draw_of_a_synthesizer_is_charged_once"]),
    _mutant("mst_uncompressed_exact_one_way", "MSTSynthesizer",
            "compress=False fits the model to the exact 1-way marginals (the noisy ones are charged and dropped)",
            _MST, "            self.compression_ = None\n            work_domain = domain\n",
            "            self.compression_ = None\n            work_domain = domain\n"
            "            log1 = [Measurement(m.clique, marginals(codes, domain, [m.clique])[m.clique].ravel(), m.sigma)\n"
            "                    for m in log1]\n",
            [_SELECTION + "::test_mst_tree_edges_are_the_mechanisms_picks",
             _SELECTION + "::test_the_data_is_read_only_through_the_mechanisms"]),
    _mutant("aim_selection_sensitivity_ignores_weights", "AIMSynthesizer",
            "selection with sensitivity 1 instead of the largest candidate weight",
            _AIM, "            sensitivity = next(self.abs_weight[i] for i in self.by_abs_weight if eligible(i))\n",
            "            sensitivity = 1.0\n",
            [_SELECTION + "::test_aim_measures_the_lazy_mechanisms_pick"]),
    _mutant("aim_stores_candidate_errors", "AIMSynthesizer",
            "the fitted estimator keeps the candidates' errors, which hold every true candidate marginal",
            _AIM, "        self.selected_ = []\n",
            "        self.selected_ = []\n        self.candidate_errors_ = errors\n",
            [_POSTPROCESSING + "::test_nothing_reachable_is_a_true_marginal_or_the_noise_stream"]),
    _mutant("aim_round_stopping_none_anneals_on_true_answers", "AIMSynthesizer",
            "round_stopping=None (not the default) runs the annealing test against the true marginal",
            _AIM, "        before = [model.project(c).ravel() for c in plan.chosen]\n",
            "        before = [model.project(c).ravel() if synth.round_stopping == \"noise\" else self.errors.answers[c]\n"
            "                  for c in plan.chosen]\n",
            [_SELECTION + "::test_the_data_is_read_only_through_the_mechanisms"]),
    # -- issue 40: AIM's sampled scores and several selections per round ------------------------------------------
    _mutant("aim_sampled_scores_from_the_data", "AIMSynthesizer",
            "sampled scoring draws its records from the data instead of the model (A_r then depends on D)",
            "skdpsynth/synthesizers/select_measure.py",
            "        records = sample_model(model, n_records=n_samples, method=\"round\", random_state=rng)\n",
            "        records = self.records[rng.integers(0, len(self.records), n_samples)]\n",
            [_SELECTION + "::test_aim_sampled_scores_read_the_data_only_through_the_true_marginals"],
            more=[Patch(_AIM, "        errors = CandidateErrors(domain, answers, candidates)\n",
                        "        errors = CandidateErrors(domain, answers, candidates)\n"
                        "        errors.records = np.asarray(codes)\n")]),
    _mutant("aim_round_selections_charged_once", "AIMSynthesizer",
            "a round of several selections charges only its first to the ledger",
            _AIM, "                                                  ledger=ledger, description=\"select a marginal\")\n",
            "                                                  ledger=ledger if not chosen else PrivacyLedger(),\n"
            "                                                  description=\"select a marginal\")\n",
            [_SELECTION + "::test_aim_measures_the_lazy_mechanisms_pick"]),
    _mutant("ppsyn_sampled_deviations_from_the_data", "PartitionSynthesizer",
            "sampled scoring's model marginals replaced by the data's (the deviations then depend on D twice)",
            _PPSYN, "            projected.update((w, model.total * p) for w, p in shares.items())\n",
            "            projected.update((w, self.answers[w] * model.total / self.answers[w].sum()) for w in shares)\n",
            [_SELECTION + "::test_ppsyn_sampled_picks_read_the_data_only_through_the_true_marginals",
             _SELECTION + "::test_the_data_is_read_only_through_the_mechanisms"]),
    _mutant("ppsyn_round_picks_charged_once", "PartitionSynthesizer",
            "a round of several selections charges only its first pick's mechanism to the ledger",
            _PPSYN, "            ledger=ledger, random_state=rng, description=description)\n",
            "            ledger=PrivacyLedger(), random_state=rng, description=description)\n",
            ["tests/test_partition_synthesizer.py::test_sampled_scoring_with_several_selections_per_round"]),
    _mutant("randdpgen_selection_sensitivity_min_weight", "HybridSynthesizer",
            "the charged selection (charge_selection=True) with the smallest workload weight as its sensitivity",
            _HYBRID_ROUNDS, "        self.sensitivity = max(weights.values())\n", "        self.sensitivity = min(weights.values())\n",
            [_SELECTION + "::test_randdpgen_measures_the_mechanisms_pick"]),
    _mutant("randdpgen_stores_the_simulated_roster", "HybridSynthesizer",
            "partition_ keeps the roster simulated from the table (its size is the exact record count)",
            _HYBRID, "        self.partition_ = partition.layout() if simulated else partition\n",
            "        self.partition_ = partition\n",
            ["tests/test_privacy_holes.py::test_simulated_partition_stores_no_exact_count"]),
    _mutant("randdpgen_measurement_drawn_twice", "HybridSynthesizer",
            "every DMM call is made twice and averaged, the ledger charging one",
            _HYBRID_ROUNDS, "        reply = self.measure(r, rho_prime, protocol=self.protocol, n_repeats=self.e, shortcut=self.shortcut)\n"
                     "        values, var = combine(reply, self.domain)\n",
            "        reply = self.measure(r, rho_prime, protocol=self.protocol, n_repeats=self.e, shortcut=self.shortcut)\n"
            "        values, var = combine(reply, self.domain)\n"
            "        again, _ = combine(self.measure(r, rho_prime, protocol=self.protocol, n_repeats=self.e,\n"
            "                                        shortcut=self.shortcut), self.domain)\n"
            "        values = (values + again) / 2\n",
            [_RECONCILIATION + "::test_every_draw_of_a_synthesizer_is_charged_once"]),
    _mutant("randdpgen_indicator_leak_only_when_verbose", "HybridSynthesizer",
            "protocol='indicator' on a simulated roster reads the exact slice sizes without recording the leak",
            _HYBRID, "        if simulated and self.protocol == \"indicator\":\n",
            "        if simulated and self.protocol == \"indicator\" and self.verbose:\n",
            ["tests/test_privacy_holes.py::test_indicator_protocol_on_a_simulated_roster_is_a_leak"]),
    _mutant("party_server_one_noise_draw_for_every_cell", "PartyServer (issue 38)",
            "a party's count answer adds one noise draw to every cell",
            "skdpsynth/federated/parties.py",
            "        return (counts + _noise_share(variance, n_cells, rng)).astype(float)\n",
            "        return (counts + _noise_share(variance, 1, rng)).astype(float)\n",
            ["tests/test_deviating_curator.py::test_every_measurement_answer_has_the_noise_its_guard_charges"]),
    _mutant("party_takes_the_layout_from_the_request", "PartyServer (issue 38)",
            "a party counts with the strides and number of cells the curator's request gives",
            "skdpsynth/federated/runtime.py",
            "            strides, n_cells = job.count_layout(r)\n",
            "            strides, n_cells = (fields[\"strides\"], fields[\"n_cells\"]) if \"strides\" in fields else \\\n"
            "                job.count_layout(r)\n",
            ["tests/test_deviating_curator.py::test_a_count_request_with_the_curators_layout_is_refused"],
            more=[Patch("skdpsynth/federated/runtime.py",
                        "    \"measure\": frozenset({\"op\", \"kind\", \"attrs\", \"r\", \"variance\", \"rho\", \"call\"}),\n",
                        "    \"measure\": frozenset({\"op\", \"kind\", \"attrs\", \"r\", \"variance\", \"rho\", \"call\", "
                        "\"strides\", \"n_cells\"}),\n")]),
    _mutant("vertimrf_value_distribution_sensitivity_half", "VerticalMRFSynthesizer",
            "the value distributions' Laplace counts with sensitivity 0.5 (half the noise for the epsilon charged)",
            "skdpsynth/synthesizers/vertical_mrf/binning.py",
            "    noisy = laplace_mechanism(counts, epsilon=epsilon, sensitivity=1.0, random_state=random_state,\n",
            "    noisy = laplace_mechanism(counts, epsilon=epsilon, sensitivity=0.5, random_state=random_state,\n",
            [_VERTICAL_RUNTIME, _RECONCILIATION + "::test_every_draw_of_a_synthesizer_is_charged_once"]),
    _mutant("vertimrf_exact_record_count", "VerticalMRFSynthesizer",
            "the leader's released record count is the exact one (its Laplace draw is charged and dropped)",
            _VERTICAL, "            n_hat = float(max(1.0, round(float(noisy[0]))))\n",
            "            n_hat = float(len(codes))\n",
            [_POSTPROCESSING + "::test_the_record_count_is_stored_nowhere[vertical_mrf_runtime]",
             _POSTPROCESSING + "::test_the_record_count_is_stored_nowhere"]),
    _mutant("vertimrf_record_count_drawn_twice", "VerticalMRFSynthesizer",
            "the record count is drawn twice and averaged, charged once",
            _VERTICAL, "            noisy = laplace_mechanism(np.array([len(codes)]), epsilon=budget.epsilon_count,\n"
                       "                                      random_state=noise_generator(count_state), ledger=ledger,\n"
                       "                                      description=\"record count n̂\", party=self.name)\n",
            "            rng_count = noise_generator(count_state)\n"
            "            noisy = laplace_mechanism(np.array([len(codes)]), epsilon=budget.epsilon_count,\n"
            "                                      random_state=rng_count, ledger=ledger,\n"
            "                                      description=\"record count n̂\", party=self.name)\n"
            "            noisy = (noisy + laplace_mechanism(np.array([len(codes)]), epsilon=budget.epsilon_count,\n"
            "                                               random_state=rng_count)) / 2\n",
            [_VERTICAL_RUNTIME, _RECONCILIATION + "::test_every_draw_of_a_synthesizer_is_charged_once"]),
    _mutant("vertimrf_mst_local_domain_from_the_data", "VerticalMRFSynthesizer",
            "local_mrf='mst' (not the default) gives the local model the party's largest codes as its domain",
            _VERTICAL, "            learner = MSTSynthesizer(eps0, delta0, domain=local_domain.to_dict(), "
                       "random_state=random_state,\n",
            "            learner = MSTSynthesizer(eps0, delta0, domain={c: int(codes[:, j].max()) + 1 for j, c in\n"
            "                                                           enumerate(self.columns)}, "
            "random_state=random_state,\n",
            [_VERTICAL_RUNTIME_MST, _RECONCILIATION + "::test_every_privacy_option_reconciles"]),
    _mutant("dpview_laplace_sensitivity_half", "ViewSynthesizer",
            "the views' Laplace counts with sensitivity 0.5 (half the noise for the epsilon charged)",
            _VIEW, "        noisy.append(laplace_mechanism(marginal(codes, domain, names), epsilon=float(eps), "
                   "sensitivity=1.0,\n",
            "        noisy.append(laplace_mechanism(marginal(codes, domain, names), epsilon=float(eps), "
            "sensitivity=0.5,\n",
            [_COMPONENT_AUDITS + "::test_dpview_view_cell_audit", _RECONCILIATION]),
    _mutant("dpview_record_count_from_the_data", "ViewSynthesizer",
            "n_records_ is the exact record count instead of its DP estimate (by default the Laplace count)",
            _VIEW, "        n_hat = max(1, int(round(n_hat)))\n", "        n_hat = max(1, int(codes.shape[0]))\n",
            ["tests/test_view.py::test_record_count_comes_from_the_noisy_tables"]),
    _mutant("dpview_view_measured_twice", "ViewSynthesizer",
            "every view's table is drawn twice and averaged, charged once",
            _VIEW, "        noisy.append(laplace_mechanism(marginal(codes, domain, names), epsilon=float(eps), "
                   "sensitivity=1.0,\n"
                   "                                       random_state=rng, ledger=ledger,\n"
                   "                                       description=f\"{kind} view {tuple(names)}: Laplace counts\"))\n",
            "        first = laplace_mechanism(marginal(codes, domain, names), epsilon=float(eps), sensitivity=1.0,\n"
            "                                  random_state=rng, ledger=ledger,\n"
            "                                  description=f\"{kind} view {tuple(names)}: Laplace counts\")\n"
            "        noisy.append((first + laplace_mechanism(marginal(codes, domain, names), epsilon=float(eps),\n"
            "                                                random_state=rng)) / 2)\n",
            [_RECONCILIATION + "::test_every_draw_of_a_synthesizer_is_charged_once"]),
    _mutant("dpview_auto_view_size_from_the_record_count", "ViewSynthesizer",
            "view_size='auto' (the default) sizes the views by the exact record count",
            _VIEW, "            d, single = auto_view_size(sizes, eps_views, max(n_count, 1.0), upper=upper,\n",
            "            d, single = auto_view_size(sizes, eps_views, max(float(codes.shape[0]), 1.0), upper=upper,\n",
            [_SELECTION + "::test_dpview_views_come_from_public_sizes_and_are_measured_as_planned",
             _SELECTION + "::test_the_data_is_read_only_through_the_mechanisms"]),
    _mutant("dpview_plan_from_the_noise_generator", "ViewSynthesizer",
            "the released view plan is drawn from the noise generator instead of the public stream",
            _VIEW, "        view_rng, noise_rng = self._public_rng, rng\n", "        view_rng, noise_rng = rng, rng\n",
            ["tests/test_privacy_holes.py::test_nothing_stored_is_drawn_from_the_noise_stream",
             _SELECTION + "::test_dpview_views_come_from_public_sizes_and_are_measured_as_planned",
             _POSTPROCESSING + "::test_nothing_reachable_is_a_true_marginal_or_the_noise_stream"]),
    _mutant("ppsyn_strict_sensitivity_eta", "PartitionSynthesizer",
            "strict mode's 'gain' utility selected with sensitivity eta instead of 1",
            _PPSYN, "            self.em_sensitivity = 1.0\n",
            "            self.em_sensitivity = self.eta\n",
            [_SELECTION + "::test_ppsyn_measures_the_pair_the_mechanism_picked"]),
    _mutant("ppsyn_stores_exact_contribution", "PartitionSynthesizer",
            "selected_ keeps each round's exact captured contribution instead of the released noisy one",
            _PPSYN, "            if self.measure_pick(m, labels, rho_m, contribution, plan):\n",
            "            final = self.measure_pick(m, labels, rho_m, contribution, plan)\n"
            "            synth.selected_[-1][\"contribution\"] = float(options.captured[j])\n"
            "            if final:\n",
            [_POSTPROCESSING + "::test_nothing_reachable_is_what_a_mechanism_was_given"]),
    _mutant("ppsyn_group_sums_drawn_twice", "PartitionSynthesizer",
            "a round's group sums are drawn twice and averaged, charged once",
            _PPSYN, "                                        f\"{n_groups} group sums of {' x '.join(map(str, m))}\")\n",
            "                                        f\"{n_groups} group sums of {' x '.join(map(str, m))}\")\n"
            "        noisy_sums = (noisy_sums + gaussian_mechanism(np.rint(sums).astype(np.int64), rho=rho_m,\n"
            "                                                      random_state=self.rng)) / 2\n",
            [_RECONCILIATION + "::test_every_draw_of_a_synthesizer_is_charged_once"]),
    _mutant("quantile_sensitivity_understated", "DPKBinsDiscretizer",
            "the DP quantile's rank utility with sensitivity min(q, 1 - q) instead of max(q, 1 - q)",
            _KBINS, "    return max(q, 1.0 - q)\n", "    return min(q, 1.0 - q)\n",
            ["tests/test_preprocessing_discretizer.py::test_dp_quantile_costs_exactly_the_epsilon_it_is_charged",
             "tests/test_privacy_audit.py::test_audit_dp_kbins_discretizer_quantile_edges"]),
    _mutant("kbins_stores_the_exact_range", "DPKBinsDiscretizer",
            "bounds_ keeps the data's exact min and max beside the DP edges",
            _KBINS, "        self.bounds_ = bounds\n",
            "        self.bounds_ = {c: (float(values[c].min()), float(values[c].max())) if values[c].size else bounds[c]\n"
            "                        for c in columns}\n",
            [_POSTPROCESSING + "::test_dp_transformers_store_no_exact_statistic_of_the_data"]),
    _mutant("kbins_quantile_drawn_twice", "DPKBinsDiscretizer",
            "every DP quantile edge is the mean of two draws, charged once",
            _KBINS, "                        interior.append(_dp_quantile(clipped, lower, upper, q, eps_q, rng))\n",
            "                        interior.append((_dp_quantile(clipped, lower, upper, q, eps_q, rng)\n"
            "                                         + _dp_quantile(clipped, lower, upper, q, eps_q, rng)) / 2)\n",
            ["tests/test_privacy_audit.py::test_audit_dp_kbins_discretizer_quantile_edges",
             _RECONCILIATION + "::test_every_draw_of_a_dp_transformer_is_charged_once"]),
    _mutant("kbins_quantile_strategy_exact_edges", "DPKBinsDiscretizer",
            "strategy='quantile' (not the default) charges each edge and uses the exact quantile",
            _KBINS, "                        interior.append(_dp_quantile(clipped, lower, upper, q, eps_q, rng))\n",
            "                        interior.append(float(np.quantile(clipped, q)))\n",
            ["tests/test_privacy_audit.py::test_audit_dp_kbins_discretizer_quantile_edges"]),
    _mutant("threshold_noise_sensitivity_half", "DPCategoricalEncoder",
            "the thresholded counts' Laplace noise with sensitivity 0.5 (half the noise for the epsilon charged)",
            _ENCODER, "    noisy = laplace_mechanism(counts, epsilon=epsilon, sensitivity=1.0,\n",
            "    noisy = laplace_mechanism(counts, epsilon=epsilon, sensitivity=0.5,\n",
            ["tests/test_preprocessing_encoder.py::test_single_occurrence_release_rate_at_most_delta",
             "tests/test_privacy_audit.py::test_audit_dp_categorical_encoder"]),
    _mutant("encoder_categories_by_exact_frequency", "DPCategoricalEncoder",
            "released categories listed by their exact frequency (the order reveals exact counts)",
            _ENCODER, "            released[col] = _sorted_values(counts.index[keep].tolist())\n",
            "            released[col] = counts[keep].sort_values(ascending=False, kind=\"stable\").index.tolist()\n",
            ["tests/test_preprocessing_encoder.py::test_frequent_values_always_released_sorted_and_ledger"]),
    _mutant("encoder_second_threshold_draw", "DPCategoricalEncoder",
            "a value below the threshold gets a second, uncharged noisy count (twice the delta)",
            _ENCODER, "            keep = release_above_threshold(candidates, epsilon=eps_col, threshold=cut, random_state=rng)\n",
            "            keep = release_above_threshold(candidates, epsilon=eps_col, threshold=cut, random_state=rng)\n"
            "            keep |= release_above_threshold(candidates, epsilon=eps_col, threshold=cut, random_state=rng)\n",
            ["tests/test_preprocessing_encoder.py::test_single_occurrence_release_rate_at_most_delta"]),
    _mutant("encoder_missing_category_only_if_seen", "DPCategoricalEncoder",
            "missing='category' (not the default) adds the label only when the column has missing values",
            _ENCODER, "                              (\"missing_category\", self._has_missing_category(col))):\n",
            "                              (\"missing_category\", self._has_missing_category(col)\n"
            "                               and col in self._seen_missing)):\n",
            ["tests/test_preprocessing_encoder.py::test_other_and_missing_only_when_enabled"],
            more=[Patch(_ENCODER, "        self.handle_unknown_ = handle_unknown\n",
                        "        self._seen_missing = {c for c in columns if frame[c].isna().any()}\n"
                        "        self.handle_unknown_ = handle_unknown\n")]),
    _mutant("encoder_tentative_missing_only_if_seen", "DPCategoricalEncoder",
            "missing='auto' below its threshold keeps a tentative missing category only when the column has "
            "missing values (the domain shows whether it has)",
            _ENCODER, "                missing[col] = \"category\" if keep[-1] else (\"tentative\" if handle_unknown[col] == "
            "\"other\"\n",
            "                missing[col] = \"category\" if keep[-1] else (\"tentative\" if handle_unknown[col] == "
            "\"other\" and frame[col].isna().any()\n                                                            "
            "else \"other\" if handle_unknown[col] == \"other\"\n",
            ["tests/test_preprocessing_encoder.py::"
             "test_a_tentative_missing_category_does_not_depend_on_the_data_having_missing_values"]),
    _mutant("adaptive_cells_released_exactly", "DPKBinsDiscretizer",
            "strategy='adaptive' charges the cells' histogram but keeps the exact counts",
            "skdpsynth/preprocessing/discretizer.py",
            "            counts = laplace_mechanism(\n                counts, epsilon=eps_cells,",
            "            _ = laplace_mechanism(\n                counts, epsilon=eps_cells,",
            ["tests/test_privacy_audit.py::test_audit_dp_kbins_discretizer_adaptive_histogram"]),
    _mutant("adaptive_kinds_released_exactly", "DPKBinsDiscretizer",
            "strategy='adaptive' charges the kinds histogram (decimals, missing values) but keeps the exact counts",
            "skdpsynth/preprocessing/discretizer.py",
            "            counts = laplace_mechanism(\n                counts, epsilon=epsilon, sensitivity=1.0, "
            "random_state=rng, ledger=ledger,\n                description=f\"kinds of column",
            "            _ = laplace_mechanism(\n                counts, epsilon=epsilon, sensitivity=1.0, "
            "random_state=rng, ledger=ledger,\n                description=f\"kinds of column",
            ["tests/test_privacy_audit.py::test_audit_dp_kbins_discretizer_kinds_histogram"]),
    _mutant("adaptive_missing_count_read_exactly", "DPKBinsDiscretizer",
            "strategy='adaptive' decides the missing-value bin from the exact count instead of the noisy one",
            "skdpsynth/preprocessing/discretizer.py",
            "            released = bool(noisy[-1] > _adaptive.missing_threshold(epsilon))",
            "            released = bool(counts[-1] > _adaptive.missing_threshold(epsilon))",
            ["tests/test_privacy_audit.py::test_audit_dp_kbins_discretizer_missing_values_count"]),
    _mutant("table_each_strategy_group_spends_the_numeric_budget", "TableDiscretizer",
            "every strategy group's discretizer gets the whole numeric epsilon",
            "skdpsynth/preprocessing/table.py",
            "                    eps_g = eps_num if n_dp == len(dp_numeric) else eps_num * n_dp / len(dp_numeric)\n",
            "                    eps_g = eps_num\n",
            [_RECONCILIATION + "::test_every_draw_of_a_dp_transformer_is_charged_once"]),
    # -- user-level DP (issue 45, point 2): neighbours differ by one person's records --------------------------------
    _mutant("user_level_per_record_calibration", "BaseSynthesizer (privacy_unit=)",
            "the records are bounded to k per person, but the method runs at the per-person budget (rho, not "
            "rho/k^2; epsilon, not epsilon/k): calibrated per record, k times the stated per-person epsilon",
            "skdpsynth/synthesizers/base.py",
            "        return {kind: value / scale[kind] for kind, value in budget.items()}\n",
            "        return dict(budget)\n",
            ["tests/test_privacy_audit.py::test_audit_user_level_view_synthesizer",
             "tests/test_privacy_audit.py::test_audit_user_level_mst_synthesizer",
             "tests/test_user_level.py::test_record_level_budget_is_the_person_budget_over_k"]),
    _mutant("user_level_contributions_not_bounded", "bound_contributions (privacy_unit=)",
            "every record of every person is kept (max_contributions ignored), the budget still scaled for k",
            "skdpsynth/privacy/contributions.py",
            "    keep[order] = np.arange(n) - first < k   # rank within the person, by key\n",
            "    keep[order] = True\n",
            ["tests/test_privacy_audit.py::test_audit_user_level_view_synthesizer",
             "tests/test_user_level.py::test_bounding_keeps_min_count_k_per_person"]),
)


# -- the repository --------------------------------------------------------------------------------------------------
def repository_root(module_file: str | os.PathLike = __file__) -> Path:
    """The source checkout this module belongs to (``skdpsynth/benchmarks/`` two levels below it).

    Raises ``SystemExit`` with an explanation when there is no ``tests/``
    folder and ``pyproject.toml`` beside the package, e.g. for an installed
    package: the mutants are run against the tests of a checkout.

    Examples
    --------
    >>> from skdpsynth.benchmarks.privacy_mutants import repository_root
    >>> (repository_root() / "skdpsynth" / "benchmarks" / "privacy_mutants.py").is_file()
    True
    """
    root = Path(module_file).resolve().parents[2]
    missing = [what for what, present in (("tests/test_*.py", any((root / "tests").glob("test_*.py"))),
                                          ("pyproject.toml", (root / "pyproject.toml").is_file()))
               if not present]
    if missing:
        raise SystemExit(f"privacy_mutants needs a source checkout of skdpsynth: {' and '.join(missing)} not found "
                         f"in {root} (an installed package has no tests). Run it from a clone of the repository: "
                         "python -m skdpsynth.benchmarks.privacy_mutants")
    return root


def stale_reason(mutant: Mutant, root: Path) -> str | None:
    """Why ``mutant`` does not apply to the source under ``root`` (None: every old text occurs exactly once).

    Examples
    --------
    >>> from skdpsynth.benchmarks.privacy_mutants import CATALOGUE, repository_root, stale_reason
    >>> [stale_reason(m, repository_root()) for m in CATALOGUE[:2]]
    [None, None]
    """
    texts: dict[str, str] = {}
    for k, patch in enumerate(mutant.patches):
        path = root / patch.file
        if patch.file not in texts:
            if not path.is_file():
                return f"{patch.file} does not exist"
            texts[patch.file] = path.read_text(encoding="utf-8")
        count = texts[patch.file].count(patch.old)
        if count != 1:
            return f"patch {k + 1}: its old text occurs {count} times in {patch.file}, not once"
        texts[patch.file] = texts[patch.file].replace(patch.old, patch.new)
    return None


def apply_mutant(mutant: Mutant, root: Path) -> list[Path]:
    """Apply the mutant's patches to the files under ``root`` (a copy); returns the files changed.

    Raises ``ValueError`` if a patch does not apply (see :func:`stale_reason`).
    """
    reason = stale_reason(mutant, root)
    if reason is not None:
        raise ValueError(reason)
    changed = []
    for patch in mutant.patches:
        path = root / patch.file
        path.write_text(path.read_text(encoding="utf-8").replace(patch.old, patch.new), encoding="utf-8")
        if path not in changed:
            changed.append(path)
    return changed


def copy_repository(root: Path, dest: Path) -> None:
    """Copy what the tests need (see ``_COPIED``) from ``root`` to ``dest``, with the import probe."""
    for name in _COPIED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=_IGNORED)
        elif source.is_file():
            shutil.copy2(source, dest / name)
    (dest / f"{_PROBE}.py").write_text(_PROBE_SOURCE, encoding="utf-8")


# -- pytest ----------------------------------------------------------------------------------------------------------
def node_id(classname: str, name: str, root: Path) -> str:
    """The pytest node id of a JUnit test case (its dotted ``classname`` mapped back onto a file under ``root``).

    Examples
    --------
    >>> from skdpsynth.benchmarks.privacy_mutants import node_id, repository_root
    >>> node_id("tests.test_mst_aim", "test_mst_ledger_tree_and_budget", repository_root())
    'tests/test_mst_aim.py::test_mst_ledger_tree_and_budget'
    """
    parts = classname.split(".") if classname else []
    for k in range(len(parts), 0, -1):
        path = "/".join(parts[:k]) + ".py"
        if (root / path).is_file():
            return "::".join([path, *parts[k:], name])
    return "::".join([*([classname] if classname else []), name])


def parse_junit(path: Path, root: Path) -> tuple[list[str], dict[str, str]]:
    """The node ids a JUnit XML report lists, and the failed or errored ones with their first message line."""
    ran, failures = [], {}
    for case in ET.parse(path).getroot().iter("testcase"):
        nid = node_id(case.get("classname", ""), case.get("name", ""), root)
        ran.append(nid)
        for tag in ("failure", "error"):
            bad = case.find(tag)
            if bad is not None:
                failures.setdefault(nid, _first_line(bad.get("message") or bad.text or "") or tag)
    return ran, failures


def _first_line(message: str) -> str:
    """The first line of a failure message, with the next one when the first only names the exception.

    Examples
    --------
    >>> from skdpsynth.benchmarks.privacy_mutants import _first_line
    >>> _first_line("AssertionError: \\nNot equal to tolerance rtol=0, atol=1e-10\\n\\nMismatched elements: 4 / 4")
    'AssertionError: Not equal to tolerance rtol=0, atol=1e-10'
    """
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].rstrip(":").endswith(("Error", "Exception")):
        return f"{lines[0]} {lines[1]}"
    return lines[0] if lines else ""


def selected(nid: str, targets: Sequence[str]) -> bool:
    """Whether the test ``nid`` is one that ``targets`` (node ids or files) names.

    Examples
    --------
    >>> from skdpsynth.benchmarks.privacy_mutants import selected
    >>> named = ["tests/test_a.py::test_b", "tests/test_c.py"]
    >>> ran = ["tests/test_a.py::test_b[x]", "tests/test_c.py::test_d", "tests/test_a.py::test_bb"]
    >>> [selected(nid, named) for nid in ran]
    [True, True, False]
    """
    return any(nid == t or nid.startswith(t + "::") or nid.startswith(t + "[") for t in targets)


def run_pytest(copy: Path, targets: Sequence[str], *, keyword: str | None = None, stop_first: bool = True,
               timeout: float | None = None) -> PytestRun:
    """Run pytest on ``targets`` (all of ``testpaths`` when empty) in ``copy``, importing the copy's package."""
    junit, probe = copy / "_mutant_junit.xml", copy / "_mutant_probe.txt"
    for stale in (junit, probe):
        stale.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider", "-p", _PROBE,
               f"--junitxml={junit}", *(["-k", keyword] if keyword else []), *(["-x"] if stop_first else [])]
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1", _PROBE_ENV: str(probe)}
    with _LOCK:
        if _STOPPING.is_set():
            raise KeyboardInterrupt
        # A session of its own, so that a timeout can stop pytest with whatever it started (dask workers, party
        # processes); the terminal's Ctrl-C then misses it, and main() stops it through _RUNNING.
        process = subprocess.Popen(command, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, start_new_session=True)
        _RUNNING.add(process)
    timed_out = False
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        output = _stop(process)
    except BaseException:   # Ctrl-C while this thread waits (the baseline runs in the main thread)
        _kill(process)
        raise
    finally:
        with _LOCK:
            _RUNNING.discard(process)
    run = PytestRun(process.returncode, output=output, timed_out=timed_out)
    if probe.is_file():
        run.imported = probe.read_text(encoding="utf-8")
    if junit.is_file():
        try:
            run.ran, run.failures = parse_junit(junit, copy)
        except ET.ParseError:   # a run killed while writing it
            pass
    return run


def _kill(process: subprocess.Popen) -> None:
    """Kill a pytest run's whole process group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _stop(process: subprocess.Popen) -> str:
    """Kill a pytest run's process group; what it printed (empty if its output stays open)."""
    _kill(process)
    try:
        return process.communicate(timeout=30)[0] or ""
    except subprocess.TimeoutExpired:   # a grandchild that left the group holds the pipe
        return ""


def _imports_the_copy(run: PytestRun, copy: Path) -> bool:
    package = os.path.realpath(copy / "skdpsynth")
    return bool(run.imported) and os.path.realpath(run.imported).startswith(package + os.sep)


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _run_problem(run: PytestRun, copy: Path, timeout: float | None) -> str | None:
    """Why a run cannot be read as a verdict (None: it ran the tests, on the copy's package)."""
    if run.timed_out:
        return f"timed out after {timeout:g} s"
    if not _imports_the_copy(run, copy):
        return f"the test run imported skdpsynth from {run.imported or 'nowhere'}, not from the copy"
    if run.exit_code not in (0, 1):
        # 2: interrupted (a collection error), 3: internal error, 4: usage error, 5: no test collected.
        return f"pytest exit code {run.exit_code}: {_last_line(run.output)}"
    if run.exit_code == 1 and not run.failures:
        return f"pytest failed without a failed test in its report: {_last_line(run.output)}"
    return None


# -- one mutant ------------------------------------------------------------------------------------------------------
def _existing(targets: Sequence[str], root: Path) -> tuple[list[str], list[str]]:
    present, missing = [], []
    for target in targets:
        (present if (root / target.split("::")[0]).is_file() else missing).append(target)
    return present, missing


def run_mutant(mutant: Mutant, root: Path, *, timeout: float | None = None, all_tests: bool = False,
               baseline: dict[str, str] | None = None) -> Result:
    """Plant ``mutant`` in a fresh copy of ``root`` (the repository or a snapshot of it) and run its tests there.

    ``baseline`` maps the tests that fail without any mutant to their first
    failure line: their failures are not counted as catches.  See the module
    docstring for the statuses.
    """
    start = time.perf_counter()
    result = Result(mutant.name, mutant.component, ERROR)
    baseline = baseline or {}
    try:
        reason = stale_reason(mutant, root)
        present, missing = _existing(mutant.tests, root)
        if reason is not None:
            result.status, result.detail = STALE, reason
        elif missing:
            result.detail = f"named test file missing: {', '.join(sorted({m.split('::')[0] for m in missing}))}"
        else:
            with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as folder:
                _plant_and_run(mutant, Path(folder), root, result, present, timeout, all_tests, baseline)
    finally:
        result.seconds = time.perf_counter() - start
    return result


def _plant_and_run(mutant: Mutant, copy: Path, root: Path, result: Result, targets: list[str],
                   timeout: float | None, all_tests: bool, baseline: dict[str, str]) -> None:
    copy_repository(root, copy)
    for path in apply_mutant(mutant, copy):
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        except SyntaxError as exc:
            result.detail = f"the patched {path.relative_to(copy)} does not compile: {exc.msg} (line {exc.lineno})"
            return
    known_bad = [nid for nid in baseline if selected(nid, targets)]
    run = run_pytest(copy, targets, keyword=mutant.keyword, stop_first=not (all_tests or known_bad),
                     timeout=timeout)
    problem = _run_problem(run, copy, timeout)
    if problem is not None:
        result.detail = problem
        return
    new = {nid: line for nid, line in run.failures.items() if nid not in baseline}
    if new:
        result.status, result.caught_by = CAUGHT, tuple(new)
        result.detail = next(iter(new.values()))
    elif run.failures:
        result.detail = f"named test {next(iter(run.failures))} fails without the mutant too"
        return
    else:
        result.status, result.detail = NOT_CAUGHT, f"{len(run.ran)} named test(s) passed"
    if all_tests:
        everything = run_pytest(copy, [], stop_first=False, timeout=timeout)
        problem = _run_problem(everything, copy, timeout)
        if problem is not None:
            result.status, result.detail = ERROR, f"the whole suite: {problem}"
            return
        named = set(run.ran)
        result.unrelated = tuple(nid for nid in everything.failures if nid not in named and nid not in baseline)
        if result.status == NOT_CAUGHT and result.unrelated:
            result.status, result.detail = UNRELATED, everything.failures[result.unrelated[0]]


def run_baseline(mutants: Sequence[Mutant], root: Path, *, timeout: float | None = None,
                 all_tests: bool = False) -> tuple[dict[str, str], str | None]:
    """The tests that already fail without any mutant: ``({node id: first line}, problem or None)``.

    Runs the union of the mutants' named tests that exist (the whole suite with ``all_tests``) once, on an
    unmodified copy.
    """
    targets = [] if all_tests else sorted({t for m in mutants for t in _existing(m.tests, root)[0]})
    if not targets and not all_tests:
        return {}, None
    with tempfile.TemporaryDirectory(prefix="mutant-baseline-") as folder:
        copy = Path(folder)
        copy_repository(root, copy)
        run = run_pytest(copy, targets, stop_first=False, timeout=timeout)
        return run.failures, _run_problem(run, copy, timeout)


# -- the report ------------------------------------------------------------------------------------------------------
def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def format_table(results: Sequence[Result]) -> str:
    """The results as a markdown table, then one summary line.

    Examples
    --------
    >>> from skdpsynth.benchmarks.privacy_mutants import Result, format_table
    >>> print(format_table([Result("m", "MST", "caught", ("tests/test_x.py::test_y",), "assert 1 | 2", (), 3.21)]))
    | mutant | component | result | caught by | first failure line / reason | seconds |
    |---|---|---|---|---|---|
    | m | MST | caught | tests/test_x.py::test_y | assert 1 \\| 2 | 3.2 |
    <BLANKLINE>
    1 mutant: 1 caught
    """
    lines = ["| mutant | component | result | caught by | first failure line / reason | seconds |",
             "|---|---|---|---|---|---|"]
    for r in results:
        by = r.caught_by[0] if r.caught_by else ""
        if len(r.caught_by) > 1:
            by += f" (+{len(r.caught_by) - 1})"
        if r.unrelated:
            by += f"; also, not named: {', '.join(r.unrelated[:3])}" + (" …" if len(r.unrelated) > 3 else "")
        lines.append(f"| {_cell(r.name)} | {_cell(r.component)} | {r.status} | {_cell(by, 240)} | {_cell(r.detail)} "
                     f"| {r.seconds:.1f} |")
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    order = [CAUGHT, NOT_CAUGHT, UNRELATED, STALE, ERROR]
    summary = ", ".join(f"{counts[s]} {s}" for s in order if s in counts)
    return "\n".join(lines) + f"\n\n{len(results)} mutant{'s' if len(results) != 1 else ''}: {summary}"


def format_catalogue(mutants: Sequence[Mutant], root: Path) -> str:
    """``--list``: each mutant, what it plants, whether it applies, and the tests named to catch it."""
    lines = ["| mutant | component | what it plants | applies | named tests |", "|---|---|---|---|---|"]
    for m in mutants:
        reason = stale_reason(m, root)
        present, missing = _existing(m.tests, root)
        tests = ", ".join(present + [f"{t} (missing)" for t in missing])
        if m.keyword:
            tests += f" -k {m.keyword!r}"
        lines.append(f"| {_cell(m.name)} | {_cell(m.component)} | {_cell(m.description, 200)} | "
                     f"{'yes' if reason is None else _cell('STALE: ' + reason)} | {_cell(tests, 400)} |")
    return "\n".join(lines)


# -- command line ----------------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m skdpsynth.benchmarks.privacy_mutants",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true",
                        help="print the catalogue (and whether each mutant applies); run nothing")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these mutants only")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds allowed for one pytest run before it counts as an ERROR (default 1800)")
    parser.add_argument("--all-tests", action="store_true",
                        help="also run the whole suite on each mutant, to see what else catches it (slow)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the run of the named tests on an unmodified copy (a test that fails anyway "
                             "then counts as a catch)")
    return parser


def _choose(names: Sequence[str] | None) -> list[Mutant]:
    if not names:
        return list(CATALOGUE)
    by_name = {m.name: m for m in CATALOGUE}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"Unknown mutant(s) {', '.join(unknown)}; --list shows the catalogue.")
    return [by_name[n] for n in dict.fromkeys(names)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns 0 when every mutant run was caught by one of its named tests."""
    args = _parser().parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0:
        raise SystemExit("--jobs must be >= 1 and --timeout > 0.")
    root = repository_root()
    mutants = _choose(args.only)
    if args.list:
        print(format_catalogue(mutants, root))
        return 0
    # One snapshot of the tree for the baseline and every mutant: files edited meanwhile change no verdict.
    previous = signal.signal(signal.SIGTERM, _interrupt)   # stopped like Ctrl-C, with the pytest runs
    try:
        with tempfile.TemporaryDirectory(prefix="mutant-source-") as folder:
            source = Path(folder)
            copy_repository(root, source)
            results = _run_all(mutants, source, args)
    except KeyboardInterrupt:
        print("interrupted: the pytest runs in progress were stopped.", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    if results is None:
        return 2
    print(format_table(results))
    return 0 if all(r.status == CAUGHT for r in results) else 1


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _run_all(mutants: Sequence[Mutant], source: Path, args: argparse.Namespace) -> list[Result] | None:
    """The baseline, then every mutant (None when the baseline could not run)."""
    baseline: dict[str, str] = {}
    if not args.no_baseline:
        print("baseline: the named tests on an unmodified copy ...", file=sys.stderr, flush=True)
        baseline, problem = run_baseline(mutants, source, timeout=args.timeout, all_tests=args.all_tests)
        if problem is not None:
            print(f"baseline run failed ({problem}); the mutants were not run.", file=sys.stderr)
            return None
        for nid, line in baseline.items():
            print(f"baseline: {nid} fails without a mutant: {line}", file=sys.stderr)
    done = []

    def one(mutant: Mutant) -> Result:
        result = run_mutant(mutant, source, timeout=args.timeout, all_tests=args.all_tests, baseline=baseline)
        done.append(result)
        print(f"[{len(done)}/{len(mutants)}] {mutant.name}: {result.status} ({result.seconds:.0f} s)",
              file=sys.stderr, flush=True)
        return result

    pool = ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = [pool.submit(one, mutant) for mutant in mutants]
        return [future.result() for future in futures]
    except KeyboardInterrupt:
        _STOPPING.set()
        pool.shutdown(wait=False, cancel_futures=True)
        with _LOCK:
            for process in list(_RUNNING):
                _kill(process)   # their threads collect what they printed
        raise
    finally:
        pool.shutdown(wait=True)


if __name__ == "__main__":
    sys.exit(main())
