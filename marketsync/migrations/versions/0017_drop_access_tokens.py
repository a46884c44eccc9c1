"""access_tokens dropped: tokens are signed and verified without a table (docs/decisions/0250-request-fixed-cost-2.md).

Tokens issued before the upgrade stop working (clients fetch a new one on the 401, as after an expiry).

Revision ID: 0017
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from marketsync.models.base import UTCDateTime

revision = "0017"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("access_tokens") as batch_op:
        batch_op.drop_index("ix_access_tokens_expires_at")
        batch_op.drop_index("ix_access_tokens_credential_id")
    op.drop_table("access_tokens")


def downgrade() -> None:
    op.create_table(
        "access_tokens",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("credential_id", sa.String(26), nullable=False),
        sa.Column("account_id", sa.String(26), nullable=False),
        sa.Column("scopes", sa.String(200), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name="fk_access_tokens_account_id_accounts", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["credential_id"], ["credentials.id"], name="fk_access_tokens_credential_id_credentials", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("token_hash", name="pk_access_tokens"),
    )
    with op.batch_alter_table("access_tokens") as batch_op:
        batch_op.create_index("ix_access_tokens_credential_id", ["credential_id"], unique=False)
        batch_op.create_index("ix_access_tokens_expires_at", ["expires_at"], unique=False)
