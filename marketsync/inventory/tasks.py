"""Task handlers and schedules of the catalogue: the listing and stock mirror (ListingMirror).

The mirror pulls every listing of a connection into the listings map, and where the marketplace owns a data kind
(Data Flow), writes its values into the catalogue through the one inventory write path (writer MasterMirror).
The push enqueues `PriceStockPush` jobs, whose handler sends the feed and lives in marketsync/marketplaces/tasks.py.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.inventory import repository, service
from marketsync.inventory.rules import ChangeSource, SkuChange
from marketsync.jobs.registry import schedule, task
from marketsync.jobs.run import JobRun, LeaseLost, RetryLater
from marketsync.jobs.types import InventoryImportPayload, JobStatus, JobType, ListingMirrorPayload
from marketsync.kinds import ListingStatus
from marketsync.kit.ids import new_id
from marketsync.marketplaces import feeds
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import MarketplaceListing, connector_for
from marketsync.marketplaces.rules import LastPullStatus
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime

LISTING_PAGE = 200


@schedule("marketplaces.listing_mirror", interval_s=lambda s: s.listing_mirror_interval_s)
async def schedule_listing_mirrors(rt: Runtime) -> None:
    await marketplaces.enqueue_for_active_connections(
        rt, JobType.LISTING_MIRROR, lambda c: ListingMirrorPayload(MarketplaceId=c.id)
    )


def _match_product(listing: MarketplaceListing, candidates: list[Product]) -> Product | None:
    """The catalogue product a marketplace listing stands for: exact SKU first, else a unique case match."""
    skus = (listing.sku, listing.external_sku)
    for sku in skus:
        exact = [p for p in candidates if p.sku == sku]
        if exact:
            return exact[0]
    for sku in skus:
        folded = [p for p in candidates if p.sku_lower == sku.lower()]
        if len(folded) == 1:
            return folded[0]
    return None


async def _mirror_page(
    rt: Runtime,
    session: AsyncSession,
    connection: MarketplaceConnection,
    page: list[MarketplaceListing],
    read_at: datetime,
) -> int:
    """Record one page in the listings map; where the marketplace owns a kind, overwrite the catalogue.

    A listing recorded after the page was asked for (`read_at`: a push's feed applied meanwhile) keeps what was
    recorded: the page is older, and writing it would undo the push (the push back to the page's value would then
    look needless and never be sent). The next mirror reads it again. Not locked: locking the page's listings before
    its products would take the two in the order opposite to a publish's (a deadlock on PostgreSQL), so a feed
    recorded within this transaction's own few milliseconds is still overwritten. Returns how many SKUs of the
    catalogue moved.
    """
    now = rt.clock.now()
    by_listing_id = await repository.listings_for_mirror(session, connection.id, [item.listing_id for item in page])
    # Only listings the map does not hold yet are matched by SKU (a re-mirror reads no product by SKU).
    unknown = [item for item in page if item.listing_id not in by_listing_id]
    products = await repository.products_by_sku(
        session, connection.account_id, [sku for item in unknown for sku in (item.sku, item.external_sku)]
    )
    known_products = await repository.products_by_id(session, [row.product_id for row in by_listing_id.values()])
    matched: list[tuple[MarketplaceListing, Product]] = []
    for item in page:
        row = by_listing_id.get(item.listing_id)
        product = known_products.get(row.product_id) if row is not None else _match_product(item, products)
        if product is not None:
            matched.append((item, product))
    by_product = await repository.listings_by_product(
        session, connection.id, [p.id for item, p in matched if item.listing_id not in by_listing_id]
    )
    recorded: list[tuple[MarketplaceListing, Product]] = []
    for item, product in matched:
        row = by_listing_id.get(item.listing_id) or by_product.get(product.id)
        if row is not None and row.updated_at is not None and row.updated_at > read_at:
            continue  # recorded since the page was asked for: newer than the page
        recorded.append((item, product))
        if row is None:
            row = Listing(
                id=new_id(),
                account_id=connection.account_id,
                product_id=product.id,
                marketplace_id=connection.id,
                attributes={},
                created_at=now,
            )
            session.add(row)
            by_product[product.id] = row
        seen = {
            "listing_id": item.listing_id,
            "external_sku": item.external_sku,
            "listing_url": item.listing_url,
            "category_id": row.category_id or item.category_id,
            "marketplace_price": item.price,
            "marketplace_quantity": item.quantity,
            "status": ListingStatus.LIVE,
        }
        if any(getattr(row, name) != value for name, value in seen.items()):  # a re-mirror of the same writes nothing
            for name, value in seen.items():
                setattr(row, name, value)
            row.updated_at = now
    owners = await service.data_owners(session, connection.account_id)  # both kinds in one read
    price_owned, stock_owned = owners["Price"] == "Marketplace", owners["Stock"] == "Marketplace"
    changes = []
    for item, product in recorded:
        price: Decimal | None = item.price if price_owned and item.price is not None else None
        quantity = item.quantity if stock_owned and item.quantity is not None else None
        if (price is not None and price != product.price) or (quantity is not None and quantity != product.quantity):
            changes.append(SkuChange(product.id, price, quantity))
    if not changes:
        return 0
    source = ChangeSource(writer="MasterMirror", channel="Marketplace", user_platform_id=connection.id)
    applied = await service.apply_inventory_changes(rt, session, connection.account_id, changes, source)
    return len(applied)


async def _set_last_pull(rt: Runtime, marketplace_id: str, status: LastPullStatus, total: int | None = None) -> None:
    async with rt.db.transaction() as session:
        connection = await repository.connection_for_update(session, marketplace_id)
        if connection is None:
            return
        connection.last_pull_status = status
        if total is not None:
            connection.last_pull_total_skus, connection.last_pull_current_sku = total, 0


@task(JobType.LISTING_MIRROR)
async def mirror_listings(rt: Runtime, job: JobRun) -> int:
    """Pull every listing of the connection into the listings map, reporting LastPull as it goes."""
    connection = await marketplaces.usable_connection(rt, job)
    if connection is None:
        return 0
    connector = connector_for(rt, connection)
    await _set_last_pull(rt, connection.id, LastPullStatus.IN_PROGRESS, total=0)
    cursor: str | None = None
    done = moved = 0
    try:
        while True:
            read_at = rt.clock.now()
            page = await feeds.call(rt, connection, connector.pull_listings(cursor, LISTING_PAGE))
            async with rt.db.transaction() as session:
                current = await repository.connection_for_update(session, connection.id)
                if current is None:
                    await job.finish(session, JobStatus.CANCELLED, "connection disconnected")
                    return moved
                moved += await _mirror_page(rt, session, current, page.listings, read_at)
                done += len(page.listings)
                current.last_pull_total_skus, current.last_pull_current_sku = page.total, done
                await job.progress_in(session, done, page.total)
            cursor = page.next_cursor
            if not cursor:
                break
    except (RetryLater, LeaseLost, asyncio.CancelledError):
        raise
    except Exception:
        await _set_last_pull(rt, connection.id, LastPullStatus.FAILED)
        raise
    async with rt.db.transaction() as session:
        current = await repository.connection_for_update(session, connection.id)
        if current is not None:
            current.last_pull_status = LastPullStatus.COMPLETED
        await job.finish(session, JobStatus.COMPLETED)
    return moved


@task(JobType.INVENTORY_IMPORT)
async def run_inventory_import(rt: Runtime, run: JobRun) -> None:
    """A file uploaded in the app: each batch commits with its report and the job's progress, so a worker that
    dies mid-file is replaced by one that resumes after the last committed batch."""

    async def progressed(session: AsyncSession, report: service.ImportReport, _line: int) -> None:
        await run.progress_in(session, report.rows, run.progress_total)

    await service.run_import(rt, run.args(InventoryImportPayload).ImportId, progressed)
