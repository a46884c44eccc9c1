"""webhook_deliveries.resent: a delivery a person sent again (resend, recover), whose failed attempt is final
(docs/decisions/0122: no new backoff schedule). Until now the attempt number decided, and a resent delivery that
failed went back on the schedule.

Plain ADD COLUMN with a constant default: instant on both backends, no table copy.

Revision ID: 0030
Revises: 0029
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("webhook_deliveries", sa.Column("resent", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch_op:
        batch_op.drop_column("resent")
