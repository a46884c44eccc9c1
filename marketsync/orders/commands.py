"""CLI commands of this domain (registered on the groups in marketsync.kit.cli): pull orders now.

Orders are otherwise read and changed through the API.
"""

from __future__ import annotations

from typing import Any

from marketsync.jobs import service as jobs_service
from marketsync.jobs.types import OrderPullPayload
from marketsync.kit.cli import JsonOption, admin, emit
from marketsync.marketplaces import service
from marketsync.marketplaces.commands import AccountOption, MarketplaceOption
from marketsync.orders.tasks import PullOutcome
from marketsync.runtime import Runtime
from marketsync.startup import run_command


@admin.command("pull-orders")
def pull_orders(account: str = AccountOption, marketplace: str = MarketplaceOption, as_json: bool = JsonOption) -> None:
    """Pull orders now instead of waiting for the schedule (P1 and P2 only)."""

    async def body(rt: Runtime) -> dict[str, Any]:
        async with rt.db.transaction() as session:
            connection = await service.get(session, account, marketplace)
            service.require_orders_pulled(connection)
            job = jobs_service.enqueue(session, rt.clock.now(), account, OrderPullPayload(MarketplaceId=marketplace))
            job_id = job.id
        status, outcome = await jobs_service.run_now(rt, job_id)
        result: dict[str, Any] = {"JobId": job_id, "MarketplaceId": marketplace, "Status": status}
        if isinstance(outcome, PullOutcome):
            result.update(PulledOrders=outcome.pulled, NewOrderCount=outcome.new_orders)
        return result

    emit(run_command(body, as_json=as_json), as_json)
