"""What every page module shares: the templates, the page response (never cached) and the redirect after a post."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup, escape

from marketsync.http.errors import ApiError, ValidationFailed
from marketsync.kinds import site_currency
from marketsync.kit import zones
from marketsync.kit.timestamps import in_utc
from marketsync.people.service import Person

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")


def money(value: object) -> str:
    """An amount as money is written: at least two decimals (`123.4` is `123.40`), never fewer digits than it has."""
    if value is None or value == "":
        return "—"
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    if not amount.is_finite():
        return str(value)
    exponent = amount.as_tuple().exponent
    return str(amount.quantize(Decimal("0.01")) if isinstance(exponent, int) and exponent > -2 else amount)


templates.env.filters["money"] = money
templates.env.filters["site_currency"] = site_currency


def as_moment(value: datetime | str) -> datetime:
    """A datetime as a column holds it (naive: UTC), or an order document's ISO text."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return in_utc(value)


def zone_of(context: Context) -> str:
    person = context.get("person")
    return getattr(person, "time_zone", zones.DEFAULT) or zones.DEFAULT


@pass_context
def when(context: Context, value: datetime | str | None) -> Markup:
    """A time in the account's time zone, the zone named (`2026-03-29 03:30:00 CEST`), as a `<time>` carrying the
    UTC instant: every time the app shows (docs/decisions/0435-account-time-zone.md). None: a dash."""
    if value is None or value == "":
        return Markup("—")
    moment = as_moment(value)
    stamp = moment.isoformat().replace("+00:00", "Z")
    return Markup('<time datetime="{}">{}</time>').format(stamp, escape(zones.shown(moment, zone_of(context))))


templates.env.filters["when"] = when

# What a category needs beyond its attributes (a taxonomy's OffApiRequirements), in words.
REQUIREMENT_WORDS = {"Images": "images", "BusinessPolicy": "a business policy"}


def needs_words(requirements: list[str]) -> str:
    """["Images", "BusinessPolicy"] as "images and a business policy"."""
    words = [REQUIREMENT_WORDS.get(name, name) for name in requirements]
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 2 else words)


templates.env.filters["needs_words"] = needs_words

# A job's type and state as the app says them; the API's names stay the form values (filters) and the API's own.
JOB_TYPE_WORDS = {
    "PriceStockPush": "Price and stock push",
    "OrderPull": "Order pull",
    "ListingMirror": "Listing pull",
    "ListingPublish": "Listing publish",
    "OrderWriteBack": "Order change sent to the marketplace",
    "InventoryImport": "File import",
    "TaxonomyLoad": "Category tree load",
}
JOB_STATUS_WORDS = {
    "NotStarted": "Waiting",
    "Published": "Queued",
    "InProcess": "Running",
    "Completed": "Completed",
    "Failed": "Failed",
    "Cancelled": "Cancelled",
}
templates.env.filters["job_type"] = lambda value: JOB_TYPE_WORDS.get(str(value), str(value))
templates.env.filters["job_status"] = lambda value: JOB_STATUS_WORDS.get(str(value), str(value))
# Every page is per person: never stored by a shared or browser cache.
NO_STORE = {"Cache-Control": "no-store"}


# The bounds of a page's address (docs/decisions/0314-app-query-bounds.md): lists and searches take a few short
# parameters; the order list's cursor, the longest, is at most 500 characters (as the API's Cursor).
MAX_QUERY_PARAMETERS = 30
MAX_QUERY_VALUE = 500
MAX_QUERY_STRING = 4096


NOT_A_PAGE = "Not a page of this list; start again from the first page."


def page_cursor(before: str) -> tuple[datetime, str] | None:
    """The (time, id) of the last row a newest-first list showed (jobs, imports, webhook attempts), from its
    `<ISO time>|<id>`: the next, older, page starts after it. None when the text is not one, also for a time UTC
    cannot hold (`0001-01-01T00:00:00+00:01` is in year 0 there)."""
    at, _, row_id = before.partition("|")
    try:
        moment = datetime.fromisoformat(at)
        if moment.tzinfo is None or not row_id:  # the app's links carry both; a time without an offset has no meaning
            return None
        return in_utc(moment), row_id
    except ValueError:
        return None


def cursor_text(at: datetime, row_id: str) -> str:
    """`page_cursor`'s text for the row at `at` with `row_id`."""
    return f"{at.isoformat()}|{row_id}"


async def bounded_query(request: Request) -> None:
    """Every page's query string within the bounds, or a 400 page naming what is too long or too many."""
    query = request.url.query
    parameters = request.query_params.multi_items()
    errors: dict[str, list[str]] = {}
    if len(query) > MAX_QUERY_STRING:
        errors["address"] = [f"The address is too long: at most {MAX_QUERY_STRING} characters after the ?."]
    if len(parameters) > MAX_QUERY_PARAMETERS:
        errors.setdefault("address", []).append(
            f"Too many parameters: at most {MAX_QUERY_PARAMETERS}, this address has {len(parameters)}."
        )
    for name, value in parameters:
        if len(value) > MAX_QUERY_VALUE:
            errors[name[:50]] = [f"At most {MAX_QUERY_VALUE} characters."]
    if errors:
        raise ValidationFailed(errors=errors)


def page_router() -> APIRouter:
    return APIRouter(prefix="/app", include_in_schema=False, dependencies=[Depends(bounded_query)])


def is_app_path(path: str) -> bool:
    return path == "/app" or path.startswith("/app/")


def page(request: Request, template: str, person: Person | None, status: int = 200, **context: Any) -> Response:
    return templates.TemplateResponse(
        request, template, {"person": person, **context}, status_code=status, headers=NO_STORE
    )


# What an error page says for a status, when no route said more.
ERROR_PAGES = {
    400: ("Not understood", "The address or the form could not be read."),
    404: ("Not found", "No such page."),
    405: ("Not found", "This page does not take that kind of request."),
    408: ("Too slow", "What was sent did not arrive in time. Try again."),
    413: ("Too large", "The upload is larger than the service accepts."),
    500: ("Something went wrong", "The app could not answer this request. Try again in a moment."),
    503: ("Busy", "The service cannot answer for a moment. Try again in a few seconds."),
}


def error_page(status: int, headers: dict[str, str] | None = None, *, message: str | None = None) -> Response:
    """An error page without a request: also what the outermost middleware answers for an unexpected error, or for
    a request it refused before the app (too large, a NUL character)."""
    title, standard = ERROR_PAGES.get(status, ("Something went wrong", "The request failed."))
    message = message or standard
    html = templates.get_template("error.html").render(person=None, title=title, message=message)
    extra = {"Retry-After": "1"} if status == 503 else {}
    return HTMLResponse(html, status_code=status, headers={**NO_STORE, **extra, **(headers or {})})


def see_other(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303, headers=NO_STORE)


def errors_of(exc: ApiError) -> dict[str, list[str]]:
    """The API's own per-field messages, shown beside the fields; a refusal with none shows its title."""
    return exc.errors or {"": [exc.title]}


# -- sortable tables (docs/decisions/0436-app-tables.md) ---------------------------------------------------------

templates.env.filters["count"] = lambda value: f"{int(value):,}"


@dataclass(frozen=True)
class Table:
    """A sorted, paged table's state as its address says it. Every link it makes keeps the page's filters: a header
    sorts by its column (again: the other way), Previous and Next move by a page."""

    path: str
    filters: tuple[tuple[str, str], ...]
    sorts: Mapping[str, bool]  # column -> whether it sorts newest/largest first when first chosen
    default_sort: str
    sort: str
    descending: bool
    offset: int
    page_size: int
    total: int = 0
    shown: int = 0
    count_max: int | None = None  # the count stops here: a total above it is "more than" this
    reach: int | None = None  # pages stop at this row: deeper rows are reached by filters or another sort

    @property
    def more_than(self) -> int | None:
        """The count's bound when the total passed it (the table says "of more than N"), else None."""
        return self.count_max if self.count_max is not None and self.total > self.count_max else None

    def _link(self, sort: str, descending: bool, offset: int) -> str:
        params = list(self.filters)
        if (sort, descending) != (self.default_sort, self.sorts[self.default_sort]):
            params += [("sort", sort), ("dir", "desc" if descending else "asc")]
        if offset:
            params.append(("offset", str(offset)))
        return f"{self.path}?{urlencode(params)}" if params else self.path

    def sort_link(self, column: str) -> str:
        descending = not self.descending if column == self.sort else self.sorts[column]
        return self._link(column, descending, 0)

    def aria_sort(self, column: str) -> str | None:
        if column != self.sort:
            return None
        return "descending" if self.descending else "ascending"

    @property
    def previous(self) -> str | None:
        return self._link(self.sort, self.descending, max(self.offset - self.page_size, 0)) if self.offset else None

    @property
    def reach_ended(self) -> bool:
        """This page is the last one the table reaches, and rows lie beyond it."""
        return self.reach is not None and self.offset + self.page_size >= self.reach and self.total > self.reach

    @property
    def next(self) -> str | None:
        if self.offset + self.page_size >= min(self.total, self.reach or self.total):
            return None
        return self._link(self.sort, self.descending, self.offset + self.page_size)

    @property
    def first(self) -> str:
        return self._link(self.sort, self.descending, 0)

    def counted(self, total: int, shown: int, count_max: int | None = None) -> Table:
        return replace(self, total=total, shown=shown, count_max=count_max)


def table_of(
    request: Request,
    path: str,
    sorts: Mapping[str, bool],
    default_sort: str,
    *,
    page_size: int,
    max_offset: int,
    filters: Sequence[tuple[str, str]] = (),
) -> tuple[Table, dict[str, list[str]]]:
    """The table the address asks for (`sort`, `dir`, `offset`), and what in it cannot be read, by parameter:
    an unreadable one is named, and the default taken instead."""
    query = request.query_params
    errors: dict[str, list[str]] = {}
    sort = query.get("sort") or default_sort
    if sort not in sorts:
        errors["sort"] = [f"Sort by one of: {', '.join(sorts)}."]
        sort = default_sort
    direction = query.get("dir") or ("desc" if sorts[sort] else "asc")
    if direction not in ("asc", "desc"):
        errors["dir"] = ["asc or desc."]
        direction = "desc" if sorts[sort] else "asc"
    offset_text = query.get("offset") or "0"
    offset = int(offset_text) if offset_text.isdigit() and len(offset_text) <= 9 else -1
    if not 0 <= offset <= max_offset:
        errors["offset"] = [f"A row number from 0 to {max_offset:,}."]
        offset = 0
    table = Table(path, tuple(filters), sorts, default_sort, sort, direction == "desc", offset, page_size)
    return table, errors


def is_partial(request: Request) -> bool:
    """An htmx refresh of a page's live part (progress, health), not a whole page."""
    return bool(request.headers.get("hx-request"))
