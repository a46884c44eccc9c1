"""The scope matrix over every /api route of the real app (spec section 5; scopes from tests/support/spec_scopes.py),
run by the auth suite and by the OWASP suite (API5)."""

from __future__ import annotations

import re

import httpx

from marketsync.app import api_routes
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.runtime import Runtime
from tests.support.factories import fetch_token, make_account, make_credential, problem
from tests.support.spec_scopes import SPEC_SCOPES, spec_key

UNKNOWN_ID = "01ABCDEFGHJKMNPQRSTVWXYZ00"


def scoped_routes() -> list[tuple[str, str, str]]:
    """(method, path, scope) of every /api route of the real app, the scope taken from the spec's table.

    Every route must be an operation of that table (a new route fails here until its scope is written down), and
    every operation of the table must be served."""
    routes = []
    served = set()
    for route in api_routes():
        if route.path.startswith("/api/"):
            for method in sorted(route.methods or ()):
                key = spec_key(method, route.path)
                assert key in SPEC_SCOPES, f"{key} is not in the spec's scope table (tests/support/spec_scopes.py)"
                served.add(key)
                routes.append((method, re.sub(r"\{[^}]+\}", UNKNOWN_ID, route.path), SPEC_SCOPES[key]))
    assert served == set(SPEC_SCOPES), set(SPEC_SCOPES) - served
    return routes


async def call(api: httpx.AsyncClient, method: str, path: str, token: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if method == "GET":
        return await api.get(path, headers=headers)
    return await api.request(method, path, headers=headers, json={})


async def assert_scope_matrix(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Each operation is allowed with its spec scope alone, and refused (403) with every other scope together."""
    account_id = await make_account(rt)
    only, all_but = {}, {}
    for scope in ALL_SCOPES:
        cred = await make_credential(rt, account_id, [scope])
        only[scope] = await fetch_token(api, cred.client_id, cred.client_secret)
        cred = await make_credential(rt, account_id, [s for s in ALL_SCOPES if s != scope])
        all_but[scope] = await fetch_token(api, cred.client_id, cred.client_secret)
    routes = scoped_routes()
    # The spec's own words: products and jobs are read with InventoryRead, not with InventoryWrite.
    assert ("POST", "/api/products/List", "InventoryRead") in routes
    assert ("GET", f"/api/jobs/{UNKNOWN_ID}", "InventoryRead") in routes
    for method, path, scope in routes:
        allowed = await call(api, method, path, only[scope])
        assert allowed.status_code not in (401, 403), (method, path, allowed.text)
        refused = await call(api, method, path, all_but[scope])
        assert refused.status_code == 403, (method, path, scope, refused.text)
        body = problem(refused)
        assert body["code"] == "insufficient-scope"
        assert f'scope="{scope}"' in refused.headers["www-authenticate"]
