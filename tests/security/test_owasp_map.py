"""The suite's map (README.md in this directory) names every OWASP API risk and only tests that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = Path(__file__).with_name("README.md").read_text(encoding="utf-8")


def test_every_risk_of_the_2023_list_is_mapped_to_tests() -> None:
    for number in range(1, 11):
        row = re.search(rf"^\| API{number} [^|]+\| (.+) \|$", MAP, re.MULTILINE)
        assert row is not None, f"API{number} is not in the map"
        assert "tests/" in row.group(1), f"API{number} names no test"


def test_every_test_the_map_names_exists() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", MAP)
    assert len(named) >= 30
    for path, test in named:
        source = (ROOT / path).read_text(encoding="utf-8")
        if test:
            assert re.search(rf"^(async )?def {test}\(", source, re.MULTILINE), f"{path}::{test} does not exist"
