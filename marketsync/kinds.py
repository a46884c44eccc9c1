"""Marketplace kinds as data (spec section 1), and the states every domain reads off a connection and a listing.
A leaf: it imports nothing of the service, so every domain may import it. Adding a real marketplace is adding a
kind and a connector (marketsync/marketplaces/registry.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

# What a marketplace feed carries: its webhook's FeedKind and the connector's feed calls.
FeedKind = Literal["Product listing", "Price & stock", "Order updates"]


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
    # The countries whose site of this marketplace the service connects to, in the compact form Country carries
    # (UK, not GB). The first is the kind's home site (the demo's, and where a taxonomy goes when no site of the
    # kind is known yet). The one list of them: connect refuses any other (docs/decisions/0312-kind-sites.md).
    sites: tuple[str, ...]
    orders_pulled: bool
    order_write_back: bool
    category_required_on_create: bool
    # Whether attributes hang off a product type (P1) or off the category itself.
    attributes_by_product_type: bool
    # Whether the marketplace takes a price of 0. None of today's kinds does: a feed line carrying one is
    # refused whole, so such a price is never sent (docs/decisions/0047).
    accepts_zero_price: bool = False
    # A simulated marketplace of the service's own (P1..P4: the demo connects them, the sandbox serves them), or a
    # real one, connected only through its own consent (Amazon: docs/decisions/0370-amazon-connector.md).
    sandbox: bool = True
    # Where a category's schema comes from: the taxonomy import (the sandboxes, an operator's file), or the marketplace
    # itself, asked when the schema is (Amazon's product type definitions: docs/decisions/0372).
    schemas_from_marketplace: bool = False
    # Where the marketplace's consent page sends the merchant back, under MARKETSYNC_BASE_URL: the redirect URI an
    # operator registers with the marketplace (Amazon's is fixed by DESIGN section 5).
    consent_callback: str = "/app/marketplaces/consent/callback"


KINDS: dict[str, MarketplaceKind] = {
    kind.platform: kind
    for kind in (
        MarketplaceKind(
            "P1",
            sites=("UK", "DE", "FR", "IT", "ES", "US"),
            orders_pulled=True,
            order_write_back=True,
            category_required_on_create=False,
            attributes_by_product_type=True,
        ),
        MarketplaceKind(
            "P2",
            sites=("DE", "FR", "IT", "ES", "UK"),
            orders_pulled=True,
            order_write_back=False,
            category_required_on_create=True,
            attributes_by_product_type=False,
        ),
        MarketplaceKind(
            "P3",
            sites=("US", "UK"),
            orders_pulled=False,
            order_write_back=False,
            category_required_on_create=True,
            attributes_by_product_type=False,
        ),
        MarketplaceKind(
            "P4",
            sites=("FR", "IT", "ES"),
            orders_pulled=False,
            order_write_back=False,
            category_required_on_create=True,
            attributes_by_product_type=False,
        ),
        # Amazon's Selling Partner API: P2's capabilities (orders pulled, order writes stored with a warning naming
        # Amazon, CategoryId required: an Amazon product type) on Amazon's sites in these countries.
        MarketplaceKind(
            "Amazon",
            sites=("UK", "DE", "FR", "IT", "ES", "NL", "SE", "PL", "BE", "US", "CA", "MX", "JP", "AU"),
            orders_pulled=True,
            order_write_back=False,
            category_required_on_create=True,
            attributes_by_product_type=True,
            sandbox=False,
            schemas_from_marketplace=True,
            consent_callback="/app/marketplaces/amazon/callback",
        ),
    )
}
# The service's own simulated marketplaces (the demo's, `marketsync sandbox ...`).
SANDBOX_KINDS: dict[str, MarketplaceKind] = {platform: kind for platform, kind in KINDS.items() if kind.sandbox}


def platform_named(text: str) -> str | None:
    """The kind a person or a caller named, in any letter case ("amazon", "p1"), or None."""
    folded = text.strip().casefold()
    return next((platform for platform in KINDS if platform.casefold() == folded), None)


def kind_of(platform: str) -> MarketplaceKind:
    return KINDS[platform]


def home_site(platform: str) -> str:
    """The kind's first site: the demo connects it, and a taxonomy import goes there when no site is known."""
    return KINDS[platform].sites[0]


# The currency each site sells in (a marketplace's site: its country), for money the app shows beside a site.
SITE_CURRENCIES = {
    "UK": "GBP", "DE": "EUR", "FR": "EUR", "IT": "EUR", "ES": "EUR", "NL": "EUR", "BE": "EUR", "US": "USD",
    "SE": "SEK", "PL": "PLN", "CA": "CAD", "MX": "MXN", "JP": "JPY", "AU": "AUD",
}  # fmt: skip
assert {site for kind in KINDS.values() for site in kind.sites} <= set(SITE_CURRENCIES)


def site_currency(country: str) -> str:
    """The currency a site sells in: a product's price is shown in it beside each of its listings."""
    return SITE_CURRENCIES.get(country, "")


def marketplace_name(platform: str, country: str) -> str:
    """The human name used as `Marketplace` in event payloads, e.g. 'P1 UK'."""
    return f"{platform} {country}"
