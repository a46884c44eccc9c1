"""Pure rules of the marketplace side (no I/O): health transitions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HealthEvent = Literal["MarketplaceUnhealthy", "MarketplaceRestored"]

HEALTHY = "Healthy"
UNAUTHORIZED = "UnAuthorized"
UNAVAILABLE = "Unavailable"


@dataclass(frozen=True)
class Health:
    """A connection's health as GET /api/marketplaces shows it. `status` None means nothing known yet."""

    status: str | None
    message: str
    is_healthy: bool
    requires_reauthorization: bool

    @property
    def broken(self) -> bool:
        return self.status is not None and not self.is_healthy


UNKNOWN = Health(None, "", True, False)


def observed_health(status: str, message: str) -> Health:
    """What one observation of the marketplace means for the connection."""
    if status == HEALTHY:
        return Health(HEALTHY, message or "Connected.", True, False)
    if status == UNAUTHORIZED:
        return Health(
            UNAUTHORIZED,
            message or "Authorisation was revoked; reconnect the marketplace in the app.",
            False,
            True,
        )
    return Health(status, message or "The marketplace is not answering.", False, False)


def health_transition(current: Health, observed: Health) -> tuple[Health, HealthEvent | None]:
    """The new health and the event to fire, if any.

    Events mark a change between working and broken only: a first observation that finds the connection
    working is silent (nothing was broken), a first observation that finds it broken fires Unhealthy,
    and a connection that stays broken (even for another reason) never repeats the event.
    """
    if observed.broken and not current.broken:
        return observed, "MarketplaceUnhealthy"
    if current.broken and not observed.broken:
        return observed, "MarketplaceRestored"
    return observed, None
