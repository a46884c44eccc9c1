"""The listing mirror (the ListingMirror job): every listing of a connection pulled, page by page, into the listings
map; where the marketplace owns a data kind (Data Flow), its values written into the inventory through the one
inventory write path (writer MasterMirror). Which product a marketplace listing stands for is a rule
(`rules.listing_product`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.inventory import repository, rules, service
from marketsync.inventory.rules import ChangeSource, SkuChange
from marketsync.jobs.run import JobRun, LeaseLost, RetryLater
from marketsync.jobs.types import JobStatus
from marketsync.kinds import ListingStatus
from marketsync.kit.ids import new_id
from marketsync.marketplaces import feeds
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import MarketplaceListing, connector_for
from marketsync.marketplaces.rules import LastPullStatus
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime

LISTING_PAGE = 200


async def mirror_listings(rt: Runtime, job: JobRun) -> int:
    """Pull every listing of the connection into the listings map, reporting LastPull as it goes. Returns how many
    SKUs of the inventory moved."""
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
                moved += await mirror_page(rt, session, current, page.listings, read_at)
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


async def _set_last_pull(rt: Runtime, marketplace_id: str, status: LastPullStatus, total: int | None = None) -> None:
    async with rt.db.transaction() as session:
        connection = await repository.connection_for_update(session, marketplace_id)
        if connection is None:
            return
        connection.last_pull_status = status
        if total is not None:
            connection.last_pull_total_skus, connection.last_pull_current_sku = total, 0


async def mirror_page(
    rt: Runtime,
    session: AsyncSession,
    connection: MarketplaceConnection,
    page: list[MarketplaceListing],
    read_at: datetime,
) -> int:
    """Record one page in the listings map; where the marketplace owns a kind, overwrite the inventory.

    A listing recorded after the page was asked for (`read_at`: a push's feed applied meanwhile) keeps what was
    recorded: the page is older, and writing it would undo the push (the push back to the page's value would then
    look needless and never be sent). The next mirror reads it again. Not locked: locking the page's listings before
    its products would take the two in the order opposite to a publish's (a deadlock on PostgreSQL), so a feed
    recorded within this transaction's own few milliseconds is still overwritten. Returns how many SKUs of the
    inventory moved.
    """
    owners = await service.data_owners(session, connection.account_id)  # both kinds in one read
    price_owned, stock_owned = owners["Price"] == "Marketplace", owners["Stock"] == "Marketplace"
    by_listing_id = await repository.listings_for_mirror(session, connection.id, [item.listing_id for item in page])
    matched, products = await _matched_products(
        session, connection, page, by_listing_id, compare_known=price_owned or stock_owned
    )
    by_product = await repository.listings_by_product(
        session, connection.id, [product_id for item, product_id in matched if item.listing_id not in by_listing_id]
    )
    recorded = _record_listings(rt, session, connection, matched, by_listing_id, by_product, read_at)
    if not (price_owned or stock_owned):
        return 0
    changes = _owned_changes(recorded, products, price_owned=price_owned, stock_owned=stock_owned)
    if not changes:
        return 0
    source = ChangeSource(writer="MasterMirror", channel="Marketplace", user_platform_id=connection.id)
    applied = await service.apply_inventory_changes(rt, session, connection.account_id, changes, source)
    return len(applied)


async def _matched_products(
    session: AsyncSession,
    connection: MarketplaceConnection,
    page: Sequence[MarketplaceListing],
    by_listing_id: Mapping[str, Listing],
    *,
    compare_known: bool,
) -> tuple[list[tuple[MarketplaceListing, str]], dict[str, Product]]:
    """Each listing of the page with the id of the product it stands for: the one the listings map holds it under,
    else the product its SKUs name (`rules.listing_product`); listings that stand for no product are left out. And
    the products read: those matched by SKU, and those of known listings if `compare_known` (the marketplace owns a
    kind, so their values are compared with the page's)."""
    # Only listings the map does not hold yet are matched by SKU (a re-mirror reads no product by SKU), and a
    # known listing's product is read only where the page's values may move it: with the merchant owning both
    # kinds, a re-mirror of a million listings reads no product at all.
    unknown = [item for item in page if item.listing_id not in by_listing_id]
    by_sku = await repository.products_by_sku(
        session, connection.account_id, [sku for item in unknown for sku in (item.sku, item.external_sku)]
    )
    products = {product.id: product for product in by_sku}
    if compare_known:
        products.update(await repository.products_by_id(session, [row.product_id for row in by_listing_id.values()]))
    matched: list[tuple[MarketplaceListing, str]] = []
    for item in page:
        row = by_listing_id.get(item.listing_id)
        if row is not None:
            matched.append((item, row.product_id))
        elif (product := rules.listing_product((item.sku, item.external_sku), by_sku)) is not None:
            matched.append((item, product.id))
    return matched, products


def _record_listings(
    rt: Runtime,
    session: AsyncSession,
    connection: MarketplaceConnection,
    matched: Sequence[tuple[MarketplaceListing, str]],
    by_listing_id: Mapping[str, Listing],
    by_product: dict[str, Listing],
    read_at: datetime,
) -> list[tuple[MarketplaceListing, str]]:
    """The listings map brought to the page, but for rows recorded since it was asked for; the pairs recorded."""
    now = rt.clock.now()
    recorded: list[tuple[MarketplaceListing, str]] = []
    for item, product_id in matched:
        row = by_listing_id.get(item.listing_id) or by_product.get(product_id)
        if row is not None and row.updated_at is not None and row.updated_at > read_at:
            continue  # recorded since the page was asked for: newer than the page
        recorded.append((item, product_id))
        if row is None:
            row = Listing(
                id=new_id(),
                account_id=connection.account_id,
                product_id=product_id,
                marketplace_id=connection.id,
                attributes={},
                created_at=now,
            )
            session.add(row)
            by_product[product_id] = row
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
    return recorded


def _owned_changes(
    recorded: Sequence[tuple[MarketplaceListing, str]],
    products: Mapping[str, Product],
    *,
    price_owned: bool,
    stock_owned: bool,
) -> list[SkuChange]:
    """What the marketplace's values change in the inventory, for the kinds it owns."""
    changes = []
    for item, product_id in recorded:
        product = products.get(product_id)
        if product is None:
            continue
        price: Decimal | None = item.price if price_owned and item.price is not None else None
        quantity = item.quantity if stock_owned and item.quantity is not None else None
        if (price is not None and price != product.price) or (quantity is not None and quantity != product.quantity):
            changes.append(SkuChange(product.id, price, quantity))
    return changes
