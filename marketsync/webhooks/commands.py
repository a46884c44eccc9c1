"""admin webhooks log (the delivery attempt log, until the web console exists) and admin webhooks rotate-keys."""

from __future__ import annotations

from typing import Any

import typer

from marketsync.kit.cli import JsonOption, emit, webhooks_app
from marketsync.kit.clock import iso
from marketsync.models.webhooks import WebhookAttempt
from marketsync.runtime import Runtime
from marketsync.startup import run_command
from marketsync.webhooks import service


def attempt_view(attempt: WebhookAttempt) -> dict[str, Any]:
    return {
        "AttemptId": attempt.id,
        "SubscriptionId": attempt.subscription_id,
        "DeliveryId": attempt.delivery_id,
        "EventId": attempt.event_id,
        "Event": attempt.event_type,
        "Attempt": attempt.attempt,
        "StartedAt": iso(attempt.started_at),
        "DurationMs": attempt.duration_ms,
        "Status": attempt.status_code,
        "Outcome": attempt.outcome,
        "ErrorClass": attempt.error_class,
        "ErrorDetail": attempt.error_detail,
        "ResponseSnippet": attempt.response_snippet,
        "NextAttemptAt": iso(attempt.next_attempt_at) if attempt.next_attempt_at else None,
    }


@webhooks_app.command("log")
def log_command(
    account: str = typer.Option(..., "--account"),
    subscription: str | None = typer.Option(None, "--subscription"),
    limit: int = typer.Option(200, "--limit", min=1, max=10_000, help="Newest attempts first."),
    as_json: bool = JsonOption,
) -> None:
    """Delivery attempts of the last 30 days: status, response snippet, timing and error class."""

    async def body(rt: Runtime) -> dict[str, Any]:
        attempts = await service.attempt_log(rt, account, subscription, limit)
        return {"Attempts": [attempt_view(a) for a in attempts]}

    result = run_command(body, as_json=as_json)
    lines = [
        f"{a['StartedAt']}  {a['SubscriptionId']}  {a['Event']:<20} delivery {a['DeliveryId']} "
        f"#{a['Attempt']}  {a['Outcome']:<9} {a['Status'] or '-':>3}  {a['DurationMs']} ms"
        + (f"  {a['ErrorClass']}" if a["ErrorClass"] else "")
        for a in result["Attempts"]
    ]
    emit(result, as_json, "\n".join(lines) if lines else "no delivery attempts")


@webhooks_app.command("rotate-keys")
def rotate_keys_command(as_json: bool = JsonOption) -> None:
    """Re-encrypt every webhook secret with the first key of MARKETSYNC_ENCRYPTION_KEYS."""

    async def body(rt: Runtime) -> dict[str, int | str]:
        return await service.rotate_keys(rt)

    emit(run_command(body, as_json=as_json), as_json)
