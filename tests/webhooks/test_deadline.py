"""The receiver's deadline by default (spec sections 6 and 8: "answer any 2xx within 10 seconds"; DESIGN's settings
table: MARKETSYNC_WEBHOOK_TIMEOUT_S defaults to 10). The other webhook tests shorten it (tests/webhooks/conftest.py)
and show what happens at it; this one pins the default itself, without waiting ten seconds."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from marketsync.config import Settings
from marketsync.runtime import Runtime
from marketsync.webhooks import delivery
from marketsync.webhooks.delivery import DeliveryHttp, http_of
from tests.webhooks.receiver import Receiver

DEFAULT_DEADLINE_S = 10.0


@pytest.fixture
def settings_overrides(settings_overrides: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The webhook tests' settings without their short deadline (and none from the environment): the default."""
    monkeypatch.delenv("MARKETSYNC_WEBHOOK_TIMEOUT_S", raising=False)
    return {name: value for name, value in settings_overrides.items() if name != "webhook_timeout_s"}


def test_the_setting_defaults_to_ten_seconds() -> None:
    assert Settings.model_fields["webhook_timeout_s"].default == DEFAULT_DEADLINE_S


async def test_a_delivery_attempt_has_ten_seconds_by_default(
    rt: Runtime, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attempt's one deadline (name resolution included) is 10 s after it starts, and the HTTP client's own
    timeouts are 10 s too: measured on a real attempt to the receiver, not read from the settings."""
    assert rt.settings.webhook_timeout_s == DEFAULT_DEADLINE_S
    given: list[float] = []
    real_post = DeliveryHttp.post

    async def post(self: DeliveryHttp, target: Any, headers: dict[str, str], body: bytes, deadline: float) -> Any:
        given.append(deadline - asyncio.get_running_loop().time())
        return await real_post(self, target, headers, body, deadline)

    monkeypatch.setattr(DeliveryHttp, "post", post)
    started = asyncio.get_running_loop().time()
    result = await delivery.attempt(rt, receiver.url(), {"Content-Type": "application/json"}, b"{}")
    elapsed = asyncio.get_running_loop().time() - started
    assert result.status_code == 200 and len(receiver.received) == 1
    [remaining] = given
    assert DEFAULT_DEADLINE_S - elapsed <= remaining <= DEFAULT_DEADLINE_S

    client = http_of(rt)._new_client()
    try:
        assert client.timeout == httpx.Timeout(DEFAULT_DEADLINE_S)
    finally:
        await client.aclose()
