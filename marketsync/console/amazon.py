"""Amazon's consent in the app (docs/decisions/0377-amazon-consent.md): the app's consent step of an Amazon connection
is Amazon's own page, and Amazon sends the merchant back to `/app/marketplaces/amazon/callback`.

A connection is started (and reauthorised) exactly as for any marketplace: the marketplaces page sends the merchant
to the connection's consent step, which for Amazon redirects to Seller Central's consent page with a `state` bound to
this session and connection.
"""

from __future__ import annotations

import structlog
from fastapi import Request
from fastapi.responses import Response

from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import SignedIn
from marketsync.console.render import errors_of, page, page_router, see_other
from marketsync.errors import ApiError
from marketsync.marketplaces import service as marketplaces
from marketsync.marketplaces.amazon import consent
from marketsync.marketplaces.amazon.connector import PLATFORM
from marketsync.models import MarketplaceConnection
from marketsync.people.service import Person

router = page_router()
log = structlog.get_logger("marketsync.console")


def consent_redirect(request: Request, person: Person, connection: MarketplaceConnection) -> Response | None:
    """For an Amazon connection: the redirect to Amazon's consent page (None for any other kind)."""
    if connection.platform != PLATFORM:
        return None
    rt = runtime_of(request)
    try:
        url = consent.consent_url(rt, connection, consent.consent_state(rt, connection.id, person.csrf_token))
    except ApiError as exc:  # Amazon is not configured on this service
        return page(request, "error.html", person, exc.status, title="Amazon", message=exc.title, errors=exc.errors)
    return see_other(url)


@router.get(consent.CALLBACK_PATH.removeprefix("/app"))  # the router adds /app
async def amazon_callback(
    request: Request,
    person: SignedIn,
    state: str = "",
    spapi_oauth_code: str = "",
    selling_partner_id: str = "",
) -> Response:
    """Amazon's consent redirect: the code exchanged at LWA, the authorisation stored, back to the marketplaces."""
    rt = runtime_of(request)
    connection_id = consent.state_connection(rt, state, person.csrf_token)
    if connection_id is None:
        message = "This Amazon authorisation was not started from this browser session, or is too old: start again."
        return page(request, "error.html", person, 400, title="Amazon", message=message)
    async with rt.db.read() as session:
        connection = await marketplaces.get(session, person.account_id, connection_id)  # 404 for another account's
    if not spapi_oauth_code or not selling_partner_id:
        # Amazon came back without an authorisation: as a Deny on the sandboxes' consent page.
        removed = await marketplaces.refuse_consent(rt, person.account_id, connection.id)
        return see_other(f"/app/marketplaces?done={'denied' if removed else 'kept'}")
    try:
        await consent.connect_with_code(rt, person.account_id, connection.country, spapi_oauth_code, selling_partner_id)
    except ApiError as exc:
        log.info("amazon_consent_refused", marketplace_id=connection.id, status=exc.status)
        return page(request, "error.html", person, exc.status, title="Amazon", message=exc.title, errors=errors_of(exc))
    return see_other("/app/marketplaces")
