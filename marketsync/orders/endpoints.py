"""HTTP endpoints of the orders domain (thin: parse, call the service, shape the response)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketsync.auth.dependencies import OrdersReader, OrdersWriter, RuntimeDep
from marketsync.kit import idempotency, jsonio
from marketsync.orders import schemas, service

router = APIRouter(prefix="/api/orders", tags=["Orders"])

_WRITE_DOC = (
    " The whole batch is validated before anything is applied. For P1 the change is sent to the marketplace by "
    "an OrderWriteBack job (JobIds); for P2, P3 and P4 it is stored only and Warnings names the platform."
)


def _json(body: Any) -> Response:
    return Response(jsonio.dumps(body), media_type="application/json")


@router.post("/List", response_model=schemas.OrderListOut, response_class=Response, summary="List orders")
async def list_orders(body: schemas.ListOrdersRequest, caller: OrdersReader, rt: RuntimeDep) -> Response:
    """Keyset pages, oldest change first. A walk (first page and its cursors) never shows an order twice or
    skips one that existed when it began; orders changed during the walk come in the next walk, started
    with `UpdatedSince` = `NextUpdatedSince`."""
    async with rt.db.read() as session:
        page = await service.list_orders(rt, session, caller.account_id, body)
    return Response(page.json(), media_type="application/json")


@router.get("/{order_id}", response_model=schemas.OrderOneOut, response_class=Response, summary="Read one order")
async def get_order(
    order_id: str,
    caller: OrdersReader,
    rt: RuntimeDep,
    includeCustomerData: bool = Query(False),
) -> Response:
    async with rt.db.read() as session:
        order = await service.get_order(session, caller.account_id, order_id, include_customer=includeCustomerData)
    return _json({"Order": order})


def _write(
    use_case: Callable[[AsyncSession], Awaitable[dict[str, Any]]],
) -> Callable[[AsyncSession], Awaitable[idempotency.Outcome]]:
    async def work(session: AsyncSession) -> idempotency.Outcome:
        return idempotency.Outcome(200, jsonio.dumps(await use_case(session)))

    return work


@router.post(
    "/Confirm",
    response_model=schemas.WriteOut,
    response_class=Response,
    summary="Confirm shipment of order items",
    description="Ships every unshipped unit of each item, recording a shipment with its carrier and tracking."
    + _WRITE_DOC,
)
async def confirm(body: schemas.ConfirmRequest, request: Request, caller: OrdersWriter, rt: RuntimeDep) -> Response:
    return await idempotency.run(
        rt,
        request,
        caller.account_id,
        "orders.confirm",
        _write(lambda s: service.confirm(rt, s, caller.account_id, body)),
    )


@router.post(
    "/Cancel",
    response_model=schemas.WriteOut,
    response_class=Response,
    summary="Cancel order items",
    description="Cancels units not yet shipped (all of them unless Quantity is given)." + _WRITE_DOC,
)
async def cancel(body: schemas.CancelRequest, request: Request, caller: OrdersWriter, rt: RuntimeDep) -> Response:
    return await idempotency.run(
        rt,
        request,
        caller.account_id,
        "orders.cancel",
        _write(lambda s: service.cancel(rt, s, caller.account_id, body)),
    )


@router.post(
    "/Refund",
    response_model=schemas.RefundWriteOut,
    response_class=Response,
    summary="Refund order items",
    description="Send an Idempotency-Key: a retried refund then never refunds twice." + _WRITE_DOC,
)
async def refund(body: schemas.RefundRequest, request: Request, caller: OrdersWriter, rt: RuntimeDep) -> Response:
    return await idempotency.run(
        rt,
        request,
        caller.account_id,
        "orders.refund",
        _write(lambda s: service.refund(rt, s, caller.account_id, body)),
    )


@router.post(
    "/Update", response_model=schemas.UpdateOut, response_class=Response, summary="Attach an external order reference"
)
async def update(body: schemas.UpdateRequest, request: Request, caller: OrdersWriter, rt: RuntimeDep) -> Response:
    """Local bookkeeping only; nothing is sent to a marketplace."""
    return await idempotency.run(
        rt,
        request,
        caller.account_id,
        "orders.update",
        _write(lambda s: service.update(rt, s, caller.account_id, body)),
    )
