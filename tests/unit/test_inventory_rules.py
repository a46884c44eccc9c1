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


def _by_key(*products: StoredProduct) -> dict[str, list[StoredProduct]]:
    candidates: dict[str, list[StoredProduct]] = {}
    for product in products:
        candidates.setdefault(rules.sku_key(product.sku), []).append(product)
    return candidates


def _summary(resolved: list[rules.ResolvedItem]) -> list[tuple[int, str, object]]:
    return [
        (entry.position, entry.item.sku, entry.match.id if isinstance(entry.match, StoredProduct) else entry.match)
        for entry in resolved
    ]


def test_push_collapses_exact_repeats_to_the_last_occurrence_in_first_appearance_order() -> None:
    a, b = StoredProduct("1", "A", None, 0), StoredProduct("2", "B", None, 0)
    items = [PushItem("A", Decimal(1)), PushItem("B", quantity=2), PushItem("A", quantity=3), PushItem("Z", quantity=4)]
    resolved = rules.resolve_push(items, _by_key(a, b))
    assert _summary(resolved) == [(2, "A", "1"), (1, "B", "2"), (3, "Z", "NotFound")]
    assert resolved[0].item == PushItem("A", quantity=3), "the earlier occurrence is dropped whole"


def test_push_case_variants_naming_one_product_are_repeats_of_one_sku() -> None:
    product = StoredProduct("1", "PLN-OLI-00018", None, 67)
    items = [PushItem("PLN-OLI-00018", price=Decimal(77)), PushItem("pln-oli-00018", quantity=67)]
    assert _summary(rules.resolve_push(items, _by_key(product))) == [(1, "pln-oli-00018", "1")]
    items = [
        PushItem("PLN-OLI-00018", quantity=5),
        PushItem("PLN-OLI-00018", quantity=6),
        PushItem("pln-oli-00018", quantity=7),
    ]
    [entry] = rules.resolve_push(items, _by_key(product))
    assert (entry.position, entry.item) == (2, PushItem("pln-oli-00018", quantity=7))


def test_push_case_variants_with_several_products() -> None:
    lower, upper = StoredProduct("1", "abc", None, 0), StoredProduct("2", "ABC", None, 0)
    items = [
        PushItem("Abc", quantity=1),
        PushItem("ABC", quantity=2),
        PushItem("aBC", quantity=3),
        PushItem("abc", quantity=4),
        PushItem("Abc", quantity=5),
    ]
    # Exact spellings name their own product; other spellings are Ambiguous, one entry per spelling.
    assert _summary(rules.resolve_push(items, _by_key(lower, upper))) == [
        (4, "Abc", "Ambiguous"),
        (1, "ABC", "2"),
        (2, "aBC", "Ambiguous"),
        (3, "abc", "1"),
    ]


def test_push_case_variants_of_a_missing_sku_are_one_sku() -> None:
    items = [PushItem("nope", quantity=1), PushItem("NOPE", quantity=2)]
    assert _summary(rules.resolve_push(items, {})) == [(1, "NOPE", "NotFound")]


@given(st.lists(st.sampled_from(["A", "a", "B", "b", "C", "c", "D"]), min_size=1, max_size=40))
def test_push_yields_one_entry_per_distinct_sku_and_the_last_occurrence_wins(skus: list[str]) -> None:
    # Stored: A (one product), b and B (case variants), nothing for C or D.
    stored = _by_key(
        StoredProduct("1", "A", None, 0), StoredProduct("2", "b", None, 0), StoredProduct("3", "B", None, 0)
    )
    items = [PushItem(sku, quantity=index) for index, sku in enumerate(skus)]
    resolved = rules.resolve_push(items, stored)
    groups = [sku.lower() if sku.lower() != "b" else sku for sku in skus]
    assert len(resolved) == len(set(groups))
    for entry in resolved:
        group = entry.item.sku.lower() if entry.item.sku.lower() != "b" else entry.item.sku
        assert entry.position == max(i for i, g in enumerate(groups) if g == group)
        assert entry.item.quantity == entry.position


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


def test_typed_numbers_are_plain_ascii_decimals() -> None:
    """A person's or a spreadsheet's numbers: Python's own spellings are refused, never crash the parse."""
    for typed, price in (("12.50", "12.50"), ("12", "12"), ("12.", "12"), (".5", "0.5"), ("+3.10", "3.10")):
        assert rules.parse_values(typed, "") == (Decimal(price), None, {}), typed
    for typed in ("1e3", "1_000", "NaN", "Infinity", "1,5", "²", "١٢", " 12", "0x10", "."):
        assert set(rules.parse_values(typed, "")[2]) == {"Price"}, typed
    assert rules.parse_values("", "+7")[1] == 7
    for typed in ("²", "+-5", "--5", "1_000", "1e3", "7.0", "٧"):
        assert rules.parse_values("", typed)[2] == {"Quantity": "Not a whole number."}, typed
    for huge in ("9" * 5000, "9" * 2_000_000, "0" * 5000 + "7"):  # by their digits, never converted whole
        expected = {} if huge.endswith("7") else {"Quantity": f"Must not exceed {rules.MAX_QUANTITY}."}
        assert rules.parse_values("", huge)[2] == expected
    assert rules.parse_values("", "-" + "0" * 5000 + "1")[2] == {"Quantity": "Must not be negative."}


def test_zero_price_and_reauthorisation_warnings_name_the_marketplace() -> None:
    listings = [("P1", "UK", "p-1"), ("P1", "UK", "p-2"), ("P2", "DE", "p-1"), ("P1", "UK", "p-3")]
    warnings = rules.zero_price_warnings(listings, {"p-1": "SKU-1", "p-3": "SKU-3"})
    assert len(warnings) == 2
    assert warnings[0].startswith("Price 0 is saved for SKU-1, SKU-3, but P1 UK refuses")
    assert "P2 DE" in warnings[1] and "SKU-1" in warnings[1]
    assert rules.zero_price_warnings(listings, {}) == []
    warning = rules.reauthorization_warning(("P1", "UK"))
    assert warning.startswith("P1 UK needs to be reconnected in the app") and "sent automatically" in warning


def test_unsigned_zero_drops_the_sign_of_zero_only() -> None:
    for spelling in ("-0", "-0.00", "0.00", "-0E+3"):
        zero = rules.unsigned_zero(Decimal(spelling))
        assert zero == 0 and not zero.is_signed() and jsonio.dumps(zero) == b"0.0"
    assert rules.unsigned_zero(Decimal("12.50")) == Decimal("12.50")
    assert rules.parse_values("-0.00", "")[0] == Decimal(0) and not rules.parse_values("-0", "")[0].is_signed()  # type: ignore[union-attr]
