"""Architecture rules the code must keep (issue 11): no hidden imports, one owner of the jobs table, a connector
registry that knows no implementation. Read from the source with `ast`, so they hold for every module."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "marketsync"
# The documented task-module registry: workers import each domain's tasks module (and plugins named in
# MARKETSYNC_TASK_MODULES) by name, so a plugin needs no edit of the service.
DYNAMIC_IMPORT_ALLOWED = {"jobs/registry.py"}
JOBS_TABLE_OWNERS = ("jobs/", "models/", "migrations/")
_JOBS_SQL = re.compile(r"\b(from|into|update|join)\s+jobs\b", re.IGNORECASE)


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        yield relative, ast.parse(path.read_text(), filename=relative)


def _dynamic_imports(tree: ast.Module) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__"):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "importlib" and node.names[0].name == "import_module":
            lines.append(node.lineno)
    return lines


def test_no_module_imports_another_through_importlib() -> None:
    offenders = {
        relative: lines
        for relative, tree in _modules()
        if relative not in DYNAMIC_IMPORT_ALLOWED and (lines := _dynamic_imports(tree))
    }
    assert offenders == {}, "hidden imports (import them statically, or pass what is needed as a parameter)"


def test_the_dynamic_import_rule_catches_a_hidden_import() -> None:
    tree = ast.parse("import importlib\nservice = importlib.import_module('marketsync.orders.service')\n")
    assert _dynamic_imports(tree) == [2]
    assert _dynamic_imports(ast.parse("x = __import__('marketsync.catalog')\n")) == [1]


def _jobs_table_references(tree: ast.Module) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("marketsync.models"):
            if any(alias.name in ("Job", "jobs") for alias in node.names):
                lines.append(node.lineno)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and _JOBS_SQL.search(node.value)) or (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Job"
        ):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_only_the_jobs_package_touches_the_jobs_table() -> None:
    offenders = {
        relative: lines
        for relative, tree in _modules()
        if not relative.startswith(JOBS_TABLE_OWNERS) and (lines := _jobs_table_references(tree))
    }
    assert offenders == {}, "use marketsync.jobs.service / JobRun instead of the jobs table"


def test_the_jobs_table_rule_catches_each_kind_of_reference() -> None:
    assert _jobs_table_references(ast.parse("from marketsync.models import Job, Listing\n")) == [1]
    assert _jobs_table_references(ast.parse("q = 'UPDATE jobs SET status = 1'\n")) == [1]
    assert _jobs_table_references(ast.parse("x = Job.status\n")) == [1]
    assert _jobs_table_references(ast.parse("q = 'select 1 from jobs_archive'\n")) == []


def test_the_connector_interface_knows_no_implementation() -> None:
    source = (PACKAGE / "marketplaces" / "connector.py").read_text()
    assert "sandbox" not in "".join(
        line for line in source.splitlines() if line.lstrip().startswith(("import ", "from "))
    )


def test_no_test_module_imports_another_test_module() -> None:
    tests_root = PACKAGE.parent / "tests"
    offenders = []
    for path in sorted(tests_root.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            imported = node.module if isinstance(node, ast.ImportFrom) and node.module else ""
            if imported.startswith("tests.") and imported.rsplit(".", 1)[-1].startswith("test_"):
                offenders.append(f"{path.relative_to(tests_root)}: {imported}")
    assert offenders == [], "shared test code belongs in tests/support/ or the domain's support.py"
