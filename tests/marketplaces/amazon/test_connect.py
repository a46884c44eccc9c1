"""Connecting Amazon (docs/decisions/0377-amazon-consent.md): in the app through Amazon's consent page and the
callback, and by the operator's `admin marketplace connect --platform Amazon --authorization-code --selling-partner-id`;
the refresh token stored encrypted and never shown; reauthorising is the same flow."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from marketsync.jobs.worker import Worker
from marketsync.marketplaces import service
from marketsync.marketplaces.amazon.simulator.state import DEFAULT_APPLICATION_ID
from marketsync.marketplaces.credentials import unseal
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.console.support import Browser, make_person, signed_in
from tests.marketplaces.amazon.support import amazon_settings
from tests.marketplaces.support import cli
from tests.support.amazon import AmazonServer
from tests.support.factories import make_tenant

CALLBACK = "http://127.0.0.1:8000/app/marketplaces/amazon/callback"  # {MARKETSYNC_BASE_URL} + the callback


@pytest.fixture
def settings_overrides(amazon_simulator: AmazonServer) -> dict[str, Any]:
    amazon_simulator.sim.register_application(redirect_uris=[CALLBACK])
    return amazon_settings(amazon_simulator)


@pytest.fixture
async def browsers(rt: Runtime, api: httpx.AsyncClient) -> AsyncIterator[Callable[[str, str], Awaitable[Browser]]]:
    """Signs a new person of the account in (Owner or Staff); their browsers are closed afterwards."""
    opened: list[Browser] = []

    async def sign_in(account_id: str, role: str = "Owner") -> Browser:
        opened.append(await signed_in(api, await make_person(rt, account_id, role=role)))
        return opened[-1]

    yield sign_in
    for browser in opened:
        await browser.client.aclose()


async def _connections(rt: Runtime, account_id: str) -> list[MarketplaceConnection]:
    async with rt.db.read() as session:
        return list(await service.list_all(session, account_id))


# -- the operator's command ----------------------------------------------------------------------------------------


async def _cli(
    database_url: str, var_dir: Path, server: AmazonServer, *args: str, expect_rc: int = 0
) -> dict[str, Any]:
    env = {f"MARKETSYNC_{name.upper()}": str(value) for name, value in amazon_settings(server).items()}
    return await cli(database_url, var_dir, *args, expect_rc=expect_rc, env=env)


async def test_the_operator_connects_amazon_with_the_code_of_the_consent_redirect(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, database_url: str, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api)
    seller = amazon_simulator.sim.add_seller(countries=("UK",))
    code = amazon_simulator.sim.authorization_code(seller.selling_partner_id, redirect_uri=CALLBACK)
    args = ("admin", "marketplace", "connect", "--account", tenant.account_id, "--platform", "Amazon")

    connected = await _cli(
        database_url, tmp_path, amazon_simulator, *args, "--country", "UK", "--authorization-code", code,
        "--selling-partner-id", seller.selling_partner_id,
    )  # fmt: skip

    assert (connected["Platform"], connected["Country"], connected["SellingPartnerId"]) == (
        "Amazon",
        "UK",
        seller.selling_partner_id,
    )
    assert connected["HealthStatus"] == "Healthy" and connected["Reauthorised"] is False
    assert "CategoriesJobId" in connected
    assert "Atzr" not in json.dumps(connected)  # the refresh token is never shown
    [connection] = await _connections(rt, tenant.account_id)
    assert (connection.id, connection.state, connection.seller_id) == (
        connected["MarketplaceId"],
        "Active",
        seller.selling_partner_id,
    )
    assert connection.credential is not None and "Atzr" not in connection.credential  # encrypted at rest
    token = unseal(rt, connection)
    assert token is not None and token in amazon_simulator.sim.seller(seller.selling_partner_id).refresh_tokens
    listed = (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"]
    assert [(m["Platform"], m["Country"], m["HealthStatus"]) for m in listed] == [("Amazon", "UK", "Healthy")]
    await Worker(rt).drain()  # the site's product types are loaded
    found = await api.post(
        "/api/product-types/Search", json={"MarketplaceId": connection.id, "SearchText": "shoe"}, headers=tenant.headers
    )
    assert [p["CategoryId"] for p in found.json()["ProductTypes"]] == ["SHOES"]

    # The code was spent: the same command again is refused, naming it, and changes nothing.
    refused = await _cli(
        database_url, tmp_path, amazon_simulator, *args, "--country", "UK", "--authorization-code", code,
        "--selling-partner-id", seller.selling_partner_id, expect_rc=1,
    )  # fmt: skip
    assert refused["error"] == "validation-failed" and set(refused["errors"]) == {"AuthorizationCode"}

    # Reauthorising: a new code for the same site and seller; the same connection, a new refresh token.
    again = amazon_simulator.sim.authorization_code(seller.selling_partner_id, redirect_uri=CALLBACK)
    reconnected = await _cli(
        database_url, tmp_path, amazon_simulator, *args, "--country", "UK", "--authorization-code", again,
        "--selling-partner-id", seller.selling_partner_id,
    )  # fmt: skip
    assert (reconnected["MarketplaceId"], reconnected["Reauthorised"]) == (connection.id, True)
    [after] = await _connections(rt, tenant.account_id)
    assert unseal(rt, after) != token


async def test_bad_amazon_connects_name_every_bad_field_and_write_nothing(
    rt: Runtime, api: httpx.AsyncClient, amazon_simulator: AmazonServer, database_url: str, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api)
    base = ("admin", "marketplace", "connect", "--account", tenant.account_id)
    missing = await _cli(
        database_url, tmp_path, amazon_simulator, *base, "--platform", "amazon", "--country", "UK", expect_rc=1
    )
    assert set(missing["errors"]) == {"AuthorizationCode", "SellingPartnerId"}
    no_site = await _cli(
        database_url, tmp_path, amazon_simulator, *base, "--platform", "Amazon", "--country", "BR",
        "--authorization-code", "ANDaXYZ", "--selling-partner-id", "A1B2C3D4E5F6G7", expect_rc=1,
    )  # fmt: skip
    assert no_site["errors"]["Country"][0].startswith(
        "Amazon has no BR site; it serves UK, DE, FR, IT, ES, NL, SE, PL, BE"
    )
    not_amazon = await _cli(
        database_url, tmp_path, amazon_simulator, *base, "--platform", "P1", "--country", "UK",
        "--authorization-code", "ANDaXYZ", "--selling-partner-id", "A1B2C3D4E5F6G7", expect_rc=1,
    )  # fmt: skip
    assert set(not_amazon["errors"]) == {"Platform"}
    assert await _connections(rt, tenant.account_id) == []


# -- the app -------------------------------------------------------------------------------------------------------


async def _to_amazon(owner: Browser, country: str = "UK") -> tuple[str, str]:
    """Start connecting Amazon in the app: (the connection's id, the consent page's URL at Amazon, where the app sends
    the merchant at once)."""
    started = await owner.post("/app/marketplaces", {"platform": "Amazon", "country": country})
    assert started.status_code == 303, started.text
    consent_url = started.headers["location"]
    state = parse_qs(urlsplit(consent_url).query)["state"][0]
    return state.split(".")[0], consent_url


async def _authorise_at_amazon(server: AmazonServer, consent_url: str, seller_id: str, decision: str) -> str:
    """The merchant's click on Amazon's consent page: the redirect back to the app's callback (path and query)."""
    query = {k: v[0] for k, v in parse_qs(urlsplit(consent_url).query).items()}
    async with server.client() as amazon:
        page = await amazon.get("/apps/authorize/consent", params=query)
        assert page.status_code == 200, page.text
        answer = await amazon.post(
            "/apps/authorize/confirm",
            data={
                "application_id": query["application_id"],
                "state": query["state"],
                "redirect_uri": query["redirect_uri"],
                "selling_partner_id": seller_id,
                "decision": decision,
            },
        )
    assert answer.status_code == 302, answer.text
    location = urlsplit(answer.headers["location"])
    assert f"http://{location.netloc}{location.path}" == CALLBACK
    return f"{location.path}?{location.query}"


async def test_connecting_in_the_app_goes_through_amazons_consent_page_and_back(
    rt: Runtime,
    api: httpx.AsyncClient,
    amazon_simulator: AmazonServer,
    browsers: Callable[..., Awaitable[Browser]],
) -> None:
    tenant = await make_tenant(rt, api)
    owner = await browsers(tenant.account_id)
    seller = amazon_simulator.sim.add_seller(countries=("UK",))

    marketplace_id, consent_url = await _to_amazon(owner)

    assert consent_url.startswith(f"{amazon_simulator.consent_url}?")
    query = parse_qs(urlsplit(consent_url).query)
    assert (query["application_id"], query["redirect_uri"]) == ([DEFAULT_APPLICATION_ID], [CALLBACK])
    assert query["state"][0].startswith(f"{marketplace_id}.")  # bound to this session (console/guards.py)
    [awaiting] = await _connections(rt, tenant.account_id)
    assert awaiting.state == "AwaitingConsent"

    callback = await _authorise_at_amazon(amazon_simulator, consent_url, seller.selling_partner_id, "authorise")
    # Another person's browser cannot finish it with the same redirect (the state is bound to the session).
    stranger = await browsers(tenant.account_id, "Staff")
    refused = await stranger.page(callback)
    assert refused.status_code == 403 and "does not belong to this session" in refused.text
    done = await owner.page(callback)
    assert (done.status_code, done.headers["location"]) == (303, "/app/marketplaces")

    [connection] = await _connections(rt, tenant.account_id)
    assert (connection.id, connection.state, connection.seller_id) == (
        marketplace_id,
        "Active",
        seller.selling_partner_id,
    )
    assert connection.health_status == "Healthy"
    page = await owner.page("/app/marketplaces")
    assert "Amazon" in page.text and "Atzr" not in page.text

    # Reauthorise: the same flow on the same connection.
    again = await owner.post(f"/app/marketplaces/{marketplace_id}/reauthorize")
    callback = await _authorise_at_amazon(
        amazon_simulator, again.headers["location"], seller.selling_partner_id, "authorise"
    )
    assert (await owner.page(callback)).status_code == 303
    assert [c.id for c in await _connections(rt, tenant.account_id)] == [marketplace_id]


async def test_denying_at_amazon_leaves_no_connection(
    rt: Runtime,
    api: httpx.AsyncClient,
    amazon_simulator: AmazonServer,
    browsers: Callable[..., Awaitable[Browser]],
) -> None:
    tenant = await make_tenant(rt, api)
    owner = await browsers(tenant.account_id)
    seller = amazon_simulator.sim.add_seller(countries=("UK",))
    _, consent_url = await _to_amazon(owner)
    callback = await _authorise_at_amazon(amazon_simulator, consent_url, seller.selling_partner_id, "deny")
    back = await owner.page(callback)
    assert (back.status_code, back.headers["location"]) == (303, "/app/marketplaces?done=denied")
    assert await _connections(rt, tenant.account_id) == []


async def test_a_country_amazon_has_no_site_for_is_refused_in_the_app(
    rt: Runtime,
    api: httpx.AsyncClient,
    amazon_simulator: AmazonServer,
    browsers: Callable[..., Awaitable[Browser]],
) -> None:
    tenant = await make_tenant(rt, api)
    owner = await browsers(tenant.account_id)
    refused = await owner.post("/app/marketplaces", {"platform": "Amazon", "country": "BR"})
    assert refused.status_code == 400 and "Amazon has no BR site" in refused.text
    assert await _connections(rt, tenant.account_id) == []
