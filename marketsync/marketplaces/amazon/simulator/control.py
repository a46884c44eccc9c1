"""The control endpoints under /_simulator: the Python API over HTTP, for the simulator run as its own process (demo,
benchmarks). Not SP-API, not contract-validated. JSON in, JSON out; a bad request is a 400 {"error": ...}.

  GET    /_simulator/state                                    applications, sellers, counts, violations
  POST   /_simulator/applications      {client_id, client_secret, application_id, redirect_uris, draft}
  POST   /_simulator/sellers           {countries?, selling_partner_id?, store_name?}  -> {selling_partner_id}
  POST   /_simulator/sellers/ID/authorise                     -> {refresh_token}
  POST   /_simulator/sellers/ID/revoke {status?} | /restore
  POST   /_simulator/sellers/ID/orders {marketplace, count} | {marketplace, items: [[sku, qty, price?]], status?}
  PUT    /_simulator/sellers/ID/listings/MARKETPLACE/SKU {price?, quantity?, product_type?}
  POST   /_simulator/orders/ORDER_ID   {status}
  POST   /_simulator/faults            {operation?, status, times?} | {delay_s, operation?} | {drip_s, operation?}
  DELETE /_simulator/faults
  POST   /_simulator/feed-fault        {mode: none|reject|item-errors, seller_id?, skus?, message?}
  POST   /_simulator/feed-timing       {polls_per_step?, seconds_per_step?}
  POST   /_simulator/rate-limits       {enabled} | {operation, rate, burst}
  GET    /_simulator/violations        DELETE: the same, then forgotten
  POST   /_simulator/clock             {advance_s}   (a simulator on a frozen clock only)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from marketsync.kit.clock import FrozenClock
from marketsync.marketplaces.amazon.simulator.state import AmazonSimulator


def handle(sim: AmazonSimulator, method: str, path: str, data: dict[str, Any]) -> tuple[int, Any]:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["sellers"] and len(parts) >= 3:
        return _seller(sim, method, parts[1], parts[2:], data)
    endpoint = _ENDPOINTS.get((method, *parts[:1]))
    answer = endpoint(sim, parts, data) if endpoint is not None else None
    return answer if answer is not None else (404, {"error": f"no control endpoint {method} /_simulator/{path}"})


Answer = tuple[int, Any]
_OK: Answer = (200, {"ok": True})


def _state(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    return 200, sim.summary()


def _application(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    app = sim.register_application(
        data["client_id"], data["client_secret"], data["application_id"], data.get("redirect_uris", []),
        draft=bool(data.get("draft", False)),
    )  # fmt: skip
    return 200, {"client_id": app.client_id, "application_id": app.application_id}


def _new_seller(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer | None:
    if len(parts) != 1:
        return None
    seller = sim.add_seller(
        data.get("countries"), selling_partner_id=data.get("selling_partner_id"), store_name=data.get("store_name")
    )
    return 200, {"selling_partner_id": seller.selling_partner_id}


def _order_status(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer | None:
    if len(parts) != 2:
        return None
    order = sim.update_order(parts[1], status=data["status"])
    return 200, {"AmazonOrderId": order.amazon_order_id, "OrderStatus": order.status}


def _fault(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    if "delay_s" in data:
        sim.set_delay(float(data["delay_s"]), data.get("operation"))
    elif "drip_s" in data:
        sim.set_drip(float(data["drip_s"]), data.get("operation"))
    else:
        sim.fail_next(data.get("operation"), status=int(data["status"]), times=int(data.get("times", 1)))
    return _OK


def _clear_faults(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    sim.clear_faults()
    return _OK


def _feed_fault(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    if data["mode"] not in ("none", "reject", "item-errors"):
        raise ValueError("mode is none, reject or item-errors")
    sim.set_feed_fault(data["mode"], seller_id=data.get("seller_id"), skus=data.get("skus"),
                       message=data.get("message", ""))  # fmt: skip
    return _OK


def _feed_timing(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    sim.set_feed_timing(polls_per_step=int(data.get("polls_per_step", 1)),
                        seconds_per_step=data.get("seconds_per_step"))  # fmt: skip
    return _OK


def _rate_limits(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    if "operation" in data:
        sim.set_rate(data["operation"], float(data["rate"]), int(data["burst"]))
    if "enabled" in data:
        sim.enforce_rate_limits(bool(data["enabled"]))
    return _OK


def _violations(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    return 200, {"Violations": [str(v) for v in sim.violations]}


def _take_violations(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    return 200, {"Violations": [str(v) for v in sim.take_violations()]}


def _clock(sim: AmazonSimulator, parts: list[str], data: dict[str, Any]) -> Answer:
    advance_clock(sim, float(data["advance_s"]))
    return 200, {"now": sim.clock.now().isoformat()}


# (method, first path segment) -> endpoint; an endpoint answering None did not match (a 404).
_ENDPOINTS: dict[tuple[str, ...], Callable[[AmazonSimulator, list[str], dict[str, Any]], Answer | None]] = {
    ("GET", "state"): _state,
    ("POST", "applications"): _application,
    ("POST", "sellers"): _new_seller,
    ("POST", "orders"): _order_status,
    ("POST", "faults"): _fault,
    ("DELETE", "faults"): _clear_faults,
    ("POST", "feed-fault"): _feed_fault,
    ("POST", "feed-timing"): _feed_timing,
    ("POST", "rate-limits"): _rate_limits,
    ("GET", "violations"): _violations,
    ("DELETE", "violations"): _take_violations,
    ("POST", "clock"): _clock,
}


def _seller(
    sim: AmazonSimulator, method: str, seller_id: str, rest: list[str], data: dict[str, Any]
) -> tuple[int, Any]:
    sim.seller(seller_id)  # KeyError: 400
    action = (method, rest[0])
    if action == ("POST", "authorise"):
        return 200, {"refresh_token": sim.authorise(seller_id, data.get("client_id") or next(iter(sim.applications)))}
    if action == ("POST", "revoke"):
        sim.revoke(seller_id, int(data.get("status", 403)))
        return 200, {"ok": True}
    if action == ("POST", "restore"):
        sim.restore(seller_id)
        return 200, {"ok": True}
    if action == ("POST", "orders"):
        if "items" in data:
            items = [tuple(item) for item in data["items"]]
            orders = [sim.add_order(seller_id, data["marketplace"], items, status=data.get("status", "Unshipped"))]
        else:
            orders = sim.orders_arrive(seller_id, data["marketplace"], int(data.get("count", 1)))
        return 200, {"AmazonOrderIds": [o.amazon_order_id for o in orders]}
    if action == ("PUT", "listings") and len(rest) == 3:
        listing = sim.set_listing(
            seller_id, rest[1], rest[2], price=data.get("price"), quantity=data.get("quantity"),
            product_type=data.get("product_type", "LUGGAGE"),
        )  # fmt: skip
        return 200, {"sku": listing.sku, "price": str(listing.price), "quantity": listing.quantity}
    return 404, {"error": f"no control endpoint {method} for a seller: {'/'.join(rest)}"}


def advance_clock(sim: AmazonSimulator, seconds: float) -> None:
    if not isinstance(sim.clock, FrozenClock):
        raise ValueError("the simulator runs on the system clock; its time cannot be moved")
    sim.clock.advance(seconds=seconds)
