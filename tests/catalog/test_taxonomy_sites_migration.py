"""Migration 0014: one taxonomy per kind becomes one per site, and nothing that worked before stops working.

A database at revision 0013 holding a P1 taxonomy (kind-wide), P1 connections in UK and DE with a listing on each,
and a P2 taxonomy whose only connection is in FR, is upgraded: P1 UK (the home site) keeps the rows and their ids,
P1 DE gets a copy with its own ids and its listing points at the copy, P2's rows go to FR (its one connected site).
Downgrading goes back to one taxonomy per kind. Run on both databases, each in a database of its own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from marketsync import migrate
from marketsync.db import Database
from marketsync.models import Base
from marketsync.models.base import UTCDateTime
from tests.support.databases import downgrade

NOW = datetime(2026, 1, 1, tzinfo=UTC)
OLD_IMPORTS = sa.table(
    "taxonomy_imports",
    *(
        sa.column(name)
        for name in (
            "id",
            "platform",
            "sequence",
            "revision",
            "source",
            "content_hash",
            "category_count",
            "leaf_count",
            "added_count",
            "changed_count",
            "removed_count",
        )
    ),
    sa.column("imported_at", UTCDateTime()),  # typed: sqlite3's default datetime adapter is deprecated (3.12)
)
OLD_CATEGORIES = sa.table(
    "taxonomy_categories",
    *(
        sa.column(name)
        for name in (
            "platform",
            "category_id",
            "parent_id",
            "name",
            "name_lower",
            "path",
            "depth",
            "is_leaf",
            "position",
            "view_id",
        )
    ),
)
OLD_VIEWS = sa.table(
    "product_type_views",
    *(
        sa.column(name)
        for name in (
            "id",
            "platform",
            "category_id",
            "category_path",
            "product_type_code",
            "schema_version",
            "content_hash",
        )
    ),
    sa.column("attributes", sa.LargeBinary()),
    sa.column("off_api_requirements", sa.JSON()),
    sa.column("is_current"),
    sa.column("import_id"),
    sa.column("created_at", UTCDateTime()),
)


def _taxonomy(platform: str, suffix: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    import_row = {
        "id": f"IMPORT{suffix}".ljust(26, "0"),
        "platform": platform,
        "sequence": 1,
        "revision": 1,
        "source": "generated",
        "content_hash": "c" * 64,
        "category_count": 3,
        "leaf_count": 1,
        "added_count": 1,
        "changed_count": 0,
        "removed_count": 0,
        "imported_at": NOW,
    }
    view = {
        "id": f"VIEW{suffix}".ljust(26, "0"),
        "platform": platform,
        "category_id": "300",
        "category_path": "Root > Inner > Leaf",
        "product_type_code": "LEAF",
        "schema_version": "1.abcdef12",
        "content_hash": "v" * 64,
        "attributes": b"[]",
        "off_api_requirements": [],
        "is_current": True,
        "import_id": import_row["id"],
        "created_at": NOW,
    }
    tree = [
        ("100", None, "Root", "Root", 1, False, None),
        ("200", "100", "Inner", "Root > Inner", 2, False, None),
        ("300", "200", "Leaf", "Root > Inner > Leaf", 3, True, view["id"]),
    ]
    categories = [
        {
            "platform": platform,
            "category_id": category_id,
            "parent_id": parent,
            "name": name,
            "name_lower": name.lower(),
            "path": path,
            "depth": depth,
            "is_leaf": leaf,
            "position": position,
            "view_id": view_id,
        }
        for position, (category_id, parent, name, path, depth, leaf, view_id) in enumerate(tree)
    ]
    return import_row, categories, view


async def _seed_0013(db: Database) -> dict[str, str]:
    tables = Base.metadata.tables
    ids = {"account": "A".ljust(26, "0"), "product": "P".ljust(26, "0")}
    async with db.write_engine.begin() as conn:
        await conn.execute(tables["accounts"].insert(), [{"id": ids["account"], "name": "m", "created_at": NOW}])
        for platform, country in (("P1", "UK"), ("P1", "DE"), ("P2", "FR")):
            ids[f"{platform}{country}"] = f"C{platform}{country}".ljust(26, "0")
            await conn.execute(
                tables["marketplace_connections"].insert(),
                [
                    {
                        "id": ids[f"{platform}{country}"],
                        "account_id": ids["account"],
                        "platform": platform,
                        "country": country,
                        "created_at": NOW,
                    }
                ],
            )
        await conn.execute(
            tables["products"].insert(),
            [
                {
                    "id": ids["product"],
                    "account_id": ids["account"],
                    "sku": "S",
                    "sku_lower": "s",
                    "quantity": 0,
                    "modified_at": NOW,
                    "created_at": NOW,
                }
            ],
        )
        for platform, suffix in (("P1", "1"), ("P2", "2")):
            import_row, categories, view = _taxonomy(platform, suffix)
            await conn.execute(OLD_IMPORTS.insert(), [import_row])
            await conn.execute(OLD_CATEGORIES.insert(), categories)
            await conn.execute(OLD_VIEWS.insert(), [view])
            ids[f"view{platform}"] = view["id"]
        for site in ("P1UK", "P1DE"):
            await conn.execute(
                tables["listings"].insert(),
                [
                    {
                        "id": f"L{site}".ljust(26, "0"),
                        "account_id": ids["account"],
                        "product_id": ids["product"],
                        "marketplace_id": ids[site],
                        "category_id": "300",
                        "attributes": {},
                        "status": "Live",
                        "created_at": NOW,
                        "updated_at": NOW,
                        "product_type_view_id": ids["viewP1"],
                    }
                ],
            )
    return ids


async def test_kind_wide_taxonomies_become_per_site_and_listings_keep_their_schema(empty_url: str) -> None:
    db = Database(empty_url)
    try:
        await migrate.upgrade(db, "0013")
        ids = await _seed_0013(db)
        await migrate.upgrade(db)

        async with db.engine.connect() as conn:
            sites = (
                await conn.execute(
                    sa.text("SELECT platform, country, count(*) FROM taxonomy_categories GROUP BY platform, country")
                )
            ).all()
            assert sorted(tuple(row) for row in sites) == [("P1", "DE", 3), ("P1", "UK", 3), ("P2", "FR", 3)]
            view_rows = await conn.execute(sa.text("SELECT id, platform, country, import_id FROM product_type_views"))
            views = {(row.platform, row.country): (row.id, row.import_id) for row in view_rows}
            assert views[("P1", "UK")][0] == ids["viewP1"]  # the home site keeps its ids
            assert views[("P1", "DE")][0] != ids["viewP1"]  # the other site has its own
            assert views[("P2", "FR")][0] == ids["viewP2"]  # P2's only connected site takes the rows
            imports = {
                (row.platform, row.country): row.id
                for row in await conn.execute(sa.text("SELECT id, platform, country FROM taxonomy_imports"))
            }
            assert set(imports) == {("P1", "UK"), ("P1", "DE"), ("P2", "FR")}
            assert views[("P1", "DE")][1] == imports[("P1", "DE")]
            leaf_view = (
                await conn.execute(
                    sa.text(
                        "SELECT view_id FROM taxonomy_categories WHERE platform = 'P1' AND country = 'DE' "
                        "AND category_id = '300'"
                    )
                )
            ).scalar_one()
            assert leaf_view == views[("P1", "DE")][0]
            listing_views = dict(
                (await conn.execute(sa.text("SELECT marketplace_id, product_type_view_id FROM listings"))).all()
            )
            assert listing_views == {ids["P1UK"]: ids["viewP1"], ids["P1DE"]: views[("P1", "DE")][0]}

        async with db.write_engine.connect() as conn:
            await conn.run_sync(downgrade, "0013")
        async with db.engine.connect() as conn:
            rows = await conn.execute(sa.text("SELECT platform, count(*) FROM taxonomy_categories GROUP BY platform"))
            assert sorted(tuple(row) for row in rows.all()) == [("P1", 3), ("P2", 3)]
            kept = (await conn.execute(sa.text("SELECT id FROM product_type_views WHERE platform = 'P1'"))).scalar_one()
            assert kept == ids["viewP1"]
    finally:
        await db.dispose()
