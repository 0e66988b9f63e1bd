"""Evaluation metrics for synthetic data: marginal fidelity, ML utility and sklearn scorers.

These read the real data in the clear: they evaluate a release, they are not
differentially private themselves.
"""
from __future__ import annotations

from .fidelity import kl_divergence, marginal_tvd
from .report import cramers_v, numeric_fidelity, write_report
from .scorers import marginal_scorer, tstr_scorer
from .utility import MisclassificationErrors, misclassification_variance, tstr_score

__all__ = [
    "MisclassificationErrors",
    "cramers_v",
    "kl_divergence",
    "marginal_scorer",
    "marginal_tvd",
    "misclassification_variance",
    "numeric_fidelity",
    "tstr_score",
    "tstr_scorer",
    "write_report",
]
