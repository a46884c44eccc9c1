"""GET /api/jobs/{id} (InventoryRead)."""

from __future__ import annotations

from fastapi import APIRouter

from marketsync.auth.dependencies import InventoryReader, RuntimeDep
from marketsync.jobs import service
from marketsync.jobs.schemas import JobOut

router = APIRouter(tags=["Jobs"])


@router.get("/api/jobs/{id}", response_model=JobOut, summary="Follow an asynchronous job")
async def get_job(id: str, caller: InventoryReader, rt: RuntimeDep) -> JobOut:
    async with rt.db.read() as session:
        job = await service.get_job(session, caller.account_id, id)
        return JobOut.of(job)
