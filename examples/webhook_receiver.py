#!/usr/bin/env python3
"""A runnable example receiver for marketsync webhooks (Python standard library only).

It follows the receiver obligations of the interface spec (section 6):

* verify every delivery (timestamp within 300 s, derived key, raw body, constant-time compare) and answer
  401 to anything that does not verify;
* acknowledge first (answer 200 at once) and process afterwards, on a worker thread;
* de-duplicate on X-SVC-Delivery-Id: a retry of a delivery already processed is skipped;
* for InventoryChanged, compare incoming values with what it holds and apply only differences (which also
  makes it idempotent, and catches app edits that carry writer MerchantPush); optionally ignore its own
  API writes (`--ignore-api-channel`);
* other events are notifications: it prints what to fetch through the API.

Run it (the service only delivers to https URLs; terminate TLS here or in front of it):

    python examples/webhook_receiver.py --secret="$WEBHOOK_SECRET" --port 8443 \\
        --certfile cert.pem --keyfile key.pem --state receiver.db

Each processed delivery is printed as one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import queue
import sqlite3
import ssl
import sys
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOLERANCE_S = 300
MAX_BODY = 1024 * 1024


def verify(secret: str, headers: Any, body: bytes, now: float | None = None) -> bool:
    """Spec section 6, steps 1-4 (the same algorithm as marketsync.webhooks.verify)."""
    timestamp = headers.get("X-SVC-Timestamp", "")
    given = headers.get("X-SVC-Signature", "")
    # ASCII digits only: str.isdigit() also accepts "²" and other scripts' digits, which int() then refuses.
    if not (timestamp.isascii() and timestamp.isdigit()) or not given:
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > TOLERANCE_S:
        return False
    key = hmac.new(secret.encode(), b"service.webhook.v1", hashlib.sha256).digest()
    expected = "v1=" + hmac.new(key, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(part.strip().encode(), expected.encode()) for part in given.split(","))


class Store:
    """What this receiver holds: processed delivery ids and its own view of price and stock."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS deliveries (id TEXT PRIMARY KEY, processed_at REAL)")
        self.db.execute("CREATE TABLE IF NOT EXISTS stock (sku TEXT PRIMARY KEY, price TEXT, quantity INTEGER)")
        self.db.commit()

    def first_time(self, delivery_id: str) -> bool:
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO deliveries (id, processed_at) VALUES (?, ?)", (delivery_id, time.time())
        )
        return cursor.rowcount == 1

    def apply_differences(self, changed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        applied = []
        for item in changed:
            sku = item["sku"]
            row = self.db.execute("SELECT price, quantity FROM stock WHERE sku = ?", (sku,)).fetchone()
            held_price, held_quantity = row if row else (None, None)
            update: dict[str, Any] = {}
            # null means "did not change" (so quantity 0 is a real value); apply only what differs from ours.
            # Prices are compared as exact decimals: 10.5 and 10.50 are one price, not a difference.
            price = item.get("price")
            if price is not None and (held_price is None or Decimal(held_price) != price):
                update["price"] = str(price)
            if item.get("quantity") is not None and item["quantity"] != held_quantity:
                update["quantity"] = item["quantity"]
            if update:
                self.db.execute(
                    "INSERT INTO stock (sku, price, quantity) VALUES (?, ?, ?) ON CONFLICT(sku) DO UPDATE SET "
                    "price = coalesce(?, price), quantity = coalesce(?, quantity)",
                    (sku, update.get("price"), update.get("quantity"), update.get("price"), update.get("quantity")),
                )
                applied.append({"sku": sku, **update})
        return applied


def process(store: Store, delivery_id: str, event: str, body: bytes, ignore_api: bool) -> dict[str, Any]:
    outcome: dict[str, Any] = {"delivery": delivery_id, "event": event}
    if not store.first_time(delivery_id):
        outcome["duplicate"] = True  # a retry of something already handled
        store.db.commit()
        return outcome
    # parse_float=Decimal: a price is an exact decimal and must not pass through a binary float.
    payload = json.loads(body, parse_float=Decimal)
    if event == "InventoryChanged":
        source = payload.get("source", {})
        if ignore_api and source.get("channel") == "Api":
            outcome["ignored"] = "own API write"
        else:
            outcome["applied"] = store.apply_differences(payload.get("changed", []))
            if payload.get("truncated"):
                outcome["reread"] = "more than 500 SKUs changed: re-read with POST /api/products/List"
    elif event == "OrdersDownloaded":
        outcome["fetch"] = "POST /api/orders/List with UpdatedSince"
    elif event in ("MarketplaceUnhealthy", "MarketplaceRestored", "FeedOutcome", "ListingPublished"):
        outcome["fetch"] = "GET /api/marketplaces (or the job) for details"
    # Unknown event names are ignored: events may be added, never renamed.
    store.db.commit()
    return outcome


def process_safely(store: Store, delivery_id: str, event: str, body: bytes, ignore_api: bool) -> dict[str, Any]:
    """`process`, but a failure (a locked or full disk, a payload it cannot read) is reported and rolled back
    instead of ending the worker: a dead worker would leave the server acknowledging deliveries nobody processes.
    The delivery stays unrecorded; the next reconciliation pass (POST /api/products/List) covers what it carried."""
    try:
        return process(store, delivery_id, event, body, ignore_api)
    except Exception as failure:
        store.db.rollback()
        return {"delivery": delivery_id, "event": event, "error": f"{type(failure).__name__}: {failure}"}


def make_handler(secret: str, inbox: queue.Queue[tuple[str, str, bytes]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.send_error(413)
                return
            body = self.rfile.read(length)
            if not verify(secret, self.headers, body):
                self.send_error(401, "signature does not verify")
                return
            # Acknowledge first, process afterwards: the service waits at most 10 seconds for a 2xx.
            inbox.put((self.headers["X-SVC-Delivery-Id"], self.headers.get("X-SVC-Event", ""), body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8443, help="0 picks a free port (printed on start)")
    parser.add_argument("--secret", default=os.environ.get("WEBHOOK_SECRET"), help="or env WEBHOOK_SECRET")
    parser.add_argument("--certfile", help="PEM certificate chain (and key, unless --keyfile)")
    parser.add_argument("--keyfile")
    parser.add_argument("--state", default="receiver.db", help="SQLite file: processed deliveries, stock")
    parser.add_argument("--ignore-api-channel", action="store_true", help="skip InventoryChanged from API pushes")
    args = parser.parse_args(argv)
    if not args.secret:
        parser.error("--secret (or WEBHOOK_SECRET) is required")

    inbox: queue.Queue[tuple[str, str, bytes]] = queue.Queue()
    store = Store(args.state)

    def worker() -> None:
        while True:
            delivery_id, event, body = inbox.get()
            print(json.dumps(process_safely(store, delivery_id, event, body, args.ignore_api_channel)), flush=True)

    threading.Thread(target=worker, daemon=True).start()
    server = ThreadingHTTPServer((args.host, args.port), make_handler(args.secret, inbox))
    if args.certfile:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.certfile, args.keyfile)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(json.dumps({"listening": server.server_address[1]}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
