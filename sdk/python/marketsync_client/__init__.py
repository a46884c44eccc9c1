"""Typed Python client for the marketsync API.

    from marketsync_client import Client

    with Client.from_env(scopes=["OrdersRead"]) as api:
        for order in api.iter_orders(order_statuses=["Unshipped"]):
            ...

``marketsync_client.webhooks`` (verify and parse deliveries) uses the standard library only. The names below
are imported on first use, so ``import marketsync_client.webhooks`` imports neither httpx nor pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from marketsync_client._core import RateLimit, RawResponse, RetryPolicy
    from marketsync_client.client import AsyncClient, Client
    from marketsync_client.errors import (
        ApiError,
        BadRequest,
        Conflict,
        Forbidden,
        JobTimeout,
        MarketsyncError,
        NotFound,
        RateLimited,
        ServerError,
        TokenError,
        TransportError,
        Unauthorized,
        UnprocessableEntity,
    )
    from marketsync_client.paging import AsyncPaged, Paged, WalkState
    from marketsync_client.reconcile import Difference, HeldItem, InventoryMirror, ReconcileReport

__version__ = "0.2.0"

_LAZY = {
    "AsyncClient": "client",
    "Client": "client",
    "RateLimit": "_core",
    "RawResponse": "_core",
    "RetryPolicy": "_core",
    "AsyncPaged": "paging",
    "Paged": "paging",
    "WalkState": "paging",
    "Difference": "reconcile",
    "HeldItem": "reconcile",
    "InventoryMirror": "reconcile",
    "ReconcileReport": "reconcile",
    **{
        name: "errors"
        for name in (
            "ApiError",
            "BadRequest",
            "Conflict",
            "Forbidden",
            "JobTimeout",
            "MarketsyncError",
            "NotFound",
            "RateLimited",
            "ServerError",
            "TokenError",
            "TransportError",
            "Unauthorized",
            "UnprocessableEntity",
        )
    },
}

__all__ = [
    "ApiError",
    "AsyncClient",
    "AsyncPaged",
    "BadRequest",
    "Client",
    "Conflict",
    "Difference",
    "Forbidden",
    "HeldItem",
    "InventoryMirror",
    "JobTimeout",
    "MarketsyncError",
    "NotFound",
    "Paged",
    "RateLimit",
    "RateLimited",
    "RawResponse",
    "ReconcileReport",
    "RetryPolicy",
    "ServerError",
    "TokenError",
    "TransportError",
    "Unauthorized",
    "UnprocessableEntity",
    "WalkState",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # resolved once
    return value
