"""Inventory endpoints (spec §4): the price/stock push and the product reads. Thin: parse, call the
service, shape the response (serialised once with orjson)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketsync.auth.dependencies import InventoryReader, InventoryWriter, RuntimeDep
from marketsync.http import idempotency
from marketsync.http.requestid import current_request_id
from marketsync.inventory import service
from marketsync.inventory.schemas import (
    ProductEnvelopeOut,
    ProductListIn,
    ProductsOut,
    PushIn,
    PushOut,
    parse_push,
)
from marketsync.kit import jsonio
from marketsync.kit.openapi import request_body

router = APIRouter(tags=["Inventory"])

DEFAULT_LIMIT = 50


def _json(body: dict[str, Any]) -> Response:
    return Response(jsonio.dumps(body), media_type="application/json")


@router.post(
    "/api/inventory/price-quantity",
    response_model=PushOut,
    summary="Push price and stock changes (1 to 500 SKUs)",
    openapi_extra=request_body(PushIn),
)
async def push_price_quantity(request: Request, caller: InventoryWriter, rt: RuntimeDep) -> Response:
    raw = await request.body()
    if request.headers.get(idempotency.HEADER) is None:
        # The hot path: no key, nothing written beyond the push itself (docs/decisions/0240 and 0410).
        items, propagate = parse_push(raw)
        result = await service.push_price_quantity_committed(rt, caller.account_id, items, propagate=propagate)
        return _json(_push_answer(result))
    items, propagate = parse_push(raw, also=idempotency.key_problems(request))

    async def work(store: idempotency.Store) -> idempotency.Outcome:
        committed: list[idempotency.Outcome] = []

        async def then(session: AsyncSession, result: service.PushResult) -> None:
            outcome = idempotency.Outcome(200, jsonio.dumps(_push_answer(result)))
            await store(session, outcome)  # in the push's own transaction: stored if, and only if, it commits
            committed.append(outcome)

        await service.push_price_quantity_committed(rt, caller.account_id, items, propagate=propagate, then=then)
        return committed[-1]  # the attempt that committed (a batch retried isolated runs `then` again)

    return await idempotency.run_committed(rt, request, caller.account_id, PUSH_OPERATION, work)


PUSH_OPERATION = "inventory.push"


def _push_answer(result: service.PushResult) -> dict[str, Any]:
    return {
        "RequestId": current_request_id(),
        "Results": [{"Sku": line.sku, "Result": line.result} for line in result.results],
        **result.counts(),
        "JobIds": result.job_ids,
        "Warnings": result.warnings,
    }


@router.post(
    "/api/products/List",
    response_model=ProductsOut,
    summary="List the catalogue (no prices)",
    openapi_extra=request_body(ProductListIn, required=False),
)
async def list_products(request: Request, caller: InventoryReader, rt: RuntimeDep) -> Response:
    query = ProductListIn.read(await request.body(), optional=True)
    page = await rt.db.driver_read(
        lambda reader: service.products_page(
            reader,
            caller.account_id,
            sku=query.Sku,
            modified_since=query.ModifiedSince,
            limit=query.Limit or DEFAULT_LIMIT,
            offset=query.Offset or 0,
        )
    )
    return _json(page)


@router.get("/api/products/{sku:path}", response_model=ProductEnvelopeOut, summary="One product by SKU")
async def get_product(sku: str, caller: InventoryReader, rt: RuntimeDep) -> Response:
    return _json(await rt.db.driver_read(lambda reader: service.product_document(reader, caller.account_id, sku)))
