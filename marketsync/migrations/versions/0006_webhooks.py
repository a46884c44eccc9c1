"""webhooks tables: subscriptions, deliveries (leased), attempt log.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UTC = marketsync.models.base.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "webhook_subscriptions",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("account_id", sa.String(length=26), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=False),
        sa.Column("secret_encrypted", sa.String(length=200), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("disabled_at", UTC(), nullable=True),
        sa.Column("disabled_reason", sa.String(length=500), nullable=True),
        sa.Column("last_success_at", UTC(), nullable=True),
        sa.Column("created_at", UTC(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_webhook_subscriptions_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_subscriptions")),
    )
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_subscriptions_account_created", ["account_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("account_id", sa.String(length=26), nullable=False),
        sa.Column("subscription_id", sa.String(length=26), nullable=False),
        sa.Column("event_id", sa.String(length=26), nullable=False),
        sa.Column("event_type", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTC(), nullable=False),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_expires_at", UTC(), nullable=True),
        sa.Column("created_at", UTC(), nullable=False),
        sa.Column("finished_at", UTC(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_webhook_deliveries_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["event_id"], ["events.id"], name=op.f("fk_webhook_deliveries_event_id_events"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["subscription_id"], ["webhook_subscriptions.id"],
            name=op.f("fk_webhook_deliveries_subscription_id_webhook_subscriptions"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
        sa.UniqueConstraint("event_id", "subscription_id", name="uq_webhook_deliveries_event_subscription"),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_webhook_deliveries_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index("ix_webhook_deliveries_subscription", ["subscription_id", "status"], unique=False)
        batch_op.create_index("ix_webhook_deliveries_finished", ["finished_at"], unique=False)

    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("account_id", sa.String(length=26), nullable=False),
        sa.Column("subscription_id", sa.String(length=26), nullable=False),
        sa.Column("delivery_id", sa.String(length=26), nullable=False),
        sa.Column("event_id", sa.String(length=26), nullable=False),
        sa.Column("event_type", sa.String(length=40), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("started_at", UTC(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error_class", sa.String(length=40), nullable=True),
        sa.Column("error_detail", sa.String(length=500), nullable=True),
        sa.Column("response_snippet", sa.Text(), nullable=True),
        sa.Column("next_attempt_at", UTC(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_webhook_attempts_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_attempts")),
    )
    with op.batch_alter_table("webhook_attempts", schema=None) as batch_op:
        batch_op.create_index("ix_webhook_attempts_account_started", ["account_id", "started_at"], unique=False)
        batch_op.create_index(
            "ix_webhook_attempts_subscription_started", ["subscription_id", "started_at"], unique=False
        )
        batch_op.create_index("ix_webhook_attempts_started", ["started_at"], unique=False)


def downgrade() -> None:
    op.drop_table("webhook_attempts")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_subscriptions")
