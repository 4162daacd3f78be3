"""Typed access to one mapping of a config (``Reader``), with errors that name the key; and the
environment variables a config falls back on (``env``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import InputError


class Reader:
    """Typed access to one mapping of the config, with errors that name the key."""

    def __init__(self, data: Any, source: str, where: str) -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise InputError(
                f"must be a mapping, not {type(data).__name__}", source=source, field=where or None
            )
        self.data = data
        self.source = source
        self.where = where

    def fail(self, key: str, message: str) -> InputError:
        name = f"{self.where}.{key}" if self.where else key
        return InputError(message, source=self.source, field=name)

    def check_keys(self, allowed: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in allowed:
                raise self.fail(str(key), f"unknown key (known: {', '.join(allowed)})")

    def str_(self, key: str, default: str | None = None) -> str | None:
        value = self.data.get(key, default)
        if value is None or isinstance(value, str):
            return value
        raise self.fail(key, f"must be a string, not {type(value).__name__}")

    def number(self, key: str, default: float | None, *, minimum: float = 0.0) -> float | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise self.fail(key, f"must be a number >= {minimum:g}, not {value!r}")
        return float(value)

    def integer(self, key: str, default: int | None, *, minimum: int = 1) -> int | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(key, f"must be a whole number >= {minimum}, not {value!r}")
        return value

    def sub(self, key: str) -> Reader:
        name = f"{self.where}.{key}" if self.where else key
        return Reader(self.data.get(key), self.source, name)


def env(*names: str) -> str | None:
    """The first of the environment variables ``names`` that is set and not empty."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None
