"""The key table of docs/compatibility.md ("## Keys"): the keys qa-eval writes that graphrag-eval
6.6.1 does not, read from the document itself."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "compatibility.md"
_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+) \|$")


def documented_keys() -> dict[str, str]:
    """Key (or pattern such as ``<key>_sd``) -> where it appears, from the doc's key table."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = _ROW.match(line.strip())
        if match:
            rows[match.group(1)] = match.group(2).strip()
    return rows


def listed(key: str, documented: dict[str, str]) -> bool:
    """Whether a key is in the table, by name or by a pattern (``<key>``, ``<name>``, ``<tag>``
    stand for any text)."""
    if key in documented:
        return True
    for entry in documented:
        if "<" in entry:
            pattern = re.escape(entry)
            pattern = re.sub(r"<[a-z]+>", ".+", pattern.replace(r"\<", "<").replace(r"\>", ">"))
            if re.fullmatch(pattern, key):
                return True
    return False
