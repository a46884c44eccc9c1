"""The SDK on a package index's terms (docs/decisions/0423): it builds with `python -m build`, `twine check` passes,
the wheel carries its types (`py.typed`) and metadata, installs into a clean venv and imports there; its version
follows the API's. Nothing is downloaded and nothing is published: the build uses this venv's setuptools
(--no-isolation), the clean venv installs the wheel alone (--no-index --no-deps) and borrows httpx and pydantic from
this venv's site-packages through a path file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import marketsync_client
import pytest

from tests.support.processes import REPO_ROOT

SDK = REPO_ROOT / "sdk" / "python"
OFFLINE = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PATH": "/usr/bin:/bin"}


def _run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=OFFLINE, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel (built from the sdist, as `python -m build` does), from a copy of sdk/python."""
    work = tmp_path_factory.mktemp("sdk-package")
    source = work / "src"
    shutil.copytree(SDK, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "dist", "__pycache__"))
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", work / "dist", source, cwd=work)
    return work / "dist"


def _one(dist: Path, pattern: str) -> Path:
    [found] = dist.glob(pattern)
    return found


@pytest.mark.slow
def test_the_sdk_builds_and_twine_check_passes(dist: Path) -> None:
    version = marketsync_client.__version__
    wheel = _one(dist, f"marketsync_client-{version}-py3-none-any.whl")
    sdist = _one(dist, f"marketsync_client-{version}.tar.gz")
    checked = _run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist, cwd=dist)
    assert checked.stdout.count("PASSED") == 2, checked.stdout

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = Parser().parsestr(archive.read(f"marketsync_client-{version}.dist-info/METADATA").decode())
    assert "marketsync_client/py.typed" in names and "marketsync_client/webhooks.py" in names
    assert not any(name.startswith(("tests/", "examples/")) for name in names)
    assert metadata["Name"] == "marketsync-client" and metadata["Version"] == version
    assert metadata["Requires-Python"] == ">=3.11"
    assert sorted(metadata.get_all("Requires-Dist")) == ["httpx>=0.27", "pydantic>=2.8"]
    classifiers = metadata.get_all("Classifier")
    assert {"Typing :: Typed", "Programming Language :: Python :: 3.13", "Development Status :: 4 - Beta"} <= set(
        classifiers
    )
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "# marketsync-client" in metadata.get_payload()  # the README is the index page

    with tarfile.open(sdist) as archive:
        members = {member.name.split("/", 1)[1] for member in archive.getmembers() if "/" in member.name}
    assert {"CHANGELOG.md", "README.md", "pyproject.toml", "marketsync_client/py.typed"} <= members


@pytest.mark.slow
def test_the_wheel_installs_and_imports_in_a_clean_venv(dist: Path, tmp_path: Path) -> None:
    version = marketsync_client.__version__
    venv = tmp_path / "clean"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)  # pip comes from ensurepip's own wheel: offline
    python = venv / "bin" / "python"
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).stdout.strip()
    )
    # httpx, pydantic and their dependencies, read from this venv (its path files, the editable SDK's among them,
    # are not run from there: the SDK comes only from the wheel).
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(python, "-m", "pip", "install", "--no-index", "--no-deps", _one(dist, "*.whl"), cwd=tmp_path)

    probe = (
        "import importlib.metadata, json, pathlib, marketsync_client\n"
        "from marketsync_client import AsyncClient, Client, webhooks\n"
        "from marketsync_client.models import SentTestEvent\n"
        "package = pathlib.Path(marketsync_client.__file__).parent\n"
        "print(json.dumps({'file': str(package), 'version': marketsync_client.__version__,\n"
        "    'installed': importlib.metadata.version('marketsync-client'), 'typed': (package / 'py.typed').exists(),\n"
        "    'client': Client.__name__, 'header': webhooks.HEADER_TEST}))\n"
    )
    # -I: neither the working directory nor PYTHONPATH can put the source tree on the path.
    seen = json.loads(_run(python, "-I", "-c", probe, cwd=tmp_path).stdout)
    assert Path(seen["file"]).is_relative_to(venv), seen  # the wheel's copy, not the repository's
    assert seen["version"] == seen["installed"] == version and seen["typed"] is True
    assert seen["client"] == "Client" and seen["header"] == "X-SVC-Test"


def test_the_sdk_version_follows_the_apis() -> None:
    """MAJOR.MINOR of the SDK is the API's `info.version` (the service's version); PATCH is the SDK's own."""
    from bench.conformance.openapi_client import document

    api_version = document()["info"]["version"]
    assert marketsync_client.__version__.split(".")[:2] == api_version.split(".")[:2]
    changelog = (SDK / "CHANGELOG.md").read_text()
    assert f"## [{marketsync_client.__version__}] - API {'.'.join(api_version.split('.')[:2])}" in changelog
