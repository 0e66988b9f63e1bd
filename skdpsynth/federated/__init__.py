"""Federated (hybrid horizontal x vertical) settings: who holds what, and what crosses.

* :mod:`~skdpsynth.federated.partition` — :class:`HybridPartition`: which rows
  (slice) and which columns each party holds (public metadata);
* :mod:`~skdpsynth.federated.dmm` — the distributed marginal measurement's
  budget split and variances (public metadata only);
* :mod:`~skdpsynth.federated.parties` — :class:`Party` (owns its data);
* :mod:`~skdpsynth.federated.curator` — :class:`Federation` (answers
  measurement requests with noisy messages, the parties' local work run
  through joblib or a runtime backend), :class:`ReplayFederation`,
  :class:`FederatedData` and :class:`VerticalFederatedData` (records that
  stay with their parties, for ``fit``);
* :mod:`~skdpsynth.federated.messages` — the messages that reach the curator
  and :func:`combine`, the curator's reading of them.
"""
from .messages import MeasurementReply, NoisyIndicators, NoisyLocalMarginal, SliceCount, combine
from .curator import FederatedData, Federation, ReplayFederation, VerticalFederatedData
from .parties import Party
from .partition import HybridPartition, PartitionLayout, PartySpec

__all__ = [
    "HybridPartition",
    "PartitionLayout",
    "PartySpec",
    "Party",
    "Federation",
    "ReplayFederation",
    "FederatedData",
    "VerticalFederatedData",
    "MeasurementReply",
    "SliceCount",
    "NoisyIndicators",
    "NoisyLocalMarginal",
    "combine",
]
