"""A task used by the worker-crash tests (loaded through MARKETSYNC_TASK_MODULES).

It reports progress, sleeps (the window in which the test kills the worker), then performs its effect:
an account named after the job. The effect is keyed by the job id, as every real handler's is.
"""

from __future__ import annotations

import asyncio

from marketsync.auth import repository, service
from marketsync.jobs.registry import task
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import JobPayload
from marketsync.runtime import Runtime

SLOW_EFFECT = "Test.SlowEffect"


class SlowEffectPayload(JobPayload):
    job_type = SLOW_EFFECT
    sleep_s: float = 0.0


def effect_name(job_id: str) -> str:
    return f"effect-{job_id}"


@task(SLOW_EFFECT)
async def slow_effect(rt: Runtime, job: JobRun) -> None:
    await job.progress(0, 1)
    await asyncio.sleep(job.args(SlowEffectPayload).sleep_s)
    async with rt.db.transaction() as session:
        if await repository.get_account_by_name(session, effect_name(job.job_id)) is None:
            await service.create_account(rt, session, effect_name(job.job_id))
    await job.progress(1, 1)
