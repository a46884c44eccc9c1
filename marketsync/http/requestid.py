"""The request id of the current request, for problem bodies, write responses and every log line."""

from __future__ import annotations

import random
import re
import time
from contextvars import ContextVar

from marketsync.kit.ids import ALPHABET, new_id

_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
_ACCEPTABLE = re.compile(r"[A-Za-z0-9._\-]{8,64}")  # fullmatch: `$` would allow a final newline
# Every 10-bit value as its two Crockford characters (kit.ids), most significant first.
_PAIRS = tuple(high + low for high in ALPHABET for low in ALPHABET)
_random_bits = random.getrandbits


def current_request_id() -> str:
    value = _request_id.get()
    if value is None:
        value = new_id()
        _request_id.set(value)
    return value


def new_request_id() -> str:
    """An id in the layout of kit.ids (26 characters: 50 bits of milliseconds, 80 random bits), its random part from
    the `random` module: a request id correlates, it guards nothing, so it needs no system entropy. Encoded ten bits
    at a time from a table (~1 µs; base64's base32 is a Python loop on 3.11, ~3 µs)."""
    pairs = _PAIRS
    ms = int(time.time() * 1000)
    bits = _random_bits(80)
    return "".join(
        (
            pairs[ms >> 40 & 1023], pairs[ms >> 30 & 1023], pairs[ms >> 20 & 1023], pairs[ms >> 10 & 1023],
            pairs[ms & 1023], pairs[bits >> 70], pairs[bits >> 60 & 1023], pairs[bits >> 50 & 1023],
            pairs[bits >> 40 & 1023], pairs[bits >> 30 & 1023], pairs[bits >> 20 & 1023], pairs[bits >> 10 & 1023],
            pairs[bits & 1023],
        )
    )  # fmt: skip


def begin_request(incoming: str | None) -> str:
    """Honour a caller's well-formed X-Request-Id (for their correlation); otherwise mint one."""
    value = incoming if incoming and _ACCEPTABLE.fullmatch(incoming) else new_request_id()
    _request_id.set(value)
    return value
