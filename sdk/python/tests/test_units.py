"""The SDK's pure parts: exact JSON, Retry-After, which failures are retried, the ModifiedSince cursor, the
mirror's ordering and de-duplication rules, and the package surface."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from email.utils import format_datetime

import httpx
import marketsync_client
import pytest
from marketsync_client import InventoryMirror, MarketsyncError, RetryPolicy, webhooks
from marketsync_client import models as m
from marketsync_client._core import (
    Call,
    encode_json,
    retry_delay_after_error,
    retry_delay_after_response,
)
from marketsync_client.client import USER_AGENT
from marketsync_client.errors import retry_after_seconds
from marketsync_client.paging import ModifiedSinceCursor
from marketsync_client.reconcile import Difference
from pydantic import BaseModel, TypeAdapter, ValidationError

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
POLICY = RetryPolicy(max_attempts=3, backoff_s=1.0, max_backoff_s=4.0, max_retry_after_s=30)
READ = Call("GET", "/api/jobs/x", lambda body: body, safe=True)
WRITE = Call("POST", "/api/inventory/price-quantity", lambda body: body)
KEYED = Call("POST", "/api/orders/Refund", lambda body: body, idempotency_key="k")
REQUEST = httpx.Request("GET", "http://127.0.0.1/")


def test_json_carries_exact_numbers_and_real_nulls() -> None:
    body = m.PushRequest(
        Items=[m.PushItem(Sku="A", Price=Decimal("19.99")), m.PushItem(Sku="B", Price=Decimal("0.1000"), Quantity=0)]
    ).model_dump(mode="python", exclude_unset=True)
    encoded = encode_json(body)
    assert encoded == b'{"Items":[{"Sku":"A","Price":19.99},{"Sku":"B","Price":0.1000,"Quantity":0}]}'
    assert json.loads(encoded, parse_float=Decimal)["Items"][1]["Price"] == Decimal("0.1")
    assert encode_json({"At": T0, "Ref": None, "Big": Decimal("1E+3"), "Text": 'é"'}) == (
        '{"At":"2026-03-01T12:00:00+00:00","Ref":null,"Big":1000,"Text":"é\\""}'.encode()
    )
    with pytest.raises(ValueError, match="not a JSON number"):
        encode_json({"Price": Decimal("NaN")})


def test_retry_after_is_seconds_or_a_date() -> None:
    assert retry_after_seconds("7") == 7.0
    in_a_minute = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 55 <= (retry_after_seconds(in_a_minute) or 0) <= 60
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def response(status: int, headers: dict[str, str] | None = None, json_body: object = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, json=json_body, request=REQUEST)


@pytest.mark.parametrize(
    ("call", "status", "headers", "body", "retried"),
    [
        (READ, 429, {"Retry-After": "3"}, None, 3.0),
        (WRITE, 429, {"Retry-After": "3"}, None, 3.0),  # refused before anything was done: safe for any call
        (READ, 429, {"Retry-After": "600"}, None, None),  # longer than we are willing to wait: raised
        (READ, 503, {}, None, "backoff"),
        (KEYED, 503, {"Retry-After": "2"}, None, 2.0),
        (WRITE, 503, {}, None, None),  # it may have been applied: not repeated without a key
        (KEYED, 409, {}, {"code": "idempotency-in-flight"}, "backoff"),
        (KEYED, 409, {}, {"code": "conflict"}, None),
        (READ, 500, {}, None, "backoff"),  # the service failed, or a proxy in front: safe to repeat
        (READ, 502, {}, None, "backoff"),
        (READ, 504, {"Retry-After": "2"}, None, 2.0),
        (KEYED, 500, {}, None, "backoff"),
        (KEYED, 502, {}, None, "backoff"),
        (KEYED, 504, {}, None, "backoff"),
        (WRITE, 500, {}, None, None),
        (WRITE, 502, {}, None, None),
        (WRITE, 504, {}, None, None),
        (READ, 501, {}, None, None),  # not a passing failure
        (READ, 400, {}, None, None),
    ],
)
def test_which_answers_are_retried(
    call: Call[object], status: int, headers: dict[str, str], body: object, retried: object
) -> None:
    delay = retry_delay_after_response(POLICY, call, 1, response(status, headers, body))
    if retried == "backoff":
        assert delay is not None and 0.5 <= delay <= 1.0
    else:
        assert delay == retried
    assert retry_delay_after_response(POLICY, call, 3, response(status, headers, body)) is None  # attempts spent


def test_which_transport_failures_are_retried() -> None:
    not_sent = httpx.ConnectError("refused", request=REQUEST)
    lost = httpx.ReadTimeout("no answer", request=REQUEST)
    assert retry_delay_after_error(POLICY, WRITE, 1, not_sent) is not None
    assert retry_delay_after_error(POLICY, WRITE, 1, lost) is None
    assert retry_delay_after_error(POLICY, KEYED, 1, lost) is not None
    assert retry_delay_after_error(POLICY, READ, 2, lost) is not None
    assert retry_delay_after_error(POLICY, READ, 3, lost) is None
    # Exponential with jitter in its upper half, capped.
    assert 0.5 <= POLICY.backoff(1) <= 1.0 and 1.0 <= POLICY.backoff(2) <= 2.0
    assert 2.0 <= POLICY.backoff(10) <= POLICY.max_backoff_s


def summary(sku: str, at: datetime, quantity: int = 1) -> m.ProductSummary:
    return m.ProductSummary(Sku=sku, Quantity=quantity, LastModifiedDate=at, Listings=[])


def test_the_modified_since_cursor_skips_its_boundary_and_refuses_to_stall() -> None:
    cursor = ModifiedSinceCursor(T0, limit=3)
    t1, t2 = T0 + timedelta(microseconds=1), T0 + timedelta(microseconds=2)
    fresh, done = cursor.take([summary("A", T0), summary("B", t1), summary("C", t1)])
    assert [p.Sku for p in fresh] == ["A", "B", "C"] and not done and cursor.since == t1
    fresh, done = cursor.take([summary("B", t1), summary("C", t1), summary("D", t2)])
    assert [p.Sku for p in fresh] == ["D"] and not done
    fresh, done = cursor.take([summary("D", t2)])
    assert fresh == [] and done
    stuck = ModifiedSinceCursor(T0, limit=2)
    stuck.take([summary("A", T0), summary("B", T0)])
    with pytest.raises(MarketsyncError, match="cannot move forward"):
        stuck.take([summary("A", T0), summary("B", T0)])


def event(at: datetime, *changes: webhooks.SkuChange, truncated: bool = False) -> webhooks.InventoryChanged:
    source = webhooks.InventorySource("MerchantPush", "Api", None)
    return webhooks.InventoryChanged(at, source, changes, truncated, len(changes))


def delivery(delivery_id: str, payload: webhooks.InventoryChanged) -> webhooks.Delivery:
    return webhooks.Delivery(delivery_id, "InventoryChanged", 1, 0, payload)


def test_the_mirror_applies_differences_once_and_never_goes_back_in_time() -> None:
    applied: list[Difference] = []
    mirror = InventoryMirror(on_difference=applied.append)
    older = delivery("d1", event(T0, webhooks.SkuChange("A", Decimal("5"), 5)))
    newer = delivery("d2", event(T0 + timedelta(seconds=1), webhooks.SkuChange("A", None, 3)))
    # Delivered out of order, each twice.
    assert [d.quantity for d in mirror.apply_delivery(newer)] == [3]
    assert mirror.apply_delivery(newer) == [] and mirror.duplicates == 1
    assert [(d.price, d.quantity) for d in mirror.apply_delivery(older)] == [(Decimal("5"), None)]  # price only
    assert mirror.apply_delivery(older) == []
    held = mirror.items["A"]
    assert (held.price, held.quantity) == (Decimal("5"), 3)
    # The same values again (a new delivery): no difference, nothing reported.
    assert (
        mirror.apply_delivery(delivery("d3", event(T0 + timedelta(seconds=2), webhooks.SkuChange("A", None, 3)))) == []
    )
    assert len(applied) == 2
    # A catalogue page read before the newest change does not undo it; a later one applies.
    assert mirror.apply_product(summary("A", T0 + timedelta(milliseconds=500), quantity=9)) is None
    difference = mirror.apply_product(summary("A", T0 + timedelta(seconds=3), quantity=9))
    assert difference is not None and (difference.quantity, difference.source) == (9, "walk")


def test_the_mirror_marks_same_millisecond_disagreements_and_widens_the_walk_for_truncated_events() -> None:
    mirror = InventoryMirror(cursor=T0 + timedelta(hours=1), overlap=timedelta(minutes=5))
    mirror.apply_product(summary("A", T0 + timedelta(microseconds=400), quantity=1))
    mirror.apply_event(event(T0, webhooks.SkuChange("A", None, 2)))  # same millisecond, other value
    assert mirror.uncertain == {"A"}
    current = mirror.apply_current(m.Product(Sku="A", Quantity=1, Listings=[]))
    assert current is not None and current.quantity == 1 and mirror.uncertain == set()
    mirror.apply_event(event(T0, webhooks.SkuChange("B", Decimal("1"), None), truncated=True))
    assert mirror.cursor == T0 - timedelta(minutes=5)
    # A caller that is the only API writer may skip its own writes.
    quiet = InventoryMirror(ignore_api_channel=True)
    assert quiet.apply_event(event(T0, webhooks.SkuChange("A", None, 2))) == [] and quiet.items == {}


def test_the_package_surface() -> None:
    for name in marketsync_client.__all__:
        assert getattr(marketsync_client, name) is not None, name
    with pytest.raises(AttributeError):
        marketsync_client.NoSuchThing  # noqa: B018
    assert marketsync_client.__version__ == "0.2.0"  # the API's 0.2 (test_package.py holds them together)
    assert f"marketsync-client/{marketsync_client.__version__}" == USER_AGENT


def test_every_timestamp_of_every_model_is_timezone_aware() -> None:
    """A timestamp without an offset is refused wherever it appears (responses included), never handed over naive:
    a naive `LastModifiedDate` would break every comparison with an aware `occurredAt` far from its cause."""
    timestamps = 0
    for model in vars(m).values():
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        for name, info in model.model_fields.items():
            check = TypeAdapter(info.annotation)
            schema = check.json_schema()
            if not any(branch.get("format") == "date-time" for branch in schema.get("anyOf", [schema])):
                continue
            timestamps += 1
            assert check.validate_python("2026-03-01T12:00:00Z") == T0, f"{model.__name__}.{name}"
            with pytest.raises(ValidationError):
                check.validate_python("2026-03-01T12:00:00")
    assert timestamps >= 15


def test_the_client_secret_is_never_shown() -> None:
    """Not in the client's repr, nor in any exception a token request can end in (refused, throttled, broken,
    unreachable), although the secret travels in the form the service reads."""
    secret = "s3cr3t-never-shown-Zq9"
    answers = iter(
        [
            httpx.Response(401, json={"error": "invalid_client", "error_description": "Client authentication failed."}),
            httpx.Response(429, headers={"Retry-After": "7"}, json={"error": "temporarily_unavailable"}),
            httpx.Response(500, text="<html>proxy</html>"),
        ]
    )
    forms: list[bytes] = []

    def token_endpoint(request: httpx.Request) -> httpx.Response:
        forms.append(request.content)
        try:
            return next(answers)
        except StopIteration:
            raise httpx.ConnectError("refused", request=request) from None

    client = marketsync_client.Client(
        "msc_id",
        secret,
        base_url="http://127.0.0.1:9",
        retry=RetryPolicy(max_attempts=2, backoff_s=0.001, max_backoff_s=0.001),
        http_client=httpx.Client(transport=httpx.MockTransport(token_endpoint)),
    )
    shown = [repr(client), str(client)]
    for _ in range(4):
        with pytest.raises(MarketsyncError) as failed:
            client.list_marketplaces()
        shown += [str(failed.value), repr(failed.value), repr(vars(failed.value))]
    assert all(secret.encode() in form for form in forms)  # it was sent...
    assert not [text for text in shown if secret in text]  # ...and never shown
