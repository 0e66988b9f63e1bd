"""Moved to :mod:`skdpsynth.synthesizers.vertical_mrf.sketches` (VertiMRF owns its party side); this alias goes in 0.2.

Each name below is importable from here, with a ``DeprecationWarning``, until
0.2 (doc/changelog.md).
"""
from ..utils import moved_names

__all__: list[str] = []

_MOVED = {
    "KEY_PREFIX": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "new_shared_secret": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "derive_sketch_keys": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "SketchKeys": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "hash_values": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "dpfm_parameters": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "sample_phantom_maxima": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "sketch_dtype": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "sketch_max_value": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "raw_sketches": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "encode": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "complement_sketches": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "union_cardinality": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "car_est": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "hll_constant": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "sketch_epsilon_prime": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "theorem2_epsilon": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "rdp_optimal_epsilon": "skdpsynth.synthesizers.vertical_mrf.sketches",
    "THEOREM2_RANGE": "skdpsynth.synthesizers.vertical_mrf.sketches",
}

__getattr__ = moved_names(__name__, _MOVED)
