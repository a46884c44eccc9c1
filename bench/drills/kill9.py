"""kill -9 of workers at random moments during pushes, publishes and webhook deliveries, then the ledger.

    .venv/bin/python -m bench.drills.kill9 [--kills 50] [--clients 4]

The deploy topology as processes (bench/drills/cluster.py: one API process, two workers, PostgreSQL, Redis, an HTTPS
receiver subscribed to every event). While clients push prices and stock with propagation (PriceStockPush feeds)
and create products (ListingPublish feeds), a worker is frozen (SIGSTOP), the jobs it holds are read from the
database, and it is killed (SIGKILL) and replaced; `--kills` times, at random moments 0.3-1.5 s apart. Afterwards
(every job ended, every event delivered) it prints and checks:
- nothing lost: no job left open; every event recorded after the subscription reached the receiver; with Stock
  owned by the merchant (Data Flow), the sandbox marketplace holds the catalogue's last quantity of every SKU
  pushed on P1;
- nothing applied twice at the marketplace: every listing's count of applied feed lines equals the lines the
  processed feeds carried (a feed processed twice would count its lines twice), and one feed per job at most;
- RecoveryCount: the sum over jobs equals the jobs the killed workers held when they died.
A delivery whose attempt was cut by a kill is sent again with the same X-SVC-Delivery-Id (at-least-once, receivers
de-duplicate): those are counted, not failed. Exit status 1 when a check fails. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import time
import uuid
from typing import Any

import httpx

from bench.drills import cluster


async def _clients(
    running: cluster.Cluster, until_stopped: asyncio.Event, counts: dict[str, int], pushed: set[str]
) -> None:
    headers = {"Authorization": f"Bearer {running.token}"}
    async with httpx.AsyncClient(base_url=running.apis[0], headers=headers, timeout=60) as api:
        while not until_stopped.is_set():
            if random.random() < 0.85:
                items = [{"Sku": sku, "Quantity": random.randint(0, 999)}
                         for sku in random.sample(running.seed["listed_skus"], k=2)]  # fmt: skip
                pushed.update(item["Sku"] for item in items)
                response = await api.post(
                    "/api/inventory/price-quantity", json={"Items": items, "PropagateToListings": True}
                )
                counts["pushes"] += 1
            else:
                body = {**running.seed["create"], "Sku": f"KILL-{uuid.uuid4().hex[:10]}"}
                response = await api.post("/api/products/Create", json=body,
                                          headers={"Idempotency-Key": str(uuid.uuid4())})  # fmt: skip
                counts["creates"] += 1
            if response.status_code >= 500:
                counts["5xx"] += 1
            await asyncio.sleep(0.02)


async def _held_by(running: cluster.Cluster, pid: int) -> int:
    # A worker's id is host:pid:suffix (worker.worker_identity): its leases name it.
    rows = await running.sql(
        "SELECT count(*) FROM jobs WHERE status = 'InProcess' AND split_part(lease_owner, ':', 2) = $1", str(pid)
    )
    return int(rows[0][0])


async def run(kills: int, clients: int) -> dict[str, Any]:
    result: dict[str, Any] = {"kills": kills}
    # Short leases: a killed worker's jobs are taken over within seconds.
    # Stock owned by the merchant's system (Data Flow), set before any worker starts: the marketplace must end at the
    # catalogue's values (with the default, Marketplace, the listing mirror rightly brings the marketplace's back).
    async with cluster.running(apis=1, workers=2, stock_owner="Merchant", MARKETSYNC_JOB_LEASE_S="3") as running:
        stop = asyncio.Event()
        counts = {"pushes": 0, "creates": 0, "5xx": 0}
        pushed: set[str] = set()  # the demo leaves other SKUs drifted on purpose (Data Flow): only these must match
        traffic = [asyncio.create_task(_clients(running, stop, counts, pushed)) for _ in range(clients)]
        held_at_kill = 0
        for _ in range(kills):
            await asyncio.sleep(random.uniform(0.3, 1.5))
            index = random.randrange(len(running.workers))
            victim = running.workers[index]
            os.kill(victim.pid, signal.SIGSTOP)  # frozen: it can commit nothing while its leases are read
            held_at_kill += await _held_by(running, victim.pid)
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait()
            running.workers[index] = running.start_worker()
        stop.set()
        await asyncio.gather(*traffic)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            [[open_jobs]] = await running.sql(
                "SELECT count(*) FROM jobs WHERE status IN ('Published', 'NotStarted', 'InProcess')"
            )
            if open_jobs == 0:
                break
            await asyncio.sleep(1)
        events, _succeeded = await running.drain(300)
        [[recovered]] = await running.sql("SELECT coalesce(sum(recovery_count), 0) FROM jobs")
        [[jobs_total]] = await running.sql("SELECT count(*) FROM jobs")
        statuses = {row[0]: int(row[1]) for row in await running.sql("SELECT status, count(*) FROM jobs GROUP BY 1")}
        [[applied, carried]] = await running.sql(
            "SELECT (SELECT coalesce(sum(feed_updates), 0) FROM sandbox_listings),"
            " (SELECT coalesce(sum(processed), 0) FROM sandbox_feeds WHERE kind = 'PriceStock' AND status = 'Done')"
        )
        [[feeds_twice]] = await running.sql(
            "SELECT count(*) FROM (SELECT client_feed_id FROM sandbox_feeds GROUP BY 1 HAVING count(*) > 1) AS t"
        )
        stale_rows = await running.sql(
            "SELECT p.sku, p.quantity, s.quantity, l.marketplace_quantity FROM listings l"
            " JOIN products p ON p.id = l.product_id JOIN marketplace_connections c ON c.id = l.marketplace_id"
            " JOIN sandbox_listings s ON s.connection_id = l.marketplace_id AND s.listing_id = l.listing_id"
            " WHERE c.platform = 'P1' AND p.sku = ANY($1::text[]) AND s.quantity IS DISTINCT FROM p.quantity",
            sorted(pushed),
        )
        stale = len(stale_rows)
        result["p1_listings_differing"] = [
            {"Sku": row[0], "Catalogue": row[1], "Marketplace": row[2], "Believed": row[3]} for row in stale_rows
        ]
        received = running.receiver.by_delivery
        result.update({
            "requests": counts, "jobs": jobs_total, "job_statuses": statuses,
            "jobs_held_by_killed_workers": held_at_kill, "recovery_count_sum": int(recovered),
            "events_recorded": events - running.events_before,
            "events_not_delivered": events - running.events_before - len(received),
            "deliveries_resent_after_a_kill": sum(1 for n in received.values() if n > 1),
            "sandbox_lines_applied": int(applied), "sandbox_lines_carried_by_processed_feeds": int(carried),
            "sandbox_feeds_submitted_twice": int(feeds_twice), "p1_listings_not_at_product_quantity": int(stale),
        })  # fmt: skip
        result["ok"] = (
            counts["5xx"] == 0
            and statuses.get("InProcess", 0) + statuses.get("Published", 0) + statuses.get("NotStarted", 0) == 0
            and result["events_not_delivered"] == 0
            and applied == carried
            and feeds_twice == 0
            and stale == 0
            and recovered == held_at_kill
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    result = asyncio.run(run(args.kills, args.clients))
    print(json.dumps(result, indent=2))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
