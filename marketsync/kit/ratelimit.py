"""Fixed-window rate limits with `limits`: memory storage in one process, Redis across API processes."""

from __future__ import annotations

import time
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, Storage
from limits.aio.strategies import FixedWindowRateLimiter
from limits.storage import storage_from_string


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    limit: int
    remaining: int
    reset_in: int  # seconds until the window resets
    window: int  # seconds

    def headers(self, policy: str) -> dict[str, str]:
        """draft-ietf-httpapi-ratelimit-headers (structured fields, named policy)."""
        headers = {
            "RateLimit-Policy": f'"{policy}";q={self.limit};w={self.window}',
            "RateLimit": f'"{policy}";r={self.remaining};t={self.reset_in}',
        }
        if not self.allowed:
            headers["Retry-After"] = str(max(1, self.reset_in))
        return headers


class RateLimiter:
    def __init__(self, redis_url: str | None = None) -> None:
        self._storage: Storage
        if redis_url:
            storage = storage_from_string("async+" + redis_url)
            assert isinstance(storage, Storage)
            self._storage = storage
        else:
            self._storage = MemoryStorage()
        self._strategy = FixedWindowRateLimiter(self._storage)
        self._items: dict[str, RateLimitItem] = {}

    def item(self, spec: str) -> RateLimitItem:
        if spec not in self._items:
            self._items[spec] = parse(spec)
        return self._items[spec]

    async def hit(self, spec: str, *key: str) -> RateDecision:
        # The fixed-window hit itself, keeping the count it returns: the strategy's hit() followed by
        # get_window_stats() re-read that count (three storage calls, each a round trip on Redis; now two).
        item = self.item(spec)
        storage_key = item.key_for(*key)
        count = await self._storage.incr(storage_key, item.get_expiry())
        reset_time = await self._storage.get_expiry(storage_key)
        return RateDecision(
            allowed=count <= item.amount,
            limit=item.amount,
            remaining=max(0, item.amount - count),
            reset_in=max(0, int(reset_time - time.time() + 0.999)),
            window=item.get_expiry(),
        )

    async def peek(self, spec: str, *key: str) -> bool:
        """True when the key still has budget, without spending any."""
        return await self._strategy.test(self.item(spec), *key)

    async def close(self) -> None:
        # Memory storage runs a timer task for expiry; Redis storage holds a connection pool.
        closer = getattr(self._storage, "reset", None)
        if isinstance(self._storage, MemoryStorage) and closer is not None:
            await closer()
