"""Every route of the merchant app, enumerated from the running app (so a new page is covered the day it is added):
none answers anyone but a signed-in person, every state-changing one refuses a request without the session's CSRF
token, the one exception, the sign-in form, refuses a post from another site, and every answer forbids framing,
MIME sniffing and sending its address to another site (Referrer-Policy: same-origin).

A new route that skips `SignedIn`/`OwnerOnly` fails `test_every_app_route_needs_a_sign_in`; a new form post that
skips `checked_form` fails `test_every_state_changing_app_route_needs_the_csrf_token`. A route meant to be open
goes in PUBLIC with the reason."""

from __future__ import annotations

import re

import httpx
from fastapi.routing import APIRoute
from starlette.routing import Mount

from marketsync.app import create_app
from marketsync.console.render import is_app_path
from marketsync.runtime import Runtime
from tests.security.conftest import SecretsSeen
from tests.security.support import person_seen, tenant_seen

UNKNOWN = "01ABCDEFGHJKMNPQRSTVWXYZ00"
SAFE_METHODS = {"GET", "HEAD"}
# Open to anyone: what a person needs before signing in. The sign-in post has no session, so no CSRF token; it
# checks the request's Origin instead (docs/decisions/0315-login-csrf.md).
PUBLIC = {
    ("GET", "/app/sign-in"): "the sign-in form",
    ("POST", "/app/sign-in"): "signing in (Origin-checked)",
}
PUBLIC_MOUNTS = {"/app/static": "htmx, the stylesheet and app.js: the same for everyone"}


def app_routes(rt: Runtime) -> list[tuple[str, str, APIRoute]]:
    """(method, path with its parameters filled, route) of every app route the service serves."""
    found = []
    for route in create_app(rt).routes:
        if isinstance(route, APIRoute) and is_app_path(route.path):
            path = re.sub(r"\{[^}]+\}", UNKNOWN, route.path)
            required = {p.alias: "x" for p in route.dependant.query_params if p.field_info.is_required()}
            if required:
                path += "?" + "&".join(f"{name}={value}" for name, value in required.items())
            found += [(method, path, route) for method in sorted(route.methods or ())]
    return found


def test_the_enumeration_finds_every_app_route_and_nothing_else_is_mounted_open(rt: Runtime) -> None:
    routes = app_routes(rt)
    assert len(routes) >= 30 and {(m, r.path) for m, _p, r in routes} >= set(PUBLIC)
    assert any(method not in SAFE_METHODS for method, _path, _route in routes)
    mounts = {r.path for r in create_app(rt).routes if isinstance(r, Mount) and is_app_path(r.path)}
    assert mounts == set(PUBLIC_MOUNTS), mounts


async def test_every_app_route_needs_a_sign_in(rt: Runtime, api: httpx.AsyncClient) -> None:
    """No session (or a forged one): a navigation is sent to the sign-in page, an htmx request too (HX-Redirect)."""
    checked = 0
    for method, path, route in app_routes(rt):
        if (method, route.path) in PUBLIC:
            continue
        for cookies in ({}, {"msc_session": "forged-session-token"}):
            async with httpx.AsyncClient(base_url=api.base_url, cookies=cookies) as anonymous:
                data = None if method in SAFE_METHODS else {"csrf": "x"}
                navigation = await anonymous.request(method, path, data=data)
                assert navigation.status_code == 303, (method, path, navigation.status_code, navigation.text[:200])
                # A page asked for is where the sign-in goes on to; a form sent is not sent again.
                assert navigation.headers["location"].split("?next=")[0] == "/app/sign-in", (method, path)
                fragment = await anonymous.request(method, path, data=data, headers={"HX-Request": "true"})
                assert fragment.headers.get("hx-redirect") == "/app/sign-in", (method, path)
                checked += 1
    assert checked >= 2 * 25


async def test_every_state_changing_app_route_needs_the_csrf_token(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    """Signed in as an Owner (every page open to them), without the token or with a wrong one: 403, as the first
    thing the route does (before an id is looked up: an unknown id still gets the 403). A wrong token with non-ASCII
    characters too (compare_digest raises on such a str: it was a 500)."""
    owner = await person_seen(rt, api, secrets_seen, await tenant_seen(rt, api, secrets_seen, "owner"))
    checked = 0
    try:
        for method, path, route in app_routes(rt):
            if method in SAFE_METHODS or (method, route.path) in PUBLIC:
                continue
            for form in ({}, {"csrf": "guessed-token"}, {"csrf": "gu\u00e9ssed-t\u00f6ken"}):
                response = await owner.client.request(method, path, data=form)
                assert response.status_code == 403, (method, path, form, response.status_code, response.text[:200])
                assert "did not come from this app" in response.text, (method, path)
            checked += 1
        assert (await owner.page("/app/marketplaces")).status_code == 200  # still signed in: nothing signed out
    finally:
        await owner.client.aclose()
    assert checked >= 12  # the enumeration itself works


async def test_the_sign_in_post_refuses_another_sites_origin(rt: Runtime, api: httpx.AsyncClient) -> None:
    for method, route_path in PUBLIC:
        if method not in SAFE_METHODS:
            refused = await api.request(
                method, route_path, data={"email": "a@example.com", "password": "x"},
                headers={"Origin": "https://attacker.example"},
            )  # fmt: skip
            assert refused.status_code == 403, route_path


async def test_every_app_answer_forbids_framing(rt: Runtime, api: httpx.AsyncClient) -> None:
    for method, path, _route in app_routes(rt):
        response = await api.request(method, path, data=None if method in SAFE_METHODS else {"csrf": "x"})
        assert response.headers.get("x-frame-options") == "DENY", (method, path)
        assert "frame-ancestors 'none'" in response.headers.get("content-security-policy", ""), (method, path)
        assert response.headers.get("x-content-type-options") == "nosniff", (method, path)
        assert response.headers.get("referrer-policy") == "same-origin", (method, path)
    for asset in ("/app/static/app.js", "/app/static/app.css", "/app/static/missing.js"):
        response = await api.get(asset)
        assert response.headers.get("x-content-type-options") == "nosniff", asset
