"""`marketsync admin taxonomy import|export` (SQLite only: the CLI opens its own runtime)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from marketsync.catalog import taxonomy
from marketsync.cli import app
from marketsync.marketplaces.sandbox import taxonomies as shipped


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MARKETSYNC_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("MARKETSYNC_VAR_DIR", str(tmp_path / "var"))
    # The CLI would bind structlog to CliRunner's short-lived streams, breaking later tests' logging.
    monkeypatch.setattr("marketsync.kit.cli.configure_logging", lambda level="INFO": None)
    return tmp_path


def _run(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, result.stdout
    loaded: dict[str, object] = json.loads(lines[0])
    return loaded


def test_import_reimport_and_file(cli_env: Path) -> None:
    first = _run("admin", "taxonomy", "import", "--platform", "P3", "--size", "300", "--json")
    assert first["Sequence"] == 1 and first["Added"] == first["Leaves"] and first["Unchanged"] is False
    same = _run("admin", "taxonomy", "import", "--platform", "P3", "--size", "300", "--json")
    assert same["Unchanged"] is True
    revised = _run("admin", "taxonomy", "import", "--platform", "P3", "--size", "300", "--revision", "2", "--json")
    assert revised["Sequence"] == 2 and isinstance(revised["Changed"], int) and revised["Changed"] >= 1

    # A FILE: export, edit one leaf's schema, re-import: exactly that leaf changes.
    file = cli_env / "p3.json"
    _run("admin", "taxonomy", "export", str(file), "--platform", "P3", "--size", "300", "--revision", "2", "--json")
    document = json.loads(file.read_text())
    tee = next(c for c in document["Categories"] if c["CategoryId"] == shipped.ANCHOR_IDS["P3"]["T-Shirts"])
    tee["Attributes"].append({"Code": "Fit", "Title": "Fit", "Type": "Text", "IsRequired": False})
    file.write_text(json.dumps(document))
    from_file = _run("admin", "taxonomy", "import", "--platform", "P3", str(file), "--json")
    assert (from_file["Changed"], from_file["Added"], from_file["Removed"]) == (1, 0, 0)
    assert from_file["Source"] == "file:p3.json"


def test_import_refuses_a_file_of_another_kind(cli_env: Path) -> None:
    file = cli_env / "p1.json"
    taxonomy.dump_file(shipped.generate("P1", 1, 300), file)
    result = CliRunner().invoke(app, ["admin", "taxonomy", "import", "--platform", "P2", str(file), "--json"])
    assert result.exit_code == 1
    assert "P1" in result.stdout
