"""Concurrent pushes over the same SKUs (parallel clients): no lost update, events match the changes.

On PostgreSQL the pushes really overlap (row locks in id order serialise them per SKU); on SQLite the
single writer serialises them. Either way, replaying the InventoryChanged events in order must
reproduce the final catalogue exactly, every event entry must be a real move, and the number of
`Updated` results per SKU must equal the number of events naming it.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from decimal import Decimal
from typing import Any

import httpx

from marketsync.runtime import Runtime
from tests.inventory.support import add_products, inventory_events, payloads, push_ok, stored
from tests.support.factories import make_tenant

SKUS = [f"HOT-{i:03d}" for i in range(60)]
CLIENTS = 6
ROUNDS = 4


def random_push(rng: random.Random) -> list[dict[str, Any]]:
    items = []
    for sku in rng.sample(SKUS, 40):
        item: dict[str, Any] = {"Sku": sku}
        if rng.random() < 0.7:
            item["Quantity"] = rng.choice([0, 1, 2])
        if rng.random() < 0.5:
            item["Price"] = rng.choice([1.00, 1.50, 2.25])
        items.append(item)
    return items


async def test_parallel_pushes_lose_nothing_and_record_exactly_the_real_changes(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [(sku, "1.00", 0) for sku in SKUS])
    updated: Counter[str] = Counter()

    async def client(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(ROUNDS):
            body = await push_ok(api, tenant, random_push(rng), PropagateToListings=False)
            assert sum(body[k] for k in ("Updated", "Unchanged", "NotFound", "Ambiguous", "Failed")) == len(
                body["Results"]
            )
            assert body["Failed"] == 0 and body["NotFound"] == 0
            updated.update(line["Sku"] for line in body["Results"] if line["Result"] == "Updated")

    await asyncio.gather(*(client(seed) for seed in range(CLIENTS)))

    replay: dict[str, list[Any]] = {sku: [Decimal("1.00"), 0] for sku in SKUS}
    named: Counter[str] = Counter()
    for event in payloads(await inventory_events(rt, tenant.account_id)):
        assert event["changed"], "an event is recorded only when something moved"
        for entry in event["changed"]:
            named[entry["sku"]] += 1
            state = replay[entry["sku"]]
            if entry["price"] is not None:
                assert Decimal(str(entry["price"])) != state[0], f"phantom price change on {entry['sku']}"
                state[0] = Decimal(str(entry["price"]))
            if entry["quantity"] is not None:
                assert entry["quantity"] != state[1], f"phantom quantity change on {entry['sku']}"
                state[1] = entry["quantity"]
    final = await stored(rt, tenant.account_id)
    assert {sku: [price, quantity] for sku, (price, quantity, _) in final.items()} == replay
    assert named == updated
