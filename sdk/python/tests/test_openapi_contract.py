"""The SDK cannot drift from the service: its operations are exactly the OpenAPI document's, and each request
and response model has exactly the fields (and closed value sets) of the schema the document gives, at every
depth. Schemas are found through each operation, not by component name, so renaming a schema changes nothing."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator
from typing import Any

import httpx
from marketsync_client import AsyncClient, Client, webhooks
from marketsync_client import _operations as ops
from marketsync_client import models as m
from marketsync_client._core import token_form
from pydantic import BaseModel, TypeAdapter

from marketsync.app import api_routes
from marketsync.runtime import Runtime
from marketsync.webhooks import outbox

Schema = dict[str, Any]

# The model of each operation's JSON request body and 200 response body.
REQUESTS: dict[tuple[str, str], type[BaseModel]] = {
    ("POST", "/api/orders/List"): m.ListOrdersRequest,
    ("POST", "/api/orders/Confirm"): m.ConfirmRequest,
    ("POST", "/api/orders/Cancel"): m.CancelRequest,
    ("POST", "/api/orders/Refund"): m.RefundRequest,
    ("POST", "/api/orders/Update"): m.UpdateOrderRequest,
    ("POST", "/api/inventory/price-quantity"): m.PushRequest,
    ("POST", "/api/products/List"): m.ListProductsRequest,
    ("POST", "/api/product-types/Search"): m.SearchProductTypesRequest,
    ("POST", "/api/products/Create"): m.CreateProductRequest,
    ("POST", "/api/webhooks/Create"): m.CreateSubscriptionRequest,
    ("POST", "/api/webhooks/Delete"): m.DeleteSubscriptionRequest,
    ("POST", "/api/webhooks/Test"): m.SendTestEventRequest,
}
RESPONSES: dict[tuple[str, str], type[BaseModel]] = {
    ("POST", "/connect/token"): m.Token,
    ("POST", "/api/orders/List"): m.OrderPage,
    ("GET", "/api/orders/{order_id}"): m.Order,
    ("POST", "/api/orders/Confirm"): m.OrderWriteResult,
    ("POST", "/api/orders/Cancel"): m.OrderWriteResult,
    ("POST", "/api/orders/Refund"): m.RefundWriteResult,
    ("POST", "/api/orders/Update"): m.UpdateOrderResult,
    ("POST", "/api/inventory/price-quantity"): m.PushResult,
    ("POST", "/api/products/List"): m.ProductPage,
    ("GET", "/api/products/{sku}"): m.ProductEnvelope,
    ("POST", "/api/product-types/Search"): m.ProductTypePage,
    ("GET", "/api/product-types/Schema"): m.ProductTypeSchema,
    ("POST", "/api/products/Create"): m.CreateProductResult,
    ("GET", "/api/marketplaces"): m.MarketplaceList,
    ("GET", "/api/jobs/{id}"): m.Job,
    ("POST", "/api/webhooks/Create"): m.SubscriptionCreated,
    ("POST", "/api/webhooks/List"): m.SubscriptionList,
    ("POST", "/api/webhooks/Delete"): m.DeleteSubscriptionResult,
    ("POST", "/api/webhooks/Test"): m.SentTestEvent,
}

# Response fields the SDK types as `str` although the document closes their values (a value the service adds later
# must not make an older client refuse a whole response), each with the exported alias that names the values for
# callers' own type checks: the alias must be exactly the document's set.
CLOSED_SETS: dict[tuple[type[BaseModel], str], Any] = {
    (m.OrderItem, "CancelReason"): m.CancelReason,
    (m.OrderRefund, "Reason"): m.RefundReason,
    (m.PushResultLine, "Result"): m.PushOutcome,
    (m.Job, "Status"): m.JobStatus,
    (m.CreateProductResult, "ListingAction"): m.ListingAction,
    (m.Attribute, "Type"): m.AttributeType,
}


class Resolver:
    """$refs of the OpenAPI document (#/components/schemas/...) and of a model's own JSON schema (#/$defs/...)."""

    def __init__(self, document: Schema, defs: Schema | None = None) -> None:
        self.document = document
        self.defs = defs or {}

    def __call__(self, schema: Schema) -> Schema:
        while "$ref" in schema:
            ref: str = schema["$ref"]
            if ref.startswith("#/components/schemas/"):
                schema = self.document["components"]["schemas"][ref.rsplit("/", 1)[1]]
            else:
                schema = self.defs[ref.rsplit("/", 1)[1]]
        return schema

    def branches(self, schema: Schema) -> Iterator[Schema]:
        """The schema and, through anyOf/oneOf/allOf and array items, every schema it may stand for."""
        schema = self(schema)
        yield schema
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in schema.get(key, ()):
                yield from self.branches(branch)
        if "items" in schema:
            yield from self.branches(schema["items"])

    def objects(self, schema: Schema) -> list[Schema]:
        return [branch for branch in self.branches(schema) if "properties" in branch]

    def enum(self, schema: Schema) -> set[Any] | None:
        values = [set(branch["enum"]) for branch in self.branches(schema) if "enum" in branch]
        return set().union(*values) if values else None


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in typing.get_args(annotation) for model in nested_models(argument)]


def literal_values(annotation: Any) -> set[Any] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    found = [literal_values(argument) for argument in typing.get_args(annotation)]
    values = [v for v in found if v is not None]
    return set().union(*values) if values else None


def differences(
    model: type[BaseModel], schemas: list[Schema], resolve: Resolver, where: str, response: bool
) -> list[str]:
    """Where `model` and the object schema(s) it stands for disagree (several: the branches of a union)."""
    if not schemas:
        return [f"{where}: the document has no object schema here"]
    properties: dict[str, list[Schema]] = {}
    for schema in schemas:
        for name, value in schema["properties"].items():
            properties.setdefault(name, []).append(value)
    # A field is required by the document only if every branch requires it.
    required = set.intersection(*(set(schema.get("required", ())) for schema in schemas))
    fields = {info.alias or name: info for name, info in model.model_fields.items()}
    problems = []
    if set(fields) != set(properties):
        problems.append(
            f"{where} ({model.__name__}): only in the SDK {sorted(set(fields) - set(properties))}, "
            f"only in the service {sorted(set(properties) - set(fields))}"
        )
    for name, info in fields.items():
        if name not in properties:
            continue
        if response and info.is_required() and name not in required:
            problems.append(f"{where}.{name}: the SDK requires it, the document does not promise it")
        wanted = literal_values(info.annotation)
        allowed = set().union(*(resolve.enum(s) or set() for s in properties[name]))
        if wanted is not None:
            if wanted != allowed:
                problems.append(f"{where}.{name}: SDK values {sorted(wanted)}, service values {sorted(allowed)}")
        elif response and allowed and not nested_models(info.annotation):
            alias = CLOSED_SETS.get((model, name))
            named = set(typing.get_args(alias)) if alias is not None else None
            if named != allowed:
                problems.append(
                    f"{where}.{name}: the document closes it to {sorted(allowed)}, the SDK's alias names "
                    f"{sorted(named) if named is not None else 'nothing'}"
                )
        for nested in nested_models(info.annotation):
            objects = [o for schema in properties[name] for o in resolve.objects(schema)]
            problems += differences(nested, objects, resolve, f"{where}.{name}", response)
    return problems


def admits_none(annotation: Any) -> bool:
    return annotation is type(None) or any(admits_none(argument) for argument in typing.get_args(annotation))


def refused_nulls(model: type[BaseModel], schemas: list[Schema], resolve: Resolver, where: str) -> list[str]:
    """Request fields the SDK lets a caller set to None where the document refuses null: each must be left out
    when None (``OMIT_IF_NONE``), or the service answers 400 to a call the SDK's types allowed."""
    properties: dict[str, list[Schema]] = {}
    for schema in schemas:
        for name, value in schema["properties"].items():
            properties.setdefault(name, []).append(value)
    omitted: frozenset[str] = getattr(model, "OMIT_IF_NONE", frozenset())
    problems = []
    for name, info in model.model_fields.items():
        if name not in properties:
            continue
        nullable = any(
            branch.get("type") == "null" or branch.get("nullable")
            for schema in properties[name]
            for branch in resolve.branches(schema)
        )
        if admits_none(info.annotation) and not nullable and name not in omitted:
            problems.append(f"{where}.{name}: None is sent as null, which the document refuses")
        if nullable and name in omitted:
            problems.append(f"{where}.{name}: a null is accepted, yet None is left out")
        for nested in nested_models(info.annotation):
            objects = [o for schema in properties[name] for o in resolve.objects(schema)]
            problems += refused_nulls(nested, objects, resolve, f"{where}.{name}")
    return problems


def response_schema(document: Schema, method: str, path: str) -> tuple[Schema, Resolver]:
    """The 200 body's schema as the document gives it; where the document gives none (a route that builds its
    response itself), the route's declared response model, so the SDK is still held to the service's code."""
    operation = document["paths"][path][method.lower()]
    content = operation["responses"]["200"].get("content", {})
    if "application/json" in content and content["application/json"].get("schema"):
        return content["application/json"]["schema"], Resolver(document)
    [route] = [r for r in api_routes() if r.path_format == path and method in (r.methods or ())]
    schema = TypeAdapter(route.response_model).json_schema(mode="serialization")
    return schema, Resolver(document, schema.get("$defs"))


async def openapi(api: httpx.AsyncClient) -> Schema:
    response = await api.get("/openapi.json")
    assert response.status_code == 200
    document: Schema = response.json()
    return document


async def test_the_sdk_has_exactly_the_documents_operations(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await openapi(api)
    documented = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert set(ops.OPERATIONS.values()) == documented
    assert set(REQUESTS) | set(RESPONSES) <= documented and set(RESPONSES) == documented
    # Every operation has a method of that name on both clients, with the same parameters.
    for name in ops.OPERATIONS:
        sync, asynchronous = getattr(Client, name), getattr(AsyncClient, name)
        assert inspect.signature(sync).parameters.keys() == inspect.signature(asynchronous).parameters.keys(), name
        assert inspect.iscoroutinefunction(asynchronous) and not inspect.iscoroutinefunction(sync), name


async def test_models_match_the_documents_schemas(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await openapi(api)
    problems: list[str] = []
    for (method, path), model in REQUESTS.items():
        operation = document["paths"][path][method.lower()]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        resolve = Resolver(document)
        problems += differences(model, resolve.objects(schema), resolve, f"{method} {path} request", response=False)
    for (method, path), model in RESPONSES.items():
        schema, resolve = response_schema(document, method, path)
        problems += differences(model, resolve.objects(schema), resolve, f"{method} {path} 200", response=True)
    assert problems == [], "\n".join(problems)


async def test_request_models_never_send_a_null_the_document_refuses(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await openapi(api)
    problems: list[str] = []
    for (method, path), model in REQUESTS.items():
        schema = document["paths"][path][method.lower()]["requestBody"]["content"]["application/json"]["schema"]
        resolve = Resolver(document)
        problems += refused_nulls(model, resolve.objects(schema), resolve, f"{method} {path} request")
    assert problems == [], "\n".join(problems)
    # And what is left out really is: a create given ValidateOnly=None sends no ValidateOnly.
    request = m.CreateProductRequest.model_validate({"Sku": "S", "MarketplaceId": "M", "ValidateOnly": None})
    assert "ValidateOnly" not in request.model_dump(mode="json")


async def test_an_order_with_a_status_this_version_has_not_seen_is_read(rt: Runtime, api: httpx.AsyncClient) -> None:
    """Spec section 3: the list of order statuses is "not shown", so the document leaves Status open (0393) and the
    SDK reads an order whose status it has never seen, from the document's own example of GET /api/orders/{id}
    (the order object itself, as inside the List page: 0390)."""
    document = await openapi(api)
    answer = document["paths"]["/api/orders/{order_id}"]["get"]["responses"]["200"]["content"]["application/json"]
    page = document["paths"]["/api/orders/List"]["post"]["responses"]["200"]["content"]["application/json"]
    assert answer["example"] == page["example"]["Orders"][0]
    unseen = {**answer["example"], "Status": "AwaitingCollection"}
    unseen["Items"] = [{**item, "Status": "AwaitingCollection"} for item in unseen["Items"]]
    order = ops.get_order("x").parse(unseen)
    assert isinstance(order, m.Order) and order.Status == order.Items[0].Status == "AwaitingCollection"
    result = m.OrderItemResult.model_validate({"OrderItemId": "i", "ServiceOrderID": "o", "Status": "Held"})
    assert result.Status == "Held"


def test_the_event_names_are_the_services() -> None:
    assert set(typing.get_args(m.EventType)) == set(webhooks.EVENT_TYPES) == set(outbox.EVENT_TYPES)


async def test_query_parameters_and_the_token_form_match(rt: Runtime, api: httpx.AsyncClient) -> None:
    document = await openapi(api)

    def query(path: str) -> set[str]:
        parameters = document["paths"][path]["get"].get("parameters", [])
        return {p["name"] for p in parameters if p["in"] == "query"}

    sent = ops.get_order("x", include_customer_data=True).params
    assert sent is not None and set(sent) == query("/api/orders/{order_id}")
    sent = ops.get_product_type_schema("mp", "cat").params
    assert sent is not None and set(sent) == query("/api/product-types/Schema")
    form = document["paths"]["/connect/token"]["post"]["requestBody"]["content"]["application/x-www-form-urlencoded"]
    assert set(token_form("id", "secret", ("OrdersRead",))) == set(Resolver(document)(form["schema"])["properties"])


def test_the_checker_catches_drift() -> None:
    """A field renamed or added, a value missing from a closed set, a closed set left unnamed: each is reported."""
    document: Schema = {
        "components": {"schemas": {"Item": {"properties": {"OrderItemId": {}}, "required": ["OrderItemId"]}}}
    }
    resolve = Resolver(document)

    class Drifted(BaseModel):
        OrderItemID: str
        Reason: typing.Literal["A", "B"]
        Items: list[m.CancelItem]
        Status: str

    schema = {
        "properties": {
            "Status": {"type": "string", "enum": ["New", "Old"]},
            "OrderItemId": {"type": "string"},
            "Reason": {"enum": ["A", "B", "C"]},
            "Items": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}},
        },
        "required": ["Reason"],
    }
    problems = differences(Drifted, [schema], resolve, "x", response=True)
    assert any("only in the SDK ['OrderItemID']" in p and "only in the service ['OrderItemId']" in p for p in problems)
    assert any("x.Reason: SDK values ['A', 'B'], service values ['A', 'B', 'C']" in p for p in problems)
    assert any("x.Items (CancelItem): only in the SDK ['Quantity']" in p for p in problems)
    unnamed = "x.Status: the document closes it to ['New', 'Old'], the SDK's alias names nothing"
    assert unnamed in problems
