"""What the sync and async clients share, free of I/O: calls, JSON both ways, the retry policy, problem
details, token expiry, the rate-limit headers, the debug log of each attempt and the raw responses a caller asked
for. The clients only send and sleep."""

from __future__ import annotations

import json
import logging
import math
import random
import re
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Generic, TypeVar

import httpx

from marketsync_client.errors import (
    ERRORS_BY_STATUS,
    ApiError,
    ServerError,
    TokenError,
    retry_after_seconds,
)

T = TypeVar("T")

IDEMPOTENCY_HEADER = "Idempotency-Key"


# ------------------------------------------------------------------------------------------------- JSON


def encode_json(value: Any) -> bytes:
    """JSON with `Decimal` written as an exact number (``19.99``, never ``"19.99"`` or a float's digits)."""
    return _encode(value).encode()


def _encode(value: Any) -> str:
    if value is None or isinstance(value, bool | int | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not a JSON number")
        return format(value, "f")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a JSON number")
        return repr(value)
    if isinstance(value, datetime | date):
        return json.dumps(value.isoformat())
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode(item) for item in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def decode_json(content: bytes) -> Any:
    # parse_float=Decimal: money arrives as JSON numbers and must not pass through a binary float.
    return json.loads(content, parse_float=Decimal)


# ------------------------------------------------------------------------------------------------- calls


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API operation, ready to send: the clients add the token, send, retry and parse."""

    method: str
    path: str
    parse: Callable[[Any], T]
    body: Any = None
    params: Mapping[str, str] | None = None
    # Reads are safe to repeat; writes only with an Idempotency-Key (the service then applies them once).
    safe: bool = False
    idempotency_key: str | None = None

    @property
    def repeatable(self) -> bool:
        return self.safe or self.idempotency_key is not None

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.body is not None:
            headers["Content-Type"] = "application/json"
        if self.idempotency_key is not None:
            headers[IDEMPOTENCY_HEADER] = self.idempotency_key
        return headers

    def content(self) -> bytes | None:
        return None if self.body is None else encode_json(self.body)


# ------------------------------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    """How calls are retried.

    Retried, with exponential backoff and jitter:
    - 429: every call (the service refuses over-limit requests before doing anything), after ``Retry-After``;
    - a connection that never reached the service (refused, connect timeout): every call;
    - 500, 502, 503, 504 and failures after the request was sent (reset, read timeout): reads, and writes with an
      Idempotency-Key (the service replays the stored outcome instead of applying twice), after ``Retry-After``
      when the answer carries one;
    - 409 ``idempotency-in-flight``: writes with an Idempotency-Key (the first try is still running).
    Nothing else is retried: a 4xx is the caller's to fix, and a write without a key may have been applied.
    """

    max_attempts: int = 5
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    # A longer Retry-After is raised (RateLimited.retry_after says how long), not slept through.
    max_retry_after_s: float = 120.0

    def backoff(self, retry: int) -> float:
        """Delay before retry number `retry` (1-based): exponential, capped, with equal jitter."""
        ceiling = min(self.max_backoff_s, self.backoff_s * 2.0 ** (retry - 1))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


NO_RETRIES = RetryPolicy(max_attempts=1)

# Server errors a call safe to repeat is retried through: the service failed (500), or a proxy in front found it
# unreachable (502), overloaded (503) or too slow (504). None of them says whether a write was applied.
RETRIED_STATUSES = frozenset({500, 502, 503, 504})

# httpx failures that happen before a byte of the request left: nothing can have been applied.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def retry_delay_after_error(policy: RetryPolicy, call: Call[Any], attempt: int, error: Exception) -> float | None:
    """Seconds to wait before trying `call` again after transport failure `error`, or None to give up."""
    if attempt >= policy.max_attempts:
        return None
    if isinstance(error, _NOT_SENT) or (call.repeatable and isinstance(error, httpx.TransportError)):
        return policy.backoff(attempt)
    return None


def retry_delay_after_response(
    policy: RetryPolicy, call: Call[Any], attempt: int, response: httpx.Response
) -> float | None:
    """Seconds to wait before trying `call` again after `response`, or None to give up."""
    if attempt >= policy.max_attempts:
        return None
    status = response.status_code
    if status == 429 or (status in RETRIED_STATUSES and call.repeatable):
        wait = retry_after_seconds(response.headers.get("retry-after"))
        if wait is None:
            return policy.backoff(attempt)
        return wait if wait <= policy.max_retry_after_s else None
    if status == 409 and call.idempotency_key is not None and _problem_code(response) == "idempotency-in-flight":
        return policy.backoff(attempt)
    return None


def _problem_code(response: httpx.Response) -> str | None:
    try:
        body = decode_json(response.content)
    except ValueError:
        return None
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, str) else None


# ------------------------------------------------------------------------------------------------- errors


def api_error(response: httpx.Response) -> ApiError:
    """The typed exception of an error response (problem+json, or whatever a proxy in front answered)."""
    status = response.status_code
    try:
        body: Any = decode_json(response.content) if response.content else None
    except ValueError:
        body = response.text
    problem = body if isinstance(body, dict) else {}
    cls = ERRORS_BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    raw_errors = problem.get("errors")
    errors = {
        str(key): [str(message) for message in value] if isinstance(value, list) else [str(value)]
        for key, value in (raw_errors.items() if isinstance(raw_errors, dict) else ())
    }
    return cls(
        status,
        str(problem.get("code") or f"http-{status}"),
        str(problem.get("title") or response.reason_phrase or "The request failed."),
        errors,
        problem.get("requestId") or response.headers.get("x-request-id"),
        type=problem.get("type"),
        headers=dict(response.headers),
        body=body,
    )


def token_error(response: httpx.Response) -> TokenError:
    try:
        body = decode_json(response.content)
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    return TokenError(
        response.status_code,
        str(body.get("error") or f"http-{response.status_code}"),
        str(body.get("error_description") or response.reason_phrase),
        retry_after=retry_after_seconds(response.headers.get("retry-after")),
    )


# ------------------------------------------------------------------------------------------------- tokens


@dataclass
class CachedToken:
    value: str
    expires_at: float  # time.monotonic()
    lifetime: float

    def fresh(self, now: float, margin_s: float) -> bool:
        """Usable for one more call: renewed a little before expiry (at most 10% of its lifetime early)."""
        return now < self.expires_at - min(margin_s, self.lifetime * 0.1)


def token_form(client_id: str, client_secret: str, scopes: tuple[str, ...] | None) -> dict[str, str]:
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret}
    if scopes:
        form["scope"] = " ".join(scopes)
    return form


def cached_token(body: Any, requested_at: float) -> CachedToken:
    # Timed from when the request left, so network time only makes the renewal earlier.
    if not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
        raise TokenError(200, "invalid_response", "The token response has no access_token.")
    lifetime = float(body.get("expires_in") or 0)
    return CachedToken(body["access_token"], requested_at + lifetime, lifetime)


# ------------------------------------------------------------------------------------------------- rate limit


@dataclass(frozen=True)
class RateLimit:
    """The credential's budget as the last response reported it (``RateLimit``/``RateLimit-Policy`` headers)."""

    limit: int | None
    remaining: int
    reset_s: int
    observed_at: float = field(default_factory=time.monotonic)


_PARAM = re.compile(r";\s*([a-z]+)=(\d+)")


def rate_limit(headers: httpx.Headers) -> RateLimit | None:
    current = headers.get("ratelimit")
    if not current:
        return None
    values = dict(_PARAM.findall(current))
    if "r" not in values or "t" not in values:
        return None
    quota = dict(_PARAM.findall(headers.get("ratelimit-policy", ""))).get("q")
    return RateLimit(int(quota) if quota else None, int(values["r"]), int(values["t"]))


# ------------------------------------------------------------------------------------------------- debug log

# The client's own logger: one DEBUG line per attempt (method, path, status, request id, time). Never the query, the
# headers or a body: nothing a token, a secret or customer data travels in reaches it.
logger = logging.getLogger("marketsync_client")


def log_attempt(
    method: str, path: str, attempt: int, started: float, response: httpx.Response | None, error: Exception | None
) -> None:
    """The DEBUG line of one attempt (``started``: its time.monotonic()); free when DEBUG is off."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    elapsed_ms = round((time.monotonic() - started) * 1000, 1)
    status = response.status_code if response is not None else None
    request_id = response.headers.get("x-request-id") if response is not None else None
    outcome = str(status) if response is not None else f"failed ({type(error).__name__})"
    logger.debug(
        "%s %s -> %s in %.1f ms (attempt %d, request id %s)",
        method,
        path,
        outcome,
        elapsed_ms,
        attempt,
        request_id,
        extra={
            "method": method,
            "path": path,
            "status": status,
            "request_id": request_id,
            "elapsed_ms": elapsed_ms,
            "attempt": attempt,
        },
    )


# ------------------------------------------------------------------------------------------------- raw responses


@dataclass(frozen=True)
class RawResponse(Generic[T]):
    """A call's parsed result with the HTTP response it came from: the last attempt's, after any retries
    (``client.with_raw_response(client.push_price_quantity, items)``)."""

    parsed: T
    http_response: httpx.Response
    attempts: int  # 1 unless the call was retried

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self.http_response.headers

    @property
    def request_id(self) -> str | None:
        """``X-Request-Id``: quote it when asking about a call."""
        value = self.http_response.headers.get("x-request-id")
        return value if isinstance(value, str) else None

    @property
    def replayed(self) -> bool:
        """True when the service answered with the stored outcome of an earlier call with the same Idempotency-Key."""
        return str(self.http_response.headers.get("idempotent-replayed", "")) == "true"


@dataclass
class ResponseRecorder:
    """Where a call made inside ``with_raw_response`` leaves its final response (a context variable: each thread
    and each task records its own calls only)."""

    response: httpx.Response | None = None
    attempts: int = 0

    def result(self, parsed: T, what: str) -> RawResponse[T]:
        if self.response is None:
            raise nothing_called(what)
        return RawResponse(parsed, self.response, self.attempts)


def nothing_called(what: str) -> TypeError:
    return TypeError(f"{what} made no call to the API (an iterator calls it only as it is walked)")


RECORDER: ContextVar[ResponseRecorder | None] = ContextVar("marketsync_client_recorder", default=None)


def record(response: httpx.Response, attempts: int) -> None:
    recorder = RECORDER.get()
    if recorder is not None:
        recorder.response, recorder.attempts = response, attempts
