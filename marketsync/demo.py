"""`marketsync demo`: the demo tenant, idempotently. Each domain adds its part in `<domain>/demo.py`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.catalog import demo as catalog_demo
from marketsync.inventory import demo as inventory_demo
from marketsync.kinds import SANDBOX_KINDS, home_site
from marketsync.marketplaces import demo as marketplaces_demo
from marketsync.marketplaces import service as marketplace_service
from marketsync.models import MarketplaceConnection
from marketsync.orders import demo as orders_demo
from marketsync.people import service as people_service
from marketsync.runtime import Runtime
from marketsync.webhooks import demo as webhooks_demo

DEMO_ACCOUNT = "demo"
DEMO_MARKETPLACES = tuple((platform, home_site(platform)) for platform in SANDBOX_KINDS)  # P1 UK, P2 DE, P3 US, P4 FR
# Each domain's part of the demo, in order: taxonomies before the inventory, the inventory before listings and orders.
DEMO_APP_USER = "owner@demo.example"

DEMO_SEEDERS: tuple[Callable[[Runtime, str, Sequence[MarketplaceConnection]], Awaitable[None]], ...] = (
    catalog_demo.seed,
    inventory_demo.seed,
    marketplaces_demo.seed,
    orders_demo.seed,
    webhooks_demo.seed,
)


@dataclass
class DemoTenant:
    account_id: str
    connections: list[MarketplaceConnection] = field(default_factory=list)


async def run_demo(rt: Runtime) -> dict[str, Any]:
    async with rt.db.transaction() as session:
        account = await auth_service.find_account_by_name(session, DEMO_ACCOUNT)
        if account is None:
            account = await auth_service.create_account(rt, session, DEMO_ACCOUNT)
        credential = await auth_service.create_credential(rt, session, account.id, "demo", list(ALL_SCOPES))
        connections = []
        for platform, country in DEMO_MARKETPLACES:
            connection = await marketplace_service.find_site(session, account.id, platform, country)
            if connection is None:
                connection = await marketplace_service.connect(rt, session, account.id, platform, country)
            connections.append(connection)
        app_user = await people_service.ensure_user(rt, session, account.id, DEMO_APP_USER, people_service.Role.OWNER)
    tenant = DemoTenant(account.id, connections)
    for seed in DEMO_SEEDERS:
        await seed(rt, tenant.account_id, tenant.connections)
    # The seed filled the tables at once: the planner learns their sizes now, not at autovacuum's next round.
    await rt.db.refresh_statistics()
    return {
        "AccountId": account.id,
        "client_id": credential.client_id,
        "client_secret": credential.client_secret,
        "Scopes": credential.scopes,
        "Marketplaces": [{"MarketplaceId": c.id, "Platform": c.platform, "Country": c.country} for c in connections],
        "AppUser": {"Email": app_user.email, "Password": app_user.password, "Role": app_user.role},
    }
