"""Tokens are cached, renewed before they expire and once on a 401; a 429 is waited out as Retry-After says."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from marketsync_client import RateLimited, RetryPolicy, TokenError

from marketsync.auth import service as auth_service
from marketsync.kit.clock import FrozenClock
from marketsync.runtime import Runtime
from tests.support.factories import make_tenant
from tests.support.sdk import Seen, ThreadedClient, sdk

TOKEN = "/connect/token"
MARKETPLACES = "/api/marketplaces"


@pytest.fixture
def clock() -> FrozenClock:
    """The service's clock, moved by hand: a token expires without the test waiting for it."""
    return FrozenClock(datetime.now(UTC))


def _later(client: Any, seconds: float) -> None:
    """Move the client's clock (the token cache's) and the service's by the same amount."""
    raw = client.client if isinstance(client, ThreadedClient) else client
    moved = raw._clock
    raw._clock = lambda: moved() + seconds


@pytest.mark.parametrize("settings_overrides", [{"token_ttl_s": 2}])
async def test_tokens_are_cached_and_renewed_before_they_expire(
    rt: Runtime, api: httpx.AsyncClient, flavour: str, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api)
    seen = Seen()
    async with sdk(api, tenant, flavour, seen=seen) as client:
        for _ in range(3):
            await client.list_marketplaces()
        assert len(seen.paths(TOKEN)) == 1  # one token for many calls
        # The client counts the 2-second expires_in from when it got the token: past.
        _later(client, 2.1)
        clock.advance(seconds=2.1)
        await client.list_marketplaces()
        # Renewed before use, never refused: no 401 was ever answered.
        assert len(seen.paths(TOKEN)) == 2
        assert [status for path, status, _ in seen.statuses if path == MARKETPLACES] == [200] * 4


@pytest.mark.parametrize("settings_overrides", [{"token_ttl_s": 1}])
async def test_a_token_refused_early_is_renewed_once(rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock) -> None:
    tenant = await make_tenant(rt, api)
    seen = Seen()
    async with sdk(api, tenant, seen=seen) as client:
        await client.list_marketplaces()
        # The client's clock runs behind the server's: it believes its token is good for an hour.
        assert client._token is not None
        client._token.expires_at = time.monotonic() + 3600
        clock.advance(seconds=2.1)  # a 1-second token lives 1 to 2 seconds (its expiry is a whole second, rounded up)
        await client.list_marketplaces()
        assert [status for path, status, _ in seen.statuses if path == MARKETPLACES] == [200, 401, 200]
        assert len(seen.paths(TOKEN)) == 2
        first, renewed = (r.headers["authorization"] for r in seen.paths(MARKETPLACES)[1:])
        assert first != renewed

        # A credential deleted in the app: the renewal itself is refused, and that is final.
        async with rt.db.transaction() as session:
            await auth_service.delete_credential(session, tenant.account_id, tenant.credential.credential_id)
        with pytest.raises(TokenError) as refused:
            await client.list_marketplaces()
        assert refused.value.error == "invalid_client"
        assert [status for path, status, _ in seen.statuses if path == MARKETPLACES][-1] == 401


@pytest.mark.parametrize("settings_overrides", [{"rate_limit": "3/second"}])
async def test_a_429_is_waited_out_for_retry_after(rt: Runtime, api: httpx.AsyncClient, flavour: str) -> None:
    tenant = await make_tenant(rt, api)
    seen = Seen()
    async with sdk(api, tenant, flavour, seen=seen) as client:
        for _ in range(8):
            await client.list_marketplaces()  # every call succeeds in the end
        limited = [(at, index) for index, (path, status, at) in enumerate(seen.statuses) if status == 429]
        assert limited, "the 3-per-second budget was exceeded"
        for at, index in limited:
            retried_at = seen.statuses[index + 1][2]
            # The server said Retry-After: 1 (its window is one second); the retry came no sooner.
            assert retried_at - at >= 0.9
        assert len([s for s in seen.statuses if s[0] == MARKETPLACES and s[1] == 200]) == 8
        budget = client.rate_limit
        assert budget is not None and budget.limit == 3 and 0 <= budget.remaining <= 3

    # With retries off the 429 is raised, typed, with the wait it asked for.
    async with sdk(api, tenant, retry=RetryPolicy(max_attempts=1)) as impatient:
        with pytest.raises(RateLimited) as raised:
            for _ in range(5):
                await impatient.list_marketplaces()
        assert raised.value.code == "rate-limited" and raised.value.retry_after == 1
