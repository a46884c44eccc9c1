"""The app's pages do what the spec leaves to the app: credentials (secret once), marketplaces (consent and
reauthorisation), Data Flow, and a job's failure reason. Another account's ids answer 404, as in the API."""

from __future__ import annotations

import re

import httpx

from marketsync.jobs import registry
from marketsync.jobs import service as jobs_service
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobPayload
from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service as marketplaces
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_listing, add_products
from tests.marketplaces import support as marketplace_support
from tests.support.factories import make_account, make_connection, make_tenant


class ExplodingPayload(JobPayload):
    job_type = "Test.AppExplodes"


async def test_an_owner_creates_a_credential_sees_the_secret_once_and_uses_it(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    owner = await signed_in(api, await make_person(rt, await make_account(rt)))
    posted = await owner.post(
        "/app/credentials", {"name": "ERP", "scope_OrdersRead": "1", "scope_InventoryRead": "1"},
        csrf_from="/app/credentials",
    )  # fmt: skip
    assert posted.status_code == 303  # post/redirect/get (decision 0401)
    created = await owner.page(posted.headers["location"])
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
    posted = await owner.post("/app/dataflow", {"Price": "Merchant", "Stock": "Marketplace"})
    assert posted.status_code == 303  # post/redirect/get: reloading the page shown does not post again
    saved = await owner.page(posted.headers["location"])
    assert saved.status_code == 200 and "Saved." in saved.text
    assert 'name="Price" value="Merchant" checked' in saved.text
    assert "Saved." not in (await owner.page("/app/dataflow")).text
    # Refused: the form again, the error beside its kind, the choices as typed, nothing saved.
    refused = await owner.post("/app/dataflow", {"Price": "Nobody", "Stock": "Merchant"})
    assert refused.status_code == 400 and 'id="error-Price"' in refused.text and 'id="error-Stock"' not in refused.text
    assert '<fieldset aria-describedby="error-Price">' in refused.text and "<fieldset><legend>Stock" in refused.text
    assert 'name="Stock" value="Merchant" checked' in refused.text
    assert 'name="Stock" value="Marketplace" checked' in (await owner.page("/app/dataflow")).text
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


def _dangling_descriptions(html: str) -> list[str]:
    """The ids an aria-describedby names that no element of the page carries."""
    ids = set(re.findall(r'\sid="([^"]+)"', html))
    named = [name for value in re.findall(r'aria-describedby="([^"]*)"', html) for name in value.split()]
    return [name for name in named if name not in ids]


async def test_a_field_is_described_only_by_elements_on_the_page(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Every field named `error-<Field>` in aria-describedby, shown or not: a screen reader followed a broken
    reference on every page without an error. Now the error's id is named only when the error is shown."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(rt, tenant.account_id, [("MUG", "9.50", 4)])
    await add_listing(rt, tenant.account_id, ids["MUG"], tenant.marketplace("P1").id)
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    product = await owner.page("/app/product?sku=MUG")
    listing_id = re.search(r'href="/app/listings/([^"]+)"', product.text).group(1)  # type: ignore[union-attr]
    paths = (
        "/app/marketplaces", "/app/dataflow", "/app/credentials", "/app/webhooks", "/app/jobs", "/app/orders",
        "/app/imports", "/app/catalogue", "/app/product?sku=MUG", f"/app/listings/{listing_id}",
    )  # fmt: skip
    for path in paths:
        shown = await owner.page(path)
        assert shown.status_code == 200, path
        assert _dangling_descriptions(shown.text) == [], path
    # With errors: named, and on the page.
    refused = await owner.post("/app/marketplaces", {"platform": "P1", "country": "ZZ"})
    assert refused.status_code == 400 and 'aria-describedby="country-sites error-Country"' in refused.text
    bad_filters = await owner.page("/app/jobs?status=Nope&type=Nope")
    assert 'aria-describedby="error-Status"' in bad_filters.text and 'aria-describedby="error-Type"' in bad_filters.text
    credential = await owner.post("/app/credentials", {"name": ""}, csrf_from="/app/credentials")
    for response in (refused, bad_filters, credential):
        assert response.status_code == 400 and _dangling_descriptions(response.text) == []
    await owner.client.aclose()
