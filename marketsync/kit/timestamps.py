"""Request timestamps: ISO 8601 text with an offset, held in UTC from the moment they are parsed.

`UtcDatetime` is the one type of every timestamp a request carries. pydantic alone would read `"1700000000"`
(and, when lax, `1700000000`) as seconds since the epoch, and a time without an offset as local to nobody knows
where; both are a 400 naming the field instead. A valid timestamp can still name an instant Python cannot hold in
UTC (`9999-12-31T23:59:59-14:00` is in year 10000 there); converting once, at the edge, turns that into a 400
naming the field instead of an OverflowError somewhere in a query.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, GetCoreSchemaHandler
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

OUT_OF_RANGE = "must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z once converted to UTC"
NOT_ISO_TEXT = "Must be an ISO 8601 timestamp string with an offset, e.g. 2026-01-31T12:00:00Z (not epoch seconds)."
NAIVE = "Must carry an offset (Z or +hh:mm): a time without one names no instant."
# A calendar date and a time: what tells ISO 8601 text from the digits pydantic would read as epoch seconds.
_ISO_DATE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}")


def in_utc(value: datetime) -> datetime:
    """The same instant in UTC (a naive value is taken as UTC); ValueError if UTC cannot hold it."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(OUT_OF_RANGE) from None


def _iso_text(value: Any) -> Any:
    if isinstance(value, datetime):  # built in Python (tests, the app), not read from a body
        return value
    if not isinstance(value, str) or not _ISO_DATE_TIME.match(value):
        raise PydanticCustomError("iso_timestamp", NOT_ISO_TEXT)
    return value


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise PydanticCustomError("timezone_aware", NAIVE)
    return value


class _IsoText:
    """Only ISO 8601 text reaches the datetime parser, in strict and lax models alike (a strict model validating
    Python data would otherwise refuse every string)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        inner = handler(source)
        if inner.get("type") == "datetime":
            # The aware check is ours (its message names the fix); lax so a string from a parsed dict is read.
            inner = {key: value for key, value in inner.items() if key != "tz_constraint"}
            inner = {**inner, "strict": False}
        return core_schema.no_info_before_validator_function(_iso_text, inner)


UtcDatetime = Annotated[datetime, _IsoText(), AfterValidator(_aware), AfterValidator(in_utc)]
"""A request timestamp: ISO 8601 text that must carry an offset, converted to UTC."""
