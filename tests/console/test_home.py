"""The app's home page (issue 41, decision 0430): what needs attention, each count from one query, each with a link
to where it is fixed, for this account only; the listings it links to. Over real HTTP, on both databases, with the
clock frozen so "the last 7 days" and "more than a day" are known."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from marketsync.console import home
from marketsync.kit.clock import FrozenClock
from marketsync.kit.ids import new_id
from marketsync.models import Job, Listing
from marketsync.models.inventory import InventoryImport
from marketsync.models.webhooks import WebhookSubscription
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.inventory.support import add_products
from tests.orders.support import ingest, pulled_order
from tests.support.factories import make_account, make_connection

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


def _count(page: str, key: str) -> tuple[int, str]:
    """The count of the home page's item `key` and its link to where it is fixed (none when there is nothing)."""
    found = re.search(rf'id="attention-{key}-what"><strong class="count">(\d+)</strong>', page)
    assert found is not None, page
    link = re.search(rf'<a href="([^"]+)" id="attention-{key}-fix"', page)
    return int(found.group(1)), link.group(1).replace("&amp;", "&") if link else ""


async def _listing(rt: Runtime, account_id: str, product_id: str, marketplace_id: str, **values: object) -> None:
    async with rt.db.transaction() as session:
        session.add(
            Listing(
                id=new_id(), account_id=account_id, product_id=product_id, marketplace_id=marketplace_id,
                attributes={}, created_at=NOW, updated_at=NOW, **values,
            )
        )  # fmt: skip


async def _job(rt: Runtime, account_id: str, status: str, created: datetime, job_type: str = "PriceStockPush") -> str:
    job_id = new_id()
    async with rt.db.transaction() as session:
        session.add(
            Job(
                id=job_id, account_id=account_id, type=job_type, status=status, payload={}, run_after=created,
                created_at=created, updated_at=created, finished_at=created,
                failure_reason="The marketplace said no" if status == "Failed" else None,
            )
        )  # fmt: skip
    return job_id


async def _import(rt: Runtime, account_id: str, created: datetime, **counts: int) -> None:
    report = {"Rows": 3, "Updated": 0, "Unchanged": 0, "NotFound": 0, "Ambiguous": 0, "Failed": 0, "Invalid": 0}
    job_id = await _job(rt, account_id, "Completed", created, "InventoryImport")
    async with rt.db.transaction() as session:
        session.add(
            InventoryImport(
                id=new_id(), account_id=account_id, job_id=job_id, file_name="stock.csv", content=b"", propagate=True,
                last_line=3, report={**report, **counts}, created_at=created,
            )
        )  # fmt: skip


async def _subscription(rt: Runtime, account_id: str, *, active: bool) -> None:
    async with rt.db.transaction() as session:
        session.add(
            WebhookSubscription(
                id=new_id(), account_id=account_id, url="https://hooks.example.com/in", event_types=["OrderCreated"],
                secret_encrypted="t1:none", is_active=active, consecutive_failures=0 if active else 20,
                disabled_at=None if active else NOW, created_at=NOW,
            )
        )  # fmt: skip


async def _something_of_each_kind(rt: Runtime, account_id: str) -> None:
    """Two of each thing that needs attention, beside one of the same kind that does not."""
    uk = await make_connection(rt, account_id, "P1", "UK")
    de = await make_connection(rt, account_id, "P2", "DE")
    us = await make_connection(rt, account_id, "P3", "US")
    fr = await make_connection(rt, account_id, "P4", "FR")
    async with rt.db.transaction() as session:
        for connection, reauthorise, healthy in ((de, True, False), (us, False, False), (fr, True, False)):
            merged = await session.merge(connection)
            merged.requires_reauthorization, merged.is_healthy = reauthorise, healthy
    ids = await add_products(rt, account_id, [(sku, "9.50", 1) for sku in ("REJ-1", "REJ-2", "HELD-1", "LIVE-1")])
    held = {"Held": {"CategoryId": "C1", "ProductTypeViewId": "V1", "Attributes": {}, "AppAttributes": {}}}
    await _listing(rt, account_id, ids["REJ-1"], uk.id, status="Rejected", last_error="Images are required")
    await _listing(rt, account_id, ids["REJ-2"], uk.id, status="Rejected")
    await _listing(rt, account_id, ids["HELD-1"], uk.id, status="Live", app_fields=held)
    await _listing(rt, account_id, ids["LIVE-1"], uk.id, status="Live", app_fields={"Images": ["https://i.example/1"]})
    await _job(rt, account_id, "Failed", NOW - timedelta(days=1))
    await _job(rt, account_id, "Failed", NOW - timedelta(days=6, hours=23))
    await _job(rt, account_id, "Failed", NOW - timedelta(days=8))  # older than the last 7 days
    await _job(rt, account_id, "Completed", NOW - timedelta(hours=1))
    await _subscription(rt, account_id, active=False)
    await _subscription(rt, account_id, active=True)
    await _import(rt, account_id, NOW - timedelta(hours=2), Failed=1)
    await _import(rt, account_id, NOW - timedelta(days=2), Invalid=2, NotFound=1)
    await _import(rt, account_id, NOW - timedelta(hours=1), Updated=3)  # every row applied
    await _import(rt, account_id, NOW - timedelta(days=9), Failed=3)  # older than the last 7 days
    bought = NOW - timedelta(days=1, hours=1)
    await ingest(
        rt,
        uk,
        dataclasses.replace(pulled_order(status="Unshipped"), purchase_date=bought),
        dataclasses.replace(pulled_order(status="Unshipped"), purchase_date=NOW - timedelta(days=5)),
        dataclasses.replace(pulled_order(status="Unshipped"), purchase_date=NOW - timedelta(hours=3)),  # < a day
        dataclasses.replace(pulled_order(status="Shipped"), purchase_date=bought),
    )


async def test_the_home_page_counts_what_needs_attention_with_a_link_to_where_it_is_fixed(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    account_id = await make_account(rt)
    await _something_of_each_kind(rt, account_id)
    await _something_of_each_kind(rt, await make_account(rt))  # another account's: never counted here
    owner = await signed_in(api, await make_person(rt, account_id))
    home = await owner.page("/app/")
    assert home.status_code == 200 and "<title>Home · marketsync</title>" in home.text
    expected = {
        "rejected": (2, "/app/listings?needs=rejected"),
        "held": (1, "/app/listings?needs=fill-ins"),
        "reauthorise": (2, "/app/marketplaces"),
        "unhealthy": (1, "/app/marketplaces"),
        "failed-jobs": (2, "/app/jobs?status=Failed"),
        "disabled-webhooks": (1, "/app/webhooks"),
        "failed-imports": (2, "/app/imports"),
    }
    for key, wanted in expected.items():
        assert _count(home.text, key) == wanted, key
    count, link = _count(home.text, "unshipped")
    assert count == 2 and link.startswith("/app/orders?status=Unshipped&status=PartiallyShipped&to_date=")
    assert "8 things to look at" in home.text
    # Each link leads somewhere that answers.
    for key in (*expected, "unshipped"):
        assert (await owner.page(_count(home.text, key)[1])).status_code == 200, key

    rejected = await owner.page("/app/listings?needs=rejected")
    assert "2 listings" in rejected.text and "Images are required" in rejected.text
    assert "Complete REJ-1 on P1 UK" in rejected.text and "HELD-1" not in rejected.text
    waiting = await owner.page("/app/listings?needs=fill-ins")
    assert "1 listing," in waiting.text and "Complete HELD-1 on P1 UK" in waiting.text and "REJ-1" not in waiting.text
    await owner.client.aclose()


async def test_a_day_later_what_aged_out_of_the_last_7_days_is_no_longer_counted(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    account_id = await make_account(rt)
    await _something_of_each_kind(rt, account_id)
    staff = await make_person(rt, account_id, role="Staff")  # Staff see the home page too

    async def home_page() -> str:
        browser = await signed_in(api, staff)  # signed in again: the clock moved past the session's idle time
        text = (await browser.page("/app/")).text
        await browser.client.aclose()
        return text

    clock.advance(hours=2)  # the order bought 3 hours ago is still within its day; the failed job of 6 days 23 h is not
    home = await home_page()
    assert _count(home, "failed-jobs")[0] == 1 and _count(home, "unshipped")[0] == 2
    clock.advance(days=1)
    home = await home_page()
    assert _count(home, "unshipped")[0] == 3 and _count(home, "failed-imports")[0] == 2
    clock.advance(days=5)  # the import of 2 days ago is now older than 7 days; the one of 2 hours ago is not
    assert _count(await home_page(), "failed-imports")[0] == 1


async def test_an_account_with_nothing_to_fix_is_told_so(rt: Runtime, api: httpx.AsyncClient) -> None:
    owner = await signed_in(api, await make_person(rt, await make_account(rt)))
    home = await owner.page("/app")
    assert home.status_code == 200 and "Nothing needs attention" in home.text
    assert all(_count(home.text, key)[0] == 0 for key in ("rejected", "held", "unshipped", "failed-jobs"))
    assert "None: nothing to fix here." in (await owner.page("/app/listings?needs=fill-ins")).text
    await owner.client.aclose()


async def test_a_count_stops_at_its_cap_and_says_so(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each count reads at most AT_MOST + 1 index entries (1,000 in production: "1,000+")."""
    monkeypatch.setattr(home, "AT_MOST", 2)
    account_id = await make_account(rt)
    await _something_of_each_kind(rt, account_id)  # 2 rejected, 2 unshipped for more than a day
    async with rt.db.transaction() as session:
        session.add_all(
            Job(
                id=new_id(), account_id=account_id, type="OrderPull", status="Failed", payload={}, run_after=NOW,
                created_at=NOW, updated_at=NOW,
            )
            for _ in range(3)
        )  # fmt: skip
    owner = await signed_in(api, await make_person(rt, account_id))
    text = (await owner.page("/app/")).text
    assert '<strong class="count">2+</strong> jobs failed in the last 7 days' in text
    assert '<strong class="count">2</strong> listings rejected' in text
    await owner.client.aclose()


async def test_signing_in_lands_on_the_home_page(rt: Runtime, api: httpx.AsyncClient) -> None:
    user = await make_person(rt, await make_account(rt))
    response = await api.post("/app/sign-in", data={"email": user.email, "password": user.password})
    assert response.status_code == 303 and response.headers["location"] == "/app/"
