"""The real retry schedule (scale 1.0) driven by a frozen clock: seven attempts, same id, same bytes."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

from marketsync.kit.clock import Clock, FrozenClock
from marketsync.runtime import Runtime
from marketsync.webhooks import engine, verify
from marketsync.webhooks.rules import BACKOFF_STEPS_S
from tests.support.factories import make_tenant
from tests.webhooks.conftest import Tls
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import attempts, deliveries, fire, subscribe, subscription_row


@pytest.fixture
def clock() -> Clock:
    return FrozenClock()


@pytest.fixture
def settings_overrides(tls: Tls) -> dict[str, Any]:
    return {
        "webhook_ca_bundle": tls.ca_file,
        # Every answer is immediate: a deadline this wide only keeps a loaded machine from timing an attempt out
        # before it reaches the receiver (the schedule, not the deadline, is under test here).
        "webhook_timeout_s": 8.0,
        "webhook_retry_scale": 1.0,
        "webhook_allowed_networks": "127.0.0.0/8",
    }


async def attempt_log(rt: Runtime) -> str:
    """What each attempt logged, for a failure's message."""
    return "; ".join(f"{a.outcome} {a.status_code} {a.error_class} {a.error_detail}" for a in await attempts(rt))


async def test_full_retry_schedule_then_failed_delivery(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, receiver.url())
    # Every retryable kind of answer: 5xx, 408, 429, and a redirect (never followed).
    receiver.script = [500, 503, 408, 429, 302, 502, 504]
    await fire(rt, tenant.account_id)
    await engine.fan_out(rt)
    sent_at = [clock.now()]
    await engine.deliver_due(rt, "w1")
    assert len(receiver.received) == 1

    for step in BACKOFF_STEPS_S:
        clock.advance(seconds=step - 1)
        await engine.deliver_due(rt, "w1")
        assert len(receiver.received) == len(sent_at), "retried before its backoff step elapsed"
        clock.advance(seconds=1)
        sent_at.append(clock.now())
        await engine.deliver_due(rt, "w1")
        assert len(receiver.received) == len(sent_at), await attempt_log(rt)

    clock.advance(days=2)
    await engine.deliver_due(rt, "w1")
    requests = receiver.received
    assert len(requests) == 7  # seven attempts over roughly half a day
    assert [r.attempt for r in requests] == [1, 2, 3, 4, 5, 6, 7]
    assert len({r.delivery_id for r in requests}) == 1
    assert len({r.body for r in requests}) == 1
    for request, at in zip(requests, sent_at, strict=True):
        assert int(request.headers["x-svc-timestamp"]) == int(at.timestamp())  # signed at each attempt
        assert verify(created["Secret"], request.headers, request.body, now=at)

    logged = await attempts(rt)
    assert [a.outcome for a in logged] == ["Retrying"] * 6 + ["Failed"]
    assert [a.status_code for a in logged] == [500, 503, 408, 429, 302, 502, 504]
    assert logged[4].error_class == "Redirect"
    gaps = [(b.started_at - a.started_at).total_seconds() for a, b in itertools.pairwise(logged)]
    assert gaps == [float(s) for s in BACKOFF_STEPS_S]
    [delivery] = await deliveries(rt)
    assert delivery.status == "Failed" and delivery.attempts == 7
    row = await subscription_row(rt, created["SubscriptionId"])
    assert row is not None and row.consecutive_failures == 1 and row.is_active
