"""The app's working tables (issue 41): the account's time zone, and the indexes that keep every sort, filter and
count of the orders, catalogue and jobs pages a bounded index read (docs/decisions/0436-app-tables.md).

- accounts.time_zone: the IANA zone an Owner sets; the app shows its times in it, the API stays UTC
  (docs/decisions/0435-account-time-zone.md). A plain ADD COLUMN with a constant default: instant on both backends.
- orders by (account, purchase date) and by (account, marketplace, last change); by the customer's name in lower
  case, and order items by their SKU in lower case: the orders page's sorts, marketplace filter and searches.
- products by price and by stock, jobs by type: the catalogue's and the jobs page's sorts.

Built online (CREATE INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-migrations.md).

Revision ID: 0038
Revises: 0037
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy import TextClause, text

from marketsync.migrate import create_index_online, drop_index_online

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

INDEXES: tuple[tuple[str, str, list[str | TextClause]], ...] = (
    ("ix_orders_account_purchase", "orders", ["account_id", "purchase_date", "id"]),
    ("ix_orders_account_marketplace_updated", "orders", ["account_id", "marketplace_id", "updated_at", "id"]),
    ("ix_orders_buyer_name_lower", "orders", [text("lower(buyer_name)"), "account_id"]),
    ("ix_order_items_sku_lower", "order_items", [text("lower(sku)"), "account_id"]),
    ("ix_products_account_price", "products", ["account_id", "price", "id"]),
    ("ix_products_account_quantity", "products", ["account_id", "quantity", "id"]),
    ("ix_jobs_account_type", "jobs", ["account_id", "type", "created_at", "id"]),
)


def upgrade() -> None:
    op.add_column("accounts", sa.Column("time_zone", sa.String(length=64), server_default="UTC", nullable=False))
    for name, table, columns in INDEXES:
        create_index_online(name, table, columns)


def downgrade() -> None:
    for name, table, _columns in reversed(INDEXES):
        drop_index_online(name, table)
    op.drop_column("accounts", "time_zone")
