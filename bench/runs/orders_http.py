"""`POST /api/orders/List` Limit 200 over HTTP next to its floor app (bench/floors/orders.py), same run, alternating.

    .venv/bin/python -m bench.runs.orders_http [--orders 10000,1000000] [--pages 100] [--backends sqlite,postgresql]

The orders come from bench/runs/orders_list.py's generator (kept between runs in its bench-var database, documents
stored through the service's own code). The floor gets its own minimal tables (account, time, id, document; one
index) filled from them, and its own bearer token. One `marketsync serve --no-workers` and one floor process
(uvicorn with uvloop and httptools), one httpx client sending requests one at a time, alternating between the two
servers: the first page, then a walk of `--pages` pages following NextCursor on each side. Prints p50/p99 per side
and the ratio, with the CPU probe before and after, and a FIGURES line for make bench. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import time
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx

from bench.floors import orders as floor_orders
from bench.runs.orders_list import PG_ADMIN, PG_DB, VAR, ensure_tenant, generate, served, store_documents
from bench.support import BENCH_KEYS, cpu_probe_ms, free_port, percentile, print_figures, process
from marketsync import migrate
from marketsync.config import Settings
from marketsync.marketplaces.registry import compose_connectors
from marketsync.runtime import Runtime

FLOOR_TOKEN = "floor-orders-token"


async def fill_floor(url: str, floor_url: str, account_id: str) -> None:
    """The floor's tables, filled from the service's stored documents once (kept with the bench database)."""
    if url.startswith("sqlite"):
        floor = sqlite3.connect(floor_url.removeprefix("sqlite:///"))
        for statement in floor_orders.SQLITE_SCHEMA:
            floor.execute(statement)
        (have,) = floor.execute("SELECT count(*) FROM orders").fetchone()
        service = sqlite3.connect(url.removeprefix("sqlite:///"))
        (want,) = service.execute("SELECT count(*) FROM orders WHERE account_id = ?", (account_id,)).fetchone()
        if have != want:
            floor.execute("DELETE FROM orders")
            rows = service.execute(
                "SELECT account_id, updated_at, id, document FROM orders WHERE account_id = ?", (account_id,)
            )
            with floor:
                floor.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", rows)
            floor.execute("ANALYZE")
        floor.execute("INSERT OR REPLACE INTO tokens VALUES (?, ?)", (floor_orders.token_hash(FLOOR_TOKEN), account_id))
        floor.commit()
        floor.close()
        service.close()
        return
    connection = await asyncpg.connect(url)
    try:
        for statement in floor_orders.POSTGRES_SCHEMA:
            await connection.execute(statement)
        have = await connection.fetchval("SELECT count(*) FROM floor_orders")
        want = await connection.fetchval("SELECT count(*) FROM orders WHERE account_id = $1", account_id)
        if have != want:
            await connection.execute("TRUNCATE floor_orders")
            await connection.execute(
                "INSERT INTO floor_orders SELECT account_id, updated_at, id, document FROM orders"
                " WHERE account_id = $1",
                account_id,
            )
            await connection.execute("ANALYZE floor_orders")
        await connection.execute(
            "INSERT INTO floor_tokens VALUES ($1, $2) ON CONFLICT (token_hash) DO UPDATE SET account_id = $2",
            floor_orders.token_hash(FLOOR_TOKEN),
            account_id,
        )
    finally:
        await connection.close()


def walk(clients: dict[str, tuple[httpx.Client, dict[str, str]]], pages: int) -> dict[str, list[float]]:
    """First pages, then a NextCursor walk, one request at a time, the sides alternating (and who goes first)."""
    samples: dict[str, list[float]] = {name: [] for name in clients}
    cursors: dict[str, str | None] = {name: None for name in clients}
    sizes: dict[str, list[int]] = {name: [] for name in clients}
    for page in range(pages):
        order = list(clients) if page % 2 == 0 else list(reversed(clients))
        for name in order:
            client, headers = clients[name]
            body: dict[str, Any] = {"Limit": 200}
            if cursors[name] is not None and page % 10 != 0:  # every tenth page a first page again
                body["Cursor"] = cursors[name]
            started = time.perf_counter()
            response = client.post("/api/orders/List", json=body, headers=headers)
            samples[name].append(time.perf_counter() - started)
            assert response.status_code == 200, response.text
            answer = response.json()
            assert len(answer["Orders"]) == 200
            cursors[name] = answer["NextCursor"]
            sizes[name].append(len(response.content))
    # The floor answers the same documents: page sizes differ only by the cursor's bytes.
    floor_size, ours_size = (sum(v) / len(v) for v in sizes.values())
    assert abs(floor_size - ours_size) < 200, (floor_size, ours_size)
    return samples


async def prepare(backend: str, total: int) -> tuple[str, str, str, str, str]:
    if backend == "sqlite":
        VAR.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{VAR / f'orders_{total}.db'}"
        floor_url = f"sqlite:///{VAR / f'orders_{total}_floor.db'}"
    else:
        database = f"{PG_DB}_{total}"
        admin = await asyncpg.connect(PG_ADMIN)
        if not await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database):
            await admin.execute(f'CREATE DATABASE "{database}"')
        await admin.close()
        url = floor_url = f"postgresql://postgres@127.0.0.1:5432/{database}"
    settings = Settings(**BENCH_KEYS, database_url=url, var_dir=VAR, rate_limit="1000000/minute", log_level="WARNING")
    rt = compose_connectors(Runtime.create(settings))
    try:
        await migrate.upgrade(rt.db)
        account_id, marketplace_id, client_id, client_secret = await ensure_tenant(rt)
        await generate(rt, url, account_id, marketplace_id, total)
        await store_documents(rt)
    finally:
        await rt.close()
    await fill_floor(url, floor_url, account_id)
    return url, floor_url, client_id, client_secret, account_id


def run(backend: str, total: int, pages: int) -> dict[str, Any]:
    url, floor_url, client_id, client_secret, _ = asyncio.run(prepare(backend, total))
    port = free_port()
    floor_env = {**os.environ, "FLOOR_DATABASE": floor_url, "FLOOR_HASH_KEY": "floor-cursor-key"}
    floor_command = [sys.executable, "-m", "uvicorn", "bench.floors.orders:app", "--port", str(port), "--log-level",
                     "warning"]  # fmt: skip
    with served(url) as base, process(floor_command, floor_env, f"http://127.0.0.1:{port}/docs-none"):
        token = httpx.post(
            f"{base}/connect/token",
            data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret},
        ).json()["access_token"]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as floor, httpx.Client(base_url=base) as ours:
            clients = {
                "floor": (floor, {"Authorization": f"Bearer {FLOOR_TOKEN}"}),
                "ours": (ours, {"Authorization": f"Bearer {token}"}),
            }
            walk(clients, 10)  # warm-up
            samples = walk(clients, pages)
    return {
        side: {"p50_ms": percentile(s, 0.5) * 1000, "p99_ms": percentile(s, 0.99) * 1000} for side, s in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--orders", default="10000,1000000", help="comma-separated table sizes (one database each, kept in var/bench)"
    )
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    before = cpu_probe_ms()
    sizes = [int(n) for n in args.orders.split(",")]
    results = {
        (backend, size): run(backend, size, args.pages) for backend in args.backends.split(",") for size in sizes
    }
    print(f"load average {os.getloadavg()[0]:.2f}; CPU probe {before} ms before, {cpu_probe_ms()} ms after")
    figures = []
    for (backend, size), sides in results.items():
        ratio = sides["ours"]["p50_ms"] / sides["floor"]["p50_ms"]
        print(
            f"{backend}, {size:,} orders: ours p50 {sides['ours']['p50_ms']:.2f} ms p99 {sides['ours']['p99_ms']:.2f}"
            f" ms; floor p50 {sides['floor']['p50_ms']:.2f} ms p99 {sides['floor']['p99_ms']:.2f} ms; {ratio:.2f}x"
        )
        figures.append(
            {"what": f"POST /api/orders/List Limit 200, {size:,} orders, p50 per page ({backend})",
             "ours": round(sides["ours"]["p50_ms"], 2), "p99_ms": round(sides["ours"]["p99_ms"], 2),
             "floor": round(sides["floor"]["p50_ms"], 2), "floor_name": "bench/floors/orders.py",
             "ratio": round(ratio, 2), "target": "near the floor", "unit": "ms"}
        )  # fmt: skip
    for backend in args.backends.split(","):
        if len(sizes) > 1:  # issue 15 item 7: the larger table within 1.3x of the smaller
            small, large = results[(backend, min(sizes))], results[(backend, max(sizes))]
            growth = large["ours"]["p50_ms"] / small["ours"]["p50_ms"]
            figures.append(
                {"what": f"orders page cost growth, {max(sizes):,} vs {min(sizes):,} orders ({backend})",
                 "ours": round(large["ours"]["p50_ms"], 2), "floor": None,
                 "reference": round(small["ours"]["p50_ms"], 2), "reference_name": f"ours at {min(sizes):,} orders",
                 "ratio": round(growth, 2), "target": "<= 1.3x",
                 "unit": "ms"}
            )  # fmt: skip
    print_figures(figures)


if __name__ == "__main__":
    main()
