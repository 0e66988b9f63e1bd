"""An append-only record of every privacy-consuming step, and its composition."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .accounting import cdp_epsilon

__all__ = ["LedgerEntry", "PrivacyLedger", "Guarantee", "BudgetExceededError", "group_entry"]

_KINDS = ("zcdp", "pure", "approx", "leak")
_COLUMNS = [
    "description", "mechanism", "accounting", "rho", "epsilon",
    "delta", "sensitivity", "scale", "party", "n_values",
]


def _short_of_delta(delta: float, approx_delta: float, rho: float) -> str:
    """Why no (ε, δ) guarantee exists at ``delta``, and which δ to ask for instead."""
    if approx_delta == 0:  # zCDP entries and delta == 0
        return (f"delta=0 cannot be reached from the zCDP entries (rho={rho:.6g}): ask for delta > 0, or "
                "record pure epsilon-DP entries only for a pure guarantee.")
    relation = ">" if approx_delta > delta else ">="
    text = (f"The (epsilon, delta) entries already spend delta={approx_delta!r} {relation} the target "
            f"delta={delta!r} (their deltas add up by basic composition)")
    if rho > 0:
        return (text + f", and converting the zCDP entries (rho={rho:.6g}) needs a share of delta of its own: "
                f"ask for delta > {approx_delta!r}, e.g. delta={2 * approx_delta!r} "
                "(as much again for the conversion).")
    return text + f": ask for delta >= {approx_delta!r}."


class BudgetExceededError(RuntimeError):
    """Raised by :meth:`PrivacyLedger.check_budget` when more was spent than allowed.

    Examples
    --------
    >>> from skdpsynth.privacy import BudgetExceededError, PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.add("counts", "gaussian", rho=0.5)
    >>> try:
    ...     ledger.check_budget(rho=0.25)
    ... except BudgetExceededError as err:
    ...     print(err)
    Spent rho=0.5 > zCDP budget rho=0.25.
    """


@dataclass(frozen=True)
class LedgerEntry:
    """One privacy-consuming step.

    Parameters
    ----------
    description : str
        What was released (e.g. ``"marginal ('age', 'sex')"``).
    mechanism : str
        E.g. ``"gaussian"``, ``"laplace"``, ``"exponential"``.
    accounting : {"zcdp", "pure", "approx", "leak"}
        How the cost is expressed: ρ-zCDP, pure ε-DP or (ε, δ)-DP; ``"leak"``
        marks something read from the private data *without* a DP mechanism
        (no cost can be stated: the release is not differentially private).
    rho : float or None
        zCDP cost; required for ``"zcdp"``, ``None`` otherwise.
    epsilon : float or None
        ε cost; required for ``"pure"`` and ``"approx"``, ``None`` for ``"zcdp"``.
    delta : float, default=0.0
        δ cost; in (0, 1) for ``"approx"``, 0 otherwise.
    sensitivity, scale : float or None
        Sensitivity and noise scale (σ for Gaussian, b for Laplace, ε for EM).
    party : str or None
        Who spent it (federated settings).
    n_values : int or None
        Number of values released.
    details : dict
        Free-form extras; ignored by ``==`` and ``hash``.

    Examples
    --------
    >>> from skdpsynth.privacy import LedgerEntry
    >>> LedgerEntry("counts", "gaussian", "zcdp", rho=0.1, epsilon=None).rho
    0.1
    """

    description: str
    mechanism: str
    accounting: str
    rho: float | None
    epsilon: float | None
    delta: float = 0.0
    sensitivity: float | None = None
    scale: float | None = None
    party: str | None = None
    n_values: int | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        kind = self.accounting
        if kind not in _KINDS:
            raise ValueError(f"accounting must be one of {_KINDS}, got {kind!r}.")
        needed = {"zcdp": ("rho",), "pure": ("epsilon",), "approx": ("epsilon",), "leak": ()}[kind]
        for name in ("rho", "epsilon", "sensitivity", "scale"):
            value = getattr(self, name)
            if value is None:
                if name in needed:
                    raise ValueError(f"A {kind!r} entry needs {name}.")
                continue
            if name in ("rho", "epsilon") and name not in needed:
                raise ValueError(f"A {kind!r} entry must not set {name}.")
            value = float(value)
            # `not value >= 0` also rejects NaN.
            if not value >= 0 or math.isinf(value):
                raise ValueError(f"{name} must be finite and >= 0, got {value}.")
            object.__setattr__(self, name, value)  # store plain floats
        delta = float(self.delta)
        if kind == "approx" and not 0.0 < delta < 1.0:
            raise ValueError(f"An 'approx' entry needs delta in (0, 1), got {delta}.")
        if kind != "approx" and delta != 0.0:
            raise ValueError(f"A {kind!r} entry must have delta=0, got {delta}.")
        object.__setattr__(self, "delta", delta)
        if self.n_values is not None:
            if int(self.n_values) != self.n_values or self.n_values < 0:
                raise ValueError(f"n_values must be a non-negative integer, got {self.n_values}.")
            object.__setattr__(self, "n_values", int(self.n_values))


def _per_person_text(privacy_unit, max_contributions: int) -> str:
    """How a user-level ledger names its unit: ``per person ('user_id', at most 5 records each)``."""
    return (f"per person ({privacy_unit!r}, at most {max_contributions} record"
            f"{'' if max_contributions == 1 else 's'} each)")


def _check_privacy_unit(privacy_unit, max_contributions) -> int | None:
    """``max_contributions`` as an int, checked with ``privacy_unit`` (both given, or neither)."""
    if (privacy_unit is None) != (max_contributions is None):
        raise ValueError("Give privacy_unit and max_contributions together (a per-person ledger), or neither.")
    if max_contributions is None:
        return None
    if isinstance(max_contributions, bool) or int(max_contributions) != max_contributions or max_contributions < 1:
        raise ValueError(f"max_contributions must be an integer >= 1, got {max_contributions!r}.")
    return int(max_contributions)


def group_entry(entry: LedgerEntry, k: int) -> LedgerEntry:
    """The cost of ``entry`` for data sets that differ in up to ``k`` records (group privacy).

    A mechanism recorded at record level (add/remove one record) protects a
    group of ``k`` records at:

    * ρ-zCDP → k²ρ-zCDP (Bun & Steinke 2016, Proposition 27);
    * pure ε-DP → kε-DP (Dwork & Roth 2014, Theorem 2.2);
    * (ε, δ)-DP → (kε, k·e^{(k−1)ε}·δ)-DP: the same argument along a chain
      of k neighbours, carrying δ, gives δ·(1 + e^ε + … + e^{(k−1)ε}), at
      most k·e^{(k−1)ε}·δ; refused when that δ is not below 1 (no guarantee
      left);
    * a leak stays a leak.

    The sensitivity, if recorded, is scaled by ``k`` (a group moves each
    statistic ``k`` times as far); the noise scale is the one drawn.

    Parameters
    ----------
    entry : LedgerEntry
        A record-level entry.
    k : int
        The group size, ``>= 1``.

    Returns
    -------
    LedgerEntry
        ``entry`` itself for ``k = 1`` or a leak, else a new entry.

    Examples
    --------
    >>> from skdpsynth.privacy import LedgerEntry
    >>> from skdpsynth.privacy.ledger import group_entry
    >>> group_entry(LedgerEntry("counts", "gaussian", "zcdp", rho=0.01, epsilon=None, sensitivity=1.0), 5).rho
    0.25
    >>> group_entry(LedgerEntry("count", "laplace", "pure", rho=None, epsilon=0.2), 5).epsilon
    1.0
    """
    k = _check_privacy_unit("unit", k)
    if k == 1 or entry.accounting == "leak":
        return entry
    sensitivity = None if entry.sensitivity is None else entry.sensitivity * k
    if entry.accounting == "zcdp":
        return dataclasses.replace(entry, rho=k * k * entry.rho, sensitivity=sensitivity)
    if entry.accounting == "pure":
        return dataclasses.replace(entry, epsilon=k * entry.epsilon, sensitivity=sensitivity)
    log_delta = math.log(k) + (k - 1) * entry.epsilon + math.log(entry.delta)
    if not log_delta < 0.0:
        raise ValueError(f"The (epsilon, delta) entry {entry.description!r} ({entry.epsilon:g}, {entry.delta:g}) "
                         f"states no guarantee for {k} records: group privacy gives delta = k * exp((k - 1) * "
                         f"epsilon) * delta >= 1. Spend less epsilon or delta on it, or lower max_contributions.")
    return dataclasses.replace(entry, epsilon=k * entry.epsilon, delta=math.exp(log_delta), sensitivity=sensitivity)


def _n(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"


@dataclass(frozen=True)
class Guarantee:
    """The (ε, δ)-DP guarantee of a :class:`PrivacyLedger` at one δ, and how it was composed.

    Returned by :meth:`PrivacyLedger.guarantee`; ``str()`` explains it in one line.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee: everything recorded is (``epsilon``, ``delta``)-DP.
        ``epsilon`` is ``inf`` when the ledger records a leak.
    rho : float
        Σρ of the ``n_zcdp`` zCDP entries.
    pure_epsilon : float
        Σε of the ``n_pure`` pure entries.
    pure_folded : bool or None
        True if the pure entries were converted together with the zCDP ones
        (each ε-DP entry as ε²/2-zCDP), False if their Σε was added (basic
        composition); None without pure entries, or with a leak.
    converted_rho : float
        The ρ converted to (ε, δ): ``rho``, plus Σε²/2 if ``pure_folded``.
    conversion_epsilon : float or None
        ε of that conversion at ``conversion_delta`` (:func:`cdp_epsilon`);
        None if nothing was converted (nor with a leak).
    conversion_delta : float
        ``delta`` minus the approx entries' Σδ: what the conversion may spend.
    approx_epsilon, approx_delta : float
        Σε and Σδ of the ``n_approx`` (ε, δ) entries (basic composition).
    leaks : tuple of str
        Descriptions of the leak entries; any makes ``epsilon`` infinite.
    privacy_unit : hashable or None
        The identifier column of a user-level ledger (see
        :meth:`PrivacyLedger.per_person`): every quantity above is then per
        person, for data sets differing in all records of one person, each
        person holding at most ``max_contributions`` records.  ``None``: per
        record.
    max_contributions : int or None
        ``k``, the records kept per person (with ``privacy_unit``).

    Examples
    --------
    A preprocessing step given (ε, δ) = (0.1, 1e-9) spent ε = 0.05 on pure
    bounds and (0.05, 1e-9) on categories, and a synthesizer given
    (0.9, 1e-9) spent its ρ: the total δ is 2e-9.

    >>> from skdpsynth.privacy import PrivacyLedger, cdp_rho
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.add("bounds", "laplace", epsilon=0.05)
    >>> _ = ledger.add("categories", "laplace-threshold", epsilon=0.05, delta=1e-9)
    >>> _ = ledger.add("marginals", "gaussian", rho=cdp_rho(0.9, 1e-9))
    >>> print(ledger.guarantee(2e-9))  # doctest: +NORMALIZE_WHITESPACE
    (0.996844, 2e-09)-DP: zCDP rho=0.0122352 (1 entry) and pure eps=0.05 (1 entry) folded in as eps^2/2
    -> rho=0.0134852 -> eps=0.946844 at delta=1e-09 + (eps, delta) entries eps=0.05, delta=1e-09 (1 entry),
    added by basic composition
    """

    epsilon: float
    delta: float
    rho: float = 0.0
    n_zcdp: int = 0
    pure_epsilon: float = 0.0
    n_pure: int = 0
    pure_folded: bool | None = None
    converted_rho: float = 0.0
    conversion_epsilon: float | None = None
    conversion_delta: float = 0.0
    approx_epsilon: float = 0.0
    approx_delta: float = 0.0
    n_approx: int = 0
    leaks: tuple[str, ...] = ()
    privacy_unit: Any = None
    max_contributions: int | None = None

    @property
    def is_private(self) -> bool:
        """False when a leak voids the guarantee."""
        return not self.leaks

    def __str__(self) -> str:
        text = self._describe()
        if self.privacy_unit is None or self.leaks:
            return text
        head, colon, rest = text.partition(": ")
        return head + " " + _per_person_text(self.privacy_unit, self.max_contributions) + colon + rest

    def _describe(self) -> str:
        if self.leaks:
            return ("no DP guarantee (epsilon=inf): NOT differentially private: "
                    + "; ".join(dict.fromkeys(self.leaks)))
        if not (self.n_zcdp or self.n_pure or self.n_approx):
            return f"(0, {self.delta:g})-DP: nothing released from the private data"
        head = f"({self.epsilon:.6g}, {self.delta:g})-DP"
        if self.delta == 0 and not self.n_zcdp:
            head += f", i.e. pure {self.epsilon:.6g}-DP"
        parts = []
        pure = f"pure eps={self.pure_epsilon:.6g} ({_n(self.n_pure)})"
        if self.conversion_epsilon is not None:
            terms = []
            if self.n_zcdp:
                terms.append(f"zCDP rho={self.rho:.6g} ({_n(self.n_zcdp)})")
            if self.pure_folded:
                terms.append(f"{pure} folded in as eps^2/2")
            conv = " and ".join(terms)
            if len(terms) > 1:
                conv += f" -> rho={self.converted_rho:.6g}"
            parts.append(f"{conv} -> eps={self.conversion_epsilon:.6g} at delta={self.conversion_delta:g}")
        elif self.n_zcdp:  # zCDP entries of rho = 0
            parts.append(f"zCDP rho={self.rho:.6g} ({_n(self.n_zcdp)}) -> eps=0")
        if self.n_pure and not self.pure_folded:
            parts.append(pure)
        if self.n_approx:
            parts.append(f"(eps, delta) entries eps={self.approx_epsilon:.6g}, delta={self.approx_delta:g} "
                         f"({_n(self.n_approx)})")
        if len(parts) > 1 or self.conversion_epsilon is None:
            parts[-1] += ", added by basic composition"
        return head + ": " + " + ".join(parts)


class PrivacyLedger:
    """Append-only ledger of :class:`LedgerEntry` objects and their composition.

    zCDP and pure entries compose in zCDP (ε-DP counts as ε²/2-zCDP), or the
    pure entries' Σε is added when that is tighter; (ε, δ) entries are added
    on top by basic composition.  :meth:`epsilon` gives the overall ε at a
    total δ, :meth:`guarantee` also says how it was composed, and the repr
    shows the totals per kind of entry and the guarantee they give.

    Parameters
    ----------
    entries : iterable of LedgerEntry, optional
        Initial entries.
    zcdp_delta : float, optional
        The δ the zCDP entries were budgeted with: a synthesizer given
        ``(epsilon, delta)`` spends ``rho = cdp_rho(epsilon, delta)`` and
        records ``delta`` here.  With it the ledger knows the total δ of its
        own guarantee, :attr:`delta`, and :meth:`epsilon` and the repr state
        ``(ε, δ)`` without being told δ.  :meth:`extend` adds the other
        ledger's ``zcdp_delta``: a pipeline's steps' δ's add up.
    privacy_unit : hashable, optional
        Makes this a user-level ledger: the name of the identifier column
        whose values are the persons protected.  Its entries are still
        recorded at record level (what each mechanism spends on data sets
        differing in one record, as :attr:`entries` and :meth:`to_frame`
        show them), and every total, :meth:`epsilon`, :meth:`guarantee`,
        :meth:`statement`, :attr:`delta`, :meth:`check_budget` and the repr
        are stated per person by group privacy (see :func:`group_entry`).
        Set by a synthesizer fitted with ``privacy_unit=``; see
        :meth:`per_person` and :meth:`record_level`.
    max_contributions : int, optional
        ``k``: the records each person holds at most (required with
        ``privacy_unit``).

    Examples
    --------
    >>> from skdpsynth.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.add("1-way marginals", "gaussian", rho=0.2)
    >>> _ = ledger.add("select cliques", "exponential", rho=0.05)
    >>> round(ledger.total_zcdp(), 6)
    0.25
    >>> round(ledger.epsilon(1e-6), 4)
    3.5423
    >>> ledger.check_budget(rho=0.25)
    """

    #: The identifier column of a user-level ledger, and ``k``; ``None`` for a record-level one.
    privacy_unit = None
    max_contributions: int | None = None

    def __init__(self, entries: Iterable[LedgerEntry] = (), *, zcdp_delta: float | None = None,
                 privacy_unit=None, max_contributions: int | None = None) -> None:
        self._entries: list[LedgerEntry] = []
        if zcdp_delta is not None and not 0.0 < float(zcdp_delta) < 1.0:
            raise ValueError(f"zcdp_delta must be in (0, 1), got {zcdp_delta!r}.")
        self.zcdp_delta = None if zcdp_delta is None else float(zcdp_delta)
        k = _check_privacy_unit(privacy_unit, max_contributions)
        if privacy_unit is not None:  # a record-level ledger keeps the class defaults (its state is unchanged)
            self.privacy_unit, self.max_contributions = privacy_unit, k
        for entry in entries:
            self.record(entry)

    def per_person(self, privacy_unit, max_contributions: int) -> PrivacyLedger:
        """A user-level copy: the same record-level entries, stated per person by group privacy.

        After the records are bounded to ``max_contributions`` (``k``) per
        value of ``privacy_unit``, two data sets that differ in one person's
        records differ in at most ``k`` records; each entry's cost for them is
        given by :func:`group_entry` (ρ → k²ρ, ε → kε, (ε, δ) →
        (kε, k·e^{(k−1)ε}·δ)).  ``zcdp_delta`` is kept: the per-person ρ is
        converted at the same δ.

        Parameters
        ----------
        privacy_unit : hashable
            The identifier column.
        max_contributions : int
            ``k >= 1``.

        Returns
        -------
        PrivacyLedger

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger, cdp_rho
        >>> ledger = PrivacyLedger(zcdp_delta=1e-9)
        >>> _ = ledger.add("counts", "gaussian", rho=cdp_rho(1.0, 1e-9) / 25)  # rho / k^2 per record
        >>> person = ledger.per_person("user_id", 5)
        >>> person.statement()
        "(1.0000, 1e-09)-DP per person ('user_id', at most 5 records each)"
        >>> round(person.total_rho() / person.record_level().total_rho(), 9)
        25.0
        """
        if privacy_unit is None:
            raise ValueError("privacy_unit must name the identifier column; record_level() drops it.")
        return PrivacyLedger(self._entries, zcdp_delta=self.zcdp_delta, privacy_unit=privacy_unit,
                             max_contributions=max_contributions)

    def record_level(self) -> PrivacyLedger:
        """The same entries stated per record (add/remove one record), as they were recorded.

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger
        >>> ledger = PrivacyLedger(privacy_unit="user_id", max_contributions=2)
        >>> _ = ledger.add("count", "laplace", epsilon=0.5)
        >>> ledger.total_epsilon(), ledger.record_level().total_epsilon()
        (1.0, 0.5)
        """
        return PrivacyLedger(self._entries, zcdp_delta=self.zcdp_delta)

    def _per_person_suffix(self) -> str:
        return "" if self.privacy_unit is None else " " + _per_person_text(self.privacy_unit, self.max_contributions)

    @property
    def delta(self) -> float | None:
        """The total δ this ledger's spenders were budgeted: Σδ of the (ε, δ) entries plus ``zcdp_delta``.

        ``0.0`` for a ledger of pure entries only; ``None`` when zCDP entries
        exist but no ``zcdp_delta`` was recorded (state the guarantee with an
        explicit δ then).

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger
        >>> ledger = PrivacyLedger(zcdp_delta=1e-9)
        >>> _ = ledger.add("marginals", "gaussian", rho=0.01)
        >>> _ = ledger.add("categories", "laplace-threshold", epsilon=0.05, delta=1e-9)
        >>> ledger.delta
        2e-09
        """
        approx = math.fsum(e.delta for e in self._of("approx"))
        if self._of("zcdp"):
            return None if self.zcdp_delta is None else approx + self.zcdp_delta
        return approx

    def record(self, entry: LedgerEntry) -> LedgerEntry:
        """Append an existing :class:`LedgerEntry` and return it."""
        if not isinstance(entry, LedgerEntry):
            raise TypeError(f"Expected a LedgerEntry, got {type(entry).__name__}.")
        self._entries.append(entry)
        return entry

    def add(self, description: str, mechanism: str, *, rho: float | None = None,
            epsilon: float | None = None, delta: float = 0.0, sensitivity: float | None = None,
            scale: float | None = None, party: str | None = None, n_values: int | None = None,
            **details: Any) -> LedgerEntry:
        """Create, append and return an entry; the accounting kind is inferred.

        ``rho`` alone gives ``"zcdp"``, ``epsilon`` alone ``"pure"``, ``epsilon``
        with ``delta > 0`` ``"approx"``. Extra keyword arguments go to ``details``.

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger
        >>> PrivacyLedger().add("count", "laplace", epsilon=0.5).accounting
        'pure'
        """
        if (rho is None) == (epsilon is None):
            raise ValueError("Give exactly one of rho (zCDP cost) or epsilon (pure/approx cost).")
        if rho is not None and delta:
            raise ValueError("delta only applies to (epsilon, delta) entries, not to rho.")
        kind = "zcdp" if rho is not None else ("approx" if delta > 0 else "pure")
        return self.record(LedgerEntry(
            description, mechanism, kind, rho=rho, epsilon=epsilon, delta=delta,
            sensitivity=sensitivity, scale=scale, party=party, n_values=n_values,
            details=details,
        ))

    def add_leak(self, description: str, *, party: str | None = None, **details: Any) -> LedgerEntry:
        """Record that something was read from the private data *without* a DP mechanism.

        The ledger then states no differential-privacy guarantee:
        :attr:`is_private` is False and :meth:`epsilon` is infinite.  Called
        by :func:`~skdpsynth.privacy.warn_privacy_leak` when it is given a
        ledger, together with the :class:`~skdpsynth.privacy.PrivacyLeakWarning`.

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger
        >>> ledger = PrivacyLedger()
        >>> _ = ledger.add("counts", "gaussian", rho=0.1)
        >>> _ = ledger.add_leak("categories of column 'city' read from the data", columns=["city"])
        >>> ledger.is_private, ledger.epsilon(1e-9)
        (False, inf)
        >>> ledger.statement(1e-9)
        "NOT differentially private: categories of column 'city' read from the data"
        """
        return self.record(LedgerEntry(description, "none", "leak", rho=None, epsilon=None, party=party,
                                       details=details))

    @property
    def leaks(self) -> tuple[LedgerEntry, ...]:
        """The entries recording reads of private data without DP (see :meth:`add_leak`)."""
        return tuple(self._of("leak"))

    @property
    def is_private(self) -> bool:
        """True unless something was read from the private data without a DP mechanism."""
        return not self._of("leak")

    def statement(self, delta: float | None = None) -> str:
        """The guarantee in words: ``"(ε, δ)-DP"``, ``"ε-DP (pure)"``, ``"ρ-zCDP"`` or ``"NOT differentially …"``.

        Parameters
        ----------
        delta : float, optional
            δ of an (ε, δ) statement (see :meth:`guarantee`).  Default:
            :attr:`delta`, the δ the spenders were budgeted (as for
            :meth:`epsilon` and the repr).  A ledger of pure entries only is
            stated as pure ε-DP unless a δ > 0 is given.  When the ledger's
            own δ is unknown (zCDP entries recorded without ``zcdp_delta``)
            and none is given, the guarantee is stated as it is: ρ-zCDP
            (pure entries folded in as ε²/2), next to the (Σε, Σδ)-DP of
            the (ε, δ) entries if any.

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger, cdp_rho
        >>> ledger = PrivacyLedger(zcdp_delta=1e-9)  # what a synthesizer given (1, 1e-9) records
        >>> _ = ledger.add("counts", "gaussian", rho=cdp_rho(1.0, 1e-9))
        >>> ledger.statement()
        '(1.0000, 1e-09)-DP'
        >>> ledger.statement(1e-6)  # the same spending, stated at another delta
        '(0.7710, 1e-06)-DP'
        >>> unknown = PrivacyLedger(ledger.entries)  # the same entries, their delta not recorded
        >>> unknown.statement()
        '0.0149731-zCDP'

        A user-level ledger (:meth:`per_person`) says so, naming the identifier and ``k``.
        """
        text = self._statement(delta)
        return text if not self.is_private else text + self._per_person_suffix()

    def _statement(self, delta: float | None) -> str:
        leaks = self._of("leak")
        if leaks:
            return "NOT differentially private: " + "; ".join(dict.fromkeys(e.description for e in leaks))
        kinds = {e.accounting for e in self._entries}
        if not kinds:
            return "nothing released from the private data (0-DP)"
        if delta is None and kinds != {"pure"}:
            delta = self.delta  # None when zCDP entries do not say which delta they were budgeted with
        if kinds == {"pure"} and not delta:
            return f"{self.total_epsilon():.4f}-DP (pure)"
        if delta:
            return f"({self.epsilon(delta):.4f}, {float(delta):g})-DP"
        return self._composite()

    def _composite(self) -> str:
        """The guarantee without a δ: pure ε-DP, ρ-zCDP, (ε, δ)-DP, or ρ-zCDP and (ε, δ)-DP side by side."""
        kinds = {e.accounting for e in self._entries}
        if not kinds:
            return "nothing released from the private data (0-DP)"
        if kinds == {"pure"}:
            return f"{self.total_epsilon():.6g}-DP (pure)"
        if "approx" not in kinds:
            return f"{self.total_zcdp():.6g}-zCDP"
        approx = self._of("approx")
        approx_eps = math.fsum(e.epsilon for e in approx)
        approx_delta = math.fsum(e.delta for e in approx)
        if not self.total_rho() > 0:  # pure entries (if any) add their ε: exact at δ = Σδ
            return f"({approx_eps + self.total_epsilon():.6g}, {approx_delta:g})-DP"
        return (f"{self.total_zcdp():.6g}-zCDP and ({approx_eps:.6g}, {approx_delta:g})-DP "
                f"(give delta > {approx_delta!r} for one (epsilon, delta)-DP statement)")

    def extend(self, other: Iterable[LedgerEntry], party: str | None = None) -> PrivacyLedger:
        """Append all entries of ``other`` (e.g. a sub-step's ledger); returns ``self``.

        If ``party`` is given it tags the appended entries that have no party
        yet.  A ledger's ``zcdp_delta`` is added to this one's.  Ledgers of
        different privacy units (per record, or per person with another
        identifier or ``k``) do not compose: ``ValueError``.
        """
        unit = (getattr(other, "privacy_unit", None), getattr(other, "max_contributions", None))
        if isinstance(other, PrivacyLedger) and unit != (self.privacy_unit, self.max_contributions):
            def name(u):
                return "per record" if u[0] is None else _per_person_text(*u)
            raise ValueError(f"Cannot add a ledger stated {name(unit)} to one stated "
                             f"{name((self.privacy_unit, self.max_contributions))}: the guarantees protect "
                             "different units and do not compose as they are.")
        other_delta = getattr(other, "zcdp_delta", None)
        if other_delta is not None:
            self.zcdp_delta = other_delta + (self.zcdp_delta or 0.0)
        for entry in list(other):  # snapshot: allows ledger.extend(ledger)
            if party is not None and entry.party is None:
                entry = dataclasses.replace(entry, party=party, details=dict(entry.details))
            self.record(entry)
        return self

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """All entries, oldest first, as recorded: at record level, also in a user-level ledger."""
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(tuple(self._entries))

    def __repr__(self) -> str:
        """Totals per kind of entry, then the guarantee they give (see :meth:`statement`)."""
        parts = [f"n_entries={len(self)}"]
        zcdp, pure, approx, leaks = (self._of(k) for k in _KINDS)
        if zcdp:
            parts.append(f"rho={self.total_rho():.6g} ({_n(len(zcdp))})")
        if pure:
            parts.append(f"pure_epsilon={self.total_epsilon():.6g} ({_n(len(pure))})")
        if approx:
            parts.append(f"approx=({math.fsum(e.epsilon for e in approx):.6g}, "
                         f"{math.fsum(e.delta for e in approx):g}) ({_n(len(approx))})")
        if leaks:
            parts.append(f"n_leaks={len(leaks)}")
            guarantee = "no DP guarantee, NOT differentially private"
        elif (zcdp or approx) and self.delta is not None:
            guarantee = f"({self.epsilon():.6g}, {self.delta:g})-DP"
            if zcdp and not approx:  # (epsilon, delta) entries are not zCDP: no rho for the whole then
                guarantee = f"{self.total_zcdp():.6g}-zCDP, {guarantee}"
        else:
            guarantee = self._composite()
        if self.privacy_unit is not None:
            parts.append(f"privacy_unit={self.privacy_unit!r}, max_contributions={self.max_contributions}")
            if not leaks:
                guarantee += self._per_person_suffix()
        return f"PrivacyLedger({', '.join(parts)}: {guarantee})"

    def _of(self, kind: str) -> list[LedgerEntry]:
        """The entries of one kind, at their cost for the ledger's unit (per person: by group privacy)."""
        if self.privacy_unit is None:
            return [e for e in self._entries if e.accounting == kind]
        return [group_entry(e, self.max_contributions) for e in self._entries if e.accounting == kind]

    def total_rho(self) -> float:
        """Sum of ρ over the zCDP entries only (per person in a user-level ledger: k²× the recorded ρ's)."""
        return math.fsum(e.rho for e in self._of("zcdp"))

    def total_epsilon(self) -> float:
        """Sum of ε over the pure entries only (per person in a user-level ledger: k× the recorded ε's)."""
        return math.fsum(e.epsilon for e in self._of("pure"))

    def total_zcdp(self) -> float:
        """zCDP and pure entries composed in zCDP: Σρ + Σε²/2 (approx entries excluded)."""
        return self.total_rho() + math.fsum(e.epsilon ** 2 / 2.0 for e in self._of("pure"))

    def epsilon(self, delta: float | None = None) -> float:
        """Overall ε such that everything recorded is (ε, δ)-DP: ``guarantee(delta).epsilon``.

        Approx entries take their δ's off the top and add their ε's (basic
        composition); the rest is converted from zCDP with :func:`cdp_epsilon`,
        or, when that is smaller, the pure entries' Σε is added to the
        conversion of the zCDP entries alone (basic composition again).  With
        pure entries only, the better of Σε and the zCDP route is returned,
        and ``delta=0`` is allowed.  A ledger that records a leak
        (:meth:`add_leak`) has no finite ε: ``inf`` is returned, whatever δ.
        :meth:`guarantee` says how the ε was composed.  ``delta`` defaults to
        :attr:`delta`, the δ the spenders were budgeted.

        Raises
        ------
        ValueError
            If ``delta`` is not in [0, 1), or if the approx entries' δ's
            already add up to ``delta`` or more (with zCDP entries, which need
            a share of δ of their own, strictly less is required): the
            message says what δ to ask for.

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger
        >>> ledger = PrivacyLedger()
        >>> _ = ledger.add("a", "laplace", epsilon=0.5)
        >>> _ = ledger.add("b", "laplace", epsilon=0.5)
        >>> ledger.epsilon(0.0)
        1.0
        """
        return self.guarantee(delta).epsilon

    def guarantee(self, delta: float | None = None) -> Guarantee:
        """The tightest (ε, δ)-DP guarantee this ledger states at total ``delta``, and how it was composed.

        * zCDP entries add their ρ; the total is converted to (ε, δ_z) with
          :func:`cdp_epsilon` (Canonne, Kamath & Steinke's tight conversion),
          where δ_z = ``delta`` − Σδ of the approx entries.
        * Pure ε-DP entries are either folded into that ρ (ε-DP implies
          ε²/2-zCDP, Bun & Steinke 2016) or their Σε is added (basic
          composition), whichever gives the smaller ε: both are valid at the
          same δ, hence so is the smaller.  Without zCDP entries the
          alternatives are Σε and the conversion of Σε²/2 alone.
        * (ε, δ) entries compose by basic composition: Σε and Σδ are added.

        Parameters
        ----------
        delta : float, optional
            Total δ, in [0, 1).  It must exceed the approx entries' Σδ when
            zCDP entries exist, and be at least that Σδ otherwise.  Default:
            :attr:`delta`, the δ the spenders were budgeted.

        Returns
        -------
        Guarantee
            ``epsilon`` (``inf`` if a leak is recorded), ``delta`` and the
            parts; ``str()`` explains the composition.

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger
        >>> ledger = PrivacyLedger()
        >>> _ = ledger.add("marginals", "gaussian", rho=0.25)
        >>> _ = ledger.add("bounds", "laplace", epsilon=0.5)
        >>> g = ledger.guarantee(1e-6)
        >>> round(g.epsilon, 4), g.pure_folded
        (4.0423, False)
        >>> print(g)  # doctest: +NORMALIZE_WHITESPACE
        (4.04229, 1e-06)-DP: zCDP rho=0.25 (1 entry) -> eps=3.54229 at delta=1e-06
        + pure eps=0.5 (1 entry), added by basic composition
        """
        if delta is None:
            delta = self.delta
            if delta is None:
                raise ValueError("This ledger records zCDP entries but not the delta they were budgeted with "
                                 "(zcdp_delta): give delta.")
        delta = float(delta)
        if not 0.0 <= delta < 1.0:
            raise ValueError(f"delta must be in [0, 1), got {delta}.")
        zcdp, pure, approx, leaks = (self._of(k) for k in _KINDS)
        rho = self.total_rho()
        pure_eps = self.total_epsilon()
        pure_rho = math.fsum(e.epsilon ** 2 / 2.0 for e in pure)
        approx_eps = math.fsum(e.epsilon for e in approx)
        approx_delta = math.fsum(e.delta for e in approx)
        parts = dict(delta=delta, rho=rho, n_zcdp=len(zcdp), pure_epsilon=pure_eps, n_pure=len(pure),
                     approx_epsilon=approx_eps, approx_delta=approx_delta, n_approx=len(approx),
                     privacy_unit=self.privacy_unit, max_contributions=self.max_contributions)
        if leaks:
            return Guarantee(math.inf, leaks=tuple(e.description for e in leaks), **parts)
        left = delta - approx_delta
        # Converting zCDP entries needs a strictly positive share of delta.
        if left < 0 or (left == 0 and rho > 0):
            raise ValueError(_short_of_delta(delta, approx_delta, rho))
        folded, conv_rho, conv_eps = False, 0.0, None
        if rho > 0:
            folded, conv_rho, conv_eps = True, rho + pure_rho, cdp_epsilon(rho + pure_rho, left)
            if pure_eps > 0:
                alone = cdp_epsilon(rho, left)
                if pure_eps + alone < conv_eps:
                    folded, conv_rho, conv_eps = False, rho, alone
        elif pure_eps > 0 and left > 0:
            alone = cdp_epsilon(pure_rho, left)
            if alone < pure_eps:
                folded, conv_rho, conv_eps = True, pure_rho, alone
        if conv_eps is None:
            core = pure_eps
        else:
            core = conv_eps if folded else pure_eps + conv_eps
        return Guarantee(approx_eps + core, pure_folded=folded if pure else None, converted_rho=conv_rho,
                         conversion_epsilon=conv_eps, conversion_delta=left, **parts)

    def to_frame(self) -> pd.DataFrame:
        """One row per entry, columns ``description, mechanism, accounting, rho,
        epsilon, delta, sensitivity, scale, party, n_values`` (as recorded: at record level)."""
        rows = [{c: getattr(e, c) for c in _COLUMNS} for e in self._entries]
        frame = pd.DataFrame(rows, columns=_COLUMNS)
        for c in ("rho", "epsilon", "delta", "sensitivity", "scale"):
            frame[c] = frame[c].astype(float)  # None -> NaN
        frame["n_values"] = frame["n_values"].astype("Int64")
        return frame

    def check_budget(self, *, rho: float | None = None, epsilon: float | None = None,
                     rtol: float = 1e-9) -> None:
        """Raise :class:`BudgetExceededError` if the spend exceeds the budget.

        With ``rho``, :meth:`total_zcdp` is checked against it (approx entries
        cannot be, so they raise ``ValueError``). With ``epsilon``,
        :meth:`total_epsilon` is checked, which requires pure entries only.
        Spending exactly the budget passes (``rtol`` absorbs rounding).
        """
        if rho is None and epsilon is None:
            raise ValueError("Give a budget: rho and/or epsilon.")
        kinds = {e.accounting for e in self._entries} - {"leak"}  # a leak has no cost to check
        if rho is not None:
            if "approx" in kinds:
                raise ValueError("(epsilon, delta) entries have no zCDP cost to check.")
            spent = self.total_zcdp()
            if spent > rho * (1.0 + rtol):
                raise BudgetExceededError(f"Spent rho={spent:.6g} > zCDP budget rho={rho:.6g}.")
        if epsilon is not None:
            if kinds - {"pure"}:
                if rho is None:
                    raise ValueError("Non-pure entries recorded: check a rho budget instead.")
                return
            spent = self.total_epsilon()
            if spent > epsilon * (1.0 + rtol):
                raise BudgetExceededError(
                    f"Spent epsilon={spent:.6g} > budget epsilon={epsilon:.6g}.")

    def copy(self) -> PrivacyLedger:
        """A new ledger with the same entries (entries are immutable, so shared) and unit."""
        return PrivacyLedger(self._entries, zcdp_delta=self.zcdp_delta, privacy_unit=self.privacy_unit,
                             max_contributions=self.max_contributions)
