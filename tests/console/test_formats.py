"""What the app's pages say about money and time: amounts with their two decimals (an order total of 123.4 is
"123.40 GBP", not "123.4 GBP"), and every date column or date saying it is UTC."""

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


async def test_totals_and_prices_show_two_decimals_and_dates_say_utc(rt: Runtime, api: httpx.AsyncClient) -> None:
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
    assert ">Purchased (UTC)</th>" in orders.text and ">Last changed (UTC)</th>" in orders.text
    order_id = re.search(r'href="/app/orders/([0-9A-Z]+)">MO-TOTAL<', orders.text).group(1)  # type: ignore[union-attr]
    order = await owner.page(f"/app/orders/{order_id}")
    assert "items 20.40, shipping 3.50, tax 0.00, total <strong>23.90 GBP</strong>" in order.text
    assert '<td data-label="Unit price (GBP)">10.20</td>' in order.text and ">Unit price (GBP)</th>" in order.text

    catalogue = await owner.page("/app/catalogue")
    assert '<td data-label="Price">12.50</td>' in catalogue.text and ">Last changed (UTC)</th>" in catalogue.text
    product = await owner.page("/app/product?sku=MUG")
    assert '<dd id="product-price">12.50</dd>' in product.text
    for path, header in (("/app/credentials", "Created (UTC)"), ("/app/imports", "Started (UTC)")):
        assert f">{header}</th>" in (await owner.page(path)).text, path
    await owner.client.aclose()
