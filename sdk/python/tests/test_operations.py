"""Every operation of the API through the SDK, sync and async, against the live service on both databases:
typed results with the spec's field names and exact money, and nothing the SDK failed to parse."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import httpx
from marketsync_client import models as m

from marketsync.auth.scopes import ALL_SCOPES
from marketsync.runtime import Runtime
from marketsync.webhooks.ssrf import RESOLVER_KEY, StaticResolver
from tests.catalog.support import anchor_id, load_taxonomies, phone_attributes
from tests.inventory.support import add_products, stored
from tests.orders.support import BUYER_NAME, ingest, pulled_item, pulled_order
from tests.support.factories import make_tenant
from tests.support.sdk import assert_exact, draining_worker, sdk


async def test_every_operation(rt: Runtime, api: httpx.AsyncClient, flavour: str) -> None:
    await load_taxonomies(rt, ("P1", "P2"))
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    rt.extras[RESOLVER_KEY] = StaticResolver({"hooks.example.test": "127.0.0.1"})

    async with sdk(api, tenant, flavour) as client:
        # Token
        token = await client.fetch_token()
        assert token.token_type == "Bearer" and token.expires_in > 0
        assert set(token.scope.split()) == set(ALL_SCOPES)

        # Marketplaces
        marketplaces = await client.list_marketplaces()
        by_platform = {mp.Platform: mp for mp in marketplaces}
        assert set(by_platform) == {"P1", "P2"}
        p1 = by_platform["P1"].MarketplaceId
        assert p1 == tenant.marketplace("P1").id and by_platform["P2"].Country == "DE"
        for marketplace in marketplaces:
            assert_exact(marketplace)

        # Product types: search, schema, create
        category = anchor_id("P1", "Smartphones")
        found = await client.search_product_types(p1, search_text="Smartphones", limit=10)
        assert category in {t.CategoryId for t in found.ProductTypes} and found.TotalCount >= 1
        assert_exact(found)
        schema = await client.get_product_type_schema(p1, category)
        assert schema.CategoryId == category and {a.Code for a in schema.Attributes} >= set(phone_attributes())
        assert_exact(schema)
        created = await client.create_product(
            "SDK-PHONE-1",
            p1,
            quantity=4,
            category_id=category,
            product_type_view_id=schema.ProductTypeViewId,
            attributes=phone_attributes(),
        )
        assert (created.Sku, created.ListingAction) == ("SDK-PHONE-1", "Create") and created.JobId
        assert_exact(created)

        # Jobs: the publish, waited for while workers run
        assert created.JobId is not None
        async with draining_worker(rt):
            published = await client.wait_for_job(created.JobId, timeout=60, poll_s=0.05)
        assert (published.JobId, published.Type, published.Status) == (created.JobId, "ListingPublish", "Completed")
        assert published.IsComplete and published.IsSuccessful and published.ProgressDone == 1
        assert_exact(published)

        # Inventory: push, product reads
        pushed = await client.push_price_quantity(
            [m.PushItem(Sku="SDK-PHONE-1", Price=Decimal("19.99"), Quantity=7), {"Sku": "NO-SUCH-SKU", "Quantity": 1}]
        )
        assert [(r.Sku, r.Result) for r in pushed.Results] == [("SDK-PHONE-1", "Updated"), ("NO-SUCH-SKU", "NotFound")]
        assert (pushed.Updated, pushed.NotFound, pushed.Unchanged) == (1, 1, 0)
        assert_exact(pushed)
        # The price went over the wire as an exact number.
        assert (await stored(rt, tenant.account_id))["SDK-PHONE-1"][:2] == (Decimal("19.99"), 7)
        product = await client.get_product("sdk-phone-1")  # case-insensitive read
        assert (product.Sku, product.Quantity) == ("SDK-PHONE-1", 7)
        assert [listing.Platform for listing in product.Listings] == ["P1"]
        assert_exact(product)
        listed = await client.list_products(sku="SDK-PHONE-1")
        assert listed.TotalCount == 1 and listed.Products[0].LastModifiedDate.tzinfo is not None
        assert_exact(listed)

        # Orders: list, read, confirm, cancel, refund, update
        pulled = pulled_order(
            items=[
                pulled_item(quantity=1, unit_price="10.50"),
                pulled_item(quantity=1, unit_price="3.00"),
                pulled_item(quantity=2, unit_price="7.25"),
            ]
        )
        await ingest(rt, tenant.marketplace("P1"), pulled)
        page = await client.list_orders(order_statuses=["Unshipped"], limit=10)
        [summary] = page.Orders
        assert summary.MarketplaceOrderId == pulled.marketplace_order_id and summary.Customer is None
        assert page.NextCursor is None and page.NextUpdatedSince.tzinfo is not None
        assert_exact(page)
        order = await client.get_order(summary.ServiceOrderID, include_customer_data=True)
        assert order.Customer is not None and order.Customer.Name == BUYER_NAME
        assert order.ItemsTotal == Decimal("28.00") and order.OrderTotal == Decimal("31.50")
        assert_exact(order)
        shipped_id, cancelled_id, refunded_id = (item.OrderItemId for item in order.Items)

        confirmed = await client.confirm_orders(
            [
                m.ConfirmItem(
                    OrderItemId=shipped_id, CarrierCode="RM", TrackingNumber="T-1", ShipDate=datetime.now(UTC)
                ),
                {"OrderItemId": refunded_id, "CarrierCode": "RM"},
            ]
        )
        assert {(i.OrderItemId, i.Status) for i in confirmed.Items} == {
            (shipped_id, "Shipped"),
            (refunded_id, "Shipped"),
        }
        [write_back] = confirmed.JobIds  # P1: sent to the marketplace
        assert confirmed.Warnings == []
        assert_exact(confirmed)
        job = await client.get_job(write_back)
        assert job.JobId == write_back and job.Type
        assert_exact(job)

        cancelled = await client.cancel_orders("OutOfStock", [m.CancelItem(OrderItemId=cancelled_id)])
        assert [(i.OrderItemId, i.Status) for i in cancelled.Items] == [(cancelled_id, "Cancelled")]
        assert_exact(cancelled)
        refunded = await client.refund_orders(
            "CustomerReturn", "GBP", [m.RefundItem(OrderItemId=refunded_id, Amount=Decimal("7.25"), Quantity=1)]
        )
        [refund] = refunded.Refunds
        assert (refund.Amount, refund.Currency, refund.ServiceOrderID) == (
            Decimal("7.25"),
            "GBP",
            order.ServiceOrderID,
        )
        assert_exact(refunded)
        updated = await client.update_order(order.ServiceOrderID, "ERP-42")
        assert (updated.ServiceOrderID, updated.ExternalReference) == (order.ServiceOrderID, "ERP-42")
        assert_exact(updated)
        cleared = await client.update_order(order.ServiceOrderID, None)  # None is sent as null: it clears
        assert cleared.ExternalReference is None
        after = await client.get_order(order.ServiceOrderID)
        assert after.Customer is None and after.ExternalReference is None
        assert after.RefundedTotal == Decimal("7.25") and len(after.Refunds) == 1 and len(after.Shipments) == 2

        # Webhooks: create (the secret once), list, a test event, delete
        subscribed = await client.create_webhook("https://hooks.example.test/h", ["InventoryChanged", "FeedOutcome"])
        subscription = subscribed.Subscription
        assert subscription.Secret and subscription.IsActive and subscribed.Warnings == []
        assert subscription.EventTypes == ["InventoryChanged", "FeedOutcome"]
        assert_exact(subscribed)
        [listed_subscription] = await client.list_webhooks()
        assert listed_subscription.SubscriptionId == subscription.SubscriptionId
        assert "Secret" not in listed_subscription.model_dump()  # never again after the create
        assert_exact(listed_subscription)
        tested = await client.send_test_webhook(subscription.SubscriptionId, "FeedOutcome")
        assert (tested.SubscriptionId, tested.EventType) == (subscription.SubscriptionId, "FeedOutcome")
        assert tested.DeliveryId and tested.Warnings == []
        assert_exact(tested)
        deleted = await client.delete_webhook(subscription.SubscriptionId)
        assert deleted.Deleted and deleted.SubscriptionId == subscription.SubscriptionId
        assert_exact(deleted)
        assert await client.list_webhooks() == []


async def test_skus_that_are_dot_segments_are_read_as_themselves(
    rt: Runtime, api: httpx.AsyncClient, flavour: str
) -> None:
    """A SKU "." or ".." in a path would be removed by URL normalisation (``/api/products/..`` is ``/api/``): the
    SDK percent-encodes its dots, so the product is found, not a 404 from another route."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [(".", "1.00", 3), ("..", "2.00", 5), ("a/..", "3.00", 7)])
    async with sdk(api, tenant, flavour) as client:
        for sku, quantity in ((".", 3), ("..", 5), ("a/..", 7)):
            product = await client.get_product(sku)
            assert (product.Sku, product.Quantity) == (sku, quantity)
