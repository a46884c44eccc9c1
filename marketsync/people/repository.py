"""All queries on app users and app sessions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import older_than
from marketsync.models.accounts import Account
from marketsync.models.activity import ActivityEntry
from marketsync.models.people import AppSession, AppUser


async def user_by_email(session: AsyncSession, email: str) -> AppUser | None:
    return (await session.execute(select(AppUser).where(AppUser.email == email))).scalar_one_or_none()


async def user_by_id(session: AsyncSession, user_id: str, *, for_update: bool = False) -> AppUser | None:
    return await session.get(AppUser, user_id, with_for_update=for_update)


async def users_of(session: AsyncSession, account_id: str) -> list[AppUser]:
    query = select(AppUser).where(AppUser.account_id == account_id).order_by(AppUser.email)
    return list((await session.execute(query)).scalars())


async def session_with_user(session: AsyncSession, token_hash: str) -> tuple[AppSession, AppUser] | None:
    query = select(AppSession, AppUser).join(AppUser, AppUser.id == AppSession.user_id)
    row = (await session.execute(query.where(AppSession.token_hash == token_hash))).first()
    return (row[0], row[1]) if row is not None else None


async def session_with_user_and_zone(session: AsyncSession, token_hash: str) -> tuple[AppSession, AppUser, str] | None:
    """`session_with_user` and the account's time zone (every page shows its times in it), in the one query."""
    query = (
        select(AppSession, AppUser, Account.time_zone)
        .join(AppUser, AppUser.id == AppSession.user_id)
        .join(Account, Account.id == AppUser.account_id)
    )
    row = (await session.execute(query.where(AppSession.token_hash == token_hash))).first()
    return (row[0], row[1], row[2]) if row is not None else None


async def app_session_locked(session: AsyncSession, token_hash: str) -> AppSession | None:
    """A browser's session row, locked (PostgreSQL): two pages taking its one-time reveal take it one after the
    other."""
    return await session.get(AppSession, token_hash, with_for_update=True)


async def revoke_sessions(session: AsyncSession, user_id: str, now: datetime) -> int:
    result = await session.execute(
        update(AppSession).where(AppSession.user_id == user_id, AppSession.revoked_at.is_(None)).values(revoked_at=now)
    )
    return int(getattr(result, "rowcount", 0) or 0)


async def owners_of_locked(session: AsyncSession, account_id: str) -> list[AppUser]:
    """The account's Owners, locked (PostgreSQL) in id order: two Owners removing each other at once cannot both
    pass the last-Owner check."""
    query = select(AppUser).where(AppUser.account_id == account_id, AppUser.role == "Owner").order_by(AppUser.id)
    return list((await session.execute(query.with_for_update())).scalars())


async def delete_user(session: AsyncSession, user_id: str) -> None:
    """The person and, by cascade, every session of theirs."""
    await session.execute(delete(AppUser).where(AppUser.id == user_id))


# -- the activity log (docs/decisions/0431-activity-log.md) ----------------------------------------------------------


async def add_activity(session: AsyncSession, entry: ActivityEntry) -> None:
    session.add(entry)


async def activity_of(
    session: AsyncSession,
    account_id: str,
    limit: int,
    *,
    user_id: str | None = None,
    kind: str | None = None,
    before: tuple[datetime, str] | None = None,
) -> list[ActivityEntry]:
    """Newest first, a page at a time: one range of the index of the filter (account; person; kind)."""
    query = select(ActivityEntry).where(ActivityEntry.account_id == account_id)
    if user_id is not None:
        query = query.where(ActivityEntry.user_id == user_id)
    if kind is not None:
        query = query.where(ActivityEntry.kind == kind)
    if before is not None:
        query = query.where(older_than(ActivityEntry.created_at, ActivityEntry.id, before))
    query = query.order_by(ActivityEntry.created_at.desc(), ActivityEntry.id.desc()).limit(limit)
    return list((await session.execute(query)).scalars())


async def activity_people(session: AsyncSession, account_id: str) -> list[tuple[str, str]]:
    """(user_id, email) of the account's people, for the log's filter: those removed since keep their entries."""
    query = select(AppUser.id, AppUser.email).where(AppUser.account_id == account_id).order_by(AppUser.email)
    return [(row[0], row[1]) for row in await session.execute(query)]


async def purge_activity(session: AsyncSession, cutoff: datetime, at_most: int) -> int:
    """Delete up to `at_most` entries older than `cutoff` (the oldest first, through ix_activity_entries_created)."""
    oldest = select(ActivityEntry.id).where(ActivityEntry.created_at < cutoff).order_by(ActivityEntry.created_at)
    ids = list((await session.execute(oldest.limit(at_most))).scalars())
    if ids:
        await session.execute(delete(ActivityEntry).where(ActivityEntry.id.in_(ids)))
    return len(ids)
