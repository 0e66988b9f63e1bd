"""RandDPGen (Zhang, Li, Lei, Ma & Liu): DP synthetic data from hybrid (horizontal × vertical) partitioned tables.

*High-dimensional Hybrid Partitioned Data Release under Differential Privacy*; section, algorithm and theorem
numbers in this package are the paper's, and ``doc/deviations.md`` lists where it departs from the paper.  K·S
parties: K disjoint row slices, each slice's columns split among its parties; a semi-trusted curator runs AIM's
select–measure–generate loop, measuring marginals with the distributed marginal measurement (DMM, Algorithm 1,
§4.1) of :mod:`skdpsynth.federated`, whose parties perturb only what they hold.

Modules, in pipeline order:

* :mod:`.rounds` — the curator's side of Algorithm 2 (§4.3): the selection measurements, then rounds of
  selection, DMM measurement and Private-PGM estimation on the shared round driver, with the annealed budget
  schedule (:func:`randdpgen`, :func:`budget_schedule`; :func:`selection_parts`, what scores a candidate);
* :mod:`.synthesizer` — :class:`HybridSynthesizer`, the estimator: the parties and their partition, the
  protocol, the budget and its honest report.
"""
from .rounds import SELECTION_SCORES, PaperBoundWarning, RandDPGenResult, budget_schedule, randdpgen, selection_parts
from .synthesizer import HybridSynthesizer

__all__ = ["HybridSynthesizer", "randdpgen", "RandDPGenResult", "budget_schedule", "selection_parts", "SELECTION_SCORES",
           "PaperBoundWarning"]
