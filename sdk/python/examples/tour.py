#!/usr/bin/env python3
"""A tour of the API through the SDK, read-mostly: marketplaces and their health, the catalogue, orders,
one price/stock push that changes nothing.

Against `make run`'s demo tenant:

    export MARKETSYNC_CLIENT_ID=... MARKETSYNC_CLIENT_SECRET=... MARKETSYNC_BASE_URL=http://127.0.0.1:8000
    python sdk/python/examples/tour.py
"""

from __future__ import annotations

from marketsync_client import Client


def main() -> None:
    with Client.from_env() as api:
        for marketplace in api.list_marketplaces():
            health = marketplace.HealthStatus or "not known yet"
            print(f"marketplace {marketplace.Platform} {marketplace.Country}: {health}")
            if marketplace.RequiresReauthorization:
                print("  reconnect it in the app: retrying never clears this")

        products = api.list_products(limit=5)
        print(f"catalogue: {products.TotalCount} products; the first {len(products.Products)}:")
        for product in products.Products:
            where = ", ".join(f"{listing.Platform} {listing.Country}" for listing in product.Listings) or "nowhere"
            print(f"  {product.Sku}: {product.Quantity} in stock, listed on {where}")

        walk = api.iter_orders(order_statuses=["Unshipped"])
        unshipped = list(walk)
        print(f"orders waiting to ship: {len(unshipped)} (read in {walk.state.pages} page(s))")
        for order in unshipped[:3]:
            print(f"  {order.ServiceOrderID} on {order.Platform}: {order.OrderTotal} {order.Currency}")

        if products.Products:
            # Pushing the stock a product already has changes nothing and fires no event.
            first = products.Products[0]
            pushed = api.push_price_quantity([{"Sku": first.Sku, "Quantity": first.Quantity}])
            print(f"push of {first.Sku} at its own quantity: {pushed.Results[0].Result}")
            for warning in pushed.Warnings:
                print(f"  warning: {warning}")
        print(f"budget left this window: {api.rate_limit.remaining if api.rate_limit else '?'} requests")


if __name__ == "__main__":
    main()
