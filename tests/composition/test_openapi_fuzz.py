"""Property-based conformance against our own OpenAPI document (schemathesis, as a real client over HTTP).

Every operation is fuzzed with a valid all-scope token on a tenant that has data: orders on P1 and P2, products
with listings and pushed prices, jobs, a webhook subscription and loaded category trees. The reads by id are
pointed at real ids (schemathesis.toml operation parameters), so their 200 bodies are checked too, not only 404s.
No 5xx; status codes, content types and response bodies must match what the document declares.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from marketsync.runtime import Runtime
from tests.catalog.support import anchor_id, load_taxonomies
from tests.orders.support import ingest, pulled_item, pulled_order
from tests.support.factories import fetch_token, make_account, make_connection, make_credential
from tests.support.processes import REPO_ROOT, free_port, spawn

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


async def seed(rt: Runtime, client: httpx.AsyncClient, token: str, account_id: str) -> dict[str, dict[str, str]]:
    """Data through the API where the API makes it, and the fixed parameters of the reads by id."""
    headers = {"Authorization": f"Bearer {token}"}
    p1 = await make_connection(rt, account_id, "P1", "UK")
    p2 = await make_connection(rt, account_id, "P2", "DE")
    await load_taxonomies(rt, ("P1", "P2"))
    job_id = ""
    for sku in ("TEE-1", "TEE-2", "MUG-1"):
        created = await client.post(
            "/api/products/Create", json={"Sku": sku, "MarketplaceId": p1.id, "Quantity": 3}, headers=headers
        )
        assert created.status_code == 200, created.text
        job_id = created.json()["JobId"]
    push = {"Items": [{"Sku": "TEE-1", "Price": 12.5, "Quantity": 4}, {"Sku": "MUG-1", "Price": 7}]}
    pushed = await client.post("/api/inventory/price-quantity", json=push, headers=headers)
    assert pushed.json()["Updated"] == 2, pushed.text
    await ingest(rt, p1, pulled_order(items=[pulled_item(sku="TEE-1"), pulled_item(sku="MUG-1", unit_price="7.25")]))
    await ingest(rt, p2, pulled_order(currency="EUR"))
    orders = await client.post("/api/orders/List", json={}, headers=headers)
    assert len(orders.json()["Orders"]) == 2
    subscription = {"Url": "https://127.0.0.1:9/hook", "EventTypes": ["InventoryChanged", "OrdersDownloaded"]}
    subscribed = await client.post("/api/webhooks/Create", json=subscription, headers=headers)
    assert subscribed.status_code == 200, subscribed.text
    return {
        "GetOrder": {"order_id": orders.json()["Orders"][0]["ServiceOrderID"]},
        "GetProduct": {"sku": "tee-1"},
        "GetJob": {"id": job_id},
        "GetProductTypeSchema": {"marketplaceId": p2.id, "categoryId": anchor_id("P2", "Smartphones")},
    }


def config_file(path: Path, parameters: dict[str, dict[str, str]]) -> Path:
    lines = []
    for operation_id, values in parameters.items():
        pairs = ", ".join(f"{name} = {json.dumps(value)}" for name, value in values.items())
        lines += ["[[operations]]", f'include-operation-id = "{operation_id}"', f"parameters = {{ {pairs} }}", ""]
    path.write_text("\n".join(lines))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("settings_overrides", [{"rate_limit": "1000000/minute"}])
async def test_every_operation_conforms_to_the_openapi_document(rt: Runtime, tmp_path: Path) -> None:
    account_id = await make_account(rt)
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
            parameters = await seed(rt, client, token, account_id)
        config = config_file(tmp_path / "schemathesis.toml", parameters)
        run = subprocess.run(
            [
                sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", f"{base}/openapi.json",
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
    # The reads by id were called with the real ids (their 200s were checked), not only with generated ones.
    requests = [json.loads(line) for line in (tmp_path / "serve.log").read_text().splitlines() if line.startswith("{")]
    answered = {(r["path"], r["status"]) for r in requests if r.get("event") == "request"}
    for path in ("/api/orders/{order_id}", "/api/products/{sku:path}", "/api/jobs/{id}", "/api/product-types/Schema"):
        assert (path, 200) in answered, path
