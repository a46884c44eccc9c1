"""API4 Unrestricted Resource Consumption: every JSON operation is bounded by the body size (413, also for a chunked
body that never says its length), every list in a request by a maximum item count, every page by a maximum Limit
(the OpenAPI document says so, and one more is refused with 400 naming the field), and every credential by a rate
(429 with Retry-After). Operations and their lists are enumerated from the OpenAPI document."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from marketsync.app import create_app
from marketsync.runtime import Runtime
from tests.security.conftest import SecretsSeen
from tests.security.support import MINIMAL_BODIES, json_operations, resolve_hook_host, resolved, tenant_seen
from tests.support.factories import problem

MAX_BODY_BYTES = 4096


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"max_body_bytes": MAX_BODY_BYTES}


def _bounds(rt: Runtime) -> dict[str, dict[str, tuple[str, int]]]:
    """path -> {top-level field: ("array", maxItems) | ("limit", maximum)} from the OpenAPI document."""
    document = create_app(rt).openapi()
    found: dict[str, dict[str, tuple[str, int]]] = {}
    for path, schema in json_operations(document).items():
        properties = resolved(schema, document).get("properties", {})
        for name, field_schema in properties.items():  # type: ignore[attr-defined]
            field_schema = resolved(field_schema, document)
            if field_schema.get("type") == "array":
                assert "maxItems" in field_schema, f"{path} {name}: a list with no maximum"
                found.setdefault(path, {})[name] = ("array", int(field_schema["maxItems"]))  # type: ignore[call-overload]
            elif name == "Limit":
                assert "maximum" in field_schema, f"{path} Limit: a page with no maximum"
                found.setdefault(path, {})[name] = ("limit", int(field_schema["maximum"]))  # type: ignore[call-overload]
    return found


@pytest.mark.parametrize("settings_overrides", [{}])  # the default body limit: the lists' own bound answers
async def test_every_list_and_page_has_a_maximum_and_one_more_is_refused(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    bounds = _bounds(rt)
    assert {name for fields in bounds.values() for name in fields} >= {"Items", "OrderItems", "Limit", "EventTypes"}
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    for path, fields in bounds.items():
        for name, (kind, maximum) in fields.items():
            body = copy.deepcopy(MINIMAL_BODIES[path])
            if kind == "limit":
                body[name] = maximum + 1
            else:
                first = body[name][0]  # type: ignore[index]
                body[name] = [copy.deepcopy(first) for _ in range(maximum + 1)]
            response = await api.post(path, json=body, headers=tenant.headers)
            assert response.status_code == 400, (path, name, response.status_code, response.text[:300])
            assert name in problem(response)["errors"], (path, name, problem(response)["errors"])


async def _chunks(size: int) -> AsyncIterator[bytes]:
    yield b'{"Items": ["'
    for _ in range(size // 1024):
        yield b"x" * 1024
    yield b'"]}'


async def test_every_json_operation_refuses_a_body_beyond_the_limit_with_413(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    resolve_hook_host(rt)
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    oversized = b'{"Padding": "' + b"x" * MAX_BODY_BYTES + b'"}'
    for path in MINIMAL_BODIES:
        headers = {**tenant.headers, "Content-Type": "application/json"}
        sized = await api.post(path, content=oversized, headers=headers)
        assert sized.status_code == 413, (path, sized.status_code, sized.text[:200])
        chunked = await api.post(path, content=_chunks(2 * MAX_BODY_BYTES), headers=headers)
        assert chunked.status_code == 413, (path, "chunked", chunked.status_code, chunked.text[:200])
        assert problem(chunked)["code"] == problem(sized)["code"]


@pytest.mark.parametrize("settings_overrides", [{"rate_limit": "5/minute"}])
async def test_a_credential_beyond_its_rate_is_answered_429_with_retry_after(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    statuses = [(await api.post("/api/products/List", json={}, headers=tenant.headers)).status_code for _ in range(6)]
    assert statuses == [200] * 5 + [429]
    limited = await api.post("/api/products/List", json={}, headers=tenant.headers)
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert problem(limited)["status"] == 429
    other = await tenant_seen(rt, api, secrets_seen, "other")  # another credential is not punished
    assert (await api.post("/api/products/List", json={}, headers=other.headers)).status_code == 200
