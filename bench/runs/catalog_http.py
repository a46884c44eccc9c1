"""Benchmark: category search on a 20,000-category taxonomy and product create with a 30-attribute schema, each
against its floor (DESIGN.md section 6) in the same run, request by request alternating.

For SQLite and PostgreSQL, over real HTTP on one `marketsync serve` process (workers in the process unless
--no-workers) and one floor process (bench/floors/catalog.py: bare Starlette on uvicorn+uvloop+httptools, orjson,
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
With --search-growth SIZES (e.g. 10000,1000000) it measures only category search, on bench/tools/synthetic_taxonomy.py's
taxonomies of those sizes (bulk-loaded through the raw driver; the floor loads the same one), every size served at
once and searched in turn with its floor, request by request (the sizes compared at the same moments), and reports
the largest size's p50 against the smallest's (issue 15 item 7), in two series: the mix above, whose terms match
more categories the larger the taxonomy (growing matches: the exact TotalCount and the tree-order page read every
match, so it grows with the answer), and FIXED_SEARCHES, each measured on its own, which match as many categories at
every size (the taxonomy's marker words and an anchor's id: the cost of the size alone).
The last line is a FIGURES line (bench/support.py print_figures) for make bench.

Run:  .venv/bin/python -m bench.runs.catalog_http [--categories 20000] [--searches 300] [--creates 200]
      [--backends sqlite,postgresql] [--no-workers] [--sandbox both|in-process|remote]
      .venv/bin/python -m bench.runs.catalog_http --search-growth 10000,1000000 [--searches 200] [--backends ...]
PostgreSQL: MARKETSYNC_BENCH_PG_URL; scratch databases are created and dropped. Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url

from bench.runs.foundation_http import service_env
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
from bench.tools import synthetic_taxonomy
from marketsync import migrate
from marketsync.auth import service as auth_service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.catalog import repository as catalog_repository
from marketsync.catalog.taxonomy import service
from marketsync.config import Settings
from marketsync.http.logs import configure_logging
from marketsync.kit.ids import new_id
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.registry import compose_connectors
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.models.catalog import TaxonomyImport
from marketsync.runtime import Runtime

WARMUP = 10
SEARCHES = ["shirts", "Vintage", "wireless head", "KITS", "9007199254740993", None, "organic", "zzz-nothing"]
# Search text -> its TotalCount at every size of the synthetic taxonomy (the T-Shirts anchor's id finds it alone).
FIXED_SEARCHES = {**synthetic_taxonomy.MARKERS, shipped.ANCHOR_IDS["P1"]["T-Shirts"]: 1}
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


async def interleaved(count: int, calls: Sequence[Callable[[int], Awaitable[None]]]) -> list[list[float]]:
    """The calls in turn, request by request, so all see the same machine: ms per call, per call."""
    samples: list[list[float]] = [[] for _ in calls]
    for index in range(WARMUP + count):
        for call, series in zip(calls, samples, strict=True):
            started = time.perf_counter()
            await call(index)
            if index >= WARMUP:
                series.append((time.perf_counter() - started) * 1000)
    return samples


async def alternating(
    count: int, ours: Callable[[int], Awaitable[None]], floor: Callable[[int], Awaitable[None]]
) -> tuple[list[float], list[float]]:
    """Ours and the floor in turn, request by request, so both see the same machine."""
    ours_ms, floor_ms = await interleaved(count, [ours, floor])
    return ours_ms, floor_ms


def search_body(marketplace_id: str, index: int, searches: list[str | None] = SEARCHES) -> dict[str, Any]:
    text = searches[index % len(searches)]
    body: dict[str, Any] = {"MarketplaceId": marketplace_id, "Limit": 50, "Offset": (index % 3) * 50}
    if text is not None:
        body["SearchText"] = text
    return body


async def load_synthetic(rt: Runtime, size: int) -> tuple[int, int]:
    """bench/tools/synthetic_taxonomy.py's taxonomy of `size` categories as the P1 UK site's, bulk-loaded through the
    raw driver (no schemas: search reads only the tree), its text index refreshed and its import recorded as an import
    does. (categories, leaves)"""
    rows = [
        (
            "P1",
            "UK",
            category_id,
            parent_id,
            name,
            catalog_repository.search_key(name),
            path,
            depth,
            leaf,
            position,
            None,
        )
        for position, (category_id, parent_id, name, path, depth, leaf) in enumerate(
            synthetic_taxonomy.categories(size)
        )
    ]
    columns = ["platform", "country", "category_id", "parent_id", "name", "name_lower", "path", "depth", "is_leaf"]
    columns += ["position", "view_id"]
    if rt.db.is_sqlite:
        with contextlib.closing(sqlite3.connect(make_url(rt.db.url).database or "", isolation_level=None)) as conn:
            conn.execute("BEGIN")
            conn.executemany(
                f"INSERT INTO taxonomy_categories ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                rows,
            )
            conn.execute("COMMIT")
    else:
        args, kwargs = rt.db.driver_connect_args()
        conn = await asyncpg.connect(*args, **kwargs)
        try:
            # The table's own indexes (not its key), dropped for the copy and built again from their definitions:
            # the same indexes, built once instead of maintained row by row.
            indexes = await conn.fetch(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'taxonomy_categories' "
                "AND indexname NOT IN (SELECT conname FROM pg_constraint)"
            )
            async with conn.transaction():
                for index in indexes:
                    await conn.execute(f'DROP INDEX "{index["indexname"]}"')
                await conn.copy_records_to_table("taxonomy_categories", records=rows, columns=columns)
                for index in indexes:
                    await conn.execute(index["indexdef"])
        finally:
            await conn.close()
    leaves = sum(1 for row in rows if row[8])
    async with rt.db.transaction() as session:
        await catalog_repository.refresh_search_index(session, "P1", "UK")
        catalog_repository.add_import(
            session,
            TaxonomyImport(
                id=new_id(), platform="P1", country="UK", sequence=1, revision=1, source="synthetic",
                content_hash="", category_count=len(rows), leaf_count=leaves, added_count=leaves, changed_count=0,
                removed_count=0, imported_at=rt.clock.now(),
            ),
        )  # fmt: skip
    return len(rows), leaves


async def prepare(
    backend: str, url: str, categories: int, directory: Path, *, synthetic: bool = False
) -> dict[str, Any]:
    """Migrate, load the taxonomy (imported, or with `synthetic` bulk-loaded), create an account, a credential and
    a P1 UK connection."""
    rt = compose_connectors(Runtime.create(Settings(**BENCH_KEYS, database_url=url, var_dir=directory / "var")))
    try:
        await migrate.upgrade(rt.db)
        started = time.perf_counter()
        if synthetic:
            loaded = await load_synthetic(rt, categories)
        else:
            generated = shipped.generate("P1", 1, categories)
            async with rt.db.transaction() as session:
                await service.import_taxonomy(rt, session, generated, "UK")
            loaded = len(generated.categories), len(generated.leaves)
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
            "size": categories,
            "categories": loaded[0],
            "leaves": loaded[1],
            "import_s": import_s,
            "client_id": credential.client_id,
            "client_secret": credential.client_secret,
            "marketplace_id": connection.id,
        }
    finally:
        await rt.close()


@contextlib.asynccontextmanager
async def serving(
    url: str,
    floor_url: str,
    setup: dict[str, Any],
    directory: Path,
    *,
    workers: bool,
    sandbox_url: str | None = None,
    synthetic: bool = False,
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient, dict[str, str]]]:
    """`marketsync serve` on `url` (its workers in the process unless not `workers`; publishing to the sandbox
    marketplace served from `sandbox_url`'s database as its own process when given) and the floor on `floor_url`
    with the same taxonomy: (our client, the floor's client, our bearer headers)."""
    env = service_env(url, str(directory / "var"))
    env["MARKETSYNC_LOG_LEVEL"] = "WARNING"
    port, floor_port, sandbox_port = free_port(), free_port(), free_port()
    base, floor_base = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{floor_port}"
    floor_env = {**env, "CATALOG_FLOOR_DB": floor_url, "CATALOG_FLOOR_CATEGORIES": str(setup["size"])}
    if synthetic:
        floor_env["CATALOG_FLOOR_SYNTHETIC"] = "1"
    serve = [sys.executable, "-m", "marketsync", "serve", *([] if workers else ["--no-workers"]), "--port", str(port)]
    floor_app = [sys.executable, "-m", "bench.floors.catalog", str(floor_port)]
    with contextlib.ExitStack() as processes:
        if sandbox_url is not None:  # before serve: the worker's first publish finds it listening
            # The remote marketplace: its own process and its own database (migrated as it starts).
            sandbox_env = {
                **service_env(sandbox_url, str(directory / "sandbox-var")),
                "MARKETSYNC_LOG_LEVEL": "WARNING",
            }
            sandbox_app = [sys.executable, "-m", "marketsync", "sandbox", "serve", "--port", str(sandbox_port)]
            processes.enter_context(process(sandbox_app, sandbox_env, f"http://127.0.0.1:{sandbox_port}/v1/feeds"))
            env["MARKETSYNC_SANDBOX_URL"] = f"http://127.0.0.1:{sandbox_port}"
        processes.enter_context(process(serve, env, f"{base}/readyz"))
        processes.enter_context(process(floor_app, floor_env, f"{floor_base}/readyz"))
        async with (
            httpx.AsyncClient(base_url=base, timeout=60) as client,
            httpx.AsyncClient(base_url=floor_base, timeout=60) as floor,
        ):
            form = {"grant_type": "client_credentials", "client_id": setup["client_id"]}
            form["client_secret"] = setup["client_secret"]
            token = (await client.post("/connect/token", data=form)).json()["access_token"]
            yield client, floor, {"Authorization": f"Bearer {token}"}


def search_calls(
    client: httpx.AsyncClient,
    floor: httpx.AsyncClient,
    headers: dict[str, str],
    marketplace_id: str,
    searches: list[str | None] = SEARCHES,
) -> list[Callable[[int], Awaitable[None]]]:
    """Our search and the floor's, the `index`-th of the mix `searches` each."""

    async def search(index: int) -> None:
        body = search_body(marketplace_id, index, searches)
        response = await client.post("/api/product-types/Search", json=body, headers=headers)
        assert response.status_code == 200, response.text

    async def search_floor(index: int) -> None:
        response = await floor.post("/search", json=search_body(marketplace_id, index, searches))
        assert response.status_code == 200, response.text

    return [search, search_floor]


async def same_answers(
    client: httpx.AsyncClient,
    floor: httpx.AsyncClient,
    headers: dict[str, str],
    marketplace_id: str,
    searches: list[str | None] = SEARCHES,
) -> dict[str, int]:
    """Each search once more on both, checked to answer the same body: TotalCount per search."""
    counts = {}
    for searched_text in searches:
        body = {"MarketplaceId": marketplace_id, **({"SearchText": searched_text} if searched_text else {})}
        ours_page = (await client.post("/api/product-types/Search", json=body, headers=headers)).json()
        floor_page = (await floor.post("/search", json=body)).json()
        assert ours_page == floor_page, searched_text  # the floor answers the same body
        counts[searched_text or "(walk)"] = ours_page["TotalCount"]
    return counts


async def searched(
    client: httpx.AsyncClient, floor: httpx.AsyncClient, headers: dict[str, str], marketplace_id: str, count: int
) -> tuple[list[float], list[float], dict[str, int]]:
    """`count` searches of the mix, each alternating with the floor's, then checked: (ours ms, floor ms, counts)."""
    ours_ms, floor_ms = await alternating(count, *search_calls(client, floor, headers, marketplace_id))
    return ours_ms, floor_ms, await same_answers(client, floor, headers, marketplace_id)


async def scratch_urls(backend: str, directory: Path, names: list[str], scratch: list[str]) -> list[str]:
    """A database URL per name: SQLite files in `directory`, or scratch PostgreSQL databases (their names appended
    to `scratch`, for drop_scratch_pg)."""
    if backend == "sqlite":
        return [f"sqlite:///{directory / f'{name}.db'}" for name in names]
    urls = []
    for name in names:
        database, url = await create_scratch_pg(f"ms_bench_{name}")
        scratch.append(database)
        urls.append(url)
    return urls


async def run_backend(
    backend: str, categories: int, searches: int, creates: int, directory: Path, *, workers: bool, sandbox: str
) -> dict[str, Any]:
    scratch: list[str] = []
    try:
        url, floor_url, sandbox_url = await scratch_urls(backend, directory, ["cat", "catfloor", "catsbx"], scratch)
        setup = await prepare(backend, url, categories, directory)
        remote = sandbox == "remote" and workers
        async with serving(
            url, floor_url, setup, directory, workers=workers, sandbox_url=sandbox_url if remote else None
        ) as (client, floor, headers):
            marketplace_id = setup["marketplace_id"]
            load_before = Path("/proc/loadavg").read_text().split()[0]
            search_ms, search_floor_ms, counts = await searched(client, floor, headers, marketplace_id, searches)

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
                response = await client.post("/api/products/Create", json=payload(f"LAP-{index:06d}"), headers=headers)
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


async def run_search_growth(backend: str, sizes: list[int], searches: int, directory: Path) -> list[dict[str, Any]]:
    """Search at every size of the synthetic taxonomy (bench/tools/synthetic_taxonomy.py) at once: each size's `serve`
    (its workers idle: nothing is created) and floor over the same taxonomy, request by request in turn, every size
    and both sides, so that the sizes are compared on the same machine at the same moments; the mix, then each of
    FIXED_SEARCHES on its own."""
    scratch: list[str] = []
    try:
        async with contextlib.AsyncExitStack() as stack:
            served = []
            for size in sizes:
                here = directory / f"{backend}-{size}"
                here.mkdir()
                url, floor_url = await scratch_urls(backend, here, ["catg", "catgfloor"], scratch)
                setup = await prepare(backend, url, size, here, synthetic=True)
                sides = await stack.enter_async_context(
                    serving(url, floor_url, setup, here, workers=True, synthetic=True)
                )
                served.append((setup, sides))
            load_before = Path("/proc/loadavg").read_text().split()[0]
            mixes: list[dict[str, Any]] = []
            fixed: list[dict[str, Any]] = [{} for _ in served]
            fixed_series: list[tuple[str | None, list[str | None]]] = [(term, [term]) for term in FIXED_SEARCHES]
            for term, series in [(None, SEARCHES), *fixed_series]:
                calls = [
                    call for setup, sides in served for call in search_calls(*sides, setup["marketplace_id"], series)
                ]
                samples = await interleaved(searches, calls)
                for at, (setup, sides) in enumerate(served):
                    ours_ms, floor_ms = samples[2 * at], samples[2 * at + 1]
                    counts = await same_answers(*sides, setup["marketplace_id"], series)
                    measured = {
                        "p50": statistics.median(ours_ms), "p99": percentile(ours_ms, 0.99),
                        "floor_p50": statistics.median(floor_ms), "floor_p99": percentile(floor_ms, 0.99),
                    }  # fmt: skip
                    if term is None:
                        mixes.append({"counts": counts, **measured})
                    else:
                        assert counts == {term: FIXED_SEARCHES[term]}, counts
                        fixed[at][term] = {"matches": FIXED_SEARCHES[term], **measured}
            load_after = Path("/proc/loadavg").read_text().split()[0]
    finally:
        for name in scratch:
            await drop_scratch_pg(name)
    return [
        {**setup, **mix, "backend": backend, "fixed": of_size, "load": f"{load_before} → {load_after}"}
        for (setup, _), mix, of_size in zip(served, mixes, fixed, strict=True)
    ]


def growth_figures(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Search p50 per backend and size against the floor, for the growing-matches mix and each fixed-matches search;
    then, per backend and series, the largest size against the smallest (ours with ours: a reference, not a floor)."""

    def series(r: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
        """(growth label, search label, measurement) per series of one size's result."""
        mix = f"growing matches ({r['counts']['KITS']:,} for KITS)"
        fixed = {term: f"{m['matches']:,} match{'es' if m['matches'] != 1 else ''}" for term, m in r["fixed"].items()}
        return [("growing matches", f"mix of {len(SEARCHES)} searches, {mix}", r)] + [
            (f"fixed matches ({fixed[term]})", f"'{term}', {fixed[term]}", m) for term, m in r["fixed"].items()
        ]

    out: list[dict[str, Any]] = []
    for r in results:
        for _, label, m in series(r):
            out.append(
                {"what": f"POST /api/product-types/Search, synthetic taxonomy of {r['categories']:,} categories "
                         f"({r['leaves']:,} leaves), {label}, p50 ({r['backend']})",
                 "ours": round(m["p50"], 2), "p99_ms": round(m["p99"], 2), "floor": round(m["floor_p50"], 2),
                 "floor_name": FLOOR_NAME, "ratio": round(m["p50"] / m["floor_p50"], 2), "target": SEARCH_TARGET,
                 "unit": "ms"}
            )  # fmt: skip
    for backend in dict.fromkeys(r["backend"] for r in results):
        ordered = sorted((r for r in results if r["backend"] == backend), key=lambda r: r["size"])
        small, large = ordered[0], ordered[-1]
        if small is large:
            continue
        for (name, _, small_m), (_, _, large_m) in zip(series(small), series(large), strict=True):
            out.append(
                {"what": f"category search growth, {name}, {large['size']:,} vs {small['size']:,} categories "
                         f"({backend})",
                 "ours": round(large_m["p50"], 2), "floor": None, "reference": round(small_m["p50"], 2),
                 "reference_name": f"ours at {small['size']:,} categories",
                 "ratio": round(large_m["p50"] / small_m["p50"], 2), "target": GROWTH_TARGET, "unit": "ms"}
            )  # fmt: skip
    return out


SEARCH_TARGET = "p50 <= 3 ms (issue 15 item 5)"
GROWTH_TARGET = "<= 1.3x (issue 15 item 7)"
CREATE_TARGET = "p50 <= 10 ms (issue 15 item 5)"
FLOOR_NAME = "bench/floors/catalog.py"


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
    parser.add_argument(
        "--search-growth",
        metavar="SIZES",
        help="only category search, on synthetic taxonomies of these sizes (e.g. 10000,1000000): p50 at each size "
        "against its floor, and the largest against the smallest (issue 15 item 7)",
    )
    args = parser.parse_args()
    configure_logging("WARNING")
    if args.search_growth:
        await search_growth(args.backends.split(","), [int(n) for n in args.search_growth.split(",")], args.searches)
        return
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


async def search_growth(backends: list[str], sizes: list[int], searches: int) -> None:
    probe_before = cpu_probe_ms()
    with tempfile.TemporaryDirectory(prefix="ms-bench-catg-") as raw:
        results = [r for backend in backends for r in await run_search_growth(backend, sizes, searches, Path(raw))]
    probe_after = cpu_probe_ms()
    print(
        f"Category search on synthetic P1 taxonomies: {searches} searches per size, each alternating with its floor; "
        f"CPU probe {probe_before} ms before, {probe_after} ms after\n"
    )
    print("| backend | categories | leaves | load s | search p50 ms | p99 | floor p50 | floor p99 | ratio | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['backend']} | {r['categories']:,} | {r['leaves']:,} | {r['import_s']:.1f} | {r['p50']:.2f} "
            f"| {r['p99']:.2f} | {r['floor_p50']:.2f} | {r['floor_p99']:.2f} | {r['p50'] / r['floor_p50']:.1f}x "
            f"| {r['load']}"
        )
    print("\nFixed matches, each search on its own:\n")
    print("| backend | categories | search | matches | p50 ms | p99 | floor p50 | floor p99 | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for term, m in r["fixed"].items():
            print(
                f"| {r['backend']} | {r['categories']:,} | {term} | {m['matches']:,} | {m['p50']:.2f} | {m['p99']:.2f} "
                f"| {m['floor_p50']:.2f} | {m['floor_p99']:.2f} | {m['p50'] / m['floor_p50']:.1f}x |"
            )
    for r in results:
        print(f"TotalCount per search ({r['backend']}, {r['categories']:,}):", r["counts"])
    print_figures(growth_figures(results))


if __name__ == "__main__":
    asyncio.run(main())
