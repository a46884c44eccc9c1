"""The SP-API HTTP client: one selling partner's calls on one site (docs/decisions/0370-amazon-connector.md).

- **Endpoints.** Each region's SP-API host and the site's marketplace id come from the country (regions.py);
  `MARKETSYNC_AMAZON_SPAPI_URL` replaces every region's host and `MARKETSYNC_AMAZON_LWA_URL` LWA's token endpoint
  (the simulator in tests). Unset, the calls go to Amazon.
- **Authorisation.** Every call carries an LWA access token (`x-amz-access-token`, lwa.py: cached until shortly
  before expiry) or, for personal data, a Restricted Data Token the caller passes.
- **One deadline per call** (decision 0346): from the token's refresh and the host's name lookup (on the
  marketplaces' own lookup threads, marketplaces/transport.py) to the answer's last byte,
  `MARKETSYNC_MARKETPLACE_TIMEOUT_S`. A dripping or silent answer is `Unavailable`.
- **Rates** (rates.py): each call waits for its operation's token; the answer's `x-amzn-RateLimit-Limit` sets it.
- **Errors.** 429 is `Throttled` (the job retries after the bucket's next token); 5xx, a transport failure or a
  body that is not a JSON object is `Unavailable`; 401 and 403 are `AuthorizationRevoked` once a fresh access token
  was refused too (an expired one is refreshed and the call sent again, once); any other 4xx is `SpApiError`
  carrying Amazon's `errors`.

The runtime holds one `AmazonServices` (HTTP client, token cache, rate buckets), closed by Runtime.close.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import structlog

from marketsync.config import Settings
from marketsync.kit import jsonio
from marketsync.kit.clock import Clock
from marketsync.marketplaces.amazon.lwa import AMAZON_LWA_URL, LwaCredentials, LwaTokens, NotConfigured
from marketsync.marketplaces.amazon.rates import RateLimits
from marketsync.marketplaces.connector import AuthorizationRevoked, MarketplaceError, Throttled, Unavailable
from marketsync.marketplaces.transport import LookupTransport, lookups_of
from marketsync.runtime import Runtime

__all__ = [
    "SERVICES_KEY",
    "AmazonServices",
    "SpApi",
    "SpApiError",
    "lwa_credentials",
    "services_of",
]

log = structlog.get_logger("marketsync.marketplaces.amazon")

SERVICES_KEY = "amazon"
USER_AGENT = "marketsync/0.1 (Language=Python)"

QueryValue = str | int | Sequence[str] | None


class SpApiError(MarketplaceError):
    """SP-API refused the request (a 4xx other than 401, 403 and 429): Amazon's `errors` say why."""

    def __init__(self, status: int, errors: list[dict[str, Any]]) -> None:
        self.status = status
        self.errors = errors
        text = "; ".join(f"{e.get('code', '')}: {e.get('message', '')}".strip(": ") for e in errors) or "no details"
        super().__init__(f"Amazon refused the request ({status}): {text}")


@dataclass
class AmazonServices:
    """What every Amazon connection of the process shares: one HTTP client, the access tokens, the rate buckets."""

    http: httpx.AsyncClient
    tokens: LwaTokens
    limits: RateLimits = field(default_factory=RateLimits)
    calls: list[tuple[str, str]] = field(default_factory=list)  # (operation, URL) of the last calls, newest last

    async def aclose(self) -> None:
        await self.http.aclose()


def services_of(rt: Runtime) -> AmazonServices:
    """The runtime's AmazonServices, made at first use. A test may put its own under SERVICES_KEY first."""
    services = rt.extras.get(SERVICES_KEY)
    if services is None:
        http = httpx.AsyncClient(
            # Host names looked up on the marketplaces' own threads, never the loop's default pool (0346).
            transport=LookupTransport(lookups_of(rt)),
            timeout=rt.settings.marketplace_timeout_s,
            headers={"User-Agent": USER_AGENT},
        )
        services = AmazonServices(http, LwaTokens(http, rt.clock, rt.settings.marketplace_timeout_s))
        rt.extras[SERVICES_KEY] = services
    assert isinstance(services, AmazonServices)
    return services


def lwa_credentials(settings: Settings, token_url: str = AMAZON_LWA_URL) -> LwaCredentials:
    """The application's LWA credentials, exchanged at MARKETSYNC_AMAZON_LWA_URL or else `token_url` (the site's
    region's LWA endpoint); NotConfigured (naming the settings) when they are not set."""
    missing = [
        name
        for name, value in (
            ("MARKETSYNC_AMAZON_LWA_CLIENT_ID", settings.amazon_lwa_client_id),
            ("MARKETSYNC_AMAZON_LWA_CLIENT_SECRET", settings.amazon_lwa_client_secret),
        )
        if not value
    ]
    if missing:
        raise NotConfigured(f"Amazon is not configured: set {' and '.join(missing)}.")
    assert settings.amazon_lwa_client_id and settings.amazon_lwa_client_secret
    return LwaCredentials(
        settings.amazon_lwa_client_id, settings.amazon_lwa_client_secret, settings.amazon_lwa_url or token_url
    )


def _query(params: Mapping[str, QueryValue]) -> list[tuple[str, str | int | float | bool | None]]:
    """SP-API's query: lists comma-separated (its `collectionFormat: csv`), absent values left out."""
    pairs: list[tuple[str, str | int | float | bool | None]] = []
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, str | int):
            pairs.append((name, value))
        else:
            pairs.append((name, ",".join(value)))
    return pairs


class SpApi:
    """One selling partner's SP-API at one base URL."""

    def __init__(
        self,
        services: AmazonServices,
        clock: Clock,
        credentials: LwaCredentials,
        base_url: str,
        seller_id: str,
        refresh_token: str,
        deadline_s: float,
    ) -> None:
        self.services = services
        self.clock = clock
        self.credentials = credentials
        self.base_url = base_url.rstrip("/")
        self.seller_id = seller_id
        self.refresh_token = refresh_token
        self.deadline_s = deadline_s

    async def call(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, QueryValue] | None = None,
        body: Any = None,
        restricted_token: str | None = None,
    ) -> dict[str, Any]:
        """The JSON object SP-API answers `operation` with (see the module's docstring for the errors)."""
        limits = self.services.limits
        await limits.acquire(self.seller_id, operation)
        for attempt in (1, 2):
            response = await self._send(operation, method, path, params or {}, body, restricted_token)
            limits.observe(self.seller_id, operation, response.headers.get("x-amzn-RateLimit-Limit"))
            status = response.status_code
            if status in (401, 403):
                if attempt == 1 and restricted_token is None:
                    # An access token Amazon no longer takes (expired early, rotated): ask LWA for a fresh one once.
                    self.services.tokens.forget(self.seller_id)
                    continue
                raise AuthorizationRevoked(f"Amazon refused the seller's authorisation ({status} on {operation})")
            break
        if status == 429:
            wait = limits.throttled(self.seller_id, operation)
            raise Throttled(max(1.0, round(wait, 3)))
        if status >= 500:
            raise Unavailable(f"Amazon answered {status} to {operation}")
        try:
            document = jsonio.loads(response.content) if response.content else {}
        except ValueError:
            document = None
        if status >= 400:
            errors = document.get("errors") if isinstance(document, dict) else None
            raise SpApiError(status, [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else [])
        if not isinstance(document, dict):
            # A proxy's error page, a truncated body: the call is retried later, never taken for an answer.
            raise Unavailable(f"Amazon answered {operation} with a malformed body ({len(response.content)} bytes)")
        return document

    async def _send(
        self,
        operation: str,
        method: str,
        path: str,
        params: Mapping[str, QueryValue],
        body: Any,
        restricted_token: str | None,
    ) -> httpx.Response:
        url = f"{self.base_url}{path}"
        self.services.calls.append((operation, url))
        del self.services.calls[:-200]
        # httpx's timeout bounds each read on its own; this one bounds the whole call (the token's refresh, lookup,
        # connect, send, and reading the whole answer), however Amazon spreads its bytes.
        try:
            async with asyncio.timeout(self.deadline_s):
                token = restricted_token or await self.services.tokens.access_token(
                    self.credentials, self.seller_id, self.refresh_token
                )
                headers = {"x-amz-access-token": token, "Accept": "application/json"}
                if body is not None:
                    headers["Content-Type"] = "application/json"
                return await self.services.http.request(
                    method,
                    url,
                    params=_query(params),
                    content=None if body is None else jsonio.dumps(body),
                    headers=headers,
                )
        except TimeoutError as exc:
            raise Unavailable(f"Amazon did not answer {operation} within {self.deadline_s:g} s") from exc
        except httpx.TransportError as exc:
            raise Unavailable(f"Amazon unreachable ({operation}): {type(exc).__name__}") from exc

    async def transfer(
        self, method: str, url: str, *, content: bytes | None = None, content_type: str | None = None
    ) -> bytes:
        """A feed or report document's upload or download at the URL Amazon gave (pre-signed: no token is sent)."""
        self.services.calls.append(("document", url))
        try:
            async with asyncio.timeout(self.deadline_s):
                response = await self.services.http.request(
                    method,
                    url,
                    content=content,
                    headers={"Content-Type": content_type} if content_type else None,
                )
                data = response.content
        except TimeoutError as exc:
            raise Unavailable(f"Amazon's document store did not answer within {self.deadline_s:g} s") from exc
        except httpx.TransportError as exc:
            raise Unavailable(f"Amazon's document store unreachable: {type(exc).__name__}") from exc
        if response.status_code == 429 or response.status_code == 503:
            raise Throttled(1.0)
        if response.status_code >= 400:
            raise Unavailable(f"Amazon's document store answered {response.status_code}")
        return data
