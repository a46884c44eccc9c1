"""API3 Broken Object Property Level Authorization: no request can set a property the operation does not define (an
unknown field, at the top or inside an item, is refused with 400 naming it, never ignored or stored), and no response
exposes a secret after the one answer that creates it.

Operations are enumerated from the OpenAPI document: a new JSON operation fails here until support.MINIMAL_BODIES
holds a valid body for it."""

from __future__ import annotations

import copy

import httpx

from marketsync.app import create_app
from marketsync.runtime import Runtime
from tests.security.conftest import SecretsSeen
from tests.security.support import MINIMAL_BODIES, json_operations, resolve_hook_host, tenant_seen
from tests.support.factories import problem
from tests.webhooks.support import subscribe

UNKNOWN_FIELD = "IsAdmin"


def _with_unknown_fields(body: dict[str, object]) -> list[tuple[dict[str, object], str]]:
    """The body with an unknown field at the top, and inside the first item of each list of objects."""
    variants: list[tuple[dict[str, object], str]] = [({**body, UNKNOWN_FIELD: True}, UNKNOWN_FIELD)]
    for name, value in body.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            nested = copy.deepcopy(body)
            nested[name][0][UNKNOWN_FIELD] = True  # type: ignore[index]
            variants.append((nested, f"{name}[0].{UNKNOWN_FIELD}"))
    return variants


async def test_every_json_operation_refuses_unknown_fields_naming_them(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    resolve_hook_host(rt)
    operations = json_operations(create_app(rt).openapi())
    assert set(operations) <= set(MINIMAL_BODIES), set(operations) - set(MINIMAL_BODIES)
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    for path, body in MINIMAL_BODIES.items():
        plain = await api.post(path, json=body, headers=tenant.headers)
        assert plain.status_code in (200, 400, 404), (path, plain.text)
        if plain.status_code == 400:  # refused for its ids, not its shape
            assert not any(UNKNOWN_FIELD in key for key in problem(plain)["errors"])
        if plain.status_code == 200 and "Secret" in plain.json().get("Subscription", {}):
            secrets_seen.add("webhook secret", plain.json()["Subscription"]["Secret"])
        for variant, field in _with_unknown_fields(body):
            response = await api.post(path, json=variant, headers=tenant.headers)
            assert response.status_code == 400, (path, field, response.text)
            errors = problem(response)["errors"]
            assert field in errors, (path, field, errors)
            assert "Unknown field" in " ".join(errors[field]), (path, errors[field])


async def test_a_webhook_secret_is_answered_once_and_never_listed(
    rt: Runtime, api: httpx.AsyncClient, secrets_seen: SecretsSeen
) -> None:
    resolve_hook_host(rt)
    tenant = await tenant_seen(rt, api, secrets_seen, "caller")
    created = await subscribe(api, tenant, "https://hooks.example.test/once")
    secrets_seen.add("webhook secret", created["Secret"])
    listed = await api.post("/api/webhooks/List", json={}, headers=tenant.headers)
    assert created["Secret"] not in listed.text and "Secret" not in listed.json()["Subscriptions"][0]
