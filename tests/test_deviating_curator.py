"""A party keeps its guarantee against a curator that deviates from the protocol.

The curator of the federated runtime writes every request a party answers.  A
deviating curator can send any bytes: layouts that do not fit the job (one
cell for a whole column, strides that fold a marginal, a product of other
dimensions), columns the party does not hold, fields no request has, replays,
more requests than the party's budget.  Whatever it sends, a
:class:`~skdpsynth.federated.runtime.PartyServer`

* answers only with noise of exactly the shape it counts, at the variance its
  guard charges (at least one random draw per released value; the spent budget
  grows by exactly ``1/(2 variance)`` per answer);
* never spends past its guard;
* refuses everything else with a ``MessageError`` whose text quotes no count
  and no code of its data.

The party's data have distinctive counts and codes (1,237 records; value counts
617/389/231; zip codes 123456 and 98765 held by 1,001 and 236 records), so a
leak into an error text is visible.  Hypothesis runs derandomized: the suite is
deterministic.
"""
from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skdpsynth import Domain
from skdpsynth.federated import HybridPartition
from skdpsynth.federated.messages import NoisyIndicators, NoisyLocalMarginal, SliceCount
from skdpsynth.federated.party_job import PartyJob
from skdpsynth.federated.runtime import CURATOR, DEALER_PURPOSE, PartyDataError, PartyServer
from skdpsynth.federated.wire import MessageError, from_bytes, pack, unpack

pytest.importorskip("cryptography")
from skdpsynth.federated.secure_aggregation import DEFAULT_SCALE_BITS, SecureAggregationParty, seal  # noqa: E402
from skdpsynth.federated.secure_product import SCALE_BITS_CHOICES, relay_word_bytes  # noqa: E402

N = 1237
DOMAIN = Domain(["a", "b", "c", "zip"], [3, 4, 2, 150_000])
PARTITION = HybridPartition.vertical(N, [["a", "zip"], ["b", "c"]])
SESSION = b"skdpsynth/test/" + bytes(16)
SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _party_codes() -> dict:
    rng = np.random.default_rng(5)
    a = rng.permutation(np.repeat([0, 1, 2], [617, 389, 231]))
    zip_ = rng.permutation(np.repeat([123456, 98765], [1001, 236]))
    b, c = rng.integers(0, 4, N), rng.integers(0, 2, N)
    return {"party0.0": np.column_stack([a, zip_]), "party0.1": np.column_stack([b, c])}


CODES = _party_codes()
# Every number an error text must not quote: the record count, each value count, the codes held (not the domain's
# sizes, which are public), and counts of the other party's values.
PRIVATE = {str(N), "617", "389", "231", "1001", "236", "123456", "98765", "1,237", "1,001"} | {
    str(int(k)) for k in np.bincount(CODES["party0.1"][:, 0]).tolist() + np.bincount(CODES["party0.1"][:, 1]).tolist()}


def assert_clean(text: str) -> None:
    """No private number of the parties' data appears in ``text`` as a number of its own."""
    for token in PRIVATE:
        assert not re.search(rf"(?<![\d.]){re.escape(token)}(?![\d])", text), (token, text)


class CountingGenerator(np.random.Generator):
    """A numpy Generator that counts the scalar variates its sampling methods return (what the noise really is)."""

    def __init__(self, bit_generator):
        super().__init__(bit_generator)
        self.draws = 0


def _counted(name):
    def method(self, *args, **kwargs):
        out = getattr(np.random.Generator, name)(self, *args, **kwargs)
        self.draws += int(np.size(out))
        return out
    return method


for _name in ("random", "integers", "normal", "standard_normal", "poisson", "geometric", "exponential",
              "standard_exponential", "uniform", "laplace", "gumbel", "binomial", "choice"):
    setattr(CountingGenerator, _name, _counted(_name))


class SpiedServer(PartyServer):
    """A PartyServer whose noise generators are counted (the generator is its own; nothing else changes)."""

    def _rng(self, call):
        self.generator = CountingGenerator(super()._rng(call).bit_generator)
        return self.generator


def job_of(name: str) -> PartyJob:
    return PartyJob.from_partition(DOMAIN, PARTITION, name)


def setup_request(job: PartyJob, curator: SecureAggregationParty, *, number: int = 0, **changes) -> bytes:
    fields = {"op": "setup", "session": SESSION.hex(), "curator_key": curator.public_key.hex(), "number": number,
              "seed": 11, **job.setup_fields(), **changes}
    return pack("Request", sender=CURATOR, fields=fields)


def request(**fields) -> bytes:
    arrays = {k: np.frombuffer(bytes(v), dtype=np.uint8) for k, v in fields.pop("arrays", {}).items()}
    return pack("Request", sender=CURATOR, fields=fields, arrays=arrays)


def make_server(name="party0.0", *, max_rho=None, own_job=True, server_class=SpiedServer):
    curator = SecureAggregationParty(CURATOR, SESSION)
    job = job_of(name)
    server = server_class(name, CODES[name], noise="curator", max_rho=max_rho, job=job if own_job else None)
    reply = unpack(server.handle(setup_request(job, curator, number=int(name[-1]))), kinds=("PublicKey",))
    return server, curator, bytes.fromhex(reply.fields["key"])


def exact_counts(name: str, r: tuple) -> np.ndarray:
    columns = job_of(name).columns
    flat = np.ravel_multi_index(tuple(CODES[name][:, columns.index(a)] for a in r), DOMAIN.shape_of(r))
    return np.bincount(flat, minlength=DOMAIN.size(r)).astype(float)


def answer_or_refusal(server, packet: bytes):
    """The server's reply, or None after checking that its refusal is a MessageError with a clean text."""
    try:
        return server.handle(packet)
    except (MessageError, PartyDataError) as exc:
        assert_clean(str(exc))
        assert exc.__cause__ is None
        return None


# --------------------------------------------------------------------------- the two exploits of the review
# These two build their requests by hand, field by field as the curator of the code before this change wrote them,
# so that they run against that code too (where they fail: the party answered the first, and quoted its data in the
# second's error).
def _hand_made_setup(name: str, curator) -> bytes:
    job = job_of(name)
    return pack("Request", sender=CURATOR, fields={
        "op": "setup", "session": SESSION.hex(), "curator_key": curator.public_key.hex(), "number": int(name[-1]),
        "seed": 11, "domain": {"attrs": list(DOMAIN.attrs), "sizes": [int(s) for s in DOMAIN.shape]},
        "spec": {"name": name, "slice": 0, "index": int(name[-1]), "n_rows": N, "columns": list(job.columns)},
        "slice_parties": {"party0.0": ["a", "zip"], "party0.1": ["b", "c"]}})


def test_a_count_request_with_the_curators_layout_is_refused():
    """The review's exploit: one column counted into ``n_cells=1``, so one noise draw covers every cell."""
    curator = SecureAggregationParty(CURATOR, SESSION)
    server = PartyServer("party0.0", CODES["party0.0"])
    server.handle(_hand_made_setup("party0.0", curator))
    packet = pack("Request", sender=CURATOR, fields={
        "op": "measure", "kind": "count", "attrs": ["a"], "r": ["a"], "strides": [1, 0], "n_cells": 1,
        "variance": 4.0, "rho": 0.125, "call": 0})
    with pytest.raises(MessageError, match="carries fields") as info:
        server.handle(packet)                    # before: an answer whose differences were the exact counts'
    assert_clean(str(info.value))
    assert server.spent_rho == 0.0


def test_a_product_of_wrong_dimensions_is_refused_without_quoting_the_data():
    """The review's second exploit: wrong product dimensions made the party quote its out-of-range records."""
    curator = SecureAggregationParty(CURATOR, SESSION)
    server = PartyServer("party0.0", CODES["party0.0"])
    key = bytes.fromhex(unpack(server.handle(_hand_made_setup("party0.0", curator)), kinds=("PublicKey",)).fields["key"])
    peer = PartyServer("party0.1", CODES["party0.1"])
    peer_key = bytes.fromhex(unpack(peer.handle(_hand_made_setup("party0.1", curator)), kinds=("PublicKey",)).fields["key"])
    for call, (n, d1, d2) in enumerate(((N, 2, 4), (N, 100_000, 4), (N - 1, 450_000, 4))):  # ("a", "zip") x ("b",)
        seed = os.urandom(32)
        dealer_key = curator.pairwise_key("party0.0", key, purpose=DEALER_PURPOSE)
        nonce, box = seal(dealer_key, seed, f"dealer|{call}|party0.0".encode())
        packet = pack("Request", sender=CURATOR, fields={
            "op": "product_open", "call": call, "r": ["a", "b", "zip"], "attrs": ["a", "zip"], "peer": "party0.1",
            "peer_key": peer_key.hex(), "nonce": nonce.hex(),
            "triple": {"role": 1, "n": n, "d1": d1, "d2": d2, "scale_bits": DEFAULT_SCALE_BITS}},
            arrays={"sealed_seed": np.frombuffer(box, dtype=np.uint8)})
        with pytest.raises(MessageError) as info:
            server.handle(packet)                # before: "... 1001 code(s) outside [0, 2) (e.g. 123456)"
        assert_clean(str(info.value))


# --------------------------------------------------------------------------- property: any measurement request
_POOL = ["a", "b", "c", "zip", "nope"]


@st.composite
def measure_requests(draw):
    r = draw(st.lists(st.sampled_from(_POOL), max_size=4))
    own = [x for x in r if x in ("a", "zip")]
    attrs = draw(st.one_of(st.just(own), st.just(r), st.lists(st.sampled_from(_POOL), max_size=3)))
    kind = draw(st.sampled_from(["count", "local_marginal", "indicators", "dump"]))
    variance = draw(st.one_of(st.floats(0.05, 1e4), st.sampled_from([0.0, -1.0, 1e-300, "4", None])))
    fields = {"op": "measure", "kind": kind, "attrs": attrs, "r": r, "variance": variance,
              "call": draw(st.one_of(st.integers(0, 10**6), st.sampled_from([-1, "0", 1.5])))}
    if isinstance(variance, float) and variance > 0 and math.isfinite(variance):
        fields["rho"] = draw(st.one_of(st.just(1.0 / (2.0 * variance)), st.floats(1e-6, 10.0)))
    extra = draw(st.dictionaries(st.sampled_from(["strides", "n_cells", "shape", "n"]), st.integers(0, 4), max_size=2))
    if kind == "indicators" and "zip" in attrs:   # a 1,237 x 150,000 matrix: legitimate but too large for a test
        kind = fields["kind"] = "count"
    return {**fields, **extra}


@SETTINGS
@given(fields=measure_requests())
def test_every_measurement_answer_has_the_noise_its_guard_charges(fields):
    server, _, _ = make_server()
    reply = answer_or_refusal(server, request(**fields))
    if reply is None:
        assert server.spent_rho == 0.0     # a refusal spends nothing
        return
    variance = float(fields["variance"])
    message = from_bytes(reply, domain=DOMAIN, expected={"sender": "party0.0"}).message
    assert math.isclose(server.spent_rho, 1.0 / (2.0 * variance), rel_tol=1e-12)
    assert message.variance == variance
    r = tuple(fields["r"])
    if isinstance(message, NoisyIndicators):
        own = tuple(a for a in r if a in ("a", "zip"))
        assert message.matrix.shape == (N, DOMAIN.size(own))
        released = message.matrix.size
    else:
        assert isinstance(message, (SliceCount, NoisyLocalMarginal)) and set(r) <= {"a", "zip"}
        assert message.values.shape == (DOMAIN.size(r),)
        released = message.values.size
    assert server.generator.draws >= released   # at least one random draw behind every released value


@SETTINGS
@given(variances=st.lists(st.floats(0.5, 50.0), min_size=1, max_size=12), repeat=st.booleans())
def test_the_guard_never_spends_past_its_budget_replays_included(variances, repeat):
    """Answers are charged one by one, replays included; the request that would pass the budget is refused."""
    server, _, _ = make_server(max_rho=1.0)
    answered = []
    for k, v in enumerate(variances):
        packet = request(op="measure", kind="count", attrs=["a"], r=["a"], variance=v, rho=1 / (2 * v),
                         call=0 if repeat else k)
        if answer_or_refusal(server, packet) is not None:
            answered.append(1 / (2 * v))
        assert server.spent_rho <= 1.0 * (1 + 1e-9)
    assert math.isclose(server.spent_rho, math.fsum(answered), rel_tol=1e-12)
    if math.fsum(1 / (2 * v) for v in variances) > 1.0 * (1 + 1e-9):
        assert len(answered) < len(variances)


def test_columns_it_does_not_hold_and_misnamed_attributes_are_refused():
    server, _, _ = make_server()
    cases = [
        dict(kind="count", attrs=["a"], r=["a", "b"]),            # it holds only "a" of r: no count alone
        dict(kind="local_marginal", attrs=["a"], r=["a", "b"]),
        dict(kind="count", attrs=["b"], r=["b"]),                 # a column of its slice-mate
        dict(kind="indicators", attrs=["a", "b"], r=["a", "b"]),  # attrs must be its own part of r
        dict(kind="count", attrs=["zip", "a"], r=["zip", "a"]),   # not in domain order
        dict(kind="count", attrs=["a", "a"], r=["a", "a"]),
        dict(kind="count", attrs=["a"], r=["a", "nope"]),
    ]
    for case in cases:
        with pytest.raises(MessageError) as info:
            server.handle(request(op="measure", variance=2.0, rho=0.25, call=0, **case))
        assert_clean(str(info.value))
    assert server.spent_rho == 0.0
    with pytest.raises(MessageError, match="does not give"):   # a budget claim its noise does not match
        server.handle(request(op="measure", kind="count", attrs=["a"], r=["a"], variance=2.0, rho=1.0, call=0))


# --------------------------------------------------------------------------- setup
def test_a_setup_for_another_job_is_refused_and_a_job_is_pinned_without_one():
    curator = SecureAggregationParty(CURATOR, SESSION)
    other_domain = Domain(["a", "b", "c", "zip"], [3, 4, 2, 200_000])
    others = {
        "domain": PartyJob.from_partition(other_domain, PARTITION, "party0.0"),
        "roster entry": PartyJob.from_partition(DOMAIN, HybridPartition.vertical(N + 4, [["a", "zip"], ["b", "c"]]),
                                                "party0.0"),
        "slice": PartyJob.from_partition(DOMAIN, HybridPartition.vertical(N, [["a", "zip"], ["b"], ["c"]]),
                                         "party0.0"),
    }
    for what, offered in others.items():
        server = PartyServer("party0.0", CODES["party0.0"], job=job_of("party0.0"))
        with pytest.raises(MessageError, match=f"setup's {what} differs") as info:
            server.handle(setup_request(offered, curator))
        assert_clean(str(info.value))
    pinned = PartyServer("party0.0", CODES["party0.0"])           # no job of its own: the first setup's is pinned
    pinned.handle(setup_request(job_of("party0.0"), curator))
    with pytest.raises(MessageError, match="setup's domain differs"):
        pinned.handle(setup_request(others["domain"], curator))
    with pytest.raises(MessageError, match="carries fields"):
        pinned.handle(setup_request(job_of("party0.0"), curator, strides=[1]))


def test_a_roster_size_that_does_not_fit_the_data_is_refused_without_quoting_it():
    curator = SecureAggregationParty(CURATOR, SESSION)
    wrong = PartyJob.from_partition(DOMAIN, HybridPartition.vertical(N + 4, [["a", "zip"], ["b", "c"]]), "party0.0")
    with pytest.raises(PartyDataError) as info:
        PartyServer("party0.0", CODES["party0.0"]).handle(setup_request(wrong, curator))
    assert_clean(str(info.value))


# --------------------------------------------------------------------------- the secure product
def _product_open_request(server, curator, key, peer_key, *, call=0, d=None, role=1, r=("a", "b", "zip"),
                          attrs=("a", "zip"), peer="party0.1", scale_bits=DEFAULT_SCALE_BITS) -> bytes:
    n, d1, d2 = d if d is not None else (N, 3 * 150_000, 4)
    seed = os.urandom(32)      # a fresh triple: a party refuses a seed it has used (its process's ledger)
    dealer_key = curator.pairwise_key(server.name, key, purpose=DEALER_PURPOSE)
    nonce, box = seal(dealer_key, seed, f"dealer|{call}|{server.name}".encode())
    return request(op="product_open", call=call, r=list(r), attrs=list(attrs), peer=peer, peer_key=peer_key.hex(),
                   nonce=nonce.hex(), triple={"role": role, "n": n, "d1": d1, "d2": d2, "scale_bits": scale_bits},
                   arrays={"sealed_seed": box})


@st.composite
def product_requests(draw):
    # Honest products here avoid "zip": its one-hot input (1,237 x 450,000 words) is legitimate but too large.
    return {"d": (draw(st.sampled_from([N, N - 1, N + 1, 0, 1])), draw(st.sampled_from([3, 8, 450_000, 1, 4])),
                  draw(st.sampled_from([4, 2, 8, 1, 3]))),
            "role": draw(st.sampled_from([1, 2, 0, 3])),
            "r": tuple(draw(st.sampled_from([("a", "b"), ("a", "c"), ("a", "b", "c"), ("a", "b", "zip"), ("a", "zip"),
                                             ("b",)]))),
            "attrs": tuple(draw(st.sampled_from([("a",), ("a", "zip"), ("zip",), ("b",)]))),
            "peer": draw(st.sampled_from(["party0.1", "party0.0", "mallory"])),
            "scale_bits": draw(st.sampled_from([DEFAULT_SCALE_BITS, 40, 32, 0, 48, 62]))}


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(deviation=product_requests())
def test_a_product_is_opened_only_with_the_layout_the_job_gives(deviation):
    server, curator, key = make_server()
    _, _, peer_key = make_server("party0.1")
    reply = answer_or_refusal(server, _product_open_request(server, curator, key, peer_key, **deviation))
    r, attrs = deviation["r"], deviation["attrs"]
    own = tuple(a for a in r if a in ("a", "zip"))
    other = tuple(a for a in r if a not in own)
    first, second = (own, other) if deviation["role"] == 1 else (other, own)
    honest = (deviation["peer"] == "party0.1" and attrs == own and other and deviation["role"] in (1, 2)
              and deviation["scale_bits"] in SCALE_BITS_CHOICES and set(other) <= {"b", "c"}
              and deviation["d"] == (N, DOMAIN.size(first), DOMAIN.size(second)) and "zip" not in r)
    assert (reply is not None) == bool(honest)
    assert server.spent_rho == 0.0     # opening releases nothing to the curator: the input is sealed for the peer


def _open_both(call=0, scale_bits=DEFAULT_SCALE_BITS):
    """Two servers of one slice with a product of ("a", "b") opened; returns what the share step needs."""
    s0, c0, k0 = make_server("party0.0")
    s1, c1, k1 = make_server("party0.1")
    opened = {}
    for server, curator, key, peer, peer_key, role, attrs in ((s0, c0, k0, "party0.1", k1, 1, ("a",)),
                                                             (s1, c1, k1, "party0.0", k0, 2, ("b",))):
        opened[server.name] = unpack(server.handle(_product_open_request(
            server, curator, key, peer_key, call=call, d=(N, 3, 4), role=role, r=("a", "b"), attrs=attrs,
            peer=peer, scale_bits=scale_bits)), kinds=("Sealed",))
    return s0, s1, k0, k1, opened


def _share_request(opened, *, call=0, peer="party0.1", r=("a", "b"), first=("a",), second=("b",),
                   participants=("party0.0", "party0.1"), keys=None, variance=2.0) -> bytes:
    sealed = opened[peer]
    return request(op="product_share", call=call, r=list(r), first=list(first), second=list(second),
                   variance=variance, round_id=0, participants=list(participants), public_keys=keys, peer=peer,
                   nonce=sealed.fields["nonce"], shape=sealed.fields["shape"],
                   arrays={"ciphertext": sealed.arrays["ciphertext"].tobytes()})


def test_a_product_share_is_refused_unless_it_continues_the_opened_product():
    """Unmasked shares (participants = itself), swapped keys, another layout or call: each refused, nothing spent."""
    s0, s1, k0, k1, opened = _open_both()
    keys = {"party0.0": k0.hex(), "party0.1": k1.hex()}
    stranger = SecureAggregationParty("party0.1", SESSION).public_key.hex()
    deviations = {
        "no mask": dict(participants=("party0.0",), keys={"party0.0": k0.hex()}),
        "a third participant": dict(participants=("party0.0", "party0.1", CURATOR),
                                    keys={**keys, CURATOR: stranger}),
        "the peer's key swapped": dict(keys={"party0.0": k0.hex(), "party0.1": stranger}),
        "another layout": dict(first=("b",), second=("a",)),
        "another marginal": dict(r=("a", "b", "c")),
        "another call": dict(call=5),
        "no budget claim it can check": dict(variance=-1.0),
    }
    for what, change in deviations.items():
        kwargs = {"keys": keys, **change}
        with pytest.raises(MessageError) as info:
            s0.handle(_share_request(opened, **kwargs))
        assert_clean(str(info.value)), what
        assert s0.spent_rho == 0.0, what
    reply = unpack(s0.handle(_share_request(opened, keys=keys)), kinds=("MaskedInput",))
    assert reply.arrays["values"].shape == (3, 4) and s0.spent_rho == pytest.approx(0.25, rel=1e-12)
    with pytest.raises(MessageError):                                # a replay of the share step: no product open
        s0.handle(_share_request(opened, keys=keys))
    assert s0.spent_rho == pytest.approx(0.25, rel=1e-12)


def test_a_relayed_input_is_read_only_at_the_size_and_ring_the_job_gives(monkeypatch):
    """3-byte words at scale_bits=40; a box of another size, or a ring too narrow for the party's noise, is refused.

    A request beyond the wire's default limit is read only up to the size the
    party's own layout gives its open product (roster size x cells x word bytes).
    """
    import skdpsynth.federated.wire as wire

    s0, s1, k0, k1, opened = _open_both(scale_bits=40)
    keys = {"party0.0": k0.hex(), "party0.1": k1.hex()}
    box = opened["party0.1"].arrays["ciphertext"]
    assert box.size == N * 4 * 3 + 16                      # F: N x 4 cells of "b", 3 bytes a word, the Poly1305 tag
    short = {**opened, "party0.1": type(opened["party0.1"])("Sealed", "party0.1", opened["party0.1"].fields,
                                                             {"ciphertext": box[:-3]})}
    with pytest.raises(MessageError, match="dimensions") as info:
        s0.handle(_share_request(short, keys=keys))
    with pytest.raises(MessageError, match="fixed point") as info:     # 12 sigma of 1e6 is beyond 2^23 / 3
        s0.handle(_share_request(opened, keys=keys, variance=1e12))
    assert_clean(str(info.value))
    assert s0.spent_rho == 0.0
    monkeypatch.setattr(wire, "MAX_BYTES", 4096)           # the honest request is now beyond the default limit
    padded = {**opened, "party0.1": type(opened["party0.1"])("Sealed", "party0.1", opened["party0.1"].fields,
                                                              {"ciphertext": np.concatenate([box, np.zeros(
                                                                  2 * 2**20, np.uint8)])})}
    with pytest.raises(MessageError, match="its public layout gives"):
        s0.handle(_share_request(padded, keys=keys))      # larger than the layout implies: not even read
    reply = unpack(s0.handle(_share_request(opened, keys=keys)), kinds=("MaskedInput",))
    assert reply.arrays["values"].shape == (3, 4) and s0.spent_rho == pytest.approx(0.25, rel=1e-12)


def test_unexpected_failures_reach_the_curator_without_their_text():
    """A failure inside the party (here: its codes broken after setup) reaches the curator as a bare refusal."""
    server, _, _ = make_server()
    server.party._codes = server.party._codes * 0 + 123456          # codes outside "a"'s domain: bincount would fail
    with pytest.raises(MessageError, match="could not answer") as info:
        server.handle(request(op="measure", kind="indicators", attrs=["a"], r=["a"], variance=2.0, rho=0.25, call=0))
    assert_clean(str(info.value))
    assert server.last_error is not None


# --------------------------------------------------------------------------- the secure k-party product
CHAIN_PARTITION = HybridPartition.vertical(N, [["a", "zip"], ["b"], ["c"]])
CHAIN_CODES = {"party0.0": CODES["party0.0"], "party0.1": CODES["party0.1"][:, :1],
               "party0.2": CODES["party0.1"][:, 1:]}
# ("a", "b", "c") in chain order: "b" (4 cells) first, then "a" (3) and "c" (2) in slice order.
CHAIN = {"parties": ["party0.1", "party0.0", "party0.2"], "n": N, "dims": [4, 3, 2], "scale_bits": DEFAULT_SCALE_BITS}


def _chain_server(name):
    curator = SecureAggregationParty(CURATOR, SESSION)
    job = PartyJob.from_partition(DOMAIN, CHAIN_PARTITION, name)
    server = SpiedServer(name, CHAIN_CODES[name], noise="curator", job=job)
    reply = unpack(server.handle(setup_request(job, curator, number=int(name[-1]))), kinds=("PublicKey",))
    return server, curator, bytes.fromhex(reply.fields["key"])


def _chain_open_request(server, curator, key, *, chain=CHAIN, attrs=("c",), r=("a", "b", "c"), share_words=None,
                        peers=("party0.0", "party0.1")):
    dealer_key = curator.pairwise_key(server.name, key, purpose=DEALER_PURPOSE)
    nonce, box = seal(dealer_key, os.urandom(32), f"chain-dealer|0|{server.name}".encode())
    arrays, extra = {"sealed_seed": box}, {}
    if share_words is not None:
        word = relay_word_bytes(chain["scale_bits"]) if chain["scale_bits"] in SCALE_BITS_CHOICES else 8
        share_nonce, arrays["sealed_share"] = seal(dealer_key, os.urandom(word * share_words),
                                                   f"chain-share|0|{server.name}".encode())
        extra["share_nonce"] = share_nonce.hex()
    peer_keys = {p: SecureAggregationParty(p, SESSION).public_key.hex() for p in peers}
    return request(op="chain_open", call=0, r=list(r), attrs=list(attrs), chain=chain, nonce=nonce.hex(),
                   peer_keys=peer_keys, arrays=arrays, **extra)


def test_a_k_party_product_is_opened_only_with_the_layout_the_job_gives():
    """Position 3 of a 3-party product: another order, shape, share size, marginal or peer set is refused."""
    honest = dict(share_words=N * 3 * 2)
    deviations = {
        "another order": dict(chain={**CHAIN, "parties": ["party0.0", "party0.1", "party0.2"]}, **honest),
        "other cells": dict(chain={**CHAIN, "dims": [4, 3, 150_000 * 2]}, **honest),
        "another roster size": dict(chain={**CHAIN, "n": N + 1}, share_words=(N + 1) * 6),
        "another scale": dict(chain={**CHAIN, "scale_bits": 0}, **honest),
        "columns it does not hold": dict(attrs=("b", "c"), **honest),
        "a marginal two parties hold": dict(r=("a", "c"), chain={**CHAIN, "parties": ["party0.0", "party0.2"]},
                                            **honest),
        "no explicit share": dict(),
        "an explicit share of another size": dict(share_words=N * 3 * 2 + 1),
        "a peer missing": dict(peers=("party0.1",), **honest),
    }
    for what, change in deviations.items():
        server, curator, key = _chain_server("party0.2")
        assert answer_or_refusal(server, _chain_open_request(server, curator, key, **change)) is None, what
        assert server.spent_rho == 0.0 and server.pending_chain is None, what
    server, curator, key = _chain_server("party0.2")
    reply = unpack(server.handle(_chain_open_request(server, curator, key, **honest)), kinds=("ChainBoxes",))
    # Its E_3 sealed for the holder of step 3 (position 2), nothing for the curator to read, nothing spent.
    assert [b["to"] for b in reply.fields["boxes"]] == ["party0.0"] and server.spent_rho == 0.0
    other, curator1, key1 = _chain_server("party0.0")            # position 2 takes no explicit share
    assert answer_or_refusal(other, _chain_open_request(other, curator1, key1, attrs=("a",), peers=(
        "party0.1", "party0.2"), share_words=N * 6)) is None


def test_a_k_party_step_is_refused_unless_it_continues_the_opened_product():
    server, curator, key = _chain_server("party0.2")
    step = dict(op="chain_step", call=0, r=["a", "b", "c"], round=1, variance=2.0, round_id=0,
                participants=CHAIN["parties"], public_keys={}, boxes=[])
    assert answer_or_refusal(server, request(**step)) is None                  # nothing opened
    server.handle(_chain_open_request(server, curator, key, share_words=N * 6))
    for change in (dict(round=0), dict(round=2), dict(call=1), dict(r=["a", "b", "c", "zip"]),
                   dict(boxes=[{"from": "party0.2", "nonce": "00" * 12}])):
        assert answer_or_refusal(server, request(**{**step, **change})) is None, change
    assert server.spent_rho == 0.0
