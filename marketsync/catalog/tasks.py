"""Task handlers of the catalog domain."""

from __future__ import annotations

from marketsync.catalog import repository, service
from marketsync.jobs.registry import task
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobType, TaxonomyLoadPayload
from marketsync.marketplaces import repository as marketplaces
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime


@task(JobType.LISTING_PUBLISH)
async def publish_listings(rt: Runtime, job: JobRun) -> None:
    """Publish a batch of listings to one marketplace (payload: MarketplaceId, ListingIds, JourneyId)."""
    await service.publish_journey(rt, job)


@task(JobType.TAXONOMY_LOAD)
async def load_site_taxonomy(rt: Runtime, job: JobRun) -> None:
    """The category tree of a newly authorised connection's site, unless it has one by now (another account's
    connection to the same site, an operator's import). The sandbox marketplaces ship their tree."""
    payload = job.args(TaxonomyLoadPayload)
    async with rt.db.transaction() as session:
        connection = await marketplaces.get(session, job.account_id, payload.MarketplaceId)
        if connection is None:
            return  # disconnected meanwhile: its site is loaded by the next connection to it
        if await repository.latest_import(session, connection.platform, connection.country) is None:
            await service.import_taxonomy(rt, session, shipped.generate(connection.platform), connection.country)
