"""The one body reader (marketsync.http.bodies) without HTTP: what it gives a good body and how it names a bad one.
Every route's answers over HTTP: tests/http/test_request_bodies.py."""

from __future__ import annotations

from decimal import Decimal

import pytest

from marketsync.http import bodies
from marketsync.http.errors import ValidationFailed


def _errors(raw: bytes, **options: bool) -> dict[str, list[str]] | None:
    with pytest.raises(ValidationFailed) as caught:
        bodies.read_body(raw, **options)
    return caught.value.errors


def test_numbers_are_exact_decimals_when_asked() -> None:
    assert bodies.read_body(b'{"Price": 19.99, "Quantity": 3}', exact_decimals=True) == {
        "Price": Decimal("19.99"),
        "Quantity": 3,
    }
    assert bodies.read_body(b'{"Price": 19.99}') == {"Price": 19.99}
    assert bodies.read_body(b"  ", optional=True) == {}


def test_every_key_given_twice_is_named_by_its_path() -> None:
    raw = b'{"Items": [{"Sku": "a"}, {"Sku": "a", "Price": 1, "Sku": "b", "Price": 2, "Sku": "c"}], "Items": []}'
    assert _errors(raw) == {
        "Items": [bodies.DUPLICATE_KEY],
        "Items[1].Sku": [bodies.DUPLICATE_KEY],
        "Items[1].Price": [bodies.DUPLICATE_KEY],
    }


def test_a_strict_request_refuses_coercion_and_unknown_fields_in_one_400() -> None:
    class Page(bodies.StrictRequest):
        Limit: int | None = None

    assert Page.read(b"", optional=True) == Page()
    with pytest.raises(ValidationFailed) as caught:
        Page.read(b'{"Limit": "5", "limit": 5}')
    assert caught.value.errors is not None and set(caught.value.errors) == {"Limit", "limit"}
