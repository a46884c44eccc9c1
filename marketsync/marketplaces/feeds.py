"""One pipeline for every job that sends a feed to a marketplace (PriceStockPush, ListingPublish, OrderWriteBack).

- **Submit once.** The feed is submitted with the job id as our idempotency key, and the marketplace's feed id is
  remembered in the job (`JobRun.remember`, key `MarketplaceFeedId`) before anything else happens: a retried or
  recovered run polls that feed instead of submitting again.
- **One poll policy.** Poll with a growing pause (`POLL_DELAYS_S`); a feed still processing after that goes back
  to the queue (`RetryLater`) and the next run polls the same feed.
- **One mapping of marketplace failures.** Throttling retries after the marketplace's `Retry-After`; an outage
  retries after `UNAVAILABLE_RETRY_S`; a revoked authorisation is recorded on the connection's health (once, by
  `note_authorization_revoked`) and raised as `AuthorizationRevoked` for the job type to decide (fail the push,
  mark listings rejected, or wait for reauthorisation).
Job types keep only what differs: what to send, and what an outcome means.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from marketsync.jobs.run import JobRun, RetryLater
from marketsync.marketplaces import service
from marketsync.marketplaces.connector import AuthorizationRevoked, FeedResult, Throttled, Unavailable
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

__all__ = ["FEED_MARKER", "POLL_DELAYS_S", "UNAVAILABLE_RETRY_S", "call", "submit_and_await"]

FEED_MARKER = "MarketplaceFeedId"
# 0.05 s growing to 0.5 s: about 15 s of polling before the job steps back into the queue.
POLL_DELAYS_S = tuple(0.05 * min(step, 10) for step in range(1, 41))
PROCESSING_RETRY_S = 5.0
UNAVAILABLE_RETRY_S = 60.0

T = TypeVar("T")


async def call(rt: Runtime, connection: MarketplaceConnection, request: Awaitable[T]) -> T:
    """One marketplace call from a job: throttling and outages become RetryLater; a revocation is recorded on the
    connection and re-raised."""
    try:
        return await request
    except Throttled as exc:
        raise RetryLater(exc.retry_after_s, "marketplace throttled") from exc
    except Unavailable as exc:
        raise RetryLater(UNAVAILABLE_RETRY_S, f"marketplace unavailable: {exc}") from exc
    except AuthorizationRevoked:
        await service.note_authorization_revoked(rt, connection.id)
        raise


async def submit_and_await(
    rt: Runtime, job: JobRun, connection: MarketplaceConnection, submit: Callable[[], Awaitable[str]]
) -> FeedResult:
    """Submit the feed (unless an earlier run of this job did), then poll it to its end state."""
    from marketsync.marketplaces.connector import connector_for  # composed per connection kind

    feed_id = str(job.state.get(FEED_MARKER) or "")
    if not feed_id:
        feed_id = await call(rt, connection, submit())
        await job.remember({FEED_MARKER: feed_id})
    connector = connector_for(rt, connection)
    result = await call(rt, connection, connector.feed_result(feed_id))
    for delay in POLL_DELAYS_S:
        if result.status != "Processing":
            return result
        await asyncio.sleep(delay)
        result = await call(rt, connection, connector.feed_result(feed_id))
    if result.status == "Processing":
        raise RetryLater(PROCESSING_RETRY_S, f"feed {feed_id} still processing")
    return result
