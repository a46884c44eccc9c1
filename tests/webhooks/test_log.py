"""The attempt log: `marketsync admin webhooks log`, `rotate-keys`, and the 30-day retention sweep."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from marketsync import startup
from marketsync.cli import app
from marketsync.kit.ids import new_id
from marketsync.models import Event
from marketsync.models.webhooks import WebhookAttempt, WebhookDelivery
from marketsync.runtime import Runtime
from marketsync.webhooks import repository, tasks
from marketsync.webhooks.tasks import sweep_attempt_log
from tests.support.factories import Tenant, make_tenant
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import attempts, deliveries, fire, pump, subscribe


@pytest.fixture(autouse=True)
def keep_test_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI configures logging onto the runner's captured stream, which closes after each invoke."""
    monkeypatch.setattr(startup, "configure_logging", lambda _level="INFO": None)


async def cli(rt: Runtime, *args: str) -> dict[str, Any]:
    env = {
        "MARKETSYNC_DATABASE_URL": rt.settings.database_url,
        "MARKETSYNC_VAR_DIR": str(rt.settings.var_dir),
        "MARKETSYNC_ENCRYPTION_KEYS": rt.settings.encryption_keys or "",
        "MARKETSYNC_SECRET_HASH_KEY": rt.settings.secret_hash_key or "",
    }
    result = await asyncio.to_thread(CliRunner().invoke, app, list(args), env=env)
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


async def test_admin_log_shows_every_attempt(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    tenant = await make_tenant(rt, api)
    first = await subscribe(api, tenant, receiver.url("/a"))
    second = await subscribe(api, tenant, receiver.url("/b"))
    receiver.behaviour = lambda request: 503 if request.path == "/a" and request.attempt == 1 else 202
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 3)
    await pump(rt, lambda: True)

    everything = await cli(rt, "admin", "webhooks", "log", "--account", tenant.account_id, "--json")
    assert len(everything["Attempts"]) == 3
    only_first = await cli(
        rt,
        "admin",
        "webhooks",
        "log",
        "--account",
        tenant.account_id,
        "--subscription",
        first["SubscriptionId"],
        "--json",
    )
    rows = sorted(only_first["Attempts"], key=lambda a: a["Attempt"])
    assert [(a["Attempt"], a["Status"], a["Outcome"]) for a in rows] == [(1, 503, "Retrying"), (2, 202, "Succeeded")]
    assert rows[0]["ErrorClass"] == "HttpStatus" and rows[0]["NextAttemptAt"] is not None
    assert rows[0]["ResponseSnippet"].startswith("status 503") and len(rows[0]["ResponseSnippet"]) <= 1024
    assert isinstance(rows[0]["DurationMs"], int) and rows[0]["Event"] == "InventoryChanged"
    assert {a["DeliveryId"] for a in rows} == {rows[0]["DeliveryId"]}
    assert second["Secret"] not in json.dumps(everything) and first["Secret"] not in json.dumps(everything)

    rotated = await cli(rt, "admin", "webhooks", "rotate-keys", "--json")
    assert rotated == {"Examined": 2, "Reencrypted": 0, "KeyId": "t1"}


async def one_delivery_made(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> tuple[Tenant, WebhookAttempt, WebhookDelivery]:
    """A tenant whose one event was delivered now: its attempt and delivery (the recent ones a sweep keeps)."""
    tenant = await make_tenant(rt, api)
    await subscribe(api, tenant, receiver.url())
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    await pump(rt, lambda: True)
    [recent] = await attempts(rt)
    [delivered] = await deliveries(rt)
    return tenant, recent, delivered


async def test_retention_sweeps_attempts_older_than_30_days(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant, recent, delivered = await one_delivery_made(rt, api, receiver)
    old = rt.clock.now() - timedelta(days=30, minutes=1)
    async with rt.db.transaction() as session:
        session.add(
            Event(
                id=(old_event := new_id()),
                account_id=tenant.account_id,
                type="FeedOutcome",
                body=b"{}",
                occurred_at=old,
                dispatched_at=old,
            )
        )
        await session.flush()
        session.add(
            WebhookDelivery(
                id=new_id(),
                account_id=tenant.account_id,
                subscription_id=delivered.subscription_id,
                event_id=old_event,
                event_type="FeedOutcome",
                status=repository.SUCCEEDED,
                attempts=1,
                next_attempt_at=old,
                created_at=old,
                finished_at=old,
            )
        )
        session.add(
            WebhookAttempt(
                id=new_id(),
                account_id=tenant.account_id,
                subscription_id=recent.subscription_id,
                delivery_id=recent.delivery_id,
                event_id=old_event,
                event_type="FeedOutcome",
                attempt=1,
                started_at=old,
                duration_ms=5,
                status_code=200,
                outcome="Succeeded",
            )
        )
    assert len(await attempts(rt)) == 2 and len(await deliveries(rt)) == 2

    await sweep_attempt_log(rt)
    assert [a.id for a in await attempts(rt)] == [recent.id]
    assert [d.id for d in await deliveries(rt)] == [delivered.id]


async def test_retention_sweeps_in_batches_of_a_transaction_each(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seven expired events, each with its delivery and attempt, swept 3 rows a table per transaction: every one goes,
    the events only once no delivery refers to them, and the recent delivery and attempt stay."""
    monkeypatch.setattr(tasks, "RETENTION_SWEEP_BATCH", 3)
    tenant, recent, delivered = await one_delivery_made(rt, api, receiver)
    old = rt.clock.now() - timedelta(days=31)
    expired_events = [new_id() for _ in range(7)]
    async with rt.db.transaction() as session:
        for event_id in expired_events:
            session.add(
                Event(id=event_id, account_id=tenant.account_id, type="FeedOutcome", body=b"{}", occurred_at=old,
                      dispatched_at=old)
            )  # fmt: skip
        await session.flush()
        for event_id in expired_events:
            delivery_id = new_id()
            session.add(
                WebhookDelivery(id=delivery_id, account_id=tenant.account_id,
                                subscription_id=delivered.subscription_id, event_id=event_id, event_type="FeedOutcome",
                                status=repository.SUCCEEDED, attempts=1, next_attempt_at=old, created_at=old,
                                finished_at=old)
            )  # fmt: skip
            session.add(
                WebhookAttempt(id=new_id(), account_id=tenant.account_id, subscription_id=delivered.subscription_id,
                               delivery_id=delivery_id, event_id=event_id, event_type="FeedOutcome", attempt=1,
                               started_at=old, duration_ms=5, status_code=200, outcome="Succeeded")
            )  # fmt: skip
    transactions = 0
    open_transaction = rt.db.transaction

    def counted() -> Any:
        nonlocal transactions
        transactions += 1
        return open_transaction()

    monkeypatch.setattr(rt.db, "transaction", counted)
    await sweep_attempt_log(rt)
    monkeypatch.setattr(rt.db, "transaction", open_transaction)

    assert [a.id for a in await attempts(rt)] == [recent.id]
    assert [d.id for d in await deliveries(rt)] == [delivered.id]
    async with rt.db.read() as session:
        left = (await session.execute(select(Event.id).where(Event.id.in_(expired_events)))).scalars().all()
    assert left == []
    assert transactions >= 3  # 7 rows of each table, 3 a batch
