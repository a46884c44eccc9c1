"""orders: orders, order items, shipments, refund lines, write-back feeds.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_UTC = marketsync.models.base.UTCDateTime
_MONEY = marketsync.models.base.Money


def upgrade() -> None:
    op.create_table(
        "orders",
        sa.Column("id", sa.String(26), nullable=False),
        sa.Column("account_id", sa.String(26), nullable=False),
        sa.Column("marketplace_id", sa.String(26), nullable=False),
        sa.Column("platform", sa.String(8), nullable=False),
        sa.Column("country", sa.String(8), nullable=False),
        sa.Column("marketplace_order_id", sa.String(100), nullable=False),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("marketplace_status", sa.String(40), nullable=False),
        sa.Column("purchase_date", _UTC(), nullable=False),
        sa.Column("marketplace_changed_at", _UTC(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("items_total", _MONEY(), nullable=False),
        sa.Column("shipping_total", _MONEY(), nullable=False),
        sa.Column("tax_total", _MONEY(), nullable=False),
        sa.Column("refunded_total", _MONEY(), nullable=False),
        sa.Column("external_reference", sa.String(200), nullable=True),
        sa.Column("buyer_name", sa.String(200), nullable=False),
        sa.Column("buyer_email", sa.String(320), nullable=True),
        sa.Column("buyer_phone", sa.String(50), nullable=True),
        sa.Column("ship_name", sa.String(200), nullable=False),
        sa.Column("ship_line1", sa.String(200), nullable=False),
        sa.Column("ship_line2", sa.String(200), nullable=True),
        sa.Column("ship_city", sa.String(100), nullable=False),
        sa.Column("ship_region", sa.String(100), nullable=True),
        sa.Column("ship_postal_code", sa.String(20), nullable=False),
        sa.Column("ship_country_code", sa.String(8), nullable=False),
        sa.Column("ship_phone", sa.String(50), nullable=True),
        sa.Column("created_at", _UTC(), nullable=False),
        sa.Column("updated_at", _UTC(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_orders_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_orders")),
        sa.UniqueConstraint("account_id", "marketplace_id", "marketplace_order_id", name="uq_orders_marketplace_order"),
    )
    with op.batch_alter_table("orders") as batch_op:
        batch_op.create_index("ix_orders_account_updated", ["account_id", "updated_at", "id"], unique=False)
        batch_op.create_index(
            "ix_orders_account_status_updated", ["account_id", "status", "updated_at", "id"], unique=False
        )

    op.create_table(
        "order_items",
        sa.Column("id", sa.String(26), nullable=False),
        sa.Column("order_id", sa.String(26), nullable=False),
        sa.Column("account_id", sa.String(26), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("marketplace_item_id", sa.String(100), nullable=False),
        sa.Column("sku", sa.String(200), nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("unit_price", _MONEY(), nullable=False),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("marketplace_status", sa.String(40), nullable=False),
        sa.Column("shipped_quantity", sa.Integer(), nullable=False),
        sa.Column("cancelled_quantity", sa.Integer(), nullable=False),
        sa.Column("refunded_quantity", sa.Integer(), nullable=False),
        sa.Column("refunded_amount", _MONEY(), nullable=False),
        sa.Column("cancel_reason", sa.String(40), nullable=True),
        sa.ForeignKeyConstraint(
            ["order_id"], ["orders.id"], name=op.f("fk_order_items_order_id_orders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_order_items")),
        sa.UniqueConstraint("order_id", "marketplace_item_id", name="uq_order_items_marketplace_item"),
    )
    with op.batch_alter_table("order_items") as batch_op:
        batch_op.create_index("ix_order_items_order", ["order_id", "position"], unique=False)

    op.create_table(
        "order_shipments",
        sa.Column("id", sa.String(26), nullable=False),
        sa.Column("order_id", sa.String(26), nullable=False),
        sa.Column("order_item_id", sa.String(26), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("ship_date", _UTC(), nullable=False),
        sa.Column("carrier_code", sa.String(40), nullable=True),
        sa.Column("carrier_name", sa.String(100), nullable=True),
        sa.Column("service_level", sa.String(60), nullable=True),
        sa.Column("tracking_number", sa.String(100), nullable=True),
        sa.Column("created_at", _UTC(), nullable=False),
        sa.ForeignKeyConstraint(
            ["order_id"], ["orders.id"], name=op.f("fk_order_shipments_order_id_orders"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["order_item_id"],
            ["order_items.id"],
            name=op.f("fk_order_shipments_order_item_id_order_items"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_order_shipments")),
    )
    with op.batch_alter_table("order_shipments") as batch_op:
        batch_op.create_index("ix_order_shipments_order", ["order_id", "created_at"], unique=False)

    op.create_table(
        "order_refund_lines",
        sa.Column("id", sa.String(26), nullable=False),
        sa.Column("refund_id", sa.String(26), nullable=False),
        sa.Column("order_id", sa.String(26), nullable=False),
        sa.Column("order_item_id", sa.String(26), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("amount", _MONEY(), nullable=False),
        sa.Column("reason", sa.String(40), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("created_at", _UTC(), nullable=False),
        sa.ForeignKeyConstraint(
            ["order_id"], ["orders.id"], name=op.f("fk_order_refund_lines_order_id_orders"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["order_item_id"],
            ["order_items.id"],
            name=op.f("fk_order_refund_lines_order_item_id_order_items"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_order_refund_lines")),
    )
    with op.batch_alter_table("order_refund_lines") as batch_op:
        batch_op.create_index("ix_order_refund_lines_order", ["order_id", "created_at"], unique=False)

    op.create_table(
        "order_feeds",
        sa.Column("job_id", sa.String(26), nullable=False),
        sa.Column("account_id", sa.String(26), nullable=False),
        sa.Column("marketplace_id", sa.String(26), nullable=False),
        sa.Column("marketplace_feed_id", sa.String(100), nullable=True),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("failed_count", sa.Integer(), nullable=False),
        sa.Column("created_at", _UTC(), nullable=False),
        sa.Column("finished_at", _UTC(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_order_feeds_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_order_feeds")),
    )
    with op.batch_alter_table("order_feeds") as batch_op:
        batch_op.create_index(batch_op.f("ix_order_feeds_account_id"), ["account_id"], unique=False)


def downgrade() -> None:
    op.drop_table("order_feeds")
    op.drop_table("order_refund_lines")
    op.drop_table("order_shipments")
    op.drop_table("order_items")
    op.drop_table("orders")
