"""The deploy recipe holds together: the image installs run-time pins only and runs as a non-root user, the compose
file runs the commands and settings the service has, and the alerts and dashboard read metrics the service serves."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import yaml
from prometheus_client import REGISTRY

import marketsync.http.middleware
import marketsync.jobs.run
import marketsync.observability
import marketsync.webhooks.engine
from marketsync.config import Settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PACKAGE = DEPLOY.parent / "marketsync"
# Files of the package a running service never reads: the Alembic template of new revisions, the room's notes.
NOT_RUN_TIME = {"migrations/script.py.mako", "console/README.md", "marketplaces/README.md"}
DEV_TOOLS = ("pytest", "mypy", "ruff", "schemathesis", "hypothesis", "playwright", "trustme")


def test_the_runtime_lock_is_current_and_holds_no_dev_tool() -> None:
    check = subprocess.run([sys.executable, str(DEPLOY / "runtime_lock.py"), "--check"], capture_output=True)
    assert check.returncode == 0, check.stderr.decode()
    pins = {line.split("==")[0] for line in (DEPLOY / "requirements-runtime.lock").read_text().splitlines()}
    assert not pins & set(DEV_TOOLS)
    assert {"fastapi", "uvicorn", "sqlalchemy", "asyncpg", "jinja2", "argon2-cffi"} <= pins


def test_the_image_installs_every_file_the_service_reads() -> None:
    """The image installs the package without -e: a template or static file the package-data globs miss is absent
    from it, and the app answers 500 where every test (on the editable install) passes."""
    project = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["marketsync"]
    packaged = {path for pattern in patterns for path in PACKAGE.glob(pattern)}
    tracked = subprocess.run(["git", "ls-files", "marketsync"], capture_output=True, text=True, cwd=DEPLOY.parent)
    data = {
        name.removeprefix("marketsync/")
        for name in tracked.stdout.split()
        if not name.endswith(".py") and name.removeprefix("marketsync/") not in NOT_RUN_TIME
    }
    assert any(name.endswith(".html") for name in data) and any(name.endswith(".js") for name in data)
    assert sorted(name for name in data if PACKAGE / name not in packaged) == []


def test_the_image_runs_as_an_unprivileged_user_from_the_runtime_lock() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "requirements-runtime.lock" in dockerfile and "requirements.lock " not in dockerfile
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in ("root", "0")


def test_the_compose_file_runs_the_services_commands_and_settings() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "migrate", "api", "worker", "proxy"} <= set(services)
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["api"]["command"][0] == "serve" and "--no-workers" in services["api"]["command"]
    assert services["worker"]["command"] == ["worker"]
    settings = {f"MARKETSYNC_{name.upper()}" for name in Settings.model_fields}
    for name, service in services.items():
        for variable in service.get("environment") or {}:
            if variable.startswith("MARKETSYNC_") and name not in ("proxy", "prometheus"):
                assert variable in settings, f"{name}: {variable} is not a setting"
    assert services["api"]["environment"]["MARKETSYNC_MIGRATE_ON_START"] == "false"
    example = (DEPLOY / "secrets.env.example").read_text()
    assert "MARKETSYNC_ENCRYPTION_KEYS=" in example and "MARKETSYNC_SECRET_HASH_KEY=" in example


def test_the_proxy_lets_an_idle_connection_go_before_serve_does() -> None:
    """Of two ends keeping a connection, the one that sends must close first: a request sent just as `serve` closes
    an idle connection is lost (docs/decisions/0305). So `serve` outlasts Caddy's upstream keep-alive, and httpx's
    pool (the SDK's and most Python integrators' client)."""
    keep_alive_s = Settings.model_fields["http_keep_alive_s"].default
    caddy = re.search(
        r"reverse_proxy api:8000 \{.*?transport http \{.*?keepalive (\d+)s", (DEPLOY / "Caddyfile").read_text(), re.S
    )
    assert caddy is not None, "the Caddyfile names its upstream keep-alive"
    assert int(caddy[1]) < keep_alive_s
    assert httpx.Limits().keepalive_expiry is not None and httpx.Limits().keepalive_expiry < keep_alive_s


def _served_metric_names() -> set[str]:
    names: set[str] = set()
    for metric in REGISTRY.collect():  # a labelled family with no child yet has no samples: name its series
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}.get(metric.type, ("",))
        names.update(f"{metric.name}{suffix}" for suffix in suffixes)
    return names


def test_alerts_and_dashboard_read_metrics_the_service_serves() -> None:
    served = _served_metric_names()
    alerts = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    expressions = [rule["expr"] for group in alerts["groups"] for rule in group["rules"]]
    dashboard = json.loads((DEPLOY / "grafana" / "marketsync-dashboard.json").read_text())
    expressions += [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {name for expr in expressions for name in re.findall(r"\b(marketsync_[a-z_]+)", expr)}
    assert used and used <= served, used - served
    assert (
        marketsync.observability and marketsync.jobs.run and marketsync.webhooks.engine and marketsync.http.middleware
    )
