"""Pure rules of the push, the event and the import (no database)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from marketsync.inventory import rules
from marketsync.inventory.rules import AppliedChange, ChangeSource, ImportRowError, PushItem, SkuChange, StoredProduct
from marketsync.kit import jsonio

NOW = datetime(2026, 5, 4, 3, 2, 1, 987654, tzinfo=UTC)


def test_collapse_keeps_the_last_occurrence_in_first_appearance_order() -> None:
    items = [PushItem("A", Decimal(1)), PushItem("B", quantity=2), PushItem("A", quantity=3), PushItem("a", quantity=4)]
    assert rules.collapse_last(items) == [(2, PushItem("A", quantity=3)), (1, PushItem("B", quantity=2)), (3, items[3])]


@given(st.lists(st.sampled_from("ABCDE"), min_size=1, max_size=40))
def test_collapse_yields_one_entry_per_distinct_sku(skus: list[str]) -> None:
    items = [PushItem(sku, quantity=index) for index, sku in enumerate(skus)]
    collapsed = rules.collapse_last(items)
    assert [item.sku for _, item in collapsed] == list(dict.fromkeys(skus))
    for position, item in collapsed:
        assert position == max(i for i, sku in enumerate(skus) if sku == item.sku)
        assert item.quantity == position


def test_resolve_sku() -> None:
    lower, upper = StoredProduct("1", "abc", None, 0), StoredProduct("2", "ABC", None, 0)
    assert rules.resolve_sku("abc", []) == "NotFound"
    assert rules.resolve_sku("Abc", [lower]) == lower
    assert rules.resolve_sku("ABC", [lower, upper]) == upper
    assert rules.resolve_sku("Abc", [lower, upper]) == "Ambiguous"


def test_moved_values_ignores_not_provided_and_equal() -> None:
    product = StoredProduct("1", "S", Decimal("10.00"), 0)
    assert rules.moved_values(product, SkuChange("1", Decimal("10"), 0)) == (None, None)
    assert rules.moved_values(product, SkuChange("1", None, None)) == (None, None)
    assert rules.moved_values(product, SkuChange("1", Decimal("10.01"), None)) == (Decimal("10.01"), None)
    assert rules.moved_values(StoredProduct("1", "S", None, 5), SkuChange("1", Decimal(0), 0)) == (Decimal(0), 0)


def test_price_quantity_and_sku_rules() -> None:
    assert rules.price_problem(Decimal("0")) is None
    assert rules.price_problem(Decimal("1.50000")) is None
    assert rules.price_problem(Decimal("99999999999.9999")) is None
    assert rules.price_problem(Decimal("1.00001")) == "At most 4 decimal places."
    assert rules.price_problem(Decimal("-0.01")) == "Must not be negative."
    assert rules.price_problem(Decimal("1e20")) is not None
    assert rules.price_problem(Decimal("NaN")) is not None
    assert rules.quantity_problem(0) is None and rules.quantity_problem(-1) is not None
    assert rules.quantity_problem(2**31) is not None
    assert rules.sku_problem(" ") is not None and rules.sku_problem("x" * 201) is not None


def test_modification_times_are_distinct_and_ordered() -> None:
    times = rules.modification_times(NOW, 500)
    assert times[0] == NOW and len(set(times)) == 500 and times == sorted(times)
    assert rules.wire_timestamp(times[1]) == "2026-05-04T03:02:01.987655Z"


def test_event_payload_matches_spec_section_6() -> None:
    source = ChangeSource("MerchantPush", "Api")
    changes = [AppliedChange("2", "b", None, 0), AppliedChange("1", "A", Decimal("12.50"), None)]
    payload = rules.inventory_changed_payload(NOW, source, changes)
    assert jsonio.dumps(payload) == (
        b'{"occurredAt":"2026-05-04T03:02:01.987Z","source":{"writer":"MerchantPush","channel":"Api",'
        b'"userPlatformId":null},"changed":[{"sku":"A","price":12.5,"quantity":null},'
        b'{"sku":"b","price":null,"quantity":0}],"truncated":false,"totalChanged":2}'
    )


def test_event_payload_caps_the_list_at_500() -> None:
    changes = [AppliedChange(str(i), f"S{i:04d}", None, i) for i in range(501, 0, -1)]
    payload = rules.inventory_changed_payload(NOW, ChangeSource("MasterMirror", "Marketplace", "MP"), changes)
    assert payload["truncated"] is True and payload["totalChanged"] == 501
    assert len(payload["changed"]) == 500 and payload["changed"][0]["sku"] == "S0001"
    assert payload["source"]["userPlatformId"] == "MP"
    exact = rules.inventory_changed_payload(NOW, ChangeSource("MerchantPush", "Api"), changes[:500])
    assert exact["truncated"] is False and exact["totalChanged"] == 500


def test_drift_warnings() -> None:
    assert len(rules.drift_warnings({}, sends_price=True, sends_quantity=True)) == 2
    assert rules.drift_warnings({"Price": "Merchant", "Stock": "Merchant"}, sends_price=True, sends_quantity=True) == []
    only_stock = rules.drift_warnings({"Price": "Merchant"}, sends_price=True, sends_quantity=True)
    assert only_stock == [rules.drift_message("Stock")]
    assert rules.drift_warnings({}, sends_price=False, sends_quantity=False) == []


def test_import_rows() -> None:
    assert rules.parse_import_row(2, {"Sku": "A", "Price": "1.25", "Quantity": ""}) == PushItem("A", Decimal("1.25"))
    assert rules.parse_import_row(3, {" sku ": " B ", "quantity": "0"}) == PushItem("B", None, 0)
    bad = rules.parse_import_row(4, {"Sku": "C", "Price": "1,5", "Quantity": "2.5"})
    assert isinstance(bad, ImportRowError) and bad.line == 4 and "Price" in bad.message and "Quantity" in bad.message
    assert rules.import_header_problem(["Sku", "Price", "Quantity"]) is None
    assert rules.import_header_problem(["Sku"]) is not None
    assert rules.import_header_problem(None) is not None
    assert rules.normalise_choice(" stock ", rules.DATA_KINDS) == "Stock"
    assert rules.normalise_choice("colour", rules.DATA_KINDS) is None
