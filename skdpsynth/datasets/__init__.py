"""Bundled data sets and their public schemas."""
from ._adult import adult_discretized_paths, adult_schema_path, load_adult

__all__ = ["load_adult", "adult_discretized_paths", "adult_schema_path"]
