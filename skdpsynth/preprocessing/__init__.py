"""DP-preserving preprocessing: scikit-learn transformers that turn raw columns into public domains.

- :class:`DPKBinsDiscretizer` — numeric columns to bins, with public bounds (free), DP bounds or DP quantiles
  (charged in ``privacy_ledger_``), or bounds read from the data with a ``PrivacyLeakWarning``.
- :class:`DPCategoricalEncoder` — categorical columns to a public category list (free), DP category discovery
  (thresholded noisy counts, needs δ > 0), or categories read from the data with a ``PrivacyLeakWarning``.
- :class:`TableDiscretizer` — a whole mixed table from a schema (dict or JSON): numeric columns to the
  discretizer, the others to the encoder, one ledger.

All output pandas ``Categorical`` columns carrying the full category list, which is how the synthesizers read
their domain. Public category lists are exact (no ``"__other__"`` / ``"__missing__"`` slot unless asked for), so
synthetic data holds no sentinel values. ``columns=`` limits ``DPKBinsDiscretizer`` and ``DPCategoricalEncoder`` to
some columns and passes the others through, so the two compose in a
:class:`~skdpsynth.pipeline.SynthesisPipeline`. See ``doc/preprocessing.md``.
"""
from .discretizer import DPKBinsDiscretizer
from .encoder import DPCategoricalEncoder
from .table import TableDiscretizer, schema_from_json, schema_to_json

__all__ = ["DPCategoricalEncoder", "DPKBinsDiscretizer", "TableDiscretizer", "schema_from_json", "schema_to_json"]
