"""The Python SDK's cost: per call against raw httpx on the same calls, and the reconciliation helper's walk.

For each backend, in one run, against a `marketsync serve --no-workers` process on loopback:
  - p50 per call of three reads, raw httpx (`Client.get/post` + `response.json()`) and the SDK's sync `Client`
    (the same request, answered into typed models), alternating call by call on one connection each;
  - `InventoryMirror.reconcile` over the whole catalogue (a ModifiedSince walk of 200-product pages), products
    per second, next to the same walk with raw httpx (pages requested and parsed, nothing else).

Run:  .venv/bin/python -m bench.runs.sdk_client [--products 100000] [--calls 400] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import httpx
from marketsync_client import Client, InventoryMirror

from bench.runs.foundation_http import service_env
from bench.runs.inventory_push import seed_products
from bench.support import BENCH_KEYS, free_port, marketsync, process, scratch_database
from marketsync.config import Settings
from marketsync.http.logs import configure_logging
from marketsync.marketplaces.registry import compose_connectors
from marketsync.runtime import Runtime

SCOPES = "InventoryRead InventoryWrite MarketplacesRead"


async def seed(url: str, account_id: str, products: int, var_dir: str) -> list[str]:
    rt = compose_connectors(Runtime.create(Settings(**BENCH_KEYS, database_url=url, var_dir=var_dir)))
    try:
        return await seed_products(rt, account_id, products)
    finally:
        await rt.close()


def per_call(raw: Callable[[], Any], sdk: Callable[[], Any], calls: int) -> tuple[float, float]:
    """p50 ms of each, alternating so both see the same machine load."""
    raw_ms, sdk_ms = [], []
    for _ in range(20):  # warm-up: connections, the token, caches
        raw(), sdk()
    for _ in range(calls):
        started = time.perf_counter()
        raw()
        raw_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        sdk()
        sdk_ms.append((time.perf_counter() - started) * 1000)
    return statistics.median(raw_ms), statistics.median(sdk_ms)


def raw_walk(http: httpx.Client, headers: dict[str, str]) -> int:
    """The ModifiedSince walk with raw httpx: pages requested and parsed, boundary repeats skipped by SKU."""
    since, seen, count = "1970-01-01T00:00:00Z", set[str](), 0
    while True:
        page = http.post("/api/products/List", json={"ModifiedSince": since, "Limit": 200}, headers=headers).json()[
            "Products"
        ]
        fresh = [p for p in page if not (p["LastModifiedDate"] == since and p["Sku"] in seen)]
        count += len(fresh)
        if page:
            last = page[-1]["LastModifiedDate"]
            seen = {p["Sku"] for p in page if p["LastModifiedDate"] == last}
            since = last
        if len(page) < 200:
            return count


def run(backend: str, products: int, calls: int) -> list[str]:
    lines = []
    with scratch_database(backend) as url, tempfile.TemporaryDirectory(prefix="msbench-var-") as var_dir:
        env = service_env(url, var_dir)
        account = marketsync(env, "admin", "account", "create", "--name", "bench")
        account_id = str(account["AccountId"])
        credential = marketsync(
            env, "admin", "credential", "create", "--account", account_id, "--name", "sdk", "--scopes", SCOPES
        )
        skus = asyncio.run(seed(url, account_id, products, var_dir))
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        serve = [sys.executable, "-m", "marketsync", "serve", "--no-workers", "--port", str(port)]
        with process(serve, env, f"{base}/readyz"), httpx.Client(base_url=base, timeout=60) as http:
            client_id, secret = str(credential["client_id"]), str(credential["client_secret"])
            token = http.post(
                "/connect/token",
                data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret},
            ).json()["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
            with Client(client_id, secret, base_url=base, timeout=60) as sdk:
                sku = skus[len(skus) // 2]
                cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
                    "GET /api/marketplaces": (
                        lambda: http.get("/api/marketplaces", headers=headers).json(),
                        sdk.list_marketplaces,
                    ),
                    "GET /api/products/{sku}": (
                        lambda: http.get(f"/api/products/{sku}", headers=headers).json(),
                        lambda: sdk.get_product(sku),
                    ),
                    "POST /api/products/List (200)": (
                        lambda: http.post("/api/products/List", json={"Limit": 200}, headers=headers).json(),
                        lambda: sdk.list_products(limit=200),
                    ),
                }
                for name, (raw, typed) in cases.items():
                    raw_p50, sdk_p50 = per_call(raw, typed, calls)
                    lines.append(
                        f"{backend:10} {name:32} raw httpx p50 {raw_p50:7.2f} ms   SDK p50 {sdk_p50:7.2f} ms"
                        f"   overhead {sdk_p50 - raw_p50:+6.2f} ms ({sdk_p50 / raw_p50:.2f}x)"
                    )
                started = time.perf_counter()
                walked = raw_walk(http, headers)
                raw_s = time.perf_counter() - started
                mirror = InventoryMirror()
                started = time.perf_counter()
                report = mirror.reconcile(sdk)
                sdk_s = time.perf_counter() - started
                assert walked == report.walked == products and len(mirror.items) == products
                lines.append(
                    f"{backend:10} reconcile {products:,} products: {products / sdk_s:,.0f} products/s ({sdk_s:.1f} s)"
                    f"   raw httpx walk {products / raw_s:,.0f} products/s ({raw_s:.1f} s)"
                )
    return lines


def main() -> None:
    configure_logging("WARNING")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    os.environ.setdefault("MARKETSYNC_LOG_LEVEL", "WARNING")
    for backend in args.backends.split(","):
        for line in run(backend, args.products, args.calls):
            print(line, flush=True)


if __name__ == "__main__":
    main()
