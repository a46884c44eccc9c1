"""This domain's part of `marketsync demo`: an inventory of 3,000 SKUs, many listed on the sandbox
marketplaces (P1 ~70%, P2 ~40%, P3 and P4 ~20%). Deterministic and idempotent: a rerun inserts
nothing new and never touches values changed since."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from marketsync.db import insert_for
from marketsync.inventory import rules
from marketsync.kinds import ListingStatus
from marketsync.kit.ids import new_id
from marketsync.models import Listing, MarketplaceConnection, Product
from marketsync.runtime import Runtime

DEMO_PRODUCTS = 3_000
LISTING_SHARE = {"P1": 0.70, "P2": 0.40, "P3": 0.20, "P4": 0.20}
_SEED = 20_260_101

_LINES = (
    ("TSH", "T-Shirt", ("Organic Cotton", "Slim Fit", "Heavyweight", "Striped"), "12.99", "29.99"),
    ("HOD", "Hoodie", ("Fleece", "Zip-Up", "Oversized", "Recycled"), "29.00", "64.00"),
    ("MUG", "Mug", ("Stoneware", "Enamel Camp", "Travel", "Espresso"), "6.50", "18.00"),
    ("LMP", "Desk Lamp", ("LED", "Adjustable Arm", "Brass", "Clip-On"), "19.99", "89.00"),
    ("BKP", "Backpack", ("Roll-Top", "Laptop", "Canvas", "Hiking 30L"), "34.95", "119.00"),
    ("CHR", "Phone Charger", ("USB-C 20W", "Wireless", "Dual Port", "Car"), "9.99", "39.99"),
    ("SHO", "Trainers", ("Running", "Canvas", "Trail", "Leather"), "39.00", "149.00"),
    ("TEA", "Loose Leaf Tea", ("Earl Grey", "Sencha", "Rooibos", "Chai"), "4.25", "15.50"),
    ("PLN", "Plant Pot", ("Terracotta", "Self-Watering", "Hanging", "Ceramic"), "7.99", "45.00"),
    ("BTL", "Water Bottle", ("Insulated 750ml", "Glass", "Collapsible", "Kids"), "8.99", "34.00"),
)
_COLOURS = ("Black", "White", "Navy", "Olive", "Sand", "Red", "Grey", "Teal")
_SIZES = ("XS", "S", "M", "L", "XL")


def demo_products() -> list[dict[str, Any]]:
    """The demo products as (sku, title, price, quantity), the same on every run."""
    rng = random.Random(_SEED)
    products = []
    for index in range(DEMO_PRODUCTS):
        code, noun, styles, low, high = _LINES[index % len(_LINES)]
        style = rng.choice(styles)
        colour = rng.choice(_COLOURS)
        sized = code in ("TSH", "HOD", "SHO")
        size = rng.choice(_SIZES) if sized else None
        sku = f"{code}-{colour[:3].upper()}-{size + '-' if size else ''}{index:05d}"
        title = f"{style} {noun}, {colour}" + (f", {size}" if size else "")
        cents = rng.randint(int(Decimal(low) * 100), int(Decimal(high) * 100))
        price = (Decimal(cents) / 100).quantize(Decimal("0.01"))
        # About one in twelve is out of stock; the rest a realistic spread.
        quantity = 0 if rng.random() < 0.08 else int(rng.lognormvariate(3, 1)) + 1
        products.append({"sku": sku, "title": title, "price": price, "quantity": quantity})
    return products


async def seed(rt: Runtime, account_id: str, connections: Sequence[MarketplaceConnection]) -> None:
    now = rt.clock.now()
    base = now - timedelta(days=3)
    products = demo_products()
    times = rules.modification_times(base, len(products))
    rng = random.Random(_SEED + 1)
    async with rt.db.transaction() as session:
        rows = [
            {
                "id": new_id(),
                "account_id": account_id,
                "sku": product["sku"],
                "sku_lower": rules.sku_key(product["sku"]),
                "price": product["price"],
                "quantity": product["quantity"],
                "title": product["title"],
                "modified_at": modified_at,
                "created_at": base,
            }
            for product, modified_at in zip(products, times, strict=True)
        ]
        await session.execute(
            # The SKU's unique index (migration 0022): an exact SKU already there is kept as it is.
            insert_for(session, Product.__table__).on_conflict_do_nothing(
                index_elements=["account_id", "sku_lower", "sku"]
            ),
            rows,
        )
        skus = [product["sku"] for product in products]
        result = await session.execute(
            select(Product.id, Product.sku, Product.price, Product.quantity).where(
                Product.account_id == account_id, Product.sku.in_(skus)
            )
        )
        stored = {row.sku: row for row in result.all()}
        listings = []
        for product in products:
            row = stored.get(product["sku"])
            for connection in connections:
                # Drawn for every pair, so the same pairs are chosen on every run.
                chosen = rng.random() < LISTING_SHARE.get(connection.platform, 0.2)
                if row is None or not chosen:
                    continue
                listing_id = f"{connection.platform}{connection.country}{rng.randrange(10**9, 10**10)}"
                listings.append(
                    {
                        "id": new_id(),
                        "account_id": account_id,
                        "product_id": row.id,
                        "marketplace_id": connection.id,
                        "listing_id": listing_id,
                        "external_sku": row.sku,
                        "listing_url": f"https://{connection.platform.lower()}-{connection.country.lower()}"
                        f".sandbox.example/item/{listing_id}",
                        "category_id": None,
                        "attributes": {},
                        "status": ListingStatus.LIVE,
                        "marketplace_price": row.price,
                        "marketplace_quantity": row.quantity,
                        "created_at": base,
                        "updated_at": base,
                    }
                )
        if listings:
            await session.execute(
                insert_for(session, Listing.__table__).on_conflict_do_nothing(
                    index_elements=["product_id", "marketplace_id"]
                ),
                listings,
            )
