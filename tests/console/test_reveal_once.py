"""Decision 0401: a page that shows a secret once (a new credential, a new or replacing webhook subscription, a
person's password) is post/redirect/get: the form's post creates and redirects, the page after it shows the secret
once, and a reload of that page shows it no more and creates nothing."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import func, select

from marketsync.kit.clock import FrozenClock, SystemClock
from marketsync.models import Credential
from marketsync.models.people import AppSession, AppUser
from marketsync.people import service as people
from marketsync.runtime import Runtime
from tests.console.support import make_person, posted_then_reloaded, signed_in
from tests.support.factories import make_account


@pytest.fixture
def clock() -> FrozenClock:
    """Time moves only when a test moves it (a reveal waits a few minutes at most)."""
    return FrozenClock(SystemClock().now())


async def _count(rt: Runtime, model: type[object], account_id: str) -> int:
    async with rt.db.read() as session:
        query = select(func.count()).select_from(model).where(model.account_id == account_id)  # type: ignore[attr-defined]
        return int((await session.execute(query)).scalar_one())


async def _stored_reveals(rt: Runtime) -> list[str]:
    async with rt.db.read() as session:
        return [r for r in (await session.execute(select(AppSession.reveals))).scalars() if r]


async def test_a_new_credentials_secret_is_shown_once_and_a_reload_creates_nothing(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    owner = await signed_in(api, await make_person(rt, account_id))
    form = {"name": "ERP", "scope_OrdersRead": "1"}
    first, reloaded = await posted_then_reloaded(owner, "/app/credentials", form, "/app/credentials")
    secret = re.search(r'id="client-secret">([^<]+)<', first)
    assert secret is not None and "Credential “ERP” created" in first
    assert secret.group(1) not in reloaded and 'id="reveal-gone"' in reloaded and 'id="client-secret"' not in reloaded
    assert await _count(rt, Credential, account_id) == 1
    stored = await _stored_reveals(rt)
    assert all(secret.group(1) not in value for value in stored)  # never in clear, and gone once shown
    await owner.client.aclose()


async def test_a_persons_password_is_shown_once_and_a_reload_replaces_it_no_more(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    owner = await signed_in(api, await make_person(rt, account_id))
    form = {"email": "packer@example.com", "role": "Staff"}
    first, reloaded = await posted_then_reloaded(owner, "/app/people", form, "/app/people")
    password = re.search(r'id="person-password">([^<]+)<', first)
    assert password is not None and password.group(1) not in reloaded and 'id="reveal-gone"' in reloaded
    assert await _count(rt, AppUser, account_id) == 2
    async with rt.db.read() as session:
        user_id = (await session.execute(select(AppUser.id).where(AppUser.email == "packer@example.com"))).scalar_one()
        before = (await session.execute(select(AppUser.password_hash).where(AppUser.id == user_id))).scalar_one()

    first, reloaded = await posted_then_reloaded(owner, f"/app/people/{user_id}/password", {}, "/app/people")
    replaced = re.search(r'id="person-password">([^<]+)<', first)
    assert replaced is not None and replaced.group(1) not in reloaded and 'id="reveal-gone"' in reloaded
    async with rt.db.read() as session:
        after = (await session.execute(select(AppUser.password_hash).where(AppUser.id == user_id))).scalar_one()
    assert after != before  # replaced once; the reload posted nothing
    await owner.client.aclose()


async def test_a_reveal_is_for_the_browser_that_posted_and_waits_a_few_minutes_at_most(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    user = await make_person(rt, account_id)
    owner, other_tab_elsewhere = await signed_in(api, user), await signed_in(api, user)
    posted = await owner.post(
        "/app/credentials", {"name": "ERP", "scope_OrdersRead": "1"}, csrf_from="/app/credentials"
    )
    location = posted.headers["location"]
    elsewhere = await other_tab_elsewhere.page(location)  # the same person's other browser: not its reveal
    assert 'id="client-secret"' not in elsewhere.text and 'id="reveal-gone"' in elsewhere.text
    assert 'id="client-secret"' in (await owner.page(location)).text  # still there for the browser that posted
    await owner.client.aclose()
    await other_tab_elsewhere.client.aclose()


async def test_an_unread_reveal_is_gone_after_it_waited_too_long(rt: Runtime, clock: FrozenClock) -> None:
    account_id = await make_account(rt)
    user = await make_person(rt, account_id)
    token = await people.sign_in(rt, user.email, user.password, "test")
    async with rt.db.transaction() as session:
        await people.keep_reveal(rt, session, token, "credential:A", {"client_secret": "s1"})
        await people.keep_reveal(rt, session, token, "credential:B", {"client_secret": "s2"})
    assert await people.take_reveal(rt, token, "credential:A") == {"client_secret": "s1"}
    assert await people.take_reveal(rt, token, "credential:A") is None  # once
    clock.advance(seconds=people.REVEAL_WAITS.total_seconds() + 1)
    assert await people.take_reveal(rt, token, "credential:B") is None
    assert await _stored_reveals(rt) == []
