"""The six scopes of spec section 5."""

from __future__ import annotations

from enum import StrEnum


class Scope(StrEnum):
    OrdersRead = "OrdersRead"
    OrdersWrite = "OrdersWrite"
    InventoryRead = "InventoryRead"
    InventoryWrite = "InventoryWrite"
    MarketplacesRead = "MarketplacesRead"
    WebhooksWrite = "WebhooksWrite"


ALL_SCOPES: tuple[str, ...] = tuple(s.value for s in Scope)


def parse_scopes(text: str) -> list[str]:
    """Space-separated names, de-duplicated, in the canonical order; unknown names raise ValueError."""
    names = text.split()
    unknown = [n for n in names if n not in ALL_SCOPES]
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(unknown)}")
    return [s for s in ALL_SCOPES if s in names]
