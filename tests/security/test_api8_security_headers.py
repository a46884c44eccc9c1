"""API8 Security Misconfiguration: every answer of the service, whatever answered it (an operation, its scope check,
the body guards of the middleware, the token endpoint, an unknown route, /metrics, the OpenAPI document), declares
`X-Content-Type-Options: nosniff`, so a browser never renders a JSON answer echoing a caller's text as HTML; no
answer carries CORS headers, even to a cross-origin preflight. The app's pages: tests/security/test_app_routes.py."""

from __future__ import annotations

import httpx

from marketsync.runtime import Runtime
from tests.security.conftest import SecretsSeen
from tests.security.support import tenant_seen
from tests.support.scope_matrix import scoped_routes

ELSEWHERE = "https://attacker.example"


def _assert_hardened(response: httpx.Response, what: object) -> None:
    assert response.headers.get("x-content-type-options") == "nosniff", (what, response.status_code)
    assert not any(name.startswith("access-control-") for name in response.headers), (what, response.headers)


async def test_every_api_answer_forbids_sniffing_and_allows_no_other_origin(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    checked = 0
    for method, path, _scope in scoped_routes():
        body = {"json": {}} if method == "POST" else {}
        for headers in ({}, tenant.headers, {**tenant.headers, "Origin": ELSEWHERE}):  # 401, then answered
            _assert_hardened(await api.request(method, path, headers=headers, **body), (method, path, headers))
        preflight = await api.options(
            path, headers={"Origin": ELSEWHERE, "Access-Control-Request-Method": method}
        )  # fmt: skip
        _assert_hardened(preflight, ("OPTIONS", path))
        checked += 1
    assert checked >= 17
    guards = [
        api.post("/api/orders/List", content=b"x", headers={**tenant.headers, "Content-Type": "text/plain"}),  # 415
        api.post("/api/orders/List", content=b"{", headers={**tenant.headers, "Content-Type": "application/json"}),
        api.post(
            "/api/orders/List", content=b"[" * 3_000_000, headers={**tenant.headers, "Content-Type": "application/json"}
        ),  # 413
        api.get("/api/no-such-route", headers=tenant.headers),
        api.post("/connect/token", data={"grant_type": "client_credentials"}),
        api.get("/metrics"),
        api.get("/openapi.json"),
    ]
    for call in guards:
        response = await call
        _assert_hardened(response, (response.request.method, response.request.url.path, response.status_code))
