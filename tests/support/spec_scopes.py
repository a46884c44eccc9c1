"""The scope of every API operation, copied from the spec, not derived from the code under test.

Spec section 4 names the scope in each endpoint group's heading ("Orders (read: OrdersRead; write: OrdersWrite)",
"Inventory: price and stock push (InventoryWrite)", "Inventory: catalogue reads (InventoryRead)", "creating a
product (search, schema: InventoryRead; create: InventoryWrite)", "GET /api/marketplaces (MarketplacesRead)",
"GET /api/jobs/{id} (InventoryRead)", "Webhooks (WebhooksWrite)"), and section 5's table says the same in words:
InventoryRead reads products, their listings and job status and searches categories and schemas; InventoryWrite
creates products and pushes price and quantity. Path parameters are written as the spec writes them.
"""

from __future__ import annotations

import re

SPEC_SCOPES: dict[tuple[str, str], str] = {
    ("POST", "/api/orders/List"): "OrdersRead",
    ("GET", "/api/orders/{id}"): "OrdersRead",
    ("POST", "/api/orders/Confirm"): "OrdersWrite",
    ("POST", "/api/orders/Cancel"): "OrdersWrite",
    ("POST", "/api/orders/Refund"): "OrdersWrite",
    ("POST", "/api/orders/Update"): "OrdersWrite",
    ("POST", "/api/inventory/price-quantity"): "InventoryWrite",
    ("POST", "/api/products/List"): "InventoryRead",
    ("GET", "/api/products/{sku}"): "InventoryRead",
    ("POST", "/api/product-types/Search"): "InventoryRead",
    ("GET", "/api/product-types/Schema"): "InventoryRead",
    ("POST", "/api/products/Create"): "InventoryWrite",
    ("GET", "/api/marketplaces"): "MarketplacesRead",
    ("GET", "/api/jobs/{id}"): "InventoryRead",
    ("POST", "/api/webhooks/Create"): "WebhooksWrite",
    ("POST", "/api/webhooks/List"): "WebhooksWrite",
    ("POST", "/api/webhooks/Delete"): "WebhooksWrite",
    ("POST", "/api/webhooks/Test"): "WebhooksWrite",  # not in the spec: a test event (docs/decisions/0421)
}


def spec_key(method: str, path: str) -> tuple[str, str]:
    """A route as the spec writes it: `{order_id}` and `{sku:path}` are `{id}` and `{sku}` there."""
    return method.upper(), re.sub(r"\{([^}:]+)(:[^}]*)?\}", lambda m: "{sku}" if m.group(1) == "sku" else "{id}", path)
