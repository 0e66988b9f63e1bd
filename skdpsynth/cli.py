"""The ``skdpsynth`` command: differentially private synthetic data from a CSV file.

    skdpsynth synthesize INPUT.csv --schema schema.json --epsilon 1 --delta 1e-9 --method aim -o synthetic.csv
    skdpsynth demo --out skdpsynth-demo

``synthesize`` discretizes/encodes the table with a public schema (the JSON
format of :class:`~skdpsynth.preprocessing.TableDiscretizer`), fits the chosen
synthesizer, writes the synthetic records in the input's schema and prints the
privacy guarantee.  Metadata the schema does not give (a numeric column's
bounds or quantile bin edges, a categorical column's categories, any column
it does not name) would be read from the private data: the command names those
columns and stops (exit 2) unless it may pay for them with DP
(``--preprocessing-epsilon E``, a part of ``--epsilon``) or is told to read
them anyway (``--infer-schema``; the result is then stated, on stdout, in the
report and in the ledger, as NOT differentially private).  ``demo`` runs the
same chain on the bundled Adult data with its public schema, with AIM
unless ``--method`` says otherwise (``synthesize`` defaults to MST).

The schema's categorical columns are read as written: their fields are
text, so ``00100`` stays ``00100``, and only an empty field is a missing
value (``NA``, ``null`` and the like are values, categories when the schema
lists them); a field spelling one of the schema's number or boolean
categories (``01`` or ``1.0`` for 1, ``true`` for True) is that category.
The other columns are read as pandas guesses them, except that a column the
schema does not name, read as numbers although a field has a leading zero
(``007``), is read as text.

With ``--seed`` the privacy noise is reproducible from the seed: the command
and the report say so, and the seed must not be published with the output.

Progress (budget used, rounds, the estimation's residual) goes to stderr;
``-q`` silences it.  ``--report`` writes a self-contained HTML report (privacy
ledger, 1/2/3-way TVD, per-column distributions and an association-difference
heat map when matplotlib is installed: ``pip install 'skdpsynth[report]'``).
With ``--target`` a stratified ``--test-size`` share of the records is held
out of the fit and the report adds train-on-synthetic-test-on-real accuracy.
The report compares against the real data, so it is *not* private: keep it
with the data owner.

A mistake in the input (a missing or unreadable file, an empty or malformed
CSV, a schema that is not valid JSON or not a valid schema, a value the schema
does not allow, an unwritable output, options the method refuses for this
schema, more ``--rows`` than memory holds) is reported in one line,
``skdpsynth: error: ...``, with exit status 2, as argparse reports usage
errors.  ``--debug`` (or the environment variable ``SKDPSYNTH_DEBUG=1``)
shows the underlying exception with its traceback instead.  Any other
exception is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

from .columns import Column
from .constraints import constraint_from_dict
from .pipeline import SynthesisPipeline
from .preprocessing import TableDiscretizer
from .preprocessing.table import _reject_duplicate_keys, normalize_schema, private_metadata
from .privacy import ReproducibleNoiseWarning
from .utils import MemoryLimitError

__all__ = ["main"]


class _UserError(Exception):
    """A mistake in the command's input (file, schema, data, option): one line on stderr, exit status 2."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _unreadable(exc: Exception, what: str, path) -> _UserError:
    """The one-line message for a file ``open``/``read_csv`` could not read."""
    where = f"{what} {str(path)!r}"
    if isinstance(exc, FileNotFoundError):
        text = f"{where} does not exist"
    elif isinstance(exc, IsADirectoryError):
        text = f"{where} is a directory, not a file"
    elif isinstance(exc, UnicodeDecodeError):
        text = f"{where} is not UTF-8 text ({exc.reason}); save it with the UTF-8 encoding"
    else:  # PermissionError and the like
        text = f"cannot read {where}: {getattr(exc, 'strerror', None) or _one_line(exc)}"
    return _UserError(text)


def _parser_reason(exc: Exception) -> str:
    """The CSV parser's reason without the line number or the offending record's field count (both private).

    ``--debug`` shows the parser's own message, to whoever runs the command with the data."""
    detail = _one_line(exc).removeprefix("Error tokenizing data. C error: ")
    ragged = re.search(r"Expected (\d+) fields? in line \d+, saw \d+", detail)
    if ragged:  # the header's field count is public
        detail = f"a record has more fields than the header's {ragged.group(1)} (check the delimiter and the quoting)"
    else:
        detail = re.sub(r"\d+", "N", detail)
    return detail + "; --debug shows the parser's own message"


try:  # the texts pandas reads as missing by default ("NA", "null", "", ...)
    from pandas._libs.parsers import STR_NA_VALUES as _PANDAS_NA_TEXT
except ImportError:  # pragma: no cover - the list of pandas' read_csv documentation
    _PANDAS_NA_TEXT = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                       "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}


def _read_input(path, schema: dict | None = None) -> pd.DataFrame:
    """The input CSV.  The schema's categorical columns are read as written (see :func:`_csv_options`); the other
    columns as pandas guesses them."""
    try:
        # pandas renames a repeated name ("age", "age.1"): read the header as written to refuse it.
        header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
        real = pd.read_csv(path, **_csv_options(header, schema))
    except (OSError, UnicodeDecodeError) as exc:
        raise _unreadable(exc, "input file", path) from exc
    except pd.errors.EmptyDataError as exc:
        raise _UserError(f"input file {str(path)!r} is empty: give a CSV file with a header line and at least one "
                         "record") from exc
    except pd.errors.ParserError as exc:
        raise _UserError(f"input file {str(path)!r} is not a valid CSV file: {_parser_reason(exc)}") from exc
    if len(real) == 0:
        raise _UserError(f"input file {str(path)!r} has a header line but no records")
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise _UserError(f"input file {str(path)!r}: its header names column {repeated[0]!r} more than once; give "
                         "every column its own name")
    for c, spec in (schema or {}).items():
        if spec["type"] == "categorical" and c in real.columns:
            real[c] = _as_categories(real[c], spec.get("categories"))
    return _iso_dates_as_dates(_codes_as_text(real, path, schema), schema)


# An ISO 8601 date, or date and time (seconds, fractions and a UTC offset optional): what a date column of a CSV
# written by pandas, a database or a spreadsheet's ISO export holds.
_ISO_DATE = r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"


def _iso_dates_as_dates(real: pd.DataFrame, schema: dict | None) -> pd.DataFrame:
    """Columns the schema does not declare whose every field is an ISO 8601 date (``2019-03-04``, or with a
    time), read as dates: ``TableDiscretizer`` bins them and they come back as dates, where as text each day would
    be a category. With a UTC offset they become UTC times. Like pandas' own guess of numbers, the rule reads the
    data's format; declaring the column categorical in the schema keeps it text."""
    declared = set(schema or {})
    for name in real.columns:
        column = real[name]
        if name in declared or not (column.dtype == object or pd.api.types.is_string_dtype(column.dtype)):
            continue
        present = column.dropna()
        # The first field rejects a column of labels at once; then every field (a non-text one matches nothing).
        if present.empty or not re.fullmatch(_ISO_DATE, str(present.iloc[0])):
            continue
        if not present.str.fullmatch(_ISO_DATE).eq(True).all():
            continue
        offset = present.str.contains(r"(?:Z|[+-]\d{2}:?\d{2})$").any()
        try:
            real[name] = pd.to_datetime(column, format="ISO8601", utc=bool(offset))
        except (ValueError, OverflowError):  # a date no datetime64[ns] holds (year 1500, month 13): text it stays
            continue
    return real


def _codes_as_text(real: pd.DataFrame, path, schema: dict | None) -> pd.DataFrame:
    """Columns the schema does not declare that pandas read as numbers although a field has a leading zero
    (``007``, ``00100``), read again as text: codes, not quantities, and ``100`` is not the zip code ``00100``.

    Like pandas' own guess (one field that is not a number makes a column text), the rule reads the data, as any
    type guessing does; a schema that declares the column decides instead."""
    declared = set(schema or {})
    guessed = [i for i, c in enumerate(real.columns)
               if c not in declared and real[c].dtype.kind in "iuf" and not pd.api.types.is_bool_dtype(real[c])]
    if not guessed:
        return real
    text = pd.read_csv(path, usecols=guessed, dtype=str)  # pandas' missing-value texts, as for the numbers
    for i in guessed:
        name = real.columns[i]
        if text[name].str.match(r"0\d").any():
            real[name] = text[name]
    return real


def _csv_options(header: list, schema: dict | None) -> dict:
    """``read_csv`` options: a categorical column of the schema is text, and only its empty field is missing.

    A category is a label, not a number: pandas' guessing would read the codes ``00100`` as the integer 100 (no
    longer a category: every record ``__other__``) and the category ``NA`` as a missing value.  The other columns
    keep pandas' guesses, including its missing-value texts."""
    text = {c for c, spec in (schema or {}).items() if spec["type"] == "categorical" and c in header}
    if not text:
        return {}
    # Per-column missing texts by position: pandas' names may differ from the header's (an unnamed column).
    na_values = {i: [""] if name in text else sorted(_PANDAS_NA_TEXT) for i, name in enumerate(header)}
    return {"dtype": {c: str for c in text}, "keep_default_na": False, "na_values": na_values}


def _as_categories(text: pd.Series, categories) -> pd.Series:
    """A categorical column read as text, with the fields that spell one of the schema's number or boolean
    categories replaced by it (``1``, ``1.0`` and ``01`` spell 1; ``True``, ``true`` and ``TRUE`` spell True, as
    pandas reads them).  Other fields stay text: the preprocessing then finds them outside the categories."""
    if categories is None or all(isinstance(v, str) for v in categories):
        return text
    spelled, numbers = {}, {}
    for v in categories:
        if isinstance(v, str):
            spelled[v] = v
        elif isinstance(v, bool):
            spelled.update({t: v for t in (str(v), str(v).lower(), str(v).upper())})
        else:
            numbers[v] = v
    fields = pd.Series(text.dropna().unique(), dtype=object)
    mapping = {t: spelled[t] for t in fields if t in spelled}
    if numbers:
        rest = fields[~fields.isin(list(mapping))]
        values = pd.to_numeric(rest, errors="coerce")
        mapping.update({t: numbers[x] for t, x in zip(rest, values) if not pd.isna(x) and x in numbers})
    out = text.astype(object)
    hit = out.isin(list(mapping)).to_numpy()
    out[hit] = out[hit].map(mapping)
    return out


#: The schema key of the public constraints (doc/constraints.md); a "$" key is never a column.
CONSTRAINTS_KEY = "$constraints"


def _read_schema(path) -> tuple[dict, list | None]:
    """The canonical schema of a JSON file and its public constraints (its ``"$constraints"`` list, if any); a
    UTF-8 byte order mark (as Windows editors write) is skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise _unreadable(exc, "schema file", path) from exc
    where = f"schema file {str(path)!r}"
    if not text.strip():
        raise _UserError(f"{where} is empty; it must hold a JSON object {{column: spec}}")
    try:
        parsed = json.loads(text, object_pairs_hook=_reject_duplicate_keys)
        if not isinstance(parsed, dict):
            raise ValueError("A JSON schema must be an object {column: spec}.")
        constraints = parsed.pop(CONSTRAINTS_KEY, None)
        schema = normalize_schema(parsed)
        return schema, _schema_constraints(constraints, schema)
    except json.JSONDecodeError as exc:
        raise _UserError(f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except (ValueError, TypeError) as exc:
        raise _UserError(f"{where}: {_one_line(exc)}") from exc


def _schema_constraints(constraints, schema: dict) -> list | None:
    """The schema's constraints, each parsed; they may name categorical columns only (a numeric column's values
    become bins, which a constraint on raw values does not describe)."""
    if constraints is None:
        return None
    if not isinstance(constraints, list):
        raise ValueError(f"{CONSTRAINTS_KEY!r} must be a list of constraints, got {type(constraints).__name__}; "
                         "see doc/constraints.md.")
    parsed = [constraint_from_dict(spec) for spec in constraints]
    # Values are checked against the categories the schema lists now, before any budget is spent.
    listed = {c: Column(c, len(spec["categories"]), "values", pd.Index(spec["categories"]), object)
              for c, spec in schema.items() if spec.get("categories") is not None}
    for constraint in parsed:
        numeric = [c for c in constraint.columns if schema.get(c, {}).get("type") == "numeric"]
        if numeric:
            raise ValueError(f"constraint {constraint!r} names numeric columns {numeric}; constraints apply to "
                             "categorical columns (declare them categorical with their categories).")
        if all(c in listed for c in constraint.columns):
            constraint.allowed(listed)
    return parsed


def _check_data(real: pd.DataFrame, schema, args) -> None:
    """The input's columns against the schema, before anything is fitted."""
    if schema is None:
        return
    source = f"input file {args.input!r}"
    absent = [c for c in schema if c not in set(real.columns)]
    if absent:
        raise _UserError(f"schema file {args.schema!r} names columns {absent} that are not in {source}, whose "
                         f"columns are {list(real.columns)}")
    for c, spec in schema.items():
        if spec["type"] != "numeric" or pd.api.types.is_numeric_dtype(real[c].dtype):
            continue
        bad = real[c].notna() & pd.to_numeric(real[c], errors="coerce").isna()
        if bad.any():
            # Neither the value nor its record's number: both are private (doc/privacy.md).
            raise _UserError(f"column {c!r} of {source} is numeric in the schema but holds values that are not "
                             "numbers; correct them, or declare the column categorical")


def _raised_in(exc: BaseException, subpackage: str) -> bool:
    """Whether ``exc`` was raised in ``skdpsynth.<subpackage>`` (``"preprocessing"`` or ``"synthesizers"``).

    The preprocessing steps validate the input against the schema, and the synthesizers their options against
    the public domain, so their ValueError / TypeError is a user error; the synthesizers never call into the
    preprocessing, so an error raised in one is not mistaken for the other's."""
    package = f"{__package__}.{subpackage}"
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_globals.get("__name__", "")
        if name == package or name.startswith(package + "."):
            return True
        tb = tb.tb_next
    return False


def _synthesizers() -> dict:
    from .synthesizers import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                               VerticalMRFSynthesizer, ViewSynthesizer)

    return {"aim": AIMSynthesizer, "hybrid": HybridSynthesizer, "mst": MSTSynthesizer,
            "partition": PartitionSynthesizer, "partition-paper": PartitionSynthesizer,
            "vertical": VerticalMRFSynthesizer, "view": ViewSynthesizer, "view+": ViewSynthesizer}


#: Methods whose release is pure ε-DP: they take no δ.
_PURE = ("view", "view+")


def _parties(text: str) -> dict | int:
    """``"KxS"`` -> the HybridSynthesizer partition recipe (K row slices x S contiguous column groups);
    ``"M"`` -> M parties holding contiguous column blocks (VerticalMRFSynthesizer)."""
    if text.isdigit():
        if int(text) < 2:
            raise argparse.ArgumentTypeError(f"a vertical partition needs at least 2 parties, got {text!r}")
        return int(text)
    try:
        k, s = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KxS such as 2x2 (hybrid) or M such as 2 (vertical), "
                                         f"got {text!r}") from None
    if k < 1 or s < 1:
        raise argparse.ArgumentTypeError(f"K and S must be >= 1, got {text!r}")
    return {"n_slices": k, "n_vertical": s}


def _int_or_auto(minimum: int):
    """An argparse type: an integer >= ``minimum`` or 'auto'."""
    def parse(text: str):
        if text == "auto":
            return text
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum} or 'auto', got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum} or 'auto', got {text}")
        return value
    return parse


_view_size = _int_or_auto(2)  # --view-size
_bins = _int_or_auto(1)  # --bins


def build_pipeline(schema, *, method: str, epsilon: float, delta: float, n_bins, seed, verbose: int,
                   parties: dict | None = None, view_size="auto", preprocessing_epsilon: float | None = None,
                   discover_categories: bool = False, max_view_cells: int | None = None,
                   constraints: list | None = None):
    """The preprocessing + synthesizer chain the command runs.

    Public metadata is free.  With ``preprocessing_epsilon`` the metadata the
    schema lacks is released with DP from that part of ``epsilon`` (and half
    of ``delta`` when categories must be discovered, all of it for the pure
    ε-DP methods, which use none); the synthesizer gets the rest, so the
    composed guarantee is at most (``epsilon``, ``delta``).  ``constraints``
    (public, the schema's ``"$constraints"``) go to the synthesizer.
    """
    pre_delta = None
    if preprocessing_epsilon is not None:
        epsilon = epsilon - preprocessing_epsilon
        if discover_categories:
            pre_delta = delta if method in _PURE else delta / 2
            delta = delta - pre_delta
    if method in _PURE:  # pure ε-DP: no δ
        extra = {"view_size": view_size, "variant": "dpview+" if method == "view+" else "dpview"}
        if max_view_cells is not None:
            extra["max_view_cells"] = max_view_cells
    else:
        extra = {"delta": delta}
        if method == "hybrid":
            extra["partition"] = parties
        elif method == "vertical":
            extra["party_columns"] = 2 if parties is None else parties
        elif method == "partition-paper":  # the published algorithm: not DP, and the ledger says so
            extra["privacy_mode"] = "paper"
    synth = _synthesizers()[method](epsilon=epsilon, random_state=seed, verbose=verbose, constraints=constraints,
                                    **extra)
    table = TableDiscretizer(_with_uniform_bins(schema, n_bins), n_bins=n_bins, epsilon=preprocessing_epsilon,
                             delta=pre_delta, random_state=seed)
    return SynthesisPipeline([("table", table), ("synth", synth)])


#: Equal-width bins of a numeric column whose schema gives its bounds only, with ``--bins auto``.
_UNIFORM_BINS = 16


def _with_uniform_bins(schema, n_bins):
    """With ``--bins auto``, a numeric column whose schema gives bounds but no bins gets ``_UNIFORM_BINS``
    equal-width bins (free); the others are binned adaptively, their number chosen from the released count."""
    if n_bins != "auto" or not schema:
        return schema
    out = {}
    for column, spec in normalize_schema(schema).items():
        bounded = (spec.get("type") == "numeric" and spec.get("bounds") is not None and "n_bins" not in spec
                   and spec.get("strategy", "uniform") == "uniform")
        out[column] = {**spec, "n_bins": _UNIFORM_BINS} if bounded else spec
    return out


def _seed_note(seed) -> str | None:
    if seed is None:
        return None
    return (f"--seed {seed} makes the privacy noise reproducible: anyone with the seed can regenerate and remove it. "
            "Do not publish the seed (or this command line) with the output; omit --seed for a release.")


def _split(real: pd.DataFrame, target: str | None, test_size: float, seed):
    """Hold out ``test_size`` of the rows (stratified by the target) for TSTR; the synthesizer never sees them."""
    if target is None:
        return real, None
    if target not in real.columns:
        raise _UserError(f"--target {target!r} is not a column of the input; columns: {list(real.columns)}")
    from sklearn.model_selection import train_test_split

    labels = real[target].astype("string").fillna("<NA>")
    stratify = labels if labels.value_counts().min() >= 2 else None
    try:
        train, test = train_test_split(real, test_size=test_size, random_state=seed, stratify=stratify)
    except ValueError as exc:  # e.g. too few records to hold out --test-size of them
        # Not scikit-learn's words: they quote the number of records and of target values, both private.
        raise _UserError(f"--target {target!r} --test-size {test_size:g}: the records cannot be split so (too few "
                         "records, or too few per target value, for a test set of that share); change --test-size "
                         "or omit --target") from exc
    return train, test


def evaluate(pipe: SynthesisPipeline, real: pd.DataFrame, synthetic: pd.DataFrame, test, target) -> dict:
    """Fidelity (1/2/3-way TVD on the fitted discretization) and, with a target, TSTR on the held-out rows."""
    from .metrics import marginal_tvd, tstr_score

    table = pipe.named_steps_["table"]
    real_codes, synth_codes = table.transform(real), table.transform(synthetic)
    ways = tuple(k for k in (1, 2, 3) if k <= real.shape[1])
    out = {"real_codes": real_codes, "synthetic_codes": synth_codes,
           "tvd": marginal_tvd(real_codes, synth_codes, ways=ways), "tstr": None}
    if target is not None:
        train_codes = table.transform(real.drop(index=test.index, errors="ignore"))
        test_codes = table.transform(test)
        majority = test_codes[target].value_counts(normalize=True).reindex(
            [train_codes[target].value_counts().idxmax()]).fillna(0).iloc[0]
        out["tstr"] = {
            "target": target, "metric": "accuracy", "n_test": len(test),
            "synthetic": tstr_score(train_codes, synth_codes, test_codes, target),
            "real": tstr_score(train_codes, train_codes, test_codes, target),
            "majority": float(majority),
        }
    return out


def _write_error(exc: OSError, option: str, path) -> _UserError:
    return _UserError(f"cannot write {option} {str(path)!r}: {exc.strerror or _one_line(exc)}")


def _run(real: pd.DataFrame, schema, args, title: str, source: str | None = None) -> int:
    """Fit, sample, write.  ``source`` names the user's input in the messages of its data errors (None: the
    bundled data, whose errors are bugs)."""
    start = time.perf_counter()
    verbose = 0 if args.quiet else 1
    train, test = _split(real, args.target, args.test_size, args.seed)
    if test is not None and not args.quiet:
        # The share, not the counts: a log line is read by whoever runs the job, and the counts give n.
        print(f"holding out {args.test_size:.0%} of the records (test-size {args.test_size:g}) to measure "
              f"train-on-synthetic-test-on-real accuracy for {args.target!r}; the synthesizer never sees them")
    pipe = build_pipeline(schema, method=args.method, epsilon=args.epsilon, delta=args.delta, n_bins=args.bins,
                          seed=args.seed, verbose=verbose, parties=args.parties, view_size=args.view_size,
                          preprocessing_epsilon=args.preprocessing_epsilon,
                          discover_categories="categories" in getattr(args, "private_metadata", {}).values(),
                          max_view_cells=getattr(args, "max_view_cells", None),
                          constraints=getattr(args, "constraints", None))
    _fit(pipe, train, source, args.method)
    try:
        synthetic = pipe.sample(args.rows)
    except MemoryLimitError as exc:
        raise _UserError(f"--rows {args.rows:,}: {_one_line(exc)}") from exc
    seconds = time.perf_counter() - start
    out = Path(args.output)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        synthetic.to_csv(out, index=False)
    except OSError as exc:
        raise _write_error(exc, "-o", out) from exc
    ledger = pipe.privacy_ledger_
    pure = set(ledger.to_frame()["accounting"]) <= {"pure", "leak"}
    delta = None if pure else args.delta  # a pure ε-DP release is stated without δ
    notes = [note for note in (_seed_note(args.seed),) if note]
    if not args.quiet:
        print(f"wrote {len(synthetic):,} records to {out} in {seconds:.1f} s")
        releases = sum(e.accounting != "leak" for e in ledger)
        print(f"privacy: {releases} releases, {ledger.statement(delta)}")
        discovery = _discovery_summary(pipe.named_steps_["table"])
        if discovery:
            print(discovery)
        for note in notes:
            print(f"note: {note}")
    if args.report:
        _report(args, pipe, real, synthetic, test, ledger=ledger, delta=delta, title=title, seconds=seconds,
                notes=notes)
    return 0


def _discovery_summary(table) -> str | None:
    """One line on the categories discovered with DP: how many each column kept, the threshold below which a
    value went to ``__other__``, and how to keep them all. Only released figures (the categories, the
    thresholds, which are public functions of the budget); None when nothing was discovered with DP."""
    encoder = getattr(table, "encoder_", None)
    thresholds = {} if encoder is None else encoder.thresholds_
    if not thresholds:
        return None
    kept = ", ".join(f"{c} {len(table.schema_[c]['categories'])}" for c in thresholds)
    lowest = min(thresholds.values())
    return (f"categories discovered with DP (values kept: {kept}): a value held by fewer than about "
            f"{lowest:,.0f} records at this budget is written as '__other__'; list a column's categories in "
            "--schema to keep them all, free (doc/preprocessing.md)")


def _fit(pipe: SynthesisPipeline, train: pd.DataFrame, source: str | None, method: str) -> None:
    """Fit the pipeline.  A data error found by the preprocessing is the user's (exit 2), named by ``source``;
    one the synthesizer finds (an option it refuses for this schema, a size over its limits) too, named by the
    method."""
    try:
        pipe.fit(train)
    except (ValueError, TypeError) as exc:
        detail = _one_line(exc).removeprefix("fit: ").removeprefix("transform: ")
        if isinstance(exc, MemoryLimitError) and _raised_in(exc, "preprocessing"):
            raise _UserError(f"the bins (--bins, or n_bins and edges in --schema): {detail}") from exc
        if source is not None and _raised_in(exc, "preprocessing"):
            if "outside its categories" in detail or "not among its categories" in detail:
                detail += (" (The command reads a categorical column's fields as written: only an empty field is a "
                           "missing value, and a text such as NA or null is a value like any other.)")
            raise _UserError(f"{source}: {detail}") from exc
        if _raised_in(exc, "synthesizers"):
            raise _UserError(f"--method {method}: {detail}") from exc
        raise


def _report(args, pipe: SynthesisPipeline, real: pd.DataFrame, synthetic: pd.DataFrame, test, *, ledger, delta,
            title: str, seconds: float, notes) -> None:
    """Evaluate, write the HTML report to ``--report`` and (unless quiet) print its scores."""
    from .metrics.report import write_report

    scores = evaluate(pipe, real, synthetic, test, args.target)
    try:
        written = write_report(
            Path(args.report), real=real, synthetic=synthetic, real_codes=scores["real_codes"],
            synthetic_codes=scores["synthetic_codes"], ledger=ledger, delta=delta, title=title,
            tvd=scores["tvd"], tstr=scores["tstr"], seconds=seconds, plots=False if args.no_plots else "auto",
            notes=notes)
    except OSError as exc:
        raise _write_error(exc, "--report", args.report) from exc
    if not args.quiet:
        tvd = scores["tvd"]
        print("average TVD: " + ", ".join(f"{k}-way {v:.4f}" for k, v in tvd.items()))
        if scores["tstr"]:
            t = scores["tstr"]
            print(f"TSTR accuracy for {t['target']!r}: {t['synthetic']:.4f} (train on real: {t['real']:.4f}, "
                  f"majority class: {t['majority']:.4f})")
        images = written.get("images") or []
        if images:
            plots = f" (+ {len(images)} PNGs)"
        elif args.no_plots:
            plots = " (tables only: --no-plots)"
        else:
            plots = " (tables only; pip install 'skdpsynth[report]' for plots)"
        print(f"report: {written['html']}{plots}")


def _check_metadata(real: pd.DataFrame, schema, args, source: str | None = None) -> None:
    """Refuse (exit 2) to read metadata from the data unless it is paid for with DP or --infer-schema says so."""
    try:
        needs = private_metadata(schema, real, n_bins=args.bins)
    except (ValueError, TypeError) as exc:  # the data does not fit the schema
        if source is None:
            raise
        raise _UserError(f"{source}: {_one_line(exc)}") from exc
    args.private_metadata = needs
    if args.preprocessing_epsilon is not None:
        if not needs:
            raise _UserError("--preprocessing-epsilon: every column's metadata is public in --schema, so there is "
                             "nothing to spend it on; drop it (the synthesizer then gets all of --epsilon).")
        if not args.preprocessing_epsilon < args.epsilon:
            raise _UserError(f"--preprocessing-epsilon {args.preprocessing_epsilon:g} must be smaller than --epsilon "
                             f"{args.epsilon:g}: it is the part of the budget spent on metadata.")
        return
    if needs and not args.infer_schema:
        listed = "; ".join(f"{c!r} ({what})" for c, what in needs.items())
        raise _UserError(
            f"No public metadata for columns {list(needs)}: {listed} would be read from the private data, which "
            "differential privacy does not cover. Give them in --schema (bounds or edges for numeric columns, "
            "categories for the others), pay for them with --preprocessing-epsilon E (released with DP from E of "
            "--epsilon), or pass --infer-schema to proceed anyway: the output is then NOT differentially private.")


def _check_outputs(*options) -> None:
    """Refuse output paths that are folders before any budget is spent on a result that could not be written."""
    for option, path in options:
        if path is None:
            continue
        if Path(path).is_dir():
            raise _UserError(f"{option} {str(path)!r} is a directory; give a file name")
        parent = Path(path).parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if parent.exists() and not parent.is_dir():
            raise _UserError(f"{option} {str(path)!r}: {str(parent)!r} is a file, not a folder")


def _synthesize(args) -> int:
    _check_outputs(("-o", args.output), ("--report", args.report))
    schema, args.constraints = _read_schema(args.schema) if args.schema else (None, None)
    real = _read_input(args.input, schema)
    _check_data(real, schema, args)
    source = f"input file {args.input!r}"
    _check_metadata(real, schema, args, source)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # the command says it in its own words
        return _run(real, schema, args, f"skdpsynth: {Path(args.input).name}", source)


def _demo(args) -> int:
    from .datasets import load_adult

    adult = load_adult()
    folder = Path(args.out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _UserError(f"cannot create the folder --out {args.out!r}: {exc.strerror or _one_line(exc)}") from exc
    args.output = str(folder / "synthetic.csv")
    args.report = str(folder / "report.html")
    if args.rows is None:
        # Public: adult.names states the number of instances (48,842), so the demo may reproduce it exactly.
        args.rows = len(adult.frame)
    if args.target is None and not args.no_target:
        args.target = adult.target_name
    _check_metadata(adult.frame, adult.schema, args)
    if not args.quiet:
        print(f"Adult (bundled, {len(adult.frame):,} records x {adult.frame.shape[1]} columns), public schema, "
              f"{args.method.upper()} at epsilon={args.epsilon}"
              + ("" if args.method in _PURE else f", delta={args.delta}"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReproducibleNoiseWarning)  # the command says it in its own words
        return _run(adult.frame, adult.schema, args, "skdpsynth demo: UCI Adult")


# --------------------------------------------------------------------------- federated roles (file-based protocol)
WAITING = 3
"""Exit status of ``skdpsynth curator --no-wait`` while parties have requests to answer."""


def _federated_parsers(sub, checked) -> None:
    party = sub.add_parser(
        "party", help="a data holder: answer the curator's requests for a federated job (file-based protocol)",
        description="Answer, with this party's data, every request of the curator waiting in the exchange folder "
                    "(the setup included), writing one reply file each. The data never leave this command; only "
                    "DP messages and protocol packets do. See doc/federated.md.")
    def job_args(p, exchange_help: str, state_help: str) -> None:
        p.add_argument("--job", required=True, help="the public job description (JSON)")
        p.add_argument("--exchange", required=True, help=exchange_help)
        p.add_argument("--state", required=True, help=state_help)
        p.add_argument("-q", "--quiet", action="store_true")
        p.add_argument("--debug", action="store_true")

    job_args(party, "the folder shared with the curator", "this party's private folder (its key, its spent budget)")
    party.add_argument("--name", required=True, help="this party's name in the job")
    party.add_argument("--data", required=True,
                       help="this party's records: CSV with a header (its columns as integer codes) or .npy")
    party.add_argument("--watch", type=checked(float, lambda v: v > 0, "a number > 0"), default=None,
                       metavar="SECONDS", help="keep answering until the curator is done, or SECONDS pass idle")
    party.add_argument("--noise", choices=["private", "curator"], default="private",
                       help="'curator': use the curator's seed for this party's noise (tests only: the curator can "
                            "then remove it)")
    curator = sub.add_parser(
        "curator", help="the curator: fit a federated job from the parties' reply files and sample",
        description="Run the job's fit (HybridSynthesizer, RandDPGen, for a \"hybrid\" job; "
                    "VerticalMRFSynthesizer, VertiMRF, for a \"vertical\" one) against the parties through the "
                    "exchange folder: write the requests of each round, read the replies. Replays from the replies already "
                    "there, so it can be stopped and started again. Exit status 3: waiting for parties.")
    job_args(curator, "the folder shared with the parties", "the curator's private folder (its seed and keys)")
    wait = curator.add_mutually_exclusive_group()
    wait.add_argument("--wait", type=checked(float, lambda v: v > 0, "a number > 0"), default=3600.0,
                      metavar="SECONDS", help="how long to wait for replies (default 3600)")
    wait.add_argument("--no-wait", action="store_true",
                      help="stop with exit status 3 as soon as a reply is missing (run again later)")
    curator.add_argument("-o", "--output", default="synthetic.csv", help="synthetic records (integer codes)")
    curator.add_argument("--rows", type=checked(int, lambda v: v >= 0, "an integer >= 0"), default=None,
                         help="number of synthetic records (default: the DP estimate of the record count)")
    curator.add_argument("--seed", type=int, default=None,
                         help="seed the curator's own choices (reproducible runs only; kept in --state)")


def _read_federated_job(path):
    from .federated.files import read_job

    try:
        return read_job(path)
    except ValueError as exc:
        raise _UserError(str(exc)) from exc


def _party(args) -> int:
    import time

    from .federated.files import answer_requests, is_done
    from .federated.wire import MessageError

    job = _read_federated_job(args.job)
    if not os.path.exists(args.data):
        raise _UserError(f"--data {args.data!r} does not exist.")
    idle_since = time.monotonic()
    total = 0
    server = None
    if job["method"] == "vertical":  # VertiMRF's party: its method's server (the runtime does not import methods)
        from .synthesizers.vertical_mrf.remote import VerticalPartyServer

        server = VerticalPartyServer.for_job
    while True:
        try:
            n = answer_requests(job, args.name, args.data, args.exchange, args.state, noise=args.noise,
                                server=server)
        except (ValueError, MessageError, OSError) as exc:
            raise _UserError(_one_line(exc)) from exc
        total += n
        if n:
            idle_since = time.monotonic()
        if args.watch is None or is_done(args.exchange) or time.monotonic() - idle_since > args.watch:
            break
        time.sleep(0.2)
    if not args.quiet:
        print(f"{args.name}: answered {total} request(s)" + (" (the curator is done)" if is_done(args.exchange)
                                                              else ""))
    return 0


def _curator(args) -> int:
    import warnings

    from .federated.files import CuratorState, FileFederatedData, FileVerticalFederatedData, WaitingForParties
    from .federated.wire import MessageError
    from .privacy import ReproducibleNoiseWarning
    from .synthesizers import HybridSynthesizer, VerticalMRFSynthesizer

    job = _read_federated_job(args.job)
    state = CuratorState(args.state, seed=args.seed)
    timeout = None if args.no_wait else args.wait
    vertical = job["method"] == "vertical"
    data = (FileVerticalFederatedData if vertical else FileFederatedData)(job, args.exchange, state, timeout=timeout)
    try:
        model = (VerticalMRFSynthesizer if vertical else HybridSynthesizer)(
            epsilon=job["epsilon"], delta=job["delta"], secure_computation="cryptographic", random_state=state.seed,
            **job["parameters"])
    except TypeError as exc:
        raise _UserError(f"job parameters: {exc}") from exc
    try:
        with warnings.catch_warnings():
            # The seed of the curator's own choices is its private state (--state), not a published seed.
            warnings.simplefilter("ignore", ReproducibleNoiseWarning)
            model.fit(data)
    except WaitingForParties as waiting:
        if not args.quiet:
            print(f"skdpsynth curator: {waiting}; run them (skdpsynth party ...), then this command again.",
                  file=sys.stderr)
        return WAITING
    except (MessageError, ValueError) as exc:
        raise _UserError(_one_line(exc)) from exc
    data.last_backend.finish()
    n_rows = args.rows if args.rows is not None else max(int(round(model.n_records_)), 0)
    synthetic = model.sample(n_rows)
    try:
        synthetic.to_csv(args.output, index=False)
    except OSError as exc:
        raise _write_error(exc, "-o/--output", args.output) from exc
    if not args.quiet:
        stats = model.runtime_
        print(f"fitted over {stats['n_parties']} parties: {stats['requests']} requests, "
              f"{stats['bytes_sent'] / 1e6:.2f} MB sent, {stats['bytes_received'] / 1e6:.2f} MB received")
        print(f"privacy: {model.privacy_ledger_.guarantee()}")
        print(f"wrote {n_rows} synthetic records to {args.output}")
    return 0


def main(argv=None) -> int:
    """Run the ``skdpsynth`` command with the arguments ``argv``; returns its exit status.

    The subcommands are ``synthesize`` (a CSV file), ``demo`` (the bundled
    Adult data), and the federated roles ``party`` and ``curator`` (the
    file-based protocol); see the module docstring and ``skdpsynth --help``.

    Parameters
    ----------
    argv : list of str, optional
        The command-line arguments without the program name, e.g.
        ``["synthesize", "data.csv", "--schema", "schema.json"]``; by default
        ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success; 2 for a mistake in the input (a
        missing or invalid file, schema or value, an unwritable output), after
        a one-line ``skdpsynth: error: ...`` on stderr; 3 (:data:`WAITING`)
        when ``curator --no-wait`` waits for the parties.

    Raises
    ------
    SystemExit
        As :mod:`argparse` does, for a usage error (status 2) or ``--help``
        (status 0).

    Examples
    --------
    >>> import json, os, tempfile
    >>> import pandas as pd
    >>> from skdpsynth.cli import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     data = os.path.join(tmp, "data.csv")
    ...     pd.DataFrame({"age": [23, 35, 47, 52, 61, 29] * 10,
    ...                   "color": ["red", "blue", "red", "blue", "red", "red"] * 10}).to_csv(data, index=False)
    ...     schema = os.path.join(tmp, "schema.json")
    ...     with open(schema, "w") as f:
    ...         json.dump({"age": {"type": "numeric", "bounds": [18, 90]}, "color": ["red", "blue"]}, f)
    ...     out = os.path.join(tmp, "synthetic.csv")
    ...     status = main(["synthesize", data, "--schema", schema, "--epsilon", "1", "--rows", "5",
    ...                    "--seed", "0", "-q", "-o", out])
    ...     synthetic = pd.read_csv(out)
    ...     missing = main(["synthesize", os.path.join(tmp, "missing.csv"), "-q"])  # one line on stderr
    >>> status, synthetic.shape, list(synthetic.columns)
    (0, (5, 2), ['age', 'color'])
    >>> missing
    2
    """
    ap = _argument_parser()
    args = ap.parse_args(argv)
    if args.command in ("party", "curator"):
        return _run_command(ap, args, _party if args.command == "party" else _curator)
    _check_method_options(ap, args)
    return _run_command(ap, args, _synthesize if args.command == "synthesize" else _demo)


def _argument_parser() -> argparse.ArgumentParser:
    """The command line: the subcommands and their options."""
    ap = argparse.ArgumentParser(prog="skdpsynth", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    syn = sub.add_parser("synthesize", help="synthesize a CSV file")
    syn.add_argument("input")
    syn.add_argument("--schema", default=None, help="public schema JSON (TableDiscretizer format)")
    syn.add_argument("--infer-schema", action="store_true",
                     help="read missing metadata from the data without DP (the output is NOT differentially private)")
    syn.add_argument("-o", "--output", default="synthetic.csv")
    syn.add_argument("--report", default=None, help="write an HTML fidelity report here")
    _common_options(syn, method="mst")
    demo = sub.add_parser("demo", help="the whole chain on bundled Adult")
    demo.add_argument("--out", default="skdpsynth-demo")
    demo.add_argument("--no-target", action="store_true", help="no TSTR hold-out (fit on every record)")
    # AIM: on Adult at epsilon 1 its 2- and 3-way TVD are about a third below MST's for a few seconds more
    # (doc/cli.md gives the figures).
    _common_options(demo, method="aim")
    _federated_parsers(sub, _checked)
    return ap


def _checked(kind, test, what):
    """An argparse type: ``kind`` of the text, refused unless ``test`` holds (``what`` says what it must be)."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a valid {kind.__name__}") from None
        if not test(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return value
    return parse


def _common_options(p, method: str) -> None:
    """The options of synthesize and demo; ``method`` is the default ``--method``."""
    p.add_argument("--epsilon", type=_checked(float, lambda v: 0 < v < float("inf"), "a number > 0"),
                   default=1.0)
    p.add_argument("--delta", type=_checked(float, lambda v: 0 < v < 1, "in (0, 1)"), default=1e-9,
                   help="delta of the (epsilon, delta)-DP guarantee (unused by the pure epsilon-DP view methods)")
    p.add_argument("--method", choices=sorted(_synthesizers()), default=method,
                   help=f"(default {method}) aim, mst: centralized baselines; "
                        "hybrid: RandDPGen over simulated parties; "
                        "vertical: VertiMRF over parties holding column blocks; "
                        "partition: PPSyn (strict, DP); partition-paper: PPSyn as published (NOT DP); "
                        "view / view+: DPView / DPView+ (pure epsilon-DP)")
    p.add_argument("--view-size", type=_view_size, default=None, metavar="D",
                   help="--method view/view+: attributes per view, or 'auto' (default: chosen from the columns' "
                        "sizes, epsilon and a DP record count)")
    p.add_argument("--max-view-cells", type=_checked(int, lambda v: v >= 1, "an integer >= 1"), default=None,
                   metavar="N", help="--method view/view+: the most cells a view may have (default 50,000,000)")
    p.add_argument("--parties", type=_parties, default=None, metavar="KxS|M",
                   help="--method hybrid: simulate K row slices x S column groups (default 1x1); "
                        "--method vertical: M parties holding contiguous column blocks in file order "
                        "(default 2)")
    p.add_argument("--rows", type=_checked(int, lambda v: v >= 0, "an integer >= 0"), default=None,
                   help="number of synthetic records (default: the DP estimate of the record count)")
    p.add_argument("--bins", type=_bins, default="auto",
                   help="bins per numeric column without its own n_bins/edges in the schema; 'auto' (default): "
                        f"{_UNIFORM_BINS} equal-width bins where the schema gives bounds, else adaptive DP bins "
                        "(about sqrt(n)/4, 2 to 32, plus one per value many records share)")
    p.add_argument("--target", default=None,
                   help="label column: hold out --test-size of the records and report train-on-synthetic-"
                        "test-on-real accuracy")
    p.add_argument("--test-size", type=_checked(float, lambda v: 0 < v < 1, "in (0, 1)"), default=0.2)
    p.add_argument("--no-plots", action="store_true", help="tables-only report even if matplotlib is installed")
    p.add_argument("--preprocessing-epsilon", type=_checked(float, lambda v: 0 < v < float("inf"), "a number > 0"),
                   default=None, metavar="E",
                   help="part of --epsilon spent releasing, with DP, the metadata the schema lacks (numeric "
                        "bounds / quantile edges, categories); half of --delta goes to category discovery")
    p.add_argument("--seed", type=int, default=None,
                   help="seed the noise (reproducible runs only: the noise can be regenerated from the seed, "
                        "so never publish it with the output)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or summary output")
    p.add_argument("--debug", action="store_true",
                   help="on an input error, show the exception with its traceback instead of one line "
                        "(also: environment variable SKDPSYNTH_DEBUG=1)")


def _check_method_options(ap, args) -> None:
    """Refuse the options of one method given with another (they would be silently ignored); default the view
    size."""
    if args.parties is not None and args.method not in ("hybrid", "vertical"):
        ap.error(f"--parties applies to --method hybrid or vertical only, not {args.method!r}")
    if args.method == "hybrid" and isinstance(args.parties, int):
        ap.error(f"--method hybrid takes --parties KxS (e.g. 2x2), got {args.parties}")
    if args.method == "vertical" and isinstance(args.parties, dict):
        ap.error("--method vertical takes --parties M (the number of parties), not KxS")
    if args.view_size is not None and args.method not in _PURE:
        ap.error(f"--view-size applies to --method view / view+ only, not {args.method!r}")
    if getattr(args, "max_view_cells", None) is not None and args.method not in _PURE:
        ap.error(f"--max-view-cells applies to --method view / view+ only, not {args.method!r}")
    if args.view_size is None:
        args.view_size = "auto"


def _run_command(ap, args, command) -> int:
    """Run a subcommand; an input mistake is one line on stderr and exit status 2 (with --debug: the traceback)."""
    debug = args.debug or os.environ.get("SKDPSYNTH_DEBUG", "").strip() not in ("", "0")
    try:
        return command(args)
    except _UserError as exc:
        if debug and exc.__cause__ is not None:
            raise exc.__cause__ from None  # the original exception, with its traceback
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
