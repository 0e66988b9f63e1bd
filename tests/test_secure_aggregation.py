"""Pairwise-mask secure aggregation (skdpsynth.federated.secure_aggregation), issue 15.

Tolerances come from the fixed-point analysis in the module docstring: each
encoded value is off by at most 2^(−f−1), so a sum of n inputs by at most
n·2^(−f−1) per cell; float64 rounding (the reference sum, and the int64 → float64
conversion in decode when |Σ|·2^f > 2^53) adds at most n·eps·Σ|x| more.
Private keys are fixed (derived from SHA-256 of a label) so every run sees the
same masks; data come from seeded NumPy generators.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import pickle

import numpy as np
import pytest
from scipy import stats

from skdpsynth.federated.secure_aggregation import (
    DEFAULT_SCALE_BITS,
    MaskedInput,
    SecureAggregationError,
    SecureAggregationParty,
    aggregate,
    decode,
    encode,
    max_abs_value,
)

F = DEFAULT_SCALE_BITS


def _key(label: str) -> bytes:
    return hashlib.sha256(b"test-secure-aggregation/" + label.encode()).digest()


def _parties(names, session="sess-1"):
    return {n: SecureAggregationParty(n, session, private_key=_key(n)) for n in names}


def _keys(parties):
    return {n: p.public_key for n, p in parties.items()}


def _run(parties, vectors, round_id=0, scale_bits=F):
    keys, names = _keys(parties), sorted(parties)
    return {n: parties[n].mask(vectors[n], keys, round_id, participants=names, scale_bits=scale_bits)
            for n in names}


def _tolerance(vectors, scale_bits=F):
    n = len(vectors)
    abs_sum = np.sum([np.abs(v) for v in vectors.values()], axis=0)
    return n * 2.0 ** (-scale_bits - 1) + n * np.finfo(float).eps * abs_sum


# -- 1. correctness ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_parties, shape, scale_bits", [
    (3, (100_003,), F),
    (4, (100_003,), F),
    (4, (257, 129), 16),
])
def test_aggregate_equals_float_sum(n_parties, shape, scale_bits):
    rng = np.random.default_rng(15 + n_parties)
    names = [f"party{k}" for k in range(n_parties)]
    vectors = {n: rng.normal(0.0, 1_000.0, size=shape) for n in names}   # about half negative
    vectors[names[0]].flat[:10] = -max_abs_value(scale_bits, n_parties) / 2   # large negatives too
    total = aggregate(_run(_parties(names), vectors, scale_bits=scale_bits), expected=names)
    assert total.shape == shape
    truth = np.sum([vectors[n] for n in names], axis=0)
    err = np.abs(total - truth)
    assert np.all(err <= _tolerance(vectors, scale_bits))
    assert err.max() > 0          # the rounding is real, so the bound is what is being tested


def test_encode_decode_roundtrip_error_bound():
    x = np.random.default_rng(1).uniform(-1e6, 1e6, size=50_000)
    for f in (0, 8, 24, 40):
        assert np.all(np.abs(decode(encode(x, f), f) - x) <= 2.0 ** (-f - 1))
    assert encode([-1.0], 0).tolist() == [2**64 - 1]                  # two's complement


# -- 2. the curator's view -----------------------------------------------------------------------------

def _chi2_top_byte(values: np.ndarray) -> float:
    counts = np.bincount((values >> np.uint64(56)).astype(np.int64), minlength=256)
    expected = values.size / 256
    return float(np.sum((counts - expected) ** 2 / expected))


def test_masked_vector_is_uniform_and_reveals_nothing_alone():
    rng = np.random.default_rng(2017)
    names = ["alice", "bob", "carol"]
    n_cells = 65_536
    # Protocol A inputs: a slice count (mostly small, many zeros) plus a Gaussian noise share.
    vectors = {n: rng.poisson(0.5, n_cells) + rng.normal(0.0, 3.0, n_cells) for n in names}
    masked = _run(_parties(names), vectors)
    critical = stats.chi2.ppf(1 - 1e-6, df=255)
    for n in names:                       # first (adds only), middle (adds and subtracts), last (subtracts only)
        assert _chi2_top_byte(masked[n].values) < critical, n
    # the same test can fail: on the unmasked encoding it rejects overwhelmingly
    assert _chi2_top_byte(encode(vectors["bob"])) > 100 * critical
    # a lone masked vector decodes to garbage: for uniform int64 words, |decoded| < 2^30 has
    # probability 2·2^30·2^24/2^64 = 2^-9 per cell (about 128 of 65,536 cells, sd ≈ 11)
    lone = decode(masked["bob"].values)
    assert np.mean(np.abs(lone - vectors["bob"]) < 2.0 ** 30) < 0.01
    # yet all three together give the sum
    total = aggregate(masked, expected=names)
    assert np.all(np.abs(total - sum(vectors.values())) <= _tolerance(vectors))


# -- 3. aborted rounds -----------------------------------------------------------------------------------

@pytest.fixture()
def round3():
    names = ["alice", "bob", "carol"]
    rng = np.random.default_rng(3)
    vectors = {n: rng.normal(size=32) for n in names}
    return names, vectors, _parties(names)


def test_dropout_aborts_naming_the_party(round3):
    names, vectors, parties = round3
    masked = _run(parties, vectors)
    del masked["carol"]
    with pytest.raises(SecureAggregationError, match=r"no masked input from \['carol'\].*not implemented"):
        aggregate(masked, expected=names)


def test_unexpected_party_aborts(round3):
    names, vectors, parties = round3
    masked = _run(parties, vectors)
    with pytest.raises(SecureAggregationError, match=r"unexpected.*\['carol'\]"):
        aggregate(masked, expected=["alice", "bob"])


def test_shape_and_dtype_mismatch_abort(round3):
    names, vectors, parties = round3
    vectors = dict(vectors, bob=np.zeros(31))
    with pytest.raises(SecureAggregationError, match="different shapes"):
        aggregate(_run(parties, vectors), expected=names)
    parties = _parties(names)
    masked = _run(parties, dict(vectors, bob=np.zeros(32)))
    masked["bob"] = dataclasses.replace(masked["bob"], values=masked["bob"].values.astype(np.int64))
    with pytest.raises(SecureAggregationError, match=r"\['bob'\] are not uint64"):
        aggregate(masked, expected=names)


def test_sender_mismatch_aborts(round3):
    names, vectors, parties = round3
    masked = _run(parties, vectors)
    masked["alice"] = masked["bob"]
    with pytest.raises(SecureAggregationError, match=r"\['alice'\]"):
        aggregate(masked, expected=names)


def test_inconsistent_participant_lists_abort(round3):
    names, vectors, parties = round3
    keys = _keys(parties)
    # the curator tells bob the round is {alice, bob}, the others {alice, bob, carol}
    masked = {
        "alice": parties["alice"].mask(vectors["alice"], keys, 0, participants=names),
        "bob": parties["bob"].mask(vectors["bob"], {k: keys[k] for k in ("alice", "bob")}, 0,
                                   participants=["alice", "bob"]),
        "carol": parties["carol"].mask(vectors["carol"], keys, 0, participants=names),
    }
    with pytest.raises(SecureAggregationError, match=r"parties \['bob'\] masked for a participant list"):
        aggregate(masked, expected=names)


def test_tampered_public_key_aborts(round3):
    names, vectors, parties = round3
    keys = _keys(parties)
    mallory = SecureAggregationParty("mallory", "sess-1", private_key=_key("mallory"))
    tampered = dict(keys, carol=mallory.public_key)          # what the curator forwards to alice only
    masked = {"alice": parties["alice"].mask(vectors["alice"], tampered, 0, participants=names)}
    masked.update({n: parties[n].mask(vectors[n], keys, 0, participants=names) for n in ("bob", "carol")})
    with pytest.raises(SecureAggregationError, match=r"different public-key sets.*\[\['alice'\], \['bob', 'carol'\]\]"):
        aggregate(masked, expected=names)


def test_mask_rejects_an_inconsistent_local_view(round3):
    names, vectors, parties = round3
    keys, alice, v = _keys(parties), parties["alice"], vectors["alice"]
    with pytest.raises(SecureAggregationError, match=r"participants without a key: \['carol'\]"):
        alice.mask(v, {k: keys[k] for k in ("alice", "bob")}, 0, participants=names)
    with pytest.raises(SecureAggregationError, match=r"keys of non-participants: \['carol'\]"):
        alice.mask(v, keys, 0, participants=["alice", "bob"])
    with pytest.raises(SecureAggregationError, match="not in the participant list"):
        alice.mask(v, {k: keys[k] for k in ("bob", "carol")}, 0, participants=["bob", "carol"])
    with pytest.raises(SecureAggregationError, match="not this party's key"):
        alice.mask(v, dict(keys, alice=keys["bob"]), 0, participants=names)
    with pytest.raises(SecureAggregationError, match="same public key"):
        alice.mask(v, dict(keys, carol=keys["bob"]), 0, participants=names)
    with pytest.raises(SecureAggregationError, match="more than once"):
        alice.mask(v, keys, 0, participants=names + ["bob"])
    with pytest.raises(SecureAggregationError, match="at least 2"):
        alice.mask(v, {"alice": keys["alice"]}, 0, participants=["alice"])
    alice.mask(v, keys, 0, participants=names)             # none of the failures used up round 0


def test_round_reuse_refused(round3):
    names, vectors, parties = round3
    keys = _keys(parties)
    parties["alice"].mask(vectors["alice"], keys, 5, participants=names)
    with pytest.raises(SecureAggregationError, match="already masked an input in round 5"):
        parties["alice"].mask(np.zeros(32), keys, 5, participants=names)


# -- 4. fresh masks and pairwise keys -------------------------------------------------------------------

def test_masks_differ_across_rounds_and_sessions():
    names = ["alice", "bob", "carol"]
    zeros = {n: np.zeros(4_096) for n in names}
    r0 = _run(_parties(names), zeros, round_id=0)["alice"].values
    r1 = _run(_parties(names), zeros, round_id=1)["alice"].values
    other = _run(_parties(names, session="sess-2"), zeros, round_id=0)["alice"].values
    again = _run(_parties(names), zeros, round_id=0)["alice"].values
    assert np.array_equal(r0, again)                       # deterministic given keys, session and round
    # distinct 64-bit keystream words collide with probability 2^-64 per cell
    assert not np.any(r0 == r1) and not np.any(r0 == other)


def test_pairwise_key_symmetric_and_distinct():
    p = _parties(["alice", "bob", "carol"])
    k = {n: q.public_key for n, q in p.items()}
    ab = p["alice"].pairwise_key("bob", k["bob"], purpose="vertimrf-sketch")
    assert ab == p["bob"].pairwise_key("alice", k["alice"], purpose="vertimrf-sketch")
    assert len(ab) == 32
    distinct = {
        ab,
        p["alice"].pairwise_key("carol", k["carol"], purpose="vertimrf-sketch"),
        p["bob"].pairwise_key("carol", k["carol"], purpose="vertimrf-sketch"),
        p["alice"].pairwise_key("bob", k["bob"], purpose="other"),
        _parties(["alice", "bob"], session="sess-2")["alice"].pairwise_key("bob", k["bob"], purpose="vertimrf-sketch"),
        p["alice"]._mask_seed("bob", k["bob"], (0).to_bytes(8, "big")),      # the mask label is separate
    }
    assert len(distinct) == 6
    with pytest.raises(SecureAggregationError, match="itself"):
        p["alice"].pairwise_key("alice", k["alice"], purpose="x")


def test_party_refuses_pickling_and_copying():
    party = _parties(["alice"])["alice"]
    with pytest.raises(TypeError, match="private key"):
        pickle.dumps(party)
    with pytest.raises(TypeError, match="private key"):
        copy.deepcopy(party)
    assert "private" not in repr(party)


# -- 5. overflow guard ----------------------------------------------------------------------------------

def test_encode_overflow_guard():
    bound = max_abs_value(F)                                  # 2^(63−f)
    assert bound == 2.0 ** (63 - F)
    assert decode(encode([bound - 1.0, -(bound - 1.0)])).tolist() == [bound - 1.0, -(bound - 1.0)]
    for bad in (bound, -bound, 2 * bound):
        with pytest.raises(SecureAggregationError, match="overflow risk"):
            encode([0.0, bad])
    with pytest.raises(SecureAggregationError, match="overflow risk"):
        encode([bound / 4], n_parties=4)                      # 4 such inputs would overflow the sum
    with pytest.raises(SecureAggregationError, match="non-finite"):
        encode([1.0, np.nan, np.inf])


def test_mask_applies_the_overflow_guard_for_the_group_size():
    names = ["a", "b", "c", "d"]
    parties = _parties(names)
    with pytest.raises(SecureAggregationError, match="n_parties=4"):
        parties["a"].mask([max_abs_value(F, 4)], _keys(parties), 0, participants=names)


def test_masked_input_is_read_only():
    names = ["a", "b"]
    m = _run(_parties(names), {n: np.ones(3) for n in names})["a"]
    assert isinstance(m, MaskedInput) and m.values.dtype == np.uint64
    with pytest.raises(ValueError):
        m.values[0] = 0
