"""Use cases of a listing's creation (spec section 4, "creating a product"): POST /api/products/Create validates
the whole payload against the category's schema, then upserts the product and its listing and queues the
ListingPublish job. The app's category form (listings/app_fields.py) goes through the same validation and write.

Validation runs in three steps, read-only: parse (the payload's shape, listings/rules.py), resolve (what its ids
name: connection, category, schema, product, listing) and check (every problem of those, collected in one 400).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.catalog import repository
from marketsync.catalog.listings import rules
from marketsync.catalog.taxonomy.service import NO_ACTIVE_CONNECTION, NOT_A_LEAF, schema_of
from marketsync.db import DriverReader
from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.inventory.service import (
    ChangeSource,
    SkuChange,
    apply_inventory_changes,
    data_flow_warnings,
    propagate_to_listings,
    record_first_values,
)
from marketsync.jobs import service as jobs
from marketsync.kinds import ConnectionState, ListingStatus, kind_of, marketplace_name
from marketsync.kit.ids import new_id
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.models.catalog import ProductTypeView, TaxonomyCategory
from marketsync.runtime import Runtime


@dataclass
class CreateOutcome:
    product_id: str | None
    sku: str
    listing_action: str
    existing_listing_id: str | None
    job_id: str | None
    warnings: list[str] = field(default_factory=list)


@dataclass
class CreatePlan:
    """Everything create decided while validating; nothing has been written yet."""

    request: rules.CreateRequest
    connection: MarketplaceConnection
    product: Product | None
    listing: Listing | None
    category_id: str | None
    view: ProductTypeView | None
    attributes: dict[str, Any] | None
    warnings: list[str]
    # (id, SKU) of the account's products whose SKU equals the request's ignoring case, as validated.
    sku_candidates: tuple[tuple[str, str], ...]


async def create_product(
    rt: Runtime, session: AsyncSession, account_id: str, raw: Any, validated: CreatePlan | None = None
) -> CreateOutcome:
    """Validate completely, then (unless ValidateOnly) upsert the product, its listing and the publish job.

    Every check runs before anything is written: a rejected payload leaves no product, listing or job. `validated`
    is `validate_create`'s plan of the same payload, read before this transaction: it is used when what could have
    changed since is re-read unchanged (a new SKU still new, its connection still active); otherwise every check
    runs again here, in the write transaction.
    """
    plan = validated if validated is not None and await _still_holds(session, account_id, validated) else None
    if plan is None:
        plan = await validate_create(repository.SessionCreateReads(session), account_id, raw)
    listing = plan.listing
    action = "Revise" if listing is not None and listing.listing_id else "Create"
    existing_listing_id = listing.listing_id if listing is not None and action == "Revise" else None
    sku = plan.request.sku or ""
    if plan.request.validate_only:
        return CreateOutcome(
            plan.product.id if plan.product else None, sku, action, existing_listing_id, None, plan.warnings
        )
    product_id, job_id, propagation_warnings = await write_create(rt, session, account_id, plan)
    return CreateOutcome(product_id, sku, action, existing_listing_id, job_id, plan.warnings + propagation_warnings)


async def validate_create_on_driver(
    reader: DriverReader, account_id: str, raw: Any, also: Mapping[str, Sequence[str]] | None = None
) -> CreatePlan:
    """`validate_create` on the raw driver (`Database.driver_read`), before the create's write transaction."""
    return await validate_create(repository.DriverCreateReads(reader), account_id, raw, also)


async def validate_create(
    reads: repository.CreateReads, account_id: str, raw: Any, also: Mapping[str, Sequence[str]] | None = None
) -> CreatePlan:
    """Every check of a create, collected; read-only. The endpoint runs it on the raw driver (DriverCreateReads)
    before the write transaction, so that on SQLite the one writer is not held while the schema, the category and the
    SKU are read and the attributes checked (docs/decisions/0265-create-validates-before-its-write.md). An unknown
    MarketplaceId or CategoryId alone is a 404 (spec section 7); with any other bad field it is named in the one 400
    beside them, keyed by its field (docs/decisions/0081). `also`: problems of the request outside its body (a bad
    Idempotency-Key), counted among the others (docs/decisions/0344)."""
    request, errors = rules.parse_create_request(raw)
    for key, messages in (also or {}).items():
        for message in messages:
            rules.add_error(errors, key, message)
    found = await _resolve(reads, account_id, request)
    view = _check_referents(request, found, errors)
    attributes: dict[str, Any] | None = None
    if view is not None:
        existing = found.listing.attributes if found.listing is not None else {}
        attributes, attribute_errors = rules.validate_attributes(schema_of(view), request.attributes, existing)
        for key, messages in attribute_errors.items():
            errors.setdefault(key, []).extend(messages)
    if errors:
        for key, message in found.not_found.items():
            rules.add_error(errors, key, message)
        raise ValidationFailed(errors=errors)
    if found.not_found or found.connection is None:  # at most one: an unknown marketplace leaves CategoryId unread
        raise NotFound(next(iter(found.not_found.values()), None))
    return await _plan(reads, request, found, found.connection, view, attributes)


@dataclass
class _Referents:
    """What a create's ids name, as read: the caller's active connection, the category of its site with the category's
    current view, the schema the request named (ProductTypeViewId), the products of the SKU in any casing, the one of
    the exact SKU and its listing on the connection. `not_found`: the field that names nothing, and why."""

    connection: MarketplaceConnection | None = None
    category: TaxonomyCategory | None = None
    leaf_view: ProductTypeView | None = None
    sent_view: ProductTypeView | None = None
    candidates: Sequence[Product] = ()
    product: Product | None = None
    listing: Listing | None = None
    not_found: dict[str, str] = field(default_factory=dict)


async def _resolve(reads: repository.CreateReads, account_id: str, request: rules.CreateRequest) -> _Referents:
    """Resolve: every read validation needs, nothing checked yet."""
    found = _Referents()
    if request.marketplace_id is not None:
        # One query: the connection, and the category of its site with the category's current view.
        connection, category, leaf_view = await reads.connection_category_view(
            account_id, request.marketplace_id, request.category_id
        )
        if connection is not None and connection.state == ConnectionState.ACTIVE:
            found.connection, found.category, found.leaf_view = connection, category, leaf_view
        else:
            found.not_found["MarketplaceId"] = NO_ACTIVE_CONNECTION
        if found.connection is not None and request.category_id is not None and found.category is None:
            # The site's own tree: a category (and a view) of P1 UK is not one of P1 DE.
            site = marketplace_name(found.connection.platform, found.connection.country)
            found.not_found["CategoryId"] = f"CategoryId {request.category_id} is not a category of {site}."
        if request.category_id is not None and request.product_type_view_id is not None:
            found.sent_view = await reads.view(request.product_type_view_id)
    if request.sku is not None:
        # Upsert on the exact SKU; another casing is another product (docs/decisions/0081).
        found.candidates = await reads.products_by_sku(account_id, request.sku)
        found.product = next((p for p in found.candidates if p.sku == request.sku), None)
    if found.product is not None and found.connection is not None:
        found.listing = await reads.listing(found.product.id, found.connection.id)
    return found


def _check_referents(request: rules.CreateRequest, found: _Referents, errors: rules.Errors) -> ProductTypeView | None:
    """Check what the ids name, adding each problem to `errors`; the schema the attributes are checked against."""
    connection, category = found.connection, found.category
    if request.category_id is None:
        if "CategoryId" not in errors:
            _check_without_category(request, connection, errors)
        return None
    view: ProductTypeView | None = None
    if connection is not None and category is not None:
        if not category.is_leaf or category.view_id is None:
            rules.add_error(errors, "CategoryId", NOT_A_LEAF)
        else:
            view = found.leaf_view
        if request.product_type_view_id is not None:
            _add_view_problem(errors, connection, category.category_id, found.sent_view)
    named = found.sent_view
    if view is None and found.not_found and named is not None and named.category_id == request.category_id:
        # The marketplace or the category names nothing, but the caller named the schema it meant: its attributes
        # are checked against that one, so the 400 that names MarketplaceId or CategoryId names them too.
        view = named
        if connection is not None:  # a schema of that category id elsewhere: its own field is wrong too
            _add_view_problem(errors, connection, request.category_id, named)
    return view


def _check_without_category(
    request: rules.CreateRequest, connection: MarketplaceConnection | None, errors: rules.Errors
) -> None:
    if request.attributes_sent:
        rules.add_error(errors, "Attributes", "Send CategoryId with Attributes: they are validated against its schema.")
    if request.product_type_view_id is not None:
        rules.add_error(errors, "ProductTypeViewId", "Send it with the CategoryId whose schema returned it.")
    if connection is not None and kind_of(connection.platform).category_required_on_create:
        rules.add_error(
            errors,
            "CategoryId",
            f"Required for {connection.platform}: find a leaf category with POST /api/product-types/Search, "
            "fetch its schema with GET /api/product-types/Schema, then send CategoryId, ProductTypeViewId "
            "and Attributes.",
        )


def _add_view_problem(
    errors: rules.Errors, connection: MarketplaceConnection, category_id: str, sent: ProductTypeView | None
) -> None:
    """What is wrong with the ProductTypeViewId sent (`sent`: its view, None when it names none), if anything."""
    problem: str | None = None
    if sent is None:
        problem = "Unknown ProductTypeViewId: fetch it with GET /api/product-types/Schema."
    elif (sent.platform, sent.country) != (connection.platform, connection.country):
        problem = (
            f"Belongs to the {marketplace_name(sent.platform, sent.country)} marketplace, not this "
            f"{marketplace_name(connection.platform, connection.country)} one: fetch the schema for this MarketplaceId."
        )
    elif sent.category_id != category_id:
        problem = f"Belongs to category {sent.category_id}, not CategoryId {category_id}."
    elif not sent.is_current:
        problem = (
            "Superseded: the taxonomy was re-imported since this id was fetched. Fetch "
            "GET /api/product-types/Schema again (its SchemaVersion tells whether the attributes changed)."
        )
    if problem is not None:
        rules.add_error(errors, "ProductTypeViewId", problem)


async def _plan(
    reads: repository.CreateReads,
    request: rules.CreateRequest,
    found: _Referents,
    connection: MarketplaceConnection,
    view: ProductTypeView | None,
    attributes: dict[str, Any] | None,
) -> CreatePlan:
    """A create that passed every check: its plan, with the warnings it answers."""
    listing = found.listing
    category_id = request.category_id or (listing.category_id if listing is not None else None)
    warnings = await _warnings(reads, connection, view, category_id, validate_only=request.validate_only)
    case_variants = [p.sku for p in found.candidates] if found.product is None else []
    if case_variants and request.sku is not None:
        warnings.insert(0, rules.case_variant_warning(request.sku, case_variants, validate_only=request.validate_only))
    return CreatePlan(
        request,
        connection,
        found.product,
        listing,
        request.category_id,
        view,
        attributes,
        warnings,
        tuple((p.id, p.sku) for p in found.candidates) if request.sku is not None else (),
    )


async def _still_holds(session: AsyncSession, account_id: str, plan: CreatePlan) -> bool:
    """Whether a plan validated before this write transaction still holds: only a plan of a new SKU is reused (an
    existing product's listing and stock are read and written in the write transaction), and only if its
    connection is still active and no product of that SKU, in any casing, came or went since. One statement on the
    write session's driver. The taxonomy read is the one validated: a re-import committing in between orders as if
    it came after this create (docs/decisions/0265-create-validates-before-its-write.md)."""
    if plan.product is not None or plan.request.sku is None:
        return False
    state, holders = await repository.connection_state_and_sku_holders(
        session, account_id, plan.connection.id, plan.request.sku
    )
    return state == ConnectionState.ACTIVE and holders == plan.sku_candidates


async def _warnings(
    reads: repository.CreateReads,
    connection: MarketplaceConnection,
    view: ProductTypeView | None,
    category_id: str | None,
    *,
    validate_only: bool,
) -> list[str]:
    """Required things the API cannot carry: they never fail the create, they come back as warnings."""
    if view is None and category_id is not None:
        category = await reads.category(connection.platform, connection.country, category_id)
        if category is not None and category.view_id is not None:
            view = await reads.view(category.view_id)
    if view is None:
        return []
    return [
        rules.off_api_warning(connection.platform, name, validate_only=validate_only)
        for name in view.off_api_requirements
    ]


async def write_create(
    rt: Runtime, session: AsyncSession, account_id: str, plan: CreatePlan
) -> tuple[str, str, list[str]]:
    """Upsert product and listing and enqueue the publish job, all in the caller's transaction. Returns the product's
    id, the job's, and the warnings of the stock's propagation to the product's other listings."""
    now = rt.clock.now()
    product, warnings = await _upsert_product(rt, session, account_id, plan, now)
    listing = plan.listing
    if listing is None:
        listing = Listing(
            id=new_id(),
            account_id=account_id,
            product_id=product.id,
            marketplace_id=plan.connection.id,
            listing_id=None,
            external_sku=None,
            listing_url=None,
            category_id=plan.category_id,
            attributes=plan.attributes or {},
            status=ListingStatus.PENDING,
            marketplace_price=None,
            marketplace_quantity=None,
            created_at=now,
            updated_at=now,
        )
        session.add(listing)
    elif plan.category_id is not None:
        listing.category_id = plan.category_id
        listing.attributes = plan.attributes or {}
        if listing.app_fields and rules.HELD in listing.app_fields:  # this create's category and values supersede it
            listing.app_fields = {k: v for k, v in listing.app_fields.items() if k != rules.HELD}
    # The journey is the job: ListingPublished's JourneyId matches the JobId create returns (a held job's, which the
    # creates that follow join: docs/decisions/0460).
    job_id = await jobs.enqueue_listing_publish(
        session, now, account_id, plan.connection.id, listing.id, hold_s=rt.settings.propagation_hold_s
    )
    listing.status = ListingStatus.PENDING
    listing.journey_id = job_id
    listing.last_error = None
    listing.updated_at = now
    if plan.view is not None:
        listing.product_type_view_id = plan.view.id
    await session.flush()
    return product.id, job_id, warnings


async def _upsert_product(
    rt: Runtime, session: AsyncSession, account_id: str, plan: CreatePlan, now: datetime
) -> tuple[Product, list[str]]:
    """The plan's product, inserted or updated (title, and stock as a push of it); the propagation's warnings."""
    request = plan.request
    title = plan.attributes.get("Title") if plan.attributes else None
    product = plan.product
    source = ChangeSource("MerchantPush", "Api", None)
    if product is None:
        # Born with its stock: the InventoryChanged is the one apply_inventory_changes would record for it, without
        # re-reading and locking the row just inserted (docs/perf/catalog.md).
        sku = request.sku or ""
        product = Product(
            id=new_id(),
            account_id=account_id,
            sku=sku,
            sku_lower=sku.lower(),
            price=None,
            quantity=request.quantity or 0,
            title=title if isinstance(title, str) else None,
            modified_at=now,
            created_at=now,
        )
        session.add(product)
        await session.flush()  # before the listing that refers to it
        record_first_values(session, account_id, product, source)
        return product, []
    if isinstance(title, str) and title != product.title:
        product.title = title
    warnings: list[str] = []
    if request.quantity is not None:
        # Create's Quantity on an existing SKU is a push of its stock (docs/decisions/0308): the same Data Flow
        # warning, and every other listing of the product gets it; this connection's gets it in the publish.
        warnings.extend(await data_flow_warnings(session, account_id, sends_price=False, sends_quantity=True))
        if request.quantity != product.quantity:
            moved = await apply_inventory_changes(
                rt, session, account_id, [SkuChange(product.id, None, request.quantity)], source
            )
            propagation = await propagate_to_listings(
                rt, session, account_id, {change.product_id for change in moved}, skip_connection=plan.connection.id
            )
            warnings.extend(propagation.warnings)
    return product, warnings
