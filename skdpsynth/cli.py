"""The ``skdpsynth`` command: differentially private synthetic data from a CSV file.

    skdpsynth synthesize INPUT.csv --schema schema.json --epsilon 1 --delta 1e-9 --method aim -o synthetic.csv
    skdpsynth demo --out skdpsynth-demo

``synthesize`` discretizes/encodes the table with a public schema (the JSON
format of :class:`~skdpsynth.preprocessing.TableDiscretizer`), fits the chosen
synthesizer, writes the synthetic records in the input's schema and prints the
privacy ledger.  Without ``--schema`` the category lists and numeric ranges
would have to be read from the private data: the command says which and stops
unless ``--infer-schema`` is given (then it proceeds with a privacy-leak
warning).  ``demo`` runs the same chain on the bundled Adult data with its
public schema.
"""
from __future__ import annotations

import argparse
import html
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

from .pipeline import SynthesisPipeline
from .preprocessing import TableDiscretizer
from .preprocessing.table import schema_from_json

__all__ = ["main"]


def _synthesizers() -> dict:
    from .synthesizers import AIMSynthesizer, MSTSynthesizer

    return {"aim": AIMSynthesizer, "mst": MSTSynthesizer}


def build_pipeline(schema, *, method: str, epsilon: float, delta: float, n_bins: int, seed, verbose: int):
    """The preprocessing + synthesizer chain the command runs (public schema: preprocessing is free)."""
    synth = _synthesizers()[method](epsilon=epsilon, delta=delta, random_state=seed, verbose=verbose)
    return SynthesisPipeline([("table", TableDiscretizer(schema, n_bins=n_bins, random_state=seed)), ("synth", synth)])


def fidelity(pipe: SynthesisPipeline, real: pd.DataFrame, synthetic: pd.DataFrame) -> dict:
    """Average TVD over 1/2/3-way marginals, both tables discretized by the fitted preprocessing step."""
    from .metrics import marginal_tvd

    table = pipe.named_steps_["table"]
    real_t, synth_t = table.transform(real), table.transform(synthetic)
    ways = tuple(k for k in (1, 2, 3) if k <= real.shape[1])
    return marginal_tvd(real_t, synth_t, ways=ways)


def write_report(path: Path, *, title: str, pipe: SynthesisPipeline, tvd: dict, seconds: float, n_rows: int) -> None:
    """A self-contained HTML report (tables only): the ledger summary and the fidelity scores."""
    ledger = pipe.privacy_ledger_
    frame = ledger.to_frame()
    summary = frame.groupby(["party", "mechanism"], dropna=False).agg(
        releases=("description", "size"), rho=("rho", "sum"), epsilon=("epsilon", "sum")
    )
    delta = getattr(pipe.named_steps_["synth"], "delta", None)
    statement = f"({ledger.epsilon(delta):.4f}, {delta:g})-DP" if delta else f"{ledger.total_epsilon():.4f}-DP"
    rows = "".join(f"<tr><td>{k}-way</td><td>{v:.4f}</td></tr>" for k, v in tvd.items())
    path.write_text(
        f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3em .6em}}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{n_rows:,} synthetic records in {seconds:.1f} s. Privacy guarantee of the whole fit: <b>{statement}</b>
(zCDP total {ledger.total_zcdp():.6g}).</p>
<h2>Privacy ledger</h2>{summary.to_html()}
<h2>Fidelity</h2><p>Average total variation distance between real and synthetic marginals
(both discretized by the fitted preprocessing step; 0 is identical, 1 is disjoint).</p>
<table><tr><th>marginals</th><th>average TVD</th></tr>{rows}</table>
</body></html>""",
        encoding="utf-8",
    )


def _run(real: pd.DataFrame, schema, args, title: str) -> int:
    start = time.perf_counter()
    verbose = 0 if args.quiet else 1
    pipe = build_pipeline(schema, method=args.method, epsilon=args.epsilon, delta=args.delta, n_bins=args.bins,
                          seed=args.seed, verbose=verbose)
    pipe.fit(real)
    synthetic = pipe.sample(args.rows)
    seconds = time.perf_counter() - start
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    synthetic.to_csv(out, index=False)
    ledger = pipe.privacy_ledger_
    delta = args.delta
    if not args.quiet:
        print(f"wrote {len(synthetic):,} records to {out} in {seconds:.1f} s")
        print(f"privacy: {len(ledger)} releases, ({ledger.epsilon(delta):.4f}, {delta:g})-DP")
    if args.report:
        tvd = fidelity(pipe, real, synthetic)
        write_report(Path(args.report), title=title, pipe=pipe, tvd=tvd, seconds=seconds, n_rows=len(synthetic))
        if not args.quiet:
            print("average TVD: " + ", ".join(f"{k}-way {v:.4f}" for k, v in tvd.items()) + f"; report: {args.report}")
    return 0


def _synthesize(args) -> int:
    real = pd.read_csv(args.input)
    if args.schema:
        schema = schema_from_json(Path(args.schema).read_text())
        missing = [c for c in real.columns if c not in schema]
    else:
        schema, missing = None, list(real.columns)
    if missing and not args.infer_schema:
        print(
            f"No public schema for columns {missing}: their category lists (or min/max for numbers) would be read "
            "from the private data, which differential privacy does not cover. Give them in --schema, or pass "
            "--infer-schema to proceed anyway (a PrivacyLeakWarning is issued).",
            file=sys.stderr,
        )
        return 2
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        return _run(real, schema, args, f"skdpsynth: {Path(args.input).name}")


def _demo(args) -> int:
    from .datasets import load_adult

    adult = load_adult()
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    args.output = str(folder / "synthetic.csv")
    args.report = str(folder / "report.html")
    if not args.quiet:
        print(f"Adult (bundled, {len(adult.frame):,} records x {adult.frame.shape[1]} columns), public schema, "
              f"{args.method.upper()} at epsilon={args.epsilon}, delta={args.delta}")
    return _run(adult.frame, adult.schema, args, "skdpsynth demo: UCI Adult")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="skdpsynth", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--epsilon", type=float, default=1.0)
        p.add_argument("--delta", type=float, default=1e-9)
        p.add_argument("--method", choices=sorted(_synthesizers()), default="mst")
        p.add_argument("--rows", type=int, default=None, help="number of records (default: the noisy count)")
        p.add_argument("--bins", type=int, default=16, help="bins per numeric column")
        p.add_argument("--seed", type=int, default=None)
        p.add_argument("-q", "--quiet", action="store_true")

    syn = sub.add_parser("synthesize", help="synthesize a CSV file")
    syn.add_argument("input")
    syn.add_argument("--schema", default=None, help="public schema JSON (TableDiscretizer format)")
    syn.add_argument("--infer-schema", action="store_true", help="read missing metadata from the data (leaks)")
    syn.add_argument("-o", "--output", default="synthetic.csv")
    syn.add_argument("--report", default=None, help="write an HTML fidelity report here")
    common(syn)
    demo = sub.add_parser("demo", help="the whole chain on bundled Adult")
    demo.add_argument("--out", default="skdpsynth-demo")
    common(demo)
    args = ap.parse_args(argv)
    return _synthesize(args) if args.command == "synthesize" else _demo(args)


if __name__ == "__main__":
    sys.exit(main())
