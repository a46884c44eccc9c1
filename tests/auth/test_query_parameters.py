"""Query parameters are names as exact as body fields (docs/decisions/0326): an operation refuses one of its own
spelt in another letter case, and one given twice, with a 400 naming it, instead of answering as if it had not been
sent; a name that is none of its own (a cache buster, a tracking parameter) is ignored (0340)."""

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
    assert fine.status_code == 200 and "Customer" in fine.json()


async def test_a_parameter_the_api_does_not_name_is_ignored(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Decision 0340: a cache buster, a tracking parameter or a proxy's addition is not a misspelt parameter of
    this API; refusing it broke clients that add one to every GET (jQuery's `cache: false` sends `_=<ms>`)."""
    tenant = await tenant_with(rt, api, "P1")
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    order_path = f"/api/orders/{order['ServiceOrderID']}"
    for path in ("/api/marketplaces", order_path):
        for query in ("_=1732822000000", "utm_source=newsletter&utm_medium=email", "_=1&_=2", "nocache", "&", "=x"):
            response = await api.get(f"{path}?{query}", headers=tenant.headers)
            assert response.status_code == 200, (path, query, response.text)
    # Beside an unknown name, the operation's own parameter is read as ever.
    beside = await api.get(f"{order_path}?_=1&includeCustomerData=true", headers=tenant.headers)
    assert beside.status_code == 200 and "Customer" in beside.json()
    listed = await api.post("/api/orders/List", params={"_": "1"}, json={}, headers=tenant.headers)
    assert listed.status_code == 200, listed.text


async def test_a_miscased_parameter_is_refused_on_every_operation(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1")
    # The schema's two parameters, spelt as the body fields are: named, with the names to use.
    schema = await api.get(
        "/api/product-types/Schema", params={"MarketplaceId": "x", "CategoryId": "1"}, headers=tenant.headers
    )
    assert schema.status_code == 400
    takes = "Unknown query parameter; names are case-exact. This operation takes: marketplaceId, categoryId."
    assert problem(schema)["errors"] == {"MarketplaceId": [takes], "CategoryId": [takes]}
    # Given once in the right casing and once in another: the other is named.
    order = await ingest_one(rt, api, tenant.headers, tenant.marketplace("P1"))
    mixed = await api.get(
        f"/api/orders/{order['ServiceOrderID']}?includeCustomerData=false&INCLUDECUSTOMERDATA=true",
        headers=tenant.headers,
    )
    assert mixed.status_code == 400 and list(problem(mixed)["errors"]) == ["INCLUDECUSTOMERDATA"]


async def test_authentication_is_answered_before_the_query(rt: Runtime, api: httpx.AsyncClient) -> None:
    response = await api.get("/api/marketplaces", params={"x": "1"})
    assert response.status_code == 401
    # An empty query string, or a bare "?", is no parameter at all.
    tenant = await tenant_with(rt, api, "P1")
    assert (await api.get("/api/marketplaces?", headers=tenant.headers)).status_code == 200
