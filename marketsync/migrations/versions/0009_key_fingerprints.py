"""key_fingerprints: which keys this database was first used with (docs/decisions/0162-keys-and-settings.md).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "key_fingerprints",
        sa.Column("purpose", sa.String(length=80), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("created_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("purpose", name=op.f("pk_key_fingerprints")),
    )


def downgrade() -> None:
    op.drop_table("key_fingerprints")
