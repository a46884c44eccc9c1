"""The OpenAPI 3.1 document, assembled once from the routes and the tables below (docs/decisions/0225-0229).

FastAPI derives paths, parameters and schemas from the routes; this module adds what a route cannot say about
itself: a readable operationId and tag per operation (OPERATIONS), component names without the code's `In`/`Out`
suffixes (SCHEMA_NAMES), request bodies documented by hand promoted to named components, the response headers
every answer carries, the Idempotency-Key header, the problem responses each operation can really give, one
example per operation, `servers`, tag descriptions and the `webhooks` section (marketsync.webhooks.payloads).
A test fails when a route is missing from OPERATIONS, so a new endpoint cannot be left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from marketsync.catalog.taxonomy import AttributeType
from marketsync.http.errors import TOKEN_PATH
from marketsync.http.openapi_examples import EXAMPLES, REQUEST_EXAMPLES
from marketsync.inventory.rules import PUSH_OUTCOMES
from marketsync.jobs.types import JobStatus
from marketsync.orders.rules import ORDER_STATUSES, CancelReason, RefundReason
from marketsync.webhooks.payloads import openapi_webhooks

Schema = dict[str, Any]

DESCRIPTION = """\
A server-to-server REST API over one merchant account's orders, catalogue (SKUs and their marketplace listings)
and marketplace connections.

- **Authentication**: OAuth 2.0 client credentials. Exchange `client_id` and `client_secret` at `POST /connect/token`
  (form-encoded) for a bearer token carrying the scopes you ask for; send it as `Authorization: Bearer <token>`.
- **Bodies** are JSON (`Content-Type: application/json`); field names are case-exact. Errors are RFC 9457 problem
  details (`application/problem+json`) whose `errors` map names every bad field.
- **Money** is a JSON number (exact to the cent for order amounts, to 4 decimals for prices); timestamps are ISO 8601
  UTC.
- **Rate limit**: one budget per credential; every answer carries `RateLimit` and `RateLimit-Policy`, a 429
  carries `Retry-After`.
- **Retries**: the order writes, the price and stock push and the creates accept an `Idempotency-Key`; a repeat
  with the same key and body replays the stored answer (`Idempotent-Replayed: true`) instead of acting twice.
- **Webhooks**: signed outbound POSTs, described in the `webhooks` section of this document.
"""

TAGS: list[Schema] = [
    {"name": "Token", "description": "OAuth 2.0 client-credentials tokens (no user, browser or redirect)."},
    {
        "name": "Orders",
        "description": "Orders pulled from P1 and P2: keyset-paged reads (OrdersRead) and batch writes "
        "(OrdersWrite). Write-back reaches the marketplace only for P1; otherwise `Warnings` says so.",
    },
    {
        "name": "Inventory",
        "description": "The price and stock push (InventoryWrite): 1 to 500 SKUs, applied before the answer, "
        "marketplace writes queued as jobs.",
    },
    {
        "name": "Products",
        "description": "The catalogue: SKUs, stock and their listings (reads: InventoryRead), and product create, "
        "validated against a category's attribute schema (InventoryWrite).",
    },
    {
        "name": "Product types",
        "description": "Marketplace categories (leaf only) and their attribute schemas, per marketplace connection "
        "(InventoryRead).",
    },
    {"name": "Marketplaces", "description": "Active marketplace connections and their health (MarketplacesRead)."},
    {"name": "Jobs", "description": "Asynchronous work reaching a marketplace, followed by id (InventoryRead)."},
    {
        "name": "Webhooks",
        "description": "Subscriptions to the signed outbound events of the `webhooks` section (WebhooksWrite).",
    },
]


@dataclass(frozen=True)
class Operation:
    operation_id: str
    tag: str
    idempotent: bool = False  # accepts an Idempotency-Key
    not_found: bool = False  # can answer 404 (an unknown id in the path, the query or the body)
    conflict: str | None = None  # a 409 the operation itself can answer, beside the idempotency one


_AMBIGUOUS = "Several products differ only in the case of this SKU and none matches exactly (code `conflict`)."

OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/connect/token"): Operation("GetToken", "Token"),
    ("POST", "/api/orders/List"): Operation("ListOrders", "Orders"),
    ("GET", "/api/orders/{order_id}"): Operation("GetOrder", "Orders", not_found=True),
    ("POST", "/api/orders/Confirm"): Operation("ConfirmOrders", "Orders", idempotent=True),
    ("POST", "/api/orders/Cancel"): Operation("CancelOrders", "Orders", idempotent=True),
    ("POST", "/api/orders/Refund"): Operation("RefundOrders", "Orders", idempotent=True),
    ("POST", "/api/orders/Update"): Operation("UpdateOrder", "Orders", not_found=True, idempotent=True),
    ("POST", "/api/inventory/price-quantity"): Operation("PushPriceQuantity", "Inventory", idempotent=True),
    ("POST", "/api/products/List"): Operation("ListProducts", "Products"),
    ("GET", "/api/products/{sku}"): Operation("GetProduct", "Products", not_found=True, conflict=_AMBIGUOUS),
    ("POST", "/api/products/Create"): Operation("CreateProduct", "Products", not_found=True, idempotent=True),
    ("POST", "/api/product-types/Search"): Operation("SearchProductTypes", "Product types", not_found=True),
    ("GET", "/api/product-types/Schema"): Operation("GetProductTypeSchema", "Product types", not_found=True),
    ("GET", "/api/marketplaces"): Operation("ListMarketplaces", "Marketplaces"),
    ("GET", "/api/jobs/{id}"): Operation("GetJob", "Jobs", not_found=True),
    ("POST", "/api/webhooks/Create"): Operation("CreateWebhook", "Webhooks", idempotent=True),
    ("POST", "/api/webhooks/List"): Operation("ListWebhooks", "Webhooks"),
    ("POST", "/api/webhooks/Delete"): Operation("DeleteWebhook", "Webhooks", not_found=True),
    ("POST", "/api/webhooks/Test"): Operation(
        "SendTestWebhook", "Webhooks", not_found=True, conflict="The subscription is disabled: replace it first."
    ),
}

# The code's model names (suffixed In/Out to tell request from response models apart) -> the names a generated
# client shows. They match the SDK's model names where the SDK has one.
SCHEMA_NAMES = {
    "TokenResponse": "Token",
    "TokenErrorResponse": "TokenError",
    "AddressOut": "Address",
    "ShippingAddressOut": "ShippingAddress",
    "CustomerOut": "Customer",
    "OrderItemOut": "OrderItem",
    "ShipmentOut": "Shipment",
    "RefundItemOut": "OrderRefundItem",
    "RefundOut": "OrderRefund",
    "OrderOut": "Order",
    "OrderListOut": "OrderPage",
    "ItemResultOut": "OrderItemResult",
    "RefundResultOut": "RefundResult",
    "WriteOut": "OrderWriteResult",
    "RefundWriteOut": "RefundWriteResult",
    "UpdateOut": "UpdateOrderResult",
    "UpdateRequest": "UpdateOrderRequest",
    "PushIn": "PushRequest",
    "PushItemIn": "PushItem",
    "PushOut": "PushResult",
    "PushResultOut": "PushResultLine",
    "ListingOut": "Listing",
    "ProductListIn": "ListProductsRequest",
    "ProductEntryOut": "ProductSummary",
    "ProductsOut": "ProductPage",
    "ProductOut": "Product",
    "ProductEnvelopeOut": "ProductEnvelope",
    "SearchIn": "SearchProductTypesRequest",
    "ProductTypeOut": "ProductType",
    "SearchOut": "ProductTypePage",
    "AllowedValueOut": "AllowedValue",
    "AttributeOut": "Attribute",
    "SchemaOut": "ProductTypeSchema",
    "CreateProductIn": "CreateProductRequest",
    "CreateProductOut": "CreateProductResult",
    "LastPullOut": "LastPull",
    "MarketplaceOut": "Marketplace",
    "MarketplacesOut": "MarketplaceList",
    "JobOut": "Job",
    "CreateSubscriptionIn": "CreateSubscriptionRequest",
    "CreateSubscriptionOut": "SubscriptionCreated",
    "SubscriptionOut": "Subscription",
    "SubscriptionWithSecretOut": "NewSubscription",
    "SubscriptionsOut": "SubscriptionList",
    "DeleteSubscriptionIn": "DeleteSubscriptionRequest",
    "DeleteSubscriptionOut": "DeleteSubscriptionResult",
    "SendTestEventIn": "SendTestEventRequest",
    "SendTestEventOut": "SentTestEvent",
}

# What some response models type as a plain `str` (they are built from rows), said precisely: closed sets the spec
# fixes, taken from the code's own constants, and timestamps. Open sets stay open (Job.Type, EventTypes: the spec
# lets kinds and events be added, and a generated client refuses an enum value it does not know).
_TIMESTAMP: Schema = {"format": "date-time"}
REFINEMENTS: dict[tuple[str, str], Schema] = {
    ("Job", "Status"): {"enum": [status.value for status in JobStatus]},
    ("Job", "StartedAt"): _TIMESTAMP,
    ("PushResultLine", "Result"): {"enum": list(PUSH_OUTCOMES)},
    ("CreateProductResult", "ListingAction"): {"enum": ["Create", "Revise"]},  # listings.service.create_product
    ("Attribute", "Type"): {"enum": list(get_args(AttributeType))},
    ("ProductSummary", "LastModifiedDate"): _TIMESTAMP,
    **{
        (schema, field): _TIMESTAMP
        for schema in ("Subscription", "NewSubscription")
        for field in ("DisabledDate", "LastSuccessDate", "CreatedDate")
    },
}


def _refine(schemas: Schema) -> None:
    for (name, field), extra in REFINEMENTS.items():
        prop = schemas[name]["properties"][field]
        targets = [b for b in prop.get("anyOf", ()) if b.get("type") == "string"] if "anyOf" in prop else [prop]
        assert targets, (name, field)  # a refinement that no longer applies is a bug, not a no-op
        for target in targets:
            target.update(extra)


# Closed sets used in several places become one named component each, so a generated client has one `OrderStatus`
# enum instead of one per field (`OrderItemStatus`, `OrderItemResultStatus`, `ListOrdersRequest...Item`, ...).
NAMED_ENUMS: dict[str, list[str]] = {
    "OrderStatus": list(ORDER_STATUSES),
    "CancelReason": list(get_args(CancelReason)),
    "RefundReason": list(get_args(RefundReason)),
}


def _name_enums(node: Any) -> Any:
    if isinstance(node, list):
        return [_name_enums(value) for value in node]
    if not isinstance(node, dict):
        return node
    for name, values in NAMED_ENUMS.items():
        if node.get("type") == "string" and node.get("enum") == values:
            extra = {key: value for key, value in node.items() if key not in ("type", "enum", "title")}
            return {"$ref": f"#/components/schemas/{name}", **extra}
    return {key: _name_enums(value) for key, value in node.items()}


PROBLEM_SCHEMA: Schema = {
    "type": "object",
    "description": "RFC 9457 problem details.",
    "required": ["type", "title", "status", "code", "requestId", "errors"],
    "properties": {
        "type": {"type": "string", "description": "`urn:service:error:<code>`."},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "code": {"type": "string", "description": "e.g. `validation-failed`, `conflict`, `rate-limited`."},
        "requestId": {"type": "string"},
        "errors": {
            "type": "object",
            "description": "Field key (e.g. `Items[3].Price`, `Attributes.color`) to its messages.",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
    },
    "example": {
        "type": "urn:service:error:validation-failed",
        "title": "One or more fields are invalid.",
        "status": 400,
        "code": "validation-failed",
        "requestId": "01JD2Q6S8T5V7W9X0Y1Z2A3B4C",
        "errors": {"OrderItems[0].OrderItemId": ["No such order item."]},
    },
}

HEADERS: Schema = {
    "X-Request-Id": {
        "description": "The request's id, also in problem details (`requestId`) and in write answers (`RequestId`).",
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'Remaining budget of the named policy: `"credential";r=<remaining>;t=<seconds to reset>` '
        "(draft-ietf-httpapi-ratelimit-headers).",
        "schema": {"type": "string"},
    },
    "RateLimit-Policy": {
        "description": 'The policy: `"credential";q=<requests>;w=<window seconds>`.',
        "schema": {"type": "string"},
    },
    "Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer", "minimum": 1}},
    "Cache-Control": {
        "description": "`no-store`: answers are per account (orders carry customer data); no cache may keep them.",
        "schema": {"type": "string", "enum": ["no-store"]},
    },
    "WWW-Authenticate": {
        "description": 'The challenge: `Bearer realm="marketsync"`, with `error` when a bearer token was sent '
        "(RFC 6750 section 3.1) and, on a 403, the `scope` needed; at the token endpoint a `Basic` challenge.",
        "schema": {"type": "string"},
    },
    "Idempotent-Replayed": {
        "description": "`true` when this is the stored answer to an earlier request with the same "
        "Idempotency-Key and body; absent otherwise.",
        "schema": {"type": "string", "enum": ["true"]},
    },
}

IDEMPOTENCY_KEY: Schema = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Makes a retry safe: a repeat with the same key and body within 24 hours replays the stored "
    "answer (header `Idempotent-Replayed: true`) instead of acting twice; the same key with another body is a 422, "
    "while the first is still running a 409. Strongly advised on refunds. A key that is not 1 to 255 printable "
    "characters is a 400 naming `Idempotency-Key` beside every other bad field of the request; nothing is applied.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
}


def _ref_header(name: str) -> Schema:
    return {"$ref": f"#/components/headers/{name}"}


def _problem(description: str, *headers: str) -> Schema:
    response: Schema = {
        "description": description,
        "headers": {name: _ref_header(name) for name in ("X-Request-Id", *headers)},
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }
    return response


def _token_errors() -> dict[str, Schema]:
    """What refuses a token request outside its own checks, in the endpoint's RFC 6749 section 5.2 shape."""

    def error(description: str, *headers: str) -> Schema:
        return {
            "description": description,
            "headers": {name: _ref_header(name) for name in ("X-Request-Id", *headers)},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TokenError"}}},
        }

    return {
        "413": error("The request body exceeds MARKETSYNC_MAX_BODY_BYTES (error `invalid_request`)."),
        "500": error("An unexpected error (error `server_error`)."),
        "503": error(
            "The database is unreachable for a moment; retry after `Retry-After` (error `temporarily_unavailable`).",
            "Retry-After",
        ),
    }


def _problems(operation: Operation, *, api: bool, has_body: bool) -> dict[str, Schema]:
    """The problem answers the operation can give (http/errors.py, http/middleware.py, http/idempotency.py)."""
    problems: dict[str, Schema] = {}
    rate = ("RateLimit", "RateLimit-Policy")
    if api:
        problems["400"] = _problem("Validation failed: `errors` names every bad field.", *rate)
        problems["401"] = _problem("Missing, invalid or expired bearer token (`WWW-Authenticate` says which).")
        problems["403"] = _problem("The token lacks the scope this operation needs.", *rate)
        if operation.not_found:
            problems["404"] = _problem("Unknown id, or one of another account.", *rate)
    conflicts = [operation.conflict] if operation.conflict else []
    if operation.idempotent:
        conflicts.append("A request with this Idempotency-Key is still running (code `idempotency-in-flight`).")
    if conflicts:
        problems["409"] = _problem(" Or: ".join(conflicts), *rate)
    if has_body:
        problems["413"] = _problem("The request body exceeds MARKETSYNC_MAX_BODY_BYTES (code `payload-too-large`).")
        if api:
            problems["415"] = _problem("The body is not `application/json` (code `unsupported-media-type`).")
    if operation.idempotent:
        problems["422"] = _problem(
            "This Idempotency-Key was used with another body (code `idempotency-key-reused`).", *rate
        )
    if api:
        problems["429"] = _problem("Rate limited: wait `Retry-After` seconds.", "Retry-After", *rate)
    problems["500"] = _problem("An unexpected error; nothing is half-applied (code `internal-error`).")
    problems["503"] = _problem("The database is unreachable for a moment; retry after `Retry-After`.", "Retry-After")
    return problems


def _rename_refs(node: Any, names: dict[str, str]) -> Any:
    if isinstance(node, dict):
        renamed = {key: _rename_refs(value, names) for key, value in node.items()}
        ref = renamed.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            name = ref.removeprefix("#/components/schemas/")
            renamed["$ref"] = "#/components/schemas/" + names.get(name, name)
        return renamed
    if isinstance(node, list):
        return [_rename_refs(value, names) for value in node]
    return node


def _hoist(node: Any, schemas: Schema) -> Any:
    """Named objects inlined in hand-written request bodies become components (a generated client then names
    them `ConfirmRequest`, `RefundItem`, ... instead of `BodyApiOrdersConfirmPost`)."""
    if isinstance(node, list):
        return [_hoist(value, schemas) for value in node]
    if not isinstance(node, dict):
        return node
    hoisted = {key: _hoist(value, schemas) for key, value in node.items()}
    title = hoisted.get("title")
    if isinstance(title, str) and "properties" in hoisted:
        name = SCHEMA_NAMES.get(title, title)
        hoisted["title"] = name  # generators name their classes after the title
        if schemas.get(name, hoisted) == hoisted:
            schemas[name] = hoisted
            return {"$ref": f"#/components/schemas/{name}"}
    return hoisted


def _drop_derived_titles(node: Any) -> Any:
    """Drop the titles pydantic derives from property names (`CancelReason` -> "Cancelreason"): generators name
    nested classes after them (`CancelRequestCancelreason`); without one they use the property's own name."""
    if isinstance(node, list):
        return [_drop_derived_titles(value) for value in node]
    if not isinstance(node, dict):
        return node
    result = {key: _drop_derived_titles(value) for key, value in node.items()}
    properties = result.get("properties")
    if isinstance(properties, dict):
        for name, schema in properties.items():
            if isinstance(schema, dict) and schema.get("title") == name.replace("_", " ").title():
                del schema["title"]
    return result


def build(app: FastAPI, routes: list[APIRoute], servers: list[Schema]) -> Schema:
    document = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=DESCRIPTION,
        routes=app.routes,
        tags=TAGS,
        servers=servers,
    )
    components = document.setdefault("components", {})
    schemas: Schema = components.setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    document = _rename_refs(document, SCHEMA_NAMES)
    components = document["components"]
    components["schemas"] = schemas = {SCHEMA_NAMES.get(k, k): v for k, v in components["schemas"].items()}
    for name, schema in schemas.items():
        schema["title"] = name
    _refine(schemas)
    schemas["Problem"] = PROBLEM_SCHEMA
    document["webhooks"] = openapi_webhooks(schemas)
    components["headers"] = HEADERS
    components["parameters"] = {"IdempotencyKey": IDEMPOTENCY_KEY}

    api_paths = {(m, r.path_format) for r in routes for m in (r.methods or ())}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            key = (method.upper(), path)
            _refine_operation(operation, OPERATIONS[key], path, method, schemas, api=key in api_paths)
    document = _name_enums(_drop_derived_titles(document))
    for name, values in NAMED_ENUMS.items():
        document["components"]["schemas"][name] = {"type": "string", "enum": values, "title": name}
    return document  # type: ignore[no-any-return]


def _refine_operation(
    operation: Schema, spec: Operation, path: str, method: str, schemas: Schema, *, api: bool
) -> None:
    """One operation as integrators read it: its id and tag, its request body hoisted into a named schema with its
    example, the success response's headers and example, and every error response with its headers."""
    api = api and path.startswith("/api/")
    operation["operationId"] = spec.operation_id
    operation["tags"] = [spec.tag]
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)  # FastAPI's own: validation failures here are 400 problem details
    if operation.get("requestBody") is not None:
        operation["requestBody"] = _refine_request_body(operation["requestBody"], spec.operation_id, schemas)
    if spec.idempotent:
        operation.setdefault("parameters", []).append({"$ref": "#/components/parameters/IdempotencyKey"})
    success = responses["200"]
    success["description"] = success.get("description") or "OK"
    headers = ["X-Request-Id"] + (["RateLimit", "RateLimit-Policy"] if api else [])
    if spec.idempotent:
        headers.append("Idempotent-Replayed")
    success["headers"] = {name: _ref_header(name) for name in headers}
    success["content"]["application/json"]["example"] = EXAMPLES[spec.operation_id]
    # The body checks (size, media type) run in the middleware, before the route: every POST can meet them.
    token = path == TOKEN_PATH
    errors = _token_errors() if token else _problems(spec, api=api, has_body=method == "post")
    for status, problem in errors.items():
        responses.setdefault(status, problem)
    for status, response in responses.items():
        _response_headers(response.setdefault("headers", {}), status, api=api, token=token)


def _refine_request_body(body: Schema, operation_id: str, schemas: Schema) -> Schema:
    for media in body["content"].values():
        branches = media["schema"].get("anyOf", [])
        if len(branches) == 2 and {"type": "null"} in branches:
            # An optional body (`Model | None`): "no body" is what required=false says; a schema
            # allowing a literal null makes generators send their own "unset" marker as JSON.
            media["schema"] = next(b for b in branches if b != {"type": "null"})
            body["required"] = False
        if "properties" in media["schema"]:
            media["schema"].setdefault("title", f"{operation_id}Request")
    body = _hoist(body, schemas)
    request_example = REQUEST_EXAMPLES.get(operation_id)
    if request_example is not None:
        for media in body["content"].values():
            media["example"] = request_example
    return body


def _response_headers(headers: Schema, status: str, *, api: bool, token: bool) -> None:
    """Every answer under /api is `Cache-Control: no-store` (middleware), and every answer of the token endpoint
    (errors.TOKEN_NO_STORE). 401 and 403 carry the challenge (Bearer under /api, Basic at the token endpoint)."""
    headers.setdefault("X-Request-Id", _ref_header("X-Request-Id"))
    if api or token:
        headers["Cache-Control"] = _ref_header("Cache-Control")
    if status in ("401", "403") and (api or status == "401"):
        headers["WWW-Authenticate"] = _ref_header("WWW-Authenticate")
    if status == "429":
        headers["Retry-After"] = _ref_header("Retry-After")


# ---------------------------------------------------------------- /docs, with no request leaving the service

DOCS_ASSETS_URL = "/docs/assets"
_DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"
# The online validator badge would send the document to a third party; nothing on the page leaves the host.
_SWAGGER_UI_PARAMETERS = {"validatorUrl": None, "defaultModelsExpandDepth": 0, "persistAuthorization": False}


def install_docs(app: FastAPI) -> None:
    """Swagger UI at /docs with its assets served by the service from a package (fastapi-offline ships Swagger UI
    5, which reads OpenAPI 3.1): the page works with no internet and references only this origin."""
    app.mount(DOCS_ASSETS_URL, StaticFiles(directory=_DOCS_ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} API",
            swagger_js_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS_URL}/favicon.png",
            swagger_ui_parameters=_SWAGGER_UI_PARAMETERS,
        )
