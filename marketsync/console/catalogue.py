"""The catalogue in the app: search by the start of a SKU (docs/decisions/0336-catalogue-search.md), a product's
page with its listings, price and stock edited by hand (the API's own write path), and price/stock files imported
as the CLI imports them; older imports a page at a time."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Query, Request
from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import UploadFile

from marketsync.auth.dependencies import runtime_of
from marketsync.catalog.listings import app_fields as listing_fields
from marketsync.console.guards import SignedIn, checked_form
from marketsync.console.render import (
    cursor_text,
    errors_of,
    is_partial,
    money,
    page,
    page_cursor,
    page_router,
    see_other,
    table_of,
)
from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.inventory import rules
from marketsync.inventory import service as inventory
from marketsync.jobs import service as jobs
from marketsync.kinds import marketplace_name
from marketsync.marketplaces import service as marketplaces
from marketsync.people import service as people
from marketsync.people.service import Person

router = page_router()
CATALOGUE_PAGE = 50
# Deeper than 20,000 pages a person searches by SKU; the bound keeps OFFSET within the databases' integers
# (docs/decisions/0314-app-query-bounds.md).
CATALOGUE_MAX_OFFSET = 1_000_000
IMPORTS_PAGE = 20
# Column -> whether it is first sorted descending (prices, stock and times: largest and newest first).
CATALOGUE_SORTS = {"sku": False, "price": True, "stock": True, "changed": True}
# Price and stock have no index (every push moves them: docs/decisions/0457): sorting by them reads the whole
# catalogue, offered up to this many products (its last page 0.2 s on SQLite; beyond, a person searches by SKU).
SORT_BY_VALUE_MAX_PRODUCTS = 100_000
SORTED_BY_VALUE = ("price", "stock")
SkuParameter = Annotated[str, Query(max_length=rules.MAX_SKU_LENGTH)]


@router.get("/catalogue", response_class=HTMLResponse)
async def catalogue_page(
    request: Request,
    person: SignedIn,
    sku: SkuParameter = "",
    offset: Annotated[int, Query(ge=0, le=CATALOGUE_MAX_OFFSET)] = 0,
    after: SkuParameter = "",
) -> Response:
    sku = sku.strip()
    if sku:  # the search: SKUs starting with the text, a page after the previous page's last SKU
        async with runtime_of(request).db.read() as session:
            found = await inventory.search_products(
                session, person.account_id, sku, after=after or None, limit=CATALOGUE_PAGE + 1
            )
        more = len(found) > CATALOGUE_PAGE
        found = found[:CATALOGUE_PAGE]
        return page(
            request, "catalogue.html", person, title="Catalogue", products=found, sku=sku, searched=True,
            paged=bool(after), next_after=found[-1].product.sku if more else None, page_size=CATALOGUE_PAGE,
        )  # fmt: skip
    products: list[inventory.ProductView] = []
    async with runtime_of(request).db.read() as session:
        held = await inventory.product_count(session, person.account_id)
        sorts = CATALOGUE_SORTS
        if held > SORT_BY_VALUE_MAX_PRODUCTS:
            sorts = {column: first for column, first in CATALOGUE_SORTS.items() if column not in SORTED_BY_VALUE}
        table, errors = table_of(
            request, "/app/catalogue", sorts, "sku", page_size=CATALOGUE_PAGE, max_offset=CATALOGUE_MAX_OFFSET
        )
        if "sort" in errors and request.query_params.get("sort") in SORTED_BY_VALUE:
            errors["sort"] = [
                f"Sorting by price or stock is offered for up to {SORT_BY_VALUE_MAX_PRODUCTS:,} products, and this "
                f"catalogue holds {held:,}: search by SKU, or sort by SKU or by last change."
            ]
        if not errors:
            products = await inventory.product_table(
                session, person.account_id, sort=table.sort, descending=table.descending, limit=CATALOGUE_PAGE,
                offset=offset,
            )  # fmt: skip
            table = table.counted(held, len(products))
    return page(
        request, "catalogue.html", person, 400 if errors else 200, title="Catalogue", products=products, table=table,
        sku=sku, offset=offset, errors=errors, past_the_end=offset > 0 and not products,
    )  # fmt: skip


async def _product_page(request: Request, person: Person, sku: str, status: int = 200, **context: Any) -> Response:
    async with runtime_of(request).db.read() as session:
        view = await inventory.get_product(session, person.account_id, sku)
        listings = await listing_fields.product_listings(session, person.account_id, view.product.id)
    product = view.product
    return page(
        request, "product.html", person, status, title=f"Product {product.sku}", product=product, listings=listings,
        **context,
    )  # fmt: skip


# A hand edit schedules one push per connection listing the product; the address names this many at most (18 ids
# and their commas stay within a query value's 500 characters: decision 0314).
MAX_PUSH_JOBS = 18


def _job_ids(text: str) -> list[str]:
    """The push jobs a hand edit's redirect names (`jobs=ID,ID`); anything that is not an id is left out."""
    ids = [part for part in text.split(",") if part.isalnum() and len(part) <= 40]
    return list(dict.fromkeys(ids))[:MAX_PUSH_JOBS]


async def _pushes(request: Request, person: Person, job_ids: list[str]) -> list[tuple[jobs.JobDetails, str]]:
    """Each push job of a hand edit with its marketplace's name, as it stands now (another account's id: left out)."""
    shown: list[tuple[jobs.JobDetails, str]] = []
    async with runtime_of(request).db.read() as session:
        for job_id in job_ids:
            try:
                job = await jobs.job_details(session, person.account_id, job_id)
            except NotFound:
                continue
            name = ""
            if job.marketplace_id:
                try:
                    connection = await marketplaces.get(session, person.account_id, job.marketplace_id)
                    name = marketplace_name(connection.platform, connection.country)
                except NotFound:
                    name = ""  # disconnected since
            shown.append((job, name))
    return shown


@router.get("/product", response_class=HTMLResponse)
async def product_page(
    request: Request,
    person: SignedIn,
    sku: SkuParameter,
    edited: str = "",
    sent: str = "",
    jobs_sent: Annotated[str, Query(alias="jobs")] = "",
) -> Response:
    # The SKU is a query parameter: a SKU may hold any character, a slash included.
    if edited not in rules.PUSH_OUTCOMES:
        return await _product_page(request, person, sku)
    # After a hand edit's redirect: what it did, from the address; its warnings derived again (decision 0341); each
    # marketplace push's outcome as it stands, refreshed until every push has ended (decision 0402).
    pushes = await _pushes(request, person, _job_ids(jobs_sent))
    poll = f"/app/product?{urlencode({'sku': sku, 'edited': edited, 'sent': sent, 'jobs': jobs_sent})}"
    if is_partial(request):
        return page(request, "_pushes.html", person, pushes=pushes, poll=poll)
    async with runtime_of(request).db.read() as session:
        product = (await inventory.get_product(session, person.account_id, sku)).product
        warnings = await inventory.hand_edit_warnings(
            session, person.account_id, product, sent_price="price" in sent.split(","),
            sent_quantity="quantity" in sent.split(","), pushed=bool(pushes),
        )  # fmt: skip
    return await _product_page(request, person, sku, outcome=edited, warnings=warnings, pushes=pushes, poll=poll)


@router.post("/product", response_class=HTMLResponse)
async def edit_product(request: Request, person: SignedIn, sku: SkuParameter) -> Response:
    """A person's edit goes through the API's push: the same rules, InventoryChanged (writer MerchantPush, channel
    Api, the channel the spec leaves for app edits) and the marketplace pushes
    (docs/decisions/0124-app-edits-and-reveal.md)."""
    form = await checked_form(request, person)
    raw_price, raw_quantity = str(form.get("price") or "").strip(), str(form.get("quantity") or "").strip()
    price, quantity, problems = rules.parse_values(raw_price, raw_quantity)
    if not raw_price and not raw_quantity:
        problems[""] = "Enter a price, a quantity or both."
    if problems:
        errors = {name: [message] for name, message in problems.items()}
        return await _product_page(request, person, sku, 400, errors=errors, price=raw_price, quantity=raw_quantity)
    rt = runtime_of(request)
    async with rt.db.read() as session:
        product = (await inventory.get_product(session, person.account_id, sku)).product
    # The form holds the current values: one left as it is beside one changed is not sent (a stock sent again as it
    # was would push it to the marketplaces too). Both as they were: sent, and Unchanged, as the API answers.
    same_price, same_quantity = price == product.price, quantity == product.quantity
    if same_price and quantity is not None and not same_quantity:
        price = None
    elif same_quantity and price is not None and not same_price:
        quantity = None
    async with rt.db.transaction() as session:
        result = await inventory.push_price_quantity(
            rt, session, person.account_id, [inventory.PushItem(product.sku, price, quantity)], propagate=True
        )
        # The activity log (decision 0431): the SKU, each value as it was and as the person set it.
        changes = {"Price": (money(product.price), money(price)), "Stock": (str(product.quantity), str(quantity))}
        sent_values = {"Price": price, "Stock": quantity}
        details = {name: f"{old} → {new}" for name, (old, new) in changes.items() if sent_values[name] is not None}
        await people.record_activity(rt, session, person, people.ActivityKind.HAND_EDIT, "Edited", product.sku, details)
    # Post/redirect/get: reloading the page after the edit does not push again. The address names the push jobs, so
    # the page shows each one's outcome as it arrives (decision 0402).
    sent = ",".join(name for name, value in (("price", price), ("quantity", quantity)) if value is not None)
    edited = {
        "sku": product.sku,
        "edited": result.results[0].result,
        "sent": sent,
        "jobs": ",".join(result.job_ids[:MAX_PUSH_JOBS]),
    }
    return see_other(f"/app/product?{urlencode(edited)}")


# -- imports ----------------------------------------------------------------------------------------------------


async def _imports_page(
    request: Request, person: Person, status: int = 200, *, before: str = "", **context: Any
) -> Response:
    rt = runtime_of(request)
    cursor = page_cursor(before) if before else None
    if before and cursor is None:
        status, context["errors"] = 400, {"before": ["Not a page of this list; start again from the first page."]}
        imports = []
    else:
        async with rt.db.read() as session:
            imports = await inventory.recent_imports(session, person.account_id, IMPORTS_PAGE, before=cursor)
    older = None
    if len(imports) == IMPORTS_PAGE:
        last = imports[-1][0]
        older = urlencode({"before": cursor_text(last.created_at, last.id)})
    template = "_imports.html" if is_partial(request) else "imports.html"
    return page(
        request, template, person, status, title="Imports", imports=imports, max_bytes=rt.settings.max_body_bytes,
        older=older, before=before if cursor is not None else "", **context,
    )  # fmt: skip


@router.get("/imports", response_class=HTMLResponse)
async def imports_page(request: Request, person: SignedIn, before: str = "") -> Response:
    return await _imports_page(request, person, before=before)


@router.post("/imports", response_class=HTMLResponse)
async def upload_import(request: Request, person: SignedIn) -> Response:
    form = await checked_form(request, person)
    upload = form.get("file")
    # A refused upload shows the form again as it was sent: an unticked box ticked again would push on resubmit.
    propagate = bool(form.get("propagate"))
    if not isinstance(upload, UploadFile) or not upload.filename:
        await form.close()
        errors = {"File": ["Choose a CSV file to import."]}
        return await _imports_page(request, person, 400, errors=errors, propagate=propagate)
    rt = runtime_of(request)
    try:
        content = await upload.read()
    finally:
        await form.close()  # the spooled upload's temporary file
    try:
        # Read whole before the transaction, off the event loop: half a second of parsing for 2 MB.
        checked = await asyncio.to_thread(inventory.checked_import_file, content)
        async with rt.db.transaction() as session:
            started = await inventory.start_import(
                rt, session, person.account_id, upload.filename, checked, propagate=propagate, created_by=person.email
            )
    except ValidationFailed as exc:
        return await _imports_page(request, person, 400, errors=errors_of(exc), propagate=propagate)
    return see_other(f"/app/imports/{started.id}")


@router.get("/imports/{import_id}", response_class=HTMLResponse)
async def import_page(request: Request, import_id: str, person: SignedIn) -> Response:
    async with runtime_of(request).db.read() as session:
        upload, job = await inventory.get_import(session, person.account_id, import_id)
    template = "_import_report.html" if is_partial(request) else "import.html"
    return page(
        request, template, person, title=f"Import of {upload.file_name}", upload=upload, job=job,
        report=upload.report, stored_errors_max=inventory.STORED_ERRORS_MAX,
    )  # fmt: skip
