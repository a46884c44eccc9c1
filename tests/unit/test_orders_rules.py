"""Pure order rules: statuses, transitions, refund math, marketplace mapping, the List cursor."""

from __future__ import annotations

import base64
import hmac
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from marketsync.http.errors import ValidationFailed
from marketsync.orders import rules, schemas
from marketsync.orders.rules import ItemFigures

D = Decimal


def fig(quantity: int = 2, price: str = "10", **kw: object) -> ItemFigures:
    return ItemFigures(quantity=quantity, unit_price=D(price), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("item", "pending", "expected"),
    [
        (fig(), False, "Unshipped"),
        (fig(), True, "Pending"),
        (fig(shipped=1), False, "PartiallyShipped"),
        (fig(shipped=2), False, "Shipped"),
        (fig(shipped=1, cancelled=1), False, "Shipped"),
        (fig(cancelled=2), False, "Cancelled"),
        (fig(cancelled=2), True, "Cancelled"),
        (fig(refunded_amount=D("20")), False, "Refunded"),
        (fig(refunded_amount=D("19.99")), False, "Unshipped"),
    ],
)
def test_item_status(item: ItemFigures, pending: bool, expected: str) -> None:
    assert rules.item_status(item, order_pending=pending) == expected


@pytest.mark.parametrize(
    ("statuses", "pending", "expected"),
    [
        (["Unshipped", "Unshipped"], False, "Unshipped"),
        (["Shipped", "Unshipped"], False, "PartiallyShipped"),
        (["Shipped", "Cancelled"], False, "Shipped"),
        (["Cancelled", "Cancelled"], False, "Cancelled"),
        (["Refunded", "Cancelled"], False, "Refunded"),
        (["Refunded", "Unshipped"], False, "Unshipped"),
        (["Pending"], True, "Pending"),
        ([], False, "Unshipped"),
    ],
)
def test_order_status(statuses: list[str], pending: bool, expected: str) -> None:
    assert rules.order_status(statuses, pending=pending) == expected


def test_transition_refusals() -> None:
    assert rules.refuse_confirm(fig(), order_pending=False) is None
    assert "Cancelled" in _message(rules.refuse_confirm(fig(cancelled=2), order_pending=False))
    assert "already Shipped" in _message(rules.refuse_confirm(fig(shipped=2), order_pending=False))
    assert "Pending" in _message(rules.refuse_confirm(fig(), order_pending=True))
    assert "Refunded" in _message(rules.refuse_confirm(fig(refunded_amount=D(20)), order_pending=False))

    assert rules.refuse_cancel(fig(), None, order_pending=True) is None  # a pending order may be cancelled
    assert rules.refuse_cancel(fig(shipped=1), 1, order_pending=False) is None
    assert "Only 1 unshipped" in _message(rules.refuse_cancel(fig(shipped=1), 2, order_pending=False))
    assert "shipped item cannot be cancelled" in _message(
        rules.refuse_cancel(fig(shipped=2), None, order_pending=False)
    )
    assert "already Cancelled" in _message(rules.refuse_cancel(fig(cancelled=2), None, order_pending=False))


def test_refund_math() -> None:
    item = fig(quantity=2, price="10.00", refunded_amount=D("15.00"), refunded_quantity=1)
    assert rules.refuse_refund(item, 0, D("5.00"), order_pending=False) is None
    assert "exceeds the 5.00 still refundable" in _message(rules.refuse_refund(item, 0, D("5.01"), order_pending=False))
    assert "Only 1 unit(s)" in _message(rules.refuse_refund(item, 2, D("1"), order_pending=False))
    assert "price of the 1 unit(s)" in _message(rules.refuse_refund(fig(), 1, D("10.01"), order_pending=False))
    assert "nothing has been paid" in _message(rules.refuse_refund(fig(), 0, D("1"), order_pending=True))
    # Every field at fault is named: too much money and too many units at once.
    assert [r.field for r in rules.refund_refusals(item, 2, D("5.01"), order_pending=False)] == ["Amount", "Quantity"]
    assert rules.refund_refusals(item, 1, D("5.00"), order_pending=False) == []


@given(st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=30))
def test_accepted_refunds_never_exceed_what_was_paid(amounts_in_cents: list[int]) -> None:
    item = fig(quantity=3, price="12.34")
    for cents in amounts_in_cents:
        amount = D(cents) / 100
        if rules.refuse_refund(item, 0, amount, order_pending=False) is None:
            item = ItemFigures(item.quantity, item.unit_price, refunded_amount=item.refunded_amount + amount)
    assert item.refunded_amount <= item.line_total


def test_pulled_counters_only_move_forward() -> None:
    assert rules.pulled_counters(fig(), "Shipped", "Shipped") == (2, 0)
    assert rules.pulled_counters(fig(), "Unshipped", "Cancelled") == (0, 2)
    assert rules.pulled_counters(fig(shipped=1), "Cancelled", "PartiallyShipped") == (1, 1)
    # The marketplace still says Unshipped after a local confirm: nothing is undone.
    assert rules.pulled_counters(fig(shipped=2), "Unshipped", "Unshipped") == (2, 0)
    # An order reported Shipped does not ship an item the marketplace reports Refunded.
    assert rules.pulled_counters(fig(), "Refunded", "Shipped") == (0, 0)
    assert rules.is_pending_at_marketplace("PendingPayment") and not rules.is_pending_at_marketplace("Unshipped")


def _message(refusal: rules.Refusal | None) -> str:
    return refusal.message if refusal is not None else ""


def test_refusals_name_the_field_they_are_about() -> None:
    assert rules.refuse_cancel(fig(shipped=1), 2, order_pending=False) == (
        "Quantity",
        "Only 1 unshipped unit(s) can be cancelled; 2 requested.",
    )
    assert _field(rules.refuse_cancel(fig(cancelled=2), None, order_pending=False)) == "OrderItemId"
    item = fig(quantity=2, price="10.00", refunded_amount=D("15.00"), refunded_quantity=1)
    assert _field(rules.refuse_refund(item, 2, D("1"), order_pending=False)) == "Quantity"
    assert _field(rules.refuse_refund(item, 0, D("5.01"), order_pending=False)) == "Amount"
    assert _field(rules.refuse_refund(fig(), 1, D("10.01"), order_pending=False)) == "Amount"


def _field(refusal: rules.Refusal | None) -> str:
    assert refusal is not None
    return refusal.field


def test_cursor_round_trip_is_exact_and_rejects_garbage() -> None:
    cursor = rules.Cursor(
        datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), "01ABC", datetime(2026, 1, 3, tzinfo=UTC), "f" * 16
    )
    key = b"k" * 32
    encoded = rules.encode_cursor(cursor, key, "ACC-1")
    assert rules.decode_cursor(encoded, key, "ACC-1") == cursor
    for garbage in ("", "abc", "eyJ1IjoxfQ", "!!!!", encoded.split(".")[0], encoded + "x"):
        with pytest.raises(ValueError):
            rules.decode_cursor(garbage, key, "ACC-1")
    with pytest.raises(ValueError):  # issued under another key
        rules.decode_cursor(encoded, b"o" * 32, "ACC-1")
    with pytest.raises(ValueError):  # issued to another account
        rules.decode_cursor(encoded, key, "ACC-2")


def test_a_cursor_issued_before_the_mac_covered_the_account_still_resumes_for_one_release() -> None:
    key = b"k" * 32
    cursor = rules.Cursor(datetime(2026, 1, 2, tzinfo=UTC), "01ABC", datetime(2026, 1, 3, tzinfo=UTC), "f" * 16)
    payload = rules.encode_cursor(cursor, key, "ACC-1").split(".")[0]
    # As the previous release signed it: the label and the payload, no account.
    legacy_mac = hmac.new(key, b"orders-cursor\x00" + base64.urlsafe_b64decode(payload + "=="), "sha256").digest()
    legacy = f"{payload}.{base64.urlsafe_b64encode(legacy_mac[:16]).rstrip(b'=').decode()}"
    assert rules.decode_cursor(legacy, key, "ACC-1") == cursor
    with pytest.raises(ValueError):  # still signed: under another key it is nothing
        rules.decode_cursor(legacy, b"o" * 32, "ACC-1")


def test_a_hand_edited_cursor_is_refused_even_when_its_payload_is_well_formed() -> None:
    key = b"k" * 32
    cursor = rules.Cursor(datetime(2026, 1, 2, tzinfo=UTC), "01ABC", datetime(2026, 1, 3, tzinfo=UTC), "f" * 16)
    payload, mac = rules.encode_cursor(cursor, key, "ACC-1").split(".")
    edited = base64.urlsafe_b64encode(
        orjson.dumps({"u": 253402300799999999, "i": "01ABC", "h": 253402300799999999, "f": "f" * 16})
    )
    with pytest.raises(ValueError):
        rules.decode_cursor(f"{edited.rstrip(b'=').decode()}.{mac}", key, "ACC-1")
    assert payload != edited.rstrip(b"=").decode()


def test_filter_fingerprint_ignores_order_of_lists_but_not_values() -> None:
    a = rules.filter_fingerprint(["b", "a"], ["Shipped"], None, None, None)
    assert a == rules.filter_fingerprint(["a", "b"], ["Shipped"], None, None, None)
    assert a != rules.filter_fingerprint(["a"], ["Shipped"], None, None, None)
    assert a != rules.filter_fingerprint(["a", "b"], None, None, None, None)
    since = datetime(2026, 1, 1, tzinfo=UTC)
    assert rules.filter_fingerprint(None, None, since, None, None) != rules.filter_fingerprint(
        None, None, None, since, None
    )


def test_ship_date_may_not_run_ahead_more_than_a_day_nor_precede_the_purchase() -> None:
    now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    purchased = datetime(2026, 5, 30, 9, 0, tzinfo=UTC)
    assert rules.refuse_ship_date(now + timedelta(days=1), purchase_date=purchased, now=now) is None
    assert rules.refuse_ship_date(purchased, purchase_date=purchased, now=now) is None
    ahead = rules.refuse_ship_date(now + timedelta(days=1, seconds=1), purchase_date=purchased, now=now)
    assert "more than a day in the future" in _message(ahead) and _field(ahead) == "ShipDate"
    early = rules.refuse_ship_date(purchased - timedelta(seconds=1), purchase_date=purchased, now=now)
    assert "before the order's purchase date (2026-05-30T09:00:00.000Z)" in _message(early)


def test_a_write_back_marketplace_needs_a_carrier_code_or_tracking_number() -> None:
    def refusal(write_back: bool, code: str | None, tracking: str | None) -> rules.Refusal | None:
        return rules.refuse_shipment_details(
            write_back=write_back, marketplace="P1 UK", carrier_code=code, tracking_number=tracking
        )

    assert "P1 UK needs a CarrierCode or a TrackingNumber" in _message(refusal(True, None, None))
    assert refusal(True, "RM", None) is None and refusal(True, None, "T1") is None
    assert refusal(False, None, None) is None  # stored locally only: nothing to refuse


def test_write_bodies_are_read_leniently_keeping_every_well_formed_field() -> None:
    raw = orjson.dumps(
        {
            "Reason": "Nope",
            "Currency": "GBP",
            "OrderItems": [{"OrderItemId": "a", "Amount": 2.50}, {"OrderItemId": "", "Amount": -1}, "junk"],
        }
    )
    body = schemas.read_write_body(raw, schemas.RefundRequest, schemas.RefundItem)
    assert body.request is None
    assert set(body.errors) == {"Reason", "OrderItems[1].OrderItemId", "OrderItems[1].Amount", "OrderItems[2]"}
    assert body.fields == {"Currency": "GBP"}
    assert body.items == [{"OrderItemId": "a", "Amount": D("2.50"), "Quantity": 0}, {"Quantity": 0}, {}]
    with pytest.raises(ValidationFailed):
        body.valid()

    valid = schemas.read_write_body(
        b'{"CancelReason": "Other", "OrderItems": [{"OrderItemId": "a"}]}', schemas.CancelRequest, schemas.CancelItem
    )
    assert valid.errors == {} and valid.items == [{"OrderItemId": "a", "Quantity": None}]
    assert valid.valid().CancelReason == "Other"
    for broken, key in ((b"", "body"), (b"{", "body"), (b"[]", "body")):
        with pytest.raises(ValidationFailed) as raised:
            schemas.read_write_body(broken, schemas.ConfirmRequest, schemas.ConfirmItem)
        assert list(raised.value.errors) == [key]


def test_list_bodies_are_strict_and_an_absent_body_is_no_filter() -> None:
    assert schemas.read_list_body(b"") == schemas.ListOrdersRequest()
    assert schemas.read_list_body(b"  ").Limit == 50
    since = schemas.read_list_body(b'{"UpdatedSince": "2026-01-01T00:00:00+01:00"}').UpdatedSince
    assert since == datetime(2025, 12, 31, 23, 0, tzinfo=UTC)
    for raw, key in (
        (b'{"Limit": "5"}', "Limit"),
        (b'{"Limit": true}', "Limit"),
        (b'{"UpdatedSince": 1234}', "UpdatedSince"),
        (b'{"IncludeCustomerData": "yes"}', "IncludeCustomerData"),
        (b'{"OrderStatuses": []}', "OrderStatuses"),
    ):
        with pytest.raises(ValidationFailed) as raised:
            schemas.read_list_body(raw)
        assert list(raised.value.errors) == [key]


def test_changed_bounds_compare_at_milliseconds() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    bounds = rules.changed_bounds(at, datetime(2026, 1, 1, tzinfo=UTC), at)
    assert bounds.since == datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert bounds.before == datetime(2026, 1, 2, 3, 4, 5, 679000, tzinfo=UTC)
    assert rules.changed_bounds(None, None, datetime.max.replace(tzinfo=UTC)) == rules.ChangedBounds(None, None)
