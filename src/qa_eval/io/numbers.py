"""How the terminal tables print a metric's numbers: by the scale the metric registry gives its key.

``qa-eval evaluate``'s summary, the dry run's plan and the comparison table all format through
:func:`format_number`, so one metric looks the same wherever it is printed:

========== ====================== ==============================
scale      what                   printed
========== ====================== ==============================
``0-1``    scores                 three decimals: ``0.341``
``count``  counts                 whole: ``12``; a mean that is not whole: ``2.5``
``tokens`` token counts           no decimals: ``3712``
``seconds`` times                 two decimals: ``2.48``
``usd``    costs                  ``$0.0123``; under a cent, three significant digits
``percent`` a 0-1 score as a %    one decimal: ``93.7``
========== ====================== ==============================

A key the registry does not know (a custom metric's output) gets the scale its name suggests
(:func:`scale_of`), else three decimals below 1,000 and none above.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ..vocabulary.lookup import key_info, parse_at_k
from ..vocabulary.registry import RANKING

__all__ = ["format_number", "scale_of"]

_SECONDS = ("_sec", "_seconds", "elapsed", "latency")


def scale_of(metric: str) -> str | None:
    """The scale of a result key: the registry's, else guessed from the name (None: unknown)."""
    found = key_info(metric)
    if found is not None:
        return found[1].scale
    lowered = metric.lower()
    if "@" in lowered:
        try:
            base, _ = parse_at_k(metric)
        except ValueError:
            base = ""
        if base in RANKING:
            return "0-1"
    if lowered.endswith("cost"):
        return "usd"
    if lowered.endswith("tokens"):
        return "tokens"
    if lowered.endswith(_SECONDS):
        return "seconds"
    if lowered.endswith(("_count", "_ms")):
        return "count"
    return None


def _fixed(number: float | Decimal, decimals: int, plus: str = "") -> str:
    """``number`` with ``decimals`` decimals, a half rounded away from zero as people do (72.5
    is 73, 2.675 is 2.68: the decimal the float prints, not its binary neighbour). A
    ``Decimal`` is a number beyond the float range, printed with all its digits."""
    if isinstance(number, Decimal) or abs(number) >= 1e15:  # more than the context holds
        return f"{number:{plus}.{decimals}f}"
    exact = Decimal(repr(number)).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP)
    return f"{exact:{plus}.{decimals}f}"


def _usd(value: float, sign: str) -> str:
    size = abs(value)
    decimals = 4
    if 0 < size < 0.01:  # three significant digits, at most eight decimals
        decimals = min(8, 2 - math.floor(math.log10(size)))
    return f"{sign}${_fixed(size, decimals)}"


def _beyond_floats(value: int, scale: str | None, plus: str) -> str:
    """An int beyond the float range as ``scale`` prints it: every digit, and the decimals of
    the scale (none for counts and tokens)."""
    if scale == "usd":
        return f"{'-' if value < 0 else plus}${_fixed(Decimal(abs(value)), 4)}"
    if scale == "percent":
        return _fixed(Decimal(value * 100), 1, plus)
    decimals = {"0-1": 3, "cosine": 3, "ratio": 3, "seconds": 2}.get(scale or "", 0)
    return _fixed(Decimal(value), decimals, plus)


def format_number(value: Any, scale: str | None, *, signed: bool = False) -> str:
    """A number as the terminal tables print it for ``scale`` (``-`` for None; ``+`` before a
    positive value when ``signed``)."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    try:
        number = float(value) + 0.0  # -0.0 prints as 0
    except OverflowError:  # an int beyond the float range
        return _beyond_floats(int(value), scale, "+" if signed else "")
    if not math.isfinite(number):
        return str(number)
    plus = "+" if signed else ""
    if scale == "usd":
        return _usd(number, "-" if number < 0 else plus)
    if scale == "percent":
        percent = number * 100
        # a float this large is whole: its digits times 100, exactly
        return _fixed(percent if math.isfinite(percent) else Decimal(int(number) * 100), 1, plus)
    if scale in ("0-1", "cosine", "ratio"):
        decimals = 3
    elif scale == "tokens":
        decimals = 0
    elif scale == "seconds":
        decimals = 2
    elif scale == "count":
        decimals = 0 if number.is_integer() else 1
    else:
        decimals = 3 if abs(number) < 1000 else 0
    return _fixed(number, decimals, plus)
