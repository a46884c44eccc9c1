"""POST /connect/token: RFC 6749 section 4.4 (client credentials) with section 5 responses."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote_plus

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel

from marketsync.auth import service
from marketsync.auth.dependencies import runtime_of
from marketsync.auth.service import IssuedToken, TokenError
from marketsync.http.errors import TOKEN_NO_STORE, token_error_response
from marketsync.kit.ratelimit import RateDecision
from marketsync.runtime import Runtime

router = APIRouter(tags=["Token"])

BASIC_CHALLENGE = 'Basic realm="marketsync", charset="UTF-8"'
# Issued client_ids are 24 characters; anything much longer cannot match and is refused before any lookup.
MAX_CLIENT_ID_CHARS = 128


class TokenResponse(BaseModel):
    access_token: str
    token_type: str = "Bearer"
    expires_in: int
    scope: str


class TokenErrorResponse(BaseModel):
    error: str
    error_description: str


def _error(exc: TokenError, *, basic: bool, retry_after: int | None = None) -> Response:
    headers = {}
    if exc.status == 401:
        headers["WWW-Authenticate"] = BASIC_CHALLENGE
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return token_error_response(exc.status, exc.error, exc.description, headers)


class _OverBudget(Exception):
    """The client's failure budget for this source ran out while the request was being checked."""


def _throttled(decision: RateDecision, *, basic: bool) -> Response:
    exc = TokenError("temporarily_unavailable", "Too many failed attempts for this client.", 429)
    return _error(exc, basic=basic, retry_after=max(1, decision.reset_in))


def _basic_credentials(header: str) -> tuple[str, str]:
    try:
        decoded = base64.b64decode(header.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:  # ValueError: non-ASCII characters (a 500 before)
        raise TokenError("invalid_client", "Malformed Basic credentials.", 401) from exc
    client_id, sep, secret = decoded.partition(":")
    # RFC 6749 section 2.3.1: both parts are form-urlencoded before Basic encoding.
    client_id, secret = unquote_plus(client_id), unquote_plus(secret)
    if not sep or "\x00" in client_id or "\x00" in secret:
        raise TokenError("invalid_client", "Malformed Basic credentials.", 401)
    return client_id, secret


def _failure_key(client_id: str, request: Request) -> tuple[str, str, str]:
    """Failed attempts are counted per client *and* source (docs/decisions/0160-token-failure-throttle.md): someone
    guessing a client's secret locks out only their own address, and the key's size is fixed whatever was sent."""
    digest = hashlib.sha256(client_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    source = request.client.host if request.client else "unknown"
    return ("token-failures", digest, source)


# The parameters of a client-credentials request (RFC 6749 sections 2.3.1, 3.3 and 4.4.2); any other is ignored.
TOKEN_PARAMETERS = frozenset({"grant_type", "client_id", "client_secret", "scope"})


def _form(raw: bytes) -> dict[str, str]:
    """The recognised parameters sent with a value (docs/decisions/0319): RFC 6749 section 3.1 treats one sent
    without a value as omitted and has unrecognised ones ignored; a recognised one sent twice is invalid_request."""
    try:
        pairs = parse_qsl(raw.decode(), keep_blank_values=False, strict_parsing=False)
    except UnicodeDecodeError as exc:
        raise TokenError("invalid_request", "The body is not UTF-8 form data.") from exc
    form: dict[str, str] = {}
    for name, value in pairs:
        if name not in TOKEN_PARAMETERS:
            continue
        if "\x00" in value:
            # PostgreSQL text cannot hold U+0000: refused here, as the middleware refuses it in JSON bodies.
            raise TokenError("invalid_request", "Parameters must not contain the NUL character (U+0000).")
        if name in form:
            raise TokenError("invalid_request", f"Parameter '{name}' is repeated.")
        form[name] = value
    return form


@router.post(
    "/connect/token",
    response_model=TokenResponse,
    responses={
        400: {"model": TokenErrorResponse},
        401: {"model": TokenErrorResponse},
        429: {"model": TokenErrorResponse},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/x-www-form-urlencoded": {
                    "schema": {
                        "type": "object",
                        "required": ["grant_type"],
                        "properties": {
                            "grant_type": {"type": "string", "enum": ["client_credentials"]},
                            "client_id": {"type": "string"},
                            "client_secret": {"type": "string"},
                            "scope": {"type": "string", "description": "Space-separated scope names."},
                        },
                    }
                }
            },
        }
    },
    summary="Exchange client credentials for an access token",
)
async def token(request: Request) -> Response:
    rt = runtime_of(request)
    authorization = request.headers.get("authorization", "")
    basic = authorization[:6].lower() == "basic "
    try:
        form = await _token_form(request)
        client_id, client_secret = _client_credentials(form, authorization, basic=basic)
        if len(client_id) > MAX_CLIENT_ID_CHARS:
            raise TokenError("invalid_client", "Client authentication failed.", 401)
        issued = await _issue_within_budget(rt, request, client_id, client_secret, form.get("scope"), basic=basic)
        if isinstance(issued, Response):
            return issued
    except TokenError as exc:
        return _error(exc, basic=basic)
    body = TokenResponse(access_token=issued.access_token, expires_in=issued.expires_in, scope=" ".join(issued.scopes))
    return Response(body.model_dump_json().encode(), media_type="application/json", headers=TOKEN_NO_STORE)


async def _token_form(request: Request) -> dict[str, str]:
    """The form of a client_credentials grant (RFC 6749 section 4.4.2), or the TokenError its shape earns."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise TokenError("invalid_request", "The body must be application/x-www-form-urlencoded.")
    form = _form(await request.body())
    grant_type = form.get("grant_type")
    if not grant_type:
        raise TokenError("invalid_request", "Parameter 'grant_type' is required.")
    if grant_type != "client_credentials":
        raise TokenError("unsupported_grant_type", "Only grant_type=client_credentials is supported.")
    return form


def _client_credentials(form: Mapping[str, str], authorization: str, *, basic: bool) -> tuple[str, str]:
    """The client's id and secret, from HTTP Basic or the body (client_secret_basic, client_secret_post)."""
    if basic and "client_secret" in form:
        # RFC 6749 section 2.3: one client authentication method per request.
        raise TokenError("invalid_request", "Use one client authentication method, not both.")
    if basic:
        client_id, client_secret = _basic_credentials(authorization[6:])
        # A client may name itself in the body too (RFC 6749 section 3.2.1), as long as it names itself.
        if form.get("client_id", client_id) != client_id:
            raise TokenError("invalid_request", "The client_id parameter differs from the Basic credentials.")
        return client_id, client_secret
    if "client_id" in form or "client_secret" in form:
        client_id, client_secret = form.get("client_id", ""), form.get("client_secret", "")
        if not client_id or not client_secret:
            raise TokenError("invalid_client", "Both client_id and client_secret are required.", 401)
        return client_id, client_secret
    raise TokenError("invalid_client", "Client authentication is required.", 401)


async def _issue_within_budget(
    rt: Runtime, request: Request, client_id: str, client_secret: str, scope: str | None, *, basic: bool
) -> IssuedToken | Response:
    """The token, unless the client's (and address's) budget of failed authentications is spent: then the 429."""
    failure_key = _failure_key(client_id, request)
    limiter, limit = rt.limiter, rt.settings.token_failure_limit
    if limiter is not None and not await limiter.peek(limit, *failure_key):
        return _throttled(await limiter.hit(limit, *failure_key), basic=basic)
    try:
        issued = await service.issue_token(rt, client_id, client_secret, scope)
        # A right secret after the budget was spent (by concurrent wrong ones) is refused like a wrong one: an
        # answer beyond the budget teaches nothing.
        if limiter is not None and not await limiter.peek(limit, *failure_key):
            raise _OverBudget
    except _OverBudget:
        assert limiter is not None
        return _throttled(await limiter.hit(limit, *failure_key), basic=basic)
    except TokenError as exc:
        if exc.error == "invalid_client" and limiter is not None:
            # The hit is atomic: of N concurrent wrong secrets, only the budget's worth are answered 401.
            decision = await limiter.hit(limit, *failure_key)
            if not decision.allowed:
                return _throttled(decision, basic=basic)
        raise
    return issued
