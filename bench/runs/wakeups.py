"""Job pick-up delay: from a request that queued a job to the moment an idle worker started it.

    .venv/bin/python -m bench.runs.wakeups [--requests 200] [--gap-s 0.1] [--backend sqlite|postgresql|both]

On a scratch database with the demo tenant, each request is a one-SKU push with `PropagateToListings` true (it
queues a PriceStockPush for the connection holding the SKU). SQLite: one `marketsync serve` (workers in the API
process: the in-process signal). PostgreSQL: `marketsync serve --no-workers` and a separate `marketsync worker`
(NOTIFY from the API's transaction, LISTEN in the worker). The worker's poll interval stays at its default 0.5 s,
so a pick-up well under it is a wake-up. The worker has 32 slots, so a free one is always there (an idle worker).
The delay is the job's StartedAt (GET /api/jobs/{id}) minus the moment the push's response arrived (one clock:
same machine). Loopback only; bounded loops.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

import httpx

from bench.support import BENCH_KEY_ENV, free_port, marketsync, process, scratch_database


def _env(url: str, var: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")}
    env.update(
        {
            **BENCH_KEY_ENV,
            "MARKETSYNC_DATABASE_URL": url,
            "MARKETSYNC_VAR_DIR": str(var),
            "MARKETSYNC_RATE_LIMIT": "100000000/minute",
            "MARKETSYNC_LOG_LEVEL": "WARNING",
            # Idle means a free slot: a marketplace push job lasts longer than the gap between requests, and a
            # job waiting for a busy slot is queueing, not wake-up latency.
            "MARKETSYNC_WORKER_CONCURRENCY": "32",
        }
    )
    return env


def measure(base: str, client_id: str, client_secret: str, requests: int, gap_s: float) -> list[float]:
    with httpx.Client(base_url=base, timeout=30) as api:
        token = api.post(
            "/connect/token",
            data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret},
        ).json()["access_token"]
        api.headers["Authorization"] = f"Bearer {token}"
        products = api.post("/api/products/List", json={"Limit": 50}).json()["Products"]
        sku = next(p["Sku"] for p in products if p["Listings"])
        answered: list[tuple[str, float]] = []
        # Warm-up (excluded): the worker process may still be starting when the API answers its first request.
        for n in range(5):
            api.post("/api/inventory/price-quantity", json={"Items": [{"Sku": sku, "Quantity": 900 + n}]})
        time.sleep(2.0)
        for n in range(requests):
            response = api.post(
                "/api/inventory/price-quantity",
                json={"Items": [{"Sku": sku, "Quantity": 1000 + n}], "PropagateToListings": True},
            )
            arrived = time.time()
            assert response.status_code == 200, response.text
            answered.extend((job_id, arrived) for job_id in response.json()["JobIds"])
            time.sleep(gap_s)
        delays = []
        for job_id, arrived in answered:
            for _ in range(100):
                job = api.get(f"/api/jobs/{job_id}").json()
                started = job["StartedAt"]  # the time it was accepted until a worker starts it (never null)
                if job["Status"] not in ("Published", "NotStarted"):
                    break
                time.sleep(0.05)
            delays.append(max(0.0, datetime.fromisoformat(started).timestamp() - arrived) * 1000)
    return delays


def bench_backend(backend: str, requests: int, gap_s: float) -> str:
    with scratch_database(backend) as url:
        var = Path(f"var/bench-wakeups-{backend}").resolve()
        var.mkdir(parents=True, exist_ok=True)
        env = _env(url, var)
        marketsync(env, "db", "upgrade")
        demo = marketsync(env, "demo")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        serve = [sys.executable, "-m", "marketsync", "serve", "--port", str(port)]
        if backend == "sqlite":
            with process(serve, env, f"{base}/readyz"):
                delays = measure(base, str(demo["client_id"]), str(demo["client_secret"]), requests, gap_s)
        else:
            worker = [sys.executable, "-m", "marketsync", "worker"]
            with process([*serve, "--no-workers"], env, f"{base}/readyz"), process(worker, env, f"{base}/readyz"):
                delays = measure(base, str(demo["client_id"]), str(demo["client_secret"]), requests, gap_s)
    delays.sort()
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    return (
        f"{backend}: {len(delays)} jobs; pick-up after the response p50 {statistics.median(delays):.1f} ms, "
        f"p99 {p99:.1f} ms, max {delays[-1]:.1f} ms (worker poll 0.5 s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--gap-s", type=float, default=0.1)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    for backend in ("sqlite", "postgresql") if args.backend == "both" else (args.backend,):
        print(bench_backend(backend, args.requests, args.gap_s), flush=True)


if __name__ == "__main__":
    main()
