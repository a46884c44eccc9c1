"""Every timestamp a request carries is ISO 8601 text with an offset (marketsync.kit.timestamps.UtcDatetime), over
real HTTP on both databases: epoch seconds, digit-only strings and naive times are a 400 naming the field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketsync.kit.timestamps import NAIVE, NOT_ISO_TEXT, OUT_OF_RANGE
from marketsync.runtime import Runtime
from tests.support.factories import make_tenant, problem

# (route, body around the value, the field's key in `errors`)
TIMESTAMP_FIELDS = [
    ("/api/products/List", lambda v: {"ModifiedSince": v}, "ModifiedSince"),
    ("/api/orders/List", lambda v: {"UpdatedSince": v}, "UpdatedSince"),
    ("/api/orders/List", lambda v: {"FromDate": v}, "FromDate"),
    ("/api/orders/List", lambda v: {"ToDate": v}, "ToDate"),
    ("/api/orders/Confirm", lambda v: {"OrderItems": [{"OrderItemId": "X", "ShipDate": v}]}, "OrderItems[0].ShipDate"),
]


@pytest.mark.parametrize(("route", "body", "field"), TIMESTAMP_FIELDS, ids=[f[2] for f in TIMESTAMP_FIELDS])
@pytest.mark.parametrize(
    ("value", "message"),
    [("1700000000", NOT_ISO_TEXT), (1700000000, NOT_ISO_TEXT), ("2026-01-31T12:00:00", NAIVE)],
    ids=["digits", "epoch number", "naive"],
)
async def test_a_timestamp_that_is_not_iso_text_with_an_offset_is_a_400_naming_it(
    rt: Runtime, api: httpx.AsyncClient, route: str, body: Any, field: str, value: object, message: str
) -> None:
    tenant = await make_tenant(rt, api)

    response = await api.post(route, json=body(value), headers=tenant.headers)

    assert response.status_code == 400
    assert problem(response)["errors"][field] == [message]


# ISO 8601 with an offset, valid as text, naming an instant UTC cannot hold; and the extremes it can.
BEYOND_UTC = ("0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01", "9999-12-31T23:59:59.999999-23:59")
UTC_EXTREMES = ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "0001-01-01T00:01:00+00:01")


@pytest.mark.parametrize(("route", "body", "field"), TIMESTAMP_FIELDS, ids=[f[2] for f in TIMESTAMP_FIELDS])
async def test_every_timestamp_utc_cannot_hold_is_a_400_naming_it_and_its_extremes_are_answered(
    rt: Runtime, api: httpx.AsyncClient, route: str, body: Any, field: str
) -> None:
    tenant = await make_tenant(rt, api)
    for value in BEYOND_UTC:
        response = await api.post(route, json=body(value), headers=tenant.headers)
        assert response.status_code == 400, (value, response.text)
        [message] = problem(response)["errors"][field]
        assert OUT_OF_RANGE in message, value
    for value in UTC_EXTREMES:
        response = await api.post(route, json=body(value), headers=tenant.headers)
        assert response.status_code < 500, (value, response.text)
        assert field not in problem(response).get("errors", {}) if response.status_code == 400 else True, value
