"""Reading a whole database back as text, to search it for secrets or customer data in clear."""

from __future__ import annotations

from sqlalchemy import text

from marketsync.models import Base
from marketsync.runtime import Runtime

# The only tables that may hold customer data (ours and the sandbox marketplace's own).
CUSTOMER_TABLES = {"orders", "sandbox_orders"}


async def every_value(rt: Runtime) -> dict[str, str]:
    """Each table's rows as one text (bytes decoded), to search for secrets in clear."""
    dumped: dict[str, str] = {}
    async with rt.db.read() as session:
        for table in Base.metadata.sorted_tables:
            rows = (await session.execute(text(f'SELECT * FROM "{table.name}"'))).all()
            parts = []
            for row in rows:
                for value in row:
                    parts.append(
                        value.decode(errors="replace") if isinstance(value, bytes | memoryview) else str(value)
                    )
            dumped[table.name] = "\n".join(parts)
    return dumped
