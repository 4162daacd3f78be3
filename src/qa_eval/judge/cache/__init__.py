"""The reply cache: a content-addressed SQLite store of judge replies and embedding vectors
(``store``) over a file opened defensively (``sqlite``).
"""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .sqlite import CacheError, CacheFile, CacheWarning
    from .store import CachedReply, ReplyCache, default_cache_path, open_cache, request_key

_NAMES = {
    "CacheError": "sqlite",
    "CacheFile": "sqlite",
    "CacheWarning": "sqlite",
    "CachedReply": "store",
    "ReplyCache": "store",
    "default_cache_path": "store",
    "open_cache": "store",
    "request_key": "store",
}

__all__ = [
    "CacheError",
    "CacheFile",
    "CacheWarning",
    "CachedReply",
    "ReplyCache",
    "default_cache_path",
    "open_cache",
    "request_key",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
