"""A marketplace whose consent page is its own (Amazon's Seller Central) plugs into the same consent step as the
sandbox's in-app page (docs/decisions/0351): the app sends the merchant to the connector's consent URL with a `state`
bound to the session, and the callback hands the marketplace's answer to the connector."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx

from marketsync.http.errors import NotFound
from marketsync.jobs.types import JobType
from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service as marketplaces
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import jobs_of
from tests.support.connectors import FakeConnector
from tests.support.factories import make_tenant

CONSENT_PAGE = "https://consent.marketplace.invalid/authorize"


async def _connection(rt: Runtime, account_id: str, marketplace_id: str) -> MarketplaceConnection | None:
    async with rt.db.read() as session:
        try:
            return await marketplaces.get(session, account_id, marketplace_id)
        except NotFound:
            return None


async def test_connecting_goes_to_the_marketplaces_consent_page_and_its_callback_authorises(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    fake = FakeConnector.install(rt, "P2")
    fake.consent_url = CONSENT_PAGE
    tenant = await make_tenant(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))

    started = await owner.post("/app/marketplaces", {"platform": "P2", "country": "DE"})
    assert started.status_code == 303 and started.headers["location"].startswith(CONSENT_PAGE + "?state=")
    [(state, callback)] = fake.consents
    assert callback == rt.settings.base_url.rstrip("/") + "/app/marketplaces/consent/callback"
    assert parse_qs(urlsplit(started.headers["location"]).query)["state"] == [state]
    marketplace_id = state.split(".")[0]
    awaiting = await _connection(rt, tenant.account_id, marketplace_id)
    assert awaiting is not None and awaiting.state == "AwaitingConsent"

    # Another person's session cannot answer for this one: nothing is granted.
    other = await signed_in(api, await make_person(rt, tenant.account_id, email=f"other-{tenant.account_id}@ex.com"))
    forged = await other.page(f"/app/marketplaces/consent/callback?state={state}&spapi_oauth_code=stolen")
    assert forged.status_code == 403 and fake.answers == []

    answered = await owner.page(
        f"/app/marketplaces/consent/callback?state={state}&spapi_oauth_code=ONE-TIME&selling_partner_id=A1SELLER"
    )
    assert answered.status_code == 303 and answered.headers["location"] == "/app/marketplaces"
    assert fake.answers == [{"spapi_oauth_code": "ONE-TIME", "selling_partner_id": "A1SELLER"}]
    active = await _connection(rt, tenant.account_id, marketplace_id)
    assert active is not None and active.state == "Active" and active.health_status == "Healthy"
    queued = sorted(job.type for job in await jobs_of(rt, tenant.account_id))
    assert queued == [JobType.LISTING_MIRROR, JobType.TAXONOMY_LOAD]  # its categories and its first pull (0404)
    await owner.client.aclose()
    await other.client.aclose()


async def test_an_answer_denied_at_the_marketplace_removes_a_connection_never_authorised(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    fake = FakeConnector.install(rt, "P3")
    fake.consent_url = CONSENT_PAGE
    tenant = await make_tenant(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    await owner.post("/app/marketplaces", {"platform": "P3", "country": "US"})
    [(state, _)] = fake.consents

    denied = await owner.page(f"/app/marketplaces/consent/callback?state={state}&error=access_denied")
    assert denied.status_code == 303 and denied.headers["location"] == "/app/marketplaces?done=denied"
    assert fake.answers == [] and await _connection(rt, tenant.account_id, state.split(".")[0]) is None
    await owner.client.aclose()


async def test_a_marketplace_without_a_tree_of_its_own_loads_nothing_ahead(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Categories found by search (Amazon's product types): the site's load job finds no tree and loads nothing."""
    fake = FakeConnector.install(rt, "P4")
    tenant = await make_tenant(rt, api)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    started = await owner.post("/app/marketplaces", {"platform": "P4", "country": "FR"})
    marketplace_id = started.headers["location"].split("/")[3]  # the app's own consent page (url None)
    assert started.headers["location"] == f"/app/marketplaces/{marketplace_id}/consent"
    await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "allow"})
    await Worker(rt).drain()
    [job] = [job for job in await jobs_of(rt, tenant.account_id) if job.type != JobType.LISTING_MIRROR]  # 0404's
    assert (job.type, job.status) == (JobType.TAXONOMY_LOAD, "Completed")
    assert fake.calls["category_tree"] == 1
    found = await api.post("/api/product-types/Search", json={"MarketplaceId": marketplace_id}, headers=tenant.headers)
    assert found.status_code == 200 and found.json()["TotalCount"] == 0
    await owner.client.aclose()
