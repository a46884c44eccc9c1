"""The app's home page counts and its activity log (issue 41, docs/decisions/0430 and 0431).

Indexes, so that each of the home page's counts reads only the rows it counts (built online, docs/decisions/0306):
- listings (account_id, status): the Rejected listings; (account_id) where app_fields["Held"] is set: the listings
  waiting for their fill-ins (a partial index on the JSON key, each backend's way);
- orders (account_id, status, purchase_date): the orders unshipped for more than a day. An order's status was
  indexed already (ix_orders_account_status_updated), so a status change costs one more entry, not a HOT update.

activity_entries: who did what and when in the app, for the account's Owners; purged after its period by the
`activity.purge` schedule. Never a secret: what was done and to what (a SKU and its old and new value, a credential's
name, a person's email).

Revision ID: 0036
Revises: 0034
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from marketsync.migrate import create_index_online, drop_index_online
from marketsync.models.base import UTCDateTime

revision = "0036"
down_revision = "0034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "activity_entries",
        sa.Column("id", sa.String(26), primary_key=True),
        sa.Column("account_id", sa.String(26), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.String(26), nullable=True),
        sa.Column("actor", sa.String(320), nullable=False),
        sa.Column("kind", sa.String(24), nullable=False),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("subject", sa.String(300), nullable=False),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_activity_entries_account_created", "activity_entries", ["account_id", "created_at", "id"])
    op.create_index(
        "ix_activity_entries_account_user", "activity_entries", ["account_id", "user_id", "created_at", "id"]
    )
    op.create_index(
        "ix_activity_entries_account_kind", "activity_entries", ["account_id", "kind", "created_at", "id"]
    )
    op.create_index("ix_activity_entries_created", "activity_entries", ["created_at"])
    create_index_online("ix_listings_account_status", "listings", ["account_id", "status"])
    # The partial index's predicate as models/inventory.py declares it (catalog/statements.py LISTING_HELD_*).
    sqlite = op.get_bind().dialect.name == "sqlite"
    held = "json_extract(app_fields, '$.Held') IS NOT NULL" if sqlite else "(app_fields ->> 'Held') IS NOT NULL"
    create_index_online("ix_listings_account_held", "listings", ["account_id"], where=held)
    create_index_online("ix_orders_account_status_purchased", "orders", ["account_id", "status", "purchase_date"])


def downgrade() -> None:
    drop_index_online("ix_orders_account_status_purchased", "orders")
    drop_index_online("ix_listings_account_held", "listings")
    drop_index_online("ix_listings_account_status", "listings")
    op.drop_table("activity_entries")
