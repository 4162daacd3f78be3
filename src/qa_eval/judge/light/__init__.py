"""The judge's light transport: its chat completions over ``httpx2``, sending and reading what the
openai SDK sends and reads without importing the SDK (``client``), the SDK's errors (``errors``)
and its reading of a reply (``completion``).
"""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .client import LightClient, light_client

_NAMES = {"LightClient": "client", "light_client": "client"}

__all__ = ["LightClient", "light_client"]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
