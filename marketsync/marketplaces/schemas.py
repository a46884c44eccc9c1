"""Marketplace connection as GET /api/marketplaces returns it (spec section 2)."""

from __future__ import annotations

from pydantic import BaseModel

from marketsync.models import MarketplaceConnection


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

    @classmethod
    def of(cls, connection: MarketplaceConnection) -> MarketplaceOut:
        return cls(
            MarketplaceId=connection.id,
            Platform=connection.platform,
            Country=connection.country,
            HealthStatus=connection.health_status,
            HealthStatusMessage=connection.health_status_message,
            IsHealthy=connection.is_healthy,
            RequiresReauthorization=connection.requires_reauthorization,
            LastPull=LastPullOut(
                Status=connection.last_pull_status,
                TotalSkus=connection.last_pull_total_skus,
                CurrentSku=connection.last_pull_current_sku,
            ),
        )


class MarketplacesOut(BaseModel):
    Marketplaces: list[MarketplaceOut]
