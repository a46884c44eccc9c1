"""All marketplace-connection queries."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.models import MarketplaceConnection


async def list_active(session: AsyncSession, account_id: str) -> Sequence[MarketplaceConnection]:
    result = await session.execute(
        select(MarketplaceConnection)
        .where(MarketplaceConnection.account_id == account_id, MarketplaceConnection.state == "Active")
        .order_by(MarketplaceConnection.created_at, MarketplaceConnection.id)
    )
    return result.scalars().all()


async def get(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection | None:
    result = await session.execute(
        select(MarketplaceConnection).where(
            MarketplaceConnection.id == marketplace_id, MarketplaceConnection.account_id == account_id
        )
    )
    return result.scalar_one_or_none()


async def find(session: AsyncSession, account_id: str, platform: str, country: str) -> MarketplaceConnection | None:
    result = await session.execute(
        select(MarketplaceConnection).where(
            MarketplaceConnection.account_id == account_id,
            MarketplaceConnection.platform == platform,
            MarketplaceConnection.country == country,
        )
    )
    return result.scalar_one_or_none()


async def list_all_active(session: AsyncSession) -> Sequence[MarketplaceConnection]:
    """Every active connection of every account (schedules fan out from this)."""
    result = await session.execute(
        select(MarketplaceConnection).where(MarketplaceConnection.state == "Active").order_by(MarketplaceConnection.id)
    )
    return result.scalars().all()
