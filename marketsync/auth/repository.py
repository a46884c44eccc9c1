"""All credential and token queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import Database, KeyedRead
from marketsync.models import Account, Credential


async def get_account(session: AsyncSession, account_id: str) -> Account | None:
    return await session.get(Account, account_id)


async def get_account_by_name(session: AsyncSession, name: str) -> Account | None:
    result = await session.execute(select(Account).where(Account.name == name))
    return result.scalar_one_or_none()


async def get_credential(session: AsyncSession, account_id: str, credential_id: str) -> Credential | None:
    result = await session.execute(
        select(Credential).where(Credential.id == credential_id, Credential.account_id == account_id)
    )
    return result.scalar_one_or_none()


async def delete_credential(session: AsyncSession, credential: Credential) -> None:
    await session.delete(credential)


@dataclass(frozen=True, slots=True)
class TokenCredential:
    credential_id: str
    secret_hash: str
    scopes: str
    # A rotation's previous secret, and when it stops (unix seconds): docs/decisions/0432.
    previous_secret_hash: str | None
    previous_until_s: int | None


# Built and compiled once, run on the raw driver (docs/decisions/0013): the token endpoint's one read, and the read of
# every API request. A rotation's times come as whole unix seconds (storage is naive UTC).
_CREDENTIAL_BY_CLIENT_ID = KeyedRead(
    "SELECT client_id, id, secret_hash, scopes, previous_secret_hash,"
    " CAST(strftime('%s', previous_secret_expires_at) AS INTEGER)"
    " FROM credentials WHERE client_id = ?",
    "SELECT client_id, id, secret_hash, scopes, previous_secret_hash,"
    " CAST(FLOOR(EXTRACT(EPOCH FROM previous_secret_expires_at)) AS BIGINT)"
    " FROM credentials WHERE client_id = ANY($1::varchar[])",
)
_CREDENTIAL_BY_ID = KeyedRead(
    "SELECT id, account_id, scopes, CAST(strftime('%s', rotated_at) AS INTEGER),"
    " CAST(strftime('%s', previous_secret_expires_at) AS INTEGER)"
    " FROM credentials WHERE id = ?",
    "SELECT id, account_id, scopes, CAST(FLOOR(EXTRACT(EPOCH FROM rotated_at)) AS BIGINT),"
    " CAST(FLOOR(EXTRACT(EPOCH FROM previous_secret_expires_at)) AS BIGINT)"
    " FROM credentials WHERE id = ANY($1::varchar[])",
)


async def find_credential_for_token(db: Database, client_id: str) -> TokenCredential | None:
    rows = await db.rows_by_key(_CREDENTIAL_BY_CLIENT_ID, client_id)
    return TokenCredential(*rows[0][1:]) if rows else None


async def find_credential(db: Database, credential_id: str) -> tuple[Any, ...] | None:
    """(account_id, scopes, rotated_s, previous_until_s) of a credential that still exists, read at every request."""
    rows = await db.rows_by_key(_CREDENTIAL_BY_ID, credential_id)
    return rows[0][1:] if rows else None


async def credentials_of(session: AsyncSession, account_id: str) -> list[Credential]:
    query = select(Credential).where(Credential.account_id == account_id).order_by(Credential.created_at)
    return list((await session.execute(query)).scalars())


async def mark_used(session: AsyncSession, credential_id: str, hour: datetime) -> None:
    """last_used_at moves forward only: processes flush their notes in any order."""
    await session.execute(
        update(Credential)
        .where(
            Credential.id == credential_id,
            or_(Credential.last_used_at.is_(None), Credential.last_used_at < hour),
        )
        .values(last_used_at=hour)
    )
