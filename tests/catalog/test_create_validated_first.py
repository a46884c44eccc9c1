"""POST /api/products/Create validates before its write transaction (docs/decisions/0265): what changes in between
(the SKU created, a case variant, the connection paused) is seen by the write, which validates again; on both
backends."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from marketsync.catalog.listings import service
from marketsync.catalog.listings.service import CreatePlan
from marketsync.catalog.repository import CreateReads
from marketsync.kinds import ConnectionState
from marketsync.models import MarketplaceConnection
from marketsync.runtime import Runtime
from tests.catalog.support import counts, create, create_payload, load_taxonomies
from tests.support.factories import Tenant, make_tenant, problem


async def _tenant(rt: Runtime, api: httpx.AsyncClient) -> Tenant:
    await load_taxonomies(rt, ("P2",))
    return await make_tenant(rt, api, marketplaces=(("P2", "DE"),))


def _between_validation_and_write(
    monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[], Awaitable[None]]
) -> list[str]:
    """Run `meanwhile` once, right after the endpoint's validation (before its write transaction); the list collects
    the request's validations (the endpoint's, and the write's own when the plan no longer holds), not those of
    `meanwhile`."""
    original = service.validate_create
    validations: list[str] = []
    interfering: list[bool] = []

    async def validate_then_interfere(
        reads: CreateReads, account_id: str, raw: Any, also: Mapping[str, Sequence[str]] | None = None
    ) -> CreatePlan:
        if interfering:
            return await original(reads, account_id, raw, also)
        validations.append(raw["Sku"])
        plan = await original(reads, account_id, raw, also)
        if len(validations) == 1:
            interfering.append(True)
            await meanwhile()
            interfering.clear()
        return plan

    monkeypatch.setattr(service, "validate_create", validate_then_interfere)
    return validations


async def _create_elsewhere(rt: Runtime, tenant: Tenant, payload: dict[str, Any]) -> str:
    async with rt.db.transaction() as session:
        outcome = await service.create_product(rt, session, tenant.account_id, payload)
    assert outcome.product_id is not None
    return outcome.product_id


async def test_an_unchanged_plan_is_written_without_validating_again(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "FIRST-1", Quantity=2)

    async def nothing() -> None:
        return None

    validations = _between_validation_and_write(monkeypatch, nothing)
    response = await create(api, tenant, payload)
    assert response.status_code == 200, response.text
    assert response.json()["ListingAction"] == "Create"
    assert len(validations) == 1
    assert await counts(rt, tenant.account_id) == (1, 1, 1)


async def test_the_sku_created_in_between_is_upserted_not_duplicated(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "RACE-1", Quantity=2)
    created: list[str] = []

    async def same_sku() -> None:
        created.append(await _create_elsewhere(rt, tenant, payload))

    validations = _between_validation_and_write(monkeypatch, same_sku)
    response = await create(api, tenant, {**payload, "Quantity": 7})
    assert response.status_code == 200, response.text
    assert len(validations) == 2  # the write saw the product and validated again
    assert response.json()["ProductId"] == created[0]
    assert await counts(rt, tenant.account_id) == (1, 1, 2)  # one product, its listing, two publishes
    product = await api.get("/api/products/RACE-1", headers=tenant.headers)
    assert product.json()["Product"]["Quantity"] == 7


async def test_a_case_variant_created_in_between_is_warned_of(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "Race-Case")

    async def variant() -> None:
        await _create_elsewhere(rt, tenant, {**payload, "Sku": "RACE-CASE"})

    validations = _between_validation_and_write(monkeypatch, variant)
    response = await create(api, tenant, payload)
    assert response.status_code == 200, response.text
    assert len(validations) == 2
    assert any("'RACE-CASE'" in warning for warning in response.json()["Warnings"])
    assert await counts(rt, tenant.account_id) == (2, 2, 2)


async def test_a_connection_paused_in_between_is_404_and_nothing_is_written(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await _tenant(rt, api)
    payload = await create_payload(api, tenant, "P2", "Smartphones", "PAUSED-1")

    async def pause() -> None:
        async with rt.db.transaction() as session:
            await session.execute(
                update(MarketplaceConnection)
                .where(MarketplaceConnection.id == payload["MarketplaceId"])
                .values(state=ConnectionState.PAUSED)
            )

    validations = _between_validation_and_write(monkeypatch, pause)
    response = await create(api, tenant, payload, **{"Idempotency-Key": "paused-1"})
    assert response.status_code == 404 and problem(response)["code"] == "not-found"
    assert len(validations) == 2
    assert await counts(rt, tenant.account_id) == (0, 0, 0)
