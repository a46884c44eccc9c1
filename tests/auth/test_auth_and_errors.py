"""Bearer authentication (RFC 6750), the scope matrix over every /api route, problem details (spec section 7)."""

from __future__ import annotations

import re

import httpx
import pytest
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from marketsync.app import create_app
from marketsync.jobs import service as job_service
from marketsync.jobs.types import PriceStockPushPayload
from marketsync.runtime import Runtime
from tests.inventory.support import add_products
from tests.support.factories import make_tenant, problem
from tests.support.scope_matrix import assert_scope_matrix
from tests.support.server import serve


async def test_every_api_route_requires_its_scope(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Each operation is allowed with its spec scope alone, and refused (403) with every other scope together."""
    await assert_scope_matrix(rt, api)


@pytest.mark.parametrize(
    ("authorization", "error"),
    [
        (None, None),  # RFC 6750 section 3.1: no credentials, no error code
        ("Basic bXNjX3g6c2VjcmV0", None),  # another scheme is no bearer credentials either
        ("Digest username=x", None),
        ("Bearer", "invalid_request"),
        ("Bearer mst_nope", "invalid_token"),
        ("bearer mst_a.b.c", "invalid_token"),
    ],
)
async def test_missing_or_bad_token_is_401(
    rt: Runtime, api: httpx.AsyncClient, authorization: str | None, error: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = await api.get("/api/marketplaces", headers=headers)
    assert response.status_code == 401
    body = problem(response)
    assert body["code"] == "unauthorized"
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="marketsync"')
    if error:
        assert f'error="{error}"' in challenge
    else:
        assert challenge == 'Bearer realm="marketsync"'


async def test_a_token_has_one_spelling(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The decoder read '+' and '/' as '-' and '_' (and skipped characters outside base64): the same token under
    other spellings authenticated, so a block list or a leak scanner matching the issued text missed them."""
    tenant = await make_tenant(rt, api)
    token = tenant.headers["Authorization"].removeprefix("Bearer ")
    while not ("-" in token[4:] or "_" in token[4:]):  # one of 64 characters: almost every token has one
        tenant = await make_tenant(rt, api)
        token = tenant.headers["Authorization"].removeprefix("Bearer ")
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).status_code == 200
    body = token[4:]
    standard = "mst_" + body.replace("-", "+").replace("_", "/")
    junk = "mst_" + body[:-1] + "!"  # the last character skipped: the MAC's last 6 bits read as missing
    for spelling in (standard, junk):
        response = await api.get("/api/marketplaces", headers={"Authorization": f"Bearer {spelling}"})
        assert response.status_code == 401, spelling
        assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_deleted_credential_tokens_fail_at_once(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    assert (await api.get("/api/marketplaces", headers=tenant.headers)).status_code == 200
    from marketsync.auth import repository

    async with rt.db.transaction() as session:
        credential = await repository.get_credential(session, tenant.account_id, tenant.credential.credential_id)
        assert credential is not None
        await repository.delete_credential(session, credential)
    response = await api.get("/api/marketplaces", headers=tenant.headers)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    denied = await api.post(
        "/connect/token",
        data={
            "grant_type": "client_credentials",
            "client_id": tenant.credential.client_id,
            "client_secret": tenant.credential.client_secret,
        },
    )
    assert denied.status_code == 401


async def test_another_accounts_job_is_404_not_403(rt: Runtime, api: httpx.AsyncClient) -> None:
    owner = await make_tenant(rt, api)
    stranger = await make_tenant(rt, api)
    async with rt.db.transaction() as session:
        job = job_service.enqueue(session, rt.clock.now(), owner.account_id, PriceStockPushPayload(MarketplaceId="M"))
    assert (await api.get(f"/api/jobs/{job.id}", headers=owner.headers)).status_code == 200
    response = await api.get(f"/api/jobs/{job.id}", headers=stranger.headers)
    assert response.status_code == 404
    assert problem(response)["code"] == "not-found"


async def test_another_accounts_marketplaces_are_invisible(rt: Runtime, api: httpx.AsyncClient) -> None:
    owner = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    stranger = await make_tenant(rt, api)
    response = await api.get("/api/marketplaces", headers=stranger.headers)
    assert response.json() == {"Marketplaces": []}
    assert (await api.get("/api/marketplaces", headers=owner.headers)).json()["Marketplaces"][0]["Platform"] == "P1"


async def test_unknown_route_is_problem_404(rt: Runtime, api: httpx.AsyncClient) -> None:
    response = await api.get("/api/nothing-here")
    assert response.status_code == 404
    assert problem(response)["code"] == "not-found"


async def test_wrong_method_is_405_with_allow(rt: Runtime, api: httpx.AsyncClient) -> None:
    response = await api.delete("/api/marketplaces")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    assert problem(response)["code"] == "method-not-allowed"


async def test_405_allows_the_methods_of_every_route_of_the_path(rt: Runtime) -> None:
    """For a path of every route in the app's table, a method none of them takes answers 405 and `Allow` lists the
    methods of all the routes matching that path (a page's GET and POST are two routes). An operation's path is
    its route's alone: `/api/orders/List` is no order id to `GET /api/orders/{order_id}` (decision 0338)."""
    app = create_app(rt)
    routes = [route for route in app.router.routes if isinstance(route, Route | Mount)]
    async with serve(app) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        for route in routes:
            path = re.sub(r"\{[^}]+\}", "x1", route.path if isinstance(route, Route) else route.path + "/x1")
            expected: set[str] = set()
            for other in routes:
                if isinstance(other, Route) and other.path_regex.match(path):
                    expected |= other.methods or set()
                elif isinstance(other, Mount) and other.path_regex.match(path):
                    assert isinstance(other.app, StaticFiles), other.path  # files: GET and HEAD
                    expected |= {"GET", "HEAD"}
            method = next(m for m in ("DELETE", "PATCH", "PUT") if m not in expected)
            response = await client.request(method, path)
            assert response.status_code == 405, (method, path, response.status_code)
            assert set(response.headers["allow"].split(", ")) == expected, (path, response.headers["allow"])
    several = {"/app/credentials": {"GET", "POST"}}
    for path, methods in several.items():  # the case the union is for is in the table
        matching = [r for r in routes if isinstance(r, Route) and r.path_regex.match(path)]
        assert len(matching) == 2 and {m for r in matching for m in r.methods or ()} == methods
    for path in ("/api/orders/List", "/api/orders/Refund", "/api/products/List", "/api/products/Create"):
        matching = [r for r in routes if isinstance(r, Route) and r.path_regex.match(path)]
        assert [r.methods for r in matching] == [{"POST"}], path  # the id route refuses the operation's name


async def test_get_on_an_operation_of_a_resource_is_405_allow_post(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Decision 0338: `/api/orders/{order_id}` and `/api/products/{sku}` never match their resource's operation
    names (exact casing), whatever the method: a GET sent to a POST operation is 405 with `Allow: POST`, also when a
    product's SKU is "List"; that product is read with another casing of its SKU (SKU matching is case-insensitive).
    Other ids and SKUs, even ones starting with an operation's name, still reach the id route."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("List", "1.00", 3), ("Create/x", "1.00", 4), ("Refund", "1", 1)])
    operations = {
        "/api/orders/": ("List", "Confirm", "Cancel", "Refund", "Update"),
        "/api/products/": ("List", "Create"),
    }
    for prefix, names in operations.items():
        for name in names:
            for method in ("GET", "PUT", "DELETE", "PATCH"):
                response = await api.request(method, prefix + name, headers=tenant.headers)
                assert response.status_code == 405, (method, prefix + name, response.text)
                assert response.headers["allow"] == "POST", (method, prefix + name)
                assert problem(response)["code"] == "method-not-allowed"
    listed = await api.get("/api/products/list", headers=tenant.headers)
    assert listed.status_code == 200 and listed.json()["Product"]["Sku"] == "List", listed.text
    slashed = await api.get("/api/products/Create/x", headers=tenant.headers)
    assert slashed.status_code == 200 and slashed.json()["Product"]["Sku"] == "Create/x", slashed.text
    assert (await api.get("/api/products/Listing", headers=tenant.headers)).status_code == 404
    assert (await api.get("/api/products/Refund", headers=tenant.headers)).json()["Product"]["Sku"] == "Refund"
    for path in ("/api/orders/list", "/api/orders/Lists"):  # not an operation: an order id nobody has
        response = await api.get(path, headers=tenant.headers)
        assert (response.status_code, problem(response)["title"]) == (404, "No order with this id."), path
    assert (await api.get("/api/orders/List", headers={})).status_code == 405  # before authentication too


async def test_non_json_body_is_415(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    response = await api.post(
        "/api/webhooks/List", headers={**tenant.headers, "Content-Type": "text/plain"}, content=b"{}"
    )
    assert response.status_code == 415
    assert problem(response)["code"] == "unsupported-media-type"


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 1024}])
async def test_oversized_body_is_413(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    response = await api.post("/api/webhooks/List", headers=tenant.headers, json={"padding": "x" * 2048})
    assert response.status_code == 413
    assert problem(response)["code"] == "payload-too-large"

    async def chunks():  # no Content-Length: the streaming guard must catch it
        for _ in range(4):
            yield b"x" * 512

    streamed = await api.post(
        "/connect/token", headers={"Content-Type": "application/x-www-form-urlencoded"}, content=chunks()
    )
    assert streamed.status_code == 413
    assert streamed.json()["error"] == "invalid_request"  # the token endpoint's own error shape (RFC 6749 5.2)


async def test_malformed_json_is_400_keyed_body(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    for raw in (b'{"Url": ', b"\xff\xfe{", b"[" * 50_000):
        response = await api.post(
            "/api/webhooks/Create", headers={**tenant.headers, "Content-Type": "application/json"}, content=raw
        )
        assert response.status_code == 400, (raw[:10], response.text)
        assert list(problem(response)["errors"]) == ["body"]


async def test_request_id_is_echoed_when_well_formed(rt: Runtime, api: httpx.AsyncClient) -> None:
    response = await api.get("/api/marketplaces", headers={"X-Request-Id": "caller-correlation-1"})
    assert response.headers["x-request-id"] == "caller-correlation-1"
    assert response.json()["requestId"] == "caller-correlation-1"
    minted = await api.get("/api/marketplaces", headers={"X-Request-Id": "bad id with spaces"})
    assert minted.headers["x-request-id"] != "bad id with spaces"


async def test_nul_characters_are_refused_at_the_edge(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    body = await api.post(
        "/api/webhooks/Create",
        headers={**tenant.headers, "Content-Type": "application/json"},
        content=b'{"Url": "https://a.example/\\u0000", "EventTypes": ["OrdersDownloaded"]}',
    )
    assert body.status_code == 400 and list(problem(body)["errors"]) == ["body"]
    query = await api.get("/api/product-types/Schema?marketplaceId=x&categoryId=a%00b", headers=tenant.headers)
    assert query.status_code == 400 and list(problem(query)["errors"]) == ["request"]
    path = await api.get("/api/products/a%00b", headers=tenant.headers)
    assert path.status_code == 400
