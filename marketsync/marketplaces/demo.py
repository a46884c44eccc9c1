"""This domain's part of `marketsync demo` (idempotent)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from marketsync.runtime import Runtime

if TYPE_CHECKING:
    from marketsync.demo import DemoTenant


async def seed(rt: Runtime, tenant: DemoTenant) -> None:
    return None
