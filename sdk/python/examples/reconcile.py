#!/usr/bin/env python3
"""Keep a local copy of stock converged with the service: a first full walk, a change, a second walk that finds
only what changed (the hourly job of spec section 6; webhooks make it faster, see webhook_receiver.py).

    python sdk/python/examples/reconcile.py
"""

from __future__ import annotations

import asyncio

from marketsync_client import AsyncClient, InventoryMirror
from marketsync_client.reconcile import Difference


async def main() -> None:
    def show(difference: Difference) -> None:
        # Your ERP write goes here; only real differences arrive.
        print(f"  {difference.source}: {difference.sku} quantity -> {difference.quantity}")

    mirror = InventoryMirror(on_difference=lambda d: None)
    async with AsyncClient.from_env(scopes=["InventoryRead", "InventoryWrite"]) as api:
        first = await mirror.reconcile_async(api)
        print(f"first pass: {first.walked} products walked, now holding {len(mirror.items)}")

        sku, held = next(iter(mirror.items.items()))
        original = held.quantity or 0
        new_quantity = original + 1
        await api.push_price_quantity([{"Sku": sku, "Quantity": new_quantity}])
        print(f"pushed {sku} quantity {new_quantity}")

        mirror.on_difference = show
        second = await mirror.reconcile_async(api)
        print(f"second pass: {second.walked} products walked since the last pass, {len(second.differences)} changed")
        # Put the demo back as it was (an equal push would change nothing).
        await api.push_price_quantity([{"Sku": sku, "Quantity": original}])


if __name__ == "__main__":
    asyncio.run(main())
