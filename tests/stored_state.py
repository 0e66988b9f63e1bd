"""Everything a fitted estimator keeps, found by walking it, and the checks run on it.

doc/privacy.md ("What the guarantee covers") says a fitted estimator is post-processing of its mechanisms' outputs,
and ("Randomness and the seed rule") that nothing it keeps comes from the noise stream.  These helpers check both on
what is actually stored, whatever shape a leak would take:

* :func:`reachable` walks every object reachable from an estimator (attributes, ``__slots__``, dicts, lists,
  dataclasses, pandas and scipy.sparse objects, closures, defaults and bound instances of stored callables,
  ``functools.partial``) and collects its numeric arrays (lists, tuples and dicts of numbers included), numbers,
  texts and random generators, each with the path it was found at;
* :func:`true_marginals` counts a table's exact 1-, 2- and 3-way marginals with plain numpy (not with the code
  under test);
* :func:`find_marginals` lists the stored arrays that are one of them in any of the forms a leak would store:
  the counts or a multiple of them (probabilities), in any cell order (reshaped, transposed, sorted), their
  conditional tables, cumulative sums and logarithms, the cells' exact support, and, for a 1-way marginal, the
  counts of a subset of its cells (e.g. only the rare values);
* :class:`MechanismInputs` records what the fit gives its mechanisms (exact answers, exact scores), and
  :func:`find_inputs` lists the stored values that are one of them;
* :class:`NoiseStreams` hands every noise generator of a fit out of a reserved entropy and records it and what
  was drawn from it; :func:`find_noise_streams` lists the stored generators, seed sequences and integers that
  belong to it.

Examples
--------
>>> import numpy as np
>>> codes = np.array([[0, 1], [0, 0], [1, 1], [2, 1], [0, 1]])
>>> truth = true_marginals(codes, {"a": 3, "b": 2})
>>> truth[("a",)].tolist(), truth[("a", "b")].shape
([3.0, 1.0, 1.0], (3, 2))
>>> class Leaky:
...     def __init__(self):
...         self.weights = {"a": [0.6, 0.2, 0.2]}           # the 1-way marginal of a, normalised
...         self.table = np.array([[0, 1, 1], [1, 0, 2]])  # the 2-way marginal, its cells in another order
...         self.draw = lambda n, p=np.array([0.2, 0.8]): p  # a stored callable's default: b's marginal
>>> sorted(set(found.split(" ~ ")[1].split(" (")[0] for found in find_marginals(reachable(Leaky()), truth)))
['a', 'a x b', 'b']
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import sys
import types
from collections.abc import Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["Reachable", "reachable", "true_marginals", "find_marginals", "find_value", "MechanismInputs",
           "find_inputs", "NoiseStreams", "find_noise_streams"]

_RNG_TYPES = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence, np.random.RandomState)
_SKIP = (type, types.ModuleType, types.BuiltinFunctionType, types.CodeType, types.FrameType)
_MAX_DENSE = 1_000_000  # cells: a sparse matrix up to this size is also compared densely


@dataclasses.dataclass
class Reachable:
    """What :func:`reachable` found: ``(path, value)`` pairs by kind."""

    arrays: list = dataclasses.field(default_factory=list)      # numeric or boolean ndarrays
    numbers: list = dataclasses.field(default_factory=list)     # ints and floats, and every container's length
    texts: list = dataclasses.field(default_factory=list)       # str and bytes
    generators: list = dataclasses.field(default_factory=list)  # Generator, BitGenerator, SeedSequence, RandomState


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def reachable(root, name: str = "est") -> Reachable:
    """Walk everything reachable from ``root`` (without following module globals) and collect it by kind."""
    out = Reachable()
    seen: dict[int, object] = {}  # id -> object: holding it keeps temporaries alive so that ids are not reused
    stack = [(name, root)]
    while stack:
        path, obj = stack.pop()
        if obj is None or isinstance(obj, (bool, np.bool_)):
            continue
        if _is_number(obj):
            out.numbers.append((path, obj))
            continue
        if isinstance(obj, (str, bytes, bytearray)):
            out.texts.append((path, obj))
            continue
        if id(obj) in seen or isinstance(obj, _SKIP):
            continue
        seen[id(obj)] = obj
        stack.extend(_children(path, obj, out))
    return out


def _children(path: str, obj, out: Reachable) -> list:
    """Record ``obj`` in ``out`` and return the ``(path, child)`` pairs to walk next."""
    if isinstance(obj, _RNG_TYPES):
        out.generators.append((path, obj))
        if isinstance(obj, np.random.Generator):
            return [(f"{path}.bit_generator", obj.bit_generator)]
        if isinstance(obj, np.random.BitGenerator):
            return [(f"{path}.state", obj.state), (f"{path}.seed_seq", obj.seed_seq)]
        if isinstance(obj, np.random.SeedSequence):
            return [(f"{path}.entropy", obj.entropy), (f"{path}.spawn_key", obj.spawn_key)]
        return [(f"{path}.state", obj.get_state(legacy=False))]
    if isinstance(obj, np.ndarray):
        out.numbers.extend((f"len({path})", n) for n in obj.shape)
        if obj.dtype.kind in "biuf":
            out.arrays.append((path, obj))
            return []
        return [(f"{path}[{i}]", x) for i, x in enumerate(obj.ravel())] if obj.dtype.kind == "O" else []
    if isinstance(obj, pd.Categorical):
        return [(f"{path}.codes", np.asarray(obj.codes)), (f"{path}.categories", obj.categories)]
    if isinstance(obj, pd.api.extensions.ExtensionArray):
        return [(f"{path}.to_numpy()", obj.to_numpy())]
    if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
        out.numbers.append((f"len({path})", len(obj)))
        if isinstance(obj, pd.DataFrame):
            if obj.shape[1] > 1 and all(kind in "biuf" for kind in (dtype.kind for dtype in obj.dtypes)):
                out.arrays.append((f"{path}.to_numpy()", obj.to_numpy()))  # a table kept as a frame
            return [(f"{path}.index", obj.index), (f"{path}.columns", obj.columns)] + [
                (f"{path}[{c!r}]", obj.iloc[:, j]) for j, c in enumerate(obj.columns)]
        kids = [(f"{path}.values", obj.to_numpy())]
        if isinstance(obj.dtype, pd.CategoricalDtype):
            kids.append((f"{path}.codes", np.asarray(obj.cat.codes if isinstance(obj, pd.Series) else obj.codes)))
        return kids + ([(f"{path}.index", obj.index)] if isinstance(obj, pd.Series) else [])
    if sp.issparse(obj):
        out.numbers.extend((f"len({path})", n) for n in obj.shape)
        kids = [(f"{path}.data", np.asarray(obj.data))]
        if np.prod(obj.shape, dtype=float) <= _MAX_DENSE:
            kids.append((f"{path}.toarray()", obj.toarray()))
        return kids
    if isinstance(obj, Mapping):
        items = list(obj.items())
        out.numbers.append((f"len({path})", len(items)))
        _numbers_as_array(f"{path}.values()", [v for _, v in items], out)
        return [(f"{path}.keys()", [k for k, _ in items])] + [(f"{path}[{k!r}]", v) for k, v in items]
    if isinstance(obj, (list, tuple, set, frozenset)):
        values = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else list(obj)
        out.numbers.append((f"len({path})", len(values)))
        _numbers_as_array(path, values, out)
        kids = [(f"{path}[{i}]", v) for i, v in enumerate(values)]
        fields = getattr(obj, "__dict__", None)  # a subclass of list or tuple may carry attributes too
        return kids + ([(f"{path}.{k}", v) for k, v in fields.items()] if fields else [])
    if isinstance(obj, functools.partial):
        return [(f"{path}.func", obj.func), (f"{path}.args", obj.args), (f"{path}.keywords", obj.keywords)]
    if isinstance(obj, types.MethodType):
        return [(f"{path}.__self__", obj.__self__), (f"{path}.__func__", obj.__func__)]
    if isinstance(obj, types.FunctionType):
        cells = [(f"{path}.<closure {v}>", c.cell_contents)
                 for v, c in zip(obj.__code__.co_freevars, obj.__closure__ or ()) if _filled(c)]
        return cells + [(f"{path}.__defaults__", obj.__defaults__), (f"{path}.__kwdefaults__", obj.__kwdefaults__),
                        (f"{path}.__dict__", obj.__dict__)]
    return _attributes(path, obj)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell: a closure variable not assigned yet
        return False
    return True


def _attributes(path: str, obj) -> list:
    """An object's ``__dict__`` and ``__slots__``."""
    kids = [(f"{path}.{k}", v) for k, v in getattr(obj, "__dict__", {}).items()]
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in [slots] if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                kids.append((f"{path}.{slot}", getattr(obj, slot)))
    return kids


def _numbers_as_array(path: str, values: list, out: Reachable) -> None:
    """A list, tuple or dict of two numbers or more is an array too (a leak may store counts that way)."""
    if len(values) >= 2 and all(_is_number(v) for v in values):
        out.arrays.append((path, np.asarray([float(v) for v in values])))


# -- true marginals ----------------------------------------------------------------------------------------------
def true_marginals(codes: np.ndarray, sizes: Mapping, max_way: int = 3) -> dict:
    """The exact counts of every clique of 1 to ``max_way`` columns of ``codes`` (columns in ``sizes`` order)."""
    names, shape = list(sizes), [int(s) for s in sizes.values()]
    codes = np.asarray(codes, dtype=np.int64)
    out = {}
    for k in range(1, max_way + 1):
        for idx in itertools.combinations(range(len(names)), k):
            dims = [shape[i] for i in idx]
            flat = np.ravel_multi_index(tuple(codes[:, i] for i in idx), dims)
            out[tuple(names[i] for i in idx)] = np.bincount(flat, minlength=int(np.prod(dims))).reshape(dims) * 1.0
    return out


def _forms(q: np.ndarray, trim: bool = True) -> list[tuple[str, np.ndarray]]:
    """The arrays a leak of marginal ``q`` could store, each up to a constant factor and an order of its cells."""
    forms = [("counts", q)]
    axes = range(q.ndim)
    for k in range(1, q.ndim):  # conditional tables P(rest | given) for every proper subset of axes
        for given in itertools.combinations(axes, k):
            summed = tuple(a for a in axes if a not in given)
            with np.errstate(invalid="ignore", divide="ignore"):
                forms.append((f"conditional on axes {given}", np.nan_to_num(q / q.sum(axis=summed, keepdims=True))))
    for perm in itertools.permutations(axes):
        forms.append((f"cumulative sum in axis order {perm}", np.cumsum(q.transpose(perm).ravel())))
    if trim and q.ndim > 1:
        for what, table in _cross_tabulations(q):
            forms += [(f"{form}, {what}", t) for form, t in _forms(table, trim=False)]
    return forms


def _cross_tabulations(q: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """``q`` as a cross-tabulation of the observed values keeps it (``pandas.crosstab``): empty slices dropped
    along every axis, or the axes grouped into rows and columns and the empty rows and columns dropped."""
    axes = tuple(range(q.ndim))
    out = [("empty slices dropped", q[np.ix_(*[np.flatnonzero(q.sum(axis=tuple(b for b in axes if b != a)))
                                                for a in axes])])]
    for k in range(1, q.ndim):
        for rows in itertools.combinations(axes, k):
            if 0 not in rows:  # (rows, columns) and (columns, rows) hold the same cells
                continue
            cols = tuple(a for a in axes if a not in rows)
            table = q.transpose(rows + cols).reshape(int(np.prod([q.shape[a] for a in rows])), -1)
            table = table[np.flatnonzero(table.sum(axis=1))][:, np.flatnonzero(table.sum(axis=0))]
            out.append((f"crossed as {rows} x {cols}, empty rows and columns dropped", table))
    return [(what, t) for what, t in out if 1 < t.size < q.size]


def _same_cells(stored: np.ndarray, target: np.ndarray) -> bool:
    """``stored`` is a multiple of ``target`` with its cells in some order (sorted values compared, sums scaled)."""
    s, t = np.sort(stored.ravel().astype(float)), np.sort(target.ravel().astype(float))
    if not np.all(np.isfinite(s)):
        return False
    s_sum, t_sum = s.sum(), t.sum()
    if s_sum == 0 or t_sum == 0:
        return s_sum == t_sum == 0 and np.array_equal(s, t)
    if s_sum < 0:  # a negative multiple sorts the other way
        s = np.sort(-s)
        s_sum = -s_sum
    return bool(np.allclose(s / s_sum, t / t_sum, rtol=1e-9, atol=1e-12))


def _same_logs(stored: np.ndarray, q: np.ndarray) -> bool:
    """``stored`` is log(q) plus a constant (log counts or log probabilities), cells in some order."""
    with np.errstate(divide="ignore"):
        t = np.sort(np.log(q.ravel()))
    s = np.sort(stored.ravel().astype(float))
    if np.isnan(s).any() or not np.array_equal(np.isneginf(s), np.isneginf(t)) or np.isinf(t).all():
        return False
    finite = np.isfinite(t)
    return bool(np.allclose(s[finite] - s[finite].max(), t[finite] - t[finite].max(), rtol=0, atol=1e-9))


def _informative_support(q: np.ndarray) -> bool:
    """Observed cells that noise cannot tell apart from empty ones (count 1 or 2) next to empty cells: a mask
    equal to the exact support then comes from the exact counts, not from a threshold on noisy ones."""
    return bool(((q == 1) | (q == 2)).any() and (q == 0).any())


def _subset_scale(stored: np.ndarray, q: np.ndarray) -> bool:
    """``stored`` (three distinct non-zero values or more) is a multiple of the counts of some cells of ``q``."""
    s = stored.ravel().astype(float)
    if s.size < 3 or s.size > q.size or not np.all(np.isfinite(s)) or np.unique(s[s != 0]).size < 3:
        return False
    values = np.unique(q.ravel())
    top = s[np.argmax(np.abs(s))]
    scales = values[values != 0] / top
    scaled = scales[:, None] * s[None, :]
    hit = np.isclose(scaled[:, :, None], values[None, None, :], rtol=1e-9, atol=1e-12).any(axis=2)
    return bool(hit.all(axis=1).any())


def find_marginals(found: Reachable, marginals: Mapping) -> list[str]:
    """Descriptions ``"path ~ clique (form)"`` of the stored arrays that are a true marginal in some form."""
    by_size: dict[int, list] = {}
    for path, arr in found.arrays:
        by_size.setdefault(arr.size, []).append((path, arr))
    hits = []
    for clique, q in marginals.items():
        if q.size < 2:
            continue
        label = " x ".join(map(str, clique))
        matches = _as_whole(q, by_size) + (_as_part(q, found.arrays) if q.ndim == 1 else [])
        hits += [f"{path} ~ {label} ({form})" for path, form in dict(reversed(matches)).items()]
    return hits


def _as_whole(q: np.ndarray, by_size: dict) -> list[tuple[str, str]]:
    """``(path, form)`` of the stored arrays that hold every cell of ``q`` in some form."""
    out = []
    for form, target in _forms(q):
        out += [(path, form) for path, arr in by_size.get(target.size, [])
                if arr.dtype.kind != "b" and _same_cells(arr, target)]
    for path, arr in by_size.get(q.size, []):
        if arr.dtype.kind != "b" and _same_logs(arr, q):
            out.append((path, "logarithm"))
        elif arr.dtype.kind == "b" and _informative_support(q) and any(
                np.array_equal(arr.ravel(), (q > 0).transpose(p).ravel())
                for p in itertools.permutations(range(q.ndim))):
            out.append((path, "exact support"))
    return out


def _as_part(q: np.ndarray, arrays: list) -> list[tuple[str, str]]:
    """``(path, form)`` of the stored arrays that hold some of the cells of a 1-way marginal ``q``."""
    out = []
    observed = np.flatnonzero(q)
    for path, arr in arrays:
        if arr.dtype.kind == "b" or arr.size >= q.size:
            continue
        if _subset_scale(arr, q):
            out.append((path, "counts of some of its cells"))
        elif _informative_support(q) and arr.size == observed.size and np.array_equal(arr.ravel(), observed):
            out.append((path, "codes of the observed values"))
    return out


def find_value(found: Reachable, value, lengths_only: bool = False) -> list[str]:
    """Paths where ``value`` is stored: as a number, an element of an array, or the length of a container
    (only the last with ``lengths_only``, e.g. to find anything kept per training record).

    A run of consecutive integers (an index, a range of codes) is not searched: it holds every value up to its
    length, and its length is searched.
    """
    paths = [p for p, x in found.numbers if x == value and (p.startswith("len(") or not lengths_only)]
    for path, arr in [] if lengths_only else found.arrays:
        flat = arr.ravel()
        if arr.dtype.kind != "b" and np.any(flat == value) and not (flat.size > 1 and np.all(np.diff(flat) == 1)):
            paths.append(path)
    return paths


# -- what only a mechanism may read -----------------------------------------------------------------------------
class MechanismInputs:
    """The exact answers and scores a fit gives its mechanisms: what only a mechanism may read.

    :meth:`install` wraps the Gaussian, Laplace and exponential mechanisms (the lazy one's scores included)
    wherever skdpsynth binds them and records each call's exact input as a flat float array.
    """

    def __init__(self):
        self.inputs: list[np.ndarray] = []

    def install(self, monkeypatch) -> MechanismInputs:
        from skdpsynth.privacy import mechanisms

        wrappers = [(mechanisms.gaussian_mechanism, self._recording(mechanisms.gaussian_mechanism)),
                    (mechanisms.laplace_mechanism, self._recording(mechanisms.laplace_mechanism)),
                    (mechanisms.exponential_mechanism, self._recording(mechanisms.exponential_mechanism)),
                    (mechanisms.lazy_exponential_mechanism, self._lazy(mechanisms.lazy_exponential_mechanism))]
        for name, module in list(sys.modules.items()):
            if not name.startswith("skdpsynth") or module is None:
                continue
            for attr, value in list(vars(module).items()):
                for original, wrapper in wrappers:
                    if value is original:
                        monkeypatch.setattr(module, attr, wrapper)
        return self

    def _record(self, values) -> None:
        self.inputs.append(np.asarray(values, dtype=float).ravel().copy())

    def _recording(self, mechanism):
        @functools.wraps(mechanism)
        def recorded(values, *args, **kwargs):
            self._record(values)
            return mechanism(values, *args, **kwargs)
        return recorded

    def _lazy(self, mechanism):
        @functools.wraps(mechanism)
        def recorded(upper_bounds, score, *args, **kwargs):
            self._record(upper_bounds)
            scores = []
            try:
                return mechanism(upper_bounds, lambda i: scores.append(score(i)) or scores[-1], *args, **kwargs)
            finally:
                self._record(scores)
        return recorded


def find_inputs(found: Reachable, inputs: MechanismInputs) -> list[str]:
    """Descriptions of stored values that are a mechanism's exact input: a number equal to one of its values
    that is not an integer (a score, a deviation: a noisy release equals it with probability 0), or an array
    holding all of an input's values (two distinct ones or more) in some order and scale."""
    fractional = np.unique(np.concatenate([x[np.isfinite(x) & (x != np.round(x))] for x in inputs.inputs] or
                                          [np.empty(0)]))
    hits = [f"{path}: a value a mechanism was given" for path, x in found.numbers
            if isinstance(x, (float, np.floating)) and np.isin(float(x), fractional)]
    hits += [f"{path}: holds a value a mechanism was given" for path, arr in found.arrays
             if arr.dtype.kind == "f" and np.isin(arr, fractional).any()]
    by_size: dict[int, list] = {}
    for path, arr in found.arrays:
        by_size.setdefault(arr.size, []).append((path, arr))
    for x in inputs.inputs:
        if np.unique(x).size >= 2:
            hits += [f"{path}: an input of a mechanism" for path, arr in by_size.get(x.size, [])
                     if arr.dtype.kind != "b" and _same_cells(arr, x)]
    return sorted(set(hits))


# -- the noise stream --------------------------------------------------------------------------------------------
class _Recorded(np.random.Generator):
    """A noise generator that reports its integer and byte draws and its spawned children to ``owner``."""

    def __init__(self, bit_generator, owner: NoiseStreams):
        super().__init__(bit_generator)
        self._owner = owner
        owner._register(self)

    def integers(self, *args, **kwargs):
        out = super().integers(*args, **kwargs)
        self._owner._drew(np.atleast_1d(out))
        return out

    def bytes(self, length):
        out = super().bytes(length)
        self._owner._drew(np.array([int.from_bytes(out, "big")], dtype=object))
        return out

    def spawn(self, n_children):
        return [_Recorded(np.random.PCG64(s), self._owner) for s in self.bit_generator.seed_seq.spawn(n_children)]


class NoiseStreams:
    """Every noise generator of a fit, handed out from a reserved entropy, with what was drawn from it.

    :meth:`install` replaces ``noise_generator`` (skdpsynth.privacy.randomness) wherever skdpsynth imported it:
    each call that would seed a new noise stream (``None``, a seed) gets a PCG64 generator of the reserved
    ``entropy`` (``ENTROPY`` unless given) instead; a generator passed on is returned as it is, as the real
    function does.  Every other stream of the fit (sampling, public choices) keeps coming from the estimator's
    ``random_state``, so anything stored that carries the reserved entropy, a drawn value or a noise
    generator's state belongs to the noise stream.  :meth:`wrap` records a real noise generator instead.
    """

    ENTROPY = int.from_bytes(b"noise stream!!!!", "big")  # 128 bits no test seeds anything with

    def __init__(self, entropy: int = ENTROPY):
        self.entropy = int(entropy)
        self.generators: list[_Recorded] = []
        self._own: list[int] = []  # the generators' entropy words, first states and increments
        self._drawn: list[np.ndarray] = []

    def install(self, monkeypatch) -> NoiseStreams:
        from skdpsynth.privacy import randomness

        real = randomness.noise_generator
        for name, module in list(sys.modules.items()):
            if name.startswith("skdpsynth") and getattr(module, "noise_generator", None) is real:
                monkeypatch.setattr(module, "noise_generator", self.generator)
        return self

    def generator(self, random_state) -> np.random.Generator:
        from skdpsynth.privacy.randomness import SystemRandomGenerator

        if isinstance(random_state, np.random.Generator) and not isinstance(random_state, SystemRandomGenerator):
            return random_state
        seed = np.random.SeedSequence(self.entropy, spawn_key=(len(self.generators),))
        return _Recorded(np.random.PCG64(seed), self)

    def wrap(self, generator: np.random.Generator) -> np.random.Generator:
        """A recorded generator drawing from ``generator``'s bit generator (to spy on a real noise generator)."""
        return _Recorded(generator.bit_generator, self)

    def _register(self, gen: _Recorded) -> None:
        self.generators.append(gen)
        state = gen.bit_generator.state["state"]
        self._own += [int(state["state"]), int(state["inc"]), *_entropies(gen)]

    def _drew(self, values: np.ndarray) -> None:
        if values.dtype.kind in "iuO":
            self._drawn.append(values.ravel())

    def drawn(self) -> list[int]:
        """Every integer drawn from the noise generators so far (``integers``, ``bytes`` read as one integer)."""
        return [int(v) for arr in self._drawn for v in arr.tolist()]

    def states(self) -> list[dict]:
        """The bit-generator state of every noise generator handed out so far (compare before and after)."""
        return [g.bit_generator.state for g in self.generators]

    def values(self) -> set[int]:
        """The noise streams' large integers: their entropy, states, increments and every draw of 2^32 or more."""
        big = {self.entropy, *self._own, *(int(g.bit_generator.state["state"]["state"]) for g in self.generators)}
        big.update(v for v in self.drawn() if abs(v) >= 2**32)
        return big


def _entropies(obj) -> list[int]:
    """The entropy words a generator, bit generator or seed sequence was seeded from (none if unknown)."""
    if isinstance(obj, np.random.Generator):
        obj = obj.bit_generator
    if isinstance(obj, np.random.BitGenerator):
        obj = obj.seed_seq
    entropy = getattr(obj, "entropy", None)
    return [] if entropy is None else [int(e) for e in np.atleast_1d(np.asarray(entropy, dtype=object))]


def find_noise_streams(found: Reachable, streams: NoiseStreams) -> list[str]:
    """Descriptions of stored generators, seed sequences, states and integers that belong to the noise stream.

    A noise generator itself (or its bit generator) is found by identity, and any ``SystemRandomGenerator`` (the
    class exists for noise only); a copy, a spawned child or a generator seeded from a draw by its entropy or its
    PCG64 increment; a state dict or a seed by its integers; and a legacy ``RandomState``, which no stream of
    skdpsynth is, always.
    """
    from skdpsynth.privacy.randomness import SystemRandomGenerator

    own = {id(g) for g in streams.generators} | {id(g.bit_generator) for g in streams.generators}
    own |= {id(g.bit_generator.seed_seq) for g in streams.generators}
    big = streams.values()
    hits = []
    for path, obj in found.generators:
        if id(obj) in own or isinstance(obj, SystemRandomGenerator):  # the latter exists for noise only
            hits.append(f"{path}: a noise generator itself")
        elif isinstance(obj, np.random.RandomState):
            hits.append(f"{path}: a legacy RandomState (no stream of skdpsynth is one)")
        elif set(_entropies(obj)) & big:
            hits.append(f"{path}: seeded from the noise stream")
    hits += [f"{path}: a value of the noise stream" for path, x in found.numbers
             if isinstance(x, (int, np.integer)) and int(x) in big]
    hits += [f"{path}: holds values of the noise stream" for path, arr in found.arrays
             if arr.dtype.kind in "iu" and arr.dtype.itemsize == 8 and big & set(arr.ravel().tolist())]
    return hits
