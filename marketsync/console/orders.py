"""Orders in the app as people work them (docs/decisions/0436-app-tables.md): the table sorted by its main columns,
newest change first, with a count; filtered by marketplace, status and purchase dates (in the account's time zone);
searched by the marketplace's order id or a SKU, or by the customer's name behind the reveal's rules (a form post,
logged without the name: docs/decisions/0124-app-edits-and-reveal.md). An order's page, its customer data behind an
explicit reveal, and the order's actions."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from typing import Any
from urllib.parse import quote

import structlog
from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from marketsync.auth.dependencies import runtime_of
from marketsync.console.guards import SignedIn, checked_form
from marketsync.console.render import page, page_router, see_other, table_of
from marketsync.kinds import marketplace_name
from marketsync.kit import jsonio, zones
from marketsync.marketplaces import service as marketplaces
from marketsync.orders import repository, rules
from marketsync.orders import service as orders
from marketsync.people.service import Person

router = page_router()
log = structlog.get_logger("marketsync.console")
ORDERS_PAGE = 50
# Deeper than 20,000 pages a person filters; the bound keeps OFFSET within the databases' integers (decision 0314).
ORDERS_MAX_OFFSET = 1_000_000
SEARCH_MAX = 200  # an order item's SKU column; a marketplace order id is at most 100
NAME_MAX = 200  # orders.buyer_name
# Column -> whether it is first sorted descending (times: newest first).
SORTS = {"changed": True, "purchased": True, "order": False, "status": False}
FILTER_NAMES = ("marketplace", "status", "from", "to", "q")


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
) -> repository.TableFilters:
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
    return repository.TableFilters(
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
        table = table.counted(found.total, len(documents))
    return page(
        request, "orders.html", person, 400 if errors else status, title="Orders", orders=documents, table=table,
        errors=errors, filters=query, statuses=statuses, all_statuses=rules.ORDER_STATUSES,
        connections=[(c.id, marketplace_name(c.platform, c.country)) for c in connections],
        customer_name=customer_name, searched=bool(filters.order_id_or_sku or customer_name),
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
