"""POST /api/product-types/Search through the text index (migration 0015: SQLite FTS5 trigram, PostgreSQL pg_trgm)
answers exactly what decision 0083's rule answers: the leaves whose name's key contains the SearchText's key (lower
case, each run of white space one space, none at the ends; wildcards literal), plus the leaf whose id equals a number,
in tree order.

The rule is written out below in Python and compared with the API on names and texts that an FTS query language or
a case folding would treat specially: quotes, operators (AND, OR, NOT, NEAR, *, -, ^, :, parentheses), LIKE
wildcards, texts shorter than a trigram (the scan), and Unicode whose lower case differs from a simple folding."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Any

import httpx
import pytest
from sqlalchemy import text as sql_text

from marketsync.catalog import repository
from marketsync.catalog.taxonomy import PATH_SEPARATOR, CategorySpec, Taxonomy, service
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.runtime import Runtime
from tests.catalog.support import TEST_SIZE, anchor_id
from tests.support.factories import Tenant, make_tenant

TRICKY_NAMES = [
    'Men\'s "Quoted" Shirts',
    "Stars * and Co",
    "Rock AND Roll",
    "NOT OR NEAR Gadgets",
    "Half-Price - Deals",
    "Col:umn ^Caret (Paren) +Plus",
    "100% Cotton_Blend",
    "Back\\slash/Slash //",
    "İstanbul Rugs",
    "STRASSE Straße",
    "ΣΊΣΥΦΟΣ Books",
    "Ｆｕｌｌｗｉｄｔｈ Letters",
    "日本の陶器",
    "Emoji 🎸 Guitars",
    "Café Crème",
    "Cafe\u0301 Decomposed",
    "Ǆemal Titlecase",
    "Kelvin \u212a Thermometers",
    "ﬁligree Ligature",
    "Double  Space",
    "Tab\tSeparated \u00a0 Runs\n",
    "2024 Calendars",
    "x",
]

TEXTS = [
    '"',
    '""',
    '"quoted"',
    's "quoted" s',
    "*",
    "* and",
    "and",
    "AND",
    "rock and",
    "OR",
    "not or near",
    "NEAR",
    "-",
    " - ",
    "half-price",
    "^caret",
    "col:umn",
    "(paren)",
    "+plus",
    "%",
    "100%",
    "%_",
    "n_b",
    "_",
    "/",
    "//",
    "\\",
    "k\\s",
    "İ",
    "i̇stanbul",
    "istanbul",
    "ß",
    "straße",
    "strasse",
    "σ",
    "ΣΟΣ",
    "σίσυφος",
    "σίσυφοσ",
    "ｆｕｌｌ",
    "full",
    "陶器",
    "日本の陶器",
    "🎸",
    "🎸 guitars",
    "café",
    "cafe",
    "e\u0301",
    "ǆ",
    "ǅemal",
    "kelvin k",
    "\u212a",
    "fi",
    "ﬁ",
    "double  space",
    "double space",
    "DOUBLE \t SPACE",
    "\u3000double\u00a0space\n",
    "e s",
    "e  s",
    "tab separated runs",
    "TAB\tSEPARATED\tRUNS",
    "separated  runs ",
    "s\u2003r",
    "  2024  ",
    "2024",
    "20",
    "2",
    "x",
    "xx",
    "s",
    "sh",
    "shi",
    "  SHIRTS  ",
    "t-shirts",
    "T-SHIRTS",
    "zzz-nothing",
    "   ",
    "",
]


def tricky_taxonomy() -> Taxonomy:
    """The shipped P1 test taxonomy with some leaves renamed (their paths follow)."""
    base = shipped.generate("P1", 1, TEST_SIZE)
    keep = set(shipped.ANCHOR_IDS["P1"].values())
    renamable = [c for c in base.leaves if c.category_id not in keep][: len(TRICKY_NAMES)]
    names = dict(zip((c.category_id for c in renamable), TRICKY_NAMES, strict=True))
    categories = []
    for category in base.categories:
        name = names.get(category.category_id)
        if name is not None:
            parent_path = category.path.rsplit(PATH_SEPARATOR, 1)[0]
            category = dataclasses.replace(category, name=name, path=f"{parent_path}{PATH_SEPARATOR}{name}")
        categories.append(category)
    return Taxonomy("P1", 1, tuple(categories))


def expected(leaves: list[CategorySpec], text: str | None) -> list[dict[str, str]]:
    """Decision 0083's rule, in Python."""
    stripped = " ".join((text or "").split())
    if stripped:
        needle = stripped.lower()
        leaves = [
            c
            for c in leaves
            if needle in " ".join(c.name.lower().split()) or (stripped.isdigit() and c.category_id == stripped)
        ]
    return [{"CategoryId": c.category_id, "Title": c.name, "Path": c.path} for c in leaves]


async def search(api: httpx.AsyncClient, tenant: Tenant, text: str | None, **paging: int) -> dict[str, Any]:
    body: dict[str, Any] = {"MarketplaceId": tenant.marketplace("P1").id, **paging}
    if text is not None:
        body["SearchText"] = text
    response = await api.post("/api/product-types/Search", json=body, headers=tenant.headers)
    assert response.status_code == 200, (text, response.text)
    answer: dict[str, Any] = response.json()
    return answer


async def loaded(rt: Runtime, api: httpx.AsyncClient, taxonomy: Taxonomy) -> Tenant:
    async with rt.db.transaction() as session:
        await service.import_taxonomy(rt, session, taxonomy, "UK")
    return await make_tenant(rt, api, scopes=("InventoryRead",), marketplaces=(("P1", "UK"),))


async def test_special_texts_and_names_answer_what_the_rule_answers(rt: Runtime, api: httpx.AsyncClient) -> None:
    taxonomy = tricky_taxonomy()
    tenant = await loaded(rt, api, taxonomy)
    leaves = taxonomy.leaves
    ids = [anchor_id("P1", "T-Shirts"), leaves[0].category_id, leaves[0].category_id[:2]]
    for text in [*TEXTS, *ids, *TRICKY_NAMES, *(name.upper() for name in TRICKY_NAMES), None]:
        want = expected(leaves, text)
        got = await search(api, tenant, text, Limit=200)
        assert (got["TotalCount"], got["ProductTypes"]) == (len(want), want[:200]), text
    assert (await search(api, tenant, '"quoted"'))["TotalCount"] == 1
    assert (await search(api, tenant, "i̇stanbul"))["TotalCount"] == 1  # "İ".lower() is two code points
    assert (await search(api, tenant, "istanbul"))["TotalCount"] == 0
    # White space runs are one space, in the text and in the name; the Title keeps the name as imported.
    for text in ("DOUBLE \t SPACE", "double space", " Double  Space "):
        assert [p["Title"] for p in (await search(api, tenant, text))["ProductTypes"]] == ["Double  Space"], text


async def test_substrings_of_every_name_and_their_pages_answer_what_the_rule_answers(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    taxonomy = tricky_taxonomy()
    tenant = await loaded(rt, api, taxonomy)
    leaves = taxonomy.leaves
    rng = random.Random(83)
    names = [c.name for c in leaves]
    for _ in range(40):
        name = rng.choice(names)
        start = rng.randrange(len(name))
        text = name[start : start + rng.randint(1, 6)]
        want = expected(leaves, text)
        for offset in (0, 3, len(want) - 1, len(want), len(want) + 5):
            if offset < 0:
                continue
            got = await search(api, tenant, text, Limit=4, Offset=offset)
            assert (got["TotalCount"], got["ProductTypes"]) == (len(want), want[offset : offset + 4]), (text, offset)


async def test_a_reimport_replaces_the_indexed_names(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The index follows the taxonomy: a renamed leaf is found by its new name only, a removed one no more."""
    taxonomy = tricky_taxonomy()
    tenant = await loaded(rt, api, taxonomy)
    renamed, removed = (c for c in taxonomy.leaves if c.name in ("Rock AND Roll", "Emoji 🎸 Guitars"))
    categories = []
    for category in taxonomy.categories:
        if category.category_id == removed.category_id:
            continue
        if category.category_id == renamed.category_id:
            category = dataclasses.replace(
                category, name="Jazz Records", path=category.path.replace("Rock AND Roll", "Jazz Records")
            )
        categories.append(category)
    revised = Taxonomy("P1", 2, tuple(categories))
    async with rt.db.transaction() as session:
        await service.import_taxonomy(rt, session, revised, "UK")

    assert (await search(api, tenant, "rock and roll"))["TotalCount"] == 0
    assert [p["CategoryId"] for p in (await search(api, tenant, "JAZZ RECORDS"))["ProductTypes"]] == [
        renamed.category_id
    ]
    assert (await search(api, tenant, "guitars"))["ProductTypes"] == expected(revised.leaves, "guitars")
    assert removed.category_id not in {p["CategoryId"] for p in (await search(api, tenant, "🎸"))["ProductTypes"]}


async def test_the_walk_counts_the_leaves_of_the_latest_import(rt: Runtime, api: httpx.AsyncClient) -> None:
    """The walk's TotalCount is the leaf count the site's latest import recorded: it follows a re-import that
    removes leaves, and a page past the end is empty."""
    taxonomy = tricky_taxonomy()
    tenant = await loaded(rt, api, taxonomy)
    walk = await search(api, tenant, None, Limit=200)
    assert (walk["TotalCount"], walk["ProductTypes"]) == (len(taxonomy.leaves), expected(taxonomy.leaves, None)[:200])

    kept = {c.category_id for c in taxonomy.leaves[: len(taxonomy.leaves) // 2]}
    revised = Taxonomy("P1", 2, tuple(c for c in taxonomy.categories if not c.is_leaf or c.category_id in kept))
    async with rt.db.transaction() as session:
        await service.import_taxonomy(rt, session, revised, "UK")
    walk = await search(api, tenant, None, Limit=200)
    assert (walk["TotalCount"], walk["ProductTypes"]) == (len(revised.leaves), expected(revised.leaves, None)[:200])
    past = await search(api, tenant, None, Offset=len(revised.leaves))
    assert (past["TotalCount"], past["ProductTypes"]) == (len(revised.leaves), [])


async def test_sqlite_counts_each_trigrams_leaves_and_the_counts_change_no_answer(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """Migration 0019: an import rewrites how many leaves hold each trigram, and a search asks SQLite's index for
    the two rarest of its text's trigrams. The counts choose which trigrams, never which leaves: with counts that
    say the opposite of the truth, or nothing, every answer is still the rule's."""
    if not rt.db.is_sqlite:
        pytest.skip("PostgreSQL's trigram index answers the LIKE itself: the trigram counts are SQLite's (0019)")
    taxonomy = tricky_taxonomy()
    tenant = await loaded(rt, api, taxonomy)

    async def counts() -> dict[str, int]:
        async with rt.db.transaction() as session:
            rows = await session.execute(sql_text("SELECT trigram, leaves FROM taxonomy_category_search_trigrams"))
            return {gram: leaves for gram, leaves in rows}

    async def indexed_names() -> list[str]:
        async with rt.db.transaction() as session:
            return list((await session.execute(sql_text("SELECT name_lower FROM taxonomy_category_search"))).scalars())

    held = Counter(gram for name in await indexed_names() for gram in repository.trigrams(name))
    assert await counts() == dict(held)

    rng = random.Random(290)
    names = [c.name for c in taxonomy.leaves]
    texts = [name[start : start + 7] for name in rng.sample(names, 25) for start in (0, 2)]
    texts += ["zzz-nothing", "t-shirts", "double  space", 's "quoted" s', "100% cotton_blend"]
    for lie in (
        "UPDATE taxonomy_category_search_trigrams SET leaves = -leaves",
        "DELETE FROM taxonomy_category_search_trigrams",
    ):
        async with rt.db.transaction() as session:
            await session.execute(sql_text(lie))
        for text in texts:
            want = expected(taxonomy.leaves, text)
            got = await search(api, tenant, text, Limit=200)
            assert (got["TotalCount"], got["ProductTypes"]) == (len(want), want[:200]), (lie, text)

    revised = Taxonomy("P1", 2, tuple(c for c in taxonomy.categories if c.name != "Emoji 🎸 Guitars"))
    async with rt.db.transaction() as session:
        await service.import_taxonomy(rt, session, revised, "UK")
    held = Counter(gram for name in await indexed_names() for gram in repository.trigrams(name))
    assert "🎸 g" not in held
    assert await counts() == dict(held)
