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
    assert abs(len(synthetic) - len(adult.frame)) < 1000  # the noisy count: sigma of the total is ~40
    assert (tmp_path / "report.html").exists()
