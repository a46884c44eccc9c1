"""Named hand-written statements, each with its SQLite text and its PostgreSQL text (docs/decisions/0445).

The raw-driver hot paths run hand-written SQL where the two databases differ (arrays and `unnest` against a list of
placeholders, `FOR UPDATE`, `INDEXED BY`, `LATERAL`). A domain's such statements sit in its `statements.py`, each
once, named, with both texts side by side; its repository takes the text of its connection's dialect with
`Statement.text` and shapes the arguments. tests/db/test_statements.py runs every registered statement on both
databases, and fails for a statement it has no case for.

A statement is written in one of two ways:
- with each driver's own placeholders, `?` (or `?N`) for sqlite3 and `$N` for asyncpg, taken with `text`. SQLite has
  no array parameter: a statement over a list marks the list's place `{marks}` in its SQLite text, and
  `text(..., items=n)` puts there n copies of `sqlite_item` (`?` by default; `(?,?,?,?)` for a list of rows);
- with named slots, `{platform}`, taken with `compose(sql, platform=...)`, which binds each slot through a
  `DriverSql` in the order that dialect's text names them: for a statement, or a part of one (a subquery), that a
  repository composes at run time with other parts (the placeholders of sqlite3 are positional, and each dialect's
  text may name the values in another order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from string import Formatter
from types import MappingProxyType
from typing import Any

from marketsync.db._fast import DriverSql

MARKS = "{marks}"

_REGISTERED: dict[str, Statement] = {}


@dataclass(frozen=True)
class Statement:
    """One hand-written statement in both dialects. A text is None where that database does the step another way
    (its docstring or comment says which); `text` refuses it."""

    name: str
    sqlite: str | None
    postgresql: str | None
    sqlite_item: str = "?"

    def __post_init__(self) -> None:
        if self.sqlite is None and self.postgresql is None:
            raise ValueError(f"statement {self.name} has no text")
        if self.postgresql is not None and MARKS in self.postgresql:
            raise ValueError(f"statement {self.name}: PostgreSQL takes a list as one array parameter, not {MARKS}")
        if self.name in _REGISTERED:
            raise ValueError(f"two statements are named {self.name}")
        _REGISTERED[self.name] = self

    @property
    def takes_list(self) -> bool:
        """Whether the SQLite text has a `{marks}` list (then `text` needs `items` on SQLite)."""
        return self.sqlite is not None and MARKS in self.sqlite

    def text(self, postgres: bool, items: int | None = None) -> str:
        """The text for the connection's dialect; on SQLite, `items`: how many elements the `{marks}` list holds."""
        if postgres:
            if self.postgresql is None:
                raise ValueError(f"statement {self.name} has no PostgreSQL text")
            return self.postgresql
        if self.sqlite is None:
            raise ValueError(f"statement {self.name} has no SQLite text")
        if not self.takes_list:
            return self.sqlite
        if not items:
            raise ValueError(f"statement {self.name} needs the number of its list's elements on SQLite")
        return self.sqlite.replace(MARKS, ",".join([self.sqlite_item] * items))

    def compose(self, sql: DriverSql, **values: Any) -> str:
        """The text for `sql`'s dialect, each `{slot}` bound to its value through `sql` (again at each use)."""
        template = self.text(sql.postgres)
        parts = []
        for literal, slot, _, _ in Formatter().parse(template):
            parts.append(literal)
            if slot is not None:
                parts.append(sql.bind(values[slot]))
        return "".join(parts)


def registered() -> Mapping[str, Statement]:
    """Every statement of the modules imported so far, by name."""
    return MappingProxyType(_REGISTERED)
