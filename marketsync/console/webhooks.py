"""Webhooks in the app: subscriptions (the secret shown once), their health, the 30-day attempt log, and a person's
repairs: resend one delivery, recover every failed delivery since a time, send a sample, replace a disabled
subscription (docs/decisions/0122-webhook-repairs.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Query, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import SESSION_COOKIE, SignedIn, checked_form
from marketsync.console.render import (
    NOT_A_PAGE,
    cursor_text,
    errors_of,
    page,
    page_cursor,
    page_router,
    see_other,
)
from marketsync.http.errors import ApiError, ValidationFailed
from marketsync.kit import zones
from marketsync.kit.clock import iso
from marketsync.kit.timestamps import in_utc
from marketsync.people import service as people
from marketsync.people.service import Person
from marketsync.runtime import Runtime
from marketsync.webhooks import service as webhooks
from marketsync.webhooks.rules import EVENT_TYPES

router = page_router()
LOG_PAGE = 100


async def _webhooks_page(request: Request, person: Person, status: int = 200, **context: Any) -> Response:
    rt = runtime_of(request)
    subscription_id = request.query_params.get("subscription") or None
    delivery_id = request.query_params.get("delivery") or None
    event_type = request.query_params.get("event_type") or None
    asked_before = request.query_params.get("before", "")
    before = page_cursor(asked_before) if asked_before else None
    async with rt.db.read() as session:
        subscriptions = await webhooks.list_subscriptions(session, person.account_id)
    unreadable = bool(asked_before) and before is None
    if unreadable:  # as the jobs and imports lists answer it, never the first page instead
        status = max(status, 400)
        context["errors"] = {**context.get("errors", {}), "before": [NOT_A_PAGE]}
    if event_type is not None and event_type not in EVENT_TYPES:
        unreadable, status = True, max(status, 400)
        context["errors"] = {**context.get("errors", {}), "event_type": [f"One of {', '.join(EVENT_TYPES)}."]}
    attempts = (
        []
        if unreadable
        else await webhooks.attempt_log(
            rt, person.account_id, subscription_id, LOG_PAGE, before=before, delivery_id=delivery_id,
            event_type=event_type,
        )
    )  # fmt: skip
    # One delivery's page of the log shows what it sent, byte for byte as signed (docs/decisions/0438).
    body = await webhooks.delivered_body(rt, person.account_id, delivery_id) if delivery_id else None
    older = None
    if len(attempts) == LOG_PAGE:
        last = attempts[-1]
        older = cursor_text(last.started_at, last.id)
    return page(
        request, "webhooks.html", person, status, title="Webhooks", subscriptions=subscriptions, attempts=attempts,
        older=older, event_types=EVENT_TYPES, subscription_filter=subscription_id, delivery_filter=delivery_id,
        event_type_filter=event_type, delivered_body=body.decode("utf-8", "replace") if body is not None else None,
        log_filters=urlencode([(name, value) for name, value in (("subscription", subscription_id),
                               ("delivery", delivery_id), ("event_type", event_type)) if value]),
        **context,
    )  # fmt: skip


@router.get("/webhooks", response_class=HTMLResponse)
async def webhooks_page(
    request: Request,
    person: SignedIn,
    done: str = "",
    count: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    created: str = "",
) -> Response:
    notice = NOTICES.get(done, "").format(count=count)
    revealed: dict[str, Any] = {}
    if created:  # the page a create's (or a replace's) redirect shows: its secret, once (decision 0401)
        shown = await people.take_reveal(runtime_of(request), request.cookies.get(SESSION_COOKIE, ""), _key(created))
        revealed = {"shown": shown, "gone": shown is None}
    return await _webhooks_page(request, person, notice=notice, **revealed)


def _key(subscription_id: str) -> str:
    return f"subscription:{subscription_id}"


async def _keep_secret(request: Request, session: AsyncSession, created: webhooks.NewSubscription, why: str) -> None:
    """The signing secret is stored encrypted and shown once, by the page the redirect shows: kept on the browser's
    session in the transaction that made it (decision 0401)."""
    shown = {"url": created.subscription.url, "secret": created.secret, "why": why}
    token = request.cookies.get(SESSION_COOKIE, "")
    await people.keep_reveal(runtime_of(request), session, token, _key(created.subscription.id), shown)


@router.post("/webhooks", response_class=HTMLResponse)
async def create_subscription(request: Request, person: SignedIn) -> Response:
    form = await checked_form(request, person)
    url = str(form.get("url") or "").strip()
    chosen = [event for event in EVENT_TYPES if form.get(f"event_{event}")]
    rt = runtime_of(request)
    try:
        # The API's own checks: https only, a public host (resolved, SSRF-safe), known event types.
        await webhooks.validate_subscription(rt, url, chosen)
        async with rt.db.transaction() as session:
            created = await webhooks.create_subscription(rt, session, person.account_id, url, chosen)
            await _keep_secret(request, session, created, "created")
            await _log(rt, session, person, "Subscribed", url, {"Events": ", ".join(chosen)})
    except ApiError as exc:
        return await _webhooks_page(request, person, exc.status, errors=errors_of(exc), url=url, chosen=chosen)
    # Post/redirect/get: a reload of the page shows the secret no more and creates nothing.
    return see_other(f"/app/webhooks?created={created.subscription.id}")


# What a repair did, named by a code in the redirect (never free text from the URL): post/redirect/get, so
# reloading the page never resends again.
NOTICES = {
    "resent": "The delivery is sent again now; its attempt appears below in a moment.",
    "deleted": "Subscription deleted; its queued deliveries are gone with it.",
    "recovered": "{count} failed deliveries are sent again now.",
    "sampled": "A sample is on its way; its attempt appears below in a moment.",
}


@router.post("/webhooks/deliveries/{delivery_id}/resend", response_class=HTMLResponse)
async def resend(request: Request, delivery_id: str, person: SignedIn) -> Response:
    await checked_form(request, person)
    rt = runtime_of(request)
    try:
        async with rt.db.transaction() as session:
            await webhooks.resend(rt, session, person.account_id, delivery_id)
            await _log(rt, session, person, "Resent a delivery", delivery_id)
    except ApiError as exc:
        if exc.status == 404:
            raise
        return await _webhooks_page(request, person, exc.status, errors=errors_of(exc))
    return see_other(f"/app/webhooks?done=resent&delivery={delivery_id}")


@router.post("/webhooks/{subscription_id}/replace", response_class=HTMLResponse)
async def replace_subscription(request: Request, subscription_id: str, person: SignedIn) -> Response:
    """A disabled subscription cannot be re-enabled (spec section 3): a new one with the same URL and events takes
    its place, and its new secret is shown once, as at create."""
    await checked_form(request, person)

    async def keep(session: AsyncSession, created: webhooks.NewSubscription) -> None:
        await _keep_secret(request, session, created, "replaced")
        await _log(runtime_of(request), session, person, "Replaced a disabled subscription", created.subscription.url)

    try:
        created = await webhooks.replace(runtime_of(request), person.account_id, subscription_id, then=keep)
    except ApiError as exc:
        if exc.status == 404:
            raise
        errors = errors_of(exc)
        return await _webhooks_page(request, person, exc.status, errors=errors, failed_subscription=subscription_id)
    return see_other(f"/app/webhooks?created={created.subscription.id}")


@router.post("/webhooks/{subscription_id}/{action}", response_class=HTMLResponse)
async def change_subscription(request: Request, subscription_id: str, action: str, person: SignedIn) -> Response:
    form = await checked_form(request, person)
    rt = runtime_of(request)
    count = 0
    typed = {"since": str(form.get("since") or ""), "event_type": str(form.get("event_type") or "")}
    try:
        async with rt.db.transaction() as session:
            if action not in ("delete", "recover", "sample"):
                return page(request, "error.html", person, 404, title="Not found", message="No such page.")
            url = (await webhooks.get_subscription(session, person.account_id, subscription_id)).url  # 404: another's
            if action == "delete":
                await webhooks.delete_subscription(session, person.account_id, subscription_id)
                await _log(rt, session, person, "Deleted", url)
            elif action == "recover":
                since = _since(str(form.get("since") or ""), person.time_zone)
                count = await webhooks.recover(rt, session, person.account_id, subscription_id, since)
                await _log(
                    rt, session, person, "Recovered failed deliveries", url, {"Since": iso(since), "Sent": str(count)}
                )
            else:
                event_type = str(form.get("event_type") or "")
                await webhooks.send_sample(rt, session, person.account_id, subscription_id, event_type)
                await _log(rt, session, person, "Sent a sample", url, {"Event": event_type})
    except ApiError as exc:
        if exc.status == 404:
            raise
        # Shown in the subscription's own section, beside the form that was sent, with what was typed in it.
        return await _webhooks_page(
            request, person, exc.status, errors=errors_of(exc), failed_subscription=subscription_id, typed=typed
        )
    done = {"delete": "deleted", "recover": "recovered", "sample": "sampled"}[action]
    return see_other(f"/app/webhooks?done={done}&count={count}")


async def _log(
    rt: Runtime, session: AsyncSession, person: Person, action: str, subject: str, details: dict[str, str] | None = None
) -> None:
    """The activity log's entry (decision 0431): a subscription by its URL, never its secret."""
    await people.record_activity(rt, session, person, people.ActivityKind.WEBHOOK, action, subject, details)


def _since(value: str, time_zone: str) -> datetime:
    """A `datetime-local` value (read in the account's time zone), or a date; one UTC cannot hold is refused too."""
    try:
        moment = datetime.fromisoformat(value.strip())
        return in_utc(moment if moment.tzinfo is not None else moment.replace(tzinfo=zones.zone(time_zone)))
    except ValueError:
        message = f"Give a date and time ({time_zone}), e.g. 2026-11-25T09:00."
        raise ValidationFailed(errors={"Since": [message]}) from None
