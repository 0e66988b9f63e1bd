"""The synthesizer benchmark's core on a tiny table: one row per method and seed, sane values (not timed)."""
import pandas as pd

from skdpsynth.benchmarks.synthesizers import METHODS, format_table, run_benchmark, summarize
from skdpsynth.datasets import load_adult


def test_run_benchmark_structure_and_tvd_range():
    adult = load_adult(discretized=True)
    cols = ["workclass", "marital-status", "sex", "income>50K"]
    frame, domain = adult.frame[cols].iloc[:300], adult.domain.project(cols)

    rows = run_benchmark(frame, domain, seeds=[0], epsilon=1.0)

    assert [r["method"] for r in rows] == list(METHODS)
    for r in rows:
        assert r["rows"] == r["synthetic_rows"] == 300     # samples as many records as the table has
        assert r["attributes"] == 4 and r["seed"] == 0
        assert 0.0 <= r["tvd2"] <= 1.0 and 0.0 <= r["tvd3"] <= 1.0
        assert r["seconds"] >= r["fit_s"] >= 0 and r["peak_rss_mb"] > 0
        assert r["is_private"] and abs(r["epsilon_spent"] - 1.0) < 1e-6   # every fit spends exactly ε, all DP
    assert {r["delta"] for r in rows if r["method"].startswith("dpview")} == {0.0}   # pure ε-DP

    summary = summarize(rows)
    assert isinstance(summary, pd.DataFrame) and list(summary["method"]) == list(METHODS)
    assert (summary["seeds"] == 1).all()
    assert ((summary["tvd2_min"] <= summary["tvd2"]) & (summary["tvd2"] <= summary["tvd2_max"])).all()
    table = format_table(summary)
    assert len(table.splitlines()) == 2 + len(METHODS)
