"""Finding things in the app, over real HTTP on both databases: the catalogue's search by the start of a SKU (one
bounded range of the SKU index, right for non-ASCII SKUs: docs/decisions/0336-catalogue-search.md), an order by the
marketplace's order id, older imports a page at a time, and the app's own icon."""

from __future__ import annotations

import re

import httpx
import pytest
from sqlalchemy import text

from marketsync.db._fast import DriverSql
from marketsync.inventory import rules
from marketsync.inventory import service as inventory
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_products
from tests.orders.support import ingest, pulled_order, tenant_with
from tests.support.factories import make_account, make_tenant
from tests.support.plans import plan_of

# Neighbours of each other in code point order, and in a linguistic order (where "-" and "." weigh less than
# letters) not: a range under en_US would miss "BKP-X" when searching "bkp-".
SKUS = [
    "BKP-BLACK-1", "bkp-blue", "BKP-", "BKP.X", "BKP", "BKQ", "Café-1", "CAFÉ-2", "cafe-3", "Ωmega", "ωMEGA-2",
    "x\ud7ffa", "x\ue000", "x\uffff", "x\U0010ffff", "y",
]  # fmt: skip


def test_prefix_end_is_the_least_string_above_the_prefixed_ones() -> None:
    assert rules.prefix_end("bkp-bla") == "bkp-blb"
    assert rules.prefix_end("caf\u00e9") == "caf\u00ea"
    assert rules.prefix_end("x\ud7ff") == "x\ue000"  # past the surrogates, never in stored text
    assert rules.prefix_end("x\U0010ffff") == "y"
    assert rules.prefix_end("\U0010ffff\U0010ffff") is None
    assert rules.prefix_end("") is None


async def _search(rt: Runtime, account_id: str, prefix: str, after: str | None = None, limit: int = 50) -> list[str]:
    async with rt.db.read() as session:
        found = await inventory.search_products(session, account_id, prefix, after=after, limit=limit)
    return [view.product.sku for view in found]


def _expected(prefix: str) -> list[str]:
    return sorted((sku for sku in SKUS if sku.lower().startswith(prefix.lower())), key=lambda s: (s.lower(), s))


@pytest.mark.parametrize(
    "prefix", ["bkp-bla", "BKP-", "bkp", "bkp.", "café", "CAFÉ", "cafe", "ω", "x\ud7ff", "x\uffff", "x", "BKQ"]
)
async def test_the_search_finds_exactly_the_skus_starting_with_the_text_in_code_point_order(
    rt: Runtime, prefix: str
) -> None:
    account_id = await make_account(rt)
    await add_products(rt, account_id, [(sku, "1.00", 1) for sku in SKUS])
    assert await _search(rt, account_id, prefix) == _expected(prefix)


async def test_the_search_pages_after_the_last_sku_shown(rt: Runtime) -> None:
    account_id = await make_account(rt)
    await add_products(rt, account_id, [(sku, "1.00", 1) for sku in SKUS])
    first = await _search(rt, account_id, "bkp", limit=2)
    rest = await _search(rt, account_id, "bkp", after=first[-1], limit=50)
    assert first + rest == _expected("bkp") and len(first) == 2


async def test_products_sku_lower_compares_in_code_point_order_on_both_backends(rt: Runtime) -> None:
    """PostgreSQL: the column is COLLATE "C" whatever the database's default (migration 0027); SQLite: BINARY."""
    async with rt.db.read() as session:
        if rt.db.is_sqlite:
            assert await session.scalar(text("SELECT 'B' < 'a' AND 'z' < 'É'")) == 1
        else:
            collation = await session.scalar(
                text(
                    "SELECT collation_name FROM information_schema.columns "
                    "WHERE table_name = 'products' AND column_name = 'sku_lower'"
                )
            )
            assert collation == "C"


async def test_the_search_reads_one_range_of_the_sku_index(rt: Runtime) -> None:
    """Both bounds are index conditions: a page reads no more than its own rows, whatever the catalogue's size."""
    account_id = await make_account(rt)
    await add_products(rt, account_id, [(f"P-{i:04d}", "1.00", 1) for i in range(300)])
    sql = DriverSql(not rt.db.is_sqlite)
    query = (
        f"SELECT id FROM products WHERE account_id = {sql.bind(account_id)} "
        f"AND sku_lower >= {sql.bind('p-01')} AND sku_lower < {sql.bind('p-02')} ORDER BY sku_lower, sku LIMIT 51"
    )
    plan = await plan_of(rt, query, sql.params, analyze="products")
    if rt.db.is_sqlite:
        bounded = "USING INDEX uq_products_account_sku_lower_sku (account_id=? AND sku_lower>? AND sku_lower<?)"
        assert bounded in plan, plan
        assert "TEMP B-TREE" not in plan, plan
    else:
        assert "uq_products_account_sku_lower_sku" in plan and "Sort" not in plan, plan
        condition = next(line for line in plan.splitlines() if "Index Cond" in line)
        assert "(sku_lower)::text >=" in condition and "(sku_lower)::text <" in condition, plan


async def test_the_catalogue_page_searches_by_the_start_of_a_sku_and_pages_on(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [(f"BKP-BLA-{i:02d}", "1.00", 1) for i in range(55)])
    await add_products(rt, tenant.account_id, [("BKP-RED", "1.00", 1), ("Café-Ünï", "2.00", 2)])
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))

    first = await person.client.get("/app/catalogue", params={"sku": "bkp-bla"})
    assert first.status_code == 200 and first.text.count("/app/product?sku=BKP-BLA-") == 50
    assert "BKP-RED" not in first.text and "starts with “bkp-bla”" in first.text
    next_link = re.search(r'href="(/app/catalogue\?sku=[^"]*after=[^"]+)"', first.text).group(1)  # type: ignore[union-attr]
    second = await person.page(next_link.replace("&amp;", "&"))
    assert second.text.count("/app/product?sku=BKP-BLA-") == 5 and "BKP-BLA-54" in second.text
    assert "after=" not in second.text  # the last page

    accented = await person.client.get("/app/catalogue", params={"sku": "CAFÉ-ü"})
    assert "Café-Ünï" in accented.text
    title_word = await person.client.get("/app/catalogue", params={"sku": "Product"})  # titles are not searched
    assert "No product&#39;s SKU starts with this." in title_word.text or "No product's SKU" in title_word.text

    stranger = await signed_in(api, await make_person(rt, await make_account(rt)))
    assert "BKP-BLA-00" not in (await stranger.client.get("/app/catalogue", params={"sku": "bkp"})).text
    await person.client.aclose()
    await stranger.client.aclose()


async def test_an_order_is_found_by_its_marketplace_order_id(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await tenant_with(rt, api, "P1", "P2")
    await ingest(rt, tenant.marketplace("P1"), pulled_order(order_id="MO-ONE"), pulled_order(order_id="MO-BOTH"))
    await ingest(rt, tenant.marketplace("P2"), pulled_order(order_id="MO-BOTH"))
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))

    one = await person.client.get("/app/orders", params={"q": " MO-ONE "})
    assert one.status_code == 303 and re.fullmatch(r"/app/orders/[0-9A-Z]+", one.headers["location"])
    assert "MO-ONE" in (await person.page(one.headers["location"])).text
    both = await person.client.get("/app/orders", params={"q": "MO-BOTH"})
    assert both.status_code == 200 and both.text.count('href="/app/orders/') == 2
    assert "P1 " in both.text and "P2 " in both.text and "MO-ONE" not in both.text
    none = await person.client.get("/app/orders", params={"q": "mo-one"})  # the marketplace's id, exactly
    assert none.status_code == 200 and "No orders match." in none.text
    empty = await person.client.get("/app/orders", params={"q": " "})  # no search: every order
    assert empty.status_code == 200 and empty.text.count('href="/app/orders/') == 3

    stranger = await signed_in(api, await make_person(rt, await make_account(rt)))
    theirs = await stranger.client.get("/app/orders", params={"q": "MO-ONE"})
    assert theirs.status_code == 200 and "No orders match." in theirs.text
    await person.client.aclose()
    await stranger.client.aclose()


async def test_the_lookup_by_marketplace_order_id_uses_its_index(rt: Runtime, api: httpx.AsyncClient) -> None:
    # A few hundred orders, analysed: on an empty table PostgreSQL prices every index on (account_id, ...) alike
    # (migration 0038 added two more) and may take any of them.
    tenant = await tenant_with(rt, api, "P1")
    await ingest(rt, tenant.marketplace("P1"), *[pulled_order(order_id=f"MO-{i}") for i in range(300)])
    sql = DriverSql(not rt.db.is_sqlite)
    query = (
        f"SELECT id FROM orders WHERE account_id = {sql.bind(tenant.account_id)} "
        f"AND marketplace_order_id = {sql.bind('MO-1')} ORDER BY id LIMIT 50"
    )
    plan = await plan_of(rt, query, sql.params, analyze="orders")
    assert "ix_orders_account_marketplace_order" in plan, plan


async def test_older_imports_are_a_page_away(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    async with rt.db.transaction() as session:
        for i in range(23):
            empty = inventory.checked_import_file(b"Sku,Price,Quantity\n")
            await inventory.start_import(
                rt, session, tenant.account_id, f"file-{i:02d}.csv", empty, propagate=False, created_by=None
            )
    person = await signed_in(api, await make_person(rt, tenant.account_id, "Staff"))

    first = await person.page("/app/imports")
    names = re.findall(r"file-(\d\d)\.csv", first.text)
    assert names == [f"{i:02d}" for i in range(22, 2, -1)]  # the newest 20
    older_link = re.search(r'href="(/app/imports\?before=[^"]+)"', first.text).group(1)  # type: ignore[union-attr]
    older = await person.page(older_link.replace("&amp;", "&"))
    assert re.findall(r"file-(\d\d)\.csv", older.text) == ["02", "01", "00"]
    assert "Older imports" not in older.text and 'href="/app/imports">newest' in older.text
    refused = await person.client.get("/app/imports", params={"before": "not a time|x"})
    assert refused.status_code == 400 and 'id="error-before"' in refused.text
    await person.client.aclose()


async def test_the_app_has_its_own_icon_within_its_csp(rt: Runtime, api: httpx.AsyncClient) -> None:
    person = await signed_in(api, await make_person(rt, await make_account(rt)))
    page = await person.page("/app/catalogue")
    icon = re.search(r'<link rel="icon" href="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    assert icon.startswith("/app/static/")  # the app's own file: the CSP allows no other origin
    served = await api.get(icon)
    assert served.status_code == 200 and served.headers["content-type"].startswith("image/svg+xml")
    assert "<script" not in served.text
    await person.client.aclose()


async def test_under_a_linguistic_collation_the_range_would_miss_skus(rt: Runtime) -> None:
    """Why migration 0027 declares sku_lower COLLATE "C": in a linguistic order (the postgres image's default is
    en_US.utf8; here ICU's en-US) accents weigh less than letters: "café-1" sorts after "cafê", the range's end,
    and the search of "café" misses it; in "C" order it does not."""
    if rt.db.is_sqlite:
        pytest.skip("SQLite compares text in BINARY order: no database-wide collation to differ")
    keys = ["café-1", "cafe-3", "café", "cafê"]
    prefix = "café"
    found: dict[str, list[str]] = {}
    for table, collation in (("keys_en", "en-US-x-icu"), ("keys_c", "C")):  # a name each: no stale cached plan
        async with rt.db.transaction() as session:
            await session.execute(
                text(f'CREATE TEMP TABLE {table} (k VARCHAR(200) COLLATE "{collation}") ON COMMIT DROP')
            )
            for key in keys:
                await session.execute(text(f"INSERT INTO {table} VALUES (:k)"), {"k": key})
            rows = await session.execute(
                text(f"SELECT k FROM {table} WHERE k >= :low AND k < :high ORDER BY k"),
                {"low": prefix, "high": rules.prefix_end(prefix)},
            )
            found[collation] = [row[0] for row in rows]
    assert found == {"en-US-x-icu": ["café"], "C": ["café", "café-1"]}
