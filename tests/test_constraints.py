"""Public structural constraints: compiled from the public domain, folded into the fitted model, never broken."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdpsynth import (AIMSynthesizer, Domain, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                       VerticalMRFSynthesizer, ViewSynthesizer)
from skdpsynth.cli import main
from skdpsynth.columns import Column
from skdpsynth.constraints import (AllowedCombinations, ForbiddenCombination, FunctionalDependency,
                                   compile_constraints, constraint_from_dict, violations)
from skdpsynth.datasets import load_adult
from skdpsynth.graphical import GraphicalModel, fit_under_constraints

COLUMNS = ["sex", "relationship", "race", "income>50K", "native-country"]
# Discretized Adult codes: relationship 2 is Husband, 0 is Wife; sex 1 is Male.
HUSBANDS_ARE_MEN = {"forbid": {"relationship": 2, "sex": 0}}
WIVES_ARE_WOMEN = {"forbid": {"relationship": 0, "sex": 1}}


@pytest.fixture(scope="module")
def adult():
    data = load_adult(discretized=True)
    return data.frame[COLUMNS].iloc[:8000], data.domain.project(COLUMNS).to_dict()


def _columns(**sizes):
    return [Column(name, size, "codes", None, np.dtype(np.int64)) for name, size in sizes.items()]


def test_each_kind_compiles_to_its_allowed_cells():
    columns = _columns(a=3, b=2, c=4)
    (attrs, forbid), (_, allow), (_, depends) = compile_constraints(
        [ForbiddenCombination({"a": [0, 2], "b": 1}),
         AllowedCombinations(["b", "c"], [(0, 3), (1, 0)]),
         FunctionalDependency("c", "a", {0: 1, 3: 2})], columns)
    assert attrs == ("a", "b")
    assert forbid.tolist() == [[True, False], [True, True], [True, False]]
    assert allow.astype(int).tolist() == [[0, 0, 0, 1], [1, 0, 0, 0]]
    # c = 0 fixes a = 1, c = 3 fixes a = 2, c = 1 and c = 2 leave a free.
    assert depends.astype(int).tolist() == [[0, 1, 0], [1, 1, 1], [1, 1, 1], [0, 0, 1]]


def test_labelled_columns_take_their_values_and_the_json_form_round_trips():
    columns = [Column("rel", 3, "values", pd.Index(["Husband", "Other", "Wife"]), np.dtype(object)),
               Column("sex", 2, "categorical", pd.Index(["Female", "Male"]),
                      pd.CategoricalDtype(["Female", "Male"]))]
    spec = [{"forbid": {"rel": "Husband", "sex": "Female"}}, {"forbid": {"rel": "Wife", "sex": "Male"}}]
    (_, husband), (_, wife) = compile_constraints(spec, columns)
    assert husband.tolist() == [[False, True], [True, True], [True, True]]
    assert wife.tolist() == [[True, True], [True, True], [True, False]]
    for constraint in (ForbiddenCombination({"rel": ["Husband", "Wife"], "sex": "Male"}),
                       AllowedCombinations(["rel", "sex"], [("Husband", "Male")]),
                       FunctionalDependency("rel", "sex", {"Husband": "Male"})):
        assert constraint_from_dict(constraint.to_dict()) == constraint


@pytest.mark.parametrize("spec, error, match", [
    ({"forbid": {"a": 0, "z": 1}}, ValueError, "not fitted columns"),
    ({"forbid": {"a": 5, "b": 0}}, ValueError, "codes 0 .. 2"),
    ({"forbid": {"a": 0}}, ValueError, "at least two columns"),
    ({"allow": {"columns": ["a", "b"], "combinations": [(0,)]}}, ValueError, "each with 2 values"),
    ({"allow": {"columns": ["a", "b"]}}, ValueError, "malformed"),
    ({"dependency": {"determinant": "a", "dependent": "a", "mapping": {0: 0}}}, ValueError, "two columns"),
    ({"require": {"a": 0}}, ValueError, "Unknown constraint kind"),
    ({"forbid": {"a": [0, 1, 2], "b": [0, 1]}}, ValueError, "allows no combination"),
])
def test_malformed_constraints_are_refused_by_what_the_user_wrote(spec, error, match):
    with pytest.raises(error, match=match):
        compile_constraints([spec], _columns(a=3, b=2))


def test_unknown_labels_are_refused_and_constraints_must_be_a_list():
    columns = [Column("rel", 2, "values", pd.Index(["Husband", "Wife"]), np.dtype(object)),
               Column("sex", 2, "values", pd.Index(["F", "M"]), np.dtype(object))]
    with pytest.raises(ValueError, match=r"\['Spouse'\] not among the public categories of column 'rel'"):
        compile_constraints([{"forbid": {"rel": "Spouse", "sex": "F"}}], columns)
    with pytest.raises(TypeError, match="list of constraints"):
        compile_constraints({"forbid": {"rel": "Wife", "sex": "M"}}, columns)


def test_a_constrained_model_is_the_joint_times_the_indicator_renormalised():
    rng = np.random.default_rng(0)
    dom = Domain(["a", "b", "c", "d"], [3, 4, 2, 3])
    model = GraphicalModel(dom, {("a", "b"): rng.normal(size=(3, 4)), ("b", "c"): rng.normal(size=(4, 2)),
                                 ("c", "d"): rng.normal(size=(2, 3))}, 500.0)
    across = rng.random((3, 3)) < 0.6           # over (a, d): no clique holds both, so it closes a loop
    across[:, 1] = False                         # and every cell of d = 1 is impossible
    across[0, 0] = True
    inside = np.array([[True, False], [True, True], [False, True], [True, True]])    # over (b, c), a clique
    constrained = model.constrain([(("a", "d"), across), (("b", "c"), inside)])
    joint = model.project(["a", "b", "c", "d"])
    expected = joint * across[:, None, None, :] * inside[None, :, :, None]
    np.testing.assert_allclose(constrained.project(["a", "b", "c", "d"]), expected / expected.sum() * 500.0,
                               rtol=1e-9, atol=1e-12)
    assert constrained.project(["d"])[1] == 0.0 and constrained.total == model.total
    data = constrained.synthetic_data(5000, random_state=0)
    assert not violations(data, [(("a", "d"), across), (("b", "c"), inside)], dom.attrs).any()
    with pytest.raises(ValueError, match="shape"):
        model.constrain([(("a", "d"), across[:2])])


def test_a_constraint_the_model_cannot_meet_is_refused():
    dom = Domain(["a", "b"], [2, 2])
    with np.errstate(divide="ignore"):
        model = GraphicalModel(dom, {("a", "b"): np.log([[1.0, 0.0], [0.0, 5.0]])}, total=80)
    with pytest.raises(ValueError, match="probability 0"):
        model.constrain([(("a", "b"), np.array([[False, True], [True, False]]))])


def _fit(name, X, domain, constraints, random_state=0):
    half = [COLUMNS[:2], COLUMNS[2:]]
    make = {
        "mst": lambda: MSTSynthesizer(1.0, domain=domain, random_state=random_state),   # compresses countries
        "aim": lambda: AIMSynthesizer(1.0, domain=domain, random_state=random_state, max_iters=100),
        "ppsyn": lambda: PartitionSynthesizer(1.0, domain=domain, random_state=random_state, max_iters=100),
        "view": lambda: ViewSynthesizer(1.0, domain=domain, random_state=random_state),
        "hybrid": lambda: HybridSynthesizer(1.0, domain=domain, random_state=random_state, max_rounds=12,
                                            max_iters=50, partition={"n_slices": 1, "n_vertical": 2}),
        "vertimrf": lambda: VerticalMRFSynthesizer(4.0, 1e-6, domain=domain, party_columns=half, n_sketches=200,
                                                   random_state=random_state, local_mrf_params={"max_iters": 100}),
    }[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make().set_params(constraints=constraints).fit(X)


def _marginal(model, attrs):
    """The model's marginal with its axes in the order of ``attrs`` (``project`` gives the domain's order)."""
    canonical = model.domain.canonical(attrs)
    return np.transpose(model.project(list(attrs)), [canonical.index(a) for a in attrs])


# A 3-column rule too: the rarest countries never appear with a high income among women.
def _rules(X, domain):
    rare = [int(v) for v in np.argsort(np.bincount(X["native-country"], minlength=domain["native-country"]))[:6]]
    return [HUSBANDS_ARE_MEN, WIVES_ARE_WOMEN,
            {"forbid": {"sex": 0, "income>50K": 1, "native-country": rare}}]


@pytest.mark.parametrize("name", ["mst", "aim", "ppsyn", "view", "hybrid", "vertimrf"])
def test_no_synthetic_record_breaks_a_constraint(adult, name):
    X, domain = adult
    rules = _rules(X, domain)
    synth = _fit(name, X, domain, rules)
    synthetic = synth.sample(4000, random_state=0)
    assert len(synthetic) == 4000
    compiled = synth.constraints_
    codes = synthetic[COLUMNS].to_numpy()
    assert not violations(codes, compiled, COLUMNS).any()
    # The real records break the first two rules (4 of 8,000 here): the fit neither refuses nor reports them.
    assert violations(X.to_numpy(), compiled[:2], COLUMNS).sum() > 0
    if isinstance(synth.model_, GraphicalModel) and synth.model_.domain == synth.domain_:
        # Folded into the model: no mass on an impossible cell, so sampling needs no redraw.
        for attrs, mask in compiled:
            assert _marginal(synth.model_, attrs)[~mask].max() == 0.0
        assert not violations(synth._sample_codes(4000, np.random.default_rng(1)), compiled, COLUMNS).any()
    conditioned = synth.sample(500, random_state=0, conditions={"sex": 0}) if name != "view" else None
    if conditioned is not None:
        assert not violations(conditioned[COLUMNS].to_numpy(), compiled, COLUMNS).any()


@pytest.mark.parametrize("name", ["mst", "aim"])
def test_constraints_change_no_release_only_the_fitted_model(adult, name):
    """Same seed, same noise: every release (ledger, measurements) is the same with or without the
    constraints, and the constrained model is the unconstrained one re-estimated under them."""
    X, domain = adult
    rules = [HUSBANDS_ARE_MEN, WIVES_ARE_WOMEN]
    free, bound = _fit(name, X, domain, None), _fit(name, X, domain, rules)
    assert free.privacy_ledger_.to_frame().equals(bound.privacy_ledger_.to_frame())
    assert free.n_records_ == bound.n_records_ and free.constraints_ == []
    folded = fit_under_constraints(free.model_, free._model_allowed_cells(bound.constraints_),
                                   iters=free._CONSTRAINED_ITERS)
    for attrs in [("relationship", "sex"), ("sex", "income>50K"), ("race", "native-country")]:
        np.testing.assert_allclose(bound.model_.project(list(attrs)), folded.project(list(attrs)), rtol=1e-9)
    # The re-estimate keeps the marginals the method fitted: no 1-way marginal moves by more than twice the mass
    # the unconstrained model gave the forbidden cells (measured: 1.4 and 1.1 times).
    joint = free.model_.project(["sex", "relationship"])
    forbidden = joint[0, 2] + joint[1, 0]
    for attr in COLUMNS:
        assert np.abs(bound.model_.project([attr]) - free.model_.project([attr])).sum() < 2 * forbidden


def test_the_re_estimate_keeps_the_marginals_that_indicator_folding_alone_distorts():
    """A model that spread a level's years independently of it: multiplying by the dependency's indicator
    keeps p(level) p(years) on the diagonal, squaring the marginals; the re-estimate keeps them."""
    dom = Domain(["level", "years"], [4, 4])
    marginal = np.array([0.1, 0.2, 0.3, 0.4])
    spread = GraphicalModel(dom, {("level",): np.log(marginal), ("years",): np.log(marginal)}, total=1000.0)
    fixed = [(("level", "years"), np.eye(4, dtype=bool))]
    folded = spread.constrain(fixed).project(["level"]) / 1000.0
    np.testing.assert_allclose(folded, marginal**2 / (marginal**2).sum())
    refit = fit_under_constraints(spread, fixed)
    np.testing.assert_allclose(refit.project(["level"]) / 1000.0, marginal, atol=1e-3)
    np.testing.assert_allclose(refit.project(["level", "years"]), np.diag(marginal) * 1000.0, atol=1.0)


def test_an_invalid_constraint_is_refused_before_anything_is_spent(adult):
    X, domain = adult
    mst = MSTSynthesizer(1.0, domain=domain, random_state=0, constraints=[{"forbid": {"sex": 0, "salary": 1}}])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="not fitted columns"):
            mst.fit(X)
    assert not hasattr(mst, "privacy_ledger_") and not hasattr(mst, "model_")
    with pytest.raises(ValueError, match="constraints must be None, a list or a tuple"):
        MSTSynthesizer(constraints="sex != 0").fit(X)


def test_constraints_are_a_hyper_parameter(adult):
    rules = [HUSBANDS_ARE_MEN]
    mst = MSTSynthesizer(constraints=rules)
    assert mst.get_params()["constraints"] is rules and clone(mst).constraints == rules


def test_sample_gives_up_clearly_when_the_model_almost_never_meets_the_constraints(adult, monkeypatch):
    X, domain = adult
    mst = _fit("mst", X, domain, [HUSBANDS_ARE_MEN])
    monkeypatch.setattr(mst, "constraints_", [(("sex",), np.array([True, False]))])   # never male
    monkeypatch.setattr(mst, "_sample_codes", lambda n, rng: np.ones((n, len(COLUMNS)), dtype=np.int64))
    with pytest.raises(RuntimeError, match="almost never meets the constraints"):
        mst.sample(10, random_state=0)


def _people_csv(tmp_path, constraints, region=("N", "S")):
    rng = np.random.default_rng(0)
    n = 2000
    relationship = rng.choice(["Husband", "Wife", "Child"], n)
    sex = np.where(relationship == "Husband", "Male",
                   np.where(relationship == "Wife", "Female", rng.choice(["Male", "Female"], n)))
    pd.DataFrame({"relationship": relationship, "sex": sex, "region": rng.choice(region, n),
                  "age": rng.integers(18, 90, n)}).to_csv(tmp_path / "people.csv", index=False)
    schema = {"relationship": ["Husband", "Wife", "Child"], "sex": ["Female", "Male"], "region": list(region),
              "age": {"type": "numeric", "bounds": [18, 90]}, "$constraints": constraints}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    return ["synthesize", str(tmp_path / "people.csv"), "--schema", str(tmp_path / "schema.json"),
            "--epsilon", "0.5", "--method", "aim", "-o", str(tmp_path / "out.csv"), "-q", "--seed", "0"]


def test_the_command_line_takes_constraints_in_the_schema(tmp_path):
    rules = [{"forbid": {"relationship": "Husband", "sex": "Female"}},
             {"allow": {"columns": ["relationship", "region"],
                        "combinations": [["Husband", "N"], ["Wife", "N"], ["Child", "N"], ["Child", "S"]]}}]
    assert main(_people_csv(tmp_path, rules)) == 0
    out = pd.read_csv(tmp_path / "out.csv")
    assert len(out) > 1000
    assert not ((out["relationship"] == "Husband") & (out["sex"] == "Female")).any()
    assert set(out.loc[out["relationship"] != "Child", "region"]) == {"N"}


@pytest.mark.parametrize("rules, message", [
    ([{"forbid": {"relationship": "Husband", "age": 20}}], "names numeric columns ['age']"),
    ({"forbid": {"relationship": "Husband", "sex": "Female"}}, "must be a list of constraints"),
    ([{"forbid": {"relationship": "Spouse", "sex": "Female"}}], "not among the public categories"),
    ([{"never": {"relationship": "Husband"}}], "Unknown constraint kind"),
])
def test_the_command_line_refuses_bad_constraints_in_one_line(tmp_path, capsys, rules, message):
    assert main(_people_csv(tmp_path, rules)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
