"""orjson in one place: exact decimals, UTC timestamps, sorted output where bytes must be stable."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson

from marketsync.kit.clock import iso


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        # Prices carry at most 4 decimals and 14 significant digits, so a float's shortest repr is exact.
        return float(value)
    if isinstance(value, datetime):
        return iso(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any) -> bytes:
    # Datetimes go through iso() (milliseconds, Z) rather than orjson's own format.
    return orjson.dumps(value, default=_default, option=orjson.OPT_PASSTHROUGH_DATETIME)


def loads(raw: bytes | str) -> Any:
    return orjson.loads(raw)


def column_text(value: Any) -> str:
    """A JSON column's stored text (the engines' json_serializer): as `dumps`, keys that are not strings written as
    strings, as the standard library's json did."""
    return orjson.dumps(
        value, default=_default, option=orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS
    ).decode()
