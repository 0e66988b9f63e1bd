"""The API reference (doc/api.rst) lists every public name.

Public means listed in the ``__all__`` of ``skdpsynth`` or of any of its
modules (the benchmark scripts excepted, as in ``tests/test_docstrings.py``).
A class or function counts as listed when the same object is an autosummary
entry of doc/api.rst under any of its public names: a package documents once
what it re-exports from its modules.  Other objects (constants) must be
listed under their own module.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import skdpsynth

API = Path(__file__).resolve().parents[1] / "doc" / "api.rst"
# Not autosummary entries, named in the page's text instead.
NOT_LISTED = {"skdpsynth.__version__"}


def _modules():
    yield skdpsynth
    for info in pkgutil.walk_packages(skdpsynth.__path__, "skdpsynth."):
        if ".benchmarks" in info.name or info.name.endswith("__main__"):
            continue
        yield importlib.import_module(info.name)


def _public_names() -> dict[str, object]:
    """``{"module.name": object}`` for every name in an ``__all__``."""
    return {f"{m.__name__}.{name}": getattr(m, name)
            for m in _modules() for name in getattr(m, "__all__", ())}


def _autosummary_entries(text: str) -> list[str]:
    """Fully qualified names of the autosummary entries, in page order."""
    entries: list[str] = []
    module = None
    in_block = False
    for line in text.splitlines():
        current = re.match(r"\.\. currentmodule:: (\S+)", line)
        if current:
            module = current.group(1)
            in_block = False
        elif line.startswith(".. autosummary::"):
            in_block = True
        elif in_block:
            item = re.match(r"   (~?[A-Za-z_][\w.]*)\s*$", line)
            if item:
                entries.append(f"{module}.{item.group(1).lstrip('~')}")
            elif line.strip() and not line.startswith("   :"):
                in_block = False  # the first line that is neither an entry nor an option
    return entries


def _resolve(qualified: str):
    parts = qualified.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(qualified)


ENTRIES = _autosummary_entries(API.read_text(encoding="utf-8"))
PUBLIC = _public_names()


def _is_code(obj) -> bool:
    return inspect.isclass(obj) or inspect.isfunction(obj)


DOCUMENTED = {id(obj) for obj in map(_resolve, ENTRIES) if _is_code(obj)}


def test_entries_are_found_and_import():
    assert len(ENTRIES) > 200
    for entry in ENTRIES:
        _resolve(entry)  # raises for a misspelt entry


def test_no_entry_is_listed_twice():
    seen = [e for e in ENTRIES if ENTRIES.count(e) > 1]
    assert not seen, f"listed more than once in doc/api.rst: {sorted(set(seen))}"


def test_entries_are_public():
    """Only names of an ``__all__`` (under that module) are documented."""
    private = [e for e in ENTRIES if e not in PUBLIC]
    assert not private, f"doc/api.rst lists names that are in no module's __all__: {private}"


@pytest.mark.parametrize("name", sorted(set(PUBLIC) - NOT_LISTED))
def test_public_name_is_in_the_api_reference(name):
    obj = PUBLIC[name]
    if _is_code(obj):
        assert id(obj) in DOCUMENTED, (
            f"{name} is public (in an __all__) but doc/api.rst documents it under none of its names; "
            "add it to an autosummary list")
    else:
        assert name in ENTRIES, f"{name} is public (in an __all__) but is not listed in doc/api.rst"
