"""UCI Adult, as bundled with the package."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pandas as pd
from sklearn.utils import Bunch

from ..domain import Domain

_DATA = "data"


def adult_discretized_paths() -> tuple[Path, Path]:
    """Paths of the bundled integer-coded Adult CSV (gzip) and its domain JSON."""
    root = resources.files(__package__) / _DATA
    return Path(str(root / "adult-discretized.csv.gz")), Path(str(root / "adult-discretized-domain.json"))


def load_adult(*, discretized: bool = True) -> Bunch:
    """Load the UCI Adult data set (48,842 records).

    Currently the integer-coded 14-attribute benchmark version used by the
    marginal-based DP synthesis literature (``discretized=True``): every column
    holds codes ``0 .. size - 1`` with the sizes in ``domain``, which is public
    metadata (fixed by the discretization, not read from the records).  The raw
    mixed-type table is not bundled yet.

    Data: Becker & Kohavi (1996), *Adult*, UCI Machine Learning Repository,
    https://doi.org/10.24432/C5XW20, CC BY 4.0; discretized as in private-pgm
    (Apache-2.0).  See ``skdpsynth/datasets/data/ATTRIBUTION.md``.

    Returns
    -------
    sklearn.utils.Bunch
        ``frame`` (DataFrame of integer codes), ``domain`` (:class:`Domain`),
        ``target_name`` (``"income>50K"``).

    Examples
    --------
    >>> from skdpsynth.datasets import load_adult
    >>> adult = load_adult()
    >>> adult.frame.shape, adult.domain["age"]
    ((48842, 14), 85)
    """
    if not discretized:
        raise ValueError("Only the discretized Adult benchmark is bundled so far; use discretized=True.")
    csv, domain_json = adult_discretized_paths()
    domain = Domain.from_dict(json.loads(domain_json.read_text()))
    frame = pd.read_csv(csv)[list(domain)]
    return Bunch(frame=frame, domain=domain, target_name="income>50K")
