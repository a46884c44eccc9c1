"""Settings, read from MARKETSYNC_* environment variables (DESIGN.md section 5)."""

from __future__ import annotations

import base64
import json
import os
import secrets
from functools import cached_property
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MARKETSYNC_", extra="ignore")

    database_url: str = "sqlite:///./var/marketsync.db"
    redis_url: str | None = None
    base_url: str = "http://127.0.0.1:8000"
    var_dir: Path = Path("./var")

    token_ttl_s: int = 3600
    # Per credential, every /api route (job polling included). See docs/decisions/0004-rate-limits.md.
    rate_limit: str = "600/minute"
    # Failed client-secret attempts per client_id at the token endpoint.
    token_failure_limit: str = "10/minute"
    max_body_bytes: int = 2 * 1024 * 1024

    webhook_timeout_s: float = 10.0
    webhook_retry_scale: float = 1.0
    webhook_allowed_networks: str = ""
    webhook_ca_bundle: str | None = None

    order_pull_interval_s: float = 300.0
    health_check_interval_s: float = 60.0
    listing_mirror_interval_s: float = 900.0

    encryption_keys: str | None = None
    secret_hash_key: str | None = None

    job_lease_s: float = 30.0
    worker_poll_s: float = 0.5
    worker_concurrency: int = 4
    # Extra modules imported by workers to register task handlers (plugins, test tasks).
    task_modules: str = ""

    # When set, connectors reach the sandbox marketplaces over HTTP at this URL
    # (`marketsync sandbox serve`); otherwise they are served in-process.
    sandbox_url: str | None = None
    sandbox_latency_ms: float = 0.0

    log_level: str = "INFO"

    @cached_property
    def allowed_webhook_networks(self) -> list[IPv4Network | IPv6Network]:
        return [ip_network(c.strip(), strict=False) for c in self.webhook_allowed_networks.split(",") if c.strip()]

    @cached_property
    def _generated_keys(self) -> dict[str, str]:
        """Keys generated into var/ on first run when none are configured."""
        path = self.var_dir / "keys.json"
        if path.exists():
            loaded: dict[str, str] = json.loads(path.read_text())
            return loaded
        self.var_dir.mkdir(parents=True, exist_ok=True)
        keys = {
            "encryption_keys": "k1:" + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
            "secret_hash_key": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(keys, fh)
        return keys

    @cached_property
    def encryption_keyring(self) -> list[tuple[str, bytes]]:
        """(key id, 32-byte key) pairs; the first encrypts, all decrypt."""
        raw = self.encryption_keys or self._generated_keys["encryption_keys"]
        ring: list[tuple[str, bytes]] = []
        for index, item in enumerate(k.strip() for k in raw.split(",") if k.strip()):
            key_id, _, encoded = item.rpartition(":")
            key = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            if len(key) != 32:
                raise ValueError("MARKETSYNC_ENCRYPTION_KEYS: every key must be 32 bytes, base64url")
            ring.append((key_id or f"k{index + 1}", key))
        if not ring:
            raise ValueError("MARKETSYNC_ENCRYPTION_KEYS is empty")
        return ring

    @cached_property
    def hash_key(self) -> bytes:
        raw = self.secret_hash_key or self._generated_keys["secret_hash_key"]
        return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
