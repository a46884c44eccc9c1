"""A driver reader that keeps each statement's query plan (EXPLAIN on PostgreSQL, EXPLAIN QUERY PLAN on SQLite)
before running it, for tests that pin how a statement reads its tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from marketsync.db import DriverReader
from marketsync.runtime import Runtime


class Explaining:
    """A DriverReader that keeps each statement's plan before running it."""

    def __init__(self, reader: DriverReader) -> None:
        self.reader = reader
        self.postgres = reader.postgres
        self.plans: list[str] = []

    async def fetch(self, sql: str, arguments: Sequence[Any]) -> list[Sequence[Any]]:
        plan = await self.reader.fetch(("EXPLAIN " if self.postgres else "EXPLAIN QUERY PLAN ") + sql, arguments)
        self.plans.append("\n".join(str(row[-1]) for row in plan))
        return await self.reader.fetch(sql, arguments)


async def plan_of(rt: Runtime, query: str, params: Sequence[Any], *, analyze: str | None = None) -> str:
    """The plan a statement gets, as text: SQLite's EXPLAIN QUERY PLAN details, PostgreSQL's EXPLAIN with sequential
    scans priced out (a test's few rows would otherwise make any scan the cheapest). `analyze` names a PostgreSQL
    table to ANALYZE first."""
    async with rt.db.transaction() as session:
        connection = await session.connection()
        if rt.db.is_sqlite:
            rows = await connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {query}", tuple(params))
            return "\n".join(str(row[3]) for row in rows)
        if analyze is not None:
            await connection.exec_driver_sql(f"ANALYZE {analyze}")
        await connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
        rows = await connection.exec_driver_sql(f"EXPLAIN {query}", tuple(params))
        return "\n".join(str(row[0]) for row in rows)
