"""A 500-SKU price/stock push with propagation to an Amazon connection, against the SP-API simulator as its own
process (`marketsync sandbox amazon`), next to the same push to the sandbox P2 (in process), both databases.

    .venv/bin/python -m bench.runs.amazon_push [--runs 5] [--skus 500] [--backends sqlite,postgresql]

Each run moves every product's stock (the catalogue's side of a push) and runs the PriceStockPush job through the
worker's own path (claim, feed, polls, end state) for each connection. The wall time of the Amazon push includes the
simulator's processing of the feed (it checks the document and each message against the product type's schema with
a pure-Python validator, in its own process); this process's CPU time is the service's own share. What is counted for
Amazon is every HTTP call the connector made (client.AmazonServices.calls): the target is one feed, at most five calls
besides the getFeed polls (createFeedDocument, the upload, createFeed, getFeedDocument, the report's download: issue
40). The feed's polls wait
for the simulator's processing, which is Amazon's time, not ours: the pipeline's poll pause is 0 here, as in
bench/runs/marketplaces_feeds.py, and the simulator finishes a feed on its second poll.

The last line is a FIGURES line (bench/support.py print_figures) for make bench.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from typing import Any

import httpx
from sqlalchemy import text

from bench.support import REPO, cpu_probe_ms, print_figures, scratch_database
from marketsync import migrate
from marketsync.auth import service as auth_service
from marketsync.config import Settings
from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import JobStatus, PriceStockPushPayload
from marketsync.kit.ids import new_id
from marketsync.marketplaces import credentials, feeds, service
from marketsync.marketplaces.amazon.client import services_of
from marketsync.marketplaces.amazon.simulator.state import (
    DEFAULT_APPLICATION_ID,
    DEFAULT_CLIENT_ID,
    DEFAULT_CLIENT_SECRET,
)
from marketsync.marketplaces.registry import compose_connectors
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime

SKUS = 500


class Simulator:
    """`marketsync sandbox amazon --port 0` as its own process; its URL read from what it prints."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "marketsync", "sandbox", "amazon", "--port", "0"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        for line in self.process.stdout:
            found = re.search(r"MARKETSYNC_AMAZON_SPAPI_URL=(\S+)", line)
            if found:
                self.url = found.group(1)
                return
        raise SystemExit("the simulator did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _products(account_id: str, count: int, now: Any) -> list[Product]:
    return [
        Product(
            id=new_id(), account_id=account_id, sku=f"BENCH-{i:05d}", sku_lower=f"bench-{i:05d}",
            price=Decimal("10.00"), quantity=5, title=f"BENCH-{i:05d}", modified_at=now, created_at=now,
        )
        for i in range(count)
    ]  # fmt: skip


def _listings(connection: MarketplaceConnection, products: list[Product], ids: dict[str, str], now: Any) -> list[Any]:
    return [
        Listing(
            id=new_id(), account_id=connection.account_id, product_id=p.id, marketplace_id=connection.id,
            listing_id=ids[p.sku], external_sku=p.sku, listing_url="https://example.invalid/", attributes={},
            status="Live", marketplace_price=Decimal("10.00"), marketplace_quantity=5, created_at=now, updated_at=now,
        )
        for p in products
    ]  # fmt: skip


async def _setup(rt: Runtime, sim_url: str, skus: int) -> tuple[MarketplaceConnection, MarketplaceConnection, str]:
    async with httpx.AsyncClient(base_url=sim_url, timeout=30) as control:
        seller = (await control.post("/_simulator/sellers", json={"countries": ["UK"]})).json()["selling_partner_id"]
        refresh = (await control.post(f"/_simulator/sellers/{seller}/authorise")).json()["refresh_token"]
        for i in range(skus):
            answer = await control.put(
                f"/_simulator/sellers/{seller}/listings/UK/BENCH-{i:05d}", json={"price": "10.00", "quantity": 5}
            )
            answer.raise_for_status()
    async with rt.db.transaction() as session:
        account = await auth_service.create_account(rt, session, f"bench-{new_id()}")
        amazon = await service.connect(rt, session, account.id, "Amazon", "UK")
        amazon.seller_id, amazon.credential = seller, credentials.seal(rt, amazon.id, refresh)
        p2 = await service.connect(rt, session, account.id, "P2", "DE")
        now = rt.clock.now()
        products = _products(account.id, skus, now)
        session.add_all(products)
        sandbox_seller = await sandbox_state.ensure_seller(session, p2.id, "P2", "DE", now)
        known = [sandbox_state.KnownListing(p.sku, None, None, p.title, None, Decimal("10.00"), 5) for p in products]
        remote = await sandbox_state.seed_listings(session, sandbox_seller, now, known)
        session.add_all(_listings(amazon, products, {p.sku: p.sku for p in products}, now))
        session.add_all(_listings(p2, products, {p.sku: remote[p.sku].listing_id for p in products}, now))
    return amazon, p2, account.id


async def _push(
    rt: Runtime, account_id: str, connection: MarketplaceConnection, product_ids: list[str]
) -> tuple[float, float]:
    """(wall ms, this process's CPU ms) of one push job run to its end."""
    async with rt.db.transaction() as session:
        payload = PriceStockPushPayload(MarketplaceId=connection.id, ProductIds=product_ids)
        job = jobs_service.enqueue(session, rt.clock.now(), account_id, payload)
    start, cpu = time.perf_counter(), time.process_time()
    status, _ = await jobs_service.run_now(rt, job.id)
    elapsed, used = (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000
    assert status == JobStatus.COMPLETED, status
    return elapsed, used


async def measure(url: str, sim_url: str, runs: int, skus: int) -> dict[str, float]:
    settings = Settings(
        database_url=url, encryption_keys="b1:" + "A" * 43, secret_hash_key="B" * 43,
        amazon_app_id=DEFAULT_APPLICATION_ID, amazon_lwa_client_id=DEFAULT_CLIENT_ID,
        amazon_lwa_client_secret=DEFAULT_CLIENT_SECRET, amazon_spapi_url=sim_url,
        amazon_lwa_url=f"{sim_url}/auth/o2/token",
    )  # fmt: skip
    rt = compose_connectors(Runtime.create(settings))
    try:
        await migrate.upgrade(rt.db)
        amazon, p2, account_id = await _setup(rt, sim_url, skus)
        if not rt.db.is_sqlite:
            async with rt.db.engine.connect() as conn:
                await (await conn.execution_options(isolation_level="AUTOCOMMIT")).execute(text("ANALYZE"))
        async with rt.db.read() as session:
            ids = [str(row[0]) for row in (await session.execute(Product.__table__.select())).all()]
        feeds.POLL_DELAYS_S = (0.0,) * len(feeds.POLL_DELAYS_S)
        timings: dict[str, list[float]] = {"amazon": [], "p2": [], "amazon_cpu": [], "p2_cpu": []}
        calls: list[list[str]] = []
        for run in range(runs):
            async with rt.db.transaction() as session:
                await session.execute(Product.__table__.update().values(quantity=100 + run))
            before = len(services_of(rt).calls)
            wall, cpu = await _push(rt, account_id, amazon, ids)
            timings["amazon"].append(wall)
            timings["amazon_cpu"].append(cpu)
            calls.append([operation for operation, _ in services_of(rt).calls[before:]])
            wall, cpu = await _push(rt, account_id, p2, ids)
            timings["p2"].append(wall)
            timings["p2_cpu"].append(cpu)
        besides_polls = [len([c for c in made if c != "getFeed"]) for made in calls]
        polls = [made.count("getFeed") for made in calls]
        return {
            "amazon_ms_p50": statistics.median(timings["amazon"]),
            "amazon_ms_max": max(timings["amazon"]),
            "p2_ms_p50": statistics.median(timings["p2"]),
            "p2_ms_max": max(timings["p2"]),
            "amazon_cpu_ms_p50": statistics.median(timings["amazon_cpu"]),
            "p2_cpu_ms_p50": statistics.median(timings["p2_cpu"]),
            "amazon_calls_besides_polls_max": max(besides_polls),
            "amazon_polls_max": max(polls),
        }
    finally:
        await rt.close()


def figures(results: dict[str, dict[str, float]], skus: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for backend, measured in results.items():
        out.append(
            {"what": f"{skus}-SKU push to Amazon (simulator in its own process), job end to end, p50 ({backend})",
             "ours": round(measured["amazon_ms_p50"], 1), "p99_ms": round(measured["amazon_ms_max"], 1),
             "floor": None, "reference": round(measured["p2_ms_p50"], 1),
             "reference_name": "the same push to the sandbox P2 (in process), same run",
             "ratio": round(measured["amazon_ms_p50"] / measured["p2_ms_p50"], 2),
             "target": "one feed: <= 5 HTTP calls besides the polls (issue 40)", "unit": "ms"}
        )  # fmt: skip
        out.append(
            {"what": f"the service's own CPU in that push (the simulator's is another process's), p50 ({backend})",
             "ours": round(measured["amazon_cpu_ms_p50"], 1), "p99_ms": None, "floor": None,
             "reference": round(measured["p2_cpu_ms_p50"], 1),
             "reference_name": "the push to P2, the in-process sandbox's own work included",
             "ratio": round(measured["amazon_cpu_ms_p50"] / measured["p2_cpu_ms_p50"], 2),
             "target": "none: the share of the wall time that is the service's",
             "unit": "ms"}
        )  # fmt: skip
        out.append(
            {"what": f"HTTP calls of that push besides the getFeed polls, most of any run ({backend})",
             "ours": measured["amazon_calls_besides_polls_max"], "p99_ms": None, "floor": None,
             "ratio": None, "target": "<= 5 (issue 40)", "unit": "calls"}
        )  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skus", type=int, default=SKUS)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    probe_before = cpu_probe_ms()
    simulator = Simulator()
    results: dict[str, dict[str, float]] = {}
    try:
        for backend in args.backends.split(","):
            with scratch_database(backend) as url:
                results[backend] = asyncio.run(measure(url, simulator.url, args.runs, args.skus))
            print(backend, " ".join(f"{k}={v:.1f}" for k, v in results[backend].items()))
    finally:
        simulator.stop()
    print(f"CPU probe {probe_before} ms before, {cpu_probe_ms()} ms after; load average {os.getloadavg()[0]:.2f}")
    print_figures(figures(results, args.skus))


if __name__ == "__main__":
    main()
