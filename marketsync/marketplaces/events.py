"""Payloads of the marketplace-side events (spec section 6), built in one place.

Each function records the event in the caller's transaction via the outbox.
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.kinds import FeedKind, marketplace_name
from marketsync.models import Event, MarketplaceConnection
from marketsync.runtime import Runtime
from marketsync.webhooks.outbox import record_event


def orders_downloaded(
    rt: Runtime, session: AsyncSession, connection: MarketplaceConnection, new_order_count: int
) -> Event:
    return record_event(
        session,
        connection.account_id,
        "OrdersDownloaded",
        {
            "Marketplace": marketplace_name(connection.platform, connection.country),
            "Platform": connection.platform,
            "Country": connection.country,
            "NewOrderCount": new_order_count,
            "UserPlatformId": connection.id,
        },
        rt.clock.now(),
    )


def listing_published(
    rt: Runtime,
    session: AsyncSession,
    connection: MarketplaceConnection,
    journey_id: str,
    published_count: int,
    failed_count: int,
) -> Event:
    return record_event(
        session,
        connection.account_id,
        "ListingPublished",
        {
            "JourneyId": journey_id,
            "UserPlatformId": connection.id,
            "PublishedCount": published_count,
            "FailedCount": failed_count,
        },
        rt.clock.now(),
    )


def feed_outcome(
    rt: Runtime,
    session: AsyncSession,
    connection: MarketplaceConnection,
    feed_kind: FeedKind,
    outcome: Literal["Rejected", "ProcessedWithErrors"],
    status: str,
    failed_count: int,
) -> Event:
    """Only for a rejected feed or one with per-item errors: a clean feed is silent."""
    return record_event(
        session,
        connection.account_id,
        "FeedOutcome",
        {
            "Marketplace": marketplace_name(connection.platform, connection.country),
            "UserPlatformId": connection.id,
            "FeedKind": feed_kind,
            "Outcome": outcome,
            "Status": status,
            "FailedCount": failed_count,
        },
        rt.clock.now(),
    )


def health_changed(
    rt: Runtime,
    session: AsyncSession,
    connection: MarketplaceConnection,
    event_type: Literal["MarketplaceUnhealthy", "MarketplaceRestored"],
    reason: str,
    detail: str,
) -> Event:
    """Call only on an actual change of state; a connection that stays broken does not repeat it."""
    return record_event(
        session,
        connection.account_id,
        event_type,
        {
            "Marketplace": marketplace_name(connection.platform, connection.country),
            "Platform": connection.platform,
            "UserPlatformId": connection.id,
            "Reason": reason,
            "Detail": detail,
        },
        rt.clock.now(),
    )
