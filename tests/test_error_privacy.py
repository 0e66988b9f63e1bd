"""No private value or size in any error or warning text (issue 38, item 5 and acceptance point 4).

Errors are read by whoever runs a job: the analyst, logs, and in the federated runtime the curator (the process and
dask backends carry a party's exception back to it).  doc/privacy.md: the records, their number and every value in
them are private; a message may name a column, a party or a public parameter, never a value, a count or a size
taken from the data.

The harness builds data whose private quantities are distinctive (1,237 and 1,241 records, a label 'SECRET-7', a
code 123456, 173 offending and 419 missing entries, the first offender at row 577), provokes every user-reachable
error of the in-memory, out-of-core, federated and vertical paths, the three transformers and the command, and
scans the exception, its chained causes and contexts, every warning and the command's output for those numbers (and
the record counts next to them: n - 1, n + 1, the clean records, both parties together) and the label.
"""
from __future__ import annotations

import re
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.federated import HybridPartition
from skdpsynth.preprocessing import DPCategoricalEncoder, DPKBinsDiscretizer, TableDiscretizer

N1, N2 = 1237, 1241          # record counts (of the table, of a second party or a roster)
SECRET = "SECRET-7"          # a private label
CODE = 123456                # a private code
N_BAD = 173                  # records holding SECRET / CODE
N_MISSING = 419              # missing entries
FIRST_BAD = 577              # row of the first offender (record number 578, line 579 of a CSV file)
PRIVATE_NUMBERS = sorted({N1, N1 - 1, N1 + 1, N2, N2 - 1, N2 + 1, N1 + N2, CODE, CODE + 1, N_BAD, N1 - N_BAD,
                          N_MISSING, N1 - N_MISSING, FIRST_BAD, FIRST_BAD + 1, FIRST_BAD + 2})
_NUMBER = re.compile(r"(?<![\d.])\d{1,3}(?:[,_]\d{3})+(?![\d])|(?<![\d.])\d+(?![\d])")

DOMAIN = {"dx": ["flu", "cold"], "age": 5, "sex": 2}
GROUPS = {"p0": ["dx"], "p1": ["age", "sex"]}


def leaks(text: str, public=()) -> list[str]:
    """The private numbers (with or without thousands separators) and label that ``text`` quotes.

    ``public``: numbers that are public in the case at hand (a roster's size and last position, which a message
    may quote; the table then has the other size)."""
    found = [SECRET] if "SECRET" in text else []
    numbers = {int(re.sub(r"[,_]", "", m)) for m in _NUMBER.findall(text)}
    return found + [str(k) for k in PRIVATE_NUMBERS if k in numbers and k not in public]


def chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception chained to it (``__cause__``, ``__context__``), each once."""
    out, todo = [], [exc]
    while todo:
        e = todo.pop()
        if e is None or any(e is seen for seen in out):
            continue
        out.append(e)
        todo += [e.__cause__, e.__context__]
    return out


def scan(action, *, must_raise: bool = True) -> list[str]:
    """Run ``action``; return every text it produced: its exception chain (type, message, args) and warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            action()
        except Exception as exc:  # every exception a user can meet is scanned, whatever its type
            error = exc
        else:
            error = None
    if must_raise:
        assert error is not None, "the case no longer raises: it does not test an error message"
    texts = [f"{type(e).__name__}: {e} {e.args!r}" for e in chain(error)] if error is not None else []
    return texts + [f"{w.category.__name__}: {w.message}" for w in caught]


def assert_no_leak(texts: list[str], public=(), tmp_path=None) -> None:
    """No text quotes a private number or the label.

    Set aside: the test's own folder (its name may hold any number) and the source locations of a traceback that
    crossed a process boundary (``File "...", line 978`` is code, not data)."""
    if tmp_path is not None:
        texts = [t.replace(str(tmp_path), "<tmp>") for t in texts]
    texts = [re.sub(r'File "[^"]*", line \d+', "File <source>", t) for t in texts]
    bad = [(leaks(t, public), t) for t in texts if leaks(t, public)]
    assert not bad, f"private values or sizes in messages: {bad}"


# -- data ------------------------------------------------------------------------------------------------
def clean(n: int = N1, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"dx": rng.choice(DOMAIN["dx"], n).astype(object), "age": rng.integers(0, 5, n),
                         "sex": rng.integers(0, 2, n)})


def offenders(n: int, count: int) -> np.ndarray:
    """``count`` distinct rows, the first of them FIRST_BAD."""
    rows = np.random.default_rng(1).choice(np.arange(FIRST_BAD + 1, n), count - 1, replace=False)
    return np.sort(np.append(rows, FIRST_BAD))


def with_secret_label(frame=None):
    frame = clean() if frame is None else frame.copy()
    frame.loc[offenders(len(frame), N_BAD), "dx"] = SECRET
    return frame


def with_secret_code(frame=None):
    frame = clean() if frame is None else frame.copy()
    frame.loc[offenders(len(frame), N_BAD), "age"] = CODE
    return frame


def with_missing_label():
    frame = clean()
    frame.loc[offenders(N1, N_MISSING), "dx"] = None
    return frame


def with_missing_code():
    frame = clean().astype({"age": float})
    frame.loc[offenders(N1, N_MISSING), "age"] = np.nan
    return frame


# -- the in-memory fit of all six synthesizers -----------------------------------------------------------------
SYNTHESIZERS = {
    "mst": lambda: MSTSynthesizer(domain=DOMAIN),
    "aim": lambda: AIMSynthesizer(domain=DOMAIN),
    "hybrid": lambda: HybridSynthesizer(domain=DOMAIN),
    "vertical": lambda: VerticalMRFSynthesizer(domain=DOMAIN, party_columns=GROUPS),
    "view": lambda: ViewSynthesizer(domain=DOMAIN),
    "partition": lambda: PartitionSynthesizer(domain=DOMAIN),
}
FAULTS = {
    "label outside its categories": lambda make: make().fit(with_secret_label()),
    "code outside its domain": lambda make: make().fit(with_secret_code()),
    "missing labels": lambda make: make().fit(with_missing_label()),
    "missing codes": lambda make: make().fit(with_missing_code()),
    "codes as a 1-D array": lambda make: make().fit(np.zeros(N1, dtype=int)),
    "a y of another length": lambda make: make().fit(clean(), pd.Series(np.zeros(N2, dtype=int), name="t")),
    "an undeclared many-valued column": lambda make: make().set_params(
        domain={"dx": DOMAIN["dx"], "sex": 2}).fit(with_secret_code()),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("method", list(SYNTHESIZERS))
def test_in_memory_fit_errors_quote_no_private_value_or_size(method, fault):
    assert_no_leak(scan(lambda: FAULTS[fault](SYNTHESIZERS[method])))


def test_the_issues_examples_name_the_column_and_say_what_to_do():
    """The issue's reproductions: the message names the column and the way out, not 'HIV+' or 123456."""
    X = pd.DataFrame({"dx": ["flu", "cold", "HIV+"]})
    with pytest.raises(ValueError, match=r"^Column 'dx' has values outside its public categories; declare them in "
                                         r"domain= or map them to a declared category first") as info:
        MSTSynthesizer(domain={"dx": ["flu", "cold"]}).fit(X)
    assert "HIV" not in str(info.value)
    with pytest.raises(ValueError, match=r"Column 'c' has codes outside its public domain 0\.\.2") as info:
        MSTSynthesizer(domain={"c": 3}).fit(pd.DataFrame({"c": [0, 1, CODE]}))
    assert not leaks(str(info.value))
    enc = DPCategoricalEncoder(categories={"a": ["x"]}).fit(pd.DataFrame({"a": ["x"]}))
    for bad in (["Alice-HIV+", "x"], ["x", None, None]):
        with pytest.raises(ValueError, match="Column 'a' has") as info:
            enc.transform(pd.DataFrame({"a": bad}))
        assert "Alice" not in str(info.value) and "2 missing" not in str(info.value)


def test_pipeline_target_errors_quote_no_size():
    from sklearn.linear_model import LogisticRegression

    from skdpsynth.pipeline import TrainOnSynthetic

    model = TrainOnSynthetic(MSTSynthesizer(domain={**DOMAIN, "target": 2}), LogisticRegression())
    assert_no_leak(scan(lambda: model.fit(clean(), np.zeros((N1, 2), dtype=int))))
    assert_no_leak(scan(lambda: model.fit(clean(), np.zeros(N2, dtype=int))))


# -- federated and vertical partitions, in memory --------------------------------------------------------------
# An explicit partition is a public roster (doc/privacy.md, "Record counts and rosters"): its size and its last
# row position may be quoted; the table's own length may not.
ROSTER_OF = {"vertical partition longer than the table": N2, "hybrid roster longer than the table": N2,
             "vertical partition shorter than the table": N1, "hybrid roster shorter than the table": N1}
PARTITION_CASES = {
    "vertical frames of unequal lengths": lambda: VerticalMRFSynthesizer(domain=DOMAIN).fit(
        {"p0": clean()[["dx"]], "p1": clean(N2)[["age", "sex"]]}),
    "vertical partition longer than the table": lambda: VerticalMRFSynthesizer(
        domain=DOMAIN, party_columns=HybridPartition.vertical(N2, list(GROUPS.values()))).fit(clean()),
    "vertical partition shorter than the table": lambda: VerticalMRFSynthesizer(
        domain=DOMAIN, party_columns=HybridPartition.vertical(N1, list(GROUPS.values()))).fit(clean(N2)),
    "hybrid roster longer than the table": lambda: HybridSynthesizer(domain=DOMAIN).fit(
        clean(), partition=HybridPartition.grid(N2, list(DOMAIN), n_slices=2, random_state=0)),
    "hybrid roster shorter than the table": lambda: HybridSynthesizer(domain=DOMAIN).fit(
        clean(N2), partition=HybridPartition.grid(N1, list(DOMAIN), n_slices=2, random_state=0)),
    "hybrid recipe with more slices than records": lambda: HybridSynthesizer(
        domain=DOMAIN, partition={"n_slices": 2000}).fit(clean()),
    "hybrid recipe and a secret label": lambda: HybridSynthesizer(
        domain=DOMAIN, partition={"n_slices": 2, "n_vertical": 2}).fit(with_secret_label()),
    "vertical frames and a secret code": lambda: VerticalMRFSynthesizer(domain=DOMAIN).fit(
        {"p0": clean()[["dx"]], "p1": with_secret_code()[["age", "sex"]]}),
}


@pytest.mark.parametrize("case", list(PARTITION_CASES))
def test_partition_errors_quote_no_private_size(case):
    roster = ROSTER_OF.get(case)
    assert_no_leak(scan(PARTITION_CASES[case]), public=() if roster is None else (roster, roster - 1))


def test_a_roster_longer_than_the_table_is_named_by_its_own_last_position():
    """A partition's positions are public, but the first one past the table's end would be the table's length."""
    part = HybridPartition([np.arange(N2)], [list(DOMAIN)])
    with pytest.raises(ValueError, match=f"up to {N2 - 1:d}, out of range") as info:
        part.validate(list(DOMAIN), N1)
    assert str(N1) not in str(info.value)


# -- the out-of-core path (dask DataFrame, Parquet files) -------------------------------------------------------
OUT_OF_CORE = {
    "label outside its categories": with_secret_label,
    "code outside its domain": with_secret_code,
    "missing labels": with_missing_label,
    "missing codes": with_missing_code,
}


@pytest.mark.parametrize("fault", list(OUT_OF_CORE))
@pytest.mark.parametrize("method", list(SYNTHESIZERS))
def test_out_of_core_fit_errors_quote_no_private_value(method, fault):
    """Every synthesizer documents dask input; those that refuse it must refuse without a private number too."""
    frame = OUT_OF_CORE[fault]()
    assert_no_leak(scan(lambda: SYNTHESIZERS[method]().fit(dd.from_pandas(frame, npartitions=3))))


def test_parquet_fit_error_quotes_no_private_value(tmp_path):
    with_secret_label().to_parquet(tmp_path / "part-0.parquet")
    assert_no_leak(scan(lambda: MSTSynthesizer(domain=DOMAIN).fit(str(tmp_path / "*.parquet"))), tmp_path=tmp_path)


# -- the transformers ---------------------------------------------------------------------------------------------
def _encoder():
    return DPCategoricalEncoder(categories={"dx": DOMAIN["dx"]}).fit(clean()[["dx"]])


def _table():
    schema = {"dx": DOMAIN["dx"], "w": {"type": "numeric", "bounds": [0, 10], "n_bins": 4}}
    return TableDiscretizer(schema=schema).fit(clean().assign(w=1.5)[["dx", "w"]])


def _numbers(values):
    return pd.DataFrame({"w": values})


TRANSFORMER_CASES = {
    "encoder: transform a secret label": lambda: _encoder().transform(with_secret_label()[["dx"]]),
    "encoder: transform missing labels": lambda: _encoder().transform(with_missing_label()[["dx"]]),
    "encoder: fit on missing labels": lambda: DPCategoricalEncoder(
        categories={"dx": DOMAIN["dx"]}).fit(with_missing_label()[["dx"]]),
    "encoder: inverse_transform a secret label": lambda: _encoder().inverse_transform(with_secret_label()[["dx"]]),
    "encoder: a 1-D array": lambda: DPCategoricalEncoder(categories={"x0": ["flu"]}).fit(np.array(["flu"] * N1)),
    "encoder: no columns": lambda: DPCategoricalEncoder().fit(pd.DataFrame(index=range(N1))),
    "discretizer: missing numbers": lambda: DPKBinsDiscretizer(bounds=(0, 10)).fit(
        _numbers(with_missing_code()["age"])),
    "discretizer: a secret string": lambda: DPKBinsDiscretizer(bounds=(0, 10)).fit(
        _numbers(with_secret_label()["dx"])),
    "discretizer: infinities": lambda: DPKBinsDiscretizer(bounds=(0, 10)).fit(
        _numbers(np.where(np.isin(np.arange(N1), offenders(N1, N_BAD)), np.inf, 1.0))),
    "discretizer: inverse of a secret code": lambda: DPKBinsDiscretizer(bounds=(0, 10), output="code").fit(
        _numbers(np.ones(N1))).inverse_transform(_numbers(with_secret_code()["age"])),
    "discretizer: a range too narrow for its bins": lambda: DPKBinsDiscretizer(n_bins=8).fit(  # min and max read
        _numbers(np.where(np.arange(N1) % 2, float(CODE), np.nextafter(float(CODE), np.inf)))),  # with a warning
    "discretizer: no columns": lambda: DPKBinsDiscretizer(bounds=(0, 10)).fit(pd.DataFrame(index=range(N1))),
    "table: transform a secret label": lambda: _table().transform(with_secret_label().assign(w=1.5)[["dx", "w"]]),
    "table: missing numbers": lambda: TableDiscretizer(schema={"age": {"type": "numeric", "bounds": [0, 5]}}).fit(
        with_missing_code()[["age"]]),
    "table: a secret string in a numeric column": lambda: TableDiscretizer(
        schema={"dx": {"type": "numeric", "bounds": [0, 5]}}).fit(with_secret_label()[["dx"]]),
    "table: no columns": lambda: TableDiscretizer().fit(pd.DataFrame(index=range(N1))),
}


@pytest.mark.parametrize("case", list(TRANSFORMER_CASES))
def test_transformer_errors_quote_no_private_value_or_size(case):
    assert_no_leak(scan(TRANSFORMER_CASES[case]))


# -- the federated runtime and the file-based roles ----------------------------------------------------------------
# The job's roster (N1 rows) is public; a party's data of another length (N2) are not.
PUBLIC_ROSTER = (N1, N1 - 1)


def _job():
    from skdpsynth import Domain

    domain = Domain(list(DOMAIN), [2, 5, 2])
    partition = HybridPartition.grid(N1, list(DOMAIN), n_slices=1, column_groups=[["dx", "age"], ["sex"]],
                                     shuffle=False)
    return domain, partition


def _codes(n: int) -> np.ndarray:
    frame = clean(n)
    return np.column_stack([frame["dx"].map({"flu": 0, "cold": 1}).to_numpy(), frame["age"], frame["sex"]])


def _remote_fit(sources: dict, backend="local"):
    from skdpsynth.federated import FederatedData

    domain, partition = _job()
    data = FederatedData(domain, partition, sources, backend=backend)
    HybridSynthesizer(secure_computation="cryptographic", max_rounds=2).fit(data)


def _party_sources(**override):
    domain, partition = _job()
    codes = _codes(N1)
    sources = {p.name: codes[np.ix_(p.rows, [domain.index(c) for c in p.columns])] for p in partition.parties()}
    return {**sources, **override}


def _bad_code(n: int = N1) -> np.ndarray:
    codes = _codes(n)[:, :2]
    codes[offenders(n, N_BAD), 1] = CODE
    return codes


def _secret_csv(path):
    frame = clean()[["dx", "age"]].astype({"age": object})
    frame.loc[offenders(N1, N_BAD), "age"] = SECRET
    frame.assign(dx=0).to_csv(path, index=False)
    return str(path)


def _ragged_csv(path):
    lines = ["dx,age"] + ["0,1"] * N1
    lines[FIRST_BAD + 1] = "0,1,7"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _truncated_npy(path):
    np.save(path, _codes(N2)[:, :2])
    path.write_bytes(path.read_bytes()[:-5])
    return str(path)


RUNTIME_CASES = {  # party0.0's source, given the test's tmp_path
    "a party with more records than its roster": lambda tmp: _codes(N2)[:, :2],
    "a party with a code outside the domain": lambda tmp: _bad_code(),
    "a party with a secret label in its file": lambda tmp: _secret_csv(tmp / "p.csv"),
    "a party with a ragged CSV file": lambda tmp: _ragged_csv(tmp / "p.csv"),
    "a party with a truncated .npy file": lambda tmp: _truncated_npy(tmp / "p.npy"),
}


@pytest.mark.parametrize("case", list(RUNTIME_CASES))
def test_federated_runtime_errors_quote_no_private_value_or_size(case, tmp_path):
    source = RUNTIME_CASES[case](tmp_path)
    assert_no_leak(scan(lambda: _remote_fit(_party_sources(**{"party0.0": source}))), public=PUBLIC_ROSTER,
                   tmp_path=tmp_path)


def test_a_party_process_sends_the_curator_no_private_size():
    """The process backend carries the party's exception (and its remote traceback) back to the curator."""
    assert_no_leak(scan(lambda: _remote_fit(_party_sources(**{"party0.0": _codes(N2)[:, :2]}), backend="processes")),
                   public=PUBLIC_ROSTER)


def test_file_based_party_and_curator_quote_no_private_size(tmp_path, capsys):
    from skdpsynth.cli import WAITING, main
    from skdpsynth.federated.files import write_job

    domain, partition = _job()
    write_job(tmp_path / "job.json", domain=domain, partition=partition, epsilon=1.0, delta=1e-9,
              parameters={"max_rounds": 2})
    np.save(tmp_path / "long.npy", _codes(N2)[:, :2])
    np.save(tmp_path / "coded.npy", _bad_code())
    curator = ["curator", "--job", str(tmp_path / "job.json"), "--exchange", str(tmp_path / "exchange"),
               "--state", str(tmp_path / "curator"), "--no-wait", "-q"]
    status = []
    texts = scan(lambda: status.append(main(curator)), must_raise=False)
    assert status == [WAITING]
    for data in ("long.npy", "coded.npy"):
        party = ["party", "--job", str(tmp_path / "job.json"), "--name", "party0.0", "--data", str(tmp_path / data),
                 "--exchange", str(tmp_path / "exchange"), "--state", str(tmp_path / f"state-{data}"), "-q"]
        assert main(party) == 2
        out = capsys.readouterr()
        texts += [out.out, out.err]
        assert "party0.0" in out.err  # the message names the party
    assert_no_leak(texts, public=PUBLIC_ROSTER, tmp_path=tmp_path)


# -- the command ------------------------------------------------------------------------------------------------
SCHEMA = {"dx": {"type": "categorical", "categories": DOMAIN["dx"]},
          "age": {"type": "numeric", "bounds": [0, 5], "n_bins": 5}, "sex": [0, 1]}


def _cli_case(tmp_path, frame, *extra, schema=SCHEMA, text=None):
    import json

    from skdpsynth.cli import main

    path = tmp_path / "input.csv"
    if text is None:
        frame.to_csv(path, index=False)
    else:
        path.write_text(text)
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    return main(["synthesize", str(path), "--schema", str(tmp_path / "schema.json"), "-q",
                 "-o", str(tmp_path / "out.csv"), *extra])


def _text_in_numbers():
    frame = clean().astype({"age": object})
    frame.loc[offenders(N1, N_BAD), "age"] = SECRET
    return frame


def _ragged_table():
    lines = ["dx,age,sex"] + [f"flu,{k % 5},{k % 2}" for k in range(N1)]
    lines[FIRST_BAD + 1] = "flu,1,0,SECRET-7"
    return "\n".join(lines) + "\n"


CLI_CASES = {
    "a secret string in a numeric column": lambda tmp: _cli_case(tmp, _text_in_numbers()),
    "a secret label outside the categories": lambda tmp: _cli_case(tmp, with_secret_label()),
    "a code outside the categories": lambda tmp: _cli_case(tmp, clean().assign(sex=with_secret_code()["age"])),
    "missing numbers": lambda tmp: _cli_case(tmp, with_missing_code()),
    "missing labels": lambda tmp: _cli_case(tmp, with_missing_label()),
    "a ragged line": lambda tmp: _cli_case(tmp, None, text=_ragged_table()),
    "a test set that leaves no training records": lambda tmp: _cli_case(
        tmp, clean(), "--target", "sex", "--test-size", "0.9999"),
    "more hybrid slices than records": lambda tmp: _cli_case(tmp, clean(), "--method", "hybrid", "--parties",
                                                             "2000x1"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_command_errors_quote_no_private_value_or_size(case, tmp_path, capsys):
    status = []
    texts = scan(lambda: status.append(CLI_CASES[case](tmp_path)), must_raise=False)
    out = capsys.readouterr()
    # Exit status 2 (a one-line error), or an exception (status never set): either way an error to scan.
    assert status in ([2], []), "the case no longer fails: it does not test an error message"
    assert_no_leak(texts + [out.out, out.err], tmp_path=tmp_path)


@pytest.mark.parametrize("case", ["a secret label outside the categories", "a code outside the categories",
                                  "missing numbers", "missing labels"])
def test_command_debug_shows_our_own_exception_and_it_quotes_nothing_private(case, tmp_path, monkeypatch):
    """--debug raises the underlying exception: for the input checks it is skdpsynth's own, which is clean too."""
    monkeypatch.setenv("SKDPSYNTH_DEBUG", "1")
    assert_no_leak(scan(lambda: CLI_CASES[case](tmp_path)), tmp_path=tmp_path)
