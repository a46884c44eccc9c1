"""Use cases of the catalog: taxonomy import, category search, attribute schemas, validated product
creation (spec section 4, "creating a product") and publishing listings to a marketplace.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import orjson
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.catalog import repository, rules
from marketsync.catalog.repository import LeafRow
from marketsync.catalog.taxonomy import AttributeSpec, Taxonomy
from marketsync.db import DriverReader
from marketsync.http.errors import NotFound, UpstreamUnavailable, ValidationFailed
from marketsync.inventory.service import (
    ChangeSource,
    SkuChange,
    apply_inventory_changes,
    data_flow_warnings,
    propagate_to_listings,
    record_first_values,
)
from marketsync.jobs import service as jobs
from marketsync.jobs.run import JobRun, RetryLater
from marketsync.jobs.types import JobStatus, ListingPublishPayload, TaxonomyLoadPayload
from marketsync.kinds import ConnectionState, ListingStatus, kind_of, marketplace_name
from marketsync.kit.ids import new_id
from marketsync.marketplaces import events, feeds
from marketsync.marketplaces import rules as marketplace_rules
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import (
    AuthorizationRevoked,
    CategorySchema,
    FeedResult,
    ListingDraft,
    MarketplaceError,
    UnknownCategory,
    connector_for,
)
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.models.catalog import ProductTypeView, TaxonomyCategory, TaxonomyImport
from marketsync.runtime import Runtime

__all__ = [
    "SEARCH_DEFAULT_LIMIT",
    "CreateOutcome",
    "HeldChange",
    "ImportSummary",
    "ListingDetails",
    "ListingSaved",
    "Schema",
    "create_product",
    "get_schema",
    "import_taxonomy",
    "listing_details",
    "listings_needing_attention",
    "listings_to_fix",
    "load_categories_if_missing",
    "load_site_categories",
    "load_taxonomy_unless_current",
    "missing_requirements",
    "product_listings",
    "publish_journey",
    "refresh_marketplace_schema",
    "search",
    "set_listing_app_fields",
    "set_listing_category",
    "taxonomy_countries",
    "validate_create_on_driver",
]


SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT = 50, 200

# --------------------------------------------------------------------------------------------------
# Taxonomy import


@dataclass(frozen=True)
class ImportSummary:
    platform: str
    country: str
    sequence: int
    revision: int
    source: str
    categories: int
    leaves: int
    added: int
    changed: int
    removed: int
    unchanged: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "Platform": self.platform,
            "Country": self.country,
            "Sequence": self.sequence,
            "Revision": self.revision,
            "Source": self.source,
            "Categories": self.categories,
            "Leaves": self.leaves,
            "Added": self.added,
            "Changed": self.changed,
            "Removed": self.removed,
            "Unchanged": self.unchanged,
        }


Progress = Callable[[int, int], None]


async def load_categories_if_missing(
    rt: Runtime, session: AsyncSession, connection: MarketplaceConnection
) -> str | None:
    """A connection just authorised on a site with no category tree yet: queue the load of that site's tree (a job:
    seconds of work, not the connect's transaction), so search and create work there without an operator. The job id,
    or None when the site has its tree already."""
    if await repository.site_has_taxonomy(session, connection.platform, connection.country):
        return None
    payload = TaxonomyLoadPayload(MarketplaceId=connection.id)
    return jobs.enqueue(session, rt.clock.now(), connection.account_id, payload).id


async def load_site_categories(rt: Runtime, account_id: str, marketplace_id: str) -> None:
    """The category tree of a newly authorised connection's site, unless it has one by now (another account's
    connection to the same site, an operator's import), as its marketplace gives it (TaxonomySource). A marketplace
    whose categories are found by search gives no tree: nothing is loaded ahead. Where the kind's schemas are the
    marketplace's own (Amazon's product types: docs/decisions/0372) the tree is the category list alone, each schema
    stored when first asked for (`refresh_marketplace_schema`). A marketplace throttling or down: the job retries."""
    async with rt.db.read() as session:
        connection = await marketplaces.find(session, account_id, marketplace_id)
        if connection is None or await repository.site_has_taxonomy(session, connection.platform, connection.country):
            return  # disconnected meanwhile (the next connection to its site loads it), or loaded already
    tree = await feeds.call(rt, connection, connector_for(rt, connection).category_tree())  # outside a transaction
    if tree is None:
        return
    on_demand = kind_of(connection.platform).schemas_from_marketplace
    try:
        async with rt.db.transaction() as session:
            if not await repository.site_has_taxonomy(session, connection.platform, connection.country):
                await import_taxonomy(rt, session, tree, connection.country, schemas_from_marketplace=on_demand)
    except IntegrityError:  # another connection's load of the same site committed first: the site has its tree
        return


def taxonomy_hash(taxonomy: Taxonomy) -> str:
    digest = hashlib.sha256()
    for c in taxonomy.categories:
        digest.update(f"{c.category_id}\x1f{c.parent_id}\x1f{c.name}\x1f".encode())
        if c.is_leaf:
            digest.update(c.content_hash().encode())
        digest.update(b"\x1e")
    return digest.hexdigest()


async def import_taxonomy(
    rt: Runtime,
    session: AsyncSession,
    taxonomy: Taxonomy,
    country: str,
    progress: Progress | None = None,
    *,
    schemas_from_marketplace: bool = False,
) -> ImportSummary:
    """Load or re-import the taxonomy of one site (the taxonomy's kind in `country`) in the caller's transaction.

    Each site has its own tree and its own ProductTypeViewIds, even when two sites load the same content: an id
    fetched for P1 UK is not one of P1 DE. Every import is a new version of the site's taxonomy, and every schema
    of the site gets a new ProductTypeViewId, whether its content changed or not (spec section 9: the id "changes
    when taxonomies are re-imported"; docs/decisions/0392). SchemaVersion tells content apart: it changes only
    with the schema's content. The old views stay on record, no longer current, so create can say why it refuses
    an old id. `Unchanged` in the summary says the whole content equals the previous version's.

    `schemas_from_marketplace`: the taxonomy is the category list alone (Amazon's product types); each leaf's schema
    is the marketplace's, stored when first asked for (`refresh_marketplace_schema`).
    """
    platform = taxonomy.platform
    now = rt.clock.now()
    content = taxonomy_hash(taxonomy)
    latest = await repository.latest_import(session, platform, country)
    leaves = [c for c in taxonomy.categories if c.is_leaf]
    total_steps = len(taxonomy.categories) + len(leaves)
    sequence = (latest.sequence if latest else 0) + 1
    import_id = new_id()
    current = await repository.current_views(session, platform, country)

    view_rows: list[dict[str, Any]] = []
    view_of: dict[str, str] = {}
    retired: list[str] = []
    added = changed = 0
    for leaf in leaves:
        digest = leaf.content_hash()
        existing = current.get(leaf.category_id)
        if schemas_from_marketplace:
            # The list alone: a leaf's schema is the marketplace's, fetched when first asked for. A re-import retires
            # every stored one, so the next fetch issues a new ProductTypeViewId (spec section 9; decisions 0392, 0372).
            if existing is None:
                added += 1
            else:
                retired.append(existing.view_id)
            continue
        schema_version = f"{sequence}.{digest[:8]}"
        if existing is None:
            added += 1
        else:
            retired.append(existing.view_id)
            if existing.content_hash == digest:
                schema_version = existing.schema_version  # same content: same version, under a new id
            else:
                changed += 1
        view_id = new_id()
        view_of[leaf.category_id] = view_id
        view_rows.append(
            {
                "id": view_id,
                "platform": platform,
                "country": country,
                "category_id": leaf.category_id,
                "category_path": leaf.path,
                "product_type_code": leaf.product_type_code or leaf.category_id,
                "schema_version": schema_version,
                "content_hash": digest,
                "attributes": orjson.dumps([a.to_json() for a in leaf.attributes]),
                "off_api_requirements": list(leaf.off_api_requirements),
                "is_current": True,
                "import_id": import_id,
                "created_at": now,
            }
        )
    listed = {leaf.category_id for leaf in leaves}
    removed = [v.view_id for category_id, v in current.items() if category_id not in listed]
    retired.extend(removed)

    done = 0
    await repository.delete_categories(session, platform, country)
    batch: list[dict[str, Any]] = []
    for position, category in enumerate(taxonomy.categories):
        batch.append(
            {
                "platform": platform,
                "country": country,
                "category_id": category.category_id,
                "parent_id": category.parent_id,
                "name": category.name,
                "name_lower": repository.search_key(category.name),
                "path": category.path,
                "depth": category.depth,
                "is_leaf": category.is_leaf,
                "position": position,
                "view_id": view_of.get(category.category_id),
            }
        )
        if len(batch) >= repository.BATCH:
            await repository.insert_rows(session, TaxonomyCategory, batch)
            done += len(batch)
            batch = []
            if progress:
                progress(done, total_steps)
    await repository.insert_rows(session, TaxonomyCategory, batch)
    done += len(batch)
    await repository.refresh_search_index(session, platform, country)
    await repository.retire_views(session, retired)
    for start in range(0, len(view_rows), repository.BATCH):
        await repository.insert_rows(session, ProductTypeView, view_rows[start : start + repository.BATCH])
        if progress:
            progress(done + min(len(leaves), start + repository.BATCH), total_steps)
    if progress:
        progress(total_steps, total_steps)
    repository.add_import(
        session,
        TaxonomyImport(
            id=import_id,
            platform=platform,
            country=country,
            sequence=sequence,
            revision=taxonomy.revision,
            source=taxonomy.source,
            content_hash=content,
            category_count=len(taxonomy.categories),
            leaf_count=len(leaves),
            added_count=added,
            changed_count=changed,
            removed_count=len(removed),
            imported_at=now,
        ),
    )
    return ImportSummary(
        platform,
        country,
        sequence,
        taxonomy.revision,
        taxonomy.source,
        len(taxonomy.categories),
        len(leaves),
        added,
        changed,
        len(removed),
        unchanged=latest is not None and latest.content_hash == content,
    )


async def load_taxonomy_unless_current(
    rt: Runtime, session: AsyncSession, taxonomy: Taxonomy, country: str
) -> ImportSummary | None:
    """`import_taxonomy`, unless the site's current version already has this content (None then). For `demo`,
    which is run again at will: re-running it is not a re-import and keeps the ids integrators fetched."""
    latest = await repository.latest_import(session, taxonomy.platform, country)
    if latest is not None and latest.content_hash == taxonomy_hash(taxonomy):
        return None
    return await import_taxonomy(rt, session, taxonomy, country)


async def taxonomy_countries(session: AsyncSession, platform: str) -> list[str]:
    """The countries of the kind's sites the service knows (connected in any account, or holding a taxonomy)."""
    return await repository.known_countries(session, platform)


# --------------------------------------------------------------------------------------------------
# Search and schema


async def active_connection(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection:
    """The caller's active connection; another account's, a paused or an unknown one is 404."""
    connection = await marketplaces.get(session, account_id, marketplace_id)
    if connection.state != ConnectionState.ACTIVE:
        raise NotFound("No active marketplace connection with this id.")
    return connection


async def search(
    reader: DriverReader, account_id: str, marketplace_id: str, text: str | None, limit: int, offset: int
) -> tuple[list[LeafRow], int]:
    """The caller's active connection's site searched (404 as `active_connection` answers); on the raw driver: a
    hot read of two statements (docs/perf/catalog.md)."""
    site = await repository.site_of_connection(reader, account_id, marketplace_id)
    if site is None:
        raise NotFound("No marketplace connection with this id.")
    if not site.active:
        raise NotFound("No active marketplace connection with this id.")
    text = repository.search_key(text or "") or None
    return await repository.search_leaves(reader, site.platform, site.country, text, limit, offset)


NO_ACTIVE_CONNECTION = "No active marketplace connection with this MarketplaceId."


async def unknown_marketplace(
    reader: DriverReader, account_id: str, marketplace_id: str | None
) -> dict[str, list[str]]:
    """`MarketplaceId` named when it is well-formed and names none of the caller's active connections: the 404 a
    search answers when nothing else is wrong, named in the 400 of one that has other bad fields (as create names
    it: docs/decisions/0081, 0344)."""
    if marketplace_id is None:
        return {}
    site = await repository.site_of_connection(reader, account_id, marketplace_id)
    return {} if site is not None and site.active else {"MarketplaceId": [NO_ACTIVE_CONNECTION]}


@dataclass(frozen=True)
class Schema:
    view: ProductTypeView
    attributes: tuple[AttributeSpec, ...]


_SCHEMA_CACHE: OrderedDict[str, tuple[AttributeSpec, ...]] = OrderedDict()
_SCHEMA_CACHE_SIZE = 2048


def schema_of(view: ProductTypeView) -> tuple[AttributeSpec, ...]:
    """Parsed attributes of a view. A view's content never changes, so parsing is cached by its id."""
    cached = _SCHEMA_CACHE.get(view.id)
    if cached is None:
        cached = tuple(AttributeSpec.from_json(a) for a in orjson.loads(view.attributes))
        _SCHEMA_CACHE[view.id] = cached
        if len(_SCHEMA_CACHE) > _SCHEMA_CACHE_SIZE:
            _SCHEMA_CACHE.popitem(last=False)
    return cached


async def get_schema(session: AsyncSession, account_id: str, marketplace_id: str, category_id: str) -> Schema:
    connection = await active_connection(session, account_id, marketplace_id)
    category = await repository.get_category(session, connection.platform, connection.country, category_id.strip())
    if category is None:
        raise NotFound(f"No category with this id on {marketplace_name(connection.platform, connection.country)}.")
    if not category.is_leaf or category.view_id is None:
        raise ValidationFailed(errors={"categoryId": [_NOT_A_LEAF]})
    view = await repository.get_view(session, category.view_id)
    if view is None:  # pragma: no cover - the import writes both in one transaction
        raise NotFound("No schema for this category.")
    return Schema(view, schema_of(view))


_NOT_A_LEAF = "Not a leaf category: listings go in leaf categories (POST /api/product-types/Search returns only those)."


async def refresh_marketplace_schema(rt: Runtime, account_id: str, marketplace_id: str, category_id: str) -> None:
    """Where a kind's schemas are the marketplace's own (kinds.MarketplaceKind.schemas_from_marketplace: Amazon), ask
    the marketplace for the category's schema and store it as the category's current view when it changed (a new
    ProductTypeViewId; SchemaVersion is the marketplace's version). Called before a schema is shown or a create is
    validated; the connector keeps what it fetched for a while, so this is usually one read. Outside any transaction
    while the marketplace is asked. A category the site does not list is left to the caller's 404; a marketplace
    that does not answer is UpstreamUnavailable unless a schema of the category is stored already (then that one)."""
    category_id = category_id.strip()
    async with rt.db.read() as session:
        try:
            connection = await active_connection(session, account_id, marketplace_id)
        except NotFound:
            return
        if not kind_of(connection.platform).schemas_from_marketplace:
            return
        category = await repository.get_category(session, connection.platform, connection.country, category_id)
        if category is None or not category.is_leaf:
            return
    try:
        fetched = await connector_for(rt, connection).category_schema(category_id)
    except UnknownCategory:
        return
    except MarketplaceError as exc:
        if category.view_id is not None:
            return  # the schema stored last time serves meanwhile
        raise UpstreamUnavailable(f"The marketplace did not send this category's schema ({exc}).") from exc
    async with rt.db.transaction() as session:
        await store_category_schema(rt, session, connection, category_id, fetched)


async def store_category_schema(
    rt: Runtime, session: AsyncSession, connection: MarketplaceConnection, category_id: str, fetched: CategorySchema
) -> str | None:
    """The marketplace's schema of a category as its current view, unless that view holds the same content already;
    the view it replaces stays on record, no longer current (create names it superseded). Returns the current view's
    id (None when the site no longer lists the category)."""
    category = await repository.get_category(
        session, connection.platform, connection.country, category_id, for_update=True
    )
    if category is None:
        return None
    spec = fetched.category
    attributes = [a.to_json() for a in spec.attributes]
    document = {
        "Path": category.path,
        "ProductTypeCode": category_id,
        "SchemaVersion": fetched.version,
        "Attributes": attributes,
        "OffApiRequirements": list(spec.off_api_requirements),
    }
    digest = hashlib.sha256(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()
    current = await repository.get_view(session, category.view_id) if category.view_id else None
    if current is not None and current.content_hash == digest:
        return current.id
    latest = await repository.latest_import(session, connection.platform, connection.country)
    assert latest is not None  # the category exists, so its site's list was imported
    view = ProductTypeView(
        id=new_id(),
        platform=connection.platform,
        country=connection.country,
        category_id=category_id,
        category_path=category.path,
        product_type_code=category_id,
        schema_version=fetched.version[:40],
        content_hash=digest,
        attributes=orjson.dumps(attributes),
        off_api_requirements=list(spec.off_api_requirements),
        is_current=True,
        import_id=latest.id,
        created_at=rt.clock.now(),
    )
    session.add(view)
    if current is not None:
        current.is_current = False
    await session.flush()
    category.view_id = view.id
    return view.id


# --------------------------------------------------------------------------------------------------
# Product create


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
    product_id, job_id, propagation_warnings = await _write(rt, session, account_id, plan)
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
    not_found: dict[str, str] = {}  # field -> why it names nothing
    connection: MarketplaceConnection | None = None
    category: TaxonomyCategory | None = None
    view: ProductTypeView | None = None

    leaf_view: ProductTypeView | None = None
    if request.marketplace_id is not None:
        # One query: the connection, and the category of its site with the category's current view.
        found, category, leaf_view = await reads.connection_category_view(
            account_id, request.marketplace_id, request.category_id
        )
        if found is not None and found.state == ConnectionState.ACTIVE:
            connection = found
        else:
            category = None
            not_found["MarketplaceId"] = NO_ACTIVE_CONNECTION

    if request.category_id is None and "CategoryId" not in errors:
        if request.attributes_sent:
            rules.add_error(
                errors, "Attributes", "Send CategoryId with Attributes: they are validated against its schema."
            )
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

    if connection is not None and request.category_id is not None:
        # The site's own tree: a category (and a view) of P1 UK is not one of P1 DE.
        if category is None:
            site = marketplace_name(connection.platform, connection.country)
            not_found["CategoryId"] = f"CategoryId {request.category_id} is not a category of {site}."
        elif not category.is_leaf or category.view_id is None:
            rules.add_error(errors, "CategoryId", _NOT_A_LEAF)
        else:
            view = leaf_view
        if request.product_type_view_id is not None and category is not None:
            problem = await _view_problem(reads, connection, category.category_id, request.product_type_view_id)
            if problem:
                rules.add_error(errors, "ProductTypeViewId", problem)
    if view is None and not_found and request.category_id is not None and request.product_type_view_id is not None:
        # The marketplace or the category names nothing, but the caller named the schema it meant: its attributes
        # are checked against that one, so the 400 that names MarketplaceId or CategoryId names them too.
        named = await reads.view(request.product_type_view_id)
        if named is not None and named.category_id == request.category_id:
            view = named
            if connection is not None:  # a schema of that category id elsewhere: its own field is wrong too
                problem = await _view_problem(reads, connection, request.category_id, named.id)
                if problem:
                    rules.add_error(errors, "ProductTypeViewId", problem)

    # Upsert on the exact SKU; another casing is another product (docs/decisions/0081).
    product: Product | None = None
    case_variants: list[str] = []
    candidates: Sequence[Product] = ()
    if request.sku is not None:
        candidates = await reads.products_by_sku(account_id, request.sku)
        product = next((p for p in candidates if p.sku == request.sku), None)
        if product is None:
            case_variants = [p.sku for p in candidates]

    listing: Listing | None = None
    if product is not None and connection is not None:
        listing = await reads.listing(product.id, connection.id)

    attributes: dict[str, Any] | None = None
    if view is not None:
        existing = listing.attributes if listing is not None else {}
        attributes, attribute_errors = rules.validate_attributes(schema_of(view), request.attributes, existing)
        for key, messages in attribute_errors.items():
            errors.setdefault(key, []).extend(messages)

    if errors:
        for key, message in not_found.items():
            rules.add_error(errors, key, message)
        raise ValidationFailed(errors=errors)
    if not_found or connection is None:  # at most one: an unknown marketplace leaves CategoryId unlooked-up
        raise NotFound(next(iter(not_found.values()), None))

    category_id = request.category_id or (listing.category_id if listing is not None else None)
    warnings = await _warnings(reads, connection, view, category_id, validate_only=request.validate_only)
    if case_variants and request.sku is not None:
        warnings.insert(0, rules.case_variant_warning(request.sku, case_variants, validate_only=request.validate_only))
    return CreatePlan(
        request,
        connection,
        product,
        listing,
        request.category_id,
        view,
        attributes,
        warnings,
        tuple((p.id, p.sku) for p in candidates) if request.sku is not None else (),
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


async def _view_problem(
    reads: repository.CreateReads, connection: MarketplaceConnection, category_id: str, view_id: str
) -> str | None:
    sent = await reads.view(view_id)
    if sent is None:
        return "Unknown ProductTypeViewId: fetch it with GET /api/product-types/Schema."
    if (sent.platform, sent.country) != (connection.platform, connection.country):
        return (
            f"Belongs to the {marketplace_name(sent.platform, sent.country)} marketplace, not this "
            f"{marketplace_name(connection.platform, connection.country)} one: fetch the schema for this MarketplaceId."
        )
    if sent.category_id != category_id:
        return f"Belongs to category {sent.category_id}, not CategoryId {category_id}."
    if not sent.is_current:
        return (
            "Superseded: the taxonomy was re-imported since this id was fetched. Fetch "
            "GET /api/product-types/Schema again (its SchemaVersion tells whether the attributes changed)."
        )
    return None


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


async def _write(rt: Runtime, session: AsyncSession, account_id: str, plan: CreatePlan) -> tuple[str, str, list[str]]:
    """Upsert product and listing and enqueue the publish job, all in the caller's transaction. Returns the product's
    id, the job's, and the warnings of the stock's propagation to the product's other listings."""
    now = rt.clock.now()
    warnings: list[str] = []
    request, connection = plan.request, plan.connection
    sku = request.sku or ""
    title = plan.attributes.get("Title") if plan.attributes else None
    product = plan.product
    source = ChangeSource("MerchantPush", "Api", None)
    if product is None:
        # Born with its stock: the InventoryChanged is the one apply_inventory_changes would record for it, without
        # re-reading and locking the row just inserted (docs/perf/catalog.md).
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
    else:
        if isinstance(title, str) and title != product.title:
            product.title = title
        if request.quantity is not None:
            # Create's Quantity on an existing SKU is a push of its stock (docs/decisions/0308): the same Data Flow
            # warning, and every other listing of the product gets it; this connection's gets it in the publish.
            warnings.extend(await data_flow_warnings(session, account_id, sends_price=False, sends_quantity=True))
            if request.quantity != product.quantity:
                moved = await apply_inventory_changes(
                    rt, session, account_id, [SkuChange(product.id, None, request.quantity)], source
                )
                propagation = await propagate_to_listings(
                    rt, session, account_id, {change.product_id for change in moved}, skip_connection=connection.id
                )
                warnings.extend(propagation.warnings)

    job_id = new_id()  # the journey is the job: ListingPublished's JourneyId matches the JobId create returns
    listing = plan.listing
    if listing is None:
        listing = Listing(
            id=new_id(),
            account_id=account_id,
            product_id=product.id,
            marketplace_id=connection.id,
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
        if listing.app_fields and HELD in listing.app_fields:  # this create's category and values supersede it
            listing.app_fields = {k: v for k, v in listing.app_fields.items() if k != HELD}
    listing.status = ListingStatus.PENDING
    listing.journey_id = job_id
    listing.last_error = None
    listing.updated_at = now
    if plan.view is not None:
        listing.product_type_view_id = plan.view.id
    await session.flush()
    payload = ListingPublishPayload(MarketplaceId=connection.id, ListingIds=[listing.id], JourneyId=job_id)
    jobs.enqueue(session, now, account_id, payload, job_id=job_id, progress_total=1)
    return product.id, job_id, warnings


# --------------------------------------------------------------------------------------------------
# Publishing (the ListingPublish job)

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
    drafts = [
        ListingDraft(
            reference=listing.id,
            sku=product.sku,
            external_sku=listing.external_sku,
            listing_id=listing.listing_id,
            category_id=listing.category_id,
            # App-managed attributes (ApiSettable false) exist only in the app's fields.
            attributes={**(listing.attributes or {}), **((listing.app_fields or {}).get("Attributes") or {})},
            title=product.title,
            price=product.price,
            quantity=product.quantity,
            app_fields={k: v for k, v in (listing.app_fields or {}).items() if k != HELD},
        )
        for listing, product in rows
    ]
    if not drafts:
        return
    progress = None if (job.progress_done, job.progress_total) == (0, len(drafts)) else (0, len(drafts))
    kept = job.state.get(PUBLISHED_VALUES)
    if kept is None:
        # Kept before the feed is sent, like a PriceStockPush's lines: a recovered run must record the values the
        # feed carried, not the catalogue's by then (docs/decisions/0307-publish-records-what-its-feed-carried.md).
        kept = {d.reference: [None if d.price is None else str(d.price), d.quantity] for d in drafts}
        await job.remember({PUBLISHED_VALUES: kept}, progress=progress)
    elif progress is not None:
        # Create enqueues the job with this progress already: a write transaction saved per publish.
        await job.progress(*progress)
    carried = {
        reference: (None if price is None else Decimal(price), quantity)
        for reference, (price, quantity) in kept.items()
    }
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
    catalogue moved since the feed was built (a push in between: it found no listing id to push to, or sent its
    values before this feed landed), a PriceStockPush brings the marketplace to the catalogue's values (0307)."""
    now = rt.clock.now()
    errors = {e.reference: e.message for e in result.errors}
    async with rt.db.transaction() as session:
        # Products locked: a push of them commits before this reads them, or reads these listing ids after it.
        rows = await repository.listings_with_products(
            session, job.account_id, connection.id, args.ListingIds, lock_products=True
        )
        published = failed = 0
        behind: list[str] = []  # products whose catalogue values moved after the feed was built
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


# --------------------------------------------------------------------------------------------------
# A listing's off-API fields, filled in the app (docs/decisions/0121-listing-fields-in-the-app.md)

MAX_IMAGES = 12
POLICY_KINDS = ("Payment", "Return", "Shipping")


# A change saved in the app but not sent yet (decision 0400): `listings.app_fields["Held"]` holds the chosen category,
# its schema's view id and the attribute values (API-settable and app-managed) until the category's every need is met.
HELD = "Held"


@dataclass(frozen=True)
class HeldChange:
    """A category and its attribute values saved in the app, not published: the category needs more (images, a
    business policy) before the marketplace would take the listing, and the listing stays as the marketplace has it."""

    category_id: str
    view_id: str
    attributes: dict[str, Any]  # API-settable, as validated
    app_attributes: dict[str, Any]  # app-managed (ApiSettable false)

    @classmethod
    def of(cls, app_fields: Mapping[str, Any] | None) -> HeldChange | None:
        held = (app_fields or {}).get(HELD)
        if not isinstance(held, dict):
            return None
        return cls(
            str(held.get("CategoryId") or ""),
            str(held.get("ProductTypeViewId") or ""),
            dict(held.get("Attributes") or {}),
            dict(held.get("AppAttributes") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "CategoryId": self.category_id,
            "ProductTypeViewId": self.view_id,
            "Attributes": self.attributes,
            "AppAttributes": self.app_attributes,
        }


@dataclass(frozen=True)
class ListingDetails:
    """A listing as the app shows it: what the marketplace requires beyond the API, and what is filled in."""

    listing: Listing
    product: Product
    connection: MarketplaceConnection
    requirements: list[str]  # e.g. ["Images", "BusinessPolicy"]: of the held change's category when one is held
    app_managed: list[AttributeSpec]  # attributes only the app may set (ApiSettable false)

    @property
    def app_fields(self) -> dict[str, Any]:
        return dict(self.listing.app_fields or {})

    @property
    def held(self) -> HeldChange | None:
        return HeldChange.of(self.listing.app_fields)

    @property
    def missing(self) -> list[str]:
        return missing_requirements(self.requirements, self.app_fields)


@dataclass(frozen=True)
class ListingSaved:
    """What a save in the app did: a ListingPublish queued (`job_id`), or the change held (`missing` names what the
    category still needs before the marketplace would take the listing; nothing was sent)."""

    job_id: str | None
    missing: tuple[str, ...] = ()


def missing_requirements(requirements: Sequence[str], app_fields: Mapping[str, Any]) -> list[str]:
    """The off-API requirements (`Images`, `BusinessPolicy`) the app fields do not fill: what a marketplace rejects."""
    return [name for name in requirements if not app_fields.get(name)]


async def listing_details(session: AsyncSession, account_id: str, listing_id: str) -> ListingDetails:
    found = await repository.listing_with_product(session, account_id, listing_id)
    if found is None:
        raise NotFound("No listing with this id.")
    listing, product = found
    connection = await marketplaces.get(session, account_id, listing.marketplace_id)
    requirements: list[str] = []
    app_managed: list[AttributeSpec] = []
    held = HeldChange.of(listing.app_fields)
    view_id = held.view_id if held is not None else listing.product_type_view_id
    if view_id is not None:
        view = await repository.get_view(session, view_id)
        if view is not None:
            requirements = list(view.off_api_requirements)
            app_managed = [a for a in schema_of(view) if not a.api_settable]
    return ListingDetails(listing, product, connection, requirements, app_managed)


def _app_field_problems(
    images: list[str], policy: dict[str, str], attributes: dict[str, str], app_managed: list[AttributeSpec]
) -> dict[str, list[str]]:
    problems: dict[str, list[str]] = {}
    if len(images) > MAX_IMAGES:
        problems["Images"] = [f"At most {MAX_IMAGES} images."]
    for index, url in enumerate(images):
        if not url.startswith("https://") or len(url) > 2048 or any(c.isspace() for c in url):
            problems.setdefault(f"Images[{index}]", []).append("An https URL of the image (up to 2,048 characters).")
    for kind, value in policy.items():
        if kind not in POLICY_KINDS:
            problems.setdefault("BusinessPolicy", []).append(
                f"Unknown policy {kind!r}; one of {', '.join(POLICY_KINDS)}."
            )
        elif not 1 <= len(value) <= 100:
            problems[f"BusinessPolicy.{kind}"] = ["The marketplace's policy id, 1 to 100 characters."]
    allowed = {a.code: a for a in app_managed}
    for code, value in attributes.items():
        spec = allowed.get(code)
        if spec is None:
            problems[f"Attributes.{code}"] = ["Not an app-managed attribute of this listing's category."]
        elif len(value) > 500:
            problems[f"Attributes.{code}"] = ["At most 500 characters."]
    return problems


async def set_listing_app_fields(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    listing_id: str,
    *,
    images: list[str],
    policy: dict[str, str],
    attributes: dict[str, str] | None = None,
) -> ListingSaved:
    """Store what the API cannot carry and republish the listing (a ListingPublish job). `attributes` None keeps the
    app-managed attribute values held (the app sets them with the category's other attributes,
    `set_listing_category`). When the listing's category still needs something these fields leave empty, nothing is
    sent: the marketplace would reject it, and a Live listing stays Live as it is (decision 0400)."""
    details = await listing_details(session, account_id, listing_id)
    images, policy = _clean_images(images), _clean_policy(policy)
    if attributes is not None:
        attributes = {code: value.strip() for code, value in attributes.items() if value.strip()}
    problems = _app_field_problems(images, policy, attributes or {}, details.app_managed)
    if problems:
        raise ValidationFailed(errors=problems)
    found = await repository.listing_with_product(session, account_id, listing_id, for_update=True)
    assert found is not None
    listing = found[0]
    if attributes is None:
        attributes = dict((listing.app_fields or {}).get("Attributes") or {})
    listing.app_fields = {
        **(listing.app_fields or {}),
        "Images": images,
        "BusinessPolicy": policy,
        "Attributes": attributes,
    }
    own_requirements: list[str] = []
    if listing.product_type_view_id is not None:
        view = await repository.get_view(session, listing.product_type_view_id)
        own_requirements = list(view.off_api_requirements) if view is not None else []
    missing = missing_requirements(own_requirements, listing.app_fields)
    if missing:
        listing.updated_at = rt.clock.now()
        return ListingSaved(None, tuple(missing))
    return ListingSaved(_republish(rt, session, account_id, listing))


def _clean_images(images: Sequence[str]) -> list[str]:
    return [url.strip() for url in images if url.strip()]


def _clean_policy(policy: Mapping[str, str]) -> dict[str, str]:
    return {kind: value.strip() for kind, value in policy.items() if value.strip()}


def _republish(rt: Runtime, session: AsyncSession, account_id: str, listing: Listing) -> str:
    """The listing Pending under a new ListingPublish job (its journey); the job's id."""
    now = rt.clock.now()
    job_id = new_id()
    listing.status, listing.journey_id, listing.last_error, listing.updated_at = (
        ListingStatus.PENDING,
        job_id,
        None,
        now,
    )
    payload = ListingPublishPayload(MarketplaceId=listing.marketplace_id, ListingIds=[listing.id], JourneyId=job_id)
    jobs.enqueue(session, now, account_id, payload, job_id=job_id, progress_total=1)
    return job_id


async def product_listings(
    session: AsyncSession, account_id: str, product_id: str
) -> Sequence[tuple[Listing, MarketplaceConnection]]:
    """A product's listings with their connection, for its page in the app (state, last error, a link each)."""
    return await repository.listings_of_product(session, account_id, product_id)


# --------------------------------------------------------------------------------------------------
# A listing's category and attribute values, chosen in the app (docs/decisions/0345-p1-category-in-the-app.md)


async def set_listing_category(
    rt: Runtime,
    session: AsyncSession,
    account_id: str,
    listing_id: str,
    *,
    category_id: str,
    view_id: str,
    values: Mapping[str, str],
    images: list[str] | None = None,
    policy: dict[str, str] | None = None,
) -> ListingSaved:
    """Give a listing its category and attribute values (and, with them, its images and policies: one step), then
    republish it.

    This is the API's create of the listing's own SKU on its marketplace with `CategoryId`, `ProductTypeViewId` and
    `Attributes` (no Quantity: stock untouched): the same validation (`validate_create`), the same write and the same
    publish job, in the caller's transaction. What the API refuses because the app manages it (ApiSettable false)
    is checked by the same attribute rules, as settable here, and kept in the listing's app fields. Every problem of
    either part (and of the images and policies) is in one ValidationFailed (keys `CategoryId`, `ProductTypeViewId`,
    `Attributes.<code>`, `Images[i]`, `BusinessPolicy.<kind>`); then nothing is written. Values the listing already
    holds (or a change held) count as present (a partial update); a blank value clears.

    When the category needs what the API cannot carry (images, a business policy) and the listing's app fields do not
    hold it, nothing is published: the marketplace would reject the listing, taking a Live one down. The change is
    held in the listing's app fields, the listing stays as the marketplace has it, and `missing` says what to fill in
    (decision 0400). `images` or `policy` None keeps the ones held.
    """
    found = await repository.listing_with_product(session, account_id, listing_id, for_update=True)
    if found is None:
        raise NotFound("No listing with this id.")
    listing, product = found
    connection = await marketplaces.get(session, account_id, listing.marketplace_id)
    category_id = category_id.strip()
    if not category_id:
        raise ValidationFailed(errors={"CategoryId": ["Choose a category."]})
    if listing.category_id and category_id != listing.category_id:  # a live listing is not moved (decision 0345)
        raise ValidationFailed(errors={"CategoryId": [f"This listing's category is {listing.category_id}; it stays."]})
    held = HeldChange.of(listing.app_fields)
    if held is not None and held.category_id == category_id:
        # The change held counts as the values held: a field the form did not send keeps its held value.
        values = {
            **{code: form_value(value) for code, value in {**held.attributes, **held.app_attributes}.items()},
            **values,
        }
    # The category's app-managed attributes (the current schema's; a stale ProductTypeViewId is refused below).
    app_managed: dict[str, AttributeSpec] = {}
    category = await repository.get_category(session, connection.platform, connection.country, category_id)
    if category is not None and category.view_id is not None:
        current = await repository.get_view(session, category.view_id)
        if current is not None:
            app_managed = {a.code: a for a in schema_of(current) if not a.api_settable}
    payload: dict[str, Any] = {
        "Sku": product.sku,
        "MarketplaceId": connection.id,
        "CategoryId": category_id,
        "Attributes": {code: value for code, value in values.items() if code not in app_managed},
    }
    if view_id.strip():
        payload["ProductTypeViewId"] = view_id.strip()
    errors: rules.Errors = {}
    plan: CreatePlan | None = None
    try:
        plan = await validate_create(repository.SessionCreateReads(session), account_id, payload)
    except ValidationFailed as exc:
        errors.update(exc.errors)
    except NotFound as exc:  # the API's 404 alone: in the app, beside the field it is about
        key = "CategoryId" if connection.state == ConnectionState.ACTIVE else "MarketplaceId"
        rules.add_error(errors, key, exc.title)
    app_values, app_errors = rules.validate_attributes(
        [replace(a, api_settable=True) for a in app_managed.values()],
        {code: value for code, value in values.items() if code in app_managed},
        dict((listing.app_fields or {}).get("Attributes") or {}),
    )
    for key, messages in app_errors.items():
        errors.setdefault(key, []).extend(messages)
    fields = dict(listing.app_fields or {})
    if images is not None:
        fields["Images"] = _clean_images(images)
    if policy is not None:
        fields["BusinessPolicy"] = _clean_policy(policy)
    given_images = fields["Images"] if images is not None else []
    given_policy = fields["BusinessPolicy"] if policy is not None else {}
    for key, messages in _app_field_problems(given_images, given_policy, {}, []).items():
        errors.setdefault(key, []).extend(messages)
    if errors:
        raise ValidationFailed(errors=errors)
    assert plan is not None and plan.listing is listing and plan.view is not None  # this SKU's listing, a leaf
    fields.pop(HELD, None)
    missing = missing_requirements(plan.view.off_api_requirements, fields)
    if missing:
        # Not sent: the marketplace would reject it. Held, with the images and policies given, until complete.
        change = HeldChange(category_id, plan.view.id, plan.attributes or {}, app_values)
        listing.app_fields = {**fields, HELD: change.to_json()}
        listing.updated_at = rt.clock.now()
        return ListingSaved(None, tuple(missing))
    _, job_id, _ = await _write(rt, session, account_id, plan)
    listing.app_fields = {**fields, "Attributes": app_values}
    return ListingSaved(job_id)


def form_value(value: Any) -> str:
    """A stored attribute value as a form field holds it (Boolean as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


async def listings_needing_attention(session: AsyncSession, account_id: str) -> tuple[int, int]:
    """(Rejected, waiting for their fill-ins: a change held, decision 0400) of the account's listings."""
    return await repository.listings_needing_attention(session, account_id)


async def listings_to_fix(
    session: AsyncSession, account_id: str, *, held: bool, limit: int, offset: int
) -> tuple[list[repository.ListingToFix], int]:
    """A page of the account's Rejected listings (or, `held`, those waiting for their fill-ins), and their count."""
    return await repository.listings_to_fix(session, account_id, held=held, limit=limit, offset=offset)
