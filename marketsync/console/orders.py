"""Orders in the app: the list with the API's filters and cursor, an order's page, and its customer data shown
only behind an explicit reveal (a form post, logged without the data: docs/decisions/0124-app-edits-and-reveal.md)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import structlog
from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import SignedIn, checked_form
from marketsync.console.render import errors_of, page, page_router, see_other
from marketsync.http.errors import ValidationFailed
from marketsync.kit import jsonio
from marketsync.orders import rules, schemas
from marketsync.orders import service as orders

router = page_router()
log = structlog.get_logger("marketsync.console")
ORDERS_PAGE = 50
# The filter form's fields and the List request fields they fill (dates as typed, checked by the API's rules).
_ZONED = re.compile(r"(Z|[+-]\d\d:?\d\d)$", re.IGNORECASE)
DATE_FILTERS = {"updated_since": "UpdatedSince", "from_date": "FromDate", "to_date": "ToDate"}
MARKETPLACE_ORDER_ID_MAX = 100  # orders.marketplace_order_id's length
FIND_HINT = "Give the marketplace's order id (1 to 100 characters), as the marketplace shows it."


def _as_utc(value: str) -> str:
    """A `datetime-local` input sends no zone (the page says UTC) and a date picker a bare day."""
    if "T" not in value:
        return f"{value}T00:00:00Z"
    return value if _ZONED.search(value) else f"{value}Z"


def _list_request(query: dict[str, Any], statuses: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"Limit": ORDERS_PAGE}
    if statuses:
        body["OrderStatuses"] = statuses
    for name, field in DATE_FILTERS.items():
        if value := str(query.get(name) or "").strip():
            body[field] = _as_utc(value)
    if cursor := str(query.get("cursor") or "").strip():
        body["Cursor"] = cursor
    return body


@router.get("/orders", response_class=HTMLResponse)
async def orders_page(request: Request, person: SignedIn) -> Response:
    rt = runtime_of(request)
    query = dict(request.query_params)
    if "find" in query:  # the find-by-MarketplaceOrderId box (a GET form)
        return await _found_orders(request, person, query["find"].strip())
    statuses = [status for status in request.query_params.getlist("status") if status]
    body = _list_request(query, statuses)
    context: dict[str, Any] = {"filters": query, "statuses": statuses, "all_statuses": rules.ORDER_STATUSES}
    try:
        wanted = schemas.read_list_body(jsonio.dumps(body))
        listed = await rt.db.driver_read(lambda reader: orders.list_orders(rt, reader, person.account_id, wanted))
    except ValidationFailed as exc:
        return page(request, "orders.html", person, 400, title="Orders", orders=[], errors=errors_of(exc), **context)
    documents = [jsonio.loads(document) for document in listed.documents]
    return page(
        request, "orders.html", person, title="Orders", orders=documents, next_cursor=listed.next_cursor, **context
    )


async def _found_orders(request: Request, person: SignedIn, marketplace_order_id: str) -> Response:
    """One order: its page. Several (the same id on more than one marketplace) or none: the list of them."""
    context: dict[str, Any] = {"filters": {}, "statuses": [], "all_statuses": rules.ORDER_STATUSES}
    if not marketplace_order_id or len(marketplace_order_id) > MARKETPLACE_ORDER_ID_MAX:
        errors = {"MarketplaceOrderId": [FIND_HINT]}
        return page(request, "orders.html", person, 400, title="Orders", orders=[], errors=errors, **context)
    rt = runtime_of(request)
    found = await rt.db.driver_read(
        lambda reader: orders.find_by_marketplace_order_id(rt, reader, person.account_id, marketplace_order_id)
    )
    documents = [jsonio.loads(document) for document in found]
    if len(documents) == 1:
        return see_other(f"/app/orders/{quote(documents[0]['ServiceOrderID'], safe='')}")
    return page(request, "orders.html", person, title="Orders", orders=documents, found=marketplace_order_id, **context)


async def _order_page(request: Request, person: SignedIn, order_id: str, *, reveal: bool) -> Response:
    rt = runtime_of(request)
    document = await rt.db.driver_read(
        lambda reader: orders.get_order(rt, reader, person.account_id, order_id, include_customer=reveal)
    )
    order = jsonio.loads(document)
    return page(request, "order.html", person, title=f"Order {order['MarketplaceOrderId']}", order=order)


@router.get("/orders/{order_id}", response_class=HTMLResponse)
async def order_page(request: Request, order_id: str, person: SignedIn) -> Response:
    return await _order_page(request, person, order_id, reveal=False)


@router.post("/orders/{order_id}/reveal", response_class=HTMLResponse)
async def reveal_customer(request: Request, order_id: str, person: SignedIn) -> Response:
    """Customer data is shown for this one response (never cached, never logged: only who looked, at which order)."""
    await checked_form(request, person)
    response = await _order_page(request, person, order_id, reveal=True)
    log.info("order_customer_revealed", order_id=order_id, account_id=person.account_id, user_id=person.user_id)
    return response
