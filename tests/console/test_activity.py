"""The activity log (issue 41, decision 0431): who did what and when in the app, an entry for each kind (hand edits
with the SKU and its old and new values; credentials created, rotated, deleted; people added, changed, removed;
Data Flow; marketplace connect, pause, resume, disconnect, reauthorise; webhook subscriptions and repairs; customer
data shown), newest first, paged, filtered by person and kind, for Owners only, never a secret; purged after its
period. Over real HTTP, on both databases."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx
import pytest

from marketsync.kit.clock import FrozenClock
from marketsync.people import service as people
from marketsync.people import tasks as people_tasks
from marketsync.runtime import Runtime
from tests.console.support import make_person, signed_in
from tests.support.activity import do_one_of_each
from tests.support.factories import make_tenant

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


def _rows(page: str) -> list[str]:
    """The activity table's rows, as text without tags."""
    body = page[page.index('<table class="stacked" id="activity">') :].split("</tbody>")[0]
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip() for row in body.split("<tr>")[2:]]


async def test_every_kind_of_activity_is_logged_without_a_secret_and_filtered_by_kind_and_person(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    owner_user = await make_person(rt, tenant.account_id)
    owner = await signed_in(api, owner_user)
    secrets = await do_one_of_each(rt, api, owner, tenant.account_id, tenant.headers)
    order_id = secrets.pop("order")

    page = await owner.page("/app/activity")
    assert page.status_code == 200 and "Kept 180 days" in page.text
    rows = _rows(page.text)
    expected = [
        "Customer data shown Showed: " + order_id,
        "Webhooks Deleted: https://hooks.example.com/in",
        "Webhooks Sent a sample: https://hooks.example.com/in Event: InventoryChanged",
        "Hand edits Edited: MUG-1 Price: 9.50 → 12.00; Stock: 4 → 7",
        "Marketplaces Disconnected: P1 UK",
        "Marketplaces Reauthorised: P1 UK",
        "Marketplaces Resumed: P1 UK",
        "Marketplaces Paused: P1 UK",
        "Marketplaces Connected: P1 UK",
        "Marketplaces Started connecting: P1 UK",
        "Data Flow Changed: Data Flow Price: Marketplace → Merchant",
        "People Removed: packer@example.com",
        "People Gave a new password: packer@example.com",
        "People Added: packer@example.com Role: Staff",
        "API credentials Deleted: Warehouse ERP",
        "API credentials Rotated: Warehouse ERP Previous one works for: 1 day",
        "API credentials Created: Warehouse ERP Scopes: OrdersRead",
    ]
    assert [row.split(" ", 2)[2].replace(f"{owner_user.email} ", "", 1).removesuffix(" —") for row in rows] == expected
    assert all(owner_user.email in row for row in rows)
    for name, secret in secrets.items():
        assert secret not in page.text, name

    by_kind = _rows((await owner.page("/app/activity?kind=Marketplace")).text)
    assert len(by_kind) == 6 and all("Marketplaces" in row for row in by_kind)
    other = await make_person(rt, tenant.account_id, email="second-owner@example.com")
    second = await signed_in(api, other)
    await second.post("/app/dataflow", {"Price": "Marketplace", "Stock": "Merchant"})
    mine = _rows((await owner.page(f"/app/activity?who={other.user_id}")).text)
    assert len(mine) == 1 and "second-owner@example.com" in mine[0] and "Stock: Marketplace → Merchant" in mine[0]
    refused = await owner.page("/app/activity?kind=Everything")
    assert refused.status_code == 400 and "One of HandEdit" in refused.text
    for browser in (owner, second):
        await browser.client.aclose()


async def test_the_log_is_for_owners_of_the_account_only(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    staff = await signed_in(api, await make_person(rt, tenant.account_id, role="Staff"))
    assert (await staff.page("/app/activity")).status_code == 403
    assert 'href="/app/activity"' not in (await staff.page("/app/jobs")).text  # not offered in the navigation
    owner = await signed_in(api, await make_person(rt, tenant.account_id))
    await owner.post("/app/dataflow", {"Price": "Merchant", "Stock": "Merchant"})
    stranger = await signed_in(api, await make_person(rt, (await make_tenant(rt, api)).account_id))
    assert _rows((await stranger.page("/app/activity")).text) == ["Nothing yet."]
    for browser in (staff, owner, stranger):
        await browser.client.aclose()


async def test_the_log_pages_newest_first_and_forgets_what_is_past_its_period(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock
) -> None:
    tenant = await make_tenant(rt, api)
    owner_user = await make_person(rt, tenant.account_id)
    person = people.Person(owner_user.user_id, tenant.account_id, owner_user.email, people.Role.OWNER, "")
    for number in range(60):  # a minute apart
        async with rt.db.transaction() as session:
            await people.record_activity(
                rt, session, person, people.ActivityKind.HAND_EDIT, "Edited", f"SKU-{number:02}"
            )
        clock.advance(minutes=1)
    owner = await signed_in(api, owner_user)
    first = await owner.page("/app/activity")
    rows = _rows(first.text)
    assert len(rows) == 50 and "SKU-59" in rows[0] and "SKU-10" in rows[-1]
    older = re.search(r'href="(/app/activity\?before=[^"]+)">Older activity', first.text).group(1)  # type: ignore[union-attr]
    second = _rows((await owner.page(older.replace("&amp;", "&"))).text)
    assert len(second) == 10 and "SKU-09" in second[0] and "SKU-00" in second[-1]
    await owner.client.aclose()

    with pytest.raises(ValueError, match="never holds a secret"):
        async with rt.db.transaction() as session:
            await people.record_activity(
                rt, session, person, people.ActivityKind.CREDENTIAL, "Created", "ERP", {"client_secret": "x"}
            )
    clock.advance(days=180, minutes=-30)  # the first 30 entries are now older than 180 days
    await people_tasks.purge_activity_log(rt)
    async with rt.db.read() as session:
        kept = await people.activity(session, tenant.account_id, 100)
    assert len(kept) == 30 and kept[-1].subject == "SKU-30"
