"""What storing order documents costs the writes (docs/decisions/0066-order-documents.md), A/B in one run.

    .venv/bin/python -m bench.runs.orders_write [--batches 30] [--orders 100] [--backends sqlite,postgresql]

Each batch is one transaction of `orders.service.ingest_pulled_orders` with ORDERS new orders of 2 items
(what an order pull does), then one transaction re-pulling the same orders with every status changed
(each order touched). Arm "documents" is the real code; arm "no documents" replaces
`service.store_documents` with a no-op for the same work. Arms alternate batch by batch, on a scratch
database per backend. Median / p99 ms per transaction.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Collection
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bench.support import BENCH_KEYS, create_scratch_pg, drop_scratch_pg, percentile
from marketsync import migrate
from marketsync.auth import service as auth_service
from marketsync.config import Settings
from marketsync.http.logs import configure_logging
from marketsync.marketplaces import service as marketplace_service
from marketsync.marketplaces.connector import MarketplaceOrder, MarketplaceOrderItem, PostalAddress
from marketsync.marketplaces.registry import compose_connectors
from marketsync.orders import service
from marketsync.runtime import Runtime


def pulled(batch: str, n: int, status: str) -> MarketplaceOrder:
    address = PostalAddress("Buyer", "1 High Street", None, "London", "Greater London", "N1 9GU", "GB", None)
    items = [
        MarketplaceOrderItem(f"MI-{batch}-{n}-{i}", f"SKU-{i}", "Widget", 2, Decimal("12.50"), status) for i in (1, 2)
    ]
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    return MarketplaceOrder(
        marketplace_order_id=f"MO-{batch}-{n}",
        status=status,
        purchase_date=stamp,
        changed_at=stamp,
        currency="GBP",
        items=items,
        buyer_name="Buyer",
        buyer_email="buyer@example.test",
        buyer_phone=None,
        shipping_address=address,
        shipping_total=Decimal("3.50"),
        tax_total=Decimal("0"),
    )


async def _no_documents(_session: AsyncSession, _order_ids: Collection[str]) -> None:
    return None


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await fn()
    return (time.perf_counter() - started) * 1000


async def run_backend(backend: str, batches: int, per_batch: int, directory: Path) -> list[str]:
    scratch_pg = None
    if backend == "sqlite":
        url = f"sqlite:///{directory / 'bench.db'}"
    else:
        scratch_pg, url = await create_scratch_pg("ms_bench")
    rt = compose_connectors(
        Runtime.create(Settings(**BENCH_KEYS, database_url=url, var_dir=directory / "var", log_level="WARNING"))
    )
    real_store = service.store_documents
    samples: dict[tuple[str, str], list[float]] = {}
    try:
        await migrate.upgrade(rt.db)
        async with rt.db.transaction() as session:
            account = await auth_service.create_account(rt, session, f"bench-{uuid.uuid4().hex[:8]}")
            connection = await marketplace_service.connect(rt, session, account.id, "P1", "UK")

        async def ingest(orders: list[MarketplaceOrder]) -> None:
            async with rt.db.transaction() as session:
                await service.ingest_pulled_orders(rt, session, connection, orders)

        for batch in range(batches):
            for arm, store in (("documents", real_store), ("no documents", _no_documents)):
                service.store_documents = store  # type: ignore[assignment]
                new = [pulled(f"{batch}{arm[0]}", n, "Unshipped") for n in range(per_batch)]
                changed = [replace(order, status="Shipped", items=[replace(i, status="Shipped") for i in order.items])
                           for order in new]  # fmt: skip
                samples.setdefault((arm, "new"), []).append(await timed(lambda o=new: ingest(o)))
                samples.setdefault((arm, "changed"), []).append(await timed(lambda o=changed: ingest(o)))
    finally:
        service.store_documents = real_store  # type: ignore[assignment]
        await rt.close()
        if scratch_pg is not None:
            await drop_scratch_pg(scratch_pg)
    lines = []
    for kind in ("new", "changed"):
        with_docs, without = samples[("documents", kind)], samples[("no documents", kind)]
        p50_with, p50_without = percentile(with_docs, 0.5), percentile(without, 0.5)
        lines.append(
            f"| {backend} | {per_batch} {kind} orders | {p50_with:.1f} / {percentile(with_docs, 0.99):.1f} "
            f"| {p50_without:.1f} / {percentile(without, 0.99):.1f} | {p50_with - p50_without:+.1f} ms "
            f"({(p50_with - p50_without) / per_batch * 1000:.0f} µs per order) |"
        )
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--orders", type=int, default=100)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    configure_logging("WARNING")
    print(f"ingest_pulled_orders, one transaction per batch; median / p99 ms over {args.batches} batches per arm")
    print("| backend | batch | with documents | without documents | cost of documents |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ms-bench-") as raw:
        for backend in args.backends.split(","):
            directory = Path(raw) / backend
            directory.mkdir()
            for line in await run_backend(backend, args.batches, args.orders, directory):
                print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
