"""A client generated from /openapi.json by a standard generator type-checks, calls to every operation included.

    python -m bench.conformance.openapi_client [--call]   # or: make openapi-client

1. Builds the service's OpenAPI document (the app's own `openapi()`, no server or database needed).
2. Generates a client with openapi-python-client (pinned below) in its own venv under var/openapi-client/: the
   generator pins typer below the service's, so it is kept out of requirements.lock (docs/decisions/0228).
3. Type-checks the generated package and bench/conformance/openapi_client_calls.py (one typed call to every
   operation, sync and async, plus reading the typed fields an integrator reads) with the project's mypy in --strict
   mode, resolving the generated code's dependencies in that venv.
4. With --call, runs those calls against `marketsync serve` on a fresh demo tenant (loopback only).
Prints one JSON object: the tool versions, the files generated, mypy's verdict and the seconds each step took.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "var" / "openapi-client"
GENERATOR = "openapi-python-client==0.29.1"
STUBS = "types-python-dateutil"  # the generated code parses timestamps with python-dateutil
PACKAGE = "marketsync_api"
CALLS = Path(__file__).with_name("openapi_client_calls.py")


def document() -> dict[str, Any]:
    from marketsync.app import create_app
    from marketsync.config import Settings
    from marketsync.marketplaces.registry import compose_connectors
    from marketsync.runtime import Runtime

    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(
            database_url=f"sqlite:///{scratch}/unused.db",
            var_dir=Path(scratch),
            encryption_keys="k1:" + base64.urlsafe_b64encode(b"k" * 32).decode(),
            secret_hash_key=base64.urlsafe_b64encode(b"h" * 32).decode(),
        )
        app = create_app(compose_connectors(Runtime.create(settings)))
        return app.openapi()


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)


def call_live_service(python: Path, client_dir: Path) -> Any:
    """Run calls.py with the generated client against `marketsync serve` on a fresh demo tenant (loopback only)."""
    import socket
    import urllib.request

    with tempfile.TemporaryDirectory() as scratch, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")},
            "MARKETSYNC_DATABASE_URL": f"sqlite:///{scratch}/demo.db",
            "MARKETSYNC_VAR_DIR": scratch,
            "MARKETSYNC_BASE_URL": f"http://127.0.0.1:{port}",
            # The calls subscribe an IP-literal loopback URL (never delivered to: it is deleted at once).
            "MARKETSYNC_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        }
        demo = run([sys.executable, "-m", "marketsync", "demo", "--json"], env=env, cwd=ROOT)
        tenant = json.loads(demo.stdout)
        server = subprocess.Popen(
            [sys.executable, "-m", "marketsync", "serve", "--port", str(port)],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"{base}/readyz", timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            called = run([str(python), "calls.py", base, tenant["client_id"], tenant["client_secret"],
                          "https://127.0.0.1:9/hook"], cwd=client_dir)  # fmt: skip
        finally:
            server.terminate()
            server.wait(timeout=30)
        if called.returncode != 0:
            print(called.stdout, called.stderr, file=sys.stderr)
            return {"ok": False}
        return {"ok": True, "seen": called.stdout.strip()}


def main() -> int:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    venv = WORK / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", GENERATOR, STUBS], check=True)
    timings["venv_s"] = round(time.perf_counter() - started, 2)

    started = time.perf_counter()
    spec = WORK / "openapi.json"
    spec.write_text(json.dumps(document()))
    output = WORK / "client" / PACKAGE
    shutil.rmtree(output.parent, ignore_errors=True)
    output.parent.mkdir(parents=True)
    config = WORK / "generator.json"
    config.write_text(json.dumps({"post_hooks": []}))
    generator = str(venv / "bin" / "openapi-python-client")
    generated = run([generator, "generate", "--path", str(spec), "--meta", "none", "--output-path", str(output),
                     "--config", str(config)])  # fmt: skip
    timings["generate_s"] = round(time.perf_counter() - started, 2)
    if generated.returncode != 0:
        print(generated.stdout, generated.stderr, file=sys.stderr)
        return 1
    warnings = [line for line in generated.stdout.splitlines() if "Warning" in line or "Unable" in line]
    shutil.copy(CALLS, output.parent / "calls.py")

    started = time.perf_counter()
    mypy = run([sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python), "--no-incremental",
                "--config-file", "/dev/null", PACKAGE, "calls.py"], cwd=output.parent)  # fmt: skip
    timings["mypy_s"] = round(time.perf_counter() - started, 2)
    version = run([str(python), "-m", "pip", "show", "openapi-python-client"]).stdout.split("Version: ")[1].split()[0]
    result = {
        "generator": f"openapi-python-client {version}",
        "operations": len(list((output / "api").rglob("*.py"))) - len(list((output / "api").rglob("__init__.py"))),
        "models": len(list((output / "models").glob("*.py"))) - 1,
        "generator_warnings": warnings,
        "mypy": mypy.stdout.strip().splitlines()[-1] if mypy.stdout.strip() else mypy.stderr.strip(),
        "mypy_ok": mypy.returncode == 0,
        **timings,
    }
    if "--call" in sys.argv and mypy.returncode == 0:
        started = time.perf_counter()
        result["called"] = call_live_service(python, output.parent)
        timings["call_s"] = result["call_s"] = round(time.perf_counter() - started, 2)
    print(json.dumps(result))
    if mypy.returncode != 0:
        print(mypy.stdout, file=sys.stderr)
    called_ok = result.get("called", {"ok": True})["ok"]
    return 0 if mypy.returncode == 0 and not warnings and called_ok else 1


if __name__ == "__main__":
    sys.exit(main())
