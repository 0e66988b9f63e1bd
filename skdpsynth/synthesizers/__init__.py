"""Differentially private synthesizers: one module per method on a shared base."""
from .base import BaseSynthesizer
from .aim import AIMSynthesizer
from .mst import MSTSynthesizer
from .hybrid import HybridSynthesizer

__all__ = ["AIMSynthesizer", "BaseSynthesizer", "HybridSynthesizer", "MSTSynthesizer"]
