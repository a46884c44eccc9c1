"""Pure rules of the marketplace side: health transitions, the sandbox's token bucket, feed lines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from marketsync.marketplaces.rules import (
    UNKNOWN,
    feed_job_status,
    health_transition,
    observed_health,
    price_stock_values,
)
from marketsync.marketplaces.sandbox import rules as sandbox_rules

HEALTHY = observed_health("Healthy", "")
REVOKED = observed_health("UnAuthorized", "")
DOWN = observed_health("Unavailable", "")


def test_unknown_health_is_null_and_not_broken() -> None:
    assert UNKNOWN.status is None and not UNKNOWN.broken


def test_revoked_requires_reauthorization() -> None:
    assert (REVOKED.is_healthy, REVOKED.requires_reauthorization) == (False, True)
    assert (DOWN.is_healthy, DOWN.requires_reauthorization) == (False, False)


@pytest.mark.parametrize(
    ("current", "observed", "event"),
    [
        (UNKNOWN, HEALTHY, None),  # first knowledge, nothing was broken
        (UNKNOWN, REVOKED, "MarketplaceUnhealthy"),
        (HEALTHY, HEALTHY, None),
        (HEALTHY, REVOKED, "MarketplaceUnhealthy"),
        (REVOKED, REVOKED, None),  # stays broken: no repeat
        (REVOKED, DOWN, None),  # broken for another reason: still no repeat
        (REVOKED, HEALTHY, "MarketplaceRestored"),
        (DOWN, HEALTHY, "MarketplaceRestored"),
    ],
)
def test_events_only_on_a_change_between_working_and_broken(current, observed, event) -> None:  # type: ignore[no-untyped-def]
    new, fired = health_transition(current, observed)
    assert new == observed
    assert fired == event


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_token_bucket_spends_refills_and_says_how_long_to_wait() -> None:
    bucket = sandbox_rules.Bucket(capacity=2, refill_per_s=0.5, tokens=2, at=T0)
    bucket, wait = sandbox_rules.take_token(bucket, T0)
    assert wait is None and bucket.tokens == 1
    bucket, wait = sandbox_rules.take_token(bucket, T0)
    assert wait is None and bucket.tokens == 0
    bucket, wait = sandbox_rules.take_token(bucket, T0)
    assert wait == 2  # whole seconds until one token
    bucket, wait = sandbox_rules.take_token(bucket, T0 + timedelta(seconds=2))
    assert wait is None
    # Never more than the capacity, however long it rested.
    bucket, _ = sandbox_rules.take_token(bucket, T0 + timedelta(hours=1))
    assert bucket.tokens == 1


def test_item_errors_fail_every_other_line() -> None:
    assert sandbox_rules.faulted_lines("item-errors", 5) == {0, 2, 4}
    assert sandbox_rules.faulted_lines("none", 5) == set()


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ({"ExternalSku": "A", "Price": "1.50"}, None),
        ({"ExternalSku": "A", "Quantity": 0}, None),
        ({"ExternalSku": "Z", "Price": "1.50"}, "No listing with this SKU."),
        ({"ExternalSku": "A"}, "Nothing to update."),
        ({"ExternalSku": "A", "Price": "0"}, "Price must be above zero."),
        ({"ExternalSku": "A", "Quantity": -1}, "Quantity must be a whole number, zero or more."),
    ],
)
def test_price_stock_lines_are_validated_per_line(line, error) -> None:  # type: ignore[no-untyped-def]
    assert sandbox_rules.price_stock_line_error(line, {"A"}) == error


def test_order_updates_are_validated_against_the_item_state() -> None:
    unshipped, shipped = {"Status": "Unshipped"}, {"Status": "Shipped"}
    confirm = {"Action": "Confirm", "Details": {"TrackingNumber": "T1"}}
    assert sandbox_rules.order_update_error(confirm, unshipped) is None
    assert sandbox_rules.order_update_error(confirm, shipped) is not None
    assert sandbox_rules.order_update_error({"Action": "Confirm"}, unshipped) is not None
    assert sandbox_rules.order_update_error({"Action": "Cancel"}, shipped) is not None
    assert sandbox_rules.order_update_error({"Action": "Refund"}, shipped) is None
    assert sandbox_rules.order_update_error({"Action": "Refund"}, None) == "No such order item."
    assert sandbox_rules.order_update_error({"Action": "Explode"}, unshipped) is not None
    assert sandbox_rules.order_status(["Shipped", "Unshipped"]) == "PartiallyShipped"
    assert sandbox_rules.order_status(["Cancelled", "Refunded"]) == "Refunded"
    assert sandbox_rules.order_status(["Shipped", "Cancelled"]) == "Shipped"


def test_a_feed_job_succeeds_only_when_the_marketplace_accepted_a_row() -> None:
    assert feed_job_status(lines=3, accepted=3) == "Completed"
    assert feed_job_status(lines=3, accepted=1) == "Completed"  # ProcessedWithErrors, still Completed
    assert feed_job_status(lines=1, accepted=0) == "Failed"  # every row refused
    assert feed_job_status(lines=0, accepted=0) == "Completed"  # nothing to send is not a failure


def test_a_feed_line_carries_only_what_differs_and_never_a_refused_zero_price() -> None:
    ten = Decimal("10.00")
    assert price_stock_values(ten, 5, ten, 5, accepts_zero_price=False) is None
    assert price_stock_values(ten, 6, ten, 5, accepts_zero_price=False) == (None, 6)
    assert price_stock_values(Decimal("11"), 5, ten, 5, accepts_zero_price=False) == (Decimal("11"), None)
    assert price_stock_values(ten, 5, None, None, accepts_zero_price=False) == (ten, 5)  # unknown: both
    assert price_stock_values(None, 5, None, 5, accepts_zero_price=False) is None  # no price stored
    assert price_stock_values(Decimal(0), 7, ten, 5, accepts_zero_price=False) == (None, 7)
    assert price_stock_values(Decimal(0), 5, ten, 5, accepts_zero_price=False) is None
    assert price_stock_values(Decimal(0), 5, ten, 5, accepts_zero_price=True) == (Decimal(0), None)
