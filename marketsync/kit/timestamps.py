"""Request timestamps: ISO 8601 with an offset, held in UTC from the moment they are parsed.

A valid timestamp can still name an instant Python cannot hold in UTC (`9999-12-31T23:59:59-14:00` is in year
10000 there); converting once, at the edge, turns that into a 400 naming the field instead of an OverflowError
somewhere in a query.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime

OUT_OF_RANGE = "must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z once converted to UTC"


def in_utc(value: datetime) -> datetime:
    """The same instant in UTC (a naive value is taken as UTC); ValueError if UTC cannot hold it."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(OUT_OF_RANGE) from None


UtcDatetime = Annotated[AwareDatetime, AfterValidator(in_utc)]
"""A request timestamp that must carry an offset, converted to UTC."""
