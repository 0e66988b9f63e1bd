"""The skdpsynth command, end to end on small tables."""
import json

import numpy as np
import pandas as pd
import pytest

from skdpsynth.cli import main


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    n = 1500
    color = rng.choice(["red", "green", "blue"], n)
    frame = pd.DataFrame({"color": color, "age": np.where(color == "red", rng.integers(18, 40, n), rng.integers(40, 90, n))})
    path = tmp_path / "input.csv"
    frame.to_csv(path, index=False)
    schema = {"color": {"type": "categorical", "categories": ["red", "green", "blue"]},
              "age": {"type": "numeric", "bounds": [17, 90]}}
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(json.dumps(schema))
    return frame, path, schema_path


def test_synthesize_with_public_schema(table, tmp_path, capsys):
    frame, path, schema_path = table
    out, report = tmp_path / "synthetic.csv", tmp_path / "report.html"
    code = main(["synthesize", str(path), "--schema", str(schema_path), "--epsilon", "1", "--rows", "700",
                 "-o", str(out), "--report", str(report), "--seed", "0", "--bins", "8"])
    assert code == 0
    synthetic = pd.read_csv(out)
    assert list(synthetic.columns) == ["color", "age"] and len(synthetic) == 700
    assert set(synthetic["color"]) <= {"red", "green", "blue"} and synthetic["age"].between(17, 90).all()
    text = report.read_text()
    assert "Privacy ledger" in text and "(1.0000, 1e-09)-DP" in text and "3-way" not in text  # 2 columns
    assert "wrote 700 records" in capsys.readouterr().out


def test_missing_schema_says_what_would_leak_and_stops(table, tmp_path, capsys):
    _, path, _ = table
    out = tmp_path / "synthetic.csv"
    assert main(["synthesize", str(path), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "['color', 'age']" in err and "--infer-schema" in err
    assert not out.exists()


def test_infer_schema_proceeds_with_a_warning(table, tmp_path):
    _, path, _ = table
    out = tmp_path / "synthetic.csv"
    from skdpsynth import PrivacyLeakWarning

    with pytest.warns(PrivacyLeakWarning):
        assert main(["synthesize", str(path), "--infer-schema", "-o", str(out), "-q", "--seed", "1"]) == 0
    assert len(pd.read_csv(out)) > 0


@pytest.mark.slow
def test_demo_writes_adult_in_its_original_schema(tmp_path):
    from skdpsynth.datasets import load_adult

    assert main(["demo", "--out", str(tmp_path), "--seed", "0", "-q"]) == 0
    synthetic = pd.read_csv(tmp_path / "synthetic.csv")
    adult = load_adult()
    assert list(synthetic.columns) == list(adult.frame.columns)
    assert len(synthetic) == len(adult.frame)  # the public count of adult.names
    text = (tmp_path / "report.html").read_text()
    assert "train on synthetic" in text.lower() and "'income'" not in text  # the TSTR section, names escaped
    assert (tmp_path / "report_files" / "columns.png").exists() == _has_matplotlib()


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_target_holds_out_records_and_reports_tstr(table, tmp_path, capsys):
    frame, path, schema_path = table
    out, report = tmp_path / "synthetic.csv", tmp_path / "report.html"
    code = main(["synthesize", str(path), "--schema", str(schema_path), "--target", "color", "--test-size", "0.3",
                 "-o", str(out), "--report", str(report), "--seed", "0", "--bins", "8", "--no-plots"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "holding out 450 of 1,500 records" in printed and "TSTR accuracy for 'color'" in printed
    text = report.read_text()
    assert "<img" not in text and not (tmp_path / "report_files").exists()
    # age separates red from the rest, so training on synthetic beats the majority class (~1/3 each).
    tstr = float(printed.split("TSTR accuracy for 'color': ")[1].split()[0])
    assert tstr > 0.5


def test_target_must_be_a_column(table, tmp_path):
    _, path, schema_path = table
    with pytest.raises(SystemExit, match="not a column"):
        main(["synthesize", str(path), "--schema", str(schema_path), "--target", "nope", "-q",
              "-o", str(tmp_path / "s.csv")])


@pytest.mark.parametrize("args", [["--epsilon", "0"], ["--epsilon", "-1"], ["--delta", "1"], ["--rows", "-5"],
                                  ["--bins", "0"], ["--test-size", "1.5"], ["--epsilon", "abc"],
                                  ["--view-size", "1"], ["--view-size", "big"]])
def test_bad_numbers_are_rejected_by_the_parser(table, tmp_path, args, capsys):
    _, path, schema_path = table
    with pytest.raises(SystemExit) as info:
        main(["synthesize", str(path), "--schema", str(schema_path), "-q", *args])
    err = capsys.readouterr().err
    assert info.value.code == 2 and ("must be" in err or "not a valid" in err or "expected" in err)


@pytest.mark.parametrize("method, extra", [("aim", []), ("hybrid", ["--parties", "2x2"]), ("view", []),
                                           ("vertical", ["--parties", "2"]), ("vertical", []),
                                           ("view+", ["--view-size", "2"]), ("view", ["--view-size", "auto"])])
def test_every_method_runs_from_the_command_line(table, tmp_path, method, extra):
    _, path, schema_path = table
    out = tmp_path / f"{method}.csv"
    assert main(["synthesize", str(path), "--schema", str(schema_path), "--method", method, *extra, "--rows", "300",
                 "-o", str(out), "-q", "--seed", "0", "--bins", "6"]) == 0
    assert len(pd.read_csv(out)) == 300


def test_view_methods_state_a_pure_guarantee(table, tmp_path, capsys):
    _, path, schema_path = table
    report = tmp_path / "report.html"
    assert main(["synthesize", str(path), "--schema", str(schema_path), "--method", "view+", "--view-size", "2",
                 "--epsilon", "0.5", "-o", str(tmp_path / "s.csv"), "--report", str(report), "--no-plots",
                 "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "0.5000-DP (pure)" in out and "1e-09" not in out
    assert "0.5000-DP</b> (pure)" in report.read_text()


@pytest.mark.parametrize("args", [["--method", "aim", "--parties", "2x2"], ["--method", "mst", "--view-size", "3"],
                                  ["--method", "hybrid", "--view-size", "auto"]])
def test_options_of_another_method_are_refused(table, args, capsys):
    _, path, schema_path = table
    with pytest.raises(SystemExit) as info:
        main(["synthesize", str(path), "--schema", str(schema_path), "-q", *args])
    assert info.value.code == 2 and "applies to --method" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [(["--method", "vertical", "--parties", "2x2"], "takes --parties M"),
                                           (["--method", "hybrid", "--parties", "2"], "takes --parties KxS"),
                                           (["--method", "vertical", "--parties", "1"], "at least 2 parties")])
def test_party_counts_match_the_method(table, args, message, capsys):
    _, path, schema_path = table
    with pytest.raises(SystemExit) as info:
        main(["synthesize", str(path), "--schema", str(schema_path), "-q", *args])
    assert info.value.code == 2 and message in capsys.readouterr().err
