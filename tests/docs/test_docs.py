"""The repository's documents stay true: every decision record has a status and is indexed, the tests a current
record names exist, and nothing links outside the repository (a user who clones it has only the repository)."""

from __future__ import annotations

import re

from tests.support.processes import REPO_ROOT

DECISIONS = REPO_ROOT / "docs" / "decisions"
# `tests/x/test_y.py`, `sdk/python/tests/test_z.py`, then `::test_name` (of the file named last).
_TEST_REFERENCE = re.compile(r"(?<![\w/])((?:sdk/python/)?tests/[\w/]+\.py)|::(test_\w+)")


def test_every_decision_has_a_status_line_and_an_index_entry() -> None:
    index = (DECISIONS / "README.md").read_text()
    records = sorted(p for p in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert records
    for record in records:
        head = record.read_text().splitlines()[:6]
        assert any(re.match(r"Status: (Accepted|Superseded|Rejected)", line) for line in head), record.name
        assert f"]({record.name})" in index, f"{record.name} missing from docs/decisions/README.md"


def test_every_test_a_current_decision_names_exists() -> None:
    """A closing note cites a decision's tests: a test moved or renamed since must not leave it citing nothing
    (0390, 0391 and 0393 named tests/sdk/ and tests/test_openapi_document.py after the layout had moved them)."""
    for record in sorted(DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md")):
        text = record.read_text()
        if re.search(r"^Status: Superseded", text, re.M):
            continue  # history: it may name tests of what was replaced since
        named = None
        for file_name, test_name in _TEST_REFERENCE.findall(text):
            if file_name:
                named = REPO_ROOT / file_name
                assert named.is_file(), f"{record.name} names {file_name}, which is not there"
            else:
                assert named is not None, f"{record.name} names ::{test_name} before any test file"
                assert re.search(rf"def {test_name}\(", named.read_text()), f"{record.name}: {named.name}::{test_name}"


def test_no_document_links_outside_the_repository() -> None:
    documents = [REPO_ROOT / "README.md", *REPO_ROOT.joinpath("docs").rglob("*.md")]
    for document in documents:
        text = document.read_text()
        assert "../shared" not in text, document
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            assert (document.parent / target).resolve().exists(), f"{document}: broken link {target}"
