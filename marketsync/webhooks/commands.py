"""admin webhooks log (the delivery attempt log, until the web console exists), admin webhooks rotate-keys, and
dev listen (the integrator's local loop: marketsync/webhooks/listen.py)."""

from __future__ import annotations

from typing import Any

import typer

from marketsync.kit.cli import JsonOption, dev_app, emit, fail, webhooks_app
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


@dev_app.command("listen")
def listen_command(
    forward_to: str = typer.Option(
        ...,
        "--forward-to",
        help="Your local receiver, e.g. http://127.0.0.1:8001/hooks: each delivery is forwarded "
        "there byte for byte with its original headers.",
    ),
    api_url: str = typer.Option(
        "http://127.0.0.1:8000", "--api-url", envvar="MARKETSYNC_BASE_URL", help="The service (a `make run`)."
    ),
    client_id: str = typer.Option(
        "",
        "--client-id",
        envvar="MARKETSYNC_CLIENT_ID",
        show_default=False,
        help="A credential with WebhooksWrite (`make run` prints the demo's).",
    ),
    client_secret: str = typer.Option(
        "",
        "--client-secret",
        envvar="MARKETSYNC_CLIENT_SECRET",
        show_default=False,
        help="Its secret; prefer the environment variable (a command line is visible to other users).",
    ),
    events: str = typer.Option(
        "", "--events", help="Comma-separated event names (default: all six).", show_default=False
    ),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="This listener's loopback port (0: any free one)."),
    send_test: bool = typer.Option(False, "--send-test", help="Send one test event once subscribed."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line on stdout (JSON Lines)."),
) -> None:
    """Receive this account's webhooks locally: subscribe, verify, print and forward each delivery; the
    subscription is deleted on exit (Ctrl-C, SIGTERM). The service must run in dev mode (`make run` does)."""
    from marketsync.webhooks import listen, outbox

    if not client_id or not client_secret:
        fail("set MARKETSYNC_CLIENT_ID and MARKETSYNC_CLIENT_SECRET (or --client-id/--client-secret): a credential "
             "with WebhooksWrite; `make run` prints the demo's")  # fmt: skip
    chosen = [name.strip() for name in events.split(",") if name.strip()] or list(outbox.EVENT_TYPES)
    options = listen.Options(
        forward_to=forward_to, api_url=api_url.rstrip("/"), client_id=client_id, client_secret=client_secret,
        event_types=chosen, port=port, send_test=send_test, as_json=as_json,
    )  # fmt: skip
    try:
        status = listen.run(options)
    except listen.ListenError as exc:
        fail(str(exc))
    raise typer.Exit(status)
