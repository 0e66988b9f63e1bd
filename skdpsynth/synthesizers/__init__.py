"""Differentially private synthesizers: one module per method on a shared base."""
from .base import BaseSynthesizer
from .aim import AIMSynthesizer
from .mst import MSTSynthesizer
from .partition import PartitionSynthesizer
from .hybrid import HybridSynthesizer
from .view import ViewSynthesizer
from .vertical_mrf import VerticalMRFSynthesizer

__all__ = ["AIMSynthesizer", "BaseSynthesizer", "HybridSynthesizer", "MSTSynthesizer", "PartitionSynthesizer", "VerticalMRFSynthesizer", "ViewSynthesizer"]
