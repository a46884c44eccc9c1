"""app_sessions.reveals: what a page shows once (a new client secret, signing secret or password), kept encrypted on
the browser's session between a form's post and the page its redirect shows, then dropped
(docs/decisions/0401-one-time-reveal.md).

A plain nullable ADD COLUMN: instant on both backends, no table copy.

Revision ID: 0032
Revises: 0035
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0035"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("app_sessions", sa.Column("reveals", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("app_sessions") as batch_op:
        batch_op.drop_column("reveals")
