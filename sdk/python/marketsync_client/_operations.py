"""One function per API operation: its path, body and response model, as a `Call` both clients send.

Request bodies go through the request models (field names checked, naive datetimes refused) and carry only
the fields the caller gave, so the service's own defaults apply to everything left out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from marketsync_client import models as m
from marketsync_client._core import Call

ResponseT = TypeVar("ResponseT", bound=BaseModel)

# Every operation of the API as (method, path template); sdk/python/tests checks it against /openapi.json.
OPERATIONS: dict[str, tuple[str, str]] = {
    "fetch_token": ("POST", "/connect/token"),
    "list_orders": ("POST", "/api/orders/List"),
    "get_order": ("GET", "/api/orders/{order_id}"),
    "confirm_orders": ("POST", "/api/orders/Confirm"),
    "cancel_orders": ("POST", "/api/orders/Cancel"),
    "refund_orders": ("POST", "/api/orders/Refund"),
    "update_order": ("POST", "/api/orders/Update"),
    "push_price_quantity": ("POST", "/api/inventory/price-quantity"),
    "list_products": ("POST", "/api/products/List"),
    "get_product": ("GET", "/api/products/{sku}"),
    "search_product_types": ("POST", "/api/product-types/Search"),
    "get_product_type_schema": ("GET", "/api/product-types/Schema"),
    "create_product": ("POST", "/api/products/Create"),
    "list_marketplaces": ("GET", "/api/marketplaces"),
    "get_job": ("GET", "/api/jobs/{id}"),
    "create_webhook": ("POST", "/api/webhooks/Create"),
    "list_webhooks": ("POST", "/api/webhooks/List"),
    "delete_webhook": ("POST", "/api/webhooks/Delete"),
    "send_test_webhook": ("POST", "/api/webhooks/Test"),
}


def new_idempotency_key() -> str:
    return str(uuid.uuid4())


def _given(**fields: Any) -> dict[str, Any]:
    """The fields the caller gave (None means "not given" for every optional field)."""
    return {name: value for name, value in fields.items() if value is not None}


def _body(model: BaseModel) -> Any:
    # exclude_unset: what the caller left out stays out, so an explicit None (a null) is still sent.
    return model.model_dump(mode="python", exclude_unset=True)


def _parser(model: type[ResponseT]) -> Callable[[Any], ResponseT]:
    return model.model_validate


def _path(template: str, **values: str) -> str:
    return template.format(**{name: _segment(value) for name, value in values.items()})


def _segment(value: str) -> str:
    """`value` as one path segment. safe="": a SKU or id with "/", "?" or "#" stays one segment. A SKU of only
    dots ("." or "..") is a dot-segment that URL normalisation removes (RFC 3986 section 5.2.4: ``/products/..``
    becomes ``/``), so its dots are percent-encoded; the service decodes ``%2E`` back to the SKU."""
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")


# ------------------------------------------------------------------------------------------------- orders


def list_orders(
    *,
    service_order_ids: Sequence[str] | None = None,
    order_statuses: Sequence[m.OrderStatus] | None = None,
    updated_since: datetime | None = None,
    from_date: datetime | None = None,
    to_date: datetime | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    include_customer_data: bool | None = None,
) -> Call[m.OrderPage]:
    request = m.ListOrdersRequest(
        **_given(
            ServiceOrderIDs=list(service_order_ids) if service_order_ids is not None else None,
            OrderStatuses=list(order_statuses) if order_statuses is not None else None,
            UpdatedSince=updated_since,
            FromDate=from_date,
            ToDate=to_date,
            Limit=limit,
            Cursor=cursor,
            IncludeCustomerData=include_customer_data,
        )
    )
    return Call("POST", "/api/orders/List", _parser(m.OrderPage), body=_body(request), safe=True)


def get_order(order_id: str, *, include_customer_data: bool = False) -> Call[m.Order]:
    params = {"includeCustomerData": "true"} if include_customer_data else None
    return Call(
        "GET",
        _path("/api/orders/{order_id}", order_id=order_id),
        m.Order.model_validate,
        params=params,
        safe=True,
    )


def confirm_orders(
    items: Sequence[m.ConfirmItem | Mapping[str, Any]], *, idempotency_key: str | None = None
) -> Call[m.OrderWriteResult]:
    request = m.ConfirmRequest.model_validate({"OrderItems": list(items)})
    return Call(
        "POST",
        "/api/orders/Confirm",
        _parser(m.OrderWriteResult),
        body=_body(request),
        idempotency_key=idempotency_key,
    )


def cancel_orders(
    reason: m.CancelReason,
    items: Sequence[m.CancelItem | Mapping[str, Any]],
    *,
    idempotency_key: str | None = None,
) -> Call[m.OrderWriteResult]:
    request = m.CancelRequest.model_validate({"CancelReason": reason, "OrderItems": list(items)})
    return Call(
        "POST", "/api/orders/Cancel", _parser(m.OrderWriteResult), body=_body(request), idempotency_key=idempotency_key
    )


def refund_orders(
    reason: m.RefundReason,
    currency: str,
    items: Sequence[m.RefundItem | Mapping[str, Any]],
    *,
    idempotency_key: str | None = None,
) -> Call[m.RefundWriteResult]:
    request = m.RefundRequest.model_validate({"Reason": reason, "Currency": currency, "OrderItems": list(items)})
    return Call(
        "POST",
        "/api/orders/Refund",
        _parser(m.RefundWriteResult),
        body=_body(request),
        # Money moves: always keyed, so a retry (ours or the caller's, with the same key) refunds once.
        idempotency_key=idempotency_key or new_idempotency_key(),
    )


def update_order(
    service_order_id: str, external_reference: str | None, *, idempotency_key: str | None = None
) -> Call[m.UpdateOrderResult]:
    request = m.UpdateOrderRequest(ServiceOrderID=service_order_id, ExternalReference=external_reference)
    return Call(
        "POST",
        "/api/orders/Update",
        _parser(m.UpdateOrderResult),
        body=_body(request),
        idempotency_key=idempotency_key,
    )


# ------------------------------------------------------------------------------------------------- inventory


def push_price_quantity(
    items: Sequence[m.PushItem | Mapping[str, Any]],
    *,
    propagate_to_listings: bool | None = None,
    idempotency_key: str | None = None,
) -> Call[m.PushResult]:
    request = m.PushRequest.model_validate({"Items": list(items), **_given(PropagateToListings=propagate_to_listings)})
    return Call(
        "POST",
        "/api/inventory/price-quantity",
        _parser(m.PushResult),
        body=_body(request),
        # Not generated when not given: an unkeyed push costs the service nothing more (docs/decisions/0410).
        idempotency_key=idempotency_key,
    )


def list_products(
    *,
    sku: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    modified_since: datetime | None = None,
) -> Call[m.ProductPage]:
    request = m.ListProductsRequest(**_given(Sku=sku, Limit=limit, Offset=offset, ModifiedSince=modified_since))
    return Call("POST", "/api/products/List", _parser(m.ProductPage), body=_body(request), safe=True)


def get_product(sku: str) -> Call[m.Product]:
    return Call(
        "GET",
        _path("/api/products/{sku}", sku=sku),
        lambda body: m.ProductEnvelope.model_validate(body).Product,
        safe=True,
    )


# ------------------------------------------------------------------------------------------------- catalog


def search_product_types(
    marketplace_id: str,
    *,
    search_text: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[m.ProductTypePage]:
    request = m.SearchProductTypesRequest(
        MarketplaceId=marketplace_id, **_given(SearchText=search_text, Limit=limit, Offset=offset)
    )
    return Call("POST", "/api/product-types/Search", _parser(m.ProductTypePage), body=_body(request), safe=True)


def get_product_type_schema(marketplace_id: str, category_id: str) -> Call[m.ProductTypeSchema]:
    return Call(
        "GET",
        "/api/product-types/Schema",
        _parser(m.ProductTypeSchema),
        params={"marketplaceId": marketplace_id, "categoryId": category_id},
        safe=True,
    )


def create_product(
    sku: str,
    marketplace_id: str,
    *,
    quantity: int | None = None,
    product_type_view_id: str | None = None,
    category_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    validate_only: bool | None = None,
    idempotency_key: str | None = None,
) -> Call[m.CreateProductResult]:
    request = m.CreateProductRequest(
        Sku=sku,
        MarketplaceId=marketplace_id,
        **_given(
            Quantity=quantity,
            ProductTypeViewId=product_type_view_id,
            CategoryId=category_id,
            Attributes=dict(attributes) if attributes is not None else None,
            ValidateOnly=validate_only,
        ),
    )
    return Call(
        "POST",
        "/api/products/Create",
        _parser(m.CreateProductResult),
        body=_body(request),
        # Keyed so a retry never queues a second publish.
        idempotency_key=idempotency_key or new_idempotency_key(),
    )


# ------------------------------------------------------------------------------------------------- marketplaces, jobs


def list_marketplaces() -> Call[list[m.Marketplace]]:
    return Call("GET", "/api/marketplaces", lambda body: m.MarketplaceList.model_validate(body).Marketplaces, safe=True)


def get_job(job_id: str) -> Call[m.Job]:
    return Call("GET", _path("/api/jobs/{id}", id=job_id), _parser(m.Job), safe=True)


# ------------------------------------------------------------------------------------------------- webhooks


def create_webhook(
    url: str, event_types: Sequence[str], *, idempotency_key: str | None = None
) -> Call[m.SubscriptionCreated]:
    request = m.CreateSubscriptionRequest(Url=url, EventTypes=list(event_types))
    return Call(
        "POST",
        "/api/webhooks/Create",
        _parser(m.SubscriptionCreated),
        body=_body(request),
        # Keyed so a retry never creates a second subscription; its replay carries no Secret (and a warning).
        idempotency_key=idempotency_key or new_idempotency_key(),
    )


def list_webhooks() -> Call[list[m.Subscription]]:
    return Call(
        "POST",
        "/api/webhooks/List",
        lambda body: m.SubscriptionList.model_validate(body).Subscriptions,
        safe=True,
    )


def delete_webhook(subscription_id: str) -> Call[m.DeleteSubscriptionResult]:
    request = m.DeleteSubscriptionRequest(SubscriptionId=subscription_id)
    return Call("POST", "/api/webhooks/Delete", _parser(m.DeleteSubscriptionResult), body=_body(request))


def send_test_webhook(subscription_id: str, event_type: str | None = None) -> Call[m.SentTestEvent]:
    request = m.SendTestEventRequest(**_given(SubscriptionId=subscription_id, EventType=event_type))
    # Not marked safe: a repeat sends a second test event (harmless, but not what was asked).
    return Call("POST", "/api/webhooks/Test", _parser(m.SentTestEvent), body=_body(request))
