"""What the database part of one PostgreSQL products List page costs, by form of the reads (decision 0342).

    .venv/bin/python -m bench.runs.products_page_sql [--products 100000] [--rounds 200]

A scratch PostgreSQL database with one account, 4 connections and `--products` products each listed on the 4
(seeded as bench/runs/inventory_http.py seeds the service's). Each round, on one asyncpg connection, times the reads
of a 200-product page, a walk page (ModifiedSince, bounded count) and an Offset page (Offset 0-9,800, the triggers'
count), in each form, the forms alternating:
  - statement: `repository.page_statement_sql`, the service's one statement, and the Python that builds the page
    from its rows (`service._products_page_postgres` on the fetched rows);
  - three reads: the page, the count and the listings as three autocommit statements (the SQLite path's reads;
    PostgreSQL's before 0323 for walks and before 0342 for Offset pages), building nothing.
Prints medians in ms. A diagnosis of our own statements: not a floor (DESIGN.md §6), never a ratio to one.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from bench.runs.foundation_http import service_env
from bench.runs.inventory_http import PLATFORMS, _marketplaces, seed_service
from bench.support import create_scratch_pg, drop_scratch_pg, marketsync
from marketsync.db._fast import DriverSql
from marketsync.inventory import repository, service

LIMIT = 200
COUNT_AHEAD = service.WALK_COUNT_AHEAD


class Reader:
    """A DriverReader over one asyncpg connection, or over rows already fetched (`rows` set)."""

    postgres = True

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.rows: list[Sequence[Any]] | None = None

    async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]:
        if self.rows is not None:
            return self.rows
        rows: list[Sequence[Any]] = await self.connection.fetch(sql, *arguments)
        return rows


async def statement(reader: Reader, account: str, since: datetime | None, offset: int) -> tuple[float, float]:
    """(database ms, building ms) of the one statement."""
    at_most = offset + COUNT_AHEAD if since is not None else None
    sql = DriverSql(postgres=True)
    text = repository.page_statement_sql(
        sql, account, key=None, modified_since=since, limit=LIMIT, offset=offset, at_most=at_most
    )
    started = time.perf_counter()
    reader.rows = await reader.connection.fetch(text, *sql.params)
    fetched = time.perf_counter()
    await service._products_page_postgres(reader, account, None, since, LIMIT, offset, at_most)
    built = time.perf_counter()
    reader.rows = None
    return (fetched - started) * 1000, (built - fetched) * 1000


async def three_reads(reader: Reader, account: str, since: datetime | None, offset: int) -> float:
    started = time.perf_counter()
    rows = await repository.page_of_products(
        reader, account, key=None, modified_since=since, limit=LIMIT, offset=offset
    )
    at_most = offset + COUNT_AHEAD if since is not None else None
    await repository.count_of_products(reader, account, key=None, modified_since=since, at_most=at_most)
    await repository.listing_documents(reader, account, [row[0] for row in rows])
    return (time.perf_counter() - started) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    name, url = await create_scratch_pg("ms_page_sql")
    try:
        env = service_env(url, tempfile.mkdtemp(prefix="msbench-page-sql-"))
        account = str(marketsync(env, "admin", "account", "create", "--name", "bench")["AccountId"])
        for platform, country in PLATFORMS:
            marketsync(env, "admin", "marketplace", "connect", "--account", account, "--platform", platform,
                       "--country", country)  # fmt: skip
        raw_url = url.replace("postgresql+asyncpg://", "postgresql://")
        await seed_service(raw_url, account, await _marketplaces(raw_url, account), args.products, 4, raw_url)
        connection = await asyncpg.connect(raw_url)
        try:
            await connection.execute("ANALYZE")
            reader = Reader(connection)
            timings: dict[str, list[float]] = {}
            for round_number in range(args.rounds):
                # The walk stands somewhere in the first 10% of the catalogue; the Offset page within 0-9,800.
                since = datetime(2026, 1, 1, 0, 0, 0, (round_number * 977) % (args.products // 10), tzinfo=UTC)
                offset = (round_number * 977) % 9_800
                for kind, at, skip in (("walk", since, 0), ("offset", None, offset)):
                    database, building = await statement(reader, account, at, skip)
                    timings.setdefault(f"{kind} statement: database", []).append(database)
                    timings.setdefault(f"{kind} statement: building the page", []).append(building)
                    timings.setdefault(f"{kind} three reads: database", []).append(
                        await three_reads(reader, account, at, skip)
                    )
            for label, samples in timings.items():
                print(f"{label}: {statistics.median(samples[5:]):.3f} ms")
        finally:
            await connection.close()
    finally:
        await drop_scratch_pg(name)


if __name__ == "__main__":
    asyncio.run(main())
