"""Login with Amazon (LWA): a consent's one-time code exchanged for a refresh token, and refresh tokens for access
tokens, each access token cached until shortly before it expires (docs/decisions/0370-amazon-connector.md).

LWA answers errors as RFC 6749 section 5.2 does. `invalid_grant` on a refresh means the merchant's authorisation
is gone (revoked in Seller Central, or the token was replaced): `AuthorizationRevoked`, which only reconnecting in
the app clears. Every other refusal is the application's own problem (its client id or secret, a wrong LWA URL):
never blamed on the merchant's connection, it is `Unavailable` and retried, and said in the log.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
import structlog

from marketsync.kit import jsonio
from marketsync.kit.clock import Clock
from marketsync.marketplaces.connector import AuthorizationRevoked, MarketplaceError, Throttled, Unavailable

__all__ = [
    "AMAZON_LWA_URL",
    "EXPIRY_MARGIN",
    "ConsentRefused",
    "LwaCredentials",
    "LwaTokens",
    "NotConfigured",
]

log = structlog.get_logger("marketsync.marketplaces.amazon")

AMAZON_LWA_URL = "https://api.amazon.com/auth/o2/token"
# An access token is used until this long before its expiry: a call started just before never carries a dead one.
EXPIRY_MARGIN = timedelta(seconds=60)


class NotConfigured(MarketplaceError):
    """The operator has not set the Amazon application's settings (MARKETSYNC_AMAZON_*)."""


class ConsentRefused(MarketplaceError):
    """LWA refused a consent's authorisation code (used already, expired, or not this application's)."""


@dataclass(frozen=True)
class LwaCredentials:
    client_id: str
    client_secret: str
    token_url: str


@dataclass
class _Cached:
    token: str
    expires_at: datetime


class LwaTokens:
    """The process's LWA access tokens, one per selling partner and refresh token."""

    def __init__(self, http: httpx.AsyncClient, clock: Clock, deadline_s: float) -> None:
        self.http = http
        self.clock = clock
        self.deadline_s = deadline_s
        self._cache: dict[tuple[str, str], _Cached] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.exchanges = 0  # token requests sent (a test counts them)

    async def access_token(self, credentials: LwaCredentials, seller_id: str, refresh_token: str) -> str:
        """An access token for the selling partner: the cached one while it has more than EXPIRY_MARGIN left."""
        key = (seller_id, hashlib.sha256(refresh_token.encode()).hexdigest())
        cached = self._cache.get(key)
        if cached is not None and self.clock.now() < cached.expires_at - EXPIRY_MARGIN:
            return cached.token
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # one refresh at a time per selling partner: the others use its token
            cached = self._cache.get(key)
            if cached is not None and self.clock.now() < cached.expires_at - EXPIRY_MARGIN:
                return cached.token
            answer = await self._token_request(
                credentials, {"grant_type": "refresh_token", "refresh_token": refresh_token}, refresh=True
            )
            token, expires_in = _access_token_of(answer)
            self._cache[key] = _Cached(token, self.clock.now() + timedelta(seconds=expires_in))
            return token

    def forget(self, seller_id: str) -> None:
        """Drop the selling partner's cached tokens (SP-API refused one: the next call asks LWA again)."""
        for key in [key for key in self._cache if key[0] == seller_id]:
            del self._cache[key]

    async def exchange_code(self, credentials: LwaCredentials, code: str, redirect_uri: str | None) -> str:
        """The refresh token a consent's `spapi_oauth_code` stands for. ConsentRefused when LWA refuses the code."""
        form = {"grant_type": "authorization_code", "code": code}
        if redirect_uri:
            form["redirect_uri"] = redirect_uri
        answer = await self._token_request(credentials, form, refresh=False)
        refresh_token = answer.get("refresh_token")
        if not isinstance(refresh_token, str) or not refresh_token:
            raise Unavailable("Login with Amazon answered without a refresh token")
        return refresh_token

    async def _token_request(
        self, credentials: LwaCredentials, form: dict[str, str], *, refresh: bool
    ) -> dict[str, object]:
        self.exchanges += 1
        body = {**form, "client_id": credentials.client_id, "client_secret": credentials.client_secret}
        try:
            async with asyncio.timeout(self.deadline_s):
                response = await self.http.post(
                    credentials.token_url,
                    data=body,
                    headers={"Accept": "application/json"},
                )
        except TimeoutError as exc:
            raise Unavailable(f"Login with Amazon did not answer within {self.deadline_s:g} s") from exc
        except httpx.TransportError as exc:
            raise Unavailable(f"Login with Amazon unreachable: {type(exc).__name__}") from exc
        try:
            document = jsonio.loads(response.content)
        except ValueError:
            document = None
        if response.status_code == 429:
            raise Throttled(_retry_after(response))
        if response.status_code >= 500:
            raise Unavailable(f"Login with Amazon answered {response.status_code}")
        if response.status_code != 200 or not isinstance(document, dict):
            error = str(document.get("error") or "") if isinstance(document, dict) else ""
            if error == "invalid_grant":
                if refresh:
                    raise AuthorizationRevoked("Login with Amazon refused the refresh token (invalid_grant)")
                raise ConsentRefused("Amazon refused the authorisation code: it was used already or has expired.")
            # The application's own credentials or request: not the merchant's doing, so no connection is blamed.
            log.error("amazon_lwa_refused", status=response.status_code, error=error or None)
            raise Unavailable(f"Login with Amazon refused the application's request ({error or response.status_code})")
        return document


def _access_token_of(answer: dict[str, object]) -> tuple[str, float]:
    token, expires_in = answer.get("access_token"), answer.get("expires_in")
    if not isinstance(token, str) or not token:
        raise Unavailable("Login with Amazon answered without an access token")
    if not isinstance(expires_in, int | float) or isinstance(expires_in, bool) or expires_in <= 0:
        expires_in = 3600  # LWA's documented lifetime
    return token, float(expires_in)


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.0, float(response.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0
