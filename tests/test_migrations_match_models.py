"""The migrations build exactly the schema the models declare, on both backends (same code, same migrations)."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from marketsync.models import Base
from marketsync.runtime import Runtime


async def test_migrated_database_has_no_difference_from_the_models(rt: Runtime) -> None:
    def differences(connection: Any) -> list[Any]:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "compare_server_default": True})
        return list(compare_metadata(context, Base.metadata))

    async with rt.db.engine.connect() as connection:
        assert await connection.run_sync(differences) == []
