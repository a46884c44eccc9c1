"""The six scopes of spec section 5."""

from __future__ import annotations

import re
from enum import StrEnum


class Scope(StrEnum):
    OrdersRead = "OrdersRead"
    OrdersWrite = "OrdersWrite"
    InventoryRead = "InventoryRead"
    InventoryWrite = "InventoryWrite"
    MarketplacesRead = "MarketplacesRead"
    WebhooksWrite = "WebhooksWrite"


ALL_SCOPES: tuple[str, ...] = tuple(s.value for s in Scope)


# RFC 6749 section 3.3: a scope token is NQCHAR (%x21 / %x23-5B / %x5D-7E), the characters an
# error_description may carry too (section 5.2, plus the space).
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
SHOWN_UNKNOWN = 10
MAX_SHOWN_LENGTH = 100


class UnknownScopes(ValueError):
    """Names that are no scope, exactly as the caller sent them (case kept), in the order sent, once each."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(describe_unknown(names))


def parse_scopes(text: str) -> list[str]:
    """Space-separated names, de-duplicated, in the canonical order; unknown names raise UnknownScopes."""
    names = text.split()
    unknown = list(dict.fromkeys(n for n in names if n not in ALL_SCOPES))
    if unknown:
        raise UnknownScopes(unknown)
    return [s for s in ALL_SCOPES if s in names]


def describe_unknown(names: list[str], *, withheld: str = "") -> str:
    """'Unknown scope(s): Bogus.' with each name as sent; names are matched case-exactly, so never re-cased.

    A name that is no RFC 6749 scope token (a quote, a backslash, a character beyond ASCII) or a very long one
    is counted, not echoed: an error_description may carry only those characters (RFC 6749 section 5.2). So is
    `withheld` (the client's secret, pasted into scope by mistake: an answer never carries a secret)."""
    echoed = [n for n in names if _SCOPE_TOKEN.fullmatch(n) and len(n) <= MAX_SHOWN_LENGTH and n != withheld]
    echoed = echoed[:SHOWN_UNKNOWN]
    others = len(names) - len(echoed)
    parts = [" ".join(echoed)] if echoed else []
    if others:
        parts.append(f"{others} {'more ' if echoed else ''}name(s) not shown")
    return f"Unknown scope(s): {'; '.join(parts)}. Scope names are case-sensitive: {' '.join(ALL_SCOPES)}."
