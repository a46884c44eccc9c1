"""Request and response bodies of /api/webhooks (spec field names)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, field_serializer

from marketsync.http.bodies import StrictRequest
from marketsync.kit.clock import iso
from marketsync.models.webhooks import WebhookSubscription


class CreateSubscriptionIn(StrictRequest):
    Url: str = Field(max_length=4096)
    EventTypes: list[str] = Field(max_length=50)


class DeleteSubscriptionIn(StrictRequest):
    SubscriptionId: str = Field(min_length=1, max_length=64)


class SendTestEventIn(StrictRequest):
    SubscriptionId: str = Field(min_length=1, max_length=64)
    EventType: str | None = Field(
        None, max_length=64, description="One of the subscription's EventTypes; absent or null: its first one."
    )


class ListSubscriptionsIn(StrictRequest):
    """List takes no parameters: a body may be absent, empty or `{}`; any field in it is unknown, and refused like
    an unknown field of any other operation (never silently ignored)."""


class SubscriptionOut(BaseModel):
    SubscriptionId: str
    Url: str
    EventTypes: list[str]
    IsActive: bool
    ConsecutiveFailures: int
    DisabledDate: datetime | None
    DisabledReason: str | None
    LastSuccessDate: datetime | None
    CreatedDate: datetime

    @field_serializer("DisabledDate", "LastSuccessDate")
    def _timestamps(self, value: datetime | None) -> str | None:
        return None if value is None else iso(value)

    @field_serializer("CreatedDate")
    def _created(self, value: datetime) -> str:
        # Its own serializer: the document reads its type from the return annotation (never null, spec §2).
        return iso(value)

    @classmethod
    def of(cls, subscription: WebhookSubscription) -> SubscriptionOut:
        return cls(
            SubscriptionId=subscription.id,
            Url=subscription.url,
            EventTypes=list(subscription.event_types),
            IsActive=subscription.is_active,
            ConsecutiveFailures=subscription.consecutive_failures,
            DisabledDate=subscription.disabled_at,
            DisabledReason=subscription.disabled_reason,
            LastSuccessDate=subscription.last_success_at,
            CreatedDate=subscription.created_at,
        )


class SubscriptionWithSecretOut(SubscriptionOut):
    Secret: str = Field(description="HMAC signing secret: shown once, here only.")


class CreateSubscriptionOut(BaseModel):
    Subscription: SubscriptionWithSecretOut | SubscriptionOut = Field(
        description="The subscription; `Secret` is present only in the original response, never in a replay."
    )
    RequestId: str
    Warnings: list[str]


class SubscriptionsOut(BaseModel):
    Subscriptions: list[SubscriptionOut]


class DeleteSubscriptionOut(BaseModel):
    SubscriptionId: str
    Deleted: bool
    RequestId: str
    Warnings: list[str]


class SendTestEventOut(BaseModel):
    SubscriptionId: str
    EventType: str
    DeliveryId: str = Field(description="The X-SVC-Delivery-Id the test delivery carries; it shows in the app's log.")
    RequestId: str
    Warnings: list[str]
