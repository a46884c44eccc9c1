"""The credential read of every request on the raw driver (Database.first, docs/decisions/0013 and 0250): the same
answers as through SQLAlchemy, datetimes compared exactly, failures falling back."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from fastapi import APIRouter
from sqlalchemy import bindparam, delete, exists, select, text, update
from sqlalchemy.exc import DBAPIError

from marketsync.app import create_app
from marketsync.auth import repository, service, tokens
from marketsync.auth.dependencies import InventoryReader, OrdersReader
from marketsync.db import PreparedRead
from marketsync.models import Account, Credential
from marketsync.runtime import Runtime
from tests.support.factories import make_account, make_credential, make_tenant
from tests.support.server import serve

CREATED = datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)
ELSEWHERE = timezone(timedelta(hours=-5))
# A datetime bound on the raw driver compares exactly as through SQLAlchemy (a UTCDateTime binds as naive UTC).
_CREATED_BEFORE = PreparedRead(
    select(Credential.id).where(Credential.id == bindparam("credential_id"), Credential.created_at < bindparam("now"))
)


async def make_credential_row(rt: Runtime, created_at: datetime = CREATED) -> str:
    account_id = await make_account(rt)
    credential = await make_credential(rt, account_id, ["OrdersRead"])
    async with rt.db.transaction() as session:
        await session.execute(
            update(Credential).where(Credential.id == credential.credential_id).values(created_at=created_at)
        )
    return credential.credential_id


async def through_sqlalchemy(rt: Runtime, credential_id: str) -> tuple[Any, ...] | None:
    """(account_id, scopes, rotated_at and previous_secret_expires_at in whole unix seconds) of the credential."""
    async with rt.db.read() as session:
        query = select(
            Credential.account_id, Credential.scopes, Credential.rotated_at, Credential.previous_secret_expires_at
        ).where(Credential.id == credential_id)
        row = (await session.execute(query)).first()
    if row is None:
        return None
    account_id, scopes, rotated_at, until = row
    return (account_id, scopes, *(None if at is None else int(at.timestamp()) for at in (rotated_at, until)))


@pytest.mark.parametrize(
    "now",
    [
        CREATED - timedelta(hours=1),
        CREATED - timedelta(microseconds=1),
        CREATED,
        CREATED + timedelta(microseconds=1),
        # The same instants in another zone: compared in UTC, as the column stores them.
        (CREATED - timedelta(microseconds=1)).astimezone(ELSEWHERE),
        CREATED.astimezone(ELSEWHERE),
    ],
)
async def test_datetimes_compare_exactly_as_through_sqlalchemy(rt: Runtime, now: datetime) -> None:
    credential_id = await make_credential_row(rt)
    found = await rt.db.first(_CREATED_BEFORE, {"credential_id": credential_id, "now": now})
    async with rt.db.read() as session:
        expected = (
            await session.execute(_CREATED_BEFORE.statement, {"credential_id": credential_id, "now": now})
        ).first()
    assert found == (None if expected is None else tuple(expected))
    assert (found is not None) == (now > CREATED)


async def test_the_credential_read_answers_as_through_sqlalchemy(rt: Runtime) -> None:
    credential_id = await make_credential_row(rt)
    found = await repository.find_credential(rt.db, credential_id)
    assert found is not None and found[1] == "OrdersRead"
    assert found == await through_sqlalchemy(rt, credential_id)
    assert await repository.find_credential(rt.db, "0" * 26) is None
    # A rotation's times, as whole unix seconds on both backends (decision 0432).
    async with rt.db.transaction() as session:
        credential = await session.get(Credential, credential_id)
        assert credential is not None
        credential.rotated_at = datetime(2026, 3, 10, 12, 0, 5, 900_000, tzinfo=UTC)
        credential.previous_secret_expires_at = datetime(2026, 3, 11, 12, 0, 5, 900_000, tzinfo=UTC)
    rotated = await repository.find_credential(rt.db, credential_id)
    assert rotated is not None and rotated[2:] == (1773144005, 1773230405)
    assert rotated == await through_sqlalchemy(rt, credential_id)


async def test_a_deleted_credential_fails_on_the_next_request(rt: Runtime) -> None:
    account_id = await make_account(rt)
    credential = await make_credential(rt, account_id, ["OrdersRead"])
    issued = await service.issue_token(rt, credential.client_id, credential.client_secret, None)
    assert await service.authenticate(rt, issued.access_token) is not None
    async with rt.db.transaction() as session:
        await service.delete_credential(session, account_id, credential.credential_id)
    assert await service.authenticate(rt, issued.access_token) is None


async def test_tokens_are_authentic_or_nothing(rt: Runtime) -> None:
    """A token is its signature: any change, another key, or a token past its expiry is refused."""
    account_id = await make_account(rt)
    credential = await make_credential(rt, account_id, ["OrdersRead", "InventoryRead"])
    issued = await service.issue_token(rt, credential.client_id, credential.client_secret, "InventoryRead")
    caller = await service.authenticate(rt, issued.access_token)
    assert caller is not None and caller.scopes == frozenset({"InventoryRead"})
    assert caller.account_id == account_id and caller.credential_id == credential.credential_id
    key = tokens.signing_key(rt.settings.hash_key)
    claims = tokens.verify(key, issued.access_token, rt.clock.now().timestamp())
    assert claims is not None
    # Every character flipped in turn, the token cut short or lengthened, another key: all refused.
    token = issued.access_token
    for position in range(len(tokens.PREFIX), len(token)):
        flipped = "A" if token[position] != "A" else "B"
        assert tokens.verify(key, token[:position] + flipped + token[position + 1 :], 0) is None, position
    assert tokens.verify(key, token[:-1], 0) is None
    assert tokens.verify(key, token + "A", 0) is None
    assert tokens.verify(tokens.signing_key(b"another key" * 3), token, 0) is None
    assert tokens.verify(key, token, claims.expires_at) is None
    assert tokens.verify(key, token, claims.expires_at - 1) == claims
    # Two tokens for the same request differ (a nonce), so one leaked token says nothing of the next.
    again = await service.issue_token(rt, credential.client_id, credential.client_secret, "InventoryRead")
    assert again.access_token != issued.access_token


async def test_a_driver_failure_falls_back_to_the_sqlalchemy_path(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    credential_id = await make_credential_row(rt)
    expected = await repository.find_credential(rt.db, credential_id)
    assert expected is not None

    if rt.db.is_sqlite:

        def locked() -> sqlite3.Connection:
            raise sqlite3.OperationalError("database is locked")

        monkeypatch.setattr(rt.db.fast._sqlite_prepared, "connection", locked)
    else:

        async def dropped(sql: str, arguments: Any) -> Any:
            raise ConnectionResetError("connection was closed in the middle of operation")

        monkeypatch.setattr(rt.db.fast._postgres_prepared, "fetch_row", dropped)
    assert await repository.find_credential(rt.db, credential_id) == expected


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_lookups_recover_after_the_server_drops_every_connection(rt: Runtime) -> None:
    credential_id = await make_credential_row(rt)
    expected = await repository.find_credential(rt.db, credential_id)
    async with rt.db.engine.connect() as admin:
        await admin.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    # The kept connection is replaced at once; SQLAlchemy's pool may fail one checkout, as it always has.
    try:
        first = await repository.find_credential(rt.db, credential_id)
    except DBAPIError:
        first = expected
    assert first == expected
    assert await repository.find_credential(rt.db, credential_id) == expected
    assert await repository.find_credential(rt.db, credential_id) == expected


async def test_prepared_read_refuses_expanding_parameters(rt: Runtime) -> None:
    prepared = PreparedRead(select(Credential.scopes).where(Credential.id.in_(bindparam("ids", expanding=True))))
    with pytest.raises(ValueError, match="positional"):
        await rt.db.first(prepared, {"ids": ["a"]})


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


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_concurrent_credential_reads_share_round_trips(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookups that arrive while a read is in flight go together in the next one: fewer round trips, each lookup
    answered with its own row, and a credential deleted before a lookup began is gone for it."""
    credential_ids = [await make_credential_row(rt) for _ in range(4)]
    expected = [await through_sqlalchemy(rt, credential_id) for credential_id in credential_ids]
    connections = rt.db.fast._postgres_prepared
    assert connections is not None
    trips = 0
    opened = connections.connection

    def counted() -> Any:
        nonlocal trips
        trips += 1
        return opened()

    monkeypatch.setattr(connections, "connection", counted)
    lookups = [*credential_ids * 10, "0" * 26]
    found = await asyncio.gather(*(repository.find_credential(rt.db, key) for key in lookups))
    assert found == [*expected * 10, None]
    assert trips < len(lookups) // 4
    async with rt.db.transaction() as session:
        await session.execute(delete(Credential).where(Credential.id == credential_ids[0]))
    again = await asyncio.gather(*(repository.find_credential(rt.db, key) for key in credential_ids))
    assert again == [None, *expected[1:]]


def test_a_token_is_signed_with_hmac_sha256() -> None:
    """The MAC is HMAC-SHA256 truncated to 128 bits, as when tokens were signed through `hmac.new`: tokens issued
    before the precomputed pads still verify, whatever the key's length."""
    for key in (tokens.signing_key(b"k" * 32), b"short", b"x" * 64, b"longer than a block" * 5):
        token = tokens.issue(key, "0" * 26, ["OrdersRead"], 2_000_000_000)
        raw = base64.urlsafe_b64decode(token[len(tokens.PREFIX) :])
        body, mac = raw[:-16], raw[-16:]
        assert mac == hmac.new(key, body, hashlib.sha256).digest()[:16]
        assert tokens.verify(key, token, 0) == tokens.TokenClaims("0" * 26, frozenset({"OrdersRead"}), 2_000_000_000)
