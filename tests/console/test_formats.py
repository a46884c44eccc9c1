"""What the app's pages say about money and time: amounts with their two decimals (an order total of 123.4 is
"123.40 GBP", not "123.4 GBP"), and every time naming its zone (the account's: docs/decisions/0435)."""

from __future__ import annotations

import re
from decimal import Decimal

import httpx
import pytest

from marketsync.console.render import money
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_products
from tests.orders.support import ingest, pulled_item, pulled_order
from tests.support.factories import make_tenant


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (123.4, "123.40"),
        (Decimal("9.5"), "9.50"),
        (Decimal("12.5000"), "12.5000"),  # never fewer digits than stored
        (0.0, "0.00"),
        (7, "7.00"),
        ("3.456", "3.456"),
        (None, "—"),
        ("n/a", "n/a"),
    ],
)
def test_money_has_at_least_two_decimals_and_never_loses_one(value: object, shown: str) -> None:
    assert money(value) == shown


async def test_totals_and_prices_show_two_decimals_and_times_name_their_zone(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    await add_products(rt, tenant.account_id, [("MUG", "12.5", 4)])
    await ingest(
        rt,
        tenant.marketplace("P1"),
        pulled_order(order_id="MO-TOTAL", items=[pulled_item(unit_price="10.2", quantity=2)], shipping_total="3.5"),
    )
    owner = await signed_in(api, await make_person(rt, tenant.account_id))

    orders = await owner.page("/app/orders")
    assert "23.90 GBP" in orders.text and "23.9 GBP" not in orders.text
    assert '<time datetime="2026-01-01T11:00:00Z">2026-01-01 11:00:00 UTC</time>' in orders.text  # the purchase
    order_id = re.search(r'href="/app/orders/([0-9A-Z]+)">MO-TOTAL<', orders.text).group(1)  # type: ignore[union-attr]
    order = await owner.page(f"/app/orders/{order_id}")
    assert "items 20.40, shipping 3.50, tax 0.00, total <strong>23.90 GBP</strong>" in order.text
    assert '<td data-label="Unit price (GBP)">10.20</td>' in order.text and ">Unit price (GBP)</th>" in order.text

    catalogue = await owner.page("/app/catalogue")
    assert '<td data-label="Price">12.50 <small>(not listed: no currency yet)</small></td>' in catalogue.text
    product = await owner.page("/app/product?sku=MUG")
    assert '<dd id="product-price">12.50 <small>(not listed: no currency yet)</small></dd>' in product.text
    assert re.search(r"<time datetime=\"[0-9T:.-]+Z\">[0-9 :-]+ UTC</time>", product.text)
    await owner.client.aclose()
