"""The account's settings in the app: its time zone, which an Owner sets and every page shows its times in (the API
stays UTC: docs/decisions/0435-account-time-zone.md)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from marketsync.auth import service as accounts
from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import OwnerOnly, SignedIn, checked_form
from marketsync.console.render import errors_of, page, page_router, see_other
from marketsync.http.errors import ValidationFailed
from marketsync.kit import zones

router = page_router()


@router.get("/settings", response_class=HTMLResponse)
async def settings_page(request: Request, person: SignedIn, saved: str = "") -> Response:
    return page(
        request, "settings.html", person, title="Settings", zone_names=zones.zone_names(), chosen=person.time_zone,
        saved=saved == "1",
    )  # fmt: skip


@router.post("/settings", response_class=HTMLResponse)
async def save_settings(request: Request, person: OwnerOnly) -> Response:
    form = await checked_form(request, person)
    chosen = str(form.get("time_zone") or "")
    try:
        async with runtime_of(request).db.transaction() as session:
            await accounts.set_time_zone(session, person.account_id, chosen)
    except ValidationFailed as exc:
        return page(
            request, "settings.html", person, 400, title="Settings", zone_names=zones.zone_names(), chosen=chosen,
            errors=errors_of(exc),
        )  # fmt: skip
    return see_other("/app/settings?saved=1")
