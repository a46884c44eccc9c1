"""All credential and token queries."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import Database, PreparedRead
from marketsync.models import AccessToken, Account, Credential


async def get_account(session: AsyncSession, account_id: str) -> Account | None:
    return await session.get(Account, account_id)


async def get_account_by_name(session: AsyncSession, name: str) -> Account | None:
    result = await session.execute(select(Account).where(Account.name == name))
    return result.scalar_one_or_none()


async def get_credential_by_client_id(session: AsyncSession, client_id: str) -> Credential | None:
    result = await session.execute(select(Credential).where(Credential.client_id == client_id))
    return result.scalar_one_or_none()


async def get_credential(session: AsyncSession, account_id: str, credential_id: str) -> Credential | None:
    result = await session.execute(
        select(Credential).where(Credential.id == credential_id, Credential.account_id == account_id)
    )
    return result.scalar_one_or_none()


async def delete_credential(session: AsyncSession, credential: Credential) -> None:
    # Tokens go in the same transaction, so they fail from the commit on (the FK cascade is a backstop).
    await session.execute(delete(AccessToken).where(AccessToken.credential_id == credential.id))
    await session.delete(credential)


# Built and compiled once: constructing the statement per request cost more than running it, and running it
# through SQLAlchemy's execution machinery cost ten times the query itself (docs/decisions/0013).
_LIVE_TOKEN = PreparedRead(
    select(AccessToken.account_id, AccessToken.credential_id, AccessToken.scopes).where(
        AccessToken.token_hash == bindparam("token_hash"), AccessToken.expires_at > bindparam("now")
    )
)


async def find_live_token(db: Database, token_hash: str, now: datetime) -> tuple[Any, ...] | None:
    """(account_id, credential_id, scopes) of a live token, read on the raw driver at every request."""
    return await db.first(_LIVE_TOKEN, {"token_hash": token_hash, "now": now})


async def delete_expired_tokens(session: AsyncSession, now: datetime) -> int:
    result = await session.execute(delete(AccessToken).where(AccessToken.expires_at <= now))
    return int(getattr(result, "rowcount", 0) or 0)


async def credentials_of(session: AsyncSession, account_id: str) -> list[Credential]:
    query = select(Credential).where(Credential.account_id == account_id).order_by(Credential.created_at)
    return list((await session.execute(query)).scalars())
