"""credentials: rotation with a grace period, and when each was last used (issue 41, docs/decisions/0432).

- previous_secret_hash, previous_secret_expires_at: the secret a rotation replaced, still accepted by the token
  endpoint until then (at most 7 days);
- rotated_at: tokens issued before it stop when the previous secret does;
- last_used_at: to the hour, written in the background, never by the request that used the credential.

Plain nullable ADD COLUMNs: instant on both backends, no table copy.

Revision ID: 0037
Revises: 0036
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from marketsync.models.base import UTCDateTime

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None

COLUMNS = ("previous_secret_hash", "previous_secret_expires_at", "rotated_at", "last_used_at")


def upgrade() -> None:
    op.add_column("credentials", sa.Column("previous_secret_hash", sa.String(64), nullable=True))
    op.add_column("credentials", sa.Column("previous_secret_expires_at", UTCDateTime(), nullable=True))
    op.add_column("credentials", sa.Column("rotated_at", UTCDateTime(), nullable=True))
    op.add_column("credentials", sa.Column("last_used_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("credentials") as batch_op:
        for column in COLUMNS:
            batch_op.drop_column(column)
