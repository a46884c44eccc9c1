"""events.is_test: a test event (POST /api/webhooks/Test, the app's "Send a sample"), whose deliveries carry the
header X-SVC-Test: true beside the payload's marker (docs/decisions/0421).

Plain ADD COLUMN with a constant default: instant on both backends, no table copy.

Revision ID: 0035
Revises: 0030
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0035"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("events", sa.Column("is_test", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("events") as batch_op:
        batch_op.drop_column("is_test")
