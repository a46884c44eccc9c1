"""Request ids (http/requestid.py): the layout of kit.ids, minted without base64's Python loop."""

from __future__ import annotations

import base64
import random
import time

import pytest

from marketsync.http import requestid
from marketsync.kit.ids import ALPHABET, new_id

# base64's base32 alphabet to Crockford's: the encoding the table replaced, kept here as the reference.
_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", ALPHABET.encode())


def by_base32(milliseconds: int, bits: int) -> str:
    value = (milliseconds << 80 | bits).to_bytes(20, "big")
    return base64.b32encode(value)[6:].translate(_TO_CROCKFORD).decode()


@pytest.mark.parametrize("seed", range(20))
def test_request_ids_encode_time_and_random_bits_as_base32_would(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    chooser = random.Random(seed)
    milliseconds = chooser.choice([0, 1, 1023, 1024, 2**50 - 1, int(time.time() * 1000), chooser.getrandbits(50)])
    bits = chooser.choice([0, 2**80 - 1, chooser.getrandbits(80)])
    monkeypatch.setattr(requestid.time, "time", lambda: milliseconds / 1000 + 0.0001)
    monkeypatch.setattr(requestid, "_random_bits", lambda count: bits if count == 80 else pytest.fail(str(count)))
    assert requestid.new_request_id() == by_base32(milliseconds, bits)


def test_request_ids_share_the_layout_of_ids() -> None:
    minted = {requestid.new_request_id() for _ in range(1000)}
    assert len(minted) == 1000
    reference = new_id()
    for value in minted:
        assert len(value) == 26 and set(value) <= set(ALPHABET)
        # Time-ordered like kit.ids: the leading (millisecond) characters match an id minted in the same second.
        assert value[:7] == reference[:7]


@pytest.mark.parametrize("sent", ["abcdefgh\n", "abcdefgh\r\n", "abcdefgh\nX-Injected: 1"])
def test_a_request_id_with_a_line_break_is_replaced(sent: str) -> None:
    """`$` also matches before a final newline: "abcdefgh\\n" was honoured, to be echoed in the X-Request-Id header
    and written into every log line of the request. The HTTP parsers in use refuse such a header value; an ASGI server
    that passes one on no longer gets it echoed."""
    assert requestid.begin_request(sent) != sent
    assert requestid.begin_request("abcdefgh") == "abcdefgh"
