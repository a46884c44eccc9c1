"""All catalog queries: taxonomy import (bulk), category search, schema views, products and listings
as product creation and publishing need them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession

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


@dataclass(frozen=True)
class CurrentView:
    view_id: str
    content_hash: str


async def current_views(session: AsyncSession, platform: str, country: str) -> dict[str, CurrentView]:
    result = await session.execute(
        select(ProductTypeView.category_id, ProductTypeView.id, ProductTypeView.content_hash).where(
            ProductTypeView.platform == platform,
            ProductTypeView.country == country,
            ProductTypeView.is_current == true(),
        )
    )
    return {row.category_id: CurrentView(row.id, row.content_hash) for row in result}


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


async def search_leaves(
    session: AsyncSession, platform: str, country: str, text: str | None, limit: int, offset: int
) -> tuple[list[LeafRow], int]:
    """Leaves of the site (`platform`, `country`) in tree order; with `text`, those whose lower-cased name contains
    it, plus the category whose id equals it when it is a number."""
    conditions: list[Any] = [
        TaxonomyCategory.platform == platform,
        TaxonomyCategory.country == country,
        TaxonomyCategory.is_leaf == true(),
    ]
    if text:
        match = TaxonomyCategory.name_lower.contains(text.lower(), autoescape=True)
        if text.isdigit():
            match = or_(match, TaxonomyCategory.category_id == text)
        conditions.append(match)
    total = (await session.execute(select(func.count()).select_from(TaxonomyCategory).where(*conditions))).scalar_one()
    if total == 0 or offset >= total:
        return [], int(total)
    result = await session.execute(
        select(TaxonomyCategory.category_id, TaxonomyCategory.name, TaxonomyCategory.path)
        .where(*conditions)
        .order_by(TaxonomyCategory.position)
        .limit(limit)
        .offset(offset)
    )
    return [LeafRow(r.category_id, r.name, r.path) for r in result], int(total)


async def get_category(session: AsyncSession, platform: str, country: str, category_id: str) -> TaxonomyCategory | None:
    return await session.get(TaxonomyCategory, (platform, country, category_id))


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


async def get_listing(session: AsyncSession, product_id: str, marketplace_id: str) -> Listing | None:
    result = await session.execute(
        select(Listing).where(Listing.product_id == product_id, Listing.marketplace_id == marketplace_id)
    )
    return result.scalar_one_or_none()


async def listings_with_products(
    session: AsyncSession, account_id: str, marketplace_id: str, listing_ids: Iterable[str]
) -> list[tuple[Listing, Product]]:
    result = await session.execute(
        select(Listing, Product)
        .join(Product, Product.id == Listing.product_id)
        .where(
            Listing.account_id == account_id,
            Listing.marketplace_id == marketplace_id,
            Listing.id.in_(list(listing_ids)),
        )
        .order_by(Listing.id)
    )
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
