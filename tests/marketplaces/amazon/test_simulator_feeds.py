"""A JSON_LISTINGS_FEED through the simulator over real HTTP: createFeedDocument, the upload to its URL, createFeed,
getFeed until done, getFeedDocument and the processing report, which validates against Amazon's schema. The feed's
PATCH messages change the seller's listings; unknown SKUs and bad values are per-item errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from marketsync.kit.clock import FrozenClock
from marketsync.marketplaces.amazon.contracts import validate_feed_document, validate_processing_report
from tests.marketplaces.amazon.support import luggage
from tests.support.amazon import AmazonServer

UK = "A1F83G8C2ARO7P"
CONTENT_TYPE = "application/json; charset=UTF-8"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))


def price_stock(message_id: int, sku: str, price: float, quantity: int) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "sku": sku,
        "operationType": "PATCH",
        "productType": "PRODUCT",
        "patches": [
            {
                "op": "replace",
                "path": "/attributes/fulfillment_availability",
                "value": [{"fulfillment_channel_code": "DEFAULT", "quantity": quantity}],
            },
            {
                "op": "replace",
                "path": "/attributes/purchasable_offer",
                "value": [
                    {
                        "currency": "GBP",
                        "marketplace_id": UK,
                        "audience": "ALL",
                        "our_price": [{"schedule": [{"value_with_tax": price}]}],
                    }
                ],
            },
        ],
    }


def feed(seller_id: str, messages: list[dict[str, Any]], product_type: str = "LUGGAGE") -> dict[str, Any]:
    for message in messages:
        if "productType" in message:
            message["productType"] = product_type
    return {"header": {"sellerId": seller_id, "version": "2.0", "issueLocale": "en_GB"}, "messages": messages}


async def submit(client: httpx.AsyncClient, document: Any, raw: bytes | None = None) -> str:
    created = await client.post("/feeds/2021-06-30/documents", json={"contentType": CONTENT_TYPE})
    assert created.status_code == 201, created.text
    upload = await client.put(
        created.json()["url"], content=raw or json.dumps(document).encode(), headers={"content-type": CONTENT_TYPE}
    )
    assert upload.status_code == 200
    answer = await client.post(
        "/feeds/2021-06-30/feeds",
        json={
            "feedType": "JSON_LISTINGS_FEED",
            "marketplaceIds": [UK],
            "inputFeedDocumentId": created.json()["feedDocumentId"],
        },
    )
    assert answer.status_code == 202, answer.text
    return str(answer.json()["feedId"])


async def poll(client: httpx.AsyncClient, feed_id: str) -> tuple[list[str], dict[str, Any]]:
    statuses: list[str] = []
    for _ in range(10):
        answer = await client.get(f"/feeds/2021-06-30/feeds/{feed_id}")
        assert answer.status_code == 200
        statuses.append(answer.json()["processingStatus"])
        if statuses[-1] in ("DONE", "FATAL", "CANCELLED"):
            return statuses, answer.json()
    raise AssertionError(statuses)


async def report_of(client: httpx.AsyncClient, result: dict[str, Any]) -> dict[str, Any]:
    document = await client.get(f"/feeds/2021-06-30/documents/{result['resultFeedDocumentId']}")
    assert document.status_code == 200
    report = (await client.get(document.json()["url"])).json()
    validate_processing_report(report)
    return report


async def test_a_price_and_stock_feed_is_applied_and_its_report_validates(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    for n in range(3):
        sim.set_listing(sid, "UK", f"SKU-{n}", price="1.00", quantity=1)
    messages = [price_stock(n + 1, f"SKU-{n}", 10.5 + n, 5 + n) for n in range(3)]
    messages.append(price_stock(4, "NO-SUCH-SKU", 1.0, 1))
    messages.append(price_stock(5, "SKU-0", 2.0, -1))  # a bad value: the message changes nothing
    document = feed(sid, messages)
    validate_feed_document(document)
    async with amazon_simulator.seller_client(sid) as client:
        feed_id = await submit(client, document)
        statuses, result = await poll(client, feed_id)
        assert statuses == ["IN_PROGRESS", "DONE"]
        assert result["processingStartTime"] <= result["processingEndTime"]
        report = await report_of(client, result)
    assert report["header"] == {"sellerId": sid, "version": "2.0", "feedId": feed_id}
    assert report["summary"] == {
        "errors": 2,
        "warnings": 0,
        "messagesProcessed": 5,
        "messagesAccepted": 3,
        "messagesInvalid": 2,
    }
    by_message = {i["messageId"]: i for i in report["issues"]}
    assert by_message[4]["code"] == "SKU_NOT_FOUND" and by_message[4]["sku"] == "NO-SUCH-SKU"
    assert by_message[5]["code"] == "99022" and by_message[5]["attributeName"] == "fulfillment_availability.quantity"
    for n in range(3):
        listing = sim.listing(sid, "UK", f"SKU-{n}")
        assert listing is not None and (str(listing.price), listing.quantity) == (f"{10.5 + n}", 5 + n)
    assert sim.listing(sid, "UK", "SKU-0").quantity == 5  # type: ignore[union-attr]


async def test_update_and_delete_messages_create_and_remove_listings(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    sim.set_listing(sid, "UK", "OLD", price="1.00", quantity=1)
    incomplete = luggage()
    del incomplete["brand"]
    document = feed(
        sid,
        [
            {
                "messageId": 1,
                "sku": "NEW",
                "operationType": "UPDATE",
                "productType": "LUGGAGE",
                "requirements": "LISTING",
                "attributes": luggage(price=20.0, quantity=2),
            },
            {"messageId": 2, "sku": "OLD", "operationType": "DELETE"},
            {
                "messageId": 3,
                "sku": "HALF",
                "operationType": "UPDATE",
                "productType": "LUGGAGE",
                "attributes": incomplete,
            },
        ],
    )
    document["header"]["report"] = {"includedData": ["summaries", "issues"], "apiVersion": "2021-08-01"}
    async with amazon_simulator.seller_client(sid) as client:
        _, result = await poll(client, await submit(client, document))
        report = await report_of(client, result)
    assert [(i["messageId"], i["code"], i["attributeName"]) for i in report["issues"]] == [(3, "90220", "brand")]
    assert report["summary"]["messagesAccepted"] == 2
    assert [item["sku"] for item in report["items"]] == ["NEW"]
    assert sim.listing(sid, "UK", "OLD") is None and sim.listing(sid, "UK", "HALF") is None
    assert sim.listing(sid, "UK", "NEW").price == 20  # type: ignore[union-attr]


async def test_a_feed_rejected_whole_is_fatal_with_a_report(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    sim.set_listing(sid, "UK", "SKU-0", price="1.00", quantity=1)
    sim.set_feed_fault("reject", message="Your account may not submit feeds.")
    async with amazon_simulator.seller_client(sid) as client:
        statuses, result = await poll(client, await submit(client, feed(sid, [price_stock(1, "SKU-0", 3.0, 3)])))
        assert statuses[-1] == "FATAL"
        report = await report_of(client, result)
    assert report["issues"][0]["message"] == "Your account may not submit feeds."
    assert report["summary"]["messagesProcessed"] == 0
    assert sim.listing(sid, "UK", "SKU-0").quantity == 1  # type: ignore[union-attr]


async def test_item_errors_fault_fails_the_named_skus_only(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    for sku in ("A", "B"):
        sim.set_listing(sid, "UK", sku, price="1.00", quantity=1)
    sim.set_feed_fault("item-errors", seller_id=sid, skus=["B"])
    async with amazon_simulator.seller_client(sid) as client:
        _, result = await poll(
            client, await submit(client, feed(sid, [price_stock(1, "A", 2.0, 2), price_stock(2, "B", 2.0, 2)]))
        )
        report = await report_of(client, result)
    assert [(i["sku"], i["code"]) for i in report["issues"]] == [("B", "SIMULATED_ERROR")]
    assert (sim.listing(sid, "UK", "A").quantity, sim.listing(sid, "UK", "B").quantity) == (2, 1)  # type: ignore[union-attr]


async def test_a_document_that_breaks_the_feed_schema_is_a_recorded_violation_and_fatal(
    amazon_simulator: AmazonServer,
) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    bad = feed(sid, [price_stock(1, "A", 2.0, 2)])
    bad["messages"][0]["operationType"] = "UPSERT"
    async with amazon_simulator.seller_client(sid) as client:
        statuses, _ = await poll(client, await submit(client, bad))
        assert statuses[-1] == "FATAL"
        statuses, _ = await poll(client, await submit(client, None, raw=b"{not json"))
        assert statuses[-1] == "FATAL"
    [violation] = sim.take_violations()
    assert violation.side == "feed" and any("UPSERT" in e for e in violation.errors)


async def test_feed_timing_by_the_clock_cancel_and_the_upload_url_rules(
    amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    sim = amazon_simulator.sim
    sid = sim.add_seller(countries=("UK",)).selling_partner_id
    sim.set_feed_timing(polls_per_step=100, seconds_per_step=30)
    async with amazon_simulator.seller_client(sid) as client:
        feed_id = await submit(client, feed(sid, [price_stock(1, "A", 2.0, 2)]))
        assert (await client.get(f"/feeds/2021-06-30/feeds/{feed_id}")).json()["processingStatus"] == "IN_QUEUE"
        clock.advance(seconds=30)
        assert (await client.get(f"/feeds/2021-06-30/feeds/{feed_id}")).json()["processingStatus"] == "IN_PROGRESS"
        clock.advance(seconds=30)
        assert (await client.get(f"/feeds/2021-06-30/feeds/{feed_id}")).json()["processingStatus"] == "DONE"

        queued = await submit(client, feed(sid, [price_stock(1, "A", 2.0, 2)]))
        cancelled = await client.delete(f"/feeds/2021-06-30/feeds/{queued}")
        assert cancelled.status_code == 200
        assert (await client.get(f"/feeds/2021-06-30/feeds/{queued}")).json()["processingStatus"] == "CANCELLED"

        created = await client.post("/feeds/2021-06-30/documents", json={"contentType": CONTENT_TYPE})
        url = created.json()["url"]
        wrong_type = await client.put(url, content=b"{}", headers={"content-type": "text/plain"})
        assert wrong_type.status_code == 403 and b"SignatureDoesNotMatch" in wrong_type.content
        not_uploaded = await client.post(
            "/feeds/2021-06-30/feeds",
            json={
                "feedType": "JSON_LISTINGS_FEED",
                "marketplaceIds": [UK],
                "inputFeedDocumentId": created.json()["feedDocumentId"],
            },
        )
        assert not_uploaded.status_code == 400
        clock.advance(minutes=6)  # the URL is valid five minutes
        late = await client.put(url, content=b"{}", headers={"content-type": CONTENT_TYPE})
        assert late.status_code == 403 and b"Request has expired" in late.content
