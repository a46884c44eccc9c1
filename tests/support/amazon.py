"""The Amazon SP-API + LWA simulator on a loopback port, for tests.

    async def test_x(amazon_simulator: AmazonServer) -> None:
        seller = amazon_simulator.sim.add_seller(countries=("UK",))
        async with amazon_simulator.seller_client(seller.selling_partner_id) as client:   # x-amz-access-token set
            answer = await client.get("/sellers/v1/marketplaceParticipations")

Point a connector at it with MARKETSYNC_AMAZON_SPAPI_URL = server.url, MARKETSYNC_AMAZON_LWA_URL = server.lwa_url,
MARKETSYNC_AMAZON_CONSENT_URL = server.consent_url, and the simulator's application (server.sim.applications).

Every contract violation the simulator records (a request it received or an answer it sent that breaks Amazon's
published models) fails the test that caused it, at teardown. A test that provokes one on purpose takes it with
`sim.take_violations()`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from marketsync.kit.clock import Clock
from marketsync.marketplaces.amazon.simulator import AmazonSimulator, create_simulator_app
from marketsync.marketplaces.amazon.simulator.state import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from tests.support.server import serve


@dataclass
class AmazonServer:
    sim: AmazonSimulator
    url: str  # SP-API base URL (MARKETSYNC_AMAZON_SPAPI_URL)

    @property
    def lwa_url(self) -> str:
        return f"{self.url}/auth/o2/token"

    @property
    def consent_url(self) -> str:
        return f"{self.url}/apps/authorize/consent"

    def client(self, **kwargs: object) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=10, **kwargs)  # type: ignore[arg-type]

    async def access_token(self, refresh_token: str) -> str:
        async with self.client() as client:
            answer = await client.post(
                "/auth/o2/token",
                data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": DEFAULT_CLIENT_ID,
                      "client_secret": DEFAULT_CLIENT_SECRET},
            )  # fmt: skip
        answer.raise_for_status()
        return str(answer.json()["access_token"])

    @contextlib.asynccontextmanager
    async def seller_client(self, seller_id: str) -> AsyncIterator[httpx.AsyncClient]:
        """A client that calls SP-API as the application authorised by the seller (LWA refresh done)."""
        token = await self.access_token(self.sim.authorise(seller_id))
        async with self.client(headers={"x-amz-access-token": token}) as client:
            yield client


@contextlib.asynccontextmanager
async def serve_amazon(sim: AmazonSimulator) -> AsyncIterator[AmazonServer]:
    async with serve(create_simulator_app(sim)) as url:  # type: ignore[arg-type]
        sim.base_url = url
        yield AmazonServer(sim, url)


def fail_on_violations(sim: AmazonSimulator) -> None:
    """pytest.fail naming every contract violation the simulator recorded."""
    if sim.violations:
        pytest.fail("Amazon contract violations:\n" + "\n".join(f"  {v}" for v in sim.violations), pytrace=False)


@pytest.fixture
async def amazon_simulator(clock: Clock) -> AsyncIterator[AmazonServer]:
    """The simulator on the test's clock, served on 127.0.0.1; fails the test on any recorded contract violation."""
    sim = AmazonSimulator(clock)
    async with serve_amazon(sim) as server:
        yield server
    fail_on_violations(sim)
