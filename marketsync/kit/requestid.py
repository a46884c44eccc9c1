"""The request id of the current request, for problem bodies, write responses and every log line."""

from __future__ import annotations

import re
from contextvars import ContextVar

from marketsync.kit.ids import new_id

_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
_ACCEPTABLE = re.compile(r"^[A-Za-z0-9._\-]{8,64}$")


def current_request_id() -> str:
    value = _request_id.get()
    if value is None:
        value = new_id()
        _request_id.set(value)
    return value


def begin_request(incoming: str | None) -> str:
    """Honour a caller's well-formed X-Request-Id (for their correlation); otherwise mint one."""
    value = incoming if incoming and _ACCEPTABLE.match(incoming) else new_id()
    _request_id.set(value)
    return value
