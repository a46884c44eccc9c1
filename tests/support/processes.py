"""Real `marketsync` processes (workers, servers) on the test's database, for crash and scale-out tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from marketsync.runtime import Runtime

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_env(rt: Runtime, **overrides: str) -> dict[str, str]:
    """The environment a subprocess needs to run against the same database with the same keys."""
    settings = rt.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")}
    env.update(
        {
            "PYTHONPATH": str(REPO_ROOT),
            "MARKETSYNC_DATABASE_URL": settings.database_url,
            "MARKETSYNC_VAR_DIR": str(settings.var_dir),
            "MARKETSYNC_ENCRYPTION_KEYS": settings.encryption_keys or "",
            "MARKETSYNC_SECRET_HASH_KEY": settings.secret_hash_key or "",
            "MARKETSYNC_JOB_LEASE_S": str(settings.job_lease_s),
            "MARKETSYNC_WORKER_POLL_S": str(settings.worker_poll_s),
            "MARKETSYNC_WEBHOOK_RETRY_SCALE": str(settings.webhook_retry_scale),
            "MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS": settings.webhook_allowed_networks,
            "MARKETSYNC_ORDER_PULL_INTERVAL_S": str(settings.order_pull_interval_s),
            "MARKETSYNC_PROPAGATION_HOLD_S": str(settings.propagation_hold_s),
            "MARKETSYNC_TASK_MODULES": settings.task_modules,
            "MARKETSYNC_LOG_LEVEL": "INFO",
            # Several workers run side by side in a test: their endpoints only when a test asks for a port.
            "MARKETSYNC_WORKER_METRICS_PORT": "0",
        }
    )
    if settings.webhook_ca_bundle:
        env["MARKETSYNC_WEBHOOK_CA_BUNDLE"] = settings.webhook_ca_bundle
    env.update(overrides)
    return env


def spawn(rt: Runtime, *args: str, log_path: Path | None = None, **env: str) -> subprocess.Popen[bytes]:
    """Start `python -m marketsync ARGS...`; stderr (JSON logs) goes to log_path when given."""
    command = [sys.executable, "-m", "marketsync", *args]
    if log_path is None:
        return subprocess.Popen(command, cwd=REPO_ROOT, env=process_env(rt, **env), stdout=subprocess.DEVNULL)
    with open(log_path, "wb") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            command, cwd=REPO_ROOT, env=process_env(rt, **env), stdout=subprocess.DEVNULL, stderr=log
        )
