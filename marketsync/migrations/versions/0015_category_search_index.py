"""A text index for category search (docs/decisions/0083-category-search.md): the substring match on a leaf's
lower-cased name no longer scans every leaf of the site.

- SQLite: `taxonomy_category_search`, an FTS5 table with the trigram tokenizer (SQLite 3.34+) holding each leaf's
  `name_lower` and its key and position. `case_sensitive 1`: the column is already lower-cased by Python's
  `str.lower()`, so the index must not apply a folding of its own. The taxonomy import rewrites a site's rows
  (catalog.repository.refresh_search_index); this migration fills it from the existing leaves.
- PostgreSQL: a GIN trigram index (pg_trgm, a trusted extension: the database owner can create it) on the
  leaves' `name_lower`, which answers the same `LIKE '%text%'` the search always ran.

Neither is in the models (both are specific to one backend); tests/migrations/test_migrations_match_models.py names them.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

SQLITE_TABLE = "taxonomy_category_search"
PG_INDEX = "ix_taxonomy_categories_name_trgm"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            f"CREATE VIRTUAL TABLE {SQLITE_TABLE} USING fts5("
            "name_lower, platform UNINDEXED, country UNINDEXED, category_id UNINDEXED, position UNINDEXED, "
            "tokenize = 'trigram case_sensitive 1')"
        )
        op.execute(
            f"INSERT INTO {SQLITE_TABLE} (name_lower, platform, country, category_id, position) "
            "SELECT name_lower, platform, country, category_id, position FROM taxonomy_categories WHERE is_leaf"
        )
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.create_index(
        PG_INDEX,
        "taxonomy_categories",
        ["name_lower"],
        postgresql_using="gin",
        postgresql_ops={"name_lower": "gin_trgm_ops"},
        postgresql_where=sa.text("is_leaf"),
        # Entries go straight into the index: an import's rows are found at once, not scanned in the pending list
        # (a few ms a search) until autovacuum merges it.
        postgresql_with={"fastupdate": "off"},
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP TABLE {SQLITE_TABLE}")
        return
    # The extension stays: other schemas of the database may use it.
    op.drop_index(PG_INDEX, table_name="taxonomy_categories")
