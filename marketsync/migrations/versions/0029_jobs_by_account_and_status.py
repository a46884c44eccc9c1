"""jobs: an index on (account_id, status, created_at, id), so the app's jobs list filtered by status (the failures a
person looks for, docs/decisions/0331-job-list-filters.md) reads one page of that status, newest first. With
(account_id, created_at) alone, "Failed" read every job the account kept (30 days of mirrors and pulls) to find a few.

Built online (CREATE INDEX CONCURRENTLY on PostgreSQL, docs/decisions/0306-online-migrations.md). A job's status
was indexed already (the claim and lease indexes), so a status change costs one more entry, not a HOT update.

Revision ID: 0029
Revises: 0028
"""

from __future__ import annotations

from marketsync.migrate import create_index_online, drop_index_online

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

TABLE = "jobs"
BY_ACCOUNT_AND_STATUS = "ix_jobs_account_status"


def upgrade() -> None:
    create_index_online(BY_ACCOUNT_AND_STATUS, TABLE, ["account_id", "status", "created_at", "id"])


def downgrade() -> None:
    drop_index_online(BY_ACCOUNT_AND_STATUS, TABLE)
