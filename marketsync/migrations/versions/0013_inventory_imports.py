"""inventory_imports: price/stock files uploaded in the app, run by a worker (docs/decisions/0123-app-imports.md).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from marketsync.models.base import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inventory_imports",
        sa.Column("id", sa.String(26), primary_key=True),
        sa.Column("account_id", sa.String(26), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("job_id", sa.String(26), nullable=False),
        sa.Column("file_name", sa.String(255), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("propagate", sa.Boolean(), nullable=False),
        sa.Column("last_line", sa.Integer(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("created_by", sa.String(320), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_inventory_imports_account_created", "inventory_imports", ["account_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_inventory_imports_account_created", table_name="inventory_imports")
    op.drop_table("inventory_imports")
