"""JSON_LISTINGS_FEED processing: a feed's life (IN_QUEUE -> IN_PROGRESS -> DONE, or FATAL, or CANCELLED), the
messages applied to the seller's listings, and the processing report (validated against Amazon's schema).

Issue codes: 90220 (a required attribute missing) and 99022 (a value the schema refuses) are the codes Amazon's own
example report uses for those cases; SKU_NOT_FOUND, SIMULATED_ERROR and FEED_REJECTED are the simulator's own (Amazon
does not publish a code list: a client shows the message, never branches on the code; docs/decisions/0360).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from marketsync.marketplaces.amazon.contracts.validation import feed_document_errors, processing_report_errors
from marketsync.marketplaces.amazon.simulator import product_types as pt
from marketsync.marketplaces.amazon.simulator.state import (
    AmazonSimulator,
    Feed,
    FeedDocument,
    Listing,
    Market,
    Seller,
    Violation,
)
from marketsync.marketplaces.amazon.simulator.views import _z, item_json

MISSING_CODE = "90220"
INVALID_CODE = "99022"
UNKNOWN_SKU_CODE = "SKU_NOT_FOUND"
SIMULATED_CODE = "SIMULATED_ERROR"
REJECTED_CODE = "FEED_REJECTED"
REPORT_CONTENT_TYPE = "application/json"
OFFER_PRODUCT_TYPE = "PRODUCT"
_STEPS = ("IN_QUEUE", "IN_PROGRESS")
# The value keys Amazon's schemas name as selectors: a merged value replaces the one with the same selector values.
SELECTORS = ("marketplace_id", "language_tag", "fulfillment_channel_code", "currency", "audience")


def document_url(sim: AmazonSimulator, document: FeedDocument) -> str:
    """Where the document is uploaded or downloaded: on the simulator itself (Amazon's is a presigned S3 URL)."""
    return f"{sim.base_url}/feed-documents/{document.document_id}"


def create(sim: AmazonSimulator, seller: Seller, feed_type: str, marketplace_ids: list[str], doc: FeedDocument) -> Feed:
    feed = Feed(sim.new_feed_id(), seller.selling_partner_id, feed_type, marketplace_ids, doc.document_id, sim._now())
    sim.feeds[feed.feed_id] = feed
    advance(sim, feed)
    return feed


def advance(sim: AmazonSimulator, feed: Feed) -> None:
    """Move the feed on by polls and by the clock; on reaching the end, process it."""
    if feed.status not in _STEPS:
        return
    steps = feed.polls // sim.feed_polls_per_step
    if sim.feed_seconds_per_step:
        steps = max(steps, int((sim._now() - feed.created).total_seconds() // sim.feed_seconds_per_step))
    if steps >= 1 and feed.status == "IN_QUEUE":
        feed.status, feed.started = "IN_PROGRESS", sim._now()
    if steps >= 2 and feed.status == "IN_PROGRESS":
        process(sim, feed)


def feed_json(feed: Feed) -> dict[str, Any]:
    data: dict[str, Any] = {
        "feedId": feed.feed_id, "feedType": feed.feed_type, "marketplaceIds": feed.marketplace_ids,
        "createdTime": _z(feed.created), "processingStatus": feed.status,
    }  # fmt: skip
    if feed.started:
        data["processingStartTime"] = _z(feed.started)
    if feed.ended:
        data["processingEndTime"] = _z(feed.ended)
    if feed.result_document_id:
        data["resultFeedDocumentId"] = feed.result_document_id
    return data


def process(sim: AmazonSimulator, feed: Feed) -> None:
    seller = sim.seller(feed.seller_id)
    source = sim.documents[feed.input_document_id]
    fault = sim.feed_fault(seller.selling_partner_id)
    header: dict[str, Any] = {"sellerId": seller.selling_partner_id, "version": "2.0", "feedId": feed.feed_id}
    fatal: str | None = None
    document: Any = None
    try:
        document = json.loads(source.content or b"")
    except ValueError as exc:
        fatal = f"The feed document is not JSON: {exc}"
    if fatal is None:
        errors = feed_document_errors(document)
        if errors:
            sim.record(Violation("feed", "JSON_LISTINGS_FEED", "PUT", f"/feed-documents/{source.document_id}",
                                 tuple(errors)))  # fmt: skip
            fatal = "The feed document does not match the JSON_LISTINGS_FEED schema: " + "; ".join(errors[:3])
        elif document["header"]["sellerId"] != seller.selling_partner_id:
            fatal = f"The header's sellerId {document['header']['sellerId']} is not the seller's."
    if fatal is None and fault.mode == "reject":
        fatal = fault.message
    if fatal is not None:
        report = {
            "header": header,
            "issues": [{"code": REJECTED_CODE, "severity": "ERROR", "message": fatal}],
            "summary": {
                "errors": 1,
                "warnings": 0,
                "messagesProcessed": 0,
                "messagesAccepted": 0,
                "messagesInvalid": 0,
            },
        }
        _finish(sim, feed, "FATAL", report)
        return
    if "report" in document["header"]:
        header["report"] = document["header"]["report"]
    issues: list[dict[str, Any]] = []
    accepted = 0
    touched: list[str] = []
    for message in document["messages"]:
        found = _apply(sim, seller, feed.marketplace_ids, message, fault)
        issues += found
        accepted += 0 if any(i["severity"] == "ERROR" for i in found) else 1
        touched.append(message["sku"])
    processed = len(document["messages"])
    report = {
        "header": header,
        "issues": issues,
        "summary": {
            "errors": sum(1 for i in issues if i["severity"] == "ERROR"),
            "warnings": sum(1 for i in issues if i["severity"] == "WARNING"),
            "messagesProcessed": processed,
            "messagesAccepted": accepted,
            "messagesInvalid": processed - accepted,
        },
    }
    if "report" in header:
        report["items"] = _items(sim, seller, feed.marketplace_ids, touched, header["report"]["includedData"])
    _finish(sim, feed, "DONE", report)


def _items(
    sim: AmazonSimulator, seller: Seller, marketplace_ids: list[str], skus: list[str], included: list[str]
) -> list[dict[str, Any]]:
    items = []
    for sku in dict.fromkeys(skus):
        for marketplace_id in marketplace_ids:
            market = seller.markets[marketplace_id]
            if sku in market.listings:
                items.append(item_json(market.listings[sku], market, included))
    return items


def _finish(sim: AmazonSimulator, feed: Feed, status: str, report: dict[str, Any]) -> None:
    errors = processing_report_errors(report)
    if errors:  # the simulator's own bug: recorded, so the test that caused it fails
        sim.record(Violation("response", "processingReport", "GET", f"/feeds/{feed.feed_id}", tuple(errors)))
    result = FeedDocument(sim.new_document_id(), feed.seller_id, REPORT_CONTENT_TYPE, sim._now(), is_result=True)
    result.content = json.dumps(report).encode()
    sim.documents[result.document_id] = result
    feed.status, feed.ended, feed.result_document_id = status, sim._now(), result.document_id


def _issue(message: dict[str, Any], code: str, text: str, attribute: str | None = None) -> dict[str, Any]:
    issue = {"messageId": message["messageId"], "sku": message["sku"], "code": code, "severity": "ERROR",
             "message": text}  # fmt: skip
    if attribute:
        issue["attributeName"] = attribute
    return issue


def apply_patches(attributes: dict[str, Any], patches: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[Any]]:
    """JSON Patch operations on /attributes/<name> (add, replace, merge, delete) applied to a copy. Returns the
    patched attributes and the (attribute, message) pairs of the patches that cannot apply."""
    result = copy.deepcopy(attributes)
    problems: list[tuple[str, str]] = []
    for patch in patches:
        parts = patch["path"].split("/")
        if len(parts) != 3 or parts[1] != "attributes" or not parts[2]:
            problems.append((patch["path"], f"'{patch['path']}' is not a path to an attribute (/attributes/<name>)."))
            continue
        name, op, value = parts[2], patch["op"], patch.get("value")
        if op == "delete":
            result.pop(name, None)
            continue
        if not isinstance(value, list):
            problems.append((name, f"The {op} of '{name}' has no value."))
            continue
        if op in ("add", "replace") or name not in result:
            result[name] = copy.deepcopy(value)
            continue
        # merge: a value with the same selector values replaces the one there; others are added
        merged = list(result[name])
        for entry in value:
            keys = {k: v for k, v in entry.items() if k in SELECTORS}
            merged = [e for e in merged if not (keys and all(e.get(k) == v for k, v in keys.items()))]
            merged.append(copy.deepcopy(entry))
        result[name] = merged
    return result, problems


def _apply(
    sim: AmazonSimulator, seller: Seller, marketplace_ids: list[str], message: dict[str, Any], fault: Any
) -> list[dict[str, Any]]:
    sku = message["sku"]
    if fault.mode == "item-errors" and (fault.skus is None or sku in fault.skus):
        return [_issue(message, SIMULATED_CODE, fault.message)]
    issues: list[dict[str, Any]] = []
    changes: list[tuple[str, Listing | None]] = []
    for marketplace_id in marketplace_ids:
        applies, change = _in_market(sim, seller.markets[marketplace_id], message, issues)
        if applies:
            changes.append((marketplace_id, change))
    if any(i["severity"] == "ERROR" for i in issues):
        return issues  # an invalid message changes nothing
    for marketplace_id, change in changes:
        listings = seller.markets[marketplace_id].listings
        if change is None:
            listings.pop(sku, None)
        else:
            listings[sku] = change
    return issues


def _in_market(
    sim: AmazonSimulator, market: Market, message: dict[str, Any], issues: list[dict[str, Any]]
) -> tuple[bool, Listing | None]:
    """What one message does to the seller's listing in one marketplace: (whether it changes it, the listing after;
    None: deleted). Its problems are added to `issues`."""
    sku, operation = message["sku"], message["operationType"]
    listing = market.listings.get(sku)
    if operation == "DELETE":
        return True, None
    named = message["productType"]
    if named == OFFER_PRODUCT_TYPE and operation == "PATCH":  # Amazon takes PRODUCT for offer-only patches
        if listing is None:
            issues.append(_issue(message, UNKNOWN_SKU_CODE, f"The SKU '{sku}' does not exist in {market.site.name}."))
            return False, None
        named = listing.product_type
    product_type = sim.product_types.get(named)
    if product_type is None:
        issues.append(_issue(message, INVALID_CODE, f"'{message['productType']}' is not an Amazon product type."))
        return False, None
    if operation in ("PATCH", "PARTIAL_UPDATE") and listing is None:
        issues.append(_issue(message, UNKNOWN_SKU_CODE, f"The SKU '{sku}' does not exist in {market.site.name}."))
        return False, None
    attributes, checked, schema = _attributes_after(sim, product_type.name, market, message, listing, issues)
    subject = {k: v for k, v in attributes.items() if k in checked} if operation != "UPDATE" else attributes
    for kind, name, text in pt.attribute_errors(schema, subject):
        issues.append(_issue(message, MISSING_CODE if kind == "missing" else INVALID_CODE, text, name))
    now = sim._now()
    return True, Listing(sku, product_type.name, attributes, listing.created if listing else now, now,
                         listing.asin if listing else sim._asin())  # fmt: skip


def _attributes_after(
    sim: AmazonSimulator,
    product_type: str,
    market: Market,
    message: dict[str, Any],
    listing: Listing | None,
    issues: list[dict[str, Any]],
) -> tuple[dict[str, Any], set[str], Any]:
    """The listing's attributes after the message, the attributes it names (what is checked, but for an UPDATE:
    the whole listing) and the schema they are checked against."""
    operation = message["operationType"]
    if operation == "PATCH":
        assert listing is not None
        attributes, problems = apply_patches(listing.attributes, message["patches"])
        issues += [_issue(message, INVALID_CODE, text, name) for name, text in problems]
        checked = {p["path"].split("/")[-1] for p in message["patches"]}
        return attributes, checked, sim.schema_validator(product_type, market.site, enforced=False)
    if operation == "PARTIAL_UPDATE":
        assert listing is not None
        attributes = {**listing.attributes, **message["attributes"]}
        return attributes, set(message["attributes"]), sim.schema_validator(product_type, market.site, enforced=False)
    # UPDATE: the whole listing
    attributes = dict(message["attributes"])
    schema = sim.schema_validator(product_type, market.site, message.get("requirements", "LISTING"))
    return attributes, set(attributes), schema
