"""The orders' hand-written SQL that differs by dialect (docs/decisions/0445): the API's reads compose their keyset
query at run time (repository.page_of_documents), from this column and each read's own conditions."""

from __future__ import annotations

from marketsync.db.statements import Statement

# An order's last change as UTCDateTime's SQLite storage text, "YYYY-MM-DD HH:MM:SS.ffffff", on both databases (a
# select list's column, under its own name), so a page's keys compare and parse the same way everywhere. ORDER BY
# names the stored column (orders.updated_at), so that it walks the index rather than sorting this text.
UPDATED_AT_TEXT = Statement(
    "orders.updated_at_text",
    sqlite="orders.updated_at",
    postgresql="to_char(orders.updated_at, 'YYYY-MM-DD HH24:MI:SS.US') AS updated_at",
)
