"""structlog as JSON lines on stderr, with the request id in every line."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any

import orjson
import structlog

from marketsync.http.requestid import _request_id


def _add_request_id(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    request_id = _request_id.get()
    if request_id is not None:
        event.setdefault("request_id", request_id)
    return event


class _CurrentStderr:
    """Writes to whatever sys.stderr is now (test runners swap it), not the stream seen at configure time."""

    def write(self, text: str) -> None:
        sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _json_line(event: Any, **kwargs: Any) -> str:
    """structlog's serializer: orjson (a third of the stdlib's cost on the access line of every request), the stdlib
    for what orjson refuses (integers beyond 64 bits), so a log call never fails."""
    try:
        return orjson.dumps(event, default=kwargs.get("default"), option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(event, **kwargs)


_configured_level: int | None = None
_access_log = structlog.get_logger("marketsync.http")


def access_line(method: str, path: str, status: int, ms: float) -> None:
    """The access line of every request, written straight as the JSON line structlog would write (~1.5 µs against
    ~5.5 µs through its processor chain): the same keys, bound context (account, credential) and request id
    included. Before configure_logging (a library use), the ordinary logger writes it."""
    if _configured_level is None:
        _access_log.info("request", method=method, path=path, status=status, ms=ms)
        return
    if _configured_level > logging.INFO:
        return
    event: dict[str, Any] = {"method": method, "path": path, "status": status, "ms": ms}
    event.update(structlog.contextvars.get_contextvars())
    event["event"] = "request"
    request_id = _request_id.get()
    if request_id is not None:
        event.setdefault("request_id", request_id)
    event["level"] = "info"
    event["timestamp"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    sys.stderr.write(_json_line(event) + "\n")


def configure_logging(level: str = "INFO") -> None:
    """Idempotent per level: loggers cached on first use keep working (and stay observable in tests)."""
    global _configured_level
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    if _configured_level == numeric:
        return
    _configured_level = numeric
    # Standard-library loggers (uvicorn, alembic) are rendered by structlog too: every line is JSON.
    handler = logging.StreamHandler(_CurrentStderr())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=structlog.processors.JSONRenderer(serializer=_json_line),
            foreign_pre_chain=[
                _add_request_id,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.format_exc_info,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)
    for noisy in ("alembic", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            _add_request_id,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=_json_line),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
