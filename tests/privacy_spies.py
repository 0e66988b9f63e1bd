"""Spies on every noise draw, ledger entry and mechanism call of a fit, and the reconciliation of draws with ledgers.

Test support for issue 39 (not a test module: pytest collects ``test_*.py`` only).  The package imports its
samplers and mechanisms by name (``from ..privacy import gaussian_mechanism``), so a spy has to replace every
module attribute bound to the original, not just the one in :mod:`skdpsynth.privacy`; :func:`patch_everywhere`
does that.  The API:

``spy = NoiseSpy(monkeypatch)``
    Installs the spies (all undone by ``monkeypatch`` at the end of the test) and records, from then on:

    * ``spy.draws``: every draw of privacy noise, as a :class:`Draw` (``sampler``, ``param``, ``size``, where it
      happened).  The samplers: ``discrete_gaussian`` (param σ²), ``discrete_laplace`` (param b),
      ``bernoulli_exp`` (param None), ``gumbel`` (param: the ε of the exponential mechanism it serves),
      ``normal`` (σ²) and ``laplace`` (b) drawn from a generator that ``noise_generator`` handed out or that a
      party was given (continuous mechanisms, protocol B's matrices), ``phantoms`` (VertiMRF's DPFM phantom
      maxima; param k_p) and ``grr`` (VertiMRF-FO; param ε′).  The spies share the original bit streams: a
      seeded fit draws the same noise with and without them;
    * ``spy.calls``: every call of a mechanism or of a step that draws noise, as a :class:`Call` (name, bound
      arguments, result, the draws and ledger entries made inside it, its caller's site); ``spy.calls_to(name)``
      filters them: ``"gaussian_mechanism"``, ``"laplace_mechanism"``, ``"exponential_mechanism"``,
      ``"lazy_exponential_mechanism"``, ``"_dp_quantile"``, ``"_noise_share"``, ``"noisy_indicators"``,
      ``"noisy_local_marginal"``, ``"vertical_party"`` (VertiMRF's ``VerticalParty.run``), ``"fit"`` (every
      synthesizer fit, nested ones included) and ``"check_spend"`` (a fit's own budget check, with its ledger);
      ``spy.trace(function)`` records one more function of the package the same way, and
      ``spy.from_noise_stream(rng)`` says whether a generator came out of ``noise_generator``;
    * ``spy.entries``: every ``(ledger, entry)`` a :class:`~skdpsynth.privacy.PrivacyLedger` recorded (``add``,
      ``add_leak``, ``extend``, entries read from the wire: all go through ``PrivacyLedger.record``).

``reconcile(ledger, spy, allow=())``
    Matches the draws one to one with the entries of ``ledger`` (the fit's ``privacy_ledger_``) by what each
    entry says was drawn (:func:`expected_draws`), and raises ``AssertionError`` naming every draw no entry pays
    for (and, when it was charged to another ledger, saying so), every entry no draw matches, and every count
    measurement whose entry states a sensitivity other than 1.  A sub-fit folded into one entry (VertiMRF's local
    model) is reconciled against its own ledger and draws.  ``allow`` lists the documented exceptions, each an
    :class:`Uncharged` with its reason; an exception that covers no draw is an error too, so a stale one cannot
    hide a change.

``Replay(monkeypatch, spy)``
    Makes every mechanism return what it returned in the fit ``spy`` recorded, checking that it is called with the
    same public arguments: a fit on other data then shows whether anything but the mechanisms read the data.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import math
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import skdpsynth
from skdpsynth.federated import parties as parties_module
from skdpsynth.synthesizers.vertical_mrf import frequency_oracle, sketches
from skdpsynth.synthesizers.vertical_mrf.party import VerticalParty
from skdpsynth.preprocessing import discretizer
from skdpsynth.privacy import ledger as ledger_module, mechanisms, randomness, samplers
from skdpsynth.privacy.accounting import cdp_rho
from skdpsynth.privacy.randomness import SystemRandomGenerator
from skdpsynth.synthesizers.base import BaseSynthesizer

__all__ = ["Call", "Draw", "NoiseSpy", "Replay", "Uncharged", "expected_draws", "patch_everywhere", "reconcile"]

# Relative tolerance of a draw's parameter against its ledger entry's.  They differ by float rounding only: the
# mechanisms round σ² and b up by one ulp (mechanisms.py), a party's σ² = 1/(2 e ρ_ij) is computed in another order
# than the ledger's 1/(2 ρ_p), σ = √σ² is squared back: a few ulps, about 1e-15 relative.  Anything above 1e-9 is
# a different noise scale.
PARAM_RTOL = 1e-9

_HERE = __file__
_PRIVACY_INTERNALS = ("skdpsynth/privacy/mechanisms.py", "skdpsynth/privacy/samplers.py",
                      "skdpsynth/privacy/randomness.py")


@functools.lru_cache(maxsize=None)
def _import_all() -> None:
    """Import every module of the package, so that every binding of a sampler exists before it is patched."""
    for info in pkgutil.walk_packages(skdpsynth.__path__, "skdpsynth."):
        if info.name.startswith(("skdpsynth.benchmarks", "skdpsynth.__main__")):
            continue  # scripts: no fit runs through them (and __main__ runs the command line when imported)
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional dependency is missing: that module cannot draw noise here either
            pass


def patch_everywhere(monkeypatch, original: Callable, replacement: Callable) -> list[str]:
    """Bind ``replacement`` wherever a module of the package binds ``original``; returns the places.

    Examples
    --------
    >>> import pytest
    >>> from skdpsynth.privacy import samplers
    >>> with pytest.MonkeyPatch.context() as mp:
    ...     places = patch_everywhere(mp, samplers.discrete_gaussian, lambda *a, **k: None)
    >>> "skdpsynth.privacy.mechanisms.discrete_gaussian" in places
    True
    """
    _import_all()
    places = []
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "skdpsynth" or name.startswith("skdpsynth.")):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                monkeypatch.setattr(module, attr, replacement)
                places.append(f"{name}.{attr}")
    if not places:
        raise AssertionError(f"{original.__qualname__} is bound nowhere: a spy on it would see nothing.")
    return places


def _short(filename: str) -> str:
    """A path from the package root (the same in a scratch copy of the repository)."""
    filename = filename.replace("\\", "/")
    i = filename.rfind("skdpsynth/")
    return filename[i:] if i >= 0 else filename


def _site(skip_privacy: bool) -> str:
    """The first frame outside this module (and outside the privacy primitives when ``skip_privacy``)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename.replace("\\", "/")
        if name != _HERE.replace("\\", "/") and not (
                skip_privacy and name.endswith(_PRIVACY_INTERNALS)):
            return f"{_short(name)}:{frame.f_lineno} ({frame.f_code.co_name})"
        frame = frame.f_back
    return "?"


@dataclass(eq=False)
class Call:
    """One call of a spied function: its bound arguments, result, and what happened inside it."""

    name: str
    args: dict
    site: str
    parent: Call | None
    result: Any = None
    draws: list = field(default_factory=list)      # every Draw made inside (nested calls' included)
    entries: list = field(default_factory=list)    # (ledger, entry) recorded while it was the innermost call

    def within(self, name: str) -> Call | None:
        """The innermost call named ``name`` this call runs in (itself included)."""
        call = self
        while call is not None and call.name != name:
            call = call.parent
        return call

    def __repr__(self) -> str:
        return f"{self.name}(…) at {self.site}"


@dataclass(eq=False)
class Draw:
    """One draw of privacy noise: which sampler, its parameter (σ², b, ε, k_p or ε′), how many values, where."""

    sampler: str
    param: float | None
    size: int
    site: str
    call: Call | None

    def describe(self) -> str:
        param = "" if self.param is None else f"{self.param:.6g}, "
        inside = "" if self.call is None else f" in {self.call.name}"
        return f"{self.sampler}({param}size={self.size}){inside} at {self.call.site if self.call else self.site}"


@dataclass(frozen=True)
class Uncharged:
    """A documented exception: draws of ``sampler`` whose call site contains ``where`` are not charged, because
    ``reason``."""

    sampler: str
    where: str
    reason: str

    def covers(self, draw: Draw) -> bool:
        site = draw.call.site if draw.call is not None else draw.site
        return draw.sampler == self.sampler and self.where in site


def _subclasses(cls) -> list:
    _import_all()
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


def _size(size) -> int:
    return int(np.prod(np.atleast_1d(size), dtype=np.int64)) if size is not None else 1


class _Recording:
    """Mixin for a generator that records its continuous noise draws (the same bit stream as the original)."""

    _spy: NoiseSpy | None = None  # None on a generator spawned from a recording one, until it is wrapped

    def normal(self, loc=0.0, scale=1.0, size=None):
        if self._spy is not None:
            self._spy._draw("normal", float(scale) ** 2, _size(size if size is not None else np.shape(loc)))
        return super().normal(loc, scale, size)

    def laplace(self, loc=0.0, scale=1.0, size=None):
        if self._spy is not None:
            self._spy._draw("laplace", float(scale), _size(size if size is not None else np.shape(loc)))
        return super().laplace(loc, scale, size)


class _RecordingGenerator(_Recording, np.random.Generator):
    pass


class _RecordingSystemGenerator(_Recording, SystemRandomGenerator):
    def __init__(self, bit_generator) -> None:
        # The original's (OS-seeded) stream, not a fresh one: the same kind of generator, so the exact samplers and
        # the Gumbel noise still read the OS CSPRNG for it.
        np.random.Generator.__init__(self, bit_generator)


class NoiseSpy:
    """Records every noise draw, mechanism call and ledger entry from its creation to the end of the test.

    Parameters
    ----------
    monkeypatch : pytest.MonkeyPatch
        Undoes every patch at the end of the test.
    """

    def __init__(self, monkeypatch) -> None:
        self.draws: list[Draw] = []
        self.calls: list[Call] = []
        self.entries: list[tuple[Any, Any]] = []
        self._local = threading.local()
        self._lock = threading.Lock()
        self._monkeypatch = monkeypatch
        self._install(monkeypatch)

    # -- what was recorded ---------------------------------------------------------------------------------------
    def calls_to(self, name: str) -> list[Call]:
        """The calls of ``name``, in order."""
        return [c for c in self.calls if c.name == name]

    def trace(self, original: Callable, name: str | None = None) -> None:
        """Record the calls of one more function of the package (wherever it is bound), under ``name``."""
        patch_everywhere(self._monkeypatch, original, self._traced(name or original.__name__, original))

    def from_noise_stream(self, rng) -> bool:
        """Whether ``rng`` is a generator that ``noise_generator`` handed out during the fit."""
        return getattr(rng, "_spy", None) is self

    # -- recording -------------------------------------------------------------------------------------------------
    def _stack(self) -> list[Call]:
        if not hasattr(self._local, "stack"):
            self._local.stack, self._local.sampling = [], 0
        return self._local.stack

    def _draw(self, sampler: str, param: float | None, size: int) -> None:
        stack = self._stack()
        if self._local.sampling:
            return  # a sampler's own internals, not a draw of its caller
        call = stack[-1] if stack else None
        draw = Draw(sampler, param, int(size), _site(skip_privacy=False), call)
        with self._lock:
            self.draws.append(draw)
        while call is not None:
            call.draws.append(draw)
            call = call.parent

    def _enter(self, name: str, args: dict) -> Call:
        stack = self._stack()
        call = Call(name, args, _site(skip_privacy=True), stack[-1] if stack else None)
        with self._lock:
            self.calls.append(call)
        stack.append(call)
        return call

    def _exit(self, call: Call) -> None:
        stack = self._stack()
        assert stack and stack[-1] is call, "spied calls must nest"
        stack.pop()

    # -- wrappers --------------------------------------------------------------------------------------------------
    def _sampler(self, name: str, original: Callable, param: Callable[[dict], float | None],
                 size: Callable[[dict], int]) -> Callable:
        signature = inspect.signature(original)

        @functools.wraps(original)
        def sampler(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            self._draw(name, param(bound.arguments), size(bound.arguments))
            self._local.sampling += 1
            try:
                return original(*args, **kwargs)
            finally:
                self._local.sampling -= 1
        return sampler

    def _traced(self, name: str, original: Callable, wrap_rng: str | None = None) -> Callable:
        signature = inspect.signature(original)

        @functools.wraps(original)
        def traced(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            if wrap_rng is not None:  # record the continuous draws made from this generator
                bound.arguments[wrap_rng] = self._recording(bound.arguments[wrap_rng])
                args, kwargs = bound.args, bound.kwargs
            call = self._enter(name, dict(bound.arguments))
            try:
                call.result = original(*args, **kwargs)
                return call.result
            finally:
                self._exit(call)
        return traced

    def _recording(self, rng):
        """``rng`` with its continuous draws recorded: the same bit stream, the same kind of generator."""
        if not isinstance(rng, np.random.Generator) or getattr(rng, "_spy", None) is self:
            return rng
        cls = _RecordingSystemGenerator if isinstance(rng, SystemRandomGenerator) else _RecordingGenerator
        out = cls(rng.bit_generator)
        out._spy = self
        return out

    def _gumbel_epsilon(self, arguments: dict) -> float | None:
        """The ε of the exponential mechanism a Gumbel draw serves (that of the innermost call that has one)."""
        call = self._stack()[-1] if self._stack() else None
        while call is not None and "epsilon" not in call.args:
            call = call.parent
        return None if call is None else float(call.args["epsilon"])

    def _install(self, monkeypatch) -> None:
        def arg(name):
            return lambda a: float(a[name])

        def size_of(name):
            return lambda a: _size(a[name])

        samplers_ = [
            (samplers.discrete_gaussian, "discrete_gaussian", arg("sigma2"), size_of("size")),
            (samplers.discrete_laplace, "discrete_laplace", arg("scale"), size_of("size")),
            (samplers.bernoulli_exp, "bernoulli_exp", lambda a: None,
             lambda a: np.broadcast(np.asarray(a["gamma_num"]), np.asarray(a["gamma_den"])).size),
            (randomness.gumbel, "gumbel", self._gumbel_epsilon, size_of("shape")),
            (sketches.sample_phantom_maxima, "phantoms", arg("k"), size_of("size")),
            (frequency_oracle.grr_perturb, "grr", arg("epsilon"), lambda a: len(np.atleast_1d(a["codes"]))),
        ]
        for original, name, param, size in samplers_:
            patch_everywhere(monkeypatch, original, self._sampler(name, original, param, size))
        for module, name in ((mechanisms, "gaussian_mechanism"), (mechanisms, "laplace_mechanism"),
                             (mechanisms, "exponential_mechanism"), (mechanisms, "lazy_exponential_mechanism"),
                             (discretizer, "_dp_quantile"), (parties_module, "_noise_share")):
            original = getattr(module, name, None)
            if original is not None:  # _noise_share is new in issue 38: the spies also run on older trees
                patch_everywhere(monkeypatch, original, self._traced(name, original))
        original_generator = randomness.noise_generator
        patch_everywhere(monkeypatch, original_generator,
                         functools.wraps(original_generator)(lambda random_state: self._recording(
                             original_generator(random_state))))
        # The parties draw their noise from the generator each step is given (protocol B's matrices, and protocol
        # A's shares when they are continuous): every Party method that takes an ``rng`` records from it.
        for method, original in list(vars(parties_module.Party).items()):
            if callable(original) and "rng" in inspect.signature(original).parameters:
                monkeypatch.setattr(parties_module.Party, method, self._traced(method, original, wrap_rng="rng"))
        monkeypatch.setattr(VerticalParty, "run", self._traced("vertical_party", VerticalParty.run))
        monkeypatch.setattr(BaseSynthesizer, "fit", self._traced("fit", BaseSynthesizer.fit))
        # A fit's own budget check sees its ledger before it is stored (and raises on a mismatch): ``check_spend``.
        for cls in _subclasses(BaseSynthesizer):
            if "_check_spend" in vars(cls):
                monkeypatch.setattr(cls, "_check_spend", self._traced("check_spend", vars(cls)["_check_spend"]))
        original_record = ledger_module.PrivacyLedger.record

        @functools.wraps(original_record)
        def record(ledger, entry):
            out = original_record(ledger, entry)
            stack = self._stack()
            with self._lock:
                self.entries.append((ledger, entry))
            if stack:
                stack[-1].entries.append((ledger, entry))
            return out

        monkeypatch.setattr(ledger_module.PrivacyLedger, "record", record)


# -- reconciliation ---------------------------------------------------------------------------------------------------
_MECHANISMS = ("gaussian_mechanism", "laplace_mechanism", "exponential_mechanism", "lazy_exponential_mechanism")
# The noise-adding releases: each one here is of counts (a marginal, group sums, a histogram, a record count) or of
# PPSyn's captured deviation G, all of L1 and L2 sensitivity 1 under add/remove-one (doc/privacy.md, "Neighbouring
# relation"; doc/partition.md for G).  A smaller stated sensitivity means less noise than the release needs, which
# the draws alone cannot show: the ledger then records the smaller noise consistently.
_COUNT_MEASUREMENTS = ("discrete gaussian", "gaussian", "discrete laplace", "laplace", "laplace-threshold",
                       "discrete gaussian (distributed)", "gaussian (distributed)")


@dataclass(frozen=True)
class _Expect:
    """A draw a ledger entry says was made: sampler, parameter and size (None: not recorded, e.g. private)."""

    sampler: str
    param: float | None
    size: int | None
    min_size: int = 0

    def accepts(self, draw: Draw) -> bool:
        return (draw.sampler == self.sampler and (self.size is None or draw.size == self.size)
                and draw.size >= self.min_size and (self.param is None or (
                    draw.param is not None and math.isclose(draw.param, self.param, rel_tol=PARAM_RTOL))))

    def describe(self) -> str:
        param = "" if self.param is None else f"{self.param:.6g}, "
        size = "any" if self.size is None else self.size
        return f"{self.sampler}({param}size={size})"


def _entry_text(entry) -> str:
    scale = "" if entry.scale is None else f", scale={entry.scale:.6g}"
    party = "" if entry.party is None else f", party={entry.party!r}"
    return f"{entry.description!r} ({entry.mechanism}{scale}, n_values={entry.n_values}{party})"


def expected_draws(entry) -> list[_Expect] | None:
    """The draws ``entry`` says were made (``None``: a sub-fit's ledger folded into one entry, reconciled apart).

    One draw per entry, of the entry's scale and ``n_values`` values, except where the ledger cannot record more
    (each exception is the analysis', not a convenience):

    * ``"laplace-threshold"`` (category discovery): the noise covers every value that occurs, a private number;
      the entry records how many were released, at most that;
    * an exponential-mechanism quantile (``DPKBinsDiscretizer``): it chooses among the n + 1 gaps between the
      sorted values, a private number; the entry records the one released edge;
    * a distributed (DMM) measurement of ``HybridSynthesizer``: one share per party of ``details["per_party"]``,
      of σ² = 1/(2ρ_party) (each share alone pays for its party's release, doc/federated.md); protocol B's per-record
      matrices have the public roster's size, which the entry does not record;
    * VertiMRF-FO's GRR entry: one draw per column of the party, whose ε′ and sizes add up to the entry's.
    """
    n, mechanism = entry.n_values, entry.mechanism
    if entry.accounting == "leak":
        return []
    if "n_releases" in entry.details and "zcdp_rho" in entry.details:
        return None
    simple = {"discrete gaussian": ("discrete_gaussian", 2), "gaussian": ("normal", 2),
              "discrete laplace": ("discrete_laplace", 1), "laplace": ("laplace", 1)}
    if mechanism == "grr":
        return [_Expect("grr", None, None)]  # one or more: see _grr_group
    if entry.scale is None and "per_party" not in entry.details:
        raise AssertionError(f"Ledger entry {_entry_text(entry)} records no noise scale: nothing to reconcile it "
                             "with.")
    if mechanism in simple:
        sampler, power = simple[mechanism]
        return [_Expect(sampler, entry.scale ** power, n)]
    if mechanism == "laplace-threshold":
        return [_Expect("discrete_laplace", entry.scale, None, min_size=n)]
    if mechanism == "exponential":
        return [_Expect("gumbel", entry.scale, None if entry.description.startswith("quantile") else n)]
    if mechanism in ("discrete gaussian (distributed)", "gaussian (distributed)"):
        secure = mechanism.startswith("discrete")
        return [_Expect("discrete_gaussian" if secure else "normal", 1.0 / (2.0 * rho), n if secure else None)
                for rho in entry.details["per_party"].values()]
    if mechanism == "dpfm":
        return [_Expect("phantoms", float(entry.details["k_p"]), n)]
    raise AssertionError(f"No reconciliation rule for ledger entry {_entry_text(entry)}: say in "
                         "tests/privacy_spies.py what a release of this mechanism draws.")


def _party_of(call: Call | None) -> str | None:
    party = call.within("vertical_party") if call is not None else None
    return None if party is None else party.args["self"].name


def _fold(entry, spy: NoiseSpy, pool: list[Draw], used_fits: set) -> tuple[list[Draw], list[str]]:
    """Reconcile a sub-fit folded into ``entry`` (VertiMRF's local model: one (ε₀, δ₀) entry for the learner's
    ledger) against the draws of that fit; returns the pool without them, and the problems."""
    details = entry.details
    for fit in spy.calls_to("fit"):
        if id(fit) in used_fits or fit.parent is None or _party_of(fit) != entry.party:
            continue
        used_fits.add(id(fit))
        sub = fit.args["self"].privacy_ledger_
        problems = []
        if len(sub) != details["n_releases"] or not math.isclose(sub.total_zcdp(), details["zcdp_rho"],
                                                                 rel_tol=PARAM_RTOL):
            problems.append(f"folded entry {_entry_text(entry)} claims {details['n_releases']} releases of "
                            f"rho={details['zcdp_rho']:.6g}; the sub-fit's ledger has {len(sub)} of "
                            f"rho={sub.total_zcdp():.6g}")
        if not math.isclose(cdp_rho(entry.epsilon, entry.delta), details["zcdp_rho"], rel_tol=PARAM_RTOL):
            problems.append(f"folded entry {_entry_text(entry)}: (epsilon, delta) is not its rho's conversion")
        inner = set(map(id, fit.draws))
        try:
            reconcile(sub, spy, draws=fit.draws)
        except AssertionError as exc:
            problems.append(f"in the sub-fit folded into {_entry_text(entry)}: {exc}")
        return [d for d in pool if id(d) not in inner], problems
    return pool, [f"folded entry {_entry_text(entry)}: no sub-fit of party {entry.party!r} was seen"]


def _grr_group(entry, pool: list[Draw], used: set) -> list[str]:
    """VertiMRF-FO: the party's GRR draws (one per column) add up to the entry's ε and number of values."""
    group = [d for d in pool if d.sampler == "grr" and id(d) not in used and _party_of(d.call) == entry.party]
    used.update(map(id, group))
    eps, size = math.fsum(d.param for d in group), sum(d.size for d in group)
    if not group or not math.isclose(eps, entry.epsilon, rel_tol=PARAM_RTOL) or size != entry.n_values:
        return [f"ledger entry {_entry_text(entry)} (epsilon={entry.epsilon:.6g}) does not match the party's "
                f"{len(group)} GRR draws (sum of epsilon {eps:.6g}, {size} values)"]
    return []


def _why_uncharged(draw: Draw, ledger) -> str:
    """What the mechanism that made an unmatched draw did with its charge."""
    call = draw.call
    while call is not None and call.name not in _MECHANISMS:
        call = call.parent
    if call is None:
        return "drawn outside any mechanism"
    others = [(lg, e) for lg, e in call.entries if lg is not ledger]
    if others:
        return f"{call.name} charged it to another ledger than the fit's ({others[0][1].description!r})"
    if call.args.get("ledger") is None and not call.entries:
        return f"{call.name} was given no ledger"
    return f"{call.name} charged an entry that pays for another draw"


def _key(entry) -> tuple:
    """An entry's content without its party (a pipeline tags copies of its steps' entries with the step)."""
    return (entry.description, entry.mechanism, entry.accounting, entry.rho, entry.epsilon, entry.delta,
            entry.sensitivity, entry.scale, entry.n_values)


def _match(expectations: list, pool: list[Draw], spy: NoiseSpy, ledger) -> tuple[set, list]:
    """Pair every expected draw with an actual one: first among the draws of the mechanism call that recorded
    that entry (or its copy), then among all of them, those no mechanism charged anywhere first (an entry recorded
    by hand pays for a mechanism called without a ledger); returns the draws used and the expectations left."""
    owner = {}
    for call in spy.calls:
        if call.name in _MECHANISMS:
            for lg, e in call.entries:
                owner.setdefault(id(e), call)
                owner.setdefault(_key(e), call)
    charged = {id(d) for call in spy.calls if call.name in _MECHANISMS and call.entries for d in call.draws}
    pool = sorted(pool, key=lambda d: id(d) in charged)  # stable: draw order otherwise
    used, in_pool = set(), set(map(id, pool))
    for own_call_only in (True, False):
        left = []
        for entry, expect in expectations:
            call = owner.get(id(entry), owner.get(_key(entry)))
            candidates = (call.draws if call is not None else []) if own_call_only else pool
            draw = next((d for d in candidates if id(d) in in_pool and id(d) not in used and expect.accepts(d)),
                        None)
            if draw is None:
                left.append((entry, expect))
            else:
                used.add(id(draw))
        expectations = left
    return used, left


def reconcile(ledger, spy: NoiseSpy, allow: Iterable[Uncharged] = (), draws: list[Draw] | None = None) -> dict:
    """Match the draws with the entries of ``ledger`` one to one; ``AssertionError`` saying what does not match.

    Parameters
    ----------
    ledger : PrivacyLedger
        The fit's ``privacy_ledger_``.
    spy : NoiseSpy
    allow : iterable of Uncharged
        Documented exceptions; each must cover at least one unmatched draw.
    draws : list of Draw, optional
        The draws to account for (default: all the spy saw).

    Returns
    -------
    dict
        ``{sampler: number of draws matched}`` (a folded sub-fit's not counted), plus ``"allowed"``: the draws
        the exceptions covered.
    """
    pool = list(spy.draws if draws is None else draws)
    problems, expectations, used_fits, used = [], [], set(), set()
    for entry in ledger:
        if entry.mechanism in _COUNT_MEASUREMENTS and entry.sensitivity != 1.0:
            problems.append(f"ledger entry {_entry_text(entry)} states sensitivity {entry.sensitivity}: every "
                            "measurement here releases counts (sensitivity 1, doc/privacy.md)")
        rule = expected_draws(entry)
        if rule is None:
            pool, found = _fold(entry, spy, pool, used_fits)
            problems += found
        elif entry.mechanism == "grr":
            problems += _grr_group(entry, pool, used)
        else:
            expectations += [(entry, expect) for expect in rule]
    matched, left = _match(expectations, [d for d in pool if id(d) not in used], spy, ledger)
    used |= matched
    for entry, expect in left:
        near = [d.describe() for d in pool if d.sampler == expect.sampler and id(d) not in used][:3]
        problems.append(f"ledger entry {_entry_text(entry)} has no matching draw of {expect.describe()}: the "
                        f"noise it records was not drawn as recorded" + (f" (unmatched {expect.sampler} draws: "
                                                                         f"{'; '.join(near)})" if near else ""))
    allowed, allow = [], list(allow)
    covered = {a: 0 for a in allow}
    for draw in pool:
        if id(draw) in used:
            continue
        rule = next((a for a in allow if a.covers(draw)), None)
        if rule is not None:
            covered[rule] += 1
            allowed.append(draw)
            continue
        problems.append(f"uncharged draw {draw.describe()}: no entry of the fit's ledger pays for it "
                        f"({_why_uncharged(draw, ledger)})")
    problems += [f"documented exception {a!r} covers no draw (stale?)" for a, n in covered.items() if not n]
    if problems:
        raise AssertionError(f"{len(problems)} mismatch(es) between the noise drawn and the ledger:\n  - "
                             + "\n  - ".join(problems))
    counts: dict = {"allowed": allowed}
    for draw in pool:
        if id(draw) in used:
            counts[draw.sampler] = counts.get(draw.sampler, 0) + 1
    return counts


# -- replay ------------------------------------------------------------------------------------------------------------
# The arguments of a mechanism that carry (or derive from) the private data, or are plumbing: everything else a
# mechanism is given must be a function of public inputs and earlier releases.
_PRIVATE_INPUTS = frozenset({"values", "scores", "upper_bounds", "score", "eligible", "random_state", "ledger",
                             "workers"})


class Replay:
    """Make every mechanism return, in order, what it returned in a recorded fit (no noise is drawn).

    Everything but the mechanisms' private inputs is then post-processing of the recorded releases: a fit on other
    data must call the same mechanisms with the same public arguments (ε, σ, ρ, sensitivity, description, number
    of values) and end with the same model.  A call whose public arguments differ raises ``AssertionError`` naming
    it; so does a call the recorded fit did not make.

    Parameters
    ----------
    monkeypatch : pytest.MonkeyPatch
    recorded : NoiseSpy
        The spy of the recorded fit, no longer installed (record it inside ``monkeypatch.context()``).
    """

    def __init__(self, monkeypatch, recorded: NoiseSpy) -> None:
        self._queues = {name: recorded.calls_to(name) for name in _MECHANISMS}
        self._made = {name: 0 for name in _MECHANISMS}
        for original in (mechanisms.gaussian_mechanism, mechanisms.laplace_mechanism,
                         mechanisms.exponential_mechanism, mechanisms.lazy_exponential_mechanism):
            patch_everywhere(monkeypatch, original, self._replayer(original))

    def unused(self) -> dict:
        """The recorded calls not replayed, per mechanism (a fit that stopped early leaves some)."""
        return {name: len(queue) - self._made[name] for name, queue in self._queues.items()
                if len(queue) > self._made[name]}

    def _replayer(self, original: Callable) -> Callable:
        name, signature = original.__name__, inspect.signature(original)

        @functools.wraps(original)
        def replayed(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            k = self._made[name]
            if k >= len(self._queues[name]):
                raise AssertionError(f"{name} call {k} at {_site(skip_privacy=True)}: the recorded fit made only {k}")
            recorded = self._queues[name][k]
            self._made[name] += 1
            for key, value in bound.arguments.items():
                before = recorded.args[key]
                if key in ("values", "scores", "upper_bounds"):  # private, but their number is public
                    value, before = np.shape(value), np.shape(before)
                elif key in _PRIVATE_INPUTS:
                    continue
                if not value == before:
                    raise AssertionError(f"{name} call {k} at {_site(skip_privacy=True)}: {key}={value!r}, the "
                                         f"recorded fit gave {before!r}: not a function of the releases")
            ledger = bound.arguments.get("ledger")
            if ledger is not None:
                for _, entry in recorded.entries:
                    ledger.record(entry)
            result = recorded.result
            return result.copy() if isinstance(result, np.ndarray) else result
        return replayed
