"""Webhook use cases: subscriptions (create, list, delete), secret storage and key rotation, the attempt log."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from marketsync.db import EVENTS, wake_workers_on_commit
from marketsync.http.errors import Conflict, NotFound, ValidationFailed, merged_errors
from marketsync.kit import crypto, jsonio
from marketsync.kit.ids import new_id
from marketsync.models import Event
from marketsync.models.webhooks import WebhookAttempt, WebhookSubscription
from marketsync.runtime import Runtime
from marketsync.webhooks import repository, rules, ssrf
from marketsync.webhooks.outbox import EVENT_TYPES

__all__ = [
    "NewSubscription",
    "SentTestEvent",
    "attempt_log",
    "create_subscription",
    "delete_subscription",
    "disabled_subscriptions",
    "get_subscription",
    "list_subscriptions",
    "recover",
    "replace",
    "resend",
    "reveal_secret",
    "rotate_keys",
    "send_sample",
    "send_test_event",
    "stats",
    "unknown_subscription",
    "validate_subscription",
]


SECRET_BYTES = 32  # 256-bit signing secrets
RESOLVE_TIMEOUT_S = 5.0
REFUSED_HOST = "The host resolves to a private or reserved address; webhooks need a publicly reachable host."
NO_SUCH_SUBSCRIPTION = "No such webhook subscription."
UNRESOLVABLE_HOST = "The host name does not resolve; webhooks need a publicly reachable host."


@dataclass(frozen=True)
class NewSubscription:
    subscription: WebhookSubscription
    secret: str  # shown once, in the create response only


def secret_associated_data(account_id: str, subscription_id: str) -> str:
    """Binds a ciphertext to its row: a secret copied onto another subscription or account fails to decrypt."""
    return f"webhook-secret:{account_id}:{subscription_id}"


def reveal_secret(rt: Runtime, account_id: str, subscription_id: str, secret_encrypted: str) -> str:
    return crypto.decrypt(
        rt.settings.encryption_keyring, secret_encrypted, secret_associated_data(account_id, subscription_id)
    )


async def validate_subscription(
    rt: Runtime,
    url: str | None,
    event_types: Sequence[str] | None,
    shape_errors: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Every problem at once, keyed by field; the address check resolves the host (outside any transaction).

    `url` or `event_types` is None when it failed its shape check (named in `shape_errors`, with the body's other
    shape errors and a bad Idempotency-Key): its own checks are skipped, the other field's still run."""
    errors: dict[str, list[str]] = {}
    url_problems = rules.url_problems(url, dev_mode=rt.settings.dev_mode) if url is not None else []
    if url_problems:
        errors["Url"] = url_problems
    if event_types is not None:
        errors.update(rules.event_type_problems(event_types))
    if url is not None and not url_problems:
        try:
            async with asyncio.timeout(RESOLVE_TIMEOUT_S):
                await ssrf.check(rt, url)
        except ssrf.AddressRefused:
            errors["Url"] = [REFUSED_HOST]
        except (ssrf.ResolutionFailed, TimeoutError):
            errors["Url"] = [UNRESOLVABLE_HOST]
    errors = merged_errors(shape_errors or {}, errors)
    if errors:
        raise ValidationFailed(errors=errors)


async def create_subscription(
    rt: Runtime, session: AsyncSession, account_id: str, url: str, event_types: Sequence[str]
) -> NewSubscription:
    """Call validate_subscription first; this only writes."""
    subscription_id = new_id()
    secret = crypto.random_secret(SECRET_BYTES)
    subscription = WebhookSubscription(
        id=subscription_id,
        account_id=account_id,
        url=url,
        event_types=list(event_types),
        secret_encrypted=crypto.encrypt(
            rt.settings.encryption_keyring, secret, secret_associated_data(account_id, subscription_id)
        ),
        is_active=True,
        consecutive_failures=0,
        disabled_at=None,
        disabled_reason=None,
        last_success_at=None,
        created_at=rt.clock.now(),
    )
    session.add(subscription)
    await session.flush()
    return NewSubscription(subscription, secret)


async def list_subscriptions(session: AsyncSession, account_id: str) -> Sequence[WebhookSubscription]:
    return await repository.list_subscriptions(session, account_id)


async def unknown_subscription(
    session: AsyncSession, account_id: str, subscription_id: str | None
) -> dict[str, list[str]]:
    """`SubscriptionId` named when it is well-formed and names none of the account's subscriptions: the 404 it is
    alone, named in the 400 of a request that has other bad fields (docs/decisions/0344)."""
    if subscription_id is None or await repository.subscription_of(session, account_id, subscription_id) is not None:
        return {}
    return {"SubscriptionId": [NO_SUCH_SUBSCRIPTION]}


async def delete_subscription(session: AsyncSession, account_id: str, subscription_id: str) -> None:
    """Permanent; queued deliveries and retries are removed in the same transaction, so delivery stops at once."""
    if not await repository.delete_subscription(session, account_id, subscription_id):
        raise NotFound(NO_SUCH_SUBSCRIPTION)


async def rotate_keys(rt: Runtime, batch: int = 500) -> dict[str, int | str]:
    """Re-encrypt every secret not under the first configured key (the others must still be configured)."""
    keyring = rt.settings.encryption_keyring
    examined = reencrypted = 0
    after = ""
    while True:
        async with rt.db.transaction() as session:
            page = await repository.secrets_page(session, after, batch)
            for subscription_id, account_id, sealed in page:
                examined += 1
                if not crypto.needs_reencryption(keyring, sealed):
                    continue
                associated = secret_associated_data(account_id, subscription_id)
                fresh = crypto.encrypt(keyring, crypto.decrypt(keyring, sealed, associated), associated)
                if await repository.replace_secret(session, subscription_id, sealed, fresh):
                    reencrypted += 1
        if len(page) < batch:
            break
        after = page[-1][0]
    return {"Examined": examined, "Reencrypted": reencrypted, "KeyId": keyring[0][0]}


async def attempt_log(
    rt: Runtime,
    account_id: str,
    subscription_id: str | None = None,
    limit: int = 200,
    *,
    before: tuple[datetime, str] | None = None,
    delivery_id: str | None = None,
    event_type: str | None = None,
) -> Sequence[WebhookAttempt]:
    async with rt.db.read() as session:
        return await repository.list_attempts(
            session, account_id, subscription_id, limit, before=before, delivery_id=delivery_id, event_type=event_type
        )


async def delivered_body(rt: Runtime, account_id: str, delivery_id: str) -> bytes | None:
    """What a delivery sent, byte for byte as signed (the app's attempt log shows it; docs/decisions/0438); None
    when it is not the account's or no longer kept."""
    async with rt.db.read() as session:
        return await repository.delivered_body(session, account_id, delivery_id)


# --- a person's repairs (the app's webhook page; docs/decisions/0122-webhook-repairs.md) -----------------------

DISABLED = (
    "The subscription is disabled and cannot be re-enabled; replace it (a new subscription with a new secret) "
    "to receive deliveries again."
)
ACTIVE_NOT_REPLACED = "Only a disabled subscription is replaced; this one is active."


async def get_subscription(session: AsyncSession, account_id: str, subscription_id: str) -> WebhookSubscription:
    subscription = await repository.subscription_of(session, account_id, subscription_id)
    if subscription is None:
        raise NotFound(NO_SUCH_SUBSCRIPTION)
    return subscription


async def _active(session: AsyncSession, account_id: str, subscription_id: str) -> WebhookSubscription:
    subscription = await get_subscription(session, account_id, subscription_id)
    if not subscription.is_active:
        raise Conflict(DISABLED)
    return subscription


async def resend(rt: Runtime, session: AsyncSession, account_id: str, delivery_id: str) -> None:
    """One more attempt of one delivery, now: the same X-SVC-Delivery-Id and bytes, so a receiver that already
    processed it de-duplicates it. An attempt on the wire at this moment is left to finish."""
    delivery = await repository.delivery_of(session, account_id, delivery_id)
    if delivery is None:
        raise NotFound("No such delivery (deliveries are kept 30 days).")
    await _active(session, account_id, delivery.subscription_id)
    if not await repository.requeue(session, account_id, rt.clock.now(), delivery_id=delivery_id):
        raise Conflict("An attempt of this delivery is in flight; its outcome appears in the log in a moment.")
    wake_workers_on_commit(session, EVENTS)


async def recover(rt: Runtime, session: AsyncSession, account_id: str, subscription_id: str, since: datetime) -> int:
    """Every failed (or cancelled by disabling) delivery of the subscription finished since `since`, due now."""
    await _active(session, account_id, subscription_id)
    wake_workers_on_commit(session, EVENTS)
    return await repository.requeue(
        session, account_id, rt.clock.now(), subscription_id=subscription_id, finished_since=since
    )


async def send_sample(
    rt: Runtime, session: AsyncSession, account_id: str, subscription_id: str, event_type: str
) -> str:
    """A sample of `event_type` to this one subscription (not fanned out to the others); its delivery id."""
    subscription = await _active(session, account_id, subscription_id)
    if event_type not in subscription.event_types:
        raise ValidationFailed(errors={"EventType": ["Choose an event type this subscription receives."]})
    now = rt.clock.now()
    event = Event(
        id=new_id(),
        account_id=account_id,
        type=event_type,
        body=jsonio.dumps(rules.payload_of_test_event(event_type, now)),
        occurred_at=now,
        dispatched_at=now,  # already dispatched: its one delivery is written here
        is_test=True,
    )
    session.add(event)
    await session.flush()
    wake_workers_on_commit(session, EVENTS)
    delivery_id = new_id()
    await repository.insert_deliveries(
        session,
        [
            {
                "id": delivery_id,
                "account_id": account_id,
                "subscription_id": subscription_id,
                "event_id": event.id,
                "event_type": event_type,
                "status": repository.PENDING,
                "attempts": 0,
                "next_attempt_at": now,
                "lease_owner": None,
                "lease_expires_at": None,
                "created_at": now,
                "finished_at": None,
            }
        ],
    )
    return delivery_id


@dataclass(frozen=True)
class SentTestEvent:
    subscription_id: str
    event_type: str
    delivery_id: str


async def send_test_event(
    rt: Runtime, session: AsyncSession, account_id: str, subscription_id: str, event_type: str | None
) -> SentTestEvent:
    """POST /api/webhooks/Test: the app's sample, through the API (docs/decisions/0421). `event_type` None: the
    subscription's first event type. An unknown subscription is a 404, or named in the 400 beside a bad EventType."""
    subscription = await repository.subscription_of(session, account_id, subscription_id)
    errors: dict[str, list[str]] = {}
    if event_type is not None and event_type not in EVENT_TYPES:
        errors["EventType"] = [f"Unknown event type {event_type!r}; known: {', '.join(EVENT_TYPES)}."]
    elif subscription is not None and event_type is not None and event_type not in subscription.event_types:
        errors["EventType"] = [
            f"This subscription does not receive {event_type}; it receives: {', '.join(subscription.event_types)}."
        ]
    if subscription is None:
        if errors:
            raise ValidationFailed(errors={"SubscriptionId": [NO_SUCH_SUBSCRIPTION], **errors})
        raise NotFound(NO_SUCH_SUBSCRIPTION)
    if errors:
        raise ValidationFailed(errors=errors)
    chosen = event_type if event_type is not None else subscription.event_types[0]
    delivery_id = await send_sample(rt, session, account_id, subscription_id, chosen)
    return SentTestEvent(subscription_id, chosen, delivery_id)


async def replace(
    rt: Runtime,
    account_id: str,
    subscription_id: str,
    then: Callable[[AsyncSession, NewSubscription], Awaitable[None]] | None = None,
) -> NewSubscription:
    """A disabled subscription is never re-enabled (spec section 3): it is deleted and a new one created with the
    same URL and event types, under a new id and a new secret, in one transaction. The URL is checked again as at
    create (a host may have moved to a private address), so a refused URL deletes nothing. `then` runs in that
    transaction with the new subscription (the app keeps its one-time reveal there: decision 0401)."""
    async with rt.db.read() as session:
        old = await get_subscription(session, account_id, subscription_id)
        was_active, url, event_types = old.is_active, old.url, list(old.event_types)
    if was_active:
        raise Conflict(ACTIVE_NOT_REPLACED)
    await validate_subscription(rt, url, event_types)  # resolves the host: outside any transaction
    async with rt.db.transaction() as session:
        # Read again under the write: a second click (or a delete) in between finds nothing to replace.
        current = await get_subscription(session, account_id, subscription_id)
        if current.is_active:
            raise Conflict(ACTIVE_NOT_REPLACED)
        await delete_subscription(session, account_id, subscription_id)
        created = await create_subscription(rt, session, account_id, url, event_types)
        if then is not None:
            await then(session, created)
        return created


async def stats(session: AsyncSession) -> dict[str, int]:
    """Deliveries waiting, events not yet fanned out and disabled subscriptions, across accounts (metrics)."""
    return await repository.stats(session)


async def disabled_subscriptions(session: AsyncSession, account_id: str) -> int:
    """How many of the account's subscriptions are disabled (they need a Recover or a Replace)."""
    return await repository.disabled_count(session, account_id)
