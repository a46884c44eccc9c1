"""The boundary between the domains and the marketplaces: everything a domain needs from one goes through here.

- `Connector`: one connection's calls (consent, health, pulls, feeds, the mirror's listings, the site's categories).
  Services and tasks never talk HTTP to a marketplace themselves: they ask `connector_for(rt, connection)` and speak
  the types below.
- `TaxonomySource`: a site's category tree and each category's attribute schema, as the catalog imports them,
  whatever the marketplace (a tree shipped whole, or product types found by search with schemas fetched lazily).
- `Marketplace`: what one implementation package offers, registered per kind (kinds.py) by the composition root.

This module knows no implementation: `marketplaces/registry.py` composes them into a `ConnectorRegistry` per
runtime. Adding a marketplace: marketplaces/README.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, Protocol

from marketsync.catalog.taxonomy import CategorySpec, Taxonomy
from marketsync.kinds import FeedKind
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

__all__ = ["FeedKind"]  # kept importable from here: the feed calls below speak it


class MarketplaceError(Exception):
    """Any failure talking to a marketplace."""


class AuthorizationRevoked(MarketplaceError):
    """The merchant's authorisation is gone; only reconnecting in the app clears it."""


class Throttled(MarketplaceError):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"throttled; retry after {retry_after_s}s")
        self.retry_after_s = retry_after_s


class Unavailable(MarketplaceError):
    """Transient: timeouts, 5xx. Retrying may clear it."""


class ConsentRefused(MarketplaceError):
    """The marketplace refused the answer of its consent page (a one-time code used already or expired, a malformed
    one): `field` names what was wrong (the operator's CLI option, or the callback's part of it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class UnknownCategory(MarketplaceError):
    """The marketplace has no such category (asked for its schema)."""


@dataclass(frozen=True)
class AuthStatus:
    ok: bool
    health_status: str  # e.g. Healthy, UnAuthorized, Unavailable
    message: str


@dataclass(frozen=True)
class PostalAddress:
    name: str
    line1: str
    line2: str | None
    city: str
    region: str | None
    postal_code: str
    country_code: str
    phone: str | None = None


@dataclass(frozen=True)
class MarketplaceOrderItem:
    marketplace_item_id: str
    sku: str
    title: str
    quantity: int
    unit_price: Decimal
    status: str  # the marketplace's own item status


@dataclass(frozen=True)
class MarketplaceOrder:
    marketplace_order_id: str
    status: str
    purchase_date: datetime
    changed_at: datetime  # the marketplace's last change of the order
    currency: str
    items: list[MarketplaceOrderItem]
    buyer_name: str
    buyer_email: str | None
    buyer_phone: str | None
    shipping_address: PostalAddress
    shipping_total: Decimal = Decimal("0")
    tax_total: Decimal = Decimal("0")


@dataclass(frozen=True)
class OrderPage:
    orders: list[MarketplaceOrder]
    next_cursor: str | None  # pass back to continue; the last page's cursor is kept for the next pull


@dataclass(frozen=True)
class MarketplaceListing:
    listing_id: str
    sku: str  # the merchant SKU the marketplace associates with the listing
    external_sku: str
    listing_url: str
    price: Decimal | None
    quantity: int | None
    category_id: str | None = None


@dataclass(frozen=True)
class ListingPage:
    listings: list[MarketplaceListing]
    total: int
    next_cursor: str | None


@dataclass(frozen=True)
class PriceStockLine:
    external_sku: str
    price: Decimal | None
    quantity: int | None


@dataclass(frozen=True)
class ListingDraft:
    reference: str  # our listing row id; the marketplace echoes it back
    sku: str
    external_sku: str | None  # None for a new listing
    listing_id: str | None  # set for a revision
    category_id: str | None
    attributes: dict[str, Any]
    title: str | None
    price: Decimal | None
    quantity: int | None
    # What the API cannot carry, filled in the app: images, business policies (see Listing.app_fields).
    app_fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OrderUpdateLine:
    reference: str  # our order item id
    marketplace_order_id: str
    marketplace_item_id: str
    action: Literal["Confirm", "Cancel", "Refund"]
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ItemError:
    reference: str  # external sku, listing reference or order item reference
    message: str


@dataclass(frozen=True)
class FeedResult:
    """A feed's end state. Status Done with errors means ProcessedWithErrors; Rejected means nothing processed."""

    feed_id: str
    status: Literal["Processing", "Done", "Rejected"]
    processed: int
    errors: list[ItemError]
    message: str = ""
    # For listing publishes: reference -> (listing_id, external_sku, listing_url) of accepted items.
    published: dict[str, tuple[str, str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ConsentStart:
    """Where the merchant's browser goes to allow access. `url` is the marketplace's own consent page (Amazon:
    Seller Central's, carrying the `state` and the callback), or None where the app shows its own page standing for
    it (the sandbox marketplaces)."""

    url: str | None


@dataclass(frozen=True)
class Authorisation:
    """What the marketplace granted when the merchant allowed access (`Connector.finish_consent`)."""

    # A long-lived secret to call the marketplace with (Amazon: the LWA refresh token the one-time code is exchanged
    # for). The service stores it encrypted on the connection, never in clear. None where the marketplace keeps the
    # grant on its side (the sandbox).
    refresh_token: str | None = None
    # The merchant's account at the marketplace (Amazon: selling_partner_id), for the app to show; None if unknown.
    seller_id: str | None = None


@dataclass(frozen=True)
class CategorySchema:
    """One category's attribute schema as the marketplace gives it now. `version` is the marketplace's own name for
    this state of the schema (Amazon: productTypeVersion); a new one makes a new ProductTypeViewId and
    SchemaVersion when the catalog imports it."""

    category: CategorySpec
    version: str


class TaxonomySource(Protocol):
    """A marketplace site's categories, as the catalog imports them without knowing the marketplace."""

    async def category_tree(self) -> Taxonomy | None:
        """The site's whole category tree, leaves with their schemas (the sandbox ships its tree), or None where the
        categories are found by search and each schema is fetched when first needed (Amazon's product types)."""
        ...

    async def category_schema(self, category_id: str) -> CategorySchema:
        """One leaf category's attribute schema now; MarketplaceError for an id the marketplace does not know."""
        ...


class Connector(TaxonomySource, Protocol):
    """One connection's calls to its marketplace. Never called inside a write transaction (the in-process sandbox
    writes its own state to the same database)."""

    async def begin_consent(self, state: str, callback_url: str) -> ConsentStart:
        """Start connecting (or reauthorising): where the merchant allows access. `state` is bound to the merchant's
        app session and comes back with the answer; `callback_url` is where the marketplace sends the merchant
        back (the app's consent callback)."""
        ...

    async def finish_consent(self, answer: Mapping[str, str]) -> Authorisation:
        """The merchant allowed access: `answer` is what came back (Amazon: the callback's spapi_oauth_code and
        selling_partner_id, exchanged here for a refresh token; the sandbox: nothing, it records the grant)."""
        ...

    async def check_authorization(self) -> AuthStatus: ...

    async def pull_orders(self, cursor: str | None, limit: int = 100) -> OrderPage: ...

    async def pull_listings(self, cursor: str | None, limit: int = 200) -> ListingPage: ...

    async def submit_price_stock(self, feed_id: str, lines: list[PriceStockLine]) -> str:
        """Submit a feed; `feed_id` is our idempotency key (a resubmission returns the same marketplace feed)."""
        ...

    async def publish_listings(self, feed_id: str, drafts: list[ListingDraft]) -> str: ...

    async def send_order_updates(self, feed_id: str, lines: list[OrderUpdateLine]) -> str: ...

    async def feed_result(self, marketplace_feed_id: str) -> FeedResult: ...


ConnectorFactory = Callable[[Runtime, MarketplaceConnection], Connector]
# A kind's tree shipped whole, without a connection (the operator's `admin taxonomy import|export` without a file):
# (platform, revision, size) -> the tree.
ShippedTaxonomy = Callable[[str, int, "int | None"], Taxonomy]
# What `marketsync demo` does at the marketplace for one demo connection, before the demo pulls its orders: the
# marketplace takes the tenant's live listings as its own (and the sandbox receives a few orders); returns what it
# holds of each, by merchant SKU.
DemoSeeder = Callable[
    [Runtime, MarketplaceConnection, Sequence[ListingDraft]], Awaitable[dict[str, MarketplaceListing]]
]
REGISTRY_KEY = "marketplaces.connectors"


@dataclass(frozen=True)
class Marketplace:
    """One implementation package under marketplaces/, as the composition root registers it."""

    name: str
    platforms: tuple[str, ...]  # the kinds (kinds.py) it serves
    connector: ConnectorFactory
    shipped_taxonomy: ShippedTaxonomy | None = None
    seed_demo: DemoSeeder | None = None


class UnknownMarketplaceKind(LookupError):
    """No connector is registered for a connection's platform."""


class ConnectorRegistry:
    """Which connector serves which marketplace kind. Registering a kind twice is an error: a connector imported
    late must never silently replace another."""

    def __init__(self) -> None:
        self._factories: dict[str, ConnectorFactory] = {}
        self._marketplaces: dict[str, Marketplace] = {}

    def register(self, platform: str, factory: ConnectorFactory) -> None:
        if platform in self._factories:
            raise ValueError(f"a connector for {platform} is already registered")
        self._factories[platform] = factory

    def add(self, marketplace: Marketplace) -> None:
        """Register an implementation for every kind it serves."""
        for platform in marketplace.platforms:
            self.register(platform, marketplace.connector)
            self._marketplaces[platform] = marketplace

    def marketplace(self, platform: str) -> Marketplace | None:
        """The implementation registered for a kind (its demo seeder, its shipped tree), None for a bare factory."""
        return self._marketplaces.get(platform)

    def replace(self, platform: str, factory: ConnectorFactory) -> ConnectorFactory:
        """Swap the connector of a registered kind (tests' fakes); returns the one it replaced."""
        if platform not in self._factories:
            raise UnknownMarketplaceKind(platform)
        previous, self._factories[platform] = self._factories[platform], factory
        return previous

    @property
    def platforms(self) -> list[str]:
        return sorted(self._factories)

    def connector(self, rt: Runtime, connection: MarketplaceConnection) -> Connector:
        factory = self._factories.get(connection.platform)
        if factory is None:
            raise UnknownMarketplaceKind(
                f"no connector is registered for marketplace kind {connection.platform!r} "
                f"(registered: {', '.join(self.platforms) or 'none'})"
            )
        return factory(rt, connection)


def registry_of(rt: Runtime) -> ConnectorRegistry:
    registry = rt.extras.get(REGISTRY_KEY)
    if not isinstance(registry, ConnectorRegistry):
        raise UnknownMarketplaceKind(
            "no connectors are composed for this runtime: call marketsync.marketplaces.registry.compose_connectors"
        )
    return registry


def connector_for(rt: Runtime, connection: MarketplaceConnection) -> Connector:
    return registry_of(rt).connector(rt, connection)
