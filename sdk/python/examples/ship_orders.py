#!/usr/bin/env python3
"""Ship the oldest unshipped order: confirm its items with tracking, attach your own reference, and follow the
write-back to the marketplace (P1 only; elsewhere the response warns that nothing was sent).

    python sdk/python/examples/ship_orders.py [--reference ERP-1001]
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from marketsync_client import Client
from marketsync_client.models import ConfirmItem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", default="ERP-1001", help="your own reference for the order")
    args = parser.parse_args()

    with Client.from_env(scopes=["OrdersRead", "OrdersWrite", "InventoryRead"]) as api:
        order = next(iter(api.iter_orders(order_statuses=["Unshipped"], page_size=1)), None)
        if order is None:
            raise SystemExit("no unshipped orders (in the demo: marketsync sandbox orders-arrive ...)")
        print(f"order {order.ServiceOrderID} on {order.Platform} {order.Country}, {len(order.Items)} item(s)")

        shipped_now = datetime.now(UTC)
        result = api.confirm_orders(
            [
                ConfirmItem(
                    OrderItemId=item.OrderItemId,
                    ShipDate=shipped_now,
                    CarrierCode="RM",
                    CarrierName="Royal Mail",
                    TrackingNumber=f"RM{index:08d}GB",
                )
                for index, item in enumerate(order.Items, start=1)
                if item.Status == "Unshipped"
            ]
        )
        for item in result.Items:
            print(f"  item {item.OrderItemId}: {item.Status}")
        for warning in result.Warnings:
            print(f"  warning: {warning}")  # P2-P4: apply the change in the marketplace's own tools

        updated = api.update_order(order.ServiceOrderID, args.reference)
        print(f"reference {updated.ExternalReference} attached")
        for job_id in result.JobIds:
            job = api.wait_for_job(job_id, timeout=120)
            print(f"write-back job {job.Status} (successful: {job.IsSuccessful})")


if __name__ == "__main__":
    main()
