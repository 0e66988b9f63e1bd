"""Small shared utilities: random-state handling."""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_random_state"]


def check_random_state(seed=None) -> np.random.Generator:
    """Turn ``seed`` into a :class:`numpy.random.Generator`.

    The semantics follow :func:`sklearn.utils.check_random_state`, adapted to
    the ``Generator`` API that every random draw in this package goes through.

    Parameters
    ----------
    seed : None, int, numpy.random.Generator, numpy.random.RandomState or numpy.random.SeedSequence
        ``None`` gives a freshly seeded generator (OS entropy); an int or a
        ``SeedSequence`` seeds a new PCG64 generator; a ``Generator`` is
        returned as is (so draws advance the caller's stream); a legacy
        ``RandomState`` is converted by drawing a seed from it, so it too
        advances.

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> from skdpsynth.utils import check_random_state
    >>> a = check_random_state(0).integers(100, size=3)
    >>> b = check_random_state(0).integers(100, size=3)
    >>> bool((a == b).all())
    True
    """
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (numbers.Integral, np.integer)):
        if int(seed) < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {seed}.")
        return np.random.default_rng(int(seed))
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**31 - 1, size=4))
    raise ValueError(
        f"{seed!r} cannot be used to seed a numpy.random.Generator; pass None, an int, "
        "a SeedSequence, a Generator or a RandomState."
    )
