"""webhook_deliveries: the subscriptions with Pending deliveries, found without reading every active subscription
(docs/decisions/0322). A partial index on subscription_id of the Pending rows only: the claim walks its distinct
values (one seek each) instead of probing each active subscription's queue.

Built online (CREATE INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-migrations.md).

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

from marketsync.migrate import create_index_online, drop_index_online

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

TABLE = "webhook_deliveries"
PENDING_SUBSCRIPTION = "ix_webhook_deliveries_pending_subscription"


def upgrade() -> None:
    create_index_online(PENDING_SUBSCRIPTION, TABLE, ["subscription_id"], where="status = 'Pending'")


def downgrade() -> None:
    drop_index_online(PENDING_SUBSCRIPTION, TABLE)
