"""DPView and DPView+ (Lin, Yu & Huang): pure ε-DP synthesis from views chosen by public domain sizes.

Modules, in pipeline order:

* :mod:`.views` — S2, view list generation (base, cross, upper cross views) from public sizes;
* :mod:`.allocation` — S3/S4 closed-form budget shares and consistency weights;
* :mod:`.postprocess` — S4, consistency, non-negativity, integralization, consistency-aware normalization;
* :mod:`.linking` — S5, view combination by grouped maximum-cardinality matching;
* :mod:`.synthesizer` — :class:`ViewSynthesizer`, the estimator.
"""
from .synthesizer import ViewModel, ViewSynthesizer
from .views import ViewPlan

__all__ = ["ViewModel", "ViewPlan", "ViewSynthesizer"]
