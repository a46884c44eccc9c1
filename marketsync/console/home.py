"""The app's home page: what needs attention, each count from one query and each with a link to where it is fixed
(docs/decisions/0430-home-page.md); and the listings that need attention, which the counts link to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Query, Request
from fastapi.responses import HTMLResponse, Response

from marketsync.auth.dependencies import runtime_of
from marketsync.catalog.listings import app_fields as listing_fields
from marketsync.console.guards import SignedIn
from marketsync.console.render import page, page_router
from marketsync.inventory import service as inventory
from marketsync.jobs import service as jobs
from marketsync.kit.clock import iso
from marketsync.marketplaces import service as marketplaces
from marketsync.orders import service as orders
from marketsync.webhooks import service as webhooks

router = page_router()

# What "recent" is on the home page: failed jobs and imports of this long ago still ask for a look.
RECENT = timedelta(days=7)
# An order paid for and not shipped after this long is late enough to show.
UNSHIPPED_AFTER = timedelta(days=1)
# A count goes no further than this: "1,000+" says enough, and no count reads more than 1,001 index entries.
AT_MOST = 1_000
LISTINGS_PAGE = 50
MAX_OFFSET = 1_000_000  # within the databases' integers (docs/decisions/0314-app-query-bounds.md)


@dataclass(frozen=True)
class Attention:
    """One thing to look at: how many, what they are in words, and the page where they are fixed."""

    key: str
    count: int
    words: str
    fix: str  # the link's words: what to do there (never a page's name, which the navigation has)
    href: str

    @property
    def shown(self) -> str:
        return f"{AT_MOST:,}+" if self.count > AT_MOST else f"{self.count:,}"


def _words(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
async def home(request: Request, person: SignedIn) -> Response:
    rt = runtime_of(request)
    now = rt.clock.now()
    late = now - UNSHIPPED_AFTER
    async with rt.db.read() as session:
        rejected, held = await listing_fields.listings_needing_attention(session, person.account_id, AT_MOST)
        reauthorise, unhealthy = await marketplaces.connections_needing_attention(session, person.account_id)
        failed_jobs = await jobs.failed_since(session, person.account_id, now - RECENT, AT_MOST)
        disabled = await webhooks.disabled_subscriptions(session, person.account_id)
        failed_imports = await inventory.imports_with_failed_rows(session, person.account_id, now - RECENT, AT_MOST)
        unshipped = await orders.unshipped_before(session, person.account_id, late, AT_MOST)
    late_orders = urlencode([("status", status) for status in orders.AWAITING_SHIPMENT] + [("to_date", iso(late))])
    items = [
        Attention(
            "rejected",
            rejected,
            _words(rejected, "listing rejected by its marketplace", "listings rejected by their marketplace"),
            "Complete them on their listing pages",
            "/app/listings?needs=rejected",
        ),
        Attention(
            "held",
            held,
            _words(held, "listing waiting for its fill-ins", "listings waiting for their fill-ins"),
            "Fill in what their categories still need",
            "/app/listings?needs=fill-ins",
        ),
        Attention(
            "reauthorise",
            reauthorise,
            _words(reauthorise, "marketplace needing reauthorisation", "marketplaces needing reauthorisation"),
            "Reauthorise them",
            "/app/marketplaces",
        ),
        Attention(
            "unhealthy",
            unhealthy,
            _words(unhealthy, "marketplace connection unhealthy", "marketplace connections unhealthy"),
            "See their health",
            "/app/marketplaces",
        ),
        Attention(
            "failed-jobs",
            failed_jobs,
            _words(failed_jobs, "job failed in the last 7 days", "jobs failed in the last 7 days"),
            "See why each failed",
            "/app/jobs?status=Failed",
        ),
        Attention(
            "disabled-webhooks",
            disabled,
            _words(disabled, "webhook subscription disabled", "webhook subscriptions disabled"),
            "Replace or delete them",
            "/app/webhooks",
        ),
        Attention(
            "failed-imports",
            failed_imports,
            _words(
                failed_imports,
                "import with rows not applied in the last 7 days",
                "imports with rows not applied in the last 7 days",
            ),
            "Read their reports",
            "/app/imports",
        ),
        Attention(
            "unshipped",
            unshipped,
            _words(unshipped, "order not shipped for more than a day", "orders not shipped for more than a day"),
            "Confirm their shipments",
            f"/app/orders?{late_orders}",
        ),
    ]
    return page(request, "home.html", person, title="Home", items=items, waiting=[i for i in items if i.count])


# The lists the home page's listing counts link to: the value of `needs`, and what the page says.
NEEDS = {
    "rejected": ("Listings rejected by their marketplace", False),
    "fill-ins": ("Listings waiting for their fill-ins", True),
}


@router.get("/listings", response_class=HTMLResponse)
async def listings_to_fix(
    request: Request,
    person: SignedIn,
    needs: str = "rejected",
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> Response:
    title, held = NEEDS.get(needs, NEEDS["rejected"])
    async with runtime_of(request).db.read() as session:
        listings, total = await listing_fields.listings_to_fix(
            session, person.account_id, held=held, limit=LISTINGS_PAGE, offset=offset
        )
    return page(
        request, "listings.html", person, title=title, listings=listings, total=total, offset=offset,
        page_size=LISTINGS_PAGE, needs=needs if needs in NEEDS else "rejected",
    )  # fmt: skip
