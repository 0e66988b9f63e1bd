"""Every public class and function has a numpydoc docstring with a runnable example.

Public means listed in the ``__all__`` of ``skdpsynth`` or of any of its
modules (the benchmark scripts excepted: they are commands, documented by their
``--help``).  The examples themselves run as doctests (``--doctest-modules`` in
``pyproject.toml``); this test makes sure that there is one to run.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import skdpsynth


def _public_objects() -> dict[str, object]:
    found: dict[str, object] = {}
    seen: set[int] = set()
    modules = [skdpsynth] + [importlib.import_module(m.name)
                             for m in pkgutil.walk_packages(skdpsynth.__path__, "skdpsynth.")
                             if ".benchmarks" not in m.name and not m.name.endswith("__main__")]
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


PUBLIC = _public_objects()
# A numpydoc section heading: the title, then a line of dashes as long as it.
_EXAMPLES = re.compile(r"^Examples\n-{8}\n(.*\n)*?>>> ", re.MULTILINE)


def test_the_public_api_is_found():
    assert len(PUBLIC) > 200
    assert "skdpsynth.synthesizers.aim.AIMSynthesizer" in PUBLIC


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_name_has_a_numpydoc_docstring_with_an_example(name):
    doc = inspect.getdoc(PUBLIC[name])
    assert doc, f"{name} has no docstring"
    assert doc.splitlines()[0].strip(), f"{name}: the docstring should open with a one-line summary"
    assert _EXAMPLES.search(doc), f"{name}: no numpydoc 'Examples' section with a '>>>' example"
