"""Products' two SKU indexes become one unique index on (account_id, sku_lower, sku)
(docs/decisions/0299-one-sku-index.md).

`UNIQUE (account_id, sku)` and the index on `(account_id, sku_lower)` are one index: equal SKUs have equal
`sku_lower`, so uniqueness on (account_id, sku_lower, sku) is uniqueness on (account_id, sku), and its first two
columns serve every case-insensitive read. On PostgreSQL a push's update is never HOT (`modified_at` is indexed),
so each updated row got an entry in four indexes; now three: a fifth less for the push's statement at 10,000 and
at 1,000,000 products (`python -m bench.runs.push_indexes_pg`).

SQLite keeps the `UNIQUE (account_id, sku)` of its `CREATE TABLE`: dropping it means rebuilding `products`, which
SQLite allows only with foreign keys off, outside the migration's transaction (with them on, dropping the old table
would delete every listing through the cascade). It costs SQLite's push nothing: SQLite updates only the indexes
whose columns change.

The indexes are built online (CREATE INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-migrations.md):
products' writes carry on meanwhile.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

from alembic import op

from marketsync.migrate import create_index_online, drop_index_online

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

NEW = "uq_products_account_sku_lower_sku"
OLD_INDEX = "ix_products_account_sku_lower"
OLD_CONSTRAINT = "uq_products_account_sku"


def upgrade() -> None:
    create_index_online(NEW, "products", ["account_id", "sku_lower", "sku"], unique=True)
    drop_index_online(OLD_INDEX, "products")
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint(OLD_CONSTRAINT, "products", type_="unique", if_exists=True)


def downgrade() -> None:
    # The index first: built online, it commits what came before it, and a constraint committed by a run the
    # build then interrupted would fail the next run.
    create_index_online(OLD_INDEX, "products", ["account_id", "sku_lower"])
    if op.get_bind().dialect.name == "postgresql":
        op.create_unique_constraint(OLD_CONSTRAINT, "products", ["account_id", "sku"])
    drop_index_online(NEW, "products")
