"""The migrations build exactly the schema the models declare, on both backends (same code, same migrations)."""

from __future__ import annotations

import warnings
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from marketsync.models import Base
from marketsync.runtime import Runtime

# Text-search structures of one backend, created by migration 0015 and not declared in the models: SQLite's FTS5
# table (and the shadow tables FTS5 keeps beside it), PostgreSQL's trigram index.
BACKEND_SPECIFIC = ("taxonomy_category_search", "ix_taxonomy_categories_name_trgm")


# SQLite's products keep the UNIQUE (account_id, sku) of their CREATE TABLE: the unique index on (account_id,
# sku_lower, sku) replaced it on PostgreSQL, and dropping it from SQLite means rebuilding the table (migration 0022).
SQLITE_ONLY = ("uq_products_account_sku",)
# Indexes on an expression (`lower(sku)`, migration 0038): SQLite's reflection does not read them (SQLAlchemy warns
# and skips them), so they are compared on PostgreSQL only; their presence on SQLite is checked by name below.
EXPRESSION_INDEXES = ("ix_orders_buyer_name_lower", "ix_order_items_sku_lower")


async def test_migrated_database_has_no_difference_from_the_models(rt: Runtime) -> None:
    sqlite_only = (*SQLITE_ONLY, *EXPRESSION_INDEXES) if rt.db.is_sqlite else ()

    def declared_or_shared(name: str | None, type_: str, parent_names: Any) -> bool:
        return name is None or not (name.startswith(BACKEND_SPECIFIC) or name in sqlite_only)

    def differences(connection: Any) -> list[Any]:
        context = MigrationContext.configure(
            connection,
            opts={"compare_type": True, "compare_server_default": True, "include_name": declared_or_shared},
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
            warnings.filterwarnings("ignore", "autogenerate skipping metadata-specified expression-based index")
            return list(compare_metadata(context, Base.metadata))

    async with rt.db.engine.connect() as connection:
        assert await connection.run_sync(differences) == []


async def test_the_backend_has_its_category_search_index(rt: Runtime) -> None:
    def names(connection: Any) -> set[str]:
        inspector = inspect(connection)
        return set(inspector.get_table_names()) | {
            index["name"] for index in inspector.get_indexes("taxonomy_categories") if index["name"]
        }

    async with rt.db.engine.connect() as connection:
        present = await connection.run_sync(names)
    expected = "taxonomy_category_search" if rt.db.is_sqlite else "ix_taxonomy_categories_name_trgm"
    assert expected in present


async def test_the_expression_indexes_exist_on_both_backends(rt: Runtime) -> None:
    def names(connection: Any) -> set[str]:
        if rt.db.is_sqlite:
            rows = connection.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'index'")
        else:
            rows = connection.exec_driver_sql("SELECT indexname FROM pg_indexes")
        return {row[0] for row in rows}

    async with rt.db.engine.connect() as connection:
        assert set(EXPRESSION_INDEXES) <= await connection.run_sync(names)
