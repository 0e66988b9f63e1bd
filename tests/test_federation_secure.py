"""Federation(secure_computation="cryptographic"): protocol A with real cryptography."""
import numpy as np
import pytest

pytest.importorskip("cryptography")

from skdpsynth import Domain  # noqa: E402
from skdpsynth.federated import Federation, HybridPartition, combine  # noqa: E402
from skdpsynth.federated.parties import Party  # noqa: E402
from skdpsynth.privacy import ReproducibleNoiseWarning  # noqa: E402

COLUMNS = ["a", "b", "c", "d"]
SIZES = [2, 3, 4, 2]
# a: held alone; (a, b): one party; (b, c) and (a, c): split; (a, b, c), (b, c, d): 3-way split over two parties
MARGINALS = [("a",), ("c",), ("a", "b"), ("b", "c"), ("a", "c"), ("a", "b", "c"), ("b", "c", "d"), ("c", "d")]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    dom = Domain(COLUMNS, SIZES)
    codes = np.column_stack([rng.integers(0, k, 60) for k in SIZES])
    return dom, codes


def _exact(codes, dom, attrs):
    r = dom.canonical(attrs)
    idx = np.ravel_multi_index(tuple(codes[:, dom.index(a)] for a in r), dom.shape_of(r))
    return np.bincount(idx, minlength=dom.size(r))


def _both(codes, dom, part, seed=3):
    sim = Federation.from_codes(codes, dom, part, seed=seed)
    cry = Federation.from_codes(codes, dom, part, seed=seed, secure_computation="cryptographic")
    return sim, cry


def _check_agree(sim, cry, dom, marginals, rho=0.5):
    for attrs in marginals:
        rs, rc = sim.measure(attrs, rho), cry.measure(attrs, rho)
        vs, var_s = combine(rs, dom)
        vc, var_c = combine(rc, dom)
        np.testing.assert_allclose(vc, vs, rtol=0, atol=1e-6, err_msg=str(attrs))
        assert np.array_equal(np.asarray(var_c), np.asarray(var_s)), attrs
        assert rc.party_rhos() == rs.party_rhos()
        assert [p.variance for p in rc.parts] == [p.variance for p in rs.parts]


@pytest.mark.parametrize("column_groups", [[["a", "b"], ["c", "d"]], [["c"], ["a", "b", "d"]]])
def test_grid_cryptographic_matches_simulated(data, column_groups):
    dom, codes = data
    part = HybridPartition.grid(len(codes), COLUMNS, n_slices=2, column_groups=column_groups, random_state=1)
    sim, cry = _both(codes, dom, part)
    _check_agree(sim, cry, dom, MARGINALS)


def test_grid_tiny_noise_gives_exact_counts(data):
    dom, codes = data
    part = HybridPartition.grid(len(codes), COLUMNS, n_slices=2, column_groups=[["a", "b"], ["c", "d"]],
                                random_state=1)
    cry = Federation.from_codes(codes, dom, part, seed=0, secure_computation="cryptographic")
    for attrs in MARGINALS:
        values, _ = combine(cry.measure(attrs, rho=1e9), dom)
        assert np.round(values).astype(int).tolist() == _exact(codes, dom, attrs).tolist(), attrs


def test_secure_computation_stored_and_default(data):
    dom, codes = data
    part = HybridPartition.vertical(len(codes), [["a", "b"], ["c", "d"]])
    assert Federation.from_codes(codes, dom, part).secure_computation == "simulated"
    fed = Federation.from_codes(codes, dom, part, secure_computation="cryptographic")
    assert fed.secure_computation == "cryptographic"
    assert len({p.public_key for p in fed.parties}) == len(fed.parties)   # one key pair per party


def test_horizontal_only(data):
    dom, codes = data
    part = HybridPartition.horizontal(len(codes), COLUMNS, n_slices=3, random_state=2)
    sim, cry = _both(codes, dom, part)
    _check_agree(sim, cry, dom, MARGINALS)
    # one party per slice: no cryptography needed, identical bytes
    r_s, r_c = sim.measure(("a", "c"), 1.0), cry.measure(("a", "c"), 1.0)
    assert all(np.array_equal(x.values, y.values) for x, y in zip(r_s.parts, r_c.parts))


def test_vertical_only(data):
    dom, codes = data
    part = HybridPartition.vertical(len(codes), [["a", "c"], ["b", "d"]])
    sim, cry = _both(codes, dom, part)
    _check_agree(sim, cry, dom, MARGINALS)


def test_indicator_protocol_unchanged(data):
    dom, codes = data
    part = HybridPartition.vertical(len(codes), [["a", "c"], ["b", "d"]])
    sim, cry = _both(codes, dom, part)
    vs, _ = combine(sim.measure(("a", "b"), 1.0, protocol="indicator"), dom)
    vc, _ = combine(cry.measure(("a", "b"), 1.0, protocol="indicator"), dom)
    assert np.array_equal(vs, vc)


def test_invalid_secure_computation(data):
    dom, codes = data
    part = HybridPartition.vertical(len(codes), [["a", "b"], ["c", "d"]])
    with pytest.raises(ValueError, match="secure_computation"):
        Federation.from_codes(codes, dom, part, secure_computation="homomorphic")


@pytest.mark.parametrize("column_groups", [[["a"], ["b"], ["c", "d"]], [["d"], ["c"], ["b"], ["a"]]])
def test_three_or_more_parties_in_a_slice_run_the_k_party_product(data, column_groups):
    """Marginals split among 3 and 4 parties of a slice: exactly the simulated mode's counts, variances and ledger."""
    dom, codes = data
    part = HybridPartition.grid(len(codes), COLUMNS, n_slices=2, column_groups=column_groups, random_state=0)
    sim, cry = _both(codes, dom, part)
    marginals = [("a", "b", "c"), ("a", "b", "c", "d"), ("b", "c", "d"), ("a", "b"), ("c", "d"), ("a",)]
    for attrs in marginals:
        rs, rc = sim.measure(attrs, 0.5), cry.measure(attrs, 0.5)
        # Integer counts and integer noise shares: the ring holds them exactly, so the releases are identical.
        assert np.array_equal(combine(rc, dom)[0], combine(rs, dom)[0]), attrs
        assert rc.party_rhos() == rs.party_rhos() and [p.variance for p in rc.parts] == [p.variance for p in rs.parts]
    tiny = Federation.from_codes(codes, dom, part, seed=0, secure_computation="cryptographic")
    values, _ = combine(tiny.measure(("a", "b", "c", "d"), 1e9), dom)     # noise sd ~ 1e-4: rounds to the count
    assert np.round(values).astype(int).tolist() == _exact(codes, dom, ("a", "b", "c", "d")).tolist()


def test_curator_never_receives_per_record_indices(data, monkeypatch):
    dom, codes = data
    part = HybridPartition.grid(len(codes), COLUMNS, n_slices=2, column_groups=[["a", "b"], ["c", "d"]],
                                random_state=1)
    sim = Federation.from_codes(codes, dom, part, seed=5)
    expected = [combine(sim.measure(attrs, 1.0), dom)[0] for attrs in MARGINALS]

    def forbidden(*args, **kwargs):
        raise AssertionError("per-record index parts were requested in cryptographic mode")

    monkeypatch.setattr(Party, "secure_sum_input", forbidden)
    cry = Federation.from_codes(codes, dom, part, seed=5, secure_computation="cryptographic")
    for attrs, want in zip(MARGINALS, expected):
        reply = cry.measure(attrs, 1.0)
        np.testing.assert_allclose(combine(reply, dom)[0], want, rtol=0, atol=1e-6)
        for msg in reply.parts:       # only per-cell counts reach the curator
            assert np.shape(msg.values) == (dom.size(reply.attrs),)
    with pytest.raises(AssertionError, match="per-record"):   # the simulated path does use it
        sim.measure(("a", "c"), 1.0)


def test_hybrid_synthesizer_cryptographic_fit_matches_the_simulated_one():
    """HybridSynthesizer(secure_computation=...) on a K = S = 2 grid: same selections, models equal to rounding."""
    from skdpsynth import HybridSynthesizer
    from skdpsynth.datasets import load_adult

    adult = load_adult(discretized=True)
    columns = ["age", "workclass", "education-num", "marital-status", "sex", "income>50K"]
    X = adult.frame[columns].iloc[:4000]
    domain = adult.domain.project(columns).to_dict()
    fits = {}
    for mode in ("simulated", "cryptographic"):
        with pytest.warns(ReproducibleNoiseWarning):
            fits[mode] = HybridSynthesizer(
                1.0, domain=domain, partition={"n_slices": 2, "n_vertical": 2}, max_rounds=8, max_iters=200,
                final_iters=3000, tol=1e-12, secure_computation=mode, random_state=0).fit(X)
    simulated, cryptographic = fits["simulated"], fits["cryptographic"]
    assert cryptographic.selected_ == simulated.selected_
    for a, b in zip(simulated.measurements_, cryptographic.measurements_):
        assert a.clique == b.clique and a.sigma == b.sigma
        # Fixed point: 24 fractional bits per noise share, a few shares per cell.
        np.testing.assert_allclose(b.values, a.values, rtol=0, atol=1e-6)
    # The estimator is deterministic given its measurements, which agree to 1e-6.  Unconverged, its stopping point
    # can move with them (accelerated steps restart on small differences), so both are fitted to convergence:
    # the optimum moves by about the measurements' difference over the record count.
    for clique in simulated.selected_:
        p_sim = simulated.model_.project(clique) / simulated.model_.total
        p_cry = cryptographic.model_.project(clique) / cryptographic.model_.total
        np.testing.assert_allclose(p_cry, p_sim, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="secure_computation must be 'simulated' or 'cryptographic'"):
        HybridSynthesizer(domain=domain, secure_computation="yes").fit(X)


def test_hybrid_synthesizer_three_column_groups_cryptographic_equals_simulated():
    """K = 2, S = 3 with a 3-way workload: the k-party product gives the simulated fit exactly, ledger included."""
    from skdpsynth import HybridSynthesizer
    from skdpsynth.datasets import load_adult

    adult = load_adult(discretized=True)
    columns = ["age", "workclass", "education-num", "sex", "race", "income>50K"]
    X = adult.frame[columns].iloc[:1500]
    domain = adult.domain.project(columns).to_dict()
    partition = HybridPartition.grid(len(X), columns, n_slices=2, column_groups=[columns[:2], columns[2:4],
                                                                                 columns[4:]], random_state=0)
    fits = {}
    for mode in ("simulated", "cryptographic"):
        with pytest.warns(ReproducibleNoiseWarning):
            fits[mode] = HybridSynthesizer(1.0, domain=domain, workload=3, max_rounds=9, max_iters=50,
                                           final_iters=50, secure_computation=mode, random_state=0).fit(
                X, partition=partition)
    simulated, cryptographic = fits["simulated"], fits["cryptographic"]
    three_way = [m.clique for m in simulated.measurements_
                 if len({g for g, cols in enumerate([columns[:2], columns[2:4], columns[4:]])
                         for a in m.clique if a in cols}) == 3]
    assert three_way                                   # the k-party product did run
    assert cryptographic.selected_ == simulated.selected_
    for a, b in zip(simulated.measurements_, cryptographic.measurements_):
        assert a.clique == b.clique and a.sigma == b.sigma
        np.testing.assert_array_equal(b.values, a.values)    # integers in an exact ring: bit for bit
    assert list(cryptographic.privacy_ledger_) == list(simulated.privacy_ledger_)
    for clique in simulated.selected_:
        np.testing.assert_array_equal(cryptographic.model_.project(clique), simulated.model_.project(clique))


def test_relayed_matrices_beyond_the_wire_limit_cross_at_the_size_their_layout_gives(monkeypatch):
    """A two-party and a k-party product whose sealed matrices exceed the wire's limit: read at the public size."""
    import skdpsynth.federated.wire as wire

    rng = np.random.default_rng(11)
    dom = Domain(COLUMNS, SIZES)
    codes = np.column_stack([rng.integers(0, k, 2000) for k in SIZES])
    part = HybridPartition.grid(len(codes), COLUMNS, n_slices=2, column_groups=[["a"], ["b"], ["c", "d"]],
                                random_state=0)
    sim, _ = _both(codes, dom, part)
    marginals = [("b", "c", "d"), ("a", "b", "c", "d")]      # 1000 x 8 cells of 3-byte words: 24 kB a box
    expected = [combine(sim.measure(attrs, 0.5), dom)[0] for attrs in marginals]
    monkeypatch.setattr(wire, "MAX_BYTES", 8192)
    read_beyond = []
    public_limit = wire._PacketReader.public_limit
    monkeypatch.setattr(wire._PacketReader, "public_limit", lambda self: read_beyond.append(1) or public_limit(self))
    cry = Federation.from_codes(codes, dom, part, seed=3, secure_computation="cryptographic")
    for attrs, want in zip(marginals, expected):
        assert np.array_equal(combine(cry.measure(attrs, 0.5), dom)[0], want), attrs
    assert read_beyond                                       # the party read requests beyond the default limit
