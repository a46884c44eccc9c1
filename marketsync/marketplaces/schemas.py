"""Marketplace connection as GET /api/marketplaces returns it (spec section 2)."""

from __future__ import annotations

from pydantic import BaseModel


class LastPullOut(BaseModel):
    Status: str
    TotalSkus: int
    CurrentSku: int


class MarketplaceOut(BaseModel):
    MarketplaceId: str
    Platform: str
    Country: str
    HealthStatus: str | None
    HealthStatusMessage: str
    IsHealthy: bool
    RequiresReauthorization: bool
    LastPull: LastPullOut


class MarketplacesOut(BaseModel):
    Marketplaces: list[MarketplaceOut]
