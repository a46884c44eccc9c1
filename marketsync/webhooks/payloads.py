"""The six events' payloads and delivery headers (spec section 6), as the OpenAPI `webhooks` section shows them.

The payloads are built where each event fires (marketplaces/events.py, inventory/rules.py); these models only
document them, closed (`additionalProperties: false`), and tests validate real deliveries against the document.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from marketsync.inventory.rules import Channel, Writer
from marketsync.kinds import FeedKind
from marketsync.webhooks import rules

Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
Price = Annotated[float | None, WithJsonSchema({"type": ["number", "null"]})]
# Present (true) only in a test event's payload: POST /api/webhooks/Test or the app's "Send a sample"
# (docs/decisions/0421). Real events never carry it.
TestMarker = Annotated[
    Literal[True] | None,
    WithJsonSchema(
        {
            "type": "boolean",
            "const": True,
            "description": "Only in a test event (POST /api/webhooks/Test, the app's sample), whose delivery also "
            "carries `X-SVC-Test: true`; absent from real events. A test event names nothing real: acknowledge it.",
        }
    ),
]


def _marker_without_default(schema: dict[str, Any]) -> None:
    """The test marker is absent from real events, never null: no `default` in its schema."""
    for name in ("IsTest", "isTest"):
        schema.get("properties", {}).get(name, {}).pop("default", None)


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_marker_without_default)


class OrdersDownloaded(_Payload):
    """New orders were pulled from a marketplace: follow up with POST /api/orders/List and UpdatedSince."""

    Marketplace: str = Field(description="Display name of the connection, e.g. `P1 UK`.")
    Platform: str
    Country: str
    NewOrderCount: int
    UserPlatformId: str = Field(description="The connection's MarketplaceId.")
    IsTest: TestMarker = None


class ListingPublished(_Payload):
    """A publish batch to a marketplace finished."""

    JourneyId: str = Field(description="The publish job's id (JobId of the create that queued it).")
    UserPlatformId: str
    PublishedCount: int
    FailedCount: int
    IsTest: TestMarker = None


class FeedOutcome(_Payload):
    """A feed was rejected outright or processed with per-item errors (a clean feed is silent)."""

    Marketplace: str
    UserPlatformId: str
    FeedKind: FeedKind
    Outcome: Literal["Rejected", "ProcessedWithErrors"] = Field(description="Branch on this, not on Status.")
    Status: str = Field(description="The marketplace's own status text.")
    FailedCount: int
    IsTest: TestMarker = None


class MarketplaceHealthChanged(_Payload):
    """MarketplaceUnhealthy and MarketplaceRestored: fired only on an actual change of state."""

    Marketplace: str
    Platform: str
    UserPlatformId: str
    Reason: str = Field(description="The machine-readable health value, e.g. `UnAuthorized`.")
    Detail: str = Field(description="Human text.")
    IsTest: TestMarker = None


class InventorySource(_Payload):
    writer: Writer = Field(description="`MasterMirror` when a marketplace sync moved the values.")
    channel: Channel
    userPlatformId: str | None = Field(description="The marketplace when a mirror sent it; null otherwise.")


class InventoryChange(_Payload):
    sku: str
    price: Price = Field(description="The new price; null when it did not change.")
    quantity: int | None = Field(description="The new stock; null when it did not change (0 means none in stock).")


class InventoryChanged(_Payload):
    """Price or stock actually moved on one or more SKUs, whatever moved it: one event per batch."""

    occurredAt: Timestamp = Field(description="ISO 8601 UTC with milliseconds.")
    source: InventorySource
    changed: list[InventoryChange] = Field(max_length=500, description="Only SKUs that moved, sorted by SKU.")
    truncated: bool = Field(description="True when more than 500 SKUs changed: re-read instead.")
    totalChanged: int
    isTest: TestMarker = None


EVENTS: dict[str, tuple[type[_Payload], str]] = {
    "OrdersDownloaded": (OrdersDownloaded, "New orders were pulled from a marketplace."),
    "ListingPublished": (ListingPublished, "A publish batch to a marketplace finished."),
    "FeedOutcome": (FeedOutcome, "A feed was rejected outright or processed with per-item errors."),
    "MarketplaceUnhealthy": (MarketplaceHealthChanged, "A marketplace connection stopped working."),
    "MarketplaceRestored": (MarketplaceHealthChanged, "That connection started working again."),
    "InventoryChanged": (InventoryChanged, "Price or stock actually moved on one or more SKUs."),
}

DELIVERY_HEADERS: list[tuple[str, str, dict[str, Any]]] = [
    (
        rules.HEADER_SIGNATURE,
        "`v1=` + lower-case hex HMAC-SHA256(key, `<X-SVC-Timestamp>.` + the raw body bytes), where key = "
        "HMAC-SHA256(key=<signing secret>, message=`service.webhook.v1`). Compare in constant time.",
        {"type": "string", "pattern": "^v1=[0-9a-f]{64}$"},
    ),
    (
        rules.HEADER_TIMESTAMP,
        "Unix seconds at signing; reject a delivery more than 300 seconds from now, either way.",
        {"type": "string", "pattern": "^[0-9]+$"},
    ),
    (rules.HEADER_EVENT, "The event name.", {"type": "string", "enum": sorted(EVENTS)}),
    (
        rules.HEADER_DELIVERY_ID,
        "One logical delivery, identical across retries: the de-duplication key.",
        {"type": "string"},
    ),
    (rules.HEADER_ATTEMPT, "Attempt number, starting at 1.", {"type": "string", "pattern": "^[1-9][0-9]*$"}),
]
# Sent on a test event's deliveries only, so it is not a required parameter.
TEST_HEADER: dict[str, Any] = {
    "name": rules.HEADER_TEST,
    "in": "header",
    "required": False,
    "description": "`true` on a test event's delivery (POST /api/webhooks/Test, the app's sample); absent otherwise. "
    "Not signed: the payload's own marker (`IsTest`, or `isTest` in InventoryChanged) is under the signature.",
    "schema": {"type": "string", "const": "true"},
}

_EXAMPLE_TIME = datetime(2026, 11, 24, 9, 20, tzinfo=UTC)

_RECEIVER = (
    "Answer any 2xx within 10 seconds (acknowledge first, process afterwards). A non-2xx answer, a timeout or a "
    "transport failure is retried after 1 min, 5 min, 15 min, 1 h, 3 h and 6 h with the same body and "
    "X-SVC-Delivery-Id (a 4xx other than 408 and 429 is not retried); after 6 consecutive failed deliveries the "
    "subscription is disabled. Verify X-SVC-Signature over the raw body before parsing it."
)


def openapi_webhooks(schemas: dict[str, Any]) -> dict[str, Any]:
    """The `webhooks` section; the payload schemas are added to `schemas` (components) under `<Model>` names."""
    for model in {model for model, _ in EVENTS.values()}:
        document = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in document.pop("$defs", {}).items():
            schemas[name] = definition
        schemas[model.__name__] = document
    parameters = [
        {"name": name, "in": "header", "required": True, "description": description, "schema": schema}
        for name, description, schema in DELIVERY_HEADERS
    ]
    webhooks: dict[str, Any] = {}
    for event, (model, summary) in EVENTS.items():
        event_header = {**parameters[2], "schema": {"type": "string", "const": event}}
        webhooks[event] = {
            "post": {
                "operationId": f"{event}Event",
                "tags": ["Webhooks"],
                "summary": summary,
                "description": (model.__doc__ or "").strip() + "\n\n" + _RECEIVER,
                "parameters": [*parameters[:2], event_header, *parameters[3:], TEST_HEADER],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": f"#/components/schemas/{model.__name__}"},
                            # The app's "send a sample" payload: the exact shape, naming nothing real.
                            "example": rules.sample_payload(event, _EXAMPLE_TIME),
                        }
                    },
                },
                "responses": {
                    "200": {"description": "Any 2xx acknowledges the delivery."},
                    "default": {"description": "Anything else (or no answer in 10 s) is retried or counted failed."},
                },
            }
        }
    return webhooks
