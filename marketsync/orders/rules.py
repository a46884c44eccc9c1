"""Pure order rules: the status model, which transitions are allowed, refund math, marketplace status
mapping and the List cursor. No I/O: tested in tests/unit/test_orders_rules.py.

Statuses (order and item share one vocabulary; docs/decisions/0061-order-status-model.md):
- Pending: the marketplace has not released the order (payment not complete); nothing may ship yet.
- Unshipped: paid, nothing shipped yet (the `Unshipped` filter value of the spec).
- PartiallyShipped: some open units shipped, some still to ship.
- Shipped: every unit not cancelled has shipped.
- Cancelled: every unit cancelled.
- Refunded: everything paid for has been refunded (and the item or order is not wholly cancelled).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Literal, NamedTuple

import orjson

from marketsync.kit.clock import iso

PENDING, UNSHIPPED, PARTIALLY_SHIPPED, SHIPPED, CANCELLED, REFUNDED = (
    "Pending",
    "Unshipped",
    "PartiallyShipped",
    "Shipped",
    "Cancelled",
    "Refunded",
)
ORDER_STATUSES: tuple[str, ...] = (PENDING, UNSHIPPED, PARTIALLY_SHIPPED, SHIPPED, CANCELLED, REFUNDED)

CancelReason = Literal[
    "OutOfStock",
    "CustomerRequest",
    "PricingError",
    "UndeliverableAddress",
    "SuspectedFraud",
    "Other",
]
RefundReason = Literal[
    "CustomerReturn",
    "ItemNotReceived",
    "ItemDamaged",
    "NotAsDescribed",
    "WrongItemSent",
    "Cancellation",
    "PriceAdjustment",
    "Goodwill",
    "Other",
]

# Marketplace statuses (case-insensitive) that the pull maps onto our model.
_PENDING_MARKETPLACE = {"pending", "pendingpayment", "unpaid", "awaitingpayment"}
_SHIPPED_MARKETPLACE = {"shipped", "dispatched", "delivered", "completed"}
_CANCELLED_MARKETPLACE = {"cancelled", "canceled"}


@dataclass(frozen=True)
class ItemFigures:
    """The counters of one order item that every rule reads."""

    quantity: int
    unit_price: Decimal
    shipped: int = 0
    cancelled: int = 0
    refunded_quantity: int = 0
    refunded_amount: Decimal = Decimal("0")

    @property
    def line_total(self) -> Decimal:
        return self.unit_price * self.quantity

    @property
    def unshipped(self) -> int:
        """Units neither shipped nor cancelled: what Confirm ships and Cancel may cancel."""
        return max(0, self.quantity - self.cancelled - self.shipped)

    @property
    def refundable_amount(self) -> Decimal:
        return max(Decimal("0"), self.line_total - self.refunded_amount)

    @property
    def refundable_quantity(self) -> int:
        return max(0, self.quantity - self.refunded_quantity)


def item_status(item: ItemFigures, *, order_pending: bool) -> str:
    if item.cancelled >= item.quantity:
        return CANCELLED
    if item.line_total > 0 and item.refunded_amount >= item.line_total:
        return REFUNDED
    if order_pending:
        return PENDING
    if item.shipped == 0:
        return UNSHIPPED
    if item.shipped >= item.quantity - item.cancelled:
        return SHIPPED
    return PARTIALLY_SHIPPED


def order_status(item_statuses: Sequence[str], *, pending: bool) -> str:
    if not item_statuses:
        return PENDING if pending else UNSHIPPED
    if all(s == CANCELLED for s in item_statuses):
        return CANCELLED
    if all(s in (CANCELLED, REFUNDED) for s in item_statuses):
        return REFUNDED
    if pending:
        return PENDING
    to_ship = [s for s in item_statuses if s not in (CANCELLED, REFUNDED)]
    if all(s == SHIPPED for s in to_ship):
        return SHIPPED
    if all(s == UNSHIPPED for s in to_ship):
        return UNSHIPPED
    return PARTIALLY_SHIPPED


# ---------------------------------------------------------------- transitions (one message per refusal)


class Refusal(NamedTuple):
    """Why a change is refused, and which field of the item's request entry the message belongs to."""

    field: str
    message: str


def refuse_confirm(item: ItemFigures, *, order_pending: bool) -> Refusal | None:
    """Why Confirm (ship every unshipped unit) is refused for this item, or None when allowed."""
    status = item_status(item, order_pending=order_pending)
    if status == CANCELLED:
        return Refusal("OrderItemId", "The item is Cancelled; a cancelled item cannot be confirmed.")
    if status == REFUNDED:
        return Refusal("OrderItemId", "The item is fully Refunded; it cannot be confirmed.")
    if order_pending:
        return Refusal(
            "OrderItemId", "The order is Pending at the marketplace (payment not complete); it cannot be shipped yet."
        )
    if item.unshipped == 0:
        return Refusal("OrderItemId", "The item is already Shipped; nothing is left to confirm.")
    return None


def refuse_cancel(item: ItemFigures, quantity: int | None, *, order_pending: bool) -> Refusal | None:
    """Why cancelling `quantity` units (None: every unshipped unit) is refused, or None when allowed."""
    status = item_status(item, order_pending=order_pending)
    if status == CANCELLED:
        return Refusal("OrderItemId", "The item is already Cancelled.")
    if item.unshipped == 0:
        return Refusal("OrderItemId", "The item is Shipped; a shipped item cannot be cancelled (refund it instead).")
    if quantity is not None and quantity > item.unshipped:
        return Refusal("Quantity", f"Only {item.unshipped} unshipped unit(s) can be cancelled; {quantity} requested.")
    return None


REFUND_OF_PENDING = "The order is Pending at the marketplace; nothing has been paid, so nothing can be refunded."


def refuse_refund(item: ItemFigures, quantity: int, amount: Decimal, *, order_pending: bool) -> Refusal | None:
    """Why refunding `amount` (for `quantity` returned units, 0 for none) is refused, or None when allowed."""
    refusals = refund_refusals(item, quantity, amount, order_pending=order_pending)
    return refusals[0] if refusals else None


def refund_refusals(item: ItemFigures, quantity: int, amount: Decimal, *, order_pending: bool) -> list[Refusal]:
    """Every reason to refuse the refund, at most one per field (Amount, Quantity): one 400 names both."""
    if order_pending:
        return [Refusal("Amount", REFUND_OF_PENDING)]
    refusals: list[Refusal] = []
    if amount > item.refundable_amount:
        still = _money(item.refundable_amount)
        refusals.append(
            Refusal(
                "Amount",
                f"Refund of {_money(amount)} exceeds the {still} still refundable on this item "
                f"(paid {_money(item.line_total)}, already refunded {_money(item.refunded_amount)}).",
            )
        )
    if quantity > item.refundable_quantity:
        refusals.append(
            Refusal("Quantity", f"Only {item.refundable_quantity} unit(s) remain to refund; {quantity} requested.")
        )
    elif not refusals and quantity > 0 and amount > item.unit_price * quantity:
        units_price = _money(item.unit_price * quantity)
        refusals.append(
            Refusal(
                "Amount",
                f"Refund of {_money(amount)} exceeds the price of the {quantity} unit(s) returned ({units_price}).",
            )
        )
    return refusals


# A ship date may run ahead of our clock by less than this (a parcel handed over later today, time zones).
SHIP_DATE_AHEAD = timedelta(days=1)


def refuse_ship_date(ship_date: datetime, *, purchase_date: datetime, now: datetime) -> Refusal | None:
    """Why a Confirm's ShipDate is refused: more than a day in the future, or before the purchase."""
    if ship_date > now + SHIP_DATE_AHEAD:
        return Refusal(
            "ShipDate", "ShipDate is more than a day in the future; send the date the parcel was handed to the carrier."
        )
    if ship_date < purchase_date:
        return Refusal("ShipDate", f"ShipDate is before the order's purchase date ({iso(purchase_date)}).")
    return None


def refuse_shipment_details(
    *, write_back: bool, marketplace: str, carrier_code: str | None, tracking_number: str | None
) -> Refusal | None:
    """Why a shipment cannot be sent to a marketplace that receives order write-back, or None.

    Such a marketplace refuses a shipment with neither a carrier code nor a tracking number (a carrier name
    alone does not identify the carrier), so the batch is refused here, before anything is applied. A kind
    without write-back keeps the shipment locally and has nothing to refuse.
    """
    if write_back and not carrier_code and not tracking_number:
        return Refusal(
            "TrackingNumber",
            f"{marketplace} needs a CarrierCode or a TrackingNumber to accept a shipment; send at least one.",
        )
    return None


def _money(value: Decimal) -> str:
    """12.5 -> '12.50'; amounts with more decimals keep them."""
    return f"{value:.2f}" if value == round(value, 2) else str(value.normalize())


# ---------------------------------------------------------------- marketplace statuses


def is_pending_at_marketplace(marketplace_status: str) -> bool:
    return marketplace_status.strip().lower().replace("_", "") in _PENDING_MARKETPLACE


def pulled_counters(item: ItemFigures, item_marketplace_status: str, order_marketplace_status: str) -> tuple[int, int]:
    """(shipped, cancelled) after a pull. Counters only move forward: a marketplace that never heard of a
    local confirm or cancel (P2) cannot undo it by reporting its older state."""
    shipped, cancelled = item.shipped, item.cancelled
    item_status_ = item_marketplace_status.strip().lower()
    # A whole-order cancellation cancels every item; shipping is only believed per item, since an order
    # reported Shipped may still hold items refunded or cancelled before shipment.
    if item_status_ in _CANCELLED_MARKETPLACE or order_marketplace_status.strip().lower() in _CANCELLED_MARKETPLACE:
        cancelled += item.unshipped
    elif item_status_ in _SHIPPED_MARKETPLACE:
        shipped += item.unshipped
    return shipped, cancelled


# ---------------------------------------------------------------- List time bounds

_MILLISECOND = timedelta(milliseconds=1)


@dataclass(frozen=True)
class ChangedBounds:
    """The List's bounds on the last-changed time: `since <= updated_at < before` (either may be absent)."""

    since: datetime | None
    before: datetime | None


def _to_millisecond(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


def changed_bounds(
    updated_since: datetime | None, from_date: datetime | None, to_date: datetime | None
) -> ChangedBounds:
    """The bounds compared at the precision timestamps are shown in (milliseconds): an order stored at
    12:00:00.123456 is shown as 12:00:00.123Z, and a caller passing that value back as `ToDate` or `UpdatedSince`
    must get that order, as it would if the stored time had no microseconds. Both bounds stay inclusive at
    milliseconds: since its millisecond's start, up to the end of `ToDate`'s millisecond."""
    lower = [_to_millisecond(bound) for bound in (updated_since, from_date) if bound is not None]
    before = None
    if to_date is not None:
        try:
            before = _to_millisecond(to_date) + _MILLISECOND
        except OverflowError:  # ToDate within the last millisecond of 9999: nothing can lie beyond it
            before = None
    return ChangedBounds(max(lower) if lower else None, before)


# ---------------------------------------------------------------- List cursor


@dataclass(frozen=True)
class Cursor:
    """Where a walk stands: the last key shown, the walk's high-water key and its filters' fingerprint."""

    last_updated_at: datetime
    last_id: str
    high_water: datetime
    fingerprint: str


def filter_fingerprint(
    order_ids: Iterable[str] | None,
    statuses: Iterable[str] | None,
    updated_since: datetime | None,
    from_date: datetime | None,
    to_date: datetime | None,
) -> str:
    canonical = orjson.dumps(
        [
            sorted(set(order_ids)) if order_ids is not None else None,
            sorted(set(statuses)) if statuses is not None else None,
            _stamp(updated_since) if updated_since else None,
            _stamp(from_date) if from_date else None,
            _stamp(to_date) if to_date else None,
        ]
    )
    return hashlib.sha256(canonical).hexdigest()[:16]


def _cursor_mac(key: bytes, account_id: str, payload: bytes) -> bytes:
    # A label keeps this MAC from ever equalling another use of the same key; the account id (covered, not carried)
    # makes a cursor valid only for the account it was issued to.
    message = b"orders-cursor\x01\x00" + account_id.encode() + b"\x00" + payload
    return hmac.new(key, message, hashlib.sha256).digest()[:16]


def _release_one_cursor_mac(key: bytes, payload: bytes) -> bytes:
    # Cursors issued before their MAC covered the account: still accepted for one release, so a client holding one
    # across the deploy resumes its walk (docs/decisions/0321). Such a cursor steers only the position in the
    # caller's own orders; the account check adds nothing a stranger could read.
    return hmac.new(key, b"orders-cursor\x00" + payload, hashlib.sha256).digest()[:16]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_cursor(cursor: Cursor, key: bytes, account_id: str) -> str:
    """`payload.mac`: signed for one account, so a hand-edited cursor, or one another account was given, is refused
    instead of steering the query."""
    payload = orjson.dumps(
        {
            "u": _stamp(cursor.last_updated_at),
            "i": cursor.last_id,
            "h": _stamp(cursor.high_water),
            "f": cursor.fingerprint,
        }
    )
    return f"{_b64(payload)}.{_b64(_cursor_mac(key, account_id, payload))}"


def decode_cursor(value: str, key: bytes, account_id: str) -> Cursor:
    """Raises ValueError for anything that is not a cursor this service issued."""
    try:
        encoded_payload, _, encoded_mac = value.partition(".")
        payload = _unb64(encoded_payload)
        mac = _unb64(encoded_mac)
        if not hmac.compare_digest(mac, _cursor_mac(key, account_id, payload)) and not hmac.compare_digest(
            mac, _release_one_cursor_mac(key, payload)
        ):
            raise ValueError("bad signature")
        data = orjson.loads(payload)
        return Cursor(
            last_updated_at=_unstamp(data["u"]),
            last_id=str(data["i"]),
            high_water=_unstamp(data["h"]),
            fingerprint=str(data["f"]),
        )
    except (ValueError, KeyError, TypeError, OverflowError, orjson.JSONDecodeError) as exc:
        raise ValueError("not a cursor issued by this service") from exc


def _stamp(value: datetime) -> int:
    """Microseconds since the epoch: exact, so a key round-trips without losing its position."""
    delta = value.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _unstamp(value: object) -> datetime:
    if not isinstance(value, int):
        raise ValueError("bad timestamp")
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)
