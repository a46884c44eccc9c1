"""Orders in the app as people work them (docs/decisions/0436-app-tables.md): the table sorted by its main columns,
newest change first, with a count; filtered by marketplace, status and purchase dates (in the account's time zone);
searched by the marketplace's order id or a SKU, or by the customer's name behind the reveal's rules (a form post,
logged without the name: docs/decisions/0124-app-edits-and-reveal.md). An order's page, its customer data behind an
explicit reveal, and the order's actions."""

from __future__ import annotations

import re
import secrets
from dataclasses import replace
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, get_args
from urllib.parse import quote, urlencode

import orjson
import structlog
from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import FormData

from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import SignedIn, checked_form
from marketsync.console.render import page, page_router, see_other, table_of
from marketsync.http import idempotency
from marketsync.http.errors import IdempotencyInFlight, IdempotencyMismatch, ValidationFailed
from marketsync.kinds import kind_of, marketplace_name
from marketsync.kit import jsonio, zones
from marketsync.marketplaces import service as marketplaces
from marketsync.orders import rules, schemas
from marketsync.orders import service as orders
from marketsync.people import service as people
from marketsync.people.service import Person

router = page_router()
log = structlog.get_logger("marketsync.console")
ORDERS_PAGE = 50
# An offset is a number up to this (decision 0314's bound, within the databases' integers)...
ORDERS_MAX_OFFSET = 1_000_000
# ...but pages stop at this row of a sort and filters: skipping a million index entries takes SQLite more than a
# second (docs/decisions/0439-orders-table-speed.md); the count stops at orders.TABLE_COUNT_MAX the same way.
ORDERS_REACH = 10_000

SEARCH_MAX = 200  # an order item's SKU column; a marketplace order id is at most 100
NAME_MAX = 200  # orders.buyer_name
# Column -> whether it is first sorted descending (times: newest first).
SORTS = {"changed": True, "purchased": True, "order": False, "status": False}
FILTER_NAMES = ("marketplace", "status", "from", "to", "q")


def _beyond_reach() -> str:
    return (
        f"Pages stop at order {ORDERS_REACH:,}: narrow the filters (marketplace, status, purchase days, a search) or "
        "sort the other way to reach the other orders."
    )


def _day(value: str, field: str, errors: dict[str, list[str]]) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        errors[field] = ["A date, e.g. 2026-11-30."]
        return None


def _filters(
    query: dict[str, Any], statuses: list[str], person: Person, errors: dict[str, list[str]]
) -> orders.TableFilters:
    """The table's filters from the address (or the name search's form); what cannot be read is named in `errors`."""
    unknown = [status for status in statuses if status not in rules.ORDER_STATUSES]
    if unknown:
        errors["OrderStatuses"] = [f"One of {', '.join(rules.ORDER_STATUSES)}."]
    first = _day(str(query.get("from") or "").strip(), "From", errors)
    last = _day(str(query.get("to") or "").strip(), "To", errors)
    if first and last and last < first:
        errors["To"] = ["On or after the first day."]
    search = str(query.get("q") or "").strip()
    if len(search) > SEARCH_MAX:
        errors["q"] = [f"At most {SEARCH_MAX} characters."]
    try:
        # A day a person types is the account's day (docs/decisions/0435-account-time-zone.md): the range is whole
        # days from the first day's midnight to the last day's end.
        since = zones.start_of_day(first, person.time_zone) if first else None
        before = zones.start_of_day(last + timedelta(days=1), person.time_zone) if last else None
    except (OverflowError, ValueError):
        errors["To"] = ["A date between 0001-01-01 and 9999-12-30."]
        since = before = None
    return orders.TableFilters(
        marketplace_id=str(query.get("marketplace") or "") or None,
        statuses=[status for status in statuses if status in rules.ORDER_STATUSES] or None,
        purchased_from=since,
        purchased_before=before,
        order_id_or_sku=search or None,
    )


async def _orders_table(
    request: Request,
    person: Person,
    query: dict[str, Any],
    statuses: list[str],
    *,
    customer_name: str | None = None,
    status: int = 200,
    errors: dict[str, list[str]] | None = None,
) -> Response:
    rt = runtime_of(request)
    errors = dict(errors or {})
    filters = _filters(query, statuses, person, errors)
    if customer_name is not None:
        filters = replace(filters, customer_name=customer_name)
    kept = [(name, str(query.get(name) or "").strip()) for name in FILTER_NAMES if name != "status"]
    kept = [(name, value) for name, value in kept if value] + [("status", value) for value in statuses]
    table, table_errors = table_of(
        request, "/app/orders", SORTS, "changed", page_size=ORDERS_PAGE, max_offset=ORDERS_MAX_OFFSET, filters=kept
    )
    errors |= table_errors
    table = replace(table, reach=ORDERS_REACH)
    if table.offset + ORDERS_PAGE > ORDERS_REACH:
        errors["offset"] = [_beyond_reach()]
        table = replace(table, offset=0)
    if (filters.purchased_from or filters.purchased_before) and table.sort != "purchased":
        # A range of purchase days is read in the order of its own index: sorted by another column, the range's orders
        # would be sorted whole (seconds for a busy month, docs/decisions/0436-app-tables.md).
        table = replace(table, sort="purchased", descending=True)
    async with rt.db.read() as session:
        connections = await marketplaces.list_all(session, person.account_id)
    documents: list[dict[str, Any]] = []
    if not errors:
        found = await rt.db.driver_read(
            lambda reader: orders.order_table(
                rt, reader, person.account_id, filters, sort=table.sort, descending=table.descending,
                limit=ORDERS_PAGE, offset=table.offset,
            )
        )  # fmt: skip
        documents = [jsonio.loads(document) for document in found.documents]
        table = table.counted(found.total, len(documents), orders.TABLE_COUNT_MAX)
    return page(
        request, "orders.html", person, 400 if errors else status, title="Orders", orders=documents, table=table,
        errors=errors, filters=query, statuses=statuses, all_statuses=rules.ORDER_STATUSES,
        connections=[(c.id, marketplace_name(c.platform, c.country)) for c in connections],
        customer_name=customer_name, searched=bool(filters.order_id_or_sku or customer_name),
        beyond_reach=_beyond_reach(),
    )  # fmt: skip


@router.get("/orders", response_class=HTMLResponse)
async def orders_page(request: Request, person: SignedIn) -> Response:
    query = dict(request.query_params)
    statuses = [status for status in request.query_params.getlist("status") if status]
    search = str(query.get("q") or "").strip()
    if search and not any(query.get(name) for name in ("marketplace", "from", "to", "sort", "offset")) and not statuses:
        # The marketplace's order id of exactly one order: its page (the id a marketplace's email or a customer gives).
        rt = runtime_of(request)
        found = await rt.db.driver_read(
            lambda reader: orders.find_by_marketplace_order_id(rt, reader, person.account_id, search, limit=2)
        )
        if len(found) == 1:
            return see_other(f"/app/orders/{quote(jsonio.loads(found[0])['ServiceOrderID'], safe='')}")
    return await _orders_table(request, person, query, statuses)


@router.post("/orders", response_class=HTMLResponse)
async def orders_by_customer(request: Request, person: SignedIn) -> Response:
    """The orders of a customer, by name, letter case ignored: personal data, so under the reveal's rules
    (decision 0124): a form post (never an address, which browsers and proxies keep), answered with the page itself
    (no-store), and logged with who searched, never the name."""
    form = await checked_form(request, person)
    name = str(form.get("customer") or "").strip()
    query = {key: str(form.get(key) or "") for key in FILTER_NAMES if key != "status"}
    statuses = [str(value) for value in form.getlist("status") if value]
    if not name or len(name) > NAME_MAX:
        errors = {"Customer": [f"The customer's name as the order shows it (1 to {NAME_MAX} characters)."]}
        return await _orders_table(request, person, query, statuses, errors=errors)
    response = await _orders_table(request, person, query, statuses, customer_name=name)
    log.info("orders_customer_searched", account_id=person.account_id, user_id=person.user_id)
    return response


# -- an order's page and its actions (docs/decisions/0437-order-actions-in-the-app.md) -----------------------------

CANCEL_REASONS = {
    "OutOfStock": "Out of stock",
    "CustomerRequest": "The customer asked",
    "PricingError": "Pricing error",
    "UndeliverableAddress": "Address cannot be delivered to",
    "SuspectedFraud": "Suspected fraud",
    "Other": "Other",
}
REFUND_REASONS = {
    "CustomerReturn": "The customer returned it",
    "ItemNotReceived": "Not received",
    "ItemDamaged": "Damaged",
    "NotAsDescribed": "Not as described",
    "WrongItemSent": "Wrong item sent",
    "Cancellation": "Cancellation",
    "PriceAdjustment": "Price adjustment",
    "Goodwill": "Goodwill",
    "Other": "Other",
}
assert set(CANCEL_REASONS) == set(get_args(rules.CancelReason))
assert set(REFUND_REASONS) == set(get_args(rules.RefundReason))
# Each action: the API's operation (its idempotency scope too), request models, use case, and what the page says.
ACTIONS: dict[str, tuple[str, Any, Any, Any, str]] = {
    "confirm": ("orders.confirm", schemas.ConfirmRequest, schemas.ConfirmItem, orders.confirm, "Shipment confirmed"),
    "cancel": ("orders.cancel", schemas.CancelRequest, schemas.CancelItem, orders.cancel, "Items cancelled"),
    "refund": ("orders.refund", schemas.RefundRequest, schemas.RefundItem, orders.refund, "Refund recorded"),
}
SHARED_FIELDS = {"CarrierCode", "CarrierName", "TrackingNumber", "CancelReason", "Reason", "Currency"}
_ITEM_ERROR = re.compile(r"^OrderItems\[(\d+)\]\.?(\w*)")


def _form_key() -> str:
    """A form's token, made when the page shows it: the change's Idempotency-Key (a double submit applies it once)."""
    return secrets.token_urlsafe(18)


def _text(form: FormData, name: str) -> str | None:
    value = str(form.get(name) or "").strip()
    return value or None


def _number(text: str | None) -> Any:
    """A typed amount or quantity as the API reads JSON: a number when it is one, else the text (refused by the
    API's own rule, beside its field)."""
    if text is None:
        return None
    try:
        return int(text) if text.isdigit() else Decimal(text.replace(",", "."))
    except InvalidOperation:
        return text


def _action_body(action: str, form: FormData, order: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The API's request body from the action's form, and the items it names in body order."""
    chosen = [str(item) for item in form.getlist("item")]
    lines: list[dict[str, Any]] = []
    if action == "confirm":
        details = {name: _text(form, name) for name in ("CarrierCode", "CarrierName", "TrackingNumber")}
        lines = [{"OrderItemId": item_id, **details} for item_id in chosen]
        return {"OrderItems": lines}, chosen
    if action == "cancel":
        for item_id in chosen:
            quantity = _number(_text(form, f"quantity-{item_id}"))
            lines.append({"OrderItemId": item_id, **({"Quantity": quantity} if quantity is not None else {})})
        return {"CancelReason": _text(form, "CancelReason"), "OrderItems": lines}, chosen
    refunded = [item["OrderItemId"] for item in order["Items"] if _text(form, f"amount-{item['OrderItemId']}")]
    for item_id in refunded:
        amount = _number(_text(form, f"amount-{item_id}"))
        quantity = _number(_text(form, f"quantity-{item_id}")) or 0
        lines.append({"OrderItemId": item_id, "Amount": amount, "Quantity": quantity})
    return {"Reason": _text(form, "Reason"), "Currency": order["Currency"], "OrderItems": lines}, refunded


def _json_body(body: dict[str, Any]) -> bytes:
    return orjson.dumps(body, default=lambda value: float(value) if isinstance(value, Decimal) else str(value))


def _shown_errors(errors: dict[str, list[str]], item_ids: list[str], order: dict[str, Any]) -> dict[str, list[str]]:
    """The API's per-field messages where the form shows them: a shared field beside itself, an item's beside its
    row (`item-<id>`), the rest above the form."""
    skus = {item["OrderItemId"]: item["Sku"] for item in order["Items"]}
    shown: dict[str, list[str]] = {}
    for key, messages in errors.items():
        found = _ITEM_ERROR.match(key)
        if found and int(found[1]) < len(item_ids):
            item_id = item_ids[int(found[1])]
            target = found[2] if found[2] in SHARED_FIELDS else f"item-{item_id}"
            if target == f"item-{item_id}":
                messages = [f"{skus.get(item_id, item_id)}: {message}" for message in messages]
            shown.setdefault(target, []).extend(messages)
        elif key == "OrderItems":
            shown.setdefault("items", []).extend(messages)
        else:
            shown.setdefault(key if key in SHARED_FIELDS else "", []).extend(messages)
    return shown


async def _order_document(request: Request, person: Person, order_id: str, *, reveal: bool = False) -> dict[str, Any]:
    rt = runtime_of(request)
    document = await rt.db.driver_read(
        lambda reader: orders.get_order(rt, reader, person.account_id, order_id, include_customer=reveal)
    )
    result: dict[str, Any] = jsonio.loads(document)
    return result


async def _order_page(
    request: Request, person: Person, order_id: str, *, reveal: bool = False, status: int = 200, **context: Any
) -> Response:
    order = await _order_document(request, person, order_id, reveal=reveal)
    for item in order["Items"]:
        item["Unshipped"] = item["Quantity"] - item["ShippedQuantity"] - item["CancelledQuantity"]
    return page(
        request, "order.html", person, status, title=f"Order {order['MarketplaceOrderId']}", order=order,
        form_key=_form_key(), cancel_reasons=CANCEL_REASONS, refund_reasons=REFUND_REASONS,
        write_back=kind_of(order["Platform"]).order_write_back, **context,
    )  # fmt: skip


@router.get("/orders/{order_id}", response_class=HTMLResponse)
async def order_page(request: Request, order_id: str, person: SignedIn, done: str = "", key: str = "") -> Response:
    context: dict[str, Any] = {}
    if done in ACTIONS and key:  # the page after a change: what it did, from its stored response
        stored = await idempotency.stored_response(runtime_of(request), person.account_id, ACTIONS[done][0], key)
        if stored is not None:
            answer = jsonio.loads(stored)
            context["outcome"] = {"done": ACTIONS[done][4], "warnings": answer.get("Warnings", []),
                                  "jobs": answer.get("JobIds", [])}  # fmt: skip
    return await _order_page(request, person, order_id, **context)


@router.post("/orders/{order_id}/reveal", response_class=HTMLResponse)
async def reveal_customer(request: Request, order_id: str, person: SignedIn) -> Response:
    """Customer data is shown for this one response (never cached, never logged: only who looked, at which order)."""
    await checked_form(request, person)
    response = await _order_page(request, person, order_id, reveal=True)
    log.info("order_customer_revealed", order_id=order_id, account_id=person.account_id, user_id=person.user_id)
    rt = runtime_of(request)
    async with rt.db.transaction() as session:  # shown in the Owners' activity log too (decision 0431)
        await people.record_activity(rt, session, person, people.ActivityKind.CUSTOMER_DATA, "Showed", order_id)
    return response


@router.post("/orders/{order_id}/{action}", response_class=HTMLResponse)
async def order_action(request: Request, order_id: str, action: str, person: SignedIn) -> Response:
    """Confirm, cancel or refund through the API's own use case and checks, in two steps: the first checks everything
    and asks (what will happen, the Warnings naming a platform that will not receive it, "cannot be undone"),
    applying nothing; the second applies it once under the form's token (a double submit, a reload: the first
    outcome). Without script: the question is a page."""
    form = await checked_form(request, person)  # first, as on every form: an unknown action is a 404 after it
    if action not in ACTIONS:
        return page(request, "error.html", person, 404, title="Not found", message="No such page.")
    operation, model, item_model, use_case, _done = ACTIONS[action]
    order = await _order_document(request, person, order_id)  # 404 for another account's order
    body, item_ids = _action_body(action, form, order)
    foreign = set(item_ids) - {item["OrderItemId"] for item in order["Items"]}
    raw = _json_body(body)
    key = str(form.get("key") or "")
    rt = runtime_of(request)

    async def check(apply: bool) -> Any:
        if foreign:  # an item of another order: refused as the API refuses an unknown one, nothing else is looked at
            raise ValidationFailed(errors={"items": ["Only this order's items."]})
        if not item_ids:
            raise ValidationFailed(errors={"items": ["Choose at least one item."]})
        written = schemas.read_write_body(raw, model, item_model)
        async with rt.db.transaction() as session:
            return await use_case(rt, session, person.account_id, written, apply=apply)

    try:
        if form.get("step") != "apply" or not key or len(key) > 64:
            preview = await check(apply=False)
            fields = [(name, str(value)) for name, value in form.multi_items() if name not in ("csrf", "step")]
            return page(
                request, "order_action.html", person, title=f"Order {order['MarketplaceOrderId']}", order=order,
                action=action, fields=fields, warnings=preview["Warnings"], items=item_ids, body=body,
                key_missing=not key,
            )  # fmt: skip

        async def work(session: AsyncSession) -> idempotency.Outcome:
            written = schemas.read_write_body(raw, model, item_model)
            return idempotency.Outcome(200, jsonio.dumps(await use_case(rt, session, person.account_id, written)))

        if foreign or not item_ids:
            await check(apply=False)
        await idempotency.run_once(rt, person.account_id, operation, key, raw, work)
    except ValidationFailed as exc:
        errors = _shown_errors(exc.errors or {"": [exc.title]}, item_ids, order)
        return await _order_page(request, person, order_id, status=400, errors=errors, failed=action)
    except (IdempotencyMismatch, IdempotencyInFlight) as exc:
        message = "This form was sent already (for another change, or it is still being applied): see the order below."
        return await _order_page(request, person, order_id, status=exc.status, errors={"": [message]}, failed=action)
    log.info("order_action_applied", order_id=order_id, action=action, user_id=person.user_id)
    return see_other(f"/app/orders/{quote(order_id, safe='')}?{urlencode({'done': action, 'key': key})}")
