"""The repository's documents stay true: every decision record has a status and is indexed, and nothing links
outside the repository (a user who clones it has only the repository)."""

from __future__ import annotations

import re

from tests.support.processes import REPO_ROOT

DECISIONS = REPO_ROOT / "docs" / "decisions"


def test_every_decision_has_a_status_line_and_an_index_entry() -> None:
    index = (DECISIONS / "README.md").read_text()
    records = sorted(p for p in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert records
    for record in records:
        head = record.read_text().splitlines()[:6]
        assert any(re.match(r"Status: (Accepted|Superseded)", line) for line in head), record.name
        assert f"]({record.name})" in index, f"{record.name} missing from docs/decisions/README.md"


def test_no_document_links_outside_the_repository() -> None:
    documents = [REPO_ROOT / "README.md", *REPO_ROOT.joinpath("docs").rglob("*.md")]
    for document in documents:
        text = document.read_text()
        assert "../shared" not in text, document
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            assert (document.parent / target).resolve().exists(), f"{document}: broken link {target}"
