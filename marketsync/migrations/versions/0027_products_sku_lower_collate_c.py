"""products.sku_lower compares in code point order on PostgreSQL too (COLLATE "C"), whatever the database's
default collation (docs/decisions/0336-catalogue-search.md).

The app's catalogue search reads the SKUs that start with a text as one range of the unique index on (account_id,
sku_lower, sku): `sku_lower >= prefix AND sku_lower < prefix_end`. That range holds exactly the SKUs with the
prefix only in code point order: SQLite's BINARY, PostgreSQL's "C". Under a linguistic collation (the postgres
image's default en_US.utf8) punctuation and accents weigh less than letters: "bkp-x" sorts after "bkp." and outside
the range of "bkp-", "café-1" after "cafê" and outside the range of "café". Declaring the comparison COLLATE "C" in
the query instead would not use the index, which is in the column's collation: the search would read every product
of the account.

No table rewrite (the type stays VARCHAR(200)); PostgreSQL rebuilds the index on the column, in the statement's
lock (writes and reads of products wait for the build: ~3 s a million products, measured in 0336): not online, an
exception to decision 0306 that 0336 explains. SQLite: nothing to do.

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute('ALTER TABLE products ALTER COLUMN sku_lower TYPE VARCHAR(200) COLLATE "C"')


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute('ALTER TABLE products ALTER COLUMN sku_lower TYPE VARCHAR(200) COLLATE "default"')
