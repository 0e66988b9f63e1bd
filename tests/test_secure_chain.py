"""The secure k-party product (skdpsynth.federated.secure_chain): exact count + noise, schedule, refusals."""
import numpy as np
import pytest

pytest.importorskip("cryptography")

from skdpsynth.federated.secure_chain import (ChainDealer, ChainParty, chain_active, chain_receives,  # noqa: E402
                                              chain_sends, secure_chain_product)
from skdpsynth.federated.secure_product import SecureProductError  # noqa: E402


def _exact(codes, dims):
    counts = np.bincount(np.ravel_multi_index(tuple(codes), dims), minlength=int(np.prod(dims)))
    return counts.reshape(dims[0], -1)


@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_count_plus_noise_is_exact(k, seed):
    rng = np.random.default_rng(100 * k + seed)
    n = int(rng.integers(1, 80))
    dims = [int(d) for d in rng.integers(1, 6, k)]
    codes = [rng.integers(0, d, n) for d in dims]
    width = int(np.prod(dims[1:]))
    noises = [rng.integers(-10**6, 10**6, (dims[0], width)) for _ in range(k)]   # integer shares, as RandDPGen's
    got = secure_chain_product(codes, dims, noises=noises)
    np.testing.assert_array_equal(got, _exact(codes, dims) + sum(noises))


def test_the_schedule_delivers_every_matrix_once_before_it_is_read():
    for k in range(3, 7):
        sent = {}                                    # (sender, recipient) -> round sent
        for t in range(k):
            for p in range(1, k + 1):
                for q in chain_sends(k, p, t):
                    assert (p, q) not in sent        # one matrix per ordered pair
                    sent[(p, q)] = t
        read = {}
        for t in range(k):
            for p in range(1, k + 1):
                assert chain_receives(k, p, t) == () or chain_active(k, p, t)
                for q in chain_receives(k, p, t):
                    assert sent[(q, p)] < t          # sent in an earlier round
                    read[(q, p)] = t
        assert read.keys() == sent.keys()            # and every one is read


def test_dealer_and_party_refusals():
    with pytest.raises(SecureProductError, match="must differ"):
        ChainDealer(4, (2, 2, 2), seeds=[bytes(32)] * 3)
    with pytest.raises(SecureProductError, match="at least three parties"):
        ChainDealer(4, (2, 2))
    dealer = ChainDealer(4, (2, 3, 2))
    messages = dealer.seeds()
    with pytest.raises(SecureProductError, match="already handed out"):
        dealer.seeds()
    ledger = set()
    with pytest.raises(SecureProductError, match="explicit triple share"):
        ChainParty(messages[2], [0, 1, 1, 0], ledger=ledger)                 # position 3 needs its share
    share = dealer.explicit_share(3)
    assert share.shape == (4, 6) and share.dtype == np.uint64
    with pytest.raises(SecureProductError, match="handed out once"):
        dealer.explicit_share(3)
    first = ChainParty(messages[0], [0, 1, 1, 0], ledger=ledger)
    with pytest.raises(SecureProductError, match="already used"):
        ChainParty(messages[0], [0, 1, 1, 0], ledger=ledger)                 # a seed serves one product
    with pytest.raises(SecureProductError, match="codes outside"):
        ChainParty(messages[1], [0, 3, 1, 0], ledger=set())
    first.open()
    with pytest.raises(SecureProductError, match=r"expects in round 2 the matrices of positions \[2, 3\]"):
        first.step({})                                                       # position 1 acts last, on F'_2, F'_3
    second = ChainParty(messages[1], [0, 2, 1, 0], ledger=ledger)
    second.open()
    with pytest.raises(SecureProductError, match="expects in round 1"):
        second.step({1: np.zeros((4, 2), np.uint64)})                        # E_3 is missing
    with pytest.raises(SecureProductError, match="shape"):
        second.step({1: np.zeros((4, 2), np.uint64), 3: np.zeros((5, 2), np.uint64)})
