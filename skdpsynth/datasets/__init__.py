"""Bundled data sets and their public schemas, and a generated mixed table."""
from ._adult import adult_discretized_paths, adult_schema_path, load_adult
from ._mixed import make_mixed_table

__all__ = ["load_adult", "adult_discretized_paths", "adult_schema_path", "make_mixed_table"]
