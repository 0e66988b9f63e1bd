# pytest runs with --doctest-modules over doc/: keep it to the Markdown pages.
# conf.py is the Sphinx configuration, and auto_examples/ is sphinx-gallery's
# generated copy of examples/gallery/ (importing it would run the examples).
collect_ignore = ["conf.py"]
collect_ignore_glob = ["auto_examples/*", "_build/*", "generated/*"]
