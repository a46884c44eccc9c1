"""Helpers of the catalog tests: small taxonomies (anchors included), payloads, row counts."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import func, select

from marketsync.catalog.taxonomy import service
from marketsync.jobs.worker import Worker
from marketsync.marketplaces.sandbox import taxonomies as shipped
from marketsync.models import Event, Job, Listing, Product
from marketsync.runtime import Runtime
from tests.support.factories import Tenant

# Small taxonomies keep each test fast; the anchor categories are the same in every size.
TEST_SIZE = 300


async def load_taxonomies(
    rt: Runtime,
    sites: tuple[str | tuple[str, str], ...] = ("P1", "P2"),
    *,
    revision: int = 1,
    size: int = TEST_SIZE,
) -> list[service.ImportSummary]:
    """The shipped taxonomy of each site: ("P1", "DE"), or "P1" for the kind's home site (P1 UK, P2 DE, P3 US, P4 FR,
    the sites tests connect by default)."""
    summaries = []
    for site in sites:
        platform, country = (site, shipped.HOME_COUNTRIES[site]) if isinstance(site, str) else site
        async with rt.db.transaction() as session:
            generated = shipped.generate(platform, revision, size)
            summaries.append(await service.import_taxonomy(rt, session, generated, country))
    return summaries


def anchor_id(platform: str, name: str) -> str:
    return shipped.ANCHOR_IDS[platform][name]


async def schema(api: httpx.AsyncClient, tenant: Tenant, platform: str, category_id: str) -> dict[str, Any]:
    response = await api.get(
        "/api/product-types/Schema",
        params={"marketplaceId": tenant.marketplace(platform).id, "categoryId": category_id},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def phone_attributes(**overrides: Any) -> dict[str, Any]:
    """A valid attribute set for the 'Smartphones' anchor (no off-API requirements)."""
    values: dict[str, Any] = {
        "Title": "Acme Phone 12",
        "Brand": "Acme",
        "Condition": "NEW",
        "Model": "AP-12",
        "StorageCapacityGb": 128,
    }
    values.update(overrides)
    return {k: v for k, v in values.items() if v is not None}


def shirt_attributes(**overrides: Any) -> dict[str, Any]:
    """A valid attribute set for the 'T-Shirts' anchor (off-API requirement: Images)."""
    values: dict[str, Any] = {
        "Title": "Plain tee",
        "Brand": "Northwind",
        "Condition": "NEW",
        "Size": "M",
        "Colour": "BLACK",
    }
    values.update(overrides)
    return {k: v for k, v in values.items() if v is not None}


async def create_payload(
    api: httpx.AsyncClient, tenant: Tenant, platform: str, anchor: str, sku: str, **extra: Any
) -> dict[str, Any]:
    category_id = anchor_id(platform, anchor)
    body = await schema(api, tenant, platform, category_id)
    attributes = phone_attributes() if anchor == "Smartphones" else shirt_attributes()
    payload: dict[str, Any] = {
        "Sku": sku,
        "MarketplaceId": tenant.marketplace(platform).id,
        "CategoryId": category_id,
        "ProductTypeViewId": body["ProductTypeViewId"],
        "Attributes": attributes,
    }
    payload.update(extra)
    return payload


async def create(api: httpx.AsyncClient, tenant: Tenant, payload: Any, **headers: str) -> httpx.Response:
    return await api.post("/api/products/Create", json=payload, headers={**tenant.headers, **headers})


async def counts(rt: Runtime, account_id: str) -> tuple[int, int, int]:
    """(products, listings, jobs) of an account."""
    async with rt.db.read() as session:
        products = (await session.execute(select(func.count()).where(Product.account_id == account_id))).scalar_one()
        listings = (await session.execute(select(func.count()).where(Listing.account_id == account_id))).scalar_one()
        jobs = (await session.execute(select(func.count()).where(Job.account_id == account_id))).scalar_one()
    return int(products), int(listings), int(jobs)


async def events_of(rt: Runtime, account_id: str, event_type: str) -> list[dict[str, Any]]:
    import orjson

    async with rt.db.read() as session:
        rows = (
            await session.execute(
                select(Event.body).where(Event.account_id == account_id, Event.type == event_type).order_by(Event.id)
            )
        ).scalars()
        return [orjson.loads(body) for body in rows]


async def run_jobs(rt: Runtime, rounds: int = 20) -> None:
    """Drain the worker; publish jobs that went back to the queue for a moment are run again."""
    import asyncio

    from marketsync.jobs.repository import QUEUED

    for _ in range(rounds):
        await Worker(rt).drain()
        async with rt.db.read() as session:
            waiting = (await session.execute(select(func.count()).where(Job.status.in_(QUEUED)))).scalar_one()
        if not waiting:
            return
        await asyncio.sleep(0.5)
