"""Helpers of the Amazon tests: listing attributes in Amazon's shape (the simulator's listings and feeds tests); the
service pointed at the simulator (tests/support/amazon.py), Amazon connections authorised there, and the catalogue's
side of a listing held at Amazon (the connector's tests)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from marketsync.jobs.worker import Worker
from marketsync.kit.ids import new_id
from marketsync.marketplaces import credentials, service
from marketsync.marketplaces.amazon.simulator.state import (
    DEFAULT_APPLICATION_ID,
    DEFAULT_CLIENT_ID,
    DEFAULT_CLIENT_SECRET,
    Seller,
)
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime
from tests.support.amazon import AmazonServer


def amazon_settings(server: AmazonServer) -> dict[str, Any]:
    """The service's MARKETSYNC_AMAZON_* settings for the simulator (its default application)."""
    return {
        "amazon_app_id": DEFAULT_APPLICATION_ID,
        "amazon_lwa_client_id": DEFAULT_CLIENT_ID,
        "amazon_lwa_client_secret": DEFAULT_CLIENT_SECRET,
        "amazon_spapi_url": server.url,
        "amazon_lwa_url": server.lwa_url,
        "amazon_consent_url": server.consent_url,
    }


async def amazon_connection(
    rt: Runtime, server: AmazonServer, account_id: str, country: str = "UK", seller: Seller | None = None
) -> tuple[MarketplaceConnection, Seller]:
    """An Active Amazon connection of the account, authorised by a seller of the simulator (a new one by default), as
    the consent's callback leaves it: the seller's id and a refresh token of the simulator, sealed. The account's
    connection to that site is reauthorised when it exists."""
    seller = seller or server.sim.add_seller(countries=(country,))
    refresh_token = server.sim.authorise(seller.selling_partner_id)
    async with rt.db.transaction() as session:
        connection = await service.find_site(session, account_id, "Amazon", country)
        if connection is None:
            connection = await service.connect(rt, session, account_id, "Amazon", country)
        connection.seller_id = seller.selling_partner_id
        connection.credential = credentials.seal(rt, connection.id, refresh_token)
    await Worker(rt).drain()  # the first pull a new connection starts at once (0404), done before the test's own calls
    return connection, seller


async def listed_at_amazon(
    rt: Runtime,
    server: AmazonServer,
    connection: MarketplaceConnection,
    sku: str,
    price: Decimal | str = "10.00",
    quantity: int = 5,
    *,
    product_type: str = "LUGGAGE",
) -> Product:
    """A catalogue product with a Live listing on the Amazon connection, and that listing at Amazon."""
    assert connection.seller_id is not None
    server.sim.set_listing(
        connection.seller_id, connection.country, sku, price=Decimal(price), quantity=quantity,
        product_type=product_type,
    )  # fmt: skip
    now = rt.clock.now()
    async with rt.db.transaction() as session:
        product = Product(
            id=new_id(), account_id=connection.account_id, sku=sku, sku_lower=sku.lower(), price=Decimal(price),
            quantity=quantity, title=f"Product {sku}", modified_at=now, created_at=now,
        )  # fmt: skip
        session.add(product)
        await session.flush()
        session.add(
            Listing(
                id=new_id(),
                account_id=connection.account_id,
                product_id=product.id,
                marketplace_id=connection.id,
                listing_id=sku,
                external_sku=sku,
                listing_url=f"https://www.amazon.co.uk/dp/{sku}",
                category_id=product_type,
                attributes={},
                status="Live",
                marketplace_price=Decimal(price),
                marketplace_quantity=quantity,
                created_at=now,
                updated_at=now,
            )
        )
    return product


def spapi_calls(server: AmazonServer, since: int = 0) -> list[str]:
    """The operations the simulator answered (from the `since`th on)."""
    return [operation for operation, _method, _path in server.sim.requests[since:]]


# -- listing attributes in Amazon's shape (the simulator's listings and feeds tests) ---------------------------

UK = "A1F83G8C2ARO7P"


def text(value: str) -> list[dict[str, str]]:
    return [{"value": value, "language_tag": "en_GB", "marketplace_id": UK}]


def luggage(price: float = 49.99, quantity: int = 7) -> dict[str, Any]:
    return {
        "item_name": text("Cabin case"),
        "brand": text("Tortuga"),
        "product_description": text("A small case"),
        "bullet_point": text("Light"),
        "item_type_keyword": text("suitcases"),
        "color": text("teal"),
        "material": text("polycarbonate"),
        "country_of_origin": [{"value": "GB", "marketplace_id": UK}],
        "supplier_declared_dg_hz_regulation": [{"value": "not_applicable", "marketplace_id": UK}],
        "condition_type": [{"value": "new_new", "marketplace_id": UK}],
        "purchasable_offer": [
            {
                "currency": "GBP",
                "marketplace_id": UK,
                "audience": "ALL",
                "our_price": [{"schedule": [{"value_with_tax": price}]}],
            }
        ],
        "fulfillment_availability": [{"fulfillment_channel_code": "DEFAULT", "quantity": quantity}],
    }
