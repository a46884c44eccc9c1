"""The app's pages. Each page: a route here, a template in templates/, domain services only (never a
repository). Forms post back to the page and show errors beside the field that caused them (the API's own
per-field messages). Recipe: README.md in this folder."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.exceptions import HTTPException as StarletteHTTPException

from marketsync.auth import service as auth
from marketsync.auth.dependencies import runtime_of
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.catalog.listings import app_fields as listings
from marketsync.catalog.listings import rules as listing_rules
from marketsync.catalog.taxonomy import service as taxonomy
from marketsync.console import activity, catalogue, home, jobs, orders, settings, webhooks
from marketsync.console.guards import (
    SESSION_COOKIE,
    Forbidden,
    FormRefused,
    OwnerOnly,
    SignedIn,
    SignInRequired,
    check_same_origin,
    checked_form,
    consent_state,
    consented_marketplace,
)
from marketsync.console.render import (
    HERE,
    MAX_QUERY_VALUE,
    NO_STORE,
    error_page,
    errors_of,
    is_app_path,
    is_partial,
    page,
    page_router,
    see_other,
)
from marketsync.http.errors import (
    ApiError,
    BodyRefused,
    Conflict,
    ValidationFailed,
    error_response,
    http_error_headers,
    http_problem,
    request_validation_problem,
    validation_errors,
)
from marketsync.inventory import service as inventory
from marketsync.kinds import KINDS, kind_of
from marketsync.marketplaces import service as marketplaces
from marketsync.models import MarketplaceConnection
from marketsync.people import service as people
from marketsync.people.service import ActivityKind, Person

router = page_router()


# -- sign-in ---------------------------------------------------------------------------------------------------


def _after_sign_in(asked: str) -> str:
    """Where a sign-in goes: the app page that was asked for, or the home page. Only an app path of this site: a
    `next` naming another site (`//evil.example`, `/\\evil`, a scheme) would make the sign-in an open redirect."""
    safe = (
        asked.startswith("/app/")
        and not asked.startswith("/app/sign-in")
        and not any(c == "\\" or ord(c) < 32 or c.isspace() for c in asked)
        and "//" not in asked
    )
    return asked if safe else "/app/"


@router.get("/sign-in", response_class=HTMLResponse)
async def sign_in_page(request: Request, asked: Annotated[str, Query(alias="next")] = "") -> Response:
    # Already signed in (a bookmark, the back button): on to the app, not a second sign-in.
    token = request.cookies.get(SESSION_COOKIE, "")
    if token and await people.person_for(runtime_of(request), token, activity=False) is not None:
        return see_other(_after_sign_in(asked))
    return page(request, "sign_in.html", None, title="Sign in", next=_after_sign_in(asked))


@router.post("/sign-in", response_class=HTMLResponse)
async def sign_in(request: Request) -> Response:
    check_same_origin(request)  # the sign-in form has no session yet, so no CSRF token: its origin is checked
    rt = runtime_of(request)
    form = await request.form()
    email, password = str(form.get("email") or ""), str(form.get("password") or "")
    after = _after_sign_in(str(form.get("next") or ""))
    if "\x00" in email + password:
        return page(request, "sign_in.html", None, 400, title="Sign in", error="Wrong email or password.", next=after)
    if not email.strip() or not password:
        error = "Enter your email and your password."
        return page(request, "sign_in.html", None, 400, title="Sign in", error=error, email=email, next=after)
    source = request.client.host if request.client else "unknown"
    try:
        token = await people.sign_in(rt, email, password, source)
    except people.SignInRefused as exc:
        status = 429 if exc.retry_after_s else 401
        response = page(request, "sign_in.html", None, status, title="Sign in", error=str(exc), email=email, next=after)
        if exc.retry_after_s:
            response.headers["Retry-After"] = str(exc.retry_after_s)
        return response
    response = see_other(after)
    # A new token at every sign-in (whatever the browser sent): a planted session id is worthless.
    response.set_cookie(
        SESSION_COOKIE,
        token,
        httponly=True,
        samesite="lax",
        secure=rt.settings.base_url.startswith("https://"),
        path="/app",
        max_age=int(people.ABSOLUTE_EXPIRY.total_seconds()),
    )
    return response


@router.post("/sign-out")
async def sign_out(request: Request, person: SignedIn) -> Response:
    form = await checked_form(request, person)
    rt = runtime_of(request)
    if form.get("everywhere"):
        await people.sign_out_everywhere(rt, person.user_id)
    else:
        await people.sign_out(rt, request.cookies.get(SESSION_COOKIE, ""))
    response = see_other("/app/sign-in")
    response.delete_cookie(SESSION_COOKIE, path="/app")
    return response


# -- credentials (Owner) ----------------------------------------------------------------------------------------


# A rotation's grace periods the form offers (docs/decisions/0432), in hours: at once, an hour, a day, 3 days, 7 days.
GRACE_CHOICES = {0: "None: the old secret stops now", 1: "1 hour", 24: "1 day", 72: "3 days", 168: "7 days"}


async def _credentials_page(request: Request, person: Person, status: int = 200, **context: Any) -> Response:
    rt = runtime_of(request)
    async with rt.db.read() as session:
        credentials = await auth.list_credentials(session, person.account_id)
    now = rt.clock.now()
    old_until = {credential.id: auth.previous_secret_until(credential, now) for credential in credentials}
    return page(
        request, "credentials.html", person, status, title="API credentials", credentials=credentials,
        scopes=ALL_SCOPES, old_until=old_until, grace_choices=GRACE_CHOICES, **context,
    )  # fmt: skip


async def _revealed(request: Request, key: str) -> dict[str, Any]:
    """The page's one-time reveal (decision 0401), taken from the browser's session: `shown` once, then `gone`."""
    shown = await people.take_reveal(runtime_of(request), request.cookies.get(SESSION_COOKIE, ""), key)
    return {"shown": shown, "gone": shown is None}


async def keep_reveal(request: Request, session: AsyncSession, key: str, shown: dict[str, str]) -> None:
    """Kept, in the transaction that made the secret, for the page the redirect shows (decision 0401)."""
    await people.keep_reveal(runtime_of(request), session, request.cookies.get(SESSION_COOKIE, ""), key, shown)


@router.get("/credentials", response_class=HTMLResponse)
async def credentials_page(request: Request, person: OwnerOnly, created: str = "") -> Response:
    revealed = await _revealed(request, f"credential:{created}") if created else {}
    return await _credentials_page(request, person, **revealed)


@router.post("/credentials", response_class=HTMLResponse)
async def create_credential(request: Request, person: OwnerOnly) -> Response:
    form = await checked_form(request, person)
    name = str(form.get("name") or "").strip()
    chosen = [scope for scope in ALL_SCOPES if form.get(f"scope_{scope}")]
    errors: dict[str, list[str]] = {}
    if not name or len(name) > 100:
        errors["Name"] = ["A name of 1 to 100 characters, e.g. the system that will use it."]
    if not chosen:
        errors["Scopes"] = ["Choose at least one scope."]
    if errors:
        return await _credentials_page(request, person, 400, errors=errors, name=name, chosen=chosen)
    rt = runtime_of(request)
    async with rt.db.transaction() as session:
        created = await auth.create_credential(rt, session, person.account_id, name, chosen)
        await people.record_activity(
            rt, session, person, ActivityKind.CREDENTIAL, "Created", name, {"Scopes": " ".join(chosen)}
        )
        shown = {
            "name": name, "client_id": created.client_id, "client_secret": created.client_secret,
            "scopes": " ".join(created.scopes),
        }  # fmt: skip
        await keep_reveal(request, session, f"credential:{created.credential_id}", shown)
    # The secret is stored as a keyed hash: shown once, by the page this redirect shows; a reload creates nothing.
    return see_other(f"/app/credentials?created={created.credential_id}")


@router.post("/credentials/{credential_id}/rotate", response_class=HTMLResponse)
async def rotate_credential(request: Request, credential_id: str, person: OwnerOnly) -> Response:
    form = await checked_form(request, person)
    hours = str(form.get("grace_hours") or "")
    if not hours.isdigit() or int(hours) not in GRACE_CHOICES:
        errors = {"Grace": ["Choose how long the old secret keeps working: none, or up to 7 days."]}
        return await _credentials_page(request, person, 400, errors=errors)
    rt = runtime_of(request)
    async with rt.db.transaction() as session:
        rotated = await auth.rotate_credential(
            rt, session, person.account_id, credential_id, timedelta(hours=int(hours))
        )
        shown = {
            "name": rotated.name, "client_id": rotated.client_id, "client_secret": rotated.client_secret,
            "scopes": " ".join(rotated.scopes), "rotated": GRACE_CHOICES[int(hours)],
        }  # fmt: skip
        await keep_reveal(request, session, f"credential:{rotated.credential_id}", shown)
        await people.record_activity(
            rt, session, person, ActivityKind.CREDENTIAL, "Rotated", rotated.name,
            {"Previous one works for": GRACE_CHOICES[int(hours)]},
        )  # fmt: skip
    return see_other(f"/app/credentials?created={rotated.credential_id}")


@router.post("/credentials/{credential_id}/delete")
async def delete_credential(request: Request, credential_id: str, person: OwnerOnly) -> Response:
    await checked_form(request, person)
    rt = runtime_of(request)
    async with rt.db.transaction() as session:
        name = await auth.delete_credential(session, person.account_id, credential_id)
        await people.record_activity(rt, session, person, ActivityKind.CREDENTIAL, "Deleted", name)
    return see_other("/app/credentials")


# -- people -------------------------------------------------------------------------------------------------


async def _people_page(request: Request, person: Person, status: int = 200, **context: Any) -> Response:
    async with runtime_of(request).db.read() as session:
        listed = await people.list_people(session, person.account_id)
    return page(
        request, "people.html", person, status, title="People", people=listed, roles=tuple(people.Role), **context
    )


@router.get("/people", response_class=HTMLResponse)
async def people_page(request: Request, person: OwnerOnly, removed: str = "", shown: str = "") -> Response:
    revealed = await _revealed(request, f"person:{shown}") if shown else {}
    return await _people_page(request, person, removed=removed == "1", **revealed)


def _person_shown(user: people.NewUser, why: str) -> dict[str, str]:
    return {"email": user.email, "password": user.password, "role": str(user.role), "why": why}


@router.post("/people", response_class=HTMLResponse)
async def add_person(request: Request, person: OwnerOnly) -> Response:
    form = await checked_form(request, person)
    email, role = str(form.get("email") or "").strip(), str(form.get("role") or "")
    rt = runtime_of(request)
    try:
        async with rt.db.transaction() as session:
            await people.acting_owner(session, person.account_id, person.user_id)
            added = await people.create_user(rt, session, person.account_id, email, role)
            await people.record_activity(rt, session, person, ActivityKind.PERSON, "Added", added.email, {"Role": role})
            await keep_reveal(request, session, f"person:{added.user_id}", _person_shown(added, "added"))
    except ValidationFailed as exc:
        return await _people_page(request, person, 400, errors=errors_of(exc), email=email, role=role)
    # The password is stored as an argon2id hash: shown once, by the page this redirect shows (decision 0401).
    return see_other(f"/app/people?shown={added.user_id}")


@router.post("/people/{user_id}/password", response_class=HTMLResponse)
async def replace_password(request: Request, user_id: str, person: OwnerOnly) -> Response:
    await checked_form(request, person)
    rt = runtime_of(request)
    async with rt.db.transaction() as session:
        replaced = await people.new_password(rt, session, person.account_id, user_id, by=person.user_id)
        await people.record_activity(rt, session, person, ActivityKind.PERSON, "Gave a new password", replaced.email)
        await keep_reveal(request, session, f"person:{replaced.user_id}", _person_shown(replaced, "password"))
    return see_other(f"/app/people?shown={replaced.user_id}")


@router.post("/people/{user_id}/remove", response_class=HTMLResponse)
async def remove_person(request: Request, user_id: str, person: OwnerOnly) -> Response:
    await checked_form(request, person)
    rt = runtime_of(request)
    try:
        async with rt.db.transaction() as session:
            email = await people.remove_user(session, person.account_id, user_id, by=person.user_id)
            await people.record_activity(rt, session, person, ActivityKind.PERSON, "Removed", email)
    except Conflict as exc:
        return await _people_page(request, person, 409, errors={"": [exc.title]})
    return see_other("/app/people?removed=1")


# -- marketplaces ---------------------------------------------------------------------------------------------


async def _marketplaces_page(request: Request, person: Person, status: int = 200, **context: Any) -> Response:
    async with runtime_of(request).db.read() as session:
        connections = await marketplaces.list_all(session, person.account_id)
    return page(
        request, "marketplaces.html", person, status, title="Marketplaces", connections=connections,
        sites={platform: kind.sites for platform, kind in KINDS.items()}, **context,
    )  # fmt: skip


# What the consent step did, named by a code in the redirect (never free text from the URL).
MARKETPLACE_NOTICES = {
    "denied": "Access was denied at the marketplace: the marketplace was not connected.",
    "kept": "Access was not given again: the connection is as it was.",
}


@router.get("/marketplaces", response_class=HTMLResponse)
async def marketplaces_page(request: Request, person: SignedIn, done: str = "") -> Response:
    if is_partial(request):  # the live part: health and LastPull, refreshed every few seconds
        async with runtime_of(request).db.read() as session:
            connections = await marketplaces.list_all(session, person.account_id)
        return page(request, "_connections.html", person, connections=connections)
    return await _marketplaces_page(request, person, notice=MARKETPLACE_NOTICES.get(done, ""))


@router.post("/marketplaces", response_class=HTMLResponse)
async def connect_marketplace(request: Request, person: SignedIn) -> Response:
    form = await checked_form(request, person)
    rt = runtime_of(request)
    platform, country = str(form.get("platform") or ""), str(form.get("country") or "")
    try:
        async with rt.db.transaction() as session:
            connection = await marketplaces.begin_connect(rt, session, person.account_id, platform, country)
            await people.record_activity(
                rt, session, person, ActivityKind.MARKETPLACE, "Started connecting", f"{platform} {country}"
            )
    except ApiError as exc:
        return await _marketplaces_page(
            request, person, exc.status, errors=errors_of(exc), platform=platform, country=country
        )
    # Connecting ends with the marketplace's consent, as a real marketplace's authorisation does; until then the
    # connection awaits consent (docs/decisions/0310-connection-consent.md).
    return await _to_consent(request, person, connection)


async def _to_consent(request: Request, person: Person, connection: MarketplaceConnection) -> Response:
    """To where the merchant allows access: the marketplace's consent page, or this app's page standing for it (the
    sandbox marketplaces). Either way the answer comes back to this session only (docs/decisions/0351), at the kind's
    callback (kinds.py: Amazon's is /app/marketplaces/amazon/callback, the redirect URI registered with Amazon)."""
    rt = runtime_of(request)
    callback = rt.settings.base_url.rstrip("/") + kind_of(connection.platform).consent_callback
    start = await marketplaces.begin_consent(rt, connection, consent_state(person, connection.id), callback)
    return see_other(start.url or f"/app/marketplaces/{connection.id}/consent")


# Every kind's callback: /app/marketplaces/consent/callback (the default), /app/marketplaces/amazon/callback. The
# `state` names the connection, so the path's first part only has to be one of them.
CALLBACKS = frozenset(kind.consent_callback for kind in KINDS.values())


@router.get("/marketplaces/{kind}/callback")
async def consent_callback(request: Request, kind: str, person: SignedIn) -> Response:
    """Where a marketplace's consent page sends the merchant back: `state` names the connection (and must come from
    this session), the rest is the marketplace's answer, which its connector exchanges for the authorisation. An
    answer carrying `error` (access denied at the marketplace) is a Deny."""
    if f"/app/marketplaces/{kind}/callback" not in CALLBACKS:
        return page(request, "error.html", person, 404, title="Not found", message="No such page.")
    answer = {key: value for key, value in request.query_params.items() if key != "state"}
    marketplace_id = consented_marketplace(person, request.query_params.get("state", ""))
    if marketplace_id is None:
        raise Forbidden("This answer from the marketplace does not belong to this session; connect again.")
    rt = runtime_of(request)
    if "error" not in answer:
        return await _granted(request, person, marketplace_id, answer)
    removed = await marketplaces.refuse_consent(rt, person.account_id, marketplace_id)
    return see_other(f"/app/marketplaces?done={'denied' if removed else 'kept'}")


async def _granted(request: Request, person: Person, marketplace_id: str, answer: dict[str, str]) -> Response:
    """Access given at the marketplace: the connection is authorised, and the activity log says whether it was
    connected or reauthorised (after the grant, which commits on its own: a grant that failed logs nothing)."""
    rt = runtime_of(request)
    async with rt.db.read() as session:
        before = await marketplaces.get(session, person.account_id, marketplace_id)
    await marketplaces.grant_consent(
        rt, person.account_id, marketplace_id, answer, when_authorised=taxonomy.load_categories_if_missing
    )
    action = "Connected" if before.state == marketplaces.AWAITING_CONSENT else "Reauthorised"
    async with rt.db.transaction() as session:
        subject = f"{before.platform} {before.country}"
        await people.record_activity(rt, session, person, ActivityKind.MARKETPLACE, action, subject)
    return see_other("/app/marketplaces")


@router.get("/marketplaces/{marketplace_id}/consent", response_class=HTMLResponse)
async def consent_page(request: Request, marketplace_id: str, person: SignedIn) -> Response:
    async with runtime_of(request).db.read() as session:
        connection = await marketplaces.get(session, person.account_id, marketplace_id)
    return page(request, "consent.html", person, title="Allow access", connection=connection)


@router.post("/marketplaces/{marketplace_id}/consent")
async def give_consent(request: Request, marketplace_id: str, person: SignedIn) -> Response:
    form = await checked_form(request, person)
    rt = runtime_of(request)
    if form.get("decision") == "allow":
        return await _granted(request, person, marketplace_id, {})
    removed = await marketplaces.refuse_consent(rt, person.account_id, marketplace_id)
    return see_other(f"/app/marketplaces?done={'denied' if removed else 'kept'}")


# A connection's buttons, and what the activity log calls each.
MARKETPLACE_ACTIONS = {"pause": "Paused", "resume": "Resumed", "disconnect": "Disconnected"}


# Declared after the consent routes: a path parameter would otherwise take `consent` as an action.
@router.post("/marketplaces/{marketplace_id}/{action}")
async def change_marketplace(request: Request, marketplace_id: str, action: str, person: SignedIn) -> Response:
    await checked_form(request, person)
    rt = runtime_of(request)
    if action == "reauthorize":  # also "continue" for a connection still awaiting consent
        async with rt.db.read() as session:
            connection = await marketplaces.get(session, person.account_id, marketplace_id)  # 404: another account's
        return await _to_consent(request, person, connection)
    try:
        async with rt.db.transaction() as session:
            if action not in MARKETPLACE_ACTIONS:
                return page(request, "error.html", person, 404, title="Not found", message="No such page.")
            connection = await marketplaces.get(session, person.account_id, marketplace_id)  # 404: another account's
            if action == "pause":
                await marketplaces.pause(rt, session, person.account_id, marketplace_id)
            elif action == "resume":
                await marketplaces.resume(rt, session, person.account_id, marketplace_id)
            else:
                await marketplaces.disconnect(rt, session, person.account_id, marketplace_id)
            subject = f"{connection.platform} {connection.country}"
            await people.record_activity(
                rt, session, person, ActivityKind.MARKETPLACE, MARKETPLACE_ACTIONS[action], subject
            )
    except ApiError as exc:
        if exc.status == 404:
            raise
        return await _marketplaces_page(request, person, exc.status, errors=errors_of(exc))
    return see_other("/app/marketplaces")


# -- Data Flow --------------------------------------------------------------------------------------------------


async def _dataflow_page(
    request: Request, person: Person, status: int = 200, typed: dict[str, str] | None = None, **context: Any
) -> Response:
    async with runtime_of(request).db.read() as session:
        stored = await inventory.data_owners(session, person.account_id)
    owners: dict[str, str] = {kind: owner for kind, owner in stored.items()}
    owners.update(typed or {})  # a refused form shows what the person chose
    return page(request, "dataflow.html", person, status, title="Data Flow", owners=owners, **context)


@router.get("/dataflow", response_class=HTMLResponse)
async def dataflow_page(request: Request, person: SignedIn, saved: str = "") -> Response:
    return await _dataflow_page(request, person, saved=saved == "1")


@router.post("/dataflow", response_class=HTMLResponse)
async def set_dataflow(request: Request, person: SignedIn) -> Response:
    form = await checked_form(request, person)
    chosen = {kind: str(form.get(kind) or "") for kind in ("Price", "Stock")}
    rt = runtime_of(request)
    errors: dict[str, list[str]] = {}
    try:
        async with rt.db.transaction() as session:
            stored = {str(k): str(v) for k, v in (await inventory.data_owners(session, person.account_id)).items()}
            for kind, owner in chosen.items():
                try:
                    await inventory.set_data_owner(rt, session, person.account_id, kind, owner)
                except ValidationFailed as exc:  # beside the kind it is about
                    errors[kind] = [message for messages in exc.errors.values() for message in messages]
            if errors:
                raise ValidationFailed(errors=errors)  # neither kind is saved
            changed = {
                kind: f"{stored.get(kind)} → {owner}" for kind, owner in chosen.items() if stored.get(kind) != owner
            }
            if changed:
                await people.record_activity(
                    rt, session, person, ActivityKind.DATA_FLOW, "Changed", "Data Flow", changed
                )
    except ValidationFailed as exc:
        # The form again with its errors and what the person chose (a value the form cannot show stays as stored).
        typed = {kind: owner for kind, owner in chosen.items() if owner in ("Merchant", "Marketplace")}
        return await _dataflow_page(request, person, 400, typed=typed, errors=errors_of(exc))
    return see_other("/app/dataflow?saved=1")  # post/redirect/get: reloading the page does not post again


# -- a listing: its category and attribute values, and its off-API fields --------------------------------------

# Categories a page of the listing page's search shows; the search is the API's (POST /api/product-types/Search).
CATEGORY_PAGE = 20
MAX_SEARCH_TEXT = 200
MAX_OFFSET = 2**31 - 1


async def _listing_page(
    request: Request,
    person: Person,
    listing_id: str,
    status: int = 200,
    *,
    category: str = "",
    typed_values: dict[str, str] | None = None,
    **context: Any,
) -> Response:
    """The listing page. A listing without a category (P1 allows one) offers the category search; a chosen category,
    the one of a change held (decision 0400), or the listing's own, shows its schema as one form with the images and
    policies, filled with what was typed or else with the values held, and says before saving what the category
    needs."""
    rt = runtime_of(request)
    async with rt.db.read() as session:
        details = await listings.listing_details(session, person.account_id, listing_id)
        listing, held_change = details.listing, details.held
        # A listing's category, once it has one, is not changed here (decision 0345): the address cannot choose another.
        chosen = listing.category_id or category.strip() or (held_change.category_id if held_change else "")
        schema: taxonomy.Schema | None = None
        schema_errors: dict[str, list[str]] = {}
        if chosen:
            try:
                schema = await taxonomy.get_schema(session, person.account_id, listing.marketplace_id, chosen)
            except ApiError as exc:  # beside the category: an unknown or inner category, a paused connection
                schema_errors = {"CategoryId": [m for ms in exc.errors.values() for m in ms] or [exc.title]}
    held: dict[str, Any] = {}
    if held_change is not None and chosen == held_change.category_id:
        held = {**held_change.attributes, **held_change.app_attributes}
    elif chosen == listing.category_id:
        held = {**(listing.attributes or {}), **(details.app_fields.get("Attributes") or {})}
    values = typed_values if typed_values is not None else {k: listing_rules.form_value(v) for k, v in held.items()}
    # What a publish in the category shown needs beyond its attributes, and which of it the listing lacks.
    needs = list(schema.view.off_api_requirements) if schema is not None else details.requirements
    missing = listing_rules.missing_requirements(needs, details.app_fields)
    title = f"Listing {details.product.sku} on {details.connection.platform} {details.connection.country}"
    errors = {**schema_errors, **(context.pop("errors", None) or {})}
    return page(
        request, "listing.html", person, status, title=title, details=details, schema=schema, chosen=chosen,
        values=values, errors=errors, needs=needs, missing=missing, held_change=held_change, **context,
    )  # fmt: skip


async def _category_search(request: Request, person: Person, listing_id: str, text: str, offset: int) -> dict[str, Any]:
    """The listing's marketplace's leaf categories matching `text` (all of them, in tree order, when it is blank), a
    page at a time: the API's category search."""
    rt = runtime_of(request)
    async with rt.db.read() as session:
        details = await listings.listing_details(session, person.account_id, listing_id)
    if len(text) > MAX_SEARCH_TEXT:
        return {"search_errors": {"SearchText": [f"At most {MAX_SEARCH_TEXT} characters."]}}
    marketplace_id = details.listing.marketplace_id
    try:
        rows, total = await rt.db.driver_read(
            lambda reader: taxonomy.search(reader, person.account_id, marketplace_id, text, CATEGORY_PAGE, offset)
        )
    except ApiError as exc:  # a paused connection: nothing to search
        return {"search_errors": {"SearchText": [exc.title]}}
    return {"found": rows, "total": total, "offset": offset, "page_size": CATEGORY_PAGE}


@router.get("/listings/{listing_id}", response_class=HTMLResponse)
async def listing_page(
    request: Request,
    listing_id: str,
    person: SignedIn,
    republished: str = "",
    saved: str = "",
    q: str | None = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    category: str = "",
) -> Response:
    search: dict[str, Any] = {}
    if q is not None:  # a search was asked for (a blank one walks the whole tree)
        search = await _category_search(request, person, listing_id, q, offset)
    return await _listing_page(
        request, person, listing_id, category=category, republished=republished if republished.isalnum() else "",
        kept=saved == "held", q=q, **search,
    )  # fmt: skip


def _listing_form(form: Any) -> tuple[list[str], dict[str, str]]:
    """The images (one URL a line) and the policy ids of a listing page's form."""
    images = [line for line in str(form.get("images") or "").splitlines() if line.strip()]
    policy = {kind: str(form.get(f"policy_{kind}") or "") for kind in listing_rules.POLICY_KINDS}
    return images, policy


def _after_save(listing_id: str, saved: listings.ListingSaved) -> Response:
    # Post/redirect/get: reloading the page must not republish again.
    if saved.job_id is None:  # held: nothing sent, the page says what is still needed
        return see_other(f"/app/listings/{listing_id}?saved=held")
    return see_other(f"/app/listings/{listing_id}?republished={saved.job_id}")


@router.post("/listings/{listing_id}/attributes", response_class=HTMLResponse)
async def save_listing_attributes(request: Request, listing_id: str, person: SignedIn) -> Response:
    """The schema form: the category, every attribute value, the images and the policies, validated as the API's
    create, then republished, or held while the category needs more (decision 0400)."""
    form = await checked_form(request, person)
    category_id, view_id = str(form.get("category") or ""), str(form.get("view") or "")
    values = {key.removeprefix("attribute_"): str(value) for key, value in form.items() if key.startswith("attribute_")}
    # A form without the images field (an older page) keeps the images and policies held.
    images, policy = _listing_form(form) if "images" in form else (None, None)
    rt = runtime_of(request)
    try:
        async with rt.db.transaction() as session:
            saved = await listings.set_listing_category(
                rt, session, person.account_id, listing_id, category_id=category_id, view_id=view_id, values=values,
                images=images, policy=policy,
            )  # fmt: skip
    except ValidationFailed as exc:
        # Nothing was stored: the form again, as typed, each message beside its field.
        typed = {"Images": images, "BusinessPolicy": policy} if images is not None else None
        return await _listing_page(
            request, person, listing_id, 400, category=category_id, typed_values=values, errors=errors_of(exc),
            typed=typed,
        )  # fmt: skip
    return _after_save(listing_id, saved)


@router.post("/listings/{listing_id}", response_class=HTMLResponse)
async def republish_listing(request: Request, listing_id: str, person: SignedIn) -> Response:
    form = await checked_form(request, person)
    images, policy = _listing_form(form)
    rt = runtime_of(request)
    try:
        async with rt.db.transaction() as session:
            # App-managed attribute values are the schema form's: kept as held here.
            saved = await listings.set_listing_app_fields(
                rt, session, person.account_id, listing_id, images=images, policy=policy
            )
    except ValidationFailed as exc:
        # The form shows what the person typed, beside what was wrong with it, not the stored values.
        typed = {"Images": images, "BusinessPolicy": policy}
        return await _listing_page(request, person, listing_id, 400, errors=errors_of(exc), typed=typed)
    return _after_save(listing_id, saved)


# -- the app's edges --------------------------------------------------------------------------------------------


def install(app: FastAPI) -> None:
    """Mount the app's pages, assets and error pages on the service."""
    for pages in (
        router,
        home.router,
        activity.router,
        catalogue.router,
        orders.router,
        webhooks.router,
        jobs.router,
        settings.router,
    ):
        # The routes themselves (they carry the /app prefix), as for the API's routers (docs/decisions/0013).
        app.router.routes.extend(pages.routes)
    app.mount("/app/static", StaticFiles(directory=HERE / "static"), name="app-static")

    # The API answers problem details; a page answers a page, whatever went wrong (a 404 for another account's id,
    # as the API; an unknown address; a method the page does not take; an unreadable query parameter).
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        if is_app_path(request.url.path):
            return page(request, "error.html", None, exc.status, title=exc.title, message=exc.title, errors=exc.errors)
        return error_response(request.scope, exc.status, exc.code, exc.title, exc.errors, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if is_app_path(request.url.path):
            if isinstance(exc, BodyRefused):  # refused while it streamed in: the middleware's own page
                raise exc
            return error_page(exc.status_code, dict(http_error_headers(request, exc) or {}))  # a 405 keeps its Allow
        return http_problem(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        if is_app_path(request.url.path):
            errors = validation_errors(exc.errors())
            message = "Some of the address's parameters are not understood."
            return page(request, "error.html", None, 400, title="Not understood", message=message, errors=errors)
        return request_validation_problem(request, exc)

    @app.exception_handler(SignInRequired)
    async def _sign_in(request: Request, _exc: SignInRequired) -> Response:
        if is_partial(request):
            # htmx would swap a redirect's target (the sign-in page) into the fragment; HX-Redirect makes it load
            # the sign-in page as the whole page instead. 200: htmx acts on the header whatever the status, and a
            # 401 would need a WWW-Authenticate scheme a cookie session does not have.
            return Response(status_code=200, headers={"HX-Redirect": "/app/sign-in", **NO_STORE})
        # A page asked for (a link, a bookmark) is where the sign-in goes on to; a form sent is not sent again.
        asked = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if request.method == "GET" and len(asked) <= MAX_QUERY_VALUE and _after_sign_in(asked) == asked:
            return see_other(f"/app/sign-in?{urlencode({'next': asked})}")
        return see_other("/app/sign-in")

    @app.exception_handler(Forbidden)
    async def _forbidden(request: Request, exc: Forbidden) -> Response:
        return page(request, "error.html", None, 403, title="Not allowed", message=exc.message)

    @app.exception_handler(FormRefused)
    async def _form_refused(request: Request, _exc: FormRefused) -> Response:
        message = "A field holds a character that cannot be stored (NUL); remove it and try again."
        return page(request, "error.html", None, 400, title="Not saved", message=message)
