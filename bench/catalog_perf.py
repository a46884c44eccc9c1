"""Benchmark: category search on a 20,000-category taxonomy and product create with a 30-attribute schema.

For SQLite and PostgreSQL, in one run, over real HTTP (uvicorn on loopback, bearer auth, JSON):
  - taxonomy import of about 20,000 categories (seconds);
  - POST /api/product-types/Search: a mix of name searches, an id search and the tree walk; median
    and p99 ms;
  - the floor measured in the same run: GET /healthz on the same server and client (the bare request
    cost), and the search's SQL alone (count + page) through the same engine;
  - POST /api/products/Create on the 'Laptops' category (30 API-settable attributes, every one sent),
    sequential: median and p99 ms and creates per second; then 4 concurrent clients: creates per second.

Run:  .venv/bin/python -m bench.catalog_perf [--categories 20000] [--searches 300] [--creates 200]
      [--backends sqlite,postgresql]
PostgreSQL: MARKETSYNC_BENCH_PG_URL (default postgresql://postgres@127.0.0.1:5432/postgres); a scratch
database is created and dropped. Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from bench.support import BENCH_KEYS, create_scratch_pg, drop_scratch_pg, percentile, serve_runtime
from marketsync import connectors, migrate
from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.catalog import repository, service
from marketsync.config import Settings
from marketsync.logging import configure_logging
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime

WARMUP = 10
SEARCHES = ["shirts", "Vintage", "wireless head", "KITS", "9007199254740993", None, "organic", "zzz-nothing"]
LAPTOP_ATTRIBUTES: dict[str, Any] = {
    "Title": "Bench laptop",
    "Brand": "Acme",
    "Condition": "new",
    "Model": "AX-15",
    "Mpn": "AX15-2025",
    "Colour": "silver",
    "Material": "ALUMINIUM",
    "Connectivity": "wi_fi",
    "CountryOfManufacture": "cn",
    "StorageCapacityGb": 512,
    "ScreenSizeIn": "15.6",
    "BatteryLifeHours": 12,
    "WarrantyMonths": 24,
    "WeightKg": 1.85,
    "LengthCm": "35.7",
    "Voltage": "19.5",
    "ReleaseDate": "2025-03-01",
    "BatteriesIncluded": True,
    "Waterproof": False,
    "Style": "Minimalist",
    "Pattern": "Plain",
    "NumberOfPieces": 1,
    "PackQuantity": 1,
    "CareInstructions": "Wipe clean",
    "Handmade": False,
    "Personalised": "false",
    "RamGb": "16",
    "Processor": "AMD Ryzen 7",
    "OperatingSystem": "linux",
    "RefreshRateHz": 144,
}


async def timed(count: int, call: Callable[[int], Awaitable[None]]) -> list[float]:
    samples = []
    for index in range(WARMUP + count):
        started = time.perf_counter()
        await call(index)
        if index >= WARMUP:
            samples.append((time.perf_counter() - started) * 1000)
    return samples


async def run_backend(backend: str, categories: int, searches: int, creates: int, directory: Path) -> dict[str, Any]:
    scratch_pg = None
    if backend == "sqlite":
        url = f"sqlite:///{directory / 'bench.db'}"
    else:
        scratch_pg, url = await create_scratch_pg("ms_bench_cat")
    rt = connectors.compose(
        Runtime.create(
            Settings(
                **BENCH_KEYS,
                database_url=url,
                var_dir=directory / "var",
                rate_limit="10000000/minute",
                log_level="WARNING",
            )
        )
    )
    try:
        await migrate.upgrade(rt.db)
        generated = shipped.generate("P1", 1, categories)
        started = time.perf_counter()
        async with rt.db.transaction() as session:
            await service.import_taxonomy(rt, session, generated, "UK")
        import_s = time.perf_counter() - started
        async with rt.db.transaction() as session:
            account = await auth_service.create_account(rt, session, f"bench-{uuid.uuid4().hex[:8]}")
            credential = await auth_service.create_credential(rt, session, account.id, "bench", list(ALL_SCOPES))
            connection = await marketplaces.connect(rt, session, account.id, "P1", "UK")
        async with serve_runtime(rt) as base_url, httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            token = (
                await client.post(
                    "/connect/token",
                    data={
                        "grant_type": "client_credentials",
                        "client_id": credential.client_id,
                        "client_secret": credential.client_secret,
                    },
                )
            ).json()["access_token"]
            headers = {"Authorization": f"Bearer {token}"}

            async def healthz(_: int) -> None:
                assert (await client.get("/healthz")).status_code == 200

            async def search(index: int) -> None:
                text = SEARCHES[index % len(SEARCHES)]
                body: dict[str, Any] = {"MarketplaceId": connection.id, "Limit": 50, "Offset": (index % 3) * 50}
                if text is not None:
                    body["SearchText"] = text
                response = await client.post("/api/product-types/Search", json=body, headers=headers)
                assert response.status_code == 200, response.text

            async def search_sql(index: int) -> None:
                text = SEARCHES[index % len(SEARCHES)]
                await rt.db.driver_read(
                    lambda reader: repository.search_leaves(reader, "P1", "UK", text, 50, (index % 3) * 50)
                )

            floor_ms = await timed(searches, healthz)
            search_ms = await timed(searches, search)
            sql_ms = await timed(searches, search_sql)
            counts = {}
            for text in SEARCHES:
                body = {"MarketplaceId": connection.id, **({"SearchText": text} if text else {})}
                counts[text or "(walk)"] = (
                    await client.post("/api/product-types/Search", json=body, headers=headers)
                ).json()["TotalCount"]

            laptop = shipped.ANCHOR_IDS["P1"]["Laptops"]
            schema = (
                await client.get(
                    "/api/product-types/Schema",
                    params={"marketplaceId": connection.id, "categoryId": laptop},
                    headers=headers,
                )
            ).json()
            assert len(schema["Attributes"]) == 30 and set(schema["Attributes"][0]) >= {"Code"}
            assert {a["Code"] for a in schema["Attributes"]} == set(LAPTOP_ATTRIBUTES)

            def payload(sku: str) -> dict[str, Any]:
                return {
                    "Sku": sku,
                    "MarketplaceId": connection.id,
                    "CategoryId": laptop,
                    "Quantity": 5,
                    "ProductTypeViewId": schema["ProductTypeViewId"],
                    "Attributes": LAPTOP_ATTRIBUTES,
                }

            async def create(index: int) -> None:
                response = await client.post("/api/products/Create", json=payload(f"LAP-{index:06d}"), headers=headers)
                assert response.status_code == 200, response.text

            create_ms = await timed(creates, create)

            async def worker(offset: int) -> None:
                for index in range(creates // 4):
                    response = await client.post(
                        "/api/products/Create", json=payload(f"PAR-{offset}-{index:06d}"), headers=headers
                    )
                    assert response.status_code == 200, response.text

            started = time.perf_counter()
            await asyncio.gather(*(worker(n) for n in range(4)))
            concurrent_per_s = (creates // 4) * 4 / (time.perf_counter() - started)
        return {
            "backend": backend,
            "categories": len(generated.categories),
            "leaves": len(generated.leaves),
            "import_s": import_s,
            "floor_p50": statistics.median(floor_ms),
            "search_p50": statistics.median(search_ms),
            "search_p99": percentile(search_ms, 0.99),
            "sql_p50": statistics.median(sql_ms),
            "sql_p99": percentile(sql_ms, 0.99),
            "create_p50": statistics.median(create_ms),
            "create_p99": percentile(create_ms, 0.99),
            "create_per_s": 1000 / statistics.median(create_ms),
            "concurrent_per_s": concurrent_per_s,
            "counts": counts,
        }
    finally:
        await rt.close()
        if scratch_pg is not None:
            await drop_scratch_pg(scratch_pg)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--categories", type=int, default=20_000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--creates", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    configure_logging("WARNING")
    results = []
    with tempfile.TemporaryDirectory(prefix="ms-bench-cat-") as raw:
        for backend in args.backends.split(","):
            directory = Path(raw) / backend
            directory.mkdir()
            results.append(await run_backend(backend, args.categories, args.searches, args.creates, directory))
    first = results[0]
    print(
        f"P1 taxonomy: {first['categories']:,} categories, {first['leaves']:,} leaves; "
        f"{args.searches} searches, {args.creates} creates (30 attributes each)\n"
    )
    print(
        "| backend | import s | search p50 ms | search p99 ms | search SQL p50 ms | SQL p99 ms "
        "| GET /healthz p50 ms (floor) | create p50 ms | create p99 ms | creates/s | creates/s, 4 clients |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['backend']} | {r['import_s']:.2f} | {r['search_p50']:.2f} | {r['search_p99']:.2f} "
            f"| {r['sql_p50']:.2f} | {r['sql_p99']:.2f} | {r['floor_p50']:.2f} | {r['create_p50']:.2f} "
            f"| {r['create_p99']:.2f} | {r['create_per_s']:.0f} | {r['concurrent_per_s']:.0f} |"
        )
    print("\nTotalCount per search:", results[0]["counts"])


if __name__ == "__main__":
    asyncio.run(main())
