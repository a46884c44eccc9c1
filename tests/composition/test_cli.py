"""The operator interface of DESIGN.md section 5 that the foundation covers, with --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from marketsync.auth.scopes import ALL_SCOPES
from marketsync.cli import app
from tests.conftest import TEST_ENCRYPTION_KEYS, TEST_HASH_KEY


@pytest.fixture
def invoke(database_url: str, tmp_path: Path) -> Any:
    env = {
        "MARKETSYNC_DATABASE_URL": database_url,
        "MARKETSYNC_VAR_DIR": str(tmp_path / "var"),
        "MARKETSYNC_ENCRYPTION_KEYS": TEST_ENCRYPTION_KEYS,
        "MARKETSYNC_SECRET_HASH_KEY": TEST_HASH_KEY,
    }

    def run(*args: str, expect: int = 0) -> dict[str, Any]:
        result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
        assert result.exit_code == expect, result.output
        lines = [line for line in result.stdout.splitlines() if line.strip()]
        assert len(lines) == 1, f"--json must print exactly one JSON object: {result.stdout!r}"
        parsed: dict[str, Any] = json.loads(lines[0])
        return parsed

    return run


def test_db_upgrade_is_idempotent(invoke: Any) -> None:
    first, second = invoke("db", "upgrade", "--json"), invoke("db", "upgrade", "--json")
    assert first == second
    assert first["Database"] in ("sqlite", "postgresql") and first["Revision"]


def test_account_credential_and_marketplace_commands(invoke: Any) -> None:
    account = invoke("admin", "account", "create", "--name", "acme", "--json")
    assert set(account) == {"AccountId"}
    duplicate = invoke("admin", "account", "create", "--name", "acme", "--json", expect=1)
    assert duplicate["error"] == "validation-failed"

    credential = invoke(
        "admin", "credential", "create", "--account", account["AccountId"], "--name", "erp",
        "--scopes", "OrdersRead InventoryWrite", "--json",
    )  # fmt: skip
    assert set(credential) == {"CredentialId", "client_id", "client_secret", "Scopes"}
    assert credential["Scopes"] == ["OrdersRead", "InventoryWrite"]
    assert len(credential["client_secret"]) >= 43  # 256 bits, base64url

    bad_scope = invoke(
        "admin", "credential", "create", "--account", account["AccountId"], "--name", "x", "--scopes", "Root", "--json",
        expect=1,
    )  # fmt: skip
    assert "scopes" in bad_scope["errors"]

    connected = invoke(
        "admin",
        "marketplace",
        "connect",
        "--account",
        account["AccountId"],
        "--platform",
        "P1",
        "--country",
        "UK",
        "--json",
    )
    assert connected["Platform"] == "P1" and connected["Country"] == "UK" and connected["MarketplaceId"]
    ids = ("--account", account["AccountId"], "--marketplace", connected["MarketplaceId"])
    assert invoke("admin", "marketplace", "pause", *ids, "--json")["State"] == "Paused"
    assert invoke("admin", "marketplace", "resume", *ids, "--json")["State"] == "Active"
    assert invoke("admin", "marketplace", "disconnect", *ids, "--json")["Disconnected"] is True
    unknown_platform = invoke(
        "admin", "marketplace", "connect", "--account", account["AccountId"], "--platform", "P9", "--country", "UK",
        "--json", expect=1,
    )  # fmt: skip
    assert "Platform" in unknown_platform["errors"]
    unserved = invoke(
        "admin", "marketplace", "connect", "--account", account["AccountId"], "--platform", "P3", "--country", "DE",
        "--json", expect=1,
    )  # fmt: skip
    assert unserved["errors"] == {"Country": ["P3 has no DE site; it serves US, UK."]}

    deleted = invoke(
        "admin", "credential", "delete", "--account", account["AccountId"], "--credential", credential["CredentialId"],
        "--json",
    )  # fmt: skip
    assert deleted["Deleted"] is True


@pytest.mark.slow
def test_demo_is_idempotent_and_prints_credentials(invoke: Any) -> None:
    first = invoke("demo", "--json")
    second = invoke("demo", "--json")
    assert set(first) >= {"AccountId", "client_id", "client_secret", "Scopes", "Marketplaces"}
    assert first["AccountId"] == second["AccountId"]
    assert first["client_secret"] != second["client_secret"]  # a new secret each run
    assert first["Scopes"] == list(ALL_SCOPES)
    assert [(m["Platform"], m["Country"]) for m in first["Marketplaces"]] == [
        ("P1", "UK"), ("P2", "DE"), ("P3", "US"), ("P4", "FR"),
    ]  # fmt: skip
    assert [m["MarketplaceId"] for m in first["Marketplaces"]] == [m["MarketplaceId"] for m in second["Marketplaces"]]
