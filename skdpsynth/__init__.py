"""skdpsynth: differentially private synthetic tabular data with a scikit-learn API.

The names below are imported on first use (PEP 562), so that a process which needs one layer of the package
only, such as a federated party's server (:mod:`skdpsynth.federated.runtime`) or the privacy accounting, does
not import scikit-learn and every synthesizer: ``from skdpsynth import AIMSynthesizer`` works as usual.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0.dev0"

if TYPE_CHECKING:  # the same names, for type checkers and the layers contract (tests/test_architecture.py)
    from .domain import Domain
    from .pipeline import SynthesisPipeline, TrainOnSynthetic, make_synthesis_pipeline
    from .privacy import PrivacyLedger, PrivacyLeakWarning
    from .synthesizers import (AIMSynthesizer, BaseSynthesizer, HybridSynthesizer, MSTSynthesizer,
                               PartitionSynthesizer, VerticalMRFSynthesizer, ViewSynthesizer)

# Public name -> the module (relative to this package) that defines or re-exports it.
_HOME = {
    "AIMSynthesizer": "synthesizers",
    "BaseSynthesizer": "synthesizers",
    "Domain": "domain",
    "HybridSynthesizer": "synthesizers",
    "MSTSynthesizer": "synthesizers",
    "PartitionSynthesizer": "synthesizers",
    "PrivacyLedger": "privacy",
    "PrivacyLeakWarning": "privacy",
    "SynthesisPipeline": "pipeline",
    "TrainOnSynthetic": "pipeline",
    "VerticalMRFSynthesizer": "synthesizers",
    "ViewSynthesizer": "synthesizers",
    "make_synthesis_pipeline": "pipeline",
}

__all__ = [*_HOME, "__version__"]


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # later lookups are ordinary attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
