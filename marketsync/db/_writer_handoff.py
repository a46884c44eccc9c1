"""SQLite's one writer handed between processes in turn (docs/decisions/0295-writer-handoff.md).

`marketsync serve --no-workers` beside `marketsync worker` (the scale-out deployment) are two processes writing one
SQLite file, and SQLite lets one write at a time. Left to SQLite, the other's BEGIN IMMEDIATE waits in its busy
handler, which sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms... between tries: it wakes long after the
writer is free, and a process that commits and begins again at once takes the writer again before the sleeper looks.

So each write transaction of a process first takes two advisory locks (flock) on files beside the database: the
queue lock `<db>-queue`, then the writer lock `<db>-writer`, and lets go of the queue lock once it holds the writer.
A process waiting for the writer holds the queue lock meanwhile, so the holder's next transaction queues behind it:
two processes alternate, and the waiter wakes when the writer is let go (the kernel wakes it), not at its next poll.

The locks only order processes: SQLite's own lock still guards every write, so a process that does not take them (the
sqlite3 shell) stays safe, only outside the queue. The kernel lets go of a dead process's locks. In a process, one
transaction at a time takes them (WriterTurns in _requests_first.py orders its transactions).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import Callable

from sqlalchemy import exc as sa_exc


class WriterHandoff:
    def __init__(self, database_file: str, *, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._queue = _lock_file(f"{database_file}-queue")
        self._writer = _lock_file(f"{database_file}-writer")
        # The writer being taken in a thread (the blocking flock). A waiter that gives up (cancelled, timed out)
        # leaves it to the next waiter of this process, or to _settle, which lets the writer go again.
        self._taking: asyncio.Future[None] | None = None
        self._abandoned = False
        self._closed = False

    async def acquire(self) -> None:
        if self._taking is None:
            if not _try_lock(self._queue):
                self._start(_queue_then_writer)  # another process waits for the writer: queue behind it
            elif _try_lock(self._writer):
                fcntl.flock(self._queue, fcntl.LOCK_UN)  # free: no thread, three system calls
                return
            else:
                self._start(_writer_then_leave_queue)  # first in the queue
        taking = self._taking
        assert taking is not None
        self._abandoned = False
        try:
            await asyncio.wait_for(asyncio.shield(taking), self.timeout_s)
        except BaseException as error:
            if not taking.done():
                self._abandoned = True
            else:  # taken as this waiter gave up (or failed): let it go
                self._taking = None
                if not taking.cancelled() and taking.exception() is None:
                    self.release()
            if isinstance(error, TimeoutError):
                raise sa_exc.TimeoutError(f"the SQLite writer was not free within {self.timeout_s:g} s") from None
            raise
        self._taking = None

    def release(self) -> None:
        fcntl.flock(self._writer, fcntl.LOCK_UN)

    def close(self) -> None:
        """Idempotent (a database may be disposed twice): an fd closed twice could be another file's by then."""
        if self._closed:
            return
        self._closed = True
        os.close(self._queue)
        os.close(self._writer)

    def _start(self, take: Callable[[int, int], None]) -> None:
        taking = asyncio.get_running_loop().run_in_executor(None, take, self._queue, self._writer)
        taking.add_done_callback(self._settle)
        self._taking = taking

    def _settle(self, taking: asyncio.Future[None]) -> None:
        """Runs before the waiter resumes: a take nobody waits for any more lets the writer go."""
        if self._taking is not taking or not self._abandoned:
            return
        self._taking = None
        if not taking.cancelled() and taking.exception() is None:
            self.release()


def _queue_then_writer(queue: int, writer: int) -> None:
    fcntl.flock(queue, fcntl.LOCK_EX)
    _writer_then_leave_queue(queue, writer)


def _writer_then_leave_queue(queue: int, writer: int) -> None:
    try:
        fcntl.flock(writer, fcntl.LOCK_EX)
    finally:
        fcntl.flock(queue, fcntl.LOCK_UN)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _lock_file(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
