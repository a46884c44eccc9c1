"""POST /connect/token: RFC 6749 sections 4.4 and 5, spec section 4 (Token) and 5."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote_plus

import httpx
import pytest
from sqlalchemy import exc as sa_exc

from marketsync.auth import repository, service
from marketsync.auth.scopes import ALL_SCOPES
from marketsync.kit.clock import FrozenClock
from marketsync.runtime import Runtime
from tests.support.factories import fetch_token, make_account, make_credential

GRANT = {"grant_type": "client_credentials"}


def basic(client_id: str, secret: str) -> dict[str, str]:
    raw = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return {"Authorization": "Basic " + base64.b64encode(raw).decode()}


async def credential(rt: Runtime, scopes: tuple[str, ...] = ("OrdersRead", "InventoryRead")) -> Any:
    return await make_credential(rt, await make_account(rt), scopes)


def assert_oauth_error(response: httpx.Response, status: int, error: str) -> None:
    """RFC 6749 section 5.2: a JSON object of error and error_description (never problem details), not cached."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"
    body = response.json()
    assert set(body) == {"error", "error_description"}, body
    assert body["error"] == error
    description = body["error_description"]
    assert isinstance(description, str) and description
    assert all(c in " !" or "#" <= c <= "[" or "]" <= c <= "~" for c in description), description


async def test_client_secret_post_issues_bearer_token(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    response = await api.post(
        "/connect/token", data={**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == "OrdersRead InventoryRead"
    assert "refresh_token" not in body
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"
    ok = await api.get(
        "/api/jobs/01ABCDEFGHJKMNPQRSTVWXYZ00", headers={"Authorization": f"Bearer {body['access_token']}"}
    )
    assert ok.status_code == 404  # authenticated, unknown job


async def test_client_secret_basic_issues_token(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    response = await api.post("/connect/token", data=GRANT, headers=basic(cred.client_id, cred.client_secret))
    assert response.status_code == 200, response.text
    assert response.json()["access_token"].startswith("mst_")


async def test_both_authentication_methods_is_invalid_request(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    response = await api.post(
        "/connect/token",
        data={**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret},
        headers=basic(cred.client_id, cred.client_secret),
    )
    assert_oauth_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({}, "invalid_request"),
        ({"grant_type": "authorization_code"}, "unsupported_grant_type"),
        ({"grant_type": "password"}, "unsupported_grant_type"),
    ],
)
async def test_grant_type_errors(rt: Runtime, api: httpx.AsyncClient, form: dict[str, str], error: str) -> None:
    cred = await credential(rt)
    response = await api.post(
        "/connect/token", data={**form, "client_id": cred.client_id, "client_secret": cred.client_secret}
    )
    assert_oauth_error(response, 400, error)


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize("repeated", ["grant_type", "client_id", "client_secret", "scope"])
async def test_repeated_parameter_is_invalid_request(rt: Runtime, api: httpx.AsyncClient, repeated: str) -> None:
    cred = await credential(rt)
    form = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret, "scope": "OrdersRead"}
    body = "&".join(f"{name}={quote_plus(value)}" for name, value in form.items())
    response = await api.post("/connect/token", content=f"{body}&{repeated}={quote_plus(form[repeated])}", headers=FORM)
    assert_oauth_error(response, 400, "invalid_request")
    assert repeated in response.json()["error_description"]
    assert cred.client_secret not in response.text


async def test_parameters_sent_without_a_value_are_omitted(rt: Runtime, api: httpx.AsyncClient) -> None:
    """RFC 6749 section 3.1: `scope=` is no scope (every granted one), `client_id=` beside Basic is no second
    method, and an empty value does not make a repeat."""
    cred = await credential(rt)
    secret_post = f"client_id={cred.client_id}&client_secret={quote_plus(cred.client_secret)}"
    grant = "grant_type=client_credentials"
    for body, headers in (
        (f"{grant}&scope=&{secret_post}", FORM),
        (f"{grant}&scope&{secret_post}", FORM),
        (f"{grant}&client_id=&client_secret=&scope=", {**FORM, **basic(cred.client_id, cred.client_secret)}),
    ):
        response = await api.post("/connect/token", content=body, headers=headers)
        assert response.status_code == 200, (body, response.text)
        assert response.json()["scope"] == "OrdersRead InventoryRead"
    narrowed = await api.post(
        "/connect/token", content=f"{grant}&scope=&scope=InventoryRead&{secret_post}", headers=FORM
    )
    assert narrowed.status_code == 200 and narrowed.json()["scope"] == "InventoryRead"
    no_grant = await api.post("/connect/token", content=f"grant_type=&{secret_post}", headers=FORM)
    assert_oauth_error(no_grant, 400, "invalid_request")
    no_secret = await api.post(
        "/connect/token", content=f"{grant}&client_id={cred.client_id}&client_secret=", headers=FORM
    )
    assert_oauth_error(no_secret, 401, "invalid_client")


async def test_unknown_parameters_are_ignored(rt: Runtime, api: httpx.AsyncClient) -> None:
    """RFC 6749 section 3.1: whatever else is sent, however often, with whatever characters, changes nothing."""
    cred = await credential(rt)
    extras = "audience=x&audience=y&resource=https%3A%2F%2Fa.example&%22odd%5C=%C3%9C&nul=%00&Scope=Bogus&flag"
    body = f"grant_type=client_credentials&client_id={cred.client_id}&client_secret={cred.client_secret}&{extras}"
    response = await api.post("/connect/token", content=body, headers=FORM)
    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "OrdersRead InventoryRead"


async def test_basic_with_the_same_client_id_in_the_body_is_accepted(rt: Runtime, api: httpx.AsyncClient) -> None:
    """RFC 6749 section 3.2.1: a client may name itself with client_id beside its Basic credentials."""
    cred = await credential(rt)
    headers = basic(cred.client_id, cred.client_secret)
    same = await api.post("/connect/token", data={**GRANT, "client_id": cred.client_id}, headers=headers)
    assert same.status_code == 200, same.text
    other = await api.post("/connect/token", data={**GRANT, "client_id": "msc_someone_else"}, headers=headers)
    assert_oauth_error(other, 400, "invalid_request")
    # Basic and a body secret are two authentication methods (RFC 6749 section 2.3), right secret or not.
    for form in ({"client_secret": cred.client_secret}, {"client_id": cred.client_id, "client_secret": "x"}):
        both = await api.post("/connect/token", data={**GRANT, **form}, headers=headers)
        assert_oauth_error(both, 400, "invalid_request")
        assert cred.client_secret not in both.text


async def test_error_descriptions_carry_no_secret_and_no_unsafe_character(rt: Runtime, api: httpx.AsyncClient) -> None:
    """RFC 6749 section 5.2's characters only (assert_oauth_error), and never the secret, even pasted as a scope."""
    cred = await credential(rt)
    right = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    for form, status, error in (
        ({**right, "scope": cred.client_secret}, 400, "invalid_scope"),
        ({**right, "scope": f'OrdersRead {cred.client_secret} "x\\y" Ü'}, 400, "invalid_scope"),
        ({**right, "client_secret": cred.client_secret + "x"}, 401, "invalid_client"),
        ({**right, "client_id": 'msc_"\\Ü'}, 401, "invalid_client"),
        ({**right, "grant_type": 'password"\\Ü'}, 400, "unsupported_grant_type"),
    ):
        response = await api.post("/connect/token", data=form)
        assert_oauth_error(response, status, error)
        assert cred.client_secret not in response.text


async def test_json_body_is_invalid_request(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    response = await api.post(
        "/connect/token", json={**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    )
    assert_oauth_error(response, 400, "invalid_request")


@pytest.mark.parametrize("method", ["post", "basic"])
async def test_wrong_secret_and_unknown_client_are_invalid_client(
    rt: Runtime, api: httpx.AsyncClient, method: str
) -> None:
    cred = await credential(rt)
    for client_id, secret in ((cred.client_id, "wrong"), ("msc_unknown", cred.client_secret)):
        if method == "post":
            response = await api.post("/connect/token", data={**GRANT, "client_id": client_id, "client_secret": secret})
        else:
            response = await api.post("/connect/token", data=GRANT, headers=basic(client_id, secret))
        assert_oauth_error(response, 401, "invalid_client")
        assert response.headers["www-authenticate"].startswith("Basic")


async def test_missing_client_authentication_is_invalid_client(rt: Runtime, api: httpx.AsyncClient) -> None:
    response = await api.post("/connect/token", data=GRANT)
    assert_oauth_error(response, 401, "invalid_client")


async def test_scope_subset_granted_and_beyond_refused(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    form = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    narrowed = await api.post("/connect/token", data={**form, "scope": "InventoryRead"})
    assert narrowed.status_code == 200 and narrowed.json()["scope"] == "InventoryRead"
    beyond = await api.post("/connect/token", data={**form, "scope": "InventoryRead WebhooksWrite"})
    assert_oauth_error(beyond, 400, "invalid_scope")
    unknown = await api.post("/connect/token", data={**form, "scope": "Everything"})
    assert_oauth_error(unknown, 400, "invalid_scope")


async def test_invalid_scope_names_the_unknown_scopes_exactly_as_sent(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    form = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    for scope, named, not_named in (
        ("OrdersRead Bogus", ["Bogus"], ["bogus", "BOGUS"]),
        ("ordersread InventoryRead", ["ordersread"], ["Ordersread"]),  # scope names are case-sensitive
        ("OrdersRead MiXeD_Case.Scope:x mixed_case.scope:X", ["MiXeD_Case.Scope:x mixed_case.scope:X"], []),
    ):
        response = await api.post("/connect/token", data={**form, "scope": scope})
        assert_oauth_error(response, 400, "invalid_scope")
        description = response.json()["error_description"]
        for name in named:
            assert name in description, (scope, description)
        for name in not_named:
            assert name not in description, (scope, description)

    # RFC 6749 section 5.2: error_description carries only %x20-21 / %x23-5B / %x5D-7E; a name outside that
    # set is counted, not echoed.
    response = await api.post("/connect/token", data={**form, "scope": 'Bogus Über "quoted"'})
    assert_oauth_error(response, 400, "invalid_scope")
    description = response.json()["error_description"]
    assert "Bogus" in description and "2 more" in description
    assert all(c == " " or c == "!" or "#" <= c <= "[" or "]" <= c <= "~" for c in description), description


async def test_omitted_scope_means_every_granted_scope(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await make_credential(rt, await make_account(rt), ALL_SCOPES)
    response = await api.post(
        "/connect/token", data={**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    )
    assert response.json()["scope"].split() == list(ALL_SCOPES)


async def test_narrowed_token_is_limited_to_its_scopes(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await make_credential(rt, await make_account(rt), ALL_SCOPES)
    token = await fetch_token(api, cred.client_id, cred.client_secret, scope="OrdersRead")
    response = await api.get("/api/marketplaces", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 403


@pytest.mark.parametrize("settings_overrides", [{"token_failure_limit": "3/minute"}])
async def test_repeated_bad_secrets_are_throttled(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    bad = {**GRANT, "client_id": cred.client_id, "client_secret": "nope"}
    statuses = [(await api.post("/connect/token", data=bad)).status_code for _ in range(3)]
    assert statuses == [401, 401, 401]
    throttled = await api.post("/connect/token", data={**bad, "client_secret": cred.client_secret})
    assert throttled.status_code == 429
    assert int(throttled.headers["retry-after"]) >= 1
    assert throttled.json()["error"] == "temporarily_unavailable"


clock_start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("settings_overrides", [{"token_ttl_s": 60}])
@pytest.mark.parametrize("clock", [FrozenClock(clock_start)])
@pytest.mark.parametrize("issued_into_the_second_s", [0, 0.999])
async def test_tokens_expire_after_ttl_never_before_their_expires_in(
    rt: Runtime, api: httpx.AsyncClient, clock: FrozenClock, issued_into_the_second_s: float
) -> None:
    """Issued late in a second, a token still lives the expires_in it announced (docs/decisions/0285)."""
    clock._now = clock_start + timedelta(seconds=issued_into_the_second_s)
    cred = await credential(rt)
    token_response = await api.post(
        "/connect/token", data={**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    )
    assert token_response.json()["expires_in"] == 60
    headers = {"Authorization": f"Bearer {token_response.json()['access_token']}"}
    clock.advance(seconds=59.9)
    assert (await api.get("/api/jobs/01ABCDEFGHJKMNPQRSTVWXYZ00", headers=headers)).status_code == 404
    clock.advance(seconds=1.2)
    expired = await api.get("/api/jobs/01ABCDEFGHJKMNPQRSTVWXYZ00", headers=headers)
    assert expired.status_code == 401
    assert 'error="invalid_token"' in expired.headers["www-authenticate"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
async def test_wrong_method_is_an_oauth_405(rt: Runtime, api: httpx.AsyncClient, method: str) -> None:
    response = await api.request(method, "/connect/token")
    assert_oauth_error(response, 405, "invalid_request")
    assert response.headers["allow"] == "POST"


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 1024}])
async def test_oversized_body_is_an_oauth_413(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    padded = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret, "padding": "x" * 2048}
    assert_oauth_error(await api.post("/connect/token", data=padded), 413, "invalid_request")

    async def chunks():  # no Content-Length: refused while the endpoint reads the body
        for _ in range(4):
            yield b"x" * 512

    streamed = await api.post(
        "/connect/token", headers={"Content-Type": "application/x-www-form-urlencoded"}, content=chunks()
    )
    assert_oauth_error(streamed, 413, "invalid_request")


async def test_nul_in_the_query_string_is_an_oauth_400(rt: Runtime, api: httpx.AsyncClient) -> None:
    cred = await credential(rt)
    form = {**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    assert_oauth_error(await api.post("/connect/token?x=%00", data=form), 400, "invalid_request")


async def test_an_internal_failure_is_server_error(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cred = await credential(rt)

    async def broken(*_args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(service, "issue_token", broken)
    response = await api.post(
        "/connect/token", data={**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    )
    assert_oauth_error(response, 500, "server_error")
    assert "a bug" not in response.text


async def test_database_unavailable_is_temporarily_unavailable(
    rt: Runtime, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cred = await credential(rt)

    async def unreachable(*_args: object) -> None:
        # What the driver's read raises while the server restarts (db.database_unavailable).
        raise sa_exc.OperationalError("SELECT", {}, ConnectionRefusedError("connection refused"))

    monkeypatch.setattr(repository, "find_credential_for_token", unreachable)
    response = await api.post(
        "/connect/token", data={**GRANT, "client_id": cred.client_id, "client_secret": cred.client_secret}
    )
    assert_oauth_error(response, 503, "temporarily_unavailable")
    assert response.headers["retry-after"] == "1"
