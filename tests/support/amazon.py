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
import os
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


def sockets_of_port(port: int) -> list[str]:
    """This process's TCP sockets on 127.0.0.1:`port` at either end, still open ("local port -> peer port, state"),
    read from Linux's /proc (elsewhere: none found)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    inodes = set()
    for name in names:
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{name}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    states = {"01": "ESTABLISHED", "06": "TIME_WAIT", "08": "CLOSE_WAIT", "0A": "LISTEN"}
    found = []
    with contextlib.suppress(OSError), open("/proc/net/tcp") as table:
        next(table, None)
        for line in table:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if inode in inodes and f"0100007F:{port:04X}" in (local, remote):
                ends = f"{int(local.split(':')[1], 16)} -> {int(remote.split(':')[1], 16)}"
                found.append(f"{ends}, {states.get(state, state)}")
    return found


def fail_on_open_sockets(server: AmazonServer) -> None:
    """pytest.fail when a socket of this process is still open at the simulator's port once it stopped (a client of it,
    or a connection it accepted): such a socket would be closed only by the garbage collector, whose ResourceWarning
    then fails whichever test happens to run at that moment. Here the test that left it open fails, naming it."""
    port = int(server.url.rsplit(":", 1)[1])
    left = sockets_of_port(port)
    if left:
        pytest.fail(
            f"{len(left)} socket(s) still open at the Amazon simulator's port {port} after it stopped "
            f"({'; '.join(left)}): close the client (or the runtime holding it) before the simulator's fixture ends",
            pytrace=False,
        )


@pytest.fixture
async def amazon_simulator(clock: Clock) -> AsyncIterator[AmazonServer]:
    """The simulator on the test's clock, served on 127.0.0.1; fails the test on any recorded contract violation, and
    on any socket left open at its port when it stops (every client is closed first: fail_on_open_sockets)."""
    sim = AmazonSimulator(clock)
    async with serve_amazon(sim) as server:
        yield server
    fail_on_violations(sim)
    fail_on_open_sockets(server)
