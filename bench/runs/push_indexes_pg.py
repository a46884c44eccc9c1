"""What each index of `products` costs PostgreSQL's push (docs/perf/inventory.md, growth section).

    .venv/bin/python -m bench.runs.push_indexes_pg [--sizes 10000,1000000] [--rounds 60]

Two copies of the products table on a scratch database: `four` has the service's four indexes (primary key,
UNIQUE (account_id, sku), (account_id, sku_lower), (account_id, modified_at, id)); `three` has one unique index on
(account_id, sku_lower, sku) instead of the middle two. Each round updates the same 500 random rows of both (the
push's one statement: `UPDATE ... FROM unnest(...)`), alternating which goes first; the first 10 rounds are warm-up.
A push changes `modified_at`, which is indexed, so no update is HOT: every index of the row gets a new entry.

A diagnosis of our own schema, two of its variants compared in process: it is not a floor (DESIGN.md §6), and its
figures are never a ratio to one. The push's ratios are bench/runs/inventory_http.py's, against
bench/floors/inventory.py.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
import uuid
from datetime import datetime, timedelta

import asyncpg

from bench.support import PG_ADMIN
from marketsync.kit.ids import new_id

ACCOUNT = "A" * 26
WARMUP = 10
BATCH = 500
COLUMNS = (
    "id varchar(26) PRIMARY KEY, account_id varchar(26) NOT NULL, sku varchar(200) NOT NULL, "
    "sku_lower varchar(200) NOT NULL, price bigint, quantity integer NOT NULL, title varchar(500), "
    "modified_at timestamp NOT NULL, created_at timestamp NOT NULL"
)
INDEXES = {
    "four": (
        "ALTER TABLE four ADD CONSTRAINT uq_four_account_sku UNIQUE (account_id, sku)",
        "CREATE INDEX ix_four_account_sku_lower ON four (account_id, sku_lower)",
        "CREATE INDEX ix_four_account_modified ON four (account_id, modified_at, id)",
    ),
    "three": (
        "CREATE UNIQUE INDEX uq_three_account_sku_lower_sku ON three (account_id, sku_lower, sku)",
        "CREATE INDEX ix_three_account_modified ON three (account_id, modified_at, id)",
    ),
}
PUSH = (
    "UPDATE {table} AS p SET price = v.price, quantity = v.quantity, modified_at = v.modified_at "
    "FROM unnest($1::varchar[], $2::bigint[], $3::integer[], $4::timestamp[]) AS v(id, price, quantity, modified_at) "
    "WHERE p.id = v.id"
)


async def load(connection: asyncpg.Connection, size: int) -> dict[str, list[str]]:
    loaded = datetime(2026, 1, 1)
    ids = {}
    for table, statements in INDEXES.items():
        await connection.execute(f"DROP TABLE IF EXISTS {table}")
        await connection.execute(f"CREATE TABLE {table} ({COLUMNS})")
        rows = [
            (new_id(), ACCOUNT, f"SKU-{i:07d}", f"sku-{i:07d}", 100, i, "Product", loaded, loaded) for i in range(size)
        ]
        await connection.copy_records_to_table(table, records=rows)
        for statement in statements:
            await connection.execute(statement)
        await connection.execute(f"VACUUM ANALYZE {table}")
        ids[table] = [row[0] for row in rows]
    return ids


async def measure(connection: asyncpg.Connection, size: int, rounds: int) -> dict[str, float]:
    ids = await load(connection, size)
    timings: dict[str, list[float]] = {table: [] for table in INDEXES}
    rng = random.Random(1)
    for round_number in range(WARMUP + rounds):
        chosen = sorted(rng.sample(range(size), BATCH))
        moment = datetime(2026, 2, 1) + timedelta(seconds=round_number)
        order = list(INDEXES) if round_number % 2 == 0 else list(INDEXES)[::-1]
        for table in order:
            started = time.perf_counter()
            async with connection.transaction():
                await connection.execute(
                    PUSH.format(table=table),
                    [ids[table][i] for i in chosen],
                    [200 + round_number] * BATCH,
                    [round_number] * BATCH,
                    [moment] * BATCH,
                )
            if round_number >= WARMUP:
                timings[table].append((time.perf_counter() - started) * 1000)
    return {table: statistics.median(spent) for table, spent in timings.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    name = f"ms_indexes_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(PG_ADMIN)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        connection = await asyncpg.connect(f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}")
        try:
            print("| rows | four indexes (ours) p50 | three p50 | saved |\n|---|---|---|---|")
            for size in (int(size) for size in args.sizes.split(",")):
                p50 = await measure(connection, size, args.rounds)
                saved = 1 - p50["three"] / p50["four"]
                print(f"| {size:,} | {p50['four']:.1f} ms | {p50['three']:.1f} ms | {saved:.0%} |", flush=True)
        finally:
            await connection.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


if __name__ == "__main__":
    asyncio.run(main())
