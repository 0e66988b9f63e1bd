"""skdpsynth: differentially private synthetic tabular data with a scikit-learn API."""

__version__ = "0.1.0.dev0"

from .domain import Domain  # noqa: E402
from .pipeline import SynthesisPipeline, TrainOnSynthetic, make_synthesis_pipeline  # noqa: E402
from .privacy import PrivacyLedger, PrivacyLeakWarning  # noqa: E402
from .synthesizers import AIMSynthesizer, BaseSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer, VerticalMRFSynthesizer, ViewSynthesizer  # noqa: E402

__all__ = [
    "AIMSynthesizer",
    "BaseSynthesizer",
    "Domain",
    "HybridSynthesizer",
    "MSTSynthesizer",
    "PartitionSynthesizer",
    "PrivacyLedger",
    "PrivacyLeakWarning",
    "SynthesisPipeline",
    "TrainOnSynthetic",
    "VerticalMRFSynthesizer",
    "ViewSynthesizer",
    "make_synthesis_pipeline",
    "__version__",
]
