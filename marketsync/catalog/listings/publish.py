"""The ListingPublish job: a batch of listings sent to their marketplace as one feed, its outcome recorded once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal

from marketsync.catalog import repository
from marketsync.catalog.listings import rules
from marketsync.catalog.listings.rules import HELD
from marketsync.http.errors import NotFound
from marketsync.jobs import service as jobs
from marketsync.jobs.run import JobRun, RetryLater
from marketsync.jobs.types import JobStatus, ListingPublishPayload
from marketsync.kinds import ConnectionState, ListingStatus
from marketsync.marketplaces import events, feeds
from marketsync.marketplaces import rules as marketplace_rules
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import AuthorizationRevoked, FeedResult, ListingDraft, connector_for
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime

# The price and stock each listing's feed carries, in the job's state: {listing row id: [price or None, quantity]}.
PUBLISHED_VALUES = "PublishedValues"


async def publish_journey(rt: Runtime, job: JobRun) -> None:
    """Send the job's listings to the marketplace, wait for the feed, record the outcome once.

    Idempotent: the feed goes through marketplaces/feeds.py (submitted once, remembered in the job), and the
    outcome is recorded in the one transaction that also ends the job, so a recovered run neither re-applies nor
    re-fires events.
    """
    args = job.args(ListingPublishPayload)
    async with rt.db.read() as session:
        try:
            connection = await marketplaces.get(session, job.account_id, args.MarketplaceId)
        except NotFound:
            return  # disconnected: its listings went with it
        if connection.state != ConnectionState.ACTIVE:
            raise RetryLater(300.0, "marketplace connection paused")
        rows = await repository.listings_with_products(session, job.account_id, connection.id, args.ListingIds)
    drafts = [_draft(listing, product) for listing, product in rows]
    if not drafts:
        return
    carried = await _carried_values(job, drafts)
    # A retry that never got its feed submitted sends the values kept (the marketplace may have the first submission).
    drafts = [
        replace(draft, price=carried[draft.reference][0], quantity=carried[draft.reference][1])
        if draft.reference in carried
        else draft
        for draft in drafts
    ]
    connector = connector_for(rt, connection)
    try:
        result = await feeds.submit_and_await(
            rt, job, connection, lambda: connector.publish_listings(job.job_id, drafts)
        )
    except AuthorizationRevoked:
        # The connection's health flipped (once, in feeds.call); the batch fails.
        result = FeedResult(job.job_id, "Rejected", 0, [], "The marketplace authorisation was revoked.")
        await _record_outcome(rt, job, connection, args, result, carried, feed_rejected=False)
        return
    await _record_outcome(rt, job, connection, args, result, carried, feed_rejected=result.status == "Rejected")


def _draft(listing: Listing, product: Product) -> ListingDraft:
    app_fields = listing.app_fields or {}
    return ListingDraft(
        reference=listing.id,
        sku=product.sku,
        external_sku=listing.external_sku,
        listing_id=listing.listing_id,
        category_id=listing.category_id,
        # App-managed attributes (ApiSettable false) exist only in the app's fields.
        attributes={**(listing.attributes or {}), **(app_fields.get("Attributes") or {})},
        title=product.title,
        price=product.price,
        quantity=product.quantity,
        app_fields={k: v for k, v in app_fields.items() if k != HELD},
    )


async def _carried_values(job: JobRun, drafts: Sequence[ListingDraft]) -> dict[str, tuple[Decimal | None, int | None]]:
    """The price and stock the feed carries for each listing, kept in the job's state before the first submission."""
    progress = None if (job.progress_done, job.progress_total) == (0, len(drafts)) else (0, len(drafts))
    kept = job.state.get(PUBLISHED_VALUES)
    if kept is None:
        # Kept before the feed is sent, like a PriceStockPush's lines: a recovered run must record the values the
        # feed carried, not the inventory's by then (docs/decisions/0307-publish-records-what-its-feed-carried.md).
        kept = {d.reference: [None if d.price is None else str(d.price), d.quantity] for d in drafts}
        await job.remember({PUBLISHED_VALUES: kept}, progress=progress)
    elif progress is not None:
        # Create enqueues the job with this progress already: a write transaction saved per publish.
        await job.progress(*progress)
    return {
        reference: (None if price is None else Decimal(price), quantity)
        for reference, (price, quantity) in kept.items()
    }


async def _record_outcome(
    rt: Runtime,
    job: JobRun,
    connection: MarketplaceConnection,
    args: ListingPublishPayload,
    result: FeedResult,
    carried: Mapping[str, tuple[Decimal | None, int | None]],
    *,
    feed_rejected: bool,
) -> None:
    """Record the feed's outcome on the listings. A listing published holds the values its feed carried; where the
    inventory moved since the feed was built (a push in between: it found no listing id to push to, or sent its
    values before this feed landed), a PriceStockPush brings the marketplace to the inventory's values (0307)."""
    now = rt.clock.now()
    errors = {e.reference: e.message for e in result.errors}
    async with rt.db.transaction() as session:
        # Products locked: a push of them commits before this reads them, or reads these listing ids after it.
        rows = await repository.listings_with_products(
            session, job.account_id, connection.id, args.ListingIds, lock_products=True
        )
        published = failed = 0
        behind: list[str] = []  # products whose inventory values moved after the feed was built
        refused: list[tuple[str, str]] = []  # (SKU, why) of each listing not published
        for listing, product in rows:
            ids = None if result.status == "Rejected" else result.published.get(listing.id)
            if ids is None:
                refused.append((product.sku, errors.get(listing.id) or result.message or ""))
            if ids is not None:
                # The marketplace's ids are facts: record them even if a newer publish is queued.
                listing.listing_id, listing.external_sku, listing.listing_url = ids
                price, quantity = carried.get(listing.id, (product.price, product.quantity))
                listing.marketplace_price, listing.marketplace_quantity = price, quantity
                if (price, quantity) != (product.price, product.quantity):
                    behind.append(product.id)
                published += 1
            else:
                failed += 1
            if listing.journey_id != job.job_id:
                continue  # a newer publish of this listing will report its own state
            listing.status = ListingStatus.LIVE if ids is not None else ListingStatus.REJECTED
            listing.last_error = (
                None
                if ids is not None
                else (errors.get(listing.id) or result.message or "Not published by the marketplace.")
            )
            listing.journey_id = None
            listing.updated_at = now
        if behind:
            await jobs.enqueue_price_stock_pushes(session, now, job.account_id, {connection.id: behind})
        events.listing_published(rt, session, connection, args.JourneyId, published, failed)
        if feed_rejected:
            events.feed_outcome(rt, session, connection, "Product listing", "Rejected", result.status, failed)
        elif failed and result.status == "Done":
            events.feed_outcome(
                rt, session, connection, "Product listing", "ProcessedWithErrors", result.status, failed
            )
        # The job's end state goes with its outcome, in this transaction: ProgressDone = listings the
        # marketplace accepted; none accepted is a failed job (docs/decisions/0082).
        status = JobStatus(marketplace_rules.feed_job_status(published + failed, published))
        reason = (
            None
            if status == JobStatus.COMPLETED
            else rules.publish_failure_reason(refused if result.status != "Rejected" else [], result.message)
        )
        await job.finish(session, status, reason, progress=(published, published + failed))
