"""orders: the last-changed time each stored document was rendered at (docs/decisions/0066-order-documents.md).

A document is current only when it was rendered at the order's present last-changed time, so a change made by a
process that did not store a document (one still running older code during a rolling upgrade) is never hidden
behind an older document. Every document is marked for re-rendering (version 0) to get its stamp; reads render
them from their rows meanwhile, and the orders.documents schedule stores them again.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("orders", sa.Column("document_updated_at", marketsync.models.base.UTCDateTime(), nullable=True))
    op.execute("UPDATE orders SET document_version = 0 WHERE document_version <> 0")


def downgrade() -> None:
    with op.batch_alter_table("orders") as batch_op:
        batch_op.drop_column("document_updated_at")
