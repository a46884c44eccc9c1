"""The bearer-token lookup on the raw driver (Database.first, docs/decisions/0013): same answers as SQLAlchemy."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from fastapi import APIRouter
from sqlalchemy import bindparam, delete, exists, select, text
from sqlalchemy.exc import DBAPIError

from marketsync.app import create_app
from marketsync.auth import repository
from marketsync.auth.dependencies import InventoryReader, OrdersReader
from marketsync.db import PreparedRead
from marketsync.kit import crypto
from marketsync.models import AccessToken, Account
from marketsync.runtime import Runtime
from tests.support.factories import make_account, make_credential, make_tenant
from tests.support.server import serve

EXPIRES = datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)
ELSEWHERE = timezone(timedelta(hours=-5))


async def make_token_row(rt: Runtime, expires_at: datetime = EXPIRES, scopes: str = "OrdersRead") -> str:
    account_id = await make_account(rt)
    credential = await make_credential(rt, account_id)
    token_hash = crypto.keyed_hash(rt.settings.hash_key, f"mst_{account_id}")
    async with rt.db.transaction() as session:
        session.add(
            AccessToken(
                token_hash=token_hash,
                credential_id=credential.credential_id,
                account_id=account_id,
                scopes=scopes,
                expires_at=expires_at,
                created_at=expires_at - timedelta(hours=1),
            )
        )
    return token_hash


async def through_sqlalchemy(rt: Runtime, token_hash: str, now: datetime) -> tuple[Any, ...] | None:
    async with rt.db.read() as session:
        row = (await session.execute(repository._LIVE_TOKEN.statement, {"token_hash": token_hash, "now": now})).first()
    return None if row is None else tuple(row)


@pytest.mark.parametrize(
    "now",
    [
        EXPIRES - timedelta(hours=1),
        EXPIRES - timedelta(microseconds=1),
        EXPIRES,
        EXPIRES + timedelta(microseconds=1),
        # The same instants in another zone: compared in UTC, as the column stores them.
        (EXPIRES - timedelta(microseconds=1)).astimezone(ELSEWHERE),
        EXPIRES.astimezone(ELSEWHERE),
    ],
)
async def test_expiry_compares_exactly_as_through_sqlalchemy(rt: Runtime, now: datetime) -> None:
    token_hash = await make_token_row(rt)
    found = await repository.find_live_token(rt.db, token_hash, now)
    assert found == await through_sqlalchemy(rt, token_hash, now)
    assert (found is not None) == (now < EXPIRES)


async def test_unknown_token_is_none(rt: Runtime) -> None:
    assert await repository.find_live_token(rt.db, "0" * 64, EXPIRES) is None


async def test_a_deleted_token_fails_on_the_next_lookup(rt: Runtime) -> None:
    token_hash = await make_token_row(rt)
    now = EXPIRES - timedelta(minutes=1)
    assert await repository.find_live_token(rt.db, token_hash, now) is not None
    async with rt.db.transaction() as session:
        await session.execute(delete(AccessToken).where(AccessToken.token_hash == token_hash))
    assert await repository.find_live_token(rt.db, token_hash, now) is None


async def test_a_driver_failure_falls_back_to_the_sqlalchemy_path(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    token_hash = await make_token_row(rt)
    now = EXPIRES - timedelta(minutes=1)
    expected = await repository.find_live_token(rt.db, token_hash, now)
    assert expected is not None

    if rt.db.is_sqlite:

        def locked() -> sqlite3.Connection:
            raise sqlite3.OperationalError("database is locked")

        monkeypatch.setattr(rt.db.fast._sqlite_prepared, "connection", locked)
    else:

        async def dropped(sql: str, arguments: Any) -> Any:
            raise ConnectionResetError("connection was closed in the middle of operation")

        monkeypatch.setattr(rt.db.fast._postgres_prepared, "fetch_row", dropped)
    assert await repository.find_live_token(rt.db, token_hash, now) == expected


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_lookups_recover_after_the_server_drops_every_connection(rt: Runtime) -> None:
    token_hash = await make_token_row(rt)
    now = EXPIRES - timedelta(minutes=1)
    expected = await repository.find_live_token(rt.db, token_hash, now)
    async with rt.db.engine.connect() as admin:
        await admin.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    # The kept connection is replaced at once; SQLAlchemy's pool may fail one checkout, as it always has.
    try:
        first = await repository.find_live_token(rt.db, token_hash, now)
    except DBAPIError:
        first = expected
    assert first == expected
    assert await repository.find_live_token(rt.db, token_hash, now) == expected
    assert await repository.find_live_token(rt.db, token_hash, now) == expected


async def test_prepared_read_refuses_expanding_parameters(rt: Runtime) -> None:
    prepared = PreparedRead(
        select(AccessToken.scopes).where(AccessToken.token_hash.in_(bindparam("hashes", expanding=True)))
    )
    with pytest.raises(ValueError, match="positional"):
        await rt.db.first(prepared, {"hashes": ["a"]})


async def test_prepared_read_binds_values_written_into_the_statement(rt: Runtime) -> None:
    account_id = await make_account(rt, name="constant-name")
    prepared = PreparedRead(
        select(exists().where(Account.name == "constant-name", Account.id == bindparam("account_id")))
    )
    assert await rt.db.first(prepared, {"account_id": account_id}) == (True,)
    assert await rt.db.first(prepared, {"account_id": "someone-else"}) == (False,)


async def test_two_scopes_on_one_route_spend_one_request_of_budget(rt: Runtime) -> None:
    router = APIRouter()

    @router.get("/api/test/two-scopes")
    async def two_scopes(reader: OrdersReader, inventory: InventoryReader) -> dict[str, str]:
        assert reader is inventory
        return {"account": reader.account_id}

    app = create_app(rt)
    app.include_router(router)
    async with serve(app) as base_url, httpx.AsyncClient(base_url=base_url) as api:
        tenant = await make_tenant(rt, api)
        for remaining in (99_999, 99_998):
            response = await api.get("/api/test/two-scopes", headers=tenant.headers)
            assert response.status_code == 200, response.text
            assert response.headers["ratelimit"].startswith(f'"credential";r={remaining};')
