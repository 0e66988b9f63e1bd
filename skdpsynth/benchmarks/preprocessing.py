"""Numeric, date and missing-value columns through ``skdpsynth synthesize`` with no schema (issue 42, acceptance 1–2).

    python -m skdpsynth.benchmarks.preprocessing                            # adult + mixed, seeds 0 1 2, new defaults
    python -m skdpsynth.benchmarks.preprocessing --cases adult mixed --seeds 0 1 2 --compare
    python -m skdpsynth.benchmarks.preprocessing --baseline --cases adult --seeds 0
    python -m skdpsynth.benchmarks.preprocessing --cases mixed --method mst --via-csv --out prep.json

Cases (``--cases``): ``adult`` is the bundled raw Adult table
(``load_adult().frame``, 48,842 × 15, target ``income``); ``mixed`` is
:func:`skdpsynth.datasets.make_mixed_table` (``--mixed-records`` records,
20,000 by default, seeded by ``--data-seed``; target ``churned``) with
skewed, heavy-tailed, integer, 2-decimal, point-mass, date and missing-value
columns.  Each seed does what ``skdpsynth synthesize data.csv --epsilon 1
--preprocessing-epsilon 0.1 --method aim --target T --seed S`` does with no
schema: a stratified 80/20 split (``skdpsynth.cli._split``), the pipeline of
``skdpsynth.cli.build_pipeline`` (categories discovered with DP), fitted on
the 80 % and sampled to as many records.  ``--via-csv`` also reads the table
back from a CSV file as the command line reads its input
(``skdpsynth.cli._read_input``; the figures still compare with the table as
generated, so a date column read as text shows as a dtype failure); by
default the frame is fitted as it is.

Modes: **new** is the command line's defaults (``--bins auto``: adaptive DP
bins where the schema gives no bounds); **baseline** (``--baseline``) is the
defaults before issue 42 on the current code: 16 equal-width bins over DP
bounds (``n_bins=16``, ``TableDiscretizer(strategy="uniform")``) and the
categorical columns with missing values declared ``{"type": "categorical",
"missing": "category"}`` (then required).  ``--compare`` runs both and
prints them side by side.

A fit that fails on a column (an error naming it) is run again: a
categorical column with missing values gets that declaration in the
schema, any other column is left out and reported as *not supported yet*
with the error's text (which, by the project's rules, quotes no private
value).  So a feature still in development shows as such, and the other
columns are still measured.

Per numeric or date column, against the training records the pipeline saw
(:func:`skdpsynth.metrics.numeric_fidelity`), with PASS/FAIL per check and
seed:

* **KS** (Kolmogorov–Smirnov distance) <= 0.05;
* **IQR** of the synthetic values within 10 % of the data's.  When the
  data's IQR is 0 (a point mass over half the records, e.g. capital-gain)
  the synthetic IQR must be 0 too.  On an integer column with a small IQR a
  one-unit difference may be unavoidable (quartiles fall on whole numbers);
  it is still a FAIL and is marked ``1 unit``. A FAIL names each failed check with the seeds it
  failed at: ``ks (6/10)``;
* **bounds**: every synthetic value inside the bounds the fitted
  ``TableDiscretizer`` released (``schema_[col]["bounds"]``, or the first and
  last public edge).  Beside it, not a check: the share of the data
  outside those bounds (clipped into the end bins: values the synthetic
  table cannot have, which the KS distance then shows), and the share of
  synthetic values beyond the data's own minimum and maximum (inside the
  bounds, so allowed, but a reader sees an age of 128);
* **dtype**: integer columns come back integer, dates as datetime64, floats
  as floats (the synthetic dtype against the data's);
* **decimals**: the most decimals of a synthetic value of a float column at
  most the data's (``repr``'s shortest exact text); n/a when the data carry
  full double precision (a value of 16 or more significant digits: nothing
  to keep), ``full`` when the synthetic values do;
* **NaN share** within noise of the data's, for every column with missing
  values (categorical ones too): ``|p_synthetic − p| <= 4 · sqrt((σ/n)² +
  p(1 − p)/m)``, where σ is the synthesizer's Gaussian noise on the column's
  one-way count (the inverse-variance combination of its 1-way measurements
  in the ledger: the model's estimate of the missing cell is at least that
  good), n the training records and m the synthetic ones (the binomial
  noise of sampling).  Four standard deviations: a correct share fails with
  probability below 10⁻⁴.

TSTR: ``skdpsynth.cli.evaluate`` — accuracy on the 20 % held out of a model
trained on the synthetic records, beside the same model trained on the real
80 % and the majority class.  Seeds fix the noise: a benchmark, not a
release (the ``ReproducibleNoiseWarning`` is silenced; a
``PrivacyLeakWarning`` is reported).
"""
from __future__ import annotations

import argparse
import json
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..privacy import PrivacyLeakWarning, ReproducibleNoiseWarning
from ..synthesizers.select_measure import one_way_sigma

CASES = ("adult", "mixed")
MODES = ("new", "baseline")
KS_MAX = 0.05
IQR_TOLERANCE = 0.10
NAN_SIGMAS = 4.0
FULL_PRECISION = 99   # "decimals" of a column carrying full double precision (16-17 significant digits)
CHECKS = ("ks", "iqr", "bounds", "dtype", "decimals", "nan")
MISSING_CATEGORY = {"type": "categorical", "missing": "category"}


def load_case(case: str, *, mixed_records: int = 20000, data_seed: int = 0) -> tuple[pd.DataFrame, str]:
    """The table of ``case`` and its target column."""
    from ..datasets import load_adult, make_mixed_table

    if case == "adult":
        adult = load_adult()
        return adult.frame, adult.target_name
    if case == "mixed":
        return make_mixed_table(mixed_records, random_state=data_seed), "churned"
    raise ValueError(f"unknown case {case!r}; known: {CASES}")


def _is_measured(values: pd.Series) -> bool:
    """A number (not a boolean) or a date: a column this benchmark scores."""
    dtype = values.dtype
    return (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)) or \
        pd.api.types.is_datetime64_any_dtype(dtype)


def _is_categorical(values: pd.Series) -> bool:
    return not _is_measured(values) and not pd.api.types.is_bool_dtype(values.dtype)


def initial_schema(frame: pd.DataFrame, mode: str) -> dict:
    """No schema for the new defaults; the baseline declares the categorical columns with missing values."""
    if mode == "new":
        return {}
    if mode == "baseline":
        return {c: dict(MISSING_CATEGORY) for c in frame.columns
                if _is_categorical(frame[c]) and frame[c].isna().any()}
    raise ValueError(f"unknown mode {mode!r}; known: {MODES}")


def make_pipeline(frame: pd.DataFrame, schema: dict, *, mode: str, method: str, seed: int, epsilon: float,
                  delta: float, preprocessing_epsilon: float):
    """The command line's pipeline (``skdpsynth.cli.build_pipeline`` as ``_run`` calls it) for ``mode``."""
    from ..cli import build_pipeline
    from ..preprocessing.table import private_metadata

    n_bins = "auto" if mode == "new" else 16
    discover = "categories" in private_metadata(schema or None, frame, n_bins=n_bins).values()
    pipe = build_pipeline(schema or None, method=method, epsilon=epsilon, delta=delta, n_bins=n_bins, seed=seed,
                          verbose=0, preprocessing_epsilon=preprocessing_epsilon, discover_categories=discover)
    if mode == "baseline":
        pipe.steps[0][1].set_params(strategy="uniform")
    return pipe


def _named_column(exc: BaseException, columns) -> str | None:
    """The first column of ``columns`` that the error's text names (``column 'x'``)."""
    for name in re.findall(r"column '([^']+)'", str(exc)):
        if name in columns:
            return name
    return None


def fit_with_fallback(train: pd.DataFrame, target: str, schema: dict, build) -> dict:
    """Fit ``build(frame, schema)`` on ``train`` and sample ``len(train)`` records, working around failing columns.

    An error naming a categorical column with missing values adds
    ``MISSING_CATEGORY`` to its schema entry; one naming another column
    (not the target) leaves that column out.  Each step is a note.  Any
    other error is raised."""
    schema, columns, notes = dict(schema), list(train.columns), {}
    while True:
        frame = train[columns]
        pipe = build(frame, schema)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                warnings.simplefilter("ignore", ReproducibleNoiseWarning)
                pipe.fit(frame)
                synthetic = pipe.sample(len(frame))
        except (ValueError, TypeError) as exc:
            column = _named_column(exc, columns)
            if column is None or column == target:
                raise
            text = " ".join(str(exc).split())
            if _is_categorical(frame[column]) and frame[column].isna().any() and \
                    schema.get(column, {}).get("missing") != "category":
                schema[column] = {**schema.get(column, {}), **MISSING_CATEGORY}
                notes[column] = f"needed schema {MISSING_CATEGORY} (error without it: {text})"
            else:
                columns.remove(column)
                notes[column] = f"not supported yet (error: {text})"
            continue
        leaks = sorted({str(w.message).split(":")[0] for w in caught if issubclass(w.category, PrivacyLeakWarning)})
        return {"pipe": pipe, "synthetic": synthetic, "columns": columns, "schema": schema, "notes": notes,
                "leaks": leaks}


def max_decimals(values) -> int:
    """The most decimals in the shortest exact text of a finite value (``repr``), or ``FULL_PRECISION`` when a
    value needs 16 or more significant digits: a column carrying full double precision, not recorded to a
    fixed number of decimals."""
    v = np.unique(np.asarray(pd.to_numeric(pd.Series(values), errors="coerce").dropna(), dtype=float))
    most = 0
    for x in v[np.isfinite(v)]:
        mantissa = np.format_float_scientific(x, unique=True, trim="-").split("e")[0]
        if len(mantissa.replace("-", "").replace(".", "")) >= 16:
            return FULL_PRECISION
        text = np.format_float_positional(x, unique=True, trim="-")
        most = max(most, len(text.split(".")[1]) if "." in text else 0)
    return most


def nan_tolerance(share: float, sigma: float | None, n_train: int, n_synthetic: int) -> float:
    """``NAN_SIGMAS`` standard deviations of the synthetic missing share: DP noise σ/n and sampling noise."""
    dp = 0.0 if sigma is None else (sigma / n_train) ** 2
    sampling = share * (1 - share) / max(n_synthetic, 1)
    return NAN_SIGMAS * float(np.sqrt(dp + sampling))


def _released_bounds(spec: dict | None, dates: bool):
    if not spec or spec.get("type") != "numeric":
        return None
    bounds = spec.get("bounds")
    if bounds is None and spec.get("edges") is not None:
        bounds = [spec["edges"][0], spec["edges"][-1]]
    if bounds is None:
        return None
    if dates:  # TableDiscretizer bins dates as days since 1970-01-01 UTC
        return tuple(pd.Timestamp("1970-01-01") + pd.Timedelta(days=float(b)) if isinstance(b, (int, float))
                     else pd.Timestamp(b) for b in bounds)
    return tuple(float(b) for b in bounds)


def _dtype_ok(real: pd.Series, synthetic: pd.Series) -> bool:
    r, s = real.dtype, synthetic.dtype
    if pd.api.types.is_datetime64_any_dtype(r):
        return pd.api.types.is_datetime64_any_dtype(s)
    if pd.api.types.is_integer_dtype(r):
        return pd.api.types.is_integer_dtype(s)
    if pd.api.types.is_float_dtype(r):
        return pd.api.types.is_float_dtype(s)
    return str(r) == str(s)


def column_checks(train: pd.DataFrame, synthetic: pd.DataFrame, pipe, *, original: pd.DataFrame) -> list[dict]:
    """One row per scored column: the figures and a PASS (True) / FAIL (False) / n/a (None) per check.

    ``train`` is what the pipeline was fitted on, ``original`` the same records as generated or loaded (their
    dtypes are the expected ones; they differ when the table went through a CSV file)."""
    from ..metrics import numeric_fidelity

    table = pipe.named_steps_["table"]
    ledger = pipe.privacy_ledger_
    measured = [c for c in train.columns if _is_measured(original[c]) or original[c].isna().any()]
    fidelity = numeric_fidelity(original[[c for c in measured if _is_measured(original[c])]], synthetic)
    rows = []
    for c in measured:
        real, synth = original[c], synthetic[c]
        dates = pd.api.types.is_datetime64_any_dtype(real.dtype)
        row = {"column": c, "dtype_real": str(real.dtype), "dtype_synthetic": str(synth.dtype),
               "dtype_ok": _dtype_ok(real, synth) if _is_measured(real) else None}
        p = float(real.isna().mean())
        row.update(nan_real=p, nan_synthetic=float(synth.isna().mean()))
        if p > 0:
            sigma = one_way_sigma(ledger, c)
            row.update(nan_sigma=sigma, nan_tolerance=nan_tolerance(p, sigma, len(train), len(synthetic)))
            row["nan_ok"] = abs(row["nan_synthetic"] - p) <= row["nan_tolerance"]
        else:
            row["nan_ok"] = None
        if c in fidelity.index:
            row.update(_shape_checks(fidelity.loc[c], real, synth, table.schema_.get(c), dates))
        elif _is_measured(real):
            row.update(ks=None, ks_ok=False, iqr_ok=False, bounds_ok=False,
                       reason=f"synthetic dtype {synth.dtype}: not comparable")
        rows.append(row)
    return rows


def _shape_checks(stats: pd.Series, real: pd.Series, synth: pd.Series, spec: dict | None, dates: bool) -> dict:
    """KS, IQR, released bounds and decimals of one column (``stats``: its ``numeric_fidelity`` row)."""
    scale = 86400e9 if dates else 1.0   # dates: nanoseconds -> days
    iqr_real, iqr_synth = float(stats["iqr_real"]) / scale, float(stats["iqr_synthetic"]) / scale
    if iqr_real == 0:
        iqr_ok = iqr_synth == 0
    else:
        iqr_ok = abs(iqr_synth / iqr_real - 1) <= IQR_TOLERANCE
    one_unit = (not iqr_ok and pd.api.types.is_integer_dtype(real.dtype) and abs(iqr_synth - iqr_real) <= 1)
    bounds = _released_bounds(spec, dates)
    lo, hi = stats["min_synthetic"], stats["max_synthetic"]
    out = {"ks": float(stats["ks"]), "ks_ok": bool(stats["ks"] <= KS_MAX), "iqr_real": iqr_real,
           "iqr_synthetic": iqr_synth, "iqr_ok": bool(iqr_ok), "iqr_one_unit": bool(one_unit),
           "min_synthetic": lo, "max_synthetic": hi, "bounds": bounds,
           "bounds_ok": None if bounds is None or pd.isna(lo) else bool(bounds[0] <= lo and hi <= bounds[1]),
           # Not a check: the share of the data the released bounds cut off (clipped into the end bins).
           "real_outside_bounds": None if bounds is None else
           float(((real < bounds[0]) | (real > bounds[1]))[real.notna()].mean()),
           # Nor this: synthetic values beyond the data's own range (allowed inside DP bounds, yet visible).
           "synthetic_outside_data": float(((synth < real.min()) | (synth > real.max()))[synth.notna()].mean())}
    if pd.api.types.is_float_dtype(real.dtype):
        out.update(decimals_real=max_decimals(real), decimals_synthetic=max_decimals(synth))
        # A column in full precision has no precision to keep; one recorded to d decimals must stay so.
        out["decimals_ok"] = (None if out["decimals_real"] == FULL_PRECISION else
                              out["decimals_synthetic"] <= out["decimals_real"])
    else:
        out["decimals_ok"] = None
    return out


def _via_csv(frame: pd.DataFrame, schema: dict) -> pd.DataFrame:
    """``frame`` written to a CSV file and read back as ``skdpsynth synthesize`` reads its input."""
    from ..cli import _read_input

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        frame.to_csv(path, index=False)
        return _read_input(path, schema or None)


def run_one(frame: pd.DataFrame, target: str, *, case: str, mode: str, seed: int, method: str = "aim",
            epsilon: float = 1.0, delta: float = 1e-9, preprocessing_epsilon: float = 0.1,
            test_size: float = 0.2, via_csv: bool = False) -> dict:
    """One case × mode × seed: split, fit (with the fallbacks), sample, score (see the module docstring)."""
    from ..cli import _split, evaluate

    schema = initial_schema(frame, mode)
    data = _via_csv(frame, schema) if via_csv else frame
    train, test = _split(data, target, test_size, seed)

    def build(part, part_schema):
        return make_pipeline(part, part_schema, mode=mode, method=method, seed=seed, epsilon=epsilon,
                             delta=delta, preprocessing_epsilon=preprocessing_epsilon)

    fit = fit_with_fallback(train, target, schema, build)
    columns, pipe, synthetic = fit["columns"], fit["pipe"], fit["synthetic"]
    rows = column_checks(train[columns], synthetic, pipe, original=frame.loc[train.index, columns])
    tstr = evaluate(pipe, data[columns], synthetic, test[columns], target)["tstr"]
    ledger = pipe.privacy_ledger_
    return {"case": case, "mode": mode, "seed": seed, "method": method, "epsilon": epsilon,
            "preprocessing_epsilon": preprocessing_epsilon, "via_csv": via_csv, "n_train": len(train),
            "n_synthetic": len(synthetic), "columns": rows, "notes": fit["notes"], "schema": fit["schema"],
            "privacy_leaks": fit["leaks"], "is_private": bool(ledger.is_private),
            "epsilon_spent": float(ledger.epsilon(delta)),
            "tstr": tstr["synthetic"], "tstr_real": tstr["real"], "tstr_majority": tstr["majority"],
            # The tentative missing categories the synthesizer decided: z, and whether the data have missing values.
            "missing_support": {c: (z, bool(train[c].isna().any()))
                                for c, z in getattr(pipe, "missing_support_", {}).items()}}


def _missing_support_line(group: list[dict]) -> str | None:
    """The z-scores of the tentative missing categories over the group's fits, with and without missing values."""
    with_missing, without = {}, []
    for r in group:
        for c, (z, has_missing) in r.get("missing_support", {}).items():
            if has_missing:
                with_missing.setdefault(c, []).append(z)
            else:
                without.append(z)
    if not with_missing and not without:
        return None

    def span(zs):
        known = [z for z in zs if z is not None]
        if not known:
            return f"undecided ({len(zs)} fits)"
        return f"{min(known):.1f}..{max(known):.1f} ({len(known)} fits{'' if len(known) == len(zs) else ', some undecided'})"

    parts = [f"{c} z {span(zs)}" for c, zs in with_missing.items()]
    if without:
        parts.append(f"columns without missing values z {span(without)}")
    return "tentative missing categories (z = model count / sigma; >= 3 confirms): " + "; ".join(parts)


def run_benchmark(cases=CASES, modes=("new",), seeds=(0, 1, 2), *, mixed_records: int = 20000,
                  data_seed: int = 0, log=None, **options) -> list[dict]:
    """Every case × mode × seed (one :func:`run_one` result each); ``log`` gets each as it finishes."""
    results = []
    for case in cases:
        frame, target = load_case(case, mixed_records=mixed_records, data_seed=data_seed)
        for mode in modes:
            for seed in seeds:
                result = run_one(frame, target, case=case, mode=mode, seed=seed, **options)
                results.append(result)
                if log is not None:
                    log(result)
    return results


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "n/a"
    if isinstance(x, pd.Timestamp):
        return str(x.date()) if x == x.normalize() else str(x)
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _decimals(d: int) -> str:
    return "full" if d == FULL_PRECISION else str(d)


def _seeds(rows: list[dict], key: str, form=_fmt) -> str:
    return "/".join(form(r.get(key)) for r in rows)


def _verdict(rows: list[dict]) -> str:
    """PASS when every applicable check passes for every seed; else the failed checks, each with the seeds it
    failed at out of all (``ks (6/10)``)."""
    failed = []
    for check in CHECKS:
        misses = [r for r in rows if r.get(f"{check}_ok") is False]
        if misses:
            one_unit = check == "iqr" and all(r.get("iqr_one_unit") for r in misses)
            failed.append(f"{check} ({'1 unit, ' if one_unit else ''}{len(misses)}/{len(rows)})")
    return "PASS" if not failed else "FAIL: " + ", ".join(failed)


def summarize(results: list[dict]) -> pd.DataFrame:
    """One line per case × mode × column, its figures over the seeds joined by ``/`` (seed order)."""
    lines = []
    for (case, mode), group in _groups(results).items():
        names = list(dict.fromkeys(c["column"] for r in group for c in r["columns"]))
        for name in names:
            rows = [c for r in group for c in r["columns"] if c["column"] == name]
            first = rows[0]
            ratio = [None if r.get("iqr_real") in (None, 0) else r["iqr_synthetic"] / r["iqr_real"] for r in rows]
            lines.append({
                "case": case, "mode": mode, "column": name, "seeds": len(rows),
                "dtype": f"{first['dtype_real']} -> " + "/".join(dict.fromkeys(r["dtype_synthetic"] for r in rows)),
                "ks": _seeds(rows, "ks", lambda v: "n/a" if v is None else f"{v:.3f}"),
                "iqr": (f"{_fmt(first.get('iqr_real'))} -> {_seeds(rows, 'iqr_synthetic')}"
                        if first.get("iqr_real") == 0 else "/".join("n/a" if v is None else f"{v:.3f}"
                                                                    for v in ratio)),
                "beyond_data": ("n/a" if all(r.get("synthetic_outside_data") is None for r in rows) else
                                _seeds(rows, "synthetic_outside_data", lambda v: "n/a" if v is None else f"{v:.4f}")),
                "range": ("n/a" if first.get("bounds") is None else
                          f"{_fmt(first['min_synthetic'])}..{_fmt(first['max_synthetic'])} in "
                          f"{_fmt(first['bounds'][0])}..{_fmt(first['bounds'][1])}"),
                "in_bounds": ("n/a" if all(r.get("bounds_ok") is None for r in rows) else
                              f"{sum(r.get('bounds_ok') is True for r in rows)}/{len(rows)}"),
                "real_outside": ("n/a" if all(r.get("real_outside_bounds") is None for r in rows) else
                                 _seeds(rows, "real_outside_bounds", lambda v: "n/a" if v is None else f"{v:.4f}")),
                "nan": ("n/a" if not first["nan_real"] else
                        f"{first['nan_real']:.4f} -> {_seeds(rows, 'nan_synthetic', lambda v: f'{v:.4f}')} "
                        f"(tol {max(r['nan_tolerance'] for r in rows):.4f})"),
                "decimals": ("n/a" if "decimals_real" not in first else
                             f"{_decimals(first['decimals_real'])} -> "
                             f"{'/'.join(_decimals(r['decimals_synthetic']) for r in rows)}"),
                "verdict": _verdict(rows),
            })
    return pd.DataFrame(lines)


def _groups(results: list[dict]) -> dict:
    groups: dict = {}
    for r in results:
        groups.setdefault((r["case"], r["mode"]), []).append(r)
    return groups


def format_tables(results: list[dict], compare: bool = False) -> str:
    """The printed report: per case and mode a Markdown table, TSTR and notes; with ``compare`` also side by side."""
    summary = summarize(results)
    out = []
    for (case, mode), group in _groups(results).items():
        sel = summary[(summary["case"] == case) & (summary["mode"] == mode)]
        out.append(f"\n### {case}, {mode} defaults ({group[0]['method']}, eps {group[0]['epsilon']:g}, preprocessing "
                   f"eps {group[0]['preprocessing_epsilon']:g}; seeds {[r['seed'] for r in group]}; "
                   f"n_train {group[0]['n_train']:,}{'; via CSV' if group[0]['via_csv'] else ''})\n")
        out.append("| column | dtype real -> synthetic | KS | IQR ratio (or real -> synthetic when 0) | "
                   "synthetic range in released bounds (first seed) | in bounds | data outside bounds | "
                   "synthetic beyond data range | NaN real -> synthetic (tol) | decimals real -> synthetic | "
                   "verdict |")
        out.append("| --- | --- | --- | --- | --- | ---: | --- | --- | --- | --- | --- |")
        for r in sel.itertuples():
            out.append(f"| {r.column} | {r.dtype} | {r.ks} | {r.iqr} | {r.range} | {r.in_bounds} | "
                       f"{r.real_outside} | {r.beyond_data} | {r.nan} | {r.decimals} | {r.verdict} |")
        out.append(f"\nTSTR accuracy on {_target(group)}: synthetic {_seeds(group, 'tstr', lambda v: f'{v:.4f}')}, "
                   f"real {_seeds(group, 'tstr_real', lambda v: f'{v:.4f}')}, majority "
                   f"{group[0]['tstr_majority']:.4f}; eps spent {_seeds(group, 'epsilon_spent', lambda v: f'{v:.4f}')}"
                   f"{'' if all(r['is_private'] for r in group) else '; NOT PRIVATE'}")
        support = _missing_support_line(group)
        if support:
            out.append(support)
        verdicts = list(sel["verdict"])
        out.append(f"acceptance: {sum(v == 'PASS' for v in verdicts)}/{len(verdicts)} columns PASS")
        for column, note in dict(kv for r in group for kv in r["notes"].items()).items():
            out.append(f"- {column}: {note}")
        for leak in sorted({leak for r in group for leak in r["privacy_leaks"]}):
            out.append(f"- PrivacyLeakWarning: {leak}")
    if compare:
        out.append(_side_by_side(summary))
    return "\n".join(out)


def _target(group: list[dict]) -> str:
    return {"adult": "income", "mixed": "churned"}.get(group[0]["case"], "the target")


def _side_by_side(summary: pd.DataFrame) -> str:
    """New defaults beside the baseline, per case and column (only the cases run in both modes)."""
    out = []
    fields = ("ks", "iqr", "in_bounds", "dtype", "decimals", "nan", "verdict")
    for case, sel in summary.groupby("case", sort=False):
        new, base = (sel[sel["mode"] == m].set_index("column") for m in ("new", "baseline"))
        if new.empty or base.empty:
            continue
        out.append(f"\n### {case}: new defaults | baseline (16 equal-width bins)\n")
        out.append("| column | " + " | ".join(f"{f} new | {f} base" for f in fields) + " |")
        out.append("| --- " * (1 + 2 * len(fields)) + "|")
        for column in dict.fromkeys(list(new.index) + list(base.index)):
            cells = []
            for f in fields:
                cells += [str(t.loc[column, f]) if column in t.index else "not run" for t in (new, base)]
            out.append(f"| {column} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--method", default="aim", choices=["aim", "mst"])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--preprocessing-epsilon", type=float, default=0.1)
    modes = ap.add_mutually_exclusive_group()
    modes.add_argument("--baseline", action="store_true", help="the defaults before issue 42 only")
    modes.add_argument("--compare", action="store_true", help="new defaults and baseline, side by side")
    ap.add_argument("--via-csv", action="store_true", help="read the table back from a CSV as the CLI does")
    ap.add_argument("--mixed-records", type=int, default=20000, help="records of the generated mixed table")
    ap.add_argument("--data-seed", type=int, default=0, help="random_state of the generated mixed table")
    ap.add_argument("--out", type=Path, default=None, help="write every run as JSON here")
    args = ap.parse_args(argv)
    chosen = ("new", "baseline") if args.compare else ("baseline",) if args.baseline else ("new",)
    print(f"cases {args.cases}, modes {list(chosen)}, seeds {args.seeds}, {args.method}, eps {args.epsilon:g} "
          f"(preprocessing {args.preprocessing_epsilon:g}), delta {args.delta:g}; thresholds: KS <= {KS_MAX}, "
          f"IQR within {IQR_TOLERANCE:.0%} (0 must stay 0), values inside the released bounds, dtypes kept, "
          f"decimals <= the data's, NaN share within {NAN_SIGMAS:g} sd (DP one-way noise + sampling)", flush=True)
    results = run_benchmark(args.cases, chosen, args.seeds, mixed_records=args.mixed_records,
                            data_seed=args.data_seed, method=args.method, epsilon=args.epsilon, delta=args.delta,
                            preprocessing_epsilon=args.preprocessing_epsilon, via_csv=args.via_csv,
                            log=lambda r: print(f"done: {r['case']} {r['mode']} seed {r['seed']}", flush=True))
    if args.out is not None:
        args.out.write_text(json.dumps(_jsonable(results), indent=1, default=str))
    print(format_tables(results, compare=args.compare))
    return results


if __name__ == "__main__":
    main()
