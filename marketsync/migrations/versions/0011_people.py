"""app_users and app_sessions: the merchant's people and their sign-ins to the app (docs/decisions/0120-app-sign-in.md).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "app_users",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("account_id", sa.String(length=26), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_app_users_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_app_users")),
        sa.UniqueConstraint("email", name=op.f("uq_app_users_email")),
    )
    with op.batch_alter_table("app_users") as batch_op:
        batch_op.create_index(batch_op.f("ix_app_users_account_id"), ["account_id"], unique=False)
    op.create_table(
        "app_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=26), nullable=False),
        sa.Column("account_id", sa.String(length=26), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.Column("expires_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", marketsync.models.base.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["app_users.id"], name=op.f("fk_app_sessions_user_id_app_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_app_sessions")),
    )
    with op.batch_alter_table("app_sessions") as batch_op:
        batch_op.create_index("ix_app_sessions_user", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_table("app_sessions")
    op.drop_table("app_users")
