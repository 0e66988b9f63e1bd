"""Exact, vectorised samplers for the discrete Gaussian and the discrete Laplace.

Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy"
(NeurIPS 2020, arXiv:2004.00010): Algorithm 1 (Bernoulli(exp(-γ))),
Algorithm 2 (discrete Laplace of scale t/s) and Algorithm 3 (discrete
Gaussian by rejection from the discrete Laplace).

Why the output is exact.  Floating-point noise leaks (Mironov 2012), so no
probability here is ever a rounded float.  Every random decision is one of

* a uniform integer below t, by rejection (Lemire's method on 32 bits, or
  modulo on 64 bits with the incomplete last block rejected);
* a fair bit (a raw bit);
* Bernoulli(exp(-γ)) for a rational γ ≥ 0, realised as 1{U < exp(-γ)} for a
  uniform *real* U in [0, 1) whose binary digits are revealed lazily: the
  first 31, 32 or 53 of them come with the words of a batch, and
  ``U < exp(-γ)`` is decided from them whenever a rigorous enclosure
  lo ≤ exp(-γ)·2^k ≤ hi (floats, see :func:`_float_bounds`) puts the whole
  interval [u, u+1) on one side.  Otherwise (probability ~1e-8 per draw) the
  exact scalar fallback :meth:`_LazyUniform.less_exp` keeps comparing *the
  same* U, drawing further digits and bracketing exp(-γ) with the
  ``decimal`` module at doubling precision, until it is decided.  Either way
  the decision is 1{U < exp(-γ)}, an exact Bernoulli(exp(-γ)); floats only
  make the common case fast.  The rigour rests on two facts: the error bound
  on the float value of γ (derived next to each use), and numpy's ``exp``
  being accurate to 2^-40 relative (a few ulp is usual; a test checks it on
  this platform).

Algorithm 1 is that Bernoulli; the count V of Algorithm 2 ("successes of
Bernoulli(exp(-1)) before the first failure") is realised from one lazy
uniform U as V = #{k ≥ 1 : U < exp(-k)}: given U < exp(-(k-1)), U·e^(k-1) is
again uniform, so each threshold is a fresh Bernoulli(exp(-1)) trial.

Parameters are taken exactly as the floats given: ``Fraction(scale) = t/s``
with s a power of two, ``Fraction(sigma2) = a/b``.
"""
from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from fractions import Fraction
from functools import lru_cache
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike

from ..utils import check_random_state
from .randomness import random_uint64

__all__ = ["bernoulli_exp", "discrete_gaussian", "discrete_laplace"]

# ------------------------------------------------------------------ knobs
#: Safety factor on every float error bound (the bounds below are rigorous at
#: factor 1; 16 also absorbs the rounding of the bound arithmetic itself).
#: Tests raise it to push many decisions into the exact fallback.
_ERROR_MARGIN_SCALE = 16.0
#: Extra width (in units of the uniform's last bit) of the ambiguous window of
#: the geometric count V; 0 is exact.  Tests raise it to exercise the fallback.
_GEOMETRIC_SLACK = 0

_MAX_SCALE = 2.0**52    # t ≤ 2^53, so U < t is exact in float64 and X = U + tV fits int64
_MAX_SIGMA2 = 2.0**100  # σ ≤ 2^50
_MIN_SIGMA2_FAST = 2.0**-400  # below, floats underflow in γ: every acceptance goes to the exact fallback
_BATCH = 1 << 16        # trials per round: keeps the temporaries in cache
_GAUSS_TABLE_MAX = 1 << 17

_U = 2.0**-53           # unit roundoff of float64
_EXP_REL_ERR = 2.0**-40  # assumed bound on numpy's exp relative error (it is a few ulp = 2^-52)
_TINY = 2.0**-900       # absolute slack for exp results near/below the subnormal range
_M32 = np.uint64(0xFFFFFFFF)
_INT64_MAX = 2**63 - 1
_SEVEN_TENTHS = Fraction(7, 10)  # > ln 2, so γ ≥ 0.7k implies exp(-γ) < 2^-k


# ------------------------------------------------------------- exact core
def _exp_neg_bracket(gamma: Fraction, prec: int) -> tuple[Fraction, Fraction]:
    """Rationals lo ≤ exp(-γ) ≤ hi, about ``prec`` significant decimal digits apart."""
    num, den = Decimal(gamma.numerator), Decimal(gamma.denominator)
    g_lo = Context(prec=prec, rounding=ROUND_FLOOR).divide(num, den)    # g_lo ≤ γ
    g_hi = Context(prec=prec, rounding=ROUND_CEILING).divide(num, den)  # g_hi ≥ γ
    ctx = Context(prec=prec)  # ROUND_HALF_EVEN, in which Decimal.exp is correctly rounded
    # exp is within half an ulp; two ulps outward keep the bracket even for a 1-ulp result.
    lo = ctx.next_minus(ctx.next_minus(ctx.exp(ctx.minus(g_hi))))
    hi = ctx.next_plus(ctx.next_plus(ctx.exp(ctx.minus(g_lo))))
    return max(Fraction(lo), Fraction(0)), Fraction(hi)


class _LazyUniform:
    """A uniform real U in [0, 1) of which the first ``k`` bits ``u`` are known.

    So U ∈ [u/2^k, (u+1)/2^k); :meth:`extend` reveals 64 more bits.
    """

    __slots__ = ("u", "k", "rng")

    def __init__(self, u: int, k: int, rng) -> None:
        self.u, self.k, self.rng = int(u), int(k), rng

    def extend(self) -> None:
        self.u = (self.u << 64) | int(random_uint64(self.rng, 1)[0])
        self.k += 64

    def less_exp(self, gamma: Fraction) -> bool:
        """Decide U < exp(-γ) exactly, revealing more bits of U as needed.

        Terminates with probability 1: for rational γ > 0, exp(-γ) is
        irrational (Lindemann), so it differs from U and each refinement
        (more bits of U, or more digits of exp(-γ)) decides with positive
        probability.
        """
        if gamma <= 0:
            return True  # exp(0) = 1 > U
        prec = max(30, (self.k * 31) // 100 + 20)  # enough digits to resolve 2^-k
        while True:
            if gamma >= _SEVEN_TENTHS * self.k:  # exp(-γ) < 2^-k: decided unless the bits so far are all 0
                if self.u > 0:
                    return False  # U ≥ 2^-k > exp(-γ)
                self.extend()
                continue
            lo, hi = _exp_neg_bracket(gamma, prec)
            scale = 1 << self.k
            if (self.u + 1) * lo.denominator <= lo.numerator * scale:
                return True  # U < (u+1)/2^k ≤ lo ≤ exp(-γ)
            if self.u * hi.denominator >= hi.numerator * scale:
                return False  # U ≥ u/2^k ≥ hi ≥ exp(-γ)
            if (hi - lo) * scale < 1:
                self.extend()  # the bracket is finer than what we know of U
            else:
                prec *= 2

    def geometric(self, k0: int) -> int:
        """V = #{k ≥ 1: U < exp(-k)}, given that U < exp(-k) is already known for k < k0."""
        k = k0
        while self.less_exp(Fraction(k)):
            k += 1
        return k - 1


def _fallback_less_exp(u: np.ndarray, nbits: int, gammas, rng) -> np.ndarray:
    """Exact decisions for the (rare) ambiguous elements, in index order (reproducible)."""
    return np.fromiter((_LazyUniform(int(ui), nbits, rng).less_exp(g) for ui, g in zip(u, gammas)),
                       dtype=bool, count=len(u))


# ------------------------------------------------------------ float bounds
def _float_bounds(gamma_hat: np.ndarray, gamma_err, nbits: int) -> tuple[np.ndarray, np.ndarray]:
    """Floats lo, hi with lo ≤ exp(-γ)·2^nbits ≤ hi whenever |γ - γ_hat| ≤ gamma_err.

    With E = gamma_err ≤ 1/2 and p_hat = fl(exp(-γ_hat)):
    |exp(-γ) - exp(-γ_hat)| ≤ (e^E - 1)·exp(-γ_hat) ≤ 2E·exp(-γ_hat), and
    |exp(-γ_hat) - p_hat| ≤ 2^-40·p_hat (+ an absolute 2^-1000 or so for
    underflowing results).  Scaling by 2^nbits is exact.  The bound is then
    multiplied by ``_ERROR_MARGIN_SCALE`` (16), which also covers the
    relative 2^-53 roundings in forming x ± e.  For E > 1/2 (only when γ is
    astronomically large): if γ_hat - 2E > 1000 then exp(-γ) < 2^-1400, so
    hi = 2^-900 is safe; otherwise nothing is claimed (lo = 0, hi = 2^nbits).
    """
    x = np.exp(-gamma_hat)
    x *= 2.0**nbits
    e = x * (_ERROR_MARGIN_SCALE * (2.0 * gamma_err + _EXP_REL_ERR))
    e += _TINY
    lo, hi = x - e, x + e
    bad = np.asarray(gamma_err > 0.5)
    if bad.any():
        bad = np.broadcast_to(bad, lo.shape)
        far = bad & (gamma_hat - 2.0 * gamma_err > 1000.0)
        lo[bad] = 0.0
        hi[far] = _TINY
        hi[bad & ~far] = 2.0**nbits
    return lo, hi


def _integer_thresholds(lo: np.ndarray, hi: np.ndarray, nbits: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer form of an enclosure: accept iff u < A, ambiguous iff A ≤ u < A + W.

    u + 1 ≤ lo  ⟺  u < floor(lo);  u ≥ hi  ⟺  u ≥ ceil(hi)  (u an integer).
    """
    a = np.floor(np.clip(lo, 0.0, 2.0**nbits))
    r = np.ceil(np.clip(hi, 0.0, 2.0**nbits + 1))
    return a.astype(np.uint64), np.maximum(r - a, 0.0).astype(np.uint64)


def _table_decide(u: np.ndarray, idx: np.ndarray, a_tab: np.ndarray, w_tab: np.ndarray,
                  w_max: int) -> tuple[np.ndarray, np.ndarray]:
    """``accept = u < A[idx]``, ``ambiguous = A[idx] ≤ u < A[idx] + W[idx]`` (unsigned wrap trick)."""
    a = np.take(a_tab, idx)
    accept = u < a
    diff = u - a  # wraps to a huge value where u < a
    amb = diff < np.uint64(w_max)
    if w_max > 1 and amb.any():  # only with a raised margin: narrow down to each entry's own width
        amb &= diff < np.take(w_tab, idx)
    return accept, amb


# ---------------------------------------------------------- random helpers
def _as_rng(random_state):
    # None stays None so that random_uint64 reads the OS CSPRNG.
    if random_state is None or isinstance(random_state, np.random.Generator):
        return random_state
    return check_random_state(random_state)


def _shape(size) -> tuple[int, ...]:
    if isinstance(size, (tuple, list)):
        shape = tuple(int(s) for s in size)
    elif isinstance(size, Integral):
        shape = (int(size),)
    else:
        raise TypeError(f"size must be an int or a tuple of ints, got {size!r}.")
    if any(s < 0 for s in shape):
        raise ValueError(f"size must be non-negative, got {size!r}.")
    return shape


@lru_cache(maxsize=None)
def _geometric_thresholds(nbits: int) -> np.ndarray:
    """K_k = floor(exp(-k)·2^nbits) for k = 1, 2, ... up to the first 0 (exact)."""
    out, k = [], 1
    while True:
        lo, hi = _exp_neg_bracket(Fraction(k), 60)
        a, b = math.floor(lo * 2**nbits), math.floor(hi * 2**nbits)
        if a != b:  # cannot happen (exp(-k)·2^n is irrational and not that close to an integer)
            raise AssertionError("geometric threshold not resolved")
        out.append(a)
        if a == 0:
            return np.array(out, dtype=np.uint64)
        k += 1


def _geometric(v: np.ndarray, nbits: int, rng) -> tuple[np.ndarray, bool]:
    """V = #{k ≥ 1 : U < exp(-k)} for lazy uniforms U whose first ``nbits`` bits are ``v``.

    U < exp(-k) is certain iff v < K_k, impossible iff v > K_k (exp(-k)·2^n
    is irrational), so V = #{k: v < K_k} unless v equals the first threshold
    it is not below; those go to the exact fallback.  Returns V (int64) and
    whether the fallback ran (only then can V exceed ``len(K) - 1``).
    """
    K = _geometric_thresholds(nbits)
    head = 6  # P(V ≥ 6) = e^-6: the rest go through the full table
    V = (v < K[0]).view(np.uint8).copy()
    for k in range(1, head):
        below = v < K[k]
        V += below.view(np.uint8)
    amb = v == np.take(K, V)
    if below.any():
        tail = np.flatnonzero(below)
        vt = v[tail]
        Vt = (vt[:, None] < K[None, :]).sum(axis=1).astype(np.uint8)
        V[tail] = Vt
        amb[tail] = vt == np.take(K, Vt)
    V = V.astype(np.int64)
    if _GEOMETRIC_SLACK:  # test knob: widen the ambiguous window around every threshold
        s = np.uint64(_GEOMETRIC_SLACK)
        amb |= np.searchsorted(K[::-1], v - np.minimum(v, s), side="left") \
            != np.searchsorted(K[::-1], v + s, side="right")
    if not amb.any():
        return V, False
    for i in np.flatnonzero(amb):
        vi = int(v[i])
        k0 = int(np.count_nonzero(K > vi + _GEOMETRIC_SLACK)) + 1  # U < exp(-k) certain for k < k0
        V[i] = _LazyUniform(vi, nbits, rng).geometric(k0)
    return V, True


# ------------------------------------------------------ discrete Laplace
class _LaplaceParams:
    """Everything about DLap(t/s) that does not depend on the draws (cached per (t, s))."""

    def __init__(self, t: int, s: int) -> None:
        self.t, self.s = t, s
        self.shift = s.bit_length() - 1  # s is a power of two: Y = X >> shift
        self.inv_t = 1.0 / t
        self.table = None
        self.hi_table = None
        if 1 < t < 2**32:
            self.lemire_thr = (2**32) % t  # Lemire: reject the 2^32 mod t low products
        if 1 < t <= 1 << 16:
            # exp(-U/t) for every U: g = fl(U·fl(1/t)) has |g - U/t| ≤ 2·2^-53·(U/t) < 2^-50.
            g = np.arange(t, dtype=np.float64) * self.inv_t
            self.table = _integer_thresholds(*_float_bounds(g, 2.0**-50, 32), 32)
            self.w_max = int(self.table[1].max())
        elif t > 1 << 16:
            # exp(-U/t) = exp(-j·2^L/t)·exp(-r/t), U = j·2^L + r, j < 2^16, r/t < 2^-15:
            # a table for the first factor, 1 - g + g²/2 (error ≤ g³/6 < 2^-47) for the second.
            self.L = t.bit_length() - 16
            j = np.arange((t >> self.L) + 1, dtype=np.float64)
            g = j * (2.0**self.L * self.inv_t)  # exact up to 2 roundings: error < 2^-50·(1 + g)
            self.hi_table = np.exp(-g) * 2.0**32
            # relative error of T[j]·poly: exp 2^-40 + γ error 2^-49 + poly 2^-47 + roundings < 2^-39
            self.rel = _ERROR_MARGIN_SCALE * 2.0**-39
            if t >= 2**32:
                self.mod_limit = 2**64 - (2**64) % t  # uniform below t by rejection on 64-bit words
        # acceptance of one trial: P(D = 1)·(1 - P(Y = 0)/2), used to size rounds
        p_d = 1.0 if t == 1 else (1 - math.exp(-1.0)) / (t * -math.expm1(-1.0 / t))
        self.accept_rate = p_d * (1 - 0.5 * -math.expm1(-s / t))

    def d_step_float(self, U: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bernoulli(exp(-U/t)) on 32-bit uniform prefixes d, for t > 2^16."""
        j = U >> np.uint64(self.L)
        r = (U & np.uint64((1 << self.L) - 1)).astype(np.float64)
        r *= self.inv_t
        x = (1.0 - r * (1.0 - 0.5 * r)) * np.take(self.hi_table, j)
        df = d.astype(np.float64)
        e = x * self.rel
        accept = df + 1.0 <= x - e
        amb = ~accept & (df < x + e)
        return accept, amb


@lru_cache(maxsize=32)
def _laplace_params(t: int, s: int, knobs: tuple) -> _LaplaceParams:
    return _LaplaceParams(t, s)


def _dlap_trials(rng, m: int, P: _LaplaceParams) -> tuple[np.ndarray, np.ndarray | None]:
    """One round of m trials of CKS Algorithm 2; returns the accepted values (and 31 spare bits each).

    A trial: U uniform in {0..t-1}; D ~ Bernoulli(exp(-U/t)), restart if 0;
    V = geometric count; X = U + tV; Y = X >> log2(s); sign bit B; restart if
    B = 1 and Y = 0; return (1 - 2B)·Y.
    """
    t = P.t
    if t == 1:  # U = 0 and D = 1 always
        U = None
    elif t < 2**32:
        w = random_uint64(rng, m)
        prod = (w >> np.uint64(32)) * np.uint64(t)  # Lemire: U = floor(r·t / 2^32), r the high 32 bits
        U = prod >> np.uint64(32)
        d = w & _M32                                 # low 32 bits: the lazy uniform of D
        if P.table is not None:
            accept, amb = _table_decide(d, U, P.table[0], P.table[1], P.w_max)
        else:
            accept, amb = P.d_step_float(U, d)
        if P.lemire_thr:
            ok = (prod & _M32) >= np.uint64(P.lemire_thr)
            accept &= ok
        if amb.any():
            if P.lemire_thr:
                amb &= ok
            idx = np.flatnonzero(amb)
            accept[idx] = _fallback_less_exp(d[idx], 32, (Fraction(int(x), t) for x in U[idx]), rng)
        U = U[accept]
    else:  # big t: U from a whole word, D from the high half of a second one, V and B from its low half
        w1 = random_uint64(rng, m)
        w2 = random_uint64(rng, m)
        U = w1 % np.uint64(t)
        d = w2 >> np.uint64(32)
        accept, amb = P.d_step_float(U, d)
        if P.mod_limit < 2**64:
            ok = w1 < np.uint64(P.mod_limit)
            accept &= ok
            amb &= ok
        if amb.any():
            idx = np.flatnonzero(amb)
            accept[idx] = _fallback_less_exp(d[idx], 32, (Fraction(int(x), t) for x in U[idx]), rng)
        U = U[accept]
        w2 = w2[accept]
        low = w2 & _M32
        V, fell_back = _geometric(low >> np.uint64(1), 31, rng)
        return _finish(U, V, fell_back, low & np.uint64(1), P, None)
    w2 = random_uint64(rng, m if U is None else U.size)
    V, fell_back = _geometric(w2 >> np.uint64(32), 32, rng)
    low = w2 & _M32
    return _finish(U, V, fell_back, low & np.uint64(1), P, low >> np.uint64(1))


def _finish(U, V, fell_back: bool, B, P: _LaplaceParams, spare):
    """X = U + tV, Y = X >> shift, sign B, reject (B = 1, Y = 0)."""
    t = P.t
    big = None
    vmax = (_INT64_MAX - (t - 1)) // t
    if fell_back and int(V.max()) > vmax:  # X would overflow int64 (V is small unless the fallback ran)
        big = np.flatnonzero(V > vmax)
        big_y = [((0 if U is None else int(U[i])) + t * int(V[i])) >> P.shift for i in big]
        if max(big_y) > _INT64_MAX:  # |output| ≥ 2^63: probability < exp(-2^63/scale) ≤ e^-2048
            raise OverflowError("A discrete Laplace draw exceeds the int64 range.")
        V[big] = 0
    X = V if t == 1 else U.view(np.int64) + V * t
    if P.shift >= 63:
        Y = np.zeros_like(X)
    elif P.shift:
        Y = X >> P.shift
    else:
        Y = X
    if big is not None:
        Y[big] = big_y
    B = B.view(np.int64)
    keep = (Y | (B ^ 1)).astype(bool)   # drop B = 1, Y = 0 (else 0 would be twice as likely)
    Z = (Y ^ -B) + B                    # two's complement: -Y where B = 1
    return Z[keep], None if spare is None else spare[keep]


def _fill(shape: tuple[int, ...], rate: float, trials) -> np.ndarray:
    """Run rounds of ``trials(m)`` until prod(shape) accepted values are collected, in order."""
    n = math.prod(shape)
    out = np.empty(n, dtype=np.int64)
    filled, tried, got = 0, 0, 0
    while filled < n:
        est = max(got / tried if tried > 1000 else rate, 0.01)
        m = min(_BATCH, int((n - filled) / est * 1.03) + 32)
        z = trials(m)
        tried += m
        got += z.size
        take = min(z.size, n - filled)
        out[filled:filled + take] = z[:take]
        filled += take
    return out.reshape(shape)


def _knobs() -> tuple:
    return (_ERROR_MARGIN_SCALE, _GEOMETRIC_SLACK)


def discrete_laplace(scale: float, size, random_state=None) -> np.ndarray:
    """Exact draws from the discrete Laplace distribution, ``P(y) ∝ exp(-|y|/scale)`` on the integers.

    CKS Algorithm 2 with the float ``scale`` taken exactly as the dyadic
    rational t/s = ``Fraction(scale)``; see the module docstring for why the
    draws are exact.

    Parameters
    ----------
    scale : float
        The scale b > 0 (at most 2^52).  The variance is 2e^{-1/b}/(1-e^{-1/b})².
    size : int or tuple of ints
        Output shape.
    random_state : None, int, numpy.random.Generator, ...
        ``None`` (the default, for releases) reads raw bits from the OS
        CSPRNG; a seed or generator makes the draws reproducible.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``size``.

    Examples
    --------
    >>> from skdpsynth.privacy.samplers import discrete_laplace
    >>> z = discrete_laplace(2.5, (2, 3), random_state=0)
    >>> z.shape, z.dtype
    ((2, 3), dtype('int64'))
    >>> bool((z == discrete_laplace(2.5, (2, 3), random_state=0)).all())
    True
    """
    scale = _check_positive("scale", scale, _MAX_SCALE)
    shape = _shape(size)
    rng = _as_rng(random_state)
    frac = Fraction(scale)
    P = _laplace_params(frac.numerator, frac.denominator, _knobs())
    return _fill(shape, P.accept_rate, lambda m: _dlap_trials(rng, m, P)[0])


# ------------------------------------------------------ discrete Gaussian
class _GaussParams:
    """Algorithm 3 constants for σ² = a/b and the acceptance table (cached per σ²)."""

    def __init__(self, sigma2: float) -> None:
        frac = Fraction(sigma2)
        self.sigma2, self.a, self.b = sigma2, frac.numerator, frac.denominator
        self.t = t = math.isqrt(self.a // self.b) + 1  # floor(σ) + 1 = isqrt(floor(σ²)) + 1
        self.lap = _LaplaceParams(t, 1)
        self.q = sigma2 / t
        self.inv2s2 = 1.0 / (2.0 * sigma2)
        self.inv_t = 1.0 / t
        self.fast = sigma2 >= _MIN_SIGMA2_FAST
        # For y ≥ y_tail = ceil(q) + 10t: y - σ²/t ≥ 10t > 10σ, so γ > 50 and exp(-γ)·2^31 < 1.
        self.y_tail = -(-self.a // (self.b * t)) + 10 * t
        n = min(self.y_tail + 1, _GAUSS_TABLE_MAX)
        y = np.arange(n, dtype=np.float64)
        lo, hi = self.float_bounds(y)
        a_tab, w_tab = _integer_thresholds(lo, hi, 31)
        if n == self.y_tail + 1:
            a_tab[-1], w_tab[-1] = 0, 1  # the tail entry: reject unless the 31 bits are all 0
        self.table = (a_tab, w_tab)
        self.w_max = int(w_tab.max())
        # P(accept) ≈ Σ exp(-y²/2σ²) / (Σ exp(-|y|/t)·exp(σ²/2t²)) · P(DLap trial)
        z_g = math.sqrt(2 * math.pi * sigma2) if sigma2 > 4 else sum(
            math.exp(-k * k / (2 * sigma2)) for k in range(-40, 41))
        z_l = (1 + math.exp(-1 / t)) / -math.expm1(-1 / t)
        self.accept_rate = self.lap.accept_rate * min(1.0, z_g / z_l * math.exp(-sigma2 / (2 * t * t)))

    def float_bounds(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Enclosure of exp(-γ(y))·2^31, γ(y) = (y - σ²/t)²/(2σ²), y = |Y| as float64.

        Error of γ_hat = fl(fl(d)²·fl(1/(2σ²))), d = fl(y - fl(σ²/t)), from the
        exact integers: |d - d*| ≤ δ = 2.01u(|Y| + q) (conversion of |Y|, σ²/t and
        the subtraction, u = 2^-53), hence |d² - d*²| ≤ δ(2|d*| + δ) ≤ 4.03u(|Y| + q)²
        and (|Y| + q)²/(2σ²) = γ + 2|Y|/t exactly; with 3 more roundings,
        |γ_hat - γ| ≤ 7.1u·γ_hat + 8.1u·|Y|/t ≤ 10u(γ_hat + |Y|/t).  No
        underflow or overflow occurs for 2^-400 ≤ σ² ≤ 2^100 and |Y| < 2^63.
        """
        if not self.fast:  # claim nothing: the exact fallback decides every draw
            return np.zeros_like(y), np.full_like(y, 2.0**31)
        d = y - self.q
        g = d * d
        g *= self.inv2s2
        err = (g + y * self.inv_t) * (10 * _U)
        return _float_bounds(g, err, 31)

    def gamma(self, y: int) -> Fraction:
        """The exact γ(y) = (y·b·t - a)² / (2·a·b·t²)."""
        a, b, t = self.a, self.b, self.t
        return Fraction((y * b * t - a) ** 2, 2 * a * b * t * t)


@lru_cache(maxsize=16)
def _gauss_params(sigma2: float, knobs: tuple) -> _GaussParams:
    return _GaussParams(sigma2)


def _dgauss_trials(rng, m: int, P: _GaussParams) -> np.ndarray:
    """One round of m trials of CKS Algorithm 3: Y ~ DLap(t), keep with prob. exp(-(|Y| - σ²/t)²/(2σ²))."""
    Y, c = _dlap_trials(rng, m, P.lap)
    if c is None:  # the big-t layout has no spare bits
        c = random_uint64(rng, Y.size) >> np.uint64(33)
    y = np.abs(Y)
    a_tab, w_tab = P.table
    n_tab = a_tab.size
    if n_tab == P.y_tail + 1:
        accept, amb = _table_decide(c, np.minimum(y, P.y_tail), a_tab, w_tab, P.w_max)
    else:  # σ too large for a full table: floats for the |Y| beyond it
        inside = y < n_tab
        accept, amb = _table_decide(c, np.where(inside, y, 0), a_tab, w_tab, P.w_max)
        out = np.flatnonzero(~inside)
        if out.size:
            lo, hi = P.float_bounds(y[out].astype(np.float64))
            cf = c[out].astype(np.float64)
            acc_o = cf + 1.0 <= lo
            accept[out] = acc_o
            amb[out] = ~acc_o & (cf < hi)
    if amb.any():
        idx = np.flatnonzero(amb)
        accept[idx] = _fallback_less_exp(c[idx], 31, (P.gamma(int(v)) for v in y[idx]), rng)
    return Y[accept]


def discrete_gaussian(sigma2: float, size, random_state=None) -> np.ndarray:
    """Exact draws from the discrete Gaussian, P(y) ∝ exp(-y²/(2σ²)) on the integers.

    CKS Algorithm 3 (rejection from the discrete Laplace of scale
    t = floor(σ) + 1) with ``sigma2`` taken exactly as the rational
    ``Fraction(sigma2)``; see the module docstring for why the draws are
    exact.  The variance is below σ², but only by a relative 2e-7 at σ² = 1
    and 2e-32 at σ² = 4.

    Parameters
    ----------
    sigma2 : float
        The parameter σ² > 0 (at most 2^100).
    size : int or tuple of ints
        Output shape.
    random_state : None, int, numpy.random.Generator, ...
        ``None`` (the default, for releases) reads raw bits from the OS
        CSPRNG; a seed or generator makes the draws reproducible.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``size``.

    Examples
    --------
    >>> from skdpsynth.privacy.samplers import discrete_gaussian
    >>> z = discrete_gaussian(4.0, 5, random_state=0)
    >>> z.shape, z.dtype
    ((5,), dtype('int64'))
    >>> bool((z == discrete_gaussian(4.0, 5, random_state=0)).all())
    True
    """
    sigma2 = _check_positive("sigma2", sigma2, _MAX_SIGMA2)
    shape = _shape(size)
    rng = _as_rng(random_state)
    P = _gauss_params(sigma2, _knobs())
    return _fill(shape, P.accept_rate, lambda m: _dgauss_trials(rng, m, P))


# ------------------------------------------------------ Bernoulli(exp(-γ))
def bernoulli_exp(gamma_num: ArrayLike, gamma_den: ArrayLike, random_state=None) -> np.ndarray:
    """Exact Bernoulli(exp(-γ)) draws for rational γ = gamma_num / gamma_den, elementwise.

    Decided as 1{U < exp(-γ)} for a lazily revealed uniform U (53 bits
    first, then the exact fallback), as in CKS Algorithm 1's output
    distribution; see the module docstring.

    Parameters
    ----------
    gamma_num, gamma_den : array-like of int
        Non-negative numerators and positive denominators (broadcast
        together; each within the int64 or uint64 range).
    random_state : None, int, numpy.random.Generator, ...
        ``None`` reads raw bits from the OS CSPRNG.

    Returns
    -------
    numpy.ndarray
        bool array of the broadcast shape.

    Examples
    --------
    >>> from skdpsynth.privacy.samplers import bernoulli_exp
    >>> bernoulli_exp([0, 0], [1, 5], random_state=0).tolist()  # γ = 0: always True
    [True, True]
    >>> bool(bernoulli_exp(10**6, 1, random_state=0))  # exp(-10^6): (almost) never
    False
    """
    num, den = np.asarray(gamma_num), np.asarray(gamma_den)
    for name, arr in (("gamma_num", num), ("gamma_den", den)):
        if arr.dtype.kind not in "iu" and arr.size:
            raise ValueError(f"{name} must be an array of integers, got dtype {arr.dtype}.")
    if (num < 0).any():
        raise ValueError("gamma_num must be non-negative.")
    if (den <= 0).any():
        raise ValueError("gamma_den must be positive.")
    num, den = np.broadcast_arrays(num.astype(np.int64) if num.size == 0 else num, den)
    shape = num.shape
    num, den = num.ravel(), den.ravel()
    rng = _as_rng(random_state)
    u = random_uint64(rng, num.size) >> np.uint64(11)
    # γ_hat = fl(fl(num)/fl(den)): three roundings, |γ_hat - γ| ≤ 3.01u·γ ≤ 4u·γ_hat.
    g = num.astype(np.float64) / den.astype(np.float64)
    lo, hi = _float_bounds(g, g * (4 * _U), 53)
    uf = u.astype(np.float64)
    accept = uf + 1.0 <= lo
    amb = ~accept & (uf < hi)
    idx = np.flatnonzero(amb)
    if idx.size:
        accept[idx] = _fallback_less_exp(u[idx], 53, (Fraction(int(num[i]), int(den[i])) for i in idx), rng)
    return accept.reshape(shape)


def _check_positive(name: str, value, upper: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    if value > upper:
        raise ValueError(f"{name} must be at most {upper:g}, got {value!r}.")
    return value
