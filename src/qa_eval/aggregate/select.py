"""``describe`` of values read block by block (:func:`describe_blocks`): the same statistics, bit
for bit, holding one block at a time instead of every value. The sum is exact (ints added as
ints, floats by ``math.fsum``, as ``describe``), min and max are the first of the smallest and
largest in the values' order, and the median is the value at its rank in the stable sort, found
by counting the values' 64-bit keys 16 bits at a time (four passes), then the value at that rank
among those with its key, in their order (``0.0`` and ``-0.0`` tie, as they sort)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from .stats import describe_sorted, int_mean, median_sorted, nearest_float, stats_block

__all__ = ["describe_blocks"]

Blocks = Callable[[], Iterator[Any]]
"""Gives the values again, in order, as numpy arrays of int64 or of float64 (one kind)."""


def describe_blocks(
    blocks: Blocks, n: int, skipped: int = 0, zeros: bool = False, failed: int = 0
) -> dict[str, Any]:
    """``describe`` of the ``n`` values ``blocks`` gives (all ints or all floats), bit for bit."""
    import numpy as np

    if n == 0:
        return describe_sorted([], None, skipped, zeros, failed)
    integer = None
    low: Any = None
    high: Any = None
    exact = 0
    for block in blocks():
        if not len(block):
            continue
        integer = block.dtype.kind == "i"
        smallest, largest = block.min(), block.max()
        if low is None or smallest < low:  # (strictly: the first of equal ones stays)
            low = block[int(np.argmax(block == smallest))].item()
        if high is None or largest > high:
            high = block[int(np.argmax(block == largest))].item()
        if integer:
            small = max(-int(smallest), int(largest)) < (1 << 63) // len(block)
            exact += int(block.sum()) if small else sum(map(int, block))
    total: Any
    if integer:
        total = exact
        mean = int_mean(exact, n)
    else:
        try:
            total = math.fsum(v for block in blocks() for v in block.tolist())
        except OverflowError:  # a partial sum beyond the float range: the exact sum
            total = None
        if total is not None:
            mean = total / n
        else:
            whole = sum((Fraction(v) for block in blocks() for v in block.tolist()), Fraction(0))
            total = nearest_float(whole)
            mean = total / n if total is not None else nearest_float(whole / n)
    middle = n // 2
    if n % 2:
        median = _at_rank(blocks, middle, bool(integer), 1)[0]
    else:  # (the two middle values: usually of one key, found together)
        pair = _at_rank(blocks, middle - 1, bool(integer), 2)
        if len(pair) < 2:
            pair += _at_rank(blocks, middle, bool(integer), 1)
        median = median_sorted(pair)
    return stats_block(total, mean, median, low, high, n, skipped, failed)


_SIGN = 1 << 63


def _keys(block: Any, integer: bool) -> Any:
    """The values' keys: unsigned 64-bit ints in the values' order (``-0.0`` is ``0.0``'s)."""
    import numpy as np

    if integer:
        return block.view(np.uint64) ^ np.uint64(_SIGN)
    bits = (block + 0.0).view(np.int64)  # (-0.0 + 0.0 is 0.0)
    ordered = bits ^ ((bits >> np.int64(63)) & np.int64(_SIGN - 1))
    return ordered.view(np.uint64) ^ np.uint64(_SIGN)


def _at_rank(blocks: Blocks, rank: int, integer: bool, count: int) -> list[Any]:
    """The value at ``rank`` (from 0) of the values sorted stably, and (``count`` 2) the next
    one when it has the same key."""
    import numpy as np

    prefix, mask = 0, 0
    same = 0
    for shift in (48, 32, 16, 0):
        counts = np.zeros(1 << 16, dtype=np.int64)
        for block in blocks():
            keys = _keys(block, integer)
            if mask:
                keys = keys[(keys & np.uint64(mask)) == np.uint64(prefix)]
            digits = ((keys >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.intp)
            counts += np.bincount(digits, minlength=1 << 16)
        below = np.cumsum(counts)
        digit = int(np.searchsorted(below, rank, side="right"))
        if digit:
            rank -= int(below[digit - 1])
        same = int(counts[digit])
        prefix |= digit << shift
        mask |= 0xFFFF << shift
    wanted = min(count, same - rank)
    found: list[Any] = []
    for block in blocks():  # the rank-th of the values with that key, in their order
        hits = np.flatnonzero(_keys(block, integer) == np.uint64(prefix))
        while rank < len(hits) and len(found) < wanted:
            found.append(block[int(hits[rank])].item())
            rank += 1
        if len(found) == wanted:
            return found
        rank -= len(hits)
    raise ValueError("the values changed while they were read")
