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
    monkeypatch.setattr("marketsync.startup.configure_logging", lambda level="INFO": None)
    return tmp_path


def _run(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, result.stdout
    loaded: dict[str, object] = json.loads(lines[0])
    return loaded


def _site(result: dict[str, object], country: str) -> dict[str, object]:
    sites = result["Sites"]
    assert isinstance(sites, list)
    [site] = [s for s in sites if s["Country"] == country]
    assert isinstance(site, dict)
    return site


def test_import_reimport_and_file(cli_env: Path) -> None:
    # No site of P3 is known yet: the taxonomy goes to its home site.
    first = _run("admin", "taxonomy", "import", "--platform", "P3", "--size", "300", "--json")
    assert first["Platform"] == "P3" and [s["Country"] for s in first["Sites"]] == ["US"]
    us = _site(first, "US")
    assert us["Sequence"] == 1 and us["Added"] == us["Leaves"] and us["Unchanged"] is False
    same = _run("admin", "taxonomy", "import", "--platform", "P3", "--size", "300", "--json")
    # The same content is a re-import all the same: a new version, every schema under a new id (0392).
    assert _site(same, "US")["Unchanged"] is True and _site(same, "US")["Sequence"] == 2
    revised = _run("admin", "taxonomy", "import", "--platform", "P3", "--size", "300", "--revision", "2", "--json")
    changed = _site(revised, "US")
    assert changed["Sequence"] == 3 and isinstance(changed["Changed"], int) and changed["Changed"] >= 1

    # A FILE: export, edit one leaf's schema, re-import: exactly that leaf changes.
    file = cli_env / "p3.json"
    _run("admin", "taxonomy", "export", str(file), "--platform", "P3", "--size", "300", "--revision", "2", "--json")
    document = json.loads(file.read_text())
    tee = next(c for c in document["Categories"] if c["CategoryId"] == shipped.ANCHOR_IDS["P3"]["T-Shirts"])
    tee["Attributes"].append({"Code": "Fit", "Title": "Fit", "Type": "Text", "IsRequired": False})
    file.write_text(json.dumps(document))
    from_file = _site(_run("admin", "taxonomy", "import", "--platform", "P3", str(file), "--json"), "US")
    assert (from_file["Changed"], from_file["Added"], from_file["Removed"]) == (1, 0, 0)
    assert from_file["Source"] == "file:p3.json"


def test_each_site_is_loaded_on_its_own(cli_env: Path) -> None:
    """A taxonomy is per site (kind and country): --country loads one; without it every known site of the kind."""
    de = _run("admin", "taxonomy", "import", "--platform", "P1", "--country", "de", "--size", "300", "--json")
    assert [(s["Country"], s["Sequence"]) for s in de["Sites"]] == [("DE", 1)]
    account = _run("admin", "account", "create", "--name", "m", "--json")["AccountId"]
    _run("admin", "marketplace", "connect", "--account", str(account), "--platform", "P1", "--country", "FR", "--json")
    every = _run("admin", "taxonomy", "import", "--platform", "P1", "--size", "300", "--revision", "2", "--json")
    # DE (loaded) and FR (connected); UK is neither.
    assert [(s["Country"], s["Sequence"]) for s in every["Sites"]] == [("DE", 2), ("FR", 1)]
    result = CliRunner().invoke(app, ["admin", "taxonomy", "import", "--platform", "P1", "--country", "Germany"])
    assert result.exit_code == 1
    # Only the sites the kind serves (kinds.py), as connect: no P4 UK taxonomy nobody could ever use.
    unserved = CliRunner().invoke(app, ["admin", "taxonomy", "import", "--platform", "P4", "--country", "UK", "--json"])
    assert unserved.exit_code == 1
    assert json.loads(unserved.stdout)["errors"] == {"Country": ["P4 has no UK site; it serves FR, IT, ES."]}


def test_import_refuses_a_file_of_another_kind(cli_env: Path) -> None:
    file = cli_env / "p1.json"
    taxonomy.dump_file(shipped.generate("P1", 1, 300), file)
    result = CliRunner().invoke(app, ["admin", "taxonomy", "import", "--platform", "P2", str(file), "--json"])
    assert result.exit_code == 1
    assert "P1" in result.stdout
