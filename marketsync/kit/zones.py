"""IANA time zones: which names are ones, and an instant shown in one (the app's times; the API stays UTC).

Only a name the zone database lists is a zone: `ZoneInfo` alone would also open a file path it is given."""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo, available_timezones

DEFAULT = "UTC"


@functools.cache
def zone_names() -> tuple[str, ...]:
    """The names a person chooses from, sorted; `UTC` among them. Legacy aliases (`US/Eastern`) are kept: an
    account set to one keeps a valid setting."""
    return tuple(sorted(available_timezones() | {DEFAULT}))


def is_zone(name: str) -> bool:
    return name in _names_set()


@functools.cache
def _names_set() -> frozenset[str]:
    return frozenset(zone_names())


@functools.cache
def zone(name: str) -> ZoneInfo:
    """The zone of a stored name; a name that is no longer one (a zone database update) is UTC."""
    return ZoneInfo(name if is_zone(name) else DEFAULT)


def local(moment: datetime, name: str) -> datetime:
    """`moment` (aware, or naive meaning UTC as the database holds it) in the zone `name`."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    try:
        return aware.astimezone(zone(name))
    except OverflowError:  # within a day of year 1 or 9999: shown in UTC rather than not at all
        return aware.astimezone(UTC)


def shown(moment: datetime, name: str) -> str:
    """`2026-03-29 03:30:00 CEST`: the time a person reads, in the account's zone, the zone named."""
    at = local(moment, name)
    # isoformat, not strftime: glibc writes year 1 as "1", not "0001".
    return f"{at.replace(tzinfo=None).isoformat(sep=' ', timespec='seconds')} {at.tzname() or name}"


def start_of_day(day: date, name: str) -> datetime:
    """The instant (UTC) a calendar day begins in the zone `name`: a date range a person types is the account's."""
    return datetime.combine(day, time(0), tzinfo=zone(name)).astimezone(UTC)
