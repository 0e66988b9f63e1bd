"""Write small, curated intersphinx inventories for offline documentation builds.

The documentation build must not need the network, and the projects' own
``objects.inv`` files are not shipped with their packages.  This script
writes stand-ins (Sphinx's inventory format, version 2, zlib-compressed)
that map the names our docstrings and pages refer to onto the projects'
documented URL patterns:

========== ======================================= =====================================
project    base URL (``intersphinx_mapping``)      page of an object ``<name>``
========== ======================================= =====================================
python     https://docs.python.org/3/              ``library/<page>.html#<name>``
numpy      https://numpy.org/doc/stable/           ``reference/generated/<name>.html``
scipy      https://docs.scipy.org/doc/scipy/       ``reference/generated/<name>.html``
pandas     https://pandas.pydata.org/docs/         ``reference/api/<name>.html``
sklearn    https://scikit-learn.org/stable/        ``modules/generated/<name>.html``
========== ======================================= =====================================

(with the exceptions listed in ``_OVERRIDES``: e.g. NumPy's random
generators and scalar types live on shared pages).

The names are a curated list (``_CURATED``) plus every ``np.``/``numpy.``/
``pd.``/``pandas.``/``scipy.``/``sklearn.`` dotted name found in
``skdpsynth/``, ``doc/`` and ``examples/`` that imports as an object of that
project.  Each name is resolved with the *installed* packages, so the role
(class, function, exception, method, data) is the real one.

Run from the repository root, in the docs environment, after adding a
reference to a new external name::

    python doc/_inv/make_inventories.py

and commit the ``doc/_inv/*.inv`` files (a few kB).  With network access,
the projects' full inventories can replace them: download
``<base URL>objects.inv`` for each project into ``doc/_inv/<project>.inv``
(e.g. ``curl -o doc/_inv/numpy.inv https://numpy.org/doc/stable/objects.inv``)
-- ``doc/conf.py`` reads whatever file is there.
"""
from __future__ import annotations

import builtins
import importlib
import inspect
import re
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent

# project -> (inventory name, version module, top-level package, URL of "<name>")
PROJECTS = {
    "numpy": ("NumPy", "numpy", "reference/generated/{name}.html#{name}"),
    "scipy": ("SciPy", "scipy", "reference/generated/{name}.html#{name}"),
    "pandas": ("pandas", "pandas", "reference/api/{name}.html#{name}"),
    "sklearn": ("scikit-learn", "sklearn", "modules/generated/{name}.html#{name}"),
}

_ALIASES = {"np": "numpy", "pd": "pandas"}

# Names referred to in type fields and text even where no "np."-style dotted
# name appears (e.g. "ndarray", "DataFrame", "Generator", estimators).
_CURATED = {
    "numpy": [
        "numpy.ndarray", "numpy.dtype", "numpy.generic", "numpy.integer", "numpy.floating", "numpy.number",
        "numpy.int64", "numpy.float64", "numpy.uint64", "numpy.uint8", "numpy.bool_", "numpy.intp",
        "numpy.random.Generator", "numpy.random.default_rng", "numpy.random.SeedSequence",
        "numpy.random.RandomState", "numpy.random.BitGenerator", "numpy.random.PCG64", "numpy.random.Philox",
        "numpy.asarray", "numpy.array", "numpy.bincount", "numpy.einsum", "numpy.savez", "numpy.load",
        "numpy.memmap",
    ],
    "scipy": [
        "scipy.sparse.csr_matrix", "scipy.sparse.csr_array", "scipy.sparse.linalg.lsmr",
        "scipy.sparse.linalg.LinearOperator", "scipy.special.logsumexp", "scipy.special.xlogy",
        "scipy.special.erfc", "scipy.stats.beta", "scipy.optimize.minimize", "scipy.optimize.brentq",
    ],
    "pandas": [
        "pandas.DataFrame", "pandas.Series", "pandas.Index", "pandas.Categorical", "pandas.CategoricalDtype",
        "pandas.Interval", "pandas.IntervalIndex", "pandas.read_csv", "pandas.DataFrame.to_csv",
        "pandas.DataFrame.astype", "pandas.api.types.infer_dtype",
    ],
    "sklearn": [
        "sklearn.base.BaseEstimator", "sklearn.base.TransformerMixin", "sklearn.base.ClassifierMixin",
        "sklearn.base.RegressorMixin", "sklearn.base.clone", "sklearn.pipeline.Pipeline",
        "sklearn.pipeline.make_pipeline", "sklearn.compose.ColumnTransformer",
        "sklearn.model_selection.GridSearchCV", "sklearn.model_selection.cross_val_score",
        "sklearn.model_selection.cross_validate", "sklearn.model_selection.train_test_split",
        "sklearn.model_selection.KFold", "sklearn.metrics.get_scorer", "sklearn.metrics.make_scorer",
        "sklearn.metrics.accuracy_score", "sklearn.preprocessing.KBinsDiscretizer",
        "sklearn.preprocessing.OrdinalEncoder", "sklearn.preprocessing.OneHotEncoder",
        "sklearn.linear_model.LogisticRegression", "sklearn.ensemble.HistGradientBoostingClassifier",
        "sklearn.ensemble.RandomForestClassifier", "sklearn.tree.DecisionTreeClassifier",
        "sklearn.dummy.DummyClassifier", "sklearn.utils.Bunch", "sklearn.utils.check_random_state",
        "sklearn.utils.estimator_checks.parametrize_with_checks",
        "sklearn.utils.validation.check_is_fitted", "sklearn.exceptions.NotFittedError",
    ],
}

# Objects documented on a shared page rather than on "generated/<name>.html".
_OVERRIDES = {
    "numpy.random.Generator": "reference/random/generator.html#numpy.random.Generator",
    "numpy.random.default_rng": "reference/random/generator.html#numpy.random.default_rng",
    "numpy.random.RandomState": "reference/random/legacy.html#numpy.random.RandomState",
    "numpy.random.SeedSequence":
        "reference/random/bit_generators/generated/numpy.random.SeedSequence.html#numpy.random.SeedSequence",
    "numpy.random.BitGenerator":
        "reference/random/bit_generators/generated/numpy.random.BitGenerator.html#numpy.random.BitGenerator",
    "numpy.random.PCG64": "reference/random/bit_generators/pcg64.html#numpy.random.PCG64",
    "numpy.random.Philox": "reference/random/bit_generators/philox.html#numpy.random.Philox",
}
_NUMPY_SCALAR_PAGE = "reference/arrays.scalars.html#{name}"
_NUMPY_CONSTANT_PAGE = "reference/constants.html#{name}"

# The Python standard library: (name, role, page) for the names our type
# fields use.  Built-in types and functions are on library/functions.html.
_PY_BUILTIN_TYPES = ["int", "float", "complex", "str", "bytes", "bool", "dict", "list", "tuple", "set",
                     "frozenset", "object", "type", "range", "slice", "memoryview", "bytearray"]
_PY_BUILTIN_FUNCTIONS = ["callable", "len", "isinstance", "hash", "iter", "next", "print", "open", "repr",
                         "sorted", "round", "abs", "min", "max", "sum", "zip", "map", "enumerate"]
_PY_OTHER = [
    ("None", "py:data", "library/constants.html#None"),
    ("True", "py:data", "library/constants.html#True"),
    ("False", "py:data", "library/constants.html#False"),
    ("NotImplemented", "py:data", "library/constants.html#NotImplemented"),
    ("Ellipsis", "py:data", "library/constants.html#Ellipsis"),
    ("os.PathLike", "py:class", "library/os.html#os.PathLike"),
    ("os.fspath", "py:function", "library/os.html#os.fspath"),
    ("pathlib.Path", "py:class", "library/pathlib.html#pathlib.Path"),
    ("secrets", "py:module", "library/secrets.html#module-secrets"),
    ("warnings.warn", "py:function", "library/warnings.html#warnings.warn"),
    ("warnings.catch_warnings", "py:class", "library/warnings.html#warnings.catch_warnings"),
    ("warnings.simplefilter", "py:function", "library/warnings.html#warnings.simplefilter"),
    ("hashlib.sha256", "py:function", "library/hashlib.html#hashlib.sha256"),
    ("hmac", "py:module", "library/hmac.html#module-hmac"),
    ("json.dumps", "py:function", "library/json.html#json.dumps"),
    ("json.loads", "py:function", "library/json.html#json.loads"),
    ("pickle", "py:module", "library/pickle.html#module-pickle"),
    ("tempfile.TemporaryDirectory", "py:class", "library/tempfile.html#tempfile.TemporaryDirectory"),
    ("multiprocessing", "py:module", "library/multiprocessing.html#module-multiprocessing"),
    ("concurrent.futures.ProcessPoolExecutor", "py:class",
     "library/concurrent.futures.html#concurrent.futures.ProcessPoolExecutor"),
    ("typing.Any", "py:data", "library/typing.html#typing.Any"),
    ("fractions.Fraction", "py:class", "library/fractions.html#fractions.Fraction"),
    ("random.SystemRandom", "py:class", "library/random.html#random.SystemRandom"),
    ("os.urandom", "py:function", "library/os.html#os.urandom"),
    ("argparse.ArgumentParser", "py:class", "library/argparse.html#argparse.ArgumentParser"),
] + [(f"collections.abc.{n}", "py:class", f"library/collections.abc.html#collections.abc.{n}")
     for n in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Iterator", "Callable", "Hashable",
               "Collection", "Set")] + [
    ("contextlib.contextmanager", "py:function", "library/contextlib.html#contextlib.contextmanager"),
    ("collections.namedtuple", "py:function", "library/collections.html#collections.namedtuple"),
    # numpydoc's default type links use this label for "bool".
    ("bltin-boolean-values", "std:label", "library/stdtypes.html#boolean-type-bool"),
] + [
    (term, "std:term", f"glossary.html#term-{term.replace(' ', '-')}")
    for term in ("hashable", "iterable", "iterator", "sequence", "mapping", "generator", "path-like object",
                 "file-like object", "bytes-like object", "callable")
]

# Glossary terms of the projects (std:term), for numpydoc's type links.
_TERMS = {
    "numpy": [("array_like", "glossary.html#term-array_like")],
    "scipy": [],
    "pandas": [],
    "sklearn": [("array-like", "glossary.html#term-array-like"), ("estimator", "glossary.html#term-estimator"),
                ("estimators", "glossary.html#term-estimators"), ("random_state", "glossary.html#term-random_state"),
                ("scorer", "glossary.html#term-scorer"), ("transformer", "glossary.html#term-transformer"),
                ("classifier", "glossary.html#term-classifier"), ("regressor", "glossary.html#term-regressor")],
}


def _scan_names() -> dict[str, set[str]]:
    """Dotted names of the four projects written in our sources, pages and examples."""
    pattern = re.compile(r"\b(numpy|np|pandas|pd|scipy|sklearn)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
    found: dict[str, set[str]] = {p: set() for p in PROJECTS}
    files = [*ROOT.glob("skdpsynth/**/*.py"), *ROOT.glob("doc/*.md"), *ROOT.glob("doc/*.rst"),
             *ROOT.glob("examples/**/*.py")]
    for path in files:
        for top, rest in pattern.findall(path.read_text(encoding="utf-8")):
            top = _ALIASES.get(top, top)
            found[top].add(top + rest)
    return found


def _resolve(name: str):
    """The object ``name`` imports as, and its parent, or (None, None)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        parent = None
        try:
            for attr in parts[i:]:
                parent, obj = obj, getattr(obj, attr)
        except AttributeError:
            return None, None
        return obj, parent
    return None, None


def _role(obj, parent) -> str | None:
    if inspect.ismodule(obj):
        return None  # module pages have irregular URLs; none is needed so far
    if inspect.isclass(parent):
        if callable(obj):
            return "py:method"
        return "py:attribute"
    if parent is not None and not inspect.ismodule(parent):
        return None  # e.g. a ufunc's method (np.add.at)
    if inspect.isclass(obj):
        return "py:exception" if issubclass(obj, BaseException) else "py:class"
    if callable(obj):
        return "py:function"
    return "py:data"


def _entries(project: str, names: set[str]) -> list[tuple[str, str, str]]:
    entries = []
    import numpy as np

    for name in sorted(names):
        obj, parent = _resolve(name)
        if obj is None:
            continue
        role = _role(obj, parent)
        if role is None:
            continue
        uri = _OVERRIDES.get(name)
        if uri is None and project == "numpy":
            if inspect.isclass(obj) and issubclass(obj, np.generic) and name.count(".") == 1:
                uri = _NUMPY_SCALAR_PAGE.format(name=name)
            elif role == "py:data" and name.count(".") == 1:
                uri = _NUMPY_CONSTANT_PAGE.format(name=name)
        if uri is None and role in ("py:method", "py:attribute") and project != "sklearn":
            # numpy, scipy and pandas give methods their own generated page too.
            uri = PROJECTS[project][2].format(name=name)
        if uri is None and role in ("py:method", "py:attribute"):
            owner = name.rsplit(".", 1)[0]  # sklearn documents methods on the class page
            uri = f"modules/generated/{owner}.html#{name}"
        if uri is None:
            uri = PROJECTS[project][2].format(name=name)
        entries.append((name, role, uri))
    return entries


def _python_entries() -> list[tuple[str, str, str]]:
    entries = [(n, "py:class", f"library/functions.html#{n}") for n in _PY_BUILTIN_TYPES]
    entries += [(n, "py:function", f"library/functions.html#{n}") for n in _PY_BUILTIN_FUNCTIONS]
    entries += [(n, "py:exception", f"library/exceptions.html#{n}") for n in dir(builtins)
                if inspect.isclass(getattr(builtins, n)) and issubclass(getattr(builtins, n), BaseException)]
    entries += _PY_OTHER
    return sorted(set(entries))


def write_inventory(path: Path, project: str, version: str, entries) -> None:
    """Write ``entries`` [(name, "domain:role", uri)] as an objects.inv, version 2."""
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: {version}\n"
              "# The remainder of this file is compressed using zlib.\n")
    lines = []
    for name, role, uri in entries:
        if uri.endswith("#" + name):
            uri = uri[: -len(name)] + "$"  # the format's shorthand: "$" stands for the name
        display = "-"
        if role == "std:term":
            display = name
        elif role == "std:label":
            display = "Boolean type"
        lines.append(f"{name} {role} 1 {uri} {display}\n")
    path.write_bytes(header.encode() + zlib.compress("".join(lines).encode("utf-8"), 9))


def main() -> None:
    scanned = _scan_names()
    for key, (title, module, _) in PROJECTS.items():
        version = importlib.import_module(module).__version__
        entries = _entries(key, scanned[key] | set(_CURATED[key]))
        entries += [(term, "std:term", uri) for term, uri in _TERMS[key]]
        write_inventory(OUT / f"{key}.inv", title, version, entries)
        print(f"{key}.inv: {len(entries)} names ({title} {version})")
    py = _python_entries()
    write_inventory(OUT / "python.inv", "Python", ".".join(map(str, sys.version_info[:2])), py)
    print(f"python.inv: {len(py)} names (Python {sys.version_info[0]}.{sys.version_info[1]})")


if __name__ == "__main__":
    main()
