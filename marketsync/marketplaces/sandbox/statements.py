"""The sandbox marketplace's hand-written statements, both dialects (docs/decisions/0445)."""

from __future__ import annotations

from marketsync.db.statements import Statement

# A price/stock feed's accepted lines (parameters: price, quantity, now, the connection, the listing id; one line a
# run, executemany). PostgreSQL is told the types a NULL price or quantity has.
APPLY_PRICE_STOCK = Statement(
    "sandbox.apply_price_stock",
    sqlite=(
        "UPDATE sandbox_listings SET price = COALESCE(?, price), quantity = COALESCE(?, quantity), "
        "feed_updates = feed_updates + 1, updated_at = ? WHERE connection_id = ? AND listing_id = ?"
    ),
    postgresql=(
        "UPDATE sandbox_listings SET price = COALESCE($1::bigint, price), quantity = COALESCE($2::integer, quantity), "
        "feed_updates = feed_updates + 1, updated_at = $3 WHERE connection_id = $4 AND listing_id = $5"
    ),
)
