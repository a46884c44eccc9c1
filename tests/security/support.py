"""An account holding one object of every kind an id names (the "estate"), built with the domain tests' helpers, and
a second account to attack it with."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from sqlalchemy import select

from marketsync.console.guards import SESSION_COOKIE
from marketsync.inventory import service as inventory
from marketsync.jobs import service as jobs_service
from marketsync.models import MarketplaceConnection
from marketsync.models.webhooks import WebhookDelivery
from marketsync.runtime import Runtime
from marketsync.webhooks import engine
from marketsync.webhooks.ssrf import RESOLVER_KEY, StaticResolver
from tests.console.support import Browser, make_person, signed_in
from tests.marketplaces.support import listed_product, our_listing
from tests.orders.support import ingest, item_ids, listed, pulled_order, tenant_with
from tests.security.conftest import SecretsSeen
from tests.support.factories import Tenant
from tests.webhooks.support import fire, subscribe

# Registration resolves this name to a global address; nothing in the suite ever delivers to it.
HOOK_HOST = "hooks.example.test"
HOOK_ADDRESS = "93.184.215.14"
SKU = "OWNED-1"


@dataclass
class Estate:
    tenant: Tenant
    connection: MarketplaceConnection
    sku: str
    listing_id: str  # our listing row (the app's /app/listings/{listing_id})
    service_order_id: str
    order_item_id: str
    job_id: str
    subscription_id: str
    delivery_id: str
    import_id: str
    user_id: str  # a person of the account (the app's /app/people/{user_id})


def resolve_hook_host(rt: Runtime) -> None:
    rt.extras[RESOLVER_KEY] = StaticResolver({HOOK_HOST: HOOK_ADDRESS})


async def tenant_seen(rt: Runtime, api: httpx.AsyncClient, secrets: SecretsSeen, label: str) -> Tenant:
    tenant = await tenant_with(rt, api, "P1")
    secrets.add(f"{label} client secret", tenant.credential.client_secret)
    secrets.add(f"{label} access token", tenant.token)
    return tenant


async def person_seen(rt: Runtime, api: httpx.AsyncClient, secrets: SecretsSeen, tenant: Tenant) -> Browser:
    person = await make_person(rt, tenant.account_id)
    browser = await signed_in(api, person)
    secrets.add(f"password of {person.email}", person.password)
    secrets.add(f"session of {person.email}", str(browser.client.cookies[SESSION_COOKIE]))
    return browser


async def build_estate(rt: Runtime, api: httpx.AsyncClient, secrets: SecretsSeen) -> Estate:
    resolve_hook_host(rt)
    tenant = await tenant_seen(rt, api, secrets, "owner")
    connection = tenant.marketplace("P1")
    product = await listed_product(rt, connection, SKU)
    listing = await our_listing(rt, connection, product.id)
    assert listing is not None
    await ingest(rt, connection, pulled_order(order_id="MO-OWNED"))
    [order] = await listed(api, tenant)
    async with rt.db.transaction() as session:
        job_id = await jobs_service.enqueue_price_stock_push(
            session, rt.clock.now(), tenant.account_id, connection.id, [product.id]
        )
        stock_file = inventory.checked_import_file(f"Sku,Quantity\n{SKU},3\n".encode())
        started = await inventory.start_import(
            rt, session, tenant.account_id, "stock.csv", stock_file, propagate=False, created_by=None
        )
    subscription = await subscribe(api, tenant, f"https://{HOOK_HOST}/owned")
    secrets.add("owner webhook secret", subscription["Secret"])
    await fire(rt, tenant.account_id)
    await engine.fan_out(rt)  # the delivery row only: no attempt is made
    async with rt.db.read() as session:
        delivery_id = (await session.execute(select(WebhookDelivery.id))).scalars().one()
    staff = await make_person(rt, tenant.account_id, "Staff")
    secrets.add(f"password of {staff.email}", staff.password)
    return Estate(
        tenant=tenant,
        connection=connection,
        sku=SKU,
        listing_id=listing.id,
        service_order_id=order["ServiceOrderID"],
        order_item_id=item_ids(order)[0],
        job_id=job_id,
        subscription_id=subscription["SubscriptionId"],
        delivery_id=delivery_id,
        import_id=started.id,
        user_id=staff.user_id,
    )


# A valid body of every JSON operation (what each would accept from an account holding nothing: the answers are
# 400/404 on the ids, never on the shape). tests/security enumerates the OpenAPI document against this table.
MINIMAL_BODIES: dict[str, dict[str, object]] = {
    "/api/orders/List": {"ServiceOrderIDs": ["X"], "OrderStatuses": ["Unshipped"], "Limit": 10},
    "/api/orders/Confirm": {"OrderItems": [{"OrderItemId": "X", "TrackingNumber": "T-1", "CarrierCode": "DHL"}]},
    "/api/orders/Cancel": {"OrderItems": [{"OrderItemId": "X", "Quantity": 1}], "CancelReason": "NoInventory"},
    "/api/orders/Refund": {
        "OrderItems": [{"OrderItemId": "X", "Amount": 1, "Quantity": 1}],
        "Currency": "GBP",
        "Reason": "CustomerReturn",
    },
    "/api/orders/Update": {"ServiceOrderID": "X", "ExternalReference": "R-1"},
    "/api/inventory/price-quantity": {"Items": [{"Sku": "X", "Quantity": 1}]},
    "/api/products/List": {"Limit": 10},
    "/api/product-types/Search": {"MarketplaceId": "X", "Limit": 10},
    "/api/products/Create": {
        "MarketplaceId": "X",
        "Sku": "X",
        "CategoryId": "1",
        "ProductTypeViewId": "1",
        "Quantity": 1,
        "Attributes": {},
        "ValidateOnly": True,
    },
    "/api/webhooks/Create": {"Url": f"https://{HOOK_HOST}/x", "EventTypes": ["FeedOutcome"]},
    "/api/webhooks/List": {},
    "/api/webhooks/Delete": {"SubscriptionId": "X"},
    "/api/webhooks/Test": {"SubscriptionId": "X"},
}


def json_operations(document: dict[str, object]) -> dict[str, dict[str, object]]:
    """path -> the JSON schema of its request body, for every operation taking a JSON body."""
    found: dict[str, dict[str, object]] = {}
    for path, operations in document["paths"].items():  # type: ignore[attr-defined]
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                found[path] = content["application/json"].get("schema", {})
    return found


def resolved(schema: dict[str, object], document: dict[str, object]) -> dict[str, object]:
    """A schema with its $ref (and a single non-null anyOf option) followed."""
    while True:
        if "$ref" in schema:
            name = str(schema["$ref"]).rsplit("/", 1)[-1]
            schema = document["components"]["schemas"][name]  # type: ignore[index]
        elif "anyOf" in schema:
            options = [o for o in schema["anyOf"] if o.get("type") != "null"]  # type: ignore[attr-defined]
            if len(options) != 1:
                return schema
            schema = options[0]
        else:
            return schema
