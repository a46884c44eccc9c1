"""The deploy topology as processes on loopback, for the soak and the kill -9 commands: a scratch PostgreSQL
database with the demo tenant, Redis, `db upgrade` once, API processes and workers (`deploy/compose.yaml` without
containers), and an HTTPS webhook receiver (trustme, 127.0.0.1) that counts deliveries by X-SVC-Delivery-Id."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
import trustme
import uvicorn

from bench.support import BENCH_KEY_ENV, REPO, create_scratch_pg, drop_scratch_pg, free_port, stderr_sink, wait_ready
from marketsync.marketplaces.sandbox import taxonomies as shipped

REDIS_URL = "redis://127.0.0.1:6379/0"
MARKETSYNC = [sys.executable, "-m", "marketsync"]
EVENT_TYPES = [
    "OrdersDownloaded", "ListingPublished", "FeedOutcome", "MarketplaceUnhealthy", "MarketplaceRestored",
    "InventoryChanged",
]  # fmt: skip


class Receiver:
    """Counts deliveries by X-SVC-Delivery-Id and answers 200 at once (acknowledge first, as the spec asks)."""

    def __init__(self) -> None:
        self.by_delivery: Counter[str] = Counter()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = bool((await receive()).get("more_body"))
        self.by_delivery[dict(scope["headers"]).get(b"x-svc-delivery-id", b"").decode()] += 1
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@dataclass
class Cluster:
    url: str
    env: dict[str, str]
    demo: dict[str, Any]
    receiver: Receiver
    apis: list[str] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    sinks: list[Any] = field(default_factory=list)
    token: str = ""
    seed: dict[str, Any] = field(default_factory=dict)
    events_before: int = 0

    def start_worker(self) -> subprocess.Popen[bytes]:
        env = {**self.env, "MARKETSYNC_WORKER_METRICS_PORT": "0"}
        return self.start([*MARKETSYNC, "worker"], env)

    def start(self, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        """A service process; its stderr kept when BENCH_LOGS names a folder (bench/support.py stderr_sink)."""
        sink = stderr_sink(command)
        if sink is not subprocess.DEVNULL:
            self.sinks.append(sink)
        started = subprocess.Popen(command, env=env, cwd=REPO, stderr=sink)
        self.processes.append(started)
        return started

    async def sql(self, query: str, *args: Any) -> Any:
        connection = await asyncpg.connect(self.url)
        try:
            return await connection.fetch(query, *args)
        finally:
            await connection.close()

    async def drain(self, deadline_s: float) -> tuple[int, int]:
        """Until every event is fanned out and every delivery finished: (events, succeeded deliveries)."""
        deadline = time.monotonic() + deadline_s
        while True:
            [[waiting]] = await self.sql(
                "SELECT (SELECT count(*) FROM events WHERE dispatched_at IS NULL)"
                " + (SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending')"
            )
            if waiting == 0 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        [[events, succeeded]] = await self.sql(
            "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries WHERE status = 'Succeeded')"
        )
        return int(events), int(succeeded)


async def _seed(cluster: Cluster, receiver_url: str) -> None:
    async with httpx.AsyncClient(base_url=cluster.apis[0], timeout=30) as api:
        token = await api.post("/connect/token", data={
            "grant_type": "client_credentials", "client_id": cluster.demo["client_id"],
            "client_secret": cluster.demo["client_secret"]})  # fmt: skip
        cluster.token = token.json()["access_token"]
        api.headers["Authorization"] = f"Bearer {cluster.token}"
        created = await api.post("/api/webhooks/Create", json={"Url": receiver_url, "EventTypes": EVENT_TYPES})
        assert created.status_code == 200, created.text
        products = (await api.post("/api/products/List", json={"Limit": 200})).json()["Products"]
        orders = (await api.post("/api/orders/List", json={"Limit": 200})).json()["Orders"]
        marketplaces = (await api.get("/api/marketplaces")).json()["Marketplaces"]
        p1 = next(m for m in marketplaces if m["Platform"] == "P1")
        category = shipped.ANCHOR_IDS["P1"]["Smartphones"]
        params = {"marketplaceId": p1["MarketplaceId"], "categoryId": category}
        schema = (await api.get("/api/product-types/Schema", params=params)).json()
    attributes = {"Title": "Soak Phone", "Brand": "Acme", "Condition": "NEW", "Model": "S-1", "StorageCapacityGb": 64}
    cluster.seed = {
        "skus": [p["Sku"] for p in products],
        "listed_skus": [p["Sku"] for p in products if p["Listings"]],
        "items": [(i["OrderItemId"], o["Currency"]) for o in orders for i in o["Items"]],
        "create": {
            "MarketplaceId": p1["MarketplaceId"],
            "CategoryId": category,
            "ProductTypeViewId": schema["ProductTypeViewId"],
            "Attributes": attributes,
        },
        "p2": next(m["MarketplaceId"] for m in marketplaces if m["Platform"] == "P2"),
    }


@contextlib.asynccontextmanager
async def running(apis: int, workers: int, stock_owner: str | None = None, **settings: str) -> AsyncIterator[Cluster]:
    workdir = Path(tempfile.mkdtemp(prefix="ms-cluster-"))
    ca = trustme.CA()
    cert = workdir / "receiver.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(cert))
    ca.cert_pem.write_to_path(str(workdir / "ca.pem"))
    receiver = Receiver()
    receiver_port = free_port()
    server = uvicorn.Server(uvicorn.Config(
        receiver, host="127.0.0.1", port=receiver_port, log_config=None, access_log=False, lifespan="off",
        ssl_certfile=str(cert), ssl_keyfile=str(cert), backlog=1024,
    ))  # fmt: skip
    receiver_task = asyncio.create_task(server.serve())
    name, url = await create_scratch_pg("ms_cluster")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")}
    env.update({
        **BENCH_KEY_ENV, "MARKETSYNC_DATABASE_URL": url, "MARKETSYNC_VAR_DIR": str(workdir),
        "MARKETSYNC_REDIS_URL": REDIS_URL, "MARKETSYNC_RATE_LIMIT": "1000000/minute",
        "MARKETSYNC_WEBHOOK_CA_BUNDLE": str(workdir / "ca.pem"), "MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "MARKETSYNC_ORDER_PULL_INTERVAL_S": "15", "MARKETSYNC_LOG_LEVEL": "WARNING", **settings,
    })  # fmt: skip
    cluster: Cluster | None = None
    try:
        subprocess.run([*MARKETSYNC, "db", "upgrade", "--json"], env=env, cwd=REPO, check=True, capture_output=True)
        demo = json.loads(
            subprocess.run([*MARKETSYNC, "demo", "--json"], env=env, cwd=REPO, check=True, capture_output=True).stdout
        )
        if stock_owner is not None:  # before any worker runs a listing mirror under the demo's setting
            owner = ["admin", "dataflow", "set", "--account", demo["AccountId"], "--kind", "Stock", "--owner"]
            subprocess.run([*MARKETSYNC, *owner, stock_owner], env=env, cwd=REPO, check=True, capture_output=True)
        cluster = Cluster(url, {**env, "MARKETSYNC_MIGRATE_ON_START": "false"}, demo, receiver)
        for _ in range(apis):
            port = free_port()
            cluster.apis.append(f"http://127.0.0.1:{port}")
            cluster.start([*MARKETSYNC, "serve", "--no-workers", "--port", str(port)], cluster.env)
        cluster.workers = [cluster.start_worker() for _ in range(workers)]
        for base in cluster.apis:
            await asyncio.to_thread(wait_ready, f"{base}/readyz")
        # The demo's events are fanned out before the subscription exists: an event still waiting for its fan-out
        # when the subscription is made would be delivered to it, and counted as delivered but not recorded.
        cluster.events_before, _ = await cluster.drain(60)
        await _seed(cluster, f"https://127.0.0.1:{receiver_port}/hook")
        yield cluster
    finally:
        if cluster is not None:
            # A process that ended before the run did is what a client's connection error points at first.
            ended = [f"{' '.join(p.args[-4:])}: exit {p.returncode}" for p in cluster.processes if p.poll() is not None]
            if ended:
                print(f"processes that ended during the run: {ended}", file=sys.stderr)
            for process in cluster.processes:
                process.terminate()
            for process in cluster.processes:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=30)
            for sink in cluster.sinks:
                sink.close()
        server.should_exit = True
        await receiver_task
        await drop_scratch_pg(name)
