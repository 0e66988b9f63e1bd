"""The federated runtime (issue 15): parties as servers on local processes and dask workers, bytes only across.

Acceptance point 1 is :func:`test_dask_local_cluster_fit_keeps_every_party_on_its_worker`: a LocalCluster with one
worker per party (K = S = 2), the fit instrumented on every worker and on the client, and the model equal to the
in-process fit for the same seed.
"""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from skdpsynth import HybridSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.federated import FederatedData, HybridPartition
from skdpsynth.federated import runtime
from skdpsynth.federated.runtime import DaskBackend, LocalBackend, PartyHost, PartyServer, load_party_codes
from skdpsynth.federated.wire import MessageError, from_bytes, pack, unpack
from skdpsynth.privacy import PrivacyLeakWarning, ReproducibleNoiseWarning

COLUMNS = ["age", "workclass", "education-num", "marital-status", "sex", "income>50K"]
GROUPS = [COLUMNS[:3], COLUMNS[3:]]
PACKET_KINDS = ("PublicKey", "Sealed", "MaskedInput", "Hosted")
SETTINGS = dict(max_rounds=9, max_iters=100, final_iters=100, secure_computation="cryptographic")


@pytest.fixture(scope="module")
def adult_job(tmp_path_factory):
    """4000 Adult records on a K = S = 2 grid; every party's records in a CSV file of its own."""
    adult = load_adult(discretized=True)
    X = adult.frame[COLUMNS].iloc[:4000].reset_index(drop=True)
    domain = adult.domain.project(COLUMNS)
    partition = HybridPartition.grid(len(X), COLUMNS, n_slices=2, column_groups=GROUPS, random_state=0)
    folder = tmp_path_factory.mktemp("parties")
    paths = {}
    for spec in partition.parties():
        paths[spec.name] = str(folder / f"{spec.name}.csv")
        X.iloc[spec.rows][list(spec.columns)].to_csv(paths[spec.name], index=False)
    return X, domain, partition, paths


def _fit_in_process(X, domain, partition, random_state=0):
    with pytest.warns(ReproducibleNoiseWarning):
        return HybridSynthesizer(1.0, domain=domain.to_dict(), random_state=random_state, **SETTINGS).fit(
            X, partition=partition)


def _fit_remote(data, random_state=0):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = HybridSynthesizer(1.0, random_state=random_state, **SETTINGS).fit(data)
    return model, caught


def _assert_same_fit(a, b):
    assert a.selected_ == b.selected_
    assert len(a.measurements_) == len(b.measurements_)
    for m, n in zip(a.measurements_, b.measurements_):
        assert m.clique == n.clique and m.sigma == n.sigma
        np.testing.assert_array_equal(m.values, n.values)   # same noise, exact modular sums: bit for bit
    for clique in a.selected_:
        np.testing.assert_array_equal(a.model_.project(clique), b.model_.project(clique))


def test_local_backend_fit_equals_the_in_process_fit(adult_job):
    X, domain, partition, paths = adult_job
    expected = _fit_in_process(X, domain, partition)
    data = FederatedData(domain, partition, {n: PartyHost(p, noise="curator") for n, p in paths.items()})
    model, caught = _fit_remote(data)
    _assert_same_fit(expected, model)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1 and "curator's seed" in str(leaks[0].message)
    assert any("seeded by the curator" in (e.description or "") for e in model.privacy_ledger_)
    assert model.partition_ is partition and model.sample(50, random_state=0).shape == (50, len(COLUMNS))


def test_private_noise_is_the_default_and_not_reproducible(adult_job):
    X, domain, partition, paths = adult_job
    data = FederatedData(domain, partition, paths)        # bare sources: PartyHost(noise="private")
    a, caught = _fit_remote(data)
    b, _ = _fit_remote(data)
    assert not [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    # Same curator seed, so the same first request; the parties' own noise differs.
    assert a.measurements_[0].clique == b.measurements_[0].clique
    assert not np.allclose(a.measurements_[0].values, b.measurements_[0].values)
    assert np.isclose(a.privacy_ledger_.total_zcdp(), a.rho_, rtol=1e-9)


def test_processes_backend_fit_equals_the_in_process_fit(adult_job):
    X, domain, partition, paths = adult_job
    expected = _fit_in_process(X, domain, partition)
    hosts = {n: PartyHost(p, noise="curator") for n, p in paths.items()}
    model, _ = _fit_remote(FederatedData(domain, partition, hosts, backend="processes"))
    _assert_same_fit(expected, model)
    # Every party's process holds its own rows and columns, nothing else.
    data = FederatedData(domain, partition, hosts, backend="processes")
    backend = data.make_backend()
    with data.federation(seed=1, backend=backend):
        held = backend.holds()
    for spec in partition.parties():
        assert held[spec.name]["columns"] == tuple(spec.columns)
        assert held[spec.name]["shape"] == (spec.n_rows, len(spec.columns))


def test_a_party_process_imports_neither_scikit_learn_nor_a_synthesizer():
    """A party's process (backend "processes", or a dask worker) imports the runtime to serve its party; the
    package's names are imported on first use, so it does not pay for scikit-learn and every synthesizer."""
    code = ("import sys, skdpsynth.federated.runtime; "
            "print([m for m in ('sklearn', 'skdpsynth.synthesizers', 'skdpsynth.pipeline') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------------------- dask, instrumented
def _install_recorder(dask_worker=None):
    """On a worker: record every data load and every request its party servers receive (in the worker's log)."""
    log = dask_worker.skdpsynth_test_log = []
    original_load, original_handle = runtime.load_party_codes, runtime.PartyServer.handle

    def load(source, name, columns, sizes, n_rows):
        codes = original_load(source, name, columns, sizes, n_rows)
        log.append(("load", name, str(source), tuple(columns), codes.shape, codes.tobytes()))
        return codes

    def handle(self, request):
        packet = unpack(request, kinds=("Request",), sender=runtime.CURATOR)
        hosted = sorted(k[2] for k in runtime._DASK_SERVERS if k[0] == dask_worker.address)
        reply = original_handle(self, request)
        log.append(("request", self.name, packet.fields["op"],
                            {k: (v.dtype.str, v.shape) for k, v in packet.arrays.items()}, hosted, self.holds(),
                            type(reply).__name__))
        return reply

    runtime.load_party_codes, runtime.PartyServer.handle = load, handle
    return dask_worker.name


def _worker_log(dask_worker=None):
    return list(dask_worker.skdpsynth_test_log)


def test_dask_local_cluster_fit_keeps_every_party_on_its_worker(adult_job, monkeypatch):
    distributed = pytest.importorskip("distributed")
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the recorders run on the workers
    X, domain, partition, paths = adult_job
    expected = _fit_in_process(X, domain, partition)
    specs = {s.name: s for s in partition.parties()}

    def client_must_not_load(*args, **kwargs):
        raise AssertionError("the client process tried to load a party's data")

    monkeypatch.setattr(runtime, "load_party_codes", client_must_not_load)
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        names = client.run(_install_recorder)                      # {address: worker name}
        workers = {str(name): address for address, name in names.items()}
        party_worker = dict(zip(specs, sorted(workers)))           # one named worker per party
        gathered = []
        original_gather = client.gather

        def recording_gather(futures, *args, **kwargs):
            results = original_gather(futures, *args, **kwargs)
            gathered.extend(results if isinstance(results, list) else [results])
            return results

        monkeypatch.setattr(client, "gather", recording_gather)
        hosts = {n: PartyHost(paths[n], worker=party_worker[n], noise="curator") for n in specs}
        model, _ = _fit_remote(FederatedData(domain, partition, hosts, backend=client))
        logs = client.run(_worker_log)

    _assert_same_fit(expected, model)                              # equals the in-process fit, same seed
    # The client received bytes only, every one a validated message or protocol packet from a party.
    assert gathered and all(isinstance(g, bytes) for g in gathered)
    for data in gathered:
        try:
            sender = unpack(data, kinds=PACKET_KINDS).sender
        except MessageError:
            sender = from_bytes(data).sender
        assert sender in specs
    # Every worker loaded, held and was asked about its own party's rows and columns only.
    for party, worker in party_worker.items():
        spec, log = specs[party], logs[workers[worker]]
        loads = [e for e in log if e[0] == "load"]
        assert len(loads) == 1
        _, name, source, columns, shape, raw = loads[0]
        own = X.iloc[spec.rows][list(spec.columns)].to_numpy().astype(np.int64)
        assert (name, source, columns, shape) == (party, paths[party], tuple(spec.columns), own.shape)
        assert raw == own.tobytes()
        requests = [e for e in log if e[0] == "request"]
        assert {e[2] for e in requests} == {"setup", "measure", "product_open", "product_share"}
        for _, name, op, arrays, hosted, holds, reply_type in requests:
            assert name == party and hosted == [party] and reply_type == "bytes"
            assert holds["columns"] == tuple(spec.columns) and holds["shape"] == own.shape
            # What reaches a party from outside: JSON fields plus sealed bytes (the dealer's seed, the peer's
            # masked input), never a clear array.
            assert all(dtype == "|u1" for dtype, _ in arrays.values()), (op, arrays)


# --------------------------------------------------------------------------- errors and validation
def test_party_data_are_checked_against_the_public_job(tmp_path):
    frame = pd.DataFrame({"a": [0, 1, 2], "b": [1, 0, 1]})
    assert load_party_codes(frame, "p", ("b", "a"), (2, 3), 3).tolist() == [[1, 0], [0, 1], [1, 2]]
    with pytest.raises(ValueError, match="Party 'p': column 'a' has codes outside \\[0, 2\\)"):
        load_party_codes(frame, "p", ("a",), (2,), 3)
    with pytest.raises(ValueError, match="Party 'p': its data have no column"):
        load_party_codes(frame, "p", ("c",), (2,), 3)
    with pytest.raises(ValueError, match="Party 'p': its data are another number of rows than its roster; the job "
                                         "expects 4 roster rows"):
        load_party_codes(frame, "p", ("a",), (3,), 4)
    np.save(tmp_path / "p.npy", np.array([[0.5], [1.0]]))
    with pytest.raises(ValueError, match="integer codes"):
        load_party_codes(str(tmp_path / "p.npy"), "p", ("a",), (3,), 2)
    with pytest.raises(ValueError, match="unsupported data file"):
        load_party_codes(str(tmp_path / "p.parquet"), "p", ("a",), (3,), 2)


def test_configuration_errors(adult_job):
    X, domain, partition, paths = adult_job
    with pytest.raises(ValueError, match="hosts must name the partition's parties exactly"):
        FederatedData(domain, partition, dict(list(paths.items())[:3]))
    with pytest.raises(ValueError, match="backend must be"):
        FederatedData(domain, partition, paths, backend="threads")
    with pytest.raises(ValueError, match="name no worker"):
        DaskBackend(object(), {"p": PartyHost("x")})
    with pytest.raises(ValueError, match="would host several parties"):
        DaskBackend(object(), {"p": PartyHost("x", worker="w"), "q": PartyHost("y", worker="w")})
    with pytest.raises(ValueError, match="noise must be one of"):
        PartyHost("x", noise="none")
    data = FederatedData(domain, partition, paths)
    with pytest.raises(ValueError, match="need secure_computation='cryptographic'"):
        HybridSynthesizer(1.0).fit(data)
    with pytest.raises(ValueError, match="carries its partition"):
        HybridSynthesizer(1.0, secure_computation="cryptographic").fit(data, partition=partition)
    with pytest.raises(ValueError, match="domain is the one it carries"):
        HybridSynthesizer(1.0, domain=domain.to_dict(), secure_computation="cryptographic").fit(data)
    from skdpsynth import AIMSynthesizer

    with pytest.raises(TypeError, match="needs the records in this process"):
        AIMSynthesizer(1.0).fit(data)


class _Tampering(LocalBackend):
    """A local backend whose carrier alters one party's replies (or drops them) after a number of calls."""

    def __init__(self, hosts, victim, how, after=1):
        super().__init__(hosts)
        self.victim, self.how, self.after, self.seen = victim, how, after, 0

    def _call(self, requests):
        replies = super()._call(requests)
        self.seen += 1
        if self.seen > self.after and self.victim in replies:
            if self.how == "drop":
                del replies[self.victim]
            else:
                data = bytearray(replies[self.victim])
                data[len(data) // 2] ^= 0x01
                replies[self.victim] = bytes(data)
        return replies


@pytest.mark.parametrize("how", ["drop", "flip"])
def test_a_dropped_or_tampered_party_aborts_the_fit_naming_it(adult_job, how):
    X, domain, partition, paths = adult_job
    victim = partition.parties()[1].name
    data = FederatedData(domain, partition, paths)
    backend = _Tampering(data.hosts, victim, how)
    federation = data.federation(seed=0, backend=backend)
    with federation, pytest.raises(Exception) as info:
        for attrs in (("age", "sex"), ("age",), ("workclass", "income>50K")):
            federation.measure(attrs, 0.1)
    assert victim in str(info.value)
    if how == "drop":
        assert "dropped out" in str(info.value)


def test_party_server_refuses_malformed_requests():
    server = PartyServer("p", np.zeros((2, 1), dtype=int))
    with pytest.raises(MessageError, match="before its setup"):
        server.handle(pack("Request", sender="curator", fields={"op": "measure"}))
    with pytest.raises(MessageError, match="unknown request operation"):
        server.handle(pack("Request", sender="curator", fields={"op": "exfiltrate"}))
    with pytest.raises(MessageError, match="claims to come from"):
        server.handle(pack("Request", sender="party1", fields={"op": "setup"}))
    with pytest.raises(MessageError, match="malformed"):
        server.handle(pack("Request", sender="curator", fields={"op": "setup"}))


# --------------------------------------------------------------------------- the CLI roles over files
def test_cli_party_and_curator_roles_over_files_match_the_in_process_fit(adult_job, tmp_path, capsys):
    from skdpsynth.cli import WAITING, main
    from skdpsynth.federated.files import read_job, write_job

    X, domain, partition, paths = adult_job
    parameters = {k: v for k, v in SETTINGS.items() if k != "secure_computation"}
    write_job(tmp_path / "job.json", domain=domain, partition=partition, epsilon=1.0, delta=1e-9,
              parameters=parameters)
    job = read_job(tmp_path / "job.json")
    assert job["partition"] == partition and job["domain"] == domain
    exchange = tmp_path / "exchange"
    curator = ["curator", "--job", str(tmp_path / "job.json"), "--exchange", str(exchange),
               "--state", str(tmp_path / "curator"), "--seed", "0", "--no-wait", "-q",
               "-o", str(tmp_path / "synthetic.csv"), "--rows", "100"]
    rounds = 0
    with pytest.warns(PrivacyLeakWarning, match="curator's seed"):   # parties with --noise curator
        while (status := main(curator)) == WAITING:                 # the curator stops at every missing reply
            rounds += 1
            assert rounds < 200
            for name, path in paths.items():
                assert main(["party", "--job", str(tmp_path / "job.json"), "--name", name, "--data", path,
                             "--exchange", str(exchange), "--state", str(tmp_path / name), "--noise", "curator",
                             "-q"]) == 0
    assert status == 0 and rounds > len(domain)
    synthetic = pd.read_csv(tmp_path / "synthetic.csv")
    assert list(synthetic.columns) == list(domain.attrs) and len(synthetic) == 100
    # The curator, replayed once more from the files, is the in-process fit for the same seed.
    from skdpsynth.federated.files import CuratorState, FileFederatedData

    data = FileFederatedData(read_job(tmp_path / "job.json"), exchange, CuratorState(tmp_path / "curator"))
    model, _ = _fit_remote(data, random_state=0)
    _assert_same_fit(_fit_in_process(X, domain, partition), model)
    # Only bytes crossed: every file in the exchange is a request packet or a party's message/packet.
    for path in exchange.iterdir():
        if path.name == "done":
            continue
        data = path.read_bytes()
        if path.name.endswith(".request"):
            assert unpack(data, kinds=("Request",), sender="curator").fields["op"]
        else:
            name = path.name.split(".", 1)[1].rsplit(".", 1)[0]
            try:
                assert unpack(data, kinds=PACKET_KINDS, sender=name)
            except MessageError:
                assert from_bytes(data, expected={"sender": name}, domain=domain)


def test_cli_party_refuses_a_setup_that_differs_from_the_job_and_spending_beyond_it(adult_job, tmp_path, capsys):
    from skdpsynth.cli import WAITING, main
    from skdpsynth.federated.files import write_job

    X, domain, partition, paths = adult_job
    write_job(tmp_path / "job.json", domain=domain, partition=partition, epsilon=1.0, delta=1e-9,
              parameters={"max_rounds": 9})
    # The parties agreed to a smaller budget than the curator's job asks for.
    write_job(tmp_path / "small.json", domain=domain, partition=partition, epsilon=0.05, delta=1e-9,
              parameters={"max_rounds": 9})
    exchange = tmp_path / "exchange"
    curator = ["curator", "--job", str(tmp_path / "job.json"), "--exchange", str(exchange),
               "--state", str(tmp_path / "curator"), "--no-wait", "-q"]
    name = partition.parties()[0].name
    party = ["party", "--job", str(tmp_path / "small.json"), "--name", name, "--data", paths[name],
             "--exchange", str(exchange), "--state", str(tmp_path / name), "-q"]
    statuses = []
    for _ in range(30):
        assert main(curator) == WAITING
        statuses.append(main(party))
        if statuses[-1] != 0:
            break
        for other, path in paths.items():
            if other != name:
                main(["party", "--job", str(tmp_path / "job.json"), "--name", other, "--data", path,
                      "--exchange", str(exchange), "--state", str(tmp_path / other), "-q"])
    assert statuses[-1] == 2
    assert f"party {name!r} refuses" in capsys.readouterr().err
    # A job whose domain differs from the curator's setup is refused at once.
    other_domain = {a: domain[a] + (a == "sex") for a in domain.attrs}
    write_job(tmp_path / "other.json", domain=other_domain, partition=partition, epsilon=1.0, delta=1e-9)
    fresh = tmp_path / "exchange2"
    main(["curator", "--job", str(tmp_path / "job.json"), "--exchange", str(fresh), "--state",
          str(tmp_path / "curator2"), "--no-wait", "-q"])
    assert main(["party", "--job", str(tmp_path / "other.json"), "--name", name, "--data", paths[name],
                 "--exchange", str(fresh), "--state", str(tmp_path / "p2"), "-q"]) == 2
    assert "domain differs from the job description" in capsys.readouterr().err
