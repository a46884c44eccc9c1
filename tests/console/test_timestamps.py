"""Timestamps a person's browser sends to the app (the paging cursor of jobs, imports and webhook attempts; the order
list's date filters): one UTC cannot hold (`0001-01-01T00:00:00+00:01` is in year 0 there) is a 400 on the app's own
page naming it, never a 500; the extremes UTC can hold are answered. The pure reader is checked over every
timestamp text with hypothesis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from marketsync.console.render import page_cursor
from marketsync.runtime import Runtime
from tests.console.support import Browser, assert_app_page, make_person, signed_in
from tests.support.factories import make_account

# Valid ISO 8601 with an offset, outside what UTC holds once converted (the probe's first, and its mirror image).
BEYOND_UTC = (
    "0001-01-01T00:00:00+00:01",
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59-00:01",
    "9999-12-31T23:59:59.999999-23:59",
)
UTC_EXTREMES = ("0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59.999999+00:00", "0001-01-01T00:01:00+00:01")
CURSOR_PAGES = ("/app/imports", "/app/webhooks")  # the jobs page pages by offset (decision 0436)


@pytest.fixture
async def owner(rt: Runtime, api: httpx.AsyncClient) -> AsyncIterator[Browser]:
    browser = await signed_in(api, await make_person(rt, await make_account(rt)))
    yield browser
    await browser.client.aclose()


@pytest.mark.parametrize("path", CURSOR_PAGES)
async def test_a_page_cursor_utc_cannot_hold_is_a_400_page_naming_it(owner: Browser, path: str) -> None:
    for stamp in BEYOND_UTC:
        response = await owner.client.get(path, params={"before": f"{stamp}|01JX"})
        assert_app_page(response, 400, 'id="error-before"', "start again from the first page")
    filtered = await owner.client.get(path, params={"before": f"{BEYOND_UTC[0]}|01JX", "status": "Failed"})
    assert filtered.status_code == 400


@pytest.mark.parametrize("path", CURSOR_PAGES)
async def test_a_page_cursor_at_the_extremes_utc_can_hold_is_answered(owner: Browser, path: str) -> None:
    for stamp in UTC_EXTREMES:
        response = await owner.client.get(path, params={"before": f"{stamp}|01JX"})
        assert_app_page(response, 200)


async def test_an_unreadable_webhook_log_cursor_is_a_400_as_on_the_other_lists(owner: Browser) -> None:
    """It showed the first page instead, as if it had been read."""
    for before in ("yesterday|01JX", "2026-01-01T00:00:00|01JX", "2026-01-01T00:00:00Z"):
        response = await owner.client.get("/app/webhooks", params={"before": before})
        assert_app_page(response, 400, 'id="error-before"')


@pytest.mark.parametrize("field", ["from", "to"])
async def test_an_order_date_filter_at_the_ends_of_the_calendar_is_answered_or_named(
    owner: Browser, field: str
) -> None:
    """The range's days are the account's (decision 0435): the first and last days of the calendar, in a zone east
    or west of UTC, are answered or named beside the field, never a 500."""
    for zone in ("UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago"):
        await owner.post("/app/settings", {"time_zone": zone}, csrf_from="/app/settings")
        for day in ("0001-01-01", "9999-12-31"):
            response = await owner.client.get("/app/orders", params={field: day})
            assert response.status_code in (200, 400), (zone, day)
            if response.status_code == 400:
                assert 'id="error-To"' in response.text or 'id="error-From"' in response.text
        assert_app_page(await owner.client.get("/app/orders", params={field: "2026-01-01"}), 200)
        assert_app_page(await owner.client.get("/app/orders", params={field: "2026-01-01T00:00+00:01"}), 400)


_OFFSETS = st.timedeltas(min_value=-timedelta(hours=23, minutes=59), max_value=timedelta(hours=23, minutes=59))
_ZONES = st.one_of(st.none(), _OFFSETS.map(timezone))
# Any time, and as often times within a day of either end, where an offset takes them out of UTC's range.
_MOMENTS = st.one_of(
    st.datetimes(timezones=_ZONES),
    st.datetimes(max_value=datetime(1, 1, 2), timezones=_ZONES),
    st.datetimes(min_value=datetime(9999, 12, 30), timezones=_ZONES),
)


@given(moment=_MOMENTS, row_id=st.text(max_size=5))
def test_any_cursor_text_is_read_in_utc_or_refused_never_raised(moment: datetime, row_id: str) -> None:
    cursor = page_cursor(f"{moment.isoformat()}|{row_id}")
    if cursor is None:
        return
    at, read_id = cursor
    assert at.tzinfo is UTC and at == moment and read_id == row_id


@given(text=st.text(max_size=40))
def test_any_text_at_all_is_a_cursor_or_none(text: str) -> None:
    assert page_cursor(text) is None or page_cursor(text)[0].tzinfo is UTC  # type: ignore[index]
