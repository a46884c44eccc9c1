"""API1 Broken Object Level Authorization: every id a request can carry, on every API operation and every app page,
used by a second account against the first account's objects.

A stranger's use of the owner's id is answered exactly as an id that exists nowhere (same status, same problem code
and fields: the object's existence is not revealed, and never 403), it is never a success that reaches the object,
and the owner's object is unchanged afterwards. The id-taking parameters are enumerated from the running app (the
OpenAPI document for the API, the routers for the pages): a new route or field whose name says id or SKU fails
`test_every_id_taking_parameter_has_a_cross_account_probe` until a probe below covers it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select

from marketsync.app import create_app
from marketsync.console import catalogue, orders, pages, webhooks
from marketsync.models import Credential, Listing, MarketplaceConnection, Product
from marketsync.models.inventory import InventoryImport
from marketsync.runtime import Runtime
from tests.console.support import Browser
from tests.security.conftest import SecretsSeen
from tests.security.support import Estate, build_estate, person_seen, tenant_seen
from tests.support.factories import Tenant
from tests.webhooks.support import subscription_row

ID_NAME = re.compile(r"(?i)(id|ids|sku)$")
UNKNOWN = "01ABCDEFGHJKMNPQRSTVWXYZ00"
# Names that look like ids but name no account's object: shared reference data, or the caller's own identity.
NOT_OWNED = {
    ("POST", "/connect/token", "body:client_id"): "the caller's own credential (authentication: tests/auth)",
    ("POST", "/api/products/Create", "body:Sku"): "the SKU of the product to create in the caller's own catalogue",
    ("POST", "/api/products/Create", "body:CategoryId"): "a marketplace's category tree, shared by every account",
    ("POST", "/api/products/Create", "body:ProductTypeViewId"): "a marketplace's product type, shared",
    ("GET", "/api/product-types/Schema", "query:categoryId"): "a marketplace's category tree, shared",
}


@dataclass(frozen=True)
class Probe:
    """One request naming an object by `value`: sent once with the owner's id and once with an unknown one."""

    method: str
    path: str  # may hold {id}
    owners_id: Callable[[Estate], str]
    body: Callable[[str], Any] | None = None
    query: str | None = None  # the query parameter carrying the id
    page: bool = False  # an app page (the stranger's signed-in person) rather than the API (its token)
    found_nothing: bool = False  # 200 saying nothing was found (a list filtered by the id, a push's NotFound)


def _sku(e: Estate) -> str:
    return e.sku


PROBES: dict[tuple[str, str, str], Probe] = {
    ("GET", "/api/orders/{order_id}", "path:order_id"): Probe(
        "GET", "/api/orders/{id}", lambda e: e.service_order_id
    ),
    ("POST", "/api/orders/List", "body:ServiceOrderIDs"): Probe(
        "POST", "/api/orders/List", lambda e: e.service_order_id, lambda v: {"ServiceOrderIDs": [v]}, found_nothing=True
    ),
    ("POST", "/api/orders/Confirm", "body:OrderItemId"): Probe(
        "POST", "/api/orders/Confirm", lambda e: e.order_item_id,
        lambda v: {"OrderItems": [{"OrderItemId": v, "TrackingNumber": "T-1", "CarrierCode": "DHL"}]},
    ),
    ("POST", "/api/orders/Cancel", "body:OrderItemId"): Probe(
        "POST", "/api/orders/Cancel", lambda e: e.order_item_id,
        lambda v: {"OrderItems": [{"OrderItemId": v, "Quantity": 1}], "CancelReason": "NoInventory"},
    ),
    ("POST", "/api/orders/Refund", "body:OrderItemId"): Probe(
        "POST", "/api/orders/Refund", lambda e: e.order_item_id,
        lambda v: {"OrderItems": [{"OrderItemId": v, "Amount": 1, "Quantity": 1}], "Currency": "GBP",
                   "Reason": "CustomerReturn"},
    ),
    ("POST", "/api/orders/Update", "body:ServiceOrderID"): Probe(
        "POST", "/api/orders/Update", lambda e: e.service_order_id,
        lambda v: {"ServiceOrderID": v, "ExternalReference": "STOLEN"},
    ),
    ("POST", "/api/inventory/price-quantity", "body:Sku"): Probe(
        "POST", "/api/inventory/price-quantity", _sku, lambda v: {"Items": [{"Sku": v, "Quantity": 0}]},
        found_nothing=True,
    ),
    ("POST", "/api/products/List", "body:Sku"): Probe(
        "POST", "/api/products/List", _sku, lambda v: {"Sku": v}, found_nothing=True
    ),
    ("GET", "/api/products/{sku}", "path:sku"): Probe("GET", "/api/products/{id}", _sku),
    ("POST", "/api/product-types/Search", "body:MarketplaceId"): Probe(
        "POST", "/api/product-types/Search", lambda e: e.connection.id, lambda v: {"MarketplaceId": v}
    ),
    ("GET", "/api/product-types/Schema", "query:marketplaceId"): Probe(
        "GET", "/api/product-types/Schema?categoryId=1", lambda e: e.connection.id, query="marketplaceId"
    ),
    ("POST", "/api/products/Create", "body:MarketplaceId"): Probe(
        "POST", "/api/products/Create", lambda e: e.connection.id,
        lambda v: {"MarketplaceId": v, "Sku": "STRANGER-1", "CategoryId": "1", "ProductTypeViewId": "1",
                   "Quantity": 1, "Attributes": {}, "ValidateOnly": True},
    ),
    ("GET", "/api/jobs/{id}", "path:id"): Probe("GET", "/api/jobs/{id}", lambda e: e.job_id),
    ("POST", "/api/webhooks/Delete", "body:SubscriptionId"): Probe(
        "POST", "/api/webhooks/Delete", lambda e: e.subscription_id, lambda v: {"SubscriptionId": v}
    ),
    ("POST", "/api/webhooks/Test", "body:SubscriptionId"): Probe(
        "POST", "/api/webhooks/Test", lambda e: e.subscription_id, lambda v: {"SubscriptionId": v}
    ),
    # The app's pages: a signed-in person of the stranger's account.
    ("POST", "/app/credentials/{credential_id}/delete", "path:credential_id"): Probe(
        "POST", "/app/credentials/{id}/delete", lambda e: e.tenant.credential.credential_id, page=True
    ),
    ("POST", "/app/credentials/{credential_id}/rotate", "path:credential_id"): Probe(
        "POST", "/app/credentials/{id}/rotate", lambda e: e.tenant.credential.credential_id,
        lambda v: {"grace_hours": "24"}, page=True,
    ),
    ("POST", "/app/people/{user_id}/password", "path:user_id"): Probe(
        "POST", "/app/people/{id}/password", lambda e: e.user_id, page=True
    ),
    ("POST", "/app/people/{user_id}/remove", "path:user_id"): Probe(
        "POST", "/app/people/{id}/remove", lambda e: e.user_id, page=True
    ),
    ("GET", "/app/marketplaces/{marketplace_id}/consent", "path:marketplace_id"): Probe(
        "GET", "/app/marketplaces/{id}/consent", lambda e: e.connection.id, page=True
    ),
    ("POST", "/app/marketplaces/{marketplace_id}/consent", "path:marketplace_id"): Probe(
        "POST", "/app/marketplaces/{id}/consent", lambda e: e.connection.id, lambda v: {"decision": "allow"}, page=True
    ),
    ("POST", "/app/marketplaces/{marketplace_id}/{action}", "path:marketplace_id"): Probe(
        "POST", "/app/marketplaces/{id}/disconnect", lambda e: e.connection.id, page=True
    ),
    ("GET", "/app/listings/{listing_id}", "path:listing_id"): Probe(
        "GET", "/app/listings/{id}", lambda e: e.listing_id, page=True
    ),
    ("POST", "/app/listings/{listing_id}", "path:listing_id"): Probe(
        "POST", "/app/listings/{id}", lambda e: e.listing_id, page=True
    ),
    ("POST", "/app/listings/{listing_id}/attributes", "path:listing_id"): Probe(
        "POST", "/app/listings/{id}/attributes", lambda e: e.listing_id,
        lambda v: {"category": "1", "view": "1", "attribute_Title": "Stranger"}, page=True,
    ),
    ("GET", "/app/catalogue", "query:sku"): Probe(
        "GET", "/app/catalogue", _sku, query="sku", page=True, found_nothing=True
    ),
    ("GET", "/app/product", "query:sku"): Probe("GET", "/app/product", _sku, query="sku", page=True),
    ("POST", "/app/product", "query:sku"): Probe(
        "POST", "/app/product", _sku, lambda v: {"quantity": "0", "price": "0.01"}, query="sku", page=True
    ),
    ("GET", "/app/imports/{import_id}", "path:import_id"): Probe(
        "GET", "/app/imports/{id}", lambda e: e.import_id, page=True
    ),
    ("GET", "/app/orders/{order_id}", "path:order_id"): Probe(
        "GET", "/app/orders/{id}", lambda e: e.service_order_id, page=True
    ),
    ("POST", "/app/orders/{order_id}/reveal", "path:order_id"): Probe(
        "POST", "/app/orders/{id}/reveal", lambda e: e.service_order_id, page=True
    ),
    ("POST", "/app/orders/{order_id}/{action}", "path:order_id"): Probe(
        "POST", "/app/orders/{id}/cancel", lambda e: e.service_order_id,
        lambda v: {"CancelReason": "OutOfStock", "step": "apply", "key": "probe-key"}, page=True
    ),
    ("POST", "/app/webhooks/deliveries/{delivery_id}/resend", "path:delivery_id"): Probe(
        "POST", "/app/webhooks/deliveries/{id}/resend", lambda e: e.delivery_id, page=True
    ),
    ("POST", "/app/webhooks/{subscription_id}/{action}", "path:subscription_id"): Probe(
        "POST", "/app/webhooks/{id}/delete", lambda e: e.subscription_id, page=True
    ),
    ("POST", "/app/webhooks/{subscription_id}/replace", "path:subscription_id"): Probe(
        "POST", "/app/webhooks/{id}/replace", lambda e: e.subscription_id, page=True
    ),
}  # fmt: skip


def _schema_names(schema: dict[str, Any], schemas: dict[str, Any], seen: tuple[str, ...] = ()) -> set[str]:
    """Every property name in a JSON schema, nested objects and arrays included."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return set() if name in seen else _schema_names(schemas[name], schemas, (*seen, name))
    names: set[str] = set()
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key, []):
            names |= _schema_names(option, schemas, seen)
    if isinstance(schema.get("items"), dict):
        names |= _schema_names(schema["items"], schemas, seen)
    for name, property_schema in schema.get("properties", {}).items():
        names.add(name)
        names |= _schema_names(property_schema, schemas, seen)
    return names


def _says_id(kind_and_name: str) -> bool:
    return ID_NAME.search(kind_and_name.split(":", 1)[1]) is not None


def api_id_parameters(rt: Runtime) -> set[tuple[str, str, str]]:
    """(method, path, "path:x" | "query:x" | "body:x") of every API parameter or body field naming an id or a SKU."""
    document = create_app(rt).openapi()
    schemas = document["components"]["schemas"]
    found: set[tuple[str, str, str]] = set()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            names = {f"{p['in']}:{p['name']}" for p in operation.get("parameters", []) if "in" in p}
            for content in operation.get("requestBody", {}).get("content", {}).values():
                names |= {f"body:{name}" for name in _schema_names(content.get("schema", {}), schemas)}
            found |= {(method.upper(), path, name) for name in names if _says_id(name)}
    return found


def page_id_parameters() -> set[tuple[str, str, str]]:
    """The same for the app's pages, from their routers (path and query parameters)."""
    found: set[tuple[str, str, str]] = set()
    for router in (pages.router, catalogue.router, orders.router, webhooks.router):
        for route in router.routes:
            dependant = getattr(route, "dependant")  # noqa: B009 - APIRoute
            names = [f"path:{p.alias}" for p in dependant.path_params]
            names += [f"query:{p.alias}" for p in dependant.query_params]
            for method in getattr(route, "methods"):  # noqa: B009
                found |= {(method, getattr(route, "path"), n) for n in names if _says_id(n)}  # noqa: B009
    return found


async def test_every_id_taking_parameter_has_a_cross_account_probe(rt: Runtime) -> None:
    taking_ids = api_id_parameters(rt) | page_id_parameters()
    assert len(taking_ids) >= 25  # the enumeration itself works
    unprobed = taking_ids - set(PROBES) - set(NOT_OWNED)
    assert not unprobed, f"ids a stranger could send with no cross-account probe: {sorted(unprobed)}"
    stale = (set(PROBES) | set(NOT_OWNED)) - taking_ids
    assert not stale, f"probes of parameters the app no longer has: {sorted(stale)}"


async def _send(api: httpx.AsyncClient, stranger: Tenant, person: Browser, probe: Probe, value: str) -> httpx.Response:
    path = probe.path.replace("{id}", value)
    params = {probe.query: value} if probe.query else None
    body = probe.body(value) if probe.body else None
    if probe.page:
        if probe.method == "GET":
            return await person.client.get(path, params=params)
        return await person.client.post(path, params=params, data={"csrf": await person.csrf(), **(body or {})})
    return await api.request(probe.method, path, params=params, json=body, headers=stranger.headers)


def _shape(response: httpx.Response, value: str = "") -> tuple[int, Any]:
    """What an answer says about the object, with the parts that differ per request (the id sent, echoed back; ids
    and times of the request) left out."""
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("application/problem+json"):
        problem = response.json()
        return response.status_code, (problem["code"], sorted(problem["errors"]))
    if content_type.startswith("application/json"):
        body = json.loads(response.text.replace(value, "{id}") if value else response.text)
        return response.status_code, {k: v for k, v in body.items() if k != "RequestId" and not k.startswith("Next")}
    return response.status_code, None  # a page: its status says found or not


async def _snapshot(rt: Runtime, estate: Estate) -> dict[str, Any]:
    """Everything of the owner's that a probe could change."""
    account = estate.tenant.account_id
    async with rt.db.read() as session:
        products = (await session.execute(select(Product.sku, Product.price, Product.quantity)
                                          .where(Product.account_id == account))).all()  # fmt: skip
        listings = (
            await session.execute(select(Listing.id, Listing.status).where(Listing.account_id == account))
        ).all()
        connections = (await session.execute(select(MarketplaceConnection.id, MarketplaceConnection.state)
                                             .where(MarketplaceConnection.account_id == account))).all()  # fmt: skip
        credentials = (await session.execute(select(Credential.id).where(Credential.account_id == account))).all()
        imports = (await session.execute(select(InventoryImport.id).where(InventoryImport.account_id == account))).all()
    return {
        "products": sorted(products), "listings": sorted(listings), "connections": sorted(connections),
        "credentials": sorted(credentials), "imports": sorted(imports),
        "subscription": await subscription_row(rt, estate.subscription_id) is not None,
    }  # fmt: skip


async def test_a_stranger_reaches_none_of_another_accounts_objects(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    estate = await build_estate(rt, api, secrets_seen)
    stranger = await tenant_seen(rt, api, secrets_seen, "stranger")
    person = await person_seen(rt, api, secrets_seen, stranger)
    before = await _snapshot(rt, estate)
    owners_order = await api.get(f"/api/orders/{estate.service_order_id}", headers=estate.tenant.headers)
    try:
        for key, probe in PROBES.items():
            owned = await _send(api, stranger, person, probe, probe.owners_id(estate))
            unknown = await _send(api, stranger, person, probe, UNKNOWN)
            value = probe.owners_id(estate)
            assert _shape(owned, value) == _shape(unknown, UNKNOWN), (key, owned.status_code, owned.text[:300])
            if probe.found_nothing:
                assert owned.status_code == 200, key
            else:
                assert owned.status_code in (400, 404), (key, owned.status_code, owned.text[:300])
    finally:
        await person.client.aclose()
    assert await _snapshot(rt, estate) == before
    after = await api.get(f"/api/orders/{estate.service_order_id}", headers=estate.tenant.headers)
    assert _shape(after) == _shape(owners_order)  # not confirmed, cancelled, refunded or re-referenced
