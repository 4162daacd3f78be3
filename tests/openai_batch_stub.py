"""The scripted OpenAI-compatible server of ``openai_stub`` with OpenAI's Files and Batch APIs.

:class:`BatchStubServer` answers, besides chat completions and embeddings (as ``StubServer``):

- ``POST /v1/files`` (multipart upload, ``purpose=batch``), ``GET /v1/files/{id}``,
  ``GET /v1/files/{id}/content`` and ``DELETE /v1/files/{id}`` (refused with ``delete_fault``,
  an HTTP status; every attempt is recorded in ``deletes``);
- ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (the list, newest first),
  ``POST /v1/batches/{id}/cancel``;
- the same under Azure's ``/openai/...`` paths.

A batch moves one status per retrieve: ``validating`` → ``in_progress`` (nothing done) →
``in_progress`` (half done) → its end (``completed``, or what ``fate`` says: ``expired`` - the first
half answered, the rest ``batch_expired`` - or ``failed``: an input the server refuses, no output),
unless ``hold`` is set: then it stays ``in_progress`` until it is cleared. When a batch ends, each
of its requests is answered by the server's script (so a batch gets the same replies as
synchronous calls would), unless ``item_fault(custom_id, body)`` names a fault for it:
``"expired"`` (an error line with code ``batch_expired``) or an HTTP status such as ``"500"``
(an error line with that response). Every answered request is recorded in ``answered``, so a
test can check that nothing was billed twice.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from openai_stub import Script, StubServer

ItemFault = Callable[[str, dict[str, Any]], str | None]


class BatchStubServer(StubServer):
    """``StubServer`` with files and batches; use as a context manager."""

    def __init__(
        self,
        script: Script,
        *,
        item_fault: ItemFault | None = None,
        fate: Callable[[int], str] | None = None,
        delete_fault: int | None = None,
    ) -> None:
        super().__init__(script)
        self.delete_fault = delete_fault
        self.deletes: list[str] = []
        """The file id of every delete request, in order."""
        self.deleted: dict[str, bytes] = {}
        """The content of every file deleted (for tests to read what was uploaded)."""
        self._file_number = 0
        self.item_fault = item_fault
        self.fate = fate or (lambda number: "completed")
        self.hold = threading.Event()
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_lines: dict[str, list[dict[str, Any]]] = {}
        self.answered: list[tuple[str, str, dict[str, Any]]] = []
        """(batch id, custom id, request body) of every request a batch answered."""
        self.retrieves = 0
        self.api_paths: list[str] = []
        """The path of every files or batches request, in order."""
        self.batch_lock = threading.Lock()
        self.httpd.RequestHandlerClass = self._handler(self.httpd.RequestHandlerClass)

    # --- the HTTP side --------------------------------------------------------------------

    def _handler(self, base: Any) -> Any:
        stub = self

        class Handler(base):  # type: ignore[misc, valid-type]
            def _send(
                self, status: int, data: bytes, content_type: str = "application/json"
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, status: int, body: Any) -> None:
                self._send(status, json.dumps(body).encode())

            def _parts(self) -> list[str]:
                path = self.path.split("?")[0].rstrip("/")
                parts = [p for p in path.split("/") if p]
                for prefix in ("v1", "openai"):
                    if parts and parts[0] == prefix:
                        parts = parts[1:]
                return parts

            def do_POST(self) -> None:
                parts = self._parts()
                if parts[:1] not in (["files"], ["batches"]):
                    super().do_POST()
                    return
                stub.api_paths.append(self.path)
                length = int(self.headers.get("Content-Length", "0"))
                data = self.rfile.read(length)
                if parts == ["files"]:
                    self._json(200, stub._upload(self.headers.get("Content-Type", ""), data))
                elif parts == ["batches"]:
                    status, body = stub._create(json.loads(data or b"{}"))
                    self._json(status, body)
                elif len(parts) == 3 and parts[2] == "cancel":
                    self._json(*stub._cancel(parts[1]))
                else:
                    self._json(404, {"error": {"message": "no such route"}})

            def do_GET(self) -> None:
                parts = self._parts()
                stub.api_paths.append(self.path)
                if parts == ["batches"]:
                    self._json(200, stub._list())
                elif len(parts) == 2 and parts[0] == "batches":
                    self._json(*stub._retrieve(parts[1]))
                elif len(parts) == 2 and parts[0] == "files" and parts[1] in stub.files:
                    self._json(200, stub.files[parts[1]])
                elif len(parts) == 3 and parts[0] == "files" and parts[1] in stub.contents:
                    self._send(200, stub.contents[parts[1]], "application/octet-stream")
                else:
                    self._json(404, {"error": {"message": f"not found: {self.path}"}})

            def do_DELETE(self) -> None:
                parts = self._parts()
                stub.api_paths.append(self.path)
                if len(parts) != 2 or parts[0] != "files":
                    self._json(404, {"error": {"message": "no such route"}})
                    return
                self._json(*stub._delete(parts[1]))

        return Handler

    # --- the API --------------------------------------------------------------------------

    def _new_file(self, data: bytes, purpose: str, name: str) -> dict[str, Any]:
        with self.batch_lock:
            self._file_number += 1
            file_id = f"file-{self._file_number}"
            entry = {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": name,
                "purpose": purpose,
                "status": "processed",
            }
            self.files[file_id] = entry
            self.contents[file_id] = data
        return entry

    def _delete(self, file_id: str) -> tuple[int, dict[str, Any]]:
        with self.batch_lock:
            self.deletes.append(file_id)
            if self.delete_fault is not None:
                return self.delete_fault, {"error": {"message": f"fault {self.delete_fault}"}}
            if file_id not in self.files:
                return 404, {"error": {"message": f"no file {file_id}"}}
            del self.files[file_id]
            self.deleted[file_id] = self.contents.pop(file_id, b"")
        return 200, {"id": file_id, "object": "file", "deleted": True}

    def _upload(self, content_type: str, data: bytes) -> dict[str, Any]:
        message = BytesParser(policy=HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + data
        )
        fields: dict[str, tuple[bytes, str]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            filename = part.get_param("filename", header="content-disposition") or ""
            fields[str(name)] = (part.get_payload(decode=True) or b"", str(filename))
        content, filename = fields["file"]
        purpose = fields["purpose"][0].decode()
        return self._new_file(content, purpose, filename)

    def _create(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        file_id = request.get("input_file_id")
        if file_id not in self.contents:
            return 400, {"error": {"message": f"no file {file_id}"}}
        lines = [json.loads(line) for line in self.contents[file_id].splitlines() if line.strip()]
        with self.batch_lock:
            number = len(self.batches)
            batch_id = f"batch_{number + 1}"
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": request.get("endpoint"),
                "input_file_id": file_id,
                "completion_window": request.get("completion_window"),
                "status": "validating",
                "created_at": int(time.time()),
                "metadata": request.get("metadata"),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "output_file_id": None,
                "error_file_id": None,
                "_number": number,
                "_step": 0,
            }
            self.batch_lines[batch_id] = lines
        return 200, self._public(batch_id)

    def _public(self, batch_id: str) -> dict[str, Any]:
        return {k: v for k, v in self.batches[batch_id].items() if not k.startswith("_")}

    def _list(self) -> dict[str, Any]:
        data = [self._public(b) for b in reversed(list(self.batches))]
        return {"object": "list", "data": data, "has_more": False}

    def _cancel(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        if batch_id not in self.batches:
            return 404, {"error": {"message": "no such batch"}}
        self._finish(batch_id, "cancelled")
        return 200, self._public(batch_id)

    def _retrieve(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        if batch_id not in self.batches:
            return 404, {"error": {"message": "no such batch"}}
        end = None
        with self.batch_lock:
            self.retrieves += 1
            batch = self.batches[batch_id]
            total = batch["request_counts"]["total"]
            if batch["status"] in ("validating", "in_progress") and not self.hold.is_set():
                batch["_step"] += 1
                if batch["_step"] == 1:
                    batch["status"] = "in_progress"
                elif batch["_step"] == 2:
                    batch["request_counts"]["completed"] = total // 2
                else:
                    end = self.fate(batch["_number"])
        if end is not None:
            self._finish(batch_id, end)
        return 200, self._public(batch_id)

    def _finish(self, batch_id: str, end: str) -> None:
        """Answer the batch's requests (as far as ``end`` lets it) and write its files."""
        batch = self.batches[batch_id]
        lines = self.batch_lines[batch_id]
        if end == "failed":
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"code": "invalid", "message": "no"}]}
            return
        answered = len(lines) if end == "completed" else len(lines) // 2
        outputs, errors = [], []
        for index, line in enumerate(lines):
            custom_id, body = line["custom_id"], line["body"]
            fault = self.item_fault(custom_id, body) if self.item_fault else None
            if index >= answered or fault == "expired":
                errors.append(
                    {
                        "id": f"batch_req_{index}",
                        "custom_id": custom_id,
                        "response": None,
                        "error": {"code": "batch_expired", "message": "expired unanswered"},
                    }
                )
                continue
            if fault is not None:
                status, reply_body = int(fault), {"error": {"message": f"fault {fault}"}}
            else:
                reply = self.script(body, len(self.answered))
                status, reply_body = reply.status, reply.body
            record = {
                "id": f"batch_req_{index}",
                "custom_id": custom_id,
                "response": {
                    "status_code": status,
                    "request_id": f"req_{index}",
                    "body": reply_body,
                },
                "error": None,
            }
            if status == 200:
                outputs.append(record)
                self.answered.append((batch_id, custom_id, body))
            else:
                errors.append(record)
        batch["status"] = end
        batch["request_counts"] = {
            "total": len(lines),
            "completed": len(outputs),
            "failed": len(errors),
        }
        if outputs:
            data = b"".join(json.dumps(o).encode() + b"\n" for o in outputs)
            batch["output_file_id"] = self._new_file(data, "batch_output", "out.jsonl")["id"]
        if errors:
            data = b"".join(json.dumps(e).encode() + b"\n" for e in errors)
            batch["error_file_id"] = self._new_file(data, "batch_output", "errors.jsonl")["id"]
