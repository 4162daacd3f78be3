"""Helpers of the viewer's tests: results and review files, and the viewer served on 127.0.0.1
(port 0) in a thread."""

from __future__ import annotations

import csv
import threading
from pathlib import Path
from typing import Any

import orjson

from qa_eval.view.server import make_server

__all__ = ["Served", "write_jsonl", "write_review"]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write results as JSON Lines."""
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def write_review(path: Path, rows: list[dict[str, str]]) -> Path:
    """Write a review CSV."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


class Served:
    """A viewer served on 127.0.0.1 in a thread."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.server, self.sock, self.url = make_server(settings)
        self.base = self.url.split("/?")[0]
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
