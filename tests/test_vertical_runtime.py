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
    assert [(e.description, e.epsilon, e.delta, e.party) for e in a.privacy_ledger_] == \
        [(e.description, e.epsilon, e.delta, e.party) for e in b.privacy_ledger_ if e.accounting != "leak"]
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
