"""The VertiMRF server: from the parties' messages to a global graphical model (KDD'24 §4.2 and §5).

The server is honest-but-curious and sees only :class:`~skdpsynth.synthesizers.vertical_mrf.party.VerticalMessage`
objects and the public :class:`~skdpsynth.synthesizers.vertical_mrf.party.VerticalConfig`; everything here is
post-processing of DP releases and spends no budget.  Phases (KDD'24 Algorithm 1, lines 3–6; sections are KDD'24's,
and ``doc/deviations.md`` lists where this module departs from the paper):

* CarEst (§4.2; Algorithm 4 of the extended version) — cross-party contingency tables on the binned domains from
  the sketches (:func:`skdpsynth.synthesizers.vertical_mrf.sketches.car_est`), or, for VertiMRF-FO, from the GRR
  columns (App. B);
* HisRec (§6.1, Eq. (5)) — back to the raw domains with the parties' noisy value distributions;
* GraphCom (Phase 3, §5.1) — the local graphs plus cross-party edges in descending R-score
  order while the triangulated graph's cliques stay within τ cells;
* InitMRF (Phase 4, §5.2) — fit the global model to the local models' marginals (scaled to n̂);
* OptMRF (Phase 5, §5.3) — rounds adding the cross-party marginals the model infers worst,
  each measured by CarEst → HisRec → consistency (§6.2);
* the model then generates the synthetic table (Phase 6) in the estimator.

The global model is estimated by our Private-PGM engine (:func:`~skdpsynth.graphical.mirror_descent`)
with an unweighted squared loss (every measurement σ = 1), as in PrivMRF and the authors' code.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ...domain import Domain
from . import sketches as fm
from .binning import his_rec, uniform_value_distributions
from .frequency_oracle import fo_marginal, grr_probabilities
from .message import VerticalMessage, check_vertical_message
from .party import VerticalConfig
from ...federated.wire import MessageError
from ...graphical import GraphicalModel, JunctionTree, Measurement, mirror_descent
from .consistency import enforce_consistency, normalise, rake

__all__ = ["VerticalServer", "ServerResult"]

Clique = tuple[str, ...]


@dataclass
class ServerResult:
    """What the server ends with (all of it post-processing of the messages).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdpsynth import VerticalMRFSynthesizer
    >>> from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
    >>> from skdpsynth.synthesizers.vertical_mrf.server import ServerResult, VerticalServer
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 2000)
    >>> hospital = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, 2000)) % 3})
    >>> insurer = pd.DataFrame({"c": (a + (rng.random(2000) < 0.2)) % 3})
    >>> syn = VerticalMRFSynthesizer(epsilon=4.0, delta=1e-6, n_sketches=100, domain={"a": 3, "b": 3, "c": 3},
    ...                              local_mrf_params={"max_iters": 100}, keep_messages=True, random_state=0)
    >>> messages = [VerticalMessage.from_bytes(b) for b in syn.fit([hospital, insurer]).messages_]
    >>> result = VerticalServer(syn.config_, random_state=0).fit(messages)
    >>> isinstance(result, ServerResult), round(result.n_hat), result.cliques
    (True, 1998, [('a', 'b', 'c')])
    >>> result.marginal_set, sorted(result.local_models)   # the parties' local marginals
    ([('a',), ('b',), ('a', 'b'), ('c',)], ['party0', 'party1'])
    >>> result.candidates, result.cross_marginals   # 100 sketches: too noisy for a cross-party marginal
    ([], [])
    """

    model: GraphicalModel
    n_hat: float
    graph: nx.Graph
    cliques: list
    marginal_set: list
    cross_marginals: list
    r_scores: dict
    candidates: list
    measurements: list = field(default_factory=list)
    local_models: dict = field(default_factory=dict)


class VerticalServer:
    """The server of VertiMRF (KDD'24 §4.2, §5): messages in, a global graphical model out.

    Parameters are those of :class:`~skdpsynth.synthesizers.VerticalMRFSynthesizer` of the same
    names; ``random_state`` only drives ``candidates_per_round`` sampling (public randomness) and
    ``log`` receives progress lines.

    Examples
    --------
    :class:`~skdpsynth.synthesizers.VerticalMRFSynthesizer` runs the parties and then
    ``VerticalServer(config, ...).fit(messages)``; with ``keep_messages=True`` the server can be replayed
    on the serialised messages:

    >>> import numpy as np, pandas as pd
    >>> from skdpsynth import VerticalMRFSynthesizer
    >>> from skdpsynth.synthesizers.vertical_mrf.message import VerticalMessage
    >>> from skdpsynth.synthesizers.vertical_mrf.server import VerticalServer
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 2000)
    >>> hospital = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, 2000)) % 3})
    >>> insurer = pd.DataFrame({"c": (a + (rng.random(2000) < 0.2)) % 3})
    >>> syn = VerticalMRFSynthesizer(epsilon=4.0, delta=1e-6, n_sketches=200, domain={"a": 3, "b": 3, "c": 3},
    ...                              local_mrf_params={"max_iters": 100}, keep_messages=True, random_state=0)
    >>> messages = [VerticalMessage.from_bytes(b) for b in syn.fit([hospital, insurer]).messages_]
    >>> [m.party for m in messages]
    ['party0', 'party1']
    >>> result = VerticalServer(syn.config_, random_state=0).fit(messages)
    >>> round(result.n_hat), result.cross_marginals   # the noisy count, and the cross-party marginals added
    (1998, [('a', 'c'), ('b', 'c')])
    >>> result.model.project(("a", "c")).shape
    (3, 3)
    """

    def __init__(self, config: VerticalConfig, *, cardinality_estimator: str = "hll", his_rec: str = "value_dist",
                 max_clique_size: float = 2e6, max_model_size: float = 4e6, max_cross_edges: int | None = None,
                 cross_marginal_max_way: int = 2, min_avg_cell_count="auto", n_cross_marginals: int | None = None,
                 n_refine_rounds: int | None = None, candidates_per_round: int | None = None,
                 consistency: bool | str = "rake", consistency_iters: int = 4, md_iters: int = 1000, tol: float = 1e-6,
                 random_state=None, log: Callable[[str], None] = lambda message: None):
        self.config = config
        self.cardinality_estimator = cardinality_estimator
        self.his_rec = his_rec
        self.max_clique_size = max_clique_size
        self.max_model_size = max_model_size
        self.max_cross_edges = max_cross_edges
        self.cross_marginal_max_way = cross_marginal_max_way
        self.min_avg_cell_count = min_avg_cell_count
        self.n_cross_marginals = n_cross_marginals
        self.n_refine_rounds = n_refine_rounds
        self.candidates_per_round = candidates_per_round
        self.consistency = consistency
        self.consistency_iters = consistency_iters
        self.md_iters = md_iters
        self.tol = tol
        self.random_state = random_state
        self.log = log

    # -- reading the messages ---------------------------------------------------------------------------------------
    def _receive(self, messages: Sequence[VerticalMessage | bytes]) -> None:
        """Read the parties' messages (bytes or :class:`VerticalMessage`), validating every field on receipt.

        The server trusts nothing a party sends: each message goes through
        :func:`~.message.check_vertical_message` against the
        public configuration, and anything malformed raises a
        :class:`~skdpsynth.federated.wire.MessageError` naming the party.
        """
        cfg = self.config
        by_name: dict = {}
        for msg in messages:
            if isinstance(msg, (bytes, bytearray, memoryview)):
                msg = VerticalMessage.from_bytes(bytes(msg), config=cfg)
            elif isinstance(msg, VerticalMessage):
                check_vertical_message(msg, cfg)
            else:
                raise TypeError(f"The server reads VerticalMessage objects or their bytes, got {type(msg).__name__}.")
            if msg.party in by_name:
                raise MessageError(msg.party, "a second message from this party.")
            by_name[msg.party] = msg
        missing = [name for name in cfg.party_names if name not in by_name]
        if missing:
            raise MessageError(missing[0], "no message from this party.")
        self.messages = [by_name[name] for name in cfg.party_names]
        self.n_hat = float(self.messages[cfg.count_leader].n_hat)  # checked: the leader's only, finite, >= 1
        self.owner = {col: i for i, (_, columns) in enumerate(cfg.parties) for col in columns}
        domain = cfg.domain
        self.local_models = {msg.party: GraphicalModel(domain.project(msg.columns), msg.local_potentials,
                                                       msg.local_total) for msg in self.messages}
        # Per column: bin map, value distribution (uniform within bins when none is released) and encoding block.
        uniform = self.his_rec == "uniform" or not cfg.budget.releases_value_distributions
        self.bin_maps = {c: cfg.bin_map(c) for c in domain.attrs}
        self.value_dists = {}
        for msg in self.messages:
            for col in msg.columns:
                if not cfg.is_binned(col):
                    self.value_dists[col] = np.ones(domain[col])
                elif uniform:
                    self.value_dists[col] = uniform_value_distributions(self.bin_maps[col])
                else:
                    self.value_dists[col] = np.asarray(msg.value_distributions[col], dtype=float)
        self.blocks = {}
        if cfg.encoder == "fm":
            self.k_p, self.alpha_min = cfg.sketch_parameters
            for msg in self.messages:
                offsets = np.concatenate([[0], np.cumsum([cfg.binned_size(c) for c in msg.columns])])
                for j, col in enumerate(msg.columns):
                    # Complement sketches once per column (one pass per column, not per cell).
                    self.blocks[col] = fm.complement_sketches(msg.sketches[:, offsets[j]:offsets[j + 1]])
        elif cfg.encoder == "fo":
            rows = self.messages[0].perturbed.shape[0]
            for msg in self.messages:
                if msg.perturbed.shape[0] != rows:
                    raise MessageError(msg.party, "field 'perturbed' has another number of rows than the first "
                                                  "party's (the rows must be aligned).")
                for j, col in enumerate(msg.columns):
                    self.blocks[col] = np.asarray(msg.perturbed[:, j])

    # -- CarEst / FO estimate, HisRec, consistency ------------------------------------------------------------------
    def binned_table(self, attrs: Clique) -> np.ndarray:
        """The cross-party estimate of ``attrs``' marginal on the binned domains (counts, total ≈ n̂)."""
        cfg = self.config
        if cfg.encoder == "fm":
            return fm.car_est([self.blocks[a] for a in attrs], cfg.gamma, self.k_p, self.n_hat,
                              estimator=self.cardinality_estimator, alpha_min=self.alpha_min, complements=True)
        sizes = [cfg.binned_size(a) for a in attrs]
        table = fo_marginal([self.blocks[a] for a in attrs], sizes, [cfg.budget.epsilon_prime] * len(attrs))
        return normalise(table) * self.n_hat  # scaled to n̂ (the authors' code uses the exact row count)

    def cross_estimate(self, attrs: Clique) -> np.ndarray:
        """ŷ_M (§5.3): CarEst → HisRec → consistency with the local models, as counts on the raw domains."""
        binned = normalise(self.binned_table(attrs))
        table = his_rec(binned, [self.bin_maps[a] for a in attrs], [self.value_dists[a] for a in attrs])
        if not self.consistency:
            return normalise(table) * self.n_hat
        sources = []
        for i, msg in enumerate(self.messages):
            axes = [k for k, a in enumerate(attrs) if self.owner[a] == i]
            if axes:
                part = tuple(attrs[k] for k in axes)
                sources.append((axes, self.local_models[msg.party].project(part)))
        if self.consistency == "rake":
            return rake(table, sources) * self.n_hat
        return enforce_consistency(table, sources, self.consistency_iters) * self.n_hat

    def cell_error(self, attrs: Clique) -> float:
        """Public standard error of one cell of the cross-party estimate of ``attrs`` (the "auto" d^c rule)."""
        cfg = self.config
        sizes = [cfg.binned_size(a) for a in attrs]
        if cfg.encoder == "fm":
            # Relative s.d. 1.04/√t of the HLL estimate of a union of n̂ + k_p Σ(u_i − 1) elements
            # (doc/deviations.md, "The minimum cell-count filter").
            return 1.04 / math.sqrt(cfg.n_sketches) * (self.n_hat + self.k_p * sum(u - 1 for u in sizes))
        # FO: the s.d. of an unbiased GRR cell estimate is about √n̂ Π_i √(q_i(1 − q_i)) / (p_i − q_i).
        spread = 1.0
        for u in sizes:
            p, q = grr_probabilities(cfg.budget.epsilon_prime, u)
            spread *= math.sqrt(q * (1 - q)) / (p - q) if u > 1 else 1.0
        return math.sqrt(self.n_hat) * spread

    # -- GraphCom (§5.1) --------------------------------------------------------------------------------------------
    def _r_scores(self) -> dict:
        cfg, n_hat = self.config, self.n_hat
        one_way = {a: normalise(self.binned_table((a,))) for a in cfg.domain.attrs}
        scores = {}
        for p, q in itertools.combinations(range(len(self.messages)), 2):
            for a in self.messages[p].columns:
                for b in self.messages[q].columns:
                    pair = cfg.domain.canonical((a, b))
                    joint = normalise(self.binned_table(pair))
                    # T̂_i ⊗ T̂_j (doc/deviations.md, "R-score of independent marginals")
                    indep = np.multiply.outer(one_way[pair[0]], one_way[pair[1]])
                    scores[pair] = n_hat / 2.0 * float(np.abs(joint - indep).sum())
        return scores

    def _fits(self, domain: Domain, edges) -> JunctionTree | None:
        jt = JunctionTree.from_cliques(domain, edges)
        largest = max(domain.size(c) for c in jt.cliques)
        return jt if largest <= self.max_clique_size and jt.size() <= self.max_model_size else None

    def graph_com(self, r_scores: dict) -> tuple[list, JunctionTree]:
        """Local edges plus the cross-party pairs, by descending R̂, that keep the cliques within τ (§5.1)."""
        domain = self.config.domain
        edges = [tuple(e) for m in self.messages for e in m.graph_edges]
        edges += [(a,) for a in domain.attrs]
        jt = JunctionTree.from_cliques(domain, edges)
        added = []
        for pair in sorted(r_scores, key=lambda p: (-r_scores[p], domain.index(p[0]), domain.index(p[1]))):
            if self.max_cross_edges is not None and len(added) >= self.max_cross_edges:
                break
            trial = self._fits(domain, edges + [pair])
            if trial is not None:
                edges.append(pair)
                added.append(pair)
                jt = trial
        return added, jt

    # -- estimation -------------------------------------------------------------------------------------------------
    def _estimate(self, measurements, warm, cliques, iters):
        domain = self.config.domain
        model, info = mirror_descent(domain, measurements, known_total=self.n_hat, potentials=warm, iters=iters,
                                     tol=self.tol)
        if max(domain.size(c) for c in model.junction_tree.cliques) > self.max_clique_size:
            # The engine's own triangulation of the measured cliques went past τ: use GraphCom's (§5.1), whose
            # cliques hold every measured clique and stay within τ.
            model, info = mirror_descent(domain, measurements, known_total=self.n_hat, potentials=warm,
                                         cliques=cliques, iters=iters, tol=self.tol)
        return model, info

    def candidates(self, cliques) -> list:
        """𝒮^c (§5.3): cross-party subsets of a maximal clique of 𝒢, of 2..max_way attributes, passing d^c."""
        cfg = self.config
        out = []
        for clique in cliques:
            for k in range(2, min(self.cross_marginal_max_way, len(clique)) + 1):
                for sub in itertools.combinations(clique, k):
                    if len({self.owner[a] for a in sub}) >= 2:
                        out.append(cfg.domain.canonical(sub))
        out = list(dict.fromkeys(out))
        keep = []
        for c in out:
            cells = math.prod(cfg.binned_size(a) for a in c)
            threshold = self.cell_error(c) if self.min_avg_cell_count == "auto" else float(self.min_avg_cell_count)
            if self.n_hat / cells >= threshold:
                keep.append(c)
        return keep

    def fit(self, messages: Sequence[VerticalMessage | bytes]) -> ServerResult:
        """Run Phases 3–5 on the parties' messages and return the global model.

        Parameters
        ----------
        messages : sequence of VerticalMessage or bytes
            One message per party, as objects or as the bytes a party sent.

        Raises
        ------
        MessageError
            If a message is malformed or inconsistent with the configuration
            (:func:`~.message.check_vertical_message`), or a
            party sent none or two; the error names the party.
        """
        cfg = self.config
        self._receive(messages)
        domain, n_hat, d = cfg.domain, self.n_hat, len(cfg.domain)
        rng = np.random.default_rng(self.random_state)

        # Phase 3: GraphCom.
        r_scores = self._r_scores() if cfg.encoder != "none" else {}
        added, jt = self.graph_com(r_scores)
        graph = nx.Graph()
        graph.add_nodes_from(domain.attrs)
        graph.add_edges_from((a, b) for c in jt.cliques for a, b in itertools.combinations(c, 2))
        self.log(f"GraphCom: {len(added)} of {len(r_scores)} cross-party edges; {len(jt.cliques)} cliques, "
                 f"largest {max(domain.size(c) for c in jt.cliques):,} cells")

        # Phase 4: InitMRF on the local models' marginals, scaled to n̂ (doc/deviations.md, "Local marginals
        # scaled to n̂").
        measurements, marginal_set = [], []
        for msg in self.messages:
            local = self.local_models[msg.party]
            for clique in msg.measured:
                y = normalise(local.project(clique)) * n_hat
                measurements.append(Measurement(domain.canonical(clique), _canonical_values(domain, clique, y), 1.0))
                marginal_set.append(domain.canonical(clique))
        model, info = self._estimate(measurements, None, jt.cliques, self.md_iters)
        self.log(f"InitMRF: {len(measurements)} local marginals, {info.iterations} iterations")

        # Phase 5: OptMRF.
        cross, pool = [], []
        if cfg.encoder != "none":
            pool = self.candidates(jt.cliques)
            total = int(self.n_cross_marginals if self.n_cross_marginals is not None else math.floor(0.8 * d))
            rounds = int(self.n_refine_rounds if self.n_refine_rounds is not None else max(min(d // 2, 8), 1))
            # The cross marginals spread over the rounds as np.array_split spreads them, without materialising
            # them (n_cross_marginals and n_refine_rounds are the user's): rounds of none are skipped.
            base, extra = divmod(total, rounds)
            estimates: dict = {}
            remaining = list(pool)
            for r in range(rounds if base else min(rounds, extra)):
                k = base + (r < extra)
                if not remaining:
                    break
                looked = remaining
                if self.candidates_per_round is not None and len(remaining) > self.candidates_per_round:
                    idx = rng.choice(len(remaining), size=self.candidates_per_round, replace=False)
                    looked = [remaining[i] for i in sorted(idx)]
                errors = {}
                for c in looked:
                    if c not in estimates:
                        estimates[c] = self.cross_estimate(c)
                    errors[c] = float(np.abs(model.project(c) - estimates[c]).sum())
                chosen = sorted(looked, key=lambda c: -errors[c])[:k]
                for c in chosen:
                    measurements.append(Measurement(c, estimates[c], 1.0))
                    cross.append(c)
                    remaining.remove(c)
                model, info = self._estimate(measurements, model, jt.cliques, self.md_iters)
                self.log(f"OptMRF round {r + 1}/{rounds}: added {chosen}, {info.iterations} iterations")
        return ServerResult(model, n_hat, graph, list(jt.cliques), list(dict.fromkeys(marginal_set)), cross,
                            r_scores, pool, measurements, self.local_models)


def _canonical_values(domain: Domain, clique: Clique, table: np.ndarray) -> np.ndarray:
    canon = domain.canonical(clique)
    if canon == tuple(clique):
        return table
    return np.transpose(table, [tuple(clique).index(a) for a in canon])
