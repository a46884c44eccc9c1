"""The account's time zone as the app shows times in it: only names the zone database lists, daylight saving
followed, the zone named beside each time."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from marketsync.kit import zones


def test_only_listed_zone_names_are_zones() -> None:
    assert zones.is_zone("Europe/Berlin") and zones.is_zone("UTC") and zones.is_zone("America/New_York")
    for name in ("", "Mars/Olympus", "../../etc/passwd", "/etc/localtime", "europe/berlin", "Europe/Berlin "):
        assert not zones.is_zone(name), name
    assert zones.zone_names() == tuple(sorted(zones.zone_names())) and "UTC" in zones.zone_names()


@pytest.mark.parametrize(
    ("moment", "name", "shown"),
    [
        (datetime(2026, 1, 15, 11, 0, tzinfo=UTC), "Europe/Berlin", "2026-01-15 12:00:00 CET"),
        (datetime(2026, 7, 15, 11, 0, tzinfo=UTC), "Europe/Berlin", "2026-07-15 13:00:00 CEST"),
        (datetime(2026, 3, 29, 0, 59, 59), "Europe/London", "2026-03-29 00:59:59 GMT"),  # naive: UTC, as stored
        (datetime(2026, 3, 29, 1, 0, 0), "Europe/London", "2026-03-29 02:00:00 BST"),
        (datetime(2026, 1, 1, 3, 0, tzinfo=UTC), "America/New_York", "2025-12-31 22:00:00 EST"),
        (datetime(2026, 1, 1, 3, 0, tzinfo=UTC), "UTC", "2026-01-01 03:00:00 UTC"),
        (datetime(2026, 1, 1, 3, 0, tzinfo=UTC), "No/Longer_A_Zone", "2026-01-01 03:00:00 UTC"),
    ],
)
def test_a_time_is_shown_in_the_zone_with_its_name(moment: datetime, name: str, shown: str) -> None:
    assert zones.shown(moment, name) == shown


def test_the_extremes_are_shown_not_raised() -> None:
    assert zones.shown(datetime(1, 1, 1, tzinfo=UTC), "America/New_York").startswith("0001-01-01 00:00:00")
    assert zones.shown(datetime(9999, 12, 31, 23, 0, tzinfo=UTC), "Asia/Tokyo").startswith("9999-12-31 23:00:00")


def test_a_day_starts_at_midnight_in_the_zone() -> None:
    assert zones.start_of_day(date(2026, 7, 1), "Europe/Berlin") == datetime(2026, 6, 30, 22, 0, tzinfo=UTC)
    assert zones.start_of_day(date(2026, 1, 1), "UTC") == datetime(2026, 1, 1, tzinfo=UTC)
