"""Typed calls to every operation through a client openapi-python-client generated from /openapi.json.

Not run by the suite: `python -m bench.conformance.openapi_client` copies it next to the generated `marketsync_api`
package and type-checks both with `mypy --strict` (and `--call` runs it against a live service). It is written as an
integrator would: narrow each answer to its success model, read the fields the spec names with their types.
"""

from __future__ import annotations

import asyncio
import datetime
import sys
from decimal import Decimal

from marketsync_api import AuthenticatedClient, Client
from marketsync_api.api.inventory import push_price_quantity
from marketsync_api.api.jobs import get_job
from marketsync_api.api.marketplaces import list_marketplaces
from marketsync_api.api.orders import (
    cancel_orders,
    confirm_orders,
    get_order,
    list_orders,
    refund_orders,
    update_order,
)
from marketsync_api.api.product_types import get_product_type_schema, search_product_types
from marketsync_api.api.products import create_product, get_product, list_products
from marketsync_api.api.token import get_token
from marketsync_api.api.webhooks import create_webhook, delete_webhook, list_webhooks, send_test_webhook
from marketsync_api.models import (
    CancelItem,
    CancelReason,
    CancelRequest,
    ConfirmItem,
    ConfirmRequest,
    CreateProductRequest,
    CreateSubscriptionRequest,
    DeleteSubscriptionRequest,
    GetTokenRequest,
    GetTokenRequestGrantType,
    JobStatus,
    ListOrdersRequest,
    ListProductsRequest,
    Order,
    OrderStatus,
    Problem,
    PushItem,
    PushRequest,
    RefundItem,
    RefundReason,
    RefundRequest,
    SearchProductTypesRequest,
    SendTestEventRequest,
    Token,
    UpdateOrderRequest,
)


def token(base_url: str, client_id: str, client_secret: str) -> str:
    answer = get_token.sync(
        client=Client(base_url=base_url),
        body=GetTokenRequest(
            grant_type=GetTokenRequestGrantType.CLIENT_CREDENTIALS,
            client_id=client_id,
            client_secret=client_secret,
            scope="OrdersRead OrdersWrite InventoryRead InventoryWrite MarketplacesRead WebhooksWrite",
        ),
    )
    assert isinstance(answer, Token), answer
    expires_in: int = answer.expires_in
    assert expires_in > 0
    return answer.access_token


def order_total(order: Order) -> Decimal:
    total: float = order.order_total  # money is a JSON number, never a string
    return Decimal(str(total))


def every_operation(client: AuthenticatedClient, webhook_url: str) -> dict[str, int]:
    """One call to each operation; returns how many orders, products and subscriptions it saw."""
    marketplaces = list_marketplaces.sync(client=client)
    assert not isinstance(marketplaces, Problem) and marketplaces is not None
    marketplace_id: str = marketplaces.marketplaces[0].marketplace_id
    healthy: bool = marketplaces.marketplaces[0].is_healthy

    page = list_orders.sync(client=client, body=ListOrdersRequest(limit=50, include_customer_data=True))
    assert not isinstance(page, Problem) and page is not None
    next_cursor: str | None = page.next_cursor
    totals = [order_total(order) for order in page.orders]
    item_ids = [item.order_item_id for order in page.orders for item in order.items]
    if page.orders:
        one = get_order.sync(page.orders[0].service_order_id, client=client, include_customer_data=True)
        assert not isinstance(one, Problem) and one is not None
        # The order itself, as inside the List page (no envelope). Its Status is an open string: the statuses the
        # service names today are listed in the document, and one added later must not make this client refuse it.
        status: str = one.status
        assert (
            status in {known.value for known in OrderStatus} and one.service_order_id == page.orders[0].service_order_id
        )
        unseen = one.to_dict()
        unseen["Status"] = "AwaitingCollection"
        unseen["Items"] = [{**item, "Status": "AwaitingCollection"} for item in unseen["Items"]]
        later = Order.from_dict(unseen)
        assert later.status == later.items[0].status == "AwaitingCollection"
        updated = update_order.sync(
            client=client,
            body=UpdateOrderRequest(service_order_id=one.service_order_id, external_reference="ERP-1"),
            idempotency_key=f"update-{one.service_order_id}",
        )
        assert not isinstance(updated, Problem) and updated is not None
        warnings: list[str] = updated.warnings
        assert isinstance(warnings, list)
    if len(item_ids) >= 2:
        shipped, cancelled = item_ids[0], item_ids[1]
        confirmed = confirm_orders.sync(
            client=client,
            body=ConfirmRequest(
                order_items=[
                    ConfirmItem(
                        order_item_id=shipped,
                        ship_date=datetime.datetime.now(datetime.UTC),
                        carrier_code="RM",
                        tracking_number="RM1",
                    )
                ]
            ),
        )
        assert not isinstance(confirmed, Problem) and confirmed is not None
        job_ids: list[str] = confirmed.job_ids
        cancel = cancel_orders.sync(
            client=client,
            body=CancelRequest(
                cancel_reason=CancelReason.OUTOFSTOCK,
                order_items=[CancelItem(order_item_id=cancelled)],
            ),
        )
        assert not isinstance(cancel, Problem) and cancel is not None
        refund = refund_orders.sync(
            client=client,
            body=RefundRequest(
                reason=RefundReason.CUSTOMERRETURN,
                currency=page.orders[0].currency,
                order_items=[RefundItem(order_item_id=shipped, amount=1.5, quantity=0)],
            ),
            idempotency_key=f"refund-{shipped}",
        )
        assert not isinstance(refund, Problem) and refund is not None, refund
        refunded: float = refund.refunds[0].amount
        assert refunded == 1.5 and job_ids is not None

    search = search_product_types.sync(
        client=client, body=SearchProductTypesRequest(marketplace_id=marketplace_id, limit=5)
    )
    assert not isinstance(search, Problem) and search is not None
    category_id: str = search.product_types[0].category_id
    schema = get_product_type_schema.sync(client=client, marketplace_id=marketplace_id, category_id=category_id)
    assert not isinstance(schema, Problem) and schema is not None
    view_id: str = schema.product_type_view_id

    created = create_product.sync(
        client=client,
        body=CreateProductRequest(sku="GEN-CLIENT-1", marketplace_id=marketplace_id, quantity=1, validate_only=True),
        idempotency_key="create-gen-client-1",
    )
    assert not isinstance(created, Problem) and created is not None, created
    action: str = created.listing_action
    pushed = push_price_quantity.sync(
        client=client, body=PushRequest(items=[PushItem(sku="GEN-CLIENT-1", price=9.99, quantity=2)])
    )
    assert not isinstance(pushed, Problem) and pushed is not None
    not_found: int = pushed.not_found

    products = list_products.sync(client=client, body=ListProductsRequest(limit=10))
    assert not isinstance(products, Problem) and products is not None
    if products.products:
        product = get_product.sync(products.products[0].sku, client=client)
        assert not isinstance(product, Problem) and product is not None
        quantity: int = product.product.quantity
        assert quantity >= 0
    if pushed.job_ids:
        job = get_job.sync(pushed.job_ids[0], client=client)
        assert not isinstance(job, Problem) and job is not None
        done: bool = job.is_complete
        started: datetime.datetime = job.started_at  # never null: the time it was accepted until a worker starts it
        assert started.tzinfo is not None
        assert job.status in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED) or not done
        progress: int | None = job.progress_done
        assert isinstance(done, bool) and (progress is None or progress >= 0)

    subscribed = create_webhook.sync(
        client=client,
        body=CreateSubscriptionRequest(url=webhook_url, event_types=["InventoryChanged"]),
        idempotency_key="hook-gen-client",
    )
    assert not isinstance(subscribed, Problem) and subscribed is not None
    subscription_id: str = subscribed.subscription.subscription_id
    hooks = list_webhooks.sync(client=client)
    assert not isinstance(hooks, Problem) and hooks is not None
    failures: int = hooks.subscriptions[0].consecutive_failures
    tested = send_test_webhook.sync(
        client=client, body=SendTestEventRequest(subscription_id=subscription_id, event_type="InventoryChanged")
    )
    assert not isinstance(tested, Problem) and tested is not None
    test_delivery: str = tested.delivery_id
    assert test_delivery and tested.event_type == "InventoryChanged"
    deleted = delete_webhook.sync(client=client, body=DeleteSubscriptionRequest(subscription_id=subscription_id))
    assert not isinstance(deleted, Problem) and deleted is not None and deleted.deleted
    assert healthy in (True, False) and next_cursor != "" and view_id and action and not_found >= 0
    assert failures >= 0 and all(total >= 0 for total in totals)
    return {"orders": len(page.orders), "products": len(products.products), "subscriptions": len(hooks.subscriptions)}


async def asynchronously(client: AuthenticatedClient) -> int:
    """The async variants have the same types."""
    page = await list_orders.asyncio(client=client, body=ListOrdersRequest(limit=10))
    assert not isinstance(page, Problem) and page is not None
    products = await list_products.asyncio(client=client)
    assert not isinstance(products, Problem) and products is not None
    modified: datetime.datetime | None = products.products[0].last_modified_date if products.products else None
    assert modified is None or modified.tzinfo is not None
    return len(page.orders)


def main() -> None:
    base_url, client_id, client_secret, webhook_url = sys.argv[1:5]
    client = AuthenticatedClient(base_url=base_url, token=token(base_url, client_id, client_secret))
    seen = every_operation(client, webhook_url)
    seen["async_orders"] = asyncio.run(asynchronously(client))
    print(seen)


if __name__ == "__main__":
    main()
