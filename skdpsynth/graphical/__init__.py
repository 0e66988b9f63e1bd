"""Graphical-model estimation and sampling (the Private-PGM class of algorithm).

- :mod:`.junction_tree` — elimination orders, junction trees, model size.
- :mod:`.inference` — belief propagation and variable elimination.
- :mod:`.exp_tables` — tables kept exponentiated between mirror-descent steps.
- :mod:`.estimation` — measurements and mirror-descent estimation.
- :mod:`.model` — the fitted Markov random field.
- :mod:`.sampling` — randomized rounding and i.i.d. generation.
"""
from .estimation import EstimationInfo, Measurement, fit_under_constraints, minimum_variance_total, mirror_descent
from .inference import belief_propagation, variable_elimination
from .junction_tree import JunctionTree, elimination_order, model_size_mb
from .model import GraphicalModel
from .sampling import randomized_round, sample_model, sample_restricted

__all__ = [
    "EstimationInfo",
    "GraphicalModel",
    "JunctionTree",
    "Measurement",
    "belief_propagation",
    "elimination_order",
    "fit_under_constraints",
    "minimum_variance_total",
    "mirror_descent",
    "model_size_mb",
    "randomized_round",
    "sample_model",
    "sample_restricted",
    "variable_elimination",
]
