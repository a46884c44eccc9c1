"""Internationalised receiver names are delivered to in their DNS form; name resolution counts in the deadline."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from marketsync.runtime import Runtime
from marketsync.webhooks import delivery
from marketsync.webhooks.rules import IPAddress, url_problems
from marketsync.webhooks.ssrf import RESOLVER_KEY
from tests.support.factories import make_tenant, problem
from tests.webhooks.receiver import IDN_ASCII, IDN_HOST, Receiver
from tests.webhooks.support import attempts, fire, pump, subscribe


async def test_an_internationalised_host_is_delivered_with_its_a_labels(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    subscription = await subscribe(api, tenant, receiver.url(host=IDN_HOST))
    assert subscription["Url"] == receiver.url(host=IDN_HOST)  # kept as the merchant wrote it
    await fire(rt, tenant.account_id)
    await pump(rt, lambda: len(receiver.received) >= 1)
    [request] = receiver.received
    assert request.headers["host"] == f"{IDN_ASCII}:{receiver.port}"
    [logged] = await attempts(rt)
    assert logged.outcome == "Succeeded"


def test_a_host_no_dns_can_hold_is_refused_at_registration() -> None:
    assert url_problems("https://bücher.example.test/hook") == []
    assert url_problems("https://xn--bcher-kva.example.test/hook") == []
    for bad in ("https://" + "ü" * 70 + ".example.test/hook", "https://\u200d.test/"):
        assert url_problems(bad), bad


async def test_an_invalid_idn_is_a_400_on_url(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    response = await api.post(
        "/api/webhooks/Create",
        json={"Url": "https://" + "ü" * 70 + ".example.test/hook", "EventTypes": ["InventoryChanged"]},
        headers=tenant.headers,
    )
    assert response.status_code == 400, response.text
    assert "Url" in problem(response)["errors"]


class _SlowResolver:
    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        await asyncio.sleep(30)
        raise AssertionError("the deadline should have ended the lookup")


@pytest.mark.parametrize("settings_overrides", [{"webhook_timeout_s": 0.3}])
async def test_a_slow_name_lookup_ends_at_the_attempt_deadline(rt: Runtime) -> None:
    rt.extras[RESOLVER_KEY] = _SlowResolver()
    began = time.perf_counter()
    result = await delivery.attempt(rt, "https://slow.example.test/hook", {}, b"{}")
    assert time.perf_counter() - began < 2.0
    assert result.status_code is None
    assert result.error_class == "Timeout"
