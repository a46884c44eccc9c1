"""marketplaces: the sandbox marketplaces' own state (sandbox_* tables).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UTC = marketsync.models.base.UTCDateTime
MONEY = marketsync.models.base.Money


def upgrade() -> None:
    op.create_table(
        "sandbox_sellers",
        sa.Column("connection_id", sa.String(length=26), nullable=False),
        sa.Column("platform", sa.String(length=8), nullable=False),
        sa.Column("country", sa.String(length=8), nullable=False),
        sa.Column("auth_revoked", sa.Boolean(), nullable=False),
        sa.Column("feed_fault", sa.String(length=16), nullable=False),
        sa.Column("bucket_capacity", sa.Float(), nullable=False),
        sa.Column("bucket_refill_per_s", sa.Float(), nullable=False),
        sa.Column("bucket_tokens", sa.Float(), nullable=False),
        sa.Column("bucket_at", UTC(), nullable=False),
        sa.Column("order_seq", sa.Integer(), nullable=False),
        sa.Column("change_seq", sa.Integer(), nullable=False),
        sa.Column("listing_seq", sa.Integer(), nullable=False),
        sa.Column("feed_seq", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC(), nullable=False),
        sa.PrimaryKeyConstraint("connection_id", name=op.f("pk_sandbox_sellers")),
    )
    op.create_table(
        "sandbox_listings",
        sa.Column("connection_id", sa.String(length=26), nullable=False),
        sa.Column("listing_id", sa.String(length=40), nullable=False),
        sa.Column("sku", sa.String(length=200), nullable=False),
        sa.Column("external_sku", sa.String(length=200), nullable=False),
        sa.Column("listing_url", sa.String(length=500), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=True),
        sa.Column("category_id", sa.String(length=40), nullable=True),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.Column("price", MONEY(), nullable=True),
        sa.Column("quantity", sa.Integer(), nullable=True),
        sa.Column("feed_updates", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTC(), nullable=False),
        sa.PrimaryKeyConstraint("connection_id", "listing_id", name=op.f("pk_sandbox_listings")),
        sa.UniqueConstraint("connection_id", "external_sku", name="uq_sandbox_listings_external_sku"),
    )
    with op.batch_alter_table("sandbox_listings", schema=None) as batch_op:
        batch_op.create_index("ix_sandbox_listings_sku", ["connection_id", "sku"], unique=False)

    op.create_table(
        "sandbox_orders",
        sa.Column("connection_id", sa.String(length=26), nullable=False),
        sa.Column("order_id", sa.String(length=40), nullable=False),
        sa.Column("change_seq", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("purchase_date", UTC(), nullable=False),
        sa.Column("changed_at", UTC(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("buyer_name", sa.String(length=200), nullable=False),
        sa.Column("buyer_email", sa.String(length=200), nullable=True),
        sa.Column("buyer_phone", sa.String(length=40), nullable=True),
        sa.Column("shipping_address", sa.JSON(), nullable=False),
        sa.Column("shipping_total", MONEY(), nullable=False),
        sa.Column("tax_total", MONEY(), nullable=False),
        sa.Column("items", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("connection_id", "order_id", name=op.f("pk_sandbox_orders")),
    )
    with op.batch_alter_table("sandbox_orders", schema=None) as batch_op:
        batch_op.create_index("ix_sandbox_orders_change", ["connection_id", "change_seq"], unique=False)

    op.create_table(
        "sandbox_feeds",
        sa.Column("connection_id", sa.String(length=26), nullable=False),
        sa.Column("feed_id", sa.String(length=40), nullable=False),
        sa.Column("client_feed_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("lines", sa.JSON(), nullable=False),
        sa.Column("polls_remaining", sa.Integer(), nullable=False),
        sa.Column("processed", sa.Integer(), nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("published", sa.JSON(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("submitted_at", UTC(), nullable=False),
        sa.Column("processed_at", UTC(), nullable=True),
        sa.PrimaryKeyConstraint("connection_id", "feed_id", name=op.f("pk_sandbox_feeds")),
        sa.UniqueConstraint("connection_id", "client_feed_id", name="uq_sandbox_feeds_client_feed_id"),
    )


def downgrade() -> None:
    op.drop_table("sandbox_feeds")
    with op.batch_alter_table("sandbox_orders", schema=None) as batch_op:
        batch_op.drop_index("ix_sandbox_orders_change")
    op.drop_table("sandbox_orders")
    with op.batch_alter_table("sandbox_listings", schema=None) as batch_op:
        batch_op.drop_index("ix_sandbox_listings_sku")
    op.drop_table("sandbox_listings")
    op.drop_table("sandbox_sellers")
