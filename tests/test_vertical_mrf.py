"""VerticalMRFSynthesizer (VertiMRF): accounting, the trust boundary, the server, hostile input, end to end.

The ledger (KDD'24 §7.1's budget split), the consistency step (§6.2), GraphCom (§5.1), end to end, determinism and
the messages' round trip, leakage guards (nothing but DP releases crosses the trust boundary); plus the server
replayed from the logged messages.  The sketch layer is in ``test_vertical_sketches.py``; binning, HisRec and GRR
in ``test_vertical_binning_fo.py``.
"""
import io
import itertools
import math
import warnings

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdpsynth import Domain, PrivacyLeakWarning, VerticalMRFSynthesizer
from skdpsynth.federated import HybridPartition
from skdpsynth.synthesizers.vertical_mrf.sketches import derive_sketch_keys
from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
from skdpsynth.synthesizers.vertical_mrf.party import vertical_budget
from skdpsynth.privacy.randomness import ReproducibleNoiseWarning
from skdpsynth.synthesizers.vertical_mrf import VerticalServer
from skdpsynth.synthesizers.vertical_mrf.consistency import enforce_consistency, rake

FAST = dict(n_sketches=200, md_iters=200, local_mrf_params={"max_iters": 100, "final_iters": 200, "rounds": 12})
DOMAIN = {"a": 3, "b": 2, "c": 10, "d": 4, "e": 3, "f": 6}
PARTIES = [["a", "b", "c"], ["d", "e", "f"]]


def cross_party_data(n=5000, seed=0):
    """The end-to-end data: a chain a -> d -> b -> e -> c -> f, every link crossing the two parties ({a, b, c} | {d, e, f})."""
    rng = np.random.default_rng(seed)

    def noisy_copy(x, size, keep):
        return np.where(rng.random(n) < keep, x % size, rng.integers(0, size, n))

    a = rng.integers(0, 3, n)
    d = noisy_copy(a, 4, 0.85)
    b = noisy_copy(d, 2, 0.85)
    e = noisy_copy(b, 3, 0.85)
    c = noisy_copy(e * 3, 10, 0.85)
    f = noisy_copy(c // 2, 6, 0.85)
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "e": e, "f": f})


def make(**kw):
    params = dict(epsilon=8.0, delta=1e-6, party_columns=PARTIES, domain=DOMAIN, random_state=0, **FAST)
    params.update(kw)
    return VerticalMRFSynthesizer(**params)


@pytest.fixture(scope="module")
def data():
    return cross_party_data()


@pytest.fixture(scope="module")
def fitted(data):
    return make(keep_messages=True).fit(data)


def tvd(p, q):
    p, q = np.asarray(p, float), np.asarray(q, float)
    return 0.5 * np.abs(p / p.sum() - q / q.sum()).sum()


def cross_pairs():
    return [(x, y) for x in PARTIES[0] for y in PARTIES[1]]


def crosstab(frame, x, y):
    return pd.crosstab(frame[x], frame[y]).reindex(index=range(DOMAIN[x]), columns=range(DOMAIN[y]),
                                                   fill_value=0).to_numpy()


# -- the ledger sums to the budget ------------------------------------------------------------------------------------
def ledger_totals(ledger):
    entries = [e for e in ledger if e.accounting != "leak"]
    return math.fsum(e.epsilon for e in entries), math.fsum(e.delta for e in entries)


@pytest.mark.parametrize("n_bins", [4, None])
@pytest.mark.parametrize("n_parties", [2, 3, 6])
def test_ledger_sums_to_the_budget(data, n_parties, n_bins):
    syn = make(party_columns=n_parties, n_bins=n_bins, epsilon=2.0, delta=1e-5).fit(data)
    eps, delta = ledger_totals(syn.privacy_ledger_)
    assert eps == pytest.approx(2.0, rel=1e-12) and delta == pytest.approx(1e-5, rel=1e-12)
    assert syn.privacy_ledger_.is_private
    assert syn.privacy_ledger_.epsilon(1e-5) == pytest.approx(2.0, rel=1e-12)
    ledger = syn.privacy_ledger_.to_frame()
    # one entry per release per party: a local model and a sketch tensor each, the count once
    assert sorted(ledger.party.unique()) == sorted(syn.parties_)
    assert (ledger.description.str.startswith("local model")).sum() == n_parties
    assert (ledger.mechanism == "dpfm").sum() == n_parties
    assert ledger.description.str.startswith("record count").sum() == 1
    binned = ledger.description.str.startswith("value distribution").sum()
    assert binned == (2 if n_bins == 4 else 0)  # c (10) and f (6) have more than 4 values
    budget = vertical_budget(2.0, 1e-5, n_parties=n_parties, n_attributes=6, n_binned=binned)
    assert budget.epsilon_encoding == pytest.approx(2.0 * (0.36 if binned else 0.56))  # the binning share moves (doc/deviations.md, "Binning budget per binned column")


def test_fo_and_none_accounting(data):
    with pytest.warns(PrivacyLeakWarning, match="exact record count"):
        fo = make(encoder="fo", epsilon=2.0).fit(data)
    assert ledger_totals(fo.privacy_ledger_) == pytest.approx((2.0, 1e-6))
    assert not fo.privacy_ledger_.is_private  # the row-aligned GRR table reveals n (doc/deviations.md, "Frequency-oracle accounting")
    assert "NOT differentially private" in fo.privacy_report_["statement"]
    none = make(encoder="none", epsilon=2.0).fit(data)
    assert ledger_totals(none.privacy_ledger_) == pytest.approx((2.0, 1e-6))
    assert none.privacy_ledger_.is_private and none.cross_marginals_ == []


def test_rdp_accounting_uses_a_larger_epsilon_prime_for_the_same_budget(data):
    theorem2 = make(epsilon=2.0).fit(data).privacy_report_
    rdp = make(epsilon=2.0, sketch_accounting="rdp_opt").fit(data).privacy_report_
    assert rdp["epsilon_prime"] > theorem2["epsilon_prime"]
    assert rdp["rdp_optimal_epsilon"] == pytest.approx(rdp["encoding"][0], rel=1e-9)
    assert theorem2["theorem2_epsilon"] == pytest.approx(theorem2["encoding"][0], rel=1e-9)
    assert theorem2["rdp_optimal_epsilon"] <= theorem2["theorem2_epsilon"]


# -- end to end -------------------------------------------------------------------------------------------------------
def test_sketches_recover_cross_party_dependence(data, fitted):
    """Cross-party 2-way TVD below the local-models-only baseline, at ε = 8 with t = 200."""
    baseline = make(encoder="none").fit(data)
    fm_tvd = np.mean([tvd(crosstab(data, x, y), fitted.marginal([x, y])) for x, y in cross_pairs()])
    none_tvd = np.mean([tvd(crosstab(data, x, y), baseline.marginal([x, y])) for x, y in cross_pairs()])
    assert fm_tvd < 0.6 * none_tvd, (fm_tvd, none_tvd)
    assert len(fitted.cross_marginals_) == math.floor(0.8 * 6)
    for clique in fitted.cross_marginals_:  # cross-party, inside a clique of the global graph
        assert len({0 if a in PARTIES[0] else 1 for a in clique}) == 2
        assert any(set(clique) <= set(c) for c in fitted.cliques_)


def test_sample_returns_n_hat_rows_in_the_original_schema(data, fitted):
    out = fitted.sample()
    assert len(out) == int(round(fitted.n_hat_)) and list(out.columns) == list(data.columns)
    assert abs(fitted.n_hat_ - len(data)) < 200  # Laplace(1/0.32): far below 200 (P < 1e-27)
    for col in data.columns:
        assert out[col].dtype == data[col].dtype and out[col].between(0, DOMAIN[col] - 1).all()
    labelled = data.assign(b=data.b.map({0: "no", 1: "yes"}))
    syn = make(domain={**DOMAIN, "b": ["no", "yes"]}).fit(labelled)
    assert set(syn.sample(50).b) <= {"no", "yes"}


def test_fitted_attributes(fitted):
    assert fitted.parties_ == {"party0": PARTIES[0], "party1": PARTIES[1]}
    assert set(fitted.binned_) == {"c", "f"} and fitted.binned_["c"].tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    assert isinstance(fitted.graph_, nx.Graph) and nx.is_chordal(fitted.graph_)
    assert sorted(fitted.local_models_) == ["party0", "party1"]
    report = fitted.privacy_report_
    for key in ("local_mrf", "record_count", "encoding", "binning", "epsilon_prime", "k_p", "alpha_min",
                "theorem2_epsilon", "rdp_optimal_epsilon"):
        assert key in report


# -- the server replayed from the messages alone ----------------------------------------------------------------------
def test_server_replays_from_the_logged_messages(data, fitted):
    """Delete the data; the server run on the logged messages (and public config) reproduces the model exactly."""
    messages = [VerticalMessage.from_bytes(b) for b in fitted.messages_]
    server = VerticalServer(fitted.config_, md_iters=fitted.md_iters, random_state=None)
    del data
    result = server.fit(messages)
    assert result.cross_marginals == fitted.cross_marginals_
    assert result.n_hat == fitted.n_hat_
    for clique in fitted.model_.cliques:
        np.testing.assert_array_equal(result.model.potentials[clique], fitted.model_.potentials[clique])
    assert sorted(result.graph.edges) == sorted(fitted.graph_.edges)


# -- determinism and round trip ---------------------------------------------------------------------------------------
def test_same_seed_same_output_and_messages_round_trip(data, fitted):
    twin = make(keep_messages=True).fit(data)
    assert twin.messages_ == fitted.messages_
    pd.testing.assert_frame_equal(twin.sample(random_state=3), fitted.sample(random_state=3))
    for raw in fitted.messages_:
        assert VerticalMessage.from_bytes(VerticalMessage.from_bytes(raw).to_bytes()).to_bytes() == raw


def test_cryptographic_key_agreement_gives_the_same_fit(data, fitted, monkeypatch):
    """secure_computation='cryptographic': the sketch secret comes from the X25519 agreement, same seed same fit."""
    pytest.importorskip("cryptography")
    from skdpsynth.federated import secure_aggregation

    calls = []
    original = secure_aggregation.share_group_secret

    def recording(parties, **kwargs):
        secrets, relayed = original(parties, **kwargs)
        calls.append((sorted(p.name for p in parties), secrets, relayed))
        return secrets, relayed

    monkeypatch.setattr(secure_aggregation, "share_group_secret", recording)
    with pytest.warns(ReproducibleNoiseWarning):
        crypto = make(keep_messages=True, secure_computation="cryptographic").fit(data)
    assert crypto.messages_ == fitted.messages_
    (names, secrets, relayed), = calls
    assert len(names) == len(PARTIES) and len(set(secrets.values())) == 1
    secret = next(iter(secrets.values()))
    assert all(secret not in box for _, box in relayed.values())     # the curator relays sealed boxes only
    with pytest.raises(ValueError, match="secure_computation must be 'simulated' or 'cryptographic'"):
        make(secure_computation="yes").fit(data)


def test_unseeded_fits_draw_fresh_keys_and_noise(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReproducibleNoiseWarning)
        first = make(random_state=None, keep_messages=True).fit(data)
        second = make(random_state=None, keep_messages=True).fit(data)
    a, b = (VerticalMessage.from_bytes(m[1]).sketches for m in (first.messages_, second.messages_))
    assert not np.array_equal(a, b)
    with pytest.warns(ReproducibleNoiseWarning):
        make(random_state=1).fit(data)


# -- nothing but DP releases crosses the boundary --------------------------------------------------------------------
def message_payloads(raw: bytes) -> list[bytes]:
    with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
        return [npz[name].tobytes() for name in npz.files]


def test_messages_hold_no_key_no_raw_value_and_only_the_listed_fields(data, fitted):
    assert list(VerticalMessage.__dataclass_fields__) == list(VerticalMessage._FIELDS)
    assert set(VerticalMessage._FIELDS) == {"party", "columns", "local_potentials", "local_total", "measured",
                                            "graph_edges", "value_distributions", "sketches", "perturbed",
                                            "n_hat", "ledger"}
    secret = np.random.default_rng(0).bytes(32)  # what the fit with random_state=0 drew as the shared secret
    keys = derive_sketch_keys(secret, fitted.n_sketches)
    n = len(data)
    for raw, columns in zip(fitted.messages_, PARTIES):
        payloads = message_payloads(raw)
        blob = b"".join(payloads)
        for key in [secret] + keys:
            assert key[:16] not in blob
        msg = VerticalMessage.from_bytes(raw)
        assert msg.perturbed is None and msg.sketches.dtype == np.uint8
        assert msg.sketches.shape == (fitted.n_sketches, sum(min(DOMAIN[c], 4) for c in columns))
        assert msg.local_total != n and msg.n_hat != n
        for j, col in enumerate(columns):  # no raw column in any array
            for dtype in (np.int64, np.int32, np.uint8, np.float64):
                assert data[col].to_numpy().astype(dtype).tobytes()[:64] not in blob
            if col in msg.value_distributions:  # noisy, not the exact within-bin frequencies
                counts = np.bincount(data[col], minlength=DOMAIN[col]).astype(float)
                bins = fitted.binned_[col]
                exact = counts / np.bincount(bins, weights=counts)[bins]
                assert not np.allclose(msg.value_distributions[col], exact)
    leader = VerticalMessage.from_bytes(fitted.messages_[0])
    assert leader.n_hat is not None and VerticalMessage.from_bytes(fitted.messages_[1]).n_hat is None


def test_the_server_sees_no_data(fitted):
    server = VerticalServer(fitted.config_, md_iters=10)
    server.fit([VerticalMessage.from_bytes(b) for b in fitted.messages_])
    for name, value in vars(server).items():
        assert not isinstance(value, pd.DataFrame), name
        if isinstance(value, np.ndarray):
            assert value.ndim < 2 or value.shape[0] != 5000, name


# -- consistency (KDD'24 §6.2), GraphCom (§5.1) ---------------------------------------------------------------------
def test_consistency_enforcement():
    rng = np.random.default_rng(3)
    est = rng.random((3, 4)) * 10 - 1  # negatives too
    local0, local1 = rng.random(3), rng.random(4)
    out = enforce_consistency(est, [((0,), local0), ((1,), local1)], iters=4)
    assert (out >= 0).all() and out.sum() == pytest.approx(1.0)
    # already consistent inputs are left alone (idempotent)
    p = rng.random((3, 4))
    p /= p.sum()
    again = enforce_consistency(p, [((0,), p.sum(axis=1)), ((1,), p.sum(axis=0))])
    np.testing.assert_allclose(again, p, atol=1e-12)
    # the projection lands on the agreed table (halfway, as the local side moves to it as well)
    q = rng.random((3, 4))
    q /= q.sum()
    target = rng.random(3)
    target /= target.sum()
    agreed = enforce_consistency(q, [((0,), target)], iters=4).sum(axis=1)
    np.testing.assert_allclose(agreed, (q.sum(axis=1) + target) / 2, atol=1e-3)
    raked = rake(est, [((0,), local0), ((1,), local1)])
    np.testing.assert_allclose(raked.sum(axis=1), local0 / local0.sum(), atol=1e-6)
    np.testing.assert_allclose(raked.sum(axis=0), local1 / local1.sum(), atol=1e-6)


def test_graph_com_respects_tau_order_and_local_edges(data, fitted):
    messages = [VerticalMessage.from_bytes(b) for b in fitted.messages_]
    domain = Domain.from_dict(DOMAIN)
    local_edges = {tuple(sorted(e)) for m in messages for e in m.graph_edges}
    local_only = VerticalServer(fitted.config_)
    local_only._receive(messages)
    floor = max(domain.size(c) for c in local_only.graph_com({})[1].cliques)  # the local graphs alone
    for tau in (floor, 3 * floor, math.inf):
        server = VerticalServer(fitted.config_, max_clique_size=tau, max_model_size=math.inf)
        server._receive(messages)
        scores = server._r_scores()
        added, jt = server.graph_com(scores)
        assert max(domain.size(c) for c in jt.cliques) <= tau
        assert [scores[p] for p in added] == sorted((scores[p] for p in added), reverse=True)
        edges = {tuple(sorted((a, b))) for c in jt.cliques for a, b in itertools.combinations(c, 2)}
        assert local_edges <= edges
        skipped = [p for p in scores if p not in added]
        if tau == math.inf:
            assert not skipped and len(added) == 9
        for p in skipped:  # every skipped pair would have broken τ at its turn or later
            assert server._fits(domain, list(local_edges) + added + [p]) is None


def test_r_scores_rank_true_dependence(data, fitted):
    """The sketch R-scores rank the 9 cross-party pairs as their true R-scores do (binned domains)."""
    from scipy.stats import spearmanr

    server = VerticalServer(fitted.config_)
    server._receive([VerticalMessage.from_bytes(b) for b in fitted.messages_])
    scores = server._r_scores()
    cfg, n = fitted.config_, len(data)
    true = {}
    for x, y in scores:
        bx, by = cfg.bin_map(x)[data[x]], cfg.bin_map(y)[data[y]]
        joint = np.histogram2d(bx, by, bins=[cfg.binned_size(x), cfg.binned_size(y)])[0] / n
        true[(x, y)] = n / 2 * np.abs(joint - np.outer(joint.sum(1), joint.sum(0))).sum()
    pairs = list(scores)
    assert spearmanr([scores[p] for p in pairs], [true[p] for p in pairs]).statistic > 0.8


# -- hostile input -----------------------------------------------------------------------------------------------------
def test_hostile_partitions(data):
    with pytest.raises(ValueError, match="held by two parties"):
        make(party_columns=[["a", "b", "c"], ["c", "d", "e", "f"]]).fit(data)
    with pytest.raises(ValueError, match="held by no party"):
        make(party_columns=[["a", "b"], ["d", "e", "f"]]).fit(data)
    with pytest.raises(ValueError, match="not a column of the data"):
        make(party_columns=[["a", "b", "c", "zz"], ["d", "e", "f"]]).fit(data)
    with pytest.raises(ValueError, match="at least two parties"):
        make(party_columns=[list(data.columns)]).fit(data)
    with pytest.raises(ValueError, match="needs the vertical partition"):
        make(party_columns=None).fit(data)
    with pytest.raises(ValueError, match="one row slice"):
        make(party_columns=HybridPartition([0] * 2500 + [1] * 2500, PARTIES)).fit(data)


def test_hostile_party_frames(data):
    left, right = data[PARTIES[0]], data[PARTIES[1]]
    with pytest.raises(ValueError, match="different numbers of records"):
        make(party_columns=None).fit([left, right.iloc[:-1]])
    with pytest.raises(ValueError, match="different indexes"):
        make(party_columns=None).fit([left, right.sample(frac=1.0, random_state=0)])
    with pytest.raises(ValueError, match="held by both"):
        make(party_columns=None).fit({"x": left, "y": data[["c", "d", "e", "f"]]})
    with pytest.raises(ValueError, match="do not pass party_columns"):
        make().fit([left, right])
    syn = make(party_columns=None).fit({"hospital": left, "insurer": right})
    assert syn.parties_ == {"hospital": PARTIES[0], "insurer": PARTIES[1]}


def test_a_party_with_one_column_works(data):
    """Documented behaviour: a one-column party's local model is its noisy 1-way marginal."""
    syn = make(party_columns=[["a"], ["b", "c", "d", "e", "f"]]).fit(data)
    assert ledger_totals(syn.privacy_ledger_) == pytest.approx((8.0, 1e-6))
    assert syn.local_models_["party0"].cliques == [("a",)]
    assert syn.sample(10).shape == (10, 6)


# -- scikit-learn surface -----------------------------------------------------------------------------------------------
def test_clone_and_params(data):
    syn = make()
    assert clone(syn).get_params() == syn.get_params()
    with pytest.raises(ValueError, match="encoder"):
        make(encoder="xx").fit(data)
    with pytest.raises(ValueError, match="consistency"):
        make(consistency="yes").fit(data)
    with pytest.raises(ValueError, match="n_sketches"):
        make(n_sketches=0).fit(data)
