"""Junction-tree tables kept exponentiated from one mirror-descent step to the next.

Belief propagation needs every table's exponential; on this project's machine NumPy's float64 ``exp`` costs
5 ns a cell (no AVX-512), the largest single part of an iteration on large models.  A mirror-descent step
moves a log-table by small broadcast gradient terms, so the step can be made on the exponential instead:

    exp(θ − α Σ_k g_k) = exp(θ) · Π_k exp(−α g_k),

an exponential of each small term and one multiplication per cell, after which belief propagation has the
table's exponential at hand (:func:`~skdpsynth.graphical.inference.belief_propagation` takes either kind).

An :class:`ExpTable` holds ``exp(θ) = values · e^offset`` with the logs of its largest and smallest values.
A cell must never underflow: one lost to zero would stay zero whatever later steps did, where its log-table
would have come back.  So a table whose cells could spread over more than ``e^600`` (1e-261, far above the
smallest normal double) stays a log-table, or becomes one again; and small tables stay log-tables, where the
exponential costs less than the bookkeeping.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import tables

__all__ = ["ExpTable", "exponentiate", "step_table"]

_MIN_CELLS = 2**14
_SPREAD_LIMIT = 600.0


class ExpTable(NamedTuple):
    """The exponential of a log-table, ``values · e^offset``, with ``low`` and ``high`` the logs of the
    smallest and the largest of ``values`` (the values are never written to: steps make new ones).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical.exp_tables import exponentiate
    >>> table = exponentiate(np.log(np.arange(1.0, 2**15 + 1)).reshape(2**7, 2**8))
    >>> round(table.offset, 4), round(table.low, 4), table.high     # log(32768), log(1/32768), log(1)
    (10.3972, -10.3972, 0.0)
    >>> np.allclose(table.log(), np.log(np.arange(1.0, 2**15 + 1)).reshape(2**7, 2**8))
    True
    """

    values: np.ndarray
    offset: float
    low: float
    high: float

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    def log(self) -> np.ndarray:
        """The log-table (a new array: a pass with ``log``)."""
        return np.log(self.values) + self.offset


def exponentiate(table: np.ndarray) -> np.ndarray | ExpTable:
    """``table``'s exponential as an :class:`ExpTable`, or ``table`` itself where it stays a log-table
    (fewer than 16 384 cells, or a spread of more than 600).

    A broadcast view stays one: its exponential is taken over the cells it views.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical.exp_tables import ExpTable, exponentiate
    >>> isinstance(exponentiate(np.zeros((200, 100))), ExpTable), isinstance(exponentiate(np.zeros(10)), ExpTable)
    (True, False)
    >>> wide = np.zeros((200, 100)); wide[0, 0] = -1000.0
    >>> exponentiate(wide) is wide       # e^-1000 would underflow
    True
    """
    if table.size < _MIN_CELLS:
        return table
    viewed = tables.compact(table)
    high, low = tables.maximum(viewed), tables.minimum(viewed)
    if not (np.isfinite(low) and np.isfinite(high) and high - low <= _SPREAD_LIMIT):
        return table
    values = tables.exp_shifted(viewed, high)
    return ExpTable(np.broadcast_to(values, table.shape) if values.shape != table.shape else values,
                    high, low - high, 0.0)


def step_table(table: np.ndarray | ExpTable, size: float, terms: list) -> np.ndarray | ExpTable:
    """``table − size · Σ terms`` (:func:`.tables.step`) for a log-table, or its exponential for an
    :class:`ExpTable`: the values times ``exp(−size · term)`` for every term, renormalised so that the
    largest value before the step is 1.  An :class:`ExpTable` whose cells could spread too far becomes a
    log-table.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpsynth.graphical.exp_tables import exponentiate, step_table
    >>> theta = np.linspace(-3.0, 0.0, 2**14).reshape(2**7, 2**7)
    >>> gradient = [np.linspace(0.0, 1.0, 2**7)[:, None], np.ones((1, 2**7))]
    >>> stepped = step_table(exponentiate(theta), 0.5, gradient)
    >>> np.allclose(stepped.log(), theta - 0.5 * (gradient[0] + gradient[1]))
    True
    """
    if not isinstance(table, ExpTable):
        return tables.step(table, size, terms)
    terms = [tables.compact(t) for t in terms]
    # Where the cells can go, relative to the largest before the step (renormalised to 1).
    lowest = table.low - table.high - size * sum(float(t.max()) for t in terms)
    highest = -size * sum(float(t.min()) for t in terms)
    if not (-_SPREAD_LIMIT <= lowest and highest <= _SPREAD_LIMIT):   # (also false for nan)
        return tables.step(table.log(), size, terms)
    factors = [np.exp(-size * t) for t in terms]
    smallest = min(range(len(factors)), key=lambda k: factors[k].size)
    factors[smallest] *= math.exp(-table.high)
    values, high, low, _ = tables.product(table.values, factors, smallest=True)
    if not low > 0.0:   # cannot happen within the limits (kept as the guard of the rule above)
        return tables.step(table.log(), size, terms)
    return ExpTable(values, table.offset + table.high, math.log(low), math.log(high))
