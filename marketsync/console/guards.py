"""Who may see a page: a signed-in person of the account (SignedIn), an Owner (OwnerOnly), and the CSRF check
every state-changing request passes (docs/decisions/0120-app-sign-in.md)."""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request
from starlette.datastructures import FormData
from structlog.contextvars import bind_contextvars

from marketsync.auth.dependencies import runtime_of
from marketsync.people import service as people
from marketsync.people.service import Person

SESSION_COOKIE = "msc_session"
# Sent by the parts of a page that refresh themselves (hx-headers in their templates): not the person's activity.
POLL_HEADER = "x-app-poll"


class SignInRequired(Exception):
    """No live session: the browser is sent to the sign-in page."""


class Forbidden(Exception):
    """Signed in, but this person may not do this (Staff on an Owner page, a failed CSRF check)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class FormRefused(Exception):
    """A form field no database column can hold (a NUL character)."""


async def _person(request: Request) -> Person:
    token = request.cookies.get(SESSION_COOKIE, "")
    polling = request.headers.get(POLL_HEADER) == "1"
    person = await people.person_for(runtime_of(request), token, activity=not polling) if token else None
    if person is None:
        raise SignInRequired
    bind_contextvars(account_id=person.account_id, user_id=person.user_id)  # ids in this request's log lines
    return person


async def _owner(person: Annotated[Person, Depends(_person)]) -> Person:
    if not person.is_owner:
        raise Forbidden("Only an Owner of the account can do this (API credentials, people).")
    return person


SignedIn = Annotated[Person, Depends(_person)]
OwnerOnly = Annotated[Person, Depends(_owner)]


def _origin_of(url: str) -> str | None:
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else None


def check_same_origin(request: Request) -> None:
    """Login CSRF: a sign-in posted from another site (which would sign the victim in to the attacker's account)
    is refused. `Origin`, else `Referer`, must be this app's own origin: the host the request was sent to, or the
    configured base URL (behind a proxy that ends TLS). A request with neither is not a browser's cross-site form
    (every current browser sends `Origin` on a cross-site POST) and passes (docs/decisions/0315-login-csrf.md)."""
    origin = request.headers.get("origin")
    if origin is None:
        referer = request.headers.get("referer")
        if referer is None:
            return
        claimed = _origin_of(referer)
    else:
        claimed = _origin_of(origin)  # "null" (a sandboxed frame, a data: URL) names no origin: refused
    own = {_origin_of(str(request.base_url)), _origin_of(runtime_of(request).settings.base_url)}
    if claimed is None or claimed not in own:
        raise Forbidden("Sign in from this app's own sign-in page.")


async def checked_form(request: Request, person: Person) -> FormData:
    """The posted form, after the CSRF check: its `csrf` field must equal the session's token."""
    form = await request.form()
    sent = form.get("csrf")
    # Compared as bytes: compare_digest refuses a str with non-ASCII characters (TypeError, a 500), and anyone may
    # send one.
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), person.csrf_token.encode()):
        await form.close()
        raise Forbidden("The form expired or did not come from this app; reload the page and try again.")
    for value in form.values():
        # A file's name is the browser's text too (an import stores it).
        text = value if isinstance(value, str) else value.filename or ""
        if "\x00" in text:
            await form.close()
            raise FormRefused
    return form


def consent_state(person: Person, marketplace_id: str) -> str:
    """The `state` a marketplace's consent page carries back to the callback: the connection's id, bound to this
    session (a MAC keyed by its CSRF token), so an answer is taken only in the session that started it."""
    mac = hmac.new(person.csrf_token.encode(), marketplace_id.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{marketplace_id}.{mac}"


def consented_marketplace(person: Person, state: str) -> str | None:
    """The connection id a callback's `state` names, or None when this session did not start it."""
    marketplace_id, _, _mac = state.partition(".")
    if not marketplace_id or not hmac.compare_digest(consent_state(person, marketplace_id).encode(), state.encode()):
        return None
    return marketplace_id
