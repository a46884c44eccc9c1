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


# -- imports: one direction, no cycles, connectors behind one boundary (issue 39) ---------------------------------

DOMAINS = ("auth", "catalog", "inventory", "jobs", "marketplaces", "orders", "people", "webhooks")
# Marketplace implementations are imported by the composition roots only: marketplaces/registry.py registers their
# connectors, cli.py adds the commands an implementation brings (the sandbox's `marketsync sandbox ...`).
COMPOSITION_ROOTS = {"marketplaces/registry.py", "cli.py"}
# The edges: they call services, never repositories (DESIGN.md section 3: endpoints, pages, commands -> service).
EDGES = re.compile(r"^(app\.py|cli\.py|demo\.py|console/.*|[a-z]+/endpoints\.py|.*/commands\.py)$")
# Vocabulary and pure rules: nothing with I/O, nothing that reaches a marketplace.
PURE = re.compile(r"^([a-z]+/([a-z]+/)?(rules|schemas|payloads|types)\.py|catalog/taxonomy/__init__\.py)$")
IO_MODULES = re.compile(
    r"^marketsync\.(db|runtime|[a-z.]+\.(repository|service|outbox|tasks|engine|delivery|connector|feeds|events|state"
    r"|publish|app_fields|mirror))$"
)


def _module_name(relative: str) -> str:
    parts = relative.removesuffix(".py").split("/")
    return ".".join(["marketsync", *(parts[:-1] if parts[-1] == "__init__" else parts)])


_KNOWN = {_module_name(path.relative_to(PACKAGE).as_posix()) for path in PACKAGE.rglob("*.py")}


def _imports(relative: str, tree: ast.Module) -> set[str]:
    """The marketsync modules a module imports by name (TYPE_CHECKING imports included: they are edges too)."""
    package = _module_name(relative).rsplit(".", 0 if relative.endswith("__init__.py") else 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("marketsync"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])]
                )
            if not base.startswith("marketsync"):
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in _KNOWN else base)
    return found


def _graph() -> dict[str, set[str]]:
    return {
        relative: _imports(relative, tree)
        for relative, tree in _modules()
        if not relative.startswith("migrations/versions/")
    }


def test_kit_imports_nothing_else_of_marketsync() -> None:
    offenders = {
        relative: sorted(name for name in imported if not name.startswith("marketsync.kit"))
        for relative, imported in _graph().items()
        if relative.startswith("kit/")
    }
    assert {k: v for k, v in offenders.items() if v} == {}, "kit/ is a leaf: move the module where it belongs"


def test_only_the_composition_roots_import_a_marketplace_implementation() -> None:
    implementations = sorted(
        f"marketsync.marketplaces.{path.parent.name}" for path in (PACKAGE / "marketplaces").glob("*/__init__.py")
    )
    assert "marketsync.marketplaces.sandbox" in implementations
    offenders = {}
    for relative, imported in _graph().items():
        own = next((i for i in implementations if _module_name(relative).startswith(i)), None)
        reached = sorted(
            name for name in imported for i in implementations if (name == i or name.startswith(i + ".")) and i != own
        )
        if reached and relative not in COMPOSITION_ROOTS:
            offenders[relative] = reached
    assert offenders == {}, "go through marketplaces/connector.py (Connector, TaxonomySource, Marketplace)"


def test_the_database_machinery_stays_behind_marketsync_db() -> None:
    offenders = {
        relative: sorted(name for name in imported if name.startswith("marketsync.db._"))
        for relative, imported in _graph().items()
        if not relative.startswith("db/")
    }
    assert {k: v for k, v in offenders.items() if v} == {}, "import it from marketsync.db"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    edges = {
        _module_name(relative): {name for name in imported if name in _KNOWN} for relative, imported in graph.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == [], "a cycle between modules: one of them imports upwards"


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = {"a.py": {"marketsync.b"}, "b.py": {"marketsync.a"}, "c.py": {"marketsync.a"}}
    known = set(_KNOWN)
    _KNOWN.update({"marketsync.a", "marketsync.b", "marketsync.c"})
    try:
        assert _cycles(graph) == [["marketsync.a", "marketsync.b"]]
    finally:
        _KNOWN.clear()
        _KNOWN.update(known)


def test_edges_call_services_not_repositories() -> None:
    offenders = {
        relative: sorted(name for name in imported if name.endswith(".repository"))
        for relative, imported in _graph().items()
        if EDGES.match(relative)
    }
    assert {k: v for k, v in offenders.items() if v} == {}, "endpoints, pages, commands and the demo call services"


def test_a_domain_uses_another_domains_service_not_its_repository() -> None:
    offenders = {}
    for relative, imported in _graph().items():
        domain = relative.split("/")[0]
        if domain not in DOMAINS:
            continue
        foreign = sorted(
            name for name in imported if name.endswith(".repository") and not name.startswith(f"marketsync.{domain}.")
        )
        if foreign:
            offenders[relative] = foreign
    assert offenders == {}, "only services talk to other domains (through their service)"


def test_rules_and_vocabulary_import_nothing_with_io() -> None:
    offenders = {
        relative: sorted(name for name in imported if IO_MODULES.match(name))
        for relative, imported in _graph().items()
        if PURE.match(relative)
    }
    assert {k: v for k, v in offenders.items() if v} == {}, "rules, schemas and payload types stay pure"


def test_the_taxonomy_knows_no_listing() -> None:
    """catalog/taxonomy/ (import, search, schema) stands alone; catalog/listings/ (create, publish, the app's fields)
    builds on it (a create is validated against a schema), never the other way round (decision 0441)."""
    offenders = {
        relative: sorted(name for name in imported if name.startswith("marketsync.catalog.listings"))
        for relative, imported in _graph().items()
        if relative.startswith("catalog/taxonomy/")
    }
    assert {k: v for k, v in offenders.items() if v} == {}, "the listings import the taxonomy, not the reverse"


# -- hand-written SQL of two dialects: named statements, in a domain's statements.py (docs/decisions/0445) --------

# The statement modules, and db/ (DriverSql writes each driver's placeholders). Migrations are history: each writes
# its DDL per dialect where it was made.
DIALECT_TEXT_ALLOWED = re.compile(r"^(.*/)?statements\.py$|^db/|^migrations/")
_DIALECT_NAME = re.compile(r"(^|_)(SQLITE|POSTGRES|POSTGRESQL|PG)(_|$)")
_DIALECT_TEST = re.compile(r"postgres|sqlite|dialect", re.IGNORECASE)


def _is_text(node: ast.expr) -> bool:
    """A string, an f-string, a sum of them, or a tuple of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _is_text(node.left) and _is_text(node.right)
    return isinstance(node, ast.Tuple) and all(_is_text(element) for element in node.elts)


def _dialect_texts(tree: ast.Module) -> list[int]:
    """Lines that hold SQL text of one dialect outside a statement module: a `_SQLITE_…`/`…_POSTGRES` string
    constant, or a choice between two texts by dialect (`"$1" if postgres else "?"`)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            named = [target.id for target in node.targets if isinstance(target, ast.Name)]
            if _is_text(node.value) and not isinstance(node.value, ast.Tuple):
                lines += [node.lineno] if any(_DIALECT_NAME.search(name.upper()) for name in named) else []
        elif isinstance(node, ast.IfExp) and _is_text(node.body) and _is_text(node.orelse):
            lines += [node.lineno] if _DIALECT_TEST.search(ast.unparse(node.test)) else []
    return sorted(set(lines))


def test_sql_text_of_one_dialect_sits_in_a_statement_module() -> None:
    offenders = {
        relative: lines
        for relative, tree in _modules()
        if not DIALECT_TEXT_ALLOWED.match(relative) and (lines := _dialect_texts(tree))
    }
    assert offenders == {}, "name the statement, with both texts, in the domain's statements.py"


def test_the_dialect_text_rule_catches_constants_and_choices() -> None:
    assert _dialect_texts(ast.parse("_LOCK_SQLITE = 'SELECT 1 FROM t WHERE id IN ({marks})'\n")) == [1]
    assert _dialect_texts(ast.parse("_POSTGRES_TIME_TEXT = 'YYYY-MM-DD'\n")) == [1]
    assert _dialect_texts(ast.parse("mark = '$1' if driver.postgres else '?'\n")) == [1]
    assert _dialect_texts(ast.parse("x = ('$1', '$2') if dialect_of(s) == 'postgresql' else ('?', '?')\n")) == [1]
    assert _dialect_texts(ast.parse("_POSTGRES_PREPARED_CONNECTIONS = 2\nx = 'a' if ready else 'b'\n")) == []
    assert _dialect_texts(ast.parse("POSTGRESQL_SCHEMES = ('postgresql', 'postgres')\n")) == []  # not SQL text
