"""Orders v0 through the simulator over real HTTP: getOrders with LastUpdatedAfter/CreatedAfter and NextToken paging,
getOrderItems, and customer data only through a Restricted Data Token (Tokens API)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from marketsync.kit.clock import FrozenClock
from tests.support.amazon import AmazonServer

UK = "A1F83G8C2ARO7P"
DE = "A1PA6795UKMFR9"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))


async def test_get_orders_pages_by_last_update_with_next_token(
    amazon_simulator: AmazonServer, clock: FrozenClock
) -> None:
    sim = amazon_simulator.sim
    seller = sim.add_seller(countries=("UK", "DE"))
    sid = seller.selling_partner_id
    sim.set_listing(sid, "UK", "TEA-1", price="4.50", quantity=10)
    made = []
    for _ in range(5):
        made.append(sim.add_order(sid, "UK", [("TEA-1", 2)]))
        clock.advance(minutes=1)
    sim.add_order(sid, "DE", [("TEA-1", 1, "5.00")])
    since = clock.now()
    clock.advance(minutes=1)
    shipped = sim.update_order(made[0].amazon_order_id, status="Shipped")
    async with amazon_simulator.seller_client(sid) as client:
        pages, token = [], None
        while True:
            params = (
                {"MarketplaceIds": UK, "NextToken": token}
                if token
                else {"MarketplaceIds": UK, "LastUpdatedAfter": "2026-03-01T00:00:00Z", "MaxResultsPerPage": "2"}
            )
            answer = await client.get("/orders/v0/orders", params=params)
            assert answer.status_code == 200, answer.text
            payload = answer.json()["payload"]
            pages.append([o["AmazonOrderId"] for o in payload["Orders"]])
            token = payload.get("NextToken")
            if not token:
                break
        assert [len(p) for p in pages] == [2, 2, 1]
        assert [i for p in pages for i in p] == [o.amazon_order_id for o in made[1:]] + [made[0].amazon_order_id]

        changed = await client.get(
            "/orders/v0/orders", params={"MarketplaceIds": UK, "LastUpdatedAfter": since.isoformat()}
        )
        orders = changed.json()["payload"]["Orders"]
        assert [(o["AmazonOrderId"], o["OrderStatus"]) for o in orders] == [(shipped.amazon_order_id, "Shipped")]
        order = orders[0]
        assert order["OrderTotal"] == {"CurrencyCode": "GBP", "Amount": "9.00"}
        assert order["SalesChannel"] == "Amazon.co.uk" and order["MarketplaceId"] == UK
        assert "BuyerInfo" not in order and "Name" not in order["ShippingAddress"]  # no PII without an RDT

        both = await client.get(
            "/orders/v0/orders", params={"MarketplaceIds": f"{UK},{DE}", "CreatedAfter": "2026-03-01T00:00:00Z"}
        )
        assert len(both.json()["payload"]["Orders"]) == 6

        items = await client.get(f"/orders/v0/orders/{made[1].amazon_order_id}/orderItems")
        assert items.status_code == 200
        [item] = items.json()["payload"]["OrderItems"]
        assert (item["SellerSKU"], item["QuantityOrdered"], item["ItemPrice"]) == (
            "TEA-1",
            2,
            {"CurrencyCode": "GBP", "Amount": "9.00"},
        )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"CreatedAfter": "2026-03-01T00:00:00Z", "LastUpdatedAfter": "2026-03-01T00:00:00Z"}, "Exactly one"),
        ({}, "Exactly one"),
        ({"CreatedAfter": "yesterday"}, "Invalid CreatedAfter"),
        ({"CreatedAfter": "2026-03-01T00:00:00Z", "CreatedBefore": "2026-03-02T09:29:00Z"}, "Invalid CreatedBefore"),
        ({"CreatedAfter": "2026-03-01T00:00:00Z", "MaxResultsPerPage": "101"}, "Invalid MaxResultsPerPage"),
        ({"NextToken": "made-up"}, "Invalid NextToken"),
    ],
)
async def test_get_orders_refuses_what_amazon_refuses(
    amazon_simulator: AmazonServer, params: dict[str, str], message: str
) -> None:
    seller = amazon_simulator.sim.add_seller(countries=("UK",))
    async with amazon_simulator.seller_client(seller.selling_partner_id) as client:
        answer = await client.get("/orders/v0/orders", params={"MarketplaceIds": UK, **params})
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["code"] == "InvalidInput"
    assert message in answer.json()["errors"][0]["message"]


async def test_customer_data_only_through_a_restricted_data_token(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    seller = sim.add_seller(countries=("UK",))
    order = sim.add_order(seller.selling_partner_id, "UK", [("TEA-1", 1, Decimal("3.00"))], buyer_name="Ada Buyer")
    oid = order.amazon_order_id
    async with amazon_simulator.seller_client(seller.selling_partner_id) as client:
        plain = await client.get(f"/orders/v0/orders/{oid}/address")
        assert plain.status_code == 200
        assert plain.json()["payload"]["ShippingAddress"] == {
            "City": "Springfield",
            "StateOrRegion": "",
            "PostalCode": "AB1 2CD",
            "CountryCode": "GB",
        }
        assert plain.json()["payload"] == {
            "AmazonOrderId": oid,
            "ShippingAddress": plain.json()["payload"]["ShippingAddress"],
        }
        assert (await client.get(f"/orders/v0/orders/{oid}/buyerInfo")).json()["payload"] == {"AmazonOrderId": oid}

        rdt_answer = await client.post(
            "/tokens/2021-03-01/restrictedDataToken",
            json={
                "restrictedResources": [
                    {"method": "GET", "path": "/orders/v0/orders/{orderId}/address"},
                    {"method": "GET", "path": f"/orders/v0/orders/{oid}/buyerInfo"},
                    {"method": "GET", "path": "/orders/v0/orders", "dataElements": ["buyerInfo", "shippingAddress"]},
                ]
            },
        )
        assert rdt_answer.status_code == 200
        assert rdt_answer.json()["expiresIn"] == 3600
        rdt = {"x-amz-access-token": rdt_answer.json()["restrictedDataToken"]}

        address = await client.get(f"/orders/v0/orders/{oid}/address", headers=rdt)
        assert address.json()["payload"]["ShippingAddress"]["Name"] == "Ada Buyer"
        buyer = await client.get(f"/orders/v0/orders/{oid}/buyerInfo", headers=rdt)
        assert buyer.json()["payload"]["BuyerName"] == "Ada Buyer" and "@" in buyer.json()["payload"]["BuyerEmail"]
        orders = await client.get(
            "/orders/v0/orders", headers=rdt, params={"MarketplaceIds": UK, "CreatedAfter": "2026-01-01T00:00:00Z"}
        )
        [with_pii] = orders.json()["payload"]["Orders"]
        assert with_pii["BuyerInfo"]["BuyerName"] == "Ada Buyer" and with_pii["ShippingAddress"]["Name"] == "Ada Buyer"

        # An RDT is good only for the resources it names: another path or a non-restricted operation is refused.
        assert (await client.get(f"/orders/v0/orders/{oid}/orderItems", headers=rdt)).status_code == 403
        assert (await client.get("/sellers/v1/marketplaceParticipations", headers=rdt)).status_code == 403

        refused = await client.post(
            "/tokens/2021-03-01/restrictedDataToken",
            json={
                "restrictedResources": [
                    {"method": "GET", "path": f"/orders/v0/orders/{oid}/address", "dataElements": ["shippingAddress"]}
                ]
            },
        )
        assert refused.status_code == 400
        not_restricted = await client.post(
            "/tokens/2021-03-01/restrictedDataToken",
            json={"restrictedResources": [{"method": "GET", "path": "/sellers/v1/marketplaceParticipations"}]},
        )
        assert not_restricted.status_code == 400


async def test_an_unknown_order_is_404_and_another_sellers_order_too(amazon_simulator: AmazonServer) -> None:
    sim = amazon_simulator.sim
    mine, theirs = sim.add_seller(countries=("UK",)), sim.add_seller(countries=("UK",))
    order = sim.add_order(theirs.selling_partner_id, "UK", [("X", 1, "1")])
    async with amazon_simulator.seller_client(mine.selling_partner_id) as client:
        assert (await client.get(f"/orders/v0/orders/{order.amazon_order_id}/orderItems")).status_code == 404
        assert (await client.get("/orders/v0/orders/202-0000000-0000000")).status_code == 404
        other_market = await client.get(
            "/orders/v0/orders", params={"MarketplaceIds": DE, "CreatedAfter": "2026-01-01T00:00:00Z"}
        )
        assert other_market.status_code == 400
