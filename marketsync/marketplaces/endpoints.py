"""GET /api/marketplaces (MarketplacesRead)."""

from __future__ import annotations

from fastapi import APIRouter

from marketsync.auth.dependencies import MarketplacesReader, RuntimeDep
from marketsync.marketplaces import service
from marketsync.marketplaces.schemas import MarketplaceOut, MarketplacesOut

router = APIRouter(tags=["Marketplaces"])


@router.get(
    "/api/marketplaces", response_model=MarketplacesOut, summary="Active marketplace connections and their health"
)
async def list_marketplaces(caller: MarketplacesReader, rt: RuntimeDep) -> MarketplacesOut:
    async with rt.db.read() as session:
        connections = await service.list_active(session, caller.account_id)
        return MarketplacesOut(Marketplaces=[MarketplaceOut.of(c) for c in connections])
