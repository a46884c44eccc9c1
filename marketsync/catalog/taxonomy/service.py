"""Use cases of the taxonomy: importing a site's category tree (a file, or a marketplace's TaxonomySource when a
connection is authorised), category search, and the attribute schema of a leaf (spec section 4, "creating a
product": POST /api/product-types/Search, GET /api/product-types/Schema).

The listings (create, publish, the app's fields) are in marketsync/catalog/listings/; they read schemas through
`schema_of` and `NOT_A_LEAF`, and nothing here reads a listing.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.catalog import repository
from marketsync.catalog.repository import LeafRow
from marketsync.catalog.taxonomy import AttributeSpec, CategorySpec, Taxonomy
from marketsync.db import DriverReader
from marketsync.http.errors import NotFound, UpstreamUnavailable, ValidationFailed
from marketsync.jobs import service as jobs
from marketsync.jobs.types import TaxonomyLoadPayload
from marketsync.kinds import ConnectionState, kind_of, marketplace_name
from marketsync.kit.ids import new_id
from marketsync.marketplaces import feeds
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.connector import CategorySchema, MarketplaceError, UnknownCategory, connector_for
from marketsync.models import MarketplaceConnection
from marketsync.models.catalog import ProductTypeView, TaxonomyCategory, TaxonomyImport
from marketsync.runtime import Runtime

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
    sequence = (latest.sequence if latest else 0) + 1
    import_id = new_id()
    current = await repository.current_views(session, platform, country)
    views = _plan_views(
        leaves,
        current,
        _ViewStamp(platform, country, sequence, import_id, now),
        from_marketplace=schemas_from_marketplace,
    )
    steps = _Steps(len(taxonomy.categories) + len(leaves), progress)
    await _write_categories(session, taxonomy, country, views.view_of, steps)
    await repository.refresh_search_index(session, platform, country)
    await repository.retire_views(session, views.retired)
    for start in range(0, len(views.rows), repository.BATCH):
        await repository.insert_rows(session, ProductTypeView, views.rows[start : start + repository.BATCH])
        steps.report(steps.done + min(len(leaves), start + repository.BATCH))
    steps.report(steps.total)
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
            added_count=views.added,
            changed_count=views.changed,
            removed_count=views.removed,
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
        views.added,
        views.changed,
        views.removed,
        unchanged=latest is not None and latest.content_hash == content,
    )


@dataclass(frozen=True)
class _ViewStamp:
    """What every view of one import carries."""

    platform: str
    country: str
    sequence: int
    import_id: str
    now: datetime


@dataclass
class _ViewPlan:
    """What an import does to its site's schemas: the views it adds (rows), each leaf's new view id, the views it
    retires (every current one of a listed leaf, and those of leaves no longer listed), and the counts."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    view_of: dict[str, str] = field(default_factory=dict)
    retired: list[str] = field(default_factory=list)
    added: int = 0
    changed: int = 0
    removed: int = 0


def _plan_views(
    leaves: Sequence[CategorySpec],
    current: Mapping[str, repository.CurrentView],
    stamp: _ViewStamp,
    *,
    from_marketplace: bool,
) -> _ViewPlan:
    plan = _ViewPlan()
    for leaf in leaves:
        existing = current.get(leaf.category_id)
        if existing is None:
            plan.added += 1
        else:
            plan.retired.append(existing.view_id)
        if from_marketplace:
            # The list alone: a leaf's schema is the marketplace's, fetched when first asked for. A re-import retires
            # every stored one, so the next fetch issues a new ProductTypeViewId (spec section 9; decisions 0392, 0372).
            continue
        digest = leaf.content_hash()
        schema_version = f"{stamp.sequence}.{digest[:8]}"
        if existing is not None:
            if existing.content_hash == digest:
                schema_version = existing.schema_version  # same content: same version, under a new id
            else:
                plan.changed += 1
        view_id = new_id()
        plan.view_of[leaf.category_id] = view_id
        plan.rows.append(_view_row(view_id, leaf, digest, schema_version, stamp))
    listed = {leaf.category_id for leaf in leaves}
    removed = [v.view_id for category_id, v in current.items() if category_id not in listed]
    plan.retired.extend(removed)
    plan.removed = len(removed)
    return plan


def _view_row(view_id: str, leaf: CategorySpec, digest: str, schema_version: str, stamp: _ViewStamp) -> dict[str, Any]:
    return {
        "id": view_id,
        "platform": stamp.platform,
        "country": stamp.country,
        "category_id": leaf.category_id,
        "category_path": leaf.path,
        "product_type_code": leaf.product_type_code or leaf.category_id,
        "schema_version": schema_version,
        "content_hash": digest,
        "attributes": orjson.dumps([a.to_json() for a in leaf.attributes]),
        "off_api_requirements": list(leaf.off_api_requirements),
        "is_current": True,
        "import_id": stamp.import_id,
        "created_at": stamp.now,
    }


@dataclass
class _Steps:
    """An import's progress: categories written, then views."""

    total: int
    progress: Progress | None
    done: int = 0

    def report(self, done: int) -> None:
        if self.progress:
            self.progress(done, self.total)


async def _write_categories(
    session: AsyncSession, taxonomy: Taxonomy, country: str, view_of: Mapping[str, str], steps: _Steps
) -> None:
    """The site's tree replaced by the taxonomy's, in batches, in tree order (`position`)."""
    platform = taxonomy.platform
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
            steps.done += len(batch)
            batch = []
            steps.report(steps.done)
    await repository.insert_rows(session, TaxonomyCategory, batch)
    steps.done += len(batch)


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
        raise ValidationFailed(errors={"categoryId": [NOT_A_LEAF]})
    view = await repository.get_view(session, category.view_id)
    if view is None:  # pragma: no cover - the import writes both in one transaction
        raise NotFound("No schema for this category.")
    return Schema(view, schema_of(view))


NOT_A_LEAF = "Not a leaf category: listings go in leaf categories (POST /api/product-types/Search returns only those)."


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
