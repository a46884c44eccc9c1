"""Connecting Amazon: the service's side of Amazon's website authorisation workflow
(docs/decisions/0377-amazon-consent.md).

1. The app starts a connection awaiting consent (marketplaces.service.begin_connect) and sends the merchant to
   `consent_url`: Seller Central's consent page for the site (or MARKETSYNC_AMAZON_CONSENT_URL) with the
   application id (MARKETSYNC_AMAZON_APP_ID), the app's callback as redirect_uri, and a `state` bound to the
   merchant's app session and that connection (`consent_state`: an HMAC, so no one else's browser can finish it).
2. Amazon sends the merchant back to `{MARKETSYNC_BASE_URL}/app/marketplaces/amazon/callback` with
   `spapi_oauth_code`, `selling_partner_id` and the `state`; `state_connection` checks the state.
3. `connect_with_code` exchanges the code at LWA for a refresh token, stores it encrypted on the connection (Active
   at once; a reauthorisation keeps the connection's state), queues the site's product types and checks the health.

The operator's `marketsync admin marketplace connect --platform Amazon --authorization-code CODE
--selling-partner-id ID` is step 3 with a code the operator took from the redirect.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from urllib.parse import urlencode

from marketsync.errors import ValidationFailed
from marketsync.marketplaces import service
from marketsync.marketplaces.amazon.client import lwa_credentials, services_of
from marketsync.marketplaces.amazon.connector import PLATFORM, sealed_refresh_token
from marketsync.marketplaces.amazon.lwa import ConsentRefused, NotConfigured
from marketsync.marketplaces.amazon.regions import UnknownSite, site_for_country
from marketsync.marketplaces.connector import MarketplaceError
from marketsync.marketplaces.rules import HealthEvent
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

__all__ = [
    "CALLBACK_PATH",
    "STATE_TTL_S",
    "Connected",
    "callback_url",
    "connect_with_code",
    "consent_state",
    "consent_url",
    "state_connection",
]

CALLBACK_PATH = "/app/marketplaces/amazon/callback"
STATE_TTL_S = 3600  # a consent started more than an hour ago is started again
# Amazon's selling partner ids and authorisation codes: letters and digits (a code may hold a few more characters).
_SELLER_ID = re.compile(r"^[A-Z0-9]{6,64}$")
_CODE = re.compile(r"^[A-Za-z0-9._~+/=-]{4,512}$")


def callback_url(rt: Runtime) -> str:
    """The redirect URI an operator registers with Amazon for the application."""
    return f"{rt.settings.base_url}{CALLBACK_PATH}"


def _mac(rt: Runtime, connection_id: str, issued: int, session_secret: str) -> str:
    message = f"amazon-consent|{connection_id}|{issued}|{session_secret}".encode()
    return hmac.new(rt.settings.hash_key, message, hashlib.sha256).hexdigest()[:32]


def consent_state(rt: Runtime, connection_id: str, session_secret: str) -> str:
    """The `state` of one consent: which connection it finishes, when it started, and an HMAC binding both to the
    merchant's app session (`session_secret`: its CSRF token, never sent anywhere else)."""
    issued = int(rt.clock.now().timestamp())
    return f"{connection_id}.{issued}.{_mac(rt, connection_id, issued, session_secret)}"


def state_connection(rt: Runtime, state: str, session_secret: str) -> str | None:
    """The connection id a callback's `state` names, if this session issued it within STATE_TTL_S; else None."""
    parts = state.split(".")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    connection_id, issued_text, mac = parts
    issued = int(issued_text)
    expected = _mac(rt, connection_id, issued, session_secret)
    if not hmac.compare_digest(expected.encode(), mac.encode()):
        return None
    age = rt.clock.now().timestamp() - issued
    return connection_id if 0 <= age <= STATE_TTL_S else None


def consent_url(rt: Runtime, connection: MarketplaceConnection, state: str) -> str:
    """Where the app sends the merchant: the site's consent page with the application id, the state and the
    callback. ValidationFailed when the operator has not configured Amazon."""
    app_id = rt.settings.amazon_app_id
    if not app_id:
        raise ValidationFailed(
            errors={"Platform": ["Amazon is not configured on this service (MARKETSYNC_AMAZON_APP_ID is unset)."]}
        )
    page = rt.settings.amazon_consent_url or site_for_country(connection.country).consent_url
    query = urlencode({"application_id": app_id, "state": state, "redirect_uri": callback_url(rt)})
    return f"{page}{'&' if '?' in page else '?'}{query}"


@dataclass(frozen=True)
class Connected:
    connection: MarketplaceConnection
    reauthorised: bool
    categories_job_id: str | None
    health_event: HealthEvent | None


def _checked(country: str, code: str, seller_id: str) -> tuple[str, str, str]:
    problems: dict[str, list[str]] = {}
    try:
        site_for_country(country.strip())
    except UnknownSite as exc:
        problems["Country"] = [str(exc)]
    code, seller_id = code.strip(), seller_id.strip()
    if not _CODE.match(code):
        problems["AuthorizationCode"] = ["The spapi_oauth_code of Amazon's consent redirect."]
    if not _SELLER_ID.match(seller_id):
        problems["SellingPartnerId"] = ["The selling_partner_id of Amazon's consent redirect (letters and digits)."]
    if problems:
        raise ValidationFailed(errors=problems)
    return country.strip().upper(), code, seller_id


async def connect_with_code(rt: Runtime, account_id: str, country: str, code: str, seller_id: str) -> Connected:
    """Exchange a consent's code at LWA and store the authorisation on the account's Amazon connection to the site
    (new, awaiting consent, or reauthorised). Bad input and a code LWA refuses are ValidationFailed naming the
    field; nothing is written then."""
    country, code, seller_id = _checked(country, code, seller_id)
    service.checked_site(PLATFORM, country)
    try:
        credentials = lwa_credentials(rt.settings, site_for_country(country).region.lwa_url)
        refresh_token = await services_of(rt).tokens.exchange_code(credentials, code, callback_url(rt))
    except NotConfigured as exc:
        raise ValidationFailed(errors={"Platform": [str(exc)]}) from None
    except ConsentRefused as exc:
        raise ValidationFailed(errors={"AuthorizationCode": [str(exc)]}) from None
    except MarketplaceError as exc:
        raise ValidationFailed(errors={"AuthorizationCode": [f"Login with Amazon did not answer: {exc}"]}) from None
    async with rt.db.transaction() as session:
        connection, existed = await service.authorise(
            rt,
            session,
            account_id,
            PLATFORM,
            country,
            seller_id,
            lambda connection_id: sealed_refresh_token(rt, connection_id, refresh_token),
        )
        loading = await service.load_categories_if_missing(rt, session, connection)
    services_of(rt).tokens.forget(seller_id)  # a reauthorisation's old access tokens are not used again
    event = await service.check_health(rt, connection) if connection.state == service.ACTIVE else None
    async with rt.db.read() as session:  # as the health check left it
        connection = await service.get(session, account_id, connection.id)
    return Connected(connection, existed, loading, event)
