"""Listings indexed by (account_id, product_id) instead of account_id alone (docs/decisions/0296-sqlite-plans-without-
statistics.md).

SQLite plans without statistics (nothing runs ANALYZE on a deployment's file). Asked for an account's listings of
some products (`account_id = ? AND product_id = ?` or `IN (...)`), it took the index on account_id alone and read
every listing of the account: a product's listings on its page in the app, 400,000 rows read at 100,000 products
with 4 listings each. With both columns in one index the same question reads that product's rows. The index still
serves what account_id alone did (an account's listings, the cascade when an account is deleted). No listing write
of a feed touches these columns, so PostgreSQL's updates of recorded values stay HOT.

Both directions build their index online (CREATE INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-
migrations.md) before dropping the other, so listings' writes carry on meanwhile.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from alembic import op

from marketsync.migrate import create_index_online, drop_index_online

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

OLD = "ix_listings_account_id"
NEW = "ix_listings_account_product"


def upgrade() -> None:
    create_index_online(NEW, "listings", ["account_id", "product_id"])
    drop_index_online(OLD, "listings")


def downgrade() -> None:
    create_index_online(OLD, "listings", ["account_id"])
    drop_index_online(NEW, "listings")
