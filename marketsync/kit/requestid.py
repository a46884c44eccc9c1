"""The request id of the current request, for problem bodies, write responses and every log line."""

from __future__ import annotations

import base64
import random
import re
import time
from contextvars import ContextVar

from marketsync.kit.ids import new_id

_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
_ACCEPTABLE = re.compile(r"^[A-Za-z0-9._\-]{8,64}$")
# base32's alphabet to Crockford's (kit.ids): 20 bytes encode to 32 characters, the last 26 hold the low 130 bits.
_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789ABCDEFGHJKMNPQRSTVWXYZ")
_random_bits = random.getrandbits


def current_request_id() -> str:
    value = _request_id.get()
    if value is None:
        value = new_id()
        _request_id.set(value)
    return value


def new_request_id() -> str:
    """An id in the layout of kit.ids (time-ordered, 26 characters), its random part from the `random` module: a
    request id correlates, it guards nothing, so it needs no system entropy (~0.8 µs against ~2.5 µs)."""
    value = (int(time.time() * 1000) << 80 | _random_bits(80)).to_bytes(20, "big")
    return base64.b32encode(value)[6:].translate(_CROCKFORD).decode()


def begin_request(incoming: str | None) -> str:
    """Honour a caller's well-formed X-Request-Id (for their correlation); otherwise mint one."""
    value = incoming if incoming and _ACCEPTABLE.match(incoming) else new_request_id()
    _request_id.set(value)
    return value
