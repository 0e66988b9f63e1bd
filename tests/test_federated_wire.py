"""The party → curator wire format: exact round trips, and every tampering refused naming the sender."""
import io
import json
import re
import zipfile

import numpy as np
import pytest

from skdpsynth import Domain
from skdpsynth.federated import (Federation, HybridPartition, MeasurementReply, NoisyIndicators,
                                 NoisyLocalMarginal, SliceCount, combine)
from skdpsynth.federated.wire import (FORMAT_NAME, FORMAT_VERSION, Envelope, MessageError, from_bytes,
                                      ledger_entries_for, same_message, to_bytes)
from skdpsynth.privacy import LedgerEntry

DOM = Domain(["a", "b", "c"], [2, 3, 4])


# --------------------------------------------------------------------------- helpers
def slice_count(values=None):
    values = np.arange(6.0) / 3.0 if values is None else values
    return SliceCount(0, ("a", "b"), values, variance=1.0 / (2 * 0.25) + 1.0 / (2 * 0.75),
                      party_rhos={"p0": 0.25, "p1": 0.75})


def indicators(party="p1", attrs=("b",), rho=0.5):
    rng = np.random.default_rng(0)
    return NoisyIndicators(1, party, attrs, rng.normal(size=(4, DOM.size(attrs))), 1.0 / (2 * rho), rho)


def local_marginal():
    return NoisyLocalMarginal(2, "p2", ("a", "b"), np.linspace(-1.0, 7.5, 6), variance=0.5, rho=1.0)


def reply():
    rng = np.random.default_rng(1)
    parts = (NoisyIndicators(0, "p0", ("a",), rng.normal(size=(3, 2)), 1.0 / (2 * 0.5), 0.5),
             NoisyIndicators(0, "p1", ("b",), rng.normal(size=(3, 3)), 1.0 / (2 * 0.5), 0.5),
             NoisyLocalMarginal(1, "p2", ("a", "b"), rng.normal(size=6), 1.0 / (2 * 1.0), 1.0))
    return MeasurementReply(("a", "b"), 1.0, 1, "indicator", parts)


def unpack(data):
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(arrays.pop("header").tobytes().decode("utf-8"))
    return header, arrays


def pack(header, arrays, *, text=None):
    """An archive as np.savez writes it (object arrays pickled: savez's default)."""
    text = json.dumps(header) if text is None else text
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **arrays)
    return buffer.getvalue()


def tampered(message, sender, edit, **kwargs):
    """``message`` sent by ``sender``, then its header and arrays edited in place by ``edit``."""
    header, arrays = unpack(to_bytes(message, sender=sender, **kwargs))
    edit(header, arrays)
    return pack(header, arrays)


def refused(sender, pattern):
    """``pytest.raises`` for a MessageError naming ``sender`` and matching ``pattern``."""
    return pytest.raises(MessageError, match=rf"^Message from {re.escape(repr(sender))}: .*{pattern}")


# --------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("make,sender", [(slice_count, "aggregator"), (indicators, "p1"),
                                         (local_marginal, "p2"), (reply, "federation")])
def test_roundtrip_each_kind_exact(make, sender):
    message = make()
    env = from_bytes(to_bytes(message, sender=sender), domain=DOM)
    assert isinstance(env, Envelope)
    assert env.sender == sender and env.kind == type(message).__name__ and env.version == FORMAT_VERSION
    assert type(env.message) is type(message) and same_message(env.message, message)
    assert env.ledger_entries == ledger_entries_for(message)
    claims = (message.party_rhos() if isinstance(message, MeasurementReply)
              else getattr(message, "party_rhos", None) or {message.party: message.rho})
    assert env.ledger().total_rho() == pytest.approx(sum(claims.values()), rel=1e-12)


def test_roundtrip_floats_and_arrays_bit_exact():
    values = np.array([0.1 + 0.2, 1.0 / 3.0, 5e-324, -0.0, 1e308, np.nextafter(1.0, 2.0)])
    rho = 0.1 + 0.2
    m = NoisyLocalMarginal(0, "p", ("a", "b"), values, 1.0 / (2.0 * rho), rho)
    out = from_bytes(to_bytes(m, sender="p")).message
    assert out.values.tobytes() == values.tobytes()
    assert out.rho == rho and out.variance == m.variance and out.attrs == ("a", "b")
    fortran = NoisyIndicators(0, "p", ("b",), np.asfortranarray(np.arange(12.0).reshape(4, 3)), 1.0, 0.5)
    assert same_message(from_bytes(to_bytes(fortran, sender="p")).message, fortran)


def test_archive_is_plain_npz_with_json_header():
    data = to_bytes(slice_count(), sender="aggregator")
    header, arrays = unpack(data)  # loads with allow_pickle=False
    assert header["format"] == FORMAT_NAME and header["version"] == 1 and header["kind"] == "SliceCount"
    assert header["sender"] == "aggregator" and header["fields"]["party_rhos"] == {"p0": 0.25, "p1": 0.75}
    assert header["arrays"] == {"values": {"key": "values", "shape": [6], "dtype": "<f8"}}
    assert [e["party"] for e in header["ledger"]] == ["p0", "p1"] and set(arrays) == {"values"}


@pytest.mark.parametrize("protocol", ["secure_sum", "indicator"])
def test_roundtrip_real_federation_replies(protocol):
    codes = np.array([[0, 1, 3], [1, 2, 0], [1, 0, 2], [0, 1, 1], [1, 1, 3], [0, 2, 0]])
    part = HybridPartition.grid(6, ["a", "b", "c"], n_slices=2, column_groups=[["a"], ["b", "c"]], random_state=0)
    fed = Federation.from_codes(codes, DOM, part, seed=0)
    for attrs, rho, e in [(("a", "b"), 0.3, 1), (("b", "c"), 0.7, 2), (("a", "b", "c"), 1e6, 1)]:
        r = fed.measure(attrs, rho, protocol=protocol, n_repeats=e)
        expected = {"sender": "federation", "attrs": attrs, "rho": rho, "protocol": protocol, "n_repeats": e}
        env = from_bytes(to_bytes(r, sender="federation"), domain=DOM, expected=expected)
        assert same_message(env.message, r)
        values, variance = combine(env.message, DOM)
        assert np.array_equal(values, combine(r, DOM)[0]) and variance == combine(r, DOM)[1]
        for p in r.parts:  # each part on its own, sent by its party (or the aggregator for a slice count)
            sender = "aggregator" if isinstance(p, SliceCount) else p.party
            assert same_message(from_bytes(to_bytes(p, sender=sender), domain=DOM).message, p)


def test_roundtrip_federation_docstring_example():
    dom = Domain(["a", "b"], [2, 3])
    codes = np.array([[0, 1], [1, 2], [1, 0], [0, 1]])
    fed = Federation.from_codes(codes, dom, HybridPartition.vertical(4, [["a"], ["b"]]), seed=0)
    r = fed.measure(("a", "b"), rho=1e6)
    env = from_bytes(to_bytes(r, sender="fed"), domain=dom, expected={"attrs": ("b", "a"), "rho": 1e6})
    assert same_message(env.message, r)
    assert np.round(combine(env.message, dom)[0]).astype(int).tolist() == [0, 2, 0, 1, 0, 1]
    assert {e.party: e.rho for e in env.ledger_entries} == {"party0.0": 500000.0, "party0.1": 500000.0}


def test_custom_ledger_entries_roundtrip_and_default_party_is_sender():
    m = indicators()
    entries = (LedgerEntry("first half", "gaussian", "zcdp", rho=0.2, epsilon=None, details={"k": [1, 2]}),
               LedgerEntry("second half", "gaussian", "zcdp", rho=0.3, epsilon=None, party="p1", scale=1.0))
    env = from_bytes(to_bytes(m, sender="p1", ledger_entries=entries))
    assert [e.party for e in env.ledger_entries] == ["p1", "p1"]
    assert env.ledger_entries[0].details == {"k": [1, 2]} and env.ledger_entries[1] == entries[1]


# --------------------------------------------------------------------------- format and header
def test_wrong_version_refused():
    data = tampered(slice_count(), "agg", lambda h, a: h.update(version=2))
    with refused("agg", "unsupported format version 2"):
        from_bytes(data)


def test_unknown_format_refused():
    data = tampered(slice_count(), "agg", lambda h, a: h.update(format="other"))
    with refused("agg", "unknown format 'other'"):
        from_bytes(data)


def test_unknown_kind_refused():
    data = tampered(local_marginal(), "p2", lambda h, a: h.update(kind="Pickle"))
    with refused("p2", "unknown message kind 'Pickle'"):
        from_bytes(data)


def test_reply_part_of_wrong_kind_for_protocol_refused():
    data = tampered(reply(), "fed", lambda h, a: h["fields"].update(protocol="secure_sum"))
    with refused("fed", r"part 0: unknown message kind 'NoisyIndicators'"):
        from_bytes(data)


@pytest.mark.parametrize("text,pattern", [
    ('{"format": "skdpsynth-federated-message", "sender": "p2"', "JSON header is malformed"),
    ("[1, 2]", "not an object"),
])
def test_malformed_json_header_refused(text, pattern):
    _, arrays = unpack(to_bytes(local_marginal(), sender="p2"))
    with refused("p2", pattern):
        from_bytes(pack(None, arrays, text=text), expected={"sender": "p2"})


def test_json_header_nan_and_extra_keys_refused():
    header, arrays = unpack(to_bytes(local_marginal(), sender="p2"))
    text = json.dumps(header).replace('"rho": 1.0', '"rho": NaN')
    with refused("p2", "malformed.*non-finite number NaN"):  # unparsed: the sender is the expected one
        from_bytes(pack(None, arrays, text=text), expected={"sender": "p2"})
    data = tampered(local_marginal(), "p2", lambda h, a: h["fields"].update(extra=1))
    with refused("p2", "malformed: NoisyLocalMarginal fields"):
        from_bytes(data)
    data = tampered(local_marginal(), "p2", lambda h, a: h.update(note="hi"))
    with refused("p2", "JSON header is malformed: keys"):
        from_bytes(data)


def test_header_scalar_types_refused():
    data = tampered(local_marginal(), "p2", lambda h, a: h["fields"].update(attrs="ab"))
    with refused("p2", "attrs must be a non-empty sequence of strings"):
        from_bytes(data)
    data = tampered(local_marginal(), "p2", lambda h, a: h["fields"].update(slice=-1))
    with refused("p2", "slice must be an integer >= 0"):
        from_bytes(data)
    data = tampered(local_marginal(), "p2", lambda h, a: h["fields"].update(variance=-0.5))
    with refused("p2", r"party 'p2'\): variance must be finite and > 0"):
        from_bytes(data)
    data = tampered(local_marginal(), "p2", lambda h, a: h["fields"].update(rho=0))
    with refused("p2", "rho must be finite and > 0"):
        from_bytes(data)


# --------------------------------------------------------------------------- arrays
def test_array_shape_differing_from_header_refused():
    data = tampered(local_marginal(), "p2", lambda h, a: a.update(values=a["values"][:5]))
    with refused("p2", r"array 'values' has shape \(5,\), the header says \(6,\)"):
        from_bytes(data)
    data = tampered(indicators(), "p1", lambda h, a: a.update(matrix=a["matrix"].ravel()))
    with refused("p1", "array 'matrix' has shape"):
        from_bytes(data)


def test_array_dtype_differing_from_header_refused():
    data = tampered(local_marginal(), "p2", lambda h, a: a.update(values=a["values"].astype(np.float32)))
    with refused("p2", "array 'values' has dtype <f4, the header says <f8"):
        from_bytes(data)

    def to_int(h, a):
        a["values"] = a["values"].astype(np.int64)
        h["arrays"]["values"]["dtype"] = "<i8"
    with refused("p2", "must be float64"):
        from_bytes(tampered(local_marginal(), "p2", to_int))


def test_missing_and_extra_arrays_refused():
    data = tampered(local_marginal(), "p2", lambda h, a: a.pop("values"))
    with refused("p2", "array 'values' named in the header is missing"):
        from_bytes(data)
    data = tampered(local_marginal(), "p2", lambda h, a: a.update(secret=np.zeros(3)))
    with refused("p2", r"arrays the header does not name: \['secret'\]"):
        from_bytes(data)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_refused(bad):
    def edit(h, a):
        a["values"] = a["values"].copy()
        a["values"][2] = bad
    with refused("agg", "non-finite values"):
        from_bytes(tampered(slice_count(), "agg", edit))

    def edit_part(h, a):
        a["part1.matrix"] = a["part1.matrix"].copy()
        a["part1.matrix"][0, 0] = bad
    with refused("fed", r"part 1 \(NoisyIndicators, slice 0, party 'p1'\): array 'matrix' holds non-finite"):
        from_bytes(tampered(reply(), "fed", edit_part))


def test_pickled_object_array_refused():
    def edit(h, a):
        a["values"] = np.array([1.0, "x", None, 2, 3, 4], dtype=object)
        h["arrays"]["values"]["dtype"] = "|O"
    header, arrays = unpack(to_bytes(local_marginal(), sender="p2"))
    edit(header, arrays)
    data = pack(header, arrays)
    with refused("p2", "must be float64"):
        from_bytes(data)
    header["arrays"]["values"]["dtype"] = "<f8"  # header lies about the dtype
    with refused("p2", r"array 'values' holds Python objects \(pickle\); refused"):
        from_bytes(pack(header, arrays))



def _rewritten(data: bytes, member: str, write) -> bytes:
    """``data`` with one member's bytes replaced by ``write(array)``, the other members as they were."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            raw = zin.read(info)
            if info.filename == member:
                raw = write(np.load(io.BytesIO(raw), allow_pickle=False))
            zout.writestr(info.filename, raw)
    return out.getvalue()


def test_arrays_with_other_valid_npy_headers_are_read_as_numpy_reads_them():
    """The common header is read by a pattern; a header numpy writes otherwise (format 2.0, Fortran order) goes to
    numpy's own reader and gives the same message; a header numpy would refuse is refused."""
    sent = local_marginal()
    data = to_bytes(sent, sender="p2")

    def written(array, version=(1, 0)):
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, array, version=version)
        return buffer.getvalue()

    assert same_message(from_bytes(_rewritten(data, "values.npy", lambda a: written(a, (2, 0)))).message, sent)
    sent_matrix = indicators()
    as_fortran = _rewritten(to_bytes(sent_matrix, sender="p1"), "matrix.npy", lambda a: written(np.asfortranarray(a)))
    assert b"'fortran_order': True" in as_fortran
    assert same_message(from_bytes(as_fortran).message, sent_matrix)
    header = b"{'descr': '<f8', 'fortran_order': __import__('os'), 'shape': (6,), }\n"
    literal = _rewritten(data, "values.npy", lambda a: b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                         + header + a.tobytes())
    with refused("p2", r"array 'values' is not a valid .npy array"):
        from_bytes(literal, expected={"sender": "p2"})
    truncated = _rewritten(data, "values.npy", lambda a: written(a, (2, 0))[:-8])
    with refused("p2", r"array 'values' is truncated"):
        from_bytes(truncated, expected={"sender": "p2"})

def test_size_limits_and_non_archives_refused():
    data = to_bytes(reply(), sender="fed")
    with refused("fed", "exceed the limit of 100"):
        from_bytes(data, max_bytes=100, expected={"sender": "fed"})
    with refused("fed", "4 archive members exceed the limit of 3"):
        from_bytes(data, max_members=3, expected={"sender": "fed"})
    with pytest.raises(MessageError, match="^Message from an unknown sender: not a zip"):
        from_bytes(b"\x80\x04pickle")
    header, arrays = unpack(to_bytes(local_marginal(), sender="p2"))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, header=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)
    with refused("p2", "compressed members"):
        from_bytes(buffer.getvalue(), expected={"sender": "p2"})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("header.npy", b"x")
        zf.writestr("payload.pkl", b"x")
    with refused("p2", "not .npy arrays"):
        from_bytes(buffer.getvalue(), expected={"sender": "p2"})


# --------------------------------------------------------------------------- domain
def test_attrs_not_in_domain_refused():
    m = NoisyLocalMarginal(2, "p2", ("a", "z"), np.zeros(6), 0.5, 1.0)
    with refused("p2", r"attributes \['z'\] are not in the domain"):
        from_bytes(to_bytes(m, sender="p2"), domain=DOM)
    from_bytes(to_bytes(m, sender="p2"))  # without a domain it is only a well-formed message


def test_wrong_vector_length_for_domain_refused():
    m = SliceCount(0, ("a", "c"), np.zeros(6), 2.0, {"p0": 0.5, "p1": 0.5})  # a x c has 8 cells
    with refused("agg", "value vector length 6 differ from the 8 cells"):
        from_bytes(to_bytes(m, sender="agg"), domain=DOM)


def test_indicator_matrix_columns_must_match_domain():
    m = NoisyIndicators(0, "p1", ("b", "c"), np.zeros((4, 7)), 1.0, 0.5)  # b x c one-hot has 12 columns
    with refused("p1", "matrix columns 7 differ from the 12 cells"):
        from_bytes(to_bytes(m, sender="p1"), domain=DOM)


def test_attrs_out_of_domain_order_refused():
    m = NoisyLocalMarginal(2, "p2", ("b", "a"), np.zeros(6), 0.5, 1.0)
    with refused("p2", "not in domain order"):
        from_bytes(to_bytes(m, sender="p2"), domain=DOM)


# --------------------------------------------------------------------------- budget claims
def test_claimed_rho_not_matching_ledger_entries_refused():
    m = indicators()
    entries = (LedgerEntry("half", "gaussian", "zcdp", rho=0.25, epsilon=None, party="p1"),)
    with refused("p1", r"budget claim of party 'p1': the message claims rho=0.5, .* record rho=0.25"):
        from_bytes(to_bytes(m, sender="p1", ledger_entries=entries))
    with refused("p1", "claims rho=0.5, its ledger entries record rho=0.0"):
        from_bytes(to_bytes(m, sender="p1", ledger_entries=()))


def test_tampered_claim_with_consistent_variance_still_caught_by_ledger():
    def edit(h, a):  # understates the spend consistently with the noise, but not in the ledger
        h["fields"].update(rho=0.05, variance=10.0)
    with refused("p1", r"budget claim of party 'p1': the message claims rho=0.05"):
        from_bytes(tampered(indicators(), "p1", edit))


def test_variance_not_matching_claimed_budget_refused():
    data = tampered(slice_count(), "agg", lambda h, a: h["fields"].update(variance=0.1))
    with refused("agg", r"variance 0.1 does not match the claimed budget"):
        from_bytes(data)


def test_ledger_entries_for_other_party_or_other_accounting_refused():
    m = indicators()
    other = (LedgerEntry("x", "gaussian", "zcdp", rho=0.5, epsilon=None, party="p9"),)
    with refused("p1", "budget claim of party 'p1'"):
        from_bytes(to_bytes(m, sender="p1", ledger_entries=other))
    pure = (LedgerEntry("x", "laplace", "pure", rho=None, epsilon=1.0, party="p1"),)
    with refused("p1", "'pure' entry; messages are paid for in zCDP only"):
        from_bytes(to_bytes(m, sender="p1", ledger_entries=pure))
    data = tampered(m, "p1", lambda h, a: h["ledger"][0].update(rho=-1.0))
    with refused("p1", "ledger entry 0 is invalid"):
        from_bytes(data)


def test_reply_slice_claims_must_add_up_to_call_budget():
    data = tampered(reply(), "fed", lambda h, a: h["fields"].update(rho=2.0))
    with refused("fed", r"slice 0: the parties claim rho=1.0 in total, but the call charges"):
        from_bytes(data)


def test_party_message_sent_by_someone_else_refused():
    with refused("mallory", "carries the NoisyIndicators of party 'p1'; a party sends only its own"):
        from_bytes(to_bytes(indicators(), sender="mallory"))


# --------------------------------------------------------------------------- expected request
def test_sender_mismatch_with_expected_refused():
    with refused("p2", "expected a message from 'p1'"):
        from_bytes(to_bytes(local_marginal(), sender="p2"), expected={"sender": "p1"})


def test_attrs_rho_kind_mismatch_with_expected_refused():
    data = to_bytes(reply(), sender="fed")
    with refused("fed", "answers attrs"):
        from_bytes(data, expected={"attrs": ("a", "c")})
    with refused("fed", r"claims rho=1.0, the request was rho=1.000001"):
        from_bytes(data, expected={"rho": 1.000001})
    with refused("fed", "expected a SliceCount message"):
        from_bytes(data, expected={"kind": "SliceCount"})
    with refused("fed", "n_repeats=1, the request was 2"):
        from_bytes(data, expected={"n_repeats": 2})
    assert from_bytes(data, expected={"attrs": ["b", "a"], "rho": 1.0 + 1e-13}).sender == "fed"
    with pytest.raises(ValueError, match="unknown keys"):
        from_bytes(data, expected={"epsilon": 1.0})
