"""Customer data is personal data: never in the logs, whatever the request asked for."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

import httpx
import structlog

from marketsync.runtime import Runtime
from tests.orders.support import BUYER_EMAIL, BUYER_NAME, BUYER_PHONE, STREET, ingest, pulled_order
from tests.support.factories import make_tenant


@contextmanager
def captured_log_events() -> Iterator[list[str]]:
    """Every structlog event, rendered, including loggers cached before the test (same processor list)."""
    lines: list[str] = []

    def capture(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        lines.append(repr(dict(event)))
        return event

    processors = structlog.get_config()["processors"]
    processors.insert(0, capture)
    try:
        yield lines
    finally:
        processors.remove(capture)


async def test_customer_data_never_reaches_the_logs(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    with captured_log_events() as lines:
        await ingest(rt, tenant.marketplace("P1"), pulled_order(), pulled_order())
        listed = await api.post("/api/orders/List", json={"IncludeCustomerData": True}, headers=tenant.headers)
        assert BUYER_NAME in listed.text  # it was asked for, so the response carries it
        order_id = listed.json()["Orders"][0]["ServiceOrderID"]
        item_id = listed.json()["Orders"][0]["Items"][0]["OrderItemId"]
        await api.get(f"/api/orders/{order_id}", params={"includeCustomerData": "true"}, headers=tenant.headers)
        await api.post(
            "/api/orders/Confirm",
            json={"OrderItems": [{"OrderItemId": item_id, "TrackingNumber": "T1"}]},
            headers=tenant.headers,
        )

    logs = "\n".join(lines)
    assert "orders_ingested" in logs and "orders_confirmed" in logs  # the logs were captured
    for personal in (BUYER_NAME, BUYER_EMAIL, BUYER_PHONE, STREET, "N1 9GU"):
        assert personal not in logs
