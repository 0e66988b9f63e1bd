"""PPSyn: partition-based differentially private synthetic data (Zhang, Deng & Yin).

* :mod:`.partitioning` — Algorithms 3 and 4 (merge / split sequences of a marginal's cells), the required budget
  ``|P|² / (π (η·Contr − RE)²)``, termination, the strict utility and the uniform estimate;
* :mod:`.selection` — PartSele (Algorithm 2): contributions, the paper's scores and the strict utilities;
* :mod:`.rounds` — Algorithm 1's rounds (select a marginal and its partition, measure its group sums with a
  budget from its error target, re-estimate) on the shared round driver;
* :mod:`.synthesizer` — :class:`PartitionSynthesizer` (Algorithm 1).
"""
from .synthesizer import PartitionSynthesizer

__all__ = ["PartitionSynthesizer"]
