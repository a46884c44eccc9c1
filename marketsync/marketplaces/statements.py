"""The marketplace connections' hand-written statements, both dialects (docs/decisions/0445)."""

from __future__ import annotations

from marketsync.db.statements import Statement

# After a feed was applied: the values the marketplace now holds, per listing row (parameters: price, quantity, now,
# the row's id; one row a run, executemany). PostgreSQL is told the types a NULL price or quantity has.
RECORD_MARKETPLACE_VALUES = Statement(
    "marketplaces.record_marketplace_values",
    sqlite=(
        "UPDATE listings SET marketplace_price = COALESCE(?, marketplace_price), "
        "marketplace_quantity = COALESCE(?, marketplace_quantity), updated_at = ? WHERE id = ?"
    ),
    postgresql=(
        "UPDATE listings SET marketplace_price = COALESCE($1::bigint, marketplace_price), "
        "marketplace_quantity = COALESCE($2::integer, marketplace_quantity), updated_at = $3 WHERE id = $4"
    ),
)
