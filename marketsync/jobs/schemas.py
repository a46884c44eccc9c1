"""Job as the API returns it (spec section 2, Job). The failure reason is never included."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, field_serializer

from marketsync.kit.clock import iso
from marketsync.models import Job


class JobOut(BaseModel):
    JobId: str
    Type: str
    Status: str
    IsComplete: bool
    IsSuccessful: bool
    StartedAt: datetime | None
    ProgressDone: int | None
    ProgressTotal: int | None
    RecoveryCount: int

    @field_serializer("StartedAt")
    def _started_at(self, value: datetime | None) -> str | None:
        # The one wire format for timestamps: UTC, milliseconds, Z.
        return iso(value) if value is not None else None

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            JobId=job.id,
            Type=job.type,
            Status=job.status,
            IsComplete=job.status in ("Completed", "Failed", "Cancelled"),
            IsSuccessful=job.status == "Completed",
            StartedAt=job.started_at,
            ProgressDone=job.progress_done,
            ProgressTotal=job.progress_total,
            RecoveryCount=job.recovery_count,
        )
