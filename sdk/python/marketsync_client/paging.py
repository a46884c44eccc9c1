"""Iterators over the paged reads: the orders cursor walk, offset pages (products, category search) and the
resumable ``ModifiedSince`` walk of the catalogue. Each fetches a page only when the previous one is used up."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from marketsync_client.errors import MarketsyncError
from marketsync_client.models import Order, OrderPage, ProductSummary

T = TypeVar("T")

MAX_PAGE = 200
# ModifiedSince needs a bound to order the page; this one is before any product.
BEGINNING = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class WalkState:
    """What a walk learned so far, readable while and after it runs."""

    pages: int = 0
    items: int = 0
    # Orders: start the next walk with this as updated_since (it covers changes made during this walk).
    next_updated_since: datetime | None = None
    # ModifiedSince walk: the last LastModifiedDate seen; resume (or start the next pass) from it.
    cursor: datetime | None = None


class Paged(Iterator[T]):
    """A lazy iterator over a paged read; ``state`` says how far it got."""

    def __init__(self, run: Callable[[WalkState], Iterator[T]]) -> None:
        self.state = WalkState()
        self._items = run(self.state)

    def __iter__(self) -> Paged[T]:
        return self

    def __next__(self) -> T:
        item = next(self._items)
        self.state.items += 1
        return item


class AsyncPaged(AsyncIterator[T]):
    """The async twin of `Paged`: ``async for order in client.iter_orders(): ...``."""

    def __init__(self, run: Callable[[WalkState], AsyncIterator[T]]) -> None:
        self.state = WalkState()
        self._items = run(self.state)

    def __aiter__(self) -> AsyncPaged[T]:
        return self

    async def __anext__(self) -> T:
        item = await self._items.__anext__()
        self.state.items += 1
        return item


@dataclass
class ModifiedSinceCursor:
    """The walk of spec section 4: the bound is inclusive, so each next page starts with the last product of the
    previous one; products already yielded at that boundary time are skipped, by SKU. A product changed during
    the walk moves later and is yielded again (a re-read, never a loss)."""

    since: datetime
    limit: int
    seen_at_boundary: set[str] = field(default_factory=set)

    def take(self, page: list[ProductSummary]) -> tuple[list[ProductSummary], bool]:
        """(the products not yielded yet, whether the walk is over)."""
        fresh = [p for p in page if not (p.LastModifiedDate == self.since and p.Sku in self.seen_at_boundary)]
        if page:
            last = page[-1].LastModifiedDate
            at_last = {p.Sku for p in page if p.LastModifiedDate == last}
            self.seen_at_boundary = self.seen_at_boundary | at_last if last == self.since else at_last
            self.since = last
        done = len(page) < self.limit
        if not done and not fresh:
            raise MarketsyncError(
                f"more than {self.limit} products share LastModifiedDate {self.since.isoformat()}: "
                "the ModifiedSince walk cannot move forward"
            )
        return fresh, done


# ------------------------------------------------------------------------------------------------- sync


def order_walk(fetch: Callable[[str | None], OrderPage]) -> Callable[[WalkState], Iterator[Order]]:
    def run(state: WalkState) -> Iterator[Order]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            state.pages += 1
            state.next_updated_since = page.NextUpdatedSince
            yield from page.Orders
            if page.NextCursor is None:
                return
            cursor = page.NextCursor

    return run


def offset_walk(
    fetch: Callable[[int], tuple[list[T], int]], key: Callable[[T], Hashable]
) -> Callable[[WalkState], Iterator[T]]:
    """Offset pages against TotalCount. An item created during the walk ahead of the offset shifts the next page by
    one, which would hand over the previous page's last item again: each item (by `key`) is yielded once per walk.
    An item deleted ahead of the offset still shifts one out of reach (offset paging cannot see it); the
    ModifiedSince walk has no such gap."""

    def run(state: WalkState) -> Iterator[T]:
        offset, seen = 0, set[Hashable]()
        while True:
            items, total = fetch(offset)
            state.pages += 1
            yield from _unseen(items, key, seen)
            offset += len(items)
            if not items or offset >= total:
                return

    return run


def _unseen(items: list[T], key: Callable[[T], Hashable], seen: set[Hashable]) -> list[T]:
    fresh = []
    for item in items:
        identity = key(item)
        if identity not in seen:
            seen.add(identity)
            fresh.append(item)
    return fresh


def modified_since_walk(
    fetch: Callable[[datetime], list[ProductSummary]], since: datetime | None, limit: int
) -> Callable[[WalkState], Iterator[ProductSummary]]:
    def run(state: WalkState) -> Iterator[ProductSummary]:
        cursor = ModifiedSinceCursor(since or BEGINNING, limit)
        while True:
            page = fetch(cursor.since)
            state.pages += 1
            fresh, done = cursor.take(page)
            for product in fresh:
                state.cursor = product.LastModifiedDate
                yield product
            if done:
                return

    return run


# ------------------------------------------------------------------------------------------------- async


def async_order_walk(
    fetch: Callable[[str | None], Awaitable[OrderPage]],
) -> Callable[[WalkState], AsyncIterator[Order]]:
    async def run(state: WalkState) -> AsyncIterator[Order]:
        cursor: str | None = None
        while True:
            page = await fetch(cursor)
            state.pages += 1
            state.next_updated_since = page.NextUpdatedSince
            for order in page.Orders:
                yield order
            if page.NextCursor is None:
                return
            cursor = page.NextCursor

    return run


def async_offset_walk(
    fetch: Callable[[int], Awaitable[tuple[list[T], int]]], key: Callable[[T], Hashable]
) -> Callable[[WalkState], AsyncIterator[T]]:
    async def run(state: WalkState) -> AsyncIterator[T]:
        offset, seen = 0, set[Hashable]()
        while True:
            items, total = await fetch(offset)
            state.pages += 1
            for item in _unseen(items, key, seen):
                yield item
            offset += len(items)
            if not items or offset >= total:
                return

    return run


def async_modified_since_walk(
    fetch: Callable[[datetime], Awaitable[list[ProductSummary]]], since: datetime | None, limit: int
) -> Callable[[WalkState], AsyncIterator[ProductSummary]]:
    async def run(state: WalkState) -> AsyncIterator[ProductSummary]:
        cursor = ModifiedSinceCursor(since or BEGINNING, limit)
        while True:
            page = await fetch(cursor.since)
            state.pages += 1
            fresh, done = cursor.take(page)
            for product in fresh:
                state.cursor = product.LastModifiedDate
                yield product
            if done:
                return

    return run
