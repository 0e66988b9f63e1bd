"""VerticalMRFSynthesizer: VertiMRF (Zhao, Li, Ren, Ding, Yang & Li, KDD'24) as a scikit-learn estimator.

Several parties hold **different columns of the same individuals**.  Each party
learns a private model of its own columns and sends DP Flajolet–Martin sketches
of which rows hold which value (keys shared among the parties, never known to
the server); the server estimates cross-party marginals from the sketches,
links the local models into one global graphical model and samples from it.
Section, algorithm and theorem numbers below are the KDD'24 paper's unless
marked as the extended (arXiv) version's; ``doc/deviations.md`` lists where
the implementation departs from the paper, and ``doc/vertical.md`` is the
user guide.

The fit simulates the run in one process with the trust boundary intact: the
parties (:class:`~skdpsynth.synthesizers.vertical_mrf.party.VerticalParty`) see only their
own columns, their messages go through ``npz`` serialisation, and the server
(:class:`~.server.VerticalServer`) reads only those messages and the public
configuration.
"""
from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from numbers import Integral, Real

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ...domain import Domain
from ...federated import HybridPartition
from . import sketches as fm
from .party import (ENCODERS, FO_ACCOUNTING, LOCAL_LEARNERS, SKETCH_ACCOUNTING, VerticalConfig,
                                   VerticalMessage, VerticalParty)
from ...params import Interval, Options
from ...privacy import PrivacyLedger, warn_privacy_leak
from ...privacy.randomness import SystemRandomGenerator, child_random_states
from ...federated.runtime import warn_curator_noise
from ...utils import MemoryLimitError, check_memory, is_remote_data
from ..base import BaseSynthesizer
from .remote import PARTY_DEFAULTS, VerticalJob, run_parties
from .server import VerticalServer

__all__ = ["VerticalMRFSynthesizer", "contiguous_blocks"]

#: Peak bytes per entry of a party's sketch table (uint64 draws, their float64 transforms, the table itself).
_SKETCH_BYTES_PER_ENTRY = 48


def contiguous_blocks(columns: Sequence, n_parties: int) -> list[list]:
    """Split ``columns`` into ``n_parties`` contiguous blocks, as equal as possible, the larger first.

    The paper does not say which columns each party holds in its m-party
    experiments (``doc/deviations.md``, "Column blocks for more than two
    parties").

    Examples
    --------
    >>> from skdpsynth.synthesizers.vertical_mrf import contiguous_blocks
    >>> contiguous_blocks(list("abcde"), 2)
    [['a', 'b', 'c'], ['d', 'e']]
    """
    columns = list(columns)
    if not (isinstance(n_parties, (int, np.integer)) and 2 <= n_parties <= len(columns)):
        raise ValueError(f"Cannot split {len(columns)} columns among {n_parties!r} parties (need 2 <= parties "
                         f"<= columns).")
    return [list(block) for block in np.array_split(np.array(columns, dtype=object), int(n_parties))]



def _agree_sketch_secret(names: list, secret: bytes | None) -> bytes:
    """The shared sketch secret (§4.2) by real cryptography: the leader's secret sealed for each party by X25519.

    The curator relays sealed boxes only (it never holds the secret); all
    roles run in this process, as the rest of the in-process simulation.
    """
    try:
        from ...federated.secure_aggregation import SecureAggregationParty, share_group_secret
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("secure_computation='cryptographic' needs the optional dependency 'cryptography'; "
                          "install it with: pip install 'skdpsynth[distributed]'") from exc
    session = b"skdpsynth/vertimrf/" + os.urandom(16)
    holders = [SecureAggregationParty(name, session) for name in names]
    secrets, _ = share_group_secret(holders, purpose=b"vertimrf/sketch-secret", secret=secret)
    if len(set(secrets.values())) != 1:  # pragma: no cover - a bug in the key agreement
        raise RuntimeError("The parties' sketch secrets differ.")
    return secrets[names[0]]

class VerticalMRFSynthesizer(BaseSynthesizer):
    """VertiMRF: DP synthesis from vertically partitioned data (parties hold different columns of the same people).

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float, default=1e-9
        The whole run is (ε, δ)-DP for everything the parties send (and so for
        the synthetic data), under add/remove of one individual's whole row
        (``doc/deviations.md``, "Add or remove one person").  The paper uses
        δ = 1/n; pass it explicitly when n is public.
    party_columns : list of lists, dict, int or HybridPartition, optional
        Who holds which columns: ``[["age", "sex"], ["income", ...]]``,
        ``{"hospital": [...], "insurer": [...]}``, an int M (M contiguous
        blocks in column order; ``doc/deviations.md``, "Column blocks for
        more than two parties") or a vertical
        :class:`~skdpsynth.federated.HybridPartition` (one row slice).  Not
        needed when ``fit`` gets per-party frames.  Columns must be disjoint
        and cover the table; at least two parties.
    domain : dict or Domain, optional
        Public domain (see :class:`~skdpsynth.synthesizers.base.BaseSynthesizer`).
    encoder : {"fm", "fo", "none"}, default="fm"
        ``"fm"``: DP Flajolet–Martin sketches (VertiMRF-FM); ``"fo"``: the GRR
        frequency-oracle baseline (VertiMRF-FO, App. B: the row-aligned GRR table
        reveals the exact record count, so a fit with it is recorded as **not**
        differentially private under add/remove neighbours); ``"none"``: local
        models only (no cross-party information).
    budget_split : dict, optional
        Shares of ε: ``{"local_mrf": .4, "encoding": .4, "count_frac": .1,
        "binning": .2}`` by default (§7.1; ``count_frac`` is the record count's
        share of ``encoding``).  With no binned column, or with
        ``his_rec="uniform"``, no value distribution is released and the
        binning share goes to the sketches.  A zero ``"binning"`` share needs
        one of those two.
    delta_split : dict, optional
        ``{"local_mrf": .5, "encoding": .5}`` (Algorithm 1).
    n_sketches : int, default=2000
        t, the sketch repetitions.
    gamma : float, default=1.0
        γ of the geometric hash distribution.
    cardinality_estimator : {"hll", "censored_mle", "paper_literal"}, default="hll"
        CarEst's union estimator (§4.2; ``"paper_literal"`` is badly biased, ablation only:
        ``doc/deviations.md``, "Unbiased CarEst estimator").
    sketch_accounting : {"theorem2", "rdp_opt"}, default="theorem2"
        How ε′ is derived from the sketch budget: by the paper's Theorem 2, or
        by the tighter RDP conversion of its proof (VertiMRF, KDD'24, §4.2
        and App. C.1).
        Theorem 2 holds only while the sketch budget ε_enc is at most
        2.34·ln(1/δ_enc) (:data:`~skdpsynth.synthesizers.vertical_mrf.sketches.THEOREM2_RANGE`);
        beyond that ``"theorem2"`` uses the RDP conversion too, so the charged
        budget is always a valid bound (``privacy_report_["sketch_bound"]``
        says which one it rests on).
    n_bins : int or None, default=4
        Columns with more values are binned (equal width over the public
        domain: ``doc/deviations.md``, "Binning over the public domain") for
        the encoding; ``None`` disables binning.
    his_rec : {"value_dist", "uniform"}, default="value_dist"
        How the server spreads a cross-party estimate over a binned column's
        raw values (the paper's "histogram recovery", HisRec: VertiMRF,
        KDD'24, §6.1 Eq. (5)).  ``"value_dist"``: each party releases the
        noisy within-bin value distribution of its binned columns (the
        ``budget_split`` ``"binning"`` share) and the server spreads by it.
        ``"uniform"``: evenly within each bin (the paper's UniSam ablation,
        App. A.1 of its extended version); nothing is released and the
        binning share goes to the sketches, as in that ablation.  No effect
        when no column is binned.
    max_clique_size : float, default=2e6
        τ: cells of the largest clique of the global graph (raw domains).
    max_model_size : float, default=4e6
        Total cells of the global graph's cliques.
    local_max_clique_size : float, optional
        τ′: cliques of more cells are left out of the local models' workloads;
        default ``max(τ / (m ū²), max_j u_j)`` (§4.1; ``doc/deviations.md``,
        "A feasible local clique limit").
    max_cross_edges : int, optional
        Cap on the cross-party edges GraphCom adds (None: until infeasible).
    cross_marginal_max_way : int, default=2
    min_avg_cell_count : "auto" or float, default="auto"
        d^c: a cross-party marginal is a candidate when n̂ / (binned cells) is at
        least this; ``"auto"`` uses the public standard error of a cell (§5.3;
        ``doc/deviations.md``, "The minimum cell-count filter").
    n_cross_marginals, n_refine_rounds : int, optional
        Cross marginals added in total (default ⌊0.8 d⌋) over this many rounds
        (default min(⌊d/2⌋, 8)).
    candidates_per_round : int, optional
        Score only this many random candidates per round (None: all).
    consistency : "rake" or bool, default="rake"
        ``"rake"``: the cross-party estimate is raked (iterative proportional
        fitting) to the local models' marginals, which are trusted exactly, so
        it contributes only its interaction.  ``True``: the paper's consistency
        step (§6.2): cross-party estimate and local model agree halfway on the
        shared attributes, 4 passes; on data with skewed, binned columns
        (e.g. Adult) CarEst's error is of the order of the small cells and the
        halfway agreement drags the local marginals towards it (measured worse:
        ``doc/deviations.md``, "Raking instead of halfway consistency", and
        ``doc/vertical.md``).  ``False``: none (ablation).
    consistency_iters : int, default=4
    md_iters : int, default=1000
        Mirror-descent iterations per estimation of the global model.
    tol : float, default=1e-6
        Early stop of mirror descent (relative loss decrease over 10 iterations).
    local_mrf : {"aim", "mst"}, default="aim"
        The parties' local learner (the paper's PrivMRF role), run at
        (0.4ε/m, δ/(2m)) with exact zCDP accounting.
    local_mrf_params : dict, optional
        Extra hyper-parameters of the local learner (e.g. ``{"max_iters": 300}``).
    fo_accounting : {"conservative", "paper"}, default="conservative"
        FO's ε′ per attribute: ε_enc/d, or the extended version's Theorem 1
        (its argument is flawed: ``doc/deviations.md``, "Frequency-oracle
        accounting"; a fit with it is recorded as not DP).
    sampling : {"round", "sample"}, default="round"
    keep_messages : bool, default=False
        Keep the parties' serialised messages in ``messages_`` (to replay the server).
    secure_computation : {"simulated", "cryptographic"}, default="simulated"
        How the parties agree on their shared sketch secret (§4.2;
        ``doc/deviations.md``, "Keyed sketch hashes"):
        ``"simulated"`` draws it in this process; ``"cryptographic"`` runs
        the X25519 + HKDF key agreement of
        :func:`~skdpsynth.federated.secure_aggregation.share_group_secret`
        (the leader's secret sealed for every party, relayed by the curator,
        who never holds it; needs ``skdpsynth[distributed]``).  Same fit for
        the same seed.
    constraints : list of Constraint or dict, optional
        Public structural constraints (:mod:`skdpsynth.constraints`): value
        combinations no synthetic record may have, e.g.
        ``[{"forbid": {"relationship": "Husband", "sex": "Female"}}]``.  Public
        metadata, no budget; folded into the fitted model as impossible cells
        (see ``doc/constraints.md``).
    random_state : None, int or numpy.random.Generator
        ``None`` (default): noise and shared sketch secret from OS entropy.
    verbose : int, default=0

    Attributes
    ----------
    parties_ : dict
        Party name -> its columns.
    n_hat_, n_records_ : float
        The released noisy record count (the default number of synthetic records).
    binned_ : dict
        Column -> public bin of each raw code, for the binned columns.
    graph_ : networkx.Graph
        The triangulated global graph (GraphCom).
    cliques_ : list
        Its maximal cliques.
    marginal_set_, cross_marginals_ : list
        The local models' measured marginals and the cross-party marginals OptMRF added.
    local_models_ : dict
        Party -> the local model the server received.
    model_ : GraphicalModel
    privacy_ledger_ : PrivacyLedger
        One entry per release per party (the sketches' joint guarantee split by
        each party's share of the attributes); sums to (ε, δ).
    privacy_report_ : dict
        Per-component budget, ε′, k_p, α_min, the Theorem-2 and RDP-optimal ε
        of the sketches, and ``sketch_bound``: which of the two the charged
        sketch budget rests on (``"theorem2"`` or ``"rdp"``).
    messages_ : list of bytes
        Only with ``keep_messages=True``.
    runtime_ : dict or None
        With a :class:`~skdpsynth.federated.VerticalFederatedData`, what
        crossed between the curator and the parties: ``backend``
        (``"local"``, ``"processes"``, ``"dask"``, ``"files"``),
        ``n_parties``, ``requests``, ``bytes_sent``, ``bytes_received``
        (with the FM encoder these depend on public sizes and DP outputs
        only; ``encoder="fo"`` sends n rows, as it does in process).
        ``None`` when the parties are simulated in this process.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdpsynth import VerticalMRFSynthesizer
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 2000)
    >>> hospital = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, 2000)) % 3})
    >>> insurer = pd.DataFrame({"c": (a + (rng.random(2000) < 0.2)) % 3})
    >>> syn = VerticalMRFSynthesizer(epsilon=4.0, delta=1e-6, n_sketches=200,
    ...                              domain={"a": 3, "b": 3, "c": 3}, local_mrf_params={"max_iters": 100})
    >>> syn.fit([hospital, insurer]).sample(5).shape
    (5, 3)
    >>> syn.parties_
    {'party0': ['a', 'b'], 'party1': ['c']}
    >>> round(syn.privacy_ledger_.epsilon(1e-6), 9)
    4.0
    """

    # Each party's sketches are keyed by row position and its local model is fitted in memory; counting its
    # partitions would need their lengths, i.e. the private record count (BaseSynthesizer._refuse_out_of_core).
    _fits_federated_data = True  # fit(VerticalFederatedData(...)): parties on processes, dask workers or files
    _out_of_core_refusal = (
        "every party encodes its records row by row in memory (its sketches are keyed by row position). Pass a "
        "pandas DataFrame or an array, or per-party DataFrames (a list or a dict).")

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-9,
        *,
        party_columns=None,
        domain=None,
        encoder: str = "fm",
        budget_split: Mapping | None = None,
        delta_split: Mapping | None = None,
        n_sketches: int = 2000,
        gamma: float = 1.0,
        cardinality_estimator: str = "hll",
        sketch_accounting: str = "theorem2",
        n_bins: int | None = 4,
        his_rec: str = "value_dist",
        max_clique_size: float = 2e6,
        max_model_size: float = 4e6,
        local_max_clique_size: float | None = None,
        max_cross_edges: int | None = None,
        cross_marginal_max_way: int = 2,
        min_avg_cell_count="auto",
        n_cross_marginals: int | None = None,
        n_refine_rounds: int | None = None,
        candidates_per_round: int | None = None,
        consistency: bool | str = "rake",
        consistency_iters: int = 4,
        md_iters: int = 1000,
        tol: float = 1e-6,
        local_mrf: str = "aim",
        local_mrf_params: Mapping | None = None,
        fo_accounting: str = "conservative",
        sampling: str = "round",
        keep_messages: bool = False,
        secure_computation: str = "simulated",
        constraints=None,
        random_state=None,
        verbose: int = 0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.party_columns = party_columns
        self.domain = domain
        self.encoder = encoder
        self.budget_split = budget_split
        self.delta_split = delta_split
        self.n_sketches = n_sketches
        self.gamma = gamma
        self.cardinality_estimator = cardinality_estimator
        self.sketch_accounting = sketch_accounting
        self.n_bins = n_bins
        self.his_rec = his_rec
        self.max_clique_size = max_clique_size
        self.max_model_size = max_model_size
        self.local_max_clique_size = local_max_clique_size
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
        self.local_mrf = local_mrf
        self.local_mrf_params = local_mrf_params
        self.fo_accounting = fo_accounting
        self.sampling = sampling
        self.keep_messages = keep_messages
        self.secure_computation = secure_computation
        self.constraints = constraints
        self.random_state = random_state
        self.verbose = verbose

    # -- parameters and budget ----------------------------------------------------------------------------------------
    _parameter_constraints = {
        "party_columns": [None, Interval(Integral, 1, None), list, tuple, Mapping, HybridPartition],
        "budget_split": [None, Mapping],
        "delta_split": [None, Mapping],
        "encoder": [Options(*ENCODERS)],
        "sketch_accounting": [Options(*SKETCH_ACCOUNTING)],
        "fo_accounting": [Options(*FO_ACCOUNTING)],
        "local_mrf": [Options(*LOCAL_LEARNERS)],
        "local_mrf_params": [None, Mapping],
        "cardinality_estimator": [Options("hll", "censored_mle", "paper_literal")],
        "his_rec": [Options("value_dist", "uniform")],
        "secure_computation": [Options("simulated", "cryptographic")],
        "n_sketches": [Interval(Integral, 1, None)],
        "n_bins": [None, Interval(Integral, 2, None)],
        "cross_marginal_max_way": [Interval(Integral, 2, None)],
        "consistency": [Options(True, False, "rake")],
        "consistency_iters": [Interval(Integral, 0, None)],
        "md_iters": [Interval(Integral, 1, None)],
        "max_cross_edges": [None, Interval(Integral, 0, None)],
        "n_cross_marginals": [None, Interval(Integral, 0, None)],
        "n_refine_rounds": [None, Interval(Integral, 1, None)],
        "candidates_per_round": [None, Interval(Integral, 1, None)],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "max_clique_size": [Interval(Real, 0, None, closed="neither")],
        "max_model_size": [Interval(Real, 0, None, closed="neither")],
        "local_max_clique_size": [None, Interval(Real, 1, None)],
        "min_avg_cell_count": [Options("auto"), Interval(Real, 0, None)],
        "keep_messages": [bool],
    }

    def _privacy_budget(self) -> dict:
        return {"epsilon": float(self.epsilon), "delta": float(self.delta)}   # checked by _check_params

    def _check_spend(self, ledger: PrivacyLedger, charged: dict) -> None:
        """Basic composition (§4.3): the entries' ε and δ sum to the budget exactly."""
        entries = [e for e in ledger if e.accounting != "leak"]
        if any(e.accounting == "zcdp" for e in entries):
            raise RuntimeError("VertiMRF records (ε, δ) entries only.")
        eps = math.fsum(e.epsilon for e in entries)
        delta = math.fsum(e.delta for e in entries)
        if not (math.isclose(eps, charged["epsilon"], rel_tol=1e-9)
                and math.isclose(delta, charged["delta"], rel_tol=1e-9)):
            raise RuntimeError(f"VerticalMRFSynthesizer spent ({eps!r}, {delta!r}) but states "
                               f"({charged['epsilon']!r}, {charged['delta']!r}).")

    # -- fit ------------------------------------------------------------------------------------------------------------
    def fit(self, X, y=None, *, party_columns=None):
        """Fit on vertically partitioned data.

        Parameters
        ----------
        X : pandas.DataFrame, list of DataFrames or dict of DataFrames
            The aligned table (then ``party_columns`` says who holds what), or
            one frame per party with aligned rows (row ``i`` of every frame is
            the same individual; the frames' indexes must be equal), as a list
            (parties ``party0``, ``party1``, …) or a dict ``{name: frame}``.
            Or a :class:`~skdpsynth.federated.VerticalFederatedData`: parties
            that keep their records and encode them where they run (local,
            processes, dask workers; ``doc/federated.md``); it needs
            ``secure_computation="cryptographic"``.
        y : array-like, optional
            A column to synthesize with X (appended last; with explicit
            ``party_columns`` it must be named in them).
        party_columns : optional
            Overrides the ``party_columns`` hyper-parameter for this fit.

        Returns
        -------
        self

        Raises
        ------
        TypeError
            On out-of-core input (a dask DataFrame, Parquet files, or
            per-party frames of them), before anything is read: every party
            encodes its records row by row in memory (sketches keyed by row).
        """
        self._refuse_out_of_core(X)
        party_columns = self.party_columns if party_columns is None else party_columns
        # A DOK sparse matrix is a dict too: not per-party frames (the base class refuses sparse input clearly).
        if (isinstance(X, Mapping) and not sp.issparse(X)) or (isinstance(X, (list, tuple)) and X
                                      and all(isinstance(f, pd.DataFrame) for f in X)):
            if party_columns is not None:
                raise ValueError("With per-party frames the parties' columns come from the frames; do not pass "
                                 "party_columns.")
            X, party_columns = self._join_party_frames(X)
        self._fit_parties = party_columns
        try:
            return super().fit(X, y)
        finally:
            del self._fit_parties

    @staticmethod
    def _join_party_frames(frames) -> tuple[pd.DataFrame, dict]:
        named = dict(frames) if isinstance(frames, Mapping) else {f"party{i}": f for i, f in enumerate(frames)}
        if not named:
            raise ValueError("No party frames given.")
        for name, frame in named.items():
            if not isinstance(frame, pd.DataFrame):
                raise TypeError(f"Party {name!r}: expected a pandas DataFrame, got {type(frame).__name__}.")
            if frame.shape[1] == 0:
                raise ValueError(f"Party {name!r} holds no columns.")
        lengths = {name: len(f) for name, f in named.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"The parties {list(lengths)} hold different numbers of records; vertically partitioned "
                             "frames must be aligned (row i of every frame is the same individual). Align them "
                             "first, e.g. with a private set intersection on a record ID.")
        first_name, first = next(iter(named.items()))
        for name, frame in named.items():
            if not frame.index.equals(first.index):
                raise ValueError(f"The frames of {first_name!r} and {name!r} have different indexes; rows must be "
                                 "aligned by record. If they are aligned by position, reset_index(drop=True) each.")
        seen: dict = {}
        for name, frame in named.items():
            for col in frame.columns:
                if col in seen:
                    raise ValueError(f"Column {col!r} is held by both {seen[col]!r} and {name!r}; the parties' "
                                     "columns must be disjoint.")
                seen[col] = name
        joined = pd.concat(list(named.values()), axis=1)
        return joined, {str(name): list(frame.columns) for name, frame in named.items()}

    def _remote_parties(self, data) -> tuple[list, int | None]:
        """The parties' columns and the public record count (if any) of records that stay with their parties."""
        if not hasattr(data, "party_columns"):
            raise TypeError(f"VerticalMRFSynthesizer fits parties that keep their records through a "
                            f"VerticalFederatedData (skdpsynth.federated), not a {type(data).__name__} (a hybrid "
                            "partition's, for HybridSynthesizer).")
        if self._fit_parties is not None:
            raise ValueError("VerticalFederatedData carries its parties' columns; do not pass party_columns.")
        if self.secure_computation != "cryptographic":
            raise ValueError("Parties that keep their records (VerticalFederatedData) need "
                             "secure_computation='cryptographic': they agree on the sketch secret by X25519, so "
                             "that the curator never holds it.")
        return [(name, list(cols)) for name, cols in data.parties], data.n_rows

    def _check_sketch_memory(self, domain: Domain, columns, binning: bool) -> None:
        """Refuse, before any key or spend, sketches whose tables do not fit in memory: every party's
        ``n_sketches × (its columns' values after binning)`` table with its phantom maxima, about 40 bytes an
        entry at the peak (public sizes only; the records' hashes, ``n_sketches`` a record, come on top)."""
        values = sum(min(domain[c], self.n_bins) if binning else domain[c] for c in columns)
        check_memory(_SKETCH_BYTES_PER_ENTRY * float(self.n_sketches) * values,
                     f"VerticalMRFSynthesizer: n_sketches={self.n_sketches:,} sketches of {values:,} column values "
                     f"(after binning with n_bins={self.n_bins})",
                     "Lower n_sketches or n_bins, or coarsen the domain (e.g. with a discretizer).")

    def _resolve_parties(self, parties, columns: list, n_rows: int, y_name=None) -> list[tuple[str, list]]:
        if parties is None:
            raise ValueError("VerticalMRFSynthesizer needs the vertical partition: pass party_columns (lists of "
                             "columns, a dict {party: columns}, or an int for contiguous blocks), or fit on a list "
                             "of per-party frames.")
        if isinstance(parties, (int, np.integer)) and not isinstance(parties, bool):
            groups = contiguous_blocks(columns, int(parties))
            names = [f"party{i}" for i in range(len(groups))]
        elif isinstance(parties, HybridPartition):
            if parties.n_slices != 1:
                raise ValueError("A vertical partition has one row slice; this HybridPartition has "
                                 f"{parties.n_slices}. Use HybridSynthesizer for hybrid partitions.")
            specs = parties.validate(columns, n_rows).parties()
            groups, names = [list(p.columns) for p in specs], [p.name for p in specs]
        elif isinstance(parties, Mapping):
            names, groups = [str(k) for k in parties], [list(v) for v in parties.values()]
        elif isinstance(parties, (list, tuple)):
            groups = [list(g) if isinstance(g, (list, tuple)) else [g] for g in parties]
            names = [f"party{i}" for i in range(len(groups))]
        else:
            raise TypeError(f"party_columns must be a list of column lists, a dict, an int or a HybridPartition; "
                            f"got {type(parties).__name__}.")
        if len(groups) < 2:
            raise ValueError(f"VertiMRF needs at least two parties, got {len(groups)}. With one party holding "
                             "every column use AIMSynthesizer (centralized).")
        if len(set(names)) != len(names):
            raise ValueError(f"Party names must be unique, got {names}.")
        # Column named twice, missing, or unknown: HybridPartition's checks and messages.  Only the columns are
        # checked here (the parties hold every row), so a table of 0 rows is checked as one of 1.
        rows = max(int(n_rows), 1)
        partition = HybridPartition([np.arange(rows)], groups, party_names={(0, j): n for j, n in enumerate(names)})
        partition.validate(columns, rows)
        return list(zip(names, groups))

    def _fit_codes(self, codes, domain: Domain, ledger: PrivacyLedger, rng, epsilon: float, delta: float) -> None:
        columns = list(domain.attrs)
        named_otherwise = [c for c in columns if not isinstance(c, str)]
        if named_otherwise:
            # The parties' messages name their columns in the wire format's JSON header, where names are strings.
            c = named_otherwise[0]
            raise TypeError(f"VerticalMRFSynthesizer needs string column names (the parties' messages carry them); "
                            f"column {c!r} has a name of type {type(c).__name__}. Rename the columns, e.g. "
                            "X.columns = X.columns.astype(str).")
        remote = is_remote_data(codes)
        if remote:  # VerticalFederatedData: the parties run where their records are; only their messages come here
            parties, n_rows = self._remote_parties(codes)
        else:
            parties, n_rows = self._resolve_parties(self._fit_parties, columns, codes.shape[0]), None
        parties = [(name, list(domain.canonical(cols))) for name, cols in parties]
        m, d = len(parties), len(domain)
        binning = self.n_bins is not None and self.encoder != "none"
        job = VerticalJob(domain, tuple((name, tuple(cols)) for name, cols in parties), epsilon, delta,
                          {key: getattr(self, key) for key in PARTY_DEFAULTS}, n_rows)
        config = job.config()
        budget = config.budget
        if self.encoder == "fm" and budget.epsilon_prime > 0:
            k_p, alpha_min = config.sketch_parameters
            self._log(f"{m} parties, d={d}; sketches: t={self.n_sketches}, eps'={budget.epsilon_prime:.4g}, "
                      f"k_p={k_p}, alpha_min={alpha_min}")
        if self.encoder == "fm":
            self._check_sketch_memory(domain, columns, binning)
        if remote:
            wire, modes, self.runtime_ = run_parties(codes, job, rng)
            warn_curator_noise(modes, ledger)
        else:
            wire, self.runtime_ = self._run_parties_here(codes, domain, config, parties, rng), None
        # Received as the server would: every field validated against the public configuration.
        messages = [VerticalMessage.from_bytes(b, config=config, sender=name) for (name, _), b in zip(parties, wire)]
        for message in messages:
            ledger.extend(message.ledger)
        if self.encoder == "fo":
            warn_privacy_leak(
                "encoder='fo' sends every party's GRR-perturbed column row by row, which reveals the exact record "
                "count: the run is not differentially private under add/remove-one neighbours (only under "
                "replace-one). Use encoder='fm' for a DP release.",
                stacklevel=4, ledger=ledger, description="exact record count revealed by the row-aligned GRR table")
            if self.fo_accounting == "paper":
                warn_privacy_leak(
                    "fo_accounting='paper' sets the GRR budget by the paper's Theorem 1, whose halving argument is "
                    "flawed (doc/deviations.md, 'Frequency-oracle accounting'): no DP guarantee is claimed.",
                    stacklevel=4, ledger=ledger, description="GRR budget from the paper's Theorem 1")

        server = VerticalServer(
            config, cardinality_estimator=self.cardinality_estimator, his_rec=self.his_rec,
            max_clique_size=self.max_clique_size, max_model_size=self.max_model_size,
            max_cross_edges=self.max_cross_edges, cross_marginal_max_way=self.cross_marginal_max_way,
            min_avg_cell_count=self.min_avg_cell_count, n_cross_marginals=self.n_cross_marginals,
            n_refine_rounds=self.n_refine_rounds, candidates_per_round=self.candidates_per_round,
            consistency=self.consistency, consistency_iters=self.consistency_iters, md_iters=self.md_iters,
            tol=self.tol, random_state=int(self._public_rng.integers(2**63)),
            log=self._log if self.verbose else (lambda message: None))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # log of zero-probability cells in projections
            result = server.fit(messages)
        self._set_fitted(config, result, wire, ledger)

    def _run_parties_here(self, codes, domain: Domain, config: VerticalConfig, parties, rng) -> list:
        """Simulate the parties in this process (each on its own columns); their messages' bytes."""
        # §4.2: the shared secret the parties agree on; the server never sees it (nor the keys).
        keys = None
        if self.encoder == "fm":
            given = None if isinstance(rng, SystemRandomGenerator) else rng.bytes(32)
            if self.secure_computation == "cryptographic":
                secret = _agree_sketch_secret([str(name) for name, _ in parties], given)
            else:
                secret = fm.new_shared_secret() if given is None else given
            keys = fm.SketchKeys.from_secret(secret, int(self.n_sketches))
            del secret, given
        states = child_random_states(rng, len(parties))
        wire = []
        for i, (name, cols) in enumerate(parties):
            idx = [domain.index(c) for c in cols]
            try:
                message = VerticalParty(i, config).run(codes[:, idx], keys, random_state=states[i])
            except MemoryLimitError as exc:  # the local learner's own check: say where its settings are
                raise MemoryLimitError(f"Party {name!r}'s local model ({self.local_mrf}): {exc} For "
                                       "VerticalMRFSynthesizer, give the local learner's settings in "
                                       "local_mrf_params, or lower local_max_clique_size.") from None
            wire.append(message.to_bytes())  # what crosses the trust boundary: bytes, no pickle
            self._log(f"party {name!r}: {len(cols)} columns, message {len(wire[-1]) / 1e6:.2f} MB")
        return wire

    def _set_fitted(self, config: VerticalConfig, result, wire, ledger) -> None:
        budget = config.budget
        self.config_ = config
        self.parties_ = {name: list(cols) for name, cols in config.parties}
        self.binned_ = {c: config.bin_map(c) for c in config.domain.attrs if config.is_binned(c)}
        self.n_hat_ = result.n_hat
        self.n_records_ = result.n_hat
        self.graph_ = result.graph
        self.cliques_ = result.cliques
        self.marginal_set_ = result.marginal_set
        self.cross_marginals_ = result.cross_marginals
        self.candidates_ = result.candidates
        self.r_scores_ = result.r_scores
        self.local_models_ = result.local_models
        self.measurements_ = result.measurements
        self.model_ = result.model
        if self.keep_messages:
            self.messages_ = list(wire)
        report = {
            "epsilon": budget.epsilon, "delta": budget.delta, "encoder": budget.encoder,
            "local_mrf": (budget.epsilon_local, budget.delta_local), "n_parties": budget.n_parties,
            "record_count": budget.epsilon_count, "encoding": (budget.epsilon_encoding, budget.delta_encoding),
            "binning": budget.epsilon_binning, "n_binned": budget.n_binned, "epsilon_prime": budget.epsilon_prime,
            "statement": ledger.statement(budget.delta),
        }
        if budget.encoder == "fm":
            k_p, alpha_min = config.sketch_parameters
            t, d, de = config.n_sketches, budget.n_attributes, budget.delta_encoding
            theorem2 = fm.theorem2_epsilon(budget.epsilon_prime, t, d, de)
            rdp = fm.rdp_optimal_epsilon(budget.epsilon_prime, t, d, de)
            report.update(k_p=k_p, alpha_min=alpha_min, sketch_accounting=self.sketch_accounting,
                          theorem2_epsilon=theorem2, rdp_optimal_epsilon=rdp,
                          sketch_bound="theorem2" if self.sketch_accounting == "theorem2" and theorem2 >= rdp
                          else "rdp")
        self.privacy_report_ = report

    def _spent_text(self) -> str:
        ledger = getattr(self, "privacy_ledger_", None)
        return "nothing" if ledger is None else ledger.statement(float(self.delta))

    def marginal(self, columns) -> np.ndarray:
        """The fitted model's marginal counts over ``columns`` (post-processing; axes in the fitted column order).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from skdpsynth import VerticalMRFSynthesizer
        >>> X = pd.DataFrame(np.random.default_rng(0).integers(0, 2, size=(500, 3)), columns=list("abc"))
        >>> syn = VerticalMRFSynthesizer(4.0, 1e-6, party_columns=2, domain={"a": 2, "b": 2, "c": 2},
        ...                              n_sketches=100, local_mrf_params={"max_iters": 50}).fit(X)
        >>> syn.marginal(["a", "c"]).shape
        (2, 2)
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "model_")
        return self.model_.project(columns)
