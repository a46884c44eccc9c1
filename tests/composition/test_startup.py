"""Every process checks its settings, its database and its keys at start: one clear line and exit 2, never a
traceback (`marketsync` run as an operator runs it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from marketsync.runtime import Runtime
from tests.support.processes import REPO_ROOT, process_env


def _run(env: dict[str, str], *args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "marketsync", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def _clean_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env.update(values)
    return env


def test_a_bad_setting_names_the_variable(tmp_path: Path) -> None:
    env = _clean_env(
        MARKETSYNC_DATABASE_URL=f"sqlite:///{tmp_path}/x.db",
        MARKETSYNC_RATE_LIMIT="garbage",
        MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS="not-a-cidr",
    )
    done = _run(env, "db", "upgrade")
    assert done.returncode == 2
    assert "MARKETSYNC_RATE_LIMIT" in done.stderr and "MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS" in done.stderr
    assert "Traceback" not in done.stderr
    as_json = _run(env, "db", "upgrade", "--json")
    body = orjson.loads(as_json.stdout)
    assert as_json.returncode == 2 and body["error"] == "startup-failed" and "MARKETSYNC_RATE_LIMIT" in body["title"]


def test_an_unreachable_database_is_one_line(tmp_path: Path) -> None:
    env = _clean_env(
        MARKETSYNC_DATABASE_URL="postgresql://root:hunter2@127.0.0.1:1/none",
        MARKETSYNC_ENCRYPTION_KEYS="a1:" + "A" * 43,
        MARKETSYNC_SECRET_HASH_KEY="B" * 43,
    )
    done = _run(env, "admin", "account", "create", "--name", "x")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert done.stderr.startswith("error: cannot use the database postgresql://root:***@127.0.0.1:1/none")
    assert "hunter2" not in done.stderr


def test_postgresql_requires_configured_keys() -> None:
    env = _clean_env(MARKETSYNC_DATABASE_URL="postgresql://root@127.0.0.1:5432/test")
    done = _run(env, "db", "upgrade")
    assert done.returncode == 2
    assert "MARKETSYNC_ENCRYPTION_KEYS" in done.stderr and "MARKETSYNC_SECRET_HASH_KEY" in done.stderr


def test_generated_keys_from_another_directory_are_refused(tmp_path: Path) -> None:
    """The probe's case: a command run from another directory used to mint keys of its own."""
    database = tmp_path / "shared.db"
    first, second = tmp_path / "here", tmp_path / "elsewhere"
    first.mkdir(), second.mkdir()
    env = _clean_env(MARKETSYNC_DATABASE_URL=f"sqlite:///{database}")
    assert _run(env, "admin", "account", "create", "--name", "a", cwd=first).returncode == 0
    refused = _run(env, "admin", "account", "create", "--name", "b", cwd=second)
    assert refused.returncode == 2
    assert "MARKETSYNC_SECRET_HASH_KEY is not the key this database was first used with" in refused.stderr


async def test_keys_check_and_mismatch_through_the_cli(rt: Runtime) -> None:
    env = process_env(rt)
    checked = _run(env, "admin", "keys", "check", "--json")
    assert checked.returncode == 0, checked.stderr
    assert set(orjson.loads(checked.stdout)["Matched"]) == {"hash", "encryption:t1"}
    mismatch = _run({**env, "MARKETSYNC_SECRET_HASH_KEY": "C" * 43}, "admin", "keys", "check", "--json")
    assert mismatch.returncode == 2
    assert orjson.loads(mismatch.stdout)["error"] == "startup-failed"


def test_keys_generate_prints_a_usable_pair(tmp_path: Path) -> None:
    generated = _run(_clean_env(), "admin", "keys", "generate", "--json")
    pair = orjson.loads(generated.stdout)
    env = _clean_env(MARKETSYNC_DATABASE_URL=f"sqlite:///{tmp_path}/k.db", **pair)
    assert _run(env, "db", "upgrade").returncode == 0


async def test_with_migrations_off_an_old_schema_is_refused(tmp_path: Path) -> None:
    env = _clean_env(
        MARKETSYNC_DATABASE_URL=f"sqlite:///{tmp_path}/new.db",
        MARKETSYNC_MIGRATE_ON_START="false",
        MARKETSYNC_VAR_DIR=str(tmp_path / "var"),  # the keys it mints, not in the repository's var/
    )
    done = _run(env, "worker")
    assert done.returncode == 2
    assert "run `marketsync db upgrade` first" in done.stderr


def test_generated_keys_readable_by_others_are_refused(tmp_path: Path) -> None:
    """A keys file restored or copied with a loose mode (0644) was used as it was: now the process will not start."""
    var = tmp_path / "var"
    env = _clean_env(MARKETSYNC_DATABASE_URL=f"sqlite:///{tmp_path}/k.db", MARKETSYNC_VAR_DIR=str(var))
    assert _run(env, "db", "upgrade").returncode == 0
    key_file = var / "keys.json"
    assert key_file.stat().st_mode & 0o777 == 0o600
    key_file.chmod(0o644)
    refused = _run(env, "db", "upgrade")
    assert refused.returncode == 2
    assert "readable by others (mode 644)" in refused.stderr and "chmod 600" in refused.stderr
    assert "Traceback" not in refused.stderr and refused.stderr.strip().count("\n") == 0
    assert key_file.read_bytes() not in refused.stderr.encode()
    key_file.chmod(0o600)
    assert _run(env, "db", "upgrade").returncode == 0


def test_a_process_losing_the_race_to_mint_keys_uses_the_winners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes starting at once both see no keys file; the first writes it. The second used to fail on its
    O_EXCL open (a traceback); it now uses the first one's keys. The file appears complete and 0600 (written under
    another name, then linked), so a third process never reads it half-written."""
    from marketsync.config import Settings

    def settings() -> Settings:
        return Settings(database_url=f"sqlite:///{tmp_path}/k.db", var_dir=tmp_path / "var")

    first = settings()
    winner = first.hash_key, first.encryption_keyring
    exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self: False if self.name == "keys.json" else exists(self))
    second = settings()
    assert (second.hash_key, second.encryption_keyring) == winner
    assert sorted(p.name for p in (tmp_path / "var").iterdir()) == ["keys.json"]
    assert (tmp_path / "var" / "keys.json").stat().st_mode & 0o777 == 0o600


def test_keys_are_minted_where_the_file_system_has_no_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some mounts (network shares, host-shared volumes) refuse os.link with EPERM: the first start then wrote
    nothing and failed with a traceback. The keys are written in place there, 0600, as before 0334."""
    import errno
    import os

    from marketsync.config import Settings

    def no_link(source: object, target: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    first = Settings(database_url=f"sqlite:///{tmp_path}/k.db", var_dir=tmp_path / "var")
    assert first.hash_key
    assert sorted(p.name for p in (tmp_path / "var").iterdir()) == ["keys.json"]
    assert (tmp_path / "var" / "keys.json").stat().st_mode & 0o777 == 0o600
    again = Settings(database_url=f"sqlite:///{tmp_path}/k.db", var_dir=tmp_path / "var")
    assert (again.hash_key, again.encryption_keyring) == (first.hash_key, first.encryption_keyring)
