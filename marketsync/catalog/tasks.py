"""Task handlers of the catalog domain."""

from __future__ import annotations

import asyncio

from sqlalchemy.exc import IntegrityError

from marketsync.catalog import repository, service
from marketsync.jobs.registry import task
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobType, TaxonomyLoadPayload
from marketsync.marketplaces import repository as marketplaces
from marketsync.marketplaces.connector import connector_for
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.marketplaces.sandbox.connector import SandboxConnector
from marketsync.runtime import Runtime


@task(JobType.LISTING_PUBLISH)
async def publish_listings(rt: Runtime, job: JobRun) -> None:
    """Publish a batch of listings to one marketplace (payload: MarketplaceId, ListingIds, JourneyId)."""
    await service.publish_journey(rt, job)


@task(JobType.TAXONOMY_LOAD)
async def load_site_taxonomy(rt: Runtime, job: JobRun) -> None:
    """The category tree of a newly authorised connection's site, unless it has one by now (another account's
    connection to the same site, an operator's import). Only the sandbox marketplaces ship their tree; a real
    marketplace's site is loaded by an operator from its own file (`admin taxonomy import --country`)."""
    payload = job.args(TaxonomyLoadPayload)
    async with rt.db.read() as session:
        connection = await marketplaces.get(session, job.account_id, payload.MarketplaceId)
        if connection is None or await repository.site_has_taxonomy(session, connection.platform, connection.country):
            return  # disconnected meanwhile (the next connection to its site loads it), or loaded already
    if not isinstance(connector_for(rt, connection), SandboxConnector):
        return
    tree = await asyncio.to_thread(shipped.generate, connection.platform)  # CPU: not in the write transaction
    try:
        async with rt.db.transaction() as session:
            if not await repository.site_has_taxonomy(session, connection.platform, connection.country):
                await service.import_taxonomy(rt, session, tree, connection.country)
    except IntegrityError:  # another connection's load of the same site committed first: the site has its tree
        return
