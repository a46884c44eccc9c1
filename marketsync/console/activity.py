"""The activity log (Owners): who did what and when in the app, newest first, a page at a time, filtered by person
and kind; kept for people.ACTIVITY_RETENTION (docs/decisions/0431-activity-log.md)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import OwnerOnly
from marketsync.console.render import NOT_A_PAGE, cursor_text, page, page_cursor, page_router
from marketsync.models.activity import ActivityEntry
from marketsync.people import service as people

router = page_router()
ACTIVITY_PAGE = 50
KIND_WORDS = {
    people.ActivityKind.HAND_EDIT: "Hand edits",
    people.ActivityKind.CREDENTIAL: "API credentials",
    people.ActivityKind.PERSON: "People",
    people.ActivityKind.DATA_FLOW: "Data Flow",
    people.ActivityKind.MARKETPLACE: "Marketplaces",
    people.ActivityKind.WEBHOOK: "Webhooks",
    people.ActivityKind.CUSTOMER_DATA: "Customer data shown",
}


@router.get("/activity", response_class=HTMLResponse)
async def activity_page(
    request: Request, person: OwnerOnly, who: str = "", kind: str = "", before: str = ""
) -> Response:
    errors: dict[str, list[str]] = {}
    if kind and kind not in KIND_WORDS:
        errors["Kind"] = [f"One of {', '.join(KIND_WORDS)}."]
    cursor = page_cursor(before) if before else None
    if before and cursor is None:
        errors["before"] = [NOT_A_PAGE]
    entries: list[ActivityEntry] = []
    async with runtime_of(request).db.read() as session:
        everyone = await people.activity_people(session, person.account_id)
        if not errors:
            entries = await people.activity(
                session, person.account_id, ACTIVITY_PAGE + 1, user_id=who or None, kind=kind or None, before=cursor
            )
    more = len(entries) > ACTIVITY_PAGE
    entries = entries[:ACTIVITY_PAGE]
    filters = {name: value for name, value in (("who", who), ("kind", kind)) if value}
    return page(
        request, "activity.html", person, 400 if errors else 200, title="Activity", entries=entries,
        everyone=everyone, kinds=KIND_WORDS, who=who, kind=kind, filters=filters, errors=errors, paged=bool(before),
        next_before=cursor_text(entries[-1].created_at, entries[-1].id) if more else None,
        retention_days=people.ACTIVITY_RETENTION.days,
    )  # fmt: skip
