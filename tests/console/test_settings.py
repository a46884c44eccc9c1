"""The account's time zone (docs/decisions/0435-account-time-zone.md): an Owner sets it on the settings page, an IANA
name the zone database lists; every time in the app then shows in it, its zone named, while the API stays UTC."""

from __future__ import annotations

import re

import httpx

from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.orders.support import ingest, pulled_order, tenant_with


async def test_an_owner_sets_the_time_zone_and_the_app_shows_times_in_it_while_the_api_stays_utc(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await tenant_with(rt, api, "P1")
    await ingest(rt, tenant.marketplace("P1"), pulled_order(order_id="MO-ZONE"))  # purchased 2026-01-01T11:00Z
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    settings = await owner.page("/app/settings")
    assert '<option value="UTC" selected>' in settings.text and "Save time zone" in settings.text

    saved = await owner.post("/app/settings", {"time_zone": "Europe/Berlin"}, csrf_from="/app/settings")
    assert saved.status_code == 303 and saved.headers["location"] == "/app/settings?saved=1"
    assert '<option value="Europe/Berlin" selected>' in (await owner.page("/app/settings?saved=1")).text

    orders = await owner.page("/app/orders")
    assert '<time datetime="2026-01-01T11:00:00Z">2026-01-01 12:00:00 CET</time>' in orders.text
    order_id = re.search(r'href="/app/orders/([0-9A-Z]+)"', orders.text).group(1)  # type: ignore[union-attr]
    order = await owner.page(f"/app/orders/{order_id}")
    assert "2026-01-01 12:00:00 CET" in order.text
    api_order = await api.get(f"/api/orders/{order_id}", headers=tenant.headers)
    assert api_order.json()["PurchaseDate"] == "2026-01-01T11:00:00.000Z"  # UTC stays in the API
    await owner.client.aclose()


async def test_a_name_that_is_no_zone_is_refused_beside_the_field_and_nothing_changes(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await tenant_with(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    for name in ("Mars/Olympus", "../../etc/passwd", ""):
        refused = await owner.post("/app/settings", {"time_zone": name}, csrf_from="/app/settings")
        assert refused.status_code == 400 and 'id="error-TimeZone"' in refused.text, name
        assert "An IANA time zone" in refused.text
    assert '<option value="UTC" selected>' in (await owner.page("/app/settings")).text
    await owner.client.aclose()


async def test_staff_see_the_zone_but_only_an_owner_sets_it(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api)
    staff = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    shown = await staff.page("/app/settings")
    assert shown.status_code == 200 and 'id="owner-only"' in shown.text and "Save time zone" not in shown.text
    refused = await staff.post("/app/settings", {"time_zone": "Asia/Tokyo"}, csrf_from="/app/settings")
    assert refused.status_code == 403
    assert '<option value="UTC" selected>' in (await staff.page("/app/settings")).text
    await staff.client.aclose()
