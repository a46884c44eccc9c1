"""The catalogue's hand-written statements, both dialects (docs/decisions/0445): the price/stock push's hot path on
the raw driver (lock read, batch write, where the products are listed) and the Data Flow read every push makes."""

from __future__ import annotations

from marketsync.db.statements import Statement

# The batch's products by SKU key, locked in id order (PostgreSQL; SQLite has one writer). Each row's address comes
# with it (SQLite's rowid, PostgreSQL's ctid), so the write finds the row without a probe of the id index.
LOCK_PRODUCTS_BY_SKU_KEYS = Statement(
    "inventory.lock_products_by_sku_keys",
    sqlite=(
        "SELECT id, sku, price, quantity, rowid FROM products WHERE account_id = ? AND sku_lower IN ({marks}) "
        "ORDER BY id"
    ),
    postgresql=(
        "SELECT id, sku, price, quantity, ctid FROM products WHERE account_id = $1 "
        "AND sku_lower = ANY($2::varchar[]) ORDER BY id FOR UPDATE"
    ),
)

# The push's write of the locked rows, in one statement: SQLite one row a run (executemany), PostgreSQL every row
# over unnest'ed arrays (DESIGN §6: the fastest form).
WRITE_PRODUCT_ROWS = Statement(
    "inventory.write_product_rows",
    sqlite="UPDATE products SET price = ?, quantity = ?, modified_at = ? WHERE id = ?",
    postgresql=(
        "UPDATE products AS p SET price = v.price, quantity = v.quantity, modified_at = v.modified_at "
        "FROM unnest($1::varchar[], $2::bigint[], $3::integer[], $4::timestamp[]) "
        "AS v(id, price, quantity, modified_at) WHERE p.id = v.id"
    ),
)
# The same by the address the lock read returned: the row without a probe of the id index (docs/decisions/0466).
# `id` is still matched, so a row that is not the one read is never written. A PostgreSQL row locked FOR UPDATE keeps
# its ctid until this transaction updates it: nothing else may update, delete or move it meanwhile.
WRITE_PRODUCT_ROWIDS = Statement(
    "inventory.write_product_rowids",
    sqlite="UPDATE products SET price = ?, quantity = ?, modified_at = ? WHERE rowid = ? AND id = ?",
    postgresql=(
        "UPDATE products AS p SET price = v.price, quantity = v.quantity, modified_at = v.modified_at "
        "FROM unnest($1::tid[], $2::varchar[], $3::bigint[], $4::integer[], $5::timestamp[]) "
        "AS v(address, id, price, quantity, modified_at) WHERE p.ctid = v.address AND p.id = v.id"
    ),
)
# The batch write of writers that share their transaction (the mirror, product create), in a savepoint on the
# session's connection (SQLAlchemy's named parameters). SQLite runs it as Core's executemany of one UPDATE
# (repository._WRITE_VALUES), whose column types store the times as UTCDateTime's text.
WRITE_PRODUCT_VALUES_IN_SAVEPOINT = Statement(
    "inventory.write_product_values_in_savepoint",
    sqlite=None,
    postgresql=(
        "UPDATE products AS p SET price = v.price, quantity = v.quantity, modified_at = v.modified_at "
        "FROM unnest(CAST(:ids AS VARCHAR[]), CAST(:prices AS BIGINT[]), CAST(:quantities AS INTEGER[]), "
        "CAST(:times AS TIMESTAMP[])) AS v(id, price, quantity, modified_at) WHERE p.id = v.id"
    ),
)

# The account's active connections listing any of the products, with those products. Read through listings
# (account_id, product_id): SQLite plans without statistics, and with the account's column alone indexed it read
# every listing of the account (201 ms a push at 400,000 listings; migration 0020). PostgreSQL joins the products as
# unnest'ed rows: the prepared statement's generic plan then probes that index per product, where `= ANY($2)` compared
# every listing of the account with each of the 500 ids (a Seq Scan). Both give the ids unordered (SQLite's
# group_concat comma-separated: ids are ULIDs, no commas); the repository sorts them.
LISTED_ON_ACTIVE_CONNECTIONS = Statement(
    "inventory.listed_on_active_connections",
    sqlite=(
        "SELECT c.id, c.platform, c.country, c.requires_reauthorization, group_concat(l.product_id) "
        "FROM listings l JOIN marketplace_connections c ON c.id = l.marketplace_id "
        "WHERE l.account_id = ? AND l.product_id IN ({marks}) AND l.listing_id IS NOT NULL "
        "AND c.account_id = ? AND c.state = ? GROUP BY c.id"
    ),
    postgresql=(
        "SELECT c.id, c.platform, c.country, c.requires_reauthorization, array_agg(l.product_id) "
        "FROM unnest($2::varchar[]) AS p(id) JOIN listings l ON l.account_id = $1 AND l.product_id = p.id "
        "JOIN marketplace_connections c ON c.id = l.marketplace_id "
        "WHERE l.listing_id IS NOT NULL AND c.account_id = $1 AND c.state = $3 GROUP BY c.id"
    ),
)

# Who owns each Data Flow kind the merchant set.
DATA_FLOW_OWNERS = Statement(
    "inventory.data_flow_owners",
    sqlite="SELECT kind, owner FROM data_flows WHERE account_id = ?",
    postgresql="SELECT kind, owner FROM data_flows WHERE account_id = $1",
)
