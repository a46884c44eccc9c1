"""The operator commands of DESIGN.md section 5, run as separate processes on the test database:
what they change is seen by this process (the "running server") at its next cycle."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import structlog
from typer.testing import CliRunner

from marketsync import startup
from marketsync.cli import app
from marketsync.http import logs as marketsync_logging
from marketsync.http.logs import configure_logging
from marketsync.marketplaces import tasks
from marketsync.runtime import Runtime
from tests.conftest import TEST_ENCRYPTION_KEYS, TEST_HASH_KEY
from tests.marketplaces import support
from tests.support.factories import make_tenant


def _logging_to_real_stderr(level: str = "INFO") -> None:
    """The command's logging setup, bound to the process's real stderr rather than the runner's
    temporary stream (structlog caches loggers, which would later write to a closed file)."""
    with contextlib.redirect_stderr(sys.__stderr__):
        configure_logging(level)
    # Not cached: a logger first used during the command would keep its WARNING setup for the rest of the process.
    structlog.configure(cache_logger_on_first_use=False)


@contextlib.contextmanager
def _suite_logging_kept() -> Iterator[None]:
    """The command sets the process's logging to its WARNING: put the suite's back (INFO, tests/conftest.py), or a
    later test in this process (pytest-xdist runs them in any order) finds no access line in its logs."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configured = marketsync_logging._configured_level
    try:
        yield
    finally:
        structlog.configure(**saved)
        root.handlers = handlers
        root.setLevel(level)
        marketsync_logging._configured_level = configured


async def cli(database_url: str, var_dir: Path, *args: str, expect_rc: int = 0) -> dict[str, Any]:
    """Run one command as the operator would, in a thread with its own event loop and Runtime
    (a separate process costs seconds of imports on this machine; the isolation is the same)."""
    env = {
        "MARKETSYNC_DATABASE_URL": database_url,
        "MARKETSYNC_VAR_DIR": str(var_dir),
        "MARKETSYNC_ENCRYPTION_KEYS": TEST_ENCRYPTION_KEYS,
        "MARKETSYNC_SECRET_HASH_KEY": TEST_HASH_KEY,
        "MARKETSYNC_LOG_LEVEL": "WARNING",
    }
    with _suite_logging_kept(), mock.patch.object(startup, "configure_logging", _logging_to_real_stderr):
        result = await asyncio.to_thread(CliRunner().invoke, app, [*args, "--json"], env=env)
    assert result.exit_code == expect_rc, (result.output, result.exception)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout  # exactly one JSON object on stdout
    parsed: dict[str, Any] = json.loads(lines[0])
    return parsed


async def test_sandbox_commands_drive_the_marketplace(
    rt: Runtime, api: httpx.AsyncClient, database_url: str, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    p1 = tenant.marketplace("P1")
    ids = ["--account", tenant.account_id, "--marketplace", p1.id]

    arrived = await cli(database_url, tmp_path, "sandbox", "orders-arrive", *ids, "--count", "3")
    assert arrived["Created"] == 3 and len(arrived["OrderIds"]) == 3

    pulled = await cli(database_url, tmp_path, "admin", "pull-orders", *ids)
    assert pulled["Status"] == "Completed" and pulled["NewOrderCount"] == 3
    assert [e["payload"]["NewOrderCount"] for e in await support.events(rt, tenant.account_id)] == [3]

    assert (await cli(database_url, tmp_path, "sandbox", "revoke-auth", *ids))["AuthRevoked"] is True
    await tasks.health_checks(rt)  # the running service's next cycle
    entry = (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"][0]
    assert entry["HealthStatus"] == "UnAuthorized" and entry["RequiresReauthorization"] is True
    restored = await cli(database_url, tmp_path, "sandbox", "restore-auth", *ids)
    assert restored["HealthEvent"] == "MarketplaceRestored"
    assert [e["type"] for e in await support.events(rt, tenant.account_id)][-2:] == [
        "MarketplaceUnhealthy",
        "MarketplaceRestored",
    ]

    held = await cli(
        database_url, tmp_path, "sandbox", "set", *ids, "--sku", "CLI-1", "--price", "4.25", "--quantity", "8"
    )
    assert (held["Sku"], held["Price"], held["Quantity"]) == ("CLI-1", "4.25", 8)

    fault = await cli(database_url, tmp_path, "sandbox", "feed-fault", *ids, "--mode", "reject")
    assert fault["FeedFault"] == "reject"
    assert (await support.seller(rt, p1)).feed_fault == "reject"
    refused = await cli(database_url, tmp_path, "sandbox", "feed-fault", *ids, "--mode", "sometimes", expect_rc=1)
    assert refused["error"] == "validation-failed" and "Mode" in refused["errors"]


async def test_pause_resume_disconnect_commands(
    rt: Runtime, api: httpx.AsyncClient, database_url: str, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    p2 = tenant.marketplace("P2")
    ids = ["--account", tenant.account_id, "--marketplace", p2.id]

    assert (await cli(database_url, tmp_path, "admin", "marketplace", "pause", *ids))["State"] == "Paused"
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"] == []
    resumed = await cli(database_url, tmp_path, "admin", "marketplace", "resume", *ids)
    assert resumed["State"] == "Active" and len(resumed["JobIds"]) == 2
    gone = await cli(database_url, tmp_path, "admin", "marketplace", "disconnect", *ids)
    assert gone["Disconnected"] is True and gone["CancelledJobs"] == 2
    assert {(await support.job(rt, j)).status for j in resumed["JobIds"]} == {"Cancelled"}
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).json()["Marketplaces"] == []
