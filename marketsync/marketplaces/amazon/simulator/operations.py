"""What each simulated SP-API operation answers, given an authorised call. Shapes follow the vendored models; the
app validates every answer against them before it is sent. Where the models are silent, docs/decisions/0360."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from marketsync.kit.clock import iso
from marketsync.marketplaces.amazon.contracts.validation import Operation
from marketsync.marketplaces.amazon.regions import SITES, site_for_marketplace
from marketsync.marketplaces.amazon.simulator import feeds
from marketsync.marketplaces.amazon.simulator import product_types as pt
from marketsync.marketplaces.amazon.simulator.state import (
    RDT_TTL_S,
    RESTRICTED_DATA_ELEMENTS,
    RESTRICTED_RESOURCES,
    UPLOAD_URL_TTL_S,
    AmazonSimulator,
    FeedDocument,
    Listing,
    Market,
    Order,
    RestrictedDataToken,
    Seller,
    SimulatorError,
    invalid_input,
)
from marketsync.marketplaces.amazon.simulator.views import _z, item_json

ORDERS_PAGE_MAX = 100
BEFORE_LAG = timedelta(minutes=2)  # CreatedBefore/LastUpdatedBefore: no later than two minutes before the request
LISTINGS_PAGE_DEFAULT = 10
PRODUCT_TYPE_VERSION = "SIM-2026-01"


@dataclass
class Call:
    sim: AmazonSimulator
    operation: Operation
    path_parameters: dict[str, str]
    query: dict[str, list[str]]
    body: Any
    seller: Seller
    data_elements: frozenset[str] = field(default_factory=frozenset)  # PII the call's RDT unlocks

    def one(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def many(self, name: str) -> list[str]:
        return [v for raw in self.query.get(name, []) for v in raw.split(",") if v]

    @property
    def now(self) -> datetime:
        return self.sim.clock.now()

    def markets(self, name: str = "marketplaceIds") -> list[Market]:
        """The seller's marketplaces named by the call; one it does not take part in is refused."""
        found = []
        for marketplace_id in self.many(name):
            market = self.seller.markets.get(marketplace_id)
            if market is None or not market.participating:
                raise invalid_input(f"Invalid {name}: {marketplace_id}", "The seller does not participate there.")
            found.append(market)
        return found


def _money(amount: Decimal, currency: str) -> dict[str, str]:
    return {"CurrencyCode": currency, "Amount": f"{amount:.2f}"}


def _date(text: str | None, name: str) -> datetime | None:
    if text is None:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise invalid_input(f"Invalid {name}: {text!r}", "Dates are ISO 8601.") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _page_token(sim: AmazonSimulator, state: dict[str, Any]) -> str:
    token = base64.urlsafe_b64encode(json.dumps(state, sort_keys=True).encode()).decode().rstrip("=")
    sim.page_tokens[token] = state
    return token


def _page_state(sim: AmazonSimulator, token: str, name: str) -> dict[str, Any]:
    state = sim.page_tokens.get(token)
    if state is None:
        raise invalid_input(f"Invalid {name}", "The token is not one this API issued.")
    return state


# -- Sellers --------------------------------------------------------------------------------------------------------


def get_marketplace_participations(call: Call) -> tuple[int, Any]:
    payload = [
        {
            "marketplace": {
                "id": m.site.marketplace_id,
                "name": m.site.name,
                "countryCode": m.site.country.replace("UK", "GB"),
                "defaultCurrencyCode": m.site.currency,
                "defaultLanguageCode": m.site.language,
                "domainName": m.site.domain,
            },
            "participation": {"isParticipating": m.participating, "hasSuspendedListings": m.suspended_listings},
            "storeName": call.seller.store_name,
        }
        for m in call.seller.markets.values()
    ]
    return 200, {"payload": payload}


# -- Orders v0 ------------------------------------------------------------------------------------------------------


def _order_json(order: Order, elements: frozenset[str]) -> dict[str, Any]:
    total = sum((i.unit_price * i.quantity for i in order.items), Decimal("0")) + order.shipping_price
    shipped = sum(i.quantity_shipped for i in order.items)
    site = site_for_marketplace(order.marketplace_id)
    data: dict[str, Any] = {
        "AmazonOrderId": order.amazon_order_id, "PurchaseDate": _z(order.purchase_date),
        "LastUpdateDate": _z(order.last_update), "OrderStatus": order.status,
        "FulfillmentChannel": order.fulfillment_channel, "SalesChannel": site.name, "ShipServiceLevel": "Std Dom",
        "NumberOfItemsShipped": shipped, "NumberOfItemsUnshipped": sum(i.quantity for i in order.items) - shipped,
        "PaymentMethod": "Other", "PaymentMethodDetails": ["Standard"], "MarketplaceId": order.marketplace_id,
        "ShipmentServiceLevelCategory": "Standard", "OrderType": "StandardOrder",
        "EarliestShipDate": _z(order.purchase_date + timedelta(days=1)),
        "LatestShipDate": _z(order.purchase_date + timedelta(days=3)),
        "IsBusinessOrder": False, "IsPrime": False, "IsPremiumOrder": False, "IsGlobalExpressEnabled": False,
        "IsReplacementOrder": False, "IsSoldByAB": False, "IsISPU": False, "IsAccessPointOrder": False,
        "HasRegulatedItems": False,
    }  # fmt: skip
    if order.status not in ("Pending", "Canceled"):
        data["OrderTotal"] = _money(total, order.currency)  # Amazon omits the total of a pending order
    data["ShippingAddress"] = _address(order, "shippingAddress" in elements)
    if "buyerInfo" in elements:
        data["BuyerInfo"] = {"BuyerEmail": order.buyer_email, "BuyerName": order.buyer_name}
    return data


def _address(order: Order, with_pii: bool) -> dict[str, str]:
    if with_pii:
        return dict(order.address)
    # Without an RDT for shippingAddress, only what is not personal data (docs/decisions/0360).
    return {k: v for k, v in order.address.items() if k in ("City", "StateOrRegion", "PostalCode", "CountryCode")}


def get_orders(call: Call) -> tuple[int, Any]:
    markets = call.markets("MarketplaceIds")
    next_token = call.one("NextToken")
    state = _page_state(call.sim, next_token, "NextToken") if next_token else _orders_query(call, markets)
    after, before = _date(state["after"], "after"), _date(state["before"], "before")
    wanted = []
    for marketplace_id in state["markets"]:
        for order in call.seller.markets[marketplace_id].orders.values():
            moment = order.last_update if state["by_update"] else order.purchase_date
            if _order_wanted(state, order, moment, after, before):
                wanted.append((moment, order.amazon_order_id, order))
    wanted.sort(key=lambda entry: (entry[0], entry[1]))
    offset, size = state["offset"], state["size"]
    page = wanted[offset : offset + size]
    payload: dict[str, Any] = {"Orders": [_order_json(o, call.data_elements) for _, _, o in page]}
    if offset + size < len(wanted):
        payload["NextToken"] = _page_token(call.sim, {**state, "offset": offset + size})
    if state["before"]:
        payload["LastUpdatedBefore" if state["by_update"] else "CreatedBefore"] = _z(before or call.now)
    return 200, {"payload": payload}


def _orders_query(call: Call, markets: list[Market]) -> dict[str, Any]:
    """A first getOrders page's query, checked as Amazon checks it, as the state its NextToken carries on."""
    created_after, updated_after = call.one("CreatedAfter"), call.one("LastUpdatedAfter")
    if (created_after is None) == (updated_after is None):
        raise invalid_input("Exactly one of CreatedAfter and LastUpdatedAfter is required.")
    size_text = call.one("MaxResultsPerPage") or str(ORDERS_PAGE_MAX)
    if not size_text.isdigit() or not 1 <= int(size_text) <= ORDERS_PAGE_MAX:
        raise invalid_input("Invalid MaxResultsPerPage", "Value must be 1 - 100.")
    by_update = updated_after is not None
    after_name = "LastUpdatedAfter" if by_update else "CreatedAfter"
    after = _date(updated_after if by_update else created_after, after_name)
    before_name = "LastUpdatedBefore" if by_update else "CreatedBefore"
    before = _date(call.one(before_name), before_name)
    if before is not None and before > call.now - BEFORE_LAG:
        raise invalid_input(f"Invalid {before_name}", "It must be no later than two minutes before the request.")
    if after is not None and after > call.now:
        raise invalid_input(f"Invalid {after_name}", "In the future.")
    return {
        "by_update": by_update, "after": iso(after) if after else None, "before": iso(before) if before else None,
        "statuses": call.many("OrderStatuses"), "ids": call.many("AmazonOrderIds"), "offset": 0,
        "size": int(size_text), "markets": [m.site.marketplace_id for m in markets],
    }  # fmt: skip


def _order_wanted(
    state: dict[str, Any], order: Order, moment: datetime, after: datetime | None, before: datetime | None
) -> bool:
    """Whether an order is in a getOrders query's answer: its moment (last update or purchase) within the window,
    its status and id among those asked for, if any."""
    if (after is not None and moment < after) or (before is not None and moment > before):
        return False
    if state["statuses"] and order.status not in state["statuses"]:
        return False
    return not (state["ids"] and order.amazon_order_id not in state["ids"])


def _order(call: Call) -> Order:
    try:
        return call.sim.find_order(call.path_parameters["orderId"], call.seller.selling_partner_id)
    except KeyError:
        raise SimulatorError(404, "NotFound", "Order not found", call.path_parameters["orderId"]) from None


def get_order(call: Call) -> tuple[int, Any]:
    return 200, {"payload": _order_json(_order(call), call.data_elements)}


def get_order_items(call: Call) -> tuple[int, Any]:
    order = _order(call)
    items = []
    for item in order.items:
        line = item.unit_price * item.quantity
        entry: dict[str, Any] = {
            "ASIN": item.asin, "SellerSKU": item.sku, "OrderItemId": item.order_item_id, "Title": item.title,
            "QuantityOrdered": item.quantity, "QuantityShipped": item.quantity_shipped,
            "ItemPrice": _money(line, order.currency),
            "ItemTax": _money((line * item.tax_rate / (1 + item.tax_rate)).quantize(Decimal("0.01")), order.currency),
            "ShippingPrice": _money(order.shipping_price if item is order.items[0] else Decimal(0), order.currency),
            "PromotionDiscount": _money(Decimal(0), order.currency), "IsGift": "false", "ConditionId": "New",
            "ConditionSubtypeId": "New", "SerialNumberRequired": False, "IsTransparency": False,
        }  # fmt: skip
        if "buyerInfo" in call.data_elements:
            entry["BuyerInfo"] = {}
        items.append(entry)
    return 200, {"payload": {"AmazonOrderId": order.amazon_order_id, "OrderItems": items}}


def get_order_address(call: Call) -> tuple[int, Any]:
    order = _order(call)
    # The operation is restricted: with an RDT for it the address is whole, with an LWA token only its non-PII part.
    return 200, {"payload": {"AmazonOrderId": order.amazon_order_id,
                             "ShippingAddress": _address(order, "*" in call.data_elements)}}  # fmt: skip


def get_order_buyer_info(call: Call) -> tuple[int, Any]:
    order = _order(call)
    payload: dict[str, Any] = {"AmazonOrderId": order.amazon_order_id}
    if "*" in call.data_elements:
        payload.update({"BuyerEmail": order.buyer_email, "BuyerName": order.buyer_name})
    return 200, {"payload": payload}


# -- Tokens ---------------------------------------------------------------------------------------------------------


def _restricted_template(path: str) -> str | None:
    parts = path.split("/")
    for template in RESTRICTED_RESOURCES:
        shape = template.split("/")
        if len(shape) == len(parts) and all(s == p or s.startswith("{") for s, p in zip(shape, parts, strict=True)):
            return template
    return None


def create_restricted_data_token(call: Call) -> tuple[int, Any]:
    resources = call.body["restrictedResources"]
    for resource in resources:
        template = _restricted_template(resource["path"])
        if template is None or resource["method"] != "GET":
            raise invalid_input(f"{resource['method']} {resource['path']} is not a restricted resource")
        elements = resource.get("dataElements") or []
        if elements and not RESTRICTED_RESOURCES[template]:
            raise invalid_input(f"dataElements are not accepted for {resource['path']}")
        unknown = sorted(set(elements) - set(RESTRICTED_DATA_ELEMENTS))
        if unknown:
            raise invalid_input(f"Unknown dataElements: {', '.join(unknown)}")
    token = "Atz.sprdt|" + secrets.token_urlsafe(48)
    call.sim.restricted_tokens[token] = RestrictedDataToken(
        call.seller.selling_partner_id, list(resources), call.now + timedelta(seconds=RDT_TTL_S)
    )
    return 200, {"restrictedDataToken": token, "expiresIn": RDT_TTL_S}


def rdt_elements(token: RestrictedDataToken, method: str, path: str) -> frozenset[str] | None:
    """What the RDT unlocks for this request: its resource's dataElements ("*" for a restricted-as-a-whole
    operation); None when no resource of the token covers the request."""
    for resource in token.resources:
        if resource["method"] != method:
            continue
        shape, parts = resource["path"].split("/"), path.split("/")
        if len(shape) == len(parts) and all(s == p or s.startswith("{") for s, p in zip(shape, parts, strict=True)):
            template = _restricted_template(resource["path"]) or ""
            return frozenset(resource.get("dataElements") or []) | (
                frozenset() if RESTRICTED_RESOURCES.get(template, True) else frozenset("*")
            )
    return None


# -- Feeds ----------------------------------------------------------------------------------------------------------


def create_feed_document(call: Call) -> tuple[int, Any]:
    document = FeedDocument(
        call.sim.new_document_id(), call.seller.selling_partner_id, call.body["contentType"],
        call.now + timedelta(seconds=UPLOAD_URL_TTL_S),
    )  # fmt: skip
    call.sim.documents[document.document_id] = document
    return 201, {"feedDocumentId": document.document_id, "url": feeds.document_url(call.sim, document)}


def create_feed(call: Call) -> tuple[int, Any]:
    body = call.body
    if body["feedType"] != "JSON_LISTINGS_FEED":
        raise invalid_input(f"The simulator processes JSON_LISTINGS_FEED only, not {body['feedType']}")
    document = call.sim.documents.get(body["inputFeedDocumentId"])
    if document is None or document.seller_id != call.seller.selling_partner_id or document.is_result:
        raise invalid_input("Invalid inputFeedDocumentId", body["inputFeedDocumentId"])
    if document.content is None:
        raise invalid_input("The feed document has not been uploaded", body["inputFeedDocumentId"])
    for marketplace_id in body["marketplaceIds"]:
        market = call.seller.markets.get(marketplace_id)
        if market is None or not market.participating:
            raise invalid_input(f"Invalid marketplaceIds: {marketplace_id}")
    feed = feeds.create(call.sim, call.seller, body["feedType"], list(body["marketplaceIds"]), document)
    return 202, {"feedId": feed.feed_id}


def _feed(call: Call) -> Any:
    feed = call.sim.feeds.get(call.path_parameters["feedId"])
    if feed is None or feed.seller_id != call.seller.selling_partner_id:
        raise SimulatorError(404, "NotFound", "Feed not found", call.path_parameters["feedId"])
    return feed


def get_feed(call: Call) -> tuple[int, Any]:
    feed = _feed(call)
    feed.polls += 1
    feeds.advance(call.sim, feed)
    return 200, feeds.feed_json(feed)


def cancel_feed(call: Call) -> tuple[int, Any]:
    feed = _feed(call)
    feeds.advance(call.sim, feed)
    if feed.status != "IN_QUEUE":
        raise invalid_input(f"The feed is {feed.status}; only a feed IN_QUEUE can be cancelled")
    feed.status, feed.ended = "CANCELLED", call.now
    return 200, None


def get_feed_document(call: Call) -> tuple[int, Any]:
    document = call.sim.documents.get(call.path_parameters["feedDocumentId"])
    if document is None or document.seller_id != call.seller.selling_partner_id:
        raise SimulatorError(404, "NotFound", "Feed document not found", call.path_parameters["feedDocumentId"])
    document.url_expires_at = call.now + timedelta(seconds=UPLOAD_URL_TTL_S)
    return 200, {"feedDocumentId": document.document_id, "url": feeds.document_url(call.sim, document)}


# -- Listings Items -------------------------------------------------------------------------------------------------


def _own_seller(call: Call) -> None:
    if call.path_parameters["sellerId"] != call.seller.selling_partner_id:
        raise SimulatorError(403, "Unauthorized", "Access to requested resource is denied.", "sellerId is not yours.")


def _issue(kind: str, attribute: str, message: str, marketplace_id: str) -> dict[str, Any]:
    return {
        "code": feeds.MISSING_CODE if kind == "missing" else feeds.INVALID_CODE, "message": message,
        "severity": "ERROR", "attributeNames": [attribute.split(".")[0]],
        "categories": ["MISSING_ATTRIBUTE" if kind == "missing" else "INVALID_ATTRIBUTE"],
        "marketplaceIds": [marketplace_id],
    }  # fmt: skip


def _submission(call: Call, status: str, issues: list[dict[str, Any]]) -> tuple[int, Any]:
    return 200, {
        "sku": call.path_parameters["sku"], "status": status,
        "submissionId": call.sim.new_document_id().rsplit(".", 1)[-1].replace("-", ""), "issues": issues,
    }  # fmt: skip


def _validated(
    call: Call, market: Market, product_type: str, attributes: dict[str, Any], requirements: str, enforced: bool
) -> list[dict[str, Any]]:
    definition = call.sim.product_types.get(product_type)
    marketplace_id = market.site.marketplace_id
    if definition is None:
        return [_issue("invalid", "product_type", f"'{product_type}' is not an Amazon product type.", marketplace_id)]
    validator = call.sim.schema_validator(product_type, market.site, requirements, enforced)
    problems = pt.attribute_errors(validator, attributes)
    issues = [_issue(kind, name, message, marketplace_id) for kind, name, message in problems]
    return issues + call.sim.listing_rejections.get(call.path_parameters["sku"], [])


def put_listings_item(call: Call) -> tuple[int, Any]:
    _own_seller(call)
    body, sku = call.body, call.path_parameters["sku"]
    preview = call.one("mode") == "VALIDATION_PREVIEW"
    issues: list[dict[str, Any]] = []
    markets = call.markets()
    for market in markets:
        issues += _validated(
            call, market, body["productType"], body["attributes"], body.get("requirements", "LISTING"), enforced=True
        )
    if issues:
        return _submission(call, "INVALID", issues)
    if not preview:
        for market in markets:
            existing = market.listings.get(sku)
            market.listings[sku] = Listing(
                sku, body["productType"], dict(body["attributes"]), existing.created if existing else call.now,
                call.now, existing.asin if existing else call.sim._asin(),
            )  # fmt: skip
    return _submission(call, "VALID" if preview else "ACCEPTED", [])


def patch_listings_item(call: Call) -> tuple[int, Any]:
    _own_seller(call)
    body, sku = call.body, call.path_parameters["sku"]
    preview = call.one("mode") == "VALIDATION_PREVIEW"
    issues: list[dict[str, Any]] = []
    patched: list[tuple[Market, dict[str, Any]]] = []
    for market in call.markets():
        listing = market.listings.get(sku)
        if listing is None:
            issues.append(_issue("invalid", "sku", f"The SKU '{sku}' does not exist.", market.site.marketplace_id))
            issues[-1]["code"] = feeds.UNKNOWN_SKU_CODE
            continue
        attributes, problems = feeds.apply_patches(listing.attributes, body["patches"])
        if problems:
            issues += [_issue("invalid", name, message, market.site.marketplace_id) for name, message in problems]
            continue
        touched = {p["path"].split("/")[2]: attributes.get(p["path"].split("/")[2]) for p in body["patches"]}
        touched = {k: v for k, v in touched.items() if v is not None}
        issues += _validated(call, market, body["productType"], touched, "LISTING", enforced=False)
        patched.append((market, attributes))
    if issues:
        return _submission(call, "INVALID", issues)
    if not preview:
        for market, attributes in patched:
            market.listings[sku].attributes, market.listings[sku].updated = attributes, call.now
    return _submission(call, "VALID" if preview else "ACCEPTED", [])


def delete_listings_item(call: Call) -> tuple[int, Any]:
    _own_seller(call)
    for market in call.markets():
        market.listings.pop(call.path_parameters["sku"], None)
    return _submission(call, "ACCEPTED", [])


def get_listings_item(call: Call) -> tuple[int, Any]:
    _own_seller(call)
    sku = call.path_parameters["sku"]
    included = call.many("includedData") or ["summaries"]
    found = [(m, m.listings[sku]) for m in call.markets() if sku in m.listings]
    if not found:
        raise SimulatorError(404, "NOT_FOUND", f"SKU '{sku}' not found in marketplace(s)", "")
    item: dict[str, Any] = {"sku": sku}
    for market, listing in found:
        for key, value in item_json(listing, market, included).items():
            if key == "sku":
                continue
            if isinstance(value, list):
                item.setdefault(key, []).extend(value)
            else:
                item.setdefault(key, value)
    return 200, item


def _listings_found(call: Call, listings: list[Listing]) -> list[Listing]:
    """The listings a searchListingsItems query names: by identifiers, dates and statuses."""
    identifiers = call.many("identifiers")
    if identifiers:
        if call.one("identifiersType") not in (None, "SKU", "ASIN"):
            raise invalid_input("The simulator searches identifiers of type SKU or ASIN")
        field_name = "asin" if call.one("identifiersType") == "ASIN" else "sku"
        listings = [listing for listing in listings if getattr(listing, field_name) in identifiers]
    for name, attr, later in (
        ("createdAfter", "created", True), ("createdBefore", "created", False),
        ("lastUpdatedAfter", "updated", True), ("lastUpdatedBefore", "updated", False),
    ):  # fmt: skip
        bound = _date(call.one(name), name)
        if bound is not None:
            listings = [x for x in listings if (getattr(x, attr) >= bound) == later or getattr(x, attr) == bound]
    with_status, without_status = set(call.many("withStatus")), set(call.many("withoutStatus"))
    return [x for x in listings if with_status <= set(x.statuses) and not (without_status & set(x.statuses))]


def search_listings_items(call: Call) -> tuple[int, Any]:
    _own_seller(call)
    markets = call.markets()
    if len(markets) != 1:
        raise invalid_input("searchListingsItems takes exactly one marketplaceId")
    market = markets[0]
    included = call.many("includedData") or ["summaries"]
    size_text = call.one("pageSize") or str(LISTINGS_PAGE_DEFAULT)
    size = int(size_text)
    if not 1 <= size <= 20:
        raise invalid_input("Invalid pageSize", "Value must be 1 - 20.")
    token = call.one("pageToken")
    offset = _page_state(call.sim, token, "pageToken")["offset"] if token else 0
    listings = _listings_found(call, list(market.listings.values()))
    sort_by = call.one("sortBy") or "lastUpdatedDate"
    key: Callable[[Listing], Any] = {
        "sku": lambda x: x.sku,
        "createdDate": lambda x: (x.created, x.sku),
        "lastUpdatedDate": lambda x: (x.updated, x.sku),
    }[sort_by]
    listings.sort(key=key, reverse=(call.one("sortOrder") or "DESC") == "DESC")
    page = listings[offset : offset + size]
    result: dict[str, Any] = {"numberOfResults": len(listings), "items": [item_json(x, market, included) for x in page]}
    pagination = {}
    if offset + size < len(listings):
        pagination["nextToken"] = _page_token(call.sim, {"offset": offset + size, "n": len(call.sim.page_tokens)})
    if offset > 0:
        pagination["previousToken"] = _page_token(call.sim, {"offset": max(0, offset - size), "p": offset})
    if pagination:
        result["pagination"] = pagination
    return 200, result


# -- Product Type Definitions ---------------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {w for w in text.lower().replace(",", " ").split() if w}


def search_definitions_product_types(call: Call) -> tuple[int, Any]:
    markets = call.markets()
    keywords, item_name = call.many("keywords"), call.one("itemName")
    if keywords and item_name:
        raise invalid_input("keywords and itemName cannot be used together")
    wanted = {w.lower() for w in keywords} | (_words(item_name) if item_name else set())
    found = []
    for product_type in call.sim.product_types.values():
        haystack = _words(" ".join((product_type.name.replace("_", " "), product_type.display_name,
                                    *product_type.keywords)))  # fmt: skip
        if wanted and not (wanted & haystack or any(w in product_type.keywords for w in keywords)):
            continue
        found.append(
            {"name": product_type.name, "displayName": product_type.display_name,
             "marketplaceIds": [m.site.marketplace_id for m in markets]}
        )  # fmt: skip
    return 200, {"productTypes": found, "productTypeVersion": PRODUCT_TYPE_VERSION}


def get_definitions_product_type(call: Call) -> tuple[int, Any]:
    markets = call.markets()
    name = call.path_parameters["productType"]
    definition = call.sim.product_types.get(name)
    if definition is None:
        raise SimulatorError(404, "NOT_FOUND", f"Product type '{name}' was not found", "")
    site = markets[0].site
    requirements = call.one("requirements") or "LISTING"
    enforced = (call.one("requirementsEnforced") or "ENFORCED") == "ENFORCED"
    current = pt.version_of(definition, site)
    version = call.one("productTypeVersion") or "LATEST"
    if version not in ("LATEST", current):
        raise SimulatorError(404, "NOT_FOUND", f"Version '{version}' of '{name}' was not found", "")
    schema = pt.product_schema(definition, site, requirements)
    body = pt.document_bytes(schema if enforced else pt.not_enforced(schema))
    meta = pt.document_bytes(pt.META_SCHEMA)
    query = f"requirements={requirements}&enforced={'true' if enforced else 'false'}"
    return 200, {
        "metaSchema": {"link": {"resource": f"{call.sim.base_url}/_schemas/meta-schema/v1.json", "verb": "GET"},
                       "checksum": pt.checksum(meta)},
        "schema": {"link": {"resource": f"{call.sim.base_url}/_schemas/product-types/{site.marketplace_id}/{name}/"
                                        f"{current}.json?{query}", "verb": "GET"},
                   "checksum": pt.checksum(body)},
        "requirements": requirements, "requirementsEnforced": "ENFORCED" if enforced else "NOT_ENFORCED",
        "propertyGroups": pt.property_groups(definition), "locale": call.one("locale") or site.language,
        "marketplaceIds": [m.site.marketplace_id for m in markets], "productType": name,
        "displayName": definition.display_name,
        "productTypeVersion": {"version": current, "latest": True, "releaseCandidate": False},
    }  # fmt: skip


def schema_document(sim: AmazonSimulator, marketplace_id: str, name: str, requirements: str, enforced: bool) -> bytes:
    definition = sim.product_types.get(name)
    if definition is None or marketplace_id not in {s.marketplace_id for s in SITES.values()}:
        raise KeyError(name)
    schema = pt.product_schema(definition, site_for_marketplace(marketplace_id), requirements)
    return pt.document_bytes(schema if enforced else pt.not_enforced(schema))


HANDLERS: dict[str, Callable[[Call], tuple[int, Any]]] = {
    "getMarketplaceParticipations": get_marketplace_participations,
    "getOrders": get_orders,
    "getOrder": get_order,
    "getOrderItems": get_order_items,
    "getOrderAddress": get_order_address,
    "getOrderBuyerInfo": get_order_buyer_info,
    "createRestrictedDataToken": create_restricted_data_token,
    "createFeedDocument": create_feed_document,
    "createFeed": create_feed,
    "getFeed": get_feed,
    "cancelFeed": cancel_feed,
    "getFeedDocument": get_feed_document,
    "putListingsItem": put_listings_item,
    "patchListingsItem": patch_listings_item,
    "deleteListingsItem": delete_listings_item,
    "getListingsItem": get_listings_item,
    "searchListingsItems": search_listings_items,
    "searchDefinitionsProductTypes": search_definitions_product_types,
    "getDefinitionsProductType": get_definitions_product_type,
}
RESTRICTED_OPERATIONS = frozenset(
    {"getOrders", "getOrder", "getOrderItems", "getOrderAddress", "getOrderBuyerInfo", "getOrderItemsBuyerInfo"}
)
