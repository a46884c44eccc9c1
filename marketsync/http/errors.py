"""Errors are exceptions carrying their status and code; one handler renders RFC 9457 problem details."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import Scope

from marketsync.http.requestid import current_request_id
from marketsync.kit import jsonio

PROBLEM_JSON = "application/problem+json"
TOKEN_PATH = "/connect/token"
# RFC 6749 section 5.1: no cache may keep a token endpoint's answer, errors included.
TOKEN_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
# The RFC 6749 error code of a status the token endpoint meets outside its own checks (docs/decisions/0318).
_TOKEN_ERROR_CODES = {500: "server_error", 503: "temporarily_unavailable"}
# RFC 6749 section 5.2: error_description carries only %x20-21 / %x23-5B / %x5D-7E.
_NOT_IN_DESCRIPTION = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
log = structlog.get_logger("marketsync.errors")

_STATUS_CODES = {
    400: ("validation-failed", "The request is invalid."),
    401: ("unauthorized", "Authentication is required."),
    403: ("insufficient-scope", "The token lacks the scope this operation needs."),
    404: ("not-found", "No such resource."),
    405: ("method-not-allowed", "The method is not allowed on this resource."),
    406: ("not-acceptable", "Only application/json responses are available."),
    408: ("request-timeout", "The request body did not arrive in time."),
    409: ("conflict", "The request conflicts with the current state."),
    413: ("payload-too-large", "The request body is too large."),
    415: ("unsupported-media-type", "The request body must be application/json."),
    422: ("unprocessable", "The request cannot be processed."),
    429: ("rate-limited", "Too many requests."),
    500: ("internal-error", "An unexpected error occurred."),
    503: ("unavailable", "The service is temporarily unavailable."),
}


class ApiError(Exception):
    status: int = 500
    code: str = "internal-error"
    title: str = "An unexpected error occurred."

    def __init__(
        self,
        title: str | None = None,
        *,
        errors: Mapping[str, Sequence[str]] | None = None,
        headers: Mapping[str, str] | None = None,
        code: str | None = None,
    ) -> None:
        self.title = title or type(self).title
        self.errors = {k: list(v) for k, v in (errors or {}).items()}
        self.headers = dict(headers or {})
        if code:
            self.code = code
        super().__init__(self.title)


class ValidationFailed(ApiError):
    status, code, title = 400, "validation-failed", "One or more fields are invalid."


class Unauthorized(ApiError):
    status, code, title = 401, "unauthorized", "A valid bearer token is required."


class InsufficientScope(ApiError):
    status, code, title = 403, "insufficient-scope", "The token lacks the scope this operation needs."


class NotFound(ApiError):
    status, code, title = 404, "not-found", "No such resource."


class Conflict(ApiError):
    status, code, title = 409, "conflict", "The request conflicts with the current state."


class IdempotencyInFlight(ApiError):
    status, code, title = 409, "idempotency-in-flight", "A request with this Idempotency-Key is still in progress."


class IdempotencyMismatch(ApiError):
    status, code = 422, "idempotency-key-reused"
    title = "This Idempotency-Key was used with a different request body."


class BodyRefused(StarletteHTTPException):
    """Raised while a body streams in. An HTTPException, because FastAPI re-raises those from body parsing and turns
    any other exception into a bare 400: an oversized chunked body must answer 413 on every route."""

    def __init__(
        self,
        status: int,
        code: str,
        title: str,
        errors: Mapping[str, Sequence[str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status, title, dict(headers) if headers else None)
        self.code, self.title = code, title
        self.errors = {k: list(v) for k, v in (errors or {}).items()}

    def response(self, scope: Scope) -> Response:
        return error_response(scope, self.status_code, self.code, self.title, self.errors or None, self.headers)


def payload_too_large(limit: int) -> BodyRefused:
    return BodyRefused(413, "payload-too-large", f"The request body exceeds {limit} bytes.")


def body_too_slow(timeout_s: float) -> BodyRefused:
    """The body did not arrive in time: answered, and the connection closed (what is left of the body never comes,
    or would be read as the next request)."""
    title = f"The request body did not arrive within {timeout_s:g} s."
    return BodyRefused(408, "request-timeout", title, headers={"Connection": "close"})


class UpstreamUnavailable(ApiError):
    """A marketplace the answer depends on did not answer (it is asked live: Amazon's product type schemas)."""

    status, code, title = 503, "unavailable", "The marketplace is not answering; retry in a minute."


class RateLimited(ApiError):
    status, code, title = 429, "rate-limited", "Too many requests; retry after the time given in Retry-After."


def problem_response(
    status: int,
    code: str,
    title: str,
    errors: Mapping[str, list[str]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    body = {
        "type": f"urn:service:error:{code}",
        "title": title,
        "status": status,
        "code": code,
        "requestId": current_request_id(),
        "errors": dict(errors or {}),
    }
    return Response(jsonio.dumps(body), status_code=status, media_type=PROBLEM_JSON, headers=dict(headers or {}))


def token_error_response(
    status: int, error: str, description: str, headers: Mapping[str, str] | None = None
) -> Response:
    """An RFC 6749 section 5.2 error: the only error shape an OAuth client reads from the token endpoint."""
    body = {"error": error, "error_description": token_error_description(description)}
    headers = {**TOKEN_NO_STORE, **(headers or {})}
    return Response(jsonio.dumps(body), status_code=status, media_type="application/json", headers=headers)


def token_error_description(text: str) -> str:
    """The text with every character RFC 6749 section 5.2 does not allow in an error_description replaced."""
    return _NOT_IN_DESCRIPTION.sub("?", text)


def error_response(
    scope: Scope,
    status: int,
    code: str,
    title: str,
    errors: Mapping[str, list[str]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Problem details (spec section 7); at the token endpoint, whatever refused the request (the body's size, the
    method, a failure), an RFC 6749 section 5.2 error instead."""
    if _route_path(scope) != TOKEN_PATH:
        return problem_response(status, code, title, errors, headers)
    messages = [message for listed in (errors or {}).values() for message in listed]
    description = " ".join([title, *messages]) if messages else title
    return token_error_response(status, _TOKEN_ERROR_CODES.get(status, "invalid_request"), description, headers)


def _route_path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def field_key(loc: Sequence[Any]) -> str:
    """('body', 'Items', 3, 'Price') -> 'Items[3].Price'; query and path parameters keep their own name."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    key = ""
    for part in parts:
        if isinstance(part, int):
            key += f"[{part}]"
        elif key:
            key += f".{part}"
        else:
            key = str(part)
    return key or "body"


def _message(error: Mapping[str, Any]) -> str:
    kind = error.get("type", "")
    if kind == "missing":
        return "Required."
    if kind == "extra_forbidden":
        return "Unknown field; field names are case-exact."
    if kind == "json_invalid":
        return "The body is not valid JSON."
    message = str(error.get("msg", "Invalid value."))
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")


def merged_errors(*maps: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Error maps as one (keys in first-seen order, each message once): the `errors` of a 400 that names the
    problems several checks found in one request."""
    merged: dict[str, list[str]] = {}
    for errors in maps:
        for key, messages in errors.items():
            listed = merged.setdefault(key, [])
            for message in messages:
                if message not in listed:
                    listed.append(message)
    return merged


def validation_errors(errors: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for error in errors:
        if error.get("type") == "json_invalid":
            # pydantic puts the byte offset in the location; the problem is the body as a whole.
            grouped.setdefault("body", []).append(_message(error))
            continue
        loc = list(error.get("loc", ()))
        # Union members add their type name to the path (e.g. 'function-after[...]'); drop those.
        loc = [p for p in loc if not (isinstance(p, str) and ("[" in p or p in ("function-after", "json-or-python")))]
        grouped.setdefault(field_key(loc), []).append(_message(error))
    return grouped


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> list[str]:
    """The methods of every route whose path matches the request's, sorted: a 405's `Allow` (RFC 9110 section
    15.5.6). The router raises 405 from the first route that matched the path only, which lists that route's
    methods alone when a path is served by several routes (a GET and a POST defined apart, a literal segment that
    a parameter route also matches)."""
    methods: set[str] = set()
    for route in routes:
        match, child_scope = route.matches(scope)
        if match == Match.NONE:
            continue
        if isinstance(route, Route):
            methods.update(route.methods or ())
        elif isinstance(route, Mount) and route.routes:
            methods.update(allowed_methods(route.routes, {**scope, **child_scope}))
    return sorted(methods)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        return error_response(request.scope, exc.status, exc.code, exc.title, exc.errors, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        return request_validation_problem(request, exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        return http_problem(request, exc)


def request_validation_problem(request: Request, exc: RequestValidationError) -> Response:
    errors = validation_errors(exc.errors())
    return error_response(request.scope, 400, "validation-failed", ValidationFailed.title, errors)


def http_problem(request: Request, exc: StarletteHTTPException) -> Response:
    if isinstance(exc, BodyRefused):
        return exc.response(request.scope)
    code, title = _STATUS_CODES.get(exc.status_code, ("error", "The request failed."))
    errors = None
    if exc.status_code == 400:  # the framework could not read the body (bad encoding, nesting...)
        errors = {"body": ["The body is not valid JSON."]}
    return error_response(request.scope, exc.status_code, code, title, errors, http_error_headers(request, exc))


def http_error_headers(request: Request, exc: StarletteHTTPException) -> Mapping[str, str] | None:
    """The exception's headers; a 405's `Allow` names every method the path takes."""
    if exc.status_code != 405:
        return exc.headers
    # A mounted app (the docs' static files) is no route of ours: its own Allow stands.
    union = allowed_methods(request.app.router.routes, request.scope)
    return {**(exc.headers or {}), "Allow": ", ".join(union)} if union else exc.headers


def internal_error_response(scope: Scope) -> Response:
    """The answer to an unexpected exception: a bare 500 problem, never a stack trace."""
    code, title = _STATUS_CODES[500]
    return error_response(scope, 500, code, title)


def unavailable_response(scope: Scope) -> Response:
    """The database cannot be reached for a moment: 503 with Retry-After, nothing written."""
    code, title = _STATUS_CODES[503]
    return error_response(scope, 503, code, title, None, {"Retry-After": "1"})
