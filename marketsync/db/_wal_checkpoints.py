"""SQLite's WAL copied back into the database file by a thread of the process, just after commits (decision 0275).

By SQLite's default the commit that takes the WAL past 1,000 pages runs the checkpoint itself: it copies every
page of the WAL into the database file and syncs both, inside that request. The bigger the catalogue, the more
pages a 500-SKU push dirties, so the more often a push pays for a whole checkpoint (at 1,000,000 products, nearly
every push). Here the write connections only checkpoint as a safety net (`SAFETY_NET_PAGES`, for a process
that runs none, or one far behind), and each process that writes runs PASSIVE checkpoints in a thread of its
own soon after its commits: no request waits for one, readers and writers are never blocked by one, and the
WAL stays small (the next writer restarts it from its beginning once it is fully copied). Commits within
`COALESCE_S` share one checkpoint: under a stream of writes, one checkpoint every 200 ms rather than one a commit
(decision 0470).
"""

from __future__ import annotations

import sqlite3
import threading

# The write connections' own checkpoint, when the WAL reaches this many pages (4 KiB each): 40 MiB.
SAFETY_NET_PAGES = 10_000
# A WAL file that grew past this is truncated to it when it restarts, so a burst does not keep its disk space.
WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
# Commits within this window share one checkpoint (decision 0470). At a million products a checkpoint copies a push's
# thousand pages into the file and syncs it (10-20 ms), and one a commit overlapped the next push of a client that
# sends them back to back; a page written by several commits of the window is copied once, the file synced once.
COALESCE_S = 0.2
_BUSY_TIMEOUT_MS = 1000


# The pragmas of a connection that writes: checkpoint only as the safety net, cap the WAL file's size.
WRITE_CONNECTION_PRAGMAS = (
    f"PRAGMA wal_autocheckpoint={SAFETY_NET_PAGES}",
    f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT_BYTES}",
)


class WalCheckpointer:
    """PASSIVE checkpoints of one SQLite file in a daemon thread, woken by `committed()`; started at its first
    commit, so a process that never writes runs no thread. SQLite releases the GIL while it copies and syncs."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.checkpoints = 0
        self._pending = threading.Event()
        self._closing = threading.Event()  # set by close(): also ends a window's wait at once
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def committed(self) -> None:
        if self._thread is None:
            self._start()
        self._pending.set()

    def started(self) -> bool:
        return self._thread is not None

    def thread_stopped(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    def close(self) -> None:
        self._closing.set()
        self._pending.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None and not self._closing.is_set():
                self._thread = threading.Thread(target=self._run, name="sqlite-wal-checkpoints", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            connection.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            while True:
                self._pending.wait()
                if self._closing.wait(COALESCE_S):  # close() came before or during the window
                    return
                self._pending.clear()
                self._checkpoint(connection)
        finally:
            connection.close()

    def _checkpoint(self, connection: sqlite3.Connection) -> None:
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.checkpoints += 1
        except sqlite3.Error:
            # Busy or gone (a test's file removed): the next commit asks again; the safety net still holds.
            pass
