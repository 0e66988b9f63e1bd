"""VertiMRF against a careless or deviating party, and its accounting at the edges.

* Accounting: Theorem 2 (VertiMRF, KDD'24, §4.2) is a valid bound only up to ε_enc = 8(1 − 1/√2)·ln(1/δ_enc); beyond,
  the charged sketch budget must still bound the RDP conversion of the theorem's proof (App. C.1).
* Messages: the server validates every field of every party message on receipt (``vertical_mrf.message.check_vertical_message``) and
  names the party, never the value, in its ``MessageError``.
* Budget split: ``his_rec="uniform"`` releases no value distribution, so its budget share goes to the sketches; a zero
  binning share with a binned column is refused at fit start with a clear message.
"""
import dataclasses
import io
import math

import numpy as np
import pandas as pd
import pytest

from skdpsynth import PrivacyLeakWarning, VerticalMRFSynthesizer
from skdpsynth.synthesizers.vertical_mrf import sketches as fm
from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
from skdpsynth.synthesizers.vertical_mrf.party import VerticalParty, sketch_epsilon_prime_rdp, vertical_budget
from skdpsynth.federated.wire import MessageError
from skdpsynth.synthesizers.vertical_mrf import VerticalServer

#: Theorem 2's range: ε_enc/√2 + ε_enc²/(8 ln 1/δ) (the RDP curve at Theorem 2's ε′) ≤ ε_enc iff ε_enc ≤ this·ln(1/δ).
RANGE = 8 * (1 - 1 / math.sqrt(2))
DOMAIN = {"a": 3, "b": 3, "c": 6}  # c (6 values) is binned with the default n_bins=4
PARTIES = [["a", "b"], ["c"]]
FAST = dict(n_sketches=100, md_iters=30, local_mrf_params={"max_iters": 50})


def three_columns(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    return pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, n)) % 3, "c": (2 * a + (rng.random(n) < 0.2)) % 6})


def make(**kw):
    params = dict(epsilon=4.0, delta=1e-6, party_columns=PARTIES, domain=DOMAIN, random_state=0, **FAST)
    params.update(kw)
    return VerticalMRFSynthesizer(**params)


def ledger_totals(ledger):
    return math.fsum(e.epsilon for e in ledger), math.fsum(e.delta for e in ledger)


@pytest.fixture(scope="module")
def data():
    return three_columns()


@pytest.fixture(scope="module")
def fitted(data):
    return make(keep_messages=True).fit(data)


@pytest.fixture(scope="module")
def messages(fitted):
    return [VerticalMessage.from_bytes(b) for b in fitted.messages_]


# ---------------------------------------------------------------------------------------------------------------------
# Accounting: Theorem 2 outside its range
# ---------------------------------------------------------------------------------------------------------------------
def rdp_curve(epsilon_prime, t, d, delta):
    """The RDP conversion of Theorem 2's proof at its optimal order, over all orders λ > 1 (the smallest figure)."""
    rho = 2.0 * t * d * epsilon_prime**2
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def test_theorem2_out_of_range_charges_a_valid_bound():
    """ε = 30, δ = 1e-2, 2 parties, 15 attributes: the sketches are charged 16.8 = 0.56 ε at δ_enc = 5e-3.

    16.8 exceeds 8(1 − 1/√2) ln(200) = 12.41, where Theorem 2 stops holding: at Theorem 2's ε′ the RDP curve of its
    proof gives 18.54 > 16.8.  The ε′ used must be one whose RDP figure the charged 16.8 bounds.
    """
    budget = vertical_budget(30.0, 1e-2, n_parties=2, n_attributes=15, n_binned=0)
    t, d, delta_enc = 2000, 15, budget.delta_encoding
    assert budget.epsilon_encoding == pytest.approx(16.8, rel=1e-12) and delta_enc == pytest.approx(5e-3)
    assert budget.epsilon_encoding > RANGE * math.log(1 / delta_enc)  # outside Theorem 2's range
    theorem2_prime = fm.sketch_epsilon_prime(budget.epsilon_encoding, t, d, delta_enc)
    assert rdp_curve(theorem2_prime, t, d, delta_enc) == pytest.approx(18.538, abs=1e-3)  # 16.8 would understate it
    charged = budget.epsilon_encoding
    assert rdp_curve(budget.epsilon_prime, t, d, delta_enc) <= charged * (1 + 1e-12)
    assert fm.rdp_optimal_epsilon(budget.epsilon_prime, t, d, delta_enc) == pytest.approx(charged, rel=1e-12)
    assert [round(x, 12) for x in budget.total()] == [30.0, 0.01]


def test_theorem2_out_of_range_fit_ledger_is_valid():
    """The same case through a fit: the ledger's sketch entries sum to a figure that bounds their ε′'s RDP curve."""
    rng = np.random.default_rng(1)
    base = rng.integers(0, 2, 600)
    X = pd.DataFrame({f"x{j}": np.where(rng.random(600) < 0.8, base, 1 - base) for j in range(15)})
    syn = VerticalMRFSynthesizer(30.0, 1e-2, party_columns=2, domain={c: 2 for c in X}, n_sketches=50, md_iters=20,
                                 local_mrf="mst", n_bins=None, random_state=0).fit(X)
    sketches = [e for e in syn.privacy_ledger_ if e.mechanism == "dpfm"]
    charged, delta_enc = ledger_totals(sketches)
    assert charged == pytest.approx(16.8, rel=1e-12) and delta_enc == pytest.approx(5e-3, rel=1e-12)
    (epsilon_prime,) = {e.details["epsilon_prime"] for e in sketches}
    assert rdp_curve(epsilon_prime, 50, 15, delta_enc) <= charged * (1 + 1e-12)
    assert syn.privacy_report_["sketch_bound"] == "rdp"
    assert ledger_totals(syn.privacy_ledger_) == pytest.approx((30.0, 1e-2), rel=1e-12)


@pytest.mark.parametrize("epsilon, delta, d, n_binned", [(1.0, 1e-9, 6, 2), (4.0, 1e-6, 3, 1), (3.2, 2.8e-5, 15, 5),
                                                         (20.0, 1e-9, 16, 0)])
def test_theorem2_inside_its_range_is_unchanged(epsilon, delta, d, n_binned):
    """Inside the range ε′ is exactly Theorem 2's, and Theorem 2's figure is the charged one (and ≥ the RDP curve)."""
    budget = vertical_budget(epsilon, delta, n_parties=2, n_attributes=d, n_binned=n_binned)
    log_term = math.log(1 / budget.delta_encoding)
    assert budget.epsilon_encoding <= RANGE * log_term
    t = 2000
    assert budget.epsilon_prime == fm.sketch_epsilon_prime(budget.epsilon_encoding, t, d, budget.delta_encoding)
    assert fm.theorem2_epsilon(budget.epsilon_prime, t, d, budget.delta_encoding) == pytest.approx(
        budget.epsilon_encoding, rel=1e-12)
    assert rdp_curve(budget.epsilon_prime, t, d, budget.delta_encoding) <= budget.epsilon_encoding


def test_theorem2_range_is_where_theorem2_meets_the_rdp_curve():
    """At ε_enc = THEOREM2_RANGE · ln(1/δ) the two figures agree; just above, Theorem 2 states less."""
    t, d, delta = 2000, 15, 1e-5
    assert fm.THEOREM2_RANGE == pytest.approx(RANGE, rel=1e-15)
    edge = RANGE * math.log(1 / delta)
    e = fm.sketch_epsilon_prime(edge, t, d, delta)
    assert fm.rdp_optimal_epsilon(e, t, d, delta) == pytest.approx(edge, rel=1e-12)
    above = fm.sketch_epsilon_prime(edge * 1.01, t, d, delta)
    assert fm.rdp_optimal_epsilon(above, t, d, delta) > fm.theorem2_epsilon(above, t, d, delta)


@pytest.mark.parametrize("epsilon_enc", [0.3, 10.0, 16.8, 40.0, 200.0])
def test_rdp_accounting_inverts_at_every_budget(epsilon_enc):
    """``sketch_accounting="rdp_opt"`` has an ε′ for every budget (also where the optimal order would be below 2)."""
    t, d, delta = 2000, 15, 5e-3
    e = sketch_epsilon_prime_rdp(epsilon_enc, t, d, delta)
    assert fm.rdp_optimal_epsilon(e, t, d, delta) == pytest.approx(epsilon_enc, rel=1e-12)
    assert rdp_curve(e, t, d, delta) <= epsilon_enc * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------------------------------
# Budget split: UniSam and the binning share
# ---------------------------------------------------------------------------------------------------------------------
def test_uniform_his_rec_gives_the_binning_share_to_the_sketches(data):
    syn = make(his_rec="uniform", keep_messages=True).fit(data)
    ledger = syn.privacy_ledger_.to_frame()
    assert not ledger.description.str.startswith("value distribution").any()
    sketches = [e for e in syn.privacy_ledger_ if e.mechanism == "dpfm"]
    assert ledger_totals(sketches)[0] == pytest.approx(0.56 * 4.0, rel=1e-12)  # 0.36 ε + the 0.2 ε binning share
    assert syn.privacy_report_["binning"] == 0.0
    assert ledger_totals(syn.privacy_ledger_) == pytest.approx((4.0, 1e-6), rel=1e-12)
    assert all(VerticalMessage.from_bytes(b).value_distributions == {} for b in syn.messages_)
    with pytest.warns(PrivacyLeakWarning, match="exact record count"):
        fo = make(his_rec="uniform", encoder="fo").fit(data)
    grr = [e for e in fo.privacy_ledger_ if e.mechanism == "grr"]
    assert ledger_totals(grr)[0] == pytest.approx(0.56 * 4.0, rel=1e-12)
    assert ledger_totals([e for e in fo.privacy_ledger_ if e.accounting != "leak"]) == pytest.approx((4.0, 1e-6))


def test_zero_binning_share_with_a_binned_column_is_refused_at_fit_start(data, monkeypatch):
    def no_party_runs(*args, **kwargs):
        raise AssertionError("a party ran before the budget split was checked")

    split = {"local_mrf": 0.5, "encoding": 0.5, "binning": 0.0}
    with monkeypatch.context() as patch:
        patch.setattr(VerticalParty, "run", no_party_runs)
        with pytest.raises(ValueError, match=r"budget_split gives 'binning' no share.*his_rec='uniform'.*n_bins=None"):
            make(budget_split=split).fit(data)
    for fix in ({"his_rec": "uniform"}, {"n_bins": None}):
        syn = make(budget_split=split, **fix).fit(data)
        assert ledger_totals(syn.privacy_ledger_) == pytest.approx((4.0, 1e-6), rel=1e-12)


# ---------------------------------------------------------------------------------------------------------------------
# Messages: malformed fields
# ---------------------------------------------------------------------------------------------------------------------
def server_fit(fitted, messages):
    return VerticalServer(fitted.config_, md_iters=10, random_state=0).fit(messages)


def refused(fitted, messages, index, field, **changes):
    """Replace fields of party ``index``'s message; the server must refuse it, naming the party and the field."""
    bad = list(messages)
    bad[index] = dataclasses.replace(messages[index], **changes)
    with pytest.raises(MessageError) as info:
        server_fit(fitted, bad)
    party = messages[index].party
    assert info.value.sender == party and f"Message from {party!r}" in str(info.value)
    assert f"'{field}'" in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("case", ["float", "nan", "negative", "below_alpha_min", "above_max", "shape"])
def test_malformed_sketches_are_refused(fitted, messages, case):
    s = messages[1].sketches
    alpha_min = fitted.privacy_report_["alpha_min"]
    bad = {"float": s.astype(float), "nan": np.where(s > 0, np.nan, 0.0), "negative": s.astype(np.int64) - 100,
           "below_alpha_min": np.full_like(s, alpha_min - 1), "above_max": np.full_like(s, 250),
           "shape": s[:-1]}[case]
    refused(fitted, messages, 1, "sketches", sketches=bad)


@pytest.mark.parametrize("value", [float("nan"), -5.0, 0.0, 1234.5, float("inf")])
def test_malformed_record_count_is_refused(fitted, messages, value):
    text = refused(fitted, messages, 0, "n_hat", n_hat=value)
    assert str(value) not in text and "1234" not in text


@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.1])
@pytest.mark.parametrize("k_p", [1, 100, 8047, 10**6])
def test_the_largest_possible_sketch_value_is_within_the_receipt_bound(monkeypatch, gamma, k_p):
    """Honest sketches are never refused as too large: the extreme hash and phantom draws stay within the bound.

    A hash is largest at the smallest uniform 2^−53; a phantom maximum at the largest word (V = 1 − 2^−53).
    """
    bound = fm.sketch_max_value(gamma, k_p)
    dtype = fm.sketch_dtype(gamma, k_p)
    assert int(fm._geometric_from_uniform(np.array([2.0**-53]), gamma, dtype)[0]) <= bound
    monkeypatch.setattr(fm, "random_uint64", lambda rng, size: np.full(size, 2**64 - 1, dtype=np.uint64))
    assert int(fm.sample_phantom_maxima(k_p, gamma, 3, random_state=0, dtype=dtype).max()) <= bound


def test_nan_potentials_are_refused(fitted, messages):
    potentials = dict(messages[0].local_potentials)
    clique = next(iter(potentials))
    potentials[clique] = np.where(np.arange(potentials[clique].size).reshape(potentials[clique].shape) == 0,
                                  np.nan, potentials[clique])
    refused(fitted, messages, 0, "local_potentials", local_potentials=potentials)


@pytest.mark.parametrize("value", [float("nan"), -3.0])
def test_malformed_local_total_is_refused(fitted, messages, value):
    refused(fitted, messages, 0, "local_total", local_total=value)


@pytest.mark.parametrize("case", ["nan", "negative", "not_normalised"])
def test_malformed_value_distributions_are_refused(fitted, messages, case):
    good = messages[1].value_distributions["c"]
    bad = {"nan": np.full(6, np.nan), "negative": good - 2 * good.max(), "not_normalised": np.full(6, 0.9)}[case]
    refused(fitted, messages, 1, "value_distributions", value_distributions={"c": bad})


def test_foreign_graph_edges_are_refused(fitted, messages):
    refused(fitted, messages, 1, "graph_edges", graph_edges=[("a", "c")])  # 'a' belongs to the other party


def test_a_ledger_that_does_not_match_the_budget_is_refused(fitted, messages):
    refused(fitted, messages, 1, "ledger", ledger=messages[1].ledger * 2)


def test_malformed_grr_table_is_refused(data):
    with pytest.warns(PrivacyLeakWarning):
        fo = make(encoder="fo", keep_messages=True).fit(data)
    received = [VerticalMessage.from_bytes(b) for b in fo.messages_]
    refused(fo, received, 1, "perturbed", perturbed=received[1].perturbed + 7)      # codes outside the bins
    refused(fo, received, 1, "perturbed", perturbed=received[1].perturbed.astype(float))


def test_the_same_checks_apply_to_the_bytes_a_party_sends(fitted, messages):
    """The server reads bytes through the wire format and refuses what it refuses as objects."""
    bad = dataclasses.replace(messages[1], sketches=np.zeros_like(messages[1].sketches))
    received = [VerticalMessage.from_bytes(b) for b in (fitted.messages_[0], bad.to_bytes())]
    with pytest.raises(MessageError, match="party1.*'sketches'"):
        server_fit(fitted, received)
    with pytest.raises(MessageError, match="party1.*'sketches'"):
        VerticalMessage.from_bytes(bad.to_bytes(), config=fitted.config_)
    with pytest.raises(MessageError, match="party1.*'sketches'"):
        server_fit(fitted, [fitted.messages_[0], bad.to_bytes()])
    result = server_fit(fitted, list(fitted.messages_))  # the untouched bytes are accepted
    assert result.n_hat == fitted.n_hat_


def test_random_bytes_are_refused_with_a_message_error(fitted):
    garbage = np.random.default_rng(5).bytes(400)
    with pytest.raises(MessageError):
        VerticalMessage.from_bytes(garbage)
    with pytest.raises(MessageError, match="Message from 'party1': not a zip"):
        VerticalMessage.from_bytes(garbage, config=fitted.config_, sender="party1")
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"x": 1}], dtype=object), allow_pickle=True)  # a .npy of pickled objects
    with pytest.raises(MessageError):
        VerticalMessage.from_bytes(pickled.getvalue())


def test_a_header_without_keys_is_refused_with_a_message_error():
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(b"{}", dtype=np.uint8))
    with pytest.raises(MessageError, match="header"):
        VerticalMessage.from_bytes(buffer.getvalue())


def test_a_message_from_outside_the_job_or_missing_is_refused(fitted, messages):
    stranger = dataclasses.replace(messages[1], party="mallory")
    with pytest.raises(MessageError, match="'mallory'"):
        server_fit(fitted, [messages[0], stranger])
    with pytest.raises(MessageError, match="'party1': no message"):
        server_fit(fitted, [messages[0]])
    with pytest.raises(MessageError, match="'party0': a second message"):
        server_fit(fitted, [messages[0], messages[0], messages[1]])
