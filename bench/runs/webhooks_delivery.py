"""Webhook delivery benchmark: deliveries/s to a local HTTPS receiver, signing cost, event-to-first-attempt delay.

    .venv/bin/python -m bench.runs.webhooks_delivery [--events 10000] [--subscriptions 5] [--database-url URL]

Loopback only: a trustme certificate for a made-up host name, a static resolver mapping it to 127.0.0.1
(allowed through webhook_allowed_networks), and the receiver in its own process (bench.tools.webhooks_receiver).
Phase 1 records all events first, then times a real Worker draining every delivery (throughput).
Phase 2 fires events one by one into a running Worker (default poll interval) and reads the delay from
each event's occurred_at to its first attempt's start in the attempt log.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trustme
import uvloop
from sqlalchemy import func, select

from bench.support import print_figures
from marketsync import migrate
from marketsync.config import Settings
from marketsync.jobs.worker import Worker
from marketsync.kit import crypto
from marketsync.marketplaces.registry import compose_connectors
from marketsync.models import Event
from marketsync.models.webhooks import WebhookAttempt, WebhookDelivery
from marketsync.runtime import Runtime
from marketsync.webhooks import rules, service
from marketsync.webhooks.engine import DELIVERY_CONCURRENCY
from marketsync.webhooks.outbox import record_event
from marketsync.webhooks.ssrf import RESOLVER_KEY, StaticResolver

HOST = "hooks.bench.test"
PAYLOAD: dict[str, Any] = {
    "occurredAt": "2026-01-01T00:00:00.000Z",
    "source": {"writer": "MerchantPush", "channel": "Api", "userPlatformId": None},
    "changed": [{"sku": f"SKU-{i:05d}", "price": 10.5, "quantity": i} for i in range(5)],
    "truncated": False,
    "totalChanged": 5,
}


def signing_cost() -> dict[str, float]:
    """Per delivery: decrypt the secret, derive the key, sign; and the raw HMAC floor for comparison."""
    keyring = [("k1", b"k" * 32)]
    secret = crypto.random_secret(32)
    sealed = crypto.encrypt(keyring, secret, "webhook-secret:A:S")
    bodies = {
        "1KiB": json.dumps(PAYLOAD).encode().ljust(1024),
        "500sku": json.dumps(
            {**PAYLOAD, "changed": [{"sku": f"S{i}", "price": 1.0, "quantity": 1} for i in range(500)]}
        ).encode(),
    }
    figures: dict[str, float] = {}
    loops = 20_000
    for name, body in bodies.items():
        started = time.perf_counter()
        for _ in range(loops):
            plain = crypto.decrypt(keyring, sealed, "webhook-secret:A:S")
            rules.delivery_headers(rules.derive_key(plain), 1_767_225_600, body, "InventoryChanged", "D" * 26, 1)
        figures[f"sign_{name}_us"] = (time.perf_counter() - started) / loops * 1e6
    body = bodies["1KiB"]
    started = time.perf_counter()
    for _ in range(loops):
        hmac.new(b"k" * 32, body, hashlib.sha256).hexdigest()
    figures["floor_hmac_1KiB_us"] = (time.perf_counter() - started) / loops * 1e6
    started = time.perf_counter()
    for _ in range(loops):
        crypto.decrypt(keyring, sealed, "webhook-secret:A:S")
    figures["decrypt_secret_us"] = (time.perf_counter() - started) / loops * 1e6
    return figures


async def plain_httpx(url: str, ca_file: Path, requests: int, concurrency: int) -> tuple[float, float]:
    """The floor: plain httpx to the same receiver at the engine's concurrency (its pool limits, the same TLS
    verification), each request a signed 1 KiB body with the delivery headers: requests/s and this process's CPU
    µs per request."""
    context = ssl.create_default_context(cafile=str(ca_file))
    body = json.dumps(PAYLOAD).encode().ljust(1024)
    key = rules.derive_key(crypto.random_secret(32))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=30)
    transport = httpx.AsyncHTTPTransport(verify=context, limits=limits)
    remaining = requests

    async with httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False) as client:

        async def sender() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                headers = rules.delivery_headers(key, int(time.time()), body, "InventoryChanged", "D" * 26, 1)
                response = await client.post(url, content=body, headers=headers)
                assert response.status_code == 200

        cpu_began = time.process_time()
        began = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(concurrency)))
        elapsed = time.perf_counter() - began
        return requests / elapsed, (time.process_time() - cpu_began) / requests * 1e6


async def count(rt: Runtime, *conditions: Any) -> int:
    async with rt.db.read() as session:
        return int(
            (await session.execute(select(func.count()).select_from(WebhookDelivery).where(*conditions))).scalar_one()
        )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-webhooks-"))
    ca = trustme.CA()
    ca_file, cert_file = workdir / "ca.pem", workdir / "server.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    # Both names: the engine verifies HOST (its resolver maps it to 127.0.0.1), the plain httpx floor the address.
    ca.issue_cert(HOST, "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    receiver = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.tools.webhooks_receiver", str(cert_file), stdout=asyncio.subprocess.PIPE
    )
    assert receiver.stdout is not None
    port = json.loads(await receiver.stdout.readline())["port"]

    settings = Settings(
        database_url=args.database_url or f"sqlite:///{workdir / 'bench.db'}",
        var_dir=workdir / "var",
        encryption_keys="b1:" + base64.urlsafe_b64encode(b"b" * 32).decode(),
        secret_hash_key=base64.urlsafe_b64encode(b"h" * 32).decode(),
        webhook_ca_bundle=str(ca_file),
        webhook_allowed_networks="127.0.0.0/8",
        order_pull_interval_s=36_000.0,
        log_level="WARNING",
    )
    rt = compose_connectors(Runtime.create(settings))
    rt.extras[RESOLVER_KEY] = StaticResolver({HOST: "127.0.0.1"})
    result: dict[str, Any] = {"database": rt.db.dialect, "events": args.events, "subscriptions": args.subscriptions}
    try:
        await migrate.upgrade(rt.db)
        from marketsync.auth import service as auth_service

        async with rt.db.transaction() as session:
            account = await auth_service.create_account(rt, session, f"bench-{time.time_ns()}")
            for index in range(args.subscriptions):
                await service.create_subscription(
                    rt, session, account.id, f"https://{HOST}:{port}/hook/{index}", ["InventoryChanged"]
                )

        # Phase 1: throughput.
        for start in range(0, args.events, 500):
            async with rt.db.transaction() as session:
                for _ in range(min(500, args.events - start)):
                    record_event(session, account.id, "InventoryChanged", PAYLOAD, rt.clock.now())
        expected = args.events * args.subscriptions
        # The floor before and after ours (its mean), in the same run: plain httpx at the engine's concurrency.
        floor_url = f"https://127.0.0.1:{port}/hook/floor"
        floors = [await plain_httpx(floor_url, ca_file, min(expected, 5000),
                                    DELIVERY_CONCURRENCY)]  # fmt: skip
        stop = asyncio.Event()
        cpu_began = time.process_time()
        began = time.perf_counter()
        worker = asyncio.create_task(Worker(rt).run(stop))
        while await count(rt, WebhookDelivery.status == "Succeeded") < expected:
            await asyncio.sleep(0.25)
        elapsed = time.perf_counter() - began
        # This process is the worker (the receiver runs apart); the polling loop above is a small share of it.
        cpu_per_delivery_us = (time.process_time() - cpu_began) / expected * 1e6
        stop.set()
        await worker
        floors.append(await plain_httpx(floor_url, ca_file, min(expected, 5000), DELIVERY_CONCURRENCY))
        result["plain_httpx_per_s"] = round(statistics.mean(rate for rate, _ in floors), 1)
        result["plain_httpx_runs_per_s"] = [round(rate, 1) for rate, _ in floors]
        result["plain_httpx_cpu_us_per_request"] = round(statistics.mean(cpu for _, cpu in floors), 1)
        result["worker_cpu_us_per_delivery"] = round(cpu_per_delivery_us, 1)
        failed = await count(rt, WebhookDelivery.status != "Succeeded")
        result["phase1_deliveries"] = expected
        result["phase1_seconds"] = round(elapsed, 2)
        result["deliveries_per_s"] = round(expected / elapsed, 1)
        result["phase1_not_succeeded"] = failed

        # Phase 2: delay from the event to its first attempt, with a running worker.
        stop = asyncio.Event()
        worker = asyncio.create_task(Worker(rt).run(stop))
        fired: list[str] = []
        for _ in range(args.latency_events):
            async with rt.db.transaction() as session:
                fired.append(record_event(session, account.id, "InventoryChanged", PAYLOAD, rt.clock.now()).id)
            await asyncio.sleep(args.latency_gap_s)
        while (
            await count(rt, WebhookDelivery.event_id.in_(fired), WebhookDelivery.status == "Succeeded")
            < len(fired) * args.subscriptions
        ):
            await asyncio.sleep(0.1)
        stop.set()
        await worker
        async with rt.db.read() as session:
            rows = (
                await session.execute(
                    select(Event.occurred_at, func.min(WebhookAttempt.started_at))
                    .join(WebhookAttempt, WebhookAttempt.event_id == Event.id)
                    .where(Event.id.in_(fired), WebhookAttempt.attempt == 1)
                    .group_by(Event.id, Event.occurred_at)
                )
            ).all()
        delays = sorted((first - occurred).total_seconds() * 1000 for occurred, first in rows)
        result["delay_ms_median"] = round(statistics.median(delays), 1)
        result["delay_ms_p99"] = round(delays[min(len(delays) - 1, int(len(delays) * 0.99))], 1)
        result["delay_samples"] = len(delays)
        result["worker_poll_s"] = settings.worker_poll_s
    finally:
        await rt.close()
        receiver.terminate()
        await receiver.wait()
    result.update({k: round(v, 2) for k, v in signing_cost().items()})
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--subscriptions", type=int, default=5)
    parser.add_argument("--latency-events", type=int, default=200)
    parser.add_argument("--latency-gap-s", type=float, default=0.05)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    result = uvloop.run(run(args))  # the worker's loop as deployed (kit.cli.run_service)
    print(json.dumps(result, indent=2))
    backend = result["database"]
    print_figures(
        [
            {"what": f"webhook deliveries to a loopback HTTPS receiver, {args.subscriptions} subscriptions x "
                     f"{args.events:,} events ({backend}); worker CPU {result['worker_cpu_us_per_delivery']} µs a "
                     "delivery (fan-out, claim, sign, send, record) vs plain httpx "
                     f"{result['plain_httpx_cpu_us_per_request']} µs a request",
             "ours": result["deliveries_per_s"], "floor": result["plain_httpx_per_s"],
             "floor_name": f"plain httpx, {DELIVERY_CONCURRENCY} concurrent, same receiver",
             "ratio": round(result["deliveries_per_s"] / result["plain_httpx_per_s"], 2),
             "target": ">= 0.8x of plain httpx", "unit": "deliveries/s"},
            {"what": f"event → first delivery attempt, {result['delay_samples']} events one by one ({backend})",
             "ours": result["delay_ms_median"], "p99_ms": result["delay_ms_p99"], "floor": None, "ratio": None,
             "target": "p99 <= 250 ms (issue 14)", "unit": "ms"},
        ]
    )  # fmt: skip


if __name__ == "__main__":
    main()
