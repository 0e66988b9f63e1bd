"""The warning issued when private data is read without a DP mechanism."""
from __future__ import annotations

import warnings

__all__ = ["PrivacyLeakWarning", "warn_privacy_leak"]


class PrivacyLeakWarning(RuntimeWarning):
    """Something was read from the private data without a DP mechanism.

    Issued whenever information about the sensitive data is used without
    being paid for in the privacy budget, e.g. when a domain, the categories
    of a column or numeric bounds are inferred from the data because the user
    gave none. The resulting synthetic data then carries *no* formal privacy
    guarantee for that information. Pass the public domain / bounds
    explicitly instead. This warning should never be silenced in production.

    Examples
    --------
    >>> import warnings
    >>> from skdpsynth.privacy import PrivacyLeakWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("bounds inferred from data", PrivacyLeakWarning)
    >>> caught[0].category.__name__
    'PrivacyLeakWarning'
    """


def warn_privacy_leak(message: str, stacklevel: int = 2, *, ledger=None, description: str | None = None,
                      **details) -> None:
    """Issue a :class:`PrivacyLeakWarning` attributed to the caller, and record the leak.

    Parameters
    ----------
    message : str
        What was read from the data and how to avoid it.
    stacklevel : int, default=2
        Meaning as if :func:`warnings.warn` were called in place of this
        helper: the default 2 blames the caller of the function that calls it.
    ledger : PrivacyLedger, optional
        The fit's ledger: the leak is recorded in it
        (:meth:`~skdpsynth.privacy.PrivacyLedger.add_leak`), so that the
        ledger, and every statement made from it, says the release is *not*
        differentially private.
    description : str, optional
        The ledger entry's description (default: ``message``).
    **details
        Extra ledger details (e.g. ``columns=[...]``).

    Examples
    --------
    >>> import warnings
    >>> from skdpsynth.privacy import PrivacyLedger, PrivacyLeakWarning, warn_privacy_leak
    >>> ledger = PrivacyLedger()
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_privacy_leak("domain inferred from data; pass domain=...", ledger=ledger,
    ...                       description="domain of column 'a' read from the data")
    >>> issubclass(caught[0].category, PrivacyLeakWarning), ledger.is_private
    (True, False)
    """
    if ledger is not None:
        ledger.add_leak(message if description is None else description, **details)
    # +1 skips this helper's own frame.
    warnings.warn(message, PrivacyLeakWarning, stacklevel=stacklevel + 1)
