"""Pure rules of the inventory, the price/stock push and the listing mirror (spec sections 4 and 6). No I/O here.

The values a push makes 500 of (items, stored products, changes) are named tuples: built in a fraction of a frozen
dataclass's time, as immutable.

Everything the push decides (which item wins, which product a SKU names, what moved, what the
InventoryChanged event says, which warnings apply) is a function of plain values, tested in
tests/unit/test_inventory_rules.py.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from marketsync.kinds import KINDS, marketplace_name
from marketsync.kit.clock import iso
from marketsync.models.base import PRICE_DECIMAL_PLACES

Writer = Literal["MerchantPush", "MasterMirror"]
Channel = Literal["Api", "FileImport", "Marketplace"]
DataKind = Literal["Price", "Stock"]
DataOwner = Literal["Merchant", "Marketplace"]
PushOutcome = Literal["Updated", "Unchanged", "NotFound", "Ambiguous", "Failed"]

DATA_KINDS: tuple[DataKind, ...] = ("Price", "Stock")
DATA_OWNERS: tuple[DataOwner, ...] = ("Merchant", "Marketplace")
# Spec section 1: until the merchant chooses their own system, a marketplace may still own the value.
DEFAULT_DATA_OWNER: DataOwner = "Marketplace"
PUSH_OUTCOMES: tuple[PushOutcome, ...] = ("Updated", "Unchanged", "NotFound", "Ambiguous", "Failed")

MAX_PUSH_ITEMS = 500
EVENT_CHANGED_CAP = 500
MAX_SKU_LENGTH = 200
# 15 significant digits at most (11 before the point, 4 after): exact in every JSON parser and far
# inside the scaled BIGINT the price is stored as.
MAX_PRICE = Decimal("99999999999.9999")
MAX_QUANTITY = 2**31 - 1
# Paging bound: far beyond any catalogue, and inside every database's integer range (a larger OFFSET
# would overflow the driver: a 500 instead of a 400).
MAX_OFFSET = 2**31 - 1
_PRICE_QUANTUM = Decimal(1).scaleb(-PRICE_DECIMAL_PLACES)


class SkuChange(NamedTuple):
    """Values to set on one product; None means not provided (left alone, never zero)."""

    product_id: str
    price: Decimal | None
    quantity: int | None


@dataclass(frozen=True)
class ChangeSource:
    """Who moved the values: spec section 6, InventoryChanged `source`."""

    writer: Writer
    channel: Channel
    user_platform_id: str | None = None


class AppliedChange(NamedTuple):
    """A product whose values actually moved. `price`/`quantity` are the new values, None when unmoved."""

    product_id: str
    sku: str
    price: Decimal | None
    quantity: int | None


# SQLite's rowid or PostgreSQL's ctid (asyncpg's (block, offset)).
RowAddress = int | tuple[int, int]


class StoredProduct(NamedTuple):
    """The stored values of one product, as read (and locked) before a write."""

    id: str
    sku: str
    price: Decimal | None
    quantity: int
    # The row's address when the push read it (SQLite's rowid, PostgreSQL's ctid): its write then finds the row
    # without an index probe.
    address: RowAddress | None = None


class PushItem(NamedTuple):
    """One item of a push request (or one row of an import file)."""

    sku: str
    price: Decimal | None = None
    quantity: int | None = None


def sku_key(sku: str) -> str:
    """The case-insensitive matching key of a SKU (stored as products.sku_lower)."""
    return sku.lower()


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with `prefix`, in code point order (SQLite's BINARY and
    PostgreSQL's "C" order of UTF-8 text): the prefix with its last code point raised by one, past the surrogates
    (never in stored text). None when every code point is the highest: nothing bounds those strings from above.
    `prefix <= s < prefix_end(prefix)` exactly when s starts with prefix (docs/decisions/0336-catalogue-search.md)."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop()) + 1
        if last == 0xD800:
            last = 0xE000
        if last <= 0x10FFFF:
            return "".join(chars) + chr(last)
    return None


def price_problem(value: Decimal) -> str | None:
    """Why a price is unacceptable, or None. Prices are exact decimals: never rounded, never floats."""
    if not value.is_finite():
        return "Must be a finite decimal number."
    if value < 0:
        return "Must not be negative."
    if value > MAX_PRICE:
        return f"Must not exceed {MAX_PRICE}."
    # Numeric, not textual: 1.50000 has one decimal place.
    if value != value.quantize(_PRICE_QUANTUM, rounding=ROUND_DOWN):
        return f"At most {PRICE_DECIMAL_PLACES} decimal places."
    return None


def unsigned_zero(value: Decimal) -> Decimal:
    """A zero price without its sign: `-0` and `-0.00` are zero, stored and echoed (events, the app) as 0."""
    return Decimal(0) if value.is_zero() else value


def quantity_problem(value: int) -> str | None:
    if value < 0:
        return "Must not be negative."
    if value > MAX_QUANTITY:
        return f"Must not exceed {MAX_QUANTITY}."
    return None


def sku_problem(value: str) -> str | None:
    if not value.strip():
        return "Must not be empty."
    if len(value) > MAX_SKU_LENGTH:
        return f"At most {MAX_SKU_LENGTH} characters."
    return None


def resolve_sku(sku: str, candidates: Sequence[StoredProduct]) -> StoredProduct | Literal["NotFound", "Ambiguous"]:
    """Which product a SKU names: exact casing wins; one case-insensitive match is that product;
    several case variants and none exact is Ambiguous (spec: Result Ambiguous / GET 409 conflict)."""
    if not candidates:
        return "NotFound"
    for candidate in candidates:
        if candidate.sku == sku:
            return candidate
    if len(candidates) == 1:
        return candidates[0]
    return "Ambiguous"


Resolution = StoredProduct | Literal["NotFound", "Ambiguous"]


class ResolvedItem(NamedTuple):
    """One distinct SKU of a push after collapsing: the winning (last) occurrence and what it names."""

    position: int  # index of the winning occurrence in the request (the import maps it to a file line)
    item: PushItem
    match: Resolution


def repeat_group(sku: str, match: Resolution) -> tuple[str, str]:
    """Items of one group are repeats of one SKU (see `resolve_push`): the product named, else the SKU's key when
    no product carries it, else (Ambiguous) the spelling itself."""
    if isinstance(match, StoredProduct):
        return ("product", match.id)
    if match == "NotFound":
        return ("missing", sku_key(sku))
    return ("ambiguous", sku)


def resolve_push(items: Sequence[PushItem], candidates: Mapping[str, Sequence[StoredProduct]]) -> list[ResolvedItem]:
    """Spec §4 rule 2 with case-insensitive matching: match every item, then collapse repeats to the last.

    Items are repeats of one SKU when they name the same product (exact casing first, else the unique
    case-insensitive match), or when no product carries them and they differ only by case. A repeat
    collapses to its last occurrence, whole (its values and its spelling). An Ambiguous spelling (several
    case variants stored, none exact) names no product, so each distinct spelling is its own entry.
    `candidates` maps `sku_key` to the stored products of that key. Entries are in order of first
    appearance, so nothing is dropped silently and every entry is one distinct SKU.
    """
    slots: dict[tuple[str, str], int] = {}
    resolved: list[ResolvedItem] = []
    for position, item in enumerate(items):
        match = resolve_sku(item.sku, candidates.get(sku_key(item.sku), ()))
        group = repeat_group(item.sku, match)
        entry = ResolvedItem(position, item, match)
        slot = slots.get(group)
        if slot is None:
            slots[group] = len(resolved)
            resolved.append(entry)
        else:
            resolved[slot] = entry
    return resolved


def push_outcome(match: Resolution, failed: Collection[str], applied: Collection[str]) -> PushOutcome:
    """A push line's Result: for a product, Failed (its row's write failed), Updated or Unchanged; else what named
    no product (NotFound, Ambiguous)."""
    if not isinstance(match, StoredProduct):
        return match
    if match.id in failed:
        return "Failed"
    return "Updated" if match.id in applied else "Unchanged"


def zero_priced(resolved: Sequence[ResolvedItem], failed: Collection[str]) -> dict[str, str]:
    """{product id: SKU} of the products a push priced 0 (and wrote): saved, never sent where a zero price is refused
    (docs/decisions/0027)."""
    return {
        entry.match.id: entry.match.sku
        for entry in resolved
        if isinstance(entry.match, StoredProduct)
        and entry.item.price is not None
        and entry.item.price == 0
        and entry.match.id not in failed
    }


def moved_values(stored: StoredProduct, change: SkuChange) -> tuple[Decimal | None, int | None]:
    """The values that differ from what is stored (None where not provided or equal)."""
    price = change.price if change.price is not None and change.price != stored.price else None
    quantity = change.quantity if change.quantity is not None and change.quantity != stored.quantity else None
    return price, quantity


def modification_times(now: datetime, count: int) -> list[datetime]:
    """LastModifiedDate of `count` products changed together, one microsecond apart.

    Products written in one batch get distinct timestamps (in SKU order), so a ModifiedSince walk with
    an inclusive bound always moves forward, even through a 500-SKU batch and a Limit of 200
    (docs/decisions/0020-modified-since-walk.md).
    """
    return [now + timedelta(microseconds=index) for index in range(count)]


def wire_timestamp(ts: datetime) -> str:
    """LastModifiedDate on the wire: ISO 8601 UTC with microseconds, the precision it is stored with."""
    return ts.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def inventory_changed_payload(
    occurred_at: datetime, source: ChangeSource, changes: Iterable[AppliedChange]
) -> dict[str, Any]:
    """The InventoryChanged body, exactly spec section 6: `changed` sorted by SKU, null for unmoved
    values, at most 500 listed, `truncated` and the real `totalChanged` beyond that."""
    ordered = sorted(changes, key=lambda change: (change.sku, change.product_id))
    return {
        "occurredAt": iso(occurred_at),
        "source": {
            "writer": source.writer,
            "channel": source.channel,
            "userPlatformId": source.user_platform_id,
        },
        "changed": [
            {"sku": change.sku, "price": change.price, "quantity": change.quantity}
            for change in ordered[:EVENT_CHANGED_CAP]
        ],
        "truncated": len(ordered) > EVENT_CHANGED_CAP,
        "totalChanged": len(ordered),
    }


def drift_message(kind: DataKind) -> str:
    value = "prices" if kind == "Price" else "stock quantities"
    return (
        f"Data Flow: {kind} is owned by the marketplace, not by your system. The pushed {value} are saved, "
        f"but each marketplace's next sync will overwrite them. Set the {kind} owner to your own system "
        "under Data Flow in the app to make your pushes authoritative."
    )


def drift_warnings(owners: Mapping[DataKind, DataOwner], *, sends_price: bool, sends_quantity: bool) -> list[str]:
    """Spec sections 1 and 4: a push of a value the marketplace owns carries the drift message."""
    warnings = []
    if sends_price and owners.get("Price", DEFAULT_DATA_OWNER) == "Marketplace":
        warnings.append(drift_message("Price"))
    if sends_quantity and owners.get("Stock", DEFAULT_DATA_OWNER) == "Marketplace":
        warnings.append(drift_message("Stock"))
    return warnings


_SHOWN_SKUS = 10


def _sku_list(skus: Sequence[str]) -> str:
    shown = ", ".join(skus[:_SHOWN_SKUS])
    return shown + (f" and {len(skus) - _SHOWN_SKUS} more" if len(skus) > _SHOWN_SKUS else "")


def zero_price_warnings(listings: Iterable[tuple[str, str, str]], zero_priced: Mapping[str, str]) -> list[str]:
    """One warning per marketplace that refuses a zero price and lists a product pushed at price 0.

    `listings` are (platform, country, product id) of active listings; `zero_priced` maps product id to
    SKU. The price is saved, but never sent there: the feed line carries the stock alone and the
    marketplace keeps its current price (docs/decisions/0027, 0047).
    """
    per_marketplace: dict[tuple[str, str], set[str]] = {}
    for platform, country, product_id in listings:
        sku = zero_priced.get(product_id)
        if sku is None or platform not in KINDS or KINDS[platform].accepts_zero_price:
            continue
        per_marketplace.setdefault((platform, country), set()).add(sku)
    warnings = []
    for (platform, country), skus in sorted(per_marketplace.items()):
        name = marketplace_name(platform, country)
        warnings.append(
            f"Price 0 is saved for {_sku_list(sorted(skus))}, but {name} refuses a price of zero: it is not sent "
            f"there, {name} keeps its current price, and stock changes are still sent. Push a price above zero "
            f"to change the price on {name}."
        )
    return warnings


def reauthorization_warning(marketplace: tuple[str, str]) -> str:
    """A push scheduled to a connection that needs reconnecting (spec: RequiresReauthorization)."""
    name = marketplace_name(*marketplace)
    return (
        f"{name} needs to be reconnected in the app (its authorisation was revoked). The changes are saved; "
        f"the push job for {name} fails until then, and once it is reauthorised the pending values are sent "
        "automatically."
    )


def normalise_choice(value: str, choices: Sequence[str]) -> str | None:
    """A case-insensitive pick from a closed set (CLI input), or None."""
    for choice in choices:
        if choice.lower() == value.strip().lower():
            return choice
    return None


# --- file import -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportRowError:
    line: int
    sku: str | None
    message: str


def import_header_problem(fieldnames: Sequence[str] | None) -> str | None:
    if not fieldnames:
        return "The file is empty: expected a header row Sku,Price,Quantity."
    names = {name.strip().lower() for name in fieldnames if name}
    if "sku" not in names:
        return "The header has no Sku column (expected Sku,Price,Quantity)."
    if "price" not in names and "quantity" not in names:
        return "The header needs a Price or a Quantity column (expected Sku,Price,Quantity)."
    return None


# What a person or a spreadsheet writes for a number, in ASCII digits: Python's own spellings ("1e3", "1_000", "NaN",
# "²", "+-5") are not prices or quantities, and int() refuses some of what str.isdigit() lets through.
_TYPED_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_TYPED_WHOLE = re.compile(r"[+-]?[0-9]+")


def parse_values(raw_price: str, raw_quantity: str) -> tuple[Decimal | None, int | None, dict[str, str]]:
    """Price and quantity typed by a person (an import cell, the app's form): empty means not provided (never
    zero). Returns the values and a problem per field."""
    problems: dict[str, str] = {}
    price: Decimal | None = None
    if raw_price:
        if not _TYPED_DECIMAL.fullmatch(raw_price):
            problems["Price"] = "Not a decimal number (use a dot, e.g. 12.50)."
        else:
            price = Decimal(raw_price)
            if problem := price_problem(price):
                problems["Price"] = problem
            else:
                price = unsigned_zero(price)
    quantity: int | None = None
    if raw_quantity:
        if _TYPED_WHOLE.fullmatch(raw_quantity):
            # Past a dozen digits it is out of range whatever they are: converting a text of a million digits would
            # cost seconds, and int() refuses 4,300.
            digits = raw_quantity.lstrip("+-").lstrip("0") or "0"
            sign = -1 if raw_quantity.startswith("-") else 1
            quantity = sign * (int(digits) if len(digits) <= 12 else MAX_QUANTITY + 1)
            if problem := quantity_problem(quantity):
                problems["Quantity"] = problem
        else:
            problems["Quantity"] = "Not a whole number."
    return price, quantity, problems


def parse_import_row(line: int, row: Mapping[str, str | None]) -> PushItem | ImportRowError:
    """One CSV row: empty Price/Quantity cells mean not provided (never zero)."""
    cells = {(key or "").strip().lower(): (value or "").strip() for key, value in row.items()}
    sku = cells.get("sku", "")
    problems: list[str] = []
    if problem := sku_problem(sku):
        problems.append(f"Sku: {problem}")
    price, quantity, value_problems = parse_values(cells.get("price", ""), cells.get("quantity", ""))
    problems.extend(f"{name}: {problem}" for name, problem in value_problems.items())
    if problems:
        return ImportRowError(line, sku or None, " ".join(problems))
    return PushItem(sku=sku, price=price, quantity=quantity)


# --------------------------------------------------------------------------------------------------
# The listing mirror (inventory/mirror.py)


class SkuHolder(Protocol):
    """A product as matching reads it."""

    @property
    def sku(self) -> str: ...

    @property
    def sku_lower(self) -> str: ...


Holder = TypeVar("Holder", bound=SkuHolder)


def listing_product(skus: Sequence[str], candidates: Sequence[Holder]) -> Holder | None:
    """The product a marketplace listing stands for, by its SKUs (its own, then the one it was sent with): the exact
    SKU first, else the one product whose SKU matches ignoring case; several such products name none."""
    for sku in skus:
        exact = [p for p in candidates if p.sku == sku]
        if exact:
            return exact[0]
    for sku in skus:
        folded = [p for p in candidates if p.sku_lower == sku.lower()]
        if len(folded) == 1:
            return folded[0]
    return None
