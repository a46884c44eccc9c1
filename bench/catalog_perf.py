"""Benchmark: category search on a 20,000-category taxonomy and product create with a 30-attribute schema, each
against its floor (DESIGN.md section 6) in the same run, request by request alternating.

For SQLite and PostgreSQL, over real HTTP on one `marketsync serve` process (workers in the process unless
--no-workers) and one floor process (bench/catalog_floor.py: bare Starlette on uvicorn+uvloop+httptools, orjson,
sqlite3 WAL / asyncpg, only the needed columns and one text index):
  - taxonomy import of about 20,000 categories (seconds; in the bench process);
  - POST /api/product-types/Search: a mix of name searches, an id search and the tree walk, Limit 50 at offsets
    0/50/100; the floor answers the same bodies (checked);
  - POST /api/products/Create on the 'Laptops' category (30 API-settable attributes, every one sent), a new SKU
    each time, sequential; then 4 concurrent clients: creates per second (ours only).
PostgreSQL: the table is vacuumed and analysed before measuring (what autovacuum does within a minute of an import).

With the workers in the process, each create queues a ListingPublish that the worker runs against the sandbox
marketplace while the next creates arrive. --sandbox picks where that marketplace runs:
  - in-process: the built-in sandbox served inside `serve` (its feed handling and its writes share our event loop
    and database: the default deployment of the demo, not of a real marketplace);
  - remote: `marketsync sandbox serve` as its own process on loopback with its own database, reached over HTTP
    through MARKETSYNC_SANDBOX_URL (as a real marketplace would be: its work is not on our machine, here it is on
    the same 2 cores);
  - both (default): one run of each, every one alternating with its floor.
The last line is a FIGURES line (bench/support.py print_figures) for make bench.

Run:  .venv/bin/python -m bench.catalog_perf [--categories 20000] [--searches 300] [--creates 200]
      [--backends sqlite,postgresql] [--no-workers] [--sandbox both|in-process|remote]
PostgreSQL: MARKETSYNC_BENCH_PG_URL; scratch databases are created and dropped. Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from bench.foundation_http import service_env
from bench.support import (
    BENCH_KEYS,
    cpu_probe_ms,
    create_scratch_pg,
    drop_scratch_pg,
    free_port,
    percentile,
    print_figures,
    process,
)
from marketsync import connectors, migrate
from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.catalog import service
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


async def alternating(
    count: int, ours: Callable[[int], Awaitable[None]], floor: Callable[[int], Awaitable[None]]
) -> tuple[list[float], list[float]]:
    """Ours and the floor in turn, request by request, so both see the same machine."""
    ours_ms: list[float] = []
    floor_ms: list[float] = []
    for index in range(WARMUP + count):
        for call, samples in ((ours, ours_ms), (floor, floor_ms)):
            started = time.perf_counter()
            await call(index)
            if index >= WARMUP:
                samples.append((time.perf_counter() - started) * 1000)
    return ours_ms, floor_ms


def search_body(marketplace_id: str, index: int) -> dict[str, Any]:
    text = SEARCHES[index % len(SEARCHES)]
    body: dict[str, Any] = {"MarketplaceId": marketplace_id, "Limit": 50, "Offset": (index % 3) * 50}
    if text is not None:
        body["SearchText"] = text
    return body


async def prepare(backend: str, url: str, categories: int, directory: Path) -> dict[str, Any]:
    """Migrate, import the taxonomy, create an account, a credential and a P1 UK connection."""
    rt = connectors.compose(Runtime.create(Settings(**BENCH_KEYS, database_url=url, var_dir=directory / "var")))
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
        if backend == "postgresql":
            # The steady state: what autovacuum does within a minute of an import (the floor's table has it too).
            async with rt.db.engine.connect() as conn:
                await (await conn.execution_options(isolation_level="AUTOCOMMIT")).execute(
                    text("VACUUM ANALYZE taxonomy_categories")
                )
        return {
            "categories": len(generated.categories),
            "leaves": len(generated.leaves),
            "import_s": import_s,
            "client_id": credential.client_id,
            "client_secret": credential.client_secret,
            "marketplace_id": connection.id,
        }
    finally:
        await rt.close()


async def run_backend(
    backend: str, categories: int, searches: int, creates: int, directory: Path, *, workers: bool, sandbox: str
) -> dict[str, Any]:
    scratch = []
    if backend == "sqlite":
        url, floor_url = f"sqlite:///{directory / 'bench.db'}", f"sqlite:///{directory / 'floor.db'}"
        sandbox_url = f"sqlite:///{directory / 'sandbox.db'}"
    else:
        name, url = await create_scratch_pg("ms_bench_cat")
        scratch.append(name)
        name, floor_url = await create_scratch_pg("ms_bench_catfloor")
        scratch.append(name)
        name, sandbox_url = await create_scratch_pg("ms_bench_catsbx")
        scratch.append(name)
    try:
        setup = await prepare(backend, url, categories, directory)
        env = service_env(url, str(directory / "var"))
        env["MARKETSYNC_LOG_LEVEL"] = "WARNING"
        port, floor_port, sandbox_port = free_port(), free_port(), free_port()
        base, floor_base = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{floor_port}"
        floor_env = {**env, "CATALOG_FLOOR_DB": floor_url, "CATALOG_FLOOR_CATEGORIES": str(categories)}
        # The remote marketplace: its own process and its own database (migrated as it starts).
        sandbox_env = {**service_env(sandbox_url, str(directory / "sandbox-var")), "MARKETSYNC_LOG_LEVEL": "WARNING"}
        sandbox_app = [sys.executable, "-m", "marketsync", "sandbox", "serve", "--port", str(sandbox_port)]
        remote = sandbox == "remote" and workers
        if remote:
            env["MARKETSYNC_SANDBOX_URL"] = f"http://127.0.0.1:{sandbox_port}"
        serve = [
            sys.executable,
            "-m",
            "marketsync",
            "serve",
            *([] if workers else ["--no-workers"]),
            "--port",
            str(port),
        ]
        floor_app = [sys.executable, "-m", "bench.catalog_floor", str(floor_port)]
        with contextlib.ExitStack() as processes:
            if remote:  # before serve: the worker's first publish finds it listening
                processes.enter_context(process(sandbox_app, sandbox_env, f"http://127.0.0.1:{sandbox_port}/v1/feeds"))
            processes.enter_context(process(serve, env, f"{base}/readyz"))
            processes.enter_context(process(floor_app, floor_env, f"{floor_base}/readyz"))
            async with (
                httpx.AsyncClient(base_url=base, timeout=60) as client,
                httpx.AsyncClient(base_url=floor_base, timeout=60) as floor,
            ):
                form = {
                    "grant_type": "client_credentials",
                    "client_id": setup["client_id"],
                    "client_secret": setup["client_secret"],
                }
                token = (await client.post("/connect/token", data=form)).json()["access_token"]
                headers = {"Authorization": f"Bearer {token}"}
                marketplace_id = setup["marketplace_id"]

                async def search(index: int) -> None:
                    body = search_body(marketplace_id, index)
                    response = await client.post("/api/product-types/Search", json=body, headers=headers)
                    assert response.status_code == 200, response.text

                async def search_floor(index: int) -> None:
                    response = await floor.post("/search", json=search_body(marketplace_id, index))
                    assert response.status_code == 200, response.text

                load_before = Path("/proc/loadavg").read_text().split()[0]
                search_ms, search_floor_ms = await alternating(searches, search, search_floor)
                counts = {}
                for text in SEARCHES:
                    body = {"MarketplaceId": marketplace_id, **({"SearchText": text} if text else {})}
                    ours_page = (await client.post("/api/product-types/Search", json=body, headers=headers)).json()
                    floor_page = (await floor.post("/search", json=body)).json()
                    assert ours_page == floor_page, text  # the floor answers the same body
                    counts[text or "(walk)"] = ours_page["TotalCount"]

                laptop = shipped.ANCHOR_IDS["P1"]["Laptops"]
                schema = (
                    await client.get(
                        "/api/product-types/Schema",
                        params={"marketplaceId": marketplace_id, "categoryId": laptop},
                        headers=headers,
                    )
                ).json()
                assert {a["Code"] for a in schema["Attributes"]} == set(LAPTOP_ATTRIBUTES)

                def payload(sku: str) -> dict[str, Any]:
                    return {
                        "Sku": sku,
                        "MarketplaceId": marketplace_id,
                        "CategoryId": laptop,
                        "Quantity": 5,
                        "ProductTypeViewId": schema["ProductTypeViewId"],
                        "Attributes": LAPTOP_ATTRIBUTES,
                    }

                async def create(index: int) -> None:
                    response = await client.post(
                        "/api/products/Create", json=payload(f"LAP-{index:06d}"), headers=headers
                    )
                    assert response.status_code == 200, response.text

                async def create_floor(index: int) -> None:
                    response = await floor.post("/create", json=payload(f"LAP-{index:06d}"))
                    assert response.status_code == 200, response.text

                create_ms, create_floor_ms = await alternating(creates, create, create_floor)

                async def worker(offset: int) -> None:
                    for index in range(creates // 4):
                        response = await client.post(
                            "/api/products/Create", json=payload(f"PAR-{offset}-{index:06d}"), headers=headers
                        )
                        assert response.status_code == 200, response.text

                started = time.perf_counter()
                await asyncio.gather(*(worker(n) for n in range(4)))
                concurrent_per_s = (creates // 4) * 4 / (time.perf_counter() - started)
                load_after = Path("/proc/loadavg").read_text().split()[0]
        return {
            **setup,
            "backend": backend,
            "sandbox": ("remote" if remote else "in-process") if workers else "none (no workers)",
            "search_p50": statistics.median(search_ms),
            "search_p99": percentile(search_ms, 0.99),
            "search_floor_p50": statistics.median(search_floor_ms),
            "search_floor_p99": percentile(search_floor_ms, 0.99),
            "create_p50": statistics.median(create_ms),
            "create_p99": percentile(create_ms, 0.99),
            "create_floor_p50": statistics.median(create_floor_ms),
            "create_floor_p99": percentile(create_floor_ms, 0.99),
            "concurrent_per_s": concurrent_per_s,
            "counts": counts,
            "load": f"{load_before} → {load_after}",
        }
    finally:
        for name in scratch:
            await drop_scratch_pg(name)


SEARCH_TARGET = "p50 <= 3 ms (issue 15 item 5)"
CREATE_TARGET = "p50 <= 10 ms (issue 15 item 5)"
FLOOR_NAME = "bench/catalog_floor.py"


def figures(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The FIGURES entries: search once per backend (from the first run of it), create per backend and sandbox."""
    out: list[dict[str, Any]] = []
    searched: set[str] = set()
    for r in results:
        if r["backend"] not in searched:
            searched.add(r["backend"])
            out.append(
                {"what": f"POST /api/product-types/Search, {r['leaves']:,} leaves, p50 ({r['backend']}, serve with "
                         f"sandbox {r['sandbox']})",
                 "ours": round(r["search_p50"], 2), "p99_ms": round(r["search_p99"], 2),
                 "floor": round(r["search_floor_p50"], 2), "floor_name": FLOOR_NAME,
                 "ratio": round(r["search_p50"] / r["search_floor_p50"], 2), "target": SEARCH_TARGET, "unit": "ms"}
            )  # fmt: skip
        publish = {
            "remote": "workers in process, sandbox marketplace as its own process",
            "in-process": "workers in process, sandbox marketplace in process",
        }.get(r["sandbox"], "serve --no-workers")
        out.append(
            {"what": f"POST /api/products/Create, 30 attributes, p50 ({r['backend']}, {publish})",
             "ours": round(r["create_p50"], 2), "p99_ms": round(r["create_p99"], 2),
             "floor": round(r["create_floor_p50"], 2), "floor_name": FLOOR_NAME,
             "ratio": round(r["create_p50"] / r["create_floor_p50"], 2), "target": CREATE_TARGET, "unit": "ms"}
        )  # fmt: skip
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--categories", type=int, default=20_000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--creates", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument(
        "--no-workers",
        action="store_true",
        help="serve --no-workers: the API alone (by default the workers run in the process and publish each create)",
    )
    parser.add_argument(
        "--sandbox",
        default="both",
        choices=["both", "in-process", "remote"],
        help="where the sandbox marketplace the publishes go to runs (with workers): see above",
    )
    args = parser.parse_args()
    configure_logging("WARNING")
    sandboxes = ["none"] if args.no_workers else ["in-process", "remote"] if args.sandbox == "both" else [args.sandbox]
    probe_before = cpu_probe_ms()
    results = []
    with tempfile.TemporaryDirectory(prefix="ms-bench-cat-") as raw:
        for backend in args.backends.split(","):
            for sandbox in sandboxes:
                directory = Path(raw) / f"{backend}-{sandbox}"
                directory.mkdir()
                results.append(
                    await run_backend(
                        backend,
                        args.categories,
                        args.searches,
                        args.creates,
                        directory,
                        workers=not args.no_workers,
                        sandbox=sandbox,
                    )
                )
    probe_after = cpu_probe_ms()
    first = results[0]
    print(
        f"P1 taxonomy: {first['categories']:,} categories, {first['leaves']:,} leaves; "
        f"{args.searches} searches, {args.creates} creates (30 attributes each), each alternating with its floor; "
        f"CPU probe {probe_before} ms before, {probe_after} ms after\n"
    )
    print(
        "| backend | sandbox | import s | search p50 ms | p99 | floor p50 | floor p99 | ratio p50 "
        "| create p50 ms | p99 | floor p50 | floor p99 | ratio p50 | creates/s, 4 clients | load average (1 min) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['backend']} | {r['sandbox']} | {r['import_s']:.2f} | {r['search_p50']:.2f} | {r['search_p99']:.2f} "
            f"| {r['search_floor_p50']:.2f} | {r['search_floor_p99']:.2f} "
            f"| {r['search_p50'] / r['search_floor_p50']:.1f}x | {r['create_p50']:.2f} | {r['create_p99']:.2f} "
            f"| {r['create_floor_p50']:.2f} | {r['create_floor_p99']:.2f} "
            f"| {r['create_p50'] / r['create_floor_p50']:.1f}x | {r['concurrent_per_s']:.0f} | {r['load']} |"
        )
    print("\nTotalCount per search:", results[0]["counts"])
    print_figures(figures(results))


if __name__ == "__main__":
    asyncio.run(main())
