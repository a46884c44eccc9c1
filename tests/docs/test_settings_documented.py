"""The README's settings table lists every setting, and nothing that is not one."""

from __future__ import annotations

import re

from marketsync.config import Settings
from tests.support.processes import REPO_ROOT


def test_every_setting_is_in_the_readme_table() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    documented = set(re.findall(r"^\| (MARKETSYNC_[A-Z0-9_]+) \|", readme, flags=re.MULTILINE))
    settings = {f"MARKETSYNC_{name.upper()}" for name in Settings.model_fields}
    assert settings - documented == set(), "settings missing from README's table"
    assert documented - settings == set(), "README documents settings that do not exist"
