"""ragas' ``ragas.messages`` for qa-eval: :class:`HumanMessage`, :class:`AIMessage`,
:class:`ToolMessage` and :class:`ToolCall` with ragas 0.4.3's fields (``messages.models``).
The names load when first used (they are pydantic models)."""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .models import AIMessage, HumanMessage, Message, ToolCall, ToolMessage

_NAMES = {
    name: "models" for name in ("AIMessage", "HumanMessage", "Message", "ToolCall", "ToolMessage")
}
__all__ = ["AIMessage", "HumanMessage", "Message", "ToolCall", "ToolMessage"]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
