"""The catalogue's price and stock indexes dropped: every push moves both values of up to 500 products, and each of
those indexes cost the push two writes a product (a fifth of a 500-SKU push on SQLite, issue 42). The app sorts by
price or stock without them, for catalogues of up to 100,000 products (docs/decisions/0457).

Dropped online (DROP INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-migrations.md).

Revision ID: 0039
Revises: 0038
"""

from __future__ import annotations

from marketsync.migrate import create_index_online, drop_index_online

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

INDEXES = (
    ("ix_products_account_price", "products", ["account_id", "price", "id"]),
    ("ix_products_account_quantity", "products", ["account_id", "quantity", "id"]),
)


def upgrade() -> None:
    for name, table, _columns in INDEXES:
        drop_index_online(name, table)


def downgrade() -> None:
    for name, table, columns in INDEXES:
        create_index_online(name, table, list(columns))
