"""Test isolation for the whole suite (tests/, the docstring examples in skdpsynth/ and the pages in doc/).

The tests run in parallel (pytest-xdist, as the README's test command does), so each worker runs its own
share of the tests in an order of its own: a test must not see what another left behind.  The one piece of
process-wide state the package keeps is the set of categorical dtypes marked public
(:func:`skdpsynth.privacy.metadata.mark_public`); it is restored after every test.
"""
import pytest

from skdpsynth.privacy import metadata


@pytest.fixture(autouse=True)
def _public_dtypes_restored():
    saved = set(metadata._PUBLIC)
    yield
    metadata._PUBLIC.clear()
    metadata._PUBLIC.update(saved)
