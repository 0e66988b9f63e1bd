"""Fixed-seed fits of every synthesizer, pinned: a refactoring that changes a model shows here.

Each case fits a synthesizer with a fixed ``random_state`` on 3,000 Adult records and digests everything it
fitted (every public attribute ending in ``_``, walked down to its arrays and numbers) and 300 records sampled
with a fixed seed.  Two digests per case, both pinned in ``fit_fingerprints.json``:

* ``exact``: every bit (a refactoring's claim is bit-identical models);
* ``rounded``: floats to 8 significant digits (integers, strings and the sample exactly), which tells a change
  of algorithm, selection, noise or budget from one in the last bits of a sum's rounding.

Both are checked only on the platform the file was written on (recorded beside the digests: the versions of
Python, numpy, scipy and pandas, the machine, the SIMD extensions numpy dispatches to and OpenBLAS's kernels),
and the test is skipped elsewhere, saying why.  A fixed seed reproduces a fit bit for bit on one platform
only: a transcendental function's last bit can differ between platforms (numpy's AVX-512 kernels against the
C library's; a view's budget share is a ``cbrt``), and one ulp of a noise scale makes the exact samplers draw
other noise, so even the rounded digests differ (measured: ``doc/architecture.md``, "Fixed-seed fits").

After a deliberate change of results, or to check a refactoring on another platform, rewrite the file (and
say why in the commit)::

    python tests/test_fit_fingerprints.py --write
"""
from __future__ import annotations

import hashlib
import json
import platform
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy
import scipy.linalg  # noqa: F401  (loads scipy's BLAS, one of the kernels _platform records)
from threadpoolctl import threadpool_info

FILE = Path(__file__).with_name("fit_fingerprints.json")
COLUMNS = ["workclass", "education-num", "marital-status", "sex", "income>50K"]
# Timings vary from run to run, and memo caches with the calls made: neither is part of a model.
SKIPPED = {"seconds", "fit_time_", "_containing", "_lock"}


def _canonical(value) -> str:
    """``repr`` with sets in sorted order (a set's own order follows string hashes, which vary per process)."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_canonical(v) for v in value)) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_canonical(v) for v in value) + ")"
    return repr(value)


def _cases() -> dict:
    from skdpsynth import (AIMSynthesizer, HybridSynthesizer, MSTSynthesizer, PartitionSynthesizer,
                           VerticalMRFSynthesizer, ViewSynthesizer)

    common = dict(epsilon=1.0, delta=1e-9, random_state=0)
    return {
        "mst": lambda d: MSTSynthesizer(**common, domain=d, max_iters=300),
        "aim": lambda d: AIMSynthesizer(**common, domain=d, rounds=8, max_iters=200, final_iters=300),
        "aim-sampled-2-per-round": lambda d: AIMSynthesizer(**common, domain=d, rounds=8, max_iters=200,
                                                            final_iters=300, scoring="sampled",
                                                            scoring_samples=5000, selections_per_round=2),
        "partition": lambda d: PartitionSynthesizer(**common, domain=d, rounds=6, max_iters=20, final_iters=50),
        "partition-sampled-2-per-round": lambda d: PartitionSynthesizer(
            **common, domain=d, rounds=6, max_iters=20, final_iters=50, scoring="sampled", scoring_samples=5000,
            selections_per_round=2),
        "partition-paper": lambda d: PartitionSynthesizer(**common, domain=d, rounds=6, max_iters=20,
                                                          final_iters=50, privacy_mode="paper"),
        "hybrid": lambda d: HybridSynthesizer(**common, domain=d, max_iters=50, final_iters=100),
        "vertical_mrf": lambda d: VerticalMRFSynthesizer(**common, domain=d, party_columns=3, n_sketches=64,
                                                         md_iters=50,
                                                         local_mrf_params={"max_iters": 50, "final_iters": 50}),
        "view": lambda d: ViewSynthesizer(epsilon=1.0, domain=d, random_state=0, view_size=2),
    }


def _leaves(obj, path: str, out: list, seen: set) -> None:
    """``(path, value)`` for every array, number and string reachable from ``obj``, in a fixed order."""
    if isinstance(obj, np.ndarray):
        out.append((path, obj))
    elif obj is None or isinstance(obj, (bool, int, float, complex, str, bytes, np.generic)):
        out.append((path, obj))
    elif isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
        out.append((path + ".values", np.asarray(obj.to_numpy(), dtype=object if obj.ndim and
                                                  obj.to_numpy().dtype == object else None)))
        out.append((path + ".labels", repr(list(obj.columns if isinstance(obj, pd.DataFrame) else obj.index)
                                           if not isinstance(obj, pd.Index) else [])))
    elif isinstance(obj, dict):
        for key in sorted(obj, key=_canonical):
            if key not in SKIPPED:
                _leaves(obj[key], f"{path}[{_canonical(key)}]", out, seen)
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            _leaves(item, f"{path}[{i}]", out, seen)
    elif isinstance(obj, (set, frozenset)):
        for i, item in enumerate(sorted(obj, key=_canonical)):
            _leaves(item, f"{path}{{{i}}}", out, seen)
    elif callable(obj) and not hasattr(obj, "__dict__"):
        out.append((path, getattr(obj, "__qualname__", type(obj).__name__)))
    elif hasattr(obj, "__dict__") or hasattr(obj, "__slots__"):
        if id(obj) in seen:
            out.append((path, "<seen>"))
            return
        seen.add(id(obj))
        fields = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
        for slot in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, slot):
                fields[slot] = getattr(obj, slot)
        out.append((path + ".type", type(obj).__qualname__))
        for key in sorted(fields):
            value = fields[key]
            if key in SKIPPED or (callable(value) and not hasattr(value, "__dict__")):
                continue
            _leaves(value, f"{path}.{key}", out, seen)
    else:
        out.append((path, type(obj).__qualname__))


def _encode(value, exact: bool) -> bytes:
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc" and not exact:
            text = np.char.mod("%.8g", value.real.ravel()).tolist() + (
                np.char.mod("%.8g", value.imag.ravel()).tolist() if value.dtype.kind == "c" else [])
            return f"{value.dtype.kind}{value.shape}".encode() + "|".join(text).encode()
        if value.dtype == object:
            return f"O{value.shape}".encode() + repr(value.ravel().tolist()).encode()
        return f"{value.dtype.str}{value.shape}".encode() + np.ascontiguousarray(value).tobytes()
    if isinstance(value, (float, np.floating)):
        return (float(value).hex() if exact else f"{float(value):.8g}").encode()
    return repr(value).encode()


def fingerprints(name: str, build) -> dict:
    from skdpsynth.datasets import load_adult

    adult = load_adult(discretized=True)
    frame = adult.frame[COLUMNS].iloc[:3000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build(adult.domain.project(COLUMNS).to_dict()).fit(frame)
        sample = model.sample(300, random_state=1)
    leaves: list = []
    fitted = {k: v for k, v in vars(model).items() if k.endswith("_") and not k.startswith("_")}
    _leaves(fitted, "model", leaves, set())
    sample_digest = hashlib.sha256(pd.util.hash_pandas_object(sample, index=False).to_numpy().tobytes()
                                   + repr(list(sample.columns)).encode()).hexdigest()
    digests = {}
    for kind in ("rounded", "exact"):
        h = hashlib.sha256(sample_digest.encode())
        for path, value in leaves:
            h.update(path.encode() + b"=" + _encode(value, kind == "exact") + b";")
        digests[kind] = h.hexdigest()[:32]
    return digests


def _platform() -> dict:
    """What a fit's last bits depend on besides the code: versions, machine, SIMD kernels, BLAS kernels."""
    simd = np.show_config(mode="dicts").get("SIMD Extensions", {})
    return {
        "python": "{}.{}".format(*sys.version_info[:2]), "machine": platform.machine(),
        "numpy": np.__version__, "scipy": scipy.__version__, "pandas": pd.__version__,
        "numpy_simd": sorted(simd.get("found", [])),
        "blas": sorted({f"{i['internal_api']} {i['version']} {i.get('architecture')}" for i in threadpool_info()
                        if i.get("user_api") == "blas"}),
    }


PINNED = json.loads(FILE.read_text()) if FILE.exists() else {"platform": {}, "cases": {}}


def _platform_differences(pinned: dict, here: dict) -> list[str]:
    return [f"{key}: {pinned.get(key)!r} there, {here.get(key)!r} here" for key in sorted(set(pinned) | set(here))
            if pinned.get(key) != here.get(key)]


@pytest.mark.parametrize("name", sorted(_cases()))
def test_fixed_seed_fit_is_unchanged(name):
    assert name in PINNED["cases"], f"no pinned fingerprint for {name}: python tests/test_fit_fingerprints.py --write"
    differences = _platform_differences(PINNED.get("platform", {}), _platform())
    if differences:
        pytest.skip("fingerprints pinned on another platform (" + "; ".join(differences) + "): rewrite them here "
                    "with python tests/test_fit_fingerprints.py --write to check a refactoring on this one")
    found = fingerprints(name, _cases()[name])
    assert found["rounded"] == PINNED["cases"][name]["rounded"], (
        f"{name}: the fitted model or its sample changed (beyond 8 significant digits)")
    assert found["exact"] == PINNED["cases"][name]["exact"], f"{name}: the fitted model changed in its last bits"


def test_platform_differences_name_each_key():
    pinned = {"numpy": "2.4.6", "machine": "x86_64", "numpy_simd": ["X86_V3", "X86_V4"]}
    here = {"numpy": "2.4.6", "machine": "x86_64", "numpy_simd": ["X86_V3"], "python": "3.11"}
    assert _platform_differences(pinned, here) == [
        "numpy_simd: ['X86_V3', 'X86_V4'] there, ['X86_V3'] here", "python: None there, '3.11' here"]
    assert _platform_differences(here, dict(here)) == []


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_fit_fingerprints.py --write")
    cases = {name: fingerprints(name, build) for name, build in sorted(_cases().items())}
    FILE.write_text(json.dumps({"platform": _platform(), "cases": cases}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} fingerprints to {FILE}")
