"""Moved to :mod:`skdpsynth.synthesizers.vertical_mrf.binning` (VertiMRF owns its party side); this alias goes in 0.2.

Each name below is importable from here, with a ``DeprecationWarning``, until
0.2 (doc/changelog.md).
"""
from ..utils import moved_names

__all__: list[str] = []

_MOVED = {
    "equal_width_bins": "skdpsynth.synthesizers.vertical_mrf.binning",
    "binned_size": "skdpsynth.synthesizers.vertical_mrf.binning",
    "normalize_within_bins": "skdpsynth.synthesizers.vertical_mrf.binning",
    "value_distributions": "skdpsynth.synthesizers.vertical_mrf.binning",
    "uniform_value_distributions": "skdpsynth.synthesizers.vertical_mrf.binning",
    "his_rec": "skdpsynth.synthesizers.vertical_mrf.binning",
}

__getattr__ = moved_names(__name__, _MOVED)
