"""A credential's rotation (issue 41, decision 0432): a new secret while the old one keeps working for the grace
period the Owner picks (at most 7 days), both accepted by the token endpoint in that window, tokens of the old secret
ending with it; after it the old secret is refused, and tokens issued before the rotation stop too. Over real HTTP
on both databases, with the clock moved past the window. And "last used", written in the background only."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import select

from marketsync.auth import service, usage
from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.kit.clock import FrozenClock
from marketsync.models import Credential
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.support.factories import make_account, make_credential

NOW = datetime(2026, 3, 10, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


async def _token(api: httpx.AsyncClient, client_id: str, secret: str) -> httpx.Response:
    return await api.post(
        "/connect/token", data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    )


async def _calls_the_api(api: httpx.AsyncClient, token: str) -> int:
    response = await api.post("/api/orders/List", json={}, headers={"Authorization": f"Bearer {token}"})
    return response.status_code


async def _rotate(rt: Runtime, account_id: str, credential_id: str, grace: timedelta) -> service.NewCredential:
    async with rt.db.transaction() as session:
        return await service.rotate_credential(rt, session, account_id, credential_id, grace)


async def test_both_secrets_work_in_the_window_and_the_old_one_is_refused_after_it(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    account_id = await make_account(rt)
    old = await make_credential(rt, account_id, ("OrdersRead",))
    before = (await _token(api, old.client_id, old.client_secret)).json()["access_token"]
    clock.advance(seconds=5)
    new = await _rotate(rt, account_id, old.credential_id, timedelta(hours=1))
    assert new.client_id == old.client_id and new.client_secret != old.client_secret

    # In the window: both secrets mint tokens, every token calls the API; the old secret's tokens end with it.
    clock.advance(minutes=30)
    by_old = await _token(api, old.client_id, old.client_secret)
    by_new = await _token(api, new.client_id, new.client_secret)
    assert by_old.status_code == 200 and by_new.status_code == 200
    assert by_old.json()["expires_in"] == 30 * 60  # the window's end, not an hour
    assert by_new.json()["expires_in"] == 3600
    for token in (before, by_old.json()["access_token"], by_new.json()["access_token"]):
        assert await _calls_the_api(api, token) == 200

    # After it: the old secret is refused at the token endpoint, and its tokens and those issued before the rotation
    # no longer call the API; the new secret's do.
    clock.advance(minutes=31)
    refused = await _token(api, old.client_id, old.client_secret)
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
    assert await _calls_the_api(api, by_old.json()["access_token"]) == 401
    assert await _calls_the_api(api, by_new.json()["access_token"]) == 200
    fresh = await _token(api, new.client_id, new.client_secret)
    assert fresh.status_code == 200 and await _calls_the_api(api, fresh.json()["access_token"]) == 200


async def test_a_rotation_without_grace_stops_the_old_secret_and_its_tokens_at_once(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    account_id = await make_account(rt)
    old = await make_credential(rt, account_id, ("OrdersRead",))
    before = (await _token(api, old.client_id, old.client_secret)).json()["access_token"]
    assert await _calls_the_api(api, before) == 200
    clock.advance(seconds=5)
    new = await _rotate(rt, account_id, old.credential_id, timedelta(0))
    assert (await _token(api, old.client_id, old.client_secret)).status_code == 401
    assert await _calls_the_api(api, before) == 401  # a leaked token stops with its secret
    by_new = await _token(api, new.client_id, new.client_secret)
    assert by_new.status_code == 200 and await _calls_the_api(api, by_new.json()["access_token"]) == 200


async def test_rotating_again_in_the_window_ends_the_oldest_secret_at_once(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    account_id = await make_account(rt)
    first = await make_credential(rt, account_id, ("OrdersRead",))
    second = await _rotate(rt, account_id, first.credential_id, timedelta(days=7))
    third = await _rotate(rt, account_id, first.credential_id, timedelta(days=1))
    assert (await _token(api, first.client_id, first.client_secret)).status_code == 401  # two secrets at most
    assert (await _token(api, first.client_id, second.client_secret)).status_code == 200
    assert (await _token(api, first.client_id, third.client_secret)).status_code == 200
    clock.advance(days=1, seconds=1)
    assert (await _token(api, first.client_id, second.client_secret)).status_code == 401
    assert (await _token(api, first.client_id, third.client_secret)).status_code == 200


async def test_a_grace_period_is_at_most_7_days_and_only_the_accounts_own_credential(rt: Runtime) -> None:
    account_id = await make_account(rt)
    credential = await make_credential(rt, account_id, ("OrdersRead",))
    with pytest.raises(ValidationFailed):
        await _rotate(rt, account_id, credential.credential_id, timedelta(days=7, seconds=1))
    with pytest.raises(ValidationFailed):
        await _rotate(rt, account_id, credential.credential_id, timedelta(seconds=-1))
    other = await make_account(rt)
    with pytest.raises(NotFound):
        await _rotate(rt, other, credential.credential_id, timedelta(hours=1))


async def _last_used(rt: Runtime, credential_id: str) -> datetime | None:
    async with rt.db.read() as session:
        return (await session.execute(select(Credential.last_used_at).where(Credential.id == credential_id))).scalar()


async def test_last_used_is_written_to_the_hour_in_the_background_never_by_the_request(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    account_id = await make_account(rt)
    credential = await make_credential(rt, account_id, ("OrdersRead",))
    clock.advance(minutes=25)
    token = (await _token(api, credential.client_id, credential.client_secret)).json()["access_token"]
    assert await _calls_the_api(api, token) == 200
    assert await _last_used(rt, credential.credential_id) is None  # the requests wrote nothing
    assert await usage.flush(rt) == 1
    assert await _last_used(rt, credential.credential_id) == NOW  # 12:25 kept as the hour 12:00
    assert await usage.flush(rt) == 0  # nothing new: nothing written
    clock.advance(hours=2)
    assert await _calls_the_api(api, token) == 401  # expired; a failed call is not a use
    fresh = (await _token(api, credential.client_id, credential.client_secret)).json()["access_token"]
    assert await _calls_the_api(api, fresh) == 200
    assert await usage.flush(rt) == 1
    assert await _last_used(rt, credential.credential_id) == NOW + timedelta(hours=2)


async def test_the_app_rotates_a_credential_for_an_owner_only_within_the_choices(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    credential = await make_credential(rt, account_id, ("OrdersRead",), name="ERP")
    owner = await signed_in(api, await make_person(rt, account_id))
    path = f"/app/credentials/{credential.credential_id}/rotate"
    refused = await owner.post(path, {"grace_hours": "169"}, csrf_from="/app/credentials")
    assert refused.status_code == 400 and "up to 7 days" in refused.text
    rotated = await owner.post(path, {"grace_hours": "24"}, csrf_from="/app/credentials")
    assert rotated.status_code == 303
    shown = await owner.page(rotated.headers["location"])
    assert "Credential “ERP” rotated" in shown.text and "The old secret keeps working for: 1 day." in shown.text
    assert "Rotated; the old secret works until" in shown.text
    secret = re.search(r'id="client-secret">([^<]+)<', shown.text).group(1)  # type: ignore[union-attr]
    assert (await _token(api, credential.client_id, secret)).status_code == 200
    assert (await _token(api, credential.client_id, credential.client_secret)).status_code == 200  # in the window
    staff = await signed_in(api, await make_person(rt, account_id, role="Staff"))
    assert (await staff.post(path, {"grace_hours": "0"})).status_code == 403
    other = await signed_in(api, await make_person(rt, await make_account(rt)))
    assert (await other.post(path, {"grace_hours": "0"}, csrf_from="/app/credentials")).status_code == 404
    for browser in (owner, staff, other):
        await browser.client.aclose()
