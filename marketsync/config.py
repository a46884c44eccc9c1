"""Settings, read from MARKETSYNC_* environment variables (DESIGN.md section 5)."""

from __future__ import annotations

import base64
import binascii
import errno
import json
import os
import secrets
from functools import cached_property
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from pathlib import Path
from urllib.parse import urlsplit

from limits import parse
from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class MissingKeys(ValueError):
    """Keys must be configured (PostgreSQL: every process must share them) and are not."""


class Settings(BaseSettings):
    """Every setting is checked when read (docs/decisions/0162-keys-and-settings.md): a bad value stops the process at
    start with the variable's name, instead of answering 500 on every call later."""

    model_config = SettingsConfigDict(env_prefix="MARKETSYNC_", extra="ignore")

    database_url: str = "sqlite:///./var/marketsync.db"
    redis_url: str | None = None
    # PostgreSQL connections per process (SQLAlchemy pool; each process also keeps a few driver connections for
    # hot reads: docs/decisions/0162-keys-and-settings.md). Size against max_connections or a PgBouncer pool.
    db_pool_size: int = Field(10, ge=1, le=200)
    db_max_overflow: int = Field(10, ge=0, le=200)
    # Longest wait for PostgreSQL to open a connection or answer a statement (LISTEN checked as often): a connection
    # that went silent fails instead of waiting forever (docs/reliability.md, Database faults).
    db_command_timeout_s: float = Field(30.0, gt=0, le=3600)
    base_url: str = "http://127.0.0.1:8000"
    var_dir: Path = Path("./var")

    token_ttl_s: int = Field(3600, ge=1, le=86_400)
    # Per credential, every /api route (job polling included). See docs/decisions/0004-rate-limits.md.
    rate_limit: str = "600/minute"
    # Failed client-secret attempts per client_id at the token endpoint.
    token_failure_limit: str = "10/minute"
    max_body_bytes: int = Field(2 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024)
    # A request's whole body must arrive within this many seconds of its start (408 and the connection closed after):
    # a client that never sends it would hold the connection open as long as it liked. 2 MB in 20 s is 0.8 Mbit/s.
    request_body_timeout_s: float = Field(20.0, gt=0, le=3600)

    webhook_timeout_s: float = Field(10.0, gt=0, le=60)
    webhook_retry_scale: float = Field(1.0, gt=0, le=100)
    webhook_allowed_networks: str = ""
    webhook_ca_bundle: str | None = None

    order_pull_interval_s: float = Field(300.0, gt=0)
    health_check_interval_s: float = Field(60.0, gt=0)
    listing_mirror_interval_s: float = Field(900.0, gt=0)

    encryption_keys: str | None = None
    secret_hash_key: str | None = None

    job_lease_s: float = Field(30.0, gt=0)
    worker_poll_s: float = Field(0.5, gt=0, le=60)
    worker_concurrency: int = Field(4, ge=1, le=256)
    # Workers in the API's process (`serve`) wait at most this long for the requests in flight before their next
    # transaction (marketsync/db/_requests_first.py; 100 ms: docs/decisions/0302); 0: they never wait.
    requests_first_max_wait_s: float = Field(0.1, ge=0, le=5)
    # A propagation's PriceStockPush, and a created product's ListingPublish, wait this long before a worker takes them,
    # so that the pushes (creates) that follow join them: one feed per connection for a loop of pushes or creates, not
    # one per request (docs/decisions/0458, 0460); 0: runnable at once, never joined by a create.
    propagation_hold_s: float = Field(1.0, ge=0, le=60)
    # Extra modules imported by workers to register task handlers (plugins, test tasks).
    task_modules: str = ""
    # `marketsync worker` serves /metrics and /healthz here (port 0: not at all).
    worker_metrics_host: str = "127.0.0.1"
    worker_metrics_port: int = Field(9101, ge=0, le=65535)
    # `/metrics` on the API port: off, or only for `Authorization: Bearer <token>` when a token is set.
    metrics: bool = True
    metrics_token: str | None = Field(None, min_length=16)

    # When set, connectors reach the sandbox marketplaces over HTTP at this URL
    # (`marketsync sandbox serve`); otherwise they are served in-process.
    sandbox_url: str | None = None
    # Longest wait for one marketplace call: a marketplace that does not answer is "unavailable" (the job retries).
    marketplace_timeout_s: float = Field(30.0, gt=0, le=300)
    sandbox_latency_ms: float = Field(0.0, ge=0)

    # Amazon's Selling Partner API (docs/decisions/0370-amazon-connector.md). Without an application id and LWA
    # credentials Amazon cannot be connected. The URLs default to Amazon's own endpoints: LWA's token endpoint, each
    # region's SP-API host, the site's Seller Central consent page; tests point the first two at the simulator.
    amazon_app_id: str | None = None
    amazon_lwa_client_id: str | None = None
    amazon_lwa_client_secret: str | None = None
    amazon_lwa_url: str | None = None
    amazon_spapi_url: str | None = None
    amazon_consent_url: str | None = None

    # Behind a TLS-terminating proxy: the proxy's addresses (comma-separated, or "*"), whose X-Forwarded-For and
    # X-Forwarded-Proto uvicorn then believes (the client's address for throttling). Empty: no header is believed.
    forwarded_allow_ips: str = ""
    # How long `serve` keeps an idle HTTP/1.1 connection open. Longer than any client keeping connections to it (the
    # proxy in front, httpx's 5 s pool): a request sent just as the server closes is lost (decision 0305).
    http_keep_alive_s: int = Field(75, ge=1, le=3600)

    log_level: str = "INFO"
    # The local loop of `marketsync dev listen` (docs/decisions/0420): webhooks may go to loopback, over plain http
    # too. Refused with PostgreSQL or a base URL that is not loopback: never a mode a shared deployment can run in.
    dev_mode: bool = False
    # Off in a deploy that runs `marketsync db upgrade` as a step of its own: processes then refuse an old schema.
    migrate_on_start: bool = True

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        scheme = value.split(":", 1)[0].split("+", 1)[0].lower()
        if scheme not in ("sqlite", "postgresql", "postgres"):
            raise ValueError("must be sqlite:///PATH or postgresql://user@host/db")
        return value

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or len(value.split("://", 1)[1].strip("/")) == 0:
            raise ValueError("must be an absolute http(s) URL, e.g. https://api.example.com")
        return value.rstrip("/")

    @field_validator("amazon_lwa_url", "amazon_spapi_url", "amazon_consent_url")
    @classmethod
    def _amazon_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.startswith(("http://", "https://")) or len(value.split("://", 1)[1].strip("/")) == 0:
            raise ValueError("must be an absolute http(s) URL")
        return value.rstrip("/")

    @field_validator("amazon_app_id", "amazon_lwa_client_id", "amazon_lwa_client_secret")
    @classmethod
    def _amazon_text(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("rate_limit", "token_failure_limit")
    @classmethod
    def _rate(cls, value: str) -> str:
        try:
            parse(value)
        except ValueError:
            raise ValueError("must be a rate such as 600/minute or 10/second") from None
        return value

    @field_validator("webhook_allowed_networks")
    @classmethod
    def _networks(cls, value: str) -> str:
        for item in (c.strip() for c in value.split(",")):
            if item:
                try:
                    ip_network(item, strict=False)
                except ValueError:
                    raise ValueError(f"{item!r} is not a CIDR network (e.g. 127.0.0.0/8)") from None
        return value

    @field_validator("webhook_ca_bundle")
    @classmethod
    def _ca_bundle(cls, value: str | None) -> str | None:
        if value and not Path(value).is_file():
            raise ValueError(f"{value} is not a readable file")
        return value

    @field_validator("dev_mode")
    @classmethod
    def _dev_mode(cls, value: bool, info: ValidationInfo) -> bool:
        if not value:
            return value
        database_url, base_url = info.data.get("database_url"), info.data.get("base_url")
        if database_url is not None and _scheme(database_url) in POSTGRESQL_SCHEMES:
            raise ValueError("refused on PostgreSQL: dev mode is for the local SQLite demo (`make run`) only")
        if base_url is not None and not is_loopback_url(base_url):
            raise ValueError(
                f"refused with MARKETSYNC_BASE_URL {base_url}: dev mode needs a loopback base URL "
                "(127.0.0.1, ::1 or localhost)"
            )
        return value

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return value.upper()

    @model_validator(mode="after")
    def _keys(self) -> Settings:
        # Configured keys are checked now; generated ones are checked when first read.
        if self.encryption_keys is not None:
            _ = self.encryption_keyring
        if self.secret_hash_key is not None:
            _ = self.hash_key
        return self

    @property
    def is_postgresql(self) -> bool:
        return _scheme(self.database_url) in POSTGRESQL_SCHEMES

    @cached_property
    def allowed_webhook_networks(self) -> list[IPv4Network | IPv6Network]:
        return [ip_network(c.strip(), strict=False) for c in self.webhook_allowed_networks.split(",") if c.strip()]

    @cached_property
    def _generated_keys(self) -> dict[str, str]:
        """Keys generated into var/ on first run when none are configured (SQLite only: one machine)."""
        if self.is_postgresql:
            raise MissingKeys(
                "On PostgreSQL, set MARKETSYNC_ENCRYPTION_KEYS and MARKETSYNC_SECRET_HASH_KEY: every process "
                "must share them (`marketsync admin keys generate` prints a new pair)."
            )
        path = self.var_dir / "keys.json"
        if not path.exists():
            _write_key_file(path)
        return _read_key_file(path)

    @cached_property
    def encryption_keyring(self) -> list[tuple[str, bytes]]:
        """(key id, 32-byte key) pairs; the first encrypts, all decrypt."""
        raw = self.encryption_keys or self._generated_keys["encryption_keys"]
        ring: list[tuple[str, bytes]] = []
        for index, item in enumerate(k.strip() for k in raw.split(",") if k.strip()):
            key_id, _, encoded = item.rpartition(":")
            key = _base64url(encoded)
            if key is None or len(key) != 32:
                raise ValueError("MARKETSYNC_ENCRYPTION_KEYS: every key must be 32 bytes, base64url (id:key,...)")
            key_id = key_id or f"k{index + 1}"
            if any(key_id == known for known, _ in ring):
                raise ValueError(f"MARKETSYNC_ENCRYPTION_KEYS: key id {key_id!r} appears twice")
            ring.append((key_id, key))
        if not ring:
            raise ValueError("MARKETSYNC_ENCRYPTION_KEYS is empty")
        return ring

    @cached_property
    def hash_key(self) -> bytes:
        raw = self.secret_hash_key or self._generated_keys["secret_hash_key"]
        key = _base64url(raw)
        if key is None or len(key) < 32:
            raise ValueError("MARKETSYNC_SECRET_HASH_KEY must be at least 32 bytes, base64url")
        return key


POSTGRESQL_SCHEMES = ("postgresql", "postgres")


def _scheme(database_url: str) -> str:
    return database_url.split(":", 1)[0].split("+", 1)[0].lower()


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 or the name localhost: a host only this machine reaches."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    return host is not None and is_loopback_host(host)


def _write_key_file(path: Path) -> None:
    """New keys at `path`, readable by this user only, written whole before the name appears: a process starting
    at the same moment either finds no file (and writes its own, which loses the race) or finds a complete one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = {
        "encryption_keys": "k1:" + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
        "secret_hash_key": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
    }
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(keys, fh)
        os.link(draft, path)  # fails if the name exists: the first process's keys are everyone's
    except FileExistsError:
        pass
    except OSError as exc:  # a file system without hard links (some network and host-shared mounts)
        if exc.errno not in _NO_HARD_LINKS:
            raise
        _write_in_place(path, keys)
    finally:
        draft.unlink(missing_ok=True)


# What os.link raises where the file system has no hard links: the keys are then written in place, as before 0334.
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV})


def _write_in_place(path: Path, keys: dict[str, str]) -> None:
    """The keys under their own name, O_EXCL: a process losing the race uses the winner's file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as fh:
        json.dump(keys, fh)


def _read_key_file(path: Path) -> dict[str, str]:
    """The generated keys; refused when anyone but their owner may read them (docs/decisions/0334): keys others
    can read are keys to rotate, not to keep using."""
    mode = path.stat().st_mode
    if mode & 0o077:
        raise ValueError(
            f"{path} holds the service's keys and is readable by others (mode {mode & 0o777:o}): "
            f"`chmod 600 {path}`, and rotate the keys if anyone else could have read them"
        )
    loaded: dict[str, str] = json.loads(path.read_text())
    return loaded


def _base64url(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, binascii.Error):
        return None
