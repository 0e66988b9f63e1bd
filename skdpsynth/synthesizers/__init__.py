"""Differentially private synthesizers: one module per method on a shared base."""
from .base import BaseSynthesizer
from .aim import AIMSynthesizer
from .mst import MSTSynthesizer
from .hybrid import HybridSynthesizer
from .view import ViewSynthesizer

__all__ = ["AIMSynthesizer", "BaseSynthesizer", "HybridSynthesizer", "MSTSynthesizer", "ViewSynthesizer"]
