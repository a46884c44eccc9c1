"""Amazon listings items as the service's listings: the mirror's page (searchListingsItems) and a publish's
putListingsItem (docs/decisions/0375-amazon-mirror-source.md, 0378-amazon-publish.md). Pure: no I/O.

A listing is the seller's SKU on a site: its `ListingId` and `ExternalSku` are that SKU (Amazon identifies a
seller's listing by it; an ASIN is the catalogue product many sellers share, and a new listing has none yet). Its
`ListingUrl` is the product page of its ASIN, or the seller's inventory page for it until it has one.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import quote

from marketsync.marketplaces.amazon.feeds import FULFILLMENT_CHANNEL
from marketsync.marketplaces.amazon.product_types import IMAGE_ATTRIBUTES, AttributeShape, amazon_attributes
from marketsync.marketplaces.amazon.regions import Site
from marketsync.marketplaces.connector import ListingDraft, MarketplaceListing

__all__ = ["MIRROR_DATA", "PAGE_SIZE", "listing_url", "mirrored", "put_answer", "put_request"]

MIRROR_DATA = ("summaries", "offers", "fulfillmentAvailability")
PAGE_SIZE = 20  # searchListingsItems' largest page


def listing_url(site: Site, sku: str, asin: str | None) -> str:
    if asin:
        return f"https://{site.domain}/dp/{quote(asin, safe='')}"
    return f"{site.seller_central}/myinventory/inventory?searchField=all&searchTerm={quote(sku, safe='')}"


def _amount(value: Any) -> Decimal | None:
    if not isinstance(value, dict):
        return None
    try:
        amount = Decimal(str(value.get("amount")))
    except InvalidOperation:
        return None
    return amount if amount.is_finite() else None


def mirrored(item: dict[str, Any], site: Site) -> MarketplaceListing:
    """One item of a searchListingsItems page: its summary, B2C offer price and own-fulfilment quantity on the site."""
    sku = str(item["sku"])
    summary: dict[str, Any] = next(
        (s for s in item.get("summaries") or [] if s.get("marketplaceId") == site.marketplace_id), {}
    )
    offer: dict[str, Any] = next(
        (
            o
            for o in item.get("offers") or []
            if o.get("marketplaceId") == site.marketplace_id and o.get("offerType", "B2C") == "B2C"
        ),
        {},
    )
    stock: dict[str, Any] = next(
        (
            f
            for f in item.get("fulfillmentAvailability") or []
            if f.get("fulfillmentChannelCode") == FULFILLMENT_CHANNEL
        ),
        {},
    )
    quantity = stock.get("quantity")
    return MarketplaceListing(
        listing_id=sku,
        sku=sku,
        external_sku=sku,
        listing_url=listing_url(site, sku, summary.get("asin")),
        price=_amount(offer.get("price")),
        quantity=quantity if isinstance(quantity, int) and not isinstance(quantity, bool) else None,
        category_id=summary.get("productType"),
    )


def put_request(
    draft: ListingDraft, shapes: dict[str, AttributeShape], site: Site, marketplace_id: str
) -> dict[str, Any]:
    """putListingsItem's body: the draft's attributes in Amazon's shape, its title as item_name when the attributes
    hold none, its price and stock as the offer, its images (filled in the app) as the image locators
    (docs/decisions/0378-amazon-publish.md)."""
    attributes: dict[str, Any] = amazon_attributes(shapes, draft.attributes, marketplace_id, site.language)
    if "item_name" not in attributes and draft.title and "item_name" in shapes:
        attributes.update(amazon_attributes(shapes, {"item_name": draft.title}, marketplace_id, site.language))
    if draft.price is not None and draft.price > 0:
        amount = draft.price
        value: int | float = int(amount) if amount == amount.to_integral_value() else float(amount)
        attributes["purchasable_offer"] = [
            {
                "marketplace_id": marketplace_id,
                "currency": site.currency,
                "our_price": [{"schedule": [{"value_with_tax": value}]}],
            }
        ]
    if draft.quantity is not None:
        attributes["fulfillment_availability"] = [
            {"fulfillment_channel_code": FULFILLMENT_CHANNEL, "quantity": draft.quantity}
        ]
    images = [str(url) for url in draft.app_fields.get("Images") or []]
    for name, url in zip(IMAGE_ATTRIBUTES, images, strict=False):
        attributes[name] = [{"media_location": url, "marketplace_id": marketplace_id}]
    # Without a price there is no offer yet: the product facts go now, the offer with the first price push (an offer
    # without a price is refused whole).
    requirements = "LISTING" if "purchasable_offer" in attributes else "LISTING_PRODUCT_ONLY"
    return {"productType": draft.category_id, "requirements": requirements, "attributes": attributes}


def put_answer(answer: dict[str, Any], sku: str, marketplace_id: str) -> list[Any]:
    """[sku, ACCEPTED|INVALID, ASIN or "", [error messages]] of a putListingsItem answer: any ERROR issue for the
    site refuses the listing, whatever the status says; warnings do not."""
    errors = [
        f"{issue.get('message') or 'Refused.'} (Amazon {issue.get('code')})"
        for issue in answer.get("issues") or []
        if issue.get("severity") == "ERROR"
        and (not issue.get("marketplaceIds") or marketplace_id in (issue.get("marketplaceIds") or []))
    ]
    status = "INVALID" if errors or answer.get("status") == "INVALID" else str(answer.get("status") or "ACCEPTED")
    asin = ""
    for identifiers in answer.get("identifiers") or []:
        if identifiers.get("marketplaceId") == marketplace_id and identifiers.get("asin"):
            asin = str(identifiers["asin"])
    if status == "INVALID" and not errors:
        errors = ["Amazon refused the listing without naming an issue."]
    return [sku, status, asin, errors]
