"""Soak: two API processes and two workers on PostgreSQL with Redis under mixed traffic, then the ledger.

    .venv/bin/python -m bench.drills.soak [--seconds 600] [--clients 8]

A scratch PostgreSQL database with the demo tenant (`marketsync demo`), `marketsync db upgrade` once, two
`serve --no-workers` and two `worker` processes (`deploy/compose.yaml` as processes), and an HTTPS receiver on
loopback (a trustme certificate for 127.0.0.1) subscribed to every event. `--clients` loops send, alternating
between the two API processes: pushes with propagation, product and order pages, job polling, refunds with
Idempotency-Keys (and replays of them), product creates with keys, and now and then buyers' orders at the sandbox
marketplace (pulled by the order-pull schedule). Afterwards it waits for every event to be delivered and prints:
requests and 5xx per operation with latency p50/p99, events recorded, deliveries received, events not delivered,
deliveries received twice, replays that differed, requests that got no response (a connection error: when, which
operation, which API process), and each process's memory (RSS), sampled throughout: idle, after
warm-up, at half-time and at the end, and the second half's trend in MB/hour.
Exit status 1 when a 5xx, a request without a response, a lost or duplicated delivery, or a differing replay was
seen. Loopback only.
Diagnosis: BENCH_LOGS=DIR keeps each service process's stderr in DIR (bench/drills/cluster.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from typing import Any

import httpx

from bench.drills import cluster
from bench.support import REPO, print_figures

REDIS_URL = "redis://127.0.0.1:6379/0"


class Traffic:
    def __init__(self, bases: list[str], token: str, seed: dict[str, Any]) -> None:
        self.clients = [httpx.AsyncClient(base_url=base, timeout=30) for base in bases]
        self.headers = {"Authorization": f"Bearer {token}"}
        self.seed = seed
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.statuses: dict[str, Counter[int]] = defaultdict(Counter)
        self.job_ids: list[str] = []
        self.replays_differed = 0
        self.refund_keys: list[tuple[str, dict[str, Any], int, bytes]] = []
        self.created = 0
        self.started = time.monotonic()
        # A request that got no response (the connection failed under it): when, on which operation, and how.
        self.transport_errors: list[dict[str, Any]] = []

    async def call(self, op: str, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        client = random.choice(self.clients)
        started = time.perf_counter()
        try:
            response = await client.request(method, path, headers={**self.headers, **kwargs.pop("headers", {})},
                                             **kwargs)  # fmt: skip
        except httpx.TransportError as error:
            self.transport_errors.append({"operation": op, "at_s": round(time.monotonic() - self.started, 1),
                                          "api": str(client.base_url), "error": repr(error)})  # fmt: skip
            return None
        self.latency[op].append(time.perf_counter() - started)
        self.statuses[op][response.status_code] += 1
        return response

    async def push(self) -> None:
        items = [
            {"Sku": sku, "Quantity": random.randint(0, 500), "Price": round(random.uniform(1, 99), 2)}
            for sku in random.sample(self.seed["skus"], k=min(3, len(self.seed["skus"])))
        ]
        response = await self.call("push", "POST", "/api/inventory/price-quantity",
                                   json={"Items": items, "PropagateToListings": True})  # fmt: skip
        if response is not None and response.status_code == 200:
            self.job_ids.extend(response.json()["JobIds"])

    async def products(self) -> None:
        await self.call("products List", "POST", "/api/products/List", json={"Limit": 50})

    async def orders(self) -> None:
        await self.call("orders List", "POST", "/api/orders/List", json={"Limit": 50})

    async def job(self) -> None:
        if self.job_ids:
            await self.call("job poll", "GET", f"/api/jobs/{random.choice(self.job_ids[-50:])}")

    async def refund(self) -> None:
        if self.refund_keys and random.random() < 0.3:  # a replay: the same key answers the same bytes
            key, body, status, content = random.choice(self.refund_keys)
            again = await self.call("refund replay", "POST", "/api/orders/Refund", json=body,
                                    headers={"Idempotency-Key": key})  # fmt: skip
            if again is not None and (again.status_code != status or (status == 200 and again.content != content)):
                self.replays_differed += 1
            return
        item_id, currency = random.choice(self.seed["items"])
        body = {"Reason": "ItemDamaged", "Currency": currency, "OrderItems": [{"OrderItemId": item_id, "Amount": 0.01}]}
        key = str(uuid.uuid4())
        response = await self.call("refund", "POST", "/api/orders/Refund", json=body, headers={"Idempotency-Key": key})
        if response is not None:
            self.refund_keys.append((key, body, response.status_code, response.content))

    async def create(self) -> None:
        self.created += 1
        body = {**self.seed["create"], "Sku": f"SOAK-{uuid.uuid4().hex[:12]}"}
        await self.call("create", "POST", "/api/products/Create", json=body,
                        headers={"Idempotency-Key": str(uuid.uuid4())})  # fmt: skip

    async def loop(self, until: float) -> None:
        operations = [self.push] * 8 + [self.products] * 3 + [self.orders] * 3 + [self.job] * 2 + [self.refund] * 2
        operations += [self.create]
        while time.monotonic() < until:
            await random.choice(operations)()

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()


async def run(seconds: float, clients: int) -> dict[str, Any]:
    result: dict[str, Any] = {"seconds": seconds, "clients": clients}
    async with cluster.running(apis=2, workers=2) as running:
        traffic = Traffic(running.apis, running.token, running.seed)
        until = time.monotonic() + seconds

        async def buyers() -> None:  # orders placed at the sandbox, pulled by the schedule
            arrive = [*cluster.MARKETSYNC, "sandbox", "orders-arrive", "--account", running.demo["AccountId"]]
            arrive += ["--marketplace", running.seed["p2"], "--count", "3"]
            while time.monotonic() < until:
                await asyncio.to_thread(subprocess.run, arrive, env=running.env, cwd=REPO, capture_output=True)
                await asyncio.sleep(20)

        # Each process's RSS every `every` seconds under load: a plateau and a slow leak differ in the second half,
        # which three readings (idle, warm, end) could not tell apart.
        every = max(5.0, seconds / 40)
        samples: list[tuple[float, list[int]]] = []

        async def memory_under_load() -> None:
            started = time.monotonic()
            while time.monotonic() < until:
                samples.append((time.monotonic() - started, [cluster.rss_kb(p.pid) for p in running.processes]))
                await asyncio.sleep(every)

        rss_idle = [cluster.rss_kb(p.pid) for p in running.processes]
        sampling = asyncio.create_task(memory_under_load())
        await asyncio.gather(*(traffic.loop(until) for _ in range(clients)), buyers())
        await sampling
        rss_end = [cluster.rss_kb(p.pid) for p in running.processes]
        warm_up = min(30.0, seconds / 5)
        rss_warm = next((rss for at, rss in samples if at >= warm_up), rss_end)
        rss_half = next((rss for at, rss in samples if at >= seconds / 2), rss_end)
        second_half = [(at, rss) for at, rss in samples if at >= seconds / 2]
        events, succeeded = await running.drain(180)
        await traffic.close()
        received = running.receiver.by_delivery
        result["operations"] = {
            op: {
                "requests": len(samples),
                "5xx": sum(n for status, n in traffic.statuses[op].items() if status >= 500),
                "statuses": dict(traffic.statuses[op]),
                "p50_ms": round(statistics.median(samples) * 1000, 1),
                "p99_ms": round(sorted(samples)[min(len(samples) - 1, int(len(samples) * 0.99))] * 1000, 1),
            }
            for op, samples in sorted(traffic.latency.items())
        }
        result["events_recorded"] = events - running.events_before
        result["deliveries_succeeded"] = succeeded
        result["deliveries_received"] = len(received)
        result["events_not_delivered"] = events - running.events_before - len(received)
        result["deliveries_received_twice"] = sum(1 for n in received.values() if n > 1)
        result["refund_replays_differed"] = traffic.replays_differed
        result["transport_errors"] = traffic.transport_errors
        result["rss_mb_idle"] = [round(kb / 1024, 1) for kb in rss_idle]
        result["rss_mb_after_warm_up"] = [round(kb / 1024, 1) for kb in rss_warm]
        result["rss_mb_at_half_time"] = [round(kb / 1024, 1) for kb in rss_half]
        result["rss_mb_at_end"] = [round(kb / 1024, 1) for kb in rss_end]
        result["rss_mb_per_hour_second_half"] = [
            round(slope([at for at, _ in second_half], [rss[n] / 1024 for _, rss in second_half]) * 3600, 1)
            for n in range(len(rss_end))
        ]
        result["rss_mb_samples"] = [[round(at), [round(kb / 1024, 1) for kb in rss]] for at, rss in samples]
        result["ok"] = (
            all(o["5xx"] == 0 for o in result["operations"].values())
            and result["events_not_delivered"] == 0
            and result["deliveries_received_twice"] == 0
            and traffic.replays_differed == 0
            and not traffic.transport_errors
        )
    return result


def slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of ys over xs (0 with fewer than two points)."""
    return statistics.linear_regression(xs, ys).slope if len(set(xs)) > 1 else 0.0


def memory_figures(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 15 item 8: each process's RSS idle, after warm-up, at half-time and at the end (sampled throughout);
    growth = end / half-time, the second half of the load, where caches have filled and a leak would still grow."""
    figures = []
    names = [f"API {n + 1}" for n in range(2)] + [f"worker {n + 1}" for n in range(2)]
    readings = zip(
        names,
        result["rss_mb_idle"],
        result["rss_mb_after_warm_up"],
        result["rss_mb_at_half_time"],
        result["rss_mb_at_end"],
        result["rss_mb_per_hour_second_half"],
        strict=False,
    )
    for name, idle, warm, half, end, per_hour in readings:
        figures.append(
            {"what": f"RSS of {name} (PostgreSQL, Redis): idle {idle} MB, after warm-up {warm} MB, at half-time "
                     f"{half} MB, after {result['seconds']:.0f} s of mixed load; second half's trend "
                     f"{per_hour:+.1f} MB/hour (least squares)", "ours": end, "floor": None,
             "reference": half, "reference_name": "ours at half-time", "ratio": round(end / half, 3),
             "target": "no growth under steady load (end / half-time)", "unit": "MB"}
        )  # fmt: skip
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    result = asyncio.run(run(args.seconds, args.clients))
    print(json.dumps(result, indent=2))
    print_figures(memory_figures(result))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
