"""Property-based conformance against our own OpenAPI document (schemathesis, as a real client over HTTP).

Every operation is fuzzed with a valid all-scope token: no 5xx, status codes, content types and response
bodies must match what the document declares.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from marketsync.runtime import Runtime
from tests.support.factories import fetch_token, make_account, make_connection, make_credential
from tests.support.processes import REPO_ROOT, free_port, spawn

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


@pytest.mark.slow
@pytest.mark.parametrize("settings_overrides", [{"rate_limit": "1000000/minute"}])
async def test_every_operation_conforms_to_the_openapi_document(rt: Runtime, tmp_path: Path) -> None:
    account_id = await make_account(rt)
    for platform, country in (("P1", "UK"), ("P2", "DE")):
        await make_connection(rt, account_id, platform, country)
    credential = await make_credential(rt, account_id)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = spawn(
        rt, "serve", "--port", str(port), "--no-workers", log_path=tmp_path / "serve.log",
        MARKETSYNC_RATE_LIMIT="1000000/minute",
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=base) as client:
            for _ in range(600):
                try:
                    await client.get("/readyz")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            token = await fetch_token(client, credential.client_id, credential.client_secret)
        run = subprocess.run(
            [
                sys.executable, "-m", "schemathesis.cli", "run", f"{base}/openapi.json",
                "-H", f"Authorization: Bearer {token}", "-c", CHECKS, "-n", "10", "--generation-deterministic",
                "--phases", "coverage,fuzzing", "--request-timeout", "30",
            ],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert run.returncode == 0, run.stdout[-4000:]
    assert "passed" in run.stdout
