"""marketplace_connections: a real marketplace's authorisation (Amazon: the selling partner id and its refresh token,
encrypted), and an order cursor of any length (Amazon's NextToken). docs/decisions/0377-amazon-consent.md.

Plain ADD COLUMN of nullable columns: instant on both backends. The cursor's VARCHAR(200) becomes TEXT on PostgreSQL
(binary compatible: no rewrite). Not on SQLite, which never enforces a VARCHAR's length: changing the type there means
rebuilding the table, and dropping the old one would cascade to every listing (ON DELETE CASCADE).

Revision ID: 0034
Revises: 0032
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("marketplace_connections", sa.Column("seller_id", sa.String(length=64), nullable=True))
    op.add_column("marketplace_connections", sa.Column("credential", sa.Text(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column(
            "marketplace_connections", "order_cursor", existing_type=sa.String(length=200), type_=sa.Text()
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        # A cursor longer than the old column (an Amazon NextToken) is forgotten: that pull starts over.
        op.execute("UPDATE marketplace_connections SET order_cursor = NULL WHERE length(order_cursor) > 200")
        op.alter_column(
            "marketplace_connections", "order_cursor", existing_type=sa.Text(), type_=sa.String(length=200)
        )
    # Plain DROP COLUMN (SQLite 3.35+): no table rebuild, whose DROP would cascade to the listings.
    op.drop_column("marketplace_connections", "credential")
    op.drop_column("marketplace_connections", "seller_id")
