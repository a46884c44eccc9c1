"""The SP-API client through the simulator: LWA access tokens cached until shortly before expiry, Amazon's real
endpoints when nothing overrides them, one deadline per call, errors mapped as the sandboxes' are, rates."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest

from marketsync.kinds import KINDS
from marketsync.kit.clock import Clock, FrozenClock
from marketsync.marketplaces.amazon.client import SERVICES_KEY, AmazonServices, SpApiError, services_of
from marketsync.marketplaces.amazon.connector import AmazonConnector
from marketsync.marketplaces.amazon.lwa import LwaTokens
from marketsync.marketplaces.amazon.regions import SITES
from marketsync.marketplaces.connector import AuthorizationRevoked, Throttled, Unavailable, connector_for
from marketsync.runtime import Runtime
from tests.marketplaces.amazon.support import amazon_connection, amazon_settings
from tests.support.amazon import AmazonServer
from tests.support.factories import make_account


@pytest.fixture
def clock() -> Clock:
    return FrozenClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))


@pytest.fixture
def settings_overrides(amazon_simulator: AmazonServer) -> dict[str, Any]:
    return {**amazon_settings(amazon_simulator), "marketplace_timeout_s": 2.0}


async def _connector(rt: Runtime, server: AmazonServer, country: str = "UK") -> AmazonConnector:
    account_id = await make_account(rt)
    connection, _ = await amazon_connection(rt, server, account_id, country)
    connector = connector_for(rt, connection)
    assert isinstance(connector, AmazonConnector)
    return connector


async def test_the_access_token_is_cached_until_shortly_before_it_expires(
    rt: Runtime, amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    connector = await _connector(rt, amazon_simulator)
    tokens = services_of(rt).tokens
    for _ in range(3):
        assert (await connector.check_authorization()).health_status == "Healthy"
    assert tokens.exchanges == 1
    clock.advance(seconds=3600 - 61)  # LWA's hour, less the margin, not yet reached
    await connector.check_authorization()
    assert tokens.exchanges == 1
    clock.advance(seconds=2)
    await connector.check_authorization()
    assert tokens.exchanges == 2


async def test_an_access_token_amazon_no_longer_takes_is_refreshed_once(
    rt: Runtime, amazon_simulator: AmazonServer
) -> None:
    connector = await _connector(rt, amazon_simulator)
    await connector.check_authorization()
    amazon_simulator.sim.expire_access_tokens()  # expired early at Amazon's side: 403, then a fresh token works
    assert (await connector.check_authorization()).health_status == "Healthy"
    assert services_of(rt).tokens.exchanges == 2


async def test_a_revoked_authorisation_is_authorization_revoked_on_refresh_and_on_sp_api(
    rt: Runtime, amazon_simulator: AmazonServer
) -> None:
    connector = await _connector(rt, amazon_simulator)
    amazon_simulator.sim.revoke(connector.seller_id)
    with pytest.raises(AuthorizationRevoked):  # LWA: invalid_grant
        await connector.pull_listings(None)
    services_of(rt).tokens.forget(connector.seller_id)
    status = await connector.check_authorization()
    assert (status.ok, status.health_status) == (False, "UnAuthorized")


@pytest.mark.parametrize(("status", "error"), [(429, Throttled), (500, Unavailable), (503, Unavailable)])
async def test_throttling_and_outages_are_retried_later(
    rt: Runtime, amazon_simulator: AmazonServer, status: int, error: type[Exception]
) -> None:
    connector = await _connector(rt, amazon_simulator)
    amazon_simulator.sim.fail_next("searchListingsItems", status=status)
    with pytest.raises(error):
        await connector.pull_listings(None)
    await connector.pull_listings(None)  # the next call goes through


async def test_a_429_empties_the_operations_bucket_and_the_header_sets_its_rate(
    rt: Runtime, amazon_simulator: AmazonServer
) -> None:
    connector = await _connector(rt, amazon_simulator)
    amazon_simulator.sim.set_rate("searchListingsItems", 0.25, 1)
    amazon_simulator.sim.enforce_rate_limits()
    await connector.pull_listings(None)
    limits = services_of(rt).limits
    assert limits.rate(connector.seller_id, "searchListingsItems").per_second == 0.25  # x-amzn-RateLimit-Limit
    with pytest.raises(Throttled) as throttled:  # the bucket's next token is 4 s away (the clock is frozen)
        await connector.pull_listings(None)
    assert throttled.value.retry_after_s == pytest.approx(4.0)


async def test_one_deadline_bounds_a_dripping_answer(rt: Runtime, amazon_simulator: AmazonServer) -> None:
    connector = await _connector(rt, amazon_simulator)
    await connector.check_authorization()
    amazon_simulator.sim.set_drip(0.2, "getMarketplaceParticipations")  # hundreds of bytes, one every 0.2 s
    started = time.monotonic()
    status = await connector.check_authorization()
    assert (status.ok, status.health_status) == (False, "Unavailable")
    assert time.monotonic() - started < 2.0 + 1.0


async def test_an_error_answer_carries_amazons_errors(rt: Runtime, amazon_simulator: AmazonServer) -> None:
    connector = await _connector(rt, amazon_simulator)
    with pytest.raises(SpApiError) as refused:
        await connector.api.call("getFeed", "GET", "/feeds/2021-06-30/feeds/999")
    assert refused.value.status == 404
    assert refused.value.errors and refused.value.errors[0]["code"]


async def test_amazon_serves_its_countries_and_refuses_others(rt: Runtime, amazon_simulator: AmazonServer) -> None:
    assert set(KINDS["Amazon"].sites) == set(SITES) == {
        "UK", "DE", "FR", "IT", "ES", "NL", "SE", "PL", "BE", "US", "CA", "MX", "JP", "AU",
    }  # fmt: skip
    for country in ("DE", "JP", "US"):
        connector = await _connector(rt, amazon_simulator, country)
        assert (await connector.check_authorization()).health_status == "Healthy"


# -- Amazon's own endpoints, without calling them ------------------------------------------------------------------


class RecordAndRefuse(httpx.AsyncBaseTransport):
    """Records each URL; answers LWA's token endpoint with a token and refuses everything else (no packet leaves)."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.urls.append(str(request.url.copy_with(query=None)))
        if request.url.path == "/auth/o2/token":
            return httpx.Response(200, json={"access_token": "Atza|x", "token_type": "bearer", "expires_in": 3600})
        raise httpx.ConnectError("refused: this test never leaves the machine", request=request)


@pytest.mark.parametrize(
    ("country", "lwa", "spapi"),
    [
        ("UK", "https://api.amazon.co.uk/auth/o2/token", "https://sellingpartnerapi-eu.amazon.com"),
        ("US", "https://api.amazon.com/auth/o2/token", "https://sellingpartnerapi-na.amazon.com"),
        ("JP", "https://api.amazon.co.jp/auth/o2/token", "https://sellingpartnerapi-fe.amazon.com"),
    ],
)
async def test_without_the_url_settings_the_calls_go_to_amazons_regional_endpoints(
    rt: Runtime, amazon_simulator: AmazonServer, country: str, lwa: str, spapi: str
) -> None:
    connector = await _connector(rt, amazon_simulator, country)
    rt.settings.amazon_spapi_url = None
    rt.settings.amazon_lwa_url = None
    transport = RecordAndRefuse()
    http = httpx.AsyncClient(transport=transport)
    await services_of(rt).aclose()
    rt.extras[SERVICES_KEY] = AmazonServices(http, LwaTokens(http, rt.clock, 2.0))
    connector = connector_for(rt, connector.connection)
    assert isinstance(connector, AmazonConnector)
    status = await connector.check_authorization()
    assert (status.ok, status.health_status) == (False, "Unavailable")
    assert transport.urls == [lwa, f"{spapi}/sellers/v1/marketplaceParticipations"]


@pytest.mark.parametrize(
    ("country", "page"),
    [
        ("UK", "https://sellercentral.amazon.co.uk/apps/authorize/consent"),
        ("DE", "https://sellercentral.amazon.de/apps/authorize/consent"),
        ("US", "https://sellercentral.amazon.com/apps/authorize/consent"),
    ],
)
async def test_without_the_consent_setting_the_merchant_is_sent_to_the_sites_seller_central(
    rt: Runtime, amazon_simulator: AmazonServer, country: str, page: str
) -> None:
    connector = await _connector(rt, amazon_simulator, country)
    rt.settings.amazon_consent_url = None
    callback = "https://service.example/app/marketplaces/amazon/callback"
    start = await connector.begin_consent("STATE-1", callback)
    assert start.url is not None
    address, _, query = start.url.partition("?")
    assert address == page  # never called: the merchant's browser goes there
    assert dict(parse_qsl(query)) == {
        "application_id": rt.settings.amazon_app_id,
        "state": "STATE-1",
        "redirect_uri": callback,
    }
