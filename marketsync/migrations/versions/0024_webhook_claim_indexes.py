"""Indexes for a webhook claim whose cost does not grow with the due backlog (docs/decisions/0322).

- `ix_webhook_deliveries_subscription_due` (subscription_id, status, next_attempt_at, id) replaces
  `ix_webhook_deliveries_subscription` (subscription_id, status), its prefix, which served deletes and disabling and
  still does: the claim reads a subscription's first due deliveries in claim order from it and stops there.
- `ix_webhook_deliveries_leased` on lease_expires_at, only the rows with a lease (few: at most workers x slots, and
  the expired leases of workers that died): the claim counts each subscription's live leases from it without reading
  the Pending backlog.

Built online (CREATE INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-migrations.md): deliveries are
claimed and recorded meanwhile.

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

from marketsync.migrate import create_index_online, drop_index_online

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

TABLE = "webhook_deliveries"
SUBSCRIPTION_DUE = "ix_webhook_deliveries_subscription_due"
LEASED = "ix_webhook_deliveries_leased"
OLD_SUBSCRIPTION = "ix_webhook_deliveries_subscription"


def upgrade() -> None:
    create_index_online(SUBSCRIPTION_DUE, TABLE, ["subscription_id", "status", "next_attempt_at", "id"])
    create_index_online(LEASED, TABLE, ["lease_expires_at"], where="lease_expires_at IS NOT NULL")
    drop_index_online(OLD_SUBSCRIPTION, TABLE)


def downgrade() -> None:
    create_index_online(OLD_SUBSCRIPTION, TABLE, ["subscription_id", "status"])
    drop_index_online(LEASED, TABLE)
    drop_index_online(SUBSCRIPTION_DUE, TABLE)
