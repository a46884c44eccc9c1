"""jobs.marketplace_id (indexed) instead of filtering payloads in Python; order_feeds goes: an OrderWriteBack job
remembers its submitted feed in the job itself, like every feed job (docs/decisions/0201-feed-pipeline.md).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import marketsync.models.base

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.add_column(sa.Column("marketplace_id", sa.String(length=26), nullable=True))
        batch_op.create_index("ix_jobs_marketplace", ["marketplace_id", "status"], unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("UPDATE jobs SET marketplace_id = payload->>'MarketplaceId' WHERE payload IS NOT NULL")
    else:
        op.execute("UPDATE jobs SET marketplace_id = json_extract(payload, '$.MarketplaceId')")
    # A price/stock push submitted before the upgrade kept its feed id in the payload: it moves to the state.
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "UPDATE jobs SET payload = ((payload::jsonb - 'MarketplaceFeedId') || jsonb_build_object('State', "
            "jsonb_build_object('MarketplaceFeedId', payload->>'MarketplaceFeedId')))::json "
            "WHERE payload::jsonb ? 'MarketplaceFeedId'"
        )
    else:
        op.execute(
            "UPDATE jobs SET payload = json_remove(json_set(payload, '$.State', json_object('MarketplaceFeedId', "
            "json_extract(payload, '$.MarketplaceFeedId'))), '$.MarketplaceFeedId') "
            "WHERE json_extract(payload, '$.MarketplaceFeedId') IS NOT NULL"
        )
    # A write-back submitted before the upgrade keeps its feed id: copied into the job's remembered state.
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "UPDATE jobs SET payload = (payload::jsonb || jsonb_build_object('State', "
            "jsonb_build_object('MarketplaceFeedId', f.marketplace_feed_id)))::json "
            "FROM order_feeds f WHERE f.job_id = jobs.id AND f.marketplace_feed_id IS NOT NULL "
            "AND f.status = 'Submitted'"
        )
    else:
        op.execute(
            "UPDATE jobs SET payload = json_set(payload, '$.State', json_object('MarketplaceFeedId', "
            "(SELECT f.marketplace_feed_id FROM order_feeds f WHERE f.job_id = jobs.id))) "
            "WHERE id IN (SELECT job_id FROM order_feeds WHERE marketplace_feed_id IS NOT NULL "
            "AND status = 'Submitted')"
        )
    with op.batch_alter_table("order_feeds") as batch_op:
        batch_op.drop_index(batch_op.f("ix_order_feeds_account_id"))
    op.drop_table("order_feeds")


def downgrade() -> None:
    op.create_table(
        "order_feeds",
        sa.Column("job_id", sa.String(length=26), nullable=False),
        sa.Column("account_id", sa.String(length=26), nullable=False),
        sa.Column("marketplace_id", sa.String(length=26), nullable=False),
        sa.Column("marketplace_feed_id", sa.String(length=100), nullable=True),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("failed_count", sa.Integer(), nullable=False),
        sa.Column("created_at", marketsync.models.base.UTCDateTime(), nullable=False),
        sa.Column("finished_at", marketsync.models.base.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_order_feeds_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_order_feeds")),
    )
    with op.batch_alter_table("order_feeds") as batch_op:
        batch_op.create_index(batch_op.f("ix_order_feeds_account_id"), ["account_id"], unique=False)
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.drop_index("ix_jobs_marketplace")
        batch_op.drop_column("marketplace_id")
