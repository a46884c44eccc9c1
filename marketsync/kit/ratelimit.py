"""Fixed-window rate limits: `limits` items and its Redis storage across API processes; in one process, a
dict of windows with the algorithm of `limits`' memory storage (docs/decisions/0013-request-fixed-cost.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.aio.storage import Storage
from limits.aio.strategies import FixedWindowRateLimiter
from limits.storage import storage_from_string

# Windows that ended are dropped at most this often: memory stays bounded by the keys seen recently.
_SWEEP_EVERY_S = 10.0


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


@dataclass(slots=True)
class _Window:
    count: int
    ends_at: float  # time.time() seconds


class _InProcessWindows:
    """Fixed windows in this process, as `limits`' memory storage keeps them: a window opens at a key's first hit
    and lasts the period; a hit after its end opens a new one.

    `limits`' async MemoryStorage starts an expiry task on (nearly) every hit that walks every key: 31 µs per
    request with one key live, 220 µs with 1,000 (e.g. a spray of client_ids at the token endpoint). Here a hit is
    one dict lookup.
    """

    def __init__(self) -> None:
        self._windows: dict[tuple[str, ...], _Window] = {}
        self._next_sweep = 0.0

    def hit(self, key: tuple[str, ...], period_s: int, now: float) -> _Window:
        window = self._windows.get(key)
        if window is None or window.ends_at <= now:
            if now >= self._next_sweep:
                self._sweep(now)
            window = self._windows[key] = _Window(0, now + period_s)
        window.count += 1
        return window

    def count(self, key: tuple[str, ...], now: float) -> int:
        window = self._windows.get(key)
        return 0 if window is None or window.ends_at <= now else window.count

    def _sweep(self, now: float) -> None:
        self._windows = {key: window for key, window in self._windows.items() if window.ends_at > now}
        self._next_sweep = now + _SWEEP_EVERY_S


class RateLimiter:
    def __init__(self, redis_url: str | None = None) -> None:
        self._storage: Storage | None = None
        self._strategy: FixedWindowRateLimiter | None = None
        self._windows: _InProcessWindows | None = None
        if redis_url:
            storage = storage_from_string("async+" + redis_url)
            assert isinstance(storage, Storage)
            self._storage = storage
            self._strategy = FixedWindowRateLimiter(storage)
        else:
            self._windows = _InProcessWindows()
        self._items: dict[str, RateLimitItem] = {}

    def item(self, spec: str) -> RateLimitItem:
        if spec not in self._items:
            self._items[spec] = parse(spec)
        return self._items[spec]

    async def hit(self, spec: str, *key: str) -> RateDecision:
        item = self.item(spec)
        period_s = item.get_expiry()
        if self._windows is not None:
            # Keyed by the spec itself: building limits' key string is the dearest step of an in-process hit.
            window = self._windows.hit((spec, *key), period_s, time.time())
            count, reset_time = window.count, window.ends_at
        else:
            # The fixed-window hit itself, keeping the count it returns: the strategy's hit() followed by
            # get_window_stats() re-read that count (three storage calls, each a round trip on Redis; now two).
            assert self._storage is not None
            storage_key = item.key_for(*key)
            count = await self._storage.incr(storage_key, period_s)
            reset_time = await self._storage.get_expiry(storage_key)
        return RateDecision(
            allowed=count <= item.amount,
            limit=item.amount,
            remaining=max(0, item.amount - count),
            reset_in=max(0, int(reset_time - time.time() + 0.999)),
            window=period_s,
        )

    async def peek(self, spec: str, *key: str) -> bool:
        """True when the key still has budget, without spending any."""
        item = self.item(spec)
        if self._windows is not None:
            return self._windows.count((spec, *key), time.time()) < item.amount
        assert self._strategy is not None
        return await self._strategy.test(item, *key)

    async def close(self) -> None:
        """Nothing to release: in-process windows are a dict; the Redis storage's pool goes with the process."""
