"""Factories with keyword defaults: accounts, credentials, tokens, connections, a ready tenant."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.kit.ids import new_id
from marketsync.marketplaces import service as marketplace_service
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime


async def make_account(rt: Runtime, name: str | None = None) -> str:
    async with rt.db.transaction() as session:
        account = await auth_service.create_account(rt, session, name or f"acct-{new_id()}")
        return account.id


async def make_credential(
    rt: Runtime, account_id: str, scopes: list[str] | tuple[str, ...] = ALL_SCOPES, name: str = "test"
) -> auth_service.NewCredential:
    async with rt.db.transaction() as session:
        return await auth_service.create_credential(rt, session, account_id, name, list(scopes))


async def make_connection(
    rt: Runtime, account_id: str, platform: str = "P1", country: str = "UK", state: str = "Active"
) -> MarketplaceConnection:
    async with rt.db.transaction() as session:
        # Stands for a connection made before the test: no first pull queued (decision 0404; tested on its own).
        connection = await marketplace_service.connect(rt, session, account_id, platform, country, pull_now=False)
        connection.state = state
        return connection


async def fetch_token(api: httpx.AsyncClient, client_id: str, client_secret: str, scope: str | None = None) -> str:
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret}
    if scope is not None:
        form["scope"] = scope
    response = await api.post("/connect/token", data=form)
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


@dataclass
class Tenant:
    """An account with a credential and a bearer token, ready to call the API."""

    account_id: str
    credential: auth_service.NewCredential
    token: str
    connections: dict[str, MarketplaceConnection] = field(default_factory=dict)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def marketplace(self, platform: str) -> MarketplaceConnection:
        return self.connections[platform]


async def make_tenant(
    rt: Runtime,
    api: httpx.AsyncClient,
    *,
    scopes: list[str] | tuple[str, ...] = ALL_SCOPES,
    marketplaces: tuple[tuple[str, str], ...] = (),
    name: str | None = None,
) -> Tenant:
    account_id = await make_account(rt, name)
    credential = await make_credential(rt, account_id, scopes)
    token = await fetch_token(api, credential.client_id, credential.client_secret)
    tenant = Tenant(account_id, credential, token)
    for platform, country in marketplaces:
        tenant.connections[platform] = await make_connection(rt, account_id, platform, country)
    return tenant


def problem(response: httpx.Response) -> dict[str, Any]:
    """Assert the problem+json shape (spec section 7) and return the body."""
    assert response.headers["content-type"].startswith("application/problem+json"), response.text
    body: dict[str, Any] = response.json()
    assert set(body) >= {"type", "title", "status", "code", "requestId", "errors"}, body
    assert body["type"] == f"urn:service:error:{body['code']}"
    assert body["status"] == response.status_code
    assert body["requestId"] == response.headers["x-request-id"]
    return body
