"""OpenAPI 3.1 document, /healthz, /readyz, /metrics, and `marketsync serve` as a real process."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import httpx

from marketsync.app import api_routes
from marketsync.runtime import Runtime
from tests.support.processes import free_port, spawn
from tests.support.spec_scopes import SPEC_SCOPES, spec_key


async def test_openapi_documents_every_route_with_scopes_and_problems(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = (await api.get("/openapi.json")).json()
    assert document["openapi"].startswith("3.1")
    flows = document["components"]["securitySchemes"]["oauth2"]["flows"]["clientCredentials"]
    assert flows["tokenUrl"] == "/connect/token"
    assert "/connect/token" in document["paths"]
    assert "application/x-www-form-urlencoded" in document["paths"]["/connect/token"]["post"]["requestBody"]["content"]
    for route in api_routes():
        if not route.path.startswith("/api/"):
            continue
        for method in route.methods or ():
            operation = document["paths"][route.path_format][method.lower()]
            assert operation["security"] == [{"oauth2": [SPEC_SCOPES[spec_key(method, route.path)]]}]
            responses = operation["responses"]
            # 422 only for a reused Idempotency-Key: FastAPI's own 422 (validation) is a 400 here.
            idempotent = {"$ref": "#/components/parameters/IdempotencyKey"} in operation.get("parameters", [])
            assert ("422" in responses) == idempotent, route.path
            for status in ("400", "401", "403", "429"):
                assert "application/problem+json" in responses[status]["content"], (route.path, status)
            if "404" in responses:  # only where an unknown id can be named (tests/composition/test_openapi_document.py)
                assert "application/problem+json" in responses["404"]["content"], route.path


async def test_health_readiness_and_metrics(rt: Runtime, api: httpx.AsyncClient) -> None:
    assert (await api.get("/healthz")).json() == {"status": "ok"}
    ready = await api.get("/readyz")
    assert ready.status_code == 200 and ready.json()["database"] in ("sqlite", "postgresql")
    await api.get("/api/marketplaces")
    metrics = await api.get("/metrics")
    assert metrics.status_code == 200
    assert 'marketsync_http_requests_total{method="GET",route="/api/marketplaces",status="401"}' in metrics.text


async def test_serve_runs_as_a_process_and_stops_on_sigterm(rt: Runtime, tmp_path: Path) -> None:
    port = free_port()
    server = spawn(rt, "serve", "--port", str(port), "--no-workers", log_path=tmp_path / "serve.log")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(600):
                try:
                    response = await client.get("/readyz")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError("server did not start")
            assert response.json()["status"] == "ok"
            tagged = await client.get("/healthz", headers={"X-Request-Id": "trace-me-12345"})
            assert tagged.headers["x-request-id"] == "trace-me-12345"
    finally:
        server.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it captured.
        assert server.wait(timeout=30) in (0, -signal.SIGTERM)
    lines = [json.loads(line) for line in (tmp_path / "serve.log").read_text().splitlines() if line.startswith("{")]
    assert any(line.get("request_id") == "trace-me-12345" and line["event"] == "request" for line in lines)


async def _get_healthz(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """One GET /healthz on an open HTTP/1.1 connection: the status line, or b"" when the server had closed it."""
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    status = await reader.readline()
    headers = (await reader.readuntil(b"\r\n\r\n")) if status else b""
    length = int(next((h.split(b":")[1] for h in headers.split(b"\r\n") if h.lower().startswith(b"content-length")), 0))
    await reader.readexactly(length)
    return status.strip()


async def test_serve_keeps_an_idle_connection_for_the_keep_alive_setting(rt: Runtime) -> None:
    """MARKETSYNC_HTTP_KEEP_ALIVE_S reaches the server: an idle connection is served within it and closed by the
    server after it (decision 0305: the default outlasts the clients in front, so the client side closes first)."""
    port = free_port()
    server = spawn(rt, "serve", "--port", str(port), "--no-workers", MARKETSYNC_HTTP_KEEP_ALIVE_S="2")
    try:
        for _ in range(600):
            try:
                kept, closed = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("server did not start")
        assert await _get_healthz(*kept) == await _get_healthz(*closed) == b"HTTP/1.1 200 OK"
        await asyncio.sleep(1)
        assert await _get_healthz(*kept) == b"HTTP/1.1 200 OK"  # idle 1 s of 2: the same connection answers
        await asyncio.sleep(2)
        # Idle past 2 s (and short of uvicorn's own 5 s): the server has closed it.
        assert await asyncio.wait_for(closed[0].read(), timeout=0.5) == b""
        for _, writer in (kept, closed):
            writer.close()
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) in (0, -signal.SIGTERM)
