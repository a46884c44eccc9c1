"""A private PostgreSQL cluster for one test: initdb'd into a temporary directory, listening only on 127.0.0.1 on a
free port (trust auth, fsync off), stopped and started at will, and always removed afterwards.

Tests that restart PostgreSQL use it: the machine's shared server (127.0.0.1:5432) is never restarted. initdb
refuses to run as root, so as root (as CI runs) every server binary runs as the `postgres` OS user through
`runuser`, in a directory that user owns; as any other user they run as that user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import free_port

PG_BIN = Path(os.environ.get("MARKETSYNC_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
SERVER_USER = "postgres"
START_TIMEOUT_S = 30

# Speed over durability (a test's data is thrown away): no fsync, no full-page writes, no waiting for WAL flushes.
_CONFIGURATION = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = ''
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 100
log_min_messages = warning
"""


def missing_binaries() -> list[str]:
    """The server binaries this machine lacks (empty when a private cluster can be started)."""
    missing = [str(PG_BIN / name) for name in SERVER_BINARIES if not os.access(PG_BIN / name, os.X_OK)]
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        missing.append("runuser")
    return missing


def _as_server_user(*argv: str) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", SERVER_USER, "--", *argv]
    return list(argv)


class PrivatePostgres:
    """One cluster: `url` names its `postgres` database (superuser `postgres`, trust auth)."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.data = root / "data"
        self.log = root / "server.log"
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *argv: str, timeout: float = START_TIMEOUT_S + 10) -> None:
        done = subprocess.run(_as_server_user(*argv), capture_output=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}"
                f"\n--- server log ---\n{self.server_log()}"
            )

    def server_log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-4000:]
        return ""

    def init(self) -> None:
        self._run(
            str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
            "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(_CONFIGURATION.format(port=self.port))

    def start(self) -> None:
        """Start and wait until it accepts connections."""
        self._run(
            str(PG_BIN / "pg_ctl"), "start", "-D", str(self.data), "-l", str(self.log), "-w",
            "-t", str(START_TIMEOUT_S),
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop and wait until it is down. `fast`: open transactions are rolled back and every client is
        disconnected (what an operator's restart does); `immediate`: no clean shutdown at all."""
        self._run(str(PG_BIN / "pg_ctl"), "stop", "-D", str(self.data), "-m", mode, "-w", "-t", str(START_TIMEOUT_S))

    def restart(self, pause_s: float = 0.0) -> None:
        """A restart: with `pause_s`, the server stays down that long between the stop and the start."""
        if pause_s <= 0:
            self._run(
                str(PG_BIN / "pg_ctl"), "restart", "-D", str(self.data), "-l", str(self.log), "-m", "fast", "-w",
                "-t", str(START_TIMEOUT_S),
            )  # fmt: skip
            return
        self.stop()
        time.sleep(pause_s)
        self.start()

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def kill(self) -> None:
        """The last resort when pg_ctl cannot stop it: SIGQUIT to this cluster's postmaster (its children follow)."""
        with contextlib.suppress(OSError, ValueError, IndexError):
            os.kill(int((self.data / "postmaster.pid").read_text().splitlines()[0]), signal.SIGQUIT)


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private cluster, stopped and deleted on exit (also when the test fails)."""
    # Not under pytest's tmp_path: its directories are root's and closed to other users (mode 0700 up the tree).
    root = Path(tempfile.mkdtemp(prefix="marketsync-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, SERVER_USER, SERVER_USER)
    cluster = PrivatePostgres(root, free_port())
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        try:
            if cluster.running():
                cluster.stop("immediate")
        except (RuntimeError, subprocess.TimeoutExpired):
            cluster.kill()
        finally:
            shutil.rmtree(root, ignore_errors=True)
