"""Task handlers and schedules of the inventory: the listing mirror (ListingMirror, in inventory/mirror.py) and the
import of a price/stock file uploaded in the app.

The push enqueues `PriceStockPush` jobs, whose handler sends the feed and lives in marketsync/marketplaces/tasks.py.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.inventory import mirror, service
from marketsync.jobs.registry import schedule, task
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import InventoryImportPayload, JobType, ListingMirrorPayload
from marketsync.marketplaces import service as marketplaces
from marketsync.runtime import Runtime


@schedule("marketplaces.listing_mirror", interval_s=lambda s: s.listing_mirror_interval_s)
async def schedule_listing_mirrors(rt: Runtime) -> None:
    await marketplaces.enqueue_for_active_connections(
        rt, JobType.LISTING_MIRROR, lambda c: ListingMirrorPayload(MarketplaceId=c.id)
    )


@task(JobType.LISTING_MIRROR)
async def mirror_listings(rt: Runtime, job: JobRun) -> int:
    """Pull every listing of the connection into the listings map, reporting LastPull as it goes."""
    return await mirror.mirror_listings(rt, job)


@task(JobType.INVENTORY_IMPORT)
async def run_inventory_import(rt: Runtime, run: JobRun) -> None:
    """A file uploaded in the app: each batch commits with its report and the job's progress, so a worker that
    dies mid-file is replaced by one that resumes after the last committed batch."""

    async def progressed(session: AsyncSession, report: service.ImportReport, _line: int) -> None:
        await run.progress_in(session, report.rows, run.progress_total)

    await service.run_import(rt, run.args(InventoryImportPayload).ImportId, progressed)
