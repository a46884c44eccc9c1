"""Request timestamps are held in UTC from parsing on; an instant UTC cannot hold is a ValueError, not an overflow."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from marketsync.kit.timestamps import NAIVE, NOT_ISO_TEXT, OUT_OF_RANGE, UtcDatetime, in_utc


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


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1700000000", NOT_ISO_TEXT),  # pydantic's own datetime reads this as epoch seconds
        (1700000000, NOT_ISO_TEXT),
        (1700000000.5, NOT_ISO_TEXT),
        ("2026-01-31", NOT_ISO_TEXT),
        (True, NOT_ISO_TEXT),
        ("2026-01-31T12:00:00", NAIVE),
    ],
)
@pytest.mark.parametrize("strict", [True, False], ids=["strict model", "lax model"])
def test_a_request_timestamp_is_iso_text_with_an_offset(value: object, message: str, strict: bool) -> None:
    class Request(BaseModel):
        model_config = ConfigDict(strict=strict)
        At: UtcDatetime

    for validate in (Request.model_validate, lambda data: Request.model_validate_json(json.dumps(data))):
        with pytest.raises(ValidationError) as caught:
            validate({"At": value})
        assert [(error["loc"], error["msg"]) for error in caught.value.errors()] == [(("At",), message)]
    assert Request.model_validate_json('{"At": "2026-01-31T14:00:00+02:00"}').At == datetime(
        2026, 1, 31, 12, tzinfo=UTC
    )
