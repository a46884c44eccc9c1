"""Request timestamps are held in UTC from parsing on; an instant UTC cannot hold is a ValueError, not an overflow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from marketsync.kit.timestamps import OUT_OF_RANGE, in_utc


def test_offsets_are_converted_and_naive_values_taken_as_utc() -> None:
    plus_two = datetime(2026, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert in_utc(plus_two) == datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    assert in_utc(plus_two).tzinfo is UTC
    assert in_utc(datetime(2026, 5, 1, 12, 0)) == datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14))),
        datetime(1, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=14))),
    ],
)
def test_instants_beyond_what_utc_can_hold_are_value_errors(value: datetime) -> None:
    with pytest.raises(ValueError, match=OUT_OF_RANGE):
        in_utc(value)


def test_the_extremes_utc_can_hold_are_kept() -> None:
    assert in_utc(datetime.max.replace(tzinfo=UTC)) == datetime.max.replace(tzinfo=UTC)
    assert in_utc(datetime.min.replace(tzinfo=UTC)) == datetime.min.replace(tzinfo=UTC)
