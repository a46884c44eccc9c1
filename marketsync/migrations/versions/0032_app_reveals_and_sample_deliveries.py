"""app_sessions.reveals: what a page shows once (a new client secret, signing secret or password), kept encrypted on
the browser's session between a form's post and the page its redirect shows, then dropped
(docs/decisions/0401-one-time-reveal.md); webhook_deliveries.sample: a sample delivery, sent with X-SVC-Sample
(docs/decisions/0403-sample-deliveries.md).

Plain ADD COLUMNs (nullable, or with a constant default): instant on both backends, no table copy.

Revision ID: 0032
Revises: 0030
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("app_sessions", sa.Column("reveals", sa.Text(), nullable=True))
    op.add_column("webhook_deliveries", sa.Column("sample", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch_op:
        batch_op.drop_column("sample")
    with op.batch_alter_table("app_sessions") as batch_op:
        batch_op.drop_column("reveals")
