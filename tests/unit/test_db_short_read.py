"""Tripwire: Database.short_read relies on aiosqlite internals (docs/decisions/0012)."""

from __future__ import annotations

import importlib.metadata

import aiosqlite

from marketsync.db import _InLoopSqliteConnection

VERIFIED_AIOSQLITE = "0.22.1"


def test_aiosqlite_is_the_version_short_read_was_verified_against() -> None:
    assert importlib.metadata.version("aiosqlite") == VERIFIED_AIOSQLITE, (
        "aiosqlite changed: re-verify _InLoopSqliteConnection against its _execute/_connect/stop, then update "
        "VERIFIED_AIOSQLITE"
    )


def test_the_overridden_internals_still_exist() -> None:
    for name in ("_execute", "_connect", "stop", "_connector", "_running", "_connection"):
        assert hasattr(aiosqlite.Connection, name) or name in aiosqlite.Connection.__init__.__code__.co_names, name
    assert issubclass(_InLoopSqliteConnection, aiosqlite.Connection)
