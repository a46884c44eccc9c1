"""How many leaves hold each trigram, beside SQLite's category search index (docs/decisions/0290-rarest-trigrams.md).

A search for a phrase made FTS5 read the whole list of leaves holding each of its trigrams: "zephyrine", in 20
leaves of a million, also read the 20,000-leaf lists of "ine" and "rin" (1.5 ms against 0.18 ms at 10,000 leaves).
The search now asks the index for the two rarest of the text's trigrams only, and LIKE checks the candidates as it
always did; these counts say which are rarest. `taxonomy_category_search_vocab` is FTS5's own view of the index's
terms (no storage); reading it counts every list (0.9 s at a million leaves), so its counts are kept in
`taxonomy_category_search_trigrams`, rewritten by each taxonomy import (catalog.repository.refresh_search_index).

SQLite only: PostgreSQL's trigram index (migration 0015) is unchanged.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

VOCABULARY = "taxonomy_category_search_vocab"
COUNTS = "taxonomy_category_search_trigrams"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(f"CREATE VIRTUAL TABLE {VOCABULARY} USING fts5vocab(taxonomy_category_search, row)")
    op.execute(f"CREATE TABLE {COUNTS} (trigram TEXT PRIMARY KEY, leaves INTEGER NOT NULL) WITHOUT ROWID")
    op.execute(f"INSERT INTO {COUNTS} (trigram, leaves) SELECT term, doc FROM {VOCABULARY}")  # noqa: S608


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(f"DROP TABLE {COUNTS}")
    op.execute(f"DROP TABLE {VOCABULARY}")
