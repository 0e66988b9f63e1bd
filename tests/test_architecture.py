"""The layers contract (doc/architecture.md): skdpsynth's import graph has no cycles and no upward imports.

The graph holds every import of every module, at the top or inside a function, read from the source (nothing is
imported).  A module belongs to a unit (a top-level module or package; within ``synthesizers``, each method and
each shared module is its own unit), and each unit to a layer; a module may import its own unit or a unit of a
lower layer (a method may import another only where a lower layer holds it: AIM and MST sit below the methods
built on them), and the module graph has no cycle.  There are no exceptions.

Beside it, the length rule of doc/architecture.md: no function has more than ``MAX_CODE_LINES`` lines of code.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "skdpsynth"

# Lowest first.  A unit may import the units of lower layers only.
LAYERS = (
    ("domain", "utils", "params"),
    ("privacy", "datasets"),
    ("marginals", "columns"),
    ("outofcore", "constraints"),   # counting data too large for memory; public constraints over the columns
    ("graphical", "metrics", "preprocessing"),
    ("federated",),
    ("synthesizers.base", "synthesizers.select_measure", "synthesizers.rounds"),
    ("synthesizers.aim", "synthesizers.mst"),  # also the local learners of VertiMRF's parties
    ("synthesizers.hybrid", "synthesizers.partition", "synthesizers.vertical_mrf", "synthesizers.view"),
    ("synthesizers",),          # the package's __init__: re-exports its methods
    ("pipeline",),
    ("cli",),
    ("skdpsynth",),             # the package's __init__: the public API
    ("benchmarks", "__main__"),
)
LAYER = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}

def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> nx.DiGraph:
    """Module → module edges for every ``import`` and ``from … import`` in the package's source."""
    modules = {_module_name(p, package): p for p in package.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        own_package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = own_package.split(".")[: len(own_package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # ``from package import module`` imports the module; ``from module import name`` the module.
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph.add_edge(name, target)
    return graph


def unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "skdpsynth"
    if parts[1] == "synthesizers" and len(parts) > 2:
        return "synthesizers." + parts[2]
    return parts[1]


def violations(graph: nx.DiGraph) -> set[str]:
    found = set()
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            found.add("cycle: " + " <-> ".join(sorted(component)))
    for a, b in graph.edges:
        if unit(a) != unit(b) and LAYER[unit(b)] >= LAYER[unit(a)]:
            found.add(f"upward: {a} -> {b}")
    return found


def test_every_module_has_a_layer():
    graph = import_graph()
    assert len(graph) > 50
    assert {unit(m) for m in graph} <= set(LAYER), sorted({unit(m) for m in graph} - set(LAYER))


def test_no_cycle_or_upward_import():
    found = violations(import_graph())
    assert not found, "; ".join(sorted(found))


def test_the_checker_sees_imports_inside_functions_and_relative_ones(tmp_path):
    package = tmp_path / "skdpsynth"
    (package / "synthesizers").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "domain.py").write_text("def f():\n    from .privacy import x\n")
    (package / "privacy.py").write_text("from skdpsynth import domain\n")
    (package / "synthesizers" / "__init__.py").write_text("")
    (package / "synthesizers" / "aim.py").write_text("from ..domain import Domain\n")
    graph = import_graph(package)
    assert set(graph.edges) == {("skdpsynth.domain", "skdpsynth.privacy"), ("skdpsynth.privacy", "skdpsynth.domain"),
                                ("skdpsynth.synthesizers.aim", "skdpsynth.domain")}
    assert violations(graph) == {"cycle: skdpsynth.domain <-> skdpsynth.privacy",
                                 "upward: skdpsynth.domain -> skdpsynth.privacy"}


def test_the_package_imports_its_public_names_where_its_lazy_lookup_finds_them():
    """``skdpsynth`` imports its public names on first use (``_HOME``); its ``TYPE_CHECKING`` imports are the
    edges this contract sees, so they must name the same objects in the same modules."""
    import skdpsynth

    imported = {alias.asname or alias.name: node.module
                for node in ast.walk(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.level == 1 for alias in node.names}
    assert imported == skdpsynth._HOME


def test_deprecated_aliases_warn_and_give_the_moved_object():
    import importlib

    import pytest

    aliases = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_MOVED = " not in path.read_text(encoding="utf-8"):
            continue
        module = importlib.import_module(_module_name(path, PACKAGE))
        aliases += [(module, name, target) for name, target in getattr(module, "_MOVED", {}).items()]
    assert aliases, "no deprecated alias found: drop this test together with the last one"
    for module, name, target in aliases:
        with pytest.warns(DeprecationWarning, match=f"{name} moved to {target}"):
            found = getattr(module, name)
        assert found is getattr(importlib.import_module(target), name)
        assert name not in getattr(module, "__all__", ())


# A function reads as its algorithm's steps: past this many lines of code it is usually two steps.
MAX_CODE_LINES = 80


def long_functions(package: Path = PACKAGE, limit: int = MAX_CODE_LINES) -> list[str]:
    """``path:line name (n lines)`` for every function with more than ``limit`` lines of code: its body's
    non-blank lines that are not comments, without its docstring (nested functions count in their parent
    too)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = node.body
            if ast.get_docstring(node) is not None:
                body = body[1:]
            if not body:
                continue
            code = [s for s in (line.strip() for line in lines[body[0].lineno - 1:node.end_lineno])
                    if s and not s.startswith("#")]
            if len(code) > limit:
                found.append(f"{path.relative_to(package.parent)}:{node.lineno} {node.name} ({len(code)} lines)")
    return found


def test_no_function_longer_than_the_limit():
    found = long_functions()
    assert not found, f"functions over {MAX_CODE_LINES} lines of code (split them into their steps): {found}"


def test_the_length_check_counts_code_not_docstrings_or_comments(tmp_path):
    package = tmp_path / "skdpsynth"
    package.mkdir()
    docstring = '    """' + "\n".join(["Doc."] * 50) + '"""\n'
    (package / "short.py").write_text("def f():\n" + docstring + "    # why\n\n" * 50 + "    x = 1\n" * 3)
    (package / "long.py").write_text("def g():\n" + docstring + "    x = 1\n" * 4)
    assert long_functions(package, limit=3) == ["skdpsynth/long.py:1 g (4 lines)"]
