"""Category search compares white space runs as one space (docs/decisions/0083-category-search.md, amended
2026-11-28): `taxonomy_categories.name_lower` holds the name's search key (catalog.repository.search_key: lower-cased,
each run of white space one space, none at either end) instead of the lower-cased name.

Only a name with white space other than single spaces between words has a key different from its lower case: those
rows are found by LIKE (one read of the table, no index needed) and rewritten with the key computed in Python, as an
import computes it. On SQLite their rows of the text index (migration 0015) follow, and the trigram counts (0019) are
counted again when any leaf changed. The shipped taxonomies have no such name: nothing is rewritten for them.

Revision ID: 0028
Revises: 0027
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

TABLE = "taxonomy_categories"
SEARCH_TABLE = "taxonomy_category_search"
COUNTS = "taxonomy_category_search_trigrams"
VOCABULARY = "taxonomy_category_search_vocab"
# Every character `str.split()` splits on, apart from the space itself.
_OTHER_WHITE_SPACE = [
    chr(c)
    for c in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B))
    + (0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
]


def search_key(name: str) -> str:
    """catalog.repository.search_key, frozen here as this migration applies it."""
    return " ".join(name.lower().split())


def _rewrite(key: Callable[[str], str]) -> None:
    bind = op.get_bind()
    patterns = ["%  %", " %", "% ", *(f"%{c}%" for c in _OTHER_WHITE_SPACE)]
    condition = " OR ".join(f"name LIKE :p{i}" for i in range(len(patterns)))
    rows = bind.execute(
        sa.text(f"SELECT platform, country, category_id, name, name_lower, is_leaf FROM {TABLE} WHERE {condition}"),  # noqa: S608
        {f"p{i}": pattern for i, pattern in enumerate(patterns)},
    ).all()
    changed = [
        {"platform": platform, "country": country, "category_id": category_id, "key": key(name), "leaf": is_leaf}
        for platform, country, category_id, name, name_lower, is_leaf in rows
        if key(name) != name_lower
    ]
    if not changed:
        return
    bind.execute(
        sa.text(
            f"UPDATE {TABLE} SET name_lower = :key "  # noqa: S608
            "WHERE platform = :platform AND country = :country AND category_id = :category_id"
        ),
        changed,
    )
    leaves = [row for row in changed if row["leaf"]]
    if bind.dialect.name != "sqlite" or not leaves:
        return
    bind.execute(
        sa.text(
            f"UPDATE {SEARCH_TABLE} SET name_lower = :key "  # noqa: S608
            "WHERE platform = :platform AND country = :country AND category_id = :category_id"
        ),
        leaves,
    )
    bind.execute(sa.text(f"DELETE FROM {COUNTS}"))  # noqa: S608
    bind.execute(sa.text(f"INSERT INTO {COUNTS} (trigram, leaves) SELECT term, doc FROM {VOCABULARY}"))  # noqa: S608


def upgrade() -> None:
    _rewrite(search_key)


def downgrade() -> None:
    _rewrite(str.lower)
