"""An Owner manages the account's people in the app: add one (a generated password shown once), give one a new
password, remove one (every browser of theirs signed out at once); never oneself, never the last Owner. Staff see
none of it."""

from __future__ import annotations

import re

import httpx
import pytest

from marketsync.http.errors import Conflict
from marketsync.people import repository as people_repository
from marketsync.people import service as people
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.support.factories import make_account

PAGE = "/app/people"
_PASSWORD = re.compile(r'id="person-password">([^<]+)<')


async def _sign_in(api: httpx.AsyncClient, email: str, password: str) -> int:
    async with httpx.AsyncClient(base_url=api.base_url) as client:
        response = await client.post("/app/sign-in", data={"email": email, "password": password})
        return response.status_code


def _user_id(page: httpx.Response, email: str) -> str:
    found = re.search(r'<tr id="person-([0-9A-Z]+)">\s*<td[^>]*>' + re.escape(email), page.text)
    assert found is not None, page.text[:2000]
    return found.group(1)


async def test_an_owner_adds_a_person_whose_password_is_shown_once(rt: Runtime, api: httpx.AsyncClient) -> None:
    account_id = await make_account(rt)
    owner = await signed_in(api, await make_person(rt, account_id))
    listed = await owner.page(PAGE)
    assert listed.status_code == 200 and 'href="/app/people"' in listed.text and owner.email in listed.text

    refused = await owner.post(PAGE, {"email": "not an email", "role": "Boss"}, csrf_from=PAGE)
    assert refused.status_code == 400 and 'id="error-Email"' in refused.text and 'id="error-Role"' in refused.text
    assert 'value="not an email"' in refused.text
    taken = await owner.post(PAGE, {"email": owner.email.upper(), "role": "Staff"}, csrf_from=PAGE)
    assert taken.status_code == 400 and "already exists" in taken.text

    posted = await owner.post(PAGE, {"email": "Packer@Example.com", "role": "Staff"}, csrf_from=PAGE)
    assert posted.status_code == 303, posted.text  # post/redirect/get (decision 0401)
    added = await owner.page(posted.headers["location"])
    found = _PASSWORD.search(added.text)
    assert found is not None
    password = found.group(1)
    assert password not in (await owner.page(PAGE)).text  # shown this once
    assert await _sign_in(api, "packer@example.com", password) == 303
    staff = await signed_in(api, people.NewUser("", "packer@example.com", password, people.Role.STAFF))
    assert 'href="/app/people"' not in (await staff.page("/app/marketplaces")).text
    assert (await staff.page(PAGE)).status_code == 403
    assert (await staff.post(PAGE, {"email": "not-added-by-staff@example.com", "role": "Owner"})).status_code == 403
    forged = await owner.client.post(
        PAGE, data={"csrf": "forged", "email": "not-added-forged@example.com", "role": "Staff"}
    )
    assert forged.status_code == 403
    assert (
        "not-added-by-staff@example.com" not in (await owner.page(PAGE)).text
        and "not-added-forged@example.com" not in (await owner.page(PAGE)).text
    )
    await staff.client.aclose()
    await owner.client.aclose()


async def test_a_new_password_signs_the_person_out_and_the_old_one_stops_working(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    owner = await signed_in(api, await make_person(rt, account_id))
    staff_user = await make_person(rt, account_id, "Staff")
    staff = await signed_in(api, staff_user)
    user_id = _user_id(await owner.page(PAGE), staff_user.email)
    posted = await owner.post(f"{PAGE}/{user_id}/password", csrf_from=PAGE)
    assert posted.status_code == 303  # post/redirect/get (decision 0401)
    replaced = await owner.page(posted.headers["location"])
    found = _PASSWORD.search(replaced.text)
    assert replaced.status_code == 200 and found is not None
    assert (await staff.page("/app/marketplaces")).status_code == 303  # signed out at once
    assert await _sign_in(api, staff_user.email, staff_user.password) == 401
    assert await _sign_in(api, staff_user.email, found.group(1)) == 303
    await staff.client.aclose()
    await owner.client.aclose()


async def test_a_removed_person_is_signed_out_at_once_and_an_owner_never_removes_themselves(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    owner_user = await make_person(rt, account_id)
    owner = await signed_in(api, owner_user)
    staff_user = await make_person(rt, account_id, "Staff")
    staff = await signed_in(api, staff_user)
    page = await owner.page(PAGE)
    staff_id, owner_id = _user_id(page, staff_user.email), _user_id(page, owner_user.email)
    assert f'action="/app/people/{owner_id}/remove"' not in page.text  # no Remove beside oneself

    removed = await owner.post(f"{PAGE}/{staff_id}/remove", csrf_from=PAGE)
    assert removed.status_code == 303 and removed.headers["location"] == "/app/people?removed=1"
    assert 'id="notice"' in (await owner.page(removed.headers["location"])).text
    assert staff_user.email not in (await owner.page(PAGE)).text
    assert (await staff.page("/app/marketplaces")).status_code == 303  # their browser is signed out
    assert await _sign_in(api, staff_user.email, staff_user.password) == 401

    itself = await owner.post(f"{PAGE}/{owner_id}/remove", csrf_from=PAGE)
    assert itself.status_code == 409 and "You cannot remove yourself" in itself.text
    assert (await owner.page(PAGE)).status_code == 200
    stranger = await signed_in(api, await make_person(rt, await make_account(rt)))
    assert (await stranger.post(f"{PAGE}/{owner_id}/remove", csrf_from=PAGE)).status_code == 404
    assert (await stranger.post(f"{PAGE}/{owner_id}/password", csrf_from=PAGE)).status_code == 404
    for browser in (staff, owner, stranger):
        await browser.client.aclose()


async def test_a_request_of_an_owner_removed_meanwhile_changes_nothing(rt: Runtime) -> None:
    """The Owners are read locked and the acting one must still be among them: a request that passed its sign-in
    check while another Owner removed (or never made) its person changes nothing."""
    account_id = await make_account(rt)
    owner = await make_person(rt, account_id)
    staff = await make_person(rt, account_id, "Staff")
    async with rt.db.transaction() as session:
        with pytest.raises(Conflict, match="no longer an Owner"):
            await people.remove_user(session, account_id, owner.user_id, by=staff.user_id)
        with pytest.raises(Conflict, match="no longer an Owner"):
            await people.new_password(rt, session, account_id, owner.user_id, by=staff.user_id)
        with pytest.raises(Conflict, match="cannot remove yourself"):
            await people.remove_user(session, account_id, owner.user_id, by=owner.user_id)
    async with rt.db.read() as session:
        assert {user.email for user in await people.list_people(session, account_id)} == {owner.email, staff.email}


async def test_a_sign_in_whose_password_was_replaced_while_it_was_checked_opens_no_session(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashing takes a moment: a password replaced in it must not let the old one open a 12-hour session."""
    account_id = await make_account(rt)
    staff = await make_person(rt, account_id, "Staff")
    async with rt.db.read() as session:
        before = await people_repository.user_by_email(session, staff.email)  # what the sign-in read first
    owner = await make_person(rt, account_id)
    async with rt.db.transaction() as session:
        await people.new_password(rt, session, account_id, staff.user_id, by=owner.user_id)

    async def stale_read(_session: object, _email: str) -> object:
        return before

    monkeypatch.setattr(people_repository, "user_by_email", stale_read)
    with pytest.raises(people.SignInRefused):
        await people.sign_in(rt, staff.email, staff.password, "test")
