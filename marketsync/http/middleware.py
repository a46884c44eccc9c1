"""Pure ASGI middleware (no BaseHTTPMiddleware: it costs throughput): request id, access log, metrics,
body size (413), body deadline (408) and media type (415) guards; a client gone mid-body is a 499, not an error
(docs/decisions/0411-request-body-deadline.md)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import Counter, Histogram
from starlette.responses import Response

from marketsync.db import RequestsFirst, database_unavailable
from marketsync.http.errors import (
    BodyRefused,
    ValidationFailed,
    body_too_slow,
    internal_error_response,
    payload_too_large,
    problem_response,
    unavailable_response,
)
from marketsync.http.logs import access_line
from marketsync.http.requestid import begin_request

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = structlog.get_logger("marketsync.http")
REQUESTS = Counter("marketsync_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram(
    "marketsync_http_request_seconds",
    "HTTP request latency",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
# labels() validates the values and looks the child up under a lock on every call (~7 µs a request for the two);
# a child, once created, is the same object for the life of the process, so keep it.
_CHILDREN: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
_JSON_BODY_METHODS = {b"POST", b"PUT", b"PATCH"}
# PostgreSQL text cannot hold U+0000 (and SQLite would truncate on it): refused at the edge for every route.
_NUL_MESSAGE = "Strings must not contain the NUL character (U+0000)."
_TOO_LARGE_PAGE = "What was sent is larger than the {:.1f} MB the service accepts: go back and choose a smaller file."

# The merchant app's error page: a status and, when it has one, the refusal's own message.
AppErrorPage = Callable[[int, str | None], Response]


def _refusal_message(refused: BodyRefused) -> str:
    return " ".join(message for messages in refused.errors.values() for message in messages) or refused.title


_JSON_NUL = b"\\u0000"
_NO_STORE = (b"cache-control", b"no-store")
# The merchant app (/app) is never framed (clickjacking), and its pages load only its own files: no CDN, no inline
# script or style. frame-ancestors is the CSP's framing rule; X-Frame-Options for browsers that predate it.
APP_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_CSP = b"content-security-policy"
_FRAME_OPTIONS = (b"x-frame-options", b"DENY")
# Every answer: a browser renders it only as the media type it declares (never sniffs a JSON error or a CSV upload's
# echo into HTML or script). App pages: their addresses (ids, a job, a listing) are not sent to other sites.
_NOSNIFF = (b"x-content-type-options", b"nosniff")
_REFERRER_POLICY = (b"referrer-policy", b"same-origin")


def app_security_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """An app response's headers with the framing rules: a CSP of its own gains frame-ancestors, else APP_CSP."""
    merged = [(name, value) for name, value in headers if name.lower() != b"x-frame-options"]
    policies = [value for name, value in merged if name.lower() == _CSP]
    if not policies:
        merged.append((_CSP, APP_CSP.encode()))
    elif not any(b"frame-ancestors" in policy for policy in policies):
        merged = [
            (name, value.rstrip(b"; ") + b"; frame-ancestors 'none'" if name.lower() == _CSP else value)
            for name, value in merged
        ]
    merged.append(_FRAME_OPTIONS)
    if not any(name.lower() == _REFERRER_POLICY[0] for name, _value in merged):
        merged.append(_REFERRER_POLICY)
    return merged


# The method label's values: any other is "OTHER". A server that takes any token as a method (uvicorn on h11) would
# otherwise keep a series for every method someone invents, for the life of the process.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})


def _metrics(method: str, route: str, status: int, elapsed_s: float) -> None:
    if method not in _METHODS:
        method = "OTHER"
    key = (method, route, status)
    children = _CHILDREN.get(key)
    if children is None:
        children = _CHILDREN[key] = (REQUESTS.labels(method, route, str(status)), LATENCY.labels(method, route))
    requests, latency = children
    requests.inc()
    latency.observe(elapsed_s)


class RequestContextMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        body_timeout_s: float = 20.0,
        requests_first: RequestsFirst | None = None,
        app_error_page: AppErrorPage | None = None,
    ) -> None:
        self.app = app
        # The whole body must have arrived this long after the request began: a client that never sends it (or
        # drips it) is answered 408 and its connection closed, instead of holding it open for as long as it likes.
        self.body_timeout_s = body_timeout_s
        self.body_deadlines = BodyDeadlines()
        # The merchant app's error page (HTML) under /app for a 500, a 503 or a request refused here: a browser shows
        # it, not a problem document.
        self.app_error_page = app_error_page
        self.max_body_bytes = max_body_bytes
        # Counts the requests in flight: background work in this process lets them go first (db/_requests_first.py).
        self.requests_first = requests_first or RequestsFirst(0.0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        # API answers are per account (orders carry customer data): no shared or browser cache may keep them.
        private = scope["path"].startswith("/api/")
        app_page = scope["path"] == "/app" or scope["path"].startswith("/app/")
        request_id = begin_request(headers.get(b"x-request-id", b"").decode("latin-1") or None)
        started = time.perf_counter()
        status_holder = [500]
        started_response = [False]

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                started_response[0] = True
                status_holder[0] = message["status"]
                extra = [(b"x-request-id", request_id.encode()), _NOSNIFF]
                if private:
                    extra.append(_NO_STORE)
                rate_headers = scope.get("state", {}).get("rate_limit_headers")
                if rate_headers and message["status"] != 429:
                    extra += [(k.lower().encode(), v.encode()) for k, v in rate_headers.items()]
                message["headers"] = [*message.get("headers", []), *extra]
                if app_page:
                    message["headers"] = app_security_headers(message["headers"])
            await send(message)

        rejection = self._reject(scope, headers)
        body = _BodyProgress()
        self.requests_first.request_started()
        try:
            if isinstance(rejection, BodyRefused):
                await self._refused(scope, app_page, rejection)(scope, receive, send_with_id)
            elif rejection is not None:
                await rejection(scope, receive, send_with_id)
            else:
                await self.app(scope, self._limited(scope, receive, body), send_with_id)
        except BodyRefused as exc:  # raised where the app's own handlers could not render it
            await self._refused(scope, app_page, exc)(scope, receive, send_with_id)
        except Exception as exc:
            if body.client_left:
                # The client closed the connection before its body was whole (Starlette's ClientDisconnect, or
                # whatever reading on raised): nothing failed here, and there is no one to answer.
                _client_disconnected(scope, body)
                return
            if started_response[0]:
                log.exception("unhandled_error", error_class=type(exc).__name__)
                raise
            if database_unavailable(exc):
                # The database went away (restart, terminated connection): retryable, and its transaction rolled
                # back. The pool reconnects on the next checkout, so the service recovers by itself.
                log.warning("database_unavailable", error_class=type(exc).__name__)
                await self._failure(scope, app_page, 503)(scope, receive, send_with_id)
                return
            # Rendered here rather than by Starlette's outer error middleware, so it carries X-Request-Id.
            log.exception("unhandled_error", error_class=type(exc).__name__)
            await self._failure(scope, app_page, 500)(scope, receive, send_with_id)
        finally:
            self.requests_first.request_ended()
            template = _route_template(scope)
            elapsed = time.perf_counter() - started
            # A client that left mid-body is counted apart (499, as proxies name it), whatever the app answered it.
            status = CLIENT_CLOSED_REQUEST if body.client_left else status_holder[0]
            _metrics(scope["method"], template, status, elapsed)
            access_line(scope["method"], template, status, round(elapsed * 1000, 2))

    def _failure(self, scope: Scope, app_page: bool, status: int) -> Response:
        if app_page and self.app_error_page is not None:
            return self.app_error_page(status, None)
        return unavailable_response(scope) if status == 503 else internal_error_response(scope)

    def _refused(self, scope: Scope, app_page: bool, refused: BodyRefused) -> Response:
        if app_page and self.app_error_page is not None:
            message = _TOO_LARGE_PAGE.format(self.max_body_bytes / 1048576) if refused.status_code == 413 else None
            response = self.app_error_page(refused.status_code, message or _refusal_message(refused))
            response.headers.update(refused.headers or {})
            return response
        return refused.response(scope)

    def _reject(self, scope: Scope, headers: dict[bytes, bytes]) -> Any:
        if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
            return BodyRefused(400, "validation-failed", ValidationFailed.title, {"request": [_NUL_MESSAGE]})
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return payload_too_large(self.max_body_bytes)
        path: str = scope["path"]
        if path.startswith("/api/") and scope["method"].encode() in _JSON_BODY_METHODS:
            media = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            bodiless = (
                not media and headers.get(b"content-length", b"0") == b"0" and b"transfer-encoding" not in headers
            )
            is_json = media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))
            if not (is_json or bodiless):
                return problem_response(
                    415,
                    "unsupported-media-type",
                    "The request body must be application/json.",
                    {"Content-Type": ["Send Content-Type: application/json."]},
                )
        return None

    def _limited(self, scope: Scope, receive: Receive, body: _BodyProgress) -> Receive:
        tail = b""
        limit = self.max_body_bytes
        timeout_s = self.body_timeout_s
        deadlines = self.body_deadlines
        deadline = asyncio.get_running_loop().time() + timeout_s

        async def wrapped() -> Message:
            nonlocal tail
            if body.whole:  # only a disconnect is left to wait for (a streaming response listens for it)
                message = await receive()
            else:
                try:
                    message = await deadlines.receive(receive, deadline)
                except _BodyTooSlow:
                    log.info("request_body_timeout", path=_route_template(scope), received=body.received)
                    raise body_too_slow(timeout_s) from None
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                body.received += len(chunk)
                body.whole = not message.get("more_body", False)
                if body.received > limit:
                    raise payload_too_large(limit)
                if _JSON_NUL in tail + chunk:
                    raise BodyRefused(400, "validation-failed", ValidationFailed.title, {"body": [_NUL_MESSAGE]})
                tail = chunk[-5:]
            elif message["type"] == "http.disconnect" and not body.whole:
                body.client_left = True
            return message

        return wrapped


class _BodyTooSlow(Exception):
    """The body read was stopped at its deadline."""


class BodyDeadlines:
    """Reads of request bodies stopped at their deadline: one sweep every SWEEP_S for the whole app, instead of a
    timer armed and cancelled around every read (asyncio.timeout: 12-17 µs a request on this machine; this, 2-4 µs).
    A read past its deadline is cancelled, and the cancellation turned into `_BodyTooSlow` where it was waiting, so
    a deadline holds within SWEEP_S."""

    SWEEP_S = 0.25

    def __init__(self) -> None:
        self._waiting: dict[asyncio.Task[Any], float] = {}  # the task reading a body -> its deadline (loop time)
        self._stopped: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None

    async def receive(self, receive: Receive, deadline: float) -> Message:
        task = asyncio.current_task()
        assert task is not None
        self._waiting[task] = deadline
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())
        try:
            return await receive()
        except asyncio.CancelledError:
            if task not in self._stopped:
                raise  # cancelled for another reason (the server stopping): not ours to turn into an answer
            self._stopped.discard(task)
            task.uncancel()
            raise _BodyTooSlow from None
        finally:
            del self._waiting[task]

    async def _sweep(self) -> None:
        """Runs while reads are waiting (it ends when none is), so an idle process has no task of it."""
        loop = asyncio.get_running_loop()
        try:
            while self._waiting:
                await asyncio.sleep(self.SWEEP_S)
                now = loop.time()
                for task, deadline in list(self._waiting.items()):
                    if deadline <= now and task not in self._stopped:
                        self._stopped.add(task)
                        task.cancel()
        finally:
            self._sweeper = None


# The status a request is counted and logged under when its client closed the connection before sending its whole
# body: no answer was sent, and it is not a server error (nginx's code for it; never sent on the wire).
CLIENT_CLOSED_REQUEST = 499


@dataclass(slots=True)
class _BodyProgress:
    """How far a request's body has come in, as the app read it."""

    received: int = 0
    whole: bool = False
    client_left: bool = False  # the connection closed before the body was whole


def _route_template(scope: Scope) -> str:
    return str(getattr(scope.get("route"), "path", "unmatched"))


def _client_disconnected(scope: Scope, body: _BodyProgress) -> None:
    log.info("client_disconnected", method=scope["method"], path=_route_template(scope), received=body.received)
