#!/usr/bin/env python3
"""A webhook receiver on the SDK: verify every delivery, acknowledge at once, process afterwards on a worker
thread, and keep a stock mirror converged (de-duplicated by delivery id, only differences applied).

The service delivers to https URLs only: terminate TLS here (--certfile) or in front of this process. Locally,
`marketsync dev listen --forward-to http://127.0.0.1:8443/` forwards to it over plain http (README, "Receiving
webhooks").

    python sdk/python/examples/webhook_receiver.py --secret="$WEBHOOK_SECRET" --port 8443 --certfile cert.pem

Each processed delivery is printed as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from marketsync_client import InventoryMirror, webhooks

MAX_BODY = 1024 * 1024


def make_handler(secret: str, inbox: queue.Queue[webhooks.Delivery]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.send_error(413)
                return
            body = self.rfile.read(length)  # the raw bytes: what was signed
            try:
                delivery = webhooks.construct_event(secret, self.headers, body)
            except webhooks.VerificationError as refused:
                self.send_error(401, refused.reason.value)
                return
            except webhooks.PayloadError as malformed:
                self.send_error(400, str(malformed))
                return
            inbox.put(delivery)  # acknowledge first: the service waits at most 10 seconds for a 2xx
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
    args = parser.parse_args(argv)
    if not args.secret:
        parser.error("--secret (or WEBHOOK_SECRET) is required")

    inbox: queue.Queue[webhooks.Delivery] = queue.Queue()
    mirror = InventoryMirror()

    def worker() -> None:
        while True:
            delivery = inbox.get()
            outcome: dict[str, Any] = {"delivery": delivery.delivery_id, "event": delivery.event_type}
            event = delivery.event
            if delivery.is_test:  # send_test_webhook or the app's sample: it names nothing real
                outcome["test"] = "acknowledged, nothing to apply"
            elif isinstance(event, webhooks.InventoryChanged):
                applied = mirror.apply_delivery(delivery)
                outcome["applied"] = [
                    {"sku": d.sku, "price": None if d.price is None else str(d.price), "quantity": d.quantity}
                    for d in applied
                ]
                if event.truncated:
                    outcome["reread"] = "more than 500 SKUs changed: run InventoryMirror.reconcile"
            elif isinstance(event, webhooks.OrdersDownloaded):
                outcome["fetch"] = f"{event.NewOrderCount} new order(s): iter_orders(updated_since=...)"
            elif isinstance(event, webhooks.UnknownEvent):
                outcome["ignored"] = "an event this version does not know"
            print(json.dumps(outcome), flush=True)

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
    main()
