"""Every timestamp a request carries is ISO 8601 text with an offset (marketsync.kit.timestamps.UtcDatetime), over
real HTTP on both databases: epoch seconds, digit-only strings and naive times are a 400 naming the field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketsync.kit.timestamps import NAIVE, NOT_ISO_TEXT
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
