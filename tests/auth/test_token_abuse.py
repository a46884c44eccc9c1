"""The token endpoint under abuse (issue 14's outside probe): bounded failure bookkeeping, an atomic failure budget
per client and source, and NUL characters refused before they reach the database."""

from __future__ import annotations

import asyncio
import base64
from collections import Counter

import httpx
import pytest

from marketsync.runtime import Runtime
from tests.support.factories import make_account, make_credential

GRANT = {"grant_type": "client_credentials"}
LIMIT = {"token_failure_limit": "10/minute"}


def _from(api: httpx.AsyncClient, source: str) -> httpx.AsyncClient:
    """A client on another loopback address: the service sees another source."""
    transport = httpx.AsyncHTTPTransport(local_address=source)
    return httpx.AsyncClient(base_url=api.base_url, transport=transport, timeout=30)


@pytest.mark.parametrize("settings_overrides", [LIMIT])
async def test_concurrent_bad_secrets_are_answered_within_the_budget(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await make_credential(rt, await make_account(rt), ("OrdersRead",))
    bad = {**GRANT, "client_id": cred.client_id, "client_secret": "not-the-secret"}
    responses = await asyncio.gather(*(api.post("/connect/token", data=bad) for _ in range(80)))
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {401: 10, 429: 70}
    assert all(r.json()["error"] == "temporarily_unavailable" for r in responses if r.status_code == 429)
    # From the guessing source even the right secret is refused now: an answer beyond the budget teaches nothing.
    right = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    refused = await api.post("/connect/token", data=right)
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1


@pytest.mark.parametrize("settings_overrides", [LIMIT])
async def test_the_owner_on_another_source_is_not_locked_out(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await make_credential(rt, await make_account(rt), ("OrdersRead",))
    bad = {**GRANT, "client_id": cred.client_id, "client_secret": "not-the-secret"}
    for _ in range(12):
        await api.post("/connect/token", data=bad)
    assert (await api.post("/connect/token", data=bad)).status_code == 429
    async with _from(api, "127.0.0.2") as owner:
        right = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
        response = await owner.post("/connect/token", data=right)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("settings_overrides", [LIMIT])
async def test_successes_never_spend_the_failure_budget(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await make_credential(rt, await make_account(rt), ("OrdersRead",))
    right = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    responses = await asyncio.gather(*(api.post("/connect/token", data=right) for _ in range(40)))
    assert {r.status_code for r in responses} == {200}


async def test_huge_client_ids_are_refused_and_keep_no_state(rt: Runtime, api: httpx.AsyncClient) -> None:
    huge = "msc_" + "x" * 500_000
    response = await api.post("/connect/token", data={**GRANT, "client_id": huge, "client_secret": "s"})
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    limiter = rt.limiter
    assert limiter is not None
    windows = getattr(limiter, "_windows", None)
    if windows is not None:  # in-process windows: nothing of that size is kept
        assert all(len("".join(key)) < 200 for key in windows._windows)


@pytest.mark.parametrize(
    "form",
    [
        {**GRANT, "client_id": "msc_x\x00", "client_secret": "s"},
        {**GRANT, "client_id": "msc_x", "client_secret": "s\x00"},
        {**GRANT, "client_id": "msc_x", "client_secret": "s", "scope": "OrdersRead\x00"},
    ],
    ids=["client_id", "client_secret", "scope"],
)
async def test_nul_in_a_form_field_is_a_clean_400(rt: Runtime, api: httpx.AsyncClient, form: dict[str, str]) -> None:
    response = await api.post("/connect/token", data=form)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


async def test_nul_in_basic_credentials_is_invalid_client(rt: Runtime, api: httpx.AsyncClient) -> None:
    for raw in (b"msc_x%00:secret", b"msc_x\x00:secret", b"msc_x:sec\x00ret"):
        header = {"Authorization": "Basic " + base64.b64encode(raw).decode()}
        response = await api.post("/connect/token", data=GRANT, headers=header)
        assert response.status_code == 401, raw
        assert response.json()["error"] == "invalid_client"


async def test_non_ascii_basic_credentials_are_invalid_client(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Latin-1 bytes where base64 belongs (b64decode raises a plain ValueError for them): a 401, never a 500."""
    for raw in ("Basic \u00e9\u00e9\u00e9\u00e9".encode("latin-1"), b"Basic bXNjX3g6c2VjcmV0\xff", b"basic \xc3\xa9"):
        response = await api.post("/connect/token", data=GRANT, headers={"Authorization": raw})  # type: ignore[dict-item]
        assert response.status_code == 401, (raw, response.text)
        assert response.json()["error"] == "invalid_client"
        assert response.headers["www-authenticate"].startswith("Basic ")
