"""Each SP-API operation's request rate, per selling partner (docs/decisions/0374-amazon-rate-handling.md).

Amazon limits every operation per selling partner and application with a token bucket: a sustained rate (requests
per second) and a burst. Before the first answer, a call waits for Amazon's published default (`DEFAULT_RATES`, the
one table of them, as the vendored models state them); every answer's `x-amzn-RateLimit-Limit` header then sets that
operation's sustained rate for that selling partner. A call that would have to wait longer than `MAX_WAIT_S` does not
wait: it is `Throttled` at once and its job goes back to the queue for that long, so a worker never holds a job
sleeping for a minute (getOrders refills one request a minute). A 429 empties the bucket, so the next call waits
for a token as Amazon would have it.

The buckets live in the process: workers in several processes each keep their own, and Amazon's 429 (a retry later)
settles what they overshoot together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from marketsync.marketplaces.connector import Throttled

__all__ = ["DEFAULT_RATES", "MAX_WAIT_S", "Rate", "RateLimits", "rate_from_header"]


@dataclass(frozen=True)
class Rate:
    per_second: float
    burst: int


# Amazon's published default rate (requests per second) and burst of each operation the connector calls.
DEFAULT_RATES: dict[str, Rate] = {
    "getMarketplaceParticipations": Rate(0.016, 15),
    "getOrders": Rate(0.0167, 20),
    "getOrderItems": Rate(0.5, 30),
    "createRestrictedDataToken": Rate(1.0, 10),
    "createFeedDocument": Rate(0.5, 15),
    "createFeed": Rate(0.0083, 15),
    "getFeed": Rate(2.0, 15),
    "getFeedDocument": Rate(0.0222, 10),
    "searchListingsItems": Rate(5.0, 5),
    "getListingsItem": Rate(5.0, 10),
    "putListingsItem": Rate(5.0, 10),
    "searchDefinitionsProductTypes": Rate(5.0, 10),
    "getDefinitionsProductType": Rate(5.0, 10),
}
# An operation missing from the table (never called today) is treated as the slowest one.
FALLBACK_RATE = Rate(0.0083, 1)

# Longest a call waits for its token; beyond it the job retries later instead.
MAX_WAIT_S = 5.0


def rate_from_header(value: str | None) -> float | None:
    """The sustained rate an answer's `x-amzn-RateLimit-Limit` header states, or None (absent or not a number)."""
    if value is None:
        return None
    try:
        rate = float(value.strip())
    except ValueError:
        return None
    return rate if rate > 0 and rate == rate and rate != float("inf") else None


class _Bucket:
    def __init__(self, rate: Rate, now: float) -> None:
        self.per_second = rate.per_second
        self.burst = rate.burst
        self.tokens = float(rate.burst)
        self.updated = now

    def refill(self, now: float) -> None:
        self.tokens = min(float(self.burst), self.tokens + (now - self.updated) * self.per_second)
        self.updated = now

    def wait_s(self) -> float:
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.per_second


class RateLimits:
    """Token buckets by (selling partner, operation). `monotonic` and `sleep` are injectable for tests."""

    def __init__(
        self,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = asyncio.sleep,
        max_wait_s: float = MAX_WAIT_S,
    ) -> None:
        self._monotonic = monotonic
        self._sleep = sleep
        self.max_wait_s = max_wait_s
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def _bucket(self, seller: str, operation: str) -> _Bucket:
        key = (seller, operation)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(DEFAULT_RATES.get(operation, FALLBACK_RATE), self._monotonic())
        return bucket

    async def acquire(self, seller: str, operation: str) -> None:
        """Take one token, waiting up to `max_wait_s` for it; Throttled when the wait would be longer."""
        bucket = self._bucket(seller, operation)
        bucket.refill(self._monotonic())
        wait = bucket.wait_s()
        if wait > self.max_wait_s:
            raise Throttled(round(wait, 3))
        bucket.tokens -= 1  # taken now: a concurrent caller waits behind this one
        if wait > 0:
            result = self._sleep(wait)
            if asyncio.iscoroutine(result):
                await result

    def observe(self, seller: str, operation: str, header: str | None) -> None:
        """An answer's `x-amzn-RateLimit-Limit`: that operation's sustained rate for this selling partner."""
        rate = rate_from_header(header)
        if rate is None:
            return
        bucket = self._bucket(seller, operation)
        bucket.refill(self._monotonic())
        bucket.per_second = rate

    def throttled(self, seller: str, operation: str) -> float:
        """Amazon answered 429: the bucket is empty. Returns how long until its next token."""
        bucket = self._bucket(seller, operation)
        bucket.refill(self._monotonic())
        bucket.tokens = min(bucket.tokens, 0.0)
        return bucket.wait_s()

    def rate(self, seller: str, operation: str) -> Rate:
        bucket = self._bucket(seller, operation)
        return Rate(bucket.per_second, bucket.burst)
