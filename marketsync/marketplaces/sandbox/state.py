"""The sandbox marketplaces' state: every read and write of the sandbox_* tables.

Used by the sandbox HTTP app (what the marketplace does when called) and by the `marketsync sandbox`
commands (what happens at the marketplace on its own: orders arrive, a merchant edits a listing there,
authorisation is revoked). Each function works inside the caller's transaction.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import DriverSql, insert_for, session_driver
from marketsync.kinds import kind_of
from marketsync.marketplaces.sandbox import rules, statements, taxonomies
from marketsync.models.base import money_to_storage
from marketsync.models.sandbox import SandboxFeed, SandboxListing, SandboxOrder, SandboxSeller

# A budget generous enough that normal use never meets it; tests and operators tighten it per seller.
DEFAULT_BUCKET_CAPACITY = 200.0
DEFAULT_BUCKET_REFILL_PER_S = 100.0

CURRENCIES = {"UK": "GBP", "GB": "GBP", "US": "USD", "DE": "EUR", "FR": "EUR", "IT": "EUR", "ES": "EUR"}
_BUYERS = (
    ("Alex Morgan", "+44 20 7946 0018"),
    ("Sam Fischer", "+49 30 901820"),
    ("Jordan Lee", "+1 212 555 0187"),
    ("Camille Durand", "+33 1 70 18 99 00"),
    ("Robin Patel", "+44 161 496 0742"),
    ("Maria Rossi", None),
)
_CITIES = {
    "UK": ("London", "SW1A 1AA", "GB"),
    "DE": ("Berlin", "10115", "DE"),
    "US": ("New York", "10001", "US"),
    "FR": ("Paris", "75001", "FR"),
}


class SandboxError(Exception):
    """A request the sandbox marketplace refuses (rendered as 4xx by the app)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def listing_url(platform: str, country: str, listing_id: str) -> str:
    # `.invalid` is reserved: these URLs look real but can never be fetched.
    return f"https://{platform.lower()}.sandbox.invalid/{country.lower()}/item/{listing_id}"


# -- sellers ---------------------------------------------------------------------------------------------


async def ensure_seller(
    session: AsyncSession, connection_id: str, platform: str, country: str, now: datetime
) -> SandboxSeller:
    """The seller account, created on first contact (stands for the merchant authorising in the app)."""
    seller = await get_seller(session, connection_id)
    if seller is not None:  # every call after the first: one statement
        return seller
    await session.execute(
        insert_for(session, SandboxSeller)
        .values(
            connection_id=connection_id,
            platform=platform,
            country=country,
            auth_revoked=False,
            feed_fault="none",
            bucket_capacity=DEFAULT_BUCKET_CAPACITY,
            bucket_refill_per_s=DEFAULT_BUCKET_REFILL_PER_S,
            bucket_tokens=DEFAULT_BUCKET_CAPACITY,
            bucket_at=now,
            order_seq=0,
            change_seq=0,
            listing_seq=0,
            feed_seq=0,
            created_at=now,
        )
        .on_conflict_do_nothing(index_elements=["connection_id"])
    )
    seller = await get_seller(session, connection_id)
    assert seller is not None
    return seller


async def get_seller(session: AsyncSession, connection_id: str) -> SandboxSeller | None:
    result = await session.execute(
        select(SandboxSeller).where(SandboxSeller.connection_id == connection_id).with_for_update()
    )
    return result.scalar_one_or_none()


def spend_token(seller: SandboxSeller, now: datetime) -> float | None:
    """Charge one API call to the seller's budget; returns seconds to wait when it is exhausted."""
    bucket, wait = rules.take_token(
        rules.Bucket(seller.bucket_capacity, seller.bucket_refill_per_s, seller.bucket_tokens, seller.bucket_at), now
    )
    seller.bucket_tokens, seller.bucket_at = bucket.tokens, bucket.at
    return wait


def set_throttle(
    seller: SandboxSeller, now: datetime, *, capacity: float, refill_per_s: float, tokens: float | None = None
) -> None:
    seller.bucket_capacity, seller.bucket_refill_per_s = capacity, refill_per_s
    seller.bucket_tokens = capacity if tokens is None else tokens
    seller.bucket_at = now


def set_feed_fault(seller: SandboxSeller, mode: str) -> None:
    if mode not in rules.FEED_FAULTS:
        raise SandboxError(400, f"Feed-fault mode is one of {', '.join(rules.FEED_FAULTS)}.")
    seller.feed_fault = mode


# -- listings --------------------------------------------------------------------------------------------


# A page cursor carries the total counted for the first page: the listing id to resume after, and that count.
CURSOR_SEPARATOR = "~"


async def listings_page(
    session: AsyncSession, connection_id: str, cursor: str | None, limit: int
) -> tuple[Sequence[SandboxListing], int, str | None]:
    """A page of a seller's listings in id order, the total and the next page's cursor (None after the last page).

    The total is counted once, for the first page, and travels in the cursor: counted again for each of the 500
    pages of a 100,000-listing catalogue it was most of a mirror's time on PostgreSQL."""
    after, total = cursor, None
    if cursor:
        resume_after, separator, counted = cursor.rpartition(CURSOR_SEPARATOR)
        if separator and counted.isascii() and counted.isdigit():
            after, total = resume_after, int(counted)
    query = select(SandboxListing).where(SandboxListing.connection_id == connection_id)
    if after:
        query = query.where(SandboxListing.listing_id > after)
    rows = (await session.execute(query.order_by(SandboxListing.listing_id).limit(limit))).scalars().all()
    if total is None:
        counted_now = await session.scalar(
            select(func.count()).select_from(SandboxListing).where(SandboxListing.connection_id == connection_id)
        )
        total = int(counted_now or 0)
    next_cursor = f"{rows[-1].listing_id}{CURSOR_SEPARATOR}{total}" if len(rows) == limit else None
    return rows, total, next_cursor


async def listing_by_sku(session: AsyncSession, connection_id: str, sku: str) -> SandboxListing | None:
    result = await session.execute(
        select(SandboxListing).where(
            SandboxListing.connection_id == connection_id,
            (SandboxListing.sku == sku) | (SandboxListing.external_sku == sku),
        )
    )
    return result.scalars().first()


async def _listing_by_id(session: AsyncSession, connection_id: str, listing_id: str) -> SandboxListing | None:
    return await session.get(SandboxListing, (connection_id, listing_id))


def _next_listing_id(seller: SandboxSeller) -> str:
    seller.listing_seq += 1
    return f"{seller.platform}{seller.country}-L{seller.listing_seq:08d}"


async def put_listing(
    session: AsyncSession,
    seller: SandboxSeller,
    now: datetime,
    *,
    sku: str,
    price: Decimal | None,
    quantity: int | None,
    listing_id: str | None = None,
    external_sku: str | None = None,
    title: str | None = None,
    category_id: str | None = None,
) -> SandboxListing:
    """Create or update a listing as the merchant would in the marketplace's own seller tools."""
    listing = None
    if listing_id:
        listing = await _listing_by_id(session, seller.connection_id, listing_id)
    if listing is None:
        listing = await listing_by_sku(session, seller.connection_id, external_sku or sku)
    if listing is None:
        new_id = listing_id or _next_listing_id(seller)
        listing = SandboxListing(
            connection_id=seller.connection_id,
            listing_id=new_id,
            sku=sku,
            external_sku=external_sku or sku,
            listing_url=listing_url(seller.platform, seller.country, new_id),
            title=title,
            category_id=category_id,
            attributes={},
            price=price,
            quantity=quantity,
            feed_updates=0,
            updated_at=now,
        )
        session.add(listing)
        await session.flush()
        return listing
    if price is not None:
        listing.price = price
    if quantity is not None:
        listing.quantity = quantity
    if title is not None:
        listing.title = title
    listing.updated_at = now
    return listing


# -- orders ----------------------------------------------------------------------------------------------


async def orders_page(session: AsyncSession, connection_id: str, after_seq: int, limit: int) -> Sequence[SandboxOrder]:
    result = await session.execute(
        select(SandboxOrder)
        .where(SandboxOrder.connection_id == connection_id, SandboxOrder.change_seq > after_seq)
        .order_by(SandboxOrder.change_seq)
        .limit(limit)
    )
    return result.scalars().all()


async def count_orders(session: AsyncSession, connection_id: str) -> int:
    total = await session.scalar(
        select(func.count()).select_from(SandboxOrder).where(SandboxOrder.connection_id == connection_id)
    )
    return int(total or 0)


async def orders_arrive(session: AsyncSession, seller: SandboxSeller, now: datetime, count: int) -> list[SandboxOrder]:
    """Buyers place `count` orders, for items the seller lists (or stock SKUs when nothing is listed)."""
    listings = (
        (
            await session.execute(
                select(SandboxListing)
                .where(SandboxListing.connection_id == seller.connection_id)
                .order_by(SandboxListing.listing_id)
                .limit(500)
            )
        )
        .scalars()
        .all()
    )
    currency = CURRENCIES.get(seller.country, "EUR")
    city, postcode, country_code = _CITIES.get(seller.country, ("Capital City", "00000", seller.country[:2]))
    created = []
    for _ in range(count):
        seller.order_seq += 1
        seller.change_seq += 1
        rng = random.Random(f"{seller.connection_id}:{seller.order_seq}")
        items = []
        for index in range(rng.randint(1, 3)):
            if listings:
                listing = rng.choice(listings)
                sku, title = listing.external_sku, listing.title or listing.sku
                price = listing.price if listing.price is not None else Decimal("9.99")
            else:
                sku, title, price = f"SANDBOX-{rng.randint(1, 50):03d}", "Sandbox item", Decimal(rng.randint(5, 90))
            items.append(
                {
                    "ItemId": f"{seller.order_seq:07d}-{index + 1}",
                    "Sku": sku,
                    "Title": title,
                    "Quantity": rng.randint(1, 3),
                    "UnitPrice": str(price),
                    "Status": "Unshipped",
                }
            )
        name, phone = rng.choice(_BUYERS)
        order = SandboxOrder(
            connection_id=seller.connection_id,
            order_id=f"{seller.platform}{seller.country}-{seller.order_seq:07d}",
            change_seq=seller.change_seq,
            status="Unshipped",
            purchase_date=now - timedelta(minutes=rng.randint(1, 90)),
            changed_at=now,
            currency=currency,
            buyer_name=name,
            buyer_email=f"{name.split()[0].lower()}.{seller.order_seq}@buyers.sandbox.invalid",
            buyer_phone=phone,
            shipping_address={
                "Name": name,
                "Line1": f"{rng.randint(1, 200)} Market Street",
                "Line2": None,
                "City": city,
                "Region": None,
                "PostalCode": postcode,
                "CountryCode": country_code,
                "Phone": phone,
            },
            shipping_total=Decimal(rng.choice(("0", "2.99", "4.50"))),
            tax_total=Decimal("0"),
            items=items,
        )
        session.add(order)
        created.append(order)
    await session.flush()
    return created


async def _order(session: AsyncSession, connection_id: str, order_id: str) -> SandboxOrder | None:
    return await session.get(SandboxOrder, (connection_id, order_id))


# -- feeds -----------------------------------------------------------------------------------------------

FEED_KINDS = ("PriceStock", "Listings", "OrderUpdates")


async def submit_feed(
    session: AsyncSession,
    seller: SandboxSeller,
    now: datetime,
    client_feed_id: str,
    kind: str,
    lines: list[dict[str, Any]],
) -> SandboxFeed:
    """Accept a feed for asynchronous processing. The same client feed id always returns the same feed."""
    if kind not in FEED_KINDS:
        raise SandboxError(400, f"Feed kind is one of {', '.join(FEED_KINDS)}.")
    existing = await session.execute(
        select(SandboxFeed).where(
            SandboxFeed.connection_id == seller.connection_id, SandboxFeed.client_feed_id == client_feed_id
        )
    )
    feed = existing.scalar_one_or_none()
    if feed is not None:
        return feed
    seller.feed_seq += 1
    feed = SandboxFeed(
        connection_id=seller.connection_id,
        feed_id=f"F{seller.feed_seq:09d}",
        client_feed_id=client_feed_id,
        kind=kind,
        status="Processing",
        lines=lines,
        polls_remaining=1,
        processed=0,
        errors=[],
        published={},
        message="",
        submitted_at=now,
        processed_at=None,
    )
    session.add(feed)
    await session.flush()
    return feed


# A price & stock feed is applied this many lines per transaction (`poll_feed`, `applying`). In `serve` the
# sandbox shares the service's SQLite writer: a coalesced feed of 6,000 lines applied in one transaction held it
# 100-250 ms while the API's pushes waited (docs/decisions/0301).
FEED_CHUNK_LINES = 500


async def poll_feed(session: AsyncSession, seller: SandboxSeller, now: datetime, feed_id: str) -> SandboxFeed:
    """A feed's state, after applying what is due: at most `FEED_CHUNK_LINES` price & stock lines in this
    transaction. While `applying(feed)`, poll again (in a new transaction) to apply the rest."""
    feed = await session.get(SandboxFeed, (seller.connection_id, feed_id), with_for_update=True)
    if feed is None:
        raise SandboxError(404, "No such feed.")
    if feed.status != "Processing":
        return feed
    if feed.polls_remaining > 0:
        feed.polls_remaining -= 1
        return feed
    # A marketplace works through a seller's feeds in the order they were submitted: earlier feeds still waiting
    # are processed first, so an older feed (its submitter was slow to poll) never overwrites a newer one's values.
    earlier = await session.execute(
        select(SandboxFeed)
        .where(
            SandboxFeed.connection_id == seller.connection_id,
            SandboxFeed.status == "Processing",
            SandboxFeed.feed_id < feed.feed_id,
        )
        .order_by(SandboxFeed.feed_id)
        .with_for_update()
    )
    budget = FEED_CHUNK_LINES
    for older in earlier.scalars().all():
        budget -= await _process(session, seller, now, older, budget)
        if budget <= 0:
            return feed
    await _process(session, seller, now, feed, budget)
    return feed


def applying(feed: SandboxFeed) -> bool:
    """Whether the feed's processing has begun and the rest of it is due at the next poll."""
    return feed.status == "Processing" and feed.processed_at is not None


@dataclass
class _LineOutcome:
    errors: list[dict[str, Any]]
    processed: int


async def _process(session: AsyncSession, seller: SandboxSeller, now: datetime, feed: SandboxFeed, budget: int) -> int:
    """Apply the next lines of a feed exactly once: the lines a transaction applies and the feed's progress through
    them (`processed` + `errors`: every line is one or the other) are written together, and the feed leaves
    Processing in the transaction that applies its last line. Returns how many lines it took."""
    feed.processed_at = feed.processed_at or now
    start = feed.processed + len(feed.errors)
    if seller.feed_fault == "reject" and start == 0:
        feed.status, feed.message, feed.processed = "Rejected", "The feed was rejected: malformed document.", 0
        return 0
    if feed.kind == "OrderUpdates" and seller.platform != "P1":
        feed.status, feed.message = "Rejected", f"{seller.platform} accepts no order updates through its API."
        return 0
    faulted = rules.faulted_lines(seller.feed_fault, len(feed.lines))
    lines = feed.lines  # listings and order updates: a feed is applied whole
    if feed.kind == "PriceStock":
        lines = feed.lines[start : start + budget]
        faulted_here = {index - start for index in faulted if start <= index < start + len(lines)}
        outcome = await _apply_price_stock(session, seller, now, lines, faulted_here)
    elif feed.kind == "Listings":
        outcome = await _apply_listings(session, seller, now, feed, faulted)
    else:
        outcome = await _apply_order_updates(session, seller, now, lines, faulted)
    feed.errors = [*feed.errors, *outcome.errors]
    feed.processed += outcome.processed
    if start + len(lines) >= len(feed.lines):
        feed.status = "Done"
        feed.message = f"{feed.processed} processed, {len(feed.errors)} with errors."
    return max(len(lines), 1)


def _reference(line: dict[str, Any], key: str) -> str:
    return str(line.get("Reference") or line.get(key) or "")


async def _apply_price_stock(
    session: AsyncSession, seller: SandboxSeller, now: datetime, lines: list[dict[str, Any]], faulted: set[int]
) -> _LineOutcome:
    """Check every line, then write the accepted ones in one statement on the raw driver (at most
    `FEED_CHUNK_LINES` lines; the sandbox runs in the service's process by default, where 500 ORM objects, or Core's
    per-row parameter processing, cost the API's event loop ~20 ms a chunk). `faulted`: indexes within `lines`."""
    table = cast(Table, SandboxListing.__table__)
    known_rows = await session.execute(
        select(table.c.external_sku, table.c.listing_id).where(
            table.c.connection_id == seller.connection_id,
            table.c.external_sku.in_({str(line.get("ExternalSku")) for line in lines}),
        )
    )
    listing_ids: dict[str, str] = {sku: listing_id for sku, listing_id in known_rows}
    errors, updates = [], []
    known, accepts_zero_price = set(listing_ids), kind_of(seller.platform).accepts_zero_price
    driver = await session_driver(session)
    stamp = DriverSql(driver.postgres).time_value(now)
    for index, line in enumerate(lines):
        error = rules.price_stock_line_error(line, known, accepts_zero_price=accepts_zero_price)
        if error is None and index in faulted:
            error = "Value rejected by the marketplace (sandbox item-errors mode)."
        if error is not None:
            errors.append({"Reference": _reference(line, "ExternalSku"), "Message": error})
            continue
        price, quantity = line.get("Price"), line.get("Quantity")
        updates.append(
            (
                None if price is None else money_to_storage(Decimal(str(price))),
                None if quantity is None else int(quantity),
                stamp,
                seller.connection_id,
                listing_ids[line["ExternalSku"]],
            )
        )
    if updates:
        apply = statements.APPLY_PRICE_STOCK.text(driver.postgres)
        if len({row[4] for row in updates}) == len(updates):
            await driver.execute_rows(apply, updates)
        else:  # a listing named twice: each line applied in turn, as the marketplace would
            for row in updates:
                await driver.execute_rows(apply, [row])
        # Listings loaded as objects earlier in this transaction (another feed of the same poll) are now stale.
        for loaded in list(session.identity_map.values()):
            if isinstance(loaded, SandboxListing) and loaded.connection_id == seller.connection_id:
                session.expire(loaded)
    return _LineOutcome(errors, len(updates))


async def _apply_listings(
    session: AsyncSession, seller: SandboxSeller, now: datetime, feed: SandboxFeed, faulted: set[int]
) -> _LineOutcome:
    errors, processed, published = [], 0, {}
    category_required = kind_of(seller.platform).category_required_on_create
    for index, line in enumerate(feed.lines):
        reference = _reference(line, "Sku")
        category_id = line.get("CategoryId")
        provided = {"Images": bool(line.get("Images")), "BusinessPolicy": bool(line.get("BusinessPolicy"))}
        missing = [r for r in taxonomies.off_api_requirements(seller.platform, category_id) if not provided.get(r)]
        error = None
        if not line.get("Sku"):
            error = "A listing needs a SKU."
        elif category_required and not category_id and not line.get("ListingId"):
            error = "A category is required for a new listing."
        elif missing:
            # Nothing in the API can fill these: the merchant completes them in the marketplace's tools.
            error = "Missing " + ", ".join(missing) + "; complete the listing in the marketplace's seller tools."
        elif index in faulted:
            error = "Listing rejected by the marketplace (sandbox item-errors mode)."
        if error is not None:
            errors.append({"Reference": reference, "Message": error})
            continue
        price = Decimal(str(line["Price"])) if line.get("Price") is not None else None
        listing = await put_listing(
            session,
            seller,
            now,
            sku=str(line["Sku"]),
            price=price,
            quantity=line.get("Quantity"),
            listing_id=line.get("ListingId"),
            external_sku=line.get("ExternalSku"),
            title=line.get("Title"),
            category_id=category_id,
        )
        if category_id:
            listing.category_id = category_id
        if line.get("Attributes"):
            listing.attributes = {**(listing.attributes or {}), **line["Attributes"]}
        published[reference] = [listing.listing_id, listing.external_sku, listing.listing_url]
        processed += 1
    feed.published = published
    return _LineOutcome(errors, processed)


async def _apply_order_updates(
    session: AsyncSession, seller: SandboxSeller, now: datetime, lines: list[dict[str, Any]], faulted: set[int]
) -> _LineOutcome:
    errors, processed = [], 0
    changed: dict[str, SandboxOrder] = {}
    for index, line in enumerate(lines):
        reference = _reference(line, "MarketplaceItemId")
        order_id = str(line.get("MarketplaceOrderId") or "")
        order = changed.get(order_id) or await _order(session, seller.connection_id, order_id)
        items = [dict(item) for item in order.items] if order is not None else []
        item = next((i for i in items if i.get("ItemId") == line.get("MarketplaceItemId")), None)
        error = rules.order_update_error(line, item)
        if error is None and index in faulted:
            error = "Update refused by the marketplace (sandbox item-errors mode)."
        if error is not None or order is None or item is None:
            errors.append({"Reference": reference, "Message": error or "No such order item."})
            continue
        action, details = line["Action"], line.get("Details") or {}
        item["Status"] = {"Confirm": "Shipped", "Cancel": "Cancelled", "Refund": "Refunded"}[action]
        if action == "Confirm":
            item["Shipment"] = {k: details.get(k) for k in ("CarrierCode", "CarrierName", "TrackingNumber", "ShipDate")}
        # Reassign (not mutate) so the JSON column sees the change.
        order.items = items
        order.status = rules.order_status([str(i["Status"]) for i in items])
        changed[order_id] = order
        processed += 1
    for order in changed.values():
        seller.change_seq += 1
        order.change_seq, order.changed_at = seller.change_seq, now
    return _LineOutcome(errors, processed)


@dataclass(frozen=True)
class KnownListing:
    """A listing the seller already has (the demo seeds the marketplace from the listings map)."""

    sku: str
    listing_id: str | None
    external_sku: str | None
    title: str | None
    category_id: str | None
    price: Decimal | None
    quantity: int | None


async def seed_listings(
    session: AsyncSession, seller: SandboxSeller, now: datetime, known: Sequence[KnownListing]
) -> dict[str, SandboxListing]:
    """Make sure the marketplace holds each listing (idempotent); returns them by merchant SKU."""
    existing = (
        (await session.execute(select(SandboxListing).where(SandboxListing.connection_id == seller.connection_id)))
        .scalars()
        .all()
    )
    by_id = {row.listing_id: row for row in existing}
    by_external = {row.external_sku: row for row in existing}
    found: dict[str, SandboxListing] = {}
    for item in known:
        external_sku = item.external_sku or item.sku
        row = (by_id.get(item.listing_id) if item.listing_id else None) or by_external.get(external_sku)
        if row is None:
            new_id = item.listing_id or _next_listing_id(seller)
            row = SandboxListing(
                connection_id=seller.connection_id,
                listing_id=new_id,
                sku=item.sku,
                external_sku=external_sku,
                listing_url=listing_url(seller.platform, seller.country, new_id),
                title=item.title,
                category_id=item.category_id,
                attributes={},
                price=item.price,
                quantity=item.quantity,
                feed_updates=0,
                updated_at=now,
            )
            session.add(row)
            by_id[new_id], by_external[external_sku] = row, row
        found[item.sku] = row
    await session.flush()
    return found
