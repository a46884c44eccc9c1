"""What the API and the workers share in one process: settings, database, clock, limiter, HTTP clients."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from marketsync.config import Settings
from marketsync.db import Database
from marketsync.kit.clock import Clock, SystemClock
from marketsync.kit.ratelimit import RateLimiter


@dataclass
class Runtime:
    settings: Settings
    db: Database
    clock: Clock = field(default_factory=SystemClock)
    limiter: RateLimiter | None = None
    # Room for domain services that need process-wide state (connector clients, sandbox app, ...).
    extras: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, settings: Settings | None = None, clock: Clock | None = None) -> Runtime:
        settings = settings or Settings()
        return cls(
            settings=settings,
            db=Database(
                settings.database_url,
                pool_size=settings.db_pool_size,
                max_overflow=settings.db_max_overflow,
                command_timeout_s=settings.db_command_timeout_s,
                requests_first_max_wait_s=settings.requests_first_max_wait_s,
            ),
            clock=clock or SystemClock(),
            limiter=RateLimiter(settings.redis_url),
        )

    async def close(self) -> None:
        for value in self.extras.values():
            closer = getattr(value, "aclose", None)
            if closer is not None:
                await closer()
        if self.limiter is not None:
            await self.limiter.close()
        await self.db.dispose()
