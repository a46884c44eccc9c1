"""The connector for the sandbox marketplaces, composed for P1..P4 by marketsync/marketplaces/registry.py.

It speaks only HTTP (httpx): in-process through `httpx.ASGITransport` when `settings.sandbox_url` is
unset, or to `marketsync sandbox serve` at that URL. One AsyncClient per Runtime (closed by Runtime.close).
Every call has one total deadline, `MARKETSYNC_MARKETPLACE_TIMEOUT_S`, from the name lookup to the answer's last
byte: a marketplace that answers a byte at a time is cut off by it like one that does not answer (Unavailable).

Never call a connector while holding a write transaction: the in-process sandbox writes its own state
to the same database, and on SQLite a second write transaction in the same task waits for the first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from typing import Any

import httpx

from marketsync.catalog.taxonomy import Taxonomy
from marketsync.kit import jsonio
from marketsync.kit.timestamps import in_utc
from marketsync.marketplaces.connector import (
    Authorisation,
    AuthorizationRevoked,
    AuthStatus,
    CategorySchema,
    Connector,
    ConsentStart,
    FeedResult,
    ItemError,
    ListingDraft,
    ListingPage,
    MarketplaceError,
    MarketplaceListing,
    MarketplaceOrder,
    MarketplaceOrderItem,
    OrderPage,
    OrderUpdateLine,
    PostalAddress,
    PriceStockLine,
    Throttled,
    Unavailable,
)
from marketsync.marketplaces.sandbox import taxonomies
from marketsync.marketplaces.transport import LookupTransport, lookups_of
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

CLIENT_KEY = "sandbox_http_client"
IN_PROCESS_BASE_URL = "http://sandbox.marketplaces.invalid"


def sandbox_client(rt: Runtime) -> httpx.AsyncClient:
    """The runtime's one HTTP client to the sandbox marketplaces."""
    client = rt.extras.get(CLIENT_KEY)
    if client is None:
        if rt.settings.sandbox_url:
            client = httpx.AsyncClient(
                # Host names looked up on the marketplaces' own threads, never the loop's default pool (0346).
                transport=LookupTransport(lookups_of(rt)),
                base_url=rt.settings.sandbox_url,
                timeout=rt.settings.marketplace_timeout_s,
            )
        else:
            from marketsync.marketplaces.sandbox.app import create_sandbox_app

            transport = httpx.ASGITransport(app=create_sandbox_app(rt))
            client = httpx.AsyncClient(
                transport=transport, base_url=IN_PROCESS_BASE_URL, timeout=rt.settings.marketplace_timeout_s
            )
        rt.extras[CLIENT_KEY] = client
    return client


def _decimal(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _timestamp(value: str) -> datetime:
    """In UTC: a time UTC cannot hold is a ValueError (an unusable answer), not an OverflowError when it is stored."""
    return in_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))


def parse_order(raw: dict[str, Any]) -> MarketplaceOrder:
    address = raw.get("ShippingAddress") or {}
    buyer = raw.get("Buyer") or {}
    return MarketplaceOrder(
        marketplace_order_id=raw["OrderId"],
        status=raw["Status"],
        purchase_date=_timestamp(raw["PurchaseDate"]),
        changed_at=_timestamp(raw["LastChanged"]),
        currency=raw["Currency"],
        items=[
            MarketplaceOrderItem(
                marketplace_item_id=item["ItemId"],
                sku=item["Sku"],
                title=item.get("Title") or "",
                quantity=int(item["Quantity"]),
                unit_price=Decimal(str(item["UnitPrice"])),
                status=item["Status"],
            )
            for item in raw.get("Items") or []
        ],
        buyer_name=buyer.get("Name") or "",
        buyer_email=buyer.get("Email"),
        buyer_phone=buyer.get("Phone"),
        shipping_address=PostalAddress(
            name=address.get("Name") or "",
            line1=address.get("Line1") or "",
            line2=address.get("Line2"),
            city=address.get("City") or "",
            region=address.get("Region"),
            postal_code=address.get("PostalCode") or "",
            country_code=address.get("CountryCode") or "",
            phone=address.get("Phone"),
        ),
        shipping_total=_decimal(raw.get("ShippingTotal")) or Decimal("0"),
        tax_total=_decimal(raw.get("TaxTotal")) or Decimal("0"),
    )


def parse_feed(raw: dict[str, Any]) -> FeedResult:
    return FeedResult(
        feed_id=raw["FeedId"],
        status=raw["Status"],
        processed=int(raw.get("Processed") or 0),
        errors=[ItemError(str(e.get("Reference") or ""), str(e.get("Message") or "")) for e in raw.get("Errors") or []],
        message=raw.get("Message") or "",
        published={ref: (v[0], v[1], v[2]) for ref, v in (raw.get("Published") or {}).items()},
    )


@contextmanager
def _reading(what: str) -> Iterator[None]:
    """A document of the wrong shape (a field missing or of another type) is an unusable answer: retried later."""
    try:
        yield
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise Unavailable(f"marketplace answered an unexpected {what} ({type(exc).__name__}: {exc})") from exc


class SandboxConnector:
    """Connector (connector.py) for one connection to a sandbox marketplace."""

    def __init__(self, client: httpx.AsyncClient, connection: MarketplaceConnection, deadline_s: float) -> None:
        self.client = client
        self.deadline_s = deadline_s
        self.platform = connection.platform
        self.headers = {
            "Authorization": f"Bearer {connection.id}",
            "X-Sandbox-Platform": connection.platform,
            "X-Sandbox-Country": connection.country,
        }

    async def _call(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        # httpx's timeout bounds each read on its own; this one bounds the whole call (lookup, connect, send, and
        # reading the whole answer), however the marketplace spreads its bytes.
        try:
            async with asyncio.timeout(self.deadline_s):
                response = await self.client.request(
                    method,
                    path,
                    params={k: v for k, v in (params or {}).items() if v is not None},
                    content=None if body is None else jsonio.dumps(body),
                    headers={**self.headers, "Content-Type": "application/json"} if body is not None else self.headers,
                )
        except TimeoutError as exc:
            raise Unavailable(f"marketplace did not answer within {self.deadline_s:g} s") from exc
        except httpx.TransportError as exc:
            raise Unavailable(f"marketplace unreachable: {type(exc).__name__}") from exc
        if response.status_code == 401:
            raise AuthorizationRevoked("the marketplace refused the seller's authorisation")
        if response.status_code == 429:
            try:
                retry_after = float(response.headers.get("retry-after", "1"))
            except ValueError:
                retry_after = 1.0
            raise Throttled(retry_after)
        if response.status_code >= 500:
            raise Unavailable(f"marketplace answered {response.status_code}")
        if response.status_code >= 400:
            raise MarketplaceError(f"marketplace refused the request ({response.status_code}): {response.text[:200]}")
        try:
            document = jsonio.loads(response.content)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            # A proxy's error page, a truncated body: the call is retried later, never taken for an answer.
            raise Unavailable(f"marketplace answered a malformed body ({len(response.content)} bytes)")
        return document

    async def begin_consent(self, state: str, callback_url: str) -> ConsentStart:
        """No consent page of its own: the app shows one standing for it (console/templates/consent.html)."""
        return ConsentStart(url=None)

    async def finish_consent(self, answer: Mapping[str, str]) -> Authorisation:
        """The marketplace records the grant (again, for a reauthorisation); it keeps it on its side."""
        await self._call("POST", "/v1/auth/grant", body={})
        return Authorisation(seller_id=None)

    async def category_tree(self) -> Taxonomy:
        """The tree the sandbox marketplace of this kind ships (every site of the kind has the same one)."""
        return await asyncio.to_thread(taxonomies.generate, self.platform)  # CPU: off the event loop

    async def category_schema(self, category_id: str) -> CategorySchema:
        tree = await self.category_tree()
        category = tree.get(category_id)
        if category is None or not category.is_leaf:
            raise MarketplaceError(f"{self.platform} has no leaf category {category_id!r}")
        return CategorySchema(category, version=category.content_hash()[:16])

    async def check_authorization(self) -> AuthStatus:
        try:
            await self._call("GET", "/v1/auth/check")
        except AuthorizationRevoked:
            return AuthStatus(False, "UnAuthorized", "Authorisation was revoked; reconnect the marketplace in the app.")
        except Unavailable as exc:
            return AuthStatus(False, "Unavailable", f"The marketplace is not answering ({exc}).")
        return AuthStatus(True, "Healthy", "Connected.")

    async def pull_orders(self, cursor: str | None, limit: int = 100) -> OrderPage:
        raw = await self._call("GET", "/v1/orders", params={"cursor": cursor, "limit": limit})
        with _reading("order page"):
            orders = [parse_order(o) for o in raw["Orders"]]
        # The last page still returns a cursor: it is kept for the next pull.
        return OrderPage(orders=orders, next_cursor=raw.get("NextCursor"))

    async def pull_listings(self, cursor: str | None, limit: int = 200) -> ListingPage:
        raw = await self._call("GET", "/v1/listings", params={"cursor": cursor, "limit": limit})
        with _reading("listing page"):
            return self._listing_page(raw)

    @staticmethod
    def _listing_page(raw: dict[str, Any]) -> ListingPage:
        listings = [
            MarketplaceListing(
                listing_id=item["ListingId"],
                sku=item["Sku"],
                external_sku=item["ExternalSku"],
                listing_url=item["ListingUrl"],
                price=_decimal(item.get("Price")),
                quantity=item.get("Quantity"),
                category_id=item.get("CategoryId"),
            )
            for item in raw["Listings"]
        ]
        return ListingPage(listings=listings, total=int(raw["Total"]), next_cursor=raw.get("NextCursor"))

    async def _submit(self, feed_id: str, kind: str, lines: list[dict[str, Any]]) -> str:
        raw = await self._call("POST", "/v1/feeds", body={"FeedId": feed_id, "Kind": kind, "Lines": lines})
        with _reading("feed receipt"):
            return str(raw["FeedId"])

    async def submit_price_stock(self, feed_id: str, lines: list[PriceStockLine]) -> str:
        return await self._submit(
            feed_id,
            "PriceStock",
            [
                {
                    "Reference": line.external_sku,
                    "ExternalSku": line.external_sku,
                    "Price": None if line.price is None else str(line.price),
                    "Quantity": line.quantity,
                }
                for line in lines
            ],
        )

    async def publish_listings(self, feed_id: str, drafts: list[ListingDraft]) -> str:
        return await self._submit(
            feed_id,
            "Listings",
            [
                {
                    "Reference": draft.reference,
                    "Sku": draft.sku,
                    "ExternalSku": draft.external_sku,
                    "ListingId": draft.listing_id,
                    "CategoryId": draft.category_id,
                    "Attributes": draft.attributes,
                    "Title": draft.title,
                    "Price": None if draft.price is None else str(draft.price),
                    "Quantity": draft.quantity,
                    "Images": draft.app_fields.get("Images") or [],
                    "BusinessPolicy": draft.app_fields.get("BusinessPolicy") or {},
                }
                for draft in drafts
            ],
        )

    async def send_order_updates(self, feed_id: str, lines: list[OrderUpdateLine]) -> str:
        return await self._submit(
            feed_id,
            "OrderUpdates",
            [
                {
                    "Reference": line.reference,
                    "MarketplaceOrderId": line.marketplace_order_id,
                    "MarketplaceItemId": line.marketplace_item_id,
                    "Action": line.action,
                    "Details": line.details,
                }
                for line in lines
            ],
        )

    async def feed_result(self, marketplace_feed_id: str) -> FeedResult:
        raw = await self._call("GET", f"/v1/feeds/{marketplace_feed_id}")
        with _reading("feed result"):
            return parse_feed(raw)


def sandbox_connector(rt: Runtime, connection: MarketplaceConnection) -> Connector:
    """The connector factory for every sandbox kind (composed in marketsync/marketplaces/registry.py)."""
    return SandboxConnector(sandbox_client(rt), connection, rt.settings.marketplace_timeout_s)
