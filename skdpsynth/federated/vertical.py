"""Moved to :mod:`skdpsynth.synthesizers.vertical_mrf.party` (VertiMRF owns its party side); this alias goes in 0.2.

Each name below is importable from here, with a ``DeprecationWarning``, until
0.2 (doc/changelog.md).
"""
from ..utils import moved_names

__all__: list[str] = []

_MOVED = {
    "VerticalBudget": "skdpsynth.synthesizers.vertical_mrf.party",
    "VerticalConfig": "skdpsynth.synthesizers.vertical_mrf.party",
    "VerticalParty": "skdpsynth.synthesizers.vertical_mrf.party",
    "vertical_budget": "skdpsynth.synthesizers.vertical_mrf.party",
    "sketch_epsilon_prime_rdp": "skdpsynth.synthesizers.vertical_mrf.party",
    "ENCODERS": "skdpsynth.synthesizers.vertical_mrf.party",
    "FO_ACCOUNTING": "skdpsynth.synthesizers.vertical_mrf.party",
    "LOCAL_LEARNERS": "skdpsynth.synthesizers.vertical_mrf.party",
    "SKETCH_ACCOUNTING": "skdpsynth.synthesizers.vertical_mrf.party",
    "VerticalMessage": "skdpsynth.synthesizers.vertical_mrf.message",
}

__getattr__ = moved_names(__name__, _MOVED)
