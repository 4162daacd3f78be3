"""The judge's chat completions over ``httpx2`` directly: the request the openai SDK (3.x) sends,
byte for byte, without importing the SDK (half a second of imports before the first request).

:class:`LightClient` has the SDK client's ``chat.completions.create`` shape and sends what the
SDK's ``AsyncOpenAI(api_key=..., base_url=..., timeout=..., max_retries=0)`` sends for the same
keyword arguments: the same URL (the base URL with a trailing slash, then ``chat/completions``), the
same headers in the same order (``Authorization``, ``User-Agent: AsyncOpenAI/Python <version>``,
the ``X-Stainless-*`` platform headers, ``OpenAI-Organization``/``OpenAI-Project`` from
``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID``, ``x-stainless-retry-count: 0``,
``x-stainless-read-timeout``), the same JSON body (keys in the SDK's order, ``extra_body`` merged
last, compact, UTF-8), over an ``httpx2.AsyncClient`` made with the SDK's settings (its timeout,
connection limits and redirects; proxies from the environment and TLS verification as httpx2's
defaults, as the SDK leaves them). Its reply and errors are the SDK's too: a status error is built
as the SDK builds it (``errors``), the body is read as the SDK reads it (``completion``), and a
timeout or a failed connection is the SDK's ``APITimeoutError``/``APIConnectionError``, caused by
the same httpx2 error. No retries: the judge retries (``transport``).

:func:`light_client` says when it is used (``clients.make_client``): provider ``openai``, an
installed SDK of the versions this module was written against (3.63 and later 3.x, which use
``httpx2``; tests compare both paths on one server), and neither ``OPENAI_CUSTOM_HEADERS`` nor
``OPENAI_LOG`` in the environment (the SDK's custom headers and logging are not reproduced); else
the SDK itself.
"""

from __future__ import annotations

import json
import os
import re
import sys
import types
from datetime import datetime
from typing import Any

from ..settings import GenerationConfig
from .completion import read_body
from .errors import APIConnectionError, APITimeoutError, status_error

__all__ = ["LightClient", "light_client", "sdk_version"]

_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_SDK_RANGE = ((3, 63), (4, 0))
"""The openai SDK versions whose requests and errors :class:`LightClient` reproduces."""
_UNREPRODUCED_ENV = ("OPENAI_CUSTOM_HEADERS", "OPENAI_LOG")
_CLIENTS: Any = object()
"""``create``'s timeout when none is given: the client's."""
_BODY_KEYS = (
    "model",
    "stream",
    "service_tier",
    "messages",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "stop",
    "store",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
)
"""``chat.completions.create``'s body keys in the order the SDK writes them."""


def sdk_version() -> str | None:
    """The installed openai SDK's version, read from its ``_version.py`` without importing it;
    None when it is not installed or says no version."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("openai")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            with open(os.path.join(folder, "_version.py"), encoding="utf-8") as f:
                found = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
        except OSError:
            continue
        if found:
            return found.group(1)
    return None


def _release(version: str) -> tuple[int, ...]:
    numbers = re.match(r"(\d+)\.(\d+)", version)
    return (int(numbers.group(1)), int(numbers.group(2))) if numbers else (0,)


def light_client(gen: GenerationConfig, timeout: float) -> LightClient | None:
    """The light client for ``gen``, or None when the SDK must make the calls (see the module
    docstring)."""
    if gen.provider != "openai" or any(os.environ.get(name) for name in _UNREPRODUCED_ENV):
        return None
    version = sdk_version()
    if version is None or not (_SDK_RANGE[0] <= _release(version) < _SDK_RANGE[1]):
        return None
    import importlib.util

    if importlib.util.find_spec("httpx2") is None:
        return None
    return LightClient(gen, timeout, version)


class _Encoder(json.JSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            return o.isoformat()
        return super().default(o)


def _body(kwargs: dict[str, Any]) -> bytes:
    """The JSON body the SDK sends for ``create``'s keyword arguments."""
    extra = kwargs.pop("extra_body", None)
    unknown = set(kwargs) - set(_BODY_KEYS)
    if unknown:
        raise TypeError(f"create() got unexpected keyword arguments: {sorted(unknown)}")
    data: Any = {key: kwargs[key] for key in _BODY_KEYS if key in kwargs}
    if extra is not None:
        data = {**data, **extra}
    return json.dumps(
        data, cls=_Encoder, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode()


class LightClient:
    """``chat.completions.create`` over httpx2, as the SDK sends and reads it."""

    def __init__(self, gen: GenerationConfig, timeout: float, version: str) -> None:
        import httpx2

        self.chat = self
        self.completions = self
        self._httpx2 = httpx2
        self._timeout = timeout
        self._version = version
        self._api_key = gen.api_key or "not-needed"
        self._organization = os.environ.get("OPENAI_ORG_ID")
        self._project = os.environ.get("OPENAI_PROJECT_ID")
        base_url = gen.base_url
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL") or _DEFAULT_BASE_URL
        self._base_url = base_url
        url = httpx2.URL(base_url)
        path, separator, query = url.raw_path.partition(b"?")
        if not path.endswith(b"/"):
            url = url.copy_with(raw_path=path + b"/" + separator + query)
        self.base_url = url
        self._http: Any = None
        self._platform: dict[str, str] = {}
        # The platform headers are read on a thread while httpx2 loads (the SDK reads them on a
        # worker thread too): platform.platform() runs ``uname -p``. What the thread imports is
        # imported here first, so no module is imported by two threads at once.
        import platform  # noqa: F401
        import subprocess  # noqa: F401
        import threading

        self._platform_read = threading.Thread(
            target=lambda: self._platform.update(_platform_headers(version)), daemon=True
        )
        self._platform_read.start()

    def _client(self) -> Any:
        """The HTTP client, made at the first call as the SDK makes its own."""
        if self._http is None:
            _import_httpcore2()
            httpx2 = self._httpx2
            self._http = httpx2.AsyncClient(
                base_url=self._base_url,
                timeout=self._timeout,
                limits=httpx2.Limits(max_connections=1000, max_keepalive_connections=100),
                follow_redirects=True,
            )
        return self._http

    def __del__(self) -> None:
        # As the SDK's client does: the connections are closed on the running loop, if any.
        http = getattr(self, "_http", None)
        if http is None or http.is_closed:
            return
        try:
            import asyncio

            asyncio.get_running_loop().create_task(http.aclose())
        except Exception:
            pass

    def _headers(self, timeout: Any) -> Any:
        """The request headers, merged and ordered as the SDK merges them."""
        self._platform_read.join()
        given: list[tuple[str, str | None]] = [
            ("Authorization", f"Bearer {self._api_key}"),
            ("Accept", "application/json"),
            ("Content-Type", "application/json"),
            ("User-Agent", f"AsyncOpenAI/Python {self._version}"),
            *self._platform.items(),
            ("X-Stainless-Async", "async:asyncio"),
            ("OpenAI-Organization", self._organization),
            ("OpenAI-Project", self._project),
        ]
        merged: dict[str, tuple[str, str]] = {}
        for name, value in given:
            if value is None:
                merged.pop(name.lower(), None)
            else:
                merged[name.lower()] = (name, value)
        headers = self._httpx2.Headers({name: value for name, value in merged.values()})
        headers["x-stainless-retry-count"] = "0"
        read = timeout.read if isinstance(timeout, self._httpx2.Timeout) else timeout
        if read is not None:
            headers["x-stainless-read-timeout"] = str(read)
        return headers

    async def create(self, *, timeout: Any = _CLIENTS, **kwargs: Any) -> Any:
        """One chat completion: the reply as the SDK reads it, or the SDK's error (``timeout``:
        the client's when not given, none when None, as the SDK's)."""
        httpx2 = self._httpx2
        if timeout is _CLIENTS:
            timeout = self._timeout
        content = _body(kwargs)
        client = self._client()
        url = self.base_url.copy_with(raw_path=self.base_url.raw_path + b"chat/completions")
        request = client.build_request(
            headers=list(self._headers(timeout).multi_items()),
            timeout=timeout,
            method="post",
            url=str(url),
            params=None,
            content=content,
            files=None,
        )
        try:
            response = await client.send(request, stream=False)
        except httpx2.TimeoutException as err:
            raise APITimeoutError(request=request) from err
        except _request_errors(httpx2) as err:
            raise APIConnectionError(request=request) from err
        try:
            response.raise_for_status()
        except httpx2.HTTPStatusError as err:
            if not err.response.is_closed:
                await err.response.aread()
            raise status_error(err.response) from None
        return read_body(_json_of(response))


class _Deferred(types.ModuleType):
    """A module imported at its first attribute (see :func:`_import_httpcore2`)."""

    def __getattr__(self, attribute: str) -> Any:
        import importlib

        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attribute)


def _import_httpcore2() -> None:
    """Import httpcore2 (httpx2's transport) without importing trio, when trio is installed but
    not imported yet: httpcore2 imports trio at its own import (for a run under trio), about
    60 ms of CPU that a run under asyncio never uses. While httpcore2 loads, ``trio`` is a
    module that imports the real trio at its first attribute and gives its attributes from it,
    so httpcore2 under trio works as before; once httpcore2 has loaded, ``import trio`` imports
    trio as usual."""
    if "httpcore2" in sys.modules or "trio" in sys.modules:
        return
    import importlib.util

    try:
        spec = importlib.util.find_spec("trio")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return
    deferred = _Deferred("trio")
    deferred.__spec__ = spec
    sys.modules["trio"] = deferred
    try:
        import httpcore2  # noqa: F401
    finally:
        if sys.modules.get("trio") is deferred:
            del sys.modules["trio"]


def _request_errors(httpx2: Any) -> tuple[type[BaseException], ...]:
    """What the SDK turns into ``APIConnectionError`` (its ``request_exceptions``)."""
    import ssl

    import anyio

    return (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)


def _json_of(response: Any) -> Any:
    """The reply's data as the SDK parses it: JSON by its content type (a parse error raised),
    or whatever parses, else the text."""
    content_type, *_ = response.headers.get("content-type", "*").split(";")
    if not content_type.endswith("json"):
        try:
            return response.json()
        except Exception:
            return response.text
    return response.json()


def _platform_headers(version: str) -> dict[str, str]:
    """The SDK's ``X-Stainless-*`` platform headers (its ``platform_headers``)."""
    import platform

    def guarded(read: Any) -> str:
        try:
            return str(read())
        except Exception:
            return "unknown"

    return {
        "X-Stainless-Lang": "python",
        "X-Stainless-Package-Version": version,
        "X-Stainless-OS": str(_os_name(platform)),
        "X-Stainless-Arch": _architecture(platform),
        "X-Stainless-Runtime": guarded(platform.python_implementation),
        "X-Stainless-Runtime-Version": guarded(platform.python_version),
    }


_BSDS = {"freebsd": "FreeBSD", "openbsd": "OpenBSD"}


def _os_name(platform: Any) -> str:
    """The SDK's ``get_platform``."""
    try:
        system = platform.system().lower()
        platform_name = platform.platform().lower()
    except Exception:
        return "Unknown"
    if "iphone" in platform_name or "ipad" in platform_name:
        return "iOS"
    names = {"darwin": "MacOS", "windows": "Windows"}
    if system in names:
        return names[system]
    if "android" in platform_name:
        return "Android"
    if system in _BSDS:
        return _BSDS[system]
    if system == "linux":
        try:
            distro = platform.freedesktop_os_release().get("ID", "").lower()
        except OSError:
            distro = ""
        return _BSDS.get(distro, "Linux")
    return f"Other:{platform_name}" if platform_name else "Unknown"


def _architecture(platform: Any) -> str:
    """The SDK's ``get_architecture``."""
    try:
        machine = platform.machine().lower()
    except Exception:
        return "unknown"
    if machine in ("arm64", "aarch64"):
        return "arm64"
    if machine == "arm":
        return "arm"
    if machine == "x86_64":
        return "x64"
    if sys.maxsize <= 2**32:
        return "x32"
    return f"other:{machine}" if machine else "unknown"
