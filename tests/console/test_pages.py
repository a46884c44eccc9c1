"""The app's pages do what the spec leaves to the app: credentials (secret once), marketplaces (consent and
reauthorisation), Data Flow, and a job's failure reason. Another account's ids answer 404, as in the API."""

from __future__ import annotations

import re

import httpx

from marketsync.jobs import registry
from marketsync.jobs import service as jobs_service
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobPayload
from marketsync.marketplaces import service as marketplaces
from marketsync.runtime import Runtime
from marketsync.worker import Worker
from tests.console.support import make_person, signed_in
from tests.marketplaces import support as marketplace_support
from tests.support.factories import make_account, make_connection


class ExplodingPayload(JobPayload):
    job_type = "Test.AppExplodes"


async def test_an_owner_creates_a_credential_sees_the_secret_once_and_uses_it(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    owner = await signed_in(api, await make_person(rt, await make_account(rt)))
    created = await owner.post(
        "/app/credentials", {"name": "ERP", "scope_OrdersRead": "1", "scope_InventoryRead": "1"},
        csrf_from="/app/credentials",
    )  # fmt: skip
    assert created.status_code == 201
    assert '<h2 id="created-title">Credential “ERP” created</h2>' in created.text  # its name
    client_id = re.search(r'id="client-id">([^<]+)<', created.text).group(1)  # type: ignore[union-attr]
    secret = re.search(r'id="client-secret">([^<]+)<', created.text).group(1)  # type: ignore[union-attr]
    token = await api.post(
        "/connect/token", data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    )
    assert token.status_code == 200 and token.json()["scope"] == "OrdersRead InventoryRead"
    later = await owner.page("/app/credentials")
    assert client_id in later.text and secret not in later.text  # never rendered twice

    credential_id = re.search(r'action="/app/credentials/([^/]+)/delete"', later.text).group(1)  # type: ignore[union-attr]
    await owner.post(f"/app/credentials/{credential_id}/delete", csrf_from="/app/credentials")
    bearer = {"Authorization": f"Bearer {token.json()['access_token']}"}
    assert (await api.get("/api/jobs/01ABCDEFGHJKMNPQRSTVWXYZ00", headers=bearer)).status_code == 401
    await owner.client.aclose()


async def test_a_credential_form_names_its_bad_fields(rt: Runtime, api: httpx.AsyncClient) -> None:
    owner = await signed_in(api, await make_person(rt, await make_account(rt)))
    refused = await owner.post("/app/credentials", {"name": ""}, csrf_from="/app/credentials")
    assert refused.status_code == 400
    assert 'id="error-Name"' in refused.text and 'id="error-Scopes"' in refused.text
    await owner.client.aclose()


async def test_staff_cannot_reach_credentials(rt: Runtime, api: httpx.AsyncClient) -> None:
    account_id = await make_account(rt)
    staff = await signed_in(api, await make_person(rt, account_id, "Staff"))
    assert (await staff.page("/app/credentials")).status_code == 403
    assert "API credentials" not in (await staff.page("/app/jobs")).text  # not offered in the navigation
    forged = await staff.post("/app/credentials", {"name": "x", "scope_OrdersRead": "1"})
    assert forged.status_code == 403
    await staff.client.aclose()


async def test_another_accounts_marketplace_is_not_found(rt: Runtime, api: httpx.AsyncClient) -> None:
    theirs = await make_connection(rt, await make_account(rt), "P1", "UK")
    me = await signed_in(api, await make_person(rt, await make_account(rt)))
    assert (await me.page(f"/app/marketplaces/{theirs.id}/consent")).status_code == 404
    for action in ("pause", "disconnect", "reauthorize", "consent"):
        response = await me.post(f"/app/marketplaces/{theirs.id}/{action}", {"decision": "allow"})
        assert response.status_code == 404, action
    async with rt.db.read() as session:
        assert (await marketplaces.get(session, theirs.account_id, theirs.id)).state == "Active"
    await me.client.aclose()


async def test_reauthorising_after_revocation_goes_through_the_consent_page(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    owner = await signed_in(api, await make_person(rt, account_id))
    connected = await owner.post("/app/marketplaces", {"platform": "P1", "country": "UK"})
    assert connected.status_code == 303 and connected.headers["location"].endswith("/consent")
    marketplace_id = connected.headers["location"].split("/")[3]
    await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "allow"})

    async with rt.db.read() as session:
        connection = await marketplaces.get(session, account_id, marketplace_id)
    await marketplace_support.update_seller(rt, connection, auth_revoked=True)  # `sandbox revoke-auth`
    await marketplaces.check_health(rt, connection)
    page = await owner.page("/app/marketplaces")
    assert "Needs reauthorisation" in page.text

    step = await owner.post(f"/app/marketplaces/{marketplace_id}/reauthorize")
    assert step.status_code == 303 and step.headers["location"] == f"/app/marketplaces/{marketplace_id}/consent"
    consent = await owner.page(step.headers["location"])
    assert "Allow" in consent.text
    await owner.post(f"/app/marketplaces/{marketplace_id}/consent", {"decision": "allow"})
    async with rt.db.read() as session:
        restored = await marketplaces.get(session, account_id, marketplace_id)
    assert restored.requires_reauthorization is False and restored.is_healthy is True
    assert "Needs reauthorisation" not in (await owner.page("/app/marketplaces")).text
    await owner.client.aclose()


async def test_data_flow_is_set_in_the_app(rt: Runtime, api: httpx.AsyncClient) -> None:
    account_id = await make_account(rt)
    owner = await signed_in(api, await make_person(rt, account_id))
    saved = await owner.post("/app/dataflow", {"Price": "Merchant", "Stock": "Marketplace"})
    assert saved.status_code == 200 and "Saved." in saved.text
    assert 'name="Price" value="Merchant" checked' in saved.text
    refused = await owner.post("/app/dataflow", {"Price": "Nobody", "Stock": "Marketplace"})
    assert refused.status_code == 400 and 'id="error-Owner"' in refused.text
    await owner.client.aclose()


async def test_a_failed_jobs_reason_is_visible_in_the_app_only(rt: Runtime, api: httpx.AsyncClient) -> None:
    @registry.task(ExplodingPayload.job_type)
    async def explodes(_rt: Runtime, _job: JobRun) -> None:
        raise RuntimeError("the marketplace refused the feed: currency mismatch")

    account_id = await make_account(rt)
    async with rt.db.transaction() as session:
        job = jobs_service.enqueue(session, rt.clock.now(), account_id, ExplodingPayload())
    await Worker(rt).drain()
    owner = await signed_in(api, await make_person(rt, account_id))
    page = await owner.page("/app/jobs")
    assert job.id in page.text and "Failed" in page.text
    assert "the marketplace refused the feed: currency mismatch" in page.text
    await owner.client.aclose()
