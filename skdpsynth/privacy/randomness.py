"""Where the randomness of a fit comes from, and the seed rule.

The seed rule.  Privacy noise must not be reproducible by anyone who holds a
released artifact.  So:

* ``random_state=None`` (the default everywhere): the noise is drawn from OS
  entropy through a :class:`SystemRandomGenerator`, whose raw bits for the
  exact discrete samplers come straight from the operating system's CSPRNG
  (``os.urandom``), and every other stream of the fit (sampling, view plans,
  partitions, sub-steps) gets entropy of its own, so nothing a fitted object
  stores is related to the noise;
* a fixed ``random_state`` (an int, a ``SeedSequence``, a ``Generator``, a
  ``RandomState``) makes the noise reproducible from it, for experiments and
  tests.  The estimator then issues a :class:`ReproducibleNoiseWarning`:
  ``get_params()`` (and so a pickle) keeps the seed, and whoever has it can
  regenerate the noise and subtract it.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from ..utils import check_random_state

__all__ = [
    "ReproducibleNoiseWarning",
    "SystemRandomGenerator",
    "noise_generator",
    "child_random_states",
    "random_uint64",
    "gumbel",
    "warn_reproducible_noise",
]


class ReproducibleNoiseWarning(UserWarning):
    """A fit drew its privacy noise from a user-given seed, so the noise can be regenerated.

    Anyone who holds the seed — ``get_params()`` returns it, and a pickle of
    the fitted estimator contains it — can rerun the noise generation and
    subtract it from the released measurements, which undoes differential
    privacy.  Fixed seeds are for experiments and tests; leave
    ``random_state=None`` for anything you release.  This is a warning
    category of its own so that test suites can silence it deliberately
    (``warnings.filterwarnings("ignore", category=ReproducibleNoiseWarning)``).

    Examples
    --------
    >>> import warnings
    >>> from skdpsynth.privacy import ReproducibleNoiseWarning
    >>> issubclass(ReproducibleNoiseWarning, UserWarning)
    True
    """


class SystemRandomGenerator(np.random.Generator):
    """A NumPy ``Generator`` for privacy noise when no seed was given.

    Its own PCG64 stream is seeded from 128 bits of OS entropy; the exact
    discrete samplers (:mod:`skdpsynth.privacy.samplers`) and the exponential
    mechanism take their raw bits from the OS CSPRNG instead
    (:func:`random_uint64`), so no generator state that could be recovered
    from released outputs determines them.

    Examples
    --------
    >>> from skdpsynth.privacy.randomness import SystemRandomGenerator, random_uint64
    >>> rng = SystemRandomGenerator()
    >>> random_uint64(rng, 3).dtype
    dtype('uint64')
    """

    def __init__(self) -> None:
        super().__init__(np.random.PCG64())  # PCG64() seeds itself from OS entropy

    def __reduce__(self):
        # Never pickle a noise generator's state: a copy unpickles as a fresh one.
        return (SystemRandomGenerator, ())


def noise_generator(random_state) -> np.random.Generator:
    """The generator privacy noise is drawn from: OS entropy for ``None``, else the seed's.

    Examples
    --------
    >>> from skdpsynth.privacy.randomness import SystemRandomGenerator, noise_generator
    >>> isinstance(noise_generator(None), SystemRandomGenerator)
    True
    >>> int(noise_generator(0).integers(10)) == int(noise_generator(0).integers(10))
    True
    """
    if random_state is None or isinstance(random_state, SystemRandomGenerator):
        return SystemRandomGenerator() if random_state is None else random_state
    return check_random_state(random_state)


def child_random_states(random_state, n: int) -> list:
    """``n`` independent random states for sub-steps or separate streams.

    ``None`` gives ``n`` times ``None`` (each consumer draws its own OS
    entropy, so no stored value relates one stream to another); a seed gives
    ``n`` reproducible, independent ``SeedSequence`` children; a
    ``Generator`` gives ``n`` generators spawned from it.

    Examples
    --------
    >>> from skdpsynth.privacy.randomness import child_random_states
    >>> child_random_states(None, 2)
    [None, None]
    >>> a, b = child_random_states(7, 2)
    >>> a.spawn_key != b.spawn_key
    True
    """
    if random_state is None or isinstance(random_state, SystemRandomGenerator):
        return [None] * n
    if isinstance(random_state, np.random.Generator):
        return list(random_state.spawn(n))
    if isinstance(random_state, np.random.SeedSequence):
        return list(random_state.spawn(n))
    if isinstance(random_state, np.random.RandomState):
        return list(np.random.SeedSequence(random_state.randint(0, 2**31 - 1, size=4)).spawn(n))
    check_random_state(random_state)  # validates ints (and rejects anything else)
    return list(np.random.SeedSequence(int(random_state)).spawn(n))


def random_uint64(rng, size: int) -> np.ndarray:
    """``size`` uniformly random 64-bit words: from the OS CSPRNG for ``None`` or a
    :class:`SystemRandomGenerator`, else from ``rng`` (reproducible).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.privacy.randomness import random_uint64
    >>> bool((random_uint64(np.random.default_rng(0), 4) == random_uint64(np.random.default_rng(0), 4)).all())
    True
    """
    size = int(size)
    if rng is None or isinstance(rng, SystemRandomGenerator):
        return np.frombuffer(os.urandom(8 * size), dtype=np.uint64).copy()
    return rng.integers(0, 2**64, size=size, dtype=np.uint64)


def gumbel(rng, shape) -> np.ndarray:
    """Standard Gumbel draws (for Gumbel-max sampling): from the OS CSPRNG's bits for ``None`` or a
    :class:`SystemRandomGenerator`, else ``rng.gumbel`` (reproducible).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.privacy.randomness import gumbel
    >>> gumbel(None, (2, 3)).shape
    (2, 3)
    """
    if rng is not None and not isinstance(rng, SystemRandomGenerator):
        return rng.gumbel(size=shape)
    n = int(np.prod(shape))
    # Uniforms strictly inside (0, 1): (k + 1/2) / 2^52 from the top 52 bits (with 53, k + 1/2 would need 54 bits
    # and the largest k would round to exactly 1, a Gumbel of +inf).
    u = ((random_uint64(rng, n) >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0**-52
    return -np.log(-np.log(u)).reshape(shape)


def warn_reproducible_noise(owner: str, random_state, stacklevel: int = 3) -> None:
    """Issue a :class:`ReproducibleNoiseWarning` if ``random_state`` is not ``None``.

    Examples
    --------
    >>> import warnings
    >>> from skdpsynth.privacy.randomness import warn_reproducible_noise
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_reproducible_noise("MyEstimator", 0)
    ...     warn_reproducible_noise("MyEstimator", None)  # no seed: no warning
    >>> [w.category.__name__ for w in caught]
    ['ReproducibleNoiseWarning']
    """
    if random_state is None or isinstance(random_state, SystemRandomGenerator):
        return
    warnings.warn(
        f"{owner}: random_state={random_state!r} makes the privacy noise of this fit reproducible. Anyone who has "
        "the seed (get_params() keeps it, and so does a pickle of the fitted object) can regenerate the noise and "
        "subtract it. Do not publish the fitted object or its outputs together with the seed; use "
        "random_state=None for a release.",
        ReproducibleNoiseWarning, stacklevel=stacklevel,
    )
