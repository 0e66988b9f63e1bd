"""VertiMRF (Zhao et al., KDD'24): synthesis from vertically partitioned data.

* :mod:`.synthesizer` — :class:`VerticalMRFSynthesizer`, the estimator (runs the parties of
  :mod:`skdpsynth.federated.vertical`, then the server);
* :mod:`.server` — :class:`VerticalServer`: CarEst, HisRec, GraphCom, InitMRF, OptMRF (spec §6);
* :mod:`.consistency` — consistency between cross-party estimates and local models (§6.3).
"""
from .server import ServerResult, VerticalServer
from .synthesizer import VerticalMRFSynthesizer, contiguous_blocks

__all__ = ["ServerResult", "VerticalMRFSynthesizer", "VerticalServer", "contiguous_blocks"]
