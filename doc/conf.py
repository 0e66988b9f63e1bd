"""Sphinx configuration for the skdpsynth documentation.

Build (warnings are errors)::

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -b html doc doc/_build/html

That runs every gallery example (several minutes); set
``SKDPSYNTH_DOCS_GALLERY=quick`` to run only the fast ones (see "Gallery"
below; CI does).

The Markdown pages in this folder are also doctests (``pytest`` collects
``doc/*.md``); ``doc/conftest.py`` keeps pytest's ``--doctest-modules`` away
from this file and from the generated ``doc/auto_examples/``.
"""
from __future__ import annotations

import os
import re
import sys

# The package is normally installed (``pip install -e .``); this also lets a
# plain checkout build.
sys.path.insert(0, os.path.abspath(".."))

import skdpsynth  # noqa: E402
from pygments.lexers.shell import BashSessionLexer  # noqa: E402

# -- Project information -----------------------------------------------------

project = "skdpsynth"
author = "The skdpsynth developers"
copyright = "the skdpsynth developers"
release = skdpsynth.__version__
version = ".".join(release.split(".")[:2])

# -- General configuration ---------------------------------------------------

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# intersphinx, offline: the build must not need the network, and none of these
# projects ships its objects.inv with its package.  doc/_inv/ holds small
# curated stand-ins written by doc/_inv/make_inventories.py (the names our
# docstrings, pages and examples use, resolved with the installed packages and
# mapped to each project's documented URL pattern); rerun it after referring
# to a new external name.  To use a project's full inventory instead (network
# needed once), download "<URL>objects.inv" over doc/_inv/<key>.inv, e.g.
#   curl -o doc/_inv/numpy.inv https://numpy.org/doc/stable/objects.inv
# Links point to the projects' current ("stable") documentation.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", "_inv/python.inv"),
    "numpy": ("https://numpy.org/doc/stable/", "_inv/numpy.inv"),
    "scipy": ("https://docs.scipy.org/doc/scipy/", "_inv/scipy.inv"),
    "pandas": ("https://pandas.pydata.org/docs/", "_inv/pandas.inv"),
    "sklearn": ("https://scikit-learn.org/stable/", "_inv/sklearn.inv"),
}



def _documented_classes() -> dict[str, str]:
    """``{short name: documented name}`` of the classes in api.rst's autosummary lists (unique short names)."""
    found: dict[str, set[str]] = {}
    module = None
    for line in open(os.path.join(os.path.dirname(__file__), "api.rst"), encoding="utf-8"):
        current = re.match(r"\.\. currentmodule:: (\S+)", line)
        if current:
            module = current.group(1)
            continue
        item = re.match(r"   ~?([A-Za-z_][\w.]*)\s*$", line)
        if item and module and item.group(1).rsplit(".", 1)[-1][:1].isupper():
            full = f"{module}.{item.group(1)}"
            found.setdefault(full.rsplit(".", 1)[-1], set()).add(full)
    return {short: names.pop() for short, names in found.items() if len(names) == 1 and not short.isupper()}


_EXTERNAL_TYPES = {
    "DataFrame": "pandas.DataFrame", "Series": "pandas.Series", "Categorical": "pandas.Categorical",
    "CategoricalDtype": "pandas.CategoricalDtype", "Interval": "pandas.Interval",
    "ndarray": "numpy.ndarray", "dtype": "numpy.dtype", "Generator": "numpy.random.Generator",
    "RandomState": "numpy.random.RandomState", "SeedSequence": "numpy.random.SeedSequence",
    "BaseEstimator": "sklearn.base.BaseEstimator", "Pipeline": "sklearn.pipeline.Pipeline",
    "GridSearchCV": "sklearn.model_selection.GridSearchCV",
    "Path": "pathlib.Path", "PathLike": "os.PathLike", "Mapping": "collections.abc.Mapping",
    "Sequence": "collections.abc.Sequence", "Iterable": "collections.abc.Iterable",
}
numpydoc_xref_aliases = {
    **_EXTERNAL_TYPES,
    # The qualified names, shown as written.  (An alias to itself would stay
    # text with xref_ignore "all": numpydoc wraps only names it changes.)
    **{name: f":obj:`{name}`" for name in _EXTERNAL_TYPES.values()},
    "pd.DataFrame": "pandas.DataFrame", "np.ndarray": "numpy.ndarray", "np.random.Generator": "numpy.random.Generator",
    "array-like": ":term:`sklearn:array-like`", "array_like": ":term:`numpy:array_like`",
    "estimator": ":term:`sklearn:estimator`", "hashable": ":term:`python:hashable`",
    "bytes": "bytes", "set": "set", "object": "object", "complex": "complex", "frozenset": "frozenset",
    # This package's classes by their short names, as the docstrings write them.
    **_documented_classes(),
}

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "**.ipynb_checkpoints",
    # sphinx-gallery's own outputs that are not pages.
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
]

# MyST (Markdown pages).
myst_enable_extensions = ["dollarmath", "colon_fence"]
# Pages link to each other by file name ("[privacy.md](privacy.md)"); headings
# get anchors so that "page.md#section" links resolve too.
myst_heading_anchors = 3

# autodoc / autosummary / numpydoc.
autosummary_generate = True
templates_path = ["_templates"]  # _templates/autosummary/class.rst: a class page
# Each class page documents the class's own public methods and properties
# ("members" makes them targets); the class template (_templates/autosummary/
# class.rst) lists them, and for estimators adds the inherited ones (fit,
# sample, get_params, ...).
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
# Types in Parameters/Returns/Attributes link to their documentation.  Only
# the words listed in numpydoc_xref_aliases (and numpydoc's defaults: int,
# float, str, dict, list, tuple, bool, None, callable, ...) become links
# ("ignore all" the rest), so free text in a type ("int, default 0",
# "sklearn estimator") stays text and nothing can fail to resolve.
numpydoc_xref_param_type = True
numpydoc_xref_ignore = "all"

numpydoc_class_members_toctree = False
# numpydoc_validation_checks is deliberately left unset (no validation).

# Gallery.  sphinx-gallery turns examples/gallery/plot_*.py into
# doc/auto_examples/ (generated, not in git); the examples whose path matches
# "filename_pattern" are run and show their output and figures, the others are
# pages with their code only.  The environment variable SKDPSYNTH_DOCS_GALLERY
# chooses:
#   unset or "all": run every example (the full gallery; several minutes, as
#                   some reproduce a paper's figure);
#   "quick":        run only _QUICK_EXAMPLES, each under 20 s on a 2-core
#                   machine; CI builds this way (.ci/run exports it) to stay
#                   within its time limit.
_QUICK_EXAMPLES = ("plot_quickstart.py", "plot_grid_search.py", "plot_report.py")
_GALLERY = os.environ.get("SKDPSYNTH_DOCS_GALLERY", "all").strip().lower() or "all"
if _GALLERY == "all":
    _RUN_PATTERN = r"/plot_"
elif _GALLERY == "quick":
    _RUN_PATTERN = "/(" + "|".join(re.escape(name) for name in _QUICK_EXAMPLES) + ")$"
else:
    raise ValueError(f"SKDPSYNTH_DOCS_GALLERY={_GALLERY!r}: expected 'all' (or unset) or 'quick'")

sphinx_gallery_conf = {
    "examples_dirs": "../examples/gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": _RUN_PATTERN,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "remove_config_comments": True,
    "show_memory": False,
    # No sg_execution_times.rst pages (one would land in doc/ itself).
    "write_computation_times": False,
    # Names in the examples' code link to the API pages and, through the
    # intersphinx inventories above, to NumPy/pandas/scikit-learn (sphinx-
    # gallery >= 0.22 ignores the former "reference_url" option).
}

# -- HTML output -------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"skdpsynth {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # The user-guide pages fill the header; the rest go under "More".
    "header_links_before_dropdown": 5,
}
# The top-level pages have no sub-pages: no empty "Section Navigation"
# column beside them ("*" does not match the API and gallery pages).
html_sidebars = {"*": []}
html_static_path: list[str] = []


# -- Lexers ------------------------------------------------------------------


class DollarPromptConsoleLexer(BashSessionLexer):
    """``console`` blocks whose prompt is ``$`` only: a line starting with ``#`` is a comment (output), not a root prompt.

    The session in federated.md ("# terminal 1: ... party's machine ...")
    otherwise fails to lex (misc.highlighting_failure) at the apostrophe.
    """

    _ps1rgx = re.compile(
        r"^((?:(?:\[.*?\])|(?:\(\S+\))?(?:| |sh\S*?|\w+\S+[@:]\S+(?:\s+\S+)"
        r"?|\[\S+[@:][^\n]+\].+))\s*[$%]\s*)(.*\n?)"
    )


# scikit-learn adds ``set_<method>_request`` methods and
# ``get_metadata_routing`` (metadata routing) to every estimator class; they
# are sklearn's, not this package's API, and their docstrings refer to
# sklearn's own glossary and labels.
_SKLEARN_REQUEST_METHOD = re.compile(r"^(set_\w+_request|get_metadata_routing)$")


def _skip_sklearn_request_methods(app, what, name, obj, skip, options):
    if what == "class" and _SKLEARN_REQUEST_METHOD.match(name):
        return True
    return None


def _drop_type_docstring_of_constants(app, what, name, obj, options, lines):
    """A module constant without a docstring of its own gets none, not its type's.

    autodoc falls back to ``type(obj).__doc__`` (``str(object='') -> str``,
    ``Built-in immutable sequence.``) for a constant that has no ``#:``
    comment or string after it, which is misleading (and not valid
    reStructuredText for some types).
    """
    if what in ("data", "attribute") and lines:
        own = type(obj).__doc__
        # (a slot's __doc__, e.g. a named tuple's field getter's, is a descriptor: no text to compare)
        if isinstance(own, str) and [line.strip() for line in lines if line.strip()] == [
                line.strip() for line in own.splitlines() if line.strip()]:
            lines.clear()


# autosummary takes a table row's summary as the docstring's first sentence,
# cut at the first ". ", and is meant to extend it while the cut breaks inline
# markup; Sphinx 9.0 checks the whole paragraph instead of the cut, so
# "Group id (``0 .. sizes[t]-1``) of ..." became "Group id (``0 ." (an
# "Inline literal start-string without end-string" warning).  This wrapper
# redoes the extension on the cut itself.
def _patch_autosummary_summary():
    from docutils import nodes
    from sphinx.ext import autosummary

    extract = autosummary.extract_summary

    def broken(text, settings):
        return any(autosummary._parse_summary([text], settings).findall(nodes.system_message))

    def extract_summary(doc, settings):
        summary = extract(doc, settings)
        if not summary or not broken(summary, settings):
            return summary
        paragraph = []
        for line in doc:
            if line.strip():
                paragraph.append(line.strip())
            elif paragraph:
                break
        sentences = autosummary.periods_re.split(" ".join(paragraph))
        for i in range(1, len(sentences) + 1):
            candidate = ". ".join(sentences[:i]).rstrip(".") + "."
            if not broken(candidate, settings):
                return candidate
        return summary

    autosummary.extract_summary = extract_summary


_patch_autosummary_summary()


def setup(app):
    # Before numpydoc (priority 500) rewrites the lines.
    app.connect("autodoc-process-docstring", _drop_type_docstring_of_constants, priority=100)
    app.add_lexer("console", DollarPromptConsoleLexer)
    app.connect("autodoc-skip-member", _skip_sklearn_request_methods)
