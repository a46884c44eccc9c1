"""Connecting a marketplace in the app goes through the marketplace's consent step (docs/decisions/0310): until
the merchant allows access the connection awaits consent and looks neither connected nor healthy; Deny removes a
connection never authorised and leaves one being reconnected as it was. A country the marketplace does not serve is
refused (docs/decisions/0312)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from marketsync.catalog.taxonomy import service as catalog
from marketsync.http.errors import NotFound
from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service as marketplaces
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.console.support import Browser, make_person, signed_in
from tests.support.factories import Tenant, make_tenant


async def _owner(rt: Runtime, api: httpx.AsyncClient) -> tuple[Tenant, Browser]:
    tenant = await make_tenant(rt, api)
    return tenant, await signed_in(api, await make_person(rt, tenant.account_id))


async def _start(owner: Browser, platform: str, country: str) -> str:
    started = await owner.post("/app/marketplaces", {"platform": platform, "country": country})
    assert started.status_code == 303 and started.headers["location"].endswith("/consent"), started.text
    return started.headers["location"].split("/")[3]


async def _connection(rt: Runtime, account_id: str, marketplace_id: str) -> MarketplaceConnection | None:
    async with rt.db.read() as session:
        try:
            return await marketplaces.get(session, account_id, marketplace_id)
        except NotFound:
            return None


async def test_a_started_connection_awaits_consent_and_is_neither_connected_nor_healthy_until_allowed(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, owner = await _owner(rt, api)
    marketplace_id = await _start(owner, "P1", "UK")
    awaiting = await _connection(rt, tenant.account_id, marketplace_id)
    assert awaiting is not None and awaiting.state == "AwaitingConsent"

    # The merchant left the consent page: the app says so, and offers to continue or cancel.
    listed = await owner.page("/app/marketplaces")
    row = listed.text[listed.text.index(f'id="marketplace-{marketplace_id}"') :].split("</tr>")[0]
    assert "Awaiting consent" in row and "Continue to consent" in row
    assert "Not checked yet" not in row and 'class="ok"' not in row and ">Pause<" not in row
    api_listed = await api.get("/api/marketplaces", headers=tenant.headers)
    assert api_listed.json()["Marketplaces"] == []  # the API lists active connections only
    await Worker(rt).drain()  # no schedule reaches it: it is not Active
    for action in ("pause", "resume"):
        refused = await owner.post(f"/app/marketplaces/{marketplace_id}/{action}")
        assert refused.status_code == 409 and "not authorised yet" in refused.text, action
    still = await _connection(rt, tenant.account_id, marketplace_id)
    assert still is not None and still.state == "AwaitingConsent"

    # Starting again on the same site returns to the same consent step, not "already connected".
    assert await _start(owner, "P1", "UK") == marketplace_id
    step = await owner.post(f"/app/marketplaces/{marketplace_id}/reauthorize")
    assert step.headers["location"] == f"/app/marketplaces/{marketplace_id}/consent"
    consent = await owner.page(step.headers["location"])
    assert "P1 UK is not connected" in consent.text

    allowed = await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "allow"})
    assert allowed.status_code == 303
    active = await _connection(rt, tenant.account_id, marketplace_id)
    assert active is not None and active.state == "Active" and active.health_status == "Healthy"
    api_listed = await api.get("/api/marketplaces", headers=tenant.headers)
    assert [m["MarketplaceId"] for m in api_listed.json()["Marketplaces"]] == [marketplace_id]
    assert "Awaiting consent" not in (await owner.page("/app/marketplaces")).text
    again = await owner.post("/app/marketplaces", {"platform": "P1", "country": "UK"})
    assert again.status_code == 409 and "already connected" in again.text
    await owner.client.aclose()


async def test_deny_removes_a_connection_never_authorised(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant, owner = await _owner(rt, api)
    marketplace_id = await _start(owner, "P2", "DE")
    denied = await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "deny"})
    assert denied.status_code == 303
    assert await _connection(rt, tenant.account_id, marketplace_id) is None  # no orphan left behind
    shown = await owner.page(denied.headers["location"])
    assert 'id="notice"' in shown.text and "was not connected" in shown.text
    assert f"marketplace-{marketplace_id}" not in shown.text
    # The site can be connected afresh.
    assert await _start(owner, "P2", "DE") != marketplace_id
    await owner.client.aclose()


@pytest.mark.parametrize("state", ["Active", "Paused"])
async def test_deny_on_a_reconnect_keeps_the_connection_as_it_was(
    rt: Runtime, api: httpx.AsyncClient, state: str
) -> None:
    tenant, owner = await _owner(rt, api)
    marketplace_id = await _start(owner, "P1", "DE")
    await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "allow"})
    if state == "Paused":
        await owner.post(f"/app/marketplaces/{marketplace_id}/pause")
    before = await _connection(rt, tenant.account_id, marketplace_id)
    assert before is not None and before.state == state

    await owner.post(f"/app/marketplaces/{marketplace_id}/reauthorize")
    consent = await owner.page(f"/app/marketplaces/{marketplace_id}/consent")
    assert "the connection stays as it is" in consent.text
    denied = await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "deny"})
    assert "the connection is as it was" in (await owner.page(denied.headers["location"])).text
    after = await _connection(rt, tenant.account_id, marketplace_id)
    assert after is not None and after.state == state
    assert (after.health_status, after.is_healthy, after.requires_reauthorization) == (
        before.health_status,
        before.is_healthy,
        before.requires_reauthorization,
    )
    await owner.client.aclose()


async def test_allow_and_deny_racing_never_remove_an_authorised_connection(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Two tabs answer the same consent page at once: the answers are decided one after the other."""
    tenant, owner = await _owner(rt, api)
    for _ in range(5):
        marketplace_id = await _start(owner, "P3", "US")
        allow, deny = await asyncio.gather(
            marketplaces.grant_consent(
                rt, tenant.account_id, marketplace_id, {}, when_authorised=catalog.load_categories_if_missing
            ),
            marketplaces.refuse_consent(rt, tenant.account_id, marketplace_id),
            return_exceptions=True,
        )
        left = await _connection(rt, tenant.account_id, marketplace_id)
        if deny is True:  # Deny came first: removed, and the Allow after it found nothing
            assert left is None and isinstance(allow, NotFound)
        else:  # Allow came first: Active, and the Deny left it so
            assert deny is False and left is not None and left.state == "Active"
            await owner.post(f"/app/marketplaces/{marketplace_id}/disconnect")
    await owner.client.aclose()


async def test_the_app_refuses_a_country_the_marketplace_does_not_serve_and_names_its_sites(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant, owner = await _owner(rt, api)
    form = await owner.page("/app/marketplaces")
    assert 'id="country-sites"' in form.text and "P4 FR, IT, ES" in form.text
    refused = await owner.post("/app/marketplaces", {"platform": "P4", "country": "UK"})
    assert refused.status_code == 400
    assert 'id="error-Country"' in refused.text and "P4 has no UK site; it serves FR, IT, ES." in refused.text
    assert 'value="UK"' in refused.text  # the form keeps what was typed
    async with rt.db.read() as session:
        assert list(await marketplaces.list_all(session, tenant.account_id)) == []
    await owner.client.aclose()


async def test_a_double_submitted_connect_starts_one_connection(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant, owner = await _owner(rt, api)

    async def submit() -> str:
        async with rt.db.transaction() as session:
            return (await marketplaces.begin_connect(rt, session, tenant.account_id, "P2", "FR")).id

    ids = await asyncio.gather(*(submit() for _ in range(6)))
    first = ids[0]
    assert set(ids) == {first}  # every submit lands on the same consent step
    async with rt.db.read() as session:
        assert [c.id for c in await marketplaces.list_all(session, tenant.account_id)] == [first]
    await owner.client.aclose()
