"""The viewer's web app (Starlette): its routes, its token guard and its own assets.

Every request must carry the token: as ``?token=`` (the printed URL; the answer sets an
``HttpOnly``, ``SameSite=Strict`` cookie, so the links of the pages need not repeat it) or as
that cookie; writes (``POST``) must also send it in the ``X-QA-Token`` header, which a page of
another origin cannot set without a CORS preflight the app never grants. Without it the answer
is 403 and says nothing about the files. The app serves only its pages (built from the results
files it was started on, found by their number) and the assets in :data:`ASSETS`: no path of a
request is ever opened. Every page forbids scripts other than the app's own and any connection
elsewhere (``Content-Security-Policy``).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from ..errors import InputError
from . import pages
from .labels import LabelRow, append_label
from .review import decide

__all__ = ["ASSETS", "COOKIE", "HEADER", "check_extra", "create_app"]

COOKIE = "qa_view_token"
HEADER = "X-QA-Token"
ASSETS = {
    "view.js": ("qa_eval.view", "static/view.js", "text/javascript; charset=utf-8"),
    "view.css": ("qa_eval.view", "static/view.css", "text/css; charset=utf-8"),
    "report.css": ("qa_eval.report", "templates/style.css", "text/css; charset=utf-8"),
}
"""The only files served: name -> (package, resource, media type)."""

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _asset(name: str) -> tuple[bytes, str] | None:
    entry = ASSETS.get(name)
    if entry is None:
        return None
    package, resource, media = entry
    return resources.files(package).joinpath(resource).read_bytes(), media


def check_extra() -> None:
    """Refuse with one line naming the ``view`` extra when its packages are missing."""
    from ..extras import MissingExtra, available

    missing = [m for m in ("starlette", "uvicorn", "jinja2") if not available(m)]
    if missing:
        raise MissingExtra(
            f"qa-eval view needs the optional package(s) {', '.join(missing)}: "
            "pip install 'qa-eval[view]'"
        )


def create_app(settings: pages.Settings) -> Any:
    """The ASGI app over ``settings`` (needs the ``view`` extra)."""
    check_extra()
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    def allowed(request: Request, write: bool) -> bool:
        expected = settings.token.encode()
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or ""
        if not hmac.compare_digest(given.encode(), expected):
            return False
        if write:
            header = request.headers.get(HEADER, "")
            return hmac.compare_digest(header.encode(), expected)
        return True

    def page(make: Callable[[Request], str]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            from starlette.concurrency import run_in_threadpool

            if not allowed(request, write=False):
                return PlainTextResponse("forbidden: open the URL qa-eval view printed", 403)
            try:
                body = await run_in_threadpool(make, request)
                response: Response = HTMLResponse(body, headers=_HEADERS)
            except InputError as e:
                html = pages.render("error.html.j2", settings, message=str(e), title="error")
                response = HTMLResponse(html, status_code=400, headers=_HEADERS)
            if "token" in request.query_params:
                response.set_cookie(COOKIE, settings.token, httponly=True, samesite="strict")
            return response

        return endpoint

    def write(act: Callable[[dict[str, Any]], Any]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            from starlette.concurrency import run_in_threadpool

            if not allowed(request, write=True):
                return JSONResponse({"error": "forbidden"}, 403)
            try:
                data = await request.json()
                if not isinstance(data, dict):
                    raise InputError("the body must be a JSON object")
                answer = await run_in_threadpool(act, data)
            except (InputError, ValueError) as e:
                return JSONResponse({"error": str(e)}, 400)
            return JSONResponse(answer or {"ok": True}, headers=_HEADERS)

        return endpoint

    def number(request: Request, name: str) -> int:
        try:
            value = int(request.path_params[name])
        except ValueError:
            raise InputError(f"{name} must be a number") from None
        return value

    def run_number(request: Request) -> int:
        value = number(request, "run")
        if not 0 <= value < len(settings.runs):
            raise InputError(f"no run {value}")
        return value

    def others(request: Request) -> list[int]:
        raw = request.query_params.get("with", "")
        if raw == "all":
            return list(range(len(settings.runs)))
        try:
            return [int(x) for x in raw.split(",") if x]
        except ValueError:
            raise InputError("with is a list of run numbers") from None

    def add_label(data: dict[str, Any]) -> dict[str, Any]:
        value = data.get("label")
        clear = data.get("clear") is True
        label: bool | float | str | None = None
        if clear:
            pass
        elif isinstance(value, bool) or (isinstance(value, str) and value.strip()):
            label = value
        elif isinstance(value, (int, float)):
            label = float(value)
        else:
            raise InputError("label must be true/false, a number or a class")
        qid, metric = data.get("question_id"), data.get("metric")
        if not isinstance(qid, str) or not isinstance(metric, str) or not qid or not metric:
            raise InputError("question_id and metric are required")
        template = data.get("template_id") or None
        note = data.get("note") or ""
        if not isinstance(note, str) or (template is not None and not isinstance(template, str)):
            raise InputError("template_id and note are text")
        change = clear or data.get("replace") is True
        row = LabelRow(qid, template, metric, label, settings.annotator, note, supersedes=change)
        append_label(settings.labels, row)
        return {"ok": True, "file": str(settings.labels)}

    def add_decision(data: dict[str, Any]) -> dict[str, Any]:
        if settings.review is None:
            raise InputError("no review file")
        row_id, decision, edit = data.get("id"), data.get("decision", ""), data.get("edit", "")
        if not all(isinstance(v, str) for v in (row_id, decision, edit)):
            raise InputError("id, decision and edit are text")
        decide(settings.review, str(row_id), str(decision), str(edit))
        return {"ok": True}

    async def asset(request: Request) -> Response:
        if not allowed(request, write=False):
            return PlainTextResponse("forbidden", 403)
        found = _asset(request.path_params["name"])
        if found is None:
            return PlainTextResponse("not found", 404)
        return Response(found[0], media_type=found[1], headers=_HEADERS)

    routes = [
        Route("/", page(lambda r: pages.runs_page(settings))),
        Route(
            "/run/{run}", page(lambda r: pages.table_page(settings, run_number(r), r.query_params))
        ),
        Route(
            "/run/{run}/q/{pos}",
            page(
                lambda r: pages.question_page(settings, run_number(r), number(r, "pos"), others(r))
            ),
        ),
        Route("/compare", page(lambda r: pages.compare_page(settings, r.query_params))),
        Route("/label", page(lambda r: pages.label_page(settings, r.query_params))),
        Route("/review", page(lambda r: pages.review_page(settings))),
        Route("/static/{name}", asset),
        Route("/api/labels", write(add_label), methods=["POST"]),
        Route("/api/review", write(add_decision), methods=["POST"]),
    ]
    return Starlette(routes=routes)
