"""A driver reader that keeps each statement's query plan (EXPLAIN on PostgreSQL, EXPLAIN QUERY PLAN on SQLite)
before running it, for tests that pin how a statement reads its tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from marketsync.db import DriverReader


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
