"""`marketsync dev listen`: the integrator's local loop, like `stripe listen` (docs/decisions/0422).

It subscribes through the public API with the integrator's credential (the SDK, scope WebhooksWrite), receives the
deliveries on a loopback HTTP listener of its own, verifies each one with the SDK's verifier, prints it, forwards it
byte for byte with its original headers to the integrator's local receiver (so their verifier works too) and answers
the service with the receiver's status (so retries happen as they would in production). It deletes its
subscription when it stops (Ctrl-C, SIGTERM), whether or not the receiver was ever up.

The service must run in dev mode (MARKETSYNC_DEV_MODE, as `make run` does) to deliver to a loopback listener.
This module is an API client: it never opens the service's database.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

import httpx
import uvicorn

from marketsync.kit import jsonio

if TYPE_CHECKING:
    from marketsync_client import AsyncClient

LISTEN_HOST = "127.0.0.1"
LISTEN_PATH = "/marketsync-dev-listen"
# The service gives a receiver 10 s (spec section 6); the forward gets a little less, so that the service hears the
# receiver's answer (or this listener's 504) before its own deadline.
FORWARD_TIMEOUT_S = 9.0
BODY_SHOWN = 300  # characters of the compact body printed per delivery
MAX_BODY = 8 * 1024 * 1024
# Not forwarded: they describe this hop, not the delivery (httpx sets its own Host, length and connection).
HOP_HEADERS = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade"})
SCOPES = ("WebhooksWrite",)
NOT_IN_DEV_MODE = (
    "the service refused the loopback listener's URL: run it in dev mode (MARKETSYNC_DEV_MODE=true on SQLite with "
    "a loopback MARKETSYNC_BASE_URL, as `make run` does)"
)


class ListenError(Exception):
    """dev listen cannot start; the message says what to fix."""


@dataclass(frozen=True)
class Options:
    forward_to: str
    api_url: str
    client_id: str
    client_secret: str
    event_types: Sequence[str]
    port: int = 0
    send_test: bool = False
    as_json: bool = False


@dataclass
class Printer:
    """What dev listen says: human lines, or with --json one JSON object per line (JSON Lines), both on stdout."""

    as_json: bool
    out: TextIO = field(default_factory=lambda: sys.stdout)

    def say(self, kind: str, human: str, **facts: Any) -> None:
        if self.as_json:
            self.out.write(jsonio.dumps({"Kind": kind, **facts}).decode() + "\n")
        else:
            self.out.write(human + "\n")
        self.out.flush()


def check_forward_to(url: str) -> str:
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        raise ListenError(f"--forward-to {url!r} is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ListenError(f"--forward-to {url!r} must be an absolute http(s) URL, e.g. http://127.0.0.1:8001/hooks")
    return url


def compact(body: bytes) -> str:
    """The body on one line, shortened for the terminal (the receiver gets every byte)."""
    text = body.decode("utf-8", errors="replace").replace("\n", " ")
    return text if len(text) <= BODY_SHOWN else text[: BODY_SHOWN - 1] + "…"


Handler = Callable[[dict[str, str], bytes], Awaitable[tuple[int, bytes]]]


class Listener:
    """A minimal ASGI app: every POST goes to `handle` with its raw headers and bytes."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await _answer(send, 405, b"POST only\n")
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                await _answer(send, 413, b"too large\n")
                return
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        status, answer = await self.handle(headers, bytes(body))
        await _answer(send, status, answer)


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # SIGINT and SIGTERM belong to dev listen: it deletes its subscription before it exits


@contextlib.asynccontextmanager
async def serving(app: Listener, port: int) -> AsyncIterator[int]:
    config = uvicorn.Config(
        app, host=LISTEN_HOST, port=port, log_config=None, access_log=False, lifespan="off", ws="none",
        timeout_graceful_shutdown=2,
    )  # fmt: skip
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # a port in use ends serve() at once
            raise ListenError(f"cannot listen on {LISTEN_HOST}:{port}")
        await asyncio.sleep(0.01)
    try:
        yield int(server.servers[0].sockets[0].getsockname()[1])
    finally:
        server.should_exit = True
        await task


class Forwarder:
    """Verify, print and forward one delivery; answer the service with what the receiver answered."""

    def __init__(self, options: Options, secret: str, printer: Printer, http: httpx.AsyncClient) -> None:
        self.options = options
        self.secret = secret
        self.printer = printer
        self.http = http

    async def __call__(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        from marketsync_client import webhooks

        try:
            webhooks.verify_or_raise(self.secret, headers, body)
        except webhooks.VerificationError as refused:
            self.printer.say(
                "Refused", f"!!  refused a delivery that does not verify ({refused.reason.value}): not forwarded",
                Reason=refused.reason.value,
            )  # fmt: skip
            return 401, f"{refused.reason.value}\n".encode()
        event = webhooks.header(headers, webhooks.HEADER_EVENT) or "?"
        delivery_id = webhooks.header(headers, webhooks.HEADER_DELIVERY_ID) or "?"
        attempt = webhooks.header(headers, webhooks.HEADER_ATTEMPT) or "?"
        try:
            is_test = webhooks.parse_delivery(headers, body).is_test
        except webhooks.PayloadError:
            is_test = False
        at = datetime.now(UTC).strftime("%H:%M:%S")
        self.printer.say(
            "Delivery",
            f"{at} --> {event}  delivery {delivery_id}  attempt {attempt}{'  [test]' if is_test else ''}  "
            f"verified\n      {compact(body)}",
            Event=event, DeliveryId=delivery_id, Attempt=attempt, IsTest=is_test, Verified=True, Body=compact(body),
        )  # fmt: skip
        return await self.forward(headers, body, delivery_id)

    async def forward(self, headers: dict[str, str], body: bytes, delivery_id: str) -> tuple[int, bytes]:
        target = self.options.forward_to
        sent = {name: value for name, value in headers.items() if name.lower() not in HOP_HEADERS}
        began = time.perf_counter()
        try:
            response = await self.http.post(target, content=body, headers=sent)
        except httpx.TimeoutException:
            self.printer.say(
                "Forwarded", f"<-- no answer from {target} within {FORWARD_TIMEOUT_S:g} s: the service will retry",
                DeliveryId=delivery_id, Status=None, Error="Timeout",
            )  # fmt: skip
            return 504, b"the local receiver did not answer in time\n"
        except httpx.HTTPError as exc:
            self.printer.say(
                "Forwarded", f"<-- cannot reach {target} ({type(exc).__name__}): the service will retry",
                DeliveryId=delivery_id, Status=None, Error=type(exc).__name__,
            )  # fmt: skip
            return 502, b"the local receiver is unreachable\n"
        elapsed = int((time.perf_counter() - began) * 1000)
        self.printer.say(
            "Forwarded", f"<-- {response.status_code} from {target} ({elapsed} ms)",
            DeliveryId=delivery_id, Status=response.status_code, DurationMs=elapsed,
        )  # fmt: skip
        return response.status_code, response.content[:1024]


def client_of(options: Options) -> AsyncClient:
    try:
        from marketsync_client import AsyncClient
    except ImportError:  # the SDK is its own package (sdk/python); `make install` puts it beside the service
        raise ListenError("dev listen needs the SDK: pip install sdk/python") from None
    return AsyncClient(options.client_id, options.client_secret, base_url=options.api_url, scopes=list(SCOPES))


async def listen(options: Options, stop: asyncio.Event, printer: Printer) -> int:
    """Subscribe, forward until `stop` is set, then delete the subscription. The exit status: 0, or 1 when the
    subscription could not be deleted (it is then named, to delete by hand)."""
    check_forward_to(options.forward_to)
    api = client_of(options)
    from marketsync_client import ApiError, MarketsyncError

    forward_http = httpx.AsyncClient(timeout=FORWARD_TIMEOUT_S, trust_env=False, follow_redirects=False)
    secret_box: dict[str, Forwarder] = {}

    async def handle(headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        forwarder = secret_box.get("forwarder")
        if forwarder is None:  # a delivery before the create's answer: cannot be verified yet, so it is retried
            return 503, b"not ready\n"
        return await forwarder(headers, body)

    try:
        async with serving(Listener(handle), options.port) as port:
            url = f"http://{LISTEN_HOST}:{port}{LISTEN_PATH}"
            try:
                created = await api.create_webhook(url, list(options.event_types))
            except ApiError as exc:
                if exc.status == 400 and "Url" in (exc.errors or {}):
                    raise ListenError(NOT_IN_DEV_MODE) from None
                raise ListenError(f"cannot subscribe: {exc}") from None
            except MarketsyncError as exc:
                raise ListenError(f"cannot subscribe through {options.api_url}: {exc}") from None
            subscription = created.Subscription
            secret = subscription.Secret or ""
            secret_box["forwarder"] = Forwarder(options, secret, printer, forward_http)
            printer.say(
                "Ready",
                f"Listening on {url} for {', '.join(subscription.EventTypes)}\n"
                f"  subscription   {subscription.SubscriptionId} (deleted when this stops)\n"
                f"  signing secret {secret}\n"
                f"                 give it to your receiver, e.g. export WEBHOOK_SECRET={secret}\n"
                f"  forwarding to  {options.forward_to}\n"
                "Ctrl-C to stop.",
                SubscriptionId=subscription.SubscriptionId, Secret=secret, Url=url,
                EventTypes=list(subscription.EventTypes), ForwardTo=options.forward_to,
            )  # fmt: skip
            try:
                if options.send_test:
                    sent = await api.send_test_webhook(subscription.SubscriptionId)
                    printer.say(
                        "TestSent", f"Sent a test {sent.EventType} (delivery {sent.DeliveryId})",
                        EventType=sent.EventType, DeliveryId=sent.DeliveryId,
                    )  # fmt: skip
                await stop.wait()
            finally:
                status = await _unsubscribe(api, subscription.SubscriptionId, printer)
            return status
    finally:
        await forward_http.aclose()
        await api.close()


async def _unsubscribe(api: AsyncClient, subscription_id: str, printer: Printer) -> int:
    from marketsync_client import MarketsyncError, NotFound

    try:
        await api.delete_webhook(subscription_id)
    except NotFound:
        pass  # deleted already (in the app, or by hand)
    except MarketsyncError as exc:
        printer.say(
            "Stopped", f"Could not delete subscription {subscription_id} ({exc}): delete it in the app or with "
            "POST /api/webhooks/Delete",
            SubscriptionId=subscription_id, Deleted=False,
        )  # fmt: skip
        return 1
    printer.say("Stopped", f"Deleted subscription {subscription_id}.", SubscriptionId=subscription_id, Deleted=True)
    return 0


def run(options: Options) -> int:
    """The command's body: SIGINT and SIGTERM stop the loop, and the subscription is deleted before exit."""
    printer = Printer(options.as_json)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await listen(options, stop, printer)

    return asyncio.run(main())
