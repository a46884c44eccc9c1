"""Task handlers of the catalog domain."""

from __future__ import annotations

from marketsync.catalog.listings import publish
from marketsync.catalog.taxonomy import service as taxonomy
from marketsync.jobs.registry import task
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobType, TaxonomyLoadPayload
from marketsync.runtime import Runtime


@task(JobType.LISTING_PUBLISH)
async def publish_listings(rt: Runtime, job: JobRun) -> None:
    """Publish a batch of listings to one marketplace (payload: MarketplaceId, ListingIds, JourneyId)."""
    await publish.publish_journey(rt, job)


@task(JobType.TAXONOMY_LOAD)
async def load_site_taxonomy(rt: Runtime, job: JobRun) -> None:
    """The category tree of a newly authorised connection's site (catalog.taxonomy.service.load_site_categories)."""
    await taxonomy.load_site_categories(rt, job.account_id, job.args(TaxonomyLoadPayload).MarketplaceId)
