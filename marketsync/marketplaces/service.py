"""Use cases on marketplace connections: connect, consent, pause, resume, disconnect, list.

Connecting and authorising happen in the merchant's app (spec section 1): `begin_connect` starts a connection that
awaits the marketplace's consent, `begin_consent` says where the merchant allows access, `grant_consent` and
`refuse_consent` are the merchant's answer there (docs/decisions/0310-connection-consent.md, 0351). Every call to
the marketplace goes through its Connector (marketplaces/connector.py). The operator CLI's `connect` (and the demo)
stands for a connection already authorised.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.http.errors import Conflict, NotFound, UpstreamUnavailable, ValidationFailed
from marketsync.jobs import service as jobs_service
from marketsync.jobs.run import JobRun
from marketsync.jobs.types import (
    JobPayload,
    JobStatus,
    JobType,
    ListingMirrorPayload,
    OrderPullPayload,
    PriceStockPushPayload,
)
from marketsync.kinds import KINDS, ConnectionState, kind_of, platform_named
from marketsync.kit.ids import new_id
from marketsync.marketplaces import credentials, events, repository
from marketsync.marketplaces.connector import (
    Authorisation,
    ConsentRefused,
    ConsentStart,
    MarketplaceError,
    Throttled,
    connector_for,
)
from marketsync.marketplaces.rules import UNAUTHORIZED, Health, HealthEvent, health_transition, observed_health
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime

__all__ = [
    "ACTIVE",
    "AWAITING_CONSENT",
    "PAUSED",
    "active_for_api",
    "begin_connect",
    "begin_consent",
    "check_health",
    "connect",
    "connect_authorised",
    "connections_needing_attention",
    "disconnect",
    "enqueue_for_active_connections",
    "find",
    "find_site",
    "get",
    "grant_consent",
    "health_summary",
    "list_all",
    "note_authorization_revoked",
    "pause",
    "refuse_consent",
    "require_orders_pulled",
    "resume",
    "set_state",
    "start_first_pull",
    "usable_connection",
]


_COUNTRY = re.compile(r"^[A-Z]{2}$")
ACTIVE, PAUSED = ConnectionState.ACTIVE, ConnectionState.PAUSED
AWAITING_CONSENT = ConnectionState.AWAITING_CONSENT
NOT_AUTHORISED_YET = "{site} is not authorised yet: allow access on the marketplace's consent page first."


async def connect(
    rt: Runtime, session: AsyncSession, account_id: str, platform: str, country: str, *, pull_now: bool = True
) -> MarketplaceConnection:
    """A connection already authorised (the operator CLI, the demo): Active at once, its first listing pull queued
    (`pull_now` False: a test's connection that stands for one connected long before)."""
    platform, country = checked_site(platform, country)
    if await repository.find(session, account_id, platform, country) is not None:
        raise Conflict(f"{platform} {country} is already connected.")
    connection = await _new_connection(rt, session, account_id, platform, country, ACTIVE)
    if pull_now:
        await start_first_pull(rt, session, connection)
    return connection


async def start_first_pull(rt: Runtime, session: AsyncSession, connection: MarketplaceConnection) -> str | None:
    """A connection just authorised pulls its listings at once, whatever its kind, instead of waiting for the
    schedule's next turn (up to MARKETSYNC_LISTING_MIRROR_INTERVAL_S, 15 minutes by default): the ListingMirror job's
    id, or None when one is queued or running already (docs/decisions/0404-first-pull-on-connect.md)."""
    if await jobs_service.has_open_job(session, connection.account_id, connection.id, JobType.LISTING_MIRROR):
        return None
    payload = ListingMirrorPayload(MarketplaceId=connection.id)
    job = jobs_service.enqueue(session, rt.clock.now(), connection.account_id, payload)
    await session.flush()  # seen by the next look for an open pull in this transaction
    return job.id


async def begin_connect(
    rt: Runtime, session: AsyncSession, account_id: str, platform: str, country: str
) -> MarketplaceConnection:
    """The app's connect: a connection awaiting the marketplace's consent. Starting again on a site still awaiting
    consent goes back to that same connection (a merchant who left the consent page is not told it is connected)."""
    platform, country = checked_site(platform, country)
    existing = await repository.find(session, account_id, platform, country)
    if existing is None:
        try:
            # In a savepoint: a double-submitted form racing this one (PostgreSQL) may insert the site first.
            async with session.begin_nested():
                return await _new_connection(rt, session, account_id, platform, country, AWAITING_CONSENT)
        except IntegrityError:
            existing = await repository.find(session, account_id, platform, country)
            if existing is None:
                raise
    if existing.state == AWAITING_CONSENT:
        return existing
    raise Conflict(f"{platform} {country} is already connected.")


def checked_site(platform: str, country: str) -> tuple[str, str]:
    """(PLATFORM, COUNTRY) of a site the kind serves (kinds.py), or ValidationFailed naming each bad field."""
    platform, country = platform_named(platform) or platform.strip(), country.strip().upper()
    problems: dict[str, list[str]] = {}
    if platform not in KINDS:
        problems["Platform"] = [f"Unknown platform; one of {', '.join(KINDS)}."]
    if not _COUNTRY.match(country):
        problems["Country"] = ["A two-letter country code, e.g. UK, DE, US, FR."]
    elif platform in KINDS and country not in KINDS[platform].sites:
        served = ", ".join(KINDS[platform].sites)
        problems["Country"] = [f"{platform} has no {country} site; it serves {served}."]
    if problems:
        raise ValidationFailed(errors=problems)
    return platform, country


async def _new_connection(
    rt: Runtime, session: AsyncSession, account_id: str, platform: str, country: str, state: ConnectionState
) -> MarketplaceConnection:
    connection = MarketplaceConnection(
        id=new_id(),
        account_id=account_id,
        platform=platform,
        country=country,
        state=state,
        health_status=None,
        health_status_message="",
        is_healthy=True,
        requires_reauthorization=False,
        last_pull_status="NeverRun",
        last_pull_total_skus=0,
        last_pull_current_sku=0,
        created_at=rt.clock.now(),
    )
    session.add(connection)
    await session.flush()
    return connection


async def get(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection:
    connection = await repository.get(session, account_id, marketplace_id)
    if connection is None:
        raise NotFound("No marketplace connection with this id.")
    return connection


async def find(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection | None:
    """The account's connection, or None (disconnected meanwhile, or another account's)."""
    return await repository.get(session, account_id, marketplace_id)


async def find_site(
    session: AsyncSession, account_id: str, platform: str, country: str
) -> MarketplaceConnection | None:
    """The account's connection to one site, whatever its state."""
    return await repository.find(session, account_id, platform, country)


async def active_for_api(rt: Runtime, account_id: str) -> list[dict[str, Any]]:
    """GET /api/marketplaces' rows: the account's active connections, on the raw driver (docs/decisions/0250)."""
    return await repository.active_for_api(rt.db, account_id)


def require_orders_pulled(connection: MarketplaceConnection) -> None:
    if not kind_of(connection.platform).orders_pulled:
        raise ValidationFailed(
            errors={"Marketplace": [f"{connection.platform} orders are not pulled; they are managed in its own admin."]}
        )


async def set_state(session: AsyncSession, account_id: str, marketplace_id: str, state: str) -> MarketplaceConnection:
    connection = await get(session, account_id, marketplace_id)
    connection.state = state
    return connection


async def pause(rt: Runtime, session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection:
    """Paused: neither pulled nor pushed, omitted from GET /api/marketplaces. Queued work is cancelled
    when it comes up (the handlers check the state), so nothing is sent while paused."""
    await _authorised(session, account_id, marketplace_id)
    return await set_state(session, account_id, marketplace_id, PAUSED)


async def _authorised(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection:
    """A connection past its consent step: pausing or resuming one that never was authorised makes no sense (and
    resuming would make it Active without consent)."""
    connection = await get(session, account_id, marketplace_id)
    if connection.state == AWAITING_CONSENT:
        raise Conflict(NOT_AUTHORISED_YET.format(site=f"{connection.platform} {connection.country}"))
    return connection


async def resume(rt: Runtime, session: AsyncSession, account_id: str, marketplace_id: str) -> list[str]:
    """Back to Active. Pushes cancelled while paused are made good by one full price/stock resync
    of the connection's listings (and an order pull where orders are pulled). Returns the job ids."""
    connection = await _authorised(session, account_id, marketplace_id)
    if connection.state == ACTIVE:
        return []
    connection.state = ACTIVE
    now = rt.clock.now()
    jobs = [
        jobs_service.enqueue(
            session, now, account_id, PriceStockPushPayload(MarketplaceId=connection.id, AllListings=True)
        )
    ]
    if kind_of(connection.platform).orders_pulled:
        jobs.append(jobs_service.enqueue(session, now, account_id, OrderPullPayload(MarketplaceId=connection.id)))
    await session.flush()
    return [job.id for job in jobs]


PUSH_AGAIN_STATUSES = (JobStatus.FAILED, JobStatus.CANCELLED)


async def push_again(rt: Runtime, session: AsyncSession, account_id: str, job_id: str) -> str:
    """A person's "push again" for a PriceStockPush that failed or was cancelled: the same products (or the same full
    resync) to the same connection, as a new push through the usual coalescing; the push reads the catalogue when it
    runs, so it sends today's values, never the failed job's. The failed job stays as it was, as history. Returns the
    new (or coalesced) job's id (docs/decisions/0332-push-again.md)."""
    job = await jobs_service.get_job(session, account_id, job_id)  # NotFound for another account's job
    if job.type != JobType.PRICE_STOCK_PUSH or job.status not in PUSH_AGAIN_STATUSES:
        raise Conflict("Only a price and stock push that failed or was cancelled can be pushed again.")
    payload = PriceStockPushPayload.of(job.payload)
    connection = await repository.get(session, account_id, payload.MarketplaceId)
    if connection is None:
        raise Conflict("Its marketplace has been disconnected since; nothing to push to.")
    site = f"{connection.platform} {connection.country}"
    if connection.state == PAUSED:
        raise Conflict(f"{site} is paused; resume it, which resyncs the price and stock of every listing.")
    if connection.state != ACTIVE:
        raise Conflict(f"{site} is not connected yet; finish connecting it first.")
    if connection.requires_reauthorization:
        raise Conflict(f"{site} needs reauthorisation; reauthorise it, which resyncs every listing.")
    now = rt.clock.now()
    if payload.AllListings:
        again = PriceStockPushPayload(MarketplaceId=connection.id, AllListings=True)
        return jobs_service.enqueue(session, now, account_id, again).id
    products = await jobs_service.price_stock_push_products(session, job.id, payload)
    return await jobs_service.enqueue_price_stock_push(session, now, account_id, connection.id, products)


async def disconnect(rt: Runtime, session: AsyncSession, account_id: str, marketplace_id: str) -> int:
    """Remove the connection (its listings cascade) and cancel its queued jobs. Returns how many."""
    connection = await get(session, account_id, marketplace_id)
    cancelled = await jobs_service.cancel_queued_for(session, rt.clock.now(), account_id, connection.id)
    await session.delete(connection)
    await session.flush()
    return cancelled


async def apply_health(rt: Runtime, session: AsyncSession, marketplace_id: str, observed: Health) -> HealthEvent | None:
    """Store an observation of the connection's health; fire an event only on an actual change.

    The row is locked first, so a health check and a failing push racing each other fire at most once.
    """
    connection = await repository.get_by_id(session, marketplace_id, for_update=True)
    if connection is None:
        return None
    current = Health(
        connection.health_status,
        connection.health_status_message,
        connection.is_healthy,
        connection.requires_reauthorization,
    )
    new, event = health_transition(current, observed)
    connection.health_status = new.status
    connection.health_status_message = new.message
    connection.is_healthy = new.is_healthy
    connection.requires_reauthorization = new.requires_reauthorization
    connection.health_checked_at = rt.clock.now()
    if event is not None:
        # Reason is the machine-readable health value; Detail the human text.
        detail = new.message if event == "MarketplaceUnhealthy" else f"{new.message} (was {current.status})."
        events.health_changed(rt, session, connection, event, new.status or "", detail)
    if event == "MarketplaceRestored" and current.requires_reauthorization and connection.state == ACTIVE:
        # Pushes made while the connection needed reauthorising failed; send what the marketplace lacks
        # now (a feed line carries only values that differ from what it holds: docs/decisions/0047).
        jobs_service.enqueue(
            session,
            rt.clock.now(),
            connection.account_id,
            PriceStockPushPayload(MarketplaceId=connection.id, AllListings=True),
        )
    return event


async def check_health(rt: Runtime, connection: MarketplaceConnection) -> HealthEvent | None:
    """Ask the marketplace (outside any transaction), then store what it said.

    A throttled check tells nothing about the connection: the state is left as it is.
    """
    connector = connector_for(rt, connection)
    try:
        status = await connector.check_authorization()
    except Throttled:
        return None
    async with rt.db.transaction() as session:
        return await apply_health(rt, session, connection.id, observed_health(status.health_status, status.message))


async def note_authorization_revoked(rt: Runtime, marketplace_id: str) -> HealthEvent | None:
    """A pull or push met AuthorizationRevoked: same rule as the health check (no repeats)."""
    async with rt.db.transaction() as session:
        return await apply_health(rt, session, marketplace_id, observed_health(UNAUTHORIZED, ""))


async def usable_connection(rt: Runtime, job: JobRun) -> MarketplaceConnection | None:
    """A marketplace job's connection if it may be used now; otherwise the job ends Cancelled and None is returned.

    A paused connection is neither pulled nor pushed; a disconnected one no longer exists.
    """
    marketplace_id = str(job.payload.get("MarketplaceId") or "")
    async with rt.db.read() as session:
        connection = await repository.get(session, job.account_id, marketplace_id)
    if connection is not None and connection.state == ACTIVE:
        return connection
    reason = "connection paused" if connection is not None else "connection disconnected"
    async with rt.db.transaction() as session:
        await job.finish(session, JobStatus.CANCELLED, reason)
    return None


async def enqueue_for_active_connections(
    rt: Runtime, job_type: JobType, payload_for: Callable[[MarketplaceConnection], JobPayload | None]
) -> list[str]:
    """One job per active connection (where `payload_for` gives one), unless one is already queued or running."""
    created = []
    async with rt.db.transaction() as session:
        now = rt.clock.now()
        for connection in await repository.list_all_active(session):
            payload = payload_for(connection)
            if payload is None:
                continue
            if await jobs_service.has_open_job(session, connection.account_id, connection.id, job_type):
                continue
            created.append(jobs_service.enqueue(session, now, connection.account_id, payload).id)
    return created


async def begin_consent(rt: Runtime, connection: MarketplaceConnection, state: str, callback_url: str) -> ConsentStart:
    """Where the merchant allows access to a connection awaiting consent or being reauthorised: the marketplace's
    consent page (its URL carries `state`, bound to the merchant's session by the app), or the app's own page
    standing for it (`url` None). A marketplace the service cannot send anyone to (not configured) is a 400."""
    try:
        return await connector_for(rt, connection).begin_consent(state, callback_url)
    except ConsentRefused as exc:
        raise ValidationFailed(errors={exc.field: [str(exc)]}) from None


# What the caller does in the transaction that makes a connection Active (the catalog queues its site's categories).
WhenAuthorised = Callable[[Runtime, AsyncSession, MarketplaceConnection], Awaitable[object]]


async def grant_consent(
    rt: Runtime,
    account_id: str,
    marketplace_id: str,
    answer: Mapping[str, str],
    *,
    when_authorised: WhenAuthorised,
) -> HealthEvent | None:
    """The merchant allowed access at the marketplace: the marketplace takes the authorisation (again, on a
    reconnect) through its connector, outside any transaction; then a connection awaiting consent becomes Active
    (`when_authorised` runs in that transaction, with its first listing pull queued: decision 0404) and the health is
    checked at once. `answer`: what came back from
    the consent page (the callback's query), exchanged by the connector."""
    async with rt.db.read() as session:
        connection = await get(session, account_id, marketplace_id)
    try:
        authorisation = await connector_for(rt, connection).finish_consent(answer)
    except ConsentRefused as exc:
        raise ValidationFailed(errors={exc.field: [str(exc)]}) from None
    except MarketplaceError as exc:
        raise UpstreamUnavailable(f"The marketplace did not take the authorisation: {exc}") from None
    async with rt.db.transaction() as session:
        connection = await _locked(session, account_id, marketplace_id)
        if authorisation.refresh_token is not None:
            _store_authorisation(rt, connection, authorisation)
        if connection.state == AWAITING_CONSENT:
            connection.state = ACTIVE
            await when_authorised(rt, session, connection)
            await start_first_pull(rt, session, connection)
    if connection.state != ACTIVE:
        return None
    return await check_health(rt, connection)


def _store_authorisation(rt: Runtime, connection: MarketplaceConnection, authorisation: Authorisation) -> None:
    """The marketplace's secret sealed on the connection (credentials.py), with the merchant's account there. A site
    already authorised by another of the merchant's marketplace accounts is a 409: one connection per site."""
    seller = authorisation.seller_id
    if connection.seller_id and seller and seller != connection.seller_id and connection.state != AWAITING_CONSENT:
        site = f"{connection.platform} {connection.country}"
        raise Conflict(f"{site} is connected to another seller account ({connection.seller_id}): disconnect it first.")
    assert authorisation.refresh_token is not None
    connection.seller_id = seller or connection.seller_id
    connection.credential = credentials.seal(rt, connection.id, authorisation.refresh_token)


async def connect_authorised(
    rt: Runtime,
    account_id: str,
    platform: str,
    country: str,
    answer: Mapping[str, str],
    *,
    when_authorised: WhenAuthorised,
) -> tuple[MarketplaceConnection, bool, HealthEvent | None]:
    """The operator's side of a marketplace's consent redirect (`admin marketplace connect` with the answer it
    carried): the account's connection to the site (started now, or the one being reauthorised) takes the
    authorisation as the app's callback would. A refused answer leaves no connection it started. Returns (the
    connection as stored, whether it existed before, the health event)."""
    async with rt.db.transaction() as session:
        platform, country = checked_site(platform, country)
        existing = await repository.find(session, account_id, platform, country)
        connection = existing or await begin_connect(rt, session, account_id, platform, country)
    try:
        event = await grant_consent(rt, account_id, connection.id, answer, when_authorised=when_authorised)
    except Exception:
        if existing is None:
            await refuse_consent(rt, account_id, connection.id)
        raise
    async with rt.db.read() as session:
        return await get(session, account_id, connection.id), existing is not None, event


async def refuse_consent(rt: Runtime, account_id: str, marketplace_id: str) -> bool:
    """The merchant denied access on the consent page. A connection never authorised is removed (no orphan left
    awaiting consent); one being reconnected keeps the state it had. True when the connection was removed."""
    async with rt.db.transaction() as session:
        connection = await _locked(session, account_id, marketplace_id)
        if connection.state != AWAITING_CONSENT:
            return False
        await session.delete(connection)
        return True


async def _locked(session: AsyncSession, account_id: str, marketplace_id: str) -> MarketplaceConnection:
    """The account's connection, its row locked: an Allow and a Deny racing (two tabs) are decided one after the
    other, so a Deny never removes a connection an Allow has just made Active."""
    connection = await repository.get_by_id(session, marketplace_id, for_update=True)
    if connection is None or connection.account_id != account_id:
        raise NotFound("No marketplace connection with this id.")
    return connection


async def list_all(session: AsyncSession, account_id: str) -> Sequence[MarketplaceConnection]:
    """Every connection of the account, paused ones included."""
    return await repository.list_of(session, account_id)


async def health_summary(session: AsyncSession) -> list[tuple[str, str, bool, bool, int]]:
    """Connections by platform, state, health and reauthorisation need, across accounts (metrics)."""
    return await repository.health_summary(session)


async def connections_needing_attention(session: AsyncSession, account_id: str) -> tuple[int, int]:
    """(needing reauthorisation, otherwise unhealthy) of the account's connections."""
    return await repository.connections_needing_attention(session, account_id)
