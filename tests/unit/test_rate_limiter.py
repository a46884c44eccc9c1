"""In-process fixed windows (docs/decisions/0013): the same decisions as `limits`' memory storage, in O(1) a hit."""

from __future__ import annotations

import time

import pytest
from limits import parse
from limits.aio.storage import MemoryStorage

from marketsync.kit import ratelimit
from marketsync.kit.ratelimit import RateLimiter


class FakeTime:
    def __init__(self) -> None:
        self.now = 1_800_000_000.25

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    # Both the limiter and limits' storage read time.time().
    monkeypatch.setattr(time, "time", fake)
    return fake


async def limits_reference(storage: MemoryStorage, spec: str, key: str) -> tuple[int, float]:
    item = parse(spec)
    storage_key = item.key_for("api", key)
    count = await storage.incr(storage_key, item.get_expiry())
    return count, await storage.get_expiry(storage_key)


async def test_decisions_match_limits_memory_storage(fake_time: FakeTime) -> None:
    limiter = RateLimiter()
    reference = MemoryStorage()
    # Hits spread over three windows, with a gap longer than a window, on two keys.
    steps = [0.0, 1.0, 10.0, 0.5, 49.0, 0.0, 0.25, 1.0, 130.0, 0.0, 59.9, 0.1, 0.0]
    try:
        for step in steps:
            fake_time.now += step
            for key in ("a", "b"):
                decision = await limiter.hit("3/minute", "api", key)
                count, reset_time = await limits_reference(reference, "3/minute", key)
                assert decision.allowed == (count <= 3)
                assert decision.remaining == max(0, 3 - count)
                assert decision.reset_in == max(0, int(reset_time - fake_time.now + 0.999))
                assert decision.window == 60
    finally:
        await reference.reset()


async def test_peek_spends_nothing(fake_time: FakeTime) -> None:
    limiter = RateLimiter()
    assert await limiter.peek("2/minute", "token", "client")
    await limiter.hit("2/minute", "token", "client")
    assert await limiter.peek("2/minute", "token", "client")
    await limiter.hit("2/minute", "token", "client")
    assert not await limiter.peek("2/minute", "token", "client")
    assert not await limiter.peek("2/minute", "token", "client")
    fake_time.now += 60
    assert await limiter.peek("2/minute", "token", "client")


async def test_ended_windows_are_dropped(fake_time: FakeTime) -> None:
    limiter = RateLimiter()
    for client in range(1000):
        await limiter.hit("10/minute", "token", f"client-{client}")
    fake_time.now += 61
    await limiter.hit("10/minute", "token", "fresh")
    windows = limiter._windows
    assert windows is not None and len(windows._windows) == 1


def test_sweeps_are_rate_limited_themselves() -> None:
    windows = ratelimit._InProcessWindows()
    assert ratelimit._SWEEP_EVERY_S == 10.0
    windows.hit(("s", "a"), 1, now=100.0)
    windows.hit(("s", "b"), 1, now=111.0)  # the next sweep is due: "a" ended at 101
    windows.hit(("s", "c"), 1, now=113.0)  # "b" ended at 112, but the next sweep is not due before 121
    assert set(windows._windows) == {("s", "b"), ("s", "c")}
