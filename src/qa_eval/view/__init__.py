"""``qa-eval view``: a local web app over results files, to browse, search, compare and label.

The results are indexed once in SQLite (:mod:`.index`, :mod:`.query`, a regular expression
narrowed by the word index in :mod:`.regex`); the pages are the
report's jinja2 components (:mod:`.pages`) served by a token-guarded Starlette app
(:mod:`.app`, :mod:`.server`); labels are appended at once in the format ``qa-eval agreement``
reads (:mod:`.labels`, :mod:`.queue`, :mod:`.agree`); two runs are compared as ``qa-eval
compare`` does (:mod:`.diff`); generated references are reviewed in their review file
(:mod:`.review`). See docs/view.md.
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .app import create_app
    from .index import Index, open_index
    from .labels import LabelRow, append_label
    from .query import TableView, page_of
    from .review import decide, read_review
    from .server import serve, settings_for

_NAMES = {
    "Index": "index",
    "LabelRow": "labels",
    "TableView": "query",
    "append_label": "labels",
    "create_app": "app",
    "decide": "review",
    "open_index": "index",
    "page_of": "query",
    "read_review": "review",
    "serve": "server",
    "settings_for": "server",
}

__all__ = [
    "Index",
    "LabelRow",
    "TableView",
    "append_label",
    "create_app",
    "decide",
    "open_index",
    "page_of",
    "read_review",
    "serve",
    "settings_for",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
