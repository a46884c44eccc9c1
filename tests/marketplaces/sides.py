"""The marketplace's side of a behaviour test, for a sandbox kind or for Amazon through its simulator, so one test runs
against both: `@pytest.mark.parametrize("side", ["P2", "Amazon"], indirect=True)` and the test asks `side` to connect,
list a product at the marketplace, revoke the authorisation, make orders arrive, refuse feeds, or say what the
marketplace holds. Where Amazon differs, the test says so (and a decision record why)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal

import pytest

from marketsync.kinds import home_site
from marketsync.marketplaces.amazon.client import SERVICES_KEY, AmazonServices, services_of
from marketsync.models import MarketplaceConnection, Product
from marketsync.runtime import Runtime
from tests.marketplaces import support
from tests.marketplaces.amazon.support import amazon_connection, amazon_settings, listed_at_amazon
from tests.support.amazon import AmazonServer
from tests.support.factories import make_connection


class SandboxSide:
    def __init__(self, rt: Runtime, platform: str) -> None:
        self.rt, self.platform, self.country = rt, platform, home_site(platform)

    @property
    def name(self) -> str:
        return f"{self.platform} {self.country}"

    async def connect(self, account_id: str) -> MarketplaceConnection:
        return await make_connection(self.rt, account_id, self.platform, self.country)

    async def listed_product(
        self, connection: MarketplaceConnection, sku: str, price: str = "10.00", quantity: int = 5
    ) -> Product:
        return await support.listed_product(self.rt, connection, sku, price=price, quantity=quantity)

    async def set_listing(
        self, connection: MarketplaceConnection, sku: str, price: str | None = None, quantity: int | None = None
    ) -> None:
        from marketsync.marketplaces.sandbox import state as sandbox_state

        async with self.rt.db.transaction() as session:
            seller = await sandbox_state.ensure_seller(
                session, connection.id, connection.platform, connection.country, self.rt.clock.now()
            )
            await sandbox_state.put_listing(
                session, seller, self.rt.clock.now(), sku=sku,
                price=None if price is None else Decimal(price), quantity=quantity,
            )  # fmt: skip

    async def held(self, connection: MarketplaceConnection, sku: str) -> tuple[Decimal | None, int | None]:
        listing = (await support.sandbox_listings(self.rt, connection))[sku]
        return listing.price, listing.quantity

    async def revoke(self, connection: MarketplaceConnection) -> None:
        await support.update_seller(self.rt, connection, auth_revoked=True)

    async def restore(self, connection: MarketplaceConnection) -> None:
        await support.update_seller(self.rt, connection, auth_revoked=False)

    async def reject_feeds(self, connection: MarketplaceConnection) -> None:
        await support.update_seller(self.rt, connection, feed_fault="reject")

    async def refuse_lines(self, connection: MarketplaceConnection, skus: list[str]) -> None:
        """Feed lines of these SKUs get a per-item error. The sandbox's item-errors mode refuses the odd lines (the
        first, the third...): the test names the SKUs it sends there."""
        await support.update_seller(self.rt, connection, feed_fault="item-errors")

    async def throttle_next_feed(self, connection: MarketplaceConnection) -> None:
        """The marketplace refuses the next feed for now (no request budget left: one every two seconds)."""
        await support.update_seller(
            self.rt, connection, bucket_capacity=1.0, bucket_refill_per_s=0.5, bucket_tokens=0.0,
            bucket_at=self.rt.clock.now(),
        )  # fmt: skip

    async def feeds_received(self, connection: MarketplaceConnection) -> int:
        return len(await support.sandbox_feeds(self.rt, connection))

    async def orders_arrive(self, connection: MarketplaceConnection, count: int) -> list[str]:
        from marketsync.marketplaces.sandbox import state as sandbox_state

        async with self.rt.db.transaction() as session:
            seller = await sandbox_state.ensure_seller(
                session, connection.id, connection.platform, connection.country, self.rt.clock.now()
            )
            arrived = await sandbox_state.orders_arrive(session, seller, self.rt.clock.now(), count)
        return [order.order_id for order in arrived]


class AmazonSide:
    platform = "Amazon"
    country = "UK"
    name = "Amazon UK"

    def __init__(self, rt: Runtime, server: AmazonServer) -> None:
        self.rt, self.server = rt, server
        for setting, value in amazon_settings(server).items():  # the runtime pointed at the simulator
            setattr(rt.settings, setting, value)

    async def connect(self, account_id: str) -> MarketplaceConnection:
        connection, _ = await amazon_connection(self.rt, self.server, account_id, self.country)
        return connection

    def _seller(self, connection: MarketplaceConnection) -> str:
        assert connection.seller_id is not None
        return connection.seller_id

    async def listed_product(
        self, connection: MarketplaceConnection, sku: str, price: str = "10.00", quantity: int = 5
    ) -> Product:
        return await listed_at_amazon(self.rt, self.server, connection, sku, price=price, quantity=quantity)

    async def set_listing(
        self, connection: MarketplaceConnection, sku: str, price: str | None = None, quantity: int | None = None
    ) -> None:
        self.server.sim.set_listing(self._seller(connection), self.country, sku, price=price, quantity=quantity)

    async def held(self, connection: MarketplaceConnection, sku: str) -> tuple[Decimal | None, int | None]:
        listing = self.server.sim.listing(self._seller(connection), self.country, sku)
        assert listing is not None
        return listing.price, listing.quantity

    async def revoke(self, connection: MarketplaceConnection) -> None:
        self.server.sim.revoke(self._seller(connection))
        services_of(self.rt).tokens.forget(self._seller(connection))  # as once the cached access token expires

    async def restore(self, connection: MarketplaceConnection) -> None:
        self.server.sim.restore(self._seller(connection))

    async def reject_feeds(self, connection: MarketplaceConnection) -> None:
        self.server.sim.set_feed_fault("reject", seller_id=self._seller(connection))

    async def refuse_lines(self, connection: MarketplaceConnection, skus: list[str]) -> None:
        self.server.sim.set_feed_fault("item-errors", seller_id=self._seller(connection), skus=skus)

    async def throttle_next_feed(self, connection: MarketplaceConnection) -> None:
        self.server.sim.fail_next("createFeedDocument", status=429)  # with the operation's x-amzn-RateLimit-Limit

    async def feeds_received(self, connection: MarketplaceConnection) -> int:
        seller = self._seller(connection)
        return sum(1 for feed in self.server.sim.feeds.values() if feed.seller_id == seller)

    async def orders_arrive(self, connection: MarketplaceConnection, count: int) -> list[str]:
        arrived = self.server.sim.orders_arrive(self._seller(connection), self.country, count)
        if hasattr(self.rt.clock, "advance"):  # Amazon answers changes at least two minutes old
            self.rt.clock.advance(minutes=5)
        return [order.amazon_order_id for order in arrived]


Side = SandboxSide | AmazonSide


@pytest.fixture
def side(request: pytest.FixtureRequest, rt: Runtime) -> Side:
    """The marketplace side named by the test's indirect parameter (a sandbox kind, or "Amazon")."""
    platform = str(request.param)
    if platform != "Amazon":
        return SandboxSide(rt, platform)
    amazon = AmazonSide(rt, request.getfixturevalue("amazon_simulator"))
    request.getfixturevalue("amazon_client_closed_first")
    return amazon


@pytest.fixture
async def amazon_client_closed_first(rt: Runtime, amazon_simulator: AmazonServer) -> AsyncIterator[None]:
    """The simulator is set up after the runtime for a side, so it stops before the runtime closes: this fixture, set
    up after the simulator and so torn down before it, closes the runtime's SP-API client first. A client left
    connected to a server that went away is what the simulator's fixture fails a test for (fail_on_open_sockets)."""
    yield
    services = rt.extras.pop(SERVICES_KEY, None)
    if isinstance(services, AmazonServices):
        await services.aclose()
