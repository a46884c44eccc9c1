"""Each account's number of products, kept by the database (docs/decisions/0298-product-counts.md).

`POST /api/products/List` without `ModifiedSince` answers an exact `TotalCount`, and counting an account's products
read every entry of one of its indexes on every page: 4-11 ms at 100,000 products on SQLite, ten times that at a
million. `product_counts` holds the number, one row per account that has had products. Triggers keep it: whatever
inserts or deletes products (the API's Create, the cascade of an account's deletion, an operator's SQL) counts,
in the same transaction. PostgreSQL counts a statement's rows at once (transition tables); SQLite has row triggers
only.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

SQLITE_TRIGGERS = (
    """CREATE TRIGGER products_counted_on_insert AFTER INSERT ON products BEGIN
    INSERT INTO product_counts (account_id, products) VALUES (NEW.account_id, 1)
    ON CONFLICT (account_id) DO UPDATE SET products = products + 1;
END""",
    """CREATE TRIGGER products_counted_on_delete AFTER DELETE ON products BEGIN
    UPDATE product_counts SET products = products - 1 WHERE account_id = OLD.account_id;
END""",
)

# Accounts in key order: concurrent statements touching several accounts take the counts' row locks in one order.
POSTGRES_TRIGGERS = (
    """CREATE FUNCTION product_counts_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO product_counts (account_id, products)
    SELECT account_id, count(*) FROM inserted GROUP BY account_id ORDER BY account_id
    ON CONFLICT (account_id) DO UPDATE SET products = product_counts.products + EXCLUDED.products;
    RETURN NULL;
END $$""",
    """CREATE FUNCTION product_counts_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE product_counts SET products = product_counts.products - gone.products
    FROM (SELECT account_id, count(*) AS products FROM deleted GROUP BY account_id ORDER BY account_id) AS gone
    WHERE product_counts.account_id = gone.account_id;
    RETURN NULL;
END $$""",
    """CREATE TRIGGER products_counted_on_insert AFTER INSERT ON products REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION product_counts_on_insert()""",
    """CREATE TRIGGER products_counted_on_delete AFTER DELETE ON products REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION product_counts_on_delete()""",
)


def upgrade() -> None:
    op.create_table(
        "product_counts",
        sa.Column("account_id", sa.String(length=26), nullable=False),
        sa.Column("products", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_product_counts_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("account_id", name=op.f("pk_product_counts")),
    )
    op.execute(
        "INSERT INTO product_counts (account_id, products) "
        "SELECT account_id, count(*) FROM products GROUP BY account_id"
    )
    for statement in POSTGRES_TRIGGERS if _postgres() else SQLITE_TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    on_table = " ON products" if _postgres() else ""
    for trigger in ("products_counted_on_insert", "products_counted_on_delete"):
        op.execute(f"DROP TRIGGER {trigger}{on_table}")
    if _postgres():
        op.execute("DROP FUNCTION product_counts_on_insert()")
        op.execute("DROP FUNCTION product_counts_on_delete()")
    op.drop_table("product_counts")


def _postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"
