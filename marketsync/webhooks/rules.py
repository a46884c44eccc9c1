"""Pure webhook rules (no I/O): signing and verification, backoff, retry classification, URL and address policy."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from urllib.parse import urlsplit

import idna

# The events the outbox records and subscriptions name (webhooks/outbox.py records them).
EVENT_TYPES = (
    "OrdersDownloaded",
    "ListingPublished",
    "FeedOutcome",
    "MarketplaceUnhealthy",
    "MarketplaceRestored",
    "InventoryChanged",
)

# --- signing (spec section 6) -------------------------------------------------------------------------------

SIGNATURE_SCHEME = "v1"
KEY_CONTEXT = b"service.webhook.v1"
TIMESTAMP_TOLERANCE_S = 300

HEADER_SIGNATURE = "X-SVC-Signature"
HEADER_TIMESTAMP = "X-SVC-Timestamp"
HEADER_EVENT = "X-SVC-Event"
HEADER_DELIVERY_ID = "X-SVC-Delivery-Id"
HEADER_ATTEMPT = "X-SVC-Attempt"
# On a test event's deliveries only (docs/decisions/0421); the payload carries the same marker, under the signature.
HEADER_TEST = "X-SVC-Test"


def derive_key(secret: str) -> bytes:
    """key = HMAC-SHA256(key=<signing secret as UTF-8>, message="service.webhook.v1"): never the raw secret."""
    return hmac.new(secret.encode(), KEY_CONTEXT, hashlib.sha256).digest()


def signature(derived_key: bytes, timestamp: int, body: bytes) -> str:
    """`v1=` + lower-case hex HMAC-SHA256(derived key, "<timestamp>." + raw body bytes)."""
    mac = hmac.new(derived_key, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_SCHEME}={mac}"


def delivery_headers(
    derived_key: bytes,
    timestamp: int,
    body: bytes,
    event_type: str,
    delivery_id: str,
    attempt: int,
    *,
    is_test: bool = False,
) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        HEADER_SIGNATURE: signature(derived_key, timestamp, body),
        HEADER_TIMESTAMP: str(timestamp),
        HEADER_EVENT: event_type,
        HEADER_DELIVERY_ID: delivery_id,
        HEADER_ATTEMPT: str(attempt),
    }
    if is_test:
        headers[HEADER_TEST] = "true"
    return headers


def _header(headers: Mapping[str, str], name: str) -> str | None:
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


_TIMESTAMP = re.compile(r"[0-9]{1,12}")


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    now: datetime | float | None = None,
) -> bool:
    """Spec section 6 steps 1-4: timestamp within 300 s either way, derived key, raw body, constant-time compare.

    `headers` may be any mapping (header names are matched case-insensitively); `body` must be the raw
    request bytes, never re-serialised JSON. `now` is a datetime or Unix seconds (default: the current time).
    """
    raw_timestamp = _header(headers, HEADER_TIMESTAMP)
    given = _header(headers, HEADER_SIGNATURE)
    # ASCII digits only, a Unix time's count of them at most: int() refuses "²", which isdigit() lets through.
    if raw_timestamp is None or given is None or not _TIMESTAMP.fullmatch(raw_timestamp.strip()):
        return False
    timestamp = int(raw_timestamp.strip())
    if now is None:
        current = datetime.now(UTC).timestamp()
    elif isinstance(now, datetime):
        current = now.timestamp()
    else:
        current = float(now)
    if abs(current - timestamp) > TIMESTAMP_TOLERANCE_S:
        return False
    expected = signature(derive_key(secret), timestamp, body)
    # Several comma-separated signatures may be present while a scheme is being replaced (spec section 9).
    matched = False
    for candidate in given.split(","):
        matched |= hmac.compare_digest(candidate.strip().encode(), expected.encode())
    return matched


# --- retries (spec sections 3, 6, 8) -----------------------------------------------------------------------------

BACKOFF_STEPS_S: tuple[int, ...] = (60, 300, 900, 3600, 3 * 3600, 6 * 3600)
MAX_ATTEMPTS = len(BACKOFF_STEPS_S) + 1  # seven attempts over roughly half a day
DISABLE_AFTER_FAILED_DELIVERIES = 6
ATTEMPT_LOG_RETENTION = timedelta(days=30)
SNIPPET_BYTES = 1024


def retry_delay(attempt: int, scale: float) -> timedelta | None:
    """Delay before the attempt that follows failed attempt number `attempt` (1-based); None once exhausted."""
    if attempt < 1 or attempt > len(BACKOFF_STEPS_S):
        return None
    return timedelta(seconds=BACKOFF_STEPS_S[attempt - 1] * scale)


class Verdict(StrEnum):
    SUCCEEDED = "Succeeded"
    RETRY = "Retry"  # failed, another attempt may follow
    GIVE_UP = "GiveUp"  # failed, never retried (a 4xx other than 408/429)


def classify_status(status: int | None) -> Verdict:
    """2xx succeeds; 4xx is final except 408 and 429; any other status (3xx included) and no status retry."""
    if status is None:
        return Verdict.RETRY
    if 200 <= status < 300:
        return Verdict.SUCCEEDED
    if 400 <= status < 500 and status not in (408, 429):
        return Verdict.GIVE_UP
    return Verdict.RETRY


@dataclass(frozen=True)
class AttemptDecision:
    outcome: str  # Succeeded, Retrying, Failed
    next_attempt_in: timedelta | None
    delivery_failed: bool  # the logical delivery ended without success: counts toward disabling


def decide(status: int | None, attempt: int, scale: float, *, final: bool = False) -> AttemptDecision:
    """What one attempt's result means for its logical delivery (see docs/decisions/0101). `final`: a person sent
    it again, and a failed manual attempt gets no new backoff schedule (docs/decisions/0122)."""
    verdict = classify_status(status)
    if verdict is Verdict.SUCCEEDED:
        return AttemptDecision("Succeeded", None, False)
    delay = retry_delay(attempt, scale) if verdict is Verdict.RETRY and not final else None
    if delay is None:
        return AttemptDecision("Failed", None, True)
    return AttemptDecision("Retrying", delay, False)


def should_disable(consecutive_failures: int) -> bool:
    return consecutive_failures >= DISABLE_AFTER_FAILED_DELIVERIES


def disabled_reason(consecutive_failures: int, last_error: str) -> str:
    return f"Disabled after {consecutive_failures} consecutive failed deliveries (last: {last_error})."[:500]


# --- subscription input ------------------------------------------------------------------------------------------

MAX_URL_LENGTH = 2048
# What a host name may hold once in its DNS form (letters, digits, hyphens, underscores, dots; a trailing dot):
# anything else (%, @, a backslash) is a trick on some parser, never a name a resolver would look up.
_DNS_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")


def url_problems(url: str, *, dev_mode: bool = False) -> list[str]:
    """Shape checks on a subscription URL: absolute https, a host, no credentials. Address checks come after.

    In dev mode (docs/decisions/0420) plain http is accepted too, for a loopback host only (127.0.0.0/8, ::1,
    localhost): the local receiver of `marketsync dev listen`."""
    if len(url) > MAX_URL_LENGTH:
        return [f"Must be at most {MAX_URL_LENGTH} characters."]
    if any(c.isspace() or ord(c) < 32 for c in url):
        return ["Must not contain whitespace or control characters."]
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ["Must be an absolute https URL."]
    problem = _scheme_problem(parts.scheme.lower(), parts.hostname, dev_mode=dev_mode)
    if problem is None:
        problem = _host_problem(parts.hostname)
    if problem is None and (parts.username is not None or parts.password is not None):
        problem = "Must not carry credentials; authenticate deliveries with the signature instead."
    if problem is None and port == 0:
        problem = "Port 0 is not valid."
    return [] if problem is None else [problem]


def _scheme_problem(scheme: str, hostname: str | None, *, dev_mode: bool) -> str | None:
    if scheme == "https" or (dev_mode and scheme == "http" and is_loopback_name(hostname or "")):
        return None
    if dev_mode:
        return "Must be an absolute https URL (scheme https); http only to a loopback host in dev mode."
    return "Must be an absolute https URL (scheme https)."


def _host_problem(hostname: str | None) -> str | None:
    if not hostname:
        return "Must be an absolute https URL with a host."
    if parse_ip_literal(hostname) is not None:
        return None
    if looks_numeric(hostname):
        return "The host is not a valid IP address."
    try:
        dns_form = ascii_host(hostname)
    except ValueError:
        return "The host is not a valid (internationalised) domain name."
    if parse_ip_literal(dns_form) is None and (looks_numeric(dns_form) or not _DNS_NAME.fullmatch(dns_form)):
        return "The host is not a valid (internationalised) domain name."
    return None


def is_loopback_name(host: str) -> bool:
    """A host only this machine reaches, as written: `localhost`, or a loopback address (127.0.0.0/8, [::1])."""
    if host.lower().rstrip(".") == "localhost":
        return True
    literal = parse_ip_literal(host)
    return literal is not None and literal.is_loopback


def ascii_host(host: str) -> str:
    """The DNS form of a host name (IDNA 2008 with UTS 46 mapping): what is resolved and sent as Host and SNI.
    Raises ValueError for a name no DNS can hold."""
    if host.isascii():
        return host.lower()
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise ValueError(str(exc)) from None


def event_type_problems(event_types: Sequence[str]) -> dict[str, list[str]]:
    """At least one event; every name known (unknown names are rejected, not ignored); no repeats."""
    if not event_types:
        return {"EventTypes": ["At least one event type is required."]}
    problems: dict[str, list[str]] = {}
    seen: set[str] = set()
    for index, name in enumerate(event_types):
        key = f"EventTypes[{index}]"
        if name not in EVENT_TYPES:
            problems[key] = [f"Unknown event type {name!r}; known: {', '.join(EVENT_TYPES)}."]
        elif name in seen:
            problems[key] = [f"Event type {name!r} is listed twice."]
        seen.add(name)
    return problems


# --- address policy (SSRF) --------------------------------------------------------------------------------------

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_V4_REFUSED: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "CGNAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "reserved"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "reserved"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
)
_V6_REFUSED: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::ffff:0:0/96", "IPv4-mapped"),
    ("::ffff:0:0:0/96", "IPv4-translated"),
    ("::/96", "IPv4-compatible"),
    ("64:ff9b::/96", "IPv4-translated"),
    ("64:ff9b:1::/48", "IPv4-translated"),
    ("100::/64", "reserved"),
    ("2001::/32", "IPv4-translated"),  # Teredo
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "IPv4-translated"),  # 6to4
    ("3fff::/20", "documentation"),
    ("fc00::/7", "ULA"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "reserved"),
    ("ff00::/8", "multicast"),
)
_REFUSED = tuple((ipaddress.ip_network(net), reason) for net, reason in _V4_REFUSED + _V6_REFUSED)
# What dev mode adds to the allowed networks: this machine's loopback, nothing else (docs/decisions/0420).
DEV_MODE_NETWORKS: tuple[IPNetwork, ...] = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))


def address_refusal(address: IPAddress, allowed: Iterable[IPNetwork] = ()) -> str | None:
    """Why a delivery must not go to `address` (None: it may). Allowed networks override every refusal."""
    if any(address.version == net.version and address in net for net in allowed):
        return None
    for network, reason in _REFUSED:
        if address.version == network.version and address in network:
            return reason
    if not address.is_global:
        return "reserved"
    return None


# An IPv4 address as inet_aton (and so getaddrinfo) reads it: 1 to 4 parts, each decimal, octal (leading 0) or hex
# (0x): 2130706433, 0x7f000001, 0177.0.0.1 and 127.1 are all 127.0.0.1.
_NUMERIC_V4 = re.compile(r"(?i)(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}")


_NUMERIC_LABEL = re.compile(r"(?i)0x[0-9a-f]*|[0-9]+")


def looks_numeric(host: str) -> bool:
    """A host whose last label is a number: meant as an address, never a DNS name (no top-level domain is all
    numeric, RFC 3696 section 2)."""
    return _NUMERIC_LABEL.fullmatch(host.removesuffix(".").rpartition(".")[2]) is not None


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a host names literally, in every form a resolver would also accept (so none of them reaches a
    resolver): `[v6]`, dotted quads with a trailing dot, and inet_aton's decimal, octal and hex forms."""
    candidate = host.strip("[]")
    candidate = candidate.removesuffix(".") if candidate.count(".") and not candidate.endswith("..") else candidate
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        pass
    if _NUMERIC_V4.fullmatch(candidate):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(candidate))
        except OSError:
            return None
    return None


# --- samples (the app's "send a sample") ------------------------------------------------------------------------

# Names nothing: no connection, journey or product carries this id, so a receiver that looks it up finds nothing.
SAMPLE_ID = "00000000000000000000000000"
# The one SKU a sample InventoryChanged moves: it says what it is to anyone who reads it, and names no product.
SAMPLE_SKU = "SAMPLE-SKU"


def sample_payload(event_type: str, occurred_at: datetime) -> dict[str, object]:
    """A payload of the exact shape of spec section 6, as a real one looks, naming nothing real: InventoryChanged moves
    one SKU (`SAMPLE-SKU`) as a change made through the API; every id names nothing; free texts say "Sample"
    (docs/decisions/0122-webhook-repairs.md, 0403-sample-deliveries.md). A test event marks it (0421)."""
    marketplace = {"Marketplace": "P1 UK", "UserPlatformId": SAMPLE_ID}
    samples: dict[str, dict[str, object]] = {
        "InventoryChanged": {
            "occurredAt": occurred_at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "source": {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None},
            "changed": [{"sku": SAMPLE_SKU, "price": 19.99, "quantity": 7}],
            "truncated": False,
            "totalChanged": 1,
        },
        "OrdersDownloaded": {**marketplace, "Platform": "P1", "Country": "UK", "NewOrderCount": 0},
        "ListingPublished": {
            "JourneyId": SAMPLE_ID, "UserPlatformId": SAMPLE_ID, "PublishedCount": 0, "FailedCount": 0,
        },
        "FeedOutcome": {
            **marketplace, "FeedKind": "Price & stock", "Outcome": "ProcessedWithErrors", "Status": "Sample",
            "FailedCount": 0,
        },
        "MarketplaceUnhealthy": {**marketplace, "Platform": "P1", "Reason": "Sample", "Detail": "A sample delivery."},
        "MarketplaceRestored": {**marketplace, "Platform": "P1", "Reason": "Sample", "Detail": "A sample delivery."},
    }  # fmt: skip
    return samples[event_type]


# A test event's marker in its payload, in the payload's own naming (InventoryChanged is camelCase, the others
# PascalCase); real events never carry it (docs/decisions/0421).
TEST_MARKER = {"InventoryChanged": "isTest"}
TEST_MARKER_DEFAULT = "IsTest"


def marker_field(event_type: str) -> str:
    return TEST_MARKER.get(event_type, TEST_MARKER_DEFAULT)


def payload_of_test_event(event_type: str, occurred_at: datetime) -> dict[str, object]:
    """What a test event sends (the API's webhooks/Test, the app's "Send a sample"): the sample, marked as a test."""
    return {**sample_payload(event_type, occurred_at), marker_field(event_type): True}
