"""HTTP endpoints of the orders domain (thin: parse, call the service, shape the response)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketsync.auth.dependencies import OrdersReader, OrdersWriter, RuntimeDep
from marketsync.http import idempotency
from marketsync.kit import jsonio
from marketsync.kit.openapi import request_body
from marketsync.orders import schemas, service

router = APIRouter(prefix="/api/orders", tags=["Orders"])

_WRITE_DOC = (
    " The whole batch is validated before anything is applied; one 400 names every bad field of every item."
    " For P1 the change is sent to the marketplace by "
    "an OrderWriteBack job (JobIds); for P2, P3 and P4 it is stored only and Warnings names the platform."
)


@router.post(
    "/List",
    response_model=schemas.OrderListOut,
    summary="List orders",
    openapi_extra=request_body(schemas.ListOrdersRequest, required=False),
)
async def list_orders(request: Request, caller: OrdersReader, rt: RuntimeDep) -> Response:
    """Keyset pages, oldest change first. A walk (first page and its cursors) never shows an order twice or
    skips one that existed when it began; orders changed during the walk come in the next walk, started
    with `UpdatedSince` = `NextUpdatedSince`. No body is the same as `{}`: the first page of everything.
    An empty `OrderStatuses` or `ServiceOrderIDs` array is a 400 (omit the field instead)."""
    body = schemas.check_list_body(await request.body())
    if body.request is None:
        service.refuse_list(rt, caller.account_id, body)  # every shape error, and a bad Cursor beside them
    query = body.valid()
    # A page is one bounded index range of stored documents: a driver read (docs/decisions/0066).
    page = await rt.db.driver_read(lambda reader: service.list_orders(rt, reader, caller.account_id, query))
    return Response(page.json(), media_type="application/json")


@router.get("/{order_id}", response_model=schemas.OrderOut, summary="Read one order")
async def get_order(
    order_id: str,
    caller: OrdersReader,
    rt: RuntimeDep,
    includeCustomerData: bool = Query(False),
) -> Response:
    """The order itself, exactly as it is inside the List answer (no envelope): spec section 4,
    docs/decisions/0390."""
    document = await rt.db.driver_read(
        lambda reader: service.get_order(rt, reader, caller.account_id, order_id, include_customer=includeCustomerData)
    )
    return Response(document, media_type="application/json")


def _write(
    use_case: Callable[[AsyncSession], Awaitable[dict[str, Any]]],
) -> Callable[[AsyncSession], Awaitable[idempotency.Outcome]]:
    async def work(session: AsyncSession) -> idempotency.Outcome:
        return idempotency.Outcome(200, jsonio.dumps(await use_case(session)))

    return work


@router.post(
    "/Confirm",
    response_model=schemas.WriteOut,
    summary="Confirm shipment of order items",
    openapi_extra=request_body(schemas.ConfirmRequest),
    description="Ships every unshipped unit of each item, recording a shipment with its carrier and tracking."
    + _WRITE_DOC,
)
async def confirm(request: Request, caller: OrdersWriter, rt: RuntimeDep) -> Response:
    body = schemas.read_write_body(
        await request.body(), schemas.ConfirmRequest, schemas.ConfirmItem, also=idempotency.key_problems(request)
    )
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
    summary="Cancel order items",
    openapi_extra=request_body(schemas.CancelRequest),
    description="Cancels units not yet shipped (all of them unless Quantity is given)." + _WRITE_DOC,
)
async def cancel(request: Request, caller: OrdersWriter, rt: RuntimeDep) -> Response:
    body = schemas.read_write_body(
        await request.body(), schemas.CancelRequest, schemas.CancelItem, also=idempotency.key_problems(request)
    )
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
    summary="Refund order items",
    openapi_extra=request_body(schemas.RefundRequest),
    description="Send an Idempotency-Key: a retried refund then never refunds twice." + _WRITE_DOC,
)
async def refund(request: Request, caller: OrdersWriter, rt: RuntimeDep) -> Response:
    body = schemas.read_write_body(
        await request.body(), schemas.RefundRequest, schemas.RefundItem, also=idempotency.key_problems(request)
    )
    return await idempotency.run(
        rt,
        request,
        caller.account_id,
        "orders.refund",
        _write(lambda s: service.refund(rt, s, caller.account_id, body)),
    )


@router.post(
    "/Update",
    response_model=schemas.UpdateOut,
    summary="Attach an external order reference",
    openapi_extra=request_body(schemas.UpdateRequest),
)
async def update(request: Request, caller: OrdersWriter, rt: RuntimeDep) -> Response:
    """Local bookkeeping only; nothing is sent to a marketplace."""
    body = schemas.read_write_body(await request.body(), schemas.UpdateRequest, also=idempotency.key_problems(request))
    return await idempotency.run(
        rt,
        request,
        caller.account_id,
        "orders.update",
        _write(lambda s: service.update(rt, s, caller.account_id, body)),
    )
