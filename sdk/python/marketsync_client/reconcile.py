"""Keep your own view of price and stock converged with the service (the pattern of spec section 6).

Deliveries are best-effort, may come twice and out of order; the catalogue walk is the safety net:

    mirror = InventoryMirror(on_difference=write_to_my_erp)
    mirror.reconcile(client)                       # first pass: walk the whole catalogue (quantities)
    ...
    mirror.apply_delivery(webhooks.construct_event(secret, headers, body))   # for every delivery
    ...
    mirror.reconcile(client)                       # hourly: walk what changed since the last pass (with overlap)

- A delivery is applied once per ``X-SVC-Delivery-Id``; a retry of it changes nothing.
- Only differences from what is held are applied (and reported to ``on_difference``), so applying the same
  values again is harmless, and app edits (writer MerchantPush) are caught like anything else.
- Each held value remembers when it was true; an older value arriving late (a reordered delivery, a page read
  before a change) never overwrites a newer one. Event times have millisecond precision: two changes of one
  SKU within the same millisecond are told apart by re-reading that SKU during the next `reconcile`.
- A truncated event (more than 500 SKUs changed) moves the next walk back to cover it.
- The walk confirms stock; the catalogue carries no price, so prices come from events only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from marketsync_client import webhooks
from marketsync_client.models import Product, ProductSummary

if TYPE_CHECKING:
    from marketsync_client.client import AsyncClient, Client

__all__ = ["Difference", "HeldItem", "InventoryMirror", "ReconcileReport"]


@dataclass
class HeldItem:
    """What the mirror holds for one SKU, and as of when (None: not known)."""

    price: Decimal | None = None
    quantity: int | None = None
    price_as_of: datetime | None = None
    quantity_as_of: datetime | None = None


@dataclass(frozen=True)
class Difference:
    """One applied change: the new values (None where that value did not change)."""

    sku: str
    price: Decimal | None
    quantity: int | None
    source: Literal["event", "walk", "read"]
    delivery_id: str | None = None


@dataclass
class ReconcileReport:
    walked: int = 0
    reread: int = 0
    differences: list[Difference] = field(default_factory=list)
    cursor: datetime | None = None


class _Order:
    NEWER, SAME, OLDER = 1, 0, -1


def _millis(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _compare(incoming: datetime, held: datetime | None) -> int:
    """Incoming vs held time at the precision both carry (event times are whole milliseconds)."""
    if held is None:
        return _Order.NEWER
    a, b = _millis(incoming), _millis(held)
    return _Order.NEWER if a > b else _Order.OLDER if a < b else _Order.SAME


class InventoryMirror:
    def __init__(
        self,
        *,
        items: MutableMapping[str, HeldItem] | None = None,
        on_difference: Callable[[Difference], None] | None = None,
        cursor: datetime | None = None,
        overlap: timedelta = timedelta(minutes=5),
        ignore_api_channel: bool = False,
        remember_deliveries: int = 100_000,
    ) -> None:
        """`items`: your store (any mutable mapping, e.g. backed by a database); `on_difference` is called for
        each applied difference, in order, while the mirror's lock is held. `cursor`: where the last successful
        walk ended (None: the first walk reads everything). `overlap`: how far before it each walk starts
        (transactions may commit out of time order). `ignore_api_channel`: skip events of API writes, for a
        caller that is the only API writer and already knows them."""
        self.items: MutableMapping[str, HeldItem] = items if items is not None else {}
        self.on_difference = on_difference
        self.cursor = cursor
        self.overlap = overlap
        self.ignore_api_channel = ignore_api_channel
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._remember = remember_deliveries
        # SKUs whose two values from the same millisecond disagree: re-read at the next reconcile.
        self.uncertain: set[str] = set()
        self.duplicates = 0
        self._lock = threading.RLock()

    # --------------------------------------------------------------------------------------------- deliveries

    def apply_delivery(self, delivery: webhooks.Delivery) -> list[Difference]:
        """Apply a verified delivery once per delivery id; events other than InventoryChanged are ignored."""
        with self._lock:
            if delivery.delivery_id in self._seen:
                self.duplicates += 1
                return []
            self._seen[delivery.delivery_id] = None
            while len(self._seen) > self._remember:
                self._seen.popitem(last=False)
            if not isinstance(delivery.event, webhooks.InventoryChanged):
                return []
            return self.apply_event(delivery.event, delivery_id=delivery.delivery_id)

    def apply_event(self, event: webhooks.InventoryChanged, *, delivery_id: str | None = None) -> list[Difference]:
        """Apply an InventoryChanged event's differences (no de-duplication: see `apply_delivery`)."""
        with self._lock:
            if self.ignore_api_channel and event.source.channel == "Api":
                return []
            if event.truncated:
                # The list is partial: the next walk must reach back to this change.
                start = event.occurredAt - self.overlap
                self.cursor = start if self.cursor is None else min(self.cursor, start)
            applied = []
            for change in event.changed:
                difference = self._apply_event_change(change, event.occurredAt, delivery_id)
                if difference is not None:
                    applied.append(difference)
            return applied

    def _apply_event_change(
        self, change: webhooks.SkuChange, at: datetime, delivery_id: str | None
    ) -> Difference | None:
        held = self.items.get(change.sku) or HeldItem()
        price = quantity = None
        if change.price is not None:
            order = _compare(at, held.price_as_of)
            if order != _Order.OLDER:
                if change.price != held.price:
                    price = held.price = change.price
                held.price_as_of = at if held.price_as_of is None else max(at, held.price_as_of)
        if change.quantity is not None:
            order = _compare(at, held.quantity_as_of)
            if order != _Order.OLDER:
                if change.quantity != held.quantity:
                    quantity = held.quantity = change.quantity
                    if order == _Order.SAME:
                        self.uncertain.add(change.sku)
                held.quantity_as_of = at if held.quantity_as_of is None else max(at, held.quantity_as_of)
        return self._store(change.sku, held, price, quantity, "event", delivery_id)

    # --------------------------------------------------------------------------------------------- catalogue reads

    def apply_product(self, product: ProductSummary) -> Difference | None:
        """Apply one product of a catalogue walk (its quantity, as of its LastModifiedDate)."""
        with self._lock:
            held = self.items.get(product.Sku) or HeldItem()
            order = _compare(product.LastModifiedDate, held.quantity_as_of)
            quantity = None
            if order == _Order.SAME and product.Quantity != held.quantity:
                self.uncertain.add(product.Sku)  # which of the two came last is not knowable here
            elif order == _Order.NEWER or held.quantity is None:
                if product.Quantity != held.quantity:
                    quantity = held.quantity = product.Quantity
                held.quantity_as_of = product.LastModifiedDate
            return self._store(product.Sku, held, None, quantity, "walk", None)

    def apply_current(self, product: Product) -> Difference | None:
        """Apply a product read just now (``GET /api/products/{sku}``): its quantity is the current one."""
        with self._lock:
            self.uncertain.discard(product.Sku)
            held = self.items.get(product.Sku) or HeldItem()
            quantity = None
            if product.Quantity != held.quantity:
                quantity = held.quantity = product.Quantity
            return self._store(product.Sku, held, None, quantity, "read", None)

    def _store(
        self,
        sku: str,
        held: HeldItem,
        price: Decimal | None,
        quantity: int | None,
        source: Literal["event", "walk", "read"],
        delivery_id: str | None,
    ) -> Difference | None:
        self.items[sku] = held  # written back: `items` may be a store that copies on read
        if price is None and quantity is None:
            return None
        difference = Difference(sku, price, quantity, source, delivery_id)
        if self.on_difference is not None:
            self.on_difference(difference)
        return difference

    # --------------------------------------------------------------------------------------------- passes

    def _walk_start(self) -> datetime | None:
        return None if self.cursor is None else self.cursor - self.overlap

    def _finish(self, report: ReconcileReport, walked_to: datetime | None) -> ReconcileReport:
        with self._lock:
            if walked_to is not None and (self.cursor is None or walked_to > self.cursor):
                self.cursor = walked_to
            report.cursor = self.cursor
        return report

    def _walk(self, products: Iterable[ProductSummary], report: ReconcileReport) -> None:
        for product in products:
            report.walked += 1
            difference = self.apply_product(product)
            if difference is not None:
                report.differences.append(difference)

    def reconcile(self, client: Client, *, page_size: int = 200) -> ReconcileReport:
        """Walk the catalogue by ModifiedSince from the last pass (minus the overlap) and apply differences;
        then re-read the SKUs left uncertain. Safe to run at any time, also while deliveries arrive."""
        report = ReconcileReport()
        walk = client.iter_products_modified_since(self._walk_start(), page_size=page_size)
        self._walk(walk, report)
        for sku in sorted(self.uncertain):
            report.reread += 1
            difference = self.apply_current(client.get_product(sku))
            if difference is not None:
                report.differences.append(difference)
        return self._finish(report, walk.state.cursor)

    async def reconcile_async(self, client: AsyncClient, *, page_size: int = 200) -> ReconcileReport:
        """`reconcile` with an `AsyncClient`."""
        report = ReconcileReport()
        walk = client.iter_products_modified_since(self._walk_start(), page_size=page_size)
        async for product in walk:
            report.walked += 1
            difference = self.apply_product(product)
            if difference is not None:
                report.differences.append(difference)
        for sku in sorted(self.uncertain):
            report.reread += 1
            difference = self.apply_current(await client.get_product(sku))
            if difference is not None:
                report.differences.append(difference)
        return self._finish(report, walk.state.cursor)
