"""How the simulator writes what it holds: Amazon's timestamps and a listings item as getListingsItem and
searchListingsItems answer it (shared by the operations and the feeds' processing)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marketsync.marketplaces.amazon.simulator.state import Listing, Market


def _z(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def item_json(listing: Listing, market: Market, included: list[str]) -> dict[str, Any]:
    site = market.site
    item: dict[str, Any] = {"sku": listing.sku}
    if "summaries" in included:
        summary: dict[str, Any] = {
            "marketplaceId": site.marketplace_id, "asin": listing.asin, "productType": listing.product_type,
            "conditionType": "new_new", "status": listing.statuses, "createdDate": _z(listing.created),
            "lastUpdatedDate": _z(listing.updated),
        }  # fmt: skip
        if listing.item_name:
            summary["itemName"] = listing.item_name
        item["summaries"] = [summary]
    if "attributes" in included:
        item["attributes"] = listing.attributes
    if "issues" in included:
        item["issues"] = listing.issues
    if "offers" in included:
        price = listing.price
        item["offers"] = (
            [{"marketplaceId": site.marketplace_id, "offerType": "B2C",
              "price": {"currencyCode": site.currency, "amount": f"{price:.2f}"}}]
            if price is not None else []
        )  # fmt: skip
    if "fulfillmentAvailability" in included:
        quantity = listing.quantity
        item["fulfillmentAvailability"] = (
            [{"fulfillmentChannelCode": "DEFAULT", "quantity": quantity}] if quantity is not None else []
        )
    if "productTypes" in included:
        item["productTypes"] = [{"marketplaceId": site.marketplace_id, "productType": listing.product_type}]
    return item
