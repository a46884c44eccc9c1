"""The price/stock push as one JSON_LISTINGS_FEED, and its processing report read back
(docs/decisions/0373-amazon-feed-not-per-sku-patches.md). Pure: the connector does the calls.

Each line is one PATCH message: `/attributes/purchasable_offer` (the price, `our_price` with tax, in the site's
currency) and `/attributes/fulfillment_availability` (the quantity, channel DEFAULT: the seller's own fulfilment),
only the values that differ. Offer-only patches name the product type `PRODUCT`, which Amazon takes for any
listing's offer, so a push never needs the listing's own product type.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from marketsync.marketplaces.amazon.contracts.validation import feed_document_errors, processing_report_errors
from marketsync.marketplaces.connector import FeedResult, ItemError, PriceStockLine

__all__ = [
    "FEED_CONTENT_TYPE",
    "FEED_TYPE",
    "OFFER_PRODUCT_TYPE",
    "document_problems",
    "feed_result",
    "price_stock_document",
    "processing_status",
    "report_problems",
]

FEED_TYPE = "JSON_LISTINGS_FEED"
FEED_CONTENT_TYPE = "application/json; charset=UTF-8"
OFFER_PRODUCT_TYPE = "PRODUCT"
FULFILLMENT_CHANNEL = "DEFAULT"

FeedStatus = Literal["Processing", "Done", "Rejected"]


def _price(value: Decimal) -> float | int:
    """A JSON number of the price (the feed's `value_with_tax` is a number, not text)."""
    return int(value) if value == value.to_integral_value() else float(value)


def price_stock_document(
    seller_id: str, marketplace_id: str, currency: str, lines: list[PriceStockLine]
) -> dict[str, Any]:
    """The feed document: message N is lines[N-1]."""
    messages: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        patches: list[dict[str, Any]] = []
        if line.price is not None:
            offer = {
                "marketplace_id": marketplace_id,
                "currency": currency,
                "our_price": [{"schedule": [{"value_with_tax": _price(line.price)}]}],
            }
            patches.append({"op": "replace", "path": "/attributes/purchasable_offer", "value": [offer]})
        if line.quantity is not None:
            availability = {"fulfillment_channel_code": FULFILLMENT_CHANNEL, "quantity": line.quantity}
            patches.append({"op": "replace", "path": "/attributes/fulfillment_availability", "value": [availability]})
        messages.append(
            {
                "messageId": number,
                "sku": line.external_sku,
                "operationType": "PATCH",
                "productType": OFFER_PRODUCT_TYPE,
                "patches": patches,
            }
        )
    return {"header": {"sellerId": seller_id, "version": "2.0"}, "messages": messages}


def document_problems(document: dict[str, Any]) -> list[str]:
    """What breaks Amazon's feed schema (listings-feed-schema-v2.json, each message also against the message schema);
    [] when nothing does. The contracts' validator confirms a valid document in milliseconds (decision 0361)."""
    return feed_document_errors(document)


def report_problems(report: Any) -> list[str]:
    """What breaks the processing report's schema; [] when nothing does."""
    return processing_report_errors(report)


def processing_status(feed: dict[str, Any]) -> str:
    """getFeed's processingStatus: IN_QUEUE, IN_PROGRESS, DONE, CANCELLED or FATAL."""
    return str(feed.get("processingStatus") or "")


@dataclass(frozen=True)
class ReportIssue:
    message_id: int | None
    sku: str | None
    severity: str
    text: str


def _issues(report: dict[str, Any]) -> list[ReportIssue]:
    found = []
    for issue in report.get("issues") or []:
        message_id = issue.get("messageId")
        code = str(issue.get("code") or "")
        text = str(issue.get("message") or "")
        found.append(
            ReportIssue(
                message_id if isinstance(message_id, int) else None,
                str(issue["sku"]) if issue.get("sku") else None,
                str(issue.get("severity") or ""),
                f"{text} (Amazon {code})" if code else text,
            )
        )
    return found


def feed_result(feed_id: str, status: str, report: dict[str, Any] | None, references: list[str]) -> FeedResult:
    """The service's FeedResult of an Amazon feed that ended. `references`: what each message stands for (message N
    is references[N-1]: the external SKU for a price/stock line). A message with an ERROR issue failed; a FATAL or
    CANCELLED feed processed nothing, with the report's feed-level issues as its reason."""
    issues = _issues(report or {})
    feed_level = [i.text for i in issues if i.message_id is None and i.severity == "ERROR"]
    if status != "DONE":
        reason = "; ".join(feed_level) or (
            "Amazon cancelled the feed." if status == "CANCELLED" else "Amazon could not process the feed."
        )
        return FeedResult(feed_id, "Rejected", 0, [], f"{reason} (feed {status})")
    errors = _message_errors(issues, references)
    summary = (report or {}).get("summary") or {}
    accepted = summary.get("messagesAccepted")
    processed = int(accepted) if isinstance(accepted, int) else len(references) - len(errors)
    if feed_level and not errors and processed == 0 and references:
        # Every message refused for a reason of the whole feed (its format, its header): nothing processed.
        return FeedResult(feed_id, "Rejected", 0, [], "; ".join(feed_level))
    return FeedResult(
        feed_id,
        "Done",
        processed,
        [ItemError(reference, "; ".join(texts)) for reference, texts in errors.items()],
        "; ".join(feed_level),
    )


def _message_errors(issues: list[ReportIssue], references: list[str]) -> dict[str, list[str]]:
    """The ERROR issues of the report by what their message stands for (by message id, else by SKU)."""
    errors: dict[str, list[str]] = {}
    for issue in issues:
        if issue.severity != "ERROR":
            continue
        reference: str | None = None
        if issue.message_id is not None and 1 <= issue.message_id <= len(references):
            reference = references[issue.message_id - 1]
        elif issue.sku is not None and issue.sku in references:
            reference = issue.sku
        if reference is not None:
            errors.setdefault(reference, []).append(issue.text)
    return errors
