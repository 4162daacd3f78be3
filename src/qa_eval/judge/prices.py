"""Prices of judge and embedding models, in US dollars per million tokens.

Prices come from ``genai-prices`` (Pydantic's maintained price data, installed with the ``judge``
extra), which knows cached-input and batch rates; ``llm.prices`` in the config adds models or
overrides them (``{input: ..., output: ..., cached_input: ...}``). A model found in neither has no
price: its cost is reported as unknown (``None``), never as zero.

A price entry is a dict of per-million-token rates: ``input``, ``output`` and, where known,
``cached_input`` (prompt tokens the provider served from its prompt cache), ``batch_input`` and
``batch_output`` (the batch API's rates). :func:`usd` prices one call's tokens with it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["context_window", "price_of", "usd"]

_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_PROVIDERS = {"openai": "openai", "azure": "azure"}


def _rate(value: Any) -> float | None:
    """A per-MTok rate from genai-prices: a Decimal, or the base tier of tiered prices."""
    if value is None:
        return None
    if isinstance(value, (Decimal, int, float)):
        return float(value)
    base = getattr(value, "base", None)
    return float(base) if base is not None else None


def _lookup(model: str, provider: str | None, batch: bool) -> Any:
    from genai_prices import Usage, calc_price

    context = {"processing": "batch"} if batch else None
    try:
        found = calc_price(
            Usage(input_tokens=1, output_tokens=1),
            model,
            provider_id=provider,
            price_context=context,  # type: ignore[arg-type]
        )
    except LookupError:
        return None
    return found.model_price


@functools.lru_cache(maxsize=256)
def _catalogue_price(model: str, provider: str | None) -> dict[str, float] | None:
    """The genai-prices entry of a model (``vendor/model`` names the vendor), or None."""
    try:
        import genai_prices  # noqa: F401
    except ImportError:
        return None
    attempts: list[tuple[str, str | None]] = []
    if "/" in model:
        vendor, bare = model.split("/", 1)
        attempts += [(bare, vendor), (bare, None)]
    else:
        attempts += [(model, _PROVIDERS.get(provider or "", "openai")), (model, None)]
    for name, prov in attempts:
        try:
            standard = _lookup(name, prov, batch=False)
        except Exception:  # an unknown provider id, or data genai-prices cannot read
            standard = None
        if standard is None:
            continue
        rate_in = _rate(standard.input_mtok)
        if rate_in is None:
            continue
        # Embedding models have an input rate only.
        entry = {"input": rate_in, "output": _rate(standard.output_mtok) or 0.0}
        cached = _rate(getattr(standard, "cache_read_mtok", None))
        if cached is not None:
            entry["cached_input"] = cached
        try:
            batch = _lookup(name, prov, batch=True)
        except Exception:
            batch = None
        if batch is not None:
            b_in, b_out = _rate(batch.input_mtok), _rate(batch.output_mtok)
            if (
                b_in is not None
                and b_out is not None
                and (b_in, b_out)
                != (
                    entry["input"],
                    entry["output"],
                )
            ):
                entry["batch_input"], entry["batch_output"] = b_in, b_out
        return {k: v for k, v in entry.items() if v is not None}
    return None


@functools.lru_cache(maxsize=256)
def context_window(model: str, provider: str | None = None) -> int | None:
    """The context window in tokens of a model as genai-prices records it (``vendor/model``
    names the vendor; a date suffix is tried without), or ``None``: not installed, not known."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        return None
    bare = model.split("/", 1)[1] if "/" in model else model
    vendor = model.split("/", 1)[0] if "/" in model else _PROVIDERS.get(provider or "", "openai")
    for name, prov in ((bare, vendor), (bare, None), (_DATED.sub("", bare), None)):
        try:
            found = calc_price(Usage(input_tokens=1, output_tokens=1), name, provider_id=prov)
        except Exception:  # not known, an unknown provider id, or data it cannot read
            continue
        window = getattr(found.model, "context_window", None)
        if isinstance(window, int) and not isinstance(window, bool) and window > 0:
            return window
    return None


def price_of(
    model: str,
    overrides: Mapping[str, Mapping[str, float]] | None = None,
    provider: str | None = None,
) -> dict[str, float] | None:
    """The price entry of a model: the config's (``vendor/`` prefixes and date suffixes such as
    ``-2024-07-18`` are ignored), else genai-prices', else ``None``."""
    names = [model]
    bare = model.split("/", 1)[1] if "/" in model else model
    names += [bare, _DATED.sub("", bare)]
    for name in names:
        if name in (overrides or {}):
            return {k: float(v) for k, v in (overrides or {})[name].items()}
    return _catalogue_price(model, provider)


def usd(
    price: Mapping[str, float] | None,
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    batch: bool = False,
) -> float | None:
    """The cost of one call's tokens, or ``None`` when the price is unknown.

    ``cached_tokens`` (part of ``prompt_tokens``) are priced at the cached-input rate where the
    entry has one; ``batch`` prices at the batch rates where it has them (else half the
    standard rates, as OpenAI's and Azure's batch APIs charge)."""
    if price is None:
        return None
    rate_in, rate_out = price["input"], price["output"]
    rate_cached = price.get("cached_input", rate_in)
    if batch:
        rate_in = price.get("batch_input", rate_in / 2)
        rate_out = price.get("batch_output", rate_out / 2)
        rate_cached = min(rate_cached, rate_in)
    cached = min(max(cached_tokens, 0), prompt_tokens)
    return (
        (prompt_tokens - cached) * rate_in + cached * rate_cached + completion_tokens * rate_out
    ) / 1_000_000
