"""orders: the stored wire document of each order (docs/decisions/0066-order-documents.md).

Plain ADD COLUMN (no batch table copy on SQLite): the columns are nullable, and an order without a
current document is rendered from its rows until the `orders.documents` schedule has stored one.

The index is built online (CREATE INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-migrations.md):
orders is a big table, and its writes carry on meanwhile.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from marketsync.migrate import add_column_once, create_index_online, drop_index_online

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Added once: a run the index build interrupted has committed them already (PostgreSQL).
    add_column_once("orders", sa.Column("document", sa.LargeBinary(), nullable=True))
    add_column_once("orders", sa.Column("customer_document", sa.LargeBinary(), nullable=True))
    # 0: no document yet (every existing order); a constant default is instant on both backends.
    add_column_once("orders", sa.Column("document_version", sa.SmallInteger(), server_default="0", nullable=False))
    create_index_online("ix_orders_document_version", "orders", ["document_version"])


def downgrade() -> None:
    drop_index_online("ix_orders_document_version", "orders")
    with op.batch_alter_table("orders") as batch_op:
        batch_op.drop_column("document_version")
        batch_op.drop_column("customer_document")
        batch_op.drop_column("document")
