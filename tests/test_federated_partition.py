"""HybridPartition: who holds which rows and columns of a hybrid-partitioned table."""
import pickle

import numpy as np
import pandas as pd
import pytest

from skdpsynth.federated import HybridPartition, PartySpec

COLS = ["age", "sex", "income", "work", "degree"]


def _assert_disjoint_cover(part, n_rows):
    rows = np.concatenate([part.slice_rows(i) for i in range(part.n_slices)])
    assert len(rows) == n_rows == part.n_rows
    assert np.array_equal(np.sort(rows), np.arange(n_rows))  # disjoint and covering


# --------------------------------------------------------------------------- constructors
@pytest.mark.parametrize("n_rows,k", [(10, 3), (11, 4), (7, 7), (100, 1), (101, 2)])
def test_grid_slices_near_equal_disjoint_covering(n_rows, k):
    part = HybridPartition.grid(n_rows, COLS, n_slices=k, n_vertical=2, random_state=0)
    sizes = [len(part.slice_rows(i)) for i in range(k)]
    assert part.n_slices == k and sum(sizes) == n_rows
    assert max(sizes) - min(sizes) <= 1
    _assert_disjoint_cover(part, n_rows)
    for i in range(k):
        rows = part.slice_rows(i)
        assert np.all(np.diff(rows) > 0)  # sorted
    labels = part.slice_labels()
    assert labels.shape == (n_rows,)
    for i in range(k):
        assert np.array_equal(np.flatnonzero(labels == i), part.slice_rows(i))


def test_grid_seeded_reproducible_and_seeds_differ():
    a = HybridPartition.grid(50, COLS, n_slices=3, random_state=7)
    b = HybridPartition.grid(50, COLS, n_slices=3, random_state=7)
    c = HybridPartition.grid(50, COLS, n_slices=3, random_state=8)
    assert a == b
    assert a != c
    assert not np.array_equal(a.slice_labels(), c.slice_labels())
    # a Generator is accepted and advances
    rng = np.random.default_rng(0)
    d = HybridPartition.grid(50, COLS, n_slices=3, random_state=rng)
    e = HybridPartition.grid(50, COLS, n_slices=3, random_state=rng)
    assert d != e


def test_grid_shuffle_false_gives_contiguous_slices():
    part = HybridPartition.grid(7, COLS, n_slices=3, shuffle=False, random_state=123)
    assert [part.slice_rows(i).tolist() for i in range(3)] == [[0, 1, 2], [3, 4], [5, 6]]


def test_grid_shuffle_true_permutes():
    part = HybridPartition.grid(40, COLS, n_slices=2, random_state=0)
    assert part.slice_rows(0).tolist() != list(range(20))


def test_grid_contiguous_column_groups():
    part = HybridPartition.grid(10, COLS, n_slices=2, n_vertical=3, random_state=0)
    expected = [["age", "sex"], ["income", "work"], ["degree"]]
    assert part.column_groups_of(0) == expected and part.column_groups_of(1) == expected
    assert part.n_vertical == 3 and part.n_parties == 6
    # default: two groups
    default = HybridPartition.grid(10, COLS, random_state=0)
    assert default.column_groups_of(0) == [["age", "sex", "income"], ["work", "degree"]]
    assert default.n_slices == 2


def test_grid_explicit_column_groups():
    groups = [["income", "age"], ["degree", "sex", "work"]]
    part = HybridPartition.grid(9, COLS, n_slices=3, column_groups=groups, random_state=0)
    assert all(part.column_groups_of(i) == groups for i in range(3))
    with pytest.raises(ValueError, match="held by no party of slice 0"):
        HybridPartition.grid(9, COLS, column_groups=[["age"], ["sex"]], random_state=0)
    with pytest.raises(ValueError, match="not a column of the data"):
        HybridPartition.grid(9, COLS, column_groups=[COLS, ["zip"]], random_state=0)
    with pytest.raises(ValueError, match="either column_groups or n_vertical"):
        HybridPartition.grid(9, COLS, column_groups=[COLS], n_vertical=1)
    with pytest.raises(ValueError, match="non-empty groups"):
        HybridPartition.grid(9, COLS, n_vertical=6)
    with pytest.raises(ValueError, match="non-empty slices"):
        HybridPartition.grid(2, COLS, n_slices=3)


def test_horizontal_vertical_centralized_shapes():
    h = HybridPartition.horizontal(10, COLS, n_slices=4, random_state=0)
    assert (h.n_slices, h.n_vertical, h.n_parties) == (4, 1, 4)
    assert all(h.column_groups_of(i) == [COLS] for i in range(4))
    _assert_disjoint_cover(h, 10)

    v = HybridPartition.vertical(6, [["age", "sex"], ["income"], ["work", "degree"]])
    assert (v.n_slices, v.n_vertical, v.n_parties) == (1, 3, 3)
    assert v.slice_rows(0).tolist() == list(range(6))
    with pytest.raises(ValueError, match="held by two parties"):
        HybridPartition.vertical(6, [["age", "sex"], ["sex"]])

    c = HybridPartition.centralized(5, COLS)
    assert (c.n_slices, c.n_vertical, c.n_parties, c.n_rows) == (1, 1, 1, 5)
    assert c.column_groups_of(0) == [COLS]


def test_labels_and_row_lists_are_equivalent():
    a = HybridPartition([1, 0, 1, 0, 2], [["age"], ["sex"]])
    b = HybridPartition([[3, 1], np.array([2, 0]), [4]], [["age"], ["sex"]])
    assert a == b
    assert a.slice_rows(0).tolist() == [1, 3] and a.slice_rows(1).tolist() == [0, 2]
    assert a.slice_labels().tolist() == [1, 0, 1, 0, 2]
    assert b.slice_labels(7).tolist() == [1, 0, 1, 0, 2, -1, -1]


def test_per_slice_column_groups_different_s():
    groups = {0: [COLS], 1: [["age", "sex"], ["income"], ["work", "degree"]], 2: [["age"], COLS[1:]]}
    part = HybridPartition([0, 1, 2, 1, 0, 2], groups)
    assert part.n_slices == 3
    assert part.n_vertical == 3  # max over slices (doc/deviations.md, "Slices and parties of irregular partitions")
    assert part.n_parties == 1 + 3 + 2
    assert part.column_groups_of(1) == groups[1]
    assert [(p.slice, p.index) for p in part.parties()] == [(0, 0), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1)]
    assert part.validate(COLS, 6) is part
    with pytest.raises(ValueError, match="no entry for slice 2"):
        HybridPartition([0, 1, 2], {0: [COLS], 1: [COLS]})
    with pytest.raises(ValueError, match="entry for slice 3"):
        HybridPartition([0, 1, 2], {0: [COLS], 1: [COLS], 2: [COLS], 3: [COLS]})


def test_party_names_and_parties():
    part = HybridPartition([0, 1, 1], [["age"], ["sex"]], party_names={(1, 0): "hospital", (0, 1): "bank"})
    specs = part.parties()
    assert [p.name for p in specs] == ["party0.0", "bank", "hospital", "party1.1"]
    assert all(isinstance(p, PartySpec) for p in specs)
    assert specs[2].rows.tolist() == [1, 2] and specs[2].columns == ("age",) and specs[2].n_rows == 2
    with pytest.raises(ValueError):
        specs[2].rows[0] = 5  # read-only: the partition cannot be mutated through a PartySpec
    with pytest.raises(AttributeError):
        specs[0].name = "x"  # frozen
    assert part.slice_rows(1).tolist() == [1, 2]
    with pytest.raises(ValueError, match="'bank' is used for parties"):
        HybridPartition([0, 1], [["a"], ["b"]], party_names={(0, 0): "bank", (1, 1): "bank"})
    with pytest.raises(ValueError, match=r"party \(2, 0\), which does not exist"):
        HybridPartition([0, 1], [["a"], ["b"]], party_names={(2, 0): "x"})


def test_slice_rows_returns_a_copy():
    part = HybridPartition([0, 1, 0], [["a"]])
    rows = part.slice_rows(0)
    rows[0] = 99
    assert part.slice_rows(0).tolist() == [0, 2]
    with pytest.raises(IndexError):
        part.slice_rows(2)


# --------------------------------------------------------------------------- constructor checks
def test_constructor_structural_errors():
    with pytest.raises(ValueError, match="non-negative integers; row 1 has label -1"):
        HybridPartition([0, -1, 1], [["a"]])
    with pytest.raises(ValueError, match="must be non-negative integers, got dtype float"):
        HybridPartition([0.0, 0.5, 1.0], [["a"]])
    with pytest.raises(ValueError, match="Slice 1 is empty"):
        HybridPartition([0, 2, 2], [["a"]])
    with pytest.raises(ValueError, match="Slice 1 is empty"):
        HybridPartition([[0, 1], []], [["a"]])
    with pytest.raises(ValueError, match="negative row position -3"):
        HybridPartition([[0, 1], [-3]], [["a"]])
    with pytest.raises(ValueError, match="Row 1 is listed more than once in slice 0"):
        HybridPartition([[0, 1, 1], [2]], [["a"]])
    with pytest.raises(ValueError, match="Column group 1 .* is empty"):
        HybridPartition([0, 1], [["a"], []])
    with pytest.raises(ValueError, match="Column 'a' is listed more than once"):
        HybridPartition([0, 1], [["a", "a"]])
    with pytest.raises(TypeError, match="list of column names"):
        HybridPartition([0, 1], ["a", "b"])  # forgot the inner lists
    with pytest.raises(TypeError):
        HybridPartition("abc", [["a"]])


def test_row_in_two_slices_rejected():
    with pytest.raises(ValueError, match=r"Row 2 is in two slices \(0 and 1\)"):
        HybridPartition([[0, 1, 2], [2, 3]], [["a"]])


# --------------------------------------------------------------------------- validate
@pytest.fixture
def part():
    return HybridPartition([0, 0, 1, 1, 1], [["age", "sex"], ["income", "work", "degree"]])


def test_validate_ok_returns_self(part):
    assert part.validate(COLS, 5) is part
    assert part.validate(pd.Index(COLS), np.int64(5)) is part


def test_validate_row_missing():
    p = HybridPartition([[0, 1], [3, 4]], [COLS])
    with pytest.raises(ValueError, match=r"in no slice: the partition skips row position\(s\) \[2\]"):
        p.validate(COLS, 5)
    with pytest.raises(ValueError, match="in no slice: the table has more rows than the partition's roster"):
        HybridPartition([0, 1, 0], [COLS]).validate(COLS, 4)  # labels shorter than X


def test_validate_row_out_of_range(part):
    with pytest.raises(ValueError, match="roster has row positions up to 4, out of range: the table has fewer rows"):
        part.validate(COLS, 4)


def test_validate_unknown_column(part):
    with pytest.raises(ValueError, match="'party0.1' .* holds column 'degree', which is not a column"):
        part.validate(COLS[:4], 5)


def test_validate_column_held_by_no_party():
    p = HybridPartition([0, 1], {0: [COLS], 1: [["age", "sex"], ["income"]]})
    with pytest.raises(ValueError, match="Column 'work' is held by no party of slice 1"):
        p.validate(COLS, 2)


def test_validate_overlap_error_and_first():
    p = HybridPartition(
        [0, 0, 1],
        {0: [["age", "sex", "income"], ["income", "work", "degree"]], 1: [COLS]},
        party_names={(0, 1): "insurer"},
    )
    with pytest.raises(ValueError, match="Column 'income' is held by two parties of slice 0: 'party0.0' and 'insurer'"):
        p.validate(COLS, 3)
    q = p.validate(COLS, 3, overlap="first")
    assert q is not p and q != p
    assert q.column_groups_of(0) == [["age", "sex", "income"], ["work", "degree"]]
    assert q.column_groups_of(1) == [COLS]
    assert [x.name for x in q.parties()] == [x.name for x in p.parties()]
    assert q.validate(COLS, 3) is q  # now valid as is
    assert p.column_groups_of(0)[1] == ["income", "work", "degree"]  # original untouched
    # lowest index wins even when the later party lists the column first
    r = HybridPartition([0], [["b", "a"], ["a", "c"], ["c", "d"]]).validate(list("abcd"), 1, overlap="first")
    assert r.column_groups_of(0) == [["b", "a"], ["c"], ["d"]]


def test_validate_overlap_first_empty_party():
    p = HybridPartition([0, 1], [["age", "sex"], ["sex"], ["income", "work", "degree"]])
    with pytest.raises(ValueError, match="'party0.1' .* holds no columns"):
        p.validate(COLS, 2, overlap="first")


def test_validate_argument_errors(part):
    with pytest.raises(ValueError, match="overlap must be"):
        part.validate(COLS, 5, overlap="last")
    with pytest.raises(ValueError, match="more than once"):
        part.validate(COLS + ["age"], 5)


def test_validate_non_string_column_names():
    p = HybridPartition([0, 1, 1], [[0, 1], [2]])
    assert p.validate([0, 1, 2], 3) is p
    with pytest.raises(ValueError, match="held by no party"):
        p.validate([0, 1, 2, 3], 3)


# --------------------------------------------------------------------------- coerce
def test_coerce_partition_is_identity(part):
    assert HybridPartition.coerce(part) is part


def test_coerce_dict(part):
    d = {"slices": [0, 0, 1, 1, 1], "column_groups": [["age", "sex"], ["income", "work", "degree"]]}
    assert HybridPartition.coerce(d) == part
    named = HybridPartition.coerce(dict(d, party_names={(0, 0): "A"}))
    assert named.parties()[0].name == "A"
    with pytest.raises(ValueError, match="missing: \\['column_groups'\\]"):
        HybridPartition.coerce({"slices": [0]})
    with pytest.raises(ValueError, match="unknown"):
        HybridPartition.coerce(dict(d, rows=[0]))


def test_coerce_party_list():
    a, b = np.array([4, 0, 2]), np.array([1, 3])
    parties = [
        {"name": "P1", "rows": a, "columns": ["age", "sex"]},
        {"name": "P3", "rows": b, "columns": ["age", "sex", "income"]},
        {"name": "P2", "rows": a[::-1], "columns": ["income"]},
        {"rows": b.tolist(), "columns": ["work", "degree"]},
        {"name": "P5", "rows": a, "columns": ["work", "degree"]},
    ]
    p = HybridPartition.coerce(parties)
    assert p.n_slices == 2 and p.n_parties == 5 and p.n_vertical == 3
    assert p.slice_rows(0).tolist() == [0, 2, 4] and p.slice_rows(1).tolist() == [1, 3]
    assert [x.name for x in p.parties()] == ["P1", "P2", "P5", "P3", "party1.1"]
    assert p.column_groups_of(0) == [["age", "sex"], ["income"], ["work", "degree"]]
    assert p.column_groups_of(1) == [["age", "sex", "income"], ["work", "degree"]]
    assert p.validate(COLS, 5) is p
    # parties() round-trips through coerce
    assert HybridPartition.coerce(p.parties()) == p


def test_coerce_party_list_overlapping_slices():
    parties = [
        {"name": "P1", "rows": [0, 1, 2], "columns": ["a"]},
        {"name": "P2", "rows": [0, 1, 2], "columns": ["b"]},
        {"name": "P3", "rows": [2, 3], "columns": ["a", "b"]},
    ]
    with pytest.raises(ValueError, match="'P1' and 'P3' both hold row 2"):
        HybridPartition.coerce(parties)
    with pytest.raises(ValueError, match="needs the keys 'rows' and 'columns'"):
        HybridPartition.coerce([{"name": "P1", "rows": [0]}])


@pytest.mark.parametrize("obj", [None, 3, "slices", np.array([0, 1]), [0, 1, 0], [{"rows": [0], "columns": ["a"]}, 5]])
def test_coerce_type_error(obj):
    with pytest.raises(TypeError, match="partition must be a HybridPartition"):
        HybridPartition.coerce(obj)


# --------------------------------------------------------------------------- from_party_frames
def _known_table(n=12, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.arange(100, 100 + 3 * n, 3))  # unsorted, non-contiguous IDs
    return pd.DataFrame(
        {
            "ID": ids,
            "age": rng.integers(0, 5, n),
            "sex": rng.choice(["f", "m"], n),
            "income": rng.integers(0, 3, n),
            "work": rng.integers(0, 2, n),
            "degree": rng.integers(0, 4, n),
        }
    )


def test_from_party_frames_alignment():
    full = _known_table()
    slice_a = full.iloc[:7]
    slice_b = full.iloc[7:]
    rng = np.random.default_rng(1)

    def shuffled(df, cols):
        return df[["ID"] + cols].iloc[rng.permutation(len(df))].reset_index(drop=True)

    frames = {
        "A1": shuffled(slice_a, ["age", "sex"]),
        "A2": shuffled(slice_a, ["income", "work", "degree"]),
        "B1": shuffled(slice_b, ["age"]),
        "B2": shuffled(slice_b, ["income", "sex", "work", "degree"]),
    }
    X, part = HybridPartition.from_party_frames(frames, id_column="ID")

    expected = pd.concat([slice_a.sort_values("ID"), slice_b.sort_values("ID")], ignore_index=True)
    expected = expected.drop(columns="ID")
    pd.testing.assert_frame_equal(X, expected)  # also checks column order and dtypes
    assert list(X.columns) == ["age", "sex", "income", "work", "degree"]

    assert part.n_slices == 2 and part.n_vertical == 2 and part.n_parties == 4
    assert part.slice_rows(0).tolist() == list(range(7)) and part.slice_rows(1).tolist() == list(range(7, 12))
    assert [p.name for p in part.parties()] == ["A1", "A2", "B1", "B2"]
    assert part.column_groups_of(0) == [["age", "sex"], ["income", "work", "degree"]]
    assert part.column_groups_of(1) == [["age"], ["income", "sex", "work", "degree"]]
    assert part.validate(X.columns, len(X)) is part
    # every party's view of X equals its own frame
    for p in part.parties():
        own = frames[p.name].sort_values("ID").drop(columns="ID").reset_index(drop=True)
        pd.testing.assert_frame_equal(X.iloc[p.rows][list(p.columns)].reset_index(drop=True), own)


def test_from_party_frames_slices_ordered_by_first_appearance_and_index_ids():
    full = _known_table()
    frames = {
        "late": full.iloc[6:][["ID", "age", "sex", "income", "work", "degree"]],
        "early": full.iloc[:6][["ID", "age", "sex", "income", "work", "degree"]].set_index("ID"),
    }
    X, part = HybridPartition.from_party_frames(frames, "ID")
    assert X.iloc[:6].equals(full.iloc[6:].sort_values("ID").drop(columns="ID").reset_index(drop=True))
    assert [p.name for p in part.parties()] == ["late", "early"]
    assert (part.n_slices, part.n_vertical) == (2, 1)


def test_from_party_frames_errors():
    full = _known_table()
    a, b = full.iloc[:6], full.iloc[6:]
    ok = {"A1": a[["ID", "age", "sex"]], "A2": a[["ID", "income", "work", "degree"]]}

    # partial overlap of ID sets
    with pytest.raises(ValueError, match=r"'A1' and 'B1' partially overlap: they share 1 ID\(s\) \(e.g. 127\)"):
        HybridPartition.from_party_frames(
            {**ok, "B1": pd.concat([b, a.iloc[:1]])[["ID"] + COLS]}, "ID"
        )
    with pytest.raises(ValueError, match="'A1' and 'A2' partially overlap"):
        HybridPartition.from_party_frames({"A1": a[["ID", "age", "sex"]], "A2": full.iloc[3:][["ID", "income"]]}, "ID")
    # overlapping columns within a slice
    with pytest.raises(ValueError, match="'sex' is held by both 'A1' and 'A2'.*resolved first.*dropping the column"):
        HybridPartition.from_party_frames({"A1": a[["ID", "age", "sex"]], "A2": a[["ID", "sex", "income"]]}, "ID")
    # duplicate IDs within a frame
    with pytest.raises(ValueError, match="'A1' lists ID .* more than once"):
        HybridPartition.from_party_frames({"A1": pd.concat([a, a.iloc[:1]])[["ID", "age"]]}, "ID")
    # slice not covering all columns
    with pytest.raises(ValueError, match="'degree' is held by no party of slice 1"):
        HybridPartition.from_party_frames({**ok, "B": b[["ID", "age", "sex", "income", "work"]]}, "ID")
    with pytest.raises(ValueError, match="has no ID column 'ID'"):
        HybridPartition.from_party_frames({"A1": a[["age"]]}, "ID")
    with pytest.raises(ValueError, match="no columns besides the ID column"):
        HybridPartition.from_party_frames({"A1": a[["ID"]]}, "ID")


# --------------------------------------------------------------------------- misc
def test_pickle_round_trip():
    p = HybridPartition(
        [[0, 3], [1, 2, 4]], {0: [COLS], 1: [["age"], COLS[1:]]}, party_names={(1, 1): "bank"}
    )
    q = pickle.loads(pickle.dumps(p))
    assert q == p and q is not p
    assert repr(q) == repr(p)
    assert [x.name for x in q.parties()] == ["party0.0", "party1.0", "bank"]
    assert q.validate(COLS, 5) is q
    spec = p.parties()[2]
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_equality():
    a = HybridPartition([0, 1], [["a"], ["b"]])
    assert a == HybridPartition([[0], [1]], {0: [["a"], ["b"]], 1: [["a"], ["b"]]})
    assert a != HybridPartition([0, 1], [["b"], ["a"]])
    assert a != HybridPartition([1, 0], [["a"], ["b"]])
    assert a != HybridPartition([0, 1], [["a"], ["b"]], party_names={(0, 0): "x"})
    assert a != "not a partition"


def test_shape_summary():
    p = HybridPartition([0, 0, 1], {0: [["a"], ["b"]], 1: [["a", "b"]]}, party_names={(1, 0): "solo"})
    s = p.shape_summary()
    assert list(s.columns) == ["name", "slice", "index", "n_rows", "columns"]
    assert s["name"].tolist() == ["party0.0", "party0.1", "solo"]
    assert s["slice"].tolist() == [0, 0, 1] and s["index"].tolist() == [0, 1, 0]
    assert s["n_rows"].tolist() == [2, 2, 1]
    assert s["columns"].tolist() == [("a",), ("b",), ("a", "b")]


def test_repr_short_and_informative():
    p = HybridPartition.grid(1000, [f"c{k}" for k in range(40)], n_slices=3, n_vertical=2, random_state=0)
    r = repr(p)
    assert r.startswith("HybridPartition(n_slices=3, n_vertical=2, n_parties=6, n_rows=1000")
    assert "slice_sizes=[334, 333, 333]" in r and len(r) < 200
    per = HybridPartition([0, 1], {0: [["a", "b"]], 1: [["a"], ["b"]]})
    assert "per slice" in repr(per)
