"""Verify and parse marketsync webhook deliveries (spec section 6). Standard library only.

This module imports nothing outside the standard library, so a receiver may use it without httpx or pydantic
(or copy this one file). Importing it does not import the rest of ``marketsync_client``.

    from marketsync_client import webhooks

    def handle(headers, raw_body):            # headers: any mapping (case-insensitive lookup); raw_body: bytes
        try:
            delivery = webhooks.construct_event(SECRET, headers, raw_body)
        except webhooks.VerificationError as refused:
            return 401, refused.reason        # never process what does not verify
        except webhooks.PayloadError:
            return 400, "malformed"
        queue.put(delivery)                   # acknowledge first (a 2xx within 10 s), process afterwards
        return 200, ""

Verification, exactly as the service signs:

1. ``X-SVC-Timestamp`` (Unix seconds) must be within 300 seconds of now, in either direction;
2. ``key = HMAC-SHA256(key=secret, msg=b"service.webhook.v1")`` (a derived key, never the raw secret);
3. ``expected = "v1=" + hex(HMAC-SHA256(key, b"<timestamp>." + raw body bytes))``;
4. compared with ``X-SVC-Signature`` in constant time (several comma-separated signatures may be present
   while a scheme is replaced; one matching ``v1=`` signature suffices).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any, ClassVar, Protocol, TypeVar

__all__ = [
    "EVENT_TYPES",
    "HEADER_ATTEMPT",
    "HEADER_DELIVERY_ID",
    "HEADER_EVENT",
    "HEADER_SIGNATURE",
    "HEADER_TEST",
    "HEADER_TIMESTAMP",
    "TOLERANCE_S",
    "Delivery",
    "Event",
    "FeedOutcome",
    "InventoryChanged",
    "InventorySource",
    "ListingPublished",
    "MarketplaceRestored",
    "MarketplaceUnhealthy",
    "OrdersDownloaded",
    "PayloadError",
    "Refusal",
    "SkuChange",
    "UnknownEvent",
    "VerificationError",
    "construct_event",
    "parse_delivery",
    "parse_event",
    "sign",
    "verify",
    "verify_or_raise",
]

TOLERANCE_S = 300
KEY_CONTEXT = b"service.webhook.v1"
SCHEME_PREFIX = "v1="

HEADER_SIGNATURE = "X-SVC-Signature"
HEADER_TIMESTAMP = "X-SVC-Timestamp"
HEADER_EVENT = "X-SVC-Event"
HEADER_DELIVERY_ID = "X-SVC-Delivery-Id"
HEADER_ATTEMPT = "X-SVC-Attempt"
# "true" on a test event's deliveries (POST /api/webhooks/Test, the app's sample). Not signed: `Delivery.is_test`
# reads the payload's own marker, which is.
HEADER_TEST = "X-SVC-Test"
# The payload's test marker: `isTest` in InventoryChanged (camelCase), `IsTest` in the others; absent from real events.
TEST_MARKERS = ("IsTest", "isTest")

# ASCII digits only: str.isdigit() would also accept superscripts and other scripts' digits.
_UNIX_SECONDS = re.compile(r"[0-9]{1,12}")

Secret = str | bytes
Body = bytes | bytearray | memoryview | str


class Headers(Protocol):
    """Anything with ``items()``: a dict, Starlette/httpx headers, ``http.server``'s message, WSGI-style maps."""

    def items(self) -> Iterable[tuple[Any, Any]]: ...


# --------------------------------------------------------------------------------------------- verification


class Refusal(StrEnum):
    """Why a delivery was refused; stable values a receiver may log or count."""

    MISSING_TIMESTAMP = "missing-timestamp"
    MALFORMED_TIMESTAMP = "malformed-timestamp"
    TIMESTAMP_TOO_OLD = "timestamp-too-old"
    TIMESTAMP_IN_FUTURE = "timestamp-in-future"
    MISSING_SIGNATURE = "missing-signature"
    UNSUPPORTED_SCHEME = "unsupported-scheme"
    SIGNATURE_MISMATCH = "signature-mismatch"


class VerificationError(Exception):
    """The delivery does not verify; ``reason`` says which check refused it."""

    def __init__(self, reason: Refusal, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


def header(headers: Headers | Mapping[str, str], name: str) -> str | None:
    """The value of header `name`, matched case-insensitively (bytes names and values are read as Latin-1)."""
    wanted = name.lower()
    for key, value in headers.items():
        text_key = key.decode("latin-1") if isinstance(key, bytes | bytearray) else str(key)
        if text_key.lower() == wanted:
            return value.decode("latin-1") if isinstance(value, bytes | bytearray) else str(value)
    return None


def derive_key(secret: Secret) -> bytes:
    raw = secret.encode() if isinstance(secret, str) else bytes(secret)
    return hmac.new(raw, KEY_CONTEXT, hashlib.sha256).digest()


def sign(secret: Secret, timestamp: int, body: Body) -> str:
    """The ``X-SVC-Signature`` value the service sends for `body` at `timestamp` (handy for receiver tests)."""
    mac = hmac.new(derive_key(secret), f"{timestamp}.".encode() + _raw(body), hashlib.sha256).hexdigest()
    return SCHEME_PREFIX + mac


def verify_or_raise(
    secret: Secret | Iterable[Secret],
    headers: Headers | Mapping[str, str],
    body: Body,
    now: datetime | float | None = None,
    *,
    tolerance: int = TOLERANCE_S,
) -> int:
    """Check a delivery; return its timestamp (Unix seconds) or raise `VerificationError`.

    `secret` may be several secrets (e.g. an old and a new subscription's while a receiver moves over): any one
    that verifies is accepted. `body` must be the raw request bytes, never re-serialised JSON. `now` is a
    datetime or Unix seconds (default: the current time).
    """
    raw_timestamp = header(headers, HEADER_TIMESTAMP)
    if raw_timestamp is None or not raw_timestamp.strip():
        raise VerificationError(Refusal.MISSING_TIMESTAMP, f"no {HEADER_TIMESTAMP} header")
    if not _UNIX_SECONDS.fullmatch(raw_timestamp.strip()):
        raise VerificationError(Refusal.MALFORMED_TIMESTAMP, f"{HEADER_TIMESTAMP} is not Unix seconds")
    timestamp = int(raw_timestamp.strip())
    given = header(headers, HEADER_SIGNATURE)
    if given is None or not given.strip():
        raise VerificationError(Refusal.MISSING_SIGNATURE, f"no {HEADER_SIGNATURE} header")

    current = time.time() if now is None else now.timestamp() if isinstance(now, datetime) else float(now)
    # Checked before any HMAC: a replayed old delivery costs nothing to refuse.
    if current - timestamp > tolerance:
        raise VerificationError(Refusal.TIMESTAMP_TOO_OLD, f"signed {int(current - timestamp)} s ago")
    if timestamp - current > tolerance:
        raise VerificationError(Refusal.TIMESTAMP_IN_FUTURE, f"signed {int(timestamp - current)} s ahead")

    candidates = [part.strip() for part in given.split(",")]
    ours = [candidate.encode() for candidate in candidates if candidate.startswith(SCHEME_PREFIX)]
    if not ours:
        raise VerificationError(Refusal.UNSUPPORTED_SCHEME, f"no {SCHEME_PREFIX} signature in {HEADER_SIGNATURE}")
    secrets = [secret] if isinstance(secret, str | bytes) else list(secret)
    raw = _raw(body)
    matched = False
    for one in secrets:
        expected = sign(one, timestamp, raw).encode()
        for candidate in ours:
            # `|=`, not `or`: every comparison runs, so timing says nothing about which one matched.
            matched |= hmac.compare_digest(candidate, expected)
    if not matched:
        raise VerificationError(Refusal.SIGNATURE_MISMATCH, "the signature does not match the body")
    return timestamp


def verify(
    secret: Secret | Iterable[Secret],
    headers: Headers | Mapping[str, str],
    body: Body,
    now: datetime | float | None = None,
    *,
    tolerance: int = TOLERANCE_S,
) -> bool:
    """True when the delivery verifies (see `verify_or_raise` for the reason when it does not)."""
    try:
        verify_or_raise(secret, headers, body, now, tolerance=tolerance)
    except VerificationError:
        return False
    return True


def _raw(body: Body) -> bytes:
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    raise TypeError("body must be the raw request bytes (not parsed JSON)")


# --------------------------------------------------------------------------------------------- events


class PayloadError(ValueError):
    """A delivery whose headers or body do not have the shape of spec section 6."""


@dataclass(frozen=True, slots=True)
class OrdersDownloaded:
    """New orders were pulled: follow up with ``POST /api/orders/List`` and ``UpdatedSince``."""

    EVENT: ClassVar[str] = "OrdersDownloaded"
    Marketplace: str
    Platform: str
    Country: str
    NewOrderCount: int
    UserPlatformId: str


@dataclass(frozen=True, slots=True)
class ListingPublished:
    EVENT: ClassVar[str] = "ListingPublished"
    JourneyId: str
    UserPlatformId: str
    PublishedCount: int
    FailedCount: int


@dataclass(frozen=True, slots=True)
class FeedOutcome:
    """A feed was rejected outright (``Outcome`` "Rejected") or had per-item errors ("ProcessedWithErrors").
    Branch on ``Outcome``, not on human text."""

    EVENT: ClassVar[str] = "FeedOutcome"
    Marketplace: str
    UserPlatformId: str
    FeedKind: str
    Outcome: str
    Status: str
    FailedCount: int


@dataclass(frozen=True, slots=True)
class MarketplaceUnhealthy:
    EVENT: ClassVar[str] = "MarketplaceUnhealthy"
    Marketplace: str
    Platform: str
    UserPlatformId: str
    Reason: str
    Detail: str


@dataclass(frozen=True, slots=True)
class MarketplaceRestored:
    EVENT: ClassVar[str] = "MarketplaceRestored"
    Marketplace: str
    Platform: str
    UserPlatformId: str
    Reason: str
    Detail: str


@dataclass(frozen=True, slots=True)
class InventorySource:
    writer: str  # MasterMirror (a marketplace sync) or MerchantPush (API, app, file import)
    channel: str  # Api, FileImport or Marketplace
    userPlatformId: str | None  # the marketplace, when a mirror sent the change


@dataclass(frozen=True, slots=True)
class SkuChange:
    sku: str
    price: Decimal | None  # None: the price did not change (0 would be a real value)
    quantity: int | None  # None: the quantity did not change (0 means none in stock)


@dataclass(frozen=True, slots=True)
class InventoryChanged:
    """Price or stock moved. When ``truncated`` (more than 500 SKUs), re-read the catalogue instead of trusting
    the partial ``changed`` list."""

    EVENT: ClassVar[str] = "InventoryChanged"
    occurredAt: datetime
    source: InventorySource
    changed: tuple[SkuChange, ...]
    truncated: bool
    totalChanged: int


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event this version does not know: events may be added, so receivers ignore what they do not handle."""

    EVENT: ClassVar[str] = ""
    name: str
    payload: dict[str, Any]


Event = (
    OrdersDownloaded
    | ListingPublished
    | FeedOutcome
    | MarketplaceUnhealthy
    | MarketplaceRestored
    | InventoryChanged
    | UnknownEvent
)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery: its headers' facts and the typed event. De-duplicate on ``delivery_id`` (identical across
    retries of the same logical delivery). ``is_test``: a test event (``send_test_webhook``, the app's sample),
    whose payload names nothing real: acknowledge it and do not act on it."""

    delivery_id: str
    event_type: str
    attempt: int
    timestamp: int
    event: Event
    is_test: bool = False


T = TypeVar("T")


def _get(payload: Mapping[str, Any], name: str, kind: type[T]) -> T:
    if name not in payload:
        raise PayloadError(f"{name} is missing")
    value = payload[name]
    # bool is an int in Python, never in JSON.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise PayloadError(f"{name} must be {kind.__name__}")
    return value


def _get_nullable(payload: Mapping[str, Any], name: str, kind: type[T]) -> T | None:
    if name in payload and payload[name] is None:
        return None
    return _get(payload, name, kind)


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise PayloadError(f"{where} must be an object")
    return value


def _timestamp(payload: Mapping[str, Any], name: str) -> datetime:
    text = _get(payload, name, str)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise PayloadError(f"{name} is not an ISO 8601 timestamp") from None
    if parsed.tzinfo is None:
        raise PayloadError(f"{name} has no UTC offset")
    return parsed


def _price(item: Mapping[str, Any]) -> Decimal | None:
    value = item.get("price")
    if value is None:
        if "price" not in item:
            raise PayloadError("changed[].price is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise PayloadError("changed[].price must be a number or null")
    return Decimal(value)


def _inventory_changed(payload: Mapping[str, Any]) -> InventoryChanged:
    source = _object(payload.get("source"), "source")
    changed = _get(payload, "changed", list)
    items = []
    for entry in changed:
        item = _object(entry, "changed[]")
        items.append(
            SkuChange(
                sku=_get(item, "sku", str),
                price=_price(item),
                quantity=_get_nullable(item, "quantity", int),
            )
        )
    return InventoryChanged(
        occurredAt=_timestamp(payload, "occurredAt"),
        source=InventorySource(
            writer=_get(source, "writer", str),
            channel=_get(source, "channel", str),
            userPlatformId=_get_nullable(source, "userPlatformId", str),
        ),
        changed=tuple(items),
        truncated=_get(payload, "truncated", bool),
        totalChanged=_get(payload, "totalChanged", int),
    )


def _notification(cls: type[T], fields: Mapping[str, type[Any]]) -> Callable[[Mapping[str, Any]], T]:
    def parse(payload: Mapping[str, Any]) -> T:
        return cls(**{name: _get(payload, name, kind) for name, kind in fields.items()})

    return parse


_MARKETPLACE_HEALTH: dict[str, type[Any]] = {
    "Marketplace": str,
    "Platform": str,
    "UserPlatformId": str,
    "Reason": str,
    "Detail": str,
}
_PARSERS: dict[str, Callable[[Mapping[str, Any]], Event]] = {
    "OrdersDownloaded": _notification(
        OrdersDownloaded,
        {"Marketplace": str, "Platform": str, "Country": str, "NewOrderCount": int, "UserPlatformId": str},
    ),
    "ListingPublished": _notification(
        ListingPublished, {"JourneyId": str, "UserPlatformId": str, "PublishedCount": int, "FailedCount": int}
    ),
    "FeedOutcome": _notification(
        FeedOutcome,
        {
            "Marketplace": str,
            "UserPlatformId": str,
            "FeedKind": str,
            "Outcome": str,
            "Status": str,
            "FailedCount": int,
        },
    ),
    "MarketplaceUnhealthy": _notification(MarketplaceUnhealthy, _MARKETPLACE_HEALTH),
    "MarketplaceRestored": _notification(MarketplaceRestored, _MARKETPLACE_HEALTH),
    "InventoryChanged": _inventory_changed,
}
EVENT_TYPES: tuple[str, ...] = tuple(_PARSERS)


def parse_event(headers: Headers | Mapping[str, str], body: Body) -> Event:
    """The typed event of a delivery, chosen by ``X-SVC-Event``; an unknown name gives `UnknownEvent`.

    Extra payload fields are ignored (events may grow). Prices are exact decimals. Does not verify: call
    `verify_or_raise` first (or use `construct_event`).
    """
    return _parsed(headers, body)[0]


def _parsed(headers: Headers | Mapping[str, str], body: Body) -> tuple[Event, Mapping[str, Any]]:
    name = header(headers, HEADER_EVENT)
    if not name:
        raise PayloadError(f"no {HEADER_EVENT} header")
    try:
        # parse_float=Decimal: a price arrives as a JSON number and must not pass through a binary float.
        payload = json.loads(_raw(body), parse_float=Decimal)
    except (ValueError, RecursionError):
        raise PayloadError("the body is not JSON") from None
    payload = _object(payload, "the body")
    parser = _PARSERS.get(name)
    if parser is None:
        return UnknownEvent(name=name, payload=dict(payload)), payload
    return parser(payload), payload


def parse_delivery(headers: Headers | Mapping[str, str], body: Body) -> Delivery:
    """The delivery's id, event name, attempt and timestamp with its typed event. Does not verify."""
    delivery_id = header(headers, HEADER_DELIVERY_ID)
    if not delivery_id:
        raise PayloadError(f"no {HEADER_DELIVERY_ID} header")
    attempt = (header(headers, HEADER_ATTEMPT) or "").strip()
    timestamp = (header(headers, HEADER_TIMESTAMP) or "").strip()
    if not _UNIX_SECONDS.fullmatch(attempt) or not _UNIX_SECONDS.fullmatch(timestamp):
        raise PayloadError(f"{HEADER_ATTEMPT} and {HEADER_TIMESTAMP} must be whole numbers")
    event, payload = _parsed(headers, body)
    name = event.name if isinstance(event, UnknownEvent) else event.EVENT
    return Delivery(
        delivery_id=delivery_id,
        event_type=name,
        attempt=int(attempt),
        timestamp=int(timestamp),
        event=event,
        is_test=any(payload.get(marker) is True for marker in TEST_MARKERS),
    )


def construct_event(
    secret: Secret | Iterable[Secret],
    headers: Headers | Mapping[str, str],
    body: Body,
    now: datetime | float | None = None,
    *,
    tolerance: int = TOLERANCE_S,
) -> Delivery:
    """Verify, then parse: raises `VerificationError` (answer 401) or `PayloadError` (answer 400)."""
    verify_or_raise(secret, headers, body, now, tolerance=tolerance)
    return parse_delivery(headers, body)
