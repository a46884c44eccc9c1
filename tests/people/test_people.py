"""People of an account: created by the operator (`admin user create`) or the demo, passwords kept as argon2id."""

from __future__ import annotations

import subprocess
import sys

import httpx
import orjson
import pytest
from sqlalchemy import select

from marketsync.http.errors import ValidationFailed
from marketsync.models.people import AppUser
from marketsync.people import service as people
from marketsync.runtime import Runtime
from tests.support.factories import make_account
from tests.support.processes import REPO_ROOT, process_env


async def test_passwords_are_stored_as_argon2id_only(rt: Runtime) -> None:
    account_id = await make_account(rt)
    async with rt.db.transaction() as session:
        created = await people.create_user(rt, session, account_id, "Ops@Example.com", "Owner")
    async with rt.db.read() as session:
        row = (await session.execute(select(AppUser).where(AppUser.id == created.user_id))).scalar_one()
    assert row.email == "ops@example.com"
    assert row.password_hash.startswith("$argon2id$") and created.password not in row.password_hash


async def test_bad_fields_are_named_together_and_emails_are_unique(rt: Runtime) -> None:
    account_id = await make_account(rt)
    with pytest.raises(ValidationFailed) as bad:
        async with rt.db.transaction() as session:
            await people.create_user(rt, session, account_id, "not-an-email", "Boss")
    assert set(bad.value.errors) == {"Email", "Role"}
    async with rt.db.transaction() as session:
        await people.create_user(rt, session, account_id, "one@example.com", "Staff")
    with pytest.raises(ValidationFailed) as taken:
        async with rt.db.transaction() as session:
            await people.create_user(rt, session, account_id, "ONE@example.com", "Owner")
    assert set(taken.value.errors) == {"Email"}


async def test_admin_user_create_prints_a_password_that_signs_in(rt: Runtime, api: httpx.AsyncClient) -> None:
    account_id = await make_account(rt)
    done = subprocess.run(
        [sys.executable, "-m", "marketsync", "admin", "user", "create", "--account", account_id,
         "--email", "staff@example.com", "--role", "Staff", "--json"],
        cwd=REPO_ROOT, env=process_env(rt), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = orjson.loads(done.stdout)
    assert set(printed) == {"UserId", "Email", "Password", "Role"} and printed["Role"] == "Staff"
    response = await api.post("/app/sign-in", data={"email": printed["Email"], "password": printed["Password"]})
    assert response.status_code == 303


async def test_the_demo_prints_an_owner_of_the_demo_account(rt: Runtime, api: httpx.AsyncClient) -> None:
    from marketsync.demo import run_demo

    first, second = await run_demo(rt), await run_demo(rt)
    assert first["AppUser"]["Role"] == "Owner" and first["AppUser"]["Email"] == second["AppUser"]["Email"]
    assert first["AppUser"]["Password"] != second["AppUser"]["Password"]  # a new one each run, like the secret
    stale = await api.post(
        "/app/sign-in", data={"email": first["AppUser"]["Email"], "password": first["AppUser"]["Password"]}
    )
    assert stale.status_code == 401
    fresh = await api.post(
        "/app/sign-in", data={"email": second["AppUser"]["Email"], "password": second["AppUser"]["Password"]}
    )
    assert fresh.status_code == 303
