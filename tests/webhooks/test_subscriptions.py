"""POST /api/webhooks/Create, List, Delete: validation, SSRF refusal at registration, one-time secret."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import httpx
import pytest
from cryptography.exceptions import InvalidTag
from sqlalchemy import func, select, text

from marketsync.kit import crypto
from marketsync.models import Base, IdempotencyRecord
from marketsync.runtime import Runtime
from marketsync.webhooks import service
from marketsync.webhooks.ssrf import StaticResolver
from tests.support.factories import make_tenant, problem
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import subscribe, subscription_row

SUBSCRIPTION_FIELDS = {
    "SubscriptionId",
    "Url",
    "EventTypes",
    "IsActive",
    "ConsecutiveFailures",
    "DisabledDate",
    "DisabledReason",
    "LastSuccessDate",
    "CreatedDate",
}


async def test_create_returns_the_secret_once_and_list_never_shows_it(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    response = await api.post(
        "/api/webhooks/Create",
        json={"Url": receiver.url(), "EventTypes": ["OrdersDownloaded", "InventoryChanged"]},
        headers=tenant.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"Subscription", "RequestId", "Warnings"}
    assert body["Warnings"] == [] and body["RequestId"] == response.headers["x-request-id"]
    created = body["Subscription"]
    assert set(created) == SUBSCRIPTION_FIELDS | {"Secret"}
    assert len(created["Secret"]) >= 43  # 256 bits, URL-safe base64
    assert created["IsActive"] is True and created["ConsecutiveFailures"] == 0
    assert created["DisabledDate"] is None and created["DisabledReason"] is None and created["LastSuccessDate"] is None
    assert created["EventTypes"] == ["OrdersDownloaded", "InventoryChanged"]
    assert created["CreatedDate"].endswith("Z")

    listed = await api.post("/api/webhooks/List", json={}, headers=tenant.headers)
    assert listed.status_code == 200, listed.text
    [entry] = listed.json()["Subscriptions"]
    assert set(entry) == SUBSCRIPTION_FIELDS
    assert entry == {k: v for k, v in created.items() if k != "Secret"}
    assert created["Secret"] not in listed.text


async def test_idempotent_replay_returns_the_subscription_without_secret_and_a_warning(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    headers = {**tenant.headers, "Idempotency-Key": "create-hook-1"}
    request = {"Url": receiver.url(), "EventTypes": ["InventoryChanged"]}
    first = await api.post("/api/webhooks/Create", json=request, headers=headers)
    replay = await api.post("/api/webhooks/Create", json=request, headers=headers)
    assert first.status_code == replay.status_code == 200
    original, replayed = first.json(), replay.json()
    assert "Secret" in original["Subscription"]
    assert "Secret" not in replayed["Subscription"]
    assert replayed["Subscription"]["SubscriptionId"] == original["Subscription"]["SubscriptionId"]
    assert replay.headers["idempotent-replayed"] == "true"
    assert any("Secret" in w and "shown only" in w for w in replayed["Warnings"])
    assert original["Subscription"]["Secret"] not in replay.text
    listed = (await api.post("/api/webhooks/List", json={}, headers=tenant.headers)).json()
    assert len(listed["Subscriptions"]) == 1


async def test_a_replay_after_the_subscription_was_deleted_returns_the_original_response_without_claiming_it_exists(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    headers = {**tenant.headers, "Idempotency-Key": "create-then-delete"}
    request = {"Url": receiver.url(), "EventTypes": ["InventoryChanged"]}
    first = (await api.post("/api/webhooks/Create", json=request, headers=headers)).json()
    subscription_id = first["Subscription"]["SubscriptionId"]
    deleted = await api.post("/api/webhooks/Delete", json={"SubscriptionId": subscription_id}, headers=tenant.headers)
    assert deleted.status_code == 200, deleted.text

    replay = await api.post("/api/webhooks/Create", json=request, headers=headers)
    assert replay.status_code == 200, replay.text
    assert replay.headers["idempotent-replayed"] == "true"
    replayed = replay.json()
    assert replayed["Subscription"] == {k: v for k, v in first["Subscription"].items() if k != "Secret"}
    [warning] = replayed["Warnings"]
    assert "exists" not in warning
    assert "may have been deleted" in warning and "/api/webhooks/List" in warning
    listed = (await api.post("/api/webhooks/List", json={}, headers=tenant.headers)).json()
    assert listed["Subscriptions"] == []
    assert await subscription_row(rt, subscription_id) is None


async def test_a_replay_after_a_dns_change_returns_the_stored_response(
    rt: Runtime, api: httpx.AsyncClient, fake_dns: StaticResolver
) -> None:
    """Spec section 4: a webhook create replayed with its Idempotency-Key returns the subscription (without the
    secret, with a warning). The key is looked up before the URL is resolved again, so a host that has since
    moved to a private address does not turn the replay into a 400."""
    tenant = await make_tenant(rt, api)
    request = {"Url": "https://other.example.test/hook", "EventTypes": ["InventoryChanged"]}
    headers = {**tenant.headers, "Idempotency-Key": "dns-moves"}
    first = await api.post("/api/webhooks/Create", json=request, headers=headers)
    assert first.status_code == 200, first.text

    fake_dns.table["other.example.test"] = [ipaddress.ip_address("10.1.2.3")]
    replay = await api.post("/api/webhooks/Create", json=request, headers=headers)
    assert replay.status_code == 200, replay.text
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json()["Subscription"]["SubscriptionId"] == first.json()["Subscription"]["SubscriptionId"]
    assert "Secret" not in replay.json()["Subscription"]

    # A new create is still checked: refused, nothing written, and its key is free for a corrected retry.
    refused = await api.post("/api/webhooks/Create", json=request, headers={**headers, "Idempotency-Key": "k2"})
    assert refused.status_code == 400, refused.text
    assert set(problem(refused)["errors"]) == {"Url"}
    fake_dns.table["other.example.test"] = [ipaddress.ip_address("127.0.0.1")]
    retried = await api.post("/api/webhooks/Create", json=request, headers={**headers, "Idempotency-Key": "k2"})
    assert retried.status_code == 200, retried.text
    assert "Secret" in retried.json()["Subscription"] and "idempotent-replayed" not in retried.headers
    listed = (await api.post("/api/webhooks/List", json={}, headers=tenant.headers)).json()["Subscriptions"]
    assert len(listed) == 2


INVALID_REQUESTS: list[tuple[dict[str, object], str]] = [
    ({"Url": "http://hooks.example.test/hook", "EventTypes": ["InventoryChanged"]}, "Url"),
    ({"Url": "/hook", "EventTypes": ["InventoryChanged"]}, "Url"),
    ({"Url": "hooks.example.test/hook", "EventTypes": ["InventoryChanged"]}, "Url"),
    ({"Url": "https://user:pw@hooks.example.test/", "EventTypes": ["InventoryChanged"]}, "Url"),
    ({"EventTypes": ["InventoryChanged"]}, "Url"),
    ({"Url": "https://hooks.example.test/hook", "EventTypes": []}, "EventTypes"),
    ({"Url": "https://hooks.example.test/hook"}, "EventTypes"),
    ({"Url": "https://hooks.example.test/hook", "EventTypes": ["InventoryChanged", "Nope"]}, "EventTypes[1]"),
    ({"Url": "https://hooks.example.test/hook", "EventTypes": ["inventorychanged"]}, "EventTypes[0]"),
    ({"Url": "https://hooks.example.test/hook", "EventTypes": ["FeedOutcome", "FeedOutcome"]}, "EventTypes[1]"),
    ({"Url": "https://hooks.example.test/hook", "EventTypes": ["InventoryChanged"], "url": "x"}, "url"),
]


async def test_invalid_requests_are_400_naming_the_field(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    for request_body, field in INVALID_REQUESTS:
        response = await api.post("/api/webhooks/Create", json=request_body, headers=tenant.headers)
        assert response.status_code == 400, (request_body, response.text)
        body = problem(response)
        assert body["code"] == "validation-failed"
        assert field in body["errors"], (request_body, body)
    assert (await api.post("/api/webhooks/List", json={}, headers=tenant.headers)).json() == {"Subscriptions": []}


async def test_every_bad_field_is_named_in_one_response(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    response = await api.post(
        "/api/webhooks/Create", json={"Url": "ftp://x", "EventTypes": ["Nope"]}, headers=tenant.headers
    )
    assert set(problem(response)["errors"]) == {"Url", "EventTypes[0]"}


REFUSED_URLS = [
    "https://private.example.test/hook",
    "https://cgnat.example.test/hook",
    "https://linklocal.example.test/latest/meta-data",
    "https://mixed.example.test/hook",  # one private address among allowed ones is enough to refuse
    "https://ula.example.test/hook",
    "https://mapped.example.test/hook",  # ::ffff:127.0.0.1 is not inside the allowed 127.0.0.0/8
    "https://nat64.example.test/hook",
    "https://docs.example.test/hook",
    "https://multicast.example.test/hook",
    "https://10.0.0.1/hook",
    "https://[::1]/hook",
    "https://0.0.0.0/hook",
    "https://nowhere.example.test/hook",  # does not resolve
]


async def test_private_reserved_or_unresolvable_hosts_are_refused_at_registration(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    tenant = await make_tenant(rt, api)
    for url in REFUSED_URLS:
        response = await api.post(
            "/api/webhooks/Create", json={"Url": url, "EventTypes": ["FeedOutcome"]}, headers=tenant.headers
        )
        assert response.status_code == 400, (url, response.text)
        errors = problem(response)["errors"]
        assert list(errors) == ["Url"], url
        assert "publicly reachable" in errors["Url"][0]


async def test_a_public_address_is_accepted_without_any_connection(rt: Runtime, api: httpx.AsyncClient) -> None:
    # public.example.test maps to a global address in the fake resolver; registration never connects.
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, "https://public.example.test/hooks?x=1", ["MarketplaceUnhealthy"])
    assert created["Url"] == "https://public.example.test/hooks?x=1"


async def test_scope_and_account_isolation(rt: Runtime, api: httpx.AsyncClient, receiver: Receiver) -> None:
    owner = await make_tenant(rt, api)
    stranger = await make_tenant(rt, api)
    reader = await make_tenant(rt, api, scopes=("InventoryRead",))
    created = await subscribe(api, owner, receiver.url())

    forbidden = await api.post("/api/webhooks/List", json={}, headers=reader.headers)
    assert forbidden.status_code == 403 and problem(forbidden)["code"] == "insufficient-scope"
    assert (await api.post("/api/webhooks/List", json={}, headers=stranger.headers)).json() == {"Subscriptions": []}

    theirs = await api.post(
        "/api/webhooks/Delete", json={"SubscriptionId": created["SubscriptionId"]}, headers=stranger.headers
    )
    assert theirs.status_code == 404 and problem(theirs)["code"] == "not-found"
    unknown = await api.post("/api/webhooks/Delete", json={"SubscriptionId": "0" * 26}, headers=owner.headers)
    assert unknown.status_code == 404

    deleted = await api.post(
        "/api/webhooks/Delete", json={"SubscriptionId": created["SubscriptionId"]}, headers=owner.headers
    )
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["SubscriptionId"] == created["SubscriptionId"] and deleted.json()["Warnings"] == []
    assert (await api.post("/api/webhooks/List", json={}, headers=owner.headers)).json() == {"Subscriptions": []}
    again = await api.post(
        "/api/webhooks/Delete", json={"SubscriptionId": created["SubscriptionId"]}, headers=owner.headers
    )
    assert again.status_code == 404


async def test_secrets_are_absent_in_clear_from_the_database(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    tenant = await make_tenant(rt, api)
    secrets = [
        (await subscribe(api, tenant, receiver.url()))["Secret"],
        (
            await api.post(
                "/api/webhooks/Create",
                json={"Url": receiver.url(), "EventTypes": ["FeedOutcome"]},
                headers={**tenant.headers, "Idempotency-Key": "k1"},
            )
        ).json()["Subscription"]["Secret"],
    ]
    if rt.db.is_sqlite:
        database = Path(rt.db.engine.url.database or "")
        stored = b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*"))
    else:
        async with rt.db.read() as session:
            rows = []
            for table in Base.metadata.sorted_tables:
                result = await session.execute(text(f'SELECT t::text FROM "{table.name}" t'))
                rows.extend(r[0] for r in result.all())
        stored = "\n".join(rows).encode()
    assert b"webhook" in stored or b"hooks.example.test" in stored  # the scan does see the data
    for secret in secrets:
        assert secret.encode() not in stored


async def test_secret_is_bound_to_its_subscription_and_keys_rotate(
    rt: Runtime, api: httpx.AsyncClient, receiver: Receiver, make_runtime: object
) -> None:
    tenant = await make_tenant(rt, api)
    created = await subscribe(api, tenant, receiver.url())
    row = await subscription_row(rt, created["SubscriptionId"])
    assert row is not None and row.secret_encrypted.startswith("t1:")
    assert service.reveal_secret(rt, tenant.account_id, row.id, row.secret_encrypted) == created["Secret"]
    with pytest.raises(InvalidTag):  # associated data: the ciphertext does not decrypt for another row
        service.reveal_secret(rt, tenant.account_id, "0" * 26, row.secret_encrypted)

    new_key = "t2:" + "bmV3LWtleS1uZXcta2V5LW5ldy1rZXktbmV3LWtleSE="
    rotated_rt = make_runtime(encryption_keys=f"{new_key},{rt.settings.encryption_keys}")  # type: ignore[operator]
    try:
        assert await service.rotate_keys(rotated_rt) == {"Examined": 1, "Reencrypted": 1, "KeyId": "t2"}
        assert await service.rotate_keys(rotated_rt) == {"Examined": 1, "Reencrypted": 0, "KeyId": "t2"}
    finally:
        await rotated_rt.close()  # before the next runtime reads the same rows
    row = await subscription_row(rt, created["SubscriptionId"])
    assert row is not None and row.secret_encrypted.startswith("t2:")
    only_new = make_runtime(encryption_keys=new_key)  # type: ignore[operator]
    try:
        assert service.reveal_secret(only_new, tenant.account_id, row.id, row.secret_encrypted) == created["Secret"]
        assert crypto.needs_reencryption(only_new.settings.encryption_keyring, row.secret_encrypted) is False
    finally:
        await only_new.close()


async def _nothing_written(rt: Runtime, api: httpx.AsyncClient, headers: dict[str, str]) -> None:
    assert (await api.post("/api/webhooks/List", json={}, headers=headers)).json() == {"Subscriptions": []}
    async with rt.db.read() as session:
        assert (await session.execute(select(func.count()).select_from(IdempotencyRecord))).scalar_one() == 0


async def test_shape_errors_do_not_hide_the_url_and_event_type_checks(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Spec section 7: one 400 names every bad field. A field of the wrong type, or an unknown field, used to stop
    the request before the Url and EventTypes checks ran, so each class of error cost the caller a round trip."""
    tenant = await make_tenant(rt, api)
    cases: list[tuple[dict[str, object], set[str]]] = [
        ({"Url": 5, "EventTypes": []}, {"Url", "EventTypes"}),
        ({"Url": "http://x", "EventTypes": "InventoryChanged"}, {"Url", "EventTypes"}),
        ({"Url": "http://x", "EventTypes": ["Nope"], "Extra": 1}, {"Url", "EventTypes[0]", "Extra"}),
        # The address check (which resolves the host) still runs beside a shape error.
        ({"Url": "https://private.example.test/hook", "EventTypes": 7}, {"Url", "EventTypes"}),
        ({"Url": "https://public.example.test/hook", "EventTypes": ["Nope"], "Extra": 1}, {"EventTypes[0]", "Extra"}),
        ({"EventTypes": ["Nope", "FeedOutcome", "FeedOutcome"]}, {"Url", "EventTypes[0]", "EventTypes[2]"}),
    ]
    for body, keys in cases:
        response = await api.post("/api/webhooks/Create", json=body, headers=tenant.headers)
        assert response.status_code == 400, (body, response.text)
        errors = problem(response)["errors"]
        assert set(errors) == keys, (body, errors)
    refused = await api.post(
        "/api/webhooks/Create",
        json={"Url": "https://private.example.test/hook", "EventTypes": 7},
        headers=tenant.headers,
    )
    assert "publicly reachable" in problem(refused)["errors"]["Url"][0]
    await _nothing_written(rt, api, tenant.headers)


@pytest.mark.parametrize("key", ["", "k" * 256])
async def test_a_bad_idempotency_key_is_named_beside_every_bad_field(
    rt: Runtime, api: httpx.AsyncClient, key: str
) -> None:
    tenant = await make_tenant(rt, api)
    headers = {**tenant.headers, "Idempotency-Key": key}
    cases: list[tuple[dict[str, object], set[str]]] = [
        ({"Url": "http://x", "EventTypes": ["Nope"]}, {"Idempotency-Key", "Url", "EventTypes[0]"}),
        ({"Url": 5, "EventTypes": [], "Extra": 1}, {"Idempotency-Key", "Url", "EventTypes", "Extra"}),
        ({"Url": "https://private.example.test/hook", "EventTypes": ["FeedOutcome"]}, {"Idempotency-Key", "Url"}),
        # A body with nothing wrong: the key alone, and nothing created.
        ({"Url": "https://public.example.test/hook", "EventTypes": ["FeedOutcome"]}, {"Idempotency-Key"}),
    ]
    for body, keys in cases:
        response = await api.post("/api/webhooks/Create", json=body, headers=headers)
        assert response.status_code == 400, (body, response.text)
        errors = problem(response)["errors"]
        assert set(errors) == keys, (body, errors)
        assert errors["Idempotency-Key"] == ["Must be 1 to 255 printable characters."]
    await _nothing_written(rt, api, tenant.headers)


async def test_delete_names_an_unknown_subscription_beside_a_shape_error(rt: Runtime, api: httpx.AsyncClient) -> None:
    """An unknown SubscriptionId alone is a 404; beside another bad field it is named in the one 400
    (docs/decisions/0344), and nothing is deleted."""
    tenant = await make_tenant(rt, api)
    kept = await subscribe(api, tenant, "https://public.example.test/hook", ["FeedOutcome"])
    alone = await api.post("/api/webhooks/Delete", json={"SubscriptionId": "nope"}, headers=tenant.headers)
    assert alone.status_code == 404, alone.text
    both = await api.post("/api/webhooks/Delete", json={"SubscriptionId": "nope", "Extra": 1}, headers=tenant.headers)
    assert both.status_code == 400, both.text
    errors = problem(both)["errors"]
    assert set(errors) == {"SubscriptionId", "Extra"}
    assert errors["SubscriptionId"] == ["No such webhook subscription."]
    known = await api.post(
        "/api/webhooks/Delete", json={"SubscriptionId": kept["SubscriptionId"], "Extra": 1}, headers=tenant.headers
    )
    assert known.status_code == 400 and set(problem(known)["errors"]) == {"Extra"}
    listed = (await api.post("/api/webhooks/List", json={}, headers=tenant.headers)).json()["Subscriptions"]
    assert [s["SubscriptionId"] for s in listed] == [kept["SubscriptionId"]]


async def test_a_malformed_body_with_a_good_key_is_its_400_and_claims_no_key(
    rt: Runtime, api: httpx.AsyncClient
) -> None:
    """A malformed body is never a replay of a stored success: its 400 comes before any key is claimed, not a 422 for
    a key reused with another body, nor a 409 while a claim it made is in flight."""
    tenant = await make_tenant(rt, api)
    used = {**tenant.headers, "Idempotency-Key": "used-key"}
    good = {"Url": "https://public.example.test/hook", "EventTypes": ["FeedOutcome"]}
    assert (await api.post("/api/webhooks/Create", json=good, headers=used)).status_code == 200
    for headers in (used, {**tenant.headers, "Idempotency-Key": "fresh-key"}):
        malformed = await api.post("/api/webhooks/Create", json={"Url": 5, "EventTypes": []}, headers=headers)
        assert malformed.status_code == 400, malformed.text
        assert set(problem(malformed)["errors"]) == {"Url", "EventTypes"}
    async with rt.db.read() as session:
        assert (await session.execute(select(func.count()).select_from(IdempotencyRecord))).scalar_one() == 1
