"""All catalog queries: taxonomy import (bulk), category search, schema views, products and listings
as product creation and publishing need them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from sqlalchemy import and_, delete, func, select, true, update
from sqlalchemy import text as sql_text
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.catalog import statements
from marketsync.db import DriverReader, DriverSql, dialect_of, session_driver
from marketsync.kinds import ConnectionState, ListingStatus
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.models.catalog import ProductTypeView, TaxonomyCategory, TaxonomyImport

BATCH = 1000


# --------------------------------------------------------------------------------------------------
# Taxonomy import


async def latest_import(session: AsyncSession, platform: str, country: str) -> TaxonomyImport | None:
    result = await session.execute(
        select(TaxonomyImport)
        .where(TaxonomyImport.platform == platform, TaxonomyImport.country == country)
        .order_by(TaxonomyImport.sequence.desc())
        .limit(1)
    )
    return result.scalar_one_or_none()


async def site_has_taxonomy(session: AsyncSession, platform: str, country: str) -> bool:
    """Whether the site (a kind in a country) has a category tree loaded."""
    return await latest_import(session, platform, country) is not None


@dataclass(frozen=True)
class CurrentView:
    view_id: str
    content_hash: str
    schema_version: str


async def current_views(session: AsyncSession, platform: str, country: str) -> dict[str, CurrentView]:
    result = await session.execute(
        select(
            ProductTypeView.category_id,
            ProductTypeView.id,
            ProductTypeView.content_hash,
            ProductTypeView.schema_version,
        ).where(
            ProductTypeView.platform == platform,
            ProductTypeView.country == country,
            ProductTypeView.is_current == true(),
        )
    )
    return {row.category_id: CurrentView(row.id, row.content_hash, row.schema_version) for row in result}


async def delete_categories(session: AsyncSession, platform: str, country: str) -> None:
    await session.execute(
        delete(TaxonomyCategory).where(TaxonomyCategory.platform == platform, TaxonomyCategory.country == country)
    )


async def insert_rows(session: AsyncSession, table: Any, rows: Sequence[dict[str, Any]]) -> None:
    """One executemany per batch (DESIGN.md section 6: never long multi-VALUES lists)."""
    if rows:
        # Core insert on the Table: skips the ORM bulk-insert bookkeeping (measurably faster).
        await session.execute(table.__table__.insert(), list(rows))


async def retire_views(session: AsyncSession, view_ids: Sequence[str]) -> None:
    for start in range(0, len(view_ids), 500):
        chunk = view_ids[start : start + 500]
        await session.execute(update(ProductTypeView).where(ProductTypeView.id.in_(chunk)).values(is_current=False))


def add_import(session: AsyncSession, record: TaxonomyImport) -> None:
    session.add(record)


async def taxonomy_imports(session: AsyncSession) -> Sequence[TaxonomyImport]:
    result = await session.execute(
        select(TaxonomyImport).order_by(TaxonomyImport.platform, TaxonomyImport.country, TaxonomyImport.sequence)
    )
    return result.scalars().all()


async def known_countries(session: AsyncSession, platform: str) -> list[str]:
    """The countries of a kind's sites the service knows: those holding a taxonomy and those connected (any account,
    any state), sorted."""
    imported = select(TaxonomyImport.country).where(TaxonomyImport.platform == platform)
    connected = select(MarketplaceConnection.country).where(MarketplaceConnection.platform == platform)
    result = await session.execute(imported.union(connected))
    return sorted(str(country) for country in result.scalars())


# --------------------------------------------------------------------------------------------------
# Search and schemas


@dataclass(frozen=True)
class LeafRow:
    category_id: str
    name: str
    path: str


@dataclass(frozen=True)
class Site:
    """What a search needs of the caller's connection."""

    platform: str
    country: str
    active: bool


# SQLite's trigram index (migration 0015) holds substrings of 3 characters: a shorter text is matched by the scan.
TRIGRAM = 3
# SQLite's index is asked for the leaves holding this many of the text's trigrams, the rarest; LIKE checks them. Every
# trigram of a phrase made FTS5 read each one's whole list of leaves, a common one's growing with the taxonomy.
RAREST_TRIGRAMS = 2


def search_key(text: str) -> str:
    """What category search compares (docs/decisions/0083-category-search.md): the text lower-cased (Python's
    `lower()`), each run of white space (`str.split()`'s: spaces, tabs, line breaks, no-break spaces...) one space,
    none at either end. A leaf's `name_lower` holds its name's key and a SearchText is reduced to its key, so
    "BOTTLES  accessories" finds "Bottles Accessories" and "bottles accessories" finds a "Bottles  Accessories"."""
    return " ".join(text.lower().split())


def contains_pattern(needle: str) -> str:
    """The LIKE pattern of "contains `needle`", its wildcards literal."""
    escape = statements.ESCAPE
    escaped = needle.replace(escape, escape * 2).replace("%", escape + "%").replace("_", escape + "_")
    return f"%{escaped}%"


def fts_phrase(needle: str) -> str:
    """An FTS5 query matching `needle` as one phrase (a string in double quotes, a quote doubled): with the trigram
    tokenizer, the rows containing it as a substring. Every FTS5 operator (AND, *, -, :, ^) inside is plain text."""
    return '"' + needle.replace('"', '""') + '"'


def trigrams(needle: str) -> list[str]:
    """The distinct substrings of `TRIGRAM` characters of `needle`, in order (the FTS5 trigram tokenizer's terms)."""
    return list(dict.fromkeys(needle[start : start + TRIGRAM] for start in range(len(needle) - TRIGRAM + 1)))


def rarest_trigrams_query(grams: Sequence[str], leaves: Mapping[str, int]) -> str:
    """An FTS5 query for the leaves holding the `RAREST_TRIGRAMS` of `grams` fewest leaves hold (`leaves`: the count
    of each; a trigram not counted is in none). The counts choose which trigrams, never which leaves: every leaf
    containing the text holds them all."""
    rarest = sorted(grams, key=lambda gram: leaves.get(gram, 0))[:RAREST_TRIGRAMS]
    return " AND ".join(fts_phrase(gram) for gram in rarest)


async def _sqlite_text_query(reader: DriverReader, needle: str) -> str:
    grams = trigrams(needle)
    if len(grams) <= RAREST_TRIGRAMS:
        return fts_phrase(needle)
    counted = await reader.fetch(statements.TRIGRAM_LEAVES.text(postgres=False, items=len(grams)), grams)
    return rarest_trigrams_query(grams, {gram: leaves for gram, leaves in counted})


async def site_of_connection(reader: DriverReader, account_id: str, marketplace_id: str) -> Site | None:
    sql = DriverSql(reader.postgres)
    rows = await reader.fetch(
        "SELECT platform, country, state FROM marketplace_connections "  # noqa: S608
        f"WHERE id = {sql.bind(marketplace_id)} AND account_id = {sql.bind(account_id)}",
        sql.params,
    )
    if not rows:
        return None
    platform, country, state = rows[0]
    return Site(platform, country, state == ConnectionState.ACTIVE)


async def search_leaves(
    reader: DriverReader, platform: str, country: str, text: str | None, limit: int, offset: int
) -> tuple[list[LeafRow], int]:
    """Leaves of the site (`platform`, `country`) in tree order; with `text`, those whose name's key contains the
    text's key, plus the leaf whose id equals it when it is a number (docs/decisions/0083-category-search.md).

    The match is always `name_lower LIKE '%text%'` on the text's key, wildcards literal. What finds the
    candidates differs: PostgreSQL's trigram index answers that LIKE itself; on SQLite the FTS5 trigram table
    (migration 0015) narrows the leaves to those holding the text's two rarest trigrams (migration 0019), and the LIKE
    is checked on them; a text shorter than a trigram, and the walk without text, read the covering index in tree
    order.
    """
    sql = DriverSql(reader.postgres)
    site = {"platform": platform, "country": country}

    if not text:
        # The walk: the site's leaves as its latest import counted them (an import rewrites the site's categories and
        # records that count in one transaction; counting a million leaves took 130 ms, docs/perf/catalog.md), and
        # one page of the covering index ix_taxonomy_categories_walk.
        counted = await reader.fetch(
            "SELECT leaf_count FROM taxonomy_imports "  # noqa: S608
            f"WHERE platform = {sql.bind(platform)} AND country = {sql.bind(country)} ORDER BY sequence DESC LIMIT 1",
            sql.params,
        )
        total = int(counted[0][0]) if counted else 0
        if total == 0 or offset >= total:
            return [], total
        sql.params.clear()
        page = statements.LEAVES_PAGE.compose(sql, **site, limit=limit, offset=offset)
        return [LeafRow(*row) for row in await reader.fetch(page, sql.params)], total

    needle = search_key(text)
    pattern = contains_pattern(needle)
    if len(needle) < TRIGRAM:
        hits = statements.LEAVES_CONTAINING_SHORT.compose(sql, **site, pattern=pattern)
    elif reader.postgres:
        hits = statements.LEAVES_CONTAINING.compose(sql, **site, pattern=pattern)
    else:
        query = await _sqlite_text_query(reader, needle)
        hits = statements.LEAVES_CONTAINING.compose(sql, **site, pattern=pattern, query=query)
    if text.isascii() and text.isdigit():
        hits += " UNION " + statements.LEAF_WITH_ID.compose(sql, **site, category_id=text)
    count_params = list(sql.params)
    # One statement: the matches' count beside one page of them, the page joined to its names and paths.
    rows = await reader.fetch(
        f"WITH hits AS ({hits}), "  # noqa: S608
        "page AS (SELECT category_id, position, count(*) OVER () AS total FROM hits "
        f"ORDER BY position LIMIT {sql.bind(limit)} OFFSET {sql.bind(offset)}) "
        "SELECT page.total, c.category_id, c.name, c.path FROM page JOIN taxonomy_categories c "
        f"ON c.platform = {sql.bind(platform)} AND c.country = {sql.bind(country)} "
        "AND c.category_id = page.category_id ORDER BY page.position",
        sql.params,
    )
    if rows:
        return [LeafRow(row[1], row[2], row[3]) for row in rows], int(rows[0][0])
    if offset == 0:
        return [], 0
    # A page past the end: the count alone.
    total = (await reader.fetch(f"SELECT count(*) FROM ({hits}) AS hits", count_params))[0][0]  # noqa: S608
    return [], int(total)


async def refresh_search_index(session: AsyncSession, platform: str, country: str) -> None:
    """After an import rewrote the site's categories: on SQLite, rewrite the site's rows of the text index from its
    leaves, and the trigrams' counts from the index (every site's: 0.9 s at a million leaves). PostgreSQL's trigram
    index follows the table by itself, but the planner needs statistics of the new rows (without them a search plans
    a full read: 70 ms instead of 1 on 20,000 categories, until autovacuum comes by); ANALYZE counts the rows this
    transaction wrote."""
    if dialect_of(session) != "sqlite":
        await session.execute(sql_text(statements.CATEGORY_STATISTICS.text(postgres=True)))
        return
    site = {"platform": platform, "country": country}
    await session.execute(sql_text(statements.CLEAR_SITE_SEARCH_ROWS.text(postgres=False)), site)
    await session.execute(sql_text(statements.FILL_SITE_SEARCH_ROWS.text(postgres=False)), site)
    await session.execute(sql_text(statements.CLEAR_TRIGRAM_LEAVES.text(postgres=False)))
    await session.execute(sql_text(statements.FILL_TRIGRAM_LEAVES.text(postgres=False)))


async def connection_category_view(
    session: AsyncSession, account_id: str, marketplace_id: str, category_id: str | None
) -> tuple[MarketplaceConnection | None, TaxonomyCategory | None, ProductTypeView | None]:
    """The account's connection `marketplace_id` (any state), the category `category_id` of its site, and that
    category's view (None where absent), in one query."""
    of_account = (MarketplaceConnection.id == marketplace_id, MarketplaceConnection.account_id == account_id)
    if category_id is None:
        connection = (await session.execute(select(MarketplaceConnection).where(*of_account))).scalar_one_or_none()
        return connection, None, None
    query = (
        select(MarketplaceConnection, TaxonomyCategory, ProductTypeView)
        .outerjoin(
            TaxonomyCategory,
            and_(
                TaxonomyCategory.platform == MarketplaceConnection.platform,
                TaxonomyCategory.country == MarketplaceConnection.country,
                TaxonomyCategory.category_id == category_id,
            ),
        )
        .outerjoin(ProductTypeView, ProductTypeView.id == TaxonomyCategory.view_id)
        .where(*of_account)
    )
    row = (await session.execute(query)).first()
    if row is None:
        return None, None, None
    return row[0], row[1], row[2]


class CreateReads(Protocol):
    """What a create's validation reads (service.validate_create): through a session, or on the raw driver."""

    async def connection_category_view(
        self, account_id: str, marketplace_id: str, category_id: str | None
    ) -> tuple[MarketplaceConnection | None, TaxonomyCategory | None, ProductTypeView | None]: ...

    async def view(self, view_id: str) -> ProductTypeView | None: ...

    async def category(self, platform: str, country: str, category_id: str) -> TaxonomyCategory | None: ...

    async def products_by_sku(self, account_id: str, sku: str) -> Sequence[Product]: ...

    async def listing(self, product_id: str, marketplace_id: str) -> Listing | None: ...


class SessionCreateReads:
    """A create's validation reads in a session (the write transaction's, when it validates there)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def connection_category_view(
        self, account_id: str, marketplace_id: str, category_id: str | None
    ) -> tuple[MarketplaceConnection | None, TaxonomyCategory | None, ProductTypeView | None]:
        return await connection_category_view(self.session, account_id, marketplace_id, category_id)

    async def view(self, view_id: str) -> ProductTypeView | None:
        return await get_view(self.session, view_id)

    async def category(self, platform: str, country: str, category_id: str) -> TaxonomyCategory | None:
        return await get_category(self.session, platform, country, category_id)

    async def products_by_sku(self, account_id: str, sku: str) -> Sequence[Product]:
        return await products_by_sku(self.session, account_id, sku)

    async def listing(self, product_id: str, marketplace_id: str) -> Listing | None:
        return await get_listing(self.session, product_id, marketplace_id)


_VIEW_COLUMNS = "id, platform, country, category_id, is_current, attributes, off_api_requirements"


def _json(value: Any) -> Any:
    """A JSON column as the raw driver returns it (text on SQLite, str from asyncpg), decoded."""
    return orjson.loads(value) if isinstance(value, (str, bytes)) else value


def _view(row: Sequence[Any]) -> ProductTypeView:
    view_id, platform, country, category_id, is_current, attributes, off_api = row
    return ProductTypeView(
        id=view_id,
        platform=platform,
        country=country,
        category_id=category_id,
        is_current=bool(is_current),
        attributes=bytes(attributes),
        off_api_requirements=_json(off_api),
    )


class DriverCreateReads:
    """A create's validation reads on the raw driver (`Database.driver_read`), before its write transaction: the
    same rows as SessionCreateReads, as transient model objects holding the columns validation reads."""

    def __init__(self, reader: DriverReader) -> None:
        self.reader = reader

    async def connection_category_view(
        self, account_id: str, marketplace_id: str, category_id: str | None
    ) -> tuple[MarketplaceConnection | None, TaxonomyCategory | None, ProductTypeView | None]:
        sql = DriverSql(self.reader.postgres)
        views = ", ".join(f"v.{column}" for column in _VIEW_COLUMNS.split(", "))
        rows = await self.reader.fetch(
            f"SELECT c.id, c.platform, c.country, c.state, t.category_id, t.is_leaf, t.view_id, {views} "  # noqa: S608
            "FROM marketplace_connections c LEFT JOIN taxonomy_categories t ON t.platform = c.platform "
            f"AND t.country = c.country AND t.category_id = {sql.bind(category_id)} "
            "LEFT JOIN product_type_views v ON v.id = t.view_id "
            f"WHERE c.id = {sql.bind(marketplace_id)} AND c.account_id = {sql.bind(account_id)}",
            sql.params,
        )
        if not rows:
            return None, None, None
        row = rows[0]
        connection = MarketplaceConnection(
            id=row[0], account_id=account_id, platform=row[1], country=row[2], state=row[3]
        )
        if row[4] is None:
            return connection, None, None
        category = TaxonomyCategory(
            platform=row[1], country=row[2], category_id=row[4], is_leaf=bool(row[5]), view_id=row[6]
        )
        return connection, category, _view(row[7:]) if row[7] is not None else None

    async def view(self, view_id: str) -> ProductTypeView | None:
        sql = DriverSql(self.reader.postgres)
        rows = await self.reader.fetch(
            f"SELECT {_VIEW_COLUMNS} FROM product_type_views WHERE id = {sql.bind(view_id)}",  # noqa: S608
            sql.params,
        )
        return _view(rows[0]) if rows else None

    async def category(self, platform: str, country: str, category_id: str) -> TaxonomyCategory | None:
        sql = DriverSql(self.reader.postgres)
        rows = await self.reader.fetch(
            "SELECT is_leaf, view_id FROM taxonomy_categories "  # noqa: S608
            f"WHERE platform = {sql.bind(platform)} AND country = {sql.bind(country)} "
            f"AND category_id = {sql.bind(category_id)}",
            sql.params,
        )
        if not rows:
            return None
        return TaxonomyCategory(
            platform=platform, country=country, category_id=category_id, is_leaf=bool(rows[0][0]), view_id=rows[0][1]
        )

    async def products_by_sku(self, account_id: str, sku: str) -> Sequence[Product]:
        sql = DriverSql(self.reader.postgres)
        rows = await self.reader.fetch(
            "SELECT id, sku FROM products "  # noqa: S608
            f"WHERE account_id = {sql.bind(account_id)} AND sku_lower = {sql.bind(sku.lower())} ORDER BY id",
            sql.params,
        )
        return [Product(id=product_id, account_id=account_id, sku=found) for product_id, found in rows]

    async def listing(self, product_id: str, marketplace_id: str) -> Listing | None:
        sql = DriverSql(self.reader.postgres)
        rows = await self.reader.fetch(
            "SELECT id, listing_id, category_id, attributes FROM listings "  # noqa: S608
            f"WHERE product_id = {sql.bind(product_id)} AND marketplace_id = {sql.bind(marketplace_id)}",
            sql.params,
        )
        if not rows:
            return None
        listing_row_id, listing_id, category_id, attributes = rows[0]
        return Listing(
            id=listing_row_id,
            product_id=product_id,
            marketplace_id=marketplace_id,
            listing_id=listing_id,
            category_id=category_id,
            attributes=_json(attributes),
        )


async def get_category(
    session: AsyncSession, platform: str, country: str, category_id: str, *, for_update: bool = False
) -> TaxonomyCategory | None:
    return await session.get(TaxonomyCategory, (platform, country, category_id), with_for_update=for_update)


async def get_view(session: AsyncSession, view_id: str) -> ProductTypeView | None:
    return await session.get(ProductTypeView, view_id)


# --------------------------------------------------------------------------------------------------
# Products and listings


async def products_by_sku(session: AsyncSession, account_id: str, sku: str) -> Sequence[Product]:
    """Every product of the account whose SKU equals `sku` ignoring case (exact match included)."""
    result = await session.execute(
        select(Product).where(Product.account_id == account_id, Product.sku_lower == sku.lower()).order_by(Product.id)
    )
    return result.scalars().all()


async def connection_state_and_sku_holders(
    session: AsyncSession, account_id: str, marketplace_id: str, sku: str
) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """The state of the account's connection `marketplace_id` (None: no such connection) and the (id, SKU) of the
    account's products whose SKU equals `sku` ignoring case, ordered by id (as `products_by_sku`): one statement on
    the session's driver, inside its transaction."""
    driver = await session_driver(session)
    sql = DriverSql(driver.postgres)
    rows = await driver.fetch(
        "SELECT c.state, p.id, p.sku FROM marketplace_connections c LEFT JOIN products p "  # noqa: S608
        f"ON p.account_id = c.account_id AND p.sku_lower = {sql.bind(sku.lower())} "
        f"WHERE c.id = {sql.bind(marketplace_id)} AND c.account_id = {sql.bind(account_id)} ORDER BY p.id",
        sql.params,
    )
    if not rows:
        return None, ()
    return rows[0][0], tuple((row[1], row[2]) for row in rows if row[1] is not None)


async def get_listing(session: AsyncSession, product_id: str, marketplace_id: str) -> Listing | None:
    result = await session.execute(
        select(Listing).where(Listing.product_id == product_id, Listing.marketplace_id == marketplace_id)
    )
    return result.scalar_one_or_none()


async def listings_with_products(
    session: AsyncSession,
    account_id: str,
    marketplace_id: str,
    listing_ids: Iterable[str],
    *,
    lock_products: bool = False,
) -> list[tuple[Listing, Product]]:
    """`lock_products`: the products' rows locked (FOR UPDATE), so a price/stock push of them waits for this
    transaction, or this one for the push, and reads what the other committed."""
    query = (
        select(Listing, Product)
        .join(Product, Product.id == Listing.product_id)
        .where(
            Listing.account_id == account_id,
            Listing.marketplace_id == marketplace_id,
            Listing.id.in_(list(listing_ids)),
        )
        .order_by(Listing.id)
    )
    if lock_products:
        query = query.with_for_update(of=Product)
    result = await session.execute(query)
    return [(row[0], row[1]) for row in result]


async def listing_with_product(
    session: AsyncSession, account_id: str, listing_id: str, *, for_update: bool = False
) -> tuple[Listing, Product] | None:
    query = (
        select(Listing, Product)
        .join(Product, Product.id == Listing.product_id)
        .where(Listing.account_id == account_id, Listing.id == listing_id)
    )
    if for_update:
        query = query.with_for_update(of=Listing)
    row = (await session.execute(query)).first()
    return (row[0], row[1]) if row is not None else None


async def listings_of_product(
    session: AsyncSession, account_id: str, product_id: str
) -> Sequence[tuple[Listing, MarketplaceConnection]]:
    result = await session.execute(
        select(Listing, MarketplaceConnection)
        .join(MarketplaceConnection, MarketplaceConnection.id == Listing.marketplace_id)
        .where(Listing.account_id == account_id, Listing.product_id == product_id)
        .order_by(MarketplaceConnection.platform, MarketplaceConnection.country, Listing.id)
    )
    return [(listing, connection) for listing, connection in result.all()]


def capped_count(query: Any, at_most: int) -> Any:
    """How many rows `query` finds, counting at most `at_most + 1`: a home page count reads no more index entries than
    it shows ("1,000+")."""
    return select(func.count()).select_from(query.limit(at_most + 1).subquery())


async def listings_needing_attention(session: AsyncSession, account_id: str, at_most: int) -> tuple[int, int]:
    """(Rejected, waiting for their fill-ins) of the account's listings, each at most `at_most + 1`: one range of each
    index (migration 0036)."""
    rejected = capped_count(select(Listing.id).where(_needing(session, account_id, held=False)), at_most)
    held = capped_count(select(Listing.id).where(_needing(session, account_id, held=True)), at_most)
    row = (await session.execute(select(rejected.scalar_subquery(), held.scalar_subquery()))).one()
    return int(row[0]), int(row[1])


@dataclass(frozen=True)
class ListingToFix:
    listing_id: str
    sku: str
    platform: str
    country: str
    status: str
    last_error: str | None


def _needing(session: AsyncSession, account_id: str, held: bool) -> Any:
    """Rejected listings, or (`held`) those with a change held for its fill-ins (service.HELD), in the words of the
    partial index ix_listings_account_held, so that the planner reads that index alone."""
    if held:
        sqlite = dialect_of(session) == "sqlite"
        predicate = statements.LISTING_HELD_SQLITE if sqlite else statements.LISTING_HELD_POSTGRES
        return and_(Listing.account_id == account_id, sql_text(predicate))
    return and_(Listing.account_id == account_id, Listing.status == ListingStatus.REJECTED)


async def listings_to_fix(
    session: AsyncSession, account_id: str, *, held: bool, limit: int, offset: int
) -> tuple[list[ListingToFix], int]:
    """A page of the account's Rejected listings (or, `held`, those waiting for their fill-ins), by SKU, and how
    many there are."""
    where = _needing(session, account_id, held)
    query = (
        select(
            Listing.id,
            Product.sku,
            MarketplaceConnection.platform,
            MarketplaceConnection.country,
            Listing.status,
            Listing.last_error,
        )
        .join(Product, Product.id == Listing.product_id)
        .join(MarketplaceConnection, MarketplaceConnection.id == Listing.marketplace_id)
        .where(where)
        .order_by(Product.sku, MarketplaceConnection.platform, MarketplaceConnection.country)
        .limit(limit)
        .offset(offset)
    )
    rows = [ListingToFix(*row) for row in (await session.execute(query))]
    total = int((await session.execute(select(func.count()).where(where))).scalar_one())
    return rows, total
