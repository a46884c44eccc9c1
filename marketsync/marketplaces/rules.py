"""Pure rules of the marketplace side (no I/O): health transitions, end states of feed jobs."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Literal, TypeVar

# A price as compared here: a Decimal, or Money's scaled integer (storage units) on both sides.
Price = TypeVar("Price", Decimal, int)
HealthEvent = Literal["MarketplaceUnhealthy", "MarketplaceRestored"]


class HealthStatus(StrEnum):
    HEALTHY = "Healthy"
    UNAUTHORIZED = "UnAuthorized"
    UNAVAILABLE = "Unavailable"


HEALTHY, UNAUTHORIZED, UNAVAILABLE = HealthStatus.HEALTHY, HealthStatus.UNAUTHORIZED, HealthStatus.UNAVAILABLE


class LastPullStatus(StrEnum):
    """A connection's LastPull.Status: how its latest listing mirror went."""

    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"


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


# -- feed jobs (PriceStockPush, ListingPublish) ------------------------------------------------------------

FeedJobStatus = Literal["Completed", "Failed"]


def feed_job_status(lines: int, accepted: int) -> FeedJobStatus:
    """End state of a job that sent `lines` rows of which the marketplace accepted `accepted`.

    A job whose every row was refused (or whose feed was rejected whole) did not succeed, whatever the
    feed's own status says: Failed. Any accepted row makes it Completed; the refused rows are reported by
    FeedOutcome ProcessedWithErrors (docs/decisions/0042).
    """
    return "Completed" if accepted > 0 or lines == 0 else "Failed"


def price_stock_values(
    price: Price | None,
    quantity: int,
    held_price: Price | None,
    held_quantity: int | None,
    *,
    accepts_zero_price: bool,
) -> tuple[Price | None, int | None] | None:
    """What one price & stock feed line carries: only the values that differ from what the marketplace is
    known to hold (both when that is unknown); None when there is nothing to send.

    A price the marketplace refuses (0 where zero prices are not accepted) is withheld, so it can never
    block the stock it would travel with: the marketplace keeps its current price (docs/decisions/0047).
    """
    send_price = price if price is not None and (held_price is None or price != held_price) else None
    if send_price is not None and send_price <= 0 and not accepts_zero_price:
        send_price = None
    send_quantity = quantity if held_quantity is None or quantity != held_quantity else None
    if send_price is None and send_quantity is None:
        return None
    return send_price, send_quantity
