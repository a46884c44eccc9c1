"""The SDK README's Python snippets type-check against the client, so a renamed method or field cannot linger in
the first page an integrator reads."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from mypy import api as mypy

SDK = Path(__file__).resolve().parents[1]

# Names the snippets use without defining them: what an integrator's own code would hold at that point.
PRELUDE = """\
from queue import Queue
from typing import Any

from marketsync_client import webhooks

item_id: str = ""
order_id: str = ""
subscription_id: str = ""
secret: str = ""
request_headers: dict[str, str] = {}
raw_body: bytes = b""
queue: Queue[Any] = Queue()
erp: Any = None
delivery: webhooks.Delivery


def readme() -> None:
"""


def snippets_module(readme: str) -> str:
    """Every ```python block of the README, in order, in one function (later blocks use earlier blocks' names).

    A block that answers a request (a top-level `return`) becomes a function of its own: mypy would skip every
    block after an unconditional return as unreachable."""
    body = []
    for number, block in enumerate(re.findall(r"```python\n(.*?)```", readme, re.S)):
        if re.search(r"^return\b", block, re.M):
            block = f"def handler_{number}() -> object:\n" + textwrap.indent(block, "    ")
        body.append(textwrap.indent(block, "    "))
    return PRELUDE + "\n".join(body)


def test_the_sdk_readme_snippets_type_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (SDK / "README.md").read_text()
    module = tmp_path / "readme_snippets.py"
    module.write_text(snippets_module(readme))
    assert readme.count("```python") >= 8, "the README's tour lost its snippets"

    monkeypatch.setenv("MYPYPATH", str(SDK))  # the editable install's import hook is invisible to mypy
    report, errors, status = mypy.run(["--strict", "--no-incremental", str(module)])

    assert status == 0, report + errors
