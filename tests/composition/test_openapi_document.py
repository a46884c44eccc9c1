"""What a generator and a reader of /openapi.json see: named operations and schemas, documented headers and
problems, an example per operation that matches its own schema, and the `webhooks` section of spec section 6."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

from marketsync.app import api_routes
from marketsync.catalog.listings import rules as catalog_rules
from marketsync.inventory import rules as inventory_rules
from marketsync.inventory.rules import PUSH_OUTCOMES
from marketsync.jobs.types import JobStatus
from marketsync.openapi import OPERATIONS, TAGS
from marketsync.orders.rules import ORDER_STATUSES
from marketsync.runtime import Runtime
from marketsync.webhooks import rules
from marketsync.webhooks.outbox import EVENT_TYPES
from marketsync.webhooks.rules import (
    HEADER_ATTEMPT,
    HEADER_DELIVERY_ID,
    HEADER_EVENT,
    HEADER_SIGNATURE,
    HEADER_TEST,
    HEADER_TIMESTAMP,
)
from tests.support.openapi import problems

IDEMPOTENT = {
    "ConfirmOrders",
    "CancelOrders",
    "RefundOrders",
    "UpdateOrder",
    "CreateProduct",
    "CreateWebhook",
    "PushPriceQuantity",
}
# Where an unknown id is a 404 (orders writes name unknown items in a 400 instead; lists and the push never 404).
NOT_FOUND = {
    "GetOrder",
    "UpdateOrder",
    "GetProduct",
    "CreateProduct",
    "SearchProductTypes",
    "GetProductTypeSchema",
    "GetJob",
    "DeleteWebhook",
    "SendTestWebhook",
}


async def document_of(api: httpx.AsyncClient) -> dict[str, Any]:
    response = await api.get("/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]


async def test_the_document_is_valid_openapi_3_1(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await document_of(api)
    validate(document)  # the OpenAPI 3.1 meta-schema (openapi-spec-validator): raises on any violation
    broken = copy.deepcopy(document)
    broken["paths"]["/api/marketplaces"]["get"]["responses"]["200"] = {"content": {}}  # no description
    with pytest.raises(OpenAPIValidationError):
        validate(broken)


async def test_every_operation_is_named_tagged_and_has_an_example(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await document_of(api)
    assert document["openapi"].startswith("3.1")
    assert document["info"]["description"] and document["servers"]
    routes = {(m, r.path_format) for r in api_routes() for m in r.methods or ()}
    assert {(m, p) for m, p, _ in operations(document)} == routes == set(OPERATIONS)
    tags = {tag["name"] for tag in document["tags"]}
    assert all(tag["description"] for tag in document["tags"]) and tags == {tag["name"] for tag in TAGS}
    ids = [operation["operationId"] for _, _, operation in operations(document)]
    assert len(set(ids)) == len(ids)
    for method, path, operation in operations(document):
        assert operation["operationId"] == OPERATIONS[(method, path)].operation_id
        assert operation["operationId"].isalnum() and operation["operationId"][0].isupper(), operation["operationId"]
        assert operation["tags"] == [OPERATIONS[(method, path)].tag] and operation["tags"][0] in tags
        success = operation["responses"]["200"]["content"]["application/json"]
        # The example is what the operation answers: it matches the (closed) schema of its 200.
        assert problems(document, success["schema"], success["example"]) == [], operation["operationId"]
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            assert "example" in body, operation["operationId"]
            assert problems(document, body["schema"], body["example"]) == [], operation["operationId"]
    # Product create belongs with the products, not with the product types it is validated against.
    assert document["paths"]["/api/products/Create"]["post"]["tags"] == ["Products"]


async def test_schema_names_carry_no_in_out_noise(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await document_of(api)
    names = set(document["components"]["schemas"])
    assert not [name for name in names if name.endswith(("In", "Out")) or name.startswith("Body_")]
    assert {"Order", "OrderPage", "PushRequest", "PushResult", "Product", "Job", "Subscription"} <= names
    # Request bodies are named components too (a generated client names its classes after them).
    for method, path, operation in operations(document):
        content = operation.get("requestBody", {}).get("content", {})
        if "application/json" in content:
            assert "$ref" in content["application/json"]["schema"], (method, path)


async def test_money_is_documented_as_the_numbers_the_service_writes(rt: Runtime, api: httpx.AsyncClient) -> None:
    schemas = (await document_of(api))["components"]["schemas"]
    money = {
        "Order": ["ItemsTotal", "ShippingTotal", "TaxTotal", "OrderTotal", "RefundedTotal"],
        "OrderItem": ["UnitPrice", "LineTotal", "RefundedAmount"],
        "OrderRefund": ["Amount"],
        "OrderRefundItem": ["Amount"],
        "RefundResult": ["Amount"],
        "RefundItem": ["Amount"],
    }
    for schema, fields in money.items():
        for name in fields:
            assert schemas[schema]["properties"][name]["type"] == "number", (schema, name)
    # Closed sets the spec fixes are enums, from the code's constants; timestamps carry their format.
    assert schemas["Job"]["properties"]["Status"]["enum"] == [status.value for status in JobStatus]
    assert schemas["PushResultLine"]["properties"]["Result"]["enum"] == list(PUSH_OUTCOMES)
    assert "enum" not in schemas["Job"]["properties"]["Type"]  # kinds may be added: an open set
    # One named enum per closed set used in several places, referenced everywhere it is used.
    assert schemas["OrderStatus"]["enum"] == list(ORDER_STATUSES)
    assert json.dumps(schemas).count(json.dumps(list(ORDER_STATUSES))) == 1
    price = schemas["PushItem"]["properties"]["Price"]
    assert {"type": "number"} in price["anyOf"] and all(b.get("type") != "string" for b in price["anyOf"])


async def test_a_job_always_has_its_started_at(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Spec section 2, Job: StartedAt is a timestamp; only ProgressDone and ProgressTotal may be null."""
    job = (await document_of(api))["components"]["schemas"]["Job"]
    started_at = job["properties"]["StartedAt"]
    assert (started_at["type"], started_at["format"]) == ("string", "date-time") and "anyOf" not in started_at
    assert "StartedAt" in job["required"]
    nullable = {name for name, value in job["properties"].items() if {"type": "null"} in value.get("anyOf", ())}
    assert nullable == {"ProgressDone", "ProgressTotal"}


async def test_order_statuses_in_responses_are_an_open_set(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Spec section 3: "Full list of order statuses: not shown". A response's Status is a string whose description
    names the known values, never an enum: a generated client would refuse a whole order carrying a status it has not
    seen. The List filter stays closed (the service refuses a value it does not know)."""
    document = await document_of(api)
    schemas = document["components"]["schemas"]
    for schema, field in (("Order", "Status"), ("OrderItem", "Status"), ("OrderItemResult", "Status")):
        status = schemas[schema]["properties"][field]
        assert status["type"] == "string" and "enum" not in status and "$ref" not in status, schema
        assert all(known in status["description"] for known in ORDER_STATUSES), schema
    request = schemas["ListOrdersRequest"]["properties"]["OrderStatuses"]
    assert {"$ref": "#/components/schemas/OrderStatus"} in [
        branch.get("items") for branch in request.get("anyOf", [request])
    ]
    # Nothing a response carries refers to the closed set.
    answered = json.dumps(
        [
            answer["content"]["application/json"]["schema"]
            for _, _, operation in operations(document)
            for answer in operation["responses"].values()
            if "application/json" in answer.get("content", {})
        ]
    )
    reachable = set(re.findall(r"#/components/schemas/(\w+)", answered))
    seen: set[str] = set()
    while reachable - seen:
        name = (reachable - seen).pop()
        seen.add(name)
        reachable |= set(re.findall(r"#/components/schemas/(\w+)", json.dumps(schemas[name])))
    assert "OrderStatus" not in seen


async def test_headers_and_problems_are_documented_where_they_happen(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await document_of(api)
    assert set(document["components"]["headers"]) == {
        "X-Request-Id",
        "RateLimit",
        "RateLimit-Policy",
        "Retry-After",
        "Idempotent-Replayed",
        "Cache-Control",
        "WWW-Authenticate",
    }
    for method, path, operation in operations(document):
        name = operation["operationId"]
        responses = operation["responses"]
        parameters = operation.get("parameters", [])
        idempotent = {"$ref": "#/components/parameters/IdempotencyKey"} in parameters
        assert idempotent == (name in IDEMPOTENT), name
        assert ("422" in responses) == idempotent, name  # a reused key; validation failures are 400s
        assert ("404" in responses) == (name in NOT_FOUND), name
        own_conflict = name in ("GetProduct", "SendTestWebhook")  # ambiguous SKU case; a disabled subscription
        assert "409" in responses if idempotent or own_conflict else "409" not in responses, name
        assert ("413" in responses) == (method == "POST"), name
        assert ("415" in responses) == (method == "POST" and path.startswith("/api/")), name
        assert "500" in responses and "503" in responses, name
        success_headers = set(responses["200"]["headers"])
        assert "X-Request-Id" in success_headers
        if path.startswith("/api/"):
            assert {"RateLimit", "RateLimit-Policy"} <= success_headers, name
            assert "Retry-After" in responses["429"]["headers"], name
        assert ("Idempotent-Replayed" in success_headers) == idempotent, name
        assert "Cache-Control" in success_headers and "WWW-Authenticate" in responses["401"]["headers"], name
        for status, response in responses.items():
            if status != "200" and "content" in response:
                assert "X-Request-Id" in response.get("headers", {}), (name, status)
            if path == "/connect/token" and status != "200":  # RFC 6749 section 5.2, whatever refused it
                assert set(response["content"]) == {"application/json"}, (name, status)
                assert response["content"]["application/json"]["schema"]["$ref"].endswith("/TokenError")
                assert "Cache-Control" in response["headers"], (name, status)
            elif status in ("409", "413", "415", "422", "500", "503") or (status.startswith("4") and "/api/" in path):
                assert "application/problem+json" in response["content"], (name, status)
    key = document["components"]["parameters"]["IdempotencyKey"]
    assert key["in"] == "header" and key["name"] == "Idempotency-Key" and key["required"] is False


async def test_the_six_events_are_in_the_webhooks_section(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await document_of(api)
    assert set(document["webhooks"]) == set(EVENT_TYPES) and len(EVENT_TYPES) == 6
    for event, item in document["webhooks"].items():
        operation = item["post"]
        headers = {p["name"]: p for p in operation["parameters"] if p["in"] == "header"}
        required = {HEADER_SIGNATURE, HEADER_TIMESTAMP, HEADER_EVENT, HEADER_DELIVERY_ID, HEADER_ATTEMPT}
        assert set(headers) == {*required, HEADER_TEST}
        assert {name for name, header in headers.items() if header["required"]} == required
        # A test event's marker: the header on its deliveries only, the payload field absent from real events.
        assert headers[HEADER_TEST]["schema"] == {"type": "string", "const": "true"}
        assert headers[HEADER_EVENT]["schema"]["const"] == event
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        payload = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        assert payload["additionalProperties"] is False, event
        example = operation["requestBody"]["content"]["application/json"]["example"]
        assert problems(document, schema, example) == [], event
        marker = rules.marker_field(event)
        assert marker not in example and marker not in payload["required"], event
        assert payload["properties"][marker] == {**payload["properties"][marker], "type": "boolean", "const": True}
        assert problems(document, schema, rules.payload_of_test_event(event, datetime.now(UTC))) == [], event
    inventory = document["components"]["schemas"]["InventoryChanged"]
    assert set(inventory["required"]) == {"occurredAt", "source", "changed", "truncated", "totalChanged"}


async def test_docs_page_works_offline_from_same_origin_assets(rt: Runtime, api: httpx.AsyncClient) -> None:
    page = await api.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    # No absolute or protocol-relative URL at all: every asset is fetched from the service itself.
    assert re.search(r"(?:https?:)?//", html) is None, html
    references = re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)
    expected = {
        "/docs/assets/swagger-ui-bundle.js": "javascript",
        "/docs/assets/swagger-ui.css": "text/css",
        "/docs/assets/favicon.png": "image/png",
        "/openapi.json": "application/json",
    }
    assert set(references) == set(expected)
    for reference, media_type in expected.items():
        asset = await api.get(reference)
        assert asset.status_code == 200, reference
        assert media_type in asset.headers["content-type"], (reference, asset.headers["content-type"])
    bundle = (await api.get("/docs/assets/swagger-ui-bundle.js")).text
    assert "SwaggerUIBundle" in bundle and len(bundle) > 500_000  # the real bundle, not a stub
    assert '"validatorUrl": null' in html  # the online validator badge would send the document elsewhere


def _allows_null(schema: dict[str, Any]) -> bool:
    return (
        schema.get("type") == "null"
        or "null" in (schema.get("type") or [])
        or any(_allows_null(branch) for branch in schema.get("anyOf", []))
    )


# Spec §2's field tables: the fields typed "or null" there, and those typed without it (a generated client makes
# every nullable field Optional, so a field documented nullable the spec never sends as null costs each caller a
# needless check, and one documented non-null that can be null breaks the caller).
SPEC_NULLABLE = {
    "Listing": {"Platform": False, "Country": False, "ListingId": False, "ExternalSku": False, "ListingUrl": False},
    "ProductSummary": {"Sku": False, "Quantity": False, "LastModifiedDate": False, "Listings": False},
    "Marketplace": {"MarketplaceId": False, "HealthStatus": True, "HealthStatusMessage": False, "IsHealthy": False},
    "Job": {"JobId": False, "Status": False, "ProgressDone": True, "ProgressTotal": True, "RecoveryCount": False},
    "Subscription": {
        "SubscriptionId": False,
        "Url": False,
        "IsActive": False,
        "ConsecutiveFailures": False,
        "DisabledDate": True,
        "DisabledReason": True,
        "LastSuccessDate": True,
        "CreatedDate": False,
    },
    "NewSubscription": {"CreatedDate": False, "Secret": False},
    "CreateProductResult": {"Sku": False, "ListingAction": False, "ExistingListingId": True},
}


async def test_nullable_fields_are_those_the_spec_types_or_null(rt: Runtime, api: httpx.AsyncClient) -> None:
    schemas = (await document_of(api))["components"]["schemas"]
    documented = {
        schema: {field: _allows_null(schemas[schema]["properties"][field]) for field in fields}
        for schema, fields in SPEC_NULLABLE.items()
    }
    assert documented == SPEC_NULLABLE
    for schema, fields in SPEC_NULLABLE.items():
        assert set(fields) <= set(schemas[schema]["required"]), schema


async def test_the_limits_the_service_enforces_are_in_the_document(rt: Runtime, api: httpx.AsyncClient) -> None:
    # A generated client or a request validator learns the push's and create's bounds from the document, not from
    # a 400 in production (spec §8 and the bounds of decisions 0025 and 0081).
    schemas = (await document_of(api))["components"]["schemas"]

    def bounds(schema: str, field: str) -> dict[str, Any]:
        prop = schemas[schema]["properties"][field]
        found = {k: v for k, v in prop.items() if k in ("minimum", "maximum", "minLength", "maxLength")}
        for branch in prop.get("anyOf", []):
            found |= {k: v for k, v in branch.items() if k in ("minimum", "maximum", "minLength", "maxLength")}
        return found

    sku = {"minLength": 1, "maxLength": inventory_rules.MAX_SKU_LENGTH}
    quantity = {"minimum": 0, "maximum": inventory_rules.MAX_QUANTITY}
    assert bounds("PushItem", "Sku") == sku
    assert bounds("PushItem", "Quantity") == quantity
    assert bounds("PushItem", "Price") == {"minimum": 0, "maximum": float(inventory_rules.MAX_PRICE)}
    assert bounds("CreateProductRequest", "Sku") == {"minLength": 1, "maxLength": catalog_rules.MAX_SKU_LENGTH}
    assert bounds("CreateProductRequest", "Quantity") == {"minimum": 0, "maximum": catalog_rules.MAX_QUANTITY}
    assert bounds("PushRequest", "Items") == {}  # items bounds are minItems/maxItems
    assert (
        schemas["PushRequest"]["properties"]["Items"]["minItems"],
        schemas["PushRequest"]["properties"]["Items"]["maxItems"],
    ) == (1, inventory_rules.MAX_PUSH_ITEMS)
