"""VertiMRF (Zhao et al., KDD'24): synthesis from vertically partitioned data.

Modules, in pipeline order.  Each party, on its own columns:

* :mod:`.binning` — public equal-width bins and noisy within-bin value distributions (dimension reduction);
* :mod:`.sketches` — DP Flajolet–Martin sketches of each (column, binned value) under the parties' shared keys
  (LocEnc); :mod:`.frequency_oracle` — GRR perturbation, the VertiMRF-FO baseline's encoder;
* :mod:`.party` — :class:`~.party.VerticalParty`: the local model (AIM or MST), the noisy record count, the
  encoding, and the budget split of the job (:class:`~.party.VerticalConfig`, :func:`~.party.vertical_budget`);
* :mod:`.message` — :class:`~.message.VerticalMessage`, all a party sends, and the server's checks on receipt.

Then the server, on the messages only:

* :mod:`.server` — :class:`VerticalServer`: cardinality estimation (CarEst), value distributions of the bins
  (HisRec), the cross-party graph (GraphCom), the initial and the optimised Markov random field (InitMRF, OptMRF);
* :mod:`.consistency` — consistency between cross-party estimates and the local models;
* :mod:`.synthesizer` — :class:`VerticalMRFSynthesizer`, the estimator that runs the parties, then the server.
"""
from .server import ServerResult, VerticalServer
from .synthesizer import VerticalMRFSynthesizer, contiguous_blocks

__all__ = ["ServerResult", "VerticalMRFSynthesizer", "VerticalServer", "contiguous_blocks"]
