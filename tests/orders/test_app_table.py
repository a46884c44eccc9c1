"""The app's orders table as people work it (docs/decisions/0436-app-tables.md), over real HTTP on both databases:
newest change first with "1-50 of N", sorted by its main columns, filtered by marketplace, status and a purchase
date range in the account's time zone, searched by the marketplace's order id or a SKU, and by the customer's name
only through a logged form post; SKUs link to their product."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx
import pytest
from structlog.testing import capture_logs

from marketsync.console import orders as orders_console
from marketsync.orders import service as orders_service
from marketsync.runtime import Runtime
from tests.console.support import Browser, make_person, signed_in
from tests.orders.support import BUYER_NAME, ingest, pulled_item, pulled_order, tenant_with

ORDER_LINK = re.compile(r'<a href="/app/orders/[0-9A-Z]+">([^<]+)</a>')


def shown_orders(response: httpx.Response) -> list[str]:
    return ORDER_LINK.findall(response.text)


def range_shown(response: httpx.Response) -> str:
    found = re.search(r'<span class="range" id="range">([^<]+)</span>', response.text)
    assert found is not None, response.text[:2000]
    return found.group(1)


async def _estate(rt: Runtime, api: httpx.AsyncClient) -> tuple[str, Browser, dict[str, str]]:
    tenant = await tenant_with(rt, api, "P1", "P2")
    p1, p2 = tenant.marketplace("P1"), tenant.marketplace("P2")
    for day in range(1, 56):  # purchased on day 1..55 of 2026, each changed after the one before
        await ingest(
            rt, p1, pulled_order(order_id=f"UK-{day:02d}", purchase_date=datetime(2026, 1, 1, 12, tzinfo=UTC).replace(
                month=1 + (day - 1) // 28, day=1 + (day - 1) % 28), items=[pulled_item(sku=f"MUG-{day % 3}")]),
        )  # fmt: skip
    await ingest(
        rt, p2, pulled_order(order_id="DE-1", status="Shipped", items=[pulled_item(sku="Tee-Blue", status="Shipped")])
    )
    await ingest(rt, p2, pulled_order(order_id="DE-2", buyer_name="Grace Hopper", items=[pulled_item(sku="CUP")]))
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    return tenant.account_id, person, {"P1": p1.id, "P2": p2.id}


async def test_newest_change_first_with_the_count_sorted_by_each_main_column_and_paged(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    _, person, _ = await _estate(rt, api)
    first = await person.page("/app/orders")
    assert first.status_code == 200 and range_shown(first) == "1–50 of 57"
    assert shown_orders(first)[:3] == ["DE-2", "DE-1", "UK-55"]  # the last change first
    assert 'aria-sort="descending"><a href="/app/orders?sort=changed&amp;dir=asc" id="sort-changed">' in first.text
    second = await person.page("/app/orders?offset=50")
    assert range_shown(second) == "51–57 of 57" and shown_orders(second)[-1] == "UK-01"
    assert 'rel="prev"' in second.text and 'rel="next"' not in second.text

    oldest = await person.page("/app/orders?sort=changed&dir=asc")
    assert shown_orders(oldest)[:2] == ["UK-01", "UK-02"]
    by_order = await person.page("/app/orders?sort=order")
    assert shown_orders(by_order)[:3] == ["DE-1", "DE-2", "UK-01"]
    assert 'aria-sort="ascending"' in by_order.text
    by_purchase = await person.page("/app/orders?sort=purchased&dir=desc")
    assert shown_orders(by_purchase)[0] == "UK-55"  # purchased 2026-02-27; DE-1 and DE-2 on 2026-01-01
    by_status = await person.page("/app/orders?sort=status&dir=desc")
    assert shown_orders(by_status)[:2] == ["DE-2", "UK-55"] or shown_orders(by_status)[0] != "DE-1"
    assert "DE-1" in shown_orders(await person.page("/app/orders?sort=status&dir=asc"))  # Shipped sorts first

    refused = await person.page("/app/orders?sort=price&dir=up&offset=-1")
    assert refused.status_code == 400
    assert all(f'id="error-{name}"' in refused.text for name in ("sort", "dir", "offset"))
    past = await person.page("/app/orders?offset=500")
    assert past.status_code == 200 and "No page starts at order 501" in past.text and range_shown(past) == "0 of 57"
    await person.client.aclose()


async def test_filters_by_marketplace_status_and_purchase_days_in_the_accounts_zone(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id, person, marketplace = await _estate(rt, api)
    p2 = await person.client.get("/app/orders", params={"marketplace": marketplace["P2"]})
    assert sorted(shown_orders(p2)) == ["DE-1", "DE-2"] and range_shown(p2) == "1–2 of 2"
    shipped = await person.client.get("/app/orders", params={"status": "Shipped"})
    assert shown_orders(shipped) == ["DE-1"]
    both = await person.client.get("/app/orders", params=[("status", "Shipped"), ("status", "Unshipped")])
    assert range_shown(both) == "1–50 of 57"

    # Purchased 2026-01-10 12:00 UTC .. 2026-01-12 12:00 UTC: three days, inclusive.
    days = await person.client.get("/app/orders", params={"from": "2026-01-10", "to": "2026-01-12"})
    assert shown_orders(days) == ["UK-12", "UK-11", "UK-10"]  # a range reads in purchase order, newest first
    assert (
        'aria-sort="descending"><a href="/app/orders?from=2026-01-10&amp;to=2026-01-12&amp;sort=purchased' in days.text
    )
    # In Pacific/Kiritimati (UTC+14) 2026-01-12 12:00 UTC is already the 13th: the range's days are the account's.
    owner = await signed_in(api, await make_person(rt, account_id))
    await owner.post("/app/settings", {"time_zone": "Pacific/Kiritimati"}, csrf_from="/app/settings")
    kiritimati = await person.client.get("/app/orders", params={"from": "2026-01-10", "to": "2026-01-12"})
    assert sorted(shown_orders(kiritimati)) == ["UK-09", "UK-10", "UK-11"]

    refused = await person.client.get("/app/orders", params={"status": "Lost", "from": "yesterday", "to": ""})
    assert refused.status_code == 400
    assert 'id="error-OrderStatuses"' in refused.text and 'id="error-From"' in refused.text
    backwards = await person.client.get("/app/orders", params={"from": "2026-02-01", "to": "2026-01-01"})
    assert backwards.status_code == 400 and 'id="error-To"' in backwards.text
    await person.client.aclose()
    await owner.client.aclose()


async def test_search_by_order_id_or_sku_and_skus_link_to_their_product(rt: Runtime, api: httpx.AsyncClient) -> None:
    _, person, _ = await _estate(rt, api)
    one = await person.client.get("/app/orders", params={"q": " DE-1 "})
    assert one.status_code == 303 and re.fullmatch(r"/app/orders/[0-9A-Z]+", one.headers["location"])
    sku = await person.client.get("/app/orders", params={"q": "tee-blue"})  # a SKU, letter case ignored
    assert shown_orders(sku) == ["DE-1"] and range_shown(sku) == "1–1 of 1"
    assert '<a href="/app/product?sku=Tee-Blue">Tee-Blue</a>' in sku.text
    mugs = await person.client.get("/app/orders", params={"q": "MUG-1", "sort": "order"})
    assert range_shown(mugs) == "1–19 of 19" and shown_orders(mugs)[0] == "UK-01"
    nothing = await person.client.get("/app/orders", params={"q": "de-1"})  # an order id is the marketplace's, exact
    assert nothing.status_code == 200 and "No orders match." in nothing.text
    order = await person.page(one.headers["location"])
    assert '<a href="/app/product?sku=Tee-Blue">Tee-Blue</a>' in order.text
    await person.client.aclose()


async def test_a_search_matching_an_order_id_and_skus_lists_each_order_once_within_the_filters(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, other = await tenant_with(rt, api, "P1", "P2"), await tenant_with(rt, api, "P2")
    p1, p2 = tenant.marketplace("P1"), tenant.marketplace("P2")
    # "CUP": the marketplace's id of one order whose items (two letter cases) are SKU CUP, and a SKU of another.
    cups = [pulled_item(sku="CUP"), pulled_item(sku="cup")]
    await ingest(rt, p1, pulled_order(order_id="CUP", items=cups))
    await ingest(rt, p2, pulled_order(order_id="DE-2", items=[pulled_item(sku="Cup")]))
    await ingest(rt, other.marketplace("P2"), pulled_order(order_id="CUP", items=[pulled_item(sku="CUP")]))
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))
    # The search's two seeks are merged: each order once, and only the account's own.
    found = await person.client.get("/app/orders", params={"q": "CUP", "sort": "order"})
    assert shown_orders(found) == ["CUP", "DE-2"] and range_shown(found) == "1–2 of 2"
    on_p2 = await person.client.get("/app/orders", params={"q": "CUP", "marketplace": p2.id})
    assert shown_orders(on_p2) == ["DE-2"] and range_shown(on_p2) == "1–1 of 1"
    await person.client.aclose()


async def test_a_customers_orders_are_found_by_name_only_by_a_logged_post(rt: Runtime, api: httpx.AsyncClient) -> None:
    _, person, marketplace = await _estate(rt, api)
    assert (await person.client.get("/app/orders", params={"customer": "Grace Hopper"})).status_code == 200
    refused = await person.client.post("/app/orders", data={"csrf": "forged", "customer": "Grace Hopper"})
    assert refused.status_code == 403
    with capture_logs() as logs:
        found = await person.post("/app/orders", {"customer": " grace HOPPER "}, csrf_from="/app/orders")
    assert found.status_code == 200 and found.headers["cache-control"] == "no-store"
    assert shown_orders(found) == ["DE-2"] and range_shown(found) == "1–1 of 1"
    assert [entry for entry in logs if entry["event"] == "orders_customer_searched"]
    assert "Grace" not in repr(logs) and "HOPPER" not in repr(logs)
    assert "Grace Hopper" not in found.text.replace('value=" grace HOPPER "', "")  # only what the person typed
    narrowed = await person.post(
        "/app/orders", {"customer": BUYER_NAME, "marketplace": marketplace["P2"]}, csrf_from="/app/orders"
    )
    assert shown_orders(narrowed) == ["DE-1"]
    empty = await person.post("/app/orders", {"customer": " "}, csrf_from="/app/orders")
    assert empty.status_code == 400 and 'id="error-Customer"' in empty.text
    await person.client.aclose()


async def test_another_accounts_orders_are_neither_counted_nor_found(rt: Runtime, api: httpx.AsyncClient) -> None:
    _, owner, _ = await _estate(rt, api)
    await owner.client.aclose()
    stranger = await signed_in(api, await make_person(rt, (await tenant_with(rt, api)).account_id))
    for response in (
        await stranger.page("/app/orders"),
        await stranger.client.get("/app/orders", params={"q": "MUG-1"}),
        await stranger.post("/app/orders", {"customer": "Grace Hopper"}, csrf_from="/app/orders"),
    ):
        assert range_shown(response) == "0 of 0" and shown_orders(response) == []
    await stranger.client.aclose()


async def test_the_count_stops_at_its_bound_and_says_more_than(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, person, _ = await _estate(rt, api)
    monkeypatch.setattr(orders_service, "TABLE_COUNT_MAX", 40)
    many = await person.page("/app/orders")
    assert range_shown(many) == "1–50 of more than 40"
    monkeypatch.setattr(orders_service, "TABLE_COUNT_MAX", 57)
    assert range_shown(await person.page("/app/orders")) == "1–50 of 57"
    await person.client.aclose()


async def test_pages_stop_at_their_reach_and_say_how_to_reach_the_other_orders(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, person, _ = await _estate(rt, api)
    # 57 orders in pages of 20, reaching 40: the second page is the last.
    monkeypatch.setattr(orders_console, "ORDERS_PAGE", 20)
    monkeypatch.setattr(orders_console, "ORDERS_REACH", 40)
    second = await person.page("/app/orders?offset=20")  # rows 21-40: the last the table reaches
    assert second.status_code == 200 and range_shown(second) == "21–40 of 57"
    assert 'rel="next"' not in second.text and 'rel="prev"' in second.text
    assert 'id="reach"' in second.text and "Pages stop at order 40: narrow the filters" in second.text
    assert 'id="reach"' not in (await person.page("/app/orders")).text  # not the last page it reaches
    deeper = await person.page("/app/orders?offset=40")  # an address past the reach (typed, or kept from before)
    assert deeper.status_code == 400 and 'id="error-offset"' in deeper.text
    assert "sort the other way to reach the other orders" in deeper.text
    # Sorted the other way, the oldest are the first page.
    oldest = await person.page("/app/orders?sort=changed&dir=asc")
    assert shown_orders(oldest)[0] == "UK-01" and 'id="reach"' not in oldest.text
    await person.client.aclose()
