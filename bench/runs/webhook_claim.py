"""What one webhook claim costs with a large due backlog of one subscription (docs/perf/webhooks.md, decision 0322).

    .venv/bin/python -m bench.runs.webhook_claim [--backlogs 1000,100000] [--rounds 40] [--idle-subscriptions 0] \\
        [--idle-first] [--database-url postgresql://root@127.0.0.1:5432/<fresh scratch db>]

A scratch database (a temporary SQLite file, or the PostgreSQL database given, which should be empty) migrated to
head. One subscription has the backlog, all of it due and older than anything else, with PER_SUBSCRIPTION_CLAIMS of
it leased by a live worker: its receiver is slow, it is at its cap. A second subscription has one delivery due;
`--idle-subscriptions` more active subscriptions have nothing queued (the claim of 0322 looks at each of them),
created after those two, or before them with `--idle-first` (ids are time-ordered: the two then sort last). Each
round times one `claim_due` call (limit 32, as a worker's turn; it claims the second subscription's delivery), the
same counted from before its transaction begins (rolled back afterwards, so every round sees the same rows); then as
many `has_claimable_deliveries` (the 100 ms claim poll's read) on their own. Medians after 5 warm-up rounds. The
script uses only what the claim had before decision 0322 too, so it runs unchanged in an exported tree of an older
commit (the "before" figures).

A diagnosis of our own query at two sizes: not a floor (DESIGN.md §6), and its figures are never a ratio to one.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.support import cpu_probe_ms
from marketsync import migrate
from marketsync.config import Settings
from marketsync.kit.ids import new_id
from marketsync.models.accounts import Account
from marketsync.runtime import Runtime
from marketsync.webhooks import repository
from tests.webhooks.support import add_subscription, queue_due

WARMUP = 5
LIMIT = 32
LEASE_S = 3600.0


class RollBack(Exception):
    """Raised to end a round's transaction without committing its claim."""


async def timed_claim(rt: Runtime, now: datetime) -> tuple[float, float, int]:
    """The claim_due call, and the same from before the transaction begins; the rows claimed."""
    claimed: list[Any] = []
    entered = time.perf_counter()
    try:
        async with rt.db.transaction() as session:
            began = time.perf_counter()
            claimed, _ = await repository.claim_due(session, "bench-worker", now, LEASE_S, LIMIT)
            ended = time.perf_counter()
            raise RollBack
    except RollBack:
        pass
    return ended - began, ended - entered, len(claimed)


async def measure(database_url: str, backlog: int, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    settings = Settings(
        database_url=database_url,
        var_dir=workdir / "var",
        encryption_keys="b1:" + base64.urlsafe_b64encode(b"b" * 32).decode(),
        secret_hash_key=base64.urlsafe_b64encode(b"h" * 32).decode(),
        log_level="WARNING",
    )
    rt = Runtime.create(settings)
    try:
        await migrate.upgrade(rt.db)
        now = datetime.now(UTC)
        account_id = new_id()
        async with rt.db.transaction() as session:
            session.add(Account(id=account_id, name=f"bench-{account_id}", created_at=now))
        if args.idle_first:  # ids are time-ordered: the subscriptions with work then sort after every idle one
            for _ in range(args.idle_subscriptions):
                await add_subscription(rt, account_id, now)
        flooded = await add_subscription(rt, account_id, now)
        other = await add_subscription(rt, account_id, now)
        if not args.idle_first:
            for _ in range(args.idle_subscriptions):
                await add_subscription(rt, account_id, now)
        await queue_due(rt, account_id, flooded, [now - timedelta(hours=1)] * backlog)
        await queue_due(rt, account_id, other, [now - timedelta(seconds=1)])
        # The flooded subscription's slow receiver holds its PER_SUBSCRIPTION_CLAIMS (a live lease).
        async with rt.db.transaction() as session:
            held, _ = await repository.claim_due(
                session, "slow-worker", now, LEASE_S, repository.PER_SUBSCRIPTION_CLAIMS
            )
        assert len(held) == repository.PER_SUBSCRIPTION_CLAIMS
        if not rt.db.is_sqlite:  # as autovacuum would after this many inserts
            async with rt.db.transaction() as session:
                await session.execute(text("ANALYZE webhook_deliveries"))
        claims: list[float] = []
        polls: list[float] = []
        transactions: list[float] = []
        claimed = 0
        for round_ in range(WARMUP + args.rounds):
            elapsed, with_begin, claimed = await timed_claim(rt, now)
            assert claimed == 1, claimed
            if round_ >= WARMUP:
                claims.append(elapsed * 1000)
                transactions.append(with_begin * 1000)
        # The polls on their own, as a worker's 100 ms poll runs (timed right after a claim's rollback, a poll on
        # PostgreSQL measured 0.5 ms more on a loaded machine: the server still finishing the other connection's
        # transaction).
        for round_ in range(WARMUP + args.rounds):
            began = time.perf_counter()
            claimable = await repository.has_claimable_deliveries(rt.db, now)
            polled = time.perf_counter() - began
            assert claimable
            if round_ >= WARMUP:
                polls.append(polled * 1000)
        return {
            "database": rt.db.dialect,
            "due_backlog": backlog,
            "claimed_per_claim": claimed,
            "claim_ms_median": round(statistics.median(claims), 3),
            "begin_and_claim_ms_median": round(statistics.median(transactions), 3),
            "poll_ms_median": round(statistics.median(polls), 3),
            "idle_subscriptions": args.idle_subscriptions,
            "idle_first": args.idle_first,
            "rounds": args.rounds,
        }
    finally:
        await rt.close()


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    for backlog in (int(size) for size in args.backlogs.split(",")):
        workdir = Path(tempfile.mkdtemp(prefix="bench-claim-"))
        url = args.database_url or f"sqlite:///{workdir / 'bench.db'}"
        if args.database_url:
            await truncate(url)
        results.append(await measure(url, backlog, args, workdir))
    return results


async def truncate(url: str) -> None:
    """Each size on an empty PostgreSQL schema: the previous size's rows go (the tables stay)."""
    import asyncpg

    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        exists = await connection.fetchval("SELECT to_regclass('webhook_deliveries') IS NOT NULL")
        if exists:
            await connection.execute("TRUNCATE webhook_deliveries, webhook_subscriptions, events, accounts CASCADE")
    finally:
        await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backlogs", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--idle-subscriptions", type=int, default=0)
    parser.add_argument("--idle-first", action="store_true")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    probe_before = cpu_probe_ms()
    results = asyncio.run(run(args))
    print(json.dumps({"cpu_probe_ms": [probe_before, cpu_probe_ms()], "results": results}, indent=2))


if __name__ == "__main__":
    main()
