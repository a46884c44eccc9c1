"""`marketsync demo`: the demo tenant, idempotently. Each domain adds its part in `<domain>/demo.py`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from marketsync.auth import repository as auth_repository
from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.marketplaces import repository as marketplace_repository
from marketsync.marketplaces import service as marketplace_service
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

DEMO_ACCOUNT = "demo"
DEMO_MARKETPLACES = (("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR"))
# Order matters: taxonomies before the catalogue, the catalogue before listings and orders.
DEMO_SEEDERS = (
    "marketsync.catalog.demo",
    "marketsync.inventory.demo",
    "marketsync.marketplaces.demo",
    "marketsync.orders.demo",
    "marketsync.webhooks.demo",
)


@dataclass
class DemoTenant:
    account_id: str
    connections: list[MarketplaceConnection] = field(default_factory=list)


async def run_demo(rt: Runtime) -> dict[str, Any]:
    async with rt.db.transaction() as session:
        account = await auth_repository.get_account_by_name(session, DEMO_ACCOUNT)
        if account is None:
            account = await auth_service.create_account(rt, session, DEMO_ACCOUNT)
        credential = await auth_service.create_credential(rt, session, account.id, "demo", list(ALL_SCOPES))
        connections = []
        for platform, country in DEMO_MARKETPLACES:
            connection = await marketplace_repository.find(session, account.id, platform, country)
            if connection is None:
                connection = await marketplace_service.connect(rt, session, account.id, platform, country)
            connections.append(connection)
    tenant = DemoTenant(account.id, connections)
    for module in DEMO_SEEDERS:
        seeder = importlib.import_module(module)
        await seeder.seed(rt, tenant)
    return {
        "AccountId": account.id,
        "client_id": credential.client_id,
        "client_secret": credential.client_secret,
        "Scopes": credential.scopes,
        "Marketplaces": [{"MarketplaceId": c.id, "Platform": c.platform, "Country": c.country} for c in connections],
    }
