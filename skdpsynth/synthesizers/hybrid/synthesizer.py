"""The scikit-learn estimator of RandDPGen: :class:`HybridSynthesizer` (parties, protocol, budget, the report)."""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from numbers import Integral, Real

import pandas as pd

from ...domain import Domain
from ...federated import Federation, HybridPartition
from ...federated.dmm import PROTOCOLS
from ...federated.parties import SECURE_COMPUTATIONS
from ...federated.runtime import warn_curator_noise
from ...params import Interval, Options
from ...privacy import PrivacyLedger, cdp_epsilon, cdp_epsilon_loose, cdp_rho_loose, warn_privacy_leak
from ...utils import is_remote_data
from ..base import BaseSynthesizer
from ..select_measure import WORKLOAD_CONSTRAINT, resolve_workload
from .rounds import SELECTION_SCORES, randdpgen

__all__ = ["HybridSynthesizer"]

_VARIANCE_MODELS = ("paper_bound", "exact")
_PGM_LOSSES = ("weighted", "unweighted")


class HybridSynthesizer(BaseSynthesizer):
    """RandDPGen: synthetic data from records split across parties by rows and by columns.

    K·S parties hold the data (K disjoint row slices; in each slice the
    columns are split among its parties, who share record IDs).  A curator
    runs AIM's select–measure–generate loop, measuring every marginal with the
    distributed marginal measurement of :mod:`skdpsynth.federated`: each
    party perturbs only what it holds, and the curator sees noisy messages
    only.  Horizontal (S = 1), vertical (K = 1) and centralized (K = S = 1)
    data are special cases.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float, default=1e-9
        (ε, δ) is converted to ρ-zCDP with the tight conversion ``cdp_rho``
        (the paper's looser Lemma 3.2 inversion under ``paper_reproduction``).
    partition : None, HybridPartition, dict or list, default=None
        Who holds what.  ``None``: one party holds everything (K = S = 1).
        A :class:`~skdpsynth.federated.HybridPartition` (or anything
        ``HybridPartition.coerce`` accepts) describing the rows of ``X``; or
        a *recipe* dict without ``"slices"``, ``{"n_slices": K, "n_vertical":
        S}`` or ``{"n_slices": K, "column_groups": [[...], ...]}``, built at
        fit with ``HybridPartition.grid`` (seeded from ``random_state``) —
        the form to use in ``GridSearchCV`` and pipelines, where the rows
        change.  ``fit(X, partition=...)`` overrides it.
    domain : dict or Domain, optional
        Public domain (see :class:`~skdpsynth.synthesizers.base.BaseSynthesizer`).
    workload : int or list, default=2
        ``k``: all k-way marginals (weight 1); or a list of cliques or
        ``(clique, weight)`` pairs.
    alpha : float, optional
        Share of ρ for the one-off selection measurements of every workload
        marginal.  Default 0.3 (0.1, the paper's, under ``paper_reproduction``).
    beta : float, default=0.2
        Share of each round's ρ_t for its measurement; the exponential
        mechanism gets ``1 − α − β``.
    max_rounds : int, optional
        T, the bound on the number of rounds; the first round gets ``ρ/T``.
        Default ``4 · n_attributes`` (``16 · n_attributes`` under ``paper_reproduction``).
    max_cells : int, default=10000
        Maxsize: workload marginals with more cells are not candidates.
    anneal_factor : float, default=4.0
        ρ_t is multiplied by this when the model barely moves.
    protocol : {"secure_sum", "indicator"}, default="secure_sum"
        How parties' answers combine (Algorithm 1, §4.1; ``doc/deviations.md``,
        "Noise-share counts (protocol A)"): a simulated secure
        aggregation of noise-share counts (exact variance ``V_A``), or the
        paper's literal per-record noisy indicator vectors (much noisier).
    local_marginal_shortcut : bool, default=True
        ``"indicator"`` only: a party holding all of a marginal in its slice
        releases its noisy marginal instead of indicator vectors.
    variance_model : {"exact", "paper_bound"}, optional
        Variance used by the selection score and the annealing threshold: the
        protocol's exact one (default) or Theorem 4.1's ``K S² / (2ρ')`` (the
        paper; not a bound when ``|r| > S``, which warns).  Private-PGM always
        uses the exact variance.
    n_repeats : int, default=1
        The paper's IDMM ``e``: ``e > 1`` divides every measurement's variance
        by ``e`` and costs ``e`` times as much; allowed with a warning, and
        the true ρ is charged.
    paper_reproduction : bool, default=False
        The paper's experimental setting: its literal choices for every
        hyper-parameter left at None (α = 0.1, T = 16·d, uniform start,
        charged selection, Theorem 4.1's variance, selection measurements not
        used), IDMM with ``e = K·S`` and the Lemma 3.2 conversion.  Warns;
        ``privacy_report_`` gives the nominal and the true (ε, δ).
    use_selection_measurements : bool, optional
        Also feed Private-PGM the αρ selection measurements of marginals that
        lie inside a measured marginal (default True, the paper does not use
        them; feeding all of them would make the model a complete graph;
        ``doc/deviations.md``, "Selection measurements feed the model").
    charge_selection : bool, optional
        Charge each round's exponential mechanism ``(1 − α − β)ρ_t`` (the
        paper).  The score reads the data only through the already-paid
        selection measurements, so selection is post-processing
        (``doc/deviations.md``, "Selection is not charged"):
        ``False`` (default) gives the round's whole ``(1 − α)ρ_t`` to its
        measurement and ``beta`` is unused.
    init : {"oneway", "uniform"}, optional
        The initial model: fitted to every 1-way marginal measured first
        (default; AIM-style, each charged like a round of ``ρ/T``;
        ``doc/deviations.md``, "A measured 1-way start"), or uniform over the
        domain (the paper's Algorithm 2, line 1; free).
    pgm_loss : {"weighted", "unweighted"}, default="weighted"
        σ-weighted Private-PGM loss, or the paper's line 11 literally.
    max_iters, final_iters : int, default=1000
        Mirror-descent iterations per round and for the final estimate.
    tol : float, default=1e-6
    max_model_size : float or None, default=80.0
        Junction-tree size limit in MB, scaled by the share of the budget
        used (as in AIM): candidates whose addition would exceed it are
        skipped.  The paper has no such limit, but without it a model can
        outgrow memory (``doc/deviations.md``, "A junction-tree size limit").
        ``None`` turns it off.
    selection_scores : {"workload", "pairs"}, default="workload"
        What the one-off selection measurements (``alpha``) measure: every
        workload marginal, each candidate scored on its own (the paper); or
        every pair inside a workload marginal, a candidate scored by the sum
        of its pairs' scores.  With ``workload=3`` on many small columns
        (NLTCS), ``"pairs"`` selects 3-way marginals from scores that stand
        out of the noise and roughly halves the 3-way error of the default;
        on Adult's larger columns it does not help (doc/federated.md,
        "Quality on vertically partitioned data").
    sampling : {"round", "sample"}, default="round"
    secure_computation : {"simulated", "cryptographic"}, default="simulated"
        How protocol A's slice counts are computed (see
        :class:`~skdpsynth.federated.Federation`): ``"simulated"`` adds the
        parties' per-record index parts in the curator's process (the trust
        assumption of the paper); ``"cryptographic"`` uses secure aggregation
        and secure products (two parties, or a chain of them for three or
        more parties sharing a marginal within one slice), so the curator sees
        no per-record data (needs ``skdpsynth[distributed]``).  The two give
        the same fit: counts and noise shares are integers, which the
        fixed-point ring holds exactly.
    n_jobs : int, optional
        joblib ``n_jobs`` for the parties' local work: 1 to 4096 workers, or -1 (all cores), -2 (all but one),
        ... down to -4096.
    constraints : list of Constraint or dict, optional
        Public structural constraints (:mod:`skdpsynth.constraints`): value
        combinations no synthetic record may have, e.g.
        ``[{"forbid": {"relationship": "Husband", "sex": "Female"}}]``.  Public
        metadata, no budget; folded into the fitted model as impossible cells
        (see ``doc/constraints.md``).
    random_state : None, int or numpy.random.Generator
    verbose : int, default=0

    Notes
    -----
    **Defaults.**  Hyper-parameters left at None take the recommended
    values: every one is sound, and ``doc/deviations.md`` gives each one's
    reason ("Selection is not charged", "Selection measurements feed the
    model", "Exact DMM variance in the score and annealing", "A measured
    1-way start"); α = 0.3 and T = 4·d beat the paper's literal settings on
    Adult and NLTCS ("Defaults chosen on Adult and NLTCS"; the measurements
    are in ``doc/federated.md``).

    **Parties that keep their records.**  ``fit`` also takes a
    :class:`~skdpsynth.federated.FederatedData`: the public schema,
    the roster and, for every party, where it runs (this process, a local
    process of its own, or a ``dask.distributed`` worker) and where it reads
    its records.  The records never enter the curator's process; only
    messages do (``secure_computation="cryptographic"``).  See
    ``doc/federated.md``.

    Attributes
    ----------
    partition_ : HybridPartition or PartitionLayout
        The partition given (public metadata), or, when the fit simulated
        the parties from ``X`` (``partition=None`` or a recipe), only its
        :class:`~skdpsynth.federated.PartitionLayout`: the simulated roster's
        size is the exact record count, which is private.
    settings_ : dict
        The effective values of the hyper-parameters that default to None.
    rho_ : float
        Nominal ρ.
    privacy_report_ : dict
        ``rho_nominal``, ``rho_true``, ``epsilon_nominal``, ``epsilon_true``,
        ``delta``, ``conversion``, ``n_repeats``.
    refined_workload_, weights_, selection_budgets_ :
        W*, w_r and ρ_r (with ``selection_scores="pairs"``, ρ_s of each pair
        measured for selection).
    selected_, round_budgets_, anneal_events_ : list
        The chosen marginals, the ρ_t of each round and the rounds that annealed.
    n_rounds_ : int
    measurements_ : list of Measurement
    model_ : GraphicalModel
    n_records_ : float
        The MVU estimate of the record count from the noisy measurements.
    privacy_ledger_ : PrivacyLedger
        One entry per DMM call (``details["per_party"]`` splits it among the
        parties of a slice) and per selection.
    runtime_ : dict or None
        What crossed between the curator and the parties: ``backend``
        (``"local"``, ``"processes"``, ``"dask"``), ``n_parties``,
        ``requests``, and, when the roster is public (an explicit partition,
        per-party frames or ``FederatedData``), ``bytes_sent`` and
        ``bytes_received``.  On a roster simulated from ``X`` the byte counts
        are left out: they grow with the number of records, so they would
        reveal the private record count.  ``None`` for the simulated mode
        (nothing is serialised).

    Examples
    --------
    >>> from skdpsynth import HybridSynthesizer
    >>> from skdpsynth.datasets import load_adult
    >>> adult = load_adult(discretized=True)
    >>> X = adult.frame.iloc[:5000, [0, 1, 6, 8, 9, 13]]
    >>> syn = HybridSynthesizer(epsilon=1.0, partition={"n_slices": 2, "n_vertical": 2},
    ...                         domain=adult.domain.project(X.columns).to_dict(), random_state=0)
    >>> syn.fit(X).sample(10).shape
    (10, 6)
    >>> syn.partition_.n_slices, syn.partition_.n_vertical
    (2, 2)
    >>> round(syn.privacy_ledger_.total_rho() / syn.rho_, 12)
    1.0
    """

    _fits_federated_data = True  # fit(FederatedData(...)): parties on processes or dask workers
    # The simulated parties take their rows by roster position (random access to an in-memory table), and a roster
    # simulated from out-of-core data would need its private length: refused (BaseSynthesizer._refuse_out_of_core).
    _out_of_core_refusal = (
        "its parties take their rows of the table by roster position in memory, and a roster simulated from the "
        "data would need the private record count. Pass a pandas DataFrame or an array, per-party DataFrames with "
        "an ID column, or a FederatedData (skdpsynth.federated.runtime) whose parties read their own files where "
        "they run.")

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-9,
        *,
        partition=None,
        domain=None,
        workload=2,
        alpha: float | None = None,
        beta: float = 0.2,
        max_rounds: int | None = None,
        max_cells: int = 10_000,
        anneal_factor: float = 4.0,
        protocol: str = "secure_sum",
        local_marginal_shortcut: bool = True,
        variance_model: str | None = None,
        n_repeats: int = 1,
        paper_reproduction: bool = False,
        use_selection_measurements: bool | None = None,
        charge_selection: bool | None = None,
        init: str | None = None,
        pgm_loss: str = "weighted",
        max_iters: int = 1000,
        final_iters: int = 1000,
        tol: float = 1e-6,
        max_model_size: float | None = 80.0,
        selection_scores: str = "workload",
        sampling: str = "round",
        secure_computation: str = "simulated",
        n_jobs: int | None = None,
        constraints=None,
        random_state=None,
        verbose: int = 0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.partition = partition
        self.domain = domain
        self.workload = workload
        self.alpha = alpha
        self.beta = beta
        self.max_rounds = max_rounds
        self.max_cells = max_cells
        self.anneal_factor = anneal_factor
        self.selection_scores = selection_scores
        self.protocol = protocol
        self.local_marginal_shortcut = local_marginal_shortcut
        self.variance_model = variance_model
        self.n_repeats = n_repeats
        self.paper_reproduction = paper_reproduction
        self.use_selection_measurements = use_selection_measurements
        self.charge_selection = charge_selection
        self.init = init
        self.pgm_loss = pgm_loss
        self.max_iters = max_iters
        self.final_iters = final_iters
        self.tol = tol
        self.max_model_size = max_model_size
        self.sampling = sampling
        self.secure_computation = secure_computation
        self.n_jobs = n_jobs
        self.constraints = constraints
        self.random_state = random_state
        self.verbose = verbose

    # -- parameters and budget ----------------------------------------------------------------------
    # Where a hyper-parameter is None: the recommended (sound, measured) value, or the paper's literal one under
    # paper_reproduction.  See the class docstring's "Defaults" note.
    _RECOMMENDED = {"alpha": 0.3, "rounds_per_attribute": 4, "init": "oneway", "charge_selection": False,
                    "variance_model": "exact", "use_selection_measurements": True}
    _PAPER = {"alpha": 0.1, "rounds_per_attribute": 16, "init": "uniform", "charge_selection": True,
              "variance_model": "paper_bound", "use_selection_measurements": False}

    def _settings(self, n_attributes: int | None = None) -> dict:
        """The effective hyper-parameters (None resolved), validated."""
        base = self._PAPER if self.paper_reproduction else self._RECOMMENDED
        out = {name: base[name] if getattr(self, name) is None else getattr(self, name)
               for name in ("alpha", "init", "charge_selection", "variance_model", "use_selection_measurements")}
        out["beta"] = self.beta
        out["max_rounds"] = self.max_rounds
        if self.max_rounds is None and n_attributes is not None:
            out["max_rounds"] = base["rounds_per_attribute"] * n_attributes
        a, b = out["alpha"], out["beta"]   # each checked by the declared constraints
        if not a + b < 1:
            raise ValueError(f"alpha and beta must be > 0 with alpha + beta < 1, got alpha={a!r}, beta={b!r}.")
        return out

    _parameter_constraints = {
        "partition": [None, HybridPartition, Mapping, list, tuple, str],
        "workload": WORKLOAD_CONSTRAINT,
        "alpha": [None, Interval(Real, 0, 1, closed="neither")],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "anneal_factor": [Interval(Real, 1, None)],
        "charge_selection": [None, bool],
        "init": [None, Options("uniform", "oneway")],
        "use_selection_measurements": [None, bool],
        "variance_model": [None, Options(*_VARIANCE_MODELS)],
        "local_marginal_shortcut": [bool],
        "paper_reproduction": [bool],
        "max_cells": [Interval(Integral, 1, None)],
        "max_model_size": [None, Interval(Real, 0, None, closed="neither")],
        "max_rounds": [None, Interval(Integral, 1, None)],
        # joblib's: a number of workers, or -1 for all cores, -2 for all but one, ...; never 0; it refuses
        # about 500,000 and more with an error naming a literal, not n_jobs.
        "n_jobs": [None, Interval(Integral, 1, 4096), Interval(Integral, -4096, -1)],
        "n_repeats": [Interval(Integral, 1, None)],
        "pgm_loss": [Options(*_PGM_LOSSES)],
        "protocol": [Options(*PROTOCOLS)],
        "secure_computation": [Options(*SECURE_COMPUTATIONS)],
        "selection_scores": [Options(*SELECTION_SCORES)],
    }

    def _check_params(self) -> None:
        """The declared constraints, then the effective settings (alpha + beta < 1 once alpha is resolved)."""
        super()._check_params()
        self._settings()

    def _privacy_budget(self) -> dict:
        budget = super()._privacy_budget()  # validates epsilon and delta
        if self.paper_reproduction:
            return {"rho": cdp_rho_loose(float(self.epsilon), float(self.delta))}
        return budget

    def _charged_budget(self, budget: dict) -> dict:
        return {"rho": self.privacy_report_["rho_true"]}

    # -- fit ----------------------------------------------------------------------------------------
    def fit(self, X, y=None, partition=None):
        """Fit on hybrid-partitioned data.

        Parameters
        ----------
        X : pandas.DataFrame, 2-D array, or dict of per-party DataFrames
            The aligned table (rows are individuals; a party's rows and
            columns are given by the partition).  Or ``{party: frame}``, each
            frame holding an ID column (named by ``partition="id:<column>"``
            or the column ``"ID"``) and the party's columns: the table and the
            partition are then built by
            :meth:`HybridPartition.from_party_frames
            <skdpsynth.federated.HybridPartition.from_party_frames>` (IDs
            are a public roster).  Or a
            :class:`~skdpsynth.federated.FederatedData`: parties that
            keep their records and read them where they run.
        y : array-like, optional
            A column to synthesize with X (appended last; it must be in the
            partition's column groups when those are explicit).
        partition : optional
            Overrides the ``partition`` hyper-parameter for this fit.

        Returns
        -------
        self

        Raises
        ------
        TypeError
            On out-of-core input (a dask DataFrame, Parquet files, or
            per-party frames of them), before anything is read: the parties
            take their rows in memory, and a roster simulated from the data
            would need the private record count.  Records too large for the
            curator's process stay with their parties in a ``FederatedData``.
        """
        self._refuse_out_of_core(X)
        partition = self.partition if partition is None else partition
        if isinstance(X, dict) and all(isinstance(f, pd.DataFrame) for f in X.values()):
            id_column = "ID"
            if isinstance(partition, str) and partition.startswith("id:"):
                id_column, partition = partition[3:], None
            elif partition is not None:
                raise ValueError("With per-party frames the partition comes from the frames; pass "
                                 "partition=None (or 'id:<column>' to name the ID column).")
            X, partition = HybridPartition.from_party_frames(X, id_column)
        self._fit_partition = partition
        try:
            return super().fit(X, y)
        finally:
            del self._fit_partition

    def _resolve_partition(self, partition, n_rows: int, columns: list, rng) -> HybridPartition:
        if partition is None:
            return HybridPartition.centralized(n_rows, columns)
        if isinstance(partition, dict) and "slices" not in partition:
            recipe = dict(partition)
            unknown = set(recipe) - {"n_slices", "n_vertical", "column_groups", "shuffle"}
            if unknown:
                raise ValueError(f"Unknown partition recipe keys {sorted(unknown)}; use n_slices, n_vertical or "
                                 "column_groups, shuffle (or give 'slices' for an explicit partition).")
            return HybridPartition.grid(n_rows, columns, n_slices=recipe.get("n_slices", 1),
                                        n_vertical=recipe.get("n_vertical"),
                                        column_groups=recipe.get("column_groups"),
                                        shuffle=recipe.get("shuffle", True),
                                        random_state=int(rng.integers(2**63)))
        return HybridPartition.coerce(partition).validate(columns, n_rows)

    @staticmethod
    def _runtime_stats(backend, public_roster: bool) -> dict | None:
        """What crossed between curator and parties (None: the simulated mode, where nothing is serialised).

        The number of requests depends on the public layout and the number of
        DMM calls (post-processing of noisy answers) only.  The byte counts
        grow with the roster (the secure product relays records × cells
        words, the setup carries each party's row count), so they are kept
        only when the roster is public; on a roster simulated from ``X`` they
        would give the private record count exactly.
        """
        if backend is None:
            return None
        stats = {"backend": backend.kind, "n_parties": len(backend.names), "requests": backend.n_requests}
        if public_roster:
            stats.update(bytes_sent=backend.bytes_sent, bytes_received=backend.bytes_received)
        return stats

    @staticmethod
    def _is_simulated(partition) -> bool:
        """None or a recipe: the roster is built from the table's own rows (its size is the private count)."""
        return partition is None or (isinstance(partition, dict) and "slices" not in partition)

    def _fit_partition_of(self, codes, columns: list, rng, ledger: PrivacyLedger) -> tuple:
        """``(remote, simulated, partition)``: who holds what, from FederatedData or from ``partition``."""
        remote = is_remote_data(codes)
        if remote:  # FederatedData: the parties run elsewhere; only their messages reach this process
            if not hasattr(codes, "partition"):
                raise TypeError(f"HybridSynthesizer fits parties that keep their records through a FederatedData "
                                f"(a hybrid partition's roster), not a {type(codes).__name__}; vertically partitioned "
                                "parties without a roster are VerticalMRFSynthesizer's.")
            if self._fit_partition is not None:
                raise ValueError("FederatedData carries its partition; do not pass partition= as well.")
            if self.secure_computation != "cryptographic":
                raise ValueError("Parties that keep their records (FederatedData) need "
                                 "secure_computation='cryptographic': the simulated mode adds their per-record "
                                 "data in this process.")
            return True, False, codes.partition
        simulated = self._is_simulated(self._fit_partition)
        partition = self._resolve_partition(self._fit_partition, codes.shape[0], columns, rng)
        if simulated and self.protocol == "indicator":
            # Secure-sum variances depend on the layout only; the indicator protocol's on the slice sizes.
            warn_privacy_leak(
                "protocol='indicator' on a partition simulated from the table: its variance model, which the fit "
                "uses, reads the exact slice sizes, i.e. the private record count. Give an explicit partition "
                "(a public roster) or use protocol='secure_sum'.",
                stacklevel=5, ledger=ledger, description="exact slice sizes of the simulated roster (indicator "
                "protocol's variance model)")
        return False, simulated, partition

    def _warn_repeats(self, e: int, settings: dict, rho: float, to_epsilon) -> None:
        """The paper's IDMM (``e`` > 1) costs ``e`` times the budget: say what the fit's guarantee then is."""
        # Measurements cost e times their nominal budget; a charged selection does not repeat. Exact unless
        # init="oneway" with a charged selection (then see privacy_report_ after the fit).
        alpha, beta, delta = settings["alpha"], settings["beta"], float(self.delta)
        share = alpha + (beta if settings["charge_selection"] else 1 - alpha)
        predicted = (e * share + 1 - share) * rho
        warnings.warn(
            f"n_repeats={e} (the paper's IDMM) averages {e} noisy draws per measurement, which costs {e} times "
            f"the budget: this fit is about ({to_epsilon(predicted, delta):.4g}, {delta:g})-DP, not "
            f"({self.epsilon:g}, {delta:g})-DP. The ledger charges the true cost (privacy_report_ states it).",
            UserWarning, stacklevel=4)

    def _fit_codes(self, codes, domain: Domain, ledger: PrivacyLedger, rng, rho: float) -> None:
        remote, simulated, partition = self._fit_partition_of(codes, list(domain.attrs), rng, ledger)
        K, S = partition.n_slices, partition.n_vertical
        settings = self._settings(len(domain))
        alpha, beta = settings["alpha"], settings["beta"]
        e = K * S if self.paper_reproduction else int(self.n_repeats)
        delta = float(self.delta)
        to_epsilon = cdp_epsilon_loose if self.paper_reproduction else cdp_epsilon
        if e > 1:
            self._warn_repeats(e, settings, rho, to_epsilon)
        seed = int(rng.integers(2**63))
        if remote:
            federation = codes.federation(seed=seed, secure_computation=self.secure_computation)
            warn_curator_noise(federation.noise_modes, ledger)
        else:
            federation = Federation.from_codes(codes, domain, partition, n_jobs=self.n_jobs,
                                               secure_computation=self.secure_computation, seed=seed)
        workload = resolve_workload(self.workload, domain, None, default_ways=2)
        self._log(f"partition K={K} x S={S} ({partition.n_parties} parties), protocol {self.protocol}, "
                  f"rho {rho:.6g}")
        with federation:
            result = randdpgen(
                federation.measure, domain, partition, rho, workload=workload, rng=rng, ledger=ledger,
                alpha=alpha, beta=beta, rounds=settings["max_rounds"], max_cells=self.max_cells,
                anneal_factor=self.anneal_factor, protocol=self.protocol, shortcut=self.local_marginal_shortcut,
                variance_model=settings["variance_model"], n_repeats=e,
                use_selection_measurements=settings["use_selection_measurements"],
                charge_selection=settings["charge_selection"], init=settings["init"], pgm_loss=self.pgm_loss,
                max_iters=self.max_iters, final_iters=self.final_iters, tol=self.tol,
                max_model_size=self.max_model_size, selection_scores=self.selection_scores,
                log=self._log if self.verbose else (lambda message: None))
        self.runtime_ = self._runtime_stats(federation.backend, public_roster=not simulated)
        # Honest accounting: the ledger charges every measurement its true cost, e times its nominal budget.
        rho_true = ledger.total_rho()
        if e == 1 and not math.isclose(rho_true, rho, rel_tol=1e-9):
            raise RuntimeError(f"RandDPGen spent rho={rho_true!r}, not its budget {rho!r}.")
        self.privacy_report_ = {
            "rho_nominal": rho, "rho_true": rho_true, "epsilon_nominal": float(self.epsilon),
            "epsilon_true": to_epsilon(rho_true, delta), "delta": delta,
            "conversion": "lemma 3.2" if self.paper_reproduction else "tight (cdp_rho)", "n_repeats": e,
        }
        # A simulated roster's size is the exact record count: keep only its public layout.
        self.partition_ = partition.layout() if simulated else partition
        self.settings_ = settings
        self.workload_ = workload
        self.refined_workload_ = result.refined_workload
        self.weights_ = result.weights
        self.selection_budgets_ = result.selection_budgets
        self.selected_ = result.selected
        self.round_budgets_ = result.round_budgets
        self.anneal_events_ = result.anneal_events
        self.n_rounds_ = len(result.selected)
        self.measurements_ = result.measurements
        self.model_ = result.model
        self.n_records_ = result.total_estimate
