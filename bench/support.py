"""Shared pieces of the benchmarks: processes on loopback, wrk runs, a PostgreSQL scratch database."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
# Fixed keys for scratch databases (PostgreSQL refuses to generate keys: every process must share them).
BENCH_KEYS = {
    "encryption_keys": "b1:" + base64.urlsafe_b64encode(b"b" * 32).decode(),
    "secret_hash_key": base64.urlsafe_b64encode(b"s" * 32).decode(),
}
BENCH_KEY_ENV = {f"MARKETSYNC_{name.upper()}": value for name, value in BENCH_KEYS.items()}
PG_ADMIN = os.environ.get("MARKETSYNC_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def cpu_probe_ms() -> float:
    """A fixed pure-Python loop, timed (best of 3): the machine's noise. Benchmarks print it before and after."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i * i
        best = min(best, (time.perf_counter() - started) * 1000)
    return round(best, 1)


def process_cpu_s(pid: int) -> float:
    """CPU time (user + system, every thread) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def database_name(url: str) -> str:
    """The database a PostgreSQL URL names."""
    return url.rsplit("/", 1)[1].split("?", 1)[0]


def _stat_fields(proc: Path) -> list[str]:
    return (proc / "stat").read_text().rsplit(")", 1)[1].split()


def postgres_cpu_s(database: str | None = None) -> float:
    """CPU time (user + system) so far of the local PostgreSQL server.

    With `database`: the server processes serving that database (their command line names it: `postgres: 15/main:
    user database host idle`); a backend that ended meanwhile drops out of that sum, so use it for a database whose
    connections are pooled. Without: the whole server, every database and background process, ended backends
    included (the postmaster has reaped them: their time is in its children's time)."""
    tick = os.sysconf("SC_CLK_TCK")
    spent = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, PermissionError):
            words = (proc / "cmdline").read_bytes().replace(b"\0", b" ").split()
            if database is None and words[:1] and words[0].endswith(b"bin/postgres"):  # the postmaster
                fields = _stat_fields(proc)
                spent += sum(int(value) for value in fields[11:15])
            elif words[:1] == [b"postgres:"] and (database is None or database.encode() in words[2:4]):
                fields = _stat_fields(proc)
                spent += int(fields[11]) + int(fields[12])
    return spent / tick


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU time (user + system) so far of each thread of a process: "main" and the others by thread id (Python
    names no thread for the OS)."""
    spent: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            name = "main" if task.name == str(pid) else f"thread {task.name}"
            spent[name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return spent


def print_figures(figures: list[dict[str, Any]]) -> None:
    """The last line a benchmark prints: `FIGURES {json}` (bench/all.py collects them into docs/performance.md).

    Each figure: what, ours, floor (or None), floor_name, ratio (ours/floor as the target reads it, or None), target,
    unit. `floor` is only ever a floor: a minimal end-to-end implementation of the same HTTP operation measured in the
    same run. A comparison with anything else (ours on the other database, ours at another size) goes in `reference`
    and `reference_name`, and the page says it is not a floor."""
    print("FIGURES " + json.dumps(figures), flush=True)


def percentile(samples: list[float], share: float) -> float:
    """Nearest-rank percentile (share in 0..1)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def serve_runtime(rt: Any) -> contextlib.AbstractAsyncContextManager[str]:
    """The app of `rt` on a uvicorn server in this event loop, on a loopback ephemeral port."""
    from marketsync.app import create_app
    from tests.support.server import serve

    return serve(create_app(rt))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def marketsync(env: dict[str, str], *args: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "marketsync", *args, "--json"], env=env, cwd=REPO, check=True, capture_output=True
    )
    parsed: dict[str, object] = json.loads(out.stdout)
    return parsed


def wait_ready(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2).status_code < 500:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def stderr_sink(command: list[str]) -> Any:
    """Where a server process's stderr goes: nowhere, unless BENCH_LOGS names a folder to keep each process's in
    (diagnosis: why did a request fail?). A file is the caller's to close once the process has ended."""
    logs = os.environ.get("BENCH_LOGS")
    if not logs:
        return subprocess.DEVNULL
    os.makedirs(logs, exist_ok=True)
    name = "-".join(Path(part).name for part in command[1:5] if not part.startswith("-"))  # e.g. marketsync-serve
    return open(f"{logs}/{name}-{time.time_ns()}.log", "wb")


@contextlib.contextmanager
def process(command: list[str], env: dict[str, str], ready_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """A server process for the duration of the block. Its output is dropped, unless BENCH_LOGS names a folder to
    keep each process's stderr in (diagnosis: why did a request fail?)."""
    stderr = stderr_sink(command)
    proc = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_ready(ready_url)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if stderr is not subprocess.DEVNULL:
            stderr.close()


async def _pg_admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def create_scratch_pg(prefix: str = "ms_bench") -> tuple[str, str]:
    """A fresh PostgreSQL database for one benchmark run: (name, url). Drop it with drop_scratch_pg."""
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    await _pg_admin(f'CREATE DATABASE "{name}"')
    return name, f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"


async def drop_scratch_pg(name: str) -> None:
    await _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def scratch_database(backend: str) -> Iterator[str]:
    """A fresh database URL for one benchmark run, removed afterwards (for synchronous drivers)."""
    if backend == "sqlite":
        directory = tempfile.mkdtemp(prefix="msbench-")
        try:
            yield f"sqlite:///{directory}/bench.db"
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return
    import asyncio

    name, url = asyncio.run(create_scratch_pg())
    try:
        yield url
    finally:
        asyncio.run(drop_scratch_pg(name))


def wrk(
    url: str, *, seconds: int, connections: int, headers: dict[str, str] | None = None, lua: str | None = None
) -> dict[str, float]:
    """Requests per second and latency percentiles (ms) from one wrk run (one thread: the server has the other core)."""
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is required: `apt-get install -y wrk` (make bench installs it)")
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua or "")
    if lua:
        command += ["-s", script.name]
    output = subprocess.run([*command, url], check=True, capture_output=True, text=True).stdout
    os.unlink(script.name)
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))}  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    result["non_2xx"] = float(non_2xx.group(1)) if non_2xx else 0.0
    for pct in ("50", "99"):
        match = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)", output, re.M)
        if match:
            value, unit = float(match.group(1)), match.group(2)
            result[f"p{pct}_ms"] = value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
    return result
