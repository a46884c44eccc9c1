"""Helpers of the marketplace tests: catalogue rows with listings, the sandbox's side, events, jobs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest
import structlog
from sqlalchemy import select
from typer.testing import CliRunner

from marketsync import startup
from marketsync.cli import app
from marketsync.http import logs as marketsync_logging
from marketsync.http.logs import configure_logging
from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import PriceStockPushPayload, payload_for
from marketsync.kit import jsonio
from marketsync.kit.ids import new_id
from marketsync.marketplaces.sandbox import state as sandbox_state
from marketsync.models import Event, Job, Listing, MarketplaceConnection, Product
from marketsync.models.sandbox import SandboxFeed, SandboxListing, SandboxSeller
from marketsync.runtime import Runtime
from tests.conftest import TEST_ENCRYPTION_KEYS, TEST_HASH_KEY
from tests.support.factories import make_tenant


async def listed_product(
    rt: Runtime,
    connection: MarketplaceConnection,
    sku: str,
    price: Decimal | str = "10.00",
    quantity: int = 5,
    *,
    at_marketplace: bool = True,
    status: str | None = None,
) -> Product:
    """A catalogue product with a published listing on `connection`, and that listing at the marketplace."""
    now = rt.clock.now()
    price = Decimal(price)
    async with rt.db.transaction() as session:
        product = Product(
            id=new_id(),
            account_id=connection.account_id,
            sku=sku,
            sku_lower=sku.lower(),
            price=price,
            quantity=quantity,
            title=f"Product {sku}",
            modified_at=now,
            created_at=now,
        )
        session.add(product)
        await session.flush()
        listing_id = None
        if at_marketplace:
            seller = await sandbox_state.ensure_seller(
                session, connection.id, connection.platform, connection.country, now
            )
            remote = await sandbox_state.put_listing(
                session, seller, now, sku=sku, price=price, quantity=quantity, title=product.title
            )
            listing_id = remote.listing_id
        session.add(
            Listing(
                id=new_id(),
                account_id=connection.account_id,
                product_id=product.id,
                marketplace_id=connection.id,
                listing_id=listing_id,
                external_sku=sku if at_marketplace else None,
                listing_url=sandbox_state.listing_url(connection.platform, connection.country, listing_id)
                if listing_id
                else None,
                attributes={},
                status=status or ("Live" if at_marketplace else "Draft"),
                marketplace_price=price if at_marketplace else None,
                marketplace_quantity=quantity if at_marketplace else None,
                created_at=now,
                updated_at=now,
            )
        )
    return product


async def set_product_values(rt: Runtime, product_id: str, price: Decimal | None, quantity: int | None) -> None:
    async with rt.db.transaction() as session:
        product = await session.get(Product, product_id)
        assert product is not None
        if price is not None:
            product.price = price
        if quantity is not None:
            product.quantity = quantity


async def product(rt: Runtime, product_id: str) -> Product:
    async with rt.db.read() as session:
        found = await session.get(Product, product_id)
        assert found is not None
        return found


async def enqueue(rt: Runtime, account_id: str, job_type: str, payload: dict[str, Any]) -> str:
    async with rt.db.transaction() as session:
        job = jobs_service.enqueue(session, rt.clock.now(), account_id, payload_for(job_type, payload))
        return job.id


async def job(rt: Runtime, job_id: str) -> Job:
    async with rt.db.read() as session:
        found = await session.get(Job, job_id)
        assert found is not None
        return found


async def events(rt: Runtime, account_id: str, event_type: str | None = None) -> list[dict[str, Any]]:
    """Recorded events of the account, oldest first, each as {"type", "payload"}."""
    async with rt.db.read() as session:
        query = select(Event).where(Event.account_id == account_id).order_by(Event.occurred_at, Event.id)
        rows = (await session.execute(query)).scalars().all()
    found = [{"type": e.type, "payload": jsonio.loads(e.body)} for e in rows]
    return [e for e in found if event_type is None or e["type"] == event_type]


async def seller(rt: Runtime, connection: MarketplaceConnection) -> SandboxSeller:
    async with rt.db.transaction() as session:
        return await sandbox_state.ensure_seller(
            session, connection.id, connection.platform, connection.country, rt.clock.now()
        )


async def update_seller(rt: Runtime, connection: MarketplaceConnection, **values: Any) -> None:
    async with rt.db.transaction() as session:
        found = await sandbox_state.ensure_seller(
            session, connection.id, connection.platform, connection.country, rt.clock.now()
        )
        for name, value in values.items():
            setattr(found, name, value)


async def sandbox_listings(rt: Runtime, connection: MarketplaceConnection) -> dict[str, SandboxListing]:
    async with rt.db.read() as session:
        rows = (
            await session.execute(select(SandboxListing).where(SandboxListing.connection_id == connection.id))
        ).scalars()
        return {row.sku: row for row in rows}


async def sandbox_feeds(rt: Runtime, connection: MarketplaceConnection) -> list[SandboxFeed]:
    async with rt.db.read() as session:
        rows = await session.execute(select(SandboxFeed).where(SandboxFeed.connection_id == connection.id))
        return list(rows.scalars())


async def our_listing(rt: Runtime, connection: MarketplaceConnection, product_id: str) -> Listing | None:
    async with rt.db.read() as session:
        result = await session.execute(
            select(Listing).where(Listing.marketplace_id == connection.id, Listing.product_id == product_id)
        )
        return result.scalar_one_or_none()


def chunk_sizes(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, size_of: Callable[..., int]) -> list[int]:
    """Wrap `owner.name` (a coroutine function writing one chunk per call); the returned list gets `size_of` its
    arguments at each call."""
    sizes: list[int] = []
    real = getattr(owner, name)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        sizes.append(size_of(*args, **kwargs))
        return await real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return sizes


async def queued_push(
    rt: Runtime, api: httpx.AsyncClient, sku: str, *, price: str = "12.00", quantity: int = 9
) -> tuple[str, str, str]:
    """A P1 connection with one listed product (10.00, 5) changed to `price` and `quantity`, and its PriceStockPush
    queued: (account id, connection id, job id)."""
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    connection = tenant.marketplace("P1")
    product = await listed_product(rt, connection, sku, price="10.00", quantity=5)
    await set_product_values(rt, product.id, Decimal(price), quantity)
    async with rt.db.transaction() as session:
        payload = PriceStockPushPayload(MarketplaceId=connection.id, ProductIds=[product.id])
        job = jobs_service.enqueue(session, rt.clock.now(), tenant.account_id, payload)
    return tenant.account_id, connection.id, job.id


# -- operator commands run as the operator would (tests/marketplaces/test_cli.py, the Amazon connect tests) ------


def _logging_to_real_stderr(level: str = "INFO") -> None:
    """The command's logging setup, bound to the process's real stderr rather than the runner's
    temporary stream (structlog caches loggers, which would later write to a closed file)."""
    with contextlib.redirect_stderr(sys.__stderr__):
        configure_logging(level)
    # Not cached: a logger first used during the command would keep its WARNING setup for the rest of the process.
    structlog.configure(cache_logger_on_first_use=False)


@contextlib.contextmanager
def _suite_logging_kept() -> Iterator[None]:
    """The command sets the process's logging to its WARNING: put the suite's back (INFO, tests/conftest.py), or a
    later test in this process (pytest-xdist runs them in any order) finds no access line in its logs."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configured = marketsync_logging._configured_level
    try:
        yield
    finally:
        structlog.configure(**saved)
        root.handlers = handlers
        root.setLevel(level)
        marketsync_logging._configured_level = configured


async def cli(
    database_url: str, var_dir: Path, *args: str, expect_rc: int = 0, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run one command as the operator would, in a thread with its own event loop and Runtime
    (a separate process costs seconds of imports on this machine; the isolation is the same). `env`: more settings."""
    env = {
        "MARKETSYNC_DATABASE_URL": database_url,
        "MARKETSYNC_VAR_DIR": str(var_dir),
        "MARKETSYNC_ENCRYPTION_KEYS": TEST_ENCRYPTION_KEYS,
        "MARKETSYNC_SECRET_HASH_KEY": TEST_HASH_KEY,
        "MARKETSYNC_LOG_LEVEL": "WARNING",
        **(env or {}),
    }
    with _suite_logging_kept(), mock.patch.object(startup, "configure_logging", _logging_to_real_stderr):
        result = await asyncio.to_thread(CliRunner().invoke, app, [*args, "--json"], env=env)
    assert result.exit_code == expect_rc, (result.output, result.exception)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout  # exactly one JSON object on stdout
    parsed: dict[str, Any] = json.loads(lines[0])
    return parsed
