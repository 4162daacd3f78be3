"""The errors of the light transport: the openai SDK's error classes that a chat completion raises,
with the SDK's names, hierarchy (a class per status), messages and attributes (``message``,
``body``, ``code``, ``param``, ``type``, ``request``; ``response``, ``status_code``,
``request_id`` on a status error), so a fault reads the same (``faults``) whichever client made
the call. Made from the SDK's ``_exceptions`` (openai 3.x): a status error's ``body`` is the
reply's ``error`` object, its message ``Error code: N`` and `` - `` the error's ``message`` when
it has one; the request an error keeps has no ``Authorization`` header.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "InternalServerError",
    "NotFoundError",
    "OpenAIError",
    "PermissionDeniedError",
    "RateLimitError",
    "UnprocessableEntityError",
    "status_error",
]

_SENSITIVE_HEADERS = ("api-key", "authorization", "x-amz-security-token")


def _safe_request(request: Any) -> Any:
    """The request without its credentials (the SDK's ``_error_request``)."""
    if not any(name in request.headers for name in _SENSITIVE_HEADERS):
        return request
    import copy

    safe = copy.copy(request)
    safe.stream = request.stream
    safe.extensions = request.extensions.copy()
    safe.headers = request.headers.copy()
    for name in _SENSITIVE_HEADERS:
        safe.headers.pop(name, None)
    return safe


class OpenAIError(Exception):
    """The base of the SDK's errors."""


class APIError(OpenAIError):
    """A failed call (the SDK's ``openai.APIError``)."""

    def __init__(self, message: str, request: Any, *, body: object | None) -> None:
        super().__init__(message)
        self.request = _safe_request(request)
        self.message = message
        self.body = body
        self.code: str | None = None
        self.param: Any = None
        self.type: Any = None
        if isinstance(body, dict):
            code = body.get("code")
            self.code = str(code) if code is not None else None
            self.param = body.get("param")
            self.type = body.get("type")


class APIStatusError(APIError):
    """A reply with an error status (4xx, 5xx, or a 1xx/3xx that was not followed)."""

    def __init__(self, message: str, *, response: Any, body: object | None) -> None:
        super().__init__(message, response.request, body=body)
        self.response = response
        self.status_code: int = response.status_code
        self.request_id: str | None = response.headers.get("x-request-id")


class BadRequestError(APIStatusError):
    """A 400."""


class AuthenticationError(APIStatusError):
    """A 401."""


class PermissionDeniedError(APIStatusError):
    """A 403."""


class NotFoundError(APIStatusError):
    """A 404."""


class ConflictError(APIStatusError):
    """A 409."""


class UnprocessableEntityError(APIStatusError):
    """A 422."""


class RateLimitError(APIStatusError):
    """A 429."""


class InternalServerError(APIStatusError):
    """A 5xx."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


class APIConnectionError(APIError):
    """No reply: the connection failed or broke (the cause is the HTTP client's error)."""

    def __init__(self, *, message: str = "Connection error.", request: Any) -> None:
        super().__init__(message, request, body=None)


class APITimeoutError(APIConnectionError):
    """No reply within the timeout."""

    def __init__(self, request: Any) -> None:
        super().__init__(message="Request timed out.", request=request)


def status_error(response: Any) -> APIStatusError:
    """The error of a reply whose status is not a success, as the SDK makes it
    (``_make_status_error_from_response``, then ``AsyncOpenAI._make_status_error``)."""
    message = f"Error code: {response.status_code}"
    if response.is_closed and not response.is_stream_consumed:
        body: object = None
    else:
        text = response.text.strip()
        body = text
        try:
            body = json.loads(text)
        except Exception:
            pass
        else:
            error = body.get("error", body) if isinstance(body, dict) else None
            detail = error.get("message") if isinstance(error, dict) else None
            if isinstance(detail, str) and detail:
                message += f" - {detail}"
    data = body.get("error", body) if isinstance(body, dict) else body
    status = response.status_code
    kind = InternalServerError if status >= 500 else _BY_STATUS.get(status, APIStatusError)
    return kind(message, response=response, body=data)
