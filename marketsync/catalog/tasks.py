"""Task handlers of the catalog domain."""

from __future__ import annotations

from marketsync.catalog import service
from marketsync.jobs.registry import task
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobType
from marketsync.runtime import Runtime


@task(JobType.LISTING_PUBLISH)
async def publish_listings(rt: Runtime, job: JobRun) -> None:
    """Publish a batch of listings to one marketplace (payload: MarketplaceId, ListingIds, JourneyId)."""
    await service.publish_journey(rt, job)
