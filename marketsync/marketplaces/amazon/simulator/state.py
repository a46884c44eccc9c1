"""The simulator's state, in memory, per selling partner and marketplace, and its Python API for tests.

    sim = AmazonSimulator(clock)
    seller = sim.add_seller(countries=("UK", "DE"))
    refresh_token = sim.authorise(seller.selling_partner_id)      # as if consent and the code exchange had happened
    sim.set_listing(seller.selling_partner_id, "UK", "SKU-1", price="9.99", quantity=3)
    sim.add_order(seller.selling_partner_id, "UK", [("SKU-1", 2)])
    sim.fail_next("getOrders", status=503)
    sim.revoke(seller.selling_partner_id)                          # refresh: invalid_grant; SP-API: 403
    sim.take_violations()                                          # contract violations seen so far (then cleared)

The HTTP side (app.py) and the control endpoints under /_simulator call the same methods.
"""

from __future__ import annotations

import secrets
import string
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from random import Random
from typing import Any, Literal

from marketsync.kit.clock import Clock, SystemClock
from marketsync.marketplaces.amazon.contracts.validation import SpApiContracts, spapi_contracts
from marketsync.marketplaces.amazon.regions import SITES, Site, site_for_marketplace
from marketsync.marketplaces.amazon.simulator import product_types as pt

ACCESS_TOKEN_TTL_S = 3600  # LWA access tokens last an hour (LWA documentation)
RDT_TTL_S = 3600  # createRestrictedDataToken answers expiresIn 3600
AUTH_CODE_TTL_S = 300  # the spapi_oauth_code expires after five minutes (website authorization workflow)
UPLOAD_URL_TTL_S = 300  # createFeedDocument's url is valid for five minutes
DEFAULT_CLIENT_ID = "amzn1.application-oa2-client.simulator"
DEFAULT_CLIENT_SECRET = "amzn1.oa2-cs.v1.simulator-secret"
DEFAULT_APPLICATION_ID = "amzn1.sp.solution.simulator"
RESTRICTED_DATA_ELEMENTS = ("buyerInfo", "shippingAddress", "buyerTaxInformation")
# Restricted operations of the Orders API (Tokens API use case guide), as method and path template; those marked
# take dataElements (the PII they return depends on them), the others are restricted as a whole.
RESTRICTED_RESOURCES: dict[str, bool] = {
    "/orders/v0/orders": True,
    "/orders/v0/orders/{orderId}": True,
    "/orders/v0/orders/{orderId}/orderItems": True,
    "/orders/v0/orders/{orderId}/address": False,
    "/orders/v0/orders/{orderId}/buyerInfo": False,
    "/orders/v0/orders/{orderId}/orderItems/buyerInfo": False,
    "/orders/v0/orders/{orderId}/regulatedInfo": False,
}
ORDER_STATUSES = (
    "Pending", "Unshipped", "PartiallyShipped", "Shipped", "Canceled", "Unfulfillable", "InvoiceUnconfirmed",
    "PendingAvailability",
)  # fmt: skip
FeedMode = Literal["none", "reject", "item-errors"]


class SimulatorError(Exception):
    """An SP-API error answer: status and Amazon's `errors` entry."""

    def __init__(self, status: int, code: str, message: str, details: str = "") -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.details = status, code, message, details

    def body(self) -> dict[str, Any]:
        return {"errors": [{"code": self.code, "message": self.message, "details": self.details}]}


def invalid_input(message: str, details: str = "") -> SimulatorError:
    return SimulatorError(400, "InvalidInput", message, details)


def unauthorized(details: str) -> SimulatorError:
    return SimulatorError(403, "Unauthorized", "Access to requested resource is denied.", details)


@dataclass(frozen=True)
class Violation:
    """A contract broken: by a request the simulator received (the client's bug), a response it sent (the simulator's
    bug), a feed document it was given, or an LWA exchange."""

    side: Literal["request", "response", "feed", "lwa"]
    operation: str
    method: str
    path: str
    errors: tuple[str, ...]
    status: int | None = None

    def __str__(self) -> str:
        return f"{self.side} {self.method} {self.path} ({self.operation}): " + "; ".join(self.errors)


@dataclass
class Application:
    client_id: str
    client_secret: str
    application_id: str
    name: str
    redirect_uris: list[str]
    draft: bool = False  # a draft application is authorised only with version=beta on the consent page


@dataclass
class OrderItem:
    order_item_id: str
    sku: str
    asin: str
    title: str
    quantity: int
    unit_price: Decimal
    quantity_shipped: int = 0
    tax_rate: Decimal = Decimal("0.20")


@dataclass
class Order:
    amazon_order_id: str
    marketplace_id: str
    status: str
    purchase_date: datetime
    last_update: datetime
    items: list[OrderItem]
    currency: str
    buyer_name: str
    buyer_email: str
    address: dict[str, str]  # the full shipping address, with the buyer's name and phone (PII)
    shipping_price: Decimal = Decimal("0")
    fulfillment_channel: str = "MFN"


@dataclass
class Listing:
    sku: str
    product_type: str
    attributes: dict[str, Any]
    created: datetime
    updated: datetime
    asin: str
    issues: list[dict[str, Any]] = field(default_factory=list)

    @property
    def quantity(self) -> int | None:
        for entry in self.attributes.get("fulfillment_availability", []):
            if isinstance(entry, dict) and isinstance(entry.get("quantity"), int):
                return int(entry["quantity"])
        return None

    @property
    def price(self) -> Decimal | None:
        for offer in self.attributes.get("purchasable_offer", []):
            try:
                return Decimal(str(offer["our_price"][0]["schedule"][0]["value_with_tax"]))
            except (KeyError, IndexError, TypeError):
                continue
        return None

    @property
    def item_name(self) -> str | None:
        names = self.attributes.get("item_name") or [{}]
        value = names[0].get("value") if isinstance(names[0], dict) else None
        return value if isinstance(value, str) else None

    @property
    def statuses(self) -> list[str]:
        blocked = any(issue.get("severity") == "ERROR" for issue in self.issues)
        buyable = not blocked and (self.quantity or 0) > 0 and self.price is not None
        return ["BUYABLE", "DISCOVERABLE"] if buyable else ["DISCOVERABLE"]


@dataclass
class Market:
    """One seller's side of one marketplace."""

    site: Site
    orders: dict[str, Order] = field(default_factory=dict)
    listings: dict[str, Listing] = field(default_factory=dict)
    participating: bool = True
    suspended_listings: bool = False


@dataclass
class Seller:
    selling_partner_id: str
    store_name: str
    markets: dict[str, Market]  # by marketplace id
    authorised: bool = True
    revoked_status: int = 403
    refresh_tokens: dict[str, str] = field(default_factory=dict)  # refresh token -> client id


@dataclass
class AccessToken:
    seller_id: str
    client_id: str
    expires_at: datetime


@dataclass
class RestrictedDataToken:
    seller_id: str
    resources: list[dict[str, Any]]
    expires_at: datetime


@dataclass
class AuthorizationCode:
    seller_id: str
    client_id: str
    redirect_uri: str
    expires_at: datetime
    used: bool = False


@dataclass
class FeedDocument:
    document_id: str
    seller_id: str
    content_type: str
    url_expires_at: datetime
    content: bytes | None = None
    is_result: bool = False


@dataclass
class Feed:
    feed_id: str
    seller_id: str
    feed_type: str
    marketplace_ids: list[str]
    input_document_id: str
    created: datetime
    status: str = "IN_QUEUE"
    started: datetime | None = None
    ended: datetime | None = None
    result_document_id: str | None = None
    polls: int = 0


@dataclass
class QueuedFault:
    operation: str | None  # an operationId, "lwaToken", or None for any SP-API operation
    status: int
    remaining: int


@dataclass
class FeedFault:
    mode: FeedMode = "none"
    skus: frozenset[str] | None = None  # item-errors: these SKUs (None: every message)
    message: str = "The simulator was told to reject this."


@dataclass
class TokenBucket:
    rate: float
    burst: int
    tokens: float
    at: datetime


class AmazonSimulator:
    """SP-API and LWA in memory. One instance serves any number of applications, sellers and marketplaces."""

    def __init__(self, clock: Clock | None = None, *, seed: int = 0, contracts: SpApiContracts | None = None) -> None:
        self.clock: Clock = clock or SystemClock()
        self.contracts = contracts or spapi_contracts()
        self.random = Random(seed)
        self.base_url = ""  # set by whoever serves it: upload URLs and schema links point here
        self.applications: dict[str, Application] = {}
        self.sellers: dict[str, Seller] = {}
        self.access_tokens: dict[str, AccessToken] = {}
        self.restricted_tokens: dict[str, RestrictedDataToken] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.documents: dict[str, FeedDocument] = {}
        self.feeds: dict[str, Feed] = {}
        self.page_tokens: dict[str, dict[str, Any]] = {}
        self.violations: list[Violation] = []
        self.requests: list[tuple[str, str, str]] = []  # (operation, method, path) of every SP-API call answered
        self.product_types: dict[str, pt.ProductType] = {p.name: p for p in pt.PRODUCT_TYPES}
        self.listing_rejections: dict[str, list[dict[str, Any]]] = {}
        self._schema_validators: dict[tuple[str, str, str, bool], Any] = {}
        # Faults (all off by default)
        self.queued_faults: list[QueuedFault] = []
        self.delays_s: dict[str | None, float] = {}
        self.drips_s: dict[str | None, float] = {}
        self.feed_faults: dict[str | None, FeedFault] = {}
        self.feed_polls_per_step = 1
        self.feed_seconds_per_step: float | None = None
        self.rate_limits_enforced = False
        self.rate_overrides: dict[str, tuple[float, int]] = {}
        self.buckets: dict[tuple[str, str], TokenBucket] = {}
        self.register_application()

    # -- applications, sellers, authorisation -------------------------------------------------------------------

    def register_application(
        self,
        client_id: str = DEFAULT_CLIENT_ID,
        client_secret: str = DEFAULT_CLIENT_SECRET,
        application_id: str = DEFAULT_APPLICATION_ID,
        redirect_uris: Iterable[str] = (),
        *,
        name: str = "marketsync",
        draft: bool = False,
    ) -> Application:
        """An SP-API application with its LWA credentials and registered redirect URIs (replaces one of that id)."""
        app = Application(client_id, client_secret, application_id, name, list(redirect_uris), draft)
        self.applications = {k: v for k, v in self.applications.items() if v.application_id != application_id}
        self.applications[client_id] = app
        return app

    def application_by_id(self, application_id: str) -> Application | None:
        return next((a for a in self.applications.values() if a.application_id == application_id), None)

    def add_seller(
        self,
        countries: Sequence[str] | None = None,
        *,
        selling_partner_id: str | None = None,
        store_name: str | None = None,
    ) -> Seller:
        """A selling partner taking part in the marketplaces of those countries (default: every site)."""
        seller_id = selling_partner_id or "A" + "".join(
            self.random.choice(string.ascii_uppercase + string.digits) for _ in range(13)
        )
        sites = [SITES[c.upper()] for c in countries] if countries is not None else list(SITES.values())
        seller = Seller(
            seller_id, store_name or f"Store {seller_id[-4:]}", {s.marketplace_id: Market(s) for s in sites}
        )
        self.sellers[seller_id] = seller
        return seller

    def seller(self, seller_id: str) -> Seller:
        try:
            return self.sellers[seller_id]
        except KeyError:
            raise KeyError(f"no selling partner {seller_id!r} in the simulator") from None

    def market(self, seller_id: str, marketplace: str) -> Market:
        """A seller's marketplace by marketplace id or country."""
        marketplace_id = SITES[marketplace.upper()].marketplace_id if marketplace.upper() in SITES else marketplace
        seller = self.seller(seller_id)
        if marketplace_id not in seller.markets:
            seller.markets[marketplace_id] = Market(site_for_marketplace(marketplace_id), participating=False)
        return seller.markets[marketplace_id]

    def set_participation(
        self, seller_id: str, marketplace: str, *, participating: bool = True, suspended_listings: bool = False
    ) -> None:
        market = self.market(seller_id, marketplace)
        market.participating, market.suspended_listings = participating, suspended_listings

    def authorization_code(
        self, seller_id: str, client_id: str = DEFAULT_CLIENT_ID, redirect_uri: str | None = None
    ) -> str:
        """What the consent page's Authorise button hands over as spapi_oauth_code (single use, five minutes)."""
        app = self.applications[client_id]
        uri = redirect_uri or (app.redirect_uris[0] if app.redirect_uris else "")
        code = "ANDa" + secrets.token_urlsafe(15)
        self.codes[code] = AuthorizationCode(
            seller_id, client_id, uri, self._now() + timedelta(seconds=AUTH_CODE_TTL_S)
        )
        return code

    def authorise(self, seller_id: str, client_id: str = DEFAULT_CLIENT_ID) -> str:
        """A refresh token of the seller for the application, as consent and the code exchange would give."""
        token = "Atzr|" + secrets.token_urlsafe(48)
        seller = self.seller(seller_id)
        seller.refresh_tokens[token] = client_id
        seller.authorised = True
        return token

    def issue_access_token(self, seller_id: str, client_id: str) -> tuple[str, int]:
        token = "Atza|" + secrets.token_urlsafe(64)
        self.access_tokens[token] = AccessToken(
            seller_id, client_id, self._now() + timedelta(seconds=ACCESS_TOKEN_TTL_S)
        )
        return token, ACCESS_TOKEN_TTL_S

    def revoke(self, seller_id: str, status: int = 403) -> None:
        """The seller revokes the application: refreshes answer invalid_grant, SP-API calls 403 (or 401 where the
        operation's model declares 401)."""
        seller = self.seller(seller_id)
        seller.authorised, seller.revoked_status = False, status

    def restore(self, seller_id: str) -> None:
        """Authorisation given again; the refresh tokens the seller had work again (the sandbox's restore-auth)."""
        self.seller(seller_id).authorised = True

    def expire_access_tokens(self, seller_id: str | None = None) -> None:
        for token in self.access_tokens.values():
            if seller_id is None or token.seller_id == seller_id:
                token.expires_at = self._now() - timedelta(seconds=1)

    # -- orders -------------------------------------------------------------------------------------------------

    def _order_id(self, site: Site) -> str:
        prefix = {"NA": "11", "EU": "20", "FE": "25"}[site.region.code] + str(self.random.randint(1, 6))
        while True:
            order_id = f"{prefix}-{self.random.randint(0, 9_999_999):07d}-{self.random.randint(0, 9_999_999):07d}"
            if all(
                order_id not in s.markets.get(site.marketplace_id, Market(site)).orders for s in self.sellers.values()
            ):
                return order_id

    def add_order(
        self,
        seller_id: str,
        marketplace: str,
        items: Sequence[tuple[str, int] | tuple[str, int, Decimal | str]],
        *,
        status: str = "Unshipped",
        purchase_date: datetime | None = None,
        buyer_name: str = "Jane Buyer",
        buyer_email: str | None = None,
        shipping_price: Decimal | str = "0",
        address: dict[str, str] | None = None,
    ) -> Order:
        """A buyer orders (sku, quantity[, unit price]) lines; the price defaults to the listing's."""
        if status not in ORDER_STATUSES:
            raise ValueError(f"{status!r} is not an Amazon order status")
        market = self.market(seller_id, marketplace)
        site = market.site
        now = self._now()
        lines = []
        for number, item in enumerate(items, start=1):
            sku, quantity = item[0], item[1]
            listing = market.listings.get(sku)
            price = Decimal(str(item[2])) if len(item) > 2 else (listing.price if listing and listing.price else None)
            lines.append(
                OrderItem(
                    order_item_id=f"{self.random.randint(10**13, 10**14 - 1)}{number}",
                    sku=sku,
                    asin=listing.asin if listing else self._asin(),
                    title=(listing.item_name if listing else None) or sku,
                    quantity=quantity,
                    unit_price=price if price is not None else Decimal("10.00"),
                )
            )
        order_id = self._order_id(site)
        order = Order(
            amazon_order_id=order_id, marketplace_id=site.marketplace_id, status=status,
            purchase_date=purchase_date or now, last_update=now, items=lines, currency=site.currency,
            buyer_name=buyer_name, buyer_email=buyer_email or f"{order_id.replace('-', '')}@marketplace.amazon.example",
            address=address or {
                "Name": buyer_name, "AddressLine1": "1 High Street", "City": "Springfield", "StateOrRegion": "",
                "PostalCode": "AB1 2CD", "CountryCode": site.country.replace("UK", "GB"), "Phone": "+44 20 7946 0000",
            },
            shipping_price=Decimal(str(shipping_price)),
        )  # fmt: skip
        market.orders[order_id] = order
        return order

    def orders_arrive(self, seller_id: str, marketplace: str, count: int = 1) -> list[Order]:
        """Buyers place `count` orders of the seller's listings there (one to three lines each)."""
        market = self.market(seller_id, marketplace)
        skus = sorted(market.listings) or ["SIM-SKU-1"]
        made = []
        for _ in range(count):
            picked = self.random.sample(skus, min(len(skus), self.random.randint(1, 3)))
            made.append(self.add_order(seller_id, marketplace, [(sku, self.random.randint(1, 3)) for sku in picked]))
        return made

    def update_order(self, amazon_order_id: str, *, status: str) -> Order:
        """The order changes at Amazon (shipped, cancelled...): its LastUpdateDate moves to now."""
        if status not in ORDER_STATUSES:
            raise ValueError(f"{status!r} is not an Amazon order status")
        order = self.find_order(amazon_order_id)
        order.status, order.last_update = status, self._now()
        return order

    def find_order(self, amazon_order_id: str, seller_id: str | None = None) -> Order:
        for seller in self.sellers.values():
            if seller_id is not None and seller.selling_partner_id != seller_id:
                continue
            for market in seller.markets.values():
                if amazon_order_id in market.orders:
                    return market.orders[amazon_order_id]
        raise KeyError(amazon_order_id)

    # -- listings -----------------------------------------------------------------------------------------------

    def _asin(self) -> str:
        return "B0" + "".join(self.random.choice(string.ascii_uppercase + string.digits) for _ in range(8))

    def set_listing(
        self,
        seller_id: str,
        marketplace: str,
        sku: str,
        *,
        price: Decimal | str | None = None,
        quantity: int | None = None,
        product_type: str = "LUGGAGE",
        attributes: dict[str, Any] | None = None,
    ) -> Listing:
        """A change made at the marketplace (Seller Central): create the listing or set its price and quantity."""
        market = self.market(seller_id, marketplace)
        now = self._now()
        listing = market.listings.get(sku)
        if listing is None:
            listing = Listing(sku, product_type, {}, now, now, self._asin())
            listing.attributes = {
                "item_name": [{"value": sku, "language_tag": market.site.language,
                               "marketplace_id": market.site.marketplace_id}],
                "condition_type": [{"value": "new_new", "marketplace_id": market.site.marketplace_id}],
            }  # fmt: skip
            market.listings[sku] = listing
        if attributes:
            listing.attributes.update(attributes)
        if price is not None:
            listing.attributes["purchasable_offer"] = [offer_value(market.site, Decimal(str(price)))]
        if quantity is not None:
            listing.attributes["fulfillment_availability"] = [
                {"fulfillment_channel_code": "DEFAULT", "quantity": quantity}
            ]
        listing.updated = now
        return listing

    def listing(self, seller_id: str, marketplace: str, sku: str) -> Listing | None:
        return self.market(seller_id, marketplace).listings.get(sku)

    def reject_listing(self, sku: str, message: str = "The listing is not allowed.", code: str = "90000900") -> None:
        """putListingsItem and patchListingsItem of that SKU answer INVALID with this issue (a listing issue that
        blocks publishing)."""
        self.listing_rejections[sku] = [
            {
                "code": code,
                "message": message,
                "severity": "ERROR",
                "attributeNames": [],
                "categories": ["INVALID_ATTRIBUTE"],
            }
        ]

    def add_product_types(self, product_types: Iterable[pt.ProductType]) -> None:
        self.product_types.update({p.name: p for p in product_types})
        self._schema_validators.clear()

    def schema_validator(
        self, product_type: str, site: Site, requirements: str = "LISTING", enforced: bool = True
    ) -> Any:
        """The validator of a product type's schema on a site (made once: feeds validate it per message)."""
        key = (product_type, site.marketplace_id, requirements, enforced)
        validator = self._schema_validators.get(key)
        if validator is None:
            schema = pt.product_schema(self.product_types[product_type], site, requirements)
            validator = pt.AmazonSchemaValidator(schema if enforced else pt.not_enforced(schema))
            self._schema_validators[key] = validator
        return validator

    # -- faults ---------------------------------------------------------------------------------------------------

    def fail_next(self, operation: str | None = None, *, status: int = 500, times: int = 1) -> None:
        """The next `times` calls of that operation (an operationId, "lwaToken", or None: any SP-API call) answer
        `status` (429, 500 or 503) as Amazon would."""
        self.queued_faults.append(QueuedFault(operation, status, times))

    def take_fault(self, operation: str, *, lwa: bool = False) -> int | None:
        for fault in self.queued_faults:
            if fault.operation == operation or (fault.operation is None and not lwa):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self.queued_faults.remove(fault)
                return fault.status
        return None

    def set_delay(self, seconds: float, operation: str | None = None) -> None:
        """Answers of that operation (None: every answer) wait this long before the first byte."""
        self.delays_s[operation] = seconds

    def set_drip(self, interval_s: float, operation: str | None = None) -> None:
        """Answers of that operation (None: every answer) are sent one byte at a time, this far apart."""
        self.drips_s[operation] = interval_s

    def clear_faults(self) -> None:
        self.queued_faults.clear()
        self.delays_s.clear()
        self.drips_s.clear()
        self.feed_faults.clear()
        self.listing_rejections.clear()
        self.rate_limits_enforced = False

    def set_feed_fault(
        self, mode: FeedMode, *, seller_id: str | None = None, skus: Iterable[str] | None = None, message: str = ""
    ) -> None:
        """Feeds of that seller (None: every seller) are rejected whole (FATAL), or the messages of those SKUs
        (None: all) get an error in the processing report, or neither ("none")."""
        self.feed_faults[seller_id] = FeedFault(
            mode, frozenset(skus) if skus is not None else None, message or FeedFault.message
        )

    def feed_fault(self, seller_id: str) -> FeedFault:
        return self.feed_faults.get(seller_id) or self.feed_faults.get(None) or FeedFault()

    def set_feed_timing(self, *, polls_per_step: int = 1, seconds_per_step: float | None = None) -> None:
        """A feed moves IN_QUEUE -> IN_PROGRESS -> DONE one step per `polls_per_step` getFeed calls, or per
        `seconds_per_step` of the simulator's clock, whichever comes first."""
        self.feed_polls_per_step, self.feed_seconds_per_step = max(1, polls_per_step), seconds_per_step

    def enforce_rate_limits(self, enabled: bool = True) -> None:
        """Amazon's usage plans (from the models, or set_rate) are enforced per seller and operation: 429."""
        self.rate_limits_enforced = enabled
        self.buckets.clear()

    def set_rate(self, operation: str, rate: float, burst: int) -> None:
        self.rate_overrides[operation] = (rate, burst)
        self.buckets = {k: v for k, v in self.buckets.items() if k[1] != operation}

    def rate_of(self, operation: str) -> tuple[float, int]:
        if operation in self.rate_overrides:
            return self.rate_overrides[operation]
        try:
            return self.contracts.operation(operation).default_rate() or (1.0, 1)
        except KeyError:
            return (1.0, 1)

    def take_token(self, seller_id: str, operation: str) -> bool:
        """One request from the seller's bucket for the operation; False when it is empty (429)."""
        if not self.rate_limits_enforced:
            return True
        rate, burst = self.rate_of(operation)
        now = self._now()
        bucket = self.buckets.setdefault((seller_id, operation), TokenBucket(rate, burst, float(burst), now))
        bucket.tokens = min(float(bucket.burst), bucket.tokens + (now - bucket.at).total_seconds() * bucket.rate)
        bucket.at = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    # -- violations -----------------------------------------------------------------------------------------------

    def record(self, violation: Violation) -> None:
        self.violations.append(violation)

    def take_violations(self) -> list[Violation]:
        """The violations recorded so far, which are then forgotten (a test that provokes one on purpose takes it)."""
        taken, self.violations = self.violations, []
        return taken

    # -- helpers --------------------------------------------------------------------------------------------------

    def _now(self) -> datetime:
        return self.clock.now()

    def new_document_id(self) -> str:
        return f"amzn1.tortuga.4.sim.{uuid.uuid4()}"

    def new_feed_id(self) -> str:
        return str(self.random.randint(10**10, 10**11 - 1))

    def summary(self) -> dict[str, Any]:
        return {
            "Applications": [
                {"client_id": a.client_id, "application_id": a.application_id, "redirect_uris": a.redirect_uris}
                for a in self.applications.values()
            ],
            "Sellers": [
                {
                    "selling_partner_id": s.selling_partner_id,
                    "store_name": s.store_name,
                    "authorised": s.authorised,
                    "marketplaces": {
                        m.site.country: {
                            "marketplace_id": m.site.marketplace_id,
                            "orders": len(m.orders),
                            "listings": len(m.listings),
                            "participating": m.participating,
                        }
                        for m in s.markets.values()
                    },
                }
                for s in self.sellers.values()
            ],
            "Feeds": len(self.feeds),
            "Violations": [str(v) for v in self.violations],
        }


def offer_value(site: Site, price: Decimal) -> dict[str, Any]:
    """A purchasable_offer value as a seller would send it."""
    return {
        "currency": site.currency,
        "marketplace_id": site.marketplace_id,
        "audience": "ALL",
        "our_price": [{"schedule": [{"value_with_tax": float(price)}]}],
    }
