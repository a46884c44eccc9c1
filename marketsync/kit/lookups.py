"""Name lookups on a few threads of their own, never on the event loop's default executor.

`loop.getaddrinfo` runs `socket.getaddrinfo` on the loop's default thread pool, which the process also uses for
everything else that must not block the loop (the app's password checks, the SQLite writer hand-off). A lookup cannot
be interrupted: a caller's deadline ends its wait, not the thread's. A host whose DNS answers slowly would so keep a
default-pool thread busy per attempt and starve unrelated work. Each user of `NameLookups` (webhook deliveries,
marketplace calls) gets its own bounded pool instead, so a slow resolver delays only that user's other lookups
(decision 0346).

When every thread is busy a lookup waits in line; the caller's deadline still applies to that wait, and a lookup whose
caller gave up is cancelled before it ever takes a thread.
"""

from __future__ import annotations

import asyncio
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

# Lookups in flight at once per pool. A few: enough for normal traffic (answers come in milliseconds), few enough
# that a stuck resolver holds only a handful of threads.
LOOKUP_THREADS = 4

AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[Any, ...]]


class NameLookups:
    """`getaddrinfo` on a pool of `threads` threads, created at the first lookup and shut down by `aclose`
    (Runtime.close closes every extra that has one)."""

    def __init__(self, name: str, threads: int = LOOKUP_THREADS) -> None:
        self.name = name
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix=f"lookups-{self.name}")
        return self._pool

    async def getaddrinfo(
        self, host: str, port: int | str | None, *, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[AddrInfo]:
        """socket.getaddrinfo, awaited. Cancelling the wait (a deadline) frees the caller at once; a lookup still
        queued is then dropped, one already running finishes on its thread and its answer is discarded."""

        def lookup() -> list[AddrInfo]:
            return list(socket.getaddrinfo(host, port, family, type, proto, flags))

        return await asyncio.get_running_loop().run_in_executor(self._executor(), lookup)

    async def aclose(self) -> None:
        """Stop the pool without waiting for a lookup that is stuck in the resolver: queued ones are cancelled."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


class HasExtras(Protocol):
    """What `lookups_of` needs of a runtime (kit imports nothing else of marketsync)."""

    extras: dict[str, Any]


def lookups_of(rt: HasExtras, user: str) -> NameLookups:
    """The runtime's lookup threads of one user ("webhooks", "marketplaces"): created at the first lookup, closed with
    the runtime."""
    key = f"{user}.name_lookups"
    existing = rt.extras.get(key)
    if isinstance(existing, NameLookups):
        return existing
    created = NameLookups(user)
    rt.extras[key] = created
    return created
