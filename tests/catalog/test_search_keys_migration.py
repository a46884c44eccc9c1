"""Migration 0028: `name_lower` becomes each category's search key (decision 0083, amended: white space runs are one
space). A database at 0027 holding names with double spaces, a tab and a no-break space is upgraded: those rows (and,
on SQLite, their rows of the text index and the trigram counts) hold the key, the others are untouched; downgrading
restores the lower-cased names. Run on both databases, each in a database of its own."""

from __future__ import annotations

import sqlalchemy as sa

from marketsync import migrate
from marketsync.catalog import repository
from marketsync.db import Database
from tests.support.databases import downgrade

NAMES = {
    "100": ("Home", False),
    "200": ("Kitchen  &  Dining", False),
    "300": ("Bottles  Accessories", True),
    "301": ("Tab\tand\u00a0No-Break", True),
    "302": ("Plain Leaf", True),
}
CATEGORIES = sa.table(
    "taxonomy_categories",
    *(
        sa.column(name)
        for name in ("platform", "country", "category_id", "parent_id", "name", "name_lower", "path", "depth")
    ),
    *(sa.column(name) for name in ("is_leaf", "position", "view_id")),
)


async def _names(db: Database, table: str) -> dict[str, str]:
    async with db.engine.connect() as conn:
        rows = await conn.execute(sa.text(f"SELECT category_id, name_lower FROM {table}"))
        return {category_id: name_lower for category_id, name_lower in rows}


async def _counts_follow_the_index(db: Database) -> None:
    async with db.engine.connect() as conn:
        counts = dict(
            (await conn.execute(sa.text("SELECT trigram, leaves FROM taxonomy_category_search_trigrams"))).all()
        )
        vocabulary = dict((await conn.execute(sa.text("SELECT term, doc FROM taxonomy_category_search_vocab"))).all())
    assert counts == vocabulary and counts


async def test_names_with_white_space_runs_get_their_search_key(empty_url: str) -> None:
    db = Database(empty_url)
    try:
        await migrate.upgrade(db, "0027")
        rows = [
            {
                "platform": "P1",
                "country": "UK",
                "category_id": category_id,
                "parent_id": None if category_id == "100" else ("100" if category_id == "200" else "200"),
                "name": name,
                "name_lower": name.lower(),
                "path": name,
                "depth": 1 if category_id == "100" else (2 if category_id == "200" else 3),
                "is_leaf": leaf,
                "position": position,
                "view_id": None,
            }
            for position, (category_id, (name, leaf)) in enumerate(NAMES.items())
        ]
        async with db.write_engine.begin() as conn:
            await conn.execute(CATEGORIES.insert(), rows)
            if db.is_sqlite:  # as an import at 0027 indexed its leaves (catalog.repository.refresh_search_index)
                await conn.execute(
                    sa.text(
                        "INSERT INTO taxonomy_category_search (name_lower, platform, country, category_id, position) "
                        "SELECT name_lower, platform, country, category_id, position FROM taxonomy_categories "
                        "WHERE is_leaf"
                    )
                )
                await conn.execute(
                    sa.text(
                        "INSERT INTO taxonomy_category_search_trigrams (trigram, leaves) "
                        "SELECT term, doc FROM taxonomy_category_search_vocab"
                    )
                )
        lowered = {category_id: name.lower() for category_id, (name, _) in NAMES.items()}

        await migrate.upgrade(db)
        keys = {category_id: repository.search_key(name) for category_id, (name, _) in NAMES.items()}
        assert keys["300"] == "bottles accessories" and keys["301"] == "tab and no-break"
        assert await _names(db, "taxonomy_categories") == keys
        if db.is_sqlite:
            assert await _names(db, "taxonomy_category_search") == {c: keys[c] for c in ("300", "301", "302")}
            await _counts_follow_the_index(db)
            async with db.engine.connect() as conn:
                found = await conn.execute(
                    sa.text("SELECT category_id FROM taxonomy_category_search WHERE name_lower MATCH :q"),
                    {"q": repository.fts_phrase("bottles accessories")},
                )
                assert found.scalars().all() == ["300"]

        async with db.write_engine.connect() as conn:
            await conn.run_sync(downgrade, "0027")
        assert await _names(db, "taxonomy_categories") == lowered
        if db.is_sqlite:
            assert await _names(db, "taxonomy_category_search") == {c: lowered[c] for c in ("300", "301", "302")}
            await _counts_follow_the_index(db)
    finally:
        await db.dispose()
