"""Idempotency-Key for write endpoints (DESIGN.md section 4), as one reusable piece.

Scope: (account, operation, key). The body's fingerprint is stored with the outcome for 24 hours.
- same key, same body, finished: the stored response is replayed (header Idempotent-Replayed: true);
- same key, another body: 422 idempotency-key-reused;
- same key while the first request is still running: 409 idempotency-in-flight.
The claim is committed before the work starts, so concurrent duplicates race on the primary key and
exactly one performs the effect. The stored response is written in the work's own transaction, so a
crash leaves either nothing (the claim expires after IN_FLIGHT_TIMEOUT) or the complete outcome.

A key that cannot be one (empty, over 255 characters, unprintable) is one more bad field of the request: nothing
is claimed or applied, and the one 400 names `Idempotency-Key` beside every problem of the body
(docs/decisions/0344).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NoReturn

import orjson
from fastapi import Request
from sqlalchemy import ColumnElement, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketsync.http.errors import IdempotencyInFlight, IdempotencyMismatch, ValidationFailed, merged_errors
from marketsync.models import IdempotencyRecord
from marketsync.runtime import Runtime

HEADER = "Idempotency-Key"
KEY_PROBLEM = "Must be 1 to 255 printable characters."
RETENTION = timedelta(hours=24)
IN_FLIGHT_TIMEOUT = timedelta(minutes=2)


@dataclass(frozen=True)
class Outcome:
    """What the work produced: the response to send, and (if different) the one to store for replays."""

    status: int
    body: bytes
    stored_body: bytes | None = None
    media_type: str = "application/json"


def fingerprint(operation: str, raw_body: bytes) -> str:
    try:
        canonical = orjson.dumps(orjson.loads(raw_body or b"null"), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        canonical = raw_body
    return hashlib.sha256(operation.encode() + b"\0" + canonical).hexdigest()


def _usable(key: str) -> bool:
    return 1 <= len(key) <= 255 and key.isprintable()


def key_problems(request: Request) -> dict[str, list[str]]:
    """`{"Idempotency-Key": [...]}` when the request's key cannot be one, else `{}`: for an operation that checks
    its body inside its work, to name the key among the body's problems and refuse before applying anything."""
    key = request.headers.get(HEADER)
    return {} if key is None or _usable(key) else {HEADER: [KEY_PROBLEM]}


async def run(
    rt: Runtime,
    request: Request,
    account_id: str,
    operation: str,
    work: Callable[[AsyncSession], Awaitable[Outcome]],
    prepare: Callable[[], Awaitable[None]] | None = None,
) -> Response:
    """Run `work` in one write transaction, at most once per Idempotency-Key.

    `prepare` runs before `work`, outside any transaction (checks that do network I/O, such as resolving a
    host; a create's read-only validation), and only once the key is known not to be a replay: a replay answers the
    stored response whatever `prepare` would say now. If it raises, nothing was applied and the key is freed.

    An unusable key is refused by `_refuse_unusable_key`, in one 400 with the request's other problems.
    """
    key = request.headers.get(HEADER)
    if key is not None and not _usable(key):
        await _refuse_unusable_key(rt, work, prepare)
    if key is None:
        if prepare is not None:
            await prepare()
        async with rt.db.transaction() as session:
            outcome = await work(session)
        return Response(outcome.body, status_code=outcome.status, media_type=outcome.media_type)

    digest = fingerprint(operation, await request.body())
    replay = await _claim(rt, account_id, operation, key, digest)
    if replay is not None:
        return replay
    try:
        if prepare is not None:
            await prepare()
        async with rt.db.transaction() as session:
            outcome = await work(session)
            await _store(rt, session, account_id, operation, key, outcome)
    except BaseException:
        await _free(rt, account_id, operation, key)
        raise
    return Response(outcome.body, status_code=outcome.status, media_type=outcome.media_type)


async def run_once(
    rt: Runtime,
    account_id: str,
    operation: str,
    key: str,
    raw_body: bytes,
    work: Callable[[AsyncSession], Awaitable[Outcome]],
) -> tuple[Outcome, bool]:
    """`run` for a caller that is not one of the API's requests: the app's forms, whose token (made when the form was
    shown) is the key, so a double submit applies the change once (docs/decisions/0437-order-actions-in-the-app.md).
    Returns the outcome and whether it is a replay of the first one. A usable key is the caller's to make."""
    assert _usable(key), "made by the caller"
    digest = fingerprint(operation, raw_body)
    replay = await _claim(rt, account_id, operation, key, digest)
    if replay is not None:
        return Outcome(replay.status_code, bytes(replay.body)), True
    try:
        async with rt.db.transaction() as session:
            outcome = await work(session)
            await _store(rt, session, account_id, operation, key, outcome)
    except BaseException:
        await _free(rt, account_id, operation, key)
        raise
    return outcome, False


async def stored_response(rt: Runtime, account_id: str, operation: str, key: str) -> bytes | None:
    """The response kept for a finished operation under a key (what the app's page after the change shows), or
    None."""
    async with rt.db.read() as session:
        record = (
            await session.execute(select(IdempotencyRecord).where(*_identity(account_id, operation, key)))
        ).scalar_one_or_none()
    if record is None or record.state != "Done":
        return None
    return record.response_body


Store = Callable[[AsyncSession, Outcome], Awaitable[None]]


async def run_committed(
    rt: Runtime, request: Request, account_id: str, operation: str, work: Callable[[Store], Awaitable[Outcome]]
) -> Response:
    """`run` for an operation that owns its transactions (the push: docs/decisions/0240 and 0410), under the
    request's Idempotency-Key, which the caller checked is a usable one (`key_problems`, named with the body's).

    `work(store)` commits by itself and calls `store(session, outcome)` inside the transaction it commits, so the
    stored answer commits with the effect, as in `run`; it returns the outcome of that transaction."""
    key = request.headers.get(HEADER)
    assert key is not None and _usable(key), "checked by the caller with key_problems"
    digest = fingerprint(operation, await request.body())
    replay = await _claim(rt, account_id, operation, key, digest)
    if replay is not None:
        return replay

    async def store(session: AsyncSession, outcome: Outcome) -> None:
        await _store(rt, session, account_id, operation, key, outcome)

    try:
        outcome = await work(store)
    except BaseException:
        await _free(rt, account_id, operation, key)
        raise
    return Response(outcome.body, status_code=outcome.status, media_type=outcome.media_type)


async def _store(
    rt: Runtime, session: AsyncSession, account_id: str, operation: str, key: str, outcome: Outcome
) -> None:
    """The outcome, kept for replays, in the work's own transaction."""
    await session.execute(
        update(IdempotencyRecord)
        .where(*_identity(account_id, operation, key))
        .values(
            state="Done",
            response_status=outcome.status,
            response_body=outcome.stored_body if outcome.stored_body is not None else outcome.body,
            expires_at=rt.clock.now() + RETENTION,
        )
    )


async def _free(rt: Runtime, account_id: str, operation: str, key: str) -> None:
    """Nothing was applied: free the key so the caller may retry it."""
    async with rt.db.transaction() as session:
        await session.execute(
            delete(IdempotencyRecord).where(
                *_identity(account_id, operation, key), IdempotencyRecord.state == "InFlight"
            )
        )


async def _refuse_unusable_key(
    rt: Runtime,
    work: Callable[[AsyncSession], Awaitable[Outcome]],
    prepare: Callable[[], Awaitable[None]] | None,
) -> NoReturn:
    """No replay can be looked up under a key that cannot be one, and nothing may be applied; the request is still
    checked whole, so that its 400 names the key beside every other bad field. The checks are `prepare` when the
    operation has one; otherwise its work's own, which validates everything before applying, in a transaction rolled
    back whatever the work did. An operation whose checks would answer 404 alone, or check inside the work, is given
    `key_problems` to name among its own (spec section 7: the 400 then names the unknown id too), so it refuses
    before applying anything; this is the guard for the others."""
    problems = {HEADER: [KEY_PROBLEM]}
    try:
        if prepare is not None:
            await prepare()
        else:
            async with rt.db.transaction() as session:
                await work(session)
                raise ValidationFailed(errors=problems)  # rolls back whatever the work applied
    except ValidationFailed as exc:
        raise ValidationFailed(exc.title, errors=merged_errors(problems, exc.errors)) from None
    raise ValidationFailed(errors=problems)


def _identity(account_id: str, operation: str, key: str) -> tuple[ColumnElement[bool], ...]:
    return (
        IdempotencyRecord.account_id == account_id,
        IdempotencyRecord.operation == operation,
        IdempotencyRecord.key == key,
    )


async def _claim(rt: Runtime, account_id: str, operation: str, key: str, digest: str) -> Response | None:
    for _ in range(3):
        now = rt.clock.now()
        try:
            async with rt.db.transaction() as session:
                existing = (
                    await session.execute(select(IdempotencyRecord).where(*_identity(account_id, operation, key)))
                ).scalar_one_or_none()
                if existing is not None:
                    stale = existing.expires_at <= now or (
                        existing.state == "InFlight" and existing.created_at <= now - IN_FLIGHT_TIMEOUT
                    )
                    if not stale:
                        return _answer_existing(existing, digest)
                    await session.delete(existing)
                    await session.flush()
                session.add(
                    IdempotencyRecord(
                        account_id=account_id,
                        operation=operation,
                        key=key,
                        fingerprint=digest,
                        state="InFlight",
                        created_at=now,
                        expires_at=now + RETENTION,
                    )
                )
            return None
        except IntegrityError:
            continue  # a concurrent duplicate claimed it first: read its state
    raise IdempotencyInFlight()


def _answer_existing(record: IdempotencyRecord, digest: str) -> Response:
    if record.fingerprint != digest:
        raise IdempotencyMismatch()
    if record.state != "Done" or record.response_status is None:
        raise IdempotencyInFlight()
    return Response(
        record.response_body or b"",
        status_code=record.response_status,
        media_type="application/json",
        headers={"Idempotent-Replayed": "true"},
    )


async def delete_expired(session: AsyncSession, now: datetime) -> int:
    result = await session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.expires_at <= now))
    return int(getattr(result, "rowcount", 0) or 0)
