"""Taxonomies per site: a `country` column on taxonomy_imports, taxonomy_categories (in its key) and
product_type_views, so each marketplace site (P1 UK, P1 DE) has its own tree and ProductTypeViewIds
(docs/decisions/0221-taxonomies-per-site.md).

Existing rows were one taxonomy per kind. They become the taxonomy of one site of that kind: its home site (the
demo's: P1 UK, P2 DE, P3 US, P4 FR) when it is connected or nothing is, else the first connected country. Every
other connected site of the kind gets a copy with its own ids (views, imports), and its listings are pointed at
their site's copy of the view they recorded, so nothing that worked before the upgrade stops working.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from marketsync.kit.ids import new_id

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

HOME = {"P1": "UK", "P2": "DE", "P3": "US", "P4": "FR"}
TABLES = ("taxonomy_imports", "taxonomy_categories", "product_type_views")
BATCH = 1000

imports = sa.table(
    "taxonomy_imports",
    sa.column("id"),
    sa.column("platform"),
    sa.column("country"),
    sa.column("sequence"),
    sa.column("revision"),
    sa.column("source"),
    sa.column("content_hash"),
    sa.column("category_count"),
    sa.column("leaf_count"),
    sa.column("added_count"),
    sa.column("changed_count"),
    sa.column("removed_count"),
    sa.column("imported_at"),
)
categories = sa.table(
    "taxonomy_categories",
    sa.column("platform"),
    sa.column("country"),
    sa.column("category_id"),
    sa.column("parent_id"),
    sa.column("name"),
    sa.column("name_lower"),
    sa.column("path"),
    sa.column("depth"),
    sa.column("is_leaf"),
    sa.column("position"),
    sa.column("view_id"),
)
views = sa.table(
    "product_type_views",
    sa.column("id"),
    sa.column("platform"),
    sa.column("country"),
    sa.column("category_id"),
    sa.column("category_path"),
    sa.column("product_type_code"),
    sa.column("schema_version"),
    sa.column("content_hash"),
    sa.column("attributes", sa.LargeBinary()),
    sa.column("off_api_requirements", sa.JSON()),
    sa.column("is_current"),
    sa.column("import_id"),
    sa.column("created_at"),
)
connections = sa.table("marketplace_connections", sa.column("id"), sa.column("platform"), sa.column("country"))
listings = sa.table("listings", sa.column("id"), sa.column("marketplace_id"), sa.column("product_type_view_id"))


def _keeper(platform: str, sites: list[str]) -> str:
    home = HOME.get(platform)
    if home is not None and (home in sites or not sites):
        return home
    return sites[0] if sites else "UK"


def _rows(bind: Any, table: Any, platform: str, country: str) -> list[dict[str, Any]]:
    result = bind.execute(sa.select(table).where(table.c.platform == platform, table.c.country == country))
    return [dict(row._mapping) for row in result]


def _insert(bind: Any, table: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), BATCH):
        bind.execute(table.insert(), rows[start : start + BATCH])


def _copy_site(bind: Any, platform: str, source: str, target: str) -> None:
    import_ids = {row["id"]: new_id() for row in _rows(bind, imports, platform, source)}
    _insert(
        bind,
        imports,
        [{**row, "id": import_ids[row["id"]], "country": target} for row in _rows(bind, imports, platform, source)],
    )
    view_rows = _rows(bind, views, platform, source)
    view_ids = {row["id"]: new_id() for row in view_rows}
    _insert(
        bind,
        views,
        [
            {
                **row,
                "id": view_ids[row["id"]],
                "country": target,
                "import_id": import_ids.get(row["import_id"], row["import_id"]),
            }
            for row in view_rows
        ],
    )
    _insert(
        bind,
        categories,
        [
            {**row, "country": target, "view_id": view_ids.get(row["view_id"]) if row["view_id"] else None}
            for row in _rows(bind, categories, platform, source)
        ],
    )
    # The target site's listings record their own site's view.
    site_listings = bind.execute(
        sa.select(listings.c.id, listings.c.product_type_view_id)
        .join(connections, connections.c.id == listings.c.marketplace_id)
        .where(
            connections.c.platform == platform,
            connections.c.country == target,
            listings.c.product_type_view_id.is_not(None),
        )
    ).all()
    for listing_id, view_id in site_listings:
        if view_id in view_ids:
            bind.execute(
                listings.update().where(listings.c.id == listing_id).values(product_type_view_id=view_ids[view_id])
            )


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch_op:
            batch_op.add_column(sa.Column("country", sa.String(length=8), nullable=True))

    # Each kind's rows become its keeper site's, before the new keys exist.
    bind = op.get_bind()
    platforms = sorted(
        {
            str(p)
            for table in (imports, categories, views)
            for p in bind.execute(sa.select(table.c.platform).distinct()).scalars()
        }
    )
    copies: list[tuple[str, str, str]] = []
    for platform in platforms:
        sites = sorted(
            str(c)
            for c in bind.execute(
                sa.select(connections.c.country).where(connections.c.platform == platform).distinct()
            ).scalars()
        )
        keeper = _keeper(platform, sites)
        for table in (imports, categories, views):
            bind.execute(table.update().where(table.c.platform == platform).values(country=keeper))
        copies.extend((platform, keeper, site) for site in sites if site != keeper)

    with op.batch_alter_table("taxonomy_imports") as batch_op:
        batch_op.alter_column("country", existing_type=sa.String(length=8), nullable=False)
        batch_op.drop_index("ix_taxonomy_imports_platform_sequence")
        batch_op.create_index("ix_taxonomy_imports_site_sequence", ["platform", "country", "sequence"], unique=True)
    with op.batch_alter_table("taxonomy_categories") as batch_op:
        batch_op.alter_column("country", existing_type=sa.String(length=8), nullable=False)
        batch_op.drop_index("ix_taxonomy_categories_walk")
        batch_op.drop_index("ix_taxonomy_categories_name")
        batch_op.drop_constraint("pk_taxonomy_categories", type_="primary")
        batch_op.create_primary_key("pk_taxonomy_categories", ["platform", "country", "category_id"])
        batch_op.create_index(
            "ix_taxonomy_categories_walk",
            ["platform", "country", "is_leaf", "position", "name_lower", "category_id"],
            unique=False,
        )
        batch_op.create_index("ix_taxonomy_categories_name", ["platform", "country", "name_lower"], unique=False)
    with op.batch_alter_table("product_type_views") as batch_op:
        batch_op.alter_column("country", existing_type=sa.String(length=8), nullable=False)
        batch_op.drop_index("ix_product_type_views_category")
        batch_op.create_index(
            "ix_product_type_views_category", ["platform", "country", "category_id", "is_current"], unique=False
        )

    # Every other connected site of the kind gets its own copy, with its own ids.
    for platform, keeper, site in copies:
        _copy_site(bind, platform, keeper, site)


def downgrade() -> None:
    # Back to one taxonomy per kind: each kind keeps its home site's rows (else its first site's).
    bind = op.get_bind()
    pairs = bind.execute(sa.select(imports.c.platform, imports.c.country).distinct()).all()
    by_platform: dict[str, list[str]] = {}
    for platform, country in pairs:
        by_platform.setdefault(str(platform), []).append(str(country))
    for platform, countries in by_platform.items():
        keeper = _keeper(platform, sorted(countries))
        for table in (imports, categories, views):
            bind.execute(table.delete().where(table.c.platform == platform, table.c.country != keeper))

    with op.batch_alter_table("product_type_views") as batch_op:
        batch_op.drop_index("ix_product_type_views_category")
        batch_op.create_index("ix_product_type_views_category", ["platform", "category_id", "is_current"], unique=False)
        batch_op.drop_column("country")
    with op.batch_alter_table("taxonomy_categories") as batch_op:
        batch_op.drop_index("ix_taxonomy_categories_walk")
        batch_op.drop_index("ix_taxonomy_categories_name")
        batch_op.drop_constraint("pk_taxonomy_categories", type_="primary")
        batch_op.create_primary_key("pk_taxonomy_categories", ["platform", "category_id"])
        batch_op.create_index(
            "ix_taxonomy_categories_walk", ["platform", "is_leaf", "position", "name_lower", "category_id"], unique=False
        )
        batch_op.create_index("ix_taxonomy_categories_name", ["platform", "name_lower"], unique=False)
        batch_op.drop_column("country")
    with op.batch_alter_table("taxonomy_imports") as batch_op:
        batch_op.drop_index("ix_taxonomy_imports_site_sequence")
        batch_op.create_index("ix_taxonomy_imports_platform_sequence", ["platform", "sequence"], unique=True)
        batch_op.drop_column("country")
