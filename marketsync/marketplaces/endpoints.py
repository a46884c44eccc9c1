"""GET /api/marketplaces (MarketplacesRead)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from marketsync.auth.dependencies import MarketplacesReader, RuntimeDep
from marketsync.kit import jsonio
from marketsync.marketplaces import service
from marketsync.marketplaces.schemas import MarketplacesOut

router = APIRouter(tags=["Marketplaces"])


@router.get(
    "/api/marketplaces", response_model=MarketplacesOut, summary="Active marketplace connections and their health"
)
async def list_marketplaces(caller: MarketplacesReader, rt: RuntimeDep) -> Response:
    # One read on the raw driver, serialised once with orjson (docs/decisions/0250); tests check the body against
    # MarketplacesOut, the document's schema.
    connections = await service.active_for_api(rt, caller.account_id)
    return Response(jsonio.dumps({"Marketplaces": connections}), media_type="application/json")
