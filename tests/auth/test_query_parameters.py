"""Query parameters are names as exact as body fields (docs/decisions/0326): an operation refuses one it does not
define, and one given twice, with a 400 naming it, instead of answering as if it had not been sent."""

from __future__ import annotations

import httpx

from marketsync.runtime import Runtime
from tests.orders.support import ingest_one, tenant_with
from tests.support.factories import problem


async def test_a_miscased_query_parameter_is_refused_not_ignored(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    path = f"/api/orders/{order['ServiceOrderID']}"
    # The body field is IncludeCustomerData; the query parameter is includeCustomerData (spec §4). Before, the
    # miscased one was dropped and the order came back without its customer block, as if asked so.
    response = await api.get(path, params={"IncludeCustomerData": "true"}, headers=tenant.headers)
    assert response.status_code == 400, response.text
    takes = "Unknown query parameter; names are case-exact. This operation takes: includeCustomerData."
    assert problem(response)["errors"] == {"IncludeCustomerData": [takes]}
    twice = await api.get(f"{path}?includeCustomerData=false&includeCustomerData=true", headers=tenant.headers)
    assert twice.status_code == 400 and problem(twice)["errors"] == {"includeCustomerData": ["Given more than once."]}
    fine = await api.get(path, params={"includeCustomerData": "true"}, headers=tenant.headers)
    assert fine.status_code == 200 and "Customer" in fine.json()["Order"]


async def test_operations_without_query_parameters_refuse_any(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    for path in ("/api/marketplaces", "/api/jobs/nope", "/api/products/nope"):
        response = await api.get(path, params={"Limit": "5"}, headers=tenant.headers)
        assert response.status_code == 400, (path, response.text)
        assert problem(response)["errors"] == {
            "Limit": ["Unknown query parameter; names are case-exact. This operation takes no query parameters."]
        }
    listed = await api.post("/api/orders/List", params={"Limit": "5"}, json={}, headers=tenant.headers)
    assert listed.status_code == 400 and list(problem(listed)["errors"]) == ["Limit"]
    # The schema's two parameters, spelt as the body fields are: named, with the names to use.
    schema = await api.get(
        "/api/product-types/Schema", params={"MarketplaceId": "x", "CategoryId": "1"}, headers=tenant.headers
    )
    assert schema.status_code == 400
    takes = "Unknown query parameter; names are case-exact. This operation takes: marketplaceId, categoryId."
    assert problem(schema)["errors"] == {"MarketplaceId": [takes], "CategoryId": [takes]}


async def test_authentication_is_answered_before_the_query(rt: Runtime, api: httpx.AsyncClient) -> None:
    response = await api.get("/api/marketplaces", params={"x": "1"})
    assert response.status_code == 401
    # An empty query string, or a bare "?", is no parameter at all.
    tenant = await tenant_with(rt, api, "P1")
    assert (await api.get("/api/marketplaces?", headers=tenant.headers)).status_code == 200
