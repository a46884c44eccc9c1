"""Idempotency-Key (DESIGN.md section 4): replay, body mismatch 422, in flight 409, one effect under concurrency."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import httpx
import pytest
from fastapi import FastAPI, Request
from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketsync.auth import service as auth_service
from marketsync.http import idempotency
from marketsync.http.errors import install_error_handlers
from marketsync.http.middleware import RequestContextMiddleware
from marketsync.http.requestid import current_request_id
from marketsync.kit import jsonio
from marketsync.models import Account, IdempotencyRecord
from marketsync.runtime import Runtime
from tests.support.factories import make_account, problem
from tests.support.server import serve


class CreateAccount(BaseModel):
    Name: str


def effect_app(rt: Runtime, account_id: str) -> FastAPI:
    """A write endpoint whose effect (an account row) is easy to count."""
    app = FastAPI()
    install_error_handlers(app)
    app.add_middleware(RequestContextMiddleware, max_body_bytes=10_000)

    @app.post("/api/test/effect")
    async def create(body: CreateAccount, request: Request) -> Response:
        async def work(session: AsyncSession) -> idempotency.Outcome:
            account = await auth_service.create_account(rt, session, body.Name)
            payload = {"AccountId": account.id, "RequestId": current_request_id(), "Warnings": []}
            return idempotency.Outcome(201, jsonio.dumps(payload))

        return await idempotency.run(rt, request, account_id, "test-effect", work)

    return app


@pytest.fixture
async def client(rt: Runtime) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    account_id = await make_account(rt)
    async with serve(effect_app(rt, account_id)) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield http, account_id


async def count_accounts(rt: Runtime, name: str) -> int:
    async with rt.db.read() as session:
        return int((await session.execute(select(func.count()).where(Account.name == name))).scalar_one())


async def test_replay_returns_the_stored_response(rt: Runtime, client: tuple[httpx.AsyncClient, str]) -> None:
    http, _ = client
    headers = {"Idempotency-Key": "key-1"}
    first = await http.post("/api/test/effect", json={"Name": "replayed"}, headers=headers)
    assert first.status_code == 201
    second = await http.post("/api/test/effect", json={"Name": "replayed"}, headers=headers)
    assert second.status_code == 201
    assert second.content == first.content
    assert second.headers["idempotent-replayed"] == "true"
    assert await count_accounts(rt, "replayed") == 1


async def test_same_key_other_body_is_422(rt: Runtime, client: tuple[httpx.AsyncClient, str]) -> None:
    http, _ = client
    headers = {"Idempotency-Key": "key-2"}
    assert (await http.post("/api/test/effect", json={"Name": "a"}, headers=headers)).status_code == 201
    mismatch = await http.post("/api/test/effect", json={"Name": "b"}, headers=headers)
    assert mismatch.status_code == 422
    assert problem(mismatch)["code"] == "idempotency-key-reused"
    assert await count_accounts(rt, "b") == 0


async def test_key_order_of_json_does_not_change_the_fingerprint() -> None:
    assert idempotency.fingerprint("op", b'{"a":1,"b":2}') == idempotency.fingerprint("op", b'{ "b": 2, "a": 1 }')
    assert idempotency.fingerprint("op", b'{"a":1}') != idempotency.fingerprint("other", b'{"a":1}')


async def claim_in_flight(rt: Runtime, account_id: str, key: str, body: bytes, claimed_at: datetime) -> None:
    """A claim as a request still running (or one whose process died) leaves it."""
    async with rt.db.transaction() as session:
        session.add(
            IdempotencyRecord(
                account_id=account_id,
                operation="test-effect",
                key=key,
                fingerprint=idempotency.fingerprint("test-effect", body),
                state="InFlight",
                created_at=claimed_at,
                expires_at=claimed_at + timedelta(hours=24),
            )
        )


async def test_same_key_in_flight_is_409(rt: Runtime, client: tuple[httpx.AsyncClient, str]) -> None:
    http, account_id = client
    await claim_in_flight(rt, account_id, "key-3", b'{"Name":"inflight"}', rt.clock.now())
    response = await http.post("/api/test/effect", json={"Name": "inflight"}, headers={"Idempotency-Key": "key-3"})
    assert response.status_code == 409
    assert problem(response)["code"] == "idempotency-in-flight"
    assert await count_accounts(rt, "inflight") == 0


async def test_abandoned_in_flight_claim_is_taken_over(rt: Runtime, client: tuple[httpx.AsyncClient, str]) -> None:
    http, account_id = client
    then = rt.clock.now() - timedelta(minutes=10)  # the first attempt's process died long ago
    await claim_in_flight(rt, account_id, "key-4", b'{"Name":"retried"}', then)
    response = await http.post("/api/test/effect", json={"Name": "retried"}, headers={"Idempotency-Key": "key-4"})
    assert response.status_code == 201
    assert await count_accounts(rt, "retried") == 1


async def test_failed_request_frees_the_key(rt: Runtime, client: tuple[httpx.AsyncClient, str]) -> None:
    http, _ = client
    await make_account(rt, "taken")
    failing = await http.post("/api/test/effect", json={"Name": "taken"}, headers={"Idempotency-Key": "key-5"})
    assert failing.status_code == 500  # unique name violated: nothing applied
    assert problem(failing)["code"] == "internal-error"
    assert "Traceback" not in failing.text and "IntegrityError" not in failing.text
    async with rt.db.read() as session:
        assert (await session.execute(select(func.count()).select_from(IdempotencyRecord))).scalar_one() == 0


async def test_bad_key_is_400(rt: Runtime, client: tuple[httpx.AsyncClient, str]) -> None:
    http, _ = client
    response = await http.post("/api/test/effect", json={"Name": "x"}, headers={"Idempotency-Key": "k" * 300})
    assert response.status_code == 400
    assert "Idempotency-Key" in problem(response)["errors"]
    # The work ran only to find its own refusals, in a transaction rolled back: nothing applied, nothing claimed.
    assert await count_accounts(rt, "x") == 0
    async with rt.db.read() as session:
        assert (await session.execute(select(func.count()).select_from(IdempotencyRecord))).scalar_one() == 0


async def test_twenty_concurrent_identical_requests_make_one_effect(
    rt: Runtime, client: tuple[httpx.AsyncClient, str]
) -> None:
    http, _ = client
    headers = {"Idempotency-Key": "key-concurrent"}
    responses = await asyncio.gather(
        *(http.post("/api/test/effect", json={"Name": "concurrent"}, headers=headers) for _ in range(20))
    )
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) <= {201, 409}, statuses
    created = [r for r in responses if r.status_code == 201]
    assert created and len({r.json()["AccountId"] for r in created}) == 1
    assert await count_accounts(rt, "concurrent") == 1
