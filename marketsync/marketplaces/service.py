"""Use cases on marketplace connections: connect, pause, resume, disconnect, list.

Connecting and authorising happen in the merchant's app (spec section 1); until the console exists the
operator CLI stands in for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.errors import Conflict, NotFound, ValidationFailed
from marketsync.kit.ids import new_id
from marketsync.marketplaces import repository
from marketsync.marketplaces.kinds import KINDS
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

_COUNTRY = re.compile(r"^[A-Z]{2}$")


async def connect(rt: Runtime, session: AsyncSession, account_id: str, platform: str, country: str) -> MarketplaceConnection:
    platform, country = platform.strip().upper(), country.strip().upper()
    problems: dict[str, list[str]] = {}
    if platform not in KINDS:
        problems["Platform"] = [f"Unknown platform; one of {', '.join(KINDS)}."]
    if not _COUNTRY.match(country):
        problems["Country"] = ["A two-letter country code, e.g. UK, DE, US, FR."]
    if problems:
        raise ValidationFailed(errors=problems)
    if await repository.find(session, account_id, platform, country) is not None:
        raise Conflict(f"{platform} {country} is already connected.")
    connection = MarketplaceConnection(
        id=new_id(),
        account_id=account_id,
        platform=platform,
        country=country,
        state="Active",
        health_status=None,
        health_status_message="",
        is_healthy=True,
        requires_reauthorization=False,
        last_pull_status="NeverRun",
        last_pull_total_skus=0,
        last_pull_current_sku=0,
        created_at=rt.clock.now(),
    )
    session.add(connection)
    await session.flush()
    return connection


async def get(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection:
    connection = await repository.get(session, account_id, marketplace_id)
    if connection is None:
        raise NotFound("No marketplace connection with this id.")
    return connection


async def set_state(session: AsyncSession, account_id: str, marketplace_id: str, state: str) -> MarketplaceConnection:
    connection = await get(session, account_id, marketplace_id)
    connection.state = state
    return connection


async def disconnect(session: AsyncSession, account_id: str, marketplace_id: str) -> None:
    connection = await get(session, account_id, marketplace_id)
    await session.delete(connection)


async def list_active(session: AsyncSession, account_id: str) -> Sequence[MarketplaceConnection]:
    return await repository.list_active(session, account_id)
