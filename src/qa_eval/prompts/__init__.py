"""Prompt files (data) and their rendering.

Each prompt is a ``*.md`` file in this folder, read with ``importlib.resources``; the SHA-256 of its
text is its version, which goes into the run signature (and, through the rendered messages, into
every cache key). Placeholders are ``$name`` (``string.Template``): values are inserted once and
never parsed again, so a ``$`` or ``{`` in an answer is just text. Untrusted text is placed between
tags, and a closing tag inside it is broken up so it cannot end its block early.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Sequence
from functools import cache
from importlib import resources

__all__ = ["delimit", "numbered_blocks", "prompt_hash", "prompt_names", "prompt_text", "render"]


@cache
def prompt_text(name: str) -> str:
    """The text of ``prompts/<name>.md``."""
    return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")


@cache
def prompt_names() -> tuple[str, ...]:
    """The names of every prompt file in this folder, sorted."""
    files = resources.files(__package__).iterdir()
    return tuple(sorted(f.name[:-3] for f in files if f.name.endswith(".md")))


def prompt_hash(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of a prompt's text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


_TAG = re.compile(r"</\s*([A-Za-z_][\w-]*)\s*>")


def delimit(text: str) -> str:
    """Untrusted text made safe to put between tags: closing tags become ``< /tag>``."""
    return _TAG.sub(lambda m: f"< /{m.group(1)}>", text)


def numbered_blocks(items: Sequence[str], tag: str) -> str:
    """Untrusted texts as ``<tag id="1">...</tag>`` blocks, numbered from 1, one after another."""
    return "\n".join(f'<{tag} id="{i}">\n{delimit(x)}\n</{tag}>' for i, x in enumerate(items, 1))


def render(name: str, trusted: dict[str, str] | None = None, **values: str) -> str:
    """Fill a prompt file's ``$name`` placeholders: ``values`` delimited, ``trusted`` as given."""
    filled = {k: delimit(v) for k, v in values.items()}
    filled.update(trusted or {})
    return string.Template(prompt_text(name)).substitute(filled)
