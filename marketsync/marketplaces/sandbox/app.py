"""The sandbox marketplaces as an HTTP (ASGI) application: what a real marketplace's seller API looks like.

A seller is identified by its bearer token (the marketplace connection id the merchant authorised) and
announces its kind and country on first contact. Every call is charged to the seller's token bucket
(429 with Retry-After when it is empty) and refused with 401 once authorisation is revoked. Feeds are
asynchronous: a submission returns a feed id whose result is polled.

Routes (all JSON):
  POST /v1/auth/grant                       the merchant allowed access (the consent page): creates the seller or
                                            restores a revoked authorisation; free of the request budget
  GET  /v1/auth/check
  GET  /v1/orders?cursor=N&limit=L          orders changed after the cursor, oldest change first
  GET  /v1/listings?cursor=ID&limit=L
  POST /v1/feeds   {"FeedId", "Kind": PriceStock|Listings|OrderUpdates, "Lines": [...]}
  GET  /v1/feeds/{feed_id}
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from marketsync.kinds import SANDBOX_KINDS
from marketsync.kit import jsonio
from marketsync.marketplaces.sandbox import state
from marketsync.models.sandbox import SandboxFeed, SandboxListing, SandboxOrder, SandboxSeller
from marketsync.runtime import Runtime

MAX_PAGE = 200
SellerHandler = Callable[["Call"], Awaitable[Any]]


class Call:
    """One authorised seller call: the request, its JSON body and the seller, inside one transaction."""

    def __init__(
        self, request: Request, payload: Any, session: AsyncSession, seller: SandboxSeller, now: datetime
    ) -> None:
        self.request, self.payload, self.session, self.seller, self.now = request, payload, session, seller, now


class Continued:
    """A handler's answer when more of its work is due: `step` runs in a new transaction and answers in turn (a long
    feed is applied in bounded transactions, state.FEED_CHUNK_LINES)."""

    def __init__(self, step: Callable[[AsyncSession, datetime], Awaitable[Any]]) -> None:
        self.step = step


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(jsonio.dumps(body), status_code=status, media_type="application/json", headers=headers)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return _json({"error": message}, status, headers)


def order_json(order: SandboxOrder) -> dict[str, Any]:
    return {
        "OrderId": order.order_id,
        "Status": order.status,
        "PurchaseDate": order.purchase_date,
        "LastChanged": order.changed_at,
        "Currency": order.currency,
        "Buyer": {"Name": order.buyer_name, "Email": order.buyer_email, "Phone": order.buyer_phone},
        "ShippingAddress": order.shipping_address,
        "ShippingTotal": str(order.shipping_total),
        "TaxTotal": str(order.tax_total),
        "Items": order.items,
    }


def listing_json(listing: SandboxListing) -> dict[str, Any]:
    return {
        "ListingId": listing.listing_id,
        "Sku": listing.sku,
        "ExternalSku": listing.external_sku,
        "ListingUrl": listing.listing_url,
        "Title": listing.title,
        "CategoryId": listing.category_id,
        "Price": None if listing.price is None else str(listing.price),
        "Quantity": listing.quantity,
    }


def feed_json(feed: SandboxFeed) -> dict[str, Any]:
    return {
        "FeedId": feed.feed_id,
        "ClientFeedId": feed.client_feed_id,
        "Kind": feed.kind,
        "Status": feed.status,
        "Processed": feed.processed,
        "Errors": feed.errors,
        "Published": feed.published,
        "Message": feed.message,
    }


def create_sandbox_app(rt: Runtime) -> Starlette:
    """The sandbox marketplaces over the runtime's database (in-process) or their own (`sandbox serve`)."""

    def seller_route(handler: SellerHandler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            latency = rt.settings.sandbox_latency_ms
            if latency > 0:
                await asyncio.sleep(latency / 1000)
            auth = request.headers.get("authorization", "")
            connection_id = auth.removeprefix("Bearer ").strip()
            platform = request.headers.get("x-sandbox-platform", "")
            country = request.headers.get("x-sandbox-country", "")
            if not connection_id or platform not in SANDBOX_KINDS or not country:
                return _error(401, "Missing seller token, platform or country.")
            payload = None
            if request.method == "POST":
                try:
                    payload = jsonio.loads(await request.body())
                except ValueError:
                    return _error(400, "The body is not JSON.")
            try:
                async with rt.db.transaction() as session:
                    now = rt.clock.now()
                    seller = await state.ensure_seller(session, connection_id, platform, country, now)
                    wait = state.spend_token(seller, now)
                    if wait is not None:
                        return _error(429, "Request budget exhausted.", {"Retry-After": str(int(wait))})
                    if seller.auth_revoked:
                        return _error(401, "The seller's authorisation was revoked.")
                    body = await handler(Call(request, payload, session, seller, now))
                while isinstance(body, Continued):  # the rest of the work, each step in a transaction of its own
                    async with rt.db.transaction() as session:
                        body = await body.step(session, rt.clock.now())
            except state.SandboxError as exc:
                return _error(exc.status, exc.message)
            return _json(body)

        return endpoint

    async def grant(request: Request) -> Response:
        connection_id = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        platform = request.headers.get("x-sandbox-platform", "")
        country = request.headers.get("x-sandbox-country", "")
        if not connection_id or platform not in SANDBOX_KINDS or not country:
            return _error(401, "Missing seller token, platform or country.")
        async with rt.db.transaction() as session:
            seller = await state.ensure_seller(session, connection_id, platform, country, rt.clock.now())
            seller.auth_revoked = False
        return _json({"Status": "Granted", "Seller": connection_id})

    async def auth_check(call: Call) -> Any:
        return {"Status": "Healthy", "Seller": call.seller.connection_id}

    async def orders(call: Call) -> Any:
        params = call.request.query_params
        try:
            after = int(params.get("cursor") or 0)
            limit = min(MAX_PAGE, max(1, int(params.get("limit") or 100)))
        except ValueError as exc:
            raise state.SandboxError(400, "cursor and limit are whole numbers.") from exc
        rows = await state.orders_page(call.session, call.seller.connection_id, after, limit)
        next_cursor = str(rows[-1].change_seq) if rows else str(after)
        return {"Orders": [order_json(o) for o in rows], "NextCursor": next_cursor, "HasMore": len(rows) == limit}

    async def listings(call: Call) -> Any:
        params = call.request.query_params
        try:
            limit = min(MAX_PAGE, max(1, int(params.get("limit") or 100)))
        except ValueError as exc:
            raise state.SandboxError(400, "limit is a whole number.") from exc
        rows, total, next_cursor = await state.listings_page(
            call.session, call.seller.connection_id, params.get("cursor"), limit
        )
        return {"Listings": [listing_json(item) for item in rows], "Total": total, "NextCursor": next_cursor}

    async def submit(call: Call) -> Any:
        payload = call.payload
        if not isinstance(payload, dict) or not isinstance(payload.get("Lines"), list) or not payload.get("FeedId"):
            raise state.SandboxError(400, "A feed needs FeedId, Kind and Lines.")
        lines = [line for line in payload["Lines"] if isinstance(line, dict)]
        if len(lines) != len(payload["Lines"]):
            raise state.SandboxError(400, "Every line is an object.")
        feed = await state.submit_feed(
            call.session, call.seller, call.now, str(payload["FeedId"]), str(payload.get("Kind")), lines
        )
        return feed_json(feed)

    async def poll(call: Call) -> Any:
        """The poll that finds a feed due applies all of it before answering, in bounded transactions."""
        feed_id, seller = call.request.path_params["feed_id"], call.seller
        connection_id, platform, country = seller.connection_id, seller.platform, seller.country

        def answer(feed: SandboxFeed) -> Any:
            return Continued(next_lines) if state.applying(feed) else feed_json(feed)

        async def next_lines(session: AsyncSession, now: datetime) -> Any:
            seller = await state.ensure_seller(session, connection_id, platform, country, now)
            return answer(await state.poll_feed(session, seller, now, feed_id))

        return answer(await state.poll_feed(call.session, seller, call.now, feed_id))

    return Starlette(
        routes=[
            Route("/v1/auth/grant", grant, methods=["POST"]),
            Route("/v1/auth/check", seller_route(auth_check), methods=["GET"]),
            Route("/v1/orders", seller_route(orders), methods=["GET"]),
            Route("/v1/listings", seller_route(listings), methods=["GET"]),
            Route("/v1/feeds", seller_route(submit), methods=["POST"]),
            Route("/v1/feeds/{feed_id}", seller_route(poll), methods=["GET"]),
        ]
    )
