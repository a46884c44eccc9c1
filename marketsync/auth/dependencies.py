"""Bearer authentication (RFC 6750), per-credential rate limit, and scopes as typed dependency aliases.

Each endpoint's signature names the scope it needs, e.g. `caller: OrdersReader`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any, get_args
from urllib.parse import parse_qsl

from fastapi import Depends, Request
from fastapi.routing import APIRoute
from structlog.contextvars import bind_contextvars

from marketsync.auth import service
from marketsync.auth.scopes import Scope
from marketsync.auth.service import Caller
from marketsync.http.bodies import DUPLICATE_KEY
from marketsync.http.errors import InsufficientScope, RateLimited, Unauthorized, ValidationFailed
from marketsync.runtime import Runtime

REALM = 'Bearer realm="marketsync"'
_QUERY_NAMES = "_marketsync_query_names"


def runtime_of(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


async def _runtime(request: Request) -> Runtime:
    # async on purpose: FastAPI runs a plain `def` dependency in its threadpool (a thread hop per request).
    return runtime_of(request)


def _authorization(scope: MutableMapping[str, Any]) -> str | None:
    """The first Authorization header, as Starlette's Headers.get reads it, without building the Headers object."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            decoded: str = value.decode("latin-1")
            return decoded
    return None


async def _authenticated(request: Request) -> Caller:
    """The bearer token's caller, with the credential's rate limit spent: once per request, however many scope
    dependencies an endpoint declares (a plain call, not a FastAPI dependency: each dependency level costs ~25 µs)."""
    # request.state's backing dict, read without State's AttributeError for a missing name.
    state: dict[str, Any] = request.scope.setdefault("state", {})
    known: Caller | None = state.get("caller")
    if known is not None:
        return known
    rt = runtime_of(request)
    header = _authorization(request.scope)
    if not header:
        raise Unauthorized("A bearer token is required.", headers={"WWW-Authenticate": REALM})
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer":
        # RFC 6750 section 3.1: no bearer credentials at all (another scheme) is answered with the bare challenge.
        raise Unauthorized("A bearer token is required.", headers={"WWW-Authenticate": REALM})
    if not token:
        raise Unauthorized(
            "The Authorization header must be 'Bearer <token>'.",
            headers={"WWW-Authenticate": f'{REALM}, error="invalid_request"'},
        )
    caller = await service.authenticate(rt, token)
    if caller is None:
        raise Unauthorized(
            "The access token is invalid or expired.",
            headers={
                "WWW-Authenticate": f'{REALM}, error="invalid_token", '
                'error_description="The access token is invalid or expired"'
            },
        )
    if rt.limiter is not None:
        decision = await rt.limiter.hit(rt.settings.rate_limit, "api", caller.credential_id)
        headers = decision.headers("credential")
        if not decision.allowed:
            raise RateLimited(headers=headers)
        # The middleware adds these to whatever response follows, errors included.
        state["rate_limit_headers"] = headers
    state["caller"] = caller
    # Every log line of this request names the account and credential (ids only: never a secret or a token).
    bind_contextvars(account_id=caller.account_id, credential_id=caller.credential_id)
    return caller


def _refuse_unknown_query(scope: MutableMapping[str, Any]) -> None:
    """A query parameter spelt as one the operation defines but in another letter case, or a defined one given
    twice, is a 400 naming it (0326): names are case-exact as body fields are (0008), and `IncludeCustomerData=true`
    must not read as "no customer block". Any other name is not this API's and is ignored (0340): a cache buster
    (`_=1732822000000`), a tracking parameter, a proxy's addition. Checked once the caller is known (a 401 or 403
    comes first), before the operation's own parameters."""
    route = scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known: tuple[tuple[str, ...], dict[str, str]] | None = getattr(route, _QUERY_NAMES, None)
    if known is None:
        declared = tuple(parameter.alias for parameter in route.dependant.query_params)
        known = declared, {name.casefold(): name for name in declared}
        setattr(route, _QUERY_NAMES, known)
    names, folded = known
    errors: dict[str, list[str]] = {}
    seen: set[str] = set()
    for name, _ in parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True):
        if name in names:
            if name in seen:
                errors.setdefault(name, [DUPLICATE_KEY])
            seen.add(name)
        elif name.casefold() in folded:
            takes = ", ".join(names)
            errors.setdefault(name, [f"Unknown query parameter; names are case-exact. This operation takes: {takes}."])
    if errors:
        raise ValidationFailed(errors=errors)


def require(scope: Scope) -> Callable[..., Awaitable[Caller]]:
    async def _dependency(request: Request) -> Caller:
        caller = await _authenticated(request)
        if scope.value not in caller.scopes:
            raise InsufficientScope(
                f"This operation needs the {scope.value} scope.",
                headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope", scope="{scope.value}"'},
            )
        if request.scope.get("query_string"):
            _refuse_unknown_query(request.scope)
        return caller

    # app.required_scope() finds the scope of a route by this name (OpenAPI security).
    _dependency.__name__ = f"require_{scope.value}"
    return _dependency


OrdersReader = Annotated[Caller, Depends(require(Scope.OrdersRead))]
OrdersWriter = Annotated[Caller, Depends(require(Scope.OrdersWrite))]
InventoryReader = Annotated[Caller, Depends(require(Scope.InventoryRead))]
InventoryWriter = Annotated[Caller, Depends(require(Scope.InventoryWrite))]
MarketplacesReader = Annotated[Caller, Depends(require(Scope.MarketplacesRead))]
WebhooksWriter = Annotated[Caller, Depends(require(Scope.WebhooksWrite))]
RuntimeDep = Annotated[Runtime, Depends(_runtime)]

# The dependencies that need only the Request: routes taking nothing else are called directly (http/lean_routes.py).
REQUEST_DEPENDENCIES = frozenset(
    get_args(alias)[1].dependency
    for alias in (OrdersReader, OrdersWriter, InventoryReader, InventoryWriter, MarketplacesReader, WebhooksWriter)
) | {_runtime}
