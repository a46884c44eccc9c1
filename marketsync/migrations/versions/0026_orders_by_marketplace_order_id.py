"""orders: an index on (account_id, marketplace_order_id), so the app finds an order by the marketplace's order id
across all the account's marketplaces with one seek. The unique constraint on (account_id, marketplace_id,
marketplace_order_id) serves one marketplace only: with marketplace_id between, a lookup across marketplaces read
every order of the account (docs/decisions/0336-catalogue-search.md).

Built online (CREATE INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-migrations.md).

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

from marketsync.migrate import create_index_online, drop_index_online

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

TABLE = "orders"
BY_MARKETPLACE_ORDER = "ix_orders_account_marketplace_order"


def upgrade() -> None:
    create_index_online(BY_MARKETPLACE_ORDER, TABLE, ["account_id", "marketplace_order_id"])


def downgrade() -> None:
    drop_index_online(BY_MARKETPLACE_ORDER, TABLE)
