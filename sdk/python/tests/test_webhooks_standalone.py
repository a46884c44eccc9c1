"""marketsync_client.webhooks without a server: standard library only, and what parsing accepts and refuses."""

from __future__ import annotations

import email.parser
import http.client
import json
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import marketsync_client.webhooks as webhooks
import pytest
from marketsync_client.webhooks import PayloadError

MODULE = Path(webhooks.__file__)
SECRET = "whsec_test"
INVENTORY = {
    "occurredAt": "2026-01-01T00:00:00.000Z",
    "source": {"writer": "MerchantPush", "channel": "FileImport", "userPlatformId": None},
    "changed": [{"sku": "A", "price": 12, "quantity": None}],
    "truncated": True,
    "totalChanged": 501,
}


def delivery_headers(body: bytes, event: str = "InventoryChanged", ts: int | None = None) -> dict[str, str]:
    stamp = int(time.time()) if ts is None else ts
    return {
        "X-SVC-Signature": webhooks.sign(SECRET, stamp, body),
        "X-SVC-Timestamp": str(stamp),
        "X-SVC-Event": event,
        "X-SVC-Delivery-Id": "D-1",
        "X-SVC-Attempt": "2",
    }


def test_the_module_runs_on_the_standard_library_alone() -> None:
    # -I -S: no site-packages at all (so no httpx or pydantic to fall back on), the file loaded by its path.
    script = f"""
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("standalone_webhooks", {str(MODULE)!r})
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
body = b'{{"JourneyId": "J", "UserPlatformId": "U", "PublishedCount": 1, "FailedCount": 0}}'
ts = int(time.time())
headers = {{"X-SVC-Signature": module.sign("s", ts, body), "X-SVC-Timestamp": str(ts),
           "X-SVC-Event": "ListingPublished", "X-SVC-Delivery-Id": "D", "X-SVC-Attempt": "1"}}
delivery = module.construct_event("s", headers, body)
print(json.dumps([type(delivery.event).__name__, delivery.event.PublishedCount,
                  sorted(m for m in sys.modules if m.split(".")[0] in ("httpx", "pydantic", "marketsync_client"))]))
"""
    result = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == ["ListingPublished", 1, []]


def test_importing_the_webhooks_module_does_not_import_the_client() -> None:
    script = (
        "import sys, marketsync_client.webhooks; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'pydantic')))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_http_server_headers_work_as_they_come() -> None:
    body = json.dumps(INVENTORY).encode()
    raw = "".join(f"{k.lower()}: {v}\r\n" for k, v in delivery_headers(body).items()) + "\r\n"
    message = email.parser.Parser(_class=http.client.HTTPMessage).parsestr(raw)
    delivery = webhooks.construct_event(SECRET, message, body)
    assert (delivery.delivery_id, delivery.attempt, delivery.event_type) == ("D-1", 2, "InventoryChanged")
    event = delivery.event
    assert isinstance(event, webhooks.InventoryChanged)
    # A whole-number price is still a Decimal; truncated events say to re-read.
    assert event.changed == (webhooks.SkuChange("A", Decimal(12), None),)
    assert (event.truncated, event.totalChanged, event.source.userPlatformId) == (True, 501, None)


def test_unknown_events_are_kept_not_refused_and_extra_fields_are_ignored() -> None:
    body = b'{"Anything": 1}'
    event = webhooks.parse_event(delivery_headers(body, "SomethingNew"), body)
    assert event == webhooks.UnknownEvent(name="SomethingNew", payload={"Anything": 1})
    grown = {**INVENTORY, "newField": "x"}
    parsed = webhooks.parse_event(delivery_headers(b""), json.dumps(grown).encode())
    assert isinstance(parsed, webhooks.InventoryChanged) and parsed.totalChanged == 501


@pytest.mark.parametrize(
    ("event", "payload", "message"),
    [
        ("InventoryChanged", {**INVENTORY, "totalChanged": True}, "totalChanged must be int"),
        ("InventoryChanged", {**INVENTORY, "truncated": None}, "truncated must be bool"),
        ("InventoryChanged", {**INVENTORY, "occurredAt": "2026-01-01T00:00:00"}, "occurredAt has no UTC offset"),
        ("InventoryChanged", {**INVENTORY, "occurredAt": "yesterday"}, "occurredAt is not an ISO 8601"),
        ("InventoryChanged", {**INVENTORY, "source": None}, "source must be an object"),
        ("InventoryChanged", {**INVENTORY, "changed": [{"sku": "A", "quantity": 1}]}, "price is missing"),
        ("InventoryChanged", {**INVENTORY, "changed": [{"sku": "A", "price": "1", "quantity": 1}]}, "number"),
        ("InventoryChanged", {**INVENTORY, "changed": [{"sku": "A", "price": None, "quantity": 1.5}]}, "quantity"),
        ("OrdersDownloaded", {"Marketplace": "P1 UK", "Platform": "P1"}, "Country is missing"),
        ("FeedOutcome", [], "the body must be an object"),
    ],
)
def test_malformed_payloads_are_refused_by_name(event: str, payload: object, message: str) -> None:
    body = json.dumps(payload).encode()
    with pytest.raises(PayloadError, match=message):
        webhooks.parse_event(delivery_headers(body, event), body)


def test_malformed_deliveries_are_refused() -> None:
    body = json.dumps(INVENTORY).encode()
    headers = delivery_headers(body)
    with pytest.raises(PayloadError, match="not JSON"):
        webhooks.parse_event(headers, b"{")
    with pytest.raises(PayloadError, match="X-SVC-Event"):
        webhooks.parse_event({k: v for k, v in headers.items() if k != "X-SVC-Event"}, body)
    with pytest.raises(PayloadError, match="X-SVC-Delivery-Id"):
        webhooks.parse_delivery({k: v for k, v in headers.items() if k != "X-SVC-Delivery-Id"}, body)
    with pytest.raises(PayloadError, match="whole numbers"):
        webhooks.parse_delivery({**headers, "X-SVC-Attempt": "first"}, body)
    with pytest.raises(TypeError, match="raw request bytes"):
        webhooks.verify(SECRET, headers, INVENTORY)  # type: ignore[arg-type]
    # construct_event verifies before it parses: a bad signature is a VerificationError, not a parse.
    with pytest.raises(webhooks.VerificationError):
        webhooks.construct_event("wrong", headers, body)
