"""POST /api/product-types/Search and GET /api/product-types/Schema; taxonomy re-import."""

from __future__ import annotations

import httpx

from marketsync.catalog import demo as catalog_demo
from marketsync.catalog.taxonomy import Taxonomy, service
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime
from tests.catalog.support import TEST_SIZE, anchor_id, counts, create, create_payload, load_taxonomies, schema
from tests.support.factories import Tenant, make_connection, make_tenant, problem


async def _search(api: httpx.AsyncClient, tenant: Tenant, platform: str, **fields: object) -> httpx.Response:
    return await api.post(
        "/api/product-types/Search",
        json={"MarketplaceId": tenant.marketplace(platform).id, **fields},
        headers=tenant.headers,
    )


async def test_search_returns_leaves_only_and_walks_the_tree_without_text(rt: Runtime, api: httpx.AsyncClient) -> None:
    await load_taxonomies(rt, ("P1",))
    tenant = await make_tenant(rt, api, scopes=("InventoryRead",), marketplaces=(("P1", "UK"),))
    generated = shipped.generate("P1", 1, TEST_SIZE)
    leaves = generated.leaves

    first = await _search(api, tenant, "P1")
    assert first.status_code == 200, first.text
    body = first.json()
    assert set(body) == {"ProductTypes", "TotalCount"}
    assert body["TotalCount"] == len(leaves)
    assert len(body["ProductTypes"]) == 50  # default Limit
    assert [p["CategoryId"] for p in body["ProductTypes"]] == [c.category_id for c in leaves[:50]]
    assert set(body["ProductTypes"][0]) == {"CategoryId", "Title", "Path"}

    seen: list[str] = []
    offset = 0
    while offset < body["TotalCount"]:
        page = (await _search(api, tenant, "P1", Limit=200, Offset=offset)).json()
        assert len(page["ProductTypes"]) <= 200
        seen.extend(p["CategoryId"] for p in page["ProductTypes"])
        offset += 200
    assert seen == [c.category_id for c in leaves]
    inner = {c.category_id for c in generated.categories if not c.is_leaf}
    assert not inner & set(seen)


async def test_search_text_is_case_insensitive_on_the_name_and_a_number_matches_the_id(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    await load_taxonomies(rt, ("P1",))
    tenant = await make_tenant(rt, api, scopes=("InventoryRead",), marketplaces=(("P1", "UK"),))
    leaves = shipped.generate("P1", 1, TEST_SIZE).leaves

    body = (await _search(api, tenant, "P1", SearchText="t-SHIRTS")).json()
    expected = [c.category_id for c in leaves if "t-shirts" in c.name.lower()]
    assert [p["CategoryId"] for p in body["ProductTypes"]] == expected
    assert body["TotalCount"] == len(expected) >= 2
    tee = next(p for p in body["ProductTypes"] if p["CategoryId"] == anchor_id("P1", "T-Shirts"))
    assert tee == {
        "CategoryId": "9007199254740993",  # beyond 2**53, exact as a string
        "Title": "T-Shirts",
        "Path": "Clothing, Shoes & Accessories > Men's Clothing > Tops & Shirts > T-Shirts",
    }

    by_id = (await _search(api, tenant, "P1", SearchText="9007199254740993")).json()
    assert [p["CategoryId"] for p in by_id["ProductTypes"]] == ["9007199254740993"]
    assert (await _search(api, tenant, "P1", SearchText="100%_")).json()["TotalCount"] == 0  # wildcards are literal
    paged = (await _search(api, tenant, "P1", SearchText="s", Limit=3, Offset=2)).json()
    everything = [c.category_id for c in leaves if "s" in c.name.lower()]
    assert paged["TotalCount"] == len(everything)
    assert [p["CategoryId"] for p in paged["ProductTypes"]] == everything[2:5]


async def test_search_limits_and_marketplace_scoping(rt: Runtime, api: httpx.AsyncClient) -> None:
    await load_taxonomies(rt, ("P1", "P2"))
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"), ("P2", "DE")))
    other = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    for fields, key in (({"Limit": 201}, "Limit"), ({"Limit": 0}, "Limit"), ({"Offset": -1}, "Offset")):
        response = await _search(api, tenant, "P1", **fields)
        assert response.status_code == 400
        assert set(problem(response)["errors"]) == {key}
    missing = await api.post("/api/product-types/Search", json={}, headers=tenant.headers)
    assert set(problem(missing)["errors"]) == {"MarketplaceId"}

    foreign = await api.post(
        "/api/product-types/Search", json={"MarketplaceId": other.marketplace("P1").id}, headers=tenant.headers
    )
    assert foreign.status_code == 404
    paused = await make_connection(rt, tenant.account_id, "P3", "US", state="Paused")
    response = await api.post("/api/product-types/Search", json={"MarketplaceId": paused.id}, headers=tenant.headers)
    assert response.status_code == 404

    # Each marketplace sees its own kind's taxonomy.
    p2 = (await _search(api, tenant, "P2", SearchText="T-Shirts")).json()
    assert anchor_id("P2", "T-Shirts") in [p["CategoryId"] for p in p2["ProductTypes"]]
    assert anchor_id("P1", "T-Shirts") not in [p["CategoryId"] for p in p2["ProductTypes"]]

    writer_only = await make_tenant(rt, api, scopes=("InventoryWrite",), marketplaces=(("P1", "UK"),))
    assert (await _search(api, writer_only, "P1")).status_code == 403


async def test_schema_has_every_field_and_only_what_the_api_can_carry(rt: Runtime, api: httpx.AsyncClient) -> None:
    await load_taxonomies(rt, ("P1",))
    tenant = await make_tenant(rt, api, scopes=("InventoryRead",), marketplaces=(("P1", "UK"),))
    body = await schema(api, tenant, "P1", anchor_id("P1", "T-Shirts"))
    assert set(body) == {
        "ProductTypeViewId",
        "CategoryId",
        "CategoryPath",
        "ProductTypeCode",
        "SchemaVersion",
        "Attributes",
    }
    assert body["CategoryId"] == "9007199254740993"
    assert body["CategoryPath"].endswith("> T-Shirts")
    assert body["ProductTypeCode"] == "SHIRT"
    codes = {a["Code"]: a for a in body["Attributes"]}
    assert "VariationTheme" not in codes  # managed in the app
    assert "Images" not in codes  # required, but the API cannot carry it
    assert set(codes["Size"]) == {"Code", "Title", "Type", "IsRequired", "AllowedValues", "AllowsCustomValues"}
    assert codes["Size"]["IsRequired"] is True and codes["Size"]["AllowsCustomValues"] is False
    assert [v["Value"] for v in codes["Size"]["AllowedValues"]] == ["XS", "S", "M", "L", "XL", "XXL"]
    assert codes["Brand"]["AllowsCustomValues"] is True and codes["Brand"]["AllowedValues"]
    assert {a["Type"] for a in body["Attributes"]} == {"Text", "Integer", "Decimal", "Date", "Boolean"}

    kids = await schema(api, tenant, "P1", anchor_id("P1", "Kids' T-Shirts"))
    kid_sizes = next(a for a in kids["Attributes"] if a["Code"] == "Size")
    assert [v["Value"] for v in kid_sizes["AllowedValues"]] == ["XXS", "XS", "S"]  # narrowed per category

    params = {"marketplaceId": tenant.marketplace("P1").id, "categoryId": "424242"}
    assert (await api.get("/api/product-types/Schema", params=params, headers=tenant.headers)).status_code == 404
    inner = next(c for c in shipped.generate("P1", 1, TEST_SIZE).categories if not c.is_leaf)
    params["categoryId"] = inner.category_id
    response = await api.get("/api/product-types/Schema", params=params, headers=tenant.headers)
    assert response.status_code == 400 and set(problem(response)["errors"]) == {"categoryId"}
    response = await api.get("/api/product-types/Schema", params={"categoryId": "1"}, headers=tenant.headers)
    assert response.status_code == 400 and set(problem(response)["errors"]) == {"marketplaceId"}


async def test_every_reimport_gives_every_schema_a_new_view_id_and_create_refuses_the_old_ones(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Spec sections 2 and 9: ProductTypeViewId "changes when taxonomies are re-imported": every re-import, even of
    identical content, gives every schema of the site a new id, and an id fetched before it is refused. SchemaVersion
    moves only with a schema's content (docs/decisions/0392)."""
    first = await load_taxonomies(rt, ("P2",))
    tenant = await make_tenant(rt, api, marketplaces=(("P2", "DE"),))
    old_tee = await schema(api, tenant, "P2", anchor_id("P2", "T-Shirts"))
    old_phone = await schema(api, tenant, "P2", anchor_id("P2", "Smartphones"))
    stale = await create_payload(api, tenant, "P2", "T-Shirts", "TEE-1")
    stale_phone = await create_payload(api, tenant, "P2", "Smartphones", "PHONE-1")

    again = await load_taxonomies(rt, ("P2",))  # the same content
    assert again[0].unchanged and again[0].sequence == first[0].sequence + 1
    assert (again[0].added, again[0].changed, again[0].removed) == (0, 0, 0)
    same_tee = await schema(api, tenant, "P2", anchor_id("P2", "T-Shirts"))
    same_phone = await schema(api, tenant, "P2", anchor_id("P2", "Smartphones"))
    assert same_tee["ProductTypeViewId"] != old_tee["ProductTypeViewId"]
    assert same_phone["ProductTypeViewId"] != old_phone["ProductTypeViewId"]
    assert {k: v for k, v in same_tee.items() if k != "ProductTypeViewId"} == {
        k: v for k, v in old_tee.items() if k != "ProductTypeViewId"
    }  # the same schema, SchemaVersion included, under a new id
    for payload in (stale, stale_phone):
        response = await create(api, tenant, payload)
        assert response.status_code == 400, response.text
        errors = problem(response)["errors"]
        assert set(errors) == {"ProductTypeViewId"} and "Superseded" in errors["ProductTypeViewId"][0]
    assert await counts(rt, tenant.account_id) == (0, 0, 0)

    second = await load_taxonomies(rt, ("P2",), revision=2)
    assert not second[0].unchanged and second[0].changed >= 1 and second[0].sequence == first[0].sequence + 2
    new_tee = await schema(api, tenant, "P2", anchor_id("P2", "T-Shirts"))
    assert new_tee["ProductTypeViewId"] not in (old_tee["ProductTypeViewId"], same_tee["ProductTypeViewId"])
    assert new_tee["SchemaVersion"] != old_tee["SchemaVersion"]
    assert "SeasonCode" in {a["Code"] for a in new_tee["Attributes"]}
    new_phone = await schema(api, tenant, "P2", anchor_id("P2", "Smartphones"))
    assert new_phone["ProductTypeViewId"] != same_phone["ProductTypeViewId"]  # unchanged content: a new id all the same
    assert new_phone["SchemaVersion"] == old_phone["SchemaVersion"]

    response = await create(api, tenant, {**stale, "ProductTypeViewId": same_tee["ProductTypeViewId"]})
    assert response.status_code == 400 and "Superseded" in problem(response)["errors"]["ProductTypeViewId"][0]
    fresh = await create(api, tenant, {**stale, "ProductTypeViewId": new_tee["ProductTypeViewId"]})
    assert fresh.status_code == 200, fresh.text
    phone = await create(api, tenant, {**stale_phone, "ProductTypeViewId": new_phone["ProductTypeViewId"]})
    assert phone.status_code == 200, phone.text


async def test_running_the_demo_again_is_not_a_reimport(rt: Runtime, api: httpx.AsyncClient) -> None:
    """`marketsync demo` is run again at will: a site whose current version has the shipped content keeps its ids
    (only a re-import, `admin taxonomy import`, issues new ones)."""
    tenant = await make_tenant(rt, api, marketplaces=(("P4", "FR"),))
    connections = [tenant.marketplace("P4")]
    await catalog_demo.seed(rt, tenant.account_id, connections)
    before = await schema(api, tenant, "P4", anchor_id("P4", "T-Shirts"))
    await catalog_demo.seed(rt, tenant.account_id, connections)
    assert await schema(api, tenant, "P4", anchor_id("P4", "T-Shirts")) == before


async def test_huge_numbers_and_deep_nesting_are_400_not_500(rt: Runtime, api: httpx.AsyncClient) -> None:
    await load_taxonomies(rt, ("P1",))
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    for fields in ({"Offset": 10**30}, {"Offset": 2**63}, {"Limit": 10**30}):
        response = await _search(api, tenant, "P1", **fields)
        assert response.status_code == 400, (fields, response.text)
        assert set(problem(response)["errors"]) == set(fields)
    page = (await _search(api, tenant, "P1", Offset=2**31 - 1)).json()
    assert page["ProductTypes"] == [] and page["TotalCount"] > 0

    headers = {**tenant.headers, "Content-Type": "application/json"}
    for path in ("/api/product-types/Search", "/api/products/Create"):
        response = await api.post(path, content=b"[" * 100_000, headers=headers)
        assert response.status_code == 400, (path, response.status_code)
        assert "body" in problem(response)["errors"], path
    response = await api.get(
        "/api/product-types/Schema",
        params={"marketplaceId": tenant.marketplace("P1").id, "categoryId": "9" * 400},
        headers=tenant.headers,
    )
    assert response.status_code == 404
    assert await counts(rt, tenant.account_id) == (0, 0, 0)


async def test_ids_fetched_for_one_site_are_refused_on_another_site_of_the_same_kind(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Spec section 4: ProductTypeViewId "must belong to the marketplace in MarketplaceId" and CategoryId "must be a
    category of that marketplace". A marketplace is a kind in a country: P1 UK and P1 DE are two marketplaces, each
    with its own category tree (here DE's lacks one leaf UK has) and its own schema ids."""
    full = shipped.generate("P1", 1, TEST_SIZE)
    uk_only = next(c for c in full.leaves if c.category_id not in shipped.ANCHOR_IDS["P1"].values())
    de_tree = Taxonomy("P1", 1, tuple(c for c in full.categories if c.category_id != uk_only.category_id))
    await load_taxonomies(rt, (("P1", "UK"),))
    async with rt.db.transaction() as session:
        await service.import_taxonomy(rt, session, de_tree, "DE")
    tenant = await make_tenant(rt, api)
    uk = await make_connection(rt, tenant.account_id, "P1", "UK")
    de = await make_connection(rt, tenant.account_id, "P1", "DE")

    async def search(marketplace_id: str, text: str) -> list[str]:
        body = {"MarketplaceId": marketplace_id, "SearchText": text, "Limit": 200}
        response = await api.post("/api/product-types/Search", json=body, headers=tenant.headers)
        assert response.status_code == 200, response.text
        return [p["CategoryId"] for p in response.json()["ProductTypes"]]

    assert uk_only.category_id in await search(uk.id, uk_only.name)
    assert uk_only.category_id not in await search(de.id, uk_only.name)

    tee = anchor_id("P1", "T-Shirts")

    async def view_of(marketplace_id: str, category_id: str) -> httpx.Response:
        params = {"marketplaceId": marketplace_id, "categoryId": category_id}
        return await api.get("/api/product-types/Schema", params=params, headers=tenant.headers)

    uk_tee, de_tee = (await view_of(uk.id, tee)).json(), (await view_of(de.id, tee)).json()
    assert uk_tee["CategoryId"] == de_tee["CategoryId"] == tee
    assert uk_tee["ProductTypeViewId"] != de_tee["ProductTypeViewId"]  # same content, another marketplace
    assert (await view_of(de.id, uk_only.category_id)).status_code == 404

    payload = {
        "Sku": "TEE-1",
        "MarketplaceId": de.id,
        "CategoryId": tee,
        "ProductTypeViewId": uk_tee["ProductTypeViewId"],
        "Attributes": {"Title": "Plain tee", "Brand": "Northwind", "Condition": "NEW", "Size": "M", "Colour": "BLACK"},
    }
    refused = await create(api, tenant, payload)
    assert refused.status_code == 400, refused.text
    errors = problem(refused)["errors"]
    assert set(errors) == {"ProductTypeViewId"} and "P1 UK" in errors["ProductTypeViewId"][0]

    # A category of P1 UK that P1 DE does not have: 404 alone (spec section 7).
    missing = await create(api, tenant, {"Sku": "X-1", "MarketplaceId": de.id, "CategoryId": uk_only.category_id})
    assert missing.status_code == 404, missing.text
    assert await counts(rt, tenant.account_id) == (0, 0, 0)

    # On P1 UK the same CategoryId is a category: what is missing now is its required attributes, not the category.
    on_uk = await create(api, tenant, {"Sku": "X-1", "MarketplaceId": uk.id, "CategoryId": uk_only.category_id})
    assert on_uk.status_code == 400, on_uk.text
    assert problem(on_uk)["errors"] and all(key.startswith("Attributes.") for key in problem(on_uk)["errors"])
    accepted = await create(api, tenant, {**payload, "ProductTypeViewId": de_tee["ProductTypeViewId"]})
    assert accepted.status_code == 200, accepted.text

    # A site of the kind with no taxonomy loaded has no categories (an operator loads it per site).
    bare = await make_connection(rt, tenant.account_id, "P1", "FR")
    assert await search(bare.id, "") == []


async def test_search_names_an_unknown_marketplace_beside_a_shape_error(rt: Runtime, api: httpx.AsyncClient) -> None:
    """An unknown MarketplaceId alone is a 404; beside another bad field the 400 names it too, as create names it
    (spec section 7: one 400 names every bad field; docs/decisions/0081, 0344)."""
    await load_taxonomies(rt, ("P1",))
    tenant = await make_tenant(rt, api, scopes=("InventoryRead",), marketplaces=(("P1", "UK"),))
    other = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    paused = await make_connection(rt, tenant.account_id, "P3", "US", state="Paused")
    for unknown in ("nope", other.marketplace("P1").id, paused.id):
        for fields, keys in (
            ({"Limit": 0}, {"Limit", "MarketplaceId"}),
            ({"Offset": -1, "Limit": "5", "Extra": 1}, {"Offset", "Limit", "Extra", "MarketplaceId"}),
        ):
            response = await api.post(
                "/api/product-types/Search", json={"MarketplaceId": unknown, **fields}, headers=tenant.headers
            )
            assert response.status_code == 400, response.text
            errors = problem(response)["errors"]
            assert set(errors) == keys, errors
            assert errors["MarketplaceId"] == ["No active marketplace connection with this MarketplaceId."]
    # A malformed MarketplaceId is named by its shape error alone; a known one is not named.
    malformed = await api.post(
        "/api/product-types/Search", json={"MarketplaceId": 5, "Limit": 0}, headers=tenant.headers
    )
    assert set(problem(malformed)["errors"]) == {"MarketplaceId", "Limit"}
    assert "No active" not in problem(malformed)["errors"]["MarketplaceId"][0]
    known = await _search(api, tenant, "P1", Limit=0)
    assert set(problem(known)["errors"]) == {"Limit"}
