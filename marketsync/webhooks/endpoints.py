"""POST /api/webhooks/Create, List, Delete, Test (WebhooksWrite). Thin: parse, call the service, shape the response."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from marketsync.auth.dependencies import RuntimeDep, WebhooksWriter
from marketsync.http import idempotency
from marketsync.http.errors import merged_errors
from marketsync.http.requestid import current_request_id
from marketsync.kit import jsonio
from marketsync.kit.openapi import request_body
from marketsync.webhooks import service
from marketsync.webhooks.schemas import (
    CreateSubscriptionIn,
    CreateSubscriptionOut,
    DeleteSubscriptionIn,
    DeleteSubscriptionOut,
    ListSubscriptionsIn,
    SendTestEventIn,
    SendTestEventOut,
    SubscriptionOut,
    SubscriptionsOut,
    SubscriptionWithSecretOut,
)

router = APIRouter(tags=["Webhooks"])

# A replay is the stored response of the create: the subscription as it was then. It may have been deleted or
# disabled since, so the warning claims nothing about it now.
REPLAY_WARNING = (
    "This is a replay of an earlier request with the same Idempotency-Key: it shows the subscription as that "
    "request created it, which may have been deleted or disabled since (POST /api/webhooks/List shows the current "
    "state). Its Secret was shown only in the original response; if it was lost, delete the subscription and "
    "create a new one."
)


@router.post(
    "/api/webhooks/Create",
    summary="Subscribe an https URL to events; the response shows the signing secret once",
    responses={200: {"model": CreateSubscriptionOut}},
    openapi_extra=request_body(CreateSubscriptionIn),
)
async def create_subscription(request: Request, caller: WebhooksWriter, rt: RuntimeDep) -> Response:
    # Read leniently: a shape error in one field (or a bad Idempotency-Key) still lets the other field be checked,
    # so that one 400 names every bad field (docs/decisions/0344).
    body = CreateSubscriptionIn.check(await request.body())

    async def validate() -> None:
        # After the Idempotency-Key lookup: a replay returns the stored response even if the host's DNS
        # has changed since (every delivery checks the address again).
        shape_errors = merged_errors(idempotency.key_problems(request), body.errors)
        await service.validate_subscription(rt, body.fields.get("Url"), body.fields.get("EventTypes"), shape_errors)

    async def work(session: AsyncSession) -> idempotency.Outcome:
        valid = body.valid()
        created = await service.create_subscription(rt, session, caller.account_id, valid.Url, valid.EventTypes)
        public = SubscriptionOut.of(created.subscription)
        revealed = SubscriptionWithSecretOut(**public.model_dump(), Secret=created.secret)
        request_id = current_request_id()
        first = CreateSubscriptionOut(Subscription=revealed, RequestId=request_id, Warnings=[])
        replay = CreateSubscriptionOut(Subscription=public, RequestId=request_id, Warnings=[REPLAY_WARNING])
        return idempotency.Outcome(200, _json(first), stored_body=_json(replay))

    if body.request is None:  # malformed: never a replay of a stored success, refused before a key is claimed
        await validate()
    return await idempotency.run(rt, request, caller.account_id, "webhooks.create", work, prepare=validate)


@router.post(
    "/api/webhooks/List",
    response_model=SubscriptionsOut,
    summary="Subscriptions with their health",
)
async def list_subscriptions(request: Request, caller: WebhooksWriter, rt: RuntimeDep) -> Response:
    ListSubscriptionsIn.read(await request.body(), optional=True)
    async with rt.db.read() as session:
        subscriptions = await service.list_subscriptions(session, caller.account_id)
        listed = SubscriptionsOut(Subscriptions=[SubscriptionOut.of(s) for s in subscriptions])
    return Response(jsonio.dumps(listed.model_dump(mode="json")), media_type="application/json")


@router.post(
    "/api/webhooks/Delete",
    response_model=DeleteSubscriptionOut,
    summary="Delete a subscription permanently; delivery (queued retries included) stops at once",
    openapi_extra=request_body(DeleteSubscriptionIn),
)
async def delete_subscription(request: Request, caller: WebhooksWriter, rt: RuntimeDep) -> Response:
    body = DeleteSubscriptionIn.check(await request.body())
    if body.request is None:
        # An unknown SubscriptionId alone is a 404; beside a shape error, the 400 names it too (decision 0344).
        async with rt.db.read() as reading:
            body.refuse(
                await service.unknown_subscription(reading, caller.account_id, body.fields.get("SubscriptionId"))
            )
    valid = body.valid()
    async with rt.db.transaction() as session:
        await service.delete_subscription(session, caller.account_id, valid.SubscriptionId)
    deleted = DeleteSubscriptionOut(
        SubscriptionId=valid.SubscriptionId, Deleted=True, RequestId=current_request_id(), Warnings=[]
    )
    return Response(jsonio.dumps(deleted.model_dump(mode="json")), media_type="application/json")


@router.post(
    "/api/webhooks/Test",
    response_model=SendTestEventOut,
    summary="Send a test event to one subscription: signed and delivered like any other, marked as a test",
    description=(
        "Queues one event of `EventType` (default: the subscription's first) for this subscription only, delivered "
        "and retried like any other. Its payload is a sample that names nothing real, marked `IsTest: true` "
        "(`isTest` in InventoryChanged), and each delivery carries the header `X-SVC-Test: true`. A disabled "
        "subscription answers 409: replace it first."
    ),
    openapi_extra=request_body(SendTestEventIn),
)
async def send_test_event(request: Request, caller: WebhooksWriter, rt: RuntimeDep) -> Response:
    body = SendTestEventIn.check(await request.body())
    if body.request is None:
        # As at Delete: an unknown SubscriptionId beside a shape error is named in the one 400 (decision 0344).
        async with rt.db.read() as reading:
            body.refuse(
                await service.unknown_subscription(reading, caller.account_id, body.fields.get("SubscriptionId"))
            )
    valid = body.valid()
    async with rt.db.transaction() as session:
        sent = await service.send_test_event(rt, session, caller.account_id, valid.SubscriptionId, valid.EventType)
    answer = SendTestEventOut(
        SubscriptionId=sent.subscription_id,
        EventType=sent.event_type,
        DeliveryId=sent.delivery_id,
        RequestId=current_request_id(),
        Warnings=[],
    )
    return Response(jsonio.dumps(answer.model_dump(mode="json")), media_type="application/json")


def _json(model: CreateSubscriptionOut) -> bytes:
    return jsonio.dumps(model.model_dump(mode="json"))
