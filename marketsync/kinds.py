"""Marketplace kinds as data (spec section 1), and the states every domain reads off a connection and a listing.
A leaf: it imports nothing of the service, so every domain may import it. Adding a real marketplace is adding a
kind and a connector (marketsync/connectors.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ConnectionState(StrEnum):
    # Started in the app, not yet authorised at the marketplace's consent step: never pulled, pushed or listed by
    # the API (everything reads only Active connections), and removed if the merchant denies access.
    AWAITING_CONSENT = "AwaitingConsent"
    ACTIVE = "Active"
    PAUSED = "Paused"


class ListingStatus(StrEnum):
    PENDING = "Pending"  # a publish is on its way
    LIVE = "Live"
    REJECTED = "Rejected"


@dataclass(frozen=True)
class MarketplaceKind:
    platform: str
    orders_pulled: bool
    order_write_back: bool
    category_required_on_create: bool
    # Whether attributes hang off a product type (P1) or off the category itself.
    attributes_by_product_type: bool
    # Whether the marketplace takes a price of 0. None of today's kinds does: a feed line carrying one is
    # refused whole, so such a price is never sent (docs/decisions/0047).
    accepts_zero_price: bool = False


KINDS: dict[str, MarketplaceKind] = {
    kind.platform: kind
    for kind in (
        MarketplaceKind(
            "P1",
            orders_pulled=True,
            order_write_back=True,
            category_required_on_create=False,
            attributes_by_product_type=True,
        ),
        MarketplaceKind(
            "P2",
            orders_pulled=True,
            order_write_back=False,
            category_required_on_create=True,
            attributes_by_product_type=False,
        ),
        MarketplaceKind(
            "P3",
            orders_pulled=False,
            order_write_back=False,
            category_required_on_create=True,
            attributes_by_product_type=False,
        ),
        MarketplaceKind(
            "P4",
            orders_pulled=False,
            order_write_back=False,
            category_required_on_create=True,
            attributes_by_product_type=False,
        ),
    )
}


def kind_of(platform: str) -> MarketplaceKind:
    return KINDS[platform]


def marketplace_name(platform: str, country: str) -> str:
    """The human name used as `Marketplace` in event payloads, e.g. 'P1 UK'."""
    return f"{platform} {country}"
