"""Use cases of the inventory (the account's products): reads, the price/stock push, Data Flow, InventoryChanged,
file import.

`apply_inventory_changes` is the one place price and stock move, whoever moves them (the API push,
the file import, product create, the marketplace listing mirror): it writes only what differs, moves
LastModifiedDate of what changed and records one InventoryChanged event per batch, all inside the
caller's transaction.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import DriverReader
from marketsync.http.errors import Conflict, NotFound, ValidationFailed
from marketsync.inventory import repository, rules
from marketsync.inventory.repository import ListingView, ProductWrite
from marketsync.inventory.rules import (
    DATA_KINDS,
    DATA_OWNERS,
    DEFAULT_DATA_OWNER,
    MAX_PUSH_ITEMS,
    AppliedChange,
    ChangeSource,
    DataKind,
    DataOwner,
    ImportRowError,
    PushItem,
    PushOutcome,
    SkuChange,
    StoredProduct,
)
from marketsync.jobs import service as jobs
from marketsync.jobs.types import InventoryImportPayload
from marketsync.kit.ids import new_id
from marketsync.models import Product
from marketsync.models.inventory import InventoryImport
from marketsync.runtime import Runtime
from marketsync.webhooks.outbox import record_event, record_event_on_driver

__all__ = [
    "AppliedChange",
    "BatchOutcome",
    "ChangeSource",
    "ImportReport",
    "Propagation",
    "PushItem",
    "PushResult",
    "SkuChange",
    "apply_inventory_changes",
    "data_flow_warnings",
    "data_owner",
    "data_owners",
    "get_import",
    "get_product",
    "hand_edit_warnings",
    "import_inventory",
    "import_inventory_file",
    "imports_with_failed_rows",
    "list_products",
    "product_count",
    "product_document",
    "products_page",
    "propagate_to_listings",
    "push_price_quantity",
    "recent_imports",
    "record_first_values",
    "run_import",
    "set_data_owner",
    "start_import",
]


@dataclass
class BatchOutcome:
    """What one batch did: the changes written, and the products left alone or failed."""

    applied: list[AppliedChange] = field(default_factory=list)
    unchanged: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    occurred_at: datetime | None = None


# --- the one write path of price and stock --------------------------------------------------------


async def apply_inventory_changes(
    rt: Runtime, session: AsyncSession, account_id: str, changes: Sequence[SkuChange], source: ChangeSource
) -> list[AppliedChange]:
    """Set price/stock of products (by id) in the caller's transaction; returns what actually moved.

    Several changes for one product collapse to the last. Products of another account are ignored.
    Nothing moved: nothing written, no event.
    """
    latest = {change.product_id: change for change in changes}
    stored = await repository.lock_products_by_id(session, account_id, list(latest))
    outcome = await _apply_locked(rt, session, account_id, stored, list(latest.values()), source)
    return outcome.applied


def record_first_values(
    session: AsyncSession,
    account_id: str,
    product: Product,
    source: ChangeSource,
) -> AppliedChange | None:
    """A product inserted by this transaction with its first values: the InventoryChanged that
    `apply_inventory_changes` records when it moves a new product's values (no price, quantity 0) to these, without
    reading back (and locking) a row no other transaction can see yet. Nothing moved (no price, quantity 0): no event.
    """
    price = product.price
    quantity = product.quantity if product.quantity != 0 else None
    if price is None and quantity is None:
        return None
    change = AppliedChange(product.id, product.sku, price, quantity)
    record_event(
        session,
        account_id,
        "InventoryChanged",
        rules.inventory_changed_payload(product.modified_at, source, [change]),
        product.modified_at,
    )
    return change


async def _apply_locked(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    stored: Sequence[StoredProduct],
    changes: Sequence[SkuChange],
    source: ChangeSource,
    *,
    isolate: bool | None = None,
) -> BatchOutcome:
    """The shared core, on rows the caller already locked (`isolate`: see repository.write_product_values)."""
    # Taken after the row locks: writers of the same products see increasing times in commit order.
    now = rt.clock.now()
    by_id = {product.id: product for product in stored}
    outcome = BatchOutcome(occurred_at=now)
    moves: list[tuple[StoredProduct, AppliedChange]] = []
    for change in changes:
        product = by_id.get(change.product_id)
        if product is None:
            outcome.missing.add(change.product_id)
            continue
        price, quantity = rules.moved_values(product, change)
        if price is None and quantity is None:
            outcome.unchanged.add(product.id)
            continue
        moves.append((product, AppliedChange(product.id, product.sku, price, quantity)))
    if not moves:
        return outcome
    # LastModifiedDate one microsecond apart in SKU order (rules.modification_times)
    moves.sort(key=lambda move: (move[0].sku, move[0].id))
    writes = [
        ProductWrite(
            product.id,
            change.price if change.price is not None else product.price,
            change.quantity if change.quantity is not None else product.quantity,
            product.address,
        )
        for product, change in moves
    ]
    outcome.failed = await repository.write_product_values(session, writes, now, isolate=isolate)
    outcome.applied = [change for _, change in moves if change.product_id not in outcome.failed]
    if outcome.applied:
        payload = rules.inventory_changed_payload(now, source, outcome.applied)
        if isolate is False:  # the push's batch on the raw driver: its event too (docs/decisions/0462)
            await record_event_on_driver(session, account_id, "InventoryChanged", payload, now)
        else:
            record_event(session, account_id, "InventoryChanged", payload, now)
    return outcome


# --- POST /api/inventory/price-quantity -----------------------------------------------------------


class PushResultLine(NamedTuple):
    sku: str
    result: PushOutcome
    # Index of the winning occurrence in the request (the import maps it back to a file line).
    position: int


@dataclass
class PushResult:
    results: list[PushResultLine]
    job_ids: list[str]
    warnings: list[str]
    changed_count: int = 0

    def count(self, outcome: PushOutcome) -> int:
        return sum(1 for line in self.results if line.result == outcome)

    def counts(self) -> dict[str, int]:
        """Every outcome's count (spec §4 response: Updated, Unchanged, NotFound, Ambiguous, Failed)."""
        counted: dict[str, int] = dict.fromkeys(rules.PUSH_OUTCOMES, 0)
        for line in self.results:
            counted[line.result] += 1
        return counted


async def push_price_quantity_committed(
    rt: Runtime,
    account_id: str,
    items: Sequence[PushItem],
    *,
    propagate: bool,
    source: ChangeSource | None = None,
    then: Callable[[AsyncSession, PushResult], Awaitable[None]] | None = None,
) -> PushResult:
    """`push_price_quantity` in a transaction of its own, committed (and `then(session, result)` inside it).

    The batch is written in one statement without a savepoint: isolation costs nothing while every SKU writes.
    If a row fails, the transaction is rolled back whole (nothing of it stays, no event, no job) and the push runs
    again with each SKU in its own savepoint, so only the failing SKUs come back Failed (spec §4, rule 4).
    """
    try:
        async with rt.db.transaction() as session:
            result = await push_price_quantity(
                rt, session, account_id, items, propagate=propagate, source=source, isolate=False
            )
            if then is not None:
                await then(session, result)
        return result
    except repository.BatchWriteFailed:
        pass
    async with rt.db.transaction() as session:
        result = await push_price_quantity(rt, session, account_id, items, propagate=propagate, source=source)
        if then is not None:
            await then(session, result)
    return result


async def push_price_quantity(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    items: Sequence[PushItem],
    *,
    propagate: bool,
    source: ChangeSource | None = None,
    isolate: bool = True,
) -> PushResult:
    """Spec §4 price/stock push, in the caller's transaction: collapse repeats, match SKUs, write what
    differs (one failing SKU never stops the rest), one event, one job per affected connection.

    `isolate=False` writes the batch in one statement and raises repository.BatchWriteFailed if a row fails (the
    caller rolls back and runs it again isolated: `push_price_quantity_committed`)."""
    if not 1 <= len(items) <= MAX_PUSH_ITEMS:
        raise ValidationFailed(errors={"Items": [f"Send 1 to {MAX_PUSH_ITEMS} items."]})
    source = source or ChangeSource(writer="MerchantPush", channel="Api")
    stored = await repository.lock_products_by_sku_keys(
        session, account_id, {rules.sku_key(item.sku) for item in items}
    )
    candidates: dict[str, list[StoredProduct]] = defaultdict(list)
    for product in stored:
        candidates[rules.sku_key(product.sku)].append(product)
    # Repeats (also case variants naming one product) collapse to their last occurrence (docs/decisions/0022).
    resolved = rules.resolve_push(items, candidates)
    changes = [
        SkuChange(entry.match.id, entry.item.price, entry.item.quantity)
        for entry in resolved
        if isinstance(entry.match, StoredProduct)
    ]
    outcome = await _apply_locked(rt, session, account_id, stored, changes, source, isolate=None if isolate else False)
    applied_ids = {change.product_id for change in outcome.applied}

    results = [
        PushResultLine(entry.item.sku, rules.push_outcome(entry.match, outcome.failed, applied_ids), entry.position)
        for entry in resolved
    ]

    warnings = await data_flow_warnings(
        session,
        account_id,
        sends_price=any(entry.item.price is not None for entry in resolved),
        sends_quantity=any(entry.item.quantity is not None for entry in resolved),
    )
    propagation = await propagate_to_listings(
        rt,
        session,
        account_id,
        applied_ids if propagate else set(),
        zero_priced=rules.zero_priced(resolved, outcome.failed),
    )
    return PushResult(
        results=results,
        job_ids=propagation.job_ids,
        warnings=warnings + propagation.warnings,
        changed_count=len(outcome.applied),
    )


async def data_flow_warnings(
    session: AsyncSession, account_id: str, *, sends_price: bool, sends_quantity: bool
) -> list[str]:
    """The drift message of each kind sent that a marketplace owns (spec sections 1 and 4, Data Flow)."""
    owners = await repository.data_flows(session, account_id)
    return rules.drift_warnings(owners, sends_price=sends_price, sends_quantity=sends_quantity)


async def hand_edit_warnings(
    session: AsyncSession, account_id: str, product: Product, *, sent_price: bool, sent_quantity: bool, pushed: bool
) -> list[str]:
    """The warnings a push of this one product carried, derived again from the account's state (the app's page
    after the redirect of a hand edit, docs/decisions/0341): Data Flow drift, a zero price a marketplace refuses,
    a connection that needs reauthorisation (only when its push was scheduled)."""
    warnings = await data_flow_warnings(session, account_id, sends_price=sent_price, sends_quantity=sent_quantity)
    zero_priced = {product.id: product.sku} if sent_price and product.price == 0 else {}
    if not (pushed or zero_priced):
        return warnings
    listed = await repository.listed_on_active_connections(session, account_id, [product.id])
    warnings += rules.zero_price_warnings(
        [(on.platform, on.country, product.id) for on in listed.values()], zero_priced
    )
    if pushed:
        warnings += [
            rules.reauthorization_warning(name)
            for name in sorted({(on.platform, on.country) for on in listed.values() if on.requires_reauthorization})
        ]
    return warnings


@dataclass(frozen=True)
class Propagation:
    job_ids: list[str]  # the PriceStockPush jobs, in connection id order
    warnings: list[str]


async def propagate_to_listings(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    moved: Collection[str],
    *,
    zero_priced: Mapping[str, str] | None = None,
    skip_connection: str | None = None,
) -> Propagation:
    """The outbound write of products whose values moved (ids), in the caller's transaction: one PriceStockPush per
    active connection listing any of them, every listing of each (spec §4, PropagateToListings true). Whoever moves
    price or stock and sends it on goes through here: the push, the file import, product create (0308).

    `zero_priced` (product id -> SKU, pushed at price 0) only adds the warning of the marketplaces that refuse a zero
    price (0027). `skip_connection`: a connection the caller sends the values to itself (create's publish feed)."""
    zero_priced = zero_priced or {}
    if not (moved or zero_priced):
        return Propagation([], [])
    # Listings are read only when something is to be sent, or a zero price to be warned about.
    listed = await repository.listed_on_active_connections(session, account_id, sorted({*moved, *zero_priced}))
    warnings = rules.zero_price_warnings(
        [
            (on.platform, on.country, product_id)
            for on in listed.values()
            for product_id in on.product_ids
            if product_id in zero_priced
        ],
        zero_priced,
    )
    per_connection = {
        marketplace_id: products
        for marketplace_id, on in sorted(listed.items())
        if marketplace_id != skip_connection and (products := [p for p in on.product_ids if p in moved])
    }
    if not per_connection:
        return Propagation([], warnings)
    job_ids = await jobs.enqueue_price_stock_pushes(
        session, rt.clock.now(), account_id, per_connection, hold_s=rt.settings.propagation_hold_s
    )
    # A connection only a person can repair (spec: RequiresReauthorization): the job will fail (0027).
    warnings.extend(
        rules.reauthorization_warning(name)
        for name in sorted(
            {
                (listed[marketplace_id].platform, listed[marketplace_id].country)
                for marketplace_id in per_connection
                if listed[marketplace_id].requires_reauthorization
            }
        )
    )
    return Propagation(job_ids, warnings)


# --- product reads --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProductView:
    product: Product
    listings: list[ListingView]


async def list_products(
    session: AsyncSession,
    account_id: str,
    *,
    sku: str | None,
    modified_since: datetime | None,
    limit: int,
    offset: int,
) -> tuple[list[ProductView], int]:
    key = rules.sku_key(sku) if sku is not None else None
    products = await repository.list_products(
        session, account_id, key=key, modified_since=modified_since, limit=limit, offset=offset
    )
    total = await repository.count_products(session, account_id, key=key, modified_since=modified_since)
    return await _with_listings(session, account_id, products), total


async def product_count(session: AsyncSession, account_id: str) -> int:
    """The account's products (kept by the triggers: decision 0298)."""
    return await repository.count_products(session, account_id, key=None, modified_since=None)


async def product_table(
    session: AsyncSession, account_id: str, *, sort: str, descending: bool, limit: int, offset: int
) -> list[ProductView]:
    """The app's catalogue (docs/decisions/0436-app-tables.md): a page sorted by SKU, price, stock or last change,
    with its listings. Its caption's count is `product_count`'s, which the page reads first to choose its sorts."""
    products = await repository.table_of_products(
        session, account_id, sort=sort, descending=descending, limit=limit, offset=offset
    )
    return await _with_listings(session, account_id, products)


async def search_products(
    session: AsyncSession, account_id: str, text_: str, *, after: str | None, limit: int
) -> list[ProductView]:
    """The app's catalogue search: products whose SKU starts with `text_`, letter case ignored, in SKU order, a page
    after the product with SKU `after` (the previous page's last). One bounded range of the SKU index whatever the
    catalogue's size; titles are not searched (docs/decisions/0336-catalogue-search.md)."""
    prefix = rules.sku_key(text_)
    cursor = (rules.sku_key(after), after) if after is not None else None
    products = await repository.products_with_key_prefix(session, account_id, prefix, after=cursor, limit=limit)
    return await _with_listings(session, account_id, products)


async def get_product(session: AsyncSession, account_id: str, sku: str) -> ProductView:
    """Case-insensitive; exact casing wins; several case variants and none exact is a conflict."""
    products = await repository.products_by_sku_key(session, account_id, rules.sku_key(sku))
    if not products:
        raise NotFound("No product with this SKU.")
    exact = [product for product in products if product.sku == sku]
    if exact:
        chosen = exact[0]
    elif len(products) == 1:
        chosen = products[0]
    else:
        raise Conflict(
            f"{len(products)} products differ from this SKU only by letter case and none matches it exactly; "
            "request one of them with its exact casing."
        )
    return (await _with_listings(session, account_id, [chosen]))[0]


# With ModifiedSince, TotalCount counts this many products past Offset at most (docs/decisions/0241).
WALK_COUNT_AHEAD = 10_000


def _wire_time(stored: Any) -> str:
    """LastModifiedDate on the wire from the driver's value: naive UTC text (SQLite) or naive UTC datetime."""
    if isinstance(stored, str):
        if len(stored) == 26:  # 'YYYY-MM-DD HH:MM:SS.ffffff', the form UTCDateTime stores
            return f"{stored[:10]}T{stored[11:]}Z"
        stored = datetime.fromisoformat(stored)
    if stored.tzinfo is None:
        # Naive UTC, as stored: the text `wire_timestamp` gives without its time-zone conversion (a page spent ~40%
        # of its response building converting 200 of them: docs/perf/inventory.md, 2026-11-28).
        return f"{stored.isoformat(timespec='microseconds')}Z"
    return rules.wire_timestamp(stored.replace(tzinfo=UTC))


async def products_page(
    reader: DriverReader,
    account_id: str,
    *,
    sku: str | None,
    modified_since: datetime | None,
    limit: int,
    offset: int,
) -> dict[str, Any]:
    """The products List response (spec §4) on the raw driver, one snapshot: the page, TotalCount, the listings."""
    key = rules.sku_key(sku) if sku is not None else None
    # A ModifiedSince walk counts at most WALK_COUNT_AHEAD products past Offset, so a page's cost does not grow
    # with the catalogue (docs/decisions/0241-walk-total-count.md); exact whenever fewer remain.
    at_most = offset + WALK_COUNT_AHEAD if modified_since is not None else None
    if reader.postgres:
        return await _products_page_postgres(reader, account_id, key, modified_since, limit, offset, at_most)
    rows = await repository.page_of_products(
        reader, account_id, key=key, modified_since=modified_since, limit=limit, offset=offset
    )
    total = await repository.count_of_products(
        reader, account_id, key=key, modified_since=modified_since, at_most=at_most
    )
    listings = await repository.listing_documents(reader, account_id, [row[0] for row in rows])
    return {
        "Products": [
            {
                "Sku": sku_,
                "Quantity": quantity,
                "LastModifiedDate": _wire_time(modified_at),
                "Listings": listings.get(product_id, []),
            }
            for product_id, sku_, quantity, modified_at in rows
        ],
        "TotalCount": total,
    }


async def _products_page_postgres(
    reader: DriverReader,
    account_id: str,
    key: str | None,
    modified_since: datetime | None,
    limit: int,
    offset: int,
    at_most: int | None,
) -> dict[str, Any]:
    """`products_page` on PostgreSQL: the same response from one statement, whose rows come unordered (one snapshot
    and one round trip where the driver reader's autocommit took three of each: docs/decisions/0342)."""
    rows = await repository.page_statement(
        reader, account_id, key=key, modified_since=modified_since, limit=limit, offset=offset, at_most=at_most
    )
    total = 0
    products: dict[int, dict[str, Any]] = {}
    listings: list[Sequence[Any]] = []
    for row in rows:
        if row[2] is not None:  # a product: position, sku, quantity, modified_at
            products[row[1]] = {
                "Sku": row[2],
                "Quantity": row[3],
                "LastModifiedDate": _wire_time(row[4]),
                "Listings": [],
            }
        elif row[0] is None:
            listings.append(row)
        else:
            total = row[0]
    # Each product's listings by platform then country, as the separate read's ORDER BY: both are codes in ASCII
    # capitals and digits (kinds.MarketplaceKind: P1, UK), which every collation orders as code points.
    listings.sort(key=_LISTING_ORDER)
    for row in listings:
        products[row[1]]["Listings"].append(repository.listing_document(row[5], row[6], row[7], row[8], row[9]))
    return {"Products": [products[position] for position in sorted(products)], "TotalCount": int(total)}


# A listing row of `repository.page_statement_sql`: its product's position, platform, country.
_LISTING_ORDER = itemgetter(1, 5, 6)


async def product_document(reader: DriverReader, account_id: str, sku: str) -> dict[str, Any]:
    """`GET /api/products/{sku}` (spec §4) on the raw driver: exact casing wins; several case variants and none
    exact is a conflict."""
    rows = await repository.products_of_key(reader, account_id, rules.sku_key(sku))
    if not rows:
        raise NotFound("No product with this SKU.")
    exact = [row for row in rows if row[1] == sku]
    if exact:
        chosen = exact[0]
    elif len(rows) == 1:
        chosen = rows[0]
    else:
        raise Conflict(
            f"{len(rows)} products differ from this SKU only by letter case and none matches it exactly; "
            "request one of them with its exact casing."
        )
    listings = await repository.listing_documents(reader, account_id, [chosen[0]])
    return {"Product": {"Sku": chosen[1], "Quantity": chosen[2], "Listings": listings.get(chosen[0], [])}}


async def _with_listings(session: AsyncSession, account_id: str, products: Sequence[Product]) -> list[ProductView]:
    listings: dict[str, list[ListingView]] = defaultdict(list)
    for listing in await repository.listings_of(session, account_id, [p.id for p in products]):
        listings[listing.product_id].append(listing)
    return [ProductView(product, listings.get(product.id, [])) for product in products]


# --- Data Flow ------------------------------------------------------------------------------------


async def data_owner(session: AsyncSession, account_id: str, kind: DataKind) -> DataOwner:
    """Who owns the kind's value for this account; Marketplace until the merchant sets it."""
    return (await repository.data_flows(session, account_id)).get(kind, DEFAULT_DATA_OWNER)


async def data_owners(session: AsyncSession, account_id: str) -> dict[DataKind, DataOwner]:
    owners = await repository.data_flows(session, account_id)
    return {kind: owners.get(kind, DEFAULT_DATA_OWNER) for kind in DATA_KINDS}


async def set_data_owner(
    rt: Runtime, session: AsyncSession, account_id: str, kind: str, owner: str
) -> tuple[DataKind, DataOwner]:
    chosen_kind = rules.normalise_choice(kind, DATA_KINDS)
    chosen_owner = rules.normalise_choice(owner, DATA_OWNERS)
    problems: dict[str, list[str]] = {}
    if chosen_kind is None:
        problems["Kind"] = ["One of Price, Stock."]
    if chosen_owner is None:
        problems["Owner"] = ["One of Merchant (your own system), Marketplace."]
    if problems:
        raise ValidationFailed(errors=problems)
    if not await repository.account_exists(session, account_id):
        raise NotFound("No account with this id.")
    typed_kind: DataKind = "Price" if chosen_kind == "Price" else "Stock"
    typed_owner: DataOwner = "Merchant" if chosen_owner == "Merchant" else "Marketplace"
    await repository.set_data_flow(session, account_id, typed_kind, typed_owner, rt.clock.now())
    return typed_kind, typed_owner


# --- file import (channel FileImport) -------------------------------------------------------------

# The app keeps the first rows not applied for its report (the counts stay exact): a file of nothing but
# bad rows must not make every batch rewrite megabytes of report (docs/decisions/0123-app-imports.md).
STORED_ERRORS_MAX = 5_000


@dataclass
class ImportReport:
    rows: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(rules.PUSH_OUTCOMES, 0))
    invalid: int = 0
    # Rows a later row of the file replaced (the same product): not applied, listed among the errors.
    superseded: int = 0
    events: int = 0
    job_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[ImportRowError] = field(default_factory=list)

    def view(self, max_errors: int | None = None) -> dict[str, Any]:
        """The report as the CLI's `--json` and the app show it."""
        errors = self.errors if max_errors is None else self.errors[:max_errors]
        return {
            "Rows": self.rows,
            **self.counts,
            "Invalid": self.invalid,
            "Superseded": self.superseded,
            "Events": self.events,
            "JobIds": self.job_ids,
            "Warnings": self.warnings,
            "Errors": [{"Line": e.line, "Sku": e.sku, "Error": e.message} for e in errors],
        }

    @classmethod
    def of_view(cls, view: dict[str, Any]) -> ImportReport:
        return cls(
            rows=view["Rows"],
            counts={outcome: view[outcome] for outcome in rules.PUSH_OUTCOMES},
            invalid=view["Invalid"],
            superseded=view.get("Superseded", 0),  # a report saved before rows were superseded
            events=view["Events"],
            job_ids=list(view["JobIds"]),
            warnings=list(view["Warnings"]),
            errors=[ImportRowError(e["Line"], e["Sku"], e["Error"]) for e in view["Errors"]],
        )


# Called inside each batch's transaction, after the batch is applied: (session, report so far, last line).
BatchHook = Callable[[AsyncSession, ImportReport, int], Awaitable[None]]


def read_import_rows(handle: TextIO) -> Iterator[tuple[int, PushItem | ImportRowError]]:
    """(line number, parsed row) for each data row; a bad header raises ValidationFailed."""
    for line, row in _raw_import_rows(handle):
        yield line, rules.parse_import_row(line, row)


def _raw_import_rows(handle: TextIO) -> Iterator[tuple[int, dict[str, str | None]]]:
    """(line number of the row's end, cells by column) for each data row, blank rows skipped; a bad header or a row
    that is not CSV raises ValidationFailed naming the line the row starts on."""
    reader = csv.reader(handle, strict=True)
    lines_read = 0  # by the rows returned: the reader's own count includes the lines of a row it refused
    try:
        header = next(reader, None)
        lines_read = reader.line_num
        if problem := rules.import_header_problem(header):
            raise ValidationFailed(problem, errors={"File": [problem]})
        assert header is not None  # checked above
        for cells in reader:
            lines_read = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue  # blank line
            # As csv.DictReader: a missing cell is None, cells past the header are not the row's; a repeated column
            # name keeps its last cell.
            yield lines_read, {name: cells[i] if i < len(cells) else None for i, name in enumerate(header)}
    except csv.Error as exc:
        raise _not_csv(lines_read, exc) from None


def _not_csv(lines_read: int, exc: csv.Error) -> ValidationFailed:
    """Strict CSV: an unclosed quote would otherwise take every later row into one cell, and `"1"2` read as 12. The
    bad row starts on the line after the rows read."""
    problem = f"The row on line {lines_read + 1} is not valid CSV ({exc}); check its quotes."
    return ValidationFailed(problem, errors={"File": [problem]})


def _sku_cell(row: dict[str, str | None]) -> str:
    """The row's SKU as `rules.parse_import_row` reads it (the last Sku column)."""
    cells = [(value or "").strip() for key, value in row.items() if (key or "").strip().lower() == "sku"]
    return cells[-1] if cells else ""


async def import_inventory_file(
    rt: Runtime,
    account_id: str,
    path: Path,
    *,
    propagate: bool = True,
    on_progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """`marketsync admin import-inventory`: `import_inventory` over a file on disk."""

    async def progressed(_session: AsyncSession, report: ImportReport, _line: int) -> None:
        if on_progress is not None:
            on_progress(report.rows - done[0])
            done[0] = report.rows

    done = [0]
    _check_text_file(path)
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return await import_inventory(rt, account_id, handle, propagate=propagate, after_batch=progressed)


def _check_text_file(path: Path) -> None:
    """Refuse a file that is not UTF-8 text, or holds NUL characters, naming its first such line, before anything
    is applied (as an upload in the app is refused whole). Read by lines: a newline byte never falls inside a UTF-8
    sequence, so a line decodes on its own, and a large file is never held whole."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    line = 0
    with path.open("rb") as handle:
        try:
            for line, raw in enumerate(handle, start=1):
                if "\x00" in decoder.decode(raw):
                    raise ValidationFailed(errors={"File": [_HOLDS_NUL.format(line=line)]})
            decoder.decode(b"", final=True)  # a sequence cut short at the end of the file
        except UnicodeDecodeError:
            raise ValidationFailed(errors={"File": [_NOT_UTF8.format(line=max(line, 1))]}) from None


async def import_inventory(
    rt: Runtime,
    account_id: str,
    handle: TextIO,
    *,
    propagate: bool = True,
    after_batch: BatchHook | None = None,
    resume_after_line: int = 0,
    report: ImportReport | None = None,
) -> ImportReport:
    """The price/stock import of the CLI and the app: batches of 500 rows, one transaction and at most one
    InventoryChanged event per batch (writer MerchantPush, channel FileImport).

    This is an edge (like a task body): it commits once per batch. A bad row is reported with its line
    number and never stops the rest. `resume_after_line` and `report` continue an import a crash interrupted:
    rows up to that line were applied, in the transaction that also recorded them in `report`.
    """
    async with rt.db.read() as session:
        if not await repository.account_exists(session, account_id):
            raise NotFound("No account with this id.")
    source = ChangeSource(writer="MerchantPush", channel="FileImport")
    start = handle.tell()
    superseded_by = await _superseded_rows(rt, account_id, handle)
    handle.seek(start)
    report = report or ImportReport()
    warnings: set[str] = set(report.warnings)
    batch: list[tuple[int, PushItem]] = []
    last_line = resume_after_line
    unflushed = 0  # rows read since the last batch was committed

    async def record(session: AsyncSession, result: PushResult | None) -> None:
        """The batch's outcome into the report, in the batch's transaction (run once, by the attempt committed)."""
        if result is not None:
            report.events += 1 if result.changed_count else 0
            report.job_ids.extend(result.job_ids)
            warnings.update(result.warnings)
            for line_result in result.results:
                report.counts[line_result.result] += 1
                if line_result.result in ("NotFound", "Ambiguous", "Failed"):
                    line = batch[line_result.position][0]
                    message = _IMPORT_MESSAGES[line_result.result]
                    report.errors.append(ImportRowError(line, line_result.sku, message))
            # Repeats the look ahead did not see (a product created meanwhile): the push kept the last of each.
            kept = {line_result.position for line_result in result.results}
            for position, (line, item) in enumerate(batch):
                if position not in kept:
                    report.superseded += 1
                    report.errors.append(ImportRowError(line, item.sku, _superseded_message(None)))
        report.errors.sort(key=lambda error: error.line)
        report.warnings = sorted(warnings)
        if after_batch is not None:
            await after_batch(session, report, last_line)

    async def flush() -> None:
        nonlocal unflushed
        if batch:
            await push_price_quantity_committed(
                rt, account_id, [item for _, item in batch], propagate=propagate, source=source, then=record
            )
        else:
            async with rt.db.transaction() as session:
                await record(session, None)
        batch.clear()
        unflushed = 0

    for line, parsed in read_import_rows(handle):
        if line <= resume_after_line:
            continue
        last_line = line
        report.rows += 1
        unflushed += 1
        if isinstance(parsed, ImportRowError):
            report.invalid += 1
            report.errors.append(parsed)
        elif line in superseded_by:
            report.superseded += 1
            report.errors.append(ImportRowError(line, parsed.sku, _superseded_message(superseded_by[line])))
        else:
            batch.append((line, parsed))
        if unflushed == MAX_PUSH_ITEMS:
            await flush()
    if unflushed or report.rows == 0:
        await flush()
    return report


async def _superseded_rows(rt: Runtime, account_id: str, handle: TextIO) -> dict[int, int]:
    """Line of each row a later row of the file replaces -> line of that last row (spec §4 rule 2 over the whole
    file: a SKU repeated collapses to its last occurrence, by the product it names). Read ahead, before the first
    batch, so that the earlier rows are never applied: in different batches both would be (0026, Amendment)."""
    # The SKU cells alone first (parsing every row's values would double the import's parsing), then the rows of
    # the repeated SKUs in full: an invalid row replaces nothing.
    start = handle.tell()
    reader = csv.reader(handle, strict=True)
    seen: set[str] = set()
    repeated_keys: set[str] = set()
    lines_read = 0  # by the rows returned: the reader's own count includes the lines of a row it refused
    try:
        header = [(name or "").strip().lower() for name in next(reader, [])]
        lines_read = reader.line_num
        if "sku" not in header:
            return {}  # the import's own read refuses the header
        column = len(header) - 1 - header[::-1].index("sku")  # the last Sku column, as the row parser reads it
        for cells in reader:
            lines_read = reader.line_num
            key = rules.sku_key(cells[column].strip()) if column < len(cells) else ""
            if key in seen:
                repeated_keys.add(key)
            seen.add(key)
    except csv.Error as exc:
        raise _not_csv(lines_read, exc) from None
    repeated_keys.discard("")  # rows without a SKU are invalid (and blank lines): they replace nothing
    if not repeated_keys:
        return {}
    handle.seek(start)
    rows_of_key: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line, row in _raw_import_rows(handle):
        if rules.sku_key(_sku_cell(row)) in repeated_keys:
            parsed = rules.parse_import_row(line, row)
            if isinstance(parsed, PushItem):
                rows_of_key[rules.sku_key(parsed.sku)].append((line, parsed.sku))
    repeated = {key: rows for key, rows in rows_of_key.items() if len(rows) > 1}
    if not repeated:
        return {}
    candidates: dict[str, list[StoredProduct]] = defaultdict(list)
    keys = sorted(repeated)
    async with rt.db.read() as session:
        for first in range(0, len(keys), MAX_PUSH_ITEMS):
            for product in await repository.products_of_sku_keys(
                session, account_id, keys[first : first + MAX_PUSH_ITEMS]
            ):
                candidates[rules.sku_key(product.sku)].append(product)
    superseded_by: dict[int, int] = {}
    for key, rows in repeated.items():
        last_of_group: dict[tuple[str, str], int] = {}
        for line, sku in reversed(rows):
            group = rules.repeat_group(sku, rules.resolve_sku(sku, candidates.get(key, ())))
            if group in last_of_group:
                superseded_by[line] = last_of_group[group]
            else:
                last_of_group[group] = line
    return superseded_by


def _superseded_message(by_line: int | None) -> str:
    later = f"line {by_line}" if by_line is not None else "a later row"
    return f"Superseded by {later}, for the same product: only the last row of a product is applied."


# --- imports uploaded in the app (docs/decisions/0123-app-imports.md) -----------------------------------------


# What refuses a file that is not text, in the app and the CLI alike, naming the first line at fault.
_NOT_UTF8 = "Line {line} is not UTF-8 text; save the file as CSV (UTF-8)."
_HOLDS_NUL = "Line {line} holds a NUL character; save the file as CSV (UTF-8)."


def _file_text(content: bytes) -> str:
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content.count(b"\n", 0, exc.start + (3 if content.startswith(codecs.BOM_UTF8) else 0)) + 1
        raise ValidationFailed(errors={"File": [_NOT_UTF8.format(line=line)]}) from None
    if (nul := text.find("\x00")) >= 0:
        raise ValidationFailed(errors={"File": [_HOLDS_NUL.format(line=text.count("\n", 0, nul) + 1)]})
    return text


class ImportFile(NamedTuple):
    """An uploaded file read whole once and found to be a price/stock CSV: its bytes and its count of data rows."""

    content: bytes
    rows: int


def checked_import_file(content: bytes) -> ImportFile:
    """Refuse a file that is not a price/stock CSV at all (encoding, header, a row that is not CSV), counting its rows.
    Pure CPU (half a second for 2 MB): callers run it before their transaction, off the event loop."""
    text = _file_text(content)
    return ImportFile(content, sum(1 for _ in _raw_import_rows(io.StringIO(text, newline=""))))


async def start_import(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    file_name: str,
    file: ImportFile,
    *,
    propagate: bool,
    created_by: str | None,
) -> InventoryImport:
    """Store the file (checked by `checked_import_file`) and queue the InventoryImport job that applies it: the same
    import as the CLI's, run by a worker."""
    content = file.content
    now = rt.clock.now()
    import_id = new_id()
    job = jobs.enqueue(session, now, account_id, InventoryImportPayload(ImportId=import_id), progress_total=file.rows)
    upload = InventoryImport(
        id=import_id,
        account_id=account_id,
        job_id=job.id,
        file_name=(file_name or "upload.csv")[:255],
        content=content,
        propagate=propagate,
        last_line=0,
        report=None,
        created_by=created_by,
        created_at=now,
    )
    session.add(upload)
    return upload


async def run_import(rt: Runtime, import_id: str, progress: BatchHook) -> ImportReport:
    """The InventoryImport job's body: apply the stored file, resuming after the last committed batch."""
    async with rt.db.read() as session:
        upload = await repository.import_by_id(session, import_id)
    if upload is None:
        raise NotFound("The uploaded file is gone (its account was deleted).")

    async def after_batch(session: AsyncSession, report: ImportReport, last_line: int) -> None:
        await repository.save_import_progress(session, import_id, last_line, report.view(STORED_ERRORS_MAX))
        await progress(session, report, last_line)

    return await import_inventory(
        rt,
        upload.account_id,
        io.StringIO(_file_text(upload.content), newline=""),
        propagate=upload.propagate,
        after_batch=after_batch,
        resume_after_line=upload.last_line,
        report=ImportReport.of_view(upload.report) if upload.report else None,
    )


async def recent_imports(
    session: AsyncSession, account_id: str, limit: int = 20, *, before: tuple[datetime, str] | None = None
) -> list[tuple[InventoryImport, jobs.JobInfo]]:
    """An account's imports newest first (created time, then id), older than `before` (the (created_at, id) of a
    page's last import) when given, each with its job."""
    uploads = await repository.recent_imports(session, account_id, limit, before=before)
    return [(upload, await jobs.job_info(session, account_id, upload.job_id)) for upload in uploads]


async def get_import(session: AsyncSession, account_id: str, import_id: str) -> tuple[InventoryImport, jobs.JobInfo]:
    upload = await repository.import_by_id(session, import_id, account_id)
    if upload is None:
        raise NotFound("No such import.")
    return upload, await jobs.job_info(session, account_id, upload.job_id)


_IMPORT_MESSAGES: dict[str, str] = {
    "NotFound": "No product carries this SKU.",
    "Ambiguous": "Several products differ from this SKU only by letter case and none matches it exactly.",
    "Failed": "The write failed for this SKU; the other rows were written.",
}


async def imports_with_failed_rows(session: AsyncSession, account_id: str, since: datetime, at_most: int) -> int:
    """How many of the account's imports since `since` have rows that were not applied, counted up to `at_most + 1`."""
    return await repository.imports_with_failed_rows(session, account_id, since, at_most)
