"""The simulator misbehaves as Amazon does when told (429 with the rate header, 5xx, a slow and a dripping answer,
rates enforced), and holds both sides to the contract: a request or an answer that breaks it is recorded, and the
fixture fails the test that caused it."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from marketsync.kit.clock import FrozenClock
from marketsync.marketplaces.amazon.simulator import AmazonSimulator, operations
from tests.support.amazon import AmazonServer, fail_on_open_sockets, fail_on_violations, serve_amazon

UK = "A1F83G8C2ARO7P"
PARTICIPATIONS = "/sellers/v1/marketplaceParticipations"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))


async def test_a_request_that_breaks_the_contract_is_answered_400_and_recorded(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    async with amazon_simulator.seller_client(sid) as client:
        answer = await client.get("/orders/v0/orders", params={"marketplaceIds": UK, "CreatedAfter": "2026-01-01"})
        assert answer.status_code == 400
        assert answer.json()["errors"][0]["code"] == "InvalidInput"
        assert "x-amzn-RateLimit-Limit" in answer.headers
        unknown = await client.get("/orders/v9/orders")
        assert unknown.status_code == 404
    violations = sim.take_violations()
    assert [(v.side, v.operation) for v in violations] == [("request", "getOrders"), ("request", "?")]
    assert violations[0].errors == (
        "query parameter marketplaceIds: not a parameter of getOrders",
        "query parameter MarketplaceIds: required",
    )


async def test_an_answer_that_would_break_the_contract_is_recorded_and_sent_as_500(
    amazon_simulator: AmazonServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id

    def broken(call: operations.Call) -> tuple[int, Any]:
        return 200, {"payload": {"not": "a list"}}

    monkeypatch.setitem(operations.HANDLERS, "getMarketplaceParticipations", broken)
    async with amazon_simulator.seller_client(sid) as client:
        answer = await client.get(PARTICIPATIONS)
    assert answer.status_code == 500
    [violation] = sim.take_violations()
    assert violation.side == "response" and violation.status == 200
    assert violation.errors == ("body.payload: {'not': 'a list'} is not of type 'array'",)


def test_the_fixture_fails_the_test_that_caused_a_violation() -> None:
    sim = AmazonSimulator()
    fail_on_violations(sim)  # nothing recorded: passes
    from marketsync.marketplaces.amazon.simulator.state import Violation

    sim.record(Violation("request", "getOrders", "GET", "/orders/v0/orders", ("MarketplaceIds: required",)))
    with pytest.raises(pytest.fail.Exception, match=r"request GET /orders/v0/orders \(getOrders\): MarketplaceIds"):
        fail_on_violations(sim)


@pytest.mark.skipif(
    not os.path.exists("/proc/net/tcp"), reason="no /proc/net/tcp: the open sockets are read from Linux's /proc"
)
async def test_a_client_left_connected_when_the_simulator_stops_fails_the_test_that_left_it() -> None:
    """Decision 0380: the socket is named at the test that leaked it, not by the collector's ResourceWarning later."""
    sim = AmazonSimulator()
    async with serve_amazon(sim) as server:
        client = server.client()
        assert (await client.get("/_simulator/state")).status_code == 200  # a kept-alive connection
    try:
        with pytest.raises(pytest.fail.Exception, match=r"1 socket\(s\) still open at the Amazon simulator's port"):
            fail_on_open_sockets(server)
    finally:
        await client.aclose()
    fail_on_open_sockets(server)  # closed: nothing left


async def test_queued_faults_answer_429_and_5xx_as_amazon_does(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    sim.fail_next("getMarketplaceParticipations", status=429)
    sim.fail_next("getMarketplaceParticipations", status=503)
    sim.fail_next(None, status=500)
    async with amazon_simulator.seller_client(sid) as client:
        throttled = await client.get(PARTICIPATIONS)
        assert throttled.status_code == 429
        assert throttled.headers["x-amzn-RateLimit-Limit"] == "0.016"
        assert throttled.json()["errors"][0]["code"] == "QuotaExceeded"
        assert (await client.get(PARTICIPATIONS)).status_code == 503
        assert (
            await client.get("/definitions/2020-09-01/productTypes", params={"marketplaceIds": UK})
        ).status_code == 500
        assert (await client.get(PARTICIPATIONS)).status_code == 200
    sim.fail_next("lwaToken", status=503)
    with pytest.raises(httpx.HTTPStatusError):
        await amazon_simulator.access_token(sim.authorise(sid))


async def test_rates_are_enforced_per_seller_and_operation_when_switched_on(
    amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    sim.enforce_rate_limits()
    sim.set_rate("getFeed", 2, 3)
    async with amazon_simulator.seller_client(sid) as client:
        answers = [(await client.get("/feeds/2021-06-30/feeds/1")).status_code for _ in range(4)]
        assert answers == [404, 404, 404, 429]
        clock.advance(seconds=0.5)  # 2 per second: one request's worth
        assert (await client.get("/feeds/2021-06-30/feeds/1")).status_code == 404
        assert (await client.get("/feeds/2021-06-30/feeds/1")).status_code == 429
        # the published default for getMarketplaceParticipations: burst 15
        codes = [(await client.get(PARTICIPATIONS)).status_code for _ in range(16)]
        assert codes.count(429) == 1 and codes[-1] == 429


async def test_a_slow_answer_and_a_dripping_answer(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    async with amazon_simulator.seller_client(sid) as client:
        sim.set_delay(0.3, "getMarketplaceParticipations")
        started = time.perf_counter()
        with pytest.raises(httpx.ReadTimeout):
            await client.get(PARTICIPATIONS, timeout=0.1)
        assert time.perf_counter() - started < 0.3
        sim.set_delay(0, "getMarketplaceParticipations")
        sim.set_drip(0.002, "getMarketplaceParticipations")
        chunks = []
        async with client.stream("GET", PARTICIPATIONS) as answer:
            async for chunk in answer.aiter_raw():
                chunks.append(chunk)
        body = b"".join(chunks)
        assert len(chunks) > 50 and body.startswith(b'{"payload"')
        await asyncio.sleep(0)


async def test_control_endpoints_drive_the_simulator_of_another_process(amazon_simulator: AmazonServer) -> None:
    async with amazon_simulator.client() as client:
        seller = (await client.post("/_simulator/sellers", json={"countries": ["UK"]})).json()["selling_partner_id"]
        put = await client.put(f"/_simulator/sellers/{seller}/listings/UK/TEA-1", json={"price": "3.50", "quantity": 4})
        assert put.json() == {"sku": "TEA-1", "price": "3.5", "quantity": 4}
        orders = await client.post(f"/_simulator/sellers/{seller}/orders", json={"marketplace": "UK", "count": 3})
        assert len(orders.json()["AmazonOrderIds"]) == 3
        assert (await client.post(f"/_simulator/sellers/{seller}/revoke", json={})).status_code == 200
        assert (await client.post("/_simulator/feed-fault", json={"mode": "reject"})).status_code == 200
        assert (
            await client.post("/_simulator/faults", json={"operation": "getOrders", "status": 503})
        ).status_code == 200
        assert (await client.post("/_simulator/clock", json={"advance_s": 60})).status_code == 200
        state = (await client.get("/_simulator/state")).json()
        [entry] = state["Sellers"]
        assert entry["authorised"] is False and entry["marketplaces"]["UK"]["orders"] == 3
        assert (await client.post("/_simulator/feed-fault", json={"mode": "sometimes"})).status_code == 400
        assert (await client.get("/_simulator/nothing")).status_code == 404
    assert amazon_simulator.sim.feed_fault(seller).mode == "reject"
