"""Pure webhook rules: signature scheme, verify(), backoff, retry classification, URL and address policy."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marketsync.webhooks import rules, verify

SECRET = "s3cret-signing-value"
BODY = b'{"occurredAt":"2026-01-01T00:00:00.000Z","changed":[]}'
NOW = 1_767_225_600


def signed_headers(secret: str = SECRET, ts: int = NOW, body: bytes = BODY) -> dict[str, str]:
    return rules.delivery_headers(rules.derive_key(secret), ts, body, "InventoryChanged", "D1", 1)


def test_signature_matches_the_spec_recipe_independently_computed() -> None:
    key = hmac.new(SECRET.encode(), b"service.webhook.v1", hashlib.sha256).digest()
    expected = "v1=" + hmac.new(key, f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    headers = signed_headers()
    assert headers["X-SVC-Signature"] == expected
    assert headers["X-SVC-Timestamp"] == str(NOW)
    assert headers["X-SVC-Event"] == "InventoryChanged"
    assert headers["X-SVC-Delivery-Id"] == "D1" and headers["X-SVC-Attempt"] == "1"
    assert rules.derive_key(SECRET) != SECRET.encode()


def test_verify_steps() -> None:
    headers = signed_headers()
    assert verify(SECRET, headers, BODY, now=NOW)
    assert verify(SECRET, {k.lower(): v for k, v in headers.items()}, BODY, now=NOW)  # any header case
    assert verify(SECRET, headers, BODY, now=datetime.fromtimestamp(NOW + 300, UTC))
    assert not verify(SECRET, headers, BODY, now=NOW + 301)
    assert not verify(SECRET, headers, BODY, now=NOW - 301)
    assert not verify(SECRET, headers, BODY + b"\n", now=NOW)
    assert not verify("other", headers, BODY, now=NOW)
    raw = "v1=" + hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert not verify(SECRET, {**headers, "X-SVC-Signature": raw}, BODY, now=NOW)
    assert not verify(SECRET, {**headers, "X-SVC-Signature": headers["X-SVC-Signature"].upper()}, BODY, now=NOW)
    assert not verify(SECRET, {**headers, "X-SVC-Timestamp": "not-a-number"}, BODY, now=NOW)
    assert not verify(SECRET, {"X-SVC-Timestamp": str(NOW)}, BODY, now=NOW)
    # A second scheme alongside v1 (a future rotation) still verifies on the v1 entry.
    both = {**headers, "X-SVC-Signature": "v2=abc," + headers["X-SVC-Signature"]}
    assert verify(SECRET, both, BODY, now=NOW)


@given(body=st.binary(max_size=256), secret=st.text(min_size=1, max_size=40), skew=st.integers(-300, 300))
def test_verify_accepts_what_the_service_signs(body: bytes, secret: str, skew: int) -> None:
    assert verify(secret, signed_headers(secret, NOW, body), body, now=NOW + skew)


def test_backoff_schedule_and_scale() -> None:
    assert rules.MAX_ATTEMPTS == 7
    assert [rules.retry_delay(n, 1.0) for n in range(1, 8)] == [
        timedelta(minutes=1),
        timedelta(minutes=5),
        timedelta(minutes=15),
        timedelta(hours=1),
        timedelta(hours=3),
        timedelta(hours=6),
        None,
    ]
    assert rules.retry_delay(1, 0.001) == timedelta(seconds=0.06)


@pytest.mark.parametrize(
    ("status", "verdict"),
    [
        (200, rules.Verdict.SUCCEEDED),
        (204, rules.Verdict.SUCCEEDED),
        (299, rules.Verdict.SUCCEEDED),
        (301, rules.Verdict.RETRY),
        (400, rules.Verdict.GIVE_UP),
        (401, rules.Verdict.GIVE_UP),
        (404, rules.Verdict.GIVE_UP),
        (408, rules.Verdict.RETRY),
        (410, rules.Verdict.GIVE_UP),
        (429, rules.Verdict.RETRY),
        (500, rules.Verdict.RETRY),
        (503, rules.Verdict.RETRY),
        (None, rules.Verdict.RETRY),
    ],
)
def test_classification(status: int | None, verdict: rules.Verdict) -> None:
    assert rules.classify_status(status) is verdict


def test_decisions_define_a_failed_delivery() -> None:
    assert rules.decide(200, 7, 1.0) == rules.AttemptDecision("Succeeded", None, False)
    assert rules.decide(500, 1, 1.0) == rules.AttemptDecision("Retrying", timedelta(minutes=1), False)
    assert rules.decide(None, 6, 1.0) == rules.AttemptDecision("Retrying", timedelta(hours=6), False)
    assert rules.decide(500, 7, 1.0) == rules.AttemptDecision("Failed", None, True)  # exhausted
    assert rules.decide(400, 1, 1.0) == rules.AttemptDecision("Failed", None, True)  # not retryable
    assert not rules.should_disable(5) and rules.should_disable(6)


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://hooks.example.com/x?y=1", True),
        ("HTTPS://hooks.example.com:8443/", True),
        ("https://93.184.215.14/hook", True),
        ("http://hooks.example.com/", False),
        ("/relative", False),
        ("hooks.example.com/x", False),
        ("https:///nohost", False),
        ("https://u:p@hooks.example.com/", False),
        ("https://hooks.example.com:99999/", False),
        ("https://hooks.example.com/ spaced", False),
        ("https://" + "a" * 2100 + ".com/", False),
    ],
)
def test_url_shape(url: str, ok: bool) -> None:
    assert (rules.url_problems(url) == []) is ok


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://127.0.0.1:8765/hook", True),
        ("http://127.9.9.9/hook", True),
        ("http://[::1]:8765/", True),
        ("http://localhost:8765/", True),
        ("http://LOCALHOST./", True),
        ("https://127.0.0.1/hook", True),  # shape only: the address is checked after
        ("http://hooks.example.com/", False),
        ("http://localhost.example.com/", False),
        ("http://10.0.0.1/", False),
        ("http://[::ffff:127.0.0.1]/", False),
        ("http://0x7f000001/", True),  # inet_aton's spelling of 127.0.0.1: loopback all the same
        ("http://u:p@127.0.0.1/", False),
        ("ftp://127.0.0.1/", False),
    ],
)
def test_dev_mode_lets_plain_http_reach_loopback_only(url: str, ok: bool) -> None:
    """docs/decisions/0420: plain http to a loopback host in dev mode; outside it, every http URL is refused."""
    assert (rules.url_problems(url, dev_mode=True) == []) is ok
    if url.startswith("http:"):
        assert rules.url_problems(url) == ["Must be an absolute https URL (scheme https)."]


def test_test_events_are_marked_in_each_payloads_own_naming() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for event in rules.EVENT_TYPES:
        sample = rules.sample_payload(event, now)
        marked = rules.payload_of_test_event(event, now)
        field = rules.marker_field(event)
        assert field not in sample and marked == {**sample, field: True}
    assert rules.marker_field("InventoryChanged") == "isTest" and rules.marker_field("FeedOutcome") == "IsTest"
    key = rules.derive_key(SECRET)
    assert rules.delivery_headers(key, NOW, BODY, "FeedOutcome", "D1", 1, is_test=True)["X-SVC-Test"] == "true"
    assert "X-SVC-Test" not in rules.delivery_headers(key, NOW, BODY, "FeedOutcome", "D1", 1)


def test_event_type_problems() -> None:
    assert rules.event_type_problems([]) == {"EventTypes": ["At least one event type is required."]}
    assert rules.event_type_problems(["InventoryChanged", "FeedOutcome"]) == {}
    problems = rules.event_type_problems(["InventoryChanged", "Bogus", "InventoryChanged"])
    assert set(problems) == {"EventTypes[1]", "EventTypes[2]"}


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.0.1", "private"),
        ("100.64.1.1", "CGNAT"),
        ("169.254.169.254", "link-local"),
        ("224.0.0.251", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("0.0.0.0", "unspecified"),
        ("192.0.2.10", "documentation"),
        ("198.51.100.7", "documentation"),
        ("203.0.113.9", "documentation"),
        ("198.18.0.1", "reserved"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),
        ("::ffff:0:8.8.8.8", "IPv4-translated"),
        ("64:ff9b::808:808", "IPv4-translated"),
        ("2002:808:808::1", "IPv4-translated"),
        ("2001:0:4136:e378::1", "IPv4-translated"),
        ("fd12:3456::1", "ULA"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("8.8.8.8", None),
        ("93.184.215.14", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_policy(address: str, reason: str | None) -> None:
    assert rules.address_refusal(ipaddress.ip_address(address)) == reason


def test_allowed_networks_override_only_what_they_contain() -> None:
    allowed = [ipaddress.ip_network("127.0.0.0/8")]
    assert rules.address_refusal(ipaddress.ip_address("127.0.0.1"), allowed) is None
    assert rules.address_refusal(ipaddress.ip_address("10.0.0.1"), allowed) == "private"
    assert rules.address_refusal(ipaddress.ip_address("::ffff:127.0.0.1"), allowed) == "IPv4-mapped"
