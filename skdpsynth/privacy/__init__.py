"""Privacy accounting (zCDP), basic DP mechanisms, the privacy ledger and warnings."""
from __future__ import annotations

from .accounting import (
    cdp_delta,
    cdp_epsilon,
    cdp_epsilon_loose,
    cdp_rho,
    cdp_rho_loose,
    exponential_mechanism_rho,
    gaussian_rho,
    gaussian_sigma,
    laplace_scale,
    pure_to_zcdp,
)
from .ledger import BudgetExceededError, Guarantee, LedgerEntry, PrivacyLedger, group_entry
from .mechanisms import (
    exponential_mechanism,
    exponential_mechanism_probabilities,
    gaussian_mechanism,
    get_noise,
    laplace_mechanism,
    lazy_exponential_mechanism,
    noise_context,
    set_noise,
)
from .metadata import is_public, mark_public
from .randomness import ReproducibleNoiseWarning, SystemRandomGenerator
from .samplers import bernoulli_exp, discrete_gaussian, discrete_laplace
from .warnings import PrivacyLeakWarning, warn_privacy_leak

__all__ = [
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "get_noise",
    "noise_context",
    "set_noise",
    "BudgetExceededError",
    "LedgerEntry",
    "PrivacyLedger",
    "Guarantee",
    "group_entry",
    "PrivacyLeakWarning",
    "ReproducibleNoiseWarning",
    "SystemRandomGenerator",
    "cdp_delta",
    "cdp_epsilon",
    "cdp_epsilon_loose",
    "cdp_rho",
    "cdp_rho_loose",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "exponential_mechanism_rho",
    "gaussian_mechanism",
    "gaussian_rho",
    "gaussian_sigma",
    "is_public",
    "laplace_mechanism",
    "laplace_scale",
    "lazy_exponential_mechanism",
    "mark_public",
    "pure_to_zcdp",
    "warn_privacy_leak",
]
