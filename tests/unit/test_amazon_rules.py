"""The Amazon connector's pure parts: the rate table and its buckets, the feed document and the processing report,
order statuses and money, the order cursor (docs/decisions/0371, 0373, 0374)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from marketsync.marketplaces.amazon import feeds, orders
from marketsync.marketplaces.amazon.contracts import feed_document_errors, processing_report_errors, spapi_contracts
from marketsync.marketplaces.amazon.contracts.validation import SCHEMAS_DIR
from marketsync.marketplaces.amazon.rates import DEFAULT_RATES, MAX_WAIT_S, Rate, RateLimits, rate_from_header
from marketsync.marketplaces.connector import PriceStockLine, Throttled

# -- rates ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("operation", sorted(DEFAULT_RATES))
def test_each_default_rate_is_the_one_amazon_publishes_in_its_model(operation: str) -> None:
    published = spapi_contracts().operation(operation, None if operation != "getOrders" else "ordersV0").default_rate()
    assert published is not None
    assert DEFAULT_RATES[operation] == Rate(*published)


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_a_burst_goes_at_once_then_each_call_waits_for_its_token() -> None:
    ticks = Ticks()
    limits = RateLimits(ticks.monotonic, ticks.sleep)
    for _ in range(DEFAULT_RATES["getFeed"].burst):  # 15 at 2 per second
        await limits.acquire("SELLER", "getFeed")
    assert ticks.slept == []
    await limits.acquire("SELLER", "getFeed")
    assert ticks.slept == [pytest.approx(0.5)]
    await limits.acquire("OTHER", "getFeed")  # another selling partner has a bucket of its own
    assert len(ticks.slept) == 1


async def test_a_wait_beyond_the_longest_is_throttled_at_once_for_the_job_to_retry() -> None:
    ticks = Ticks()
    limits = RateLimits(ticks.monotonic, ticks.sleep)
    for _ in range(20):  # getOrders' burst; then one a minute
        await limits.acquire("SELLER", "getOrders")
    with pytest.raises(Throttled) as throttled:
        await limits.acquire("SELLER", "getOrders")
    assert throttled.value.retry_after_s > MAX_WAIT_S
    assert throttled.value.retry_after_s == pytest.approx(1 / 0.0167, rel=0.01)
    assert ticks.slept == []


async def test_the_rate_limit_header_sets_the_operations_rate_and_a_429_empties_the_bucket() -> None:
    ticks = Ticks()
    limits = RateLimits(ticks.monotonic, ticks.sleep)
    limits.observe("SELLER", "getOrders", "10.0")
    assert limits.rate("SELLER", "getOrders") == Rate(10.0, 20)
    limits.observe("SELLER", "getOrders", "nonsense")  # an unreadable header changes nothing
    assert limits.rate("SELLER", "getOrders").per_second == 10.0
    assert limits.throttled("SELLER", "getOrders") == pytest.approx(0.1)
    await limits.acquire("SELLER", "getOrders")
    assert ticks.slept == [pytest.approx(0.1)]


@pytest.mark.parametrize(("header", "rate"), [("0.5", 0.5), (" 2 ", 2.0), ("0", None), ("-1", None), ("nan", None)])
def test_rate_header_values(header: str, rate: float | None) -> None:
    assert rate_from_header(header) == rate


# -- the price/stock feed ------------------------------------------------------------------------------------------


def test_the_feed_document_patches_offer_and_availability_and_holds_to_amazons_schema() -> None:
    lines = [
        PriceStockLine("SKU-A", Decimal("12.50"), 9),
        PriceStockLine("SKU-B", Decimal("7"), None),
        PriceStockLine("SKU-C", None, 0),
    ]
    document = feeds.price_stock_document("A2SELLER", "A1F83G8C2ARO7P", "GBP", lines)
    assert feed_document_errors(document) == []
    first, second, third = document["messages"]
    assert first == {
        "messageId": 1,
        "sku": "SKU-A",
        "operationType": "PATCH",
        "productType": "PRODUCT",
        "patches": [
            {
                "op": "replace",
                "path": "/attributes/purchasable_offer",
                "value": [
                    {
                        "marketplace_id": "A1F83G8C2ARO7P",
                        "currency": "GBP",
                        "our_price": [{"schedule": [{"value_with_tax": 12.5}]}],
                    }
                ],
            },
            {
                "op": "replace",
                "path": "/attributes/fulfillment_availability",
                "value": [{"fulfillment_channel_code": "DEFAULT", "quantity": 9}],
            },
        ],
    }
    assert [p["path"] for p in second["patches"]] == ["/attributes/purchasable_offer"]
    assert second["patches"][0]["value"][0]["our_price"][0]["schedule"][0]["value_with_tax"] == 7
    assert third["patches"] == [
        {
            "op": "replace",
            "path": "/attributes/fulfillment_availability",
            "value": [{"fulfillment_channel_code": "DEFAULT", "quantity": 0}],
        }
    ]


def test_a_document_amazons_schema_refuses_is_named() -> None:
    document = feeds.price_stock_document("A2SELLER", "A1F83G8C2ARO7P", "GBP", [PriceStockLine("SKU-A", None, 1)])
    document["messages"][0]["operationType"] = "UPSERT"
    assert feed_document_errors(document) != []


def _report(issues: list[dict[str, object]], accepted: int, invalid: int) -> dict[str, object]:
    report: dict[str, object] = {
        "header": {"sellerId": "A2SELLER", "version": "2.0", "feedId": "F1"},
        "issues": issues,
        "summary": {
            "errors": sum(1 for i in issues if i["severity"] == "ERROR"),
            "warnings": sum(1 for i in issues if i["severity"] == "WARNING"),
            "messagesProcessed": accepted + invalid,
            "messagesAccepted": accepted,
            "messagesInvalid": invalid,
        },
    }
    assert processing_report_errors(report) == []
    return report


def test_the_report_gives_each_skus_outcome_by_message_id() -> None:
    report = _report(
        [
            {"messageId": 2, "sku": "SKU-B", "code": "90220", "severity": "ERROR", "message": "price too low"},
            {"messageId": 2, "code": "90221", "severity": "ERROR", "message": "and another thing"},
            {"messageId": 3, "sku": "SKU-C", "code": "18448", "severity": "WARNING", "message": "incomplete"},
        ],
        accepted=2,
        invalid=1,
    )
    result = feeds.feed_result("F1", "DONE", report, ["SKU-A", "SKU-B", "SKU-C"])
    assert result.status == "Done"
    assert result.processed == 2
    assert [(e.reference, e.message) for e in result.errors] == [
        ("SKU-B", "price too low (Amazon 90220); and another thing (Amazon 90221)")
    ]


def test_amazons_example_report_is_read() -> None:
    example = json.loads((SCHEMAS_DIR / "listings-feed-processing-report-schema-v2.example.json").read_text())
    result = feeds.feed_result("1234567890", "DONE", example, ["My-SKU-A", "My-SKU-B", "My-SKU-C", "x", "y"])
    assert {e.reference for e in result.errors} == {"x", "y"}  # messages 4 and 5 carry the errors


@pytest.mark.parametrize("status", ["FATAL", "CANCELLED"])
def test_a_feed_that_ended_fatal_or_cancelled_is_rejected_with_amazons_reason(status: str) -> None:
    report = _report([{"severity": "ERROR", "code": "50001", "message": "The feed is not valid JSON."}], 0, 0)
    result = feeds.feed_result("F1", status, report, ["SKU-A"])
    assert (result.status, result.processed, result.errors) == ("Rejected", 0, [])
    assert result.message == f"The feed is not valid JSON. (Amazon 50001) (feed {status})"
    assert feeds.feed_result("F1", status, None, ["SKU-A"]).status == "Rejected"


def test_a_done_feed_whose_every_message_failed_for_the_feeds_own_reason_is_rejected() -> None:
    report = _report([{"severity": "ERROR", "code": "8541", "message": "Header sellerId mismatch."}], 0, 2)
    result = feeds.feed_result("F1", "DONE", report, ["SKU-A", "SKU-B"])
    assert result.status == "Rejected"
    assert "Header sellerId mismatch." in result.message


# -- orders --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amazon", "ours"),
    [
        ("PendingAvailability", "Pending"),
        ("Pending", "Pending"),
        ("Unshipped", "Unshipped"),
        ("PartiallyShipped", "PartiallyShipped"),
        ("Shipped", "Shipped"),
        ("InvoiceUnconfirmed", "Shipped"),
        ("Canceled", "Cancelled"),
        ("Unfulfillable", "Cancelled"),
        ("SomethingNew", "Unshipped"),
    ],
)
def test_order_statuses(amazon: str, ours: str) -> None:
    assert orders.order_status(amazon) == ours


def test_every_status_amazons_model_names_is_mapped() -> None:
    model = spapi_contracts().operation("getOrders", "ordersV0")
    assert model is not None
    enum = json.loads((SCHEMAS_DIR.parent / "models" / "ordersV0.json").read_text())["definitions"]["Order"]
    assert set(enum["properties"]["OrderStatus"]["enum"]) == set(orders.ORDER_STATUS)


@pytest.mark.parametrize(
    ("order", "ordered", "shipped", "item"),
    [
        ("PartiallyShipped", 2, 2, "Shipped"),
        ("PartiallyShipped", 2, 1, "Unshipped"),
        ("Shipped", 1, 1, "Shipped"),
        ("Cancelled", 1, 0, "Cancelled"),
        ("Pending", 1, 0, "Pending"),
        ("Unshipped", 0, 0, "Unshipped"),
    ],
)
def test_item_statuses_come_from_the_shipped_quantity(order: str, ordered: int, shipped: int, item: str) -> None:
    assert orders.item_status(order, ordered, shipped) == item


AMAZON_ORDER = {
    "AmazonOrderId": "202-1234567-1234567",
    "PurchaseDate": "2026-03-01T10:00:00Z",
    "LastUpdateDate": "2026-03-01T11:00:00Z",
    "OrderStatus": "Unshipped",
    "OrderTotal": {"CurrencyCode": "GBP", "Amount": "25.98"},
    "ShippingAddress": {"City": "LONDON", "PostalCode": "SW1A 1AA", "CountryCode": "GB", "StateOrRegion": "London"},
}
ITEMS = [
    {
        "ASIN": "B000000001",
        "SellerSKU": "SKU-1",
        "OrderItemId": "11111111111111",
        "Title": "A thing",
        "QuantityOrdered": 2,
        "QuantityShipped": 0,
        "ItemPrice": {"CurrencyCode": "GBP", "Amount": "19.98"},
        "ShippingPrice": {"CurrencyCode": "GBP", "Amount": "6.00"},
        "ItemTax": {"CurrencyCode": "GBP", "Amount": "3.33"},
        "ShippingTax": {"CurrencyCode": "GBP", "Amount": "1.00"},
    }
]


def test_an_order_without_a_restricted_data_token_holds_no_personal_data() -> None:
    pulled = orders.marketplace_order(AMAZON_ORDER, ITEMS, None, "GBP")
    assert (pulled.buyer_name, pulled.buyer_email, pulled.buyer_phone) == ("", None, None)
    assert (pulled.shipping_address.name, pulled.shipping_address.line1) == ("", "")
    assert (pulled.shipping_address.city, pulled.shipping_address.country_code) == ("LONDON", "GB")
    item = pulled.items[0]
    assert (item.sku, item.quantity, item.unit_price, item.status) == ("SKU-1", 2, Decimal("9.9900"), "Unshipped")
    assert (pulled.shipping_total, pulled.tax_total, pulled.currency) == (Decimal("6.00"), Decimal("4.33"), "GBP")


def test_an_order_read_with_the_token_carries_the_customer_block() -> None:
    with_pii = {
        **AMAZON_ORDER,
        "BuyerInfo": {"BuyerEmail": "x@marketplace.amazon.co.uk", "BuyerName": "Ann Buyer"},
        "ShippingAddress": {
            "Name": "Ann Buyer",
            "AddressLine1": "1 High St",
            "AddressLine2": "Flat 2",
            "City": "London",
            "PostalCode": "SW1A 1AA",
            "CountryCode": "GB",
            "Phone": "+44 20 0000 0000",
        },
    }
    pulled = orders.marketplace_order(with_pii, ITEMS, with_pii, "GBP")
    assert (pulled.buyer_name, pulled.buyer_email, pulled.buyer_phone) == (
        "Ann Buyer",
        "x@marketplace.amazon.co.uk",
        "+44 20 0000 0000",
    )
    assert (pulled.shipping_address.line1, pulled.shipping_address.line2) == ("1 High St", "Flat 2")


def test_the_cursor_walks_a_window_page_by_page_then_starts_the_next_at_its_end() -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    cursor = orders.OrderCursor.decode(None, start)
    assert cursor == orders.OrderCursor(start)
    now = start + timedelta(hours=1)
    walk = cursor.walk(now)
    assert walk == orders.OrderCursor(start, None, now - orders.WINDOW_LAG)
    paging = walk.after_page("TOKEN-1")
    assert paging == orders.OrderCursor(start, "TOKEN-1", now - orders.WINDOW_LAG)
    assert orders.OrderCursor.decode(paging.encode(), start) == paging
    done = paging.after_page(None)
    assert done == orders.OrderCursor(now - orders.WINDOW_LAG)
    assert done.walk(now) is None  # no time has passed since that walk's end
    assert orders.OrderCursor.decode("not json", start) == orders.OrderCursor(start)
