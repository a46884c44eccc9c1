"""One action of each kind the app's activity log records (decision 0431), through the app's pages over real HTTP:
shared by the log's HTTP and browser tests."""

from __future__ import annotations

import re

import httpx

from marketsync.kit.ids import new_id
from marketsync.models.webhooks import WebhookSubscription
from marketsync.runtime import Runtime
from tests.console.support import Browser
from tests.inventory.support import add_products
from tests.orders.support import ingest, order_by_marketplace_id, pulled_order
from tests.support.factories import make_connection


async def _consent(owner: Browser, location: str) -> None:
    allowed = await owner.post(location, {"decision": "allow"})
    assert allowed.status_code == 303, allowed.text


async def do_one_of_each(
    rt: Runtime, api: httpx.AsyncClient, owner: Browser, account_id: str, tenant_headers: dict[str, str]
) -> dict[str, str]:
    """One action of every kind through the app's pages; what must never show in the log."""
    secrets: dict[str, str] = {}
    # Credentials: created, rotated, deleted.
    created = await owner.post(
        "/app/credentials", {"name": "Warehouse ERP", "scope_OrdersRead": "1"}, csrf_from="/app/credentials"
    )
    shown = (await owner.page(created.headers["location"])).text
    secrets["created secret"] = re.search(r'id="client-secret">([^<]+)<', shown).group(1)  # type: ignore[union-attr]
    credential_id = created.headers["location"].split("created=")[1]
    rotated = await owner.post(
        f"/app/credentials/{credential_id}/rotate", {"grace_hours": "24"}, csrf_from="/app/credentials"
    )
    assert rotated.status_code == 303, rotated.text[:3000]
    shown = (await owner.page(rotated.headers["location"])).text
    secrets["rotated secret"] = re.search(r'id="client-secret">([^<]+)<', shown).group(1)  # type: ignore[union-attr]
    await owner.post(f"/app/credentials/{credential_id}/delete", csrf_from="/app/credentials")
    # People: added, a new password, removed.
    added = await owner.post("/app/people", {"email": "packer@example.com", "role": "Staff"}, csrf_from="/app/people")
    shown = (await owner.page(added.headers["location"])).text
    user_id = added.headers["location"].split("shown=")[1]
    secrets["password"] = re.search(r'id="person-password">([^<]+)<', shown).group(1)  # type: ignore[union-attr]
    await owner.post(f"/app/people/{user_id}/password", csrf_from="/app/people")
    await owner.post(f"/app/people/{user_id}/remove", csrf_from="/app/people")
    # Data Flow.
    await owner.post("/app/dataflow", {"Price": "Merchant", "Stock": "Marketplace"})
    # Marketplaces: connect (with consent), pause, resume, reauthorise, disconnect.
    started = await owner.post("/app/marketplaces", {"platform": "P1", "country": "UK"})
    marketplace_id = started.headers["location"].split("/")[3]
    await _consent(owner, started.headers["location"])
    await owner.post(f"/app/marketplaces/{marketplace_id}/pause")
    await owner.post(f"/app/marketplaces/{marketplace_id}/resume")
    again = await owner.post(f"/app/marketplaces/{marketplace_id}/reauthorize")
    await _consent(owner, again.headers["location"])
    await owner.post(f"/app/marketplaces/{marketplace_id}/disconnect")
    # A hand edit.
    await add_products(rt, account_id, [("MUG-1", "9.50", 4)])
    edited = await owner.client.post(
        "/app/product", params={"sku": "MUG-1"}, data={"csrf": await owner.csrf(), "price": "12.00", "quantity": "7"}
    )
    assert edited.status_code == 303, edited.text
    # Webhooks: a sample, then the subscription deleted.
    subscription_id = new_id()
    async with rt.db.transaction() as session:
        session.add(
            WebhookSubscription(
                id=subscription_id, account_id=account_id, url="https://hooks.example.com/in",
                event_types=["InventoryChanged"], secret_encrypted="t1:none", is_active=True, consecutive_failures=0,
                created_at=rt.clock.now(),
            )
        )  # fmt: skip
    await owner.post(f"/app/webhooks/{subscription_id}/sample", {"event_type": "InventoryChanged"})
    await owner.post(f"/app/webhooks/{subscription_id}/delete")
    # Customer data shown.
    connection = await make_connection(rt, account_id, "P2", "DE")
    await ingest(rt, connection, pulled_order(order_id="MO-REVEAL"))
    order = await order_by_marketplace_id(api, tenant_headers, "MO-REVEAL")
    revealed = await owner.post(f"/app/orders/{order['ServiceOrderID']}/reveal")
    assert revealed.status_code == 200
    secrets["order"] = order["ServiceOrderID"]
    return secrets
