"""The handle a task body receives: its job's payload, progress reporting and lease checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from marketsync.jobs import repository
from marketsync.runtime import Runtime


class RetryLater(Exception):
    """Raised by a task to go back to the queue (e.g. a marketplace's Retry-After); not a failure."""

    def __init__(self, delay_s: float, reason: str = "") -> None:
        super().__init__(reason or f"retry in {delay_s}s")
        self.delay_s = delay_s


class LeaseLost(Exception):
    """Another worker took the job over; this run must stop without touching it further."""


@dataclass
class JobRun:
    rt: Runtime
    job_id: str
    account_id: str
    type: str
    payload: dict[str, Any]
    recovery_count: int = 0
    worker_id: str = "inline"
    progress_done: int | None = None
    progress_total: int | None = None
    _lease_lost: bool = field(default=False, repr=False)

    async def progress(self, done: int | None, total: int | None) -> None:
        self.progress_done, self.progress_total = done, total
        async with self.rt.db.transaction() as session:
            ok = await repository.set_progress(session, self.job_id, self.worker_id, self.rt.clock.now(), done, total)
        if not ok:
            self._lease_lost = True
            raise LeaseLost(self.job_id)

    def check_lease(self) -> None:
        if self._lease_lost:
            raise LeaseLost(self.job_id)
