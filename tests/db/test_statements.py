"""Every named statement (a domain's `statements.py`, docs/decisions/0445) runs on both databases: each is executed
against a migrated database with representative parameters, and its result has the shape its repository reads. A
statement registered without a case here fails `test_every_statement_has_a_case`."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

import marketsync
from marketsync.catalog import repository as catalog_repository
from marketsync.catalog import statements as catalog_statements
from marketsync.db import DriverSql, SessionDriver, session_driver
from marketsync.db.statements import Statement, registered
from marketsync.kit.ids import new_id
from marketsync.models import Event, Job, JobProductAddition, Listing, Product
from marketsync.models.base import money_to_storage
from marketsync.models.catalog import TaxonomyCategory
from marketsync.models.inventory import DataFlow
from marketsync.models.orders import Order
from marketsync.models.sandbox import SandboxListing
from marketsync.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookSubscription
from marketsync.runtime import Runtime
from tests.support.factories import make_account, make_connection

NOW = datetime(2026, 3, 4, 10, 20, 30, 123456, tzinfo=UTC)
WORKER = "worker-1"
PUSH = "PriceStockPush"


def every_statement() -> Mapping[str, Statement]:
    """The statements of every `statements.py` under marketsync/ (importing them registers them)."""
    for module in pkgutil.walk_packages(marketsync.__path__, "marketsync."):
        if module.name.endswith(".statements") and module.name != "marketsync.db.statements":
            importlib.import_module(module.name)
    return registered()


@dataclass(frozen=True)
class World:
    """One row of each kind the statements read or write, in a migrated database."""

    account_id: str
    connection_id: str
    product_id: str
    listing_row_id: str
    job_id: str
    subscription_id: str
    delivery_id: str  # due, never leased
    leased_delivery_id: str  # leased to WORKER, one attempt made
    sandbox_listing_id: str


async def _world(rt: Runtime) -> World:
    account_id = await make_account(rt)
    connection = await make_connection(rt, account_id)
    product_id, listing_row_id, job_id = new_id(), new_id(), new_id()
    subscription_id, delivery_id, leased_delivery_id = new_id(), new_id(), new_id()
    earlier = NOW - timedelta(minutes=5)
    async with rt.db.transaction() as session:
        session.add(
            Product(
                id=product_id,
                account_id=account_id,
                sku="Mug-1",
                sku_lower="mug-1",
                price=Decimal("9.5"),
                quantity=3,
                modified_at=earlier,
                created_at=earlier,
            )
        )
        await session.flush()
        session.add(
            Listing(
                id=listing_row_id,
                account_id=account_id,
                product_id=product_id,
                marketplace_id=connection.id,
                listing_id="L-1",
                external_sku="Mug-1",
                created_at=earlier,
                updated_at=earlier,
            )
        )
        session.add(DataFlow(account_id=account_id, kind="Stock", owner="Marketplace", updated_at=earlier))
        session.add(
            Job(
                id=job_id,
                account_id=account_id,
                type=PUSH,
                marketplace_id=connection.id,
                status="Published",
                payload={"ProductIds": [product_id]},
                progress_done=0,
                progress_total=1,
                run_after=earlier,
                created_at=earlier,
                updated_at=earlier,
            )
        )
        session.add(
            WebhookSubscription(
                id=subscription_id,
                account_id=account_id,
                url="http://127.0.0.1:9/hook",
                event_types=["OrderCreated"],
                secret_encrypted="k1:c2VjcmV0",
                consecutive_failures=2,
                created_at=earlier,
            )
        )
        deliveries = ((delivery_id, None, 0), (leased_delivery_id, WORKER, 1))
        for id_, lease_owner, attempts in deliveries:  # one event each: one delivery per event and subscription
            event_id = new_id()
            session.add(Event(id=event_id, account_id=account_id, type="OrderCreated", body=b"{}", occurred_at=earlier))
            await session.flush()
            session.add(
                WebhookDelivery(
                    id=id_,
                    account_id=account_id,
                    subscription_id=subscription_id,
                    event_id=event_id,
                    event_type="OrderCreated",
                    status="Pending",
                    attempts=attempts,
                    next_attempt_at=earlier,
                    lease_owner=lease_owner,
                    lease_expires_at=NOW + timedelta(minutes=1) if lease_owner else None,
                    created_at=earlier,
                )
            )
        session.add(
            SandboxListing(
                connection_id=connection.id,
                listing_id="SL-1",
                sku="Mug-1",
                external_sku="Mug-1",
                listing_url="http://127.0.0.1:9/SL-1",
                price=Decimal("9.5"),
                quantity=3,
                updated_at=earlier,
            )
        )
    return World(
        account_id,
        connection.id,
        product_id,
        listing_row_id,
        job_id,
        subscription_id,
        delivery_id,
        leased_delivery_id,
        "SL-1",
    )


def _at(driver: SessionDriver, moment: datetime = NOW) -> Any:
    return DriverSql(driver.postgres).time_value(moment)


async def _one(session: AsyncSession, query: Any) -> Any:
    return (await session.execute(query)).one()


Case = Callable[[Statement, SessionDriver, AsyncSession, World], Awaitable[None]]
CASES: dict[str, Case] = {}


def case(name: str) -> Callable[[Case], Case]:
    def register(function: Case) -> Case:
        CASES[name] = function
        return function

    return register


# --- jobs --------------------------------------------------------------------------------------------------------


@case("jobs.queued_never_started")
async def _queued_never_started(statement: Statement, driver: SessionDriver, _: AsyncSession, w: World) -> None:
    sql = statement.text(driver.postgres, 1)
    if driver.postgres:
        rows = await driver.fetch(sql, (w.account_id, [w.connection_id], PUSH, "Published"))
    else:
        rows = await driver.fetch(sql, (w.account_id, w.connection_id, PUSH, "Published"))
    assert [(row[0], row[1]) for row in rows] == [(w.job_id, w.connection_id)]
    assert len(rows[0]) == 5  # id, marketplace_id, payload, progress_total, the additions' products
    assert isinstance(rows[0][3], int)


@case("jobs.count_additions")
async def _count_additions(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    sql = statement.text(driver.postgres)
    if driver.postgres:
        rows = await driver.fetch(sql, ([w.job_id], [2], _at(driver)))
    else:
        rows = await driver.fetch(sql, (2, _at(driver), w.job_id))
    assert [tuple(row) for row in rows] == [(w.job_id,)]
    assert (await _one(session, select(Job.progress_total).where(Job.id == w.job_id))) == (3,)


@case("jobs.replace_queued_payload")
async def _replace_queued_payload(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    payload = '{"ListingIds": ["a", "b"]}'
    arguments = (payload, 2, _at(driver), w.job_id)
    assert [tuple(row) for row in await driver.fetch(statement.text(driver.postgres), arguments)] == [(w.job_id,)]
    stored = await _one(session, select(Job.payload, Job.progress_total).where(Job.id == w.job_id))
    assert stored == ({"ListingIds": ["a", "b"]}, 2)


@case("jobs.insert_additions")
async def _insert_additions(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    addition_id = new_id()
    row = (w.job_id, addition_id, f'["{w.product_id}"]')
    if driver.postgres:
        await driver.execute(statement.text(driver.postgres), tuple([column] for column in row))
    else:
        await driver.executemany(statement.text(driver.postgres), [row])
    stored = await _one(session, select(JobProductAddition.product_ids).where(JobProductAddition.id == addition_id))
    assert stored == ([w.product_id],)


@case("jobs.insert_queued")
async def _insert_queued(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    job_id, payload, stamp = new_id(), '{"ProductIds": []}', _at(driver)
    if driver.postgres:
        arguments = ([job_id], [w.connection_id], [payload], w.account_id, PUSH, "Published", stamp, [5], stamp)
        await driver.execute(statement.text(driver.postgres), arguments)
    else:
        row = (job_id, w.account_id, PUSH, w.connection_id, "Published", payload, 5, stamp, stamp, stamp)
        await driver.executemany(statement.text(driver.postgres), [row])
    stored = await _one(session, select(Job.status, Job.progress_total, Job.payload).where(Job.id == job_id))
    assert stored == ("Published", 5, {"ProductIds": []})


# --- inventory ---------------------------------------------------------------------------------------------------


@case("inventory.lock_products_by_sku_keys")
async def _lock_by_keys(statement: Statement, driver: SessionDriver, _: AsyncSession, w: World) -> None:
    sql = statement.text(driver.postgres, 2)
    if driver.postgres:
        rows = await driver.fetch(sql, (w.account_id, ["mug-1", "absent"]))
    else:
        rows = await driver.fetch(sql, (w.account_id, "mug-1", "absent"))
    assert [tuple(row[:4]) for row in rows] == [(w.product_id, "Mug-1", money_to_storage(Decimal("9.5")), 3)]
    # The row's address comes with it: PostgreSQL's ctid, SQLite's rowid.
    column, mark = ("ctid", "$1") if driver.postgres else ("rowid", "?")
    assert rows[0][4] == (await driver.fetch(f"SELECT {column} FROM products WHERE id = {mark}", (w.product_id,)))[0][0]


async def _quantity(session: AsyncSession, product_id: str) -> int:
    return int((await _one(session, select(Product.quantity).where(Product.id == product_id)))[0])


@case("inventory.write_product_rows")
async def _write_rows(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    price, stamp = money_to_storage(Decimal("7.25")), _at(driver)
    if driver.postgres:
        await driver.execute(statement.text(driver.postgres), ([w.product_id], [price], [8], [stamp]))
    else:
        await driver.executemany(statement.text(driver.postgres), [(price, 8, stamp, w.product_id)])
    assert await _quantity(session, w.product_id) == 8


@case("inventory.write_product_rowids")
async def _write_rowids(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    if driver.postgres:
        [(address,)] = await driver.fetch("SELECT ctid FROM products WHERE id = $1", (w.product_id,))
        # A wrong id at the right address writes nothing: only the row that was read is written.
        await driver.execute(statement.text(True), ([address], ["01WRONGID"], [None], [7], [_at(driver)]))
        assert await _quantity(session, w.product_id) == 3
        await driver.execute(statement.text(True), ([address], [w.product_id], [None], [9], [_at(driver)]))
    else:
        [(rowid,)] = await driver.fetch("SELECT rowid FROM products WHERE id = ?", (w.product_id,))
        await driver.executemany(statement.text(False), [(None, 7, _at(driver), rowid, "01WRONGID")])
        assert await _quantity(session, w.product_id) == 3
        await driver.executemany(statement.text(False), [(None, 9, _at(driver), rowid, w.product_id)])
    assert await _quantity(session, w.product_id) == 9


@case("inventory.write_product_values_in_savepoint")
async def _write_in_savepoint(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    if not driver.postgres:  # SQLite writes through Core's executemany (repository._WRITE_VALUES)
        with pytest.raises(ValueError, match="no SQLite text"):
            statement.text(driver.postgres)
        return
    values = {"ids": [w.product_id], "prices": [None], "quantities": [4], "times": [_at(driver)]}
    await session.execute(text(statement.text(driver.postgres)), values)
    assert await _quantity(session, w.product_id) == 4


@case("inventory.listed_on_active_connections")
async def _listed(statement: Statement, driver: SessionDriver, _: AsyncSession, w: World) -> None:
    sql = statement.text(driver.postgres, 2)
    if driver.postgres:
        rows = await driver.fetch(sql, (w.account_id, [w.product_id, "absent"], "Active"))
        products = list(rows[0][4])
    else:
        rows = await driver.fetch(sql, (w.account_id, w.product_id, "absent", w.account_id, "Active"))
        products = rows[0][4].split(",")
    assert [(row[0], row[1], row[2], bool(row[3])) for row in rows] == [(w.connection_id, "P1", "UK", False)]
    assert products == [w.product_id]


@case("inventory.data_flow_owners")
async def _data_flow_owners(statement: Statement, driver: SessionDriver, _: AsyncSession, w: World) -> None:
    rows = await driver.fetch(statement.text(driver.postgres), (w.account_id,))
    assert [tuple(row) for row in rows] == [("Stock", "Marketplace")]


# --- marketplaces ------------------------------------------------------------------------------------------------


@case("marketplaces.record_marketplace_values")
async def _record_values(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    price = money_to_storage(Decimal("8.75"))
    await driver.execute_rows(statement.text(driver.postgres), [(price, None, _at(driver), w.listing_row_id)])
    query = select(Listing.marketplace_price, Listing.marketplace_quantity).where(Listing.id == w.listing_row_id)
    assert (await _one(session, query)) == (Decimal("8.75"), None)  # a NULL quantity leaves it as it was


@case("sandbox.apply_price_stock")
async def _apply_price_stock(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    row = (None, 11, _at(driver), w.connection_id, w.sandbox_listing_id)
    await driver.execute_rows(statement.text(driver.postgres), [row])
    query = select(SandboxListing.price, SandboxListing.quantity, SandboxListing.feed_updates).where(
        SandboxListing.listing_id == w.sandbox_listing_id
    )
    assert (await _one(session, query)) == (Decimal("9.5"), 11, 1)  # a NULL price leaves it as it was


# --- webhooks ----------------------------------------------------------------------------------------------------


async def _delivery(session: AsyncSession, delivery_id: str) -> tuple[str | None, int, str]:
    query = select(WebhookDelivery.lease_owner, WebhookDelivery.attempts, WebhookDelivery.status)
    lease_owner, attempts, status = await _one(session, query.where(WebhookDelivery.id == delivery_id))
    return lease_owner, int(attempts), status


@case("webhooks.claim_due")
async def _claim_due(statement: Statement, driver: SessionDriver, _: AsyncSession, w: World) -> None:
    rows = await driver.fetch(statement.text(driver.postgres), (_at(driver), 4, 10))
    assert [row[0] for row in rows] == [w.delivery_id]  # the leased one is not due again
    assert len(rows[0]) == 12  # everything an attempt needs (repository.ClaimedDelivery)
    assert (rows[0][2], rows[0][7], bytes(rows[0][9])) == (w.subscription_id, "http://127.0.0.1:9/hook", b"{}")


@case("webhooks.any_claimable")
async def _any_claimable(statement: Statement, driver: SessionDriver, _: AsyncSession, w: World) -> None:
    assert [tuple(row) for row in await driver.fetch(statement.text(driver.postgres), (_at(driver), 4))] == [(1,)]
    # A cap the subscription's live lease fills: nothing claimable.
    assert await driver.fetch(statement.text(driver.postgres), (_at(driver), 1)) == []


@case("webhooks.lease")
async def _lease(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    expires = _at(driver, NOW + timedelta(seconds=30))
    sql = statement.text(driver.postgres, 1)
    if driver.postgres:
        await driver.execute(sql, ("worker-2", expires, [w.delivery_id]))
    else:
        await driver.execute(sql, ("worker-2", expires, w.delivery_id))
    assert await _delivery(session, w.delivery_id) == ("worker-2", 1, "Pending")


async def _hand_back(statement: Statement, driver: SessionDriver, ids: list[str], worker: str) -> None:
    sql = statement.text(driver.postgres, len(ids))
    await driver.execute(sql, (ids, worker) if driver.postgres else (*ids, worker))


@case("webhooks.hand_back_unstarted")
async def _hand_back_unstarted(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    await _hand_back(statement, driver, [w.leased_delivery_id], "worker-2")  # not that worker's: left alone
    assert await _delivery(session, w.leased_delivery_id) == (WORKER, 1, "Pending")
    await _hand_back(statement, driver, [w.leased_delivery_id], WORKER)
    assert await _delivery(session, w.leased_delivery_id) == (None, 0, "Pending")


@case("webhooks.hand_back_dropped")
async def _hand_back_dropped(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    await _hand_back(statement, driver, [w.leased_delivery_id], "worker-2")  # leased to another: left alone
    assert await _delivery(session, w.leased_delivery_id) == (WORKER, 1, "Pending")
    await _hand_back(statement, driver, [w.leased_delivery_id], WORKER)
    assert await _delivery(session, w.leased_delivery_id) == (None, 0, "Pending")


@case("webhooks.finish_held")
async def _finish_held(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    later = _at(driver, NOW + timedelta(minutes=10))
    rows = [(w.leased_delivery_id, "Pending", later, None), (w.delivery_id, "Succeeded", _at(driver), _at(driver))]
    sql = statement.text(driver.postgres, len(rows))
    if driver.postgres:
        moved = await driver.fetch(sql, (*([list(column) for column in zip(*rows, strict=True)]), WORKER))
    else:
        moved = await driver.fetch(sql, (*(value for row in rows for value in row), WORKER))
    assert [tuple(row) for row in moved] == [(w.leased_delivery_id,)]  # the other is not held by this worker
    assert await _delivery(session, w.leased_delivery_id) == (None, 1, "Pending")


@case("webhooks.insert_attempts")
async def _insert_attempts(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    attempt_id = new_id()
    row = (
        attempt_id,
        w.account_id,
        w.subscription_id,
        w.delivery_id,
        "event",
        "OrderCreated",
        1,
        _at(driver),
        120,
        500,
        "Failed",
        "HttpStatus",
        None,
        "oops",
        _at(driver, NOW + timedelta(minutes=1)),
    )
    if driver.postgres:
        await driver.execute(statement.text(driver.postgres), [[value] for value in row])
    else:
        await driver.executemany(statement.text(driver.postgres), [row])
    query = select(WebhookAttempt.outcome, WebhookAttempt.status_code, WebhookAttempt.started_at)
    assert (await _one(session, query.where(WebhookAttempt.id == attempt_id))) == ("Failed", 500, NOW)


@case("webhooks.subscriptions_succeeded")
async def _subscriptions_succeeded(
    statement: Statement, driver: SessionDriver, session: AsyncSession, w: World
) -> None:
    sql = statement.text(driver.postgres, 1)
    ids = [w.subscription_id]
    await driver.execute(sql, (_at(driver), ids) if driver.postgres else (_at(driver), *ids))
    query = select(WebhookSubscription.consecutive_failures, WebhookSubscription.last_success_at)
    assert (await _one(session, query.where(WebhookSubscription.id == w.subscription_id))) == (0, NOW)


@case("webhooks.insert_event")
async def _insert_event(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    async def insert() -> Any:
        event_id = new_id()
        arguments = (event_id, w.account_id, "InventoryChanged", b'{"totalChanged":1}', _at(driver))
        [(dispatched_at,)] = await driver.fetch(statement.text(driver.postgres), arguments)
        query = select(Event.type, Event.body, Event.occurred_at, Event.dispatched_at, Event.is_test)
        return dispatched_at is None, tuple(await _one(session, query.where(Event.id == event_id)))

    # The account's subscription is active: left for the fan-out (dispatched_at NULL), as record_event decides.
    assert await insert() == (True, ("InventoryChanged", b'{"totalChanged":1}', NOW, None, False))
    await session.execute(update(WebhookSubscription).values(is_active=False))
    # None active: dispatched at once, at its occurred_at (docs/decisions/0455).
    assert await insert() == (False, ("InventoryChanged", b'{"totalChanged":1}', NOW, NOW, False))


# --- catalog: category search (parts composed at run time, named slots) -----------------------------------------

SITE = {"platform": "TST", "country": "UK"}  # a site of this test's own


async def _site_categories(session: AsyncSession) -> None:
    """A root and two leaves, in tree order."""
    tree = (("1", "Home", False, 0), ("12", "Bottles Accessories", True, 1), ("13", "Mugs", True, 2))
    session.add_all(_category(category_id, name, is_leaf, position) for category_id, name, is_leaf, position in tree)
    await session.flush()


def _category(category_id: str, name: str, is_leaf: bool, position: int) -> TaxonomyCategory:
    return TaxonomyCategory(
        **SITE,
        category_id=category_id,
        parent_id=None if category_id == "1" else "1",
        name=name,
        name_lower=name.lower(),
        path=name if category_id == "1" else f"Home > {name}",
        depth=0 if category_id == "1" else 1,
        is_leaf=is_leaf,
        position=position,
    )


async def _sqlite_text_index(session: AsyncSession) -> None:
    """The site's rows of SQLite's text index and the trigrams' counts, as an import leaves them."""
    for statement in (catalog_statements.FILL_SITE_SEARCH_ROWS, catalog_statements.FILL_TRIGRAM_LEAVES):
        await session.execute(text(statement.text(postgres=False)), SITE)


async def _refuses(statement: Statement, postgres: bool) -> None:
    """A statement of the other database only: it has no text here."""
    with pytest.raises(ValueError, match=f"no {'PostgreSQL' if postgres else 'SQLite'} text"):
        statement.text(postgres)


async def _composed(statement: Statement, driver: SessionDriver, **values: Any) -> list[tuple[Any, ...]]:
    sql = DriverSql(driver.postgres)
    return [tuple(row) for row in await driver.fetch(statement.compose(sql, **SITE, **values), sql.params)]


@case("catalog.leaves_page")
async def _leaves_page(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    await _site_categories(session)
    paths = [("12", "Bottles Accessories", "Home > Bottles Accessories"), ("13", "Mugs", "Home > Mugs")]
    assert await _composed(statement, driver, limit=10, offset=0) == paths
    assert await _composed(statement, driver, limit=10, offset=1) == paths[1:]


@case("catalog.leaves_containing")
async def _leaves_containing(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    await _site_categories(session)
    pattern = catalog_repository.contains_pattern("s acc")
    if driver.postgres:
        assert await _composed(statement, driver, pattern=pattern) == [("12", 1)]
        return
    await _sqlite_text_index(session)
    query = catalog_repository.fts_phrase("s acc")
    assert await _composed(statement, driver, pattern=pattern, query=query) == [("12", 1)]


@case("catalog.leaves_containing_short")
async def _leaves_containing_short(
    statement: Statement, driver: SessionDriver, session: AsyncSession, _: World
) -> None:
    await _site_categories(session)
    assert await _composed(statement, driver, pattern=catalog_repository.contains_pattern("mu")) == [("13", 2)]
    assert await _composed(statement, driver, pattern=catalog_repository.contains_pattern("ho")) == []  # not a leaf


@case("catalog.leaf_with_id")
async def _leaf_with_id(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    await _site_categories(session)
    assert await _composed(statement, driver, category_id="13") == [("13", 2)]
    assert await _composed(statement, driver, category_id="1") == []  # not a leaf


@case("catalog.trigram_leaves")
async def _trigram_leaves(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    if driver.postgres:  # PostgreSQL's trigram index needs no counts
        await _refuses(statement, driver.postgres)
        return
    await _site_categories(session)
    await _sqlite_text_index(session)
    rows = await driver.fetch(statement.text(driver.postgres, 2), ("mug", "zzz"))
    assert [(row[0], row[1] >= 1) for row in rows] == [("mug", True)]


async def _search_rows(session: AsyncSession) -> int:
    query = "SELECT count(*) FROM taxonomy_category_search WHERE platform = :platform AND country = :country"
    return int((await session.execute(text(query), SITE)).scalar_one())


@case("catalog.category_statistics")
async def _category_statistics(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    if not driver.postgres:  # SQLite rewrites its text index instead
        await _refuses(statement, driver.postgres)
        return
    await _site_categories(session)
    await session.execute(text(statement.text(driver.postgres)))
    counted = await session.execute(text("SELECT reltuples FROM pg_class WHERE relname = 'taxonomy_categories'"))
    assert counted.scalar_one() >= 3  # the rows this transaction wrote are counted


@case("catalog.clear_site_search_rows")
async def _clear_site_search_rows(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    if driver.postgres:
        await _refuses(statement, driver.postgres)
        return
    await _site_categories(session)
    await _sqlite_text_index(session)
    await session.execute(text(statement.text(driver.postgres)), SITE)
    assert await _search_rows(session) == 0


@case("catalog.fill_site_search_rows")
async def _fill_site_search_rows(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    if driver.postgres:
        await _refuses(statement, driver.postgres)
        return
    await _site_categories(session)
    await session.execute(text(statement.text(driver.postgres)), SITE)
    assert await _search_rows(session) == 2  # the leaves


async def _trigram_count(session: AsyncSession, trigram: str) -> int | None:
    query = text("SELECT leaves FROM taxonomy_category_search_trigrams WHERE trigram = :trigram")
    return (await session.execute(query, {"trigram": trigram})).scalar_one_or_none()


@case("catalog.clear_trigram_leaves")
async def _clear_trigram_leaves(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    if driver.postgres:
        await _refuses(statement, driver.postgres)
        return
    await _site_categories(session)
    await _sqlite_text_index(session)
    await session.execute(text(statement.text(driver.postgres)))
    assert await _trigram_count(session, "mug") is None


@case("catalog.fill_trigram_leaves")
async def _fill_trigram_leaves(statement: Statement, driver: SessionDriver, session: AsyncSession, _: World) -> None:
    if driver.postgres:
        await _refuses(statement, driver.postgres)
        return
    await _site_categories(session)
    await session.execute(text(catalog_statements.FILL_SITE_SEARCH_ROWS.text(driver.postgres)), SITE)
    await session.execute(text(statement.text(driver.postgres)))
    assert await _trigram_count(session, "ugs") == 1  # "Mugs" alone holds it


# --- orders ------------------------------------------------------------------------------------------------------


@case("orders.updated_at_text")
async def _updated_at_text(statement: Statement, driver: SessionDriver, session: AsyncSession, w: World) -> None:
    order_id = new_id()
    session.add(
        Order(
            id=order_id,
            account_id=w.account_id,
            marketplace_id=w.connection_id,
            platform="P1",
            country="UK",
            marketplace_order_id="MO-1",
            status="Unshipped",
            marketplace_status="Unshipped",
            purchase_date=NOW,
            marketplace_changed_at=NOW,
            currency="GBP",
            items_total=Decimal("1"),
            shipping_total=Decimal("0"),
            tax_total=Decimal("0"),
            refunded_total=Decimal("0"),
            buyer_name="Buyer",
            ship_name="Buyer",
            ship_line1="1 Road",
            ship_city="Town",
            ship_postal_code="AB1 2CD",
            ship_country_code="GB",
            created_at=NOW,
            updated_at=NOW,
        )
    )
    await session.flush()
    sql = DriverSql(driver.postgres)
    query = f"SELECT {statement.text(driver.postgres)} FROM orders WHERE orders.id = {sql.bind(order_id)}"
    assert [tuple(row) for row in await driver.fetch(query, sql.params)] == [("2026-03-04 10:20:30.123456",)]


# --- the rules -----------------------------------------------------------------------------------------------------


def test_every_statement_has_a_case() -> None:
    assert sorted(every_statement()) == sorted(CASES), "each named statement needs a case in this module"


@pytest.mark.parametrize("name", sorted(CASES))
async def test_the_statement_runs_with_the_shape_its_repository_reads(rt: Runtime, name: str) -> None:
    statement = every_statement()[name]
    world = await _world(rt)
    async with rt.db.transaction() as session:
        driver = await session_driver(session)
        await CASES[name](statement, driver, session, world)


def test_a_list_statement_needs_its_length_on_sqlite() -> None:
    statement = every_statement()["webhooks.lease"]
    assert statement.takes_list
    assert statement.text(False, 3).endswith("WHERE id IN (?,?,?)")
    assert statement.text(True) == statement.postgresql
    with pytest.raises(ValueError, match="number of its list's elements"):
        statement.text(False)


def test_two_statements_cannot_share_a_name() -> None:
    assert "webhooks.lease" in every_statement()
    with pytest.raises(ValueError, match=r"two statements are named webhooks\.lease"):
        Statement("webhooks.lease", sqlite="SELECT 1", postgresql="SELECT 1")
