"""The machinery of ``python -m skdpsynth.benchmarks.privacy_mutants`` (issue 39), without running any mutant.

The script plants each mutant of its catalogue in a copy of the repository and runs the tests named to catch it;
that takes long and is not part of CI (doc/privacy.md, "Testing privacy").  What is checked here, in a few
seconds: every mutant still applies to the current source exactly once and compiles (a mutant whose code moved
is reported STALE, and must be rewritten), every test it names exists, the catalogue covers every synthesizer and
DP transformer, and the report (JUnit parsing, statuses, the markdown table) says what happened.
"""
from __future__ import annotations

import re
import shutil
from collections import Counter

import pytest

from skdpsynth.benchmarks import privacy_mutants as pm

ROOT = pm.repository_root()
BY_NAME = {m.name: m for m in pm.CATALOGUE}


def test_every_mutant_applies_exactly_once_and_compiles(tmp_path):
    stale = {m.name: pm.stale_reason(m, ROOT) for m in pm.CATALOGUE}
    assert {name: why for name, why in stale.items() if why is not None} == {}
    for m in pm.CATALOGUE:
        assert all(p.old != p.new for p in m.patches), m.name
        copy = tmp_path / m.name
        for file in {p.file for p in m.patches}:
            (copy / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / file, copy / file)
        for path in pm.apply_mutant(m, copy):
            compile(path.read_text(encoding="utf-8"), str(path), "exec")   # a SyntaxError names the mutant's file


def test_every_named_test_exists():
    names = Counter(m.name for m in pm.CATALOGUE)
    assert [n for n, k in names.items() if k > 1] == []
    for m in pm.CATALOGUE:
        assert m.tests, m.name
        for target in m.tests:
            file, _, function = target.partition("::")
            assert (ROOT / file).is_file(), (m.name, target)
            if function:
                source = (ROOT / file).read_text(encoding="utf-8")
                assert re.search(rf"^def {re.escape(function.split('[')[0])}\(", source, re.MULTILINE), (m.name, target)


def test_the_catalogue_holds_the_issues_mutants_and_covers_every_synthesizer_and_transformer():
    issue = {"mst_tree_argmax_after_em", "mst_tree_sensitivity_quarter", "mst_compression_stores_exact_counts",
             "sample_continues_the_noise_generator", "ppsyn_model_partitions_from_true_answers",
             "aim_measurement_drawn_twice", "gaussian_noise_scale_halved", "measurement_charged_to_a_throwaway_ledger",
             "bp_child_message_not_divided_out", "bp_upward_message_loses_its_shift", "dp_bounds_read_from_the_data",
             "ppsyn_initial_partitions_from_true_answers", "aim_annealing_on_true_marginals",
             "unseeded_noise_from_a_fixed_seed", "category_threshold_without_plus_one",
             "party_server_one_noise_draw_for_every_cell", "party_takes_the_layout_from_the_request"}
    assert issue <= set(BY_NAME)
    per_component = Counter(m.component for m in pm.CATALOGUE)
    for component in ("MSTSynthesizer", "AIMSynthesizer", "HybridSynthesizer", "VerticalMRFSynthesizer",
                      "ViewSynthesizer", "PartitionSynthesizer", "DPKBinsDiscretizer", "DPCategoricalEncoder"):
        assert per_component[component] >= 4, component


def _fake_tree(tmp_path, text):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(text, encoding="utf-8")
    return tmp_path


def test_a_patch_that_does_not_apply_exactly_once_is_stale_not_skipped(tmp_path):
    root = _fake_tree(tmp_path, "a = 1\nb = 2\nb = 2\n")
    patch = lambda old, new: pm.Patch("pkg/mod.py", old, new)   # noqa: E731
    once = pm.Mutant("once", "x", "", (patch("a = 1\n", "a = 0\n"), patch("a = 0\n", "a = -1\n")), ("tests/t.py",))
    assert pm.stale_reason(once, root) is None    # the second patch applies to the first one's result
    assert pm.stale_reason(pm.Mutant("twice", "x", "", (patch("b = 2\n", "b = 3\n"),), ("t",)), root) == \
        "patch 1: its old text occurs 2 times in pkg/mod.py, not once"
    gone = pm.Mutant("gone", "x", "", (patch("c = 3\n", "c = 4\n"),), ("tests/t.py",))
    assert "occurs 0 times" in pm.stale_reason(gone, root)
    assert pm.stale_reason(pm.Mutant("nofile", "x", "", (pm.Patch("pkg/no.py", "a", "b"),), ("t",)), root) == \
        "pkg/no.py does not exist"
    result = pm.run_mutant(gone, root)    # reported before anything is copied or run
    assert (result.status, result.detail) == (pm.STALE, pm.stale_reason(gone, root))
    with pytest.raises(ValueError, match="occurs 0 times"):
        pm.apply_mutant(gone, root)
    assert pm.apply_mutant(once, root) == [root / "pkg" / "mod.py"]
    assert (root / "pkg" / "mod.py").read_text(encoding="utf-8") == "a = -1\nb = 2\nb = 2\n"


def test_a_missing_test_file_is_an_error(tmp_path):
    root = _fake_tree(tmp_path, "a = 1\n")
    mutant = pm.Mutant("m", "x", "", (pm.Patch("pkg/mod.py", "a = 1", "a = 2"),), ("tests/test_later.py::test_it",))
    result = pm.run_mutant(mutant, root)
    assert (result.status, result.detail) == (pm.ERROR, "named test file missing: tests/test_later.py")


def test_a_mutant_only_an_unnamed_test_catches_is_reported_as_such(tmp_path):
    """End to end on a two-test toy repository (not the catalogue): copy, plant, run, read the report."""
    (tmp_path / "skdpsynth").mkdir()
    (tmp_path / "skdpsynth" / "__init__.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "from skdpsynth import f\n\n\ndef test_named():\n    assert f() > 0\n\n\n"
        "def test_other():\n    assert f() == 1, 'f moved'\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n', encoding="utf-8")
    mutant = pm.Mutant("two", "f", "", (pm.Patch("skdpsynth/__init__.py", "return 1", "return 2"),),
                       ("tests/test_a.py::test_named",))
    result = pm.run_mutant(mutant, tmp_path, timeout=120, all_tests=True)
    assert (result.status, result.caught_by, result.unrelated, result.detail) == \
        (pm.UNRELATED, (), ("tests/test_a.py::test_other",), "AssertionError: f moved")
    assert (tmp_path / "skdpsynth" / "__init__.py").read_text(encoding="utf-8").endswith("return 1\n")  # untouched


def test_junit_reports_map_back_to_node_ids(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("", encoding="utf-8")
    report = tmp_path / "junit.xml"
    report.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_x" name="test_ok" time="0.1"/>'
        '<testcase classname="tests.test_x" name="test_bad[3-a]" time="0.1">'
        '<failure message="AssertionError: &#10;Not equal to tolerance rtol=0&#10;&#10;Mismatched">trace</failure>'
        '</testcase>'
        '<testcase classname="tests.test_x.TestGroup" name="test_in_class" time="0.1">'
        '<error message="failed on setup with &quot;RuntimeError: spent more&quot;">trace</error></testcase>'
        '<testcase classname="skdpsynth.gone" name="skdpsynth.gone.f" time="0.1"/>'
        '</testsuite></testsuites>', encoding="utf-8")
    ran, failures = pm.parse_junit(report, tmp_path)
    assert ran == ["tests/test_x.py::test_ok", "tests/test_x.py::test_bad[3-a]",
                   "tests/test_x.py::TestGroup::test_in_class", "skdpsynth.gone::skdpsynth.gone.f"]
    assert failures == {"tests/test_x.py::test_bad[3-a]": "AssertionError: Not equal to tolerance rtol=0",
                        "tests/test_x.py::TestGroup::test_in_class": 'failed on setup with "RuntimeError: spent more"'}
    named = ["tests/test_x.py::test_bad", "tests/test_x.py::TestGroup"]
    assert [pm.selected(nid, named) for nid in ran] == [False, True, True, False]


def test_a_run_on_another_package_or_without_a_verdict_is_an_error(tmp_path):
    (tmp_path / "skdpsynth").mkdir()
    own = str(tmp_path / "skdpsynth" / "__init__.py")
    ok = pm.PytestRun(1, ran=["t"], failures={"t": "assert 0"}, imported=own)
    assert pm._run_problem(ok, tmp_path, 60.0) is None
    elsewhere = pm.PytestRun(1, failures={"t": "assert 0"}, imported="/work/main/skdpsynth/__init__.py")
    assert pm._run_problem(elsewhere, tmp_path, 60.0) == \
        "the test run imported skdpsynth from /work/main/skdpsynth/__init__.py, not from the copy"
    assert pm._run_problem(pm.PytestRun(5, imported=own, output="\nno tests ran in 0.01s\n"), tmp_path, 60.0) == \
        "pytest exit code 5: no tests ran in 0.01s"
    assert pm._run_problem(pm.PytestRun(-9, imported=own, timed_out=True), tmp_path, 60.0) == "timed out after 60 s"
    assert pm._run_problem(pm.PytestRun(1, imported=own, output="E   boom"), tmp_path, 60.0) == \
        "pytest failed without a failed test in its report: E   boom"


def test_the_table_says_what_happened_to_each_mutant():
    results = [pm.Result("a", "MST", pm.CAUGHT, ("tests/t.py::test_1", "tests/t.py::test_2"), "assert x | y", (), 2.04),
               pm.Result("b", "AIM", pm.NOT_CAUGHT, (), "3 named test(s) passed", (), 10.0),
               pm.Result("c", "AIM", pm.UNRELATED, (), "assert 1 == 2", ("tests/u.py::test_3",), 1.0),
               pm.Result("d", "View", pm.STALE, (), "patch 1: its old text occurs 0 times in v.py, not once")]
    assert pm.format_table(results).splitlines() == [
        "| mutant | component | result | caught by | first failure line / reason | seconds |",
        "|---|---|---|---|---|---|",
        "| a | MST | caught | tests/t.py::test_1 (+1) | assert x \\| y | 2.0 |",
        "| b | AIM | NOT CAUGHT |  | 3 named test(s) passed | 10.0 |",
        "| c | AIM | caught only by an unrelated test | ; also, not named: tests/u.py::test_3 | assert 1 == 2 | 1.0 |",
        "| d | View | STALE |  | patch 1: its old text occurs 0 times in v.py, not once | 0.0 |",
        "",
        "4 mutants: 1 caught, 1 NOT CAUGHT, 1 caught only by an unrelated test, 1 STALE"]


def test_an_installed_package_is_refused_with_a_reason(tmp_path):
    module = tmp_path / "site-packages" / "skdpsynth" / "benchmarks" / "privacy_mutants.py"
    with pytest.raises(SystemExit, match=r"needs a source checkout.*tests/test_\*\.py and pyproject\.toml not found"):
        pm.repository_root(module)


def test_list_prints_the_catalogue_and_unknown_names_are_refused(capsys):
    assert pm.main(["--list", "--only", "mst_tree_sensitivity_quarter"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("| mst_tree_sensitivity_quarter | MSTSynthesizer |")
    assert "| yes |" in lines[2]
    with pytest.raises(SystemExit, match="Unknown mutant.*no_such_mutant.*--list"):
        pm.main(["--only", "no_such_mutant"])
