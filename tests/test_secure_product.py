"""Secure two-party one-hot product with a trusted dealer (skdpsynth.federated.secure_product).

Dealer seeds and secure-aggregation keys are derived from SHA-256 of labels, data
from seeded NumPy generators, so every run sees the same messages.  Each test
uses its own seed ledger.  Rounding bound (module docstring): two noise
encodings, each off by at most 2^(−f−1), plus float64 rounding of the decoded sum.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
from scipy import stats

from skdpsynth.federated.secure_aggregation import (
    DEFAULT_SCALE_BITS,
    SecureAggregationError,
    SecureAggregationParty,
    aggregate,
    aggregate_encoded,
    decode,
    encode,
    keystream_words,
)
from skdpsynth.federated.secure_product import (
    ProductDealer,
    ProductParty,
    SecureProductError,
    TripleSeed,
    secure_product,
)

F = DEFAULT_SCALE_BITS
CRITICAL = stats.chi2.ppf(1 - 1e-6, df=255)


def _seed(label: str) -> bytes:
    return hashlib.sha256(b"test-secure-product/" + label.encode()).digest()


def _seeds(label: str):
    return _seed(label + "/A"), _seed(label + "/B")


def _data(n, d1, d2, seed):
    rng = np.random.default_rng(seed)
    # skewed codes, so the count matrix is not flat
    c1 = np.minimum(rng.geometric(0.3, n) - 1, d1 - 1)
    c2 = rng.integers(0, d2, n)
    return c1, c2


def _exact(c1, c2, d1, d2):
    return np.bincount(c1 * d2 + c2, minlength=d1 * d2).reshape(d1, d2).astype(np.float64)


def _chi2_top_byte(values: np.ndarray) -> float:
    counts = np.bincount((np.ravel(values) >> np.uint64(56)).astype(np.int64), minlength=256)
    expected = values.size / 256
    return float(np.sum((counts - expected) ** 2 / expected))


# -- 1. correctness ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, d1, d2", [(20_000, 16, 9), (1, 3, 4), (1, 1, 1), (257, 2, 31), (5_000, 64, 1)])
def test_zero_noise_gives_the_exact_count(n, d1, d2):
    c1, c2 = _data(n, d1, d2, seed=n + d1 + d2)
    out = secure_product(c1, d1, c2, d2, dealer_seeds=_seeds(f"exact/{n}/{d1}/{d2}"), ledger=set())
    assert out.noisy_counts.shape == (d1, d2)
    assert np.array_equal(out.noisy_counts, _exact(c1, c2, d1, d2))       # exact, not approximately


@pytest.mark.parametrize("scale_bits", [F, 16])
def test_noise_shares_are_added_within_the_rounding_bound(scale_bits):
    n, d1, d2 = 20_000, 16, 9
    c1, c2 = _data(n, d1, d2, seed=7)
    rng = np.random.default_rng(8)
    noise1, noise2 = rng.normal(0, 50.0, (d1, d2)), rng.normal(0, 50.0, (d1, d2))
    out = secure_product(c1, d1, c2, d2, noise1=noise1, noise2=noise2, scale_bits=scale_bits,
                         dealer_seeds=_seeds(f"noise/{scale_bits}"), ledger=set())
    truth = _exact(c1, c2, d1, d2) + noise1 + noise2
    err = np.abs(out.noisy_counts - truth)
    bound = 2.0 ** -scale_bits + 4 * np.finfo(float).eps * (np.abs(truth) + np.abs(noise1) + np.abs(noise2))
    assert np.all(err <= bound)
    assert err.max() > 0                   # the rounding is real


def test_step_by_step_matches_the_algebra():
    n, d1, d2 = 300, 5, 7
    c1, c2 = _data(n, d1, d2, seed=3)
    sa, sb = _seeds("algebra")
    dealer = ProductDealer(n, d1, d2, scale_bits=0, seeds=(sa, sb))
    m1, m2 = dealer.seeds()
    ledger = set()
    p1, p2 = ProductParty(m1, c1, ledger=ledger), ProductParty(m2, c2, ledger=ledger)
    e, f = p1.masked_input(), p2.masked_input()
    a = keystream_words(sa, n * d1).reshape(n, d1)
    b = keystream_words(sb, n * d2).reshape(n, d2)
    v1, v2 = np.eye(d1, dtype=np.uint64)[c1], np.eye(d2, dtype=np.uint64)[c2]
    assert np.array_equal(e + a, v1) and np.array_equal(f + b, v2)          # mod 2^64
    s1, s2 = p1.share(f), p2.share(e)
    assert np.array_equal(s1, a.T @ f) and np.array_equal(s2, e.T @ b + e.T @ f)
    assert np.array_equal(s1 + s2 + a.T @ b, v1.T @ v2)


# -- 2. what the parties receive -----------------------------------------------------------------------

def test_parties_receive_uniform_words():
    n, d1, d2 = 20_000, 16, 9
    c1, c2 = _data(n, d1, d2, seed=11)
    out = secure_product(c1, d1, c2, d2, dealer_seeds=_seeds("uniform"), ledger=set())
    e, f = out.received_by_party2, out.received_by_party1
    assert e.shape == (n, d1) and f.shape == (n, d2)
    assert _chi2_top_byte(e) < CRITICAL
    assert _chi2_top_byte(f) < CRITICAL
    # the test can fail: on V1 itself (all top bytes 0) it rejects overwhelmingly
    v1 = np.eye(d1, dtype=np.uint64)[c1]
    assert _chi2_top_byte(v1) > 100 * CRITICAL
    # and E is not V1 shifted by a constant: its low bits are uniform too
    low = (e & np.uint64(0xFF)).astype(np.int64)
    counts = np.bincount(low.ravel(), minlength=256)
    assert float(np.sum((counts - e.size / 256) ** 2 / (e.size / 256))) < CRITICAL


# -- 3. what the curator receives ----------------------------------------------------------------------

def test_curator_sees_only_masked_shares_and_their_sum():
    n, d1, d2 = 5_000, 64, 32
    c1, c2 = _data(n, d1, d2, seed=12)
    rng = np.random.default_rng(13)
    noise1, noise2 = rng.normal(0, 3.0, (d1, d2)), rng.normal(0, 3.0, (d1, d2))
    sa, sb = _seeds("curator")
    dealer = ProductDealer(n, d1, d2, seeds=(sa, sb))
    m1, m2 = dealer.seeds()
    ledger = set()
    p1, p2 = ProductParty(m1, c1, ledger=ledger), ProductParty(m2, c2, ledger=ledger)
    e, f = p1.masked_input(), p2.masked_input()
    shares = {"p1": p1.share(f, noise1), "p2": p2.share(e, noise2)}
    names = ["p1", "p2"]
    sap = {nm: SecureAggregationParty(nm, "curator-test", private_key=_seed("key/" + nm)) for nm in names}
    keys = {nm: p.public_key for nm, p in sap.items()}
    masked = {nm: sap[nm].mask_encoded(shares[nm], keys, 0, participants=names) for nm in names}
    for nm in names:
        assert masked[nm].values.shape == (d1, d2) and masked[nm].values.dtype == np.uint64
        assert _chi2_top_byte(masked[nm].values) < CRITICAL
        # a lone masked share decodes to garbage, far from the party's share S_j·2^f + enc(noise_j):
        # |difference| < 2^30 has probability 2^-9 per cell for uniform words (about 4 of 2,048 cells)
        lone = decode(masked[nm].values)
        assert np.mean(np.abs(lone - decode(shares[nm])) < 2.0 ** 30) < 0.02
    # without the masks, the share would be what the curator must not see (S1 = Aᵀ(V2 − B), A and B known)
    assert not np.array_equal(masked["p1"].values, shares["p1"])
    total = aggregate_encoded(masked, expected=names)
    result = dealer.finish(total)
    truth = _exact(c1, c2, d1, d2) + noise1 + noise2
    assert np.all(np.abs(result - truth) <= 2.0 ** -F + 1e-12 * np.abs(truth))
    # the plain sum of the shares is still masked by Z, so aggregate() (decoding early) is garbage
    early = aggregate(masked, expected=names)
    assert np.mean(np.abs(early - truth) < 2.0 ** 30) < 0.02


# -- 4. errors -----------------------------------------------------------------------------------------

def test_mismatched_n_is_refused():
    n, d1, d2 = 100, 4, 3
    c1, c2 = _data(n, d1, d2, seed=21)
    m1, m2 = ProductDealer(n, d1, d2, seeds=_seeds("mismatch")).seeds()
    with pytest.raises(SecureProductError, match="mismatched n"):
        ProductParty(m2, c2[:-1], ledger=set())
    p1 = ProductParty(m1, c1, ledger=set())
    m1b, m2b = ProductDealer(n - 1, d1, d2, seeds=_seeds("mismatch-short")).seeds()
    short = ProductParty(m2b, c2[:-1], ledger=set()).masked_input()
    with pytest.raises(SecureProductError, match="mismatched n"):
        p1.share(short)
    with pytest.raises(SecureProductError, match="mismatched n"):
        secure_product(c1, d1, c2[:-1], d2, ledger=set())


@pytest.mark.parametrize("bad, match", [
    (lambda c: np.where(np.arange(c.size) == 5, 4, c), r"outside \[0, 4\)"),       # == d1
    (lambda c: np.where(np.arange(c.size) == 5, -1, c), r"outside \[0, 4\)"),
    (lambda c: c.astype(float), "must be integers"),
    (lambda c: c.reshape(10, 10), "must be 1-D"),
])
def test_codes_out_of_range_are_refused(bad, match):
    c1, _ = _data(100, 4, 3, seed=22)
    m1, _ = ProductDealer(100, 4, 3).seeds()
    with pytest.raises(SecureProductError, match=match):
        ProductParty(m1, bad(c1), ledger=set())


def test_reusing_a_triple_is_refused():
    n, d1, d2 = 50, 3, 2
    c1, c2 = _data(n, d1, d2, seed=23)
    seeds = _seeds("reuse")
    dealer = ProductDealer(n, d1, d2, seeds=seeds)
    m1, m2 = dealer.seeds()
    with pytest.raises(SecureProductError, match="already handed out"):
        dealer.seeds()
    ledger = set()
    p1, p2 = ProductParty(m1, c1, ledger=ledger), ProductParty(m2, c2, ledger=ledger)
    # a second product with the same seed (same dealer message, or a dealer replaying the seeds) is refused
    with pytest.raises(SecureProductError, match="already used"):
        ProductParty(m1, c1[::-1].copy(), ledger=ledger)
    replay1, _ = ProductDealer(n, d1, d2, seeds=seeds).seeds()
    with pytest.raises(SecureProductError, match="already used"):
        ProductParty(replay1, c1, ledger=ledger)
    e, f = p1.masked_input(), p2.masked_input()
    s1 = p1.share(f)
    with pytest.raises(SecureProductError, match="already computed"):
        p1.share(f)
    s2 = p2.share(e)
    total = s1 + s2                     # (aggregation skipped: only the dealer's single use is tested here)
    assert np.array_equal(dealer.finish(total), _exact(c1, c2, d1, d2))
    with pytest.raises(SecureProductError, match="already finished"):
        dealer.finish(total)
    with pytest.raises(SecureProductError, match="must differ"):
        ProductDealer(n, d1, d2, seeds=(seeds[0], seeds[0]))


def test_other_refusals():
    dealer = ProductDealer(10, 3, 2)
    with pytest.raises(SecureProductError, match="uint64"):
        dealer.finish(np.zeros((3, 2)))                    # decoded too early (aggregate instead of aggregate_encoded)
    with pytest.raises(SecureProductError, match="shape"):
        dealer.finish(np.zeros((2, 3), dtype=np.uint64))
    with pytest.raises(SecureProductError, match="n must be >= 1"):
        ProductDealer(0, 3, 2)
    with pytest.raises(SecureProductError, match="lower scale_bits"):
        ProductDealer(2**20, 3, 2, scale_bits=62)
    m1, m2 = dealer.seeds()
    p1 = ProductParty(m1, np.zeros(10, dtype=int), ledger=set())
    with pytest.raises(SecureProductError, match="noise has shape"):
        p1.share(np.zeros((10, 2), dtype=np.uint64), noise=np.zeros((2, 3)))
    with pytest.raises(SecureAggregationError, match="cannot encode"):
        p1.share(np.zeros((10, 2), dtype=np.uint64), noise=np.full((3, 2), 2.0 ** 40))
    assert "seed" not in repr(m1) and isinstance(m1, TripleSeed)
    with pytest.raises(TypeError):
        import pickle
        pickle.dumps(dealer)


def test_mask_encoded_requires_uint64_and_matches_mask():
    names = ["a", "b"]
    ps = {n: SecureAggregationParty(n, "me", private_key=_seed("me/" + n)) for n in names}
    keys = {n: p.public_key for n, p in ps.items()}
    with pytest.raises(SecureAggregationError, match="uint64"):
        ps["a"].mask_encoded(np.zeros(3), keys, 0, participants=names)
    x = np.array([1.5, -2.25, 3.0])
    via_mask = ps["a"].mask(x, keys, 1, participants=names)
    ps2 = SecureAggregationParty("a", "me", private_key=_seed("me/a"))
    via_encoded = ps2.mask_encoded(encode(x, n_parties=2), keys, 1, participants=names)
    assert np.array_equal(via_mask.values, via_encoded.values)
    with pytest.raises(SecureAggregationError, match="already masked"):
        ps2.mask_encoded(encode(x), keys, 1, participants=names)


@pytest.mark.parametrize("n, p, q", [(1, 1, 1), (300, 3, 50), (300, 9, 20), (2000, 40, 33), ((1 << 20) + 3, 8, 16)])
def test_matmul_t_mod64_equals_the_wrapping_integer_product(n, p, q):
    """The BLAS limb product is exact modulo 2^64, across the 2^20-row blocks and at the extreme words."""
    from skdpsynth.federated.secure_product import matmul_t_mod64

    rng = np.random.default_rng(n + p + q)
    a = rng.integers(0, 2**64, size=(n, p), dtype=np.uint64)
    b = rng.integers(0, 2**64, size=(n, q), dtype=np.uint64)
    a[: min(n, 5)] = np.uint64(2**64 - 1)          # all-ones limbs: the largest partial sums
    b[: min(n, 5)] = np.uint64(2**64 - 1)
    np.testing.assert_array_equal(matmul_t_mod64(a, b), a.T @ b)


def test_the_32_bit_relay_gives_the_same_exact_count_plus_integer_noise():
    """scale_bits=32: E and F travel as uint32 (half the bytes), and count + integer noise is still exact."""
    from skdpsynth.federated.secure_product import product_scale_bits, relay_dtype

    c1, c2 = _data(3000, 7, 5, seed=11)
    rng = np.random.default_rng(12)
    noise1, noise2 = rng.integers(-10**6, 10**6, (7, 5)), rng.integers(-10**6, 10**6, (7, 5))
    wide = secure_product(c1, 7, c2, 5, noise1=noise1, noise2=noise2, dealer_seeds=_seeds("r64"), ledger=set())
    half = secure_product(c1, 7, c2, 5, noise1=noise1, noise2=noise2, scale_bits=32, dealer_seeds=_seeds("r32"),
                          ledger=set())
    want = _exact(c1, c2, 7, 5) + noise1 + noise2
    np.testing.assert_array_equal(wide.noisy_counts, want)
    np.testing.assert_array_equal(half.noisy_counts, want)
    assert half.received_by_party1.dtype == np.uint32 and half.received_by_party2.dtype == np.uint32
    assert half.received_by_party2.nbytes * 2 == wide.received_by_party2.nbytes
    # Uniform to its receiver: the top byte of E's 32-bit words (3000 x 7 of them) passes the chi-square test.
    assert _chi2_top_byte(half.received_by_party2.astype(np.uint64) << np.uint64(32)) < CRITICAL
    # The ring is a function of public quantities: n and the noise shares' variances.
    assert product_scale_bits(3000, [4.0, 9.0]) == 40 and relay_dtype(32) == np.uint32
    assert product_scale_bits(3000, [(2**23 / 3 / 12) ** 2, 1.0]) == 32         # 12 sigma: not in 24 bits
    assert product_scale_bits(2**31 // 3 + 1, [1.0, 1.0]) == F               # counts would not fit
    assert product_scale_bits(3000, [(2**31 / 3 / 12) ** 2, 1.0]) == F         # 12 sigma of a share would not fit
    p1 = ProductParty(ProductDealer(4, 3, 2, scale_bits=32).seeds()[0], [0, 1, 1, 2], ledger=set())
    with pytest.raises(SecureProductError, match="must be uint32"):
        p1.share(np.zeros((4, 2), dtype=np.uint64))


def test_three_byte_words_at_40_fraction_bits_give_the_same_exact_count_plus_integer_noise():
    """scale_bits=40: E and F cross as 3-byte words (pack_words), and count + integer noise is still exact."""
    from skdpsynth.federated.secure_aggregation import SecureAggregationParty, aggregate_encoded
    from skdpsynth.federated.secure_product import pack_words, relay_word_bytes, unpack_words

    c1, c2 = _data(3000, 7, 5, seed=13)
    rng = np.random.default_rng(14)
    noise1, noise2 = rng.integers(-10**6, 10**6, (7, 5)), rng.integers(-10**6, 10**6, (7, 5))
    dealer = ProductDealer(3000, 7, 5, scale_bits=40, seeds=_seeds("r24"))
    to1, to2 = dealer.seeds()
    p1, p2 = ProductParty(to1, c1, ledger=set()), ProductParty(to2, c2, ledger=set())
    wire_e, wire_f = pack_words(p1.masked_input(), 40), pack_words(p2.masked_input(), 40)
    assert len(wire_e) == 3000 * 7 * relay_word_bytes(40) == 3000 * 7 * 3
    e, f = unpack_words(wire_e, 40, (3000, 7)), unpack_words(wire_f, 40, (3000, 5))
    assert not np.array_equal(e, p1.masked_input())          # the top byte of each word did not cross...
    shares = {"p1": p1.share(f, noise1), "p2": p2.share(e, noise2)}
    sa = {n: SecureAggregationParty(n, "r24") for n in shares}
    keys = {n: p.public_key for n, p in sa.items()}
    masked = {n: sa[n].mask_encoded(shares[n], keys, 0, participants=list(sa), scale_bits=40) for n in sa}
    got = dealer.finish(aggregate_encoded(masked, expected=list(sa)))
    np.testing.assert_array_equal(got, _exact(c1, c2, 7, 5) + noise1 + noise2)   # ...and is not needed
    # The low 24 bits of E are uniform to party 2: the top byte of each 3-byte word passes the chi-square test.
    assert _chi2_top_byte(e.astype(np.uint64) << np.uint64(40)) < CRITICAL
    with pytest.raises(SecureProductError, match="takes 63000 bytes"):
        unpack_words(wire_e[:-1], 40, (3000, 7))
