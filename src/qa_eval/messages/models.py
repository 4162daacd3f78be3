"""The messages of an agent's conversation, with the fields ragas 0.4.3's ``ragas.messages`` has,
so code written for ragas' multi-turn metrics builds the same objects after ``ragas.`` →
``qa_eval.``: :class:`HumanMessage`, :class:`AIMessage` (with its :class:`ToolCall` list) and
:class:`ToolMessage`, each with ``content``, an optional ``metadata`` mapping and a literal
``type`` (``human``, ``ai``, ``tool``).

Importing this module imports pydantic (the models are pydantic models, as ragas' are, so
``model_dump`` and validation from dicts work alike); ``import qa_eval`` does not import it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["AIMessage", "HumanMessage", "Message", "ToolCall", "ToolMessage"]


class Message(BaseModel):
    """What every message has: its text and optional metadata."""

    content: str
    metadata: dict[str, Any] | None = None


class ToolCall(BaseModel):
    """One call of a tool: its name and its arguments by name."""

    name: str
    args: dict[str, Any]


class HumanMessage(Message):
    """A turn of the user."""

    type: Literal["human"] = "human"

    def pretty_repr(self) -> str:
        """The message as one line of a transcript."""
        return f"Human: {self.content}"


class ToolMessage(Message):
    """What a tool returned."""

    type: Literal["tool"] = "tool"

    def pretty_repr(self) -> str:
        """The message as one line of a transcript."""
        return f"ToolOutput: {self.content}"


class AIMessage(Message):
    """A turn of the assistant, with the tools it called, if any."""

    type: Literal["ai"] = "ai"
    tool_calls: list[ToolCall] | None = None

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """``{"content", "type"}``; the content carries the text and the tool calls when it
        made any (as ragas writes it)."""
        if self.tool_calls is None:
            return {"content": self.content, "type": self.type}
        calls = [call.model_dump() for call in self.tool_calls]
        return {"content": {"text": self.content, "tool_calls": calls}, "type": self.type}

    def pretty_repr(self) -> str:
        """The message as transcript lines: its text, then each tool call."""
        lines = [f"AI: {self.content}"] if self.content != "" else []
        if self.tool_calls is not None:
            lines.append("Tools:")
            lines.extend(f"  {call.name}: {call.args}" for call in self.tool_calls)
        return "\n".join(lines)
