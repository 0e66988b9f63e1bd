"""An append-only record of every privacy-consuming step, and its composition."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .accounting import cdp_epsilon

__all__ = ["LedgerEntry", "PrivacyLedger", "BudgetExceededError"]

_KINDS = ("zcdp", "pure", "approx", "leak")
_COLUMNS = [
    "description", "mechanism", "accounting", "rho", "epsilon",
    "delta", "sensitivity", "scale", "party", "n_values",
]


class BudgetExceededError(RuntimeError):
    """Raised by :meth:`PrivacyLedger.check_budget` when more was spent than allowed."""


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


class PrivacyLedger:
    """Append-only ledger of :class:`LedgerEntry` objects and their composition.

    zCDP and pure entries compose in zCDP (ε-DP counts as ε²/2-zCDP);
    (ε, δ) entries are added on top by basic composition.

    Parameters
    ----------
    entries : iterable of LedgerEntry, optional
        Initial entries.

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

    def __init__(self, entries: Iterable[LedgerEntry] = ()) -> None:
        self._entries: list[LedgerEntry] = []
        for entry in entries:
            self.record(entry)

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
        """The guarantee in words: ``"(ε, δ)-DP"``, ``"ε-DP (pure)"``, ``"ρ-zCDP"`` or ``"NOT differentially private: …"``.

        Parameters
        ----------
        delta : float, optional
            δ of an (ε, δ) statement.  Without it, a ledger of pure entries is
            stated as pure ε-DP and one with zCDP entries as ρ-zCDP.

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger, cdp_rho
        >>> ledger = PrivacyLedger()
        >>> _ = ledger.add("counts", "gaussian", rho=cdp_rho(1.0, 1e-9))
        >>> ledger.statement(1e-9)
        '(1.0000, 1e-09)-DP'
        """
        leaks = self._of("leak")
        if leaks:
            return "NOT differentially private: " + "; ".join(dict.fromkeys(e.description for e in leaks))
        kinds = {e.accounting for e in self._entries}
        if not kinds:
            return "nothing released from the private data (0-DP)"
        if kinds == {"pure"} and not delta:
            return f"{self.total_epsilon():.4f}-DP (pure)"
        if delta:
            return f"({self.epsilon(delta):.4f}, {float(delta):g})-DP"
        if "approx" in kinds:
            return "(ε, δ) entries recorded: give delta for the overall (ε, δ)-DP statement"
        return f"{self.total_zcdp():.6g}-zCDP"

    def extend(self, other: Iterable[LedgerEntry], party: str | None = None) -> PrivacyLedger:
        """Append all entries of ``other`` (e.g. a sub-step's ledger); returns ``self``.

        If ``party`` is given it tags the appended entries that have no party yet.
        """
        for entry in list(other):  # snapshot: allows ledger.extend(ledger)
            if party is not None and entry.party is None:
                entry = dataclasses.replace(entry, party=party, details=dict(entry.details))
            self.record(entry)
        return self

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """All entries, oldest first."""
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(tuple(self._entries))

    def __repr__(self) -> str:
        n_approx = sum(e.accounting == "approx" for e in self._entries)
        n_leaks = len(self._of("leak"))
        return (f"PrivacyLedger(n_entries={len(self)}, total_rho={self.total_rho():.6g}, "
                f"total_epsilon={self.total_epsilon():.6g}, n_approx={n_approx}"
                + (f", n_leaks={n_leaks}: NOT differentially private)" if n_leaks else ")"))

    def _of(self, kind: str) -> list[LedgerEntry]:
        return [e for e in self._entries if e.accounting == kind]

    def total_rho(self) -> float:
        """Sum of ρ over the zCDP entries only."""
        return math.fsum(e.rho for e in self._of("zcdp"))

    def total_epsilon(self) -> float:
        """Sum of ε over the pure entries only."""
        return math.fsum(e.epsilon for e in self._of("pure"))

    def total_zcdp(self) -> float:
        """zCDP and pure entries composed in zCDP: Σρ + Σε²/2 (approx entries excluded)."""
        return self.total_rho() + math.fsum(e.epsilon ** 2 / 2.0 for e in self._of("pure"))

    def epsilon(self, delta: float) -> float:
        """Overall ε such that everything recorded is (ε, δ)-DP.

        Approx entries take their δ's off the top and add their ε's (basic
        composition); the rest is converted from zCDP with :func:`cdp_epsilon`,
        or, when that is smaller, the pure entries' Σε is added to the
        conversion of the zCDP entries alone (basic composition again).  With
        pure entries only, the better of Σε and the zCDP route is returned,
        and ``delta=0`` is allowed.  A ledger that records a leak
        (:meth:`add_leak`) has no finite ε: ``inf`` is returned.

        Examples
        --------
        >>> from skdpsynth.privacy import PrivacyLedger
        >>> ledger = PrivacyLedger()
        >>> _ = ledger.add("a", "laplace", epsilon=0.5)
        >>> _ = ledger.add("b", "laplace", epsilon=0.5)
        >>> ledger.epsilon(0.0)
        1.0
        """
        delta = float(delta)
        if not 0.0 <= delta < 1.0:
            raise ValueError(f"delta must be in [0, 1), got {delta}.")
        approx = self._of("approx")
        approx_delta = math.fsum(e.delta for e in approx)
        left = delta - approx_delta
        eps = math.fsum(e.epsilon for e in approx)
        # Converting zCDP entries needs a strictly positive share of delta.
        if left < 0 or (left == 0 and self.total_rho() > 0):
            raise ValueError(f"delta={delta} must be at least the (epsilon, delta) entries' "
                             f"total {approx_delta}, and larger if zCDP entries exist.")
        if self._of("leak"):
            return math.inf
        if self.total_rho() > 0:
            best = cdp_epsilon(self.total_zcdp(), left)
            if self.total_epsilon() > 0:
                best = min(best, self.total_epsilon() + cdp_epsilon(self.total_rho(), left))
            return eps + best
        pure = self.total_epsilon()
        if left > 0 and pure > 0:
            pure = min(pure, cdp_epsilon(self.total_zcdp(), left))
        return eps + pure

    def to_frame(self) -> pd.DataFrame:
        """One row per entry, columns ``description, mechanism, accounting, rho,
        epsilon, delta, sensitivity, scale, party, n_values``."""
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
        """A new ledger with the same entries (entries are immutable, so shared)."""
        return PrivacyLedger(self._entries)
