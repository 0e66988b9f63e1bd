"""UCI Adult, as bundled with the package: the raw table with its public schema, and the discretized benchmark."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..domain import Domain

_DATA = "data"


def _data_path(name: str) -> Path:
    return Path(str(resources.files(__package__) / _DATA / name))


def adult_discretized_paths() -> tuple[Path, Path]:
    """Paths of the bundled integer-coded Adult CSV (gzip) and its domain JSON.

    Examples
    --------
    >>> from skdpsynth.datasets import adult_discretized_paths
    >>> csv, domain_json = adult_discretized_paths()
    >>> csv.name, domain_json.name
    ('adult-discretized.csv.gz', 'adult-discretized-domain.json')
    >>> csv.exists() and domain_json.exists()
    True
    """
    return _data_path("adult-discretized.csv.gz"), _data_path("adult-discretized-domain.json")


def adult_schema_path() -> Path:
    """Path of the public schema of the raw Adult table (the JSON format of ``TableDiscretizer``).

    Examples
    --------
    >>> import json
    >>> from skdpsynth.datasets import adult_schema_path
    >>> path = adult_schema_path()
    >>> path.name, path.exists()
    ('adult-schema.json', True)
    >>> json.loads(path.read_text())["sex"]
    {'type': 'categorical', 'categories': ['Female', 'Male']}
    """
    return _data_path("adult-schema.json")


def load_adult(*, discretized: bool = False) -> Bunch:
    """Load the UCI Adult data set (48,842 records: adult.data followed by adult.test).

    Data: Becker & Kohavi (1996), *Adult*, UCI Machine Learning Repository,
    https://doi.org/10.24432/C5XW20, licensed CC BY 4.0.  See
    ``skdpsynth/datasets/data/ATTRIBUTION.md``.

    Parameters
    ----------
    discretized : bool, default=False
        ``False``: the raw mixed table (15 columns: 6 numeric, 9 categorical
        including the target ``income``; the test file's labels lose their
        trailing ``"."``; ``"?"`` becomes a missing value) with its **public
        schema**.  ``True``: the standard 14-attribute integer-coded benchmark
        of the marginal-based DP synthesis literature (as in private-pgm,
        Apache-2.0), with its domain.

    Returns
    -------
    sklearn.utils.Bunch
        Raw: ``frame`` (DataFrame), ``schema`` (dict in the format of
        :class:`~skdpsynth.preprocessing.TableDiscretizer`), ``target_name``
        (``"income"``), ``n_train`` (32,561: the adult.data part).
        Discretized: ``frame`` (integer codes), ``domain`` (:class:`Domain`),
        ``target_name`` (``"income>50K"``), ``n_train``.

    Notes
    -----
    The schema is public metadata, not read from the records: the category
    lists are those of ``adult.names`` (``workclass``, ``occupation`` and
    ``native-country`` also get a missing category, since the files mark
    unknown values with ``"?"``); the numeric bounds come from the variables'
    definitions and round limits — age 17–90 (the survey's adult population,
    top-coded at 90), education-num 1–16 (the 16 education levels), hours per
    week 1–99, capital gain 0–99,999 (the census top code), capital loss
    0–5,000 and fnlwgt 10,000–1,500,000 (round limits; values outside are
    clipped into the end bins by the discretizer). Capital gain and loss have
    public bin ``edges`` instead of equal-width bins: most people report
    none, so exactly 0 gets its own bin ``[0, 1)``, followed by round-number
    bins (chosen from the variables' ranges, not from counts); equal-width
    bins would smear the mass at 0 over the first bin when synthetic values
    are drawn back from bins.

    Examples
    --------
    >>> from skdpsynth.datasets import load_adult
    >>> adult = load_adult()
    >>> adult.frame.shape, adult.schema["sex"]["categories"]
    ((48842, 15), ['Female', 'Male'])
    >>> load_adult(discretized=True).domain["age"]
    85
    """
    if discretized:
        csv, domain_json = adult_discretized_paths()
        domain = Domain.from_dict(json.loads(domain_json.read_text()))
        frame = pd.read_csv(csv)[list(domain)]
        return Bunch(frame=frame, domain=domain, target_name="income>50K", n_train=32561)
    schema = json.loads(adult_schema_path().read_text())
    numeric = [c for c, spec in schema.items() if spec["type"] == "numeric"]
    frame = pd.read_csv(
        _data_path("adult.csv.gz"), na_values=["?"], keep_default_na=False,
        dtype={c: (np.int64 if c in numeric else object) for c in schema},
    )[list(schema)]
    return Bunch(frame=frame, schema=schema, target_name="income", n_train=32561)
