"""inventory: Data Flow owners per account and data kind.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "data_flows",
        sa.Column("account_id", sa.String(length=26), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("owner", sa.String(length=16), nullable=False),
        sa.Column("updated_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_data_flows_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("account_id", "kind", name=op.f("pk_data_flows")),
    )


def downgrade() -> None:
    op.drop_table("data_flows")
