"""Sphinx configuration for the skdpsynth documentation.

Build (warnings are errors)::

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -b html doc doc/_build/html

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
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# intersphinx (python, numpy, scipy, pandas, scikit-learn) is deliberately NOT
# enabled: the build must not need the network, and no local ``objects.inv``
# inventories for those projects are available here (none is shipped with the
# installed packages).  To enable it, put the inventories in a local folder and
# add ``"sphinx.ext.intersphinx"`` with e.g.
#   intersphinx_mapping = {"numpy": ("https://numpy.org/doc/stable/", "_inv/numpy.inv"), ...}

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
# Each class page documents the class's own public methods and properties
# (the autosummary class template lists them; "members" makes them targets).
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# numpydoc_validation_checks is deliberately left unset (no validation).

# sphinx-gallery: examples/gallery/plot_*.py are run at build time and turned
# into doc/auto_examples/ (generated, not in git).
sphinx_gallery_conf = {
    "examples_dirs": "../examples/gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "remove_config_comments": True,
    "show_memory": False,
    # No sg_execution_times.rst pages (one would land in doc/ itself).
    "write_computation_times": False,
    "reference_url": {"skdpsynth": None},
}

# -- HTML output -------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"skdpsynth {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
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


# scikit-learn adds ``set_<method>_request`` methods (metadata routing) to
# every estimator class; they are sklearn's, not this package's API, and their
# docstrings refer to sklearn's own glossary and labels.
_SKLEARN_REQUEST_METHOD = re.compile(r"^set_\w+_request$")


def _skip_sklearn_request_methods(app, what, name, obj, skip, options):
    if what == "class" and _SKLEARN_REQUEST_METHOD.match(name):
        return True
    return None


def setup(app):
    app.add_lexer("console", DollarPromptConsoleLexer)
    app.connect("autodoc-skip-member", _skip_sklearn_request_methods)
