"""The Connector (marketplaces/connector.py) for Amazon's Selling Partner API: one connection, one site, one selling
partner. Thin: the HTTP client is client.py, what each call means is in orders.py, feeds.py, listings.py and
product_types.py (docs/decisions/0370-amazon-connector.md).

| Connector call | SP-API |
|---|---|
| begin_consent | Seller Central's consent page for the site, with the application id, `state` and the callback |
| finish_consent | the consent's `spapi_oauth_code` exchanged at Login with Amazon for a refresh token |
| check_authorization | getMarketplaceParticipations (Sellers): Healthy when the seller participates in the site |
| pull_orders | getOrders (v0, LastUpdatedAfter + NextToken, with a Restricted Data Token), getOrderItems |
| pull_listings | searchListingsItems (summaries, offers, fulfilment availability), 20 a page |
| submit_price_stock | one JSON_LISTINGS_FEED: createFeedDocument, the upload, createFeed |
| publish_listings | putListingsItem per listing; Amazon's answer (its issues) decides |
| feed_result | getFeed; once done getFeedDocument and the processing report |
| send_order_updates | never: Amazon's order writes are stored, not sent (kind P2's capabilities) |
| category_tree | searchDefinitionsProductTypes: the site's product types, a flat list (0372) |
| category_schema | getDefinitionsProductType and its schema document, mapped (product_types.py) |
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import quote, urlencode

from marketsync.catalog.taxonomy import CategorySpec, Taxonomy
from marketsync.kinds import kind_of
from marketsync.kit import jsonio
from marketsync.marketplaces import credentials
from marketsync.marketplaces.amazon import feeds, listings, orders
from marketsync.marketplaces.amazon.client import AmazonServices, SpApi, SpApiError, lwa_credentials, services_of
from marketsync.marketplaces.amazon.lwa import ConsentRefused as LwaRefused
from marketsync.marketplaces.amazon.lwa import NotConfigured
from marketsync.marketplaces.amazon.product_types import (
    AttributeShape,
    MappedSchema,
    map_schema,
    product_type_taxonomy,
)
from marketsync.marketplaces.amazon.regions import Site, site_for_country
from marketsync.marketplaces.connector import (
    Authorisation,
    AuthorizationRevoked,
    AuthStatus,
    CategorySchema,
    Connector,
    ConsentRefused,
    ConsentStart,
    FeedResult,
    ItemError,
    ListingDraft,
    ListingPage,
    MarketplaceError,
    MarketplaceListing,
    OrderPage,
    OrderUpdateLine,
    PriceStockLine,
    Unavailable,
    UnknownCategory,
)
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

__all__ = ["PLATFORM", "AmazonConnector", "amazon_connector", "consent_url", "spapi_url"]

PLATFORM = "Amazon"
# A product type's definition, once fetched, serves publishes this long (its version rarely moves).
DEFINITION_TTL = timedelta(hours=1)
# A Restricted Data Token is used until this long before its expiry.
RDT_MARGIN = timedelta(seconds=60)


def spapi_url(rt: Runtime, site: Site) -> str:
    """Where the site's SP-API calls go: MARKETSYNC_AMAZON_SPAPI_URL, else the site's region's endpoint."""
    return rt.settings.amazon_spapi_url or site.region.spapi_url


@dataclass
class _Cache:
    """What the process keeps between calls, beside the access tokens (client.py)."""

    restricted: dict[tuple[str, str], tuple[str, datetime]] = field(default_factory=dict)
    definitions: dict[tuple[str, str], tuple[datetime, MappedSchema, str, str]] = field(default_factory=dict)


def _cache_of(services: AmazonServices) -> _Cache:
    cache = getattr(services, "_connector_cache", None)
    if cache is None:
        cache = _Cache()
        services._connector_cache = cache  # type: ignore[attr-defined]
    assert isinstance(cache, _Cache)
    return cache


# -- receipts: what feed_result is handed back (kept in the job's state by marketplaces/feeds.py) ---------------


@dataclass(frozen=True)
class Receipt:
    """A feed's id with what its messages stand for (message N is references[N-1]), or the answers of a publish's
    putListingsItem calls. Encoded as JSON: the pipeline keeps it in the job, so a run resumed after a crash reads
    the same feed's report without asking Amazon what it sent."""

    kind: Literal["feed", "put"]
    feed_id: str
    references: list[str]
    # put: reference -> [sku, ACCEPTED|INVALID, ASIN or "", [error messages]]
    answers: dict[str, list[Any]] = field(default_factory=dict)

    def encode(self) -> str:
        if self.kind == "feed":
            return jsonio.dumps({"AmazonFeed": self.feed_id, "References": self.references}).decode()
        return jsonio.dumps({"AmazonPut": self.feed_id, "Answers": self.answers}).decode()

    @classmethod
    def decode(cls, text: str) -> Receipt:
        try:
            body = jsonio.loads(text)
            if "AmazonFeed" in body:
                return cls("feed", str(body["AmazonFeed"]), [str(r) for r in body["References"]])
            return cls("put", str(body["AmazonPut"]), [], dict(body["Answers"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise MarketplaceError(f"not a receipt of an Amazon submission: {text[:60]!r}") from exc


class AmazonConnector:
    """Connector for one Amazon connection (one selling partner on one site)."""

    def __init__(self, rt: Runtime, connection: MarketplaceConnection) -> None:
        self.rt = rt
        self.connection = connection
        self.site = site_for_country(connection.country)
        self.services = services_of(rt)
        self.cache = _cache_of(self.services)
        self.seller_id = connection.seller_id or ""
        self._refresh_token = credentials.unseal(rt, connection)  # sealed on the connection (0377)

    @property
    def api(self) -> SpApi:
        if not self.seller_id or not self._refresh_token:
            raise AuthorizationRevoked(f"Amazon {self.site.country} is not authorised yet: no refresh token is held")
        return SpApi(
            self.services,
            self.rt.clock,
            lwa_credentials(self.rt.settings, self.site.region.lwa_url),
            spapi_url(self.rt, self.site),
            self.seller_id,
            self._refresh_token,
            self.rt.settings.marketplace_timeout_s,
        )

    @property
    def marketplace_id(self) -> str:
        return self.site.marketplace_id

    # -- consent (docs/decisions/0377) ------------------------------------------------------------------------------

    async def begin_consent(self, state: str, callback_url: str) -> ConsentStart:
        """Seller Central's consent page of the site (or MARKETSYNC_AMAZON_CONSENT_URL) for the application."""
        return ConsentStart(consent_url(self.rt, self.site, state, callback_url))

    async def finish_consent(self, answer: Mapping[str, str]) -> Authorisation:
        """The consent redirect's `spapi_oauth_code` exchanged at LWA for the seller's refresh token. ConsentRefused
        names what is wrong: a malformed code or seller id, or a code LWA refuses (used already, expired)."""
        code = (answer.get("spapi_oauth_code") or "").strip()
        seller_id = (answer.get("selling_partner_id") or "").strip()
        if not _CODE.match(code):
            raise ConsentRefused("AuthorizationCode", "The spapi_oauth_code of Amazon's consent redirect is missing.")
        if not _SELLER_ID.match(seller_id):
            raise ConsentRefused(
                "SellingPartnerId", "The selling_partner_id of Amazon's consent redirect (letters and digits)."
            )
        try:
            credentials_ = lwa_credentials(self.rt.settings, self.site.region.lwa_url)
        except NotConfigured as exc:
            raise ConsentRefused("Platform", str(exc)) from None
        callback = f"{self.rt.settings.base_url}{kind_of(PLATFORM).consent_callback}"
        try:
            refresh_token = await self.services.tokens.exchange_code(credentials_, code, callback)
        except LwaRefused as exc:
            raise ConsentRefused("AuthorizationCode", str(exc)) from None
        self.services.tokens.forget(seller_id)  # a reauthorisation's old access tokens are not used again
        return Authorisation(refresh_token=refresh_token, seller_id=seller_id)

    # -- health ------------------------------------------------------------------------------------------------

    async def check_authorization(self) -> AuthStatus:
        try:
            answer = await self.api.call("getMarketplaceParticipations", "GET", "/sellers/v1/marketplaceParticipations")
        except AuthorizationRevoked:
            return AuthStatus(False, "UnAuthorized", "Amazon refused the authorisation; reauthorise Amazon in the app.")
        except NotConfigured as exc:
            return AuthStatus(False, "Unavailable", str(exc))
        except (Unavailable, SpApiError) as exc:
            return AuthStatus(False, "Unavailable", f"Amazon is not answering ({exc}).")
        for entry in answer.get("payload") or []:
            marketplace = entry.get("marketplace") or {}
            if marketplace.get("id") != self.marketplace_id:
                continue
            participation = entry.get("participation") or {}
            if not participation.get("isParticipating"):
                break
            suspended = " Some listings are suspended." if participation.get("hasSuspendedListings") else ""
            store = entry.get("storeName") or self.seller_id
            return AuthStatus(True, "Healthy", f"Connected to {self.site.name} as {store}.{suspended}")
        return AuthStatus(
            False, "NotParticipating", f"The seller does not sell on {self.site.name}: nothing can be synced there."
        )

    # -- orders ------------------------------------------------------------------------------------------------

    async def _restricted_token(self) -> str:
        """A Restricted Data Token for getOrders with the customer block's data elements only (cached)."""
        key = (self.seller_id, self.marketplace_id)
        cached = self.cache.restricted.get(key)
        now = self.rt.clock.now()
        if cached is not None and now < cached[1] - RDT_MARGIN:
            return cached[0]
        answer = await self.api.call(
            "createRestrictedDataToken",
            "POST",
            "/tokens/2021-03-01/restrictedDataToken",
            body={
                "restrictedResources": [
                    {"method": "GET", "path": "/orders/v0/orders", "dataElements": list(orders.CUSTOMER_DATA_ELEMENTS)}
                ]
            },
        )
        token, expires_in = answer.get("restrictedDataToken"), answer.get("expiresIn")
        if not isinstance(token, str) or not token:
            raise Unavailable("Amazon answered createRestrictedDataToken without a token")
        lifetime = float(expires_in) if isinstance(expires_in, int) and expires_in > 0 else 3600.0
        self.cache.restricted[key] = (token, now + timedelta(seconds=lifetime))
        return token

    async def _order_items(self, order_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        path = f"/orders/v0/orders/{quote(order_id, safe='')}/orderItems"
        while True:
            answer = await self.api.call("getOrderItems", "GET", path, params={"NextToken": token})
            payload = answer.get("payload") or {}
            items.extend(payload.get("OrderItems") or [])
            token = payload.get("NextToken")
            if not token:
                return items

    async def pull_orders(self, cursor: str | None, limit: int = 100) -> OrderPage:
        state = orders.OrderCursor.decode(cursor, self.connection.created_at - orders.FIRST_PULL_LOOKBACK)
        params: dict[str, Any] = {"MarketplaceIds": [self.marketplace_id]}
        if state.next_token and state.before is not None:
            params["NextToken"] = state.next_token
        else:
            walk = state.walk(self.rt.clock.now())
            if walk is None:
                return OrderPage(orders=[], next_cursor=state.encode())
            state = walk
            assert state.before is not None
            params["LastUpdatedAfter"] = _amazon_time(state.after)
            params["LastUpdatedBefore"] = _amazon_time(state.before)
            params["MaxResultsPerPage"] = max(1, min(limit, 100))
        restricted = await self._restricted_token()
        try:
            answer = await self.api.call(
                "getOrders", "GET", "/orders/v0/orders", params=params, restricted_token=restricted
            )
        except SpApiError as exc:
            if "NextToken" not in params or exc.status != 400:
                raise
            # A NextToken Amazon no longer takes (they expire): walk again from the cursor's start (idempotent).
            return await self.pull_orders(orders.OrderCursor(state.after).encode(), limit)
        payload = answer.get("payload") or {}
        pulled = []
        try:
            for raw in payload.get("Orders") or []:
                items = await self._order_items(str(raw["AmazonOrderId"]))
                pulled.append(orders.marketplace_order(raw, items, raw, self.site.currency))
        except (KeyError, TypeError, ValueError) as exc:
            raise Unavailable(f"Amazon answered an unexpected order ({type(exc).__name__}: {exc})") from exc
        following = state.after_page(payload.get("NextToken"))
        return OrderPage(orders=pulled, next_cursor=following.encode())

    # -- the mirror --------------------------------------------------------------------------------------------

    async def pull_listings(self, cursor: str | None, limit: int = 200) -> ListingPage:
        found: list[MarketplaceListing] = []
        token = cursor or None
        total = 0
        path = f"/listings/2021-08-01/items/{quote(self.seller_id, safe='')}"
        while True:
            answer = await self.api.call(
                "searchListingsItems",
                "GET",
                path,
                params={
                    "marketplaceIds": [self.marketplace_id],
                    "includedData": list(listings.MIRROR_DATA),
                    "pageSize": listings.PAGE_SIZE,
                    "pageToken": token,
                },
            )
            try:
                total = int(answer["numberOfResults"])
                found.extend(listings.mirrored(item, self.site) for item in answer.get("items") or [])
            except (KeyError, TypeError, ValueError) as exc:
                raise Unavailable(f"Amazon answered an unexpected listing page ({type(exc).__name__})") from exc
            token = (answer.get("pagination") or {}).get("nextToken") or None
            if not token or len(found) + listings.PAGE_SIZE > limit:
                break
        return ListingPage(listings=found, total=total, next_cursor=token)

    # -- the price/stock push ----------------------------------------------------------------------------------

    async def submit_price_stock(self, feed_id: str, lines: list[PriceStockLine]) -> str:
        document = feeds.price_stock_document(self.seller_id, self.marketplace_id, self.site.currency, lines)
        problems = feeds.document_problems(document)  # before anything is sent: a document refused is our bug
        if problems:
            raise MarketplaceError(f"the feed document breaks Amazon's schema: {'; '.join(problems[:5])}")
        return await self._send_feed(document, [line.external_sku for line in lines])

    async def _send_feed(self, document: dict[str, Any], references: list[str]) -> str:
        api = self.api
        upload = await api.call(
            "createFeedDocument", "POST", "/feeds/2021-06-30/documents", body={"contentType": feeds.FEED_CONTENT_TYPE}
        )
        try:
            url, document_id = str(upload["url"]), str(upload["feedDocumentId"])
        except KeyError as exc:
            raise Unavailable("Amazon answered createFeedDocument without its url") from exc
        await api.transfer("PUT", url, content=jsonio.dumps(document), content_type=feeds.FEED_CONTENT_TYPE)
        created = await api.call(
            "createFeed",
            "POST",
            "/feeds/2021-06-30/feeds",
            body={
                "feedType": feeds.FEED_TYPE,
                "marketplaceIds": [self.marketplace_id],
                "inputFeedDocumentId": document_id,
            },
        )
        if not created.get("feedId"):
            raise Unavailable("Amazon answered createFeed without a feedId")
        return Receipt("feed", str(created["feedId"]), references).encode()

    async def feed_result(self, marketplace_feed_id: str) -> FeedResult:
        receipt = Receipt.decode(marketplace_feed_id)
        if receipt.kind == "put":
            return _publish_result(receipt, self.site)
        api = self.api
        feed = await api.call("getFeed", "GET", f"/feeds/2021-06-30/feeds/{quote(receipt.feed_id, safe='')}")
        status = feeds.processing_status(feed)
        if status in ("IN_QUEUE", "IN_PROGRESS"):
            return FeedResult(receipt.feed_id, "Processing", 0, [])
        report = None
        if feed.get("resultFeedDocumentId"):
            report = await self._report(str(feed["resultFeedDocumentId"]))
        return feeds.feed_result(receipt.feed_id, status, report, receipt.references)

    async def _report(self, document_id: str) -> dict[str, Any]:
        api = self.api
        located = await api.call("getFeedDocument", "GET", f"/feeds/2021-06-30/documents/{quote(document_id, safe='')}")
        raw = await api.transfer("GET", str(located.get("url") or ""))
        try:
            if located.get("compressionAlgorithm") == "GZIP":
                raw = gzip.decompress(raw)
            report = jsonio.loads(raw)
        except (ValueError, OSError) as exc:
            raise Unavailable(f"Amazon's processing report is unreadable: {str(exc)[:200]}") from exc
        problems = feeds.report_problems(report)
        if problems:
            raise Unavailable(f"Amazon's processing report breaks its schema: {'; '.join(problems)[:200]}")
        if not isinstance(report, dict):  # pragma: no cover - the schema requires an object
            raise Unavailable("Amazon's processing report is not an object")
        return report

    # -- create: product types, their schemas, publishing --------------------------------------------------------

    async def category_tree(self) -> Taxonomy:
        """The site's product types (searchDefinitionsProductTypes without keywords) as a flat list of leaves: their
        schemas come from Amazon when first asked for (docs/decisions/0372)."""
        answer = await self.api.call(
            "searchDefinitionsProductTypes",
            "GET",
            "/definitions/2020-09-01/productTypes",
            params={"marketplaceIds": [self.marketplace_id]},
        )
        return product_type_taxonomy([p for p in answer.get("productTypes") or [] if isinstance(p, dict)])

    async def category_schema(self, category_id: str) -> CategorySchema:
        """The product type's definition mapped onto the spec's attribute model (product_types.py), with Amazon's
        productTypeVersion. UnknownCategory for a name Amazon does not know."""
        mapped, version, display = await self._definition(category_id)
        spec = CategorySpec(
            category_id=category_id, parent_id=None, name=display, path=display, depth=1, is_leaf=True,
            department=display, product_type_code=category_id, attributes=mapped.attributes,
            off_api_requirements=mapped.off_api_requirements,
        )  # fmt: skip
        return CategorySchema(spec, version)

    async def _definition(self, product_type: str) -> tuple[MappedSchema, str, str]:
        """(mapped schema, Amazon's productTypeVersion, display name): the process's copy while younger than
        DEFINITION_TTL, else fetched (getDefinitionsProductType, then its schema document)."""
        key = (self.marketplace_id, product_type)
        cached = self.cache.definitions.get(key)
        if cached is not None and self.rt.clock.now() - cached[0] < DEFINITION_TTL:
            return cached[1], cached[2], cached[3]
        api = self.api
        try:
            definition = await api.call(
                "getDefinitionsProductType",
                "GET",
                f"/definitions/2020-09-01/productTypes/{quote(product_type, safe='')}",
                params={
                    "marketplaceIds": [self.marketplace_id],
                    "sellerId": self.seller_id,
                    "requirements": "LISTING",
                    "locale": "DEFAULT",
                },
            )
        except SpApiError as exc:
            if exc.status == 404:
                raise UnknownCategory(f"{product_type} is not an Amazon product type of {self.site.name}") from exc
            raise
        try:
            link = definition["schema"]["link"]
            version = str(definition["productTypeVersion"]["version"])
            display = str(definition.get("displayName") or product_type)
        except (KeyError, TypeError) as exc:
            raise Unavailable(f"Amazon answered an unexpected product type definition ({exc})") from exc
        raw = await api.transfer(str(link.get("verb") or "GET"), str(link.get("resource") or ""))
        try:
            schema = jsonio.loads(raw)
        except ValueError as exc:
            raise Unavailable("Amazon's product type schema is not JSON") from exc
        if not isinstance(schema, dict):
            raise Unavailable("Amazon's product type schema is not a JSON Schema object")
        mapped = map_schema(schema)
        self.cache.definitions[key] = (self.rt.clock.now(), mapped, version, display)
        return mapped, version, display

    async def _shapes(self, product_type: str) -> dict[str, AttributeShape]:
        mapped, _, _ = await self._definition(product_type)
        return mapped.shapes

    async def publish_listings(self, feed_id: str, drafts: list[ListingDraft]) -> str:
        answers: dict[str, list[Any]] = {}
        api = self.api
        for draft in drafts:
            sku = draft.external_sku or draft.sku
            if not draft.category_id:
                answers[draft.reference] = [sku, "INVALID", "", ["No Amazon product type (CategoryId) is set."]]
                continue
            body = listings.put_request(draft, await self._shapes(draft.category_id), self.site, self.marketplace_id)
            try:
                answer = await api.call(
                    "putListingsItem",
                    "PUT",
                    f"/listings/2021-08-01/items/{quote(self.seller_id, safe='')}/{quote(sku, safe='')}",
                    params={"marketplaceIds": [self.marketplace_id], "includedData": ["issues", "identifiers"]},
                    body=body,
                )
            except SpApiError as exc:
                answers[draft.reference] = [sku, "INVALID", "", [str(exc)]]
                continue
            answers[draft.reference] = listings.put_answer(answer, sku, self.marketplace_id)
        return Receipt("put", feed_id, [], answers).encode()

    async def send_order_updates(self, feed_id: str, lines: list[OrderUpdateLine]) -> str:
        raise MarketplaceError("Amazon's order writes are stored by the service, never sent (kind P2)")


def _publish_result(receipt: Receipt, site: Site) -> FeedResult:
    published: dict[str, tuple[str, str, str]] = {}
    errors: list[ItemError] = []
    for reference, (sku, status, asin, messages) in receipt.answers.items():
        if status == "INVALID":
            errors.append(ItemError(reference, "; ".join(messages) or "Amazon refused the listing."))
        else:
            published[reference] = (sku, sku, listings.listing_url(site, sku, asin or None))
    message = "" if published else "Amazon refused every listing."
    return FeedResult(receipt.feed_id, "Done", len(published), errors, message, published)


# Amazon's selling partner ids and one-time codes: letters and digits (a code may hold a few more characters).
_SELLER_ID = re.compile(r"^[A-Z0-9]{6,64}$")
_CODE = re.compile(r"^[A-Za-z0-9._~+/=-]{4,512}$")


def consent_url(rt: Runtime, site: Site, state: str, callback_url: str) -> str:
    """Where the app sends the merchant: the site's consent page with the application id, the state and the callback.
    ConsentRefused when the operator has not configured Amazon (MARKETSYNC_AMAZON_APP_ID)."""
    app_id = rt.settings.amazon_app_id
    if not app_id:
        raise ConsentRefused(
            "Platform", "Amazon is not configured on this service (MARKETSYNC_AMAZON_APP_ID is unset)."
        )
    page = rt.settings.amazon_consent_url or site.consent_url
    query = urlencode({"application_id": app_id, "state": state, "redirect_uri": callback_url})
    return f"{page}{'&' if '?' in page else '?'}{query}"


def _amazon_time(value: datetime) -> str:
    """ISO 8601 in UTC to the second (what Amazon's date parameters take)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def amazon_connector(rt: Runtime, connection: MarketplaceConnection) -> Connector:
    """The connector factory for kind Amazon (registered by marketplaces/registry.py through amazon.MARKETPLACE)."""
    return AmazonConnector(rt, connection)
