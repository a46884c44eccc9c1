"""The marketplace connections' hand-written statements, both dialects (docs/decisions/0445)."""

from __future__ import annotations

from marketsync.db.statements import Statement

# After a feed was applied: the values the marketplace now holds, per listing row (parameters: price, quantity, now,
# the row's id). SQLite: one row a run (executemany). PostgreSQL: every row at once over unnest'ed arrays, the rows
# locked in id order first (two runs of one connection's pushes lock the same rows in the same order; 0468).
RECORD_MARKETPLACE_VALUES = Statement(
    "marketplaces.record_marketplace_values",
    sqlite=(
        "UPDATE listings SET marketplace_price = COALESCE(?, marketplace_price), "
        "marketplace_quantity = COALESCE(?, marketplace_quantity), updated_at = ? WHERE id = ?"
    ),
    postgresql=(
        "WITH v AS (SELECT * FROM unnest($1::bigint[], $2::integer[], $3::timestamp[], $4::varchar[]) "
        "AS v(price, quantity, at, id)), "
        "locked AS MATERIALIZED (SELECT l.id FROM listings l JOIN v ON v.id = l.id ORDER BY l.id FOR UPDATE OF l) "
        "UPDATE listings AS l SET marketplace_price = COALESCE(v.price, l.marketplace_price), "
        "marketplace_quantity = COALESCE(v.quantity, l.marketplace_quantity), updated_at = v.at "
        "FROM v JOIN locked ON locked.id = v.id WHERE l.id = v.id"
    ),
)
