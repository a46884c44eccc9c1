"""Connecting through the simulator over real HTTP: the consent page, Login with Amazon, and a revoked
authorisation, as Amazon's website authorization workflow and LWA documentation describe (decision 0360)."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from marketsync.kit.clock import FrozenClock
from marketsync.marketplaces.amazon.simulator.state import (
    DEFAULT_APPLICATION_ID,
    DEFAULT_CLIENT_ID,
    DEFAULT_CLIENT_SECRET,
)
from tests.support.amazon import AmazonServer

CALLBACK = "https://merchant.example/app/marketplaces/amazon/callback"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))


def _form(code: str, **extra: str) -> dict[str, str]:
    return {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "client_id": DEFAULT_CLIENT_ID,
        "client_secret": DEFAULT_CLIENT_SECRET,
        **extra,
    }


async def _consent(client: httpx.AsyncClient, **params: str) -> httpx.Response:
    return await client.get("/apps/authorize/consent", params={"application_id": DEFAULT_APPLICATION_ID, **params})


async def test_consent_authorise_redirects_with_a_code_that_lwa_exchanges_once(
    amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    sim = amazon_simulator.sim
    sim.register_application(redirect_uris=[CALLBACK])
    seller = sim.add_seller(countries=("UK",), store_name="Tea Shop")
    async with amazon_simulator.client() as client:
        page = await _consent(client, state="s-123")
        assert page.status_code == 200
        assert "Authorise" in page.text and "Deny" in page.text and "Tea Shop" in page.text
        confirm = await client.post(
            "/apps/authorize/confirm",
            data={
                "application_id": DEFAULT_APPLICATION_ID,
                "state": "s-123",
                "redirect_uri": CALLBACK,
                "selling_partner_id": seller.selling_partner_id,
                "decision": "authorise",
            },
        )
        assert confirm.status_code == 302
        location = urlsplit(confirm.headers["location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == CALLBACK
        query = {k: v[0] for k, v in parse_qs(location.query).items()}
        assert set(query) == {"state", "selling_partner_id", "spapi_oauth_code"}
        assert (query["state"], query["selling_partner_id"]) == ("s-123", seller.selling_partner_id)

        tokens = await client.post("/auth/o2/token", data=_form(query["spapi_oauth_code"]))
        assert tokens.status_code == 200
        body = tokens.json()
        assert body["token_type"] == "bearer" and body["expires_in"] == 3600
        assert body["refresh_token"].startswith("Atzr|") and body["access_token"].startswith("Atza|")

        again = await client.post("/auth/o2/token", data=_form(query["spapi_oauth_code"]))
        assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")

        refreshed = await client.post(
            "/auth/o2/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": body["refresh_token"],
                "client_id": DEFAULT_CLIENT_ID,
                "client_secret": DEFAULT_CLIENT_SECRET,
            },
        )
        assert refreshed.status_code == 200
        participations = await client.get(
            "/sellers/v1/marketplaceParticipations", headers={"x-amz-access-token": refreshed.json()["access_token"]}
        )
        assert participations.status_code == 200
        assert participations.headers["x-amzn-RateLimit-Limit"] == "0.016"
        assert [p["marketplace"]["id"] for p in participations.json()["payload"]] == ["A1F83G8C2ARO7P"]


async def test_consent_deny_redirects_with_access_denied(amazon_simulator: AmazonServer) -> None:
    amazon_simulator.sim.register_application(redirect_uris=[CALLBACK])
    async with amazon_simulator.client() as client:
        confirm = await client.post(
            "/apps/authorize/confirm",
            data={
                "application_id": DEFAULT_APPLICATION_ID,
                "state": "s-9",
                "redirect_uri": CALLBACK,
                "decision": "deny",
            },
        )
    assert confirm.status_code == 302
    query = parse_qs(urlsplit(confirm.headers["location"]).query)
    assert query["error"] == ["access_denied"] and query["state"] == ["s-9"]
    assert "spapi_oauth_code" not in query


async def test_consent_refuses_an_unknown_app_a_foreign_redirect_a_missing_state_and_a_draft_without_beta(
    amazon_simulator: AmazonServer,
) -> None:
    sim = amazon_simulator.sim
    sim.register_application(redirect_uris=[CALLBACK])
    async with amazon_simulator.client() as client:
        assert (
            await client.get("/apps/authorize/consent", params={"application_id": "x", "state": "s"})
        ).status_code == 400
        assert (await _consent(client, state="s", redirect_uri="https://evil.example/cb")).status_code == 400
        assert (await _consent(client)).status_code == 400
        sim.register_application(redirect_uris=[CALLBACK], draft=True)
        assert (await _consent(client, state="s")).status_code == 400
        assert (await _consent(client, state="s", version="beta")).status_code == 200


async def test_lwa_refuses_a_wrong_secret_an_expired_code_and_a_redirect_that_differs(
    amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    sim = amazon_simulator.sim
    sim.register_application(redirect_uris=[CALLBACK])
    seller = sim.add_seller(countries=("DE",))
    async with amazon_simulator.client() as client:
        wrong = await client.post(
            "/auth/o2/token", data=_form(sim.authorization_code(seller.selling_partner_id), client_secret="nope")
        )
        assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_client")
        other = await client.post(
            "/auth/o2/token",
            data=_form(
                sim.authorization_code(seller.selling_partner_id), redirect_uri="https://merchant.example/other"
            ),
        )
        assert other.json()["error"] == "invalid_grant"
        code = sim.authorization_code(seller.selling_partner_id)
        clock.advance(minutes=5, seconds=1)  # the code lives five minutes
        late = await client.post("/auth/o2/token", data=_form(code))
        assert (late.status_code, late.json()["error"]) == (400, "invalid_grant")
        unsupported = await client.post("/auth/o2/token", data={**_form(code), "grant_type": "password"})
        assert unsupported.json()["error"] == "unsupported_grant_type"
    violation = sim.take_violations()  # the password grant broke the LWA contract: recorded as the client's
    assert [(v.side, v.operation) for v in violation] == [("lwa", "lwaToken")]


async def test_an_expired_access_token_and_a_revoked_authorisation_are_refused_as_amazon_does(
    amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    sim = amazon_simulator.sim
    seller = sim.add_seller(countries=("UK",))
    refresh = sim.authorise(seller.selling_partner_id)
    access = await amazon_simulator.access_token(refresh)
    async with amazon_simulator.client(headers={"x-amz-access-token": access}) as client:
        assert (await client.get("/sellers/v1/marketplaceParticipations")).status_code == 200
        clock.advance(seconds=3600)
        expired = await client.get("/sellers/v1/marketplaceParticipations")
        assert expired.status_code == 403
        assert expired.json()["errors"][0] == {
            "code": "Unauthorized",
            "message": "Access to requested resource is denied.",
            "details": "The access token you provided has expired.",
        }
        assert "x-amzn-RateLimit-Limit" in expired.headers
        missing = await client.get("/sellers/v1/marketplaceParticipations", headers={"x-amz-access-token": ""})
        assert missing.status_code == 403

    access = await amazon_simulator.access_token(refresh)
    sim.revoke(seller.selling_partner_id)
    async with amazon_simulator.client(headers={"x-amz-access-token": access}) as client:
        revoked = await client.get("/sellers/v1/marketplaceParticipations")
        assert revoked.status_code == 403 and "revoked" in revoked.json()["errors"][0]["details"]
        lwa = await client.post(
            "/auth/o2/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": refresh,
                "client_id": DEFAULT_CLIENT_ID,
                "client_secret": DEFAULT_CLIENT_SECRET,
            },
        )
        assert (lwa.status_code, lwa.json()["error"]) == (400, "invalid_grant")
        sim.revoke(seller.selling_partner_id, status=401)  # 401 where the operation declares it (Feeds), else 403
        assert (await client.get("/feeds/2021-06-30/feeds/1")).status_code == 401
        assert (await client.get("/sellers/v1/marketplaceParticipations")).status_code == 403
    sim.restore(seller.selling_partner_id)
    assert await amazon_simulator.access_token(refresh)
