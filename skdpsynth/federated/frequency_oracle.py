"""Moved to :mod:`skdpsynth.synthesizers.vertical_mrf.frequency_oracle` (VertiMRF owns its party side); this alias goes in 0.2.

Each name below is importable from here, with a ``DeprecationWarning``, until
0.2 (doc/changelog.md).
"""
from ..utils import moved_names

__all__: list[str] = []

_MOVED = {
    "grr_probabilities": "skdpsynth.synthesizers.vertical_mrf.frequency_oracle",
    "grr_transition_matrix": "skdpsynth.synthesizers.vertical_mrf.frequency_oracle",
    "grr_inverse": "skdpsynth.synthesizers.vertical_mrf.frequency_oracle",
    "grr_perturb": "skdpsynth.synthesizers.vertical_mrf.frequency_oracle",
    "fo_marginal": "skdpsynth.synthesizers.vertical_mrf.frequency_oracle",
    "fo_epsilon_prime": "skdpsynth.synthesizers.vertical_mrf.frequency_oracle",
    "fo_theorem1_epsilon": "skdpsynth.synthesizers.vertical_mrf.frequency_oracle",
}

__getattr__ = moved_names(__name__, _MOVED)
