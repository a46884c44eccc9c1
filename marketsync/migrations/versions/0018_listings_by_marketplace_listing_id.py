"""An index on listings (marketplace_id, listing_id): the listing mirror finds a page of the marketplace's listings
by their ids. Without it each page of 200 read every listing of the connection: 36 s to mirror 100,000 listings on
SQLite, each page's transaction holding the one writer for ~70 ms. Built online (CREATE INDEX CONCURRENTLY on
PostgreSQL, docs/decisions/0306-online-migrations.md): listings' writes carry on meanwhile.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from alembic import op

from marketsync.migrate import create_index_online

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

INDEX = "ix_listings_marketplace_listing"


def upgrade() -> None:
    create_index_online(INDEX, "listings", ["marketplace_id", "listing_id"])


def downgrade() -> None:
    op.drop_index(INDEX, table_name="listings")
