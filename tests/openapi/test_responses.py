"""Every operation, called over real HTTP on a tenant with orders, products, jobs and subscriptions, answers what
/openapi.json promises: status, media type, body (closed schemas: no undocumented field), headers. Problem answers
(400, 401, 404, 409, 413, 415, 422) are checked the same way."""

from __future__ import annotations

from typing import Any

import httpx

from marketsync.openapi import OPERATIONS
from marketsync.runtime import Runtime
from tests.catalog.support import anchor_id, create_payload, load_taxonomies, run_jobs
from tests.inventory.support import add_products
from tests.orders.support import ingest, pulled_item, pulled_order
from tests.support.factories import make_tenant
from tests.support.openapi import Conformance
from tests.webhooks.receiver import Receiver

JSON = {"Content-Type": "application/json"}


async def test_every_operation_answers_what_the_document_says(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    document = (await api.get("/openapi.json")).json()
    conformance = Conformance(document)
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    headers = tenant.headers
    p1, p2 = tenant.marketplace("P1"), tenant.marketplace("P2")
    await load_taxonomies(rt, ("P1", "P2"))

    async def call(method: str, path: str, documented: str | None = None, valid: bool = True, **kwargs: Any) -> Any:
        body = kwargs.get("json")
        if valid and body is not None and method == "POST":
            conformance.check_request(documented or path, method, body)
        response = await api.request(method, path, **{"headers": headers, **kwargs})
        return response, conformance.check(documented or path, response)

    # Token.
    form = {
        "grant_type": "client_credentials",
        "client_id": tenant.credential.client_id,
        "client_secret": tenant.credential.client_secret,
        "scope": "OrdersRead InventoryRead",
    }
    response, token = await call("POST", "/connect/token", data=form, headers={})
    assert token["scope"] == "OrdersRead InventoryRead"
    bad_form = {**form, "client_secret": "wrong"}
    response, _ = await call("POST", "/connect/token", data=bad_form, headers={})
    assert response.status_code == 401

    # Marketplaces, categories, a schema.
    _, marketplaces = await call("GET", "/api/marketplaces")
    assert {m["MarketplaceId"] for m in marketplaces["Marketplaces"]} == {p1.id, p2.id}
    _, found = await call("POST", "/api/product-types/Search", json={"MarketplaceId": p2.id, "SearchText": "phone"})
    assert found["ProductTypes"]
    phone_category = anchor_id("P2", "Smartphones")
    _, schema = await call(
        "GET",
        "/api/product-types/Schema",
        documented="/api/product-types/Schema",
        params={"marketplaceId": p2.id, "categoryId": phone_category},
    )
    assert schema["Attributes"]

    # Products: a validated create (with a replay), a P1 create with no category, a push, reads.
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1", Quantity=3)
    key = {**headers, "Idempotency-Key": "create-phone-1"}
    _, created = await call("POST", "/api/products/Create", json=payload, headers=key)
    replay, replayed = await call("POST", "/api/products/Create", json=payload, headers=key)
    assert replay.headers["Idempotent-Replayed"] == "true" and replayed == created
    _, tee = await call("POST", "/api/products/Create", json={"Sku": "TEE-1", "MarketplaceId": p1.id, "Quantity": 2})
    reused, _ = await call("POST", "/api/products/Create", json={**payload, "Quantity": 4}, headers=key)
    assert reused.status_code == 422
    await run_jobs(rt)
    _, job = await call("GET", f"/api/jobs/{created['JobId']}", documented="/api/jobs/{id}")
    assert job["IsComplete"]
    push = {"Items": [{"Sku": "PHONE-1", "Price": 199.99, "Quantity": 5}, {"Sku": "NOPE", "Quantity": 1}]}
    _, pushed = await call("POST", "/api/inventory/price-quantity", json=push)
    assert pushed["Updated"] == 1 and pushed["NotFound"] == 1 and pushed["JobIds"]
    _, pushed_job = await call("GET", f"/api/jobs/{pushed['JobIds'][0]}", documented="/api/jobs/{id}")
    assert pushed_job["JobId"] == pushed["JobIds"][0]
    _, page = await call("POST", "/api/products/List", json={"ModifiedSince": "2020-01-01T00:00:00Z", "Limit": 10})
    assert {p["Sku"] for p in page["Products"]} == {"PHONE-1", "TEE-1"}
    assert any(p["Listings"] for p in page["Products"])
    await call("POST", "/api/products/List")  # no body: the first page of everything
    _, product = await call("GET", "/api/products/phone-1", documented="/api/products/{sku}")
    assert product["Product"]["Sku"] == "PHONE-1" and tee["Sku"] == "TEE-1"
    await add_products(rt, tenant.account_id, [("Case-1", "1", 1), ("CASE-1", "1", 1)])
    ambiguous, _ = await call("GET", "/api/products/case-1", documented="/api/products/{sku}")
    assert ambiguous.status_code == 409
    missing, _ = await call("GET", "/api/products/nothing-here", documented="/api/products/{sku}")
    assert missing.status_code == 404

    # Orders: P1 (written back) and P2 (stored only, with a warning), customer data shown and hidden.
    await ingest(rt, p1, pulled_order(items=[pulled_item(sku="PHONE-1", unit_price="19.99"), pulled_item(sku="TEE-1")]))
    await ingest(rt, p2, pulled_order(currency="EUR", tax_total="3.80"))
    _, orders = await call("POST", "/api/orders/List", json={"IncludeCustomerData": True, "Limit": 1})
    assert orders["NextCursor"] and orders["Orders"][0]["Customer"]
    _, rest = await call("POST", "/api/orders/List", json={"Cursor": orders["NextCursor"]})
    everything = orders["Orders"] + rest["Orders"]
    p1_order = next(o for o in everything if o["Platform"] == "P1")
    p2_order = next(o for o in everything if o["Platform"] == "P2")
    one_path = "/api/orders/{order_id}"
    _, one = await call("GET", f"/api/orders/{p1_order['ServiceOrderID']}", documented=one_path)
    assert "Customer" not in one and one["ServiceOrderID"] == p1_order["ServiceOrderID"]
    _, with_customer = await call(
        "GET", f"/api/orders/{p1_order['ServiceOrderID']}", documented=one_path, params={"includeCustomerData": "true"}
    )
    assert with_customer["Customer"]["ShippingAddress"]
    shipped, cancelled = (item["OrderItemId"] for item in p1_order["Items"])
    confirm = {"OrderItems": [{"OrderItemId": shipped, "CarrierCode": "RM", "TrackingNumber": "RM1"}]}
    _, confirmed = await call("POST", "/api/orders/Confirm", json=confirm)
    assert confirmed["JobIds"] and confirmed["Warnings"] == []
    p2_confirm = {"OrderItems": [{"OrderItemId": p2_order["Items"][0]["OrderItemId"]}]}
    _, stored_only = await call("POST", "/api/orders/Confirm", json=p2_confirm)
    assert stored_only["Warnings"]
    cancel = {"CancelReason": "OutOfStock", "OrderItems": [{"OrderItemId": cancelled}]}
    await call("POST", "/api/orders/Cancel", json=cancel)
    refund = {"Reason": "CustomerReturn", "Currency": "GBP", "OrderItems": [{"OrderItemId": shipped, "Amount": 5.5}]}
    refund_key = {**headers, "Idempotency-Key": "refund-1"}
    _, refunded = await call("POST", "/api/orders/Refund", json=refund, headers=refund_key)
    assert refunded["Refunds"][0]["Amount"] == 5.5
    replay, _ = await call("POST", "/api/orders/Refund", json=refund, headers=refund_key)
    assert replay.headers["Idempotent-Replayed"] == "true"
    update = {"ServiceOrderID": p1_order["ServiceOrderID"], "ExternalReference": "ERP-1"}
    await call("POST", "/api/orders/Update", json=update)
    _, after = await call("GET", f"/api/orders/{p1_order['ServiceOrderID']}", documented=one_path)
    assert after["Refunds"] and after["Shipments"] and after["RefundedTotal"] == 5.5

    # Webhooks: create (and its replay, without the secret), list, a test event, delete.
    subscribe = {"Url": receiver.url(), "EventTypes": ["InventoryChanged", "OrdersDownloaded"]}
    hook_key = {**headers, "Idempotency-Key": "hook-1"}
    _, subscription = await call("POST", "/api/webhooks/Create", json=subscribe, headers=hook_key)
    assert subscription["Subscription"]["Secret"]
    _, again = await call("POST", "/api/webhooks/Create", json=subscribe, headers=hook_key)
    assert "Secret" not in again["Subscription"] and again["Warnings"]
    _, listed = await call("POST", "/api/webhooks/List")
    assert len(listed["Subscriptions"]) == 1
    subscription_id = subscription["Subscription"]["SubscriptionId"]
    _, tested = await call("POST", "/api/webhooks/Test", json={"SubscriptionId": subscription_id})
    assert tested["EventType"] == "InventoryChanged" and tested["DeliveryId"]
    _, deleted = await call("POST", "/api/webhooks/Delete", json={"SubscriptionId": subscription_id})
    assert deleted["Deleted"] is True

    # The problems the middleware and the handlers answer.
    invalid, _ = await call("POST", "/api/orders/List", json={"Limit": "5"}, valid=False)
    assert invalid.status_code == 400
    anonymous, _ = await call("GET", "/api/marketplaces", headers={})
    assert anonymous.status_code == 401
    unsupported, _ = await call(
        "POST", "/api/products/List", content=b"Limit=5", headers={**headers, "Content-Type": "text/plain"}
    )
    assert unsupported.status_code == 415
    too_large, _ = await call(
        "POST",
        "/api/inventory/price-quantity",
        content=b" " * (rt.settings.max_body_bytes + 1),
        headers={**headers, **JSON},
    )
    assert too_large.status_code == 413

    seen = {operation_id for operation_id, status in conformance.seen if status == "200"}
    assert seen == {operation.operation_id for operation in OPERATIONS.values()}
    statuses = {status for _, status in conformance.seen}
    assert {"400", "401", "404", "409", "413", "415", "422"} <= statuses
