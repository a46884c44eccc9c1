"""record_event decides in its INSERT whether the fan-out has anything to do (docs/decisions/0455): an account with
no active subscription has its events recorded as dispatched, so a push of such an account leaves no fan-out write
behind it; an account with one has them fanned out as before."""

from __future__ import annotations

from sqlalchemy import select, update

from marketsync.models import Event
from marketsync.models.webhooks import WebhookDelivery, WebhookSubscription
from marketsync.runtime import Runtime
from marketsync.webhooks import engine, repository
from tests.support.factories import make_account
from tests.webhooks.support import add_subscription, fire


async def _event(rt: Runtime, event_id: str) -> Event:
    async with rt.db.read() as session:
        event = (await session.execute(select(Event).where(Event.id == event_id))).scalar_one()
        return event


async def _deliveries_of(rt: Runtime, event_id: str) -> list[str]:
    async with rt.db.read() as session:
        query = select(WebhookDelivery.subscription_id).where(WebhookDelivery.event_id == event_id)
        return [row[0] for row in await session.execute(query)]


async def test_an_event_of_an_account_without_an_active_subscription_is_dispatched_as_it_is_recorded(
    rt: Runtime,
) -> None:
    quiet = await make_account(rt)
    event_id = await fire(rt, quiet)
    event = await _event(rt, event_id)
    assert event.dispatched_at == event.occurred_at
    assert not await repository.has_undispatched_events(rt.db)
    assert await engine.fan_out(rt) == 0

    # A subscription receives what occurs from its creation on: the earlier event is not fanned out to it.
    subscription_id = await add_subscription(rt, quiet, rt.clock.now())
    assert await engine.fan_out(rt) == 0
    assert await _deliveries_of(rt, event_id) == []

    later = await fire(rt, quiet)
    assert (await _event(rt, later)).dispatched_at is None
    assert await engine.fan_out(rt) == 1
    assert await _deliveries_of(rt, later) == [subscription_id]


async def test_a_disabled_subscription_counts_as_none_and_another_accounts_as_none_either(rt: Runtime) -> None:
    subscribed, other = await make_account(rt), await make_account(rt)
    subscription_id = await add_subscription(rt, subscribed, rt.clock.now())

    kept = await fire(rt, subscribed)
    of_other = await fire(rt, other)
    assert (await _event(rt, kept)).dispatched_at is None
    assert (await _event(rt, of_other)).dispatched_at is not None

    async with rt.db.transaction() as session:
        await session.execute(
            update(WebhookSubscription).where(WebhookSubscription.id == subscription_id).values(is_active=False)
        )
    after_disabling = await fire(rt, subscribed)
    assert (await _event(rt, after_disabling)).dispatched_at is not None
    assert await engine.fan_out(rt) == 1  # the event recorded while the subscription was active, with no delivery
    assert await _deliveries_of(rt, kept) == []
