"""Every answer under /app forbids framing (X-Frame-Options and the CSP's frame-ancestors) and carries a CSP that
allows the app's own files only: no CDN, no inline script or style."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from marketsync.console import pages as console_pages
from marketsync.http.middleware import APP_CSP, app_security_headers
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.support.factories import make_account

TEMPLATES = Path(console_pages.__file__).parent / "templates"


def assert_not_framable(response: httpx.Response) -> None:
    where = (response.request.method, response.request.url.path, response.status_code)
    assert response.headers.get("x-frame-options") == "DENY", where
    policy = response.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in policy, where


def test_the_apps_policy_names_no_other_origin_and_allows_nothing_inline() -> None:
    directives = dict(directive.split(" ", 1) for directive in APP_CSP.split("; "))
    assert directives["frame-ancestors"] == "'none'" and directives["default-src"] == "'self'"
    assert directives["script-src"] == directives["style-src"] == "'self'"
    assert "unsafe" not in APP_CSP and "http" not in APP_CSP and "*" not in APP_CSP


def test_the_templates_hold_no_inline_script_style_or_handler_the_policy_would_block() -> None:
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\ssrc=)", text), template.name
        assert not re.search(r"<style|\sstyle=|\son[a-z]+=|javascript:", text), template.name
        assert not re.search(r"(src|href)=\"(https?:)?//", text), template.name  # no CDN


def test_a_policy_of_its_own_keeps_its_sources_and_gains_frame_ancestors() -> None:
    own = [
        (b"content-security-policy", b"default-src 'self'; img-src 'self' data:;"),
        (b"x-frame-options", b"SAMEORIGIN"),
    ]
    merged = dict(app_security_headers(own))
    assert merged[b"content-security-policy"] == b"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
    assert merged[b"x-frame-options"] == b"DENY" and merged[b"referrer-policy"] == b"same-origin"
    assert len(app_security_headers(own)) == 3  # one of each: the page's own X-Frame-Options is replaced


async def test_every_kind_of_app_answer_forbids_framing(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Pages, fragments, redirects, refusals, errors and the static files alike."""
    anonymous = [
        await api.get("/app/sign-in"),
        await api.get("/app"),  # 303 to the sign-in page
        await api.get("/app/jobs", headers={"HX-Request": "true"}),  # HX-Redirect
        await api.post("/app/sign-in", data={"email": "a@example.com", "password": "x"}),  # 401
        await api.post("/app/sign-in", data={}, headers={"Origin": "https://attacker.example"}),  # 403
        await api.get("/app/static/htmx.min.js"),
        await api.get("/app/static/app.css"),
        await api.get("/app/no-such-page"),  # 404
    ]
    browser = await signed_in(api, await make_person(rt, await make_account(rt)))
    try:
        signed = [
            await browser.page("/app/marketplaces"),
            await browser.client.get("/app/marketplaces", headers={"HX-Request": "true", "X-App-Poll": "1"}),
            await browser.client.post("/app/credentials", data={"name": "x"}),  # 403: no CSRF token
            await browser.client.put("/app/marketplaces"),  # 405
        ]
    finally:
        await browser.client.aclose()
    for response in anonymous + signed:
        assert_not_framable(response)
    assert {response.status_code for response in anonymous + signed} >= {200, 303, 401, 403, 404, 405}


async def test_the_api_is_left_as_it_was(api: httpx.AsyncClient) -> None:
    """The framing rules are the app's: JSON answers are never rendered in a frame anyway."""
    response = await api.get("/healthz")
    assert "x-frame-options" not in response.headers and "content-security-policy" not in response.headers
