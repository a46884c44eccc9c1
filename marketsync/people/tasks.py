"""The activity log's retention: entries older than people.ACTIVITY_RETENTION are purged daily (decision 0431)."""

from __future__ import annotations

import structlog

from marketsync.jobs.registry import schedule
from marketsync.people import service
from marketsync.runtime import Runtime

log = structlog.get_logger("marketsync.people")

PURGE_INTERVAL_S = 24 * 3600.0


@schedule("people.activity-retention", interval_s=lambda _settings: PURGE_INTERVAL_S)
async def purge_activity_log(rt: Runtime) -> None:
    purged = await service.purge_activity(rt)
    log.info("activity_log_purged", entries=purged)
