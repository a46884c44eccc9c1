"""API5 Broken Function Level Authorization: the scope matrix (every /api operation allowed with the spec's scope
alone and refused with all five others together: tests/auth, run here as part of the suite), and the two kinds of
caller kept apart: an API token opens no app page, an app session calls no API operation, and Staff reach no
Owner-only page."""

from __future__ import annotations

import httpx

from marketsync.console.guards import SESSION_COOKIE
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.security.conftest import SecretsSeen
from tests.security.support import person_seen, tenant_seen
from tests.support.scope_matrix import assert_scope_matrix, scoped_routes

OWNER_ONLY_PAGES = ["/app/credentials"]


async def test_every_api_route_requires_its_scope(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The scope matrix (tests/support/scope_matrix.py), a test of this suite too."""
    await assert_scope_matrix(rt, api)


async def test_an_api_token_opens_no_app_page_and_an_app_session_calls_no_api_operation(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    for page in ("/app/", "/app/orders", "/app/credentials", "/app/webhooks", "/app/catalogue"):
        response = await api.get(page, headers=tenant.headers)
        assert response.status_code == 303 and response.headers["location"].split("?next=")[0] == "/app/sign-in", page
    person = await person_seen(rt, api, secrets_seen, tenant)
    try:
        assert SESSION_COOKIE in person.client.cookies
        for method, path, _scope in scoped_routes():  # the person's browser, its session cookie and nothing else
            response = await person.client.request(method, path, json={} if method == "POST" else None)
            assert response.status_code == 401, (method, path, response.status_code)
    finally:
        await person.client.aclose()


async def test_staff_reach_no_owner_only_page(rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen) -> None:
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    staff_user = await make_person(rt, tenant.account_id, "Staff")
    secrets_seen.add("staff password", staff_user.password)
    staff = await signed_in(api, staff_user)
    try:
        for page in OWNER_ONLY_PAGES:
            assert (await staff.page(page)).status_code == 403, page
            forged = await staff.post(page, {"name": "x", "scope_OrdersRead": "1"})
            assert forged.status_code == 403, page
    finally:
        await staff.client.aclose()
