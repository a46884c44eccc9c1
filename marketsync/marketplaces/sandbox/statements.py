"""The sandbox marketplace's hand-written statements, both dialects (docs/decisions/0445)."""

from __future__ import annotations

from marketsync.db.statements import Statement

# A price/stock feed's accepted lines (parameters: price, quantity, now, the connection, the listing id). SQLite: one
# line a run (executemany). PostgreSQL: every line at once over unnest'ed arrays, the rows locked in key order first
# (0468); a listing named twice in one batch would be written once, so the caller sends such a batch a line at a time.
APPLY_PRICE_STOCK = Statement(
    "sandbox.apply_price_stock",
    sqlite=(
        "UPDATE sandbox_listings SET price = COALESCE(?, price), quantity = COALESCE(?, quantity), "
        "feed_updates = feed_updates + 1, updated_at = ? WHERE connection_id = ? AND listing_id = ?"
    ),
    postgresql=(
        "WITH v AS (SELECT * FROM unnest($1::bigint[], $2::integer[], $3::timestamp[], $4::varchar[], $5::varchar[]) "
        "AS v(price, quantity, at, connection_id, listing_id)), "
        "locked AS MATERIALIZED (SELECT s.connection_id, s.listing_id FROM sandbox_listings s "
        "JOIN v ON v.connection_id = s.connection_id AND v.listing_id = s.listing_id "
        "ORDER BY s.connection_id, s.listing_id FOR UPDATE OF s) "
        "UPDATE sandbox_listings AS s SET price = COALESCE(v.price, s.price), "
        "quantity = COALESCE(v.quantity, s.quantity), feed_updates = s.feed_updates + 1, updated_at = v.at "
        "FROM v JOIN locked ON locked.connection_id = v.connection_id AND locked.listing_id = v.listing_id "
        "WHERE s.connection_id = v.connection_id AND s.listing_id = v.listing_id"
    ),
)
