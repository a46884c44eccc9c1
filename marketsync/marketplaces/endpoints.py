"""GET /api/marketplaces (MarketplacesRead)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from marketsync.auth.dependencies import MarketplacesReader, RuntimeDep
from marketsync.marketplaces import service
from marketsync.marketplaces.schemas import MarketplaceOut, MarketplacesOut

router = APIRouter(tags=["Marketplaces"])


@router.get(
    "/api/marketplaces", response_model=MarketplacesOut, summary="Active marketplace connections and their health"
)
async def list_marketplaces(caller: MarketplacesReader, rt: RuntimeDep) -> Response:
    # The body is built by the model and serialised once (returning
    # the model itself would have FastAPI validate it again against response_model).
    async with rt.db.read() as session:
        connections = await service.list_active(session, caller.account_id)
    body = MarketplacesOut(Marketplaces=[MarketplaceOut.of(c) for c in connections])
    return Response(body.model_dump_json(), media_type="application/json")
