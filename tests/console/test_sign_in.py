"""Sign-in to the app: argon2id passwords, server-side sessions, CSRF on every change, no fixation, throttling."""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from marketsync.app import create_app
from marketsync.console import pages as console_pages
from marketsync.kit.clock import FrozenClock
from marketsync.models.people import AppSession
from marketsync.people import service as people_service
from marketsync.runtime import Runtime
from tests.console.support import Browser, make_person, signed_in
from tests.support.factories import make_account
from tests.support.server import serve


@pytest.fixture
async def owner(rt: Runtime, api: httpx.AsyncClient) -> AsyncIterator[Browser]:
    browser = await signed_in(api, await make_person(rt, await make_account(rt)))
    yield browser
    await browser.client.aclose()


async def test_pages_need_a_sign_in(rt: Runtime, api: httpx.AsyncClient) -> None:
    for path in ("/app", "/app/marketplaces", "/app/jobs", "/app/credentials", "/app/dataflow"):
        response = await api.get(path)
        assert response.status_code == 303 and response.headers["location"].split("?next=")[0] == "/app/sign-in", path


async def test_a_person_signs_in_with_a_secure_session_cookie(rt: Runtime, api: httpx.AsyncClient) -> None:
    user = await make_person(rt, await make_account(rt))
    response = await api.post("/app/sign-in", data={"email": user.email.upper(), "password": user.password})
    assert response.status_code == 303 and response.headers["location"] == "/app/"
    cookie = response.headers["set-cookie"]
    assert "msc_session=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/app" in cookie
    page = await api.get("/app/marketplaces")
    assert page.status_code == 200 and user.email in page.text
    assert page.headers["cache-control"] == "no-store"
    assert "<title>Marketplaces · marketsync</title>" in page.text and '<main id="main">' in page.text


async def test_wrong_password_and_unknown_email_get_the_same_answer(rt: Runtime, api: httpx.AsyncClient) -> None:
    user = await make_person(rt, await make_account(rt))
    wrong = await api.post("/app/sign-in", data={"email": user.email, "password": "nope"})
    unknown = await api.post("/app/sign-in", data={"email": "nobody@example.com", "password": "nope"})
    assert wrong.status_code == unknown.status_code == 401
    assert "Wrong email or password." in wrong.text and "Wrong email or password." in unknown.text
    assert "msc_session" not in wrong.headers.get("set-cookie", "")


async def test_sign_in_attempts_are_throttled(rt: Runtime, api: httpx.AsyncClient) -> None:
    user = await make_person(rt, await make_account(rt))
    statuses = [
        (await api.post("/app/sign-in", data={"email": user.email, "password": "nope"})).status_code for _ in range(11)
    ]
    assert statuses[:10] == [401] * 10 and statuses[10] == 429
    right = await api.post("/app/sign-in", data={"email": user.email, "password": user.password})
    assert right.status_code == 429 and int(right.headers["retry-after"]) >= 1


async def test_concurrent_guesses_open_no_session_once_the_budget_is_spent(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe's bypass: guesses sent at once all pass the budget check before any hash is done. The right
    password, checked while the wrong ones spend the budget, must not open a session once it is spent. Its hash is
    held until every wrong guess is answered, so the order is the probe's on any machine."""
    user = await make_person(rt, await make_account(rt))
    right_hashing, release_right = threading.Event(), threading.Event()
    verify = people_service._verify

    def held_verify(password_hash: str, password: str) -> bool:
        if password == user.password:
            right_hashing.set()
            release_right.wait(timeout=30)
        return verify(password_hash, password)

    monkeypatch.setattr(people_service, "_verify", held_verify)
    right = asyncio.create_task(api.post("/app/sign-in", data={"email": user.email, "password": user.password}))
    assert await asyncio.to_thread(right_hashing.wait, 30)  # past the budget check, its hash under way
    wrong = await asyncio.gather(
        *(api.post("/app/sign-in", data={"email": user.email, "password": f"guess-{n}"}) for n in range(12))
    )
    release_right.set()
    answer = await right

    assert Counter(r.status_code for r in wrong) == {401: 10, 429: 2}
    assert answer.status_code == 429 and int(answer.headers["retry-after"]) >= 1
    assert "msc_session" not in answer.headers.get("set-cookie", "")
    async with rt.db.read() as session:
        assert (await session.execute(select(AppSession).where(AppSession.user_id == user.user_id))).first() is None


async def test_a_planted_session_id_is_worthless(rt: Runtime, api: httpx.AsyncClient) -> None:
    user = await make_person(rt, await make_account(rt))
    async with httpx.AsyncClient(base_url=api.base_url, cookies={"msc_session": "planted-by-attacker"}) as victim:
        response = await victim.post("/app/sign-in", data={"email": user.email, "password": user.password})
        issued = response.cookies.get("msc_session")
        assert issued and issued != "planted-by-attacker"
    async with httpx.AsyncClient(base_url=api.base_url, cookies={"msc_session": "planted-by-attacker"}) as attacker:
        assert (await attacker.get("/app/marketplaces")).status_code == 303


async def test_a_change_without_the_csrf_token_is_refused(rt: Runtime, owner: Browser) -> None:
    response = await owner.client.post("/app/credentials", data={"name": "forged", "scope_OrdersRead": "1"})
    assert response.status_code == 403
    forged = await owner.client.post(
        "/app/credentials", data={"name": "forged", "scope_OrdersRead": "1", "csrf": "guessed"}
    )
    assert forged.status_code == 403
    assert "forged" not in (await owner.page("/app/credentials")).text


async def test_sign_out_and_sign_out_everywhere(rt: Runtime, api: httpx.AsyncClient) -> None:
    user = await make_person(rt, await make_account(rt))
    laptop, phone = await signed_in(api, user), await signed_in(api, user)
    out = await laptop.post("/app/sign-out")
    assert out.status_code == 303
    assert (await laptop.page("/app/jobs")).status_code == 303
    assert (await phone.page("/app/jobs")).status_code == 200
    tablet = await signed_in(api, user)
    await tablet.post("/app/sign-out", {"everywhere": "1"})
    assert (await phone.page("/app/jobs")).status_code == 303
    for browser in (laptop, phone, tablet):
        await browser.client.aclose()


@pytest.mark.parametrize("clock", [FrozenClock()])
async def test_sessions_expire_when_idle(rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock) -> None:
    user = await make_person(rt, await make_account(rt))
    browser = await signed_in(api, user)
    clock.advance(minutes=29)
    assert (await browser.page("/app/jobs")).status_code == 200
    clock.advance(minutes=31)
    assert (await browser.page("/app/jobs")).status_code == 303
    await browser.client.aclose()


@pytest.mark.parametrize("clock", [FrozenClock()])
async def test_sessions_end_after_twelve_hours_whatever_the_activity(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    browser = await signed_in(api, await make_person(rt, await make_account(rt)))
    for _ in range(24):  # active all along: 11 h 36 min
        clock.advance(minutes=29)
        assert (await browser.page("/app/jobs")).status_code == 200
    clock.advance(minutes=25)  # not idle, but past twelve hours
    assert (await browser.page("/app/jobs")).status_code == 303
    await browser.client.aclose()


async def test_a_session_holds_across_api_processes_and_signing_out_everywhere_ends_it_on_each(
    rt: Runtime, api: httpx.AsyncClient, make_runtime: Callable[..., Runtime], owner: Browser
) -> None:
    """Sessions live in the database: a second API process (its own runtime and pool) knows the same sign-in."""
    async with serve(create_app(make_runtime())) as other_base, httpx.AsyncClient(base_url=other_base) as other:
        other.cookies.update(owner.client.cookies)
        assert (await other.get("/app/jobs")).status_code == 200
        await owner.post("/app/sign-out", {"everywhere": "1"})
        gone = await other.get("/app/jobs")
        assert gone.status_code == 303 and gone.headers["location"] == "/app/sign-in?next=%2Fapp%2Fjobs"


@pytest.mark.parametrize("clock", [FrozenClock()])
async def test_an_expired_session_sends_htmx_to_the_sign_in_page_and_a_navigation_by_redirect(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    browser = await signed_in(api, await make_person(rt, await make_account(rt)))
    clock.advance(minutes=31)
    refresh = await browser.client.get("/app/marketplaces", headers={"HX-Request": "true"})
    # htmx loads the sign-in page as the whole page instead of swapping it into the fragment.
    assert refresh.status_code == 200 and refresh.headers["hx-redirect"] == "/app/sign-in"
    assert refresh.text == "" and refresh.headers["cache-control"] == "no-store"
    navigation = await browser.page("/app/marketplaces")
    assert navigation.status_code == 303 and navigation.headers["location"] == "/app/sign-in?next=%2Fapp%2Fmarketplaces"
    assert "hx-redirect" not in navigation.headers
    await browser.client.aclose()


POLL = {"HX-Request": "true", "X-App-Poll": "1"}


@pytest.mark.parametrize("clock", [FrozenClock()])
async def test_background_polling_does_not_keep_a_session_alive(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    browser = await signed_in(api, await make_person(rt, await make_account(rt)))
    for _ in range(9):  # a tab left open, refreshing itself every 3 s: 27 minutes of polls, no activity
        clock.advance(minutes=3)
        assert (await browser.client.get("/app/marketplaces", headers=POLL)).status_code == 200
    clock.advance(minutes=4)  # 31 minutes after the sign-in, the person's last activity
    ended = await browser.client.get("/app/marketplaces", headers=POLL)
    assert ended.headers.get("hx-redirect") == "/app/sign-in"
    assert (await browser.page("/app/marketplaces")).status_code == 303
    await browser.client.aclose()


@pytest.mark.parametrize("clock", [FrozenClock()])
async def test_a_persons_own_htmx_request_still_counts_as_activity(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    browser = await signed_in(api, await make_person(rt, await make_account(rt)))
    clock.advance(minutes=20)
    assert (await browser.client.get("/app/marketplaces", headers={"HX-Request": "true"})).status_code == 200
    clock.advance(minutes=20)  # 40 minutes after the sign-in, 20 after the last activity
    assert (await browser.page("/app/marketplaces")).status_code == 200
    await browser.client.aclose()


def test_every_self_refreshing_part_says_it_is_a_poll() -> None:
    templates = Path(console_pages.__file__).parent / "templates"
    polling = [
        tag
        for template in templates.glob("*.html")
        for tag in re.findall(r"<[^>]*hx-trigger=\"every [^>]*>", template.read_text())
    ]
    assert len(polling) >= 3  # connections, imports, an import's report
    for tag in polling:
        assert """hx-headers='{"X-App-Poll": "1"}'""" in tag, tag


async def test_a_sign_in_posted_from_another_site_is_refused(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Login CSRF: another site's form would sign the victim in to the attacker's account."""
    user = await make_person(rt, await make_account(rt))
    credentials = {"email": user.email, "password": user.password}
    own = str(api.base_url).rstrip("/")
    for headers in (
        {"Origin": "https://attacker.example"},
        {"Origin": "null"},  # a sandboxed frame or a data: URL
        {"Origin": own.replace("127.0.0.1", "localhost")},  # another host, same port
        {"Referer": "https://attacker.example/login-csrf.html"},
        {"Origin": "https://attacker.example", "Referer": f"{own}/app/sign-in"},  # Origin decides
    ):
        refused = await api.post("/app/sign-in", data=credentials, headers=headers)
        assert refused.status_code == 403, headers
        assert "msc_session" not in refused.headers.get("set-cookie", ""), headers
        assert "own sign-in page" in refused.text and refused.headers["content-type"].startswith("text/html")
    for headers in ({"Origin": own}, {"Referer": f"{own}/app/sign-in"}, {}):
        accepted = await api.post("/app/sign-in", data=credentials, headers=headers)
        assert accepted.status_code == 303 and "msc_session=" in accepted.headers["set-cookie"], headers


@pytest.mark.parametrize("settings_overrides", [{"base_url": "https://app.example.com"}])
async def test_a_sign_in_from_the_configured_base_url_is_accepted_behind_a_proxy(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    user = await make_person(rt, await make_account(rt))
    credentials = {"email": user.email, "password": user.password}
    accepted = await api.post("/app/sign-in", data=credentials, headers={"Origin": "https://app.example.com"})
    assert accepted.status_code == 303
    refused = await api.post("/app/sign-in", data=credentials, headers={"Origin": "https://evil.example.com"})
    assert refused.status_code == 403


async def test_a_sign_in_goes_on_to_the_page_asked_for_and_only_to_an_app_page(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """A link or bookmark to an app page, followed signed out, comes back to that page after the sign-in; the
    `next` of the sign-in is never another site (an open redirect), and a person signed in already goes on."""
    user = await make_person(rt, await make_account(rt))
    asked = await api.get("/app/jobs?status=Failed")
    assert asked.headers["location"] == "/app/sign-in?next=%2Fapp%2Fjobs%3Fstatus%3DFailed"
    form = await api.get(asked.headers["location"])
    assert '<input type="hidden" name="next" value="/app/jobs?status=Failed">' in form.text
    async with httpx.AsyncClient(base_url=api.base_url) as browser:
        signed = await browser.post(
            "/app/sign-in", data={"email": user.email, "password": user.password, "next": "/app/jobs?status=Failed"}
        )
        assert signed.status_code == 303 and signed.headers["location"] == "/app/jobs?status=Failed"
        again = await browser.get("/app/sign-in?next=%2Fapp%2Forders")  # signed in already: on to the page
        assert again.status_code == 303 and again.headers["location"] == "/app/orders"
    for elsewhere in ("https://evil.example/", "//evil.example/app/", "/app//evil.example", "/\\evil.example",
                      "/app/\\evil", "/app/sign-in", "/api/orders/List", "/app/x\ny"):  # fmt: skip
        async with httpx.AsyncClient(base_url=api.base_url) as browser:
            refused = await browser.post(
                "/app/sign-in", data={"email": user.email, "password": user.password, "next": elsewhere}
            )
            assert refused.headers["location"] == "/app/", elsewhere
    empty = await api.post("/app/sign-in", data={"email": "", "password": ""})
    assert empty.status_code == 400 and "Enter your email and your password." in empty.text
