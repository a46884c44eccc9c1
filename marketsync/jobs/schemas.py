"""Job as the API returns it (spec section 2, Job). The failure reason is never included."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, field_serializer

from marketsync.jobs.types import TERMINAL
from marketsync.kit.clock import iso
from marketsync.models import Job


class JobOut(BaseModel):
    JobId: str
    Type: str
    Status: str
    IsComplete: bool
    IsSuccessful: bool
    StartedAt: datetime = Field(
        description="When a worker first started the job; for a job no worker has started yet, when it was accepted."
    )
    ProgressDone: int | None
    ProgressTotal: int | None
    RecoveryCount: int

    @field_serializer("StartedAt")
    def _started_at(self, value: datetime) -> str:
        # The one wire format for timestamps: UTC, milliseconds, Z.
        return iso(value)

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            JobId=job.id,
            Type=job.type,
            Status=job.status,
            IsComplete=job.status in TERMINAL,
            IsSuccessful=job.status == "Completed",
            # Spec section 2: a timestamp, never null (docs/decisions/0391). The row keeps started_at null until a
            # worker claims the job (the claim reads it), so a queued job answers the time it was accepted.
            StartedAt=job.started_at or job.created_at,
            ProgressDone=job.progress_done,
            ProgressTotal=job.progress_total,
            RecoveryCount=job.recovery_count,
        )
