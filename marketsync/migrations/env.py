"""Alembic environment: always handed a live connection by marketsync.migrate."""

from __future__ import annotations

from alembic import context

from marketsync.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
    # Each migration commits on its own: a long one holds only its own locks, not every lock of the upgrade, and a
    # migration may commit and step out of its transaction (migrate.create_index_online).
    transaction_per_migration=True,
)
with context.begin_transaction():
    context.run_migrations()
