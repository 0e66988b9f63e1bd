"""VertiMRF over the federated runtime (issue 44, acceptance point 1): parties on processes, dask workers and files.

Each party reads its own columns where it runs and answers the curator with bytes only; the server runs on the
curator.  With ``PartyHost(noise="curator")`` the fit is bit-identical to the in-process fit for the same seed (the
parties' messages are the same bytes).  The instrumented dask test is
:func:`test_dask_local_cluster_fit_keeps_every_party_on_its_worker`.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from skdpsynth import HybridSynthesizer, VerticalMRFSynthesizer
from skdpsynth.datasets import load_adult
from skdpsynth.federated import FederatedData, HybridPartition, VerticalFederatedData
from skdpsynth.federated.runtime import CURATOR, PartyDataError, PartyHost
from skdpsynth.federated.wire import MessageError, pack, unpack
from skdpsynth.privacy import PrivacyLeakWarning, ReproducibleNoiseWarning
from skdpsynth.synthesizers.vertical_mrf import remote
from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
from skdpsynth.synthesizers.vertical_mrf.remote import PARTY_DEFAULTS, VerticalJob, VerticalPartyServer

pytest.importorskip("cryptography")

COLUMNS = ["age", "workclass", "education-num", "marital-status", "sex", "income>50K"]
GROUPS = {"hospital": COLUMNS[:3], "insurer": COLUMNS[3:5], "bank": COLUMNS[5:]}
SETTINGS = dict(n_sketches=64, md_iters=50, local_mrf_params={"max_iters": 50, "final_iters": 50},
                keep_messages=True)
PACKET_KINDS = ("PublicKey", "SealedSecrets", "Hosted")


@pytest.fixture(scope="module")
def vertical_job(tmp_path_factory):
    """3000 Adult records, three parties holding column blocks; every party's columns in a CSV file of its own."""
    adult = load_adult(discretized=True)
    X = adult.frame[COLUMNS].iloc[:3000].reset_index(drop=True)
    domain = adult.domain.project(COLUMNS)
    folder = tmp_path_factory.mktemp("vertical-parties")
    paths = {}
    for name, cols in GROUPS.items():
        paths[name] = str(folder / f"{name}.csv")
        X[cols].to_csv(paths[name], index=False)
    return X, domain, paths


def _fit_in_process(X, domain, random_state=0):
    with pytest.warns(ReproducibleNoiseWarning):
        return VerticalMRFSynthesizer(1.0, 1e-6, domain=domain.to_dict(), random_state=random_state,
                                      **SETTINGS).fit(X, party_columns=GROUPS)


def _fit_remote(data, random_state=0):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = VerticalMRFSynthesizer(1.0, 1e-6, random_state=random_state, secure_computation="cryptographic",
                                       **SETTINGS).fit(data)
    return model, caught


def _assert_same_fit(a, b):
    """Bit for bit: the parties' messages, the noisy count, the ledger, the server's choices and the model."""
    assert a.messages_ == b.messages_                     # every party sent the very same bytes
    assert a.n_hat_ == b.n_hat_
    paid = [[(e.description, e.epsilon, e.delta, e.party) for e in m.privacy_ledger_ if e.accounting != "leak"]
            for m in (a, b)]
    assert paid[0] == paid[1]
    assert a.cross_marginals_ == b.cross_marginals_ and a.cliques_ == b.cliques_
    for clique in a.cliques_:
        assert np.array_equal(a.model_.project(clique), b.model_.project(clique))
    assert a.sample(50, random_state=1).equals(b.sample(50, random_state=1))


def _hosts(paths, **kwargs):
    return {name: PartyHost(path, **{k: v[name] if isinstance(v, dict) else v for k, v in kwargs.items()})
            for name, path in paths.items()}


def test_local_backend_fit_equals_the_in_process_fit(vertical_job):
    X, domain, paths = vertical_job
    expected = _fit_in_process(X, domain)
    model, caught = _fit_remote(VerticalFederatedData(domain, GROUPS, _hosts(paths, noise="curator")))
    _assert_same_fit(expected, model)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1 and "curator's seed" in str(leaks[0].message)
    assert any("seeded by the curator" in (e.description or "") for e in model.privacy_ledger_)
    # setup (3), the leader's sealed secret (1), the messages (3)
    assert model.runtime_["backend"] == "local" and model.runtime_["requests"] == 7
    assert model.runtime_["bytes_received"] > sum(map(len, model.messages_))   # the messages and the key packets
    assert model.parties_ == GROUPS


@pytest.mark.parametrize("encoder", ["fo", "none"])
def test_encoders_without_sketches_skip_the_secret_and_match_the_in_process_fit(vertical_job, encoder):
    X, domain, paths = vertical_job
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # encoder="fo" warns that its row-aligned table reveals the record count
        expected = VerticalMRFSynthesizer(1.0, 1e-6, domain=domain.to_dict(), random_state=0, encoder=encoder,
                                          **SETTINGS).fit(X, party_columns=GROUPS)
        model = VerticalMRFSynthesizer(1.0, 1e-6, random_state=0, secure_computation="cryptographic", encoder=encoder,
                                       **SETTINGS).fit(VerticalFederatedData(domain, GROUPS,
                                                                             _hosts(paths, noise="curator")))
    _assert_same_fit(expected, model)
    assert model.runtime_["requests"] == 2 * len(GROUPS)          # setup and encode: no sketch secret to share
    leaks = {e.description for e in model.privacy_ledger_ if e.accounting == "leak"}
    assert ("exact record count revealed by the row-aligned GRR table" in leaks) == (encoder == "fo")


def test_private_noise_is_the_default_and_not_reproducible(vertical_job):
    X, domain, paths = vertical_job
    data = VerticalFederatedData(domain, GROUPS, paths)     # bare sources: PartyHost(noise="private")
    a, caught = _fit_remote(data)
    b, _ = _fit_remote(data)
    assert not [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    # The same curator seed; each party's own noise and the leader's own secret differ between the runs.
    for x, y in zip(a.messages_, b.messages_):
        mx, my = VerticalMessage.from_bytes(x), VerticalMessage.from_bytes(y)
        assert not np.array_equal(mx.sketches, my.sketches)
    assert np.isclose(a.privacy_ledger_.epsilon(1e-6), 1.0, rtol=1e-9)


def test_processes_backend_fit_equals_the_in_process_fit(vertical_job):
    X, domain, paths = vertical_job
    expected = _fit_in_process(X, domain)
    data = VerticalFederatedData(domain, GROUPS, _hosts(paths, noise="curator"), backend="processes")
    model, _ = _fit_remote(data)
    _assert_same_fit(expected, model)
    assert model.runtime_["backend"] == "processes"
    # Every party's process holds its own columns, nothing else (and does not tell its number of rows).
    backend = data.make_backend(server=VerticalPartyServer, jobs={})
    with backend:
        assert backend.holds() == {name: {"party": name, "columns": None, "loaded": False} for name in GROUPS}
        job = VerticalJob(domain, tuple((n, tuple(c)) for n, c in GROUPS.items()), 1.0, 1e-6)
        backend.call({name: pack("Request", sender=CURATOR, fields={"op": "setup", "session": "00" * 16,
                                                                    "job": job.to_fields()}) for name in GROUPS})
        assert backend.holds() == {name: {"party": name, "columns": tuple(cols), "loaded": True}
                                   for name, cols in GROUPS.items()}


# --------------------------------------------------------------------------- dask, instrumented
def _install_recorder(dask_worker=None):
    """On a worker: record every data load and every request its VertiMRF party servers receive."""
    from skdpsynth.federated import runtime

    log = dask_worker.skdpsynth_test_log = []
    original_load, original_handle = remote.load_party_codes, remote.VerticalPartyServer.handle

    def load(source, name, columns, sizes, n_rows):
        codes = original_load(source, name, columns, sizes, n_rows)
        log.append(("load", name, str(source), tuple(columns), codes.shape, codes.tobytes()))
        return codes

    def handle(self, request):
        packet = unpack(request, kinds=("Request",), sender=CURATOR)
        hosted = sorted(k[2] for k in runtime._DASK_SERVERS if k[0] == dask_worker.address)
        reply = original_handle(self, request)
        log.append(("request", self.name, packet.fields["op"],
                    {k: (v.dtype.str, v.shape) for k, v in packet.arrays.items()}, hosted, self.holds(),
                    type(reply).__name__))
        return reply

    remote.load_party_codes, remote.VerticalPartyServer.handle = load, handle
    return dask_worker.name


def _worker_log(dask_worker=None):
    return list(dask_worker.skdpsynth_test_log)


def test_dask_local_cluster_fit_keeps_every_party_on_its_worker(vertical_job, monkeypatch):
    distributed = pytest.importorskip("distributed")
    import cloudpickle

    from skdpsynth.federated import runtime

    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the recorders run on the workers
    X, domain, paths = vertical_job
    expected = _fit_in_process(X, domain)

    def client_must_not_load(*args, **kwargs):
        raise AssertionError("the client process tried to load a party's data")

    monkeypatch.setattr(runtime, "load_party_codes", client_must_not_load)
    monkeypatch.setattr(remote, "load_party_codes", client_must_not_load)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        names = client.run(_install_recorder)                      # {address: worker name}
        workers = {str(name): address for address, name in names.items()}
        party_worker = dict(zip(GROUPS, sorted(workers)))          # one named worker per party
        gathered = []
        original_gather = client.gather

        def recording_gather(futures, *args, **kwargs):
            results = original_gather(futures, *args, **kwargs)
            gathered.extend(results if isinstance(results, list) else [results])
            return results

        monkeypatch.setattr(client, "gather", recording_gather)
        hosts = {n: PartyHost(paths[n], worker=party_worker[n], noise="curator") for n in GROUPS}
        model, _ = _fit_remote(VerticalFederatedData(domain, GROUPS, hosts, backend=client))
        logs = client.run(_worker_log)

    _assert_same_fit(expected, model)                              # equals the in-process fit, same seed
    assert model.runtime_["backend"] == "dask"
    # The client received bytes only: protocol packets and the parties' messages, each from a party.
    assert gathered and all(isinstance(g, bytes) for g in gathered)
    for data in gathered:
        try:
            sender = unpack(data, kinds=PACKET_KINDS).sender
        except MessageError:
            sender = VerticalMessage.from_bytes(data).party
        assert sender in GROUPS
    # Every worker loaded, held and was asked about its own party's columns only.
    for party, worker in party_worker.items():
        log = logs[workers[worker]]
        loads = [e for e in log if e[0] == "load"]
        assert len(loads) == 1
        _, name, source, columns, shape, raw = loads[0]
        own = X[GROUPS[party]].to_numpy().astype(np.int64)
        assert (name, source, columns, shape) == (party, paths[party], tuple(GROUPS[party]), own.shape)
        assert raw == own.tobytes()
        requests = [e for e in log if e[0] == "request"]
        leader = party == min(GROUPS)
        assert [e[2] for e in requests] == (["setup", "share_secret", "encode"] if leader else ["setup", "encode"])
        for _, name, op, arrays, hosted, holds, reply_type in requests:
            assert name == party and hosted == [party] and reply_type == "bytes"
            assert holds == {"party": party, "columns": tuple(GROUPS[party]), "loaded": True}
            # What reaches a party from outside: JSON fields plus the sealed secret's bytes, never a clear array.
            assert all(dtype == "|u1" for dtype, _ in arrays.values()), (op, arrays)
            assert set(arrays) == ({"sealed_secret"} if op == "encode" and not leader else set())


# --------------------------------------------------------------------------- a party against a deviating curator
from skdpsynth import Domain  # noqa: E402

DOMAIN = Domain(["a", "b", "c"], [3, 4, 6])
SMALL = {"n_sketches": 16, "local_mrf_params": {"max_iters": 20, "final_iters": 20}}
JOB = VerticalJob(DOMAIN, (("p0", ("a",)), ("p1", ("b", "c"))), 1.0, 1e-6, SMALL)
SESSION = "ab" * 16


def _codes(n=400, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    return {"p0": a.reshape(-1, 1), "p1": np.column_stack([(a + rng.integers(0, 2, n)) % 4, rng.integers(0, 6, n)])}


def _request(arrays=None, **fields) -> bytes:
    return pack("Request", sender=CURATOR, fields=fields, arrays=arrays or {})


def _set_up(job=JOB, codes=None, noise="private"):
    """Both parties set up; their servers and public keys (hex)."""
    codes = _codes() if codes is None else codes
    servers = {name: VerticalPartyServer(name, codes[name], noise=noise, job=job) for name in job.names}
    keys = {name: unpack(s.handle(_request(op="setup", session=SESSION, job=job.to_fields())),
                         kinds=("PublicKey",), sender=name).fields["key"] for name, s in servers.items()}
    return servers, keys


def _share(servers, keys):
    """The leader's sealed secret for p1: (nonce hex, box as a uint8 array)."""
    packet = unpack(servers["p0"].handle(_request(op="share_secret", public_keys=keys)), kinds=("SealedSecrets",),
                    sender="p0")
    assert set(packet.fields["boxes"]) == {"p1"}
    box = packet.fields["boxes"]["p1"]
    return box["nonce"], np.frombuffer(bytes.fromhex(box["ciphertext"]), dtype=np.uint8)


def _encode(servers, keys, box) -> dict:
    nonce, sealed = box
    return {"p0": servers["p0"].handle(_request(op="encode", public_keys=keys)),
            "p1": servers["p1"].handle(_request({"sealed_secret": sealed}, op="encode", public_keys=keys,
                                                nonce=nonce))}


def test_parties_run_the_protocol_and_send_validated_messages_once():
    servers, keys = _set_up()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replies = _encode(servers, keys, _share(servers, keys))
    config = JOB.config()
    messages = {n: VerticalMessage.from_bytes(r, config=config, sender=n) for n, r in replies.items()}
    assert messages["p0"].n_hat is not None and messages["p1"].n_hat is None
    # Each spent exactly its share (the server validated it against the job's budget); the leader forgot the secret.
    assert servers["p0"].saved_state()["secret"] is None and all(s.encoded for s in servers.values())
    for name, server in servers.items():
        with pytest.raises(MessageError, match="a second would spend its budget twice"):
            server.handle(_request(op="encode", public_keys=keys))


@pytest.mark.parametrize("other, what", [
    (VerticalJob(DOMAIN, JOB.parties, 2.0, 1e-6, SMALL), "budget \\(epsilon, delta\\) differs"),
    (VerticalJob(DOMAIN, (("p0", ("a", "b")), ("p1", ("c",))), 1.0, 1e-6, SMALL), "parties' columns differs"),
    (VerticalJob(DOMAIN, JOB.parties, 1.0, 1e-6, {**SMALL, "n_sketches": 8}), "parameters \\['n_sketches'\\]"),
    (VerticalJob(DOMAIN, JOB.parties, 1.0, 1e-6, {**SMALL, "budget_split": {"local_mrf": 0.2, "encoding": 0.6,
                                                                           "binning": 0.2}}),
     "parameters \\['budget_split'\\]"),
    (VerticalJob(Domain(["a", "b", "c"], [3, 4, 7]), JOB.parties, 1.0, 1e-6, SMALL), "domain differs"),
    (VerticalJob(DOMAIN, JOB.parties, 1.0, 1e-6, SMALL, n_rows=400), "record count differs"),
])
def test_a_setup_for_another_job_is_refused(other, what):
    server = VerticalPartyServer("p1", _codes()["p1"], job=JOB)
    with pytest.raises(MessageError, match=what):
        server.handle(_request(op="setup", session=SESSION, job=other.to_fields()))
    with pytest.raises(MessageError, match="malformed"):
        server.handle(_request(op="setup", session=SESSION, job={**JOB.to_fields(), "epsilon": -1}))
    assert server.holds()["loaded"] is False         # nothing read for a job it did not agree to


def test_the_leader_alone_draws_the_secret_and_only_once():
    servers, keys = _set_up()
    assert JOB.leader == "p0"
    with pytest.raises(MessageError, match="does not draw the sketch secret: the job's leader is 'p0'"):
        servers["p1"].handle(_request(op="share_secret", public_keys=keys))
    with pytest.raises(MessageError, match="has drawn no sketch secret yet"):
        servers["p0"].handle(_request(op="encode", public_keys=keys))
    _share(servers, keys)
    with pytest.raises(MessageError, match="draws it once"):
        servers["p0"].handle(_request(op="share_secret", public_keys=keys))
    fo = VerticalJob(DOMAIN, JOB.parties, 1.0, 1e-6, {**SMALL, "encoder": "fo"})
    fo_servers, fo_keys = _set_up(fo)
    with pytest.raises(MessageError, match="has no sketch secret to share"):
        fo_servers["p0"].handle(_request(op="share_secret", public_keys=fo_keys))


def test_public_keys_other_than_the_jobs_parties_are_refused():
    servers, keys = _set_up()
    other = VerticalPartyServer("p1", _codes()["p1"], job=JOB)
    stranger = unpack(other.handle(_request(op="setup", session=SESSION, job=JOB.to_fields())),
                      kinds=("PublicKey",)).fields["key"]
    for wrong, what in [({"p0": keys["p0"]}, "do not name exactly the job's parties"),
                        ({**keys, "p2": keys["p1"]}, "do not name exactly the job's parties"),
                        ({**keys, "p0": stranger}, "is not its own"),
                        ({**keys, "p0": "zz"}, "not a hex string")]:
        with pytest.raises(MessageError, match=what):
            servers["p0"].handle(_request(op="share_secret", public_keys=wrong))
    box = _share(servers, keys)
    # Once seen, the keys are pinned: the curator cannot swap the leader's key for the encode round.
    with pytest.raises(MessageError, match="other public keys than before"):
        servers["p0"].handle(_request(op="encode", public_keys={**keys, "p1": stranger}))
    nonce, sealed = box
    tampered = sealed.copy()
    tampered[5] ^= 1
    with pytest.raises(MessageError, match="Message from 'p0': the sealed sketch secret does not authenticate"):
        servers["p1"].handle(_request({"sealed_secret": tampered}, op="encode", public_keys=keys, nonce=nonce))


def test_requests_outside_the_protocol_are_refused():
    server = VerticalPartyServer("p1", _codes()["p1"], job=JOB)
    with pytest.raises(MessageError, match="got 'encode' before its setup"):
        server.handle(_request(op="encode", public_keys={}))
    with pytest.raises(MessageError, match="unknown request operation 'measure'"):
        server.handle(_request(op="measure"))
    with pytest.raises(MessageError, match="carries fields \\['variance'\\]"):
        server.handle(_request(op="setup", session=SESSION, job=JOB.to_fields(), variance=1.0))
    with pytest.raises(MessageError, match="carries fields \\['codes'\\]"):
        server.handle(_request({"codes": np.zeros(3)}, op="setup", session=SESSION, job=JOB.to_fields()))
    servers, keys = _set_up()
    with pytest.raises(MessageError, match="carries no sealed sketch secret"):
        servers["p1"].handle(_request(op="encode", public_keys=keys))
    with pytest.raises(MessageError, match="already set up in another session"):
        servers["p1"].handle(_request(op="setup", session="cd" * 16, job=JOB.to_fields()))
    seeded, seeded_keys = _set_up(noise="curator")
    with pytest.raises(MessageError, match="uses the curator's seed, but no sketch secret was sent"):
        seeded["p0"].handle(_request(op="share_secret", public_keys=seeded_keys))


def test_the_record_count_is_checked_only_when_it_is_public():
    codes = _codes(n=1237)
    counted = VerticalJob(DOMAIN, JOB.parties, 1.0, 1e-6, SMALL, n_rows=1000)
    server = VerticalPartyServer("p1", codes["p1"], job=counted)
    with pytest.raises(PartyDataError, match="another number of rows than its roster; the job expects 1000") as info:
        server.handle(_request(op="setup", session=SESSION, job=counted.to_fields()))
    assert "1237" not in str(info.value) and "1,237" not in str(info.value)
    servers, _ = _set_up(codes=codes)                # no public count: any number of aligned rows is read
    assert all(s.holds()["loaded"] for s in servers.values())
    with pytest.raises(PartyDataError, match="Party 'p1': column 'b' has codes outside \\[0, 4\\)"):
        _set_up(codes={"p0": codes["p0"], "p1": codes["p1"] + 4})


def test_a_party_seeded_by_the_curator_answers_as_the_in_process_party():
    """What run_parties sends a party with noise='curator' rebuilds its child generator of the in-process fit."""
    from skdpsynth.privacy.randomness import child_random_states
    from skdpsynth.synthesizers.vertical_mrf.party import VerticalParty
    from skdpsynth.synthesizers.vertical_mrf import sketches as fm

    rng = np.random.default_rng(11)
    secret, states = rng.bytes(32), child_random_states(rng, 2)
    codes = _codes()
    servers, keys = _set_up(noise="curator")
    packet = unpack(servers["p0"].handle(_request(op="share_secret", public_keys=keys, sketch_secret=secret.hex())),
                    kinds=("SealedSecrets",))
    box = packet.fields["boxes"]["p1"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reply = servers["p1"].handle(_request(
            {"sealed_secret": np.frombuffer(bytes.fromhex(box["ciphertext"]), dtype=np.uint8)}, op="encode",
            public_keys=keys, nonce=box["nonce"], random_state=remote._random_state_fields(states[1])))
        # The in-process party 1: the same secret's keys and the curator's child state 1 (not yet spawned from).
        expected = VerticalParty(1, JOB.config()).run(codes["p1"], fm.SketchKeys.from_secret(secret, 16),
                                                      random_state=states[1])
    assert reply == expected.to_bytes()
    with pytest.raises(MessageError, match="random state the curator sent is malformed"):
        servers["p0"].handle(_request(op="encode", public_keys=keys, random_state={"entropy": -1, "spawn_key": [],
                                                                                  "pool_size": 4}))


# --------------------------------------------------------------------------- configuration
def test_configuration_errors(vertical_job):
    X, domain, paths = vertical_job
    with pytest.raises(ValueError, match="hosts must name the parties exactly"):
        VerticalFederatedData(domain, GROUPS, dict(list(paths.items())[:2]))
    with pytest.raises(ValueError, match="at least two parties"):
        VerticalFederatedData(domain, {"all": COLUMNS}, {"all": "x.csv"})
    with pytest.raises(ValueError, match="Column 'age' is held by two parties"):
        VerticalFederatedData(domain, {**GROUPS, "bank": ["age", "income>50K"]}, paths)
    with pytest.raises(ValueError, match="backend must be"):
        VerticalFederatedData(domain, GROUPS, paths, backend="threads")
    with pytest.raises(ValueError, match="n_rows must be a positive integer"):
        VerticalFederatedData(domain, GROUPS, paths, n_rows=0)
    data = VerticalFederatedData(domain, GROUPS, paths)
    with pytest.raises(ValueError, match="need secure_computation='cryptographic'"):
        VerticalMRFSynthesizer(1.0).fit(data)
    with pytest.raises(ValueError, match="carries its parties' columns"):
        VerticalMRFSynthesizer(1.0, secure_computation="cryptographic").fit(data, party_columns=2)
    with pytest.raises(ValueError, match="domain is the one it carries"):
        VerticalMRFSynthesizer(1.0, domain=domain.to_dict(), secure_computation="cryptographic").fit(data)
    with pytest.raises(TypeError, match="not a VerticalFederatedData"):
        HybridSynthesizer(1.0, secure_computation="cryptographic").fit(data)
    hybrid = FederatedData(domain, HybridPartition.vertical(len(X), list(GROUPS.values())),
                           {f"party0.{j}": p for j, p in enumerate(paths.values())})
    with pytest.raises(TypeError, match="through a VerticalFederatedData"):
        VerticalMRFSynthesizer(1.0, secure_computation="cryptographic").fit(hybrid)


def test_the_party_parameters_are_the_estimators_defaults():
    defaults = VerticalMRFSynthesizer().get_params()
    assert PARTY_DEFAULTS == {key: defaults[key] for key in PARTY_DEFAULTS}


# --------------------------------------------------------------------------- the CLI roles over files
def _run_cli_job(tmp_path, paths, job_path, seed="0", noise="curator"):
    """Curator and parties in turns until the curator is done; the curator's statuses."""
    from skdpsynth.cli import WAITING, main

    exchange = tmp_path / "exchange"
    curator = ["curator", "--job", str(job_path), "--exchange", str(exchange), "--state", str(tmp_path / "curator"),
               "--seed", seed, "--no-wait", "-q", "-o", str(tmp_path / "synthetic.csv"), "--rows", "100"]
    statuses = []
    while (status := main(curator)) == WAITING:      # the curator stops at every missing reply
        statuses.append(status)
        assert len(statuses) < 10
        for name, path in paths.items():
            assert main(["party", "--job", str(job_path), "--name", name, "--data", path, "--exchange",
                         str(exchange), "--state", str(tmp_path / name), "--noise", noise, "-q"]) == 0
    return statuses + [status], exchange


def test_cli_party_and_curator_roles_run_a_vertical_job_that_matches_the_in_process_fit(vertical_job, tmp_path):
    import json

    from skdpsynth.federated.files import CuratorState, FileVerticalFederatedData, read_job, write_job

    X, domain, paths = vertical_job
    write_job(tmp_path / "job.json", domain=domain, partition=GROUPS, epsilon=1.0, delta=1e-6, parameters=SETTINGS,
              method="vertical")
    job = read_job(tmp_path / "job.json")
    assert job["method"] == "vertical" and job["n_rows"] is None and "rows" not in json.dumps(job["parties"])
    with pytest.warns(PrivacyLeakWarning, match="curator's seed"):   # parties with --noise curator
        statuses, exchange = _run_cli_job(tmp_path, paths, tmp_path / "job.json")
    assert statuses == [3, 3, 3, 0]           # setup, the leader's sealed secret, the messages; then the fit
    synthetic = pd.read_csv(tmp_path / "synthetic.csv")
    assert list(synthetic.columns) == COLUMNS and len(synthetic) == 100
    # The leader's secret left its state with its message.
    assert json.loads((tmp_path / min(GROUPS) / "party-state.json").read_text())["server"]["secret"] is None
    # The curator, replayed once more from the files, is the in-process fit for the same seed.
    data = FileVerticalFederatedData(read_job(tmp_path / "job.json"), exchange, CuratorState(tmp_path / "curator"))
    model, _ = _fit_remote(data, random_state=0)
    _assert_same_fit(_fit_in_process(X, domain), model)
    assert model.runtime_["backend"] == "files"
    # Only bytes crossed: requests, key packets and the parties' messages.
    for path in exchange.iterdir():
        if path.name == "done":
            continue
        data = path.read_bytes()
        if path.name.endswith(".request"):
            assert unpack(data, kinds=("Request",), sender=CURATOR).fields["op"]
        else:
            name = path.name.split(".", 1)[1].rsplit(".", 1)[0]
            try:
                assert unpack(data, kinds=PACKET_KINDS, sender=name)
            except MessageError:
                assert VerticalMessage.from_bytes(data, sender=name).party == name


def test_cli_party_refuses_a_vertical_setup_that_differs_from_its_job(vertical_job, tmp_path, capsys):
    from skdpsynth.cli import WAITING, main
    from skdpsynth.federated.files import write_job

    X, domain, paths = vertical_job
    write_job(tmp_path / "job.json", domain=domain, partition=GROUPS, epsilon=1.0, delta=1e-6, parameters=SETTINGS,
              method="vertical")
    write_job(tmp_path / "small.json", domain=domain, partition=GROUPS, epsilon=0.5, delta=1e-6,
              parameters=SETTINGS, method="vertical")
    exchange = tmp_path / "exchange"
    assert main(["curator", "--job", str(tmp_path / "job.json"), "--exchange", str(exchange), "--state",
                 str(tmp_path / "curator"), "--no-wait", "-q"]) == WAITING
    name = "insurer"
    assert main(["party", "--job", str(tmp_path / "small.json"), "--name", name, "--data", paths[name],
                 "--exchange", str(exchange), "--state", str(tmp_path / name), "-q"]) == 2
    assert "budget (epsilon, delta) differs from the job of party 'insurer'" in capsys.readouterr().err
    assert not list(exchange.glob(f"*.{name}.reply"))


def test_message_arrays_have_the_shapes_of_the_public_job_whatever_the_record_count():
    """A party's reply does not carry its row count in its arrays' sizes (FM encoder): the sketches are t × Σ binned
    sizes, the value distributions the binned columns' sizes, the potentials the sizes of the (DP-chosen) cliques."""
    import io

    shapes = []
    for n in (400, 900):
        servers, keys = _set_up(codes=_codes(n=n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reply = _encode(servers, keys, _share(servers, keys))["p1"]
        with np.load(io.BytesIO(reply), allow_pickle=False) as archive:
            header = VerticalMessage.from_bytes(reply, config=JOB.config(), sender="p1")
            arrays = {k: archive[k].shape for k in archive.files if k != "header"}
        potentials = [DOMAIN.shape_of(c) for c in header.local_potentials]
        assert [arrays[f"potential_{i}"] for i in range(len(potentials))] == potentials
        shapes.append({k: v for k, v in arrays.items() if not k.startswith("potential_")})
    assert shapes[0] == shapes[1] == {"sketches": (16, 4 + 4), "value_distribution_0": (6,)}
