"""`marketsync sandbox ...`: act on the sandbox marketplaces' side (their own state in the sandbox_* tables), what
happens there without us (orders arrive, the merchant edits a listing in the marketplace's tools, authorisation is
revoked). A running server or worker sees it at its next cycle. Registered by marketsync/cli.py."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

import typer

from marketsync.http.errors import ValidationFailed
from marketsync.kit.cli import JsonOption, emit
from marketsync.marketplaces import service
from marketsync.marketplaces.commands import AccountOption, MarketplaceOption
from marketsync.marketplaces.sandbox import state
from marketsync.marketplaces.sandbox.app import create_sandbox_app
from marketsync.models import MarketplaceConnection
from marketsync.models.sandbox import SandboxSeller
from marketsync.runtime import Runtime
from marketsync.startup import run_command, serve_http

group = typer.Typer(no_args_is_help=True, help="Drive the built-in sandbox marketplaces.")


async def _seller(
    rt: Runtime, session: Any, account: str, marketplace: str
) -> tuple[MarketplaceConnection, SandboxSeller]:
    connection = await service.get(session, account, marketplace)
    seller = await state.ensure_seller(session, connection.id, connection.platform, connection.country, rt.clock.now())
    return connection, seller


@group.command("orders-arrive")
def orders_arrive(
    account: str = AccountOption,
    marketplace: str = MarketplaceOption,
    count: int = typer.Option(1, "--count", min=1, max=1000, help="How many orders buyers place."),
    as_json: bool = JsonOption,
) -> None:
    """Buyers place orders at the marketplace (pulled at the next order pull for P1 and P2)."""

    async def body(rt: Runtime) -> dict[str, Any]:
        async with rt.db.transaction() as session:
            _, seller = await _seller(rt, session, account, marketplace)
            orders = await state.orders_arrive(session, seller, rt.clock.now(), count)
        return {"MarketplaceId": marketplace, "Created": len(orders), "OrderIds": [o.order_id for o in orders]}

    emit(run_command(body, as_json=as_json), as_json)


@group.command("revoke-auth")
def revoke_auth(account: str = AccountOption, marketplace: str = MarketplaceOption, as_json: bool = JsonOption) -> None:
    """The marketplace revokes the merchant's authorisation: every call now answers 401."""

    async def body(rt: Runtime) -> dict[str, Any]:
        async with rt.db.transaction() as session:
            _, seller = await _seller(rt, session, account, marketplace)
            seller.auth_revoked = True
        return {"MarketplaceId": marketplace, "AuthRevoked": True}

    emit(run_command(body, as_json=as_json), as_json)


@group.command("restore-auth")
def restore_auth(
    account: str = AccountOption, marketplace: str = MarketplaceOption, as_json: bool = JsonOption
) -> None:
    """The merchant reconnects the marketplace in the app; its health is checked again at once."""

    async def body(rt: Runtime) -> dict[str, Any]:
        async with rt.db.transaction() as session:
            connection, seller = await _seller(rt, session, account, marketplace)
            seller.auth_revoked = False
        event = None
        if connection.state == service.ACTIVE:
            event = await service.check_health(rt, connection)
        return {"MarketplaceId": marketplace, "AuthRevoked": False, "HealthEvent": event}

    emit(run_command(body, as_json=as_json), as_json)


def _price(value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        price = Decimal(value)
    except InvalidOperation:
        price = Decimal("NaN")
    if not price.is_finite() or price <= 0 or price != price.quantize(Decimal("0.0001")):
        raise ValidationFailed(errors={"Price": ["A positive dot-decimal number with at most 4 decimals."]})
    return price


@group.command("set")
def set_listing(
    account: str = AccountOption,
    marketplace: str = MarketplaceOption,
    sku: str = typer.Option(..., "--sku"),
    price: str | None = typer.Option(None, "--price"),
    quantity: int | None = typer.Option(None, "--quantity", min=0),
    as_json: bool = JsonOption,
) -> None:
    """A change made at the marketplace (listing created if absent). Where that marketplace owns the
    value (Data Flow), its next listing mirror brings it back into the catalogue."""

    async def body(rt: Runtime) -> dict[str, Any]:
        value = _price(price)
        async with rt.db.transaction() as session:
            _, seller = await _seller(rt, session, account, marketplace)
            listing = await state.put_listing(session, seller, rt.clock.now(), sku=sku, price=value, quantity=quantity)
        return {
            "MarketplaceId": marketplace,
            "Sku": listing.sku,
            "ListingId": listing.listing_id,
            "ExternalSku": listing.external_sku,
            "Price": None if listing.price is None else str(listing.price),
            "Quantity": listing.quantity,
        }

    emit(run_command(body, as_json=as_json), as_json)


@group.command("feed-fault")
def feed_fault(
    account: str = AccountOption,
    marketplace: str = MarketplaceOption,
    mode: str = typer.Option(..., "--mode", help="none, reject or item-errors."),
    as_json: bool = JsonOption,
) -> None:
    """How the marketplace processes feeds from now on: normally, rejecting them whole, or with item errors."""

    async def body(rt: Runtime) -> dict[str, Any]:
        async with rt.db.transaction() as session:
            _, seller = await _seller(rt, session, account, marketplace)
            try:
                state.set_feed_fault(seller, mode)
            except state.SandboxError as exc:
                raise ValidationFailed(errors={"Mode": [exc.message]}) from None
        return {"MarketplaceId": marketplace, "FeedFault": mode}

    emit(run_command(body, as_json=as_json), as_json)


@group.command("throttle")
def throttle(
    account: str = AccountOption,
    marketplace: str = MarketplaceOption,
    capacity: float = typer.Option(state.DEFAULT_BUCKET_CAPACITY, "--capacity", min=0),
    refill: float = typer.Option(state.DEFAULT_BUCKET_REFILL_PER_S, "--refill-per-s", min=0),
    as_json: bool = JsonOption,
) -> None:
    """The marketplace's request budget for this seller (a token bucket); empty answers 429 + Retry-After."""

    async def body(rt: Runtime) -> dict[str, Any]:
        async with rt.db.transaction() as session:
            _, seller = await _seller(rt, session, account, marketplace)
            state.set_throttle(seller, rt.clock.now(), capacity=capacity, refill_per_s=refill)
        return {"MarketplaceId": marketplace, "Capacity": capacity, "RefillPerSecond": refill}

    emit(run_command(body, as_json=as_json), as_json)


@group.command("serve")
def serve(
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8100, "--port"),
) -> None:
    """Serve the sandbox marketplaces as their own process; point MARKETSYNC_SANDBOX_URL at it."""
    serve_http(create_sandbox_app, host, port, lifespan="off", component="sandbox marketplaces")
