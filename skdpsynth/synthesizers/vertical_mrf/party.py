"""The parties of VertiMRF: vertical partitions, the budget split, and what crosses to the server.

Sections, algorithms and theorems are those of the KDD'24 paper (Algorithm 1
for the whole method, §7.1 for the budget split, §4.3 for the accounting);
``doc/deviations.md`` lists where this module departs from it.  Each party
holds some columns of the *same* individuals (rows aligned by a record ID,
§3.1).  A party runs, on its own columns only (:meth:`VerticalParty.run`):

1. LocMRF (§4.1): a private graphical model of its columns.  Our learner is
   :class:`~skdpsynth.AIMSynthesizer` (or MST) at (ε₀, δ₀), accounted exactly
   in zCDP and charged as one (ε₀, δ₀) entry (``doc/deviations.md``, "Local
   models by AIM");
2. dimension reduction (§6.1): public equal-width bins for columns with more
   than ``n_bins`` values (``doc/deviations.md``, "Binning over the public
   domain") and their Laplace-noised value distributions;
3. the noisy record count n̂ (§7.1), released once, by the count leader
   (``doc/deviations.md``, "One noisy record count");
4. LocEnc (§4.2; Algorithm 3 of the extended version): DP Flajolet–Martin
   sketches of every (column, binned value) with the t keys the parties share
   and the server never sees (``doc/deviations.md``, "Keyed sketch hashes"),
   or, for the VertiMRF-FO baseline (App. B; the extended version's §4.2),
   the GRR-perturbed columns.

What it sends is a :class:`VerticalMessage` (Algorithm 1, line 2) and nothing else; the
server (:mod:`skdpsynth.synthesizers.vertical_mrf`) reads only messages and
the public :class:`VerticalConfig`.  Messages serialise in the project's wire
format (:meth:`VerticalMessage.to_bytes`, :mod:`~skdpsynth.federated.wire`),
which is what a party would put on the wire, and the server validates every
field on receipt (:func:`~.message.check_vertical_message`);
keys cannot be serialised at all (:class:`~.sketches.SketchKeys`).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...domain import Domain
from ...marginals import kway_cliques
from ...privacy import PrivacyLedger, cdp_rho, laplace_mechanism
from ...privacy.ledger import LedgerEntry
from ...privacy.randomness import ReproducibleNoiseWarning, child_random_states, noise_generator
from . import sketches as fm
from .binning import equal_width_bins, value_distributions
from .frequency_oracle import fo_epsilon_prime, grr_perturb
from ..aim import AIMSynthesizer
from ..mst import MSTSynthesizer
from .message import VerticalMessage

__all__ = ["VerticalBudget", "VerticalConfig", "VerticalParty", "vertical_budget",
           "sketch_epsilon_prime_rdp"]

ENCODERS = ("fm", "fo", "none")
SKETCH_ACCOUNTING = ("theorem2", "rdp_opt")
FO_ACCOUNTING = ("conservative", "paper")
LOCAL_LEARNERS = ("aim", "mst")
DEFAULT_SPLIT = {"local_mrf": 0.4, "encoding": 0.4, "count_frac": 0.1, "binning": 0.2}
DEFAULT_DELTA_SPLIT = {"local_mrf": 0.5, "encoding": 0.5}


def sketch_epsilon_prime_rdp(epsilon_enc: float, t: int, d: int, delta: float) -> float:
    """The per-sketch ε′ whose RDP conversion (:func:`~.sketches.rdp_optimal_epsilon`) equals ``epsilon_enc``.

    The proof of Theorem 2 (VertiMRF, KDD'24, App. C.1) gives (λ, ρλ)-RDP with
    ρ = 2tdε′², converted at an order λ ≥ 2.  Solving ε = ρ + 2√(ρ ln 1/δ)
    (optimal order ≥ 2, i.e. ε ≤ 3 ln 1/δ) for ρ: √ρ = √(ln 1/δ + ε) −
    √(ln 1/δ); beyond, ε = 2ρ + ln 1/δ at λ = 2: ρ = (ε − ln 1/δ)/2.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.party import sketch_epsilon_prime_rdp
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import rdp_optimal_epsilon, sketch_epsilon_prime
    >>> e = sketch_epsilon_prime_rdp(0.288, 2000, 15, 1e-5)
    >>> round(rdp_optimal_epsilon(e, 2000, 15, 1e-5), 12), e > sketch_epsilon_prime(0.288, 2000, 15, 1e-5)
    (0.288, True)
    >>> round(rdp_optimal_epsilon(sketch_epsilon_prime_rdp(40.0, 2000, 15, 5e-3), 2000, 15, 5e-3), 12)
    40.0
    """
    if int(t) < 1 or int(d) < 1 or not (0 < float(delta) < 1):
        raise ValueError("need t >= 1, d >= 1 and 0 < delta < 1")
    log_term = math.log(1.0 / float(delta))
    epsilon_enc = float(epsilon_enc)
    if epsilon_enc <= 3.0 * log_term:
        rho = (math.sqrt(log_term + epsilon_enc) - math.sqrt(log_term)) ** 2
    else:
        rho = (epsilon_enc - log_term) / 2.0
    return math.sqrt(rho / (2.0 * int(t) * int(d)))


@dataclass(frozen=True)
class VerticalBudget:
    """Each component's share of (ε, δ) (KDD'24 §7.1; §4.3): basic composition sums them to the budget.

    Attributes
    ----------
    epsilon_local, delta_local : float
        (ε₀, δ₀) of each party's local model.
    epsilon_count : float
        ε of the noisy record count (one Laplace release).
    epsilon_encoding, delta_encoding : float
        The joint guarantee of all parties' encodings (sketches: Theorem 2 or
        RDP-optimal; FO: basic composition over a record's d attributes).
    epsilon_binning : float
        ε of all value distributions together; each binned column gets
        ``epsilon_binning / n_binned`` (``doc/deviations.md``, "Binning budget
        per binned column").
    epsilon_prime : float
        Per-sketch ε′ (FM) or per-attribute GRR ε′ (FO); 0 without encoding.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.party import vertical_budget
    >>> b = vertical_budget(1.0, 1e-6, n_parties=2, n_attributes=3, n_binned=1, n_sketches=50)
    >>> b.encoder, round(b.epsilon_local, 6), round(b.epsilon_count, 6), round(b.epsilon_per_binned, 6)
    ('fm', 0.2, 0.04, 0.2)
    >>> [round(x, 12) for x in b.total()]        # basic composition: back to (ε, δ)
    [1.0, 1e-06]
    """

    epsilon: float
    delta: float
    n_parties: int
    n_attributes: int
    n_binned: int
    encoder: str
    epsilon_local: float
    delta_local: float
    epsilon_count: float
    epsilon_encoding: float
    delta_encoding: float
    epsilon_binning: float
    epsilon_prime: float

    @property
    def epsilon_per_binned(self) -> float:
        return self.epsilon_binning / self.n_binned if self.n_binned else 0.0

    @property
    def releases_value_distributions(self) -> bool:
        """Whether the binned columns' value distributions are released (not with UniSam or without binning)."""
        return self.epsilon_binning > 0

    def total(self) -> tuple[float, float]:
        """(Σε, Σδ) by basic composition (KDD'24 §4.3): equals (ε, δ)."""
        eps = math.fsum([self.n_parties * self.epsilon_local, self.epsilon_count, self.epsilon_encoding,
                         self.epsilon_binning])
        return eps, math.fsum([self.n_parties * self.delta_local, self.delta_encoding])


def _shares(given, default, name):
    out = dict(default)
    if given is not None:
        unknown = set(given) - set(default)
        if unknown:
            raise ValueError(f"{name} has unknown keys {sorted(unknown)}; known: {sorted(default)}.")
        out.update(given)
    for k, v in out.items():
        if not (isinstance(v, (int, float, np.number)) and 0 <= v <= 1):
            raise ValueError(f"{name}[{k!r}] must be in [0, 1], got {v!r}.")
    return out


def vertical_budget(epsilon: float, delta: float, *, n_parties: int, n_attributes: int, n_binned: int,
                    encoder: str = "fm", n_sketches: int = 2000, budget_split=None, delta_split=None,
                    sketch_accounting: str = "theorem2", fo_accounting: str = "conservative",
                    value_distributions: bool = True) -> VerticalBudget:
    """The budget split of VertiMRF (KDD'24 §7.1; for FO, the extended version's §4.2).

    Where the paper leaves the split open, ``doc/deviations.md`` gives the
    choice: "One noisy record count", "Binning budget per binned column" and
    "Splitting delta".

    Defaults: 40 % of ε to the local models (ε₀ = 0.4ε/m each), 40 % to the
    encoding of which 10 % is the record count (0.04ε, released once) and the
    rest the sketches (0.36ε), 20 % to the value distributions; with no binned
    column, or with ``value_distributions=False`` (HisRec's UniSam ablation,
    which releases none), that 20 % goes to the sketches, as in the UniSam
    ablation of VertiMRF (extended version, App. A.1).  δ: half to the local
    models (δ/(2m) each), half to the sketches (KDD'24 Algorithm 1).  Pure-ε
    encodings (FO) and ``encoder="none"`` need no δ: the local models get all
    of it, and with ``"none"`` all of ε but the count's.

    With ``sketch_accounting="theorem2"``, ε′ is Theorem 2's only where
    Theorem 2 holds (ε_enc ≤ :data:`~.sketches.THEOREM2_RANGE` · ln(1/δ_enc));
    beyond, it is the smaller ε′ of the RDP conversion
    (:func:`~.sketches.rdp_optimal_epsilon`), so that the charged ε_enc is
    always a valid bound.

    Raises
    ------
    ValueError
        On an invalid split, or when columns are binned and value distributions
        released while ``budget_split`` gives ``"binning"`` no share.

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf.party import vertical_budget
    >>> b = vertical_budget(1.6, 1e-5, n_parties=2, n_attributes=16, n_binned=0)
    >>> round(b.epsilon_local, 6), round(b.epsilon_count, 6), round(b.epsilon_encoding, 6), b.epsilon_binning
    (0.32, 0.064, 0.896, 0.0)
    >>> [round(x, 12) for x in b.total()]
    [1.6, 1e-05]
    >>> u = vertical_budget(1.6, 1e-5, n_parties=2, n_attributes=16, n_binned=3, value_distributions=False)
    >>> round(u.epsilon_encoding, 6), u.epsilon_binning      # UniSam: the binning share goes to the sketches
    (0.896, 0.0)
    """
    if encoder not in ENCODERS:
        raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}.")
    if sketch_accounting not in SKETCH_ACCOUNTING:
        raise ValueError(f"sketch_accounting must be one of {SKETCH_ACCOUNTING}, got {sketch_accounting!r}.")
    if fo_accounting not in FO_ACCOUNTING:
        raise ValueError(f"fo_accounting must be one of {FO_ACCOUNTING}, got {fo_accounting!r}.")
    split = _shares(budget_split, DEFAULT_SPLIT, "budget_split")
    dsplit = _shares(delta_split, DEFAULT_DELTA_SPLIT, "delta_split")
    if not math.isclose(split["local_mrf"] + split["encoding"] + split["binning"], 1.0, rel_tol=1e-9):
        raise ValueError("budget_split's local_mrf + encoding + binning must sum to 1 "
                         f"(count_frac is a share of encoding); got {split}.")
    if not math.isclose(dsplit["local_mrf"] + dsplit["encoding"], 1.0, rel_tol=1e-9):
        raise ValueError(f"delta_split's local_mrf + encoding must sum to 1; got {dsplit}.")
    if split["local_mrf"] <= 0 or (encoder != "none" and split["encoding"] * (1 - split["count_frac"]) <= 0):
        raise ValueError("budget_split must give a positive share to the local models and to the encoding.")
    if split["count_frac"] <= 0 or split["encoding"] <= 0:
        raise ValueError("budget_split must give the record count a positive share (count_frac and encoding > 0).")
    releases_dists = bool(n_binned) and encoder != "none" and bool(value_distributions)
    if releases_dists and split["binning"] <= 0:
        raise ValueError("budget_split gives 'binning' no share, but columns with more than n_bins values are "
                         "binned and their value distributions released. Give budget_split['binning'] a positive "
                         "share, or pass his_rec='uniform' (no value distributions: the share goes to the "
                         "sketches), or n_bins=None (no binning).")
    epsilon, delta, m, d = float(epsilon), float(delta), int(n_parties), int(n_attributes)
    eps_count = split["encoding"] * split["count_frac"] * epsilon
    eps_bin = split["binning"] * epsilon if releases_dists else 0.0
    eps_local_total = split["local_mrf"] * epsilon
    eps_enc = split["encoding"] * (1 - split["count_frac"]) * epsilon
    if encoder != "none" and not releases_dists:
        eps_enc += split["binning"] * epsilon  # no value distribution released: the share goes to the sketches
    if encoder == "none":
        eps_local_total, eps_enc = epsilon - eps_count, 0.0
    if encoder == "fm":
        delta_local_total, delta_enc = dsplit["local_mrf"] * delta, dsplit["encoding"] * delta
        if sketch_accounting == "theorem2":
            # Theorem 2 where it holds; beyond its range the RDP conversion is the valid (smaller) ε′.
            eps_prime = min(fm.sketch_epsilon_prime(eps_enc, n_sketches, d, delta_enc),
                            sketch_epsilon_prime_rdp(eps_enc, n_sketches, d, delta_enc))
        else:
            eps_prime = sketch_epsilon_prime_rdp(eps_enc, n_sketches, d, delta_enc)
    else:
        delta_local_total, delta_enc = delta, 0.0
        eps_prime = fo_epsilon_prime(eps_enc, d, delta, fo_accounting) if encoder == "fo" else 0.0
    return VerticalBudget(epsilon, delta, m, d, int(n_binned), encoder, eps_local_total / m, delta_local_total / m,
                          eps_count, eps_enc, delta_enc, eps_bin, eps_prime)


@dataclass(frozen=True)
class VerticalConfig:
    """The public parameters of a VertiMRF run, known to every party and to the server (no data).

    Attributes
    ----------
    parties : tuple of (name, columns)
        Who holds which columns (disjoint, covering ``domain``).
    domain : Domain
        The public raw domain of every column.
    budget : VerticalBudget
    n_sketches, gamma : int, float
        t and γ of the sketches.
    n_bins : int or None
        Columns with more values are binned (equal width); ``None``: no binning.
    count_leader : int
        Index of the party that releases n̂.
    local_learner : str
        ``"aim"`` or ``"mst"``.
    local_params : dict
        Extra hyper-parameters of the local learner.
    local_max_cells : int
        τ′, the local clique limit (KDD'24 §4.1; ``doc/deviations.md``, "A
        feasible local clique limit"): the local learner's workload
        keeps cliques of at most this many cells.

    Examples
    --------
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.vertical_mrf.party import VerticalConfig, vertical_budget
    >>> dom = Domain(["a", "b", "c"], [2, 3, 6])
    >>> budget = vertical_budget(1.0, 1e-6, n_parties=2, n_attributes=3, n_binned=1, n_sketches=50)
    >>> config = VerticalConfig((("p0", ("a",)), ("p1", ("b", "c"))), dom, budget, n_sketches=50, n_bins=4)
    >>> config.party_names, config.is_binned("b"), config.is_binned("c")
    (['p0', 'p1'], False, True)
    >>> config.bin_map("c").tolist(), config.binned_size("c")       # public equal-width bins of c's 6 codes
    ([0, 0, 1, 2, 2, 3], 4)
    """

    parties: tuple[tuple[str, tuple[str, ...]], ...]
    domain: Domain
    budget: VerticalBudget
    n_sketches: int = 2000
    gamma: float = 1.0
    n_bins: int | None = 4
    count_leader: int = 0
    local_learner: str = "aim"
    local_params: Mapping = field(default_factory=dict)
    local_max_cells: int = 10_000
    fo_accounting: str = "conservative"

    def __post_init__(self):
        seen = []
        for name, columns in self.parties:
            if not columns:
                raise ValueError(f"Party {name!r} holds no columns.")
            if tuple(columns) != self.domain.canonical(columns) or len(set(columns)) != len(columns):
                raise ValueError(f"Party {name!r}: its columns must be distinct and in domain order.")
            seen.extend(columns)
        if sorted(seen, key=self.domain.index) != list(self.domain.attrs):
            raise ValueError("The parties' columns must be disjoint and cover the domain.")
        if len({name for name, _ in self.parties}) != len(self.parties):
            raise ValueError("Party names must be unique.")

    @property
    def encoder(self) -> str:
        return self.budget.encoder

    @property
    def party_names(self) -> list[str]:
        return [name for name, _ in self.parties]

    def bin_map(self, column: str) -> np.ndarray:
        """The public bin of each raw code of ``column`` (identity when it is not binned)."""
        size = self.domain[column]
        if self.n_bins is None or size <= self.n_bins:
            return np.arange(size)
        return equal_width_bins(size, self.n_bins)

    def is_binned(self, column: str) -> bool:
        return self.n_bins is not None and self.domain[column] > self.n_bins

    def binned_size(self, column: str) -> int:
        return int(self.bin_map(column).max()) + 1

    @property
    def sketch_parameters(self) -> tuple[int, int]:
        """(k_p, α_min) of the sketches (public: from ε′ and γ)."""
        return fm.dpfm_parameters(self.budget.epsilon_prime, self.gamma)


# -- the party --------------------------------------------------------------------------------------------------------
class VerticalParty:
    """One data party of VertiMRF: its columns in, one :class:`VerticalMessage` out (KDD'24 Algorithm 1, lines 1–2).

    Parameters
    ----------
    index : int
        Position of the party in ``config.parties``.
    config : VerticalConfig
        The public parameters.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from skdpsynth import Domain
    >>> from skdpsynth.synthesizers.vertical_mrf.sketches import SketchKeys
    >>> from skdpsynth.synthesizers.vertical_mrf.party import VerticalConfig, VerticalParty, vertical_budget
    >>> dom = Domain(["a", "b", "c"], [2, 3, 6])
    >>> budget = vertical_budget(4.0, 1e-6, n_parties=2, n_attributes=3, n_binned=1, n_sketches=50)
    >>> config = VerticalConfig((("p0", ("a",)), ("p1", ("b", "c"))), dom, budget, n_sketches=50,
    ...                         local_params={"max_iters": 50, "final_iters": 50})
    >>> codes = np.random.default_rng(0).integers(0, [3, 6], size=(500, 2))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     msg = VerticalParty(1, config).run(codes, SketchKeys.generate(50), random_state=0)
    >>> msg.sketches.shape, sorted(msg.value_distributions), msg.n_hat is None
    ((50, 7), ['c'], True)
    """

    def __init__(self, index: int, config: VerticalConfig):
        self.index = int(index)
        self.config = config
        self.name, self.columns = config.parties[self.index]

    def run(self, codes: np.ndarray, keys: fm.SketchKeys | None, *, random_state=None) -> VerticalMessage:
        """Run the party's side on its integer-coded columns (rows aligned with the other parties).

        Parameters
        ----------
        codes : ndarray of int, shape (n, len(columns))
            The party's columns coded ``0 .. size - 1`` over the public domain.
        keys : SketchKeys or None
            The t shared sketch keys (FM only); they never enter the message.
        random_state : None, int or Generator
            Source of this party's noise (``None``: OS entropy).

        Returns
        -------
        VerticalMessage
        """
        cfg, budget = self.config, self.config.budget
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(self.columns):
            raise ValueError(f"Party {self.name!r} holds {len(self.columns)} columns; got codes that are not a 2-D "
                             "table of as many columns.")  # not the shape: its length is the private count
        sizes = [cfg.domain[c] for c in self.columns]
        if len(codes) and ((codes < 0).any() or (codes >= np.asarray(sizes)).any()):
            raise ValueError(f"Party {self.name!r}: codes outside the public domain.")
        local_state, count_state, bin_state, enc_state = child_random_states(random_state, 4)
        ledger = PrivacyLedger()

        # LocMRF (§4.1): the local model of the party's columns, (ε₀, δ₀).
        model, measured = self._local_model(codes, local_state, ledger)
        graph_edges = sorted({(a, b) for clique in model.junction_tree.cliques
                              for i, a in enumerate(clique) for b in clique[i + 1:]})

        # Public bins and noisy value distributions (§6.1; Laplace on per-value counts, sensitivity 1).
        dists = {}
        if budget.releases_value_distributions:
            rng_bin = noise_generator(bin_state)
            for j, col in enumerate(self.columns):
                if cfg.is_binned(col):
                    dists[col] = value_distributions(
                        codes[:, j], sizes[j], cfg.bin_map(col), budget.epsilon_per_binned, random_state=rng_bin,
                        ledger=ledger, description=f"value distribution of {col!r} (binning)", party=self.name)

        # The noisy record count (§7.1), released once by the leader.
        n_hat = None
        if self.index == cfg.count_leader:
            noisy = laplace_mechanism(np.array([len(codes)]), epsilon=budget.epsilon_count,
                                      random_state=noise_generator(count_state), ledger=ledger,
                                      description="record count n̂", party=self.name)
            n_hat = float(max(1.0, round(float(noisy[0]))))

        # LocEnc (FM, §4.2) or GRR (FO, App. B), on the binned codes.
        binned = np.column_stack([cfg.bin_map(c)[codes[:, j]] for j, c in enumerate(self.columns)]) \
            if len(self.columns) else codes
        binned_sizes = [cfg.binned_size(c) for c in self.columns]
        sketches = perturbed = None
        share = len(self.columns) / budget.n_attributes
        if cfg.encoder == "fm":
            if keys is None or len(keys) != cfg.n_sketches:
                raise ValueError(f"Party {self.name!r} needs the {cfg.n_sketches} shared sketch keys.")
            sketches = fm.encode(binned, binned_sizes, keys, cfg.gamma, budget.epsilon_prime,
                                 random_state=noise_generator(enc_state))
            k_p, alpha_min = cfg.sketch_parameters
            ledger.add(f"DPFM sketches of {len(self.columns)} columns (share {len(self.columns)}/"
                       f"{budget.n_attributes} of the joint guarantee over all parties' attributes)",
                       "dpfm", epsilon=budget.epsilon_encoding * share, delta=budget.delta_encoding * share,
                       scale=budget.epsilon_prime, party=self.name, n_values=int(sketches.size),
                       epsilon_prime=budget.epsilon_prime, k_p=k_p, alpha_min=alpha_min, t=cfg.n_sketches,
                       joint_epsilon=budget.epsilon_encoding, joint_delta=budget.delta_encoding)
        elif cfg.encoder == "fo":
            rng_enc = noise_generator(enc_state)
            perturbed = np.column_stack([
                grr_perturb(binned[:, j], binned_sizes[j], budget.epsilon_prime, random_state=rng_enc)
                for j in range(len(self.columns))]).astype(np.int32)
            ledger.add(f"GRR-perturbed columns ({len(self.columns)} x ε′ = {budget.epsilon_prime:.4g})", "grr",
                       epsilon=budget.epsilon_prime * len(self.columns), party=self.name,
                       n_values=int(perturbed.size), fo_accounting=cfg.fo_accounting)
        return VerticalMessage(self.name, tuple(self.columns), dict(model.potentials), float(model.total),
                               [tuple(c) for c in measured], graph_edges, dists, sketches, perturbed, n_hat,
                               list(ledger))

    def _local_model(self, codes: np.ndarray, random_state, ledger: PrivacyLedger):
        cfg, budget = self.config, self.config.budget
        local_domain = cfg.domain.project(self.columns)
        eps0, delta0 = budget.epsilon_local, budget.delta_local
        params = dict(cfg.local_params)
        if cfg.local_learner == "aim":
            # Every column in the workload (AIM models only workload attributes; a column whose 3-way cliques all
            # exceed τ′ would otherwise be left uniform), plus the 2- and 3-way cliques within τ′ (§4.1).
            params.setdefault("workload", [(a,) for a in local_domain.attrs] + [
                c for k in (2, 3) for c in kway_cliques(local_domain, k, int(cfg.local_max_cells))])
            params.setdefault("max_cells", None)
            learner = AIMSynthesizer(eps0, delta0, domain=local_domain.to_dict(), random_state=random_state,
                                     **params)
        else:
            params["compress"] = False  # the server reads potentials over the raw local domain
            learner = MSTSynthesizer(eps0, delta0, domain=local_domain.to_dict(), random_state=random_state,
                                     **params)
        frame = pd.DataFrame(codes, columns=list(self.columns))
        with warnings.catch_warnings():
            # The synthesizer's fit already warned about a fixed seed once; the sub-fit's seed derives from it.
            warnings.simplefilter("ignore", ReproducibleNoiseWarning)
            learner.fit(frame)
        sub = learner.privacy_ledger_
        rho0 = cdp_rho(eps0, delta0)
        if not math.isclose(sub.total_zcdp(), rho0, rel_tol=1e-9):
            raise RuntimeError(f"local model of {self.name!r} spent rho={sub.total_zcdp()} instead of {rho0}.")
        ledger.record(LedgerEntry(
            f"local model ({cfg.local_learner.upper()} on {len(self.columns)} columns, rho={rho0:.6g}-zCDP)",
            cfg.local_learner, "approx", rho=None, epsilon=eps0, delta=delta0, party=self.name,
            n_values=sum(e.n_values or 0 for e in sub), details={"zcdp_rho": rho0, "n_releases": len(sub)}))
        # 𝒮_i: the 1-way marginals and the learner's selected cliques (AIM's rounds, MST's tree).
        selected = learner.selected_ if cfg.local_learner == "aim" else learner.tree_
        measured = [(a,) for a in local_domain.attrs] + [tuple(c) for c in selected]
        return learner.model_, list(dict.fromkeys(local_domain.canonical(c) for c in measured))
