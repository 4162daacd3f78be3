"""What a generation is told: the config file (``-c``) read into :class:`GenerateSettings`.

```yaml
labels: [rdfs:label, skos:prefLabel]     # label properties, first preferred (default: 5 common)
prefixes: {g: "https://example.org/grid#"}
include: {classes: [g:Substation], properties: [g:operator]}
exclude: {classes: [], properties: [g:code]}
words: {g:ratedMVA: rated power in MVA, g:Transformer: transformer}
max_answers: 10                          # a question's answers at most (rows of its result)
max_uses_per_entity: 3                   # questions an entity may be named in
```

Names are full IRIs (``<...>`` or bare) or prefixed names (``prefixes``, the graph file's own
prefixes, and the common ones: rdf, rdfs, xsd, owl, skos, schema, foaf, dct).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..io.files import read_data

__all__ = [
    "COMMON_PREFIXES",
    "DEFAULT_LABELS",
    "GenerateSettings",
    "read_settings",
]

COMMON_PREFIXES = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "schema": "https://schema.org/",
    "foaf": "http://xmlns.com/foaf/0.1/",
    "dct": "http://purl.org/dc/terms/",
}
DEFAULT_LABELS = ("rdfs:label", "skos:prefLabel", "schema:name", "dct:title", "foaf:name")
_KEYS = {
    "labels",
    "prefixes",
    "include",
    "exclude",
    "words",
    "max_answers",
    "max_uses_per_entity",
}


@dataclass
class GenerateSettings:
    """A generation's vocabulary and limits (names as written; ``resolve`` makes them IRIs)."""

    labels: tuple[str, ...] = DEFAULT_LABELS
    prefixes: dict[str, str] = field(default_factory=dict)
    include_classes: tuple[str, ...] = ()
    include_properties: tuple[str, ...] = ()
    exclude_classes: tuple[str, ...] = ()
    exclude_properties: tuple[str, ...] = ()
    words: dict[str, str] = field(default_factory=dict)
    max_answers: int = 10
    max_uses_per_entity: int = 3
    source: str = "config"

    def resolve(self, name: str, graph_prefixes: Mapping[str, str] = {}) -> str:
        """The IRI a config name stands for."""
        text = name.strip()
        if text.startswith("<") and text.endswith(">"):
            return text[1:-1]
        prefix, colon, local = text.partition(":")
        known = {**COMMON_PREFIXES, **graph_prefixes, **self.prefixes}
        if colon and prefix in known and not local.startswith("//"):
            return known[prefix] + local
        if (colon and "://" in text) or text.startswith(("urn:", "http:", "https:")):
            return text
        raise InputError(
            f"{name!r} is neither an IRI nor a prefixed name with a known prefix "
            "(add it under prefixes:)",
            source=self.source,
        )


def _names(value: Any, where: str, source: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError("must be a list of names", source=source, field=where)
    return tuple(value)


def _limit(data: Mapping[str, Any], key: str, default: int, source: str) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"must be a whole number >= 1, got {value!r}", source=source, field=key)
    return value


def _lists(data: Mapping[str, Any], key: str, source: str) -> tuple[tuple[str, ...], ...]:
    part = data.get(key) or {}
    if not isinstance(part, Mapping) or set(part) - {"classes", "properties"}:
        raise InputError("must map classes and/or properties to lists", source=source, field=key)
    return (
        _names(part.get("classes"), f"{key}.classes", source),
        _names(part.get("properties"), f"{key}.properties", source),
    )


def _strings(data: Mapping[str, Any], key: str, source: str) -> dict[str, str]:
    part = data.get(key) or {}
    if not isinstance(part, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in part.items()
    ):
        raise InputError("must map names to non-empty texts", source=source, field=key)
    return {k: v.strip() for k, v in part.items()}


def read_settings(path: str | os.PathLike[str] | None) -> GenerateSettings:
    """The settings of a config file (``None``: the defaults)."""
    if path is None:
        return GenerateSettings()
    source = str(path)
    data = read_data(path)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InputError("a generate config must be a mapping", source=source)
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})", source=source
        )
    include = _lists(data, "include", source)
    exclude = _lists(data, "exclude", source)
    labels = _names(data.get("labels"), "labels", source) or DEFAULT_LABELS
    return GenerateSettings(
        labels=labels,
        prefixes=_strings(data, "prefixes", source),
        include_classes=include[0],
        include_properties=include[1],
        exclude_classes=exclude[0],
        exclude_properties=exclude[1],
        words=_strings(data, "words", source),
        max_answers=_limit(data, "max_answers", 10, source),
        max_uses_per_entity=_limit(data, "max_uses_per_entity", 3, source),
        source=source,
    )
